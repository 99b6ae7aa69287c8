"""The Fréchet distance between Gaussian fits of two sets of features (the FID recipe).

``Tr((S1 S2)^1/2)`` of the FID papers is taken as ``Tr((S1^1/2 S2 S1^1/2)^1/2)``, the same number, with
two symmetric eigendecompositions in float64 (no complex ``sqrtm`` round-off). With the features of
:mod:`kppca.metrics.digit_features` it is the Fréchet Inception Distance of a network trained offline.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._validation import ArrayLike

__all__ = ["frechet_distance", "gaussian_statistics", "frechet_feature_distance"]


def _float64(values: Any, name: str, ndim: int) -> torch.Tensor:
    if isinstance(values, torch.Tensor):
        t = values.detach().to(device="cpu", dtype=torch.float64)
    else:
        t = torch.as_tensor(np.asarray(values, dtype=np.float64))
    if t.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}.")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or inf.")
    return t


def gaussian_statistics(features: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean (d,) and unbiased covariance (d, d) of the rows of ``features`` (n, d), in float64."""
    F = _float64(features, "features", 2)
    if F.shape[0] < 2:
        raise ValueError(f"features needs at least 2 rows for a covariance, got {F.shape[0]}.")
    mu = F.mean(0)
    C = F - mu
    return mu, (C.T @ C) / (F.shape[0] - 1)


def frechet_distance(mu1: ArrayLike, S1: ArrayLike, mu2: ArrayLike, S2: ArrayLike) -> float:
    """Fréchet (2-Wasserstein) distance ``|mu1 - mu2|^2 + Tr(S1 + S2 - 2 (S1^1/2 S2 S1^1/2)^1/2)`` of two Gaussians.

    Parameters
    ----------
    mu1, mu2 : array-like of shape (d,)
        Means.
    S1, S2 : array-like of shape (d, d)
        Symmetric positive semi-definite covariances.

    Returns
    -------
    float
        Non-negative; 0 for identical Gaussians (up to rounding: the value is clipped at 0).
    """
    m1, m2 = _float64(mu1, "mu1", 1), _float64(mu2, "mu2", 1)
    A, B = _float64(S1, "S1", 2), _float64(S2, "S2", 2)
    d = m1.shape[0]
    if m2.shape != (d,) or A.shape != (d, d) or B.shape != (d, d):
        raise ValueError(
            f"mu1, mu2 must be (d,) and S1, S2 (d, d) with one d, got {tuple(m1.shape)}, {tuple(m2.shape)}, "
            f"{tuple(A.shape)}, {tuple(B.shape)}."
        )
    # Symmetrise: callers' covariances may carry rounding asymmetry, eigh reads one triangle.
    A, B = (A + A.T) / 2, (B + B.T) / 2
    w, V = torch.linalg.eigh(A)
    R = (V * w.clamp(min=0.0).sqrt()) @ V.T  # A^1/2 (negative rounding eigenvalues clipped to 0)
    M = R @ B @ R
    cross = torch.linalg.eigvalsh((M + M.T) / 2).clamp(min=0.0).sqrt().sum()
    value = float((m1 - m2).square().sum() + A.trace() + B.trace() - 2 * cross)
    return max(value, 0.0)


def frechet_feature_distance(
    samples: ArrayLike, reference: ArrayLike, extractor: Any, *, reference_statistics: Any = None
) -> float:
    """Fréchet distance between the Gaussian fits of ``extractor``'s features of two sets of inputs.

    Parameters
    ----------
    samples : array-like of shape (n, D)
    reference : array-like of shape (m, D)
        Real inputs (ignored when ``reference_statistics`` is given).
    extractor : callable
        Maps an (n, D) float array to features (n, d), e.g. a
        :class:`~kppca.metrics.digit_features.DigitFeatures`.
    reference_statistics : (mu, S), optional
        Precomputed :func:`gaussian_statistics` of the reference features (saves a pass).

    Returns
    -------
    float
    """
    mu1, S1 = gaussian_statistics(extractor(samples))
    mu2, S2 = reference_statistics if reference_statistics is not None else gaussian_statistics(extractor(reference))
    return frechet_distance(mu1, S1, mu2, S2)
