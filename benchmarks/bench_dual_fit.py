"""Time and memory of the dual fit, ``DualPPCA(10, kernel=RBF(5)).fit(X)``.

Time (one process, one run, so every ratio shares the machine's state): for each ``N``
the best of ``--repeats`` wall times of

* ``X @ X.T`` (the reference; numpy computes it as a ``syrk``, one triangle),
* ``X @ Y.T`` with ``Y`` a copy of ``X`` (every pair: shows what the ``syrk`` saves),
* ``DualPPCA(10, kernel=RBF(5.0)).fit(X)`` (the "auto" solver: Lanczos for ``N > 1000``),
* scikit-learn ``KernelPCA(10, kernel="rbf", gamma=1/50, eigen_solver="arpack").fit(X)``,
* scikit-learn ``KernelPCA(..., eigen_solver="randomized", random_state=0).fit(X)``,

printed as ratios to ``X @ X.T``; each repetition starts after a 0.25 s pause (idle OpenBLAS
threads of the previous step spin for up to ~0.1 s). Data: MNIST digits (``kppca.datasets.load_mnist``, the
5,000 bundled ones, or the IDX files named by ``KPPCA_MNIST_DIR``); beyond the digits
available, the digits are repeated with a small jitter (same dimension, scale and spectrum).

Memory (each configuration in a fresh subprocess): the peak resident set size reached
during ``fit`` and during ``fit`` + ``transform(X)`` + ``sample_kernel(64)`` + ``sample(64)``
minus the resident size before it, as a multiple of ``N^2 * 8`` bytes (one float64
``N x N`` matrix), for float64 and float32. Data: Gaussian ``(N, --memory-dim)`` (default 20
features), so that the model's own copy of ``X`` (``N D`` values) is negligible next to ``N^2``;
with MNIST's 784 features that copy alone is ``0.2 N^2 * 8`` bytes at ``N = 4,000``. By default
the child process first runs the same steps on 1,100 points (``--no-warmup``: a cold process,
where lazily loaded library code adds about 0.1 ``N^2 * 8`` bytes at ``N = 4,000``).

Run::

    python benchmarks/bench_dual_fit.py                       # N = 2000, 4000; memory at 4000
    python benchmarks/bench_dual_fit.py --sizes 2000 5000 10000 --memory-sizes 4000 10000
    python benchmarks/bench_dual_fit.py --no-sklearn --repeats 1

The load average is printed: timings on a shared CPU are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from bench_dual_fit_and_sampling import _reset_peak, _status_kib  # the same /proc memory probes

Q = 10
BANDWIDTH = 5.0


def load_data(n: int, dtype: str = "float64"):
    import numpy as np

    from kppca.datasets import load_mnist

    X, _ = load_mnist(random_state=0)
    if n > X.shape[0]:
        rng = np.random.default_rng(0)
        reps = -(-n // X.shape[0])
        X = np.concatenate([X] + [X + 0.01 * rng.standard_normal(X.shape) for _ in range(reps - 1)])
    return np.ascontiguousarray(X[:n], dtype=dtype)


def best_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        # OpenBLAS worker threads keep spinning for up to ~0.1 s after a call returns: without a
        # pause, whatever runs next shares the cores with the previous step's idle threads.
        time.sleep(0.25)
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def time_sizes(sizes: list[int], repeats: int, sklearn: bool) -> list[dict]:
    from kppca import DualPPCA
    from kppca.kernels import RBF

    rows = []
    for n in sizes:
        X = load_data(n)
        row = {"N": n}
        row["gemm"] = best_time(lambda: X @ X.T, repeats)
        # X @ Y.T cannot use syrk: the product with every pair computed, for scale
        row["gemm_all_pairs"] = best_time(lambda Y=X.copy(): X @ Y.T, repeats)
        row["kppca"] = best_time(lambda: DualPPCA(Q, kernel=RBF(BANDWIDTH), random_state=0).fit(X), repeats)
        if sklearn:
            from sklearn.decomposition import KernelPCA

            gamma = 1.0 / (2 * BANDWIDTH**2)
            for solver in ("arpack", "randomized"):
                kpca = KernelPCA(Q, kernel="rbf", gamma=gamma, eigen_solver=solver, random_state=0)
                row[solver] = best_time(lambda: kpca.fit(X), repeats)
        rows.append(row)
        ratios = "  ".join(f"{k} {v / row['gemm']:.2f}x ({v:.2f} s)" for k, v in row.items() if k not in ("N",))
        print(f"N={n:6d}  {ratios}  load {os.getloadavg()[0]:.2f}", flush=True)
    return rows


def memory_child(n: int, dtype: str, steps: str, dim: int, warmup: bool) -> dict:
    import numpy as np

    from kppca import DualPPCA
    from kppca.kernels import RBF

    X = np.random.default_rng(0).normal(size=(n, dim)).astype(dtype)
    if warmup:
        # The same steps on 1,100 points first: library code and workspaces loaded lazily on first
        # use (ARPACK, LAPACK, torch kernels, ~10-15 MiB) are then resident before the baseline.
        small = DualPPCA(Q, kernel=RBF(BANDWIDTH), random_state=0).fit(X[:1100])
        small.transform(X[:5])
        small.sample_kernel(2, random_state=0)
        small.sample(2, random_state=0)
        del small

    rss0 = _status_kib("VmRSS")
    _reset_peak()
    model = DualPPCA(Q, kernel=RBF(BANDWIDTH), random_state=0).fit(X)
    fit_peak = _status_kib("VmHWM") - rss0
    out = {"fit": fit_peak}
    if steps == "all":
        model.transform(X)
        model.sample_kernel(64, random_state=0)
        model.sample(64, random_state=0)
        out["all"] = _status_kib("VmHWM") - rss0
    return {k: v * 1024 / (n * n * 8) for k, v in out.items()}


def memory_sizes(sizes: list[int], dim: int, warmup: bool) -> list[dict]:
    rows = []
    for n in sizes:
        for dtype in ("float64", "float32"):
            res = {}
            for steps in ("fit", "all"):  # fresh processes: no peak carried over
                cmd = [sys.executable, __file__, "--child", str(n), dtype, steps, str(dim), str(int(warmup))]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                res.update(json.loads(out.strip().splitlines()[-1]))
            row = {"N": n, "dtype": dtype, "fit": res["fit"], "fit+transform+sample": res["all"]}
            rows.append(row)
            print(
                f"N={n:6d} {dtype}: peak RSS fit {row['fit']:.2f} N^2*8, fit+transform+sample_kernel+sample "
                f"{row['fit+transform+sample']:.2f} N^2*8  load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[2000, 4000])
    parser.add_argument("--memory-sizes", type=int, nargs="*", default=[4000])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--json", help="also write the numbers to this file")
    parser.add_argument("--memory-dim", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None, help="torch and BLAS threads (default: theirs)")
    parser.add_argument("--no-warmup", action="store_true", help="measure memory in a cold process")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)  # numpy's and scipy's BLAS
    if args.child:
        n, dtype, steps, dim, warm = args.child
        print(json.dumps(memory_child(int(n), dtype, steps, int(dim), warm == "1")))
        return
    print(f"load average at start: {os.getloadavg()}; threads: {args.threads or 'library defaults'}", flush=True)
    result = {"time": time_sizes(args.sizes, args.repeats, not args.no_sklearn)}
    result["memory"] = memory_sizes(args.memory_sizes, args.memory_dim, not args.no_warmup)
    print(f"load average at end: {os.getloadavg()}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
