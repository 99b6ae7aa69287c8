"""Leave-one-out choice of the learned pre-image map's bandwidth and ridge.

The LOO residual of kernel ridge regression has a closed form (Allen's PRESS), so one eigendecomposition
per bandwidth gives the exact LOO error of every ridge; ridges are absolute (the RBF Gram has a unit diagonal).
"""

from __future__ import annotations

import torch

from ..kernels import RBF
from .learned import median_heuristic_bandwidth

__all__ = ["loo_ridge_errors", "select_bandwidth_and_ridge", "BANDWIDTH_FACTORS", "RIDGES"]

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
