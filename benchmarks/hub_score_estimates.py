"""Cheaper hub scores for the sampling smoother at large N: do they keep the digits? (issue 39, item 3)

At N = 60,000 the exact hub scores (each training point's mean raw kernel value over its
``0.1 N`` nearest training points, one pass over ``K`` with ``topk``) take most of ``sample``'s time.
Two cheaper estimates are measured against them on one fitted model, with the same latent draws
(``random_state``), so that the Fréchet distance (FD) difference is paired:

* ``columns``: the same top-k mean over an evenly spaced sample of M columns, evaluated from X;
* ``cvar``: one pass over the lower triangle of ``K_c`` with the identity
  ``mean of the k largest = min_t t + sum_j (K_ij - t)_+ / k`` at a threshold t estimated on M
  columns (exact at the k-th largest value, second-order error near it; no mirror, no ``topk``).

Protocol and judge as ``mnist_data_size.py`` (the last 10,000 training digits held out, split 0).

Run:  python benchmarks/hub_score_estimates.py --mnist-dir DIR --n-train 10000 --columns 2000 4000 --seeds 0 1 2 3
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import torch

import mnist_data_size as mds
from kppca.metrics import frechet_feature_distance
from kppca.preimage import strategies
from kppca.preimage.strategies import SAMPLE_SMOOTHER_OPTIONS, SmootherPreimage, hub_window


def column_scores(context, k: int, M: int, threshold: bool = False) -> torch.Tensor:
    """Top-k means (or, with ``threshold``, the k-th largest values) over M evenly spaced columns, (N,)."""
    X, N = context.X, context.n_samples
    cols = torch.arange(M, device=X.device) * N // M
    kk = max(1, round(k * (M - 1) / (N - 1)))
    against = context.kernel.against(X[cols])
    out = X.new_empty(N)
    for i in range(0, N, 4096):
        G = against(X[i : i + 4096])
        rows = torch.arange(i, min(i + 4096, N), device=X.device)
        pos = torch.searchsorted(cols, rows).clamp(max=M - 1)
        own = cols[pos] == rows  # a row's own column is not its neighbour
        G[own.nonzero().squeeze(1), pos[own]] = -torch.inf
        top = torch.topk(G, kk, dim=1, sorted=False).values
        out[i : i + 4096] = top.min(1).values if threshold else top.mean(1)
    return out


def cvar_scores(gram, k: int, t: torch.Tensor, block: int = 1024) -> torch.Tensor:
    """``t + sum_{j != i} (K_ij - t_i)_+ / k`` from the lower triangle of ``K_c`` (K = K_c + c_i + c_j - g), (N,)."""
    K, c, g = gram._lower(), gram.centerer.column_means_, gram.centerer.grand_mean_
    N = K.shape[0]
    offset = c - g - t  # K_ij - t_i = K_c_ij + c_j + offset_i
    acc = torch.zeros(N, dtype=torch.float64)
    for i0 in range(0, N, block):
        i1 = min(i0 + block, N)
        D = K[i0:i1, i0:i1].tril()
        D = (D + D.tril(-1).T + c[None, i0:i1] + offset[i0:i1, None]).clamp_(min=0)
        D.diagonal().zero_()
        acc[i0:i1] += D.sum(1, dtype=torch.float64)
        B = K[i0:i1, :i0]
        acc[i0:i1] += (B + c[None, :i0] + offset[i0:i1, None]).clamp_(min=0).sum(1, dtype=torch.float64)
        acc[:i0] += (B + c[i0:i1, None] + offset[None, :i0]).clamp_(min=0).sum(0, dtype=torch.float64)
    return (t.double() + acc / k).to(K.dtype)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnist-dir", default=os.environ.get("KPPCA_MNIST_DIR"))
    parser.add_argument("--n-train", type=int, default=10_000)
    parser.add_argument("--columns", type=int, nargs="+", default=[2000, 4000])
    parser.add_argument("--methods", nargs="+", default=["columns", "cvar"], choices=["columns", "cvar"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--judge-cache", default="/tmp/kppca_mnist_judge.pkl")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if not args.mnist_dir:
        raise SystemExit("needs the full MNIST training set: --mnist-dir DIR or KPPCA_MNIST_DIR")
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    net, _, stats, _, _, X_pool, y_pool = mds.load_judge(args.mnist_dir, args.judge_cache)
    model, _, t_fit = mds.fitted({"N": args.n_train, "dtype": "float32"}, 0, (X_pool, y_pool))
    context, N = model.preimage_context(), args.n_train
    k = hub_window(N)
    t0 = time.perf_counter()
    exact = SmootherPreimage(**SAMPLE_SMOOTHER_OPTIONS).hub_scores(context, {}, True)
    print(f"N = {N}: fit {t_fit:.1f} s, exact hub scores {time.perf_counter() - t0:.1f} s", flush=True)
    estimates = {}
    for method in args.methods:
        for M in args.columns:
            t0 = time.perf_counter()
            if method == "columns":
                h = column_scores(context, k, M)
            else:
                h = cvar_scores(model._gram(), k, column_scores(context, k, M, threshold=True))
            error = (h.double() - exact.double()).abs()
            print(f"{method}, M = {M}: {time.perf_counter() - t0:.1f} s, |error| mean {error.mean():.1e} max "
                  f"{error.max():.1e} (spread of the exact scores: sd {exact.std():.1e})", flush=True)
            estimates[f"{method}, M = {M}"] = h
    original = strategies.SmootherPreimage.hub_scores
    for seed in args.seeds:
        row, S0 = [], None
        for name, h in [("exact", None), *estimates.items()]:
            if h is not None:
                strategies.SmootherPreimage.hub_scores = lambda self, context, cache, sampled=True, _h=h: _h
            try:
                S = np.asarray(model.sample(2000, random_state=seed), dtype=np.float64)
            finally:
                strategies.SmootherPreimage.hub_scores = original
            S0 = S if S0 is None else S0
            same = (np.abs(S - S0).max(1) == 0).mean()
            row.append(f"{name} {frechet_feature_distance(S, None, net, reference_statistics=stats):.2f} "
                       f"({same:.0%} same digits)")
        print(f"seed {seed}: " + "; ".join(row), flush=True)


if __name__ == "__main__":
    main()
