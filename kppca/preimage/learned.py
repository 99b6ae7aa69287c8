"""Learned pre-image map (Bakir, Weston & Schölkopf, 2004): one kernel ridge regression from
feature-space coordinates (principal projections, latent codes) back to inputs, instead of a problem per point.

Bandwidth and ridge are chosen by exact leave-one-out (Allen's PRESS: one eigendecomposition per bandwidth
scores every ridge, see docs/numerics); ridges are absolute (the RBF Gram has a unit diagonal).
"""

from __future__ import annotations

from typing import Any

import torch

from .._param_validation import Interval, Real, check_scalar
from .._validation import ArrayLike, as_tensor, is_numpy_like
from ..kernels import RBF
from ..kernels.bandwidth import median_heuristic_bandwidth
from ._common import batch_output, dtype_device

__all__ = [
    "LearnedPreimage", "median_heuristic_bandwidth", "loo_ridge_errors", "select_bandwidth_and_ridge",
    "BANDWIDTH_FACTORS", "RIDGES",
]


class LearnedPreimage:
    """Kernel ridge regression from feature-space coordinates ``Z`` to inputs ``X``.

    ``x(z) = mean(X) + sum_i k(z, z_i) c_i`` with ``C = (K_Z + alpha I)^{-1} (X - mean(X))`` and an RBF
    kernel ``k`` on the coordinates; far from the training coordinates, predictions return to the mean input.

    Parameters
    ----------
    bandwidth : float or None, default None
        RBF bandwidth on ``Z`` (not the model's kernel); None: the median distance between coordinates.
    alpha : float, default 1e-3
        Ridge (> 0): smaller values fit the training pairs more closely, larger ones give a smoother map.

    Attributes
    ----------
    bandwidth_ : float
    Z_fit_ : Tensor of shape (N, p)
    dual_coef_ : Tensor of shape (N, D)
    X_mean_ : Tensor of shape (D,)

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.linspace(0, 1, 30)[:, None]
    >>> X = np.hstack([np.sin(3 * Z), Z ** 2])
    >>> lp = LearnedPreimage(alpha=1e-6).fit(Z, X)
    >>> lp.predict(Z[:2]).shape
    (2, 2)
    """

    def __init__(self, bandwidth: float | None = None, alpha: float = 1e-3):
        self.bandwidth = check_scalar(bandwidth, "bandwidth", [Interval(Real, 0, None, closed="neither"), None])
        self.alpha = check_scalar(alpha, "alpha", [Interval(Real, 0, None, closed="neither")])

    def fit(self, Z: ArrayLike, X: ArrayLike) -> "LearnedPreimage":
        """Fit the map on coordinates ``Z`` (N, p) and inputs ``X`` (N, D), 1-D when p or D is 1; returns self."""
        dtype, device = dtype_device(Z, X)
        Zt = as_tensor(Z, "Z", ndim=(1, 2), dtype=dtype, device=device)
        Xt = as_tensor(X, "X", ndim=(1, 2), dtype=Zt.dtype, device=Zt.device)
        Zt = Zt[:, None] if Zt.ndim == 1 else Zt
        self._vector_targets = Xt.ndim == 1
        Xt = Xt[:, None] if self._vector_targets else Xt
        if Zt.shape[0] != Xt.shape[0]:
            raise ValueError(f"Z has {Zt.shape[0]} rows but X has {Xt.shape[0]}; they must be paired row by row.")
        self.bandwidth_ = float(self.bandwidth) if self.bandwidth is not None else median_heuristic_bandwidth(Zt)
        self.kernel_ = RBF(self.bandwidth_)
        K = self.kernel_.gram(Zt, Zt)
        K.diagonal().add_(float(self.alpha))  # ridge term of the model (K is our own matrix)
        L, info = torch.linalg.cholesky_ex(K)
        if int(info) != 0:
            raise ValueError(
                f"K + alpha I is not numerically positive definite (alpha={self.alpha}); increase alpha."
            )
        self.X_mean_ = Xt.mean(0)
        self.dual_coef_ = torch.cholesky_solve(Xt - self.X_mean_, L)
        self.Z_fit_ = Zt
        return self

    def predict(self, Z_new: ArrayLike) -> Any:
        """Inputs (M, D) for coordinates ``Z_new`` (M, p), same type (tensors on the device of ``fit``)."""
        if not hasattr(self, "dual_coef_"):
            raise ValueError("this LearnedPreimage is not fitted yet; call fit(Z, X) before predict.")
        numpy_out = is_numpy_like(Z_new)
        Zn = as_tensor(Z_new, "Z_new", ndim=(1, 2), dtype=self.Z_fit_.dtype, device=self.Z_fit_.device)
        # 1-D: M scalar coordinates when p == 1 (as in fit), otherwise one point.
        single = Zn.ndim == 1 and self.Z_fit_.shape[1] > 1
        if Zn.ndim == 1:
            Zn = Zn[None] if single else Zn[:, None]
        if Zn.shape[1] != self.Z_fit_.shape[1]:
            raise ValueError(f"Z_new has {Zn.shape[1]} columns but the map was fitted on {self.Z_fit_.shape[1]}.")
        out = self.kernel_.gram(Zn, self.Z_fit_) @ self.dual_coef_ + self.X_mean_
        return batch_output(out[:, 0] if self._vector_targets else out, single=single, numpy_out=numpy_out)

    def __repr__(self) -> str:
        return f"LearnedPreimage(bandwidth={self.bandwidth!r}, alpha={self.alpha!r})"


