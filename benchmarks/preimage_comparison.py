"""Compare the pre-image methods of ``kppca.preimage`` on scikit-learn's digits.

Fit-free setting: for held-out digits we take their exact RBF kernel vectors
against a training set, project them on the top-q kernel PCA directions
(``k_c_proj = E_q E_q^T k_c``) and map the projected feature-space points back to
pixel space with each method. Reported: mean squared error per pixel against the
original held-out digits (pixels scaled to [0, 1]) and wall time per method.

Run:  python benchmarks/preimage_comparison.py [--n-train 1000] [--n-test 200] [--q 20]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch
from sklearn.datasets import load_digits

from kppca.kernels import RBF, KernelCenterer
from kppca.preimage import (
    LearnedPreimage,
    PreimageConvergenceWarning,
    dual_coefficients_to_expansion,
    feature_space_sq_distances,
    fixed_point_preimage,
    kernel_smoother,
    knn_preimage,
    median_heuristic_bandwidth,
    uncenter_kernel_vectors,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=1000)
    parser.add_argument("--n-test", type=int, default=200)
    parser.add_argument("--q", type=int, default=20, help="number of kernel principal directions kept")
    parser.add_argument("--bandwidth", type=float, default=None, help="RBF bandwidth (default: median distance)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.set_num_threads(2)
    X_all, _ = load_digits(return_X_y=True)
    X_all = X_all / 16.0
    perm = np.random.default_rng(args.seed).permutation(len(X_all))
    X = torch.tensor(X_all[perm[: args.n_train]])
    X_test = torch.tensor(X_all[perm[args.n_train: args.n_train + args.n_test]])
    N, M, q = X.shape[0], X_test.shape[0], args.q

    bandwidth = args.bandwidth or median_heuristic_bandwidth(X)
    kern = RBF(bandwidth)
    centerer = KernelCenterer()
    K_c = centerer.fit_center_(kern.gram(X, X))
    lam, E = torch.linalg.eigh(K_c)
    lam, E = lam.flip(0)[:q], E.flip(1)[:, :q]

    k_c = centerer.transform(kern.gram(X_test, X))  # exact centered kernel vectors (M, N)
    coef = k_c @ E  # (M, q): e_p^T k_c
    k_c_proj = coef @ E.T  # E_q E_q^T k_c
    alpha = (coef / lam) @ E.T  # psi_proj - m = Phi_c alpha, K_c alpha = k_c_proj
    sq_norms = (coef**2 / lam).sum(1)  # |psi_proj - m|^2
    Z_train = E * lam.sqrt()  # KPCA coordinates of the training points
    Z_test = coef / lam.sqrt()
    diag = torch.diagonal(K_c)

    def smoother(estimate, **opts):
        k = uncenter_kernel_vectors(k_c_proj, centerer, estimate, gram_centered=K_c)
        return kernel_smoother(k, X, **opts)

    def fixed_point(init):
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always", PreimageConvergenceWarning)
            Z, info = fixed_point_preimage(dual_coefficients_to_expansion(alpha), X, kern, init=init,
                                           return_info=True)
        fixed_point.note = (f"{int(info['converged'].sum())}/{M} converged, "
                            f"{int(info['fell_back'].sum())} fell back")
        return Z

    methods = {
        "training mean (baseline)": lambda: X.mean(0).expand(M, -1),
        "smoother, s = 'mean'": lambda: smoother("mean"),
        "smoother, s = 'zero-min'": lambda: smoother("zero-min"),
        "smoother, s = 'span'": lambda: smoother("span"),
        "smoother, s = 'span', n_neighbors=10": lambda: smoother("span", n_neighbors=10),
        "kNN, n_neighbors=1": lambda: knn_preimage(feature_space_sq_distances(k_c_proj, diag), X, n_neighbors=1),
        "kNN, n_neighbors=5, 1/d weights": lambda: knn_preimage(
            feature_space_sq_distances(k_c_proj, diag, sq_norms), X, n_neighbors=5, weighting="distance"),
        "fixed point, init='best'": lambda: fixed_point("best"),
        "fixed point, init='smoother'": lambda: fixed_point("smoother"),
        "learned (KRR, alpha=1e-3), incl. fit": lambda: LearnedPreimage(alpha=1e-3).fit(Z_train, X).predict(Z_test),
    }

    print(f"digits: N_train={N}, N_test={M}, D={X.shape[1]}, RBF bandwidth={bandwidth:.3f}, q={q}, "
          f"explained variance={float(lam.sum() / torch.trace(K_c)):.3f}, torch threads={torch.get_num_threads()}\n")
    print("| method | MSE per pixel | time (ms) | notes |")
    print("|---|---:|---:|---|")
    for name, fn in methods.items():
        fn()  # warm-up (and a first run of lazy initialisation)
        fixed_point.note = ""
        t0 = time.perf_counter()
        X_hat = fn()
        ms = 1e3 * (time.perf_counter() - t0)
        mse = float(((X_hat - X_test) ** 2).mean())
        note = fixed_point.note if name.startswith("fixed") else ""
        print(f"| {name} | {mse:.4f} | {ms:.1f} | {note} |")


if __name__ == "__main__":
    main()
