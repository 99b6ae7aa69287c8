"""Scale benchmarks: the dual model up to N = 10,000 (CPU) or 120,000 (GPU), float32, and the primal model by streaming.

Data: :func:`kppca.datasets.augmented_mnist` -- the 5,000 bundled MNIST digits (or the IDX files
named by ``KPPCA_MNIST_DIR``) moved by random shifts of up to 2 pixels and blurred by Gaussian pixel
noise (sd 0.05), as many rows as needed. Kernel: RBF with bandwidth 4 (scikit-learn
``gamma = 1/32``), ``q = 10``.

Parts (each prints a side-by-side table and its ratios; every configuration runs in its own
subprocess, so peak memory is clean):

* ``dual``: ``DualPPCA(10, kernel=RBF(4)).fit(X).transform(X)`` against
  ``KernelPCA(10, kernel="rbf", eigen_solver="arpack").fit(X).transform(X)`` at N = 2,000, 5,000 and
  10,000; ratio per N (target <= 1.0x) and the exponent ``b`` of ``time ~ N^b`` fitted by least
  squares on log-log (target about 2, not 3).
* ``precision``: the same dual fit in float32 and in float64 at N = 5,000 and 10,000: relative
  differences of ``sigma2_`` and of the top-q ``eigenvalues_`` (target <= 1e-4), times, memory.
* ``primal``: ``PrimalPPCA(10, feature_map=RandomFourierFeatures(4, n_features=2000))`` fitted on
  N = 50,000 (target < 15 s on 2 cores), beside scikit-learn's ``RBFSampler(2000)`` + ``PCA(10)``;
  then ``partial_fit`` on 1,000,000 rows fed in batches of 20,000 that are generated inside the
  loop, so the full data never exist.
* ``--device cuda``: the dual at N = 20,000 / 50,000 / 80,000 in float64 and 120,000 in float32 on
  the GPU: fit, transform, ``sample_kernel(64)``, ``sample(64)`` times and peak GPU memory
  (``torch.cuda.max_memory_allocated``); an out-of-memory configuration is reported as "OOM".
  Targets (80 GB H100): N = 80,000 in float64 fits, fit at N = 50,000 < 2 s.

Memory. CPU: peak resident set size of the configuration's subprocess during the timed work minus
its resident size just before it (data already generated), read with the helpers of
``bench_dual_fit_and_sampling.py`` (VmHWM reset through ``/proc/self/clear_refs``). It is also given
as a multiple of ``N^2 x itemsize`` (the size of one Gram matrix) for the dual and of
``N x n_features x itemsize`` (one feature matrix) for the primal. GPU: ``max_memory_allocated``
from a reset before the fit, as a multiple of ``N^2 x itemsize``.

Run (from the repository root)::

    python benchmarks/bench_scale.py                      # all CPU parts at the issue's sizes
    python benchmarks/bench_scale.py dual precision       # some parts
    python benchmarks/bench_scale.py --quick              # smoke test: small N, meaningless timings
    python benchmarks/bench_scale.py --device cuda        # the GPU configurations

Times are the best of ``--repeats`` runs (default 2; the 1,000,000-row stream and the GPU runs
once). On a CPU shared with other jobs they are noisy: compare ratios from the same run only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

# The memory probes live in the other dual benchmark; this folder is not a package.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dual_fit_and_sampling import PeakMemory

BANDWIDTH = 4.0
GAMMA = 1.0 / (2 * BANDWIDTH**2)  # scikit-learn's parameter of the same RBF kernel
Q = 10
SEED = 0
N_FEATURES = 2000  # random Fourier features of the primal part
PARTS = ("dual", "precision", "primal")

FULL = {
    "dual_sizes": [2000, 5000, 10000],
    "precision_sizes": [5000, 10000],
    "primal_n": 50000,
    "stream_n": 1_000_000,
    "batch": 20000,
}
QUICK = {
    "dual_sizes": [300, 600, 1200],
    "precision_sizes": [600, 1200],
    "primal_n": 3000,
    "stream_n": 6000,
    "batch": 2000,
}
# (N, dtype) of the GPU mode; the float32 run is the largest that float64 could not hold.
CUDA_CONFIGS = [(20000, "float64"), (50000, "float64"), (80000, "float64"), (120000, "float32")]
CUDA_QUICK = [(2000, "float64"), (4000, "float32")]
N_DRAWS = 64


# ----------------------------------------------------------------------------- configurations (child process)


def _data(n: int, dtype: str = "float64"):
    from kppca.datasets import augmented_mnist

    X, _ = augmented_mnist(n, random_state=SEED, dtype=dtype)
    return X


def _timed(repeats: int, work) -> tuple[list[float], float, bool, Any]:
    """Best-of timing of ``work()``; returns (times, peak RSS increase MiB, clean peak?, last result)."""
    import gc

    times, peaks, result, clean = [], [], None, True
    for _ in range(repeats):
        result = None
        gc.collect()  # the previous repeat's model must not count in this one's baseline
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            result = work()
            times.append(time.perf_counter() - t0)
        peaks.append(mem.mib)
        clean = clean and mem.clean
    return times, max(peaks), clean, result


def run_config(cfg: dict) -> dict:
    """Run one configuration; ``cfg["kind"]`` says which. Returns JSON-able results."""
    import torch

    kind, n, repeats = cfg["kind"], cfg["n"], cfg.get("repeats", 1)
    out: dict[str, Any] = {"kind": kind, "n": n, "threads": torch.get_num_threads()}

    if kind == "dual_kppca":
        from kppca import DualPPCA
        from kppca.kernels import RBF

        X = _data(n)

        def work():
            model = DualPPCA(Q, kernel=RBF(BANDWIDTH), random_state=SEED).fit(X)
            model.transform(X)
            return model

        out["times"], out["peak_mib"], out["clean"], model = _timed(repeats, work)
        out["eigen_solver"] = model.eigen_solver_
        out["itemsize"] = 8
    elif kind == "dual_sklearn":
        from sklearn.decomposition import KernelPCA

        X = _data(n)

        def work():
            return KernelPCA(Q, kernel="rbf", gamma=GAMMA, eigen_solver="arpack", random_state=SEED).fit(X).transform(X)

        out["times"], out["peak_mib"], out["clean"], _ = _timed(repeats, work)
        out["itemsize"] = 8
    elif kind == "precision":
        from kppca import DualPPCA
        from kppca.kernels import RBF

        X = _data(n)  # the same float64 data for both: only the computing precision differs

        def work():
            return DualPPCA(Q, kernel=RBF(BANDWIDTH), random_state=SEED, dtype=cfg["dtype"]).fit(X)

        out["times"], out["peak_mib"], out["clean"], model = _timed(repeats, work)
        out["sigma2"] = float(model.sigma2_)
        out["eigenvalues"] = [float(v) for v in model.eigenvalues_[:Q]]
        out["rank"] = int(model.rank_)  # sigma2 averages the eigenvalues q+1..rank: a rank change moves it
        out["itemsize"] = 4 if cfg["dtype"] == "float32" else 8
    elif kind == "primal_kppca":
        from kppca import PrimalPPCA
        from kppca.features import RandomFourierFeatures

        X = _data(n)

        def work():
            fmap = RandomFourierFeatures(bandwidth=BANDWIDTH, n_features=N_FEATURES, random_state=SEED)
            return PrimalPPCA(Q, feature_map=fmap, random_state=SEED).fit(X)

        out["times"], out["peak_mib"], out["clean"], model = _timed(repeats, work)
        out["eigen_solver"] = model.eigen_solver_
        out["sigma2"] = float(model.sigma2_)
    elif kind == "primal_sklearn":
        from sklearn.decomposition import PCA
        from sklearn.kernel_approximation import RBFSampler
        from sklearn.pipeline import make_pipeline

        X = _data(n)

        def work():
            # covariance_eigh: the same d x d eigenproblem as the primal model's fit
            return make_pipeline(
                RBFSampler(gamma=GAMMA, n_components=N_FEATURES, random_state=SEED),
                PCA(Q, svd_solver="covariance_eigh"),
            ).fit(X)

        out["times"], out["peak_mib"], out["clean"], _ = _timed(repeats, work)
    elif kind == "stream":
        out.update(_run_stream(n, cfg["batch"], generate_only=cfg.get("generate_only", False)))
    elif kind == "cuda":
        out.update(_run_cuda(n, cfg["dtype"]))
    else:
        raise ValueError(f"unknown configuration kind {kind!r}")
    return out


def _run_stream(n: int, batch: int, *, generate_only: bool) -> dict:
    """``partial_fit`` on ``n`` rows generated ``batch`` at a time (or only generate them)."""
    import numpy as np
    from tqdm import tqdm

    from kppca import PrimalPPCA
    from kppca.datasets import augmented_mnist
    from kppca.features import RandomFourierFeatures

    fmap = RandomFourierFeatures(bandwidth=BANDWIDTH, n_features=N_FEATURES, random_state=SEED)
    model = PrimalPPCA(Q, feature_map=fmap, random_state=SEED)
    rng = np.random.default_rng(SEED)  # advanced by every batch: one reproducible stream
    what = "generate" if generate_only else "partial_fit"
    with PeakMemory() as mem:
        t0 = time.perf_counter()
        for start in tqdm(range(0, n, batch), desc=f"{what} {n:,} rows", unit="batch", file=sys.stderr):
            X, _ = augmented_mnist(min(batch, n - start), random_state=rng)
            if not generate_only:
                model.partial_fit(X)
            del X
        elapsed = time.perf_counter() - t0
    out = {"times": [elapsed], "peak_mib": mem.mib, "clean": mem.clean}
    if not generate_only:
        out["sigma2"] = float(model.sigma2_)
        out["n_samples_seen"] = int(getattr(model, "n_samples_seen_", getattr(model, "n_samples_", n)))
    return out


def _run_cuda(n: int, dtype: str, device: str = "cuda") -> dict:
    import torch

    from kppca import DualPPCA
    from kppca.kernels import RBF

    dev = torch.device(device)  # a parameter only so that the logic can be exercised off a GPU
    itemsize = 4 if dtype == "float32" else 8
    out: dict[str, Any] = {"dtype": dtype, "itemsize": itemsize, "gpu": torch.cuda.get_device_name(dev)}
    # Generated on the CPU (the generator is numpy), moved once; not timed.
    X = torch.as_tensor(_data(n, dtype)).to(dev)

    def timed(fn):
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        result = fn()
        torch.cuda.synchronize(dev)
        return time.perf_counter() - t0, result

    # Warm-up at a small N: CUDA context, cuBLAS/cuSOLVER handles and kernels load once per process.
    warm = DualPPCA(Q, kernel=RBF(BANDWIDTH), dtype=dtype, device=dev, random_state=SEED).fit(X[:1000])
    warm.sample(2, random_state=0)
    del warm
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)
    base = torch.cuda.memory_allocated(dev)  # the data themselves
    step = "fit"
    try:
        model = DualPPCA(Q, kernel=RBF(BANDWIDTH), dtype=dtype, device=dev, random_state=SEED)
        out["fit_s"], _ = timed(lambda: model.fit(X))
        out["fit_peak_bytes"] = torch.cuda.max_memory_allocated(dev) - base
        step = "transform"
        out["transform_s"], _ = timed(lambda: model.transform(X))
        step = "sample_kernel"
        out["sample_kernel_s"], _ = timed(lambda: model.sample_kernel(N_DRAWS, random_state=0))
        step = "sample"
        out["sample_s"], _ = timed(lambda: model.sample(N_DRAWS, random_state=0))
        out["peak_bytes"] = torch.cuda.max_memory_allocated(dev) - base
        out["eigen_solver"] = model.eigen_solver_
    except (torch.cuda.OutOfMemoryError, RuntimeError) as exc:
        # cuSOLVER/cuBLAS can report exhaustion as a plain RuntimeError ("CUDA error: out of memory").
        if not isinstance(exc, torch.cuda.OutOfMemoryError) and "out of memory" not in str(exc).lower():
            raise
        out["oom"] = step
        out["oom_message"] = str(exc).splitlines()[0][:200]
        out["peak_bytes"] = torch.cuda.max_memory_allocated(dev) - base
    out["total_gpu_bytes"] = torch.cuda.get_device_properties(dev).total_memory
    return out


# ----------------------------------------------------------------------------- driver


def _child(cfg: dict) -> dict:
    """Run ``cfg`` in a fresh interpreter; its last stdout line is the JSON result (stderr shows progress)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(cfg)]
    proc = subprocess.run(cmd, check=False, stdout=subprocess.PIPE, text=True)  # a failure is reported below
    if proc.returncode != 0:
        raise RuntimeError(f"configuration {cfg} failed (exit status {proc.returncode}); see its error above")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fitted_exponent(ns: list[int], times: list[float]) -> float:
    """Least-squares slope ``b`` of ``log t = a + b log N``."""
    import numpy as np

    return float(np.polyfit(np.log(ns), np.log(times), 1)[0])


