"""The sampling smoother's hub scores at large N: fit + 2,000 digits against the fit alone, and the two algorithms.

Issue 39 asks that ``fit`` + 2,000 digits at N = 60,000 (float32) cost at most 1.2x the fit alone. Most of
the sampling time there was the hub scores (each training digit's mean raw kernel value over its
``0.1 N`` most similar ones). They are now read from the lower triangle of the fit's ``K_c`` buffer by
element-wise passes (``kppca._linalg.row_selection``); before, the buffer was mirrored (the first touch of
its upper half), every row un-centered and a ``topk`` taken per row. This script

1. fits the CLI's default model (``kppca.cli.common.build_model``) on the first N training digits, times
   ``sample(2000)`` and prints the ratio, the peak resident memory and where the sampling time went;
2. with ``--compare``, times the algorithms on the same buffer, one after the other: the lower-triangle passes
   compiled (numba, the ``fast`` extra; what ``sample`` used when numba is installed), the same passes in torch,
   and last the old mirror + ``topk`` (it mirrors the buffer); it prints their largest differences against
   ``eps max|K|``.

With ``--device cuda`` the model is fitted and sampled on the GPU (step 1 only; times end with a synchronize,
memory is ``torch.cuda.max_memory_allocated``).

Run:  python benchmarks/bench_hub_scores.py --mnist-dir DIR --n-train 60000 [--compare] [--torch-passes]
      [--device cuda]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import warnings

import kppca  # noqa: F401  (before torch, as the kppca command: OpenMP's idle threads sleep, kppca/__init__.py)
import numpy as np
import torch


def previous_algorithm(gram, k: int) -> torch.Tensor:
    """The hub scores as computed before: mirror ``K_c``, un-center row blocks, ``topk`` of each row."""
    from kppca._linalg import block_rows

    K_c, centerer = gram.matrix, gram.centerer  # .matrix mirrors the lower triangle in place
    N = K_c.shape[0]
    rows = block_rows(None, N, K_c.dtype)
    out = K_c.new_empty(N)
    for i in range(0, N, rows):
        G = centerer.uncenter(K_c[i : i + rows], centerer.column_means_[i : i + rows])
        r = torch.arange(i, min(i + rows, N))
        G[r - i, r] = -torch.inf
        out[i : i + rows] = torch.topk(G, k, dim=1, sorted=False).values.mean(1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnist-dir", default=os.environ.get("KPPCA_MNIST_DIR"))
    parser.add_argument("--n-train", type=int, default=60_000)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--torch-passes", action="store_true", help="sample with the torch passes even with numba")
    parser.add_argument("--device", default="cpu", help="torch device of the model (e.g. cuda); default cpu")
    args = parser.parse_args()
    if not args.mnist_dir:
        raise SystemExit("needs the full MNIST training set: --mnist-dir DIR or KPPCA_MNIST_DIR")
    warnings.simplefilter("ignore")
    from kppca._linalg import row_selection
    from kppca.cli.common import DEFAULTS, auto_n_components, build_model
    from kppca.datasets import load_mnist
    from kppca.preimage.strategies import hub_window

    X, _ = load_mnist(path=args.mnist_dir, subset="train")
    X = np.asarray(X[: args.n_train], dtype=args.dtype)
    # the main job's model: its q follows N as in kppca sample
    options = argparse.Namespace(bandwidth=DEFAULTS["bandwidth"], n_components=auto_n_components(len(X)), sigma2=None,
                                 dtype=args.dtype, seed=0)
    model = build_model(options).set_params(device=args.device)
    device = torch.device(args.device)

    def now() -> float:
        if device.type == "cuda":  # kernels run asynchronously: a time ends when they have finished
            torch.cuda.synchronize(device)
        return time.perf_counter()

    if device.type == "cuda":
        # the CUDA context, cuBLAS and cuSOLVER load once per process: not part of the fit's time
        build_model(options).set_params(device=args.device).fit(X[:1000]).sample(2, random_state=0)
        torch.cuda.reset_peak_memory_stats(device)
    if args.torch_passes:
        from kppca._linalg import fused_passes

        fused_passes.available = lambda L, shift: False
    t = now()
    model.fit(X)
    fit = now() - t
    timed = {}
    original = row_selection.row_top_means

    def timed_hubs(*a, **kw):
        t0 = now()
        out = original(*a, **kw)
        timed["hub scores"] = now() - t0
        return out

    row_selection.row_top_means = timed_hubs
    import kppca.kernels.centered_gram as centered_gram

    centered_gram.row_top_means = timed_hubs
    t = now()
    model.sample(2000, random_state=0)
    sample = now() - t
    centered_gram.row_top_means = row_selection.row_top_means = original
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    where = f"peak RSS {peak:.1f} GiB"
    if device.type == "cuda":
        where = f"{torch.cuda.get_device_name(device)}, peak GPU memory " \
                f"{torch.cuda.max_memory_allocated(device) / 2**30:.1f} GiB, {where}"
    print(f"N = {args.n_train} ({args.dtype}, {args.device}), load {os.getloadavg()[0]:.1f}: fit {fit:.2f} s, "
          f"sample(2000) {sample:.2f} s (hub scores {timed.get('hub scores', 0.0):.2f} s), (fit + sample) / fit "
          f"{(fit + sample) / fit:.2f}x, {where}", flush=True)
    if args.compare:
        from kppca._linalg import fused_passes

        gram = model._gram()
        k = hub_window(args.n_train)
        timings, scores = {}, {}
        compiled = fused_passes.available
        variants = [("compiled passes", compiled), ("torch passes", lambda L, shift: False)]
        for name, available in variants if compiled(torch.zeros(1, 1), torch.zeros(1)) else variants[1:]:
            fused_passes.available = available
            t = time.perf_counter()
            scores[name] = gram.raw_top_means(k)
            timings[name] = time.perf_counter() - t
        fused_passes.available = compiled
        t = time.perf_counter()
        old = previous_algorithm(gram, k)
        timings["mirror + topk"] = time.perf_counter() - t
        bound = torch.finfo(old.dtype).eps * gram.scale
        for name, value in scores.items():
            diff = float((value.double() - old.double()).abs().max())
            print(f"hub scores, k = {k}: {name} {timings[name]:.1f} s; max |difference| to mirror + topk {diff:.1e} "
                  f"(eps max|K| = {bound:.1e})", flush=True)
        print(f"mirror + topk {timings['mirror + topk']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
