"""The deep RKM classifier's gradient: the centred level Gram matrix differentiated two ways, in one run.

``StackedKPCA.terms`` (the KPCA part of the objective; a two-level model, s1 = s2 = 10, RBF levels as
``DeepRKMClassifier``) is evaluated and differentiated at a random point on the Stiefel manifold, with the
level-2 Gram matrix centred by

* ``autograd``: autograd through :meth:`~kppca.kernels.KernelCenterer.fit_center_` on a copy (before
  2026-11-29): the in-place method centres by row tiles of 1 MiB, and autograd records one slice copy
  per tile, each copying the whole ``N x N`` gradient in the backward pass;
* ``center_gram``: :func:`kppca.kernels.gram.center_gram`, the same values with a one-pass backward.

Times are the least of ``--repeats`` runs, both variants in the same process, one thread by default.

Run:  python benchmarks/bench_drkm_gradient.py [--sizes 1000 2000 4000] [--threads 1]
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from kppca.kernels import RBF, KernelCenterer
from kppca.kernels.gram import center_gram
from kppca.rkm.deep.classifier import StackedKPCA
from kppca.rkm.deep.levels import KPCALevel


class TwoLevels(StackedKPCA):
    """The two-level ``terms`` with the level-2 Gram matrix centred by ``center``."""

    def __init__(self, levels, K0, center):
        super().__init__(levels, K0)
        self.center = center

    def terms(self, H: torch.Tensor) -> torch.Tensor:
        first, second = torch.split(H, self.sizes, dim=1)
        K1 = self.center(self.levels[1].kernel.gram(first, first))
        return self.levels[0].kpca_term(first, self.K0) + self.levels[1].kpca_term(second, K1)


CENTERINGS = {"autograd": lambda K: KernelCenterer().fit_center_(K.clone()), "center_gram": center_gram}


def least_time(f, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    s = 10
    print("| N | forward (s) | gradient, autograd through the centerer (s) | gradient, center_gram (s) | ratio | max rel. difference |")
    print("|---:|---:|---:|---:|---:|---:|")
    for N in args.sizes:
        g = torch.Generator().manual_seed(0)
        X = torch.randn(N, 50, generator=g, dtype=torch.float64)
        K0 = KernelCenterer().fit_center_(RBF(8.0).gram(X, X))
        levels = [KPCALevel(s, 1.0, RBF(8.0)), KPCALevel(s, 1.0, RBF(math.sqrt(2.0 * s / N)))]
        H = torch.linalg.qr(torch.randn(N, 2 * s, generator=g, dtype=torch.float64)).Q
        grads = {}

        def gradient(kind):
            model = TwoLevels(levels, K0, CENTERINGS[kind])
            Hg = H.clone().requires_grad_(True)
            grads[kind] = torch.autograd.grad(model.terms(Hg), Hg)[0]

        t_fwd = least_time(lambda: StackedKPCA(levels, K0).terms(H), args.repeats)
        t_old = least_time(lambda: gradient("autograd"), args.repeats)
        t_new = least_time(lambda: gradient("center_gram"), args.repeats)
        diff = float((grads["autograd"] - grads["center_gram"]).abs().max() / grads["autograd"].abs().max())
        print(f"| {N} | {t_fwd:.3f} | {t_old:.3f} | {t_new:.3f} | {t_old / t_new:.1f}x | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
