"""Latent traversals (paper, Fig. 4c): pixel range and Fréchet distance to held-out digits per pre-image.

A DualPPCA (RBF, q = 30) is fitted on N training digits of the given classes; the
traversal grids over several pairs of components (8 x 8 each, extent 2) are mapped
back to pixels with each pre-image: the learned map (the default of maps of codes
before issue 26), the same clipped to the training pixels' range, and the
smoother. Reported: pixel range, fraction of pixels outside [-0.1, 1.1], and the
Fréchet distance (``kppca.metrics``' digit features) of the grid images to
held-out digits of the same classes.

Usage::

    python benchmarks/traversal_preimage.py [--digits 0 1] [--n-train 500]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from kppca import DualPPCA
from kppca.datasets import load_mnist
from kppca.kernels import RBF
from kppca.metrics.digit_features import digit_features
from kppca.metrics.sample_quality import frechet_feature_distance


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--digits", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--n-train", type=int, default=500)
    parser.add_argument("--q", type=int, default=30)
    args = parser.parse_args()
    X, y = load_mnist(digits=args.digits)
    order = np.random.default_rng(0).permutation(len(y))
    train, held = order[: args.n_train], order[args.n_train :]
    model = DualPPCA(args.q, kernel=RBF()).fit(X[train])
    Xall, yall = load_mnist()
    features = digit_features(Xall, yall)
    pairs = [(0, 1), (2, 3), (4, 5), (0, 5)]
    lo, hi = float(X[train].min()), float(X[train].max())
    print(f"digits {args.digits}, N = {args.n_train}, q = {args.q}, {len(pairs)} grids of 8 x 8, "
          f"{len(held)} held-out digits")
    print(f"{'pre-image':22s} {'min':>7s} {'max':>7s} {'outside':>8s} {'FD':>8s} {'s':>6s}")
    for label, method, clip in (("learned map", "learned", False), ("learned map, clipped", "learned", True),
                                ("smoother", "smoother", False)):
        start = time.perf_counter()
        grids = np.concatenate([model.latent_traversal(c, 8, 2.0, method).reshape(-1, X.shape[1]) for c in pairs])
        seconds = time.perf_counter() - start
        if clip:
            grids = np.clip(grids, lo, hi)
        outside = np.mean((grids < -0.1) | (grids > 1.1))
        fd = frechet_feature_distance(grids, X[held], features.features)
        print(f"{label:22s} {grids.min():7.2f} {grids.max():7.2f} {outside:8.2%} {fd:8.2f} {seconds:6.1f}", flush=True)


if __name__ == "__main__":
    main()
