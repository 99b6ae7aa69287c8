"""Gaussian smoother weights with a nearest-neighbour fallback, and the leave-one-out search of their width
(on which the accuracy of an RKM classifier's out-of-sample codes mostly depends)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from .smoother import kernel_smoother

__all__ = ["gaussian_smoother_weights", "loo_bandwidth_search", "median_nn_distance"]


def gaussian_smoother_weights(D: torch.Tensor, bandwidth: float, X: torch.Tensor | None = None,
                              X_fit: torch.Tensor | None = None) -> torch.Tensor:
    """Weights ``exp(-(d^2 - min_i d^2) / (2 bw^2))`` per row of squared distances ``D`` (M, N).

    Dividing by a row's largest weight keeps the smoother defined where all raw weights underflow: the
    nearest training points get weight 1 (the limit as the width goes to 0), found on rescaled ``X`` and
    ``X_fit`` for rows whose distances overflow.

    Parameters
    ----------
    D : Tensor of shape (M, N)
        Squared distances (``inf`` on the diagonal for leave-one-out).
    bandwidth : float > 0
    X, X_fit : Tensor of shape (M, D) and (N, D), optional
        The points behind ``D``, needed only for rows whose distances overflow.

    Returns
    -------
    Tensor of shape (M, N), entries in [0, 1], every row with a 1.
    """
    d_min = D.min(1, keepdim=True).values
    diff = D - d_min
    two_bw2 = 2.0 * float(bandwidth) ** 2
    # diff > 0 with 2 bw^2 underflowing to 0 gives inf, weight 0; the minima keep weight exactly 1.
    W = torch.exp(-torch.where(diff > 0, diff / two_bw2 if two_bw2 > 0 else diff * math.inf, torch.zeros_like(diff)))
    bad = ~torch.isfinite(d_min[:, 0])
    if bool(bad.any()):
        if X is None or X_fit is None:
            raise ValueError("some squared distances overflow; pass the points X and X_fit for the nearest-neighbour "
                             "fallback.")
        Xb = X[bad]
        c = torch.maximum(Xb.abs().amax(1, keepdim=True), X_fit.abs().amax()).clamp_min(torch.finfo(X.dtype).tiny)
        Ds = ((Xb / c)[:, None, :] - X_fit[None, :, :] / c[:, :, None]).pow(2).sum(-1)
        W[bad] = (Ds == Ds.min(1, keepdim=True).values).to(W.dtype)
    return W


def median_nn_distance(D_loo: torch.Tensor) -> float:
    """Median distance to the nearest other training point (1.0 if none is positive); ``D_loo`` as below."""
    d = D_loo.min(1).values.clamp(min=0).sqrt()
    d = d[torch.isfinite(d) & (d > 0)]
    return float(d.median()) if d.numel() else 1.0


def loo_bandwidth_search(D_loo: torch.Tensor, grid: Sequence[float], codes: Sequence[torch.Tensor],
                         evaluate: Callable[[list[torch.Tensor]], tuple[float, float]],
                         ) -> tuple[float, dict[float, float], float]:
    """Choose the smoother width ``c * d_nn`` (``c`` in ``grid``) by leave-one-out.

    ``evaluate`` gets the leave-one-out codes of every code matrix for each width and returns
    ``(accuracy, error)``; the highest accuracy wins, ties go to the lowest error, then to the larger width.

    Parameters
    ----------
    D_loo : Tensor of shape (N, N)
        Training squared distances with ``inf`` on the diagonal.
    grid : sequence of float
        Positive finite multiples of the median nearest-neighbour distance ``d_nn``.
    codes : sequence of Tensor of shape (N, s)
        Training codes to smooth (one per model).
    evaluate : callable
        ``list of (N, s) smoothed codes -> (accuracy, error)``.

    Returns
    -------
    bandwidth, scores, d_nn : float, dict, float
        The chosen width, width -> leave-one-out accuracy, and ``d_nn``.
    """
    d_nn = median_nn_distance(D_loo)
    scores, ranked = {}, []
    for c in grid:
        bw = c * d_nn
        W = gaussian_smoother_weights(D_loo, bw)
        acc, err = evaluate([kernel_smoother(W, z) for z in codes])
        scores[bw] = acc
        ranked.append((acc, -err, bw))
    return max(ranked)[2], scores, d_nn