#: Bandwidths searched, in units of the median distance between training coordinates.
BANDWIDTH_FACTORS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0)

#: Ridge values searched.
RIDGES: tuple[float, ...] = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)

#: Pairs used by the search at most (the LOO error is a mean: a subsample estimates it well).
MAX_POINTS = 1000


def loo_ridge_errors(K: torch.Tensor, Y: torch.Tensor, alphas: tuple[float, ...]) -> torch.Tensor:
    """Mean squared leave-one-out error ``mean_i |r_i|^2`` for each ridge in ``alphas``, shape (len(alphas),).

    Parameters
    ----------
    K : Tensor of shape (n, n)
        Positive semi-definite Gram matrix of the regression's inputs.
    Y : Tensor of shape (n, D)
        Targets (centered by the caller if the model has an unpenalised mean).
    alphas : tuple of positive float
    """
    w, V = torch.linalg.eigh(K)
    w = w.clamp(min=0.0)  # rounding of a PSD matrix's zero eigenvalues
    G = V.T @ Y  # (n, D): targets in the eigenbasis, computed once for all ridges
    V2 = V.square()
    out = []
    for a in alphas:
        s = w / (w + a)
        fitted = V @ (s[:, None] * G)
        h = V2 @ s  # diag(H), in [0, 1)
        r = (Y - fitted) / (1.0 - h)[:, None]
        out.append(r.square().sum(1).mean())
    return torch.stack(out)


def select_bandwidth_and_ridge(
    Z: torch.Tensor,
    X: torch.Tensor,
    *,
    bandwidths: tuple[float, ...] | None = None,
    alphas: tuple[float, ...] = RIDGES,
    max_points: int = MAX_POINTS,
) -> tuple[float, float, dict[tuple[float, float], float]]:
    """The (bandwidth, ridge) with the smallest LOO error of the map ``Z -> X`` (targets centered).

    Parameters
    ----------
    Z, X : Tensor of shape (N, p) and (N, D)
        Coordinates and inputs.
    bandwidths : tuple of float, optional
        Absolute bandwidths; default :data:`BANDWIDTH_FACTORS` times the median heuristic.
    alphas : tuple of float, default RIDGES
    max_points : int, default MAX_POINTS
        Evenly spaced pairs the search runs on (the chosen values then serve for all pairs).

    Returns
    -------
    bandwidth, alpha : float
    errors : dict
        LOO error of every (bandwidth, alpha) pair searched.
    """
    if Z.shape[0] > max_points:
        rows = torch.linspace(0, Z.shape[0] - 1, max_points, device=Z.device).long()
        Z, X = Z[rows], X[rows]
    if bandwidths is None:
        if torch.equal(Z, Z[:1].expand_as(Z)):
            # All coordinates coincide: every width gives the same all-ones Gram matrix, only the ridge is searched.
            bandwidths = (1.0,)
        else:
            median = median_heuristic_bandwidth(Z)
            bandwidths = tuple(f * median for f in BANDWIDTH_FACTORS)
    Y = X - X.mean(0)
    errors: dict[tuple[float, float], float] = {}
    for bw in bandwidths:
        values = loo_ridge_errors(RBF(bw).gram(Z, Z), Y, tuple(alphas))
        errors.update({(float(bw), float(a)): float(v) for a, v in zip(alphas, values)})
    best = min(errors, key=errors.__getitem__)
    return best[0], best[1], errors
