"""The hub scores' compiled and torch passes as users run them: idle, beside a busy process, in joblib workers.

Builds the training Gram buffer of the first N MNIST training digits (float32, RBF(5), as ``kppca sample``) and
times ``CenteredGram.raw_top_means`` with the compiled passes (numba, the ``fast`` extra; the first call loads
them), the torch passes, and the compiled ones again, on the same buffer. ``joblib`` runs two such jobs at once
in ``joblib.Parallel(n_jobs=2)`` worker processes (one thread each, the thread policy's choice), on digits
0..N-1 and N..2N-1. Start a busy process beside it for the loaded figures.

Run:  python benchmarks/bench_hub_scores_load.py {alone,joblib} N   (with KPPCA_MNIST_DIR set)
"""

from __future__ import annotations

import os
import sys
import time

import kppca  # noqa: F401  (before torch, as the kppca command)
import numpy as np
import torch


def timed(N: int, part: int = 0) -> dict:
    """Seconds of each variant on one buffer, and the thread count the compute section gave."""
    from kppca._linalg import fused_passes
    from kppca.datasets import load_mnist
    from kppca.kernels import RBF, CenteredGram
    from kppca.preimage.strategies import hub_window

    X, _ = load_mnist(path=os.environ["KPPCA_MNIST_DIR"], subset="train")
    gram = CenteredGram(RBF(5.0), torch.from_numpy(np.asarray(X[part * N:(part + 1) * N], dtype=np.float32)))
    gram.centerer  # builds the buffer
    compiled, out = fused_passes.available, {}
    for name, available in [("compiled", compiled), ("torch", lambda L, shift: False), ("compiled again", compiled)]:
        fused_passes.available = available
        t = time.perf_counter()
        gram.raw_top_means(hub_window(N))
        out[name] = round(time.perf_counter() - t, 2)
    fused_passes.available = compiled
    return out


def main() -> None:
    if not os.environ.get("KPPCA_MNIST_DIR"):
        raise SystemExit("needs the full MNIST training set in KPPCA_MNIST_DIR")
    mode, N = sys.argv[1], int(sys.argv[2])
    if mode == "joblib":
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=2)(delayed(timed)(N, part) for part in range(2))
    else:
        results = [timed(N)]
    print(f"{mode}, N = {N}, load {os.getloadavg()[0]:.1f}: {results}", flush=True)


if __name__ == "__main__":
    main()