def _mem(r: dict, unit_bytes: float) -> str:
    """``MiB (x unit)``; a trailing ``*`` marks ``ru_maxrss`` deltas (less precise)."""
    mark = "" if r.get("clean", True) else "*"
    return f"{r['peak_mib']:.0f}{mark} ({r['peak_mib'] * 2**20 / unit_bytes:.2f}x)"


def _best(r: dict) -> float:
    return min(r["times"])


def part_dual(sizes: list[int], repeats: int) -> dict:
    from tqdm import tqdm

    rows = []
    for n in tqdm(sizes, desc="dual vs KernelPCA", unit="N", file=sys.stderr):
        k = _child({"kind": "dual_kppca", "n": n, "repeats": repeats})
        s = _child({"kind": "dual_sklearn", "n": n, "repeats": repeats})
        rows.append((n, k, s))
    print(f"\n### Dual fit + transform vs scikit-learn KernelPCA(arpack), float64, q = {Q}, "
          f"RBF(bandwidth {BANDWIDTH})\n")
    print("| N | kppca (s) | sklearn (s) | ratio kppca / sklearn | kppca peak RSS MiB (x N^2*8) "
          "| sklearn peak RSS MiB (x N^2*8) | kppca solver |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for n, k, s in rows:
        gram = n * n * 8
        ratio = _best(k) / _best(s)
        flag = "" if ratio <= 1.0 else " (> 1)"
        print(f"| {n:,} | {_best(k):.2f} | {_best(s):.2f} | {ratio:.2f}x{flag} | {_mem(k, gram)} | {_mem(s, gram)} "
              f"| {k['eigen_solver']} |")
    ns = [n for n, _, _ in rows]
    bk = _fitted_exponent(ns, [_best(k) for _, k, _ in rows])
    bs = _fitted_exponent(ns, [_best(s) for _, _, s in rows])
    worst = max(_best(k) / _best(s) for _, k, s in rows)
    print(f"\nFitted exponent (time ~ N^b, least squares on log-log over N = {', '.join(map(str, ns))}): "
          f"kppca b = {bk:.2f}, sklearn b = {bs:.2f} (target: about 2, not 3). "
          f"Worst ratio {worst:.2f}x (target <= 1.0x: {'met' if worst <= 1.0 else 'MISSED'}).")
    return {"rows": [{"n": n, "kppca": k, "sklearn": s} for n, k, s in rows], "exponent_kppca": bk,
            "exponent_sklearn": bs}


def part_precision(sizes: list[int], repeats: int) -> dict:
    from tqdm import tqdm

    rows = []
    for n in tqdm(sizes, desc="float32 vs float64", unit="N", file=sys.stderr):
        r64 = _child({"kind": "precision", "n": n, "dtype": "float64", "repeats": repeats})
        r32 = _child({"kind": "precision", "n": n, "dtype": "float32", "repeats": repeats})
        rows.append((n, r64, r32))
    print(f"\n### Dual fit in float32 vs float64 (same float64 data), q = {Q}\n")
    print("| N | float64 fit (s) | float32 fit (s) | time 32 / 64 | float64 peak RSS MiB (x N^2*8) "
          "| float32 peak RSS MiB (x N^2*4) | rank 64 / 32 | rel. diff sigma2 | max rel. diff top-q eigenvalues "
          "| <= 1e-4 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    out = []
    for n, r64, r32 in rows:
        d_s2 = abs(r32["sigma2"] - r64["sigma2"]) / abs(r64["sigma2"])
        d_lam = max(abs(a - b) / abs(b) for a, b in zip(r32["eigenvalues"], r64["eigenvalues"]))
        ok = "yes" if max(d_s2, d_lam) <= 1e-4 else "NO"
        print(f"| {n:,} | {_best(r64):.2f} | {_best(r32):.2f} | {_best(r32) / _best(r64):.2f}x "
              f"| {_mem(r64, n * n * 8)} | {_mem(r32, n * n * 4)} | {r64['rank']:,} / {r32['rank']:,} "
              f"| {d_s2:.1e} | {d_lam:.1e} | {ok} |")
        out.append({"n": n, "float64": r64, "float32": r32, "rel_sigma2": d_s2, "rel_eigenvalues": d_lam})
    return {"rows": out}


def part_primal(n: int, stream_n: int, batch: int, repeats: int) -> dict:
    from tqdm import tqdm

    steps = [("primal_kppca", {"n": n, "repeats": repeats}), ("primal_sklearn", {"n": n, "repeats": repeats}),
             ("stream", {"n": stream_n, "batch": batch}),
             ("generate", {"n": stream_n, "batch": batch, "generate_only": True})]
    res = {}
    for name, cfg in tqdm(steps, desc="primal", unit="run", file=sys.stderr):
        res[name] = _child({"kind": "stream" if name == "generate" else name, **cfg})
    feat = n * N_FEATURES * 8
    k, s = res["primal_kppca"], res["primal_sklearn"]
    print(f"\n### Primal, {N_FEATURES} random Fourier features (RBF bandwidth {BANDWIDTH}), q = {Q}, float64\n")
    print("| run | N | time (s) | rows / s | peak RSS MiB (x N*d*8 of the fit) |")
    print("|---|---:|---:|---:|---:|")
    print(f"| kppca `PrimalPPCA.fit` | {n:,} | {_best(k):.2f} | {n / _best(k):,.0f} | {_mem(k, feat)} |")
    print(f"| sklearn `RBFSampler({N_FEATURES})` + `PCA({Q}, covariance_eigh)` fit | {n:,} | {_best(s):.2f} "
          f"| {n / _best(s):,.0f} | {_mem(s, feat)} |")
    st, gen = res["stream"], res["generate"]
    print(f"| kppca `partial_fit`, batches of {batch:,} generated in the loop | {stream_n:,} | {_best(st):.2f} "
          f"| {stream_n / _best(st):,.0f} | {_mem(st, feat)} |")
    print(f"| generating the same batches only | {stream_n:,} | {_best(gen):.2f} | {stream_n / _best(gen):,.0f} "
          f"| {_mem(gen, feat)} |")
    print(f"\nfit kppca / sklearn: {_best(k) / _best(s):.2f}x; fit at N = {n:,}: {_best(k):.2f} s "
          f"(target < 15 s: {'met' if _best(k) < 15 else 'MISSED'}); kppca solver {k['eigen_solver']}.")
    per_row = (_best(st) - _best(gen)) / stream_n / (_best(k) / n)
    full = stream_n * 784 * 8
    print(f"partial_fit: {_best(st):.1f} s in all; its cost per row (generation subtracted) is {per_row:.2f}x "
          f"that of fit; peak RSS {st['peak_mib']:.0f} MiB = {st['peak_mib'] * 2**20 / full:.3f}x the "
          f"{full / 2**30:.1f} GiB the {stream_n:,} rows would take in float64; sigma2 {st['sigma2']:.4g}.")
    return res


def part_cuda(configs: list[tuple[int, str]]) -> dict:
    from tqdm import tqdm

    rows = []
    for n, dt in tqdm(configs, desc="dual on the GPU", unit="config", file=sys.stderr):
        try:
            rows.append((n, dt, _child({"kind": "cuda", "n": n, "dtype": dt})))
        except RuntimeError as exc:  # one failed configuration must not cost the others
            rows.append((n, dt, {"error": str(exc), "itemsize": 4 if dt == "float32" else 8, "peak_bytes": 0}))
    gpu = next((r["gpu"] for _, _, r in rows if "gpu" in r), "?")
    print(f"\n### Dual on the GPU ({gpu}), q = {Q}, RBF(bandwidth {BANDWIDTH}), {N_DRAWS} draws\n")
    print("| N | dtype | fit (s) | transform (s) | `sample_kernel(64)` (s) | `sample(64)` (s) "
          "| peak GPU memory GiB (x N^2*itemsize) | fit peak (x N^2*itemsize) | solver |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")

    def t(r, key):
        # "OOM" in the column of the step that ran out of memory; the later steps did not run.
        if key in r:
            return f"{r[key]:.2f}"
        return "OOM" if r.get("oom") == key[: -len("_s")] else "-"

    for n, dt, r in rows:
        gram = n * n * r["itemsize"]
        fit_peak = f"{r['fit_peak_bytes'] / gram:.2f}x" if "fit_peak_bytes" in r else "-"
        print(f"| {n:,} | {dt} | {t(r, 'fit_s')} | {t(r, 'transform_s')} | {t(r, 'sample_kernel_s')} "
              f"| {t(r, 'sample_s')} | {r['peak_bytes'] / 2**30:.1f} ({r['peak_bytes'] / gram:.2f}x) | {fit_peak} "
              f"| {r.get('eigen_solver', '-')} |")
    for n, dt, r in rows:
        if "oom" in r:
            print(f"N = {n:,} {dt}: out of memory during {r['oom']}: {r['oom_message']}")
        if "error" in r:
            print(f"N = {n:,} {dt}: FAILED ({r['error']}); its traceback is above")
    by = {(n, dt): r for n, dt, r in rows}
    if (80000, "float64") in by:
        r = by[(80000, "float64")]
        print(f"Target N = 80,000 float64 fits: {'met' if 'fit_s' in r else 'MISSED'}.")
    if (50000, "float64") in by and "fit_s" in by[(50000, "float64")]:
        f = by[(50000, "float64")]["fit_s"]
        print(f"Target fit at N = 50,000 < 2 s: {f:.2f} s ({'met' if f < 2 else 'MISSED'}).")
    return {"rows": [{"n": n, "dtype": dt, **r} for n, dt, r in rows]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", metavar="PART",
                        help=f"CPU parts to run, any of {', '.join(PARTS)} (default: all); ignored with --device cuda")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cuda: run the GPU configurations of the dual instead of the CPU parts")
    parser.add_argument("--repeats", type=int, default=2, help="best of this many runs (default 2)")
    parser.add_argument("--quick", action="store_true", help="small sizes: checks that the script runs")
    parser.add_argument("--json", default=None, help="also write the raw results to this JSON file")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # internal: run one configuration
    args = parser.parse_args()
    unknown = [p for p in args.parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {', '.join(map(repr, unknown))}; choose from {', '.join(PARTS)}")
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")

    if args.child:
        print(json.dumps(run_config(json.loads(args.child))))
        return

    import torch

    import kppca

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_scale.py: --device cuda needs a CUDA GPU, but torch.cuda.is_available() is False here.")

    sizes = QUICK if args.quick else FULL
    load0 = os.getloadavg()
    # Which kppca is measured: an installed copy can differ from this checkout (PYTHONPATH=. picks the checkout).
    print(f"kppca scale benchmarks: kppca from {os.path.dirname(kppca.__file__)}, torch {torch.__version__}, "
          f"{os.cpu_count()} CPUs, torch threads "
          f"{torch.get_num_threads()}, load average {load0[0]:.1f}, best of {args.repeats}"
          + (" (QUICK: small sizes, timings meaningless)" if args.quick else ""))
    results: dict[str, Any] = {}
    if args.device == "cuda":
        results["cuda"] = part_cuda(CUDA_QUICK if args.quick else CUDA_CONFIGS)
    else:
        parts = args.parts or list(PARTS)
        if "dual" in parts:
            results["dual"] = part_dual(sizes["dual_sizes"], args.repeats)
        if "precision" in parts:
            results["precision"] = part_precision(sizes["precision_sizes"], args.repeats)
        if "primal" in parts:
            results["primal"] = part_primal(sizes["primal_n"], sizes["stream_n"], sizes["batch"], args.repeats)
    load1 = os.getloadavg()
    print(f"\nload average {load0[0]:.1f} -> {load1[0]:.1f}; memory: peak RSS increase of each configuration's "
          "subprocess during the timed work (* = ru_maxrss delta, less precise)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"results": results, "load_average": [load0, load1], "quick": args.quick}, fh, indent=2)


if __name__ == "__main__":
    main()
