"""The ``sigma2 -> 0`` limit of dual PPCA with a fixed ``q``: kernel PCA (paper §4.3–4.4, see docs/theory)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from .._param_validation import Integral, Interval, check_sequence
from .._validation import as_numpy
from ..kernels import as_kernel
from ..models import DualPPCA

__all__ = ["kpca_limit_model", "kpca_limit_sweep", "default_sigma2_grid"]

def kpca_limit_model(model: DualPPCA, X: Any, ratio: float = 1e-6) -> DualPPCA:
    """A copy of a fitted dual model refitted on ``X`` with the same ``q`` and a tiny fixed ``sigma2``.

    ``sigma2 = ratio * lam_q / N``: the kernel PCA limit, where samples stay in ``range(E_q)``.

    Parameters
    ----------
    model : DualPPCA, fitted
    X : array-like of shape (N, D)
    ratio : float in (0, 1), default 1e-6

    Returns
    -------
    DualPPCA, fitted
    """
    if not 0.0 < ratio < 1.0:
        raise ValueError(f"ratio must lie in (0, 1), got {ratio!r}.")
    s2 = ratio * float(model.eigenvalues_[-1]) / model.n_samples_
    return clone(model).set_params(n_components=int(model.n_components_), sigma2=s2).fit(X)


def default_sigma2_grid(lam_q_over_n: float, num: int = 10) -> np.ndarray:
    """``sigma2 = (lam_q / N) 10^{-k}``, ``k = 1 .. num``: all valid (``< lam_q / N``), descending."""
    return lam_q_over_n * 10.0 ** -np.arange(1, num + 1, dtype=np.float64)


def _relative(err: np.ndarray, ref: np.ndarray) -> float:
    denom = np.linalg.norm(ref)
    return float(np.linalg.norm(err) / denom) if denom > 0 else float(np.linalg.norm(err))


def kpca_limit_sweep(
    X: Any,
    kernel: Any = "rbf",
    n_components: int | Sequence[int] = 2,
    sigma2_values: Iterable[float] | None = None,
    *,
    X_eval: Any = None,
    include_ml: bool = True,
) -> pd.DataFrame:
    """Distance between dual PPCA and kernel PCA as ``sigma2 -> 0``, for one or several ``q``.

    For each ``q`` and ``sigma2``, :class:`~kppca.DualPPCA` with ``sigma2`` fixed is compared with
    scikit-learn's ``KernelPCA(kernel="precomputed")`` on the same Gram matrix.

    Parameters
    ----------
    X : array-like of shape (N, D)
    kernel : Kernel, callable or str, default "rbf"
        As for :class:`~kppca.DualPPCA` (e.g. ``kppca.kernels.RBF(2.0)``).
    n_components : int or sequence of int, default 2
        ``q`` (one table block per value).
    sigma2_values : iterable of float, optional
        Noise variances, each in ``(0, lam_q / N)``; default :func:`default_sigma2_grid` per ``q``.
    X_eval : array-like of shape (M, D), optional
        Points at which to compare (default the training points).
    include_ml : bool, default True
        Add, per ``q``, a first row at the ML estimate ``sigma2_ML``.

    Returns
    -------
    pandas.DataFrame
        One row per (q, sigma2), by ``q`` then decreasing ``sigma2``: ``n_components``, ``sigma2``, ``ml``
        (the maximum-likelihood row), ``noise_fraction`` (``sigma2 / (trace(K_c) / N)``, the paper's
        "sigma2 %"), the relative Frobenius distances ``reconstruction_error`` (to the KPCA projection) and
        ``latent_error`` (to ``sqrt(N / lam) z``, ``z`` the KPCA scores), ``posterior_sd`` (the largest) and
        ``explained_variance``. Both errors are ``O(sigma2)`` down to a rounding floor of about
        ``N eps lam_1 / (lam_q - lam_{q+1})`` (two independent eigendecompositions).
    """
    from sklearn.decomposition import KernelPCA

    kern = as_kernel(kernel)
    qs = check_sequence(n_components, "n_components", [Interval(Integral, 1, None, closed="left")], repeat=1)
    user_grid = None if sigma2_values is None else np.asarray(list(sigma2_values), dtype=np.float64)
    if user_grid is not None and (user_grid.ndim != 1 or user_grid.size == 0):
        raise ValueError("sigma2_values must be a non-empty 1-d sequence of floats.")

    rows: list[dict[str, Any]] = []
    for q in sorted(int(q) for q in qs):
        ml_model = DualPPCA(q, kernel=kern, eigen_solver="dense").fit(X)
        Xe = ml_model.X_fit_ if X_eval is None else ml_model._validate_new_input(X_eval, "X_eval", method="kpca_limit")
        N = ml_model.n_samples_
        lam = ml_model.eigenvalues_.detach().cpu().numpy()
        # KPCA side, by scikit-learn on the Gram matrix of kernel_ (the resolved width), independently of kppca's
        # eigen-solver: its scores are z = k_c^T E_q diag(lam)^{-1/2}, so E_q E_q^T k_c = z diag(sqrt(lam)) E_q^T.
        K_train = as_numpy(ml_model.kernel_.gram(ml_model.X_fit_, ml_model.X_fit_))
        kpca = KernelPCA(n_components=q, kernel="precomputed", eigen_solver="dense").fit(K_train)
        z = kpca.transform(as_numpy(ml_model.kernel_.gram(Xe, ml_model.X_fit_)))
        kpca_projection = (z * np.sqrt(kpca.eigenvalues_)) @ kpca.eigenvectors_.T
        h_limit = z * np.sqrt(N / lam)

        grid = default_sigma2_grid(float(lam[-1] / N)) if user_grid is None else user_grid
        entries = ([(ml_model.sigma2_, True)] if include_ml else []) + [(float(s), False) for s in grid]
        for s2, is_ml in entries:
            model = ml_model if is_ml else DualPPCA(q, sigma2=s2, kernel=kern, eigen_solver="dense").fit(X)
            h = as_numpy(model.transform(Xe))
            signs = np.sign(np.sum(h * h_limit, axis=0))
            signs[signs == 0] = 1.0
            recon = as_numpy(model.reconstruct_kernel(Xe))
            rows.append(
                {
                    "n_components": q,
                    "sigma2": float(model.sigma2_),
                    "ml": is_ml,
                    "noise_fraction": float(model.sigma2_ / model.total_variance_),
                    "reconstruction_error": _relative(recon - kpca_projection, kpca_projection),
                    "latent_error": _relative(h - h_limit * signs, h_limit),
                    "posterior_sd": float(np.sqrt(N * model.sigma2_ / lam[-1])),
                    "explained_variance": float(model.explained_variance_ratio_.sum()),
                }
            )
    df = pd.DataFrame(rows)
    return df.sort_values(["n_components", "sigma2"], ascending=[True, False], kind="stable").reset_index(drop=True)
