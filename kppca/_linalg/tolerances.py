"""Rounding levels: when an eigenvalue of a computed PSD matrix counts as zero, and the magnitude checks behind them."""

from __future__ import annotations

import math

import torch

#: Error of a centered Gram entry ``K_ij - m_i - m_j + g`` in units of ``eps * max|K|``, to first order:
#: 1/2 ulp evaluating ``K_ij``, 1/2 for each of the three operations, about 1 for each mean: 4.
CENTERING_ROUNDINGS = 4.0


def rounding_tolerance(dtype: torch.dtype, n: int, scale: float | torch.Tensor) -> float | torch.Tensor:
    """The rounding level ``n * eps(dtype) * scale`` of ``n`` terms of magnitude ``scale`` (a tensor: per entry)."""
    return float(n) * torch.finfo(dtype).eps * (scale if isinstance(scale, torch.Tensor) else float(scale))


def objective_rounding(value: float, dtype: torch.dtype) -> float:
    """``100 eps max(1, |f|)``: a change of an iterated objective ``f`` below it is rounding, not progress."""
    return 100 * torch.finfo(dtype).eps * max(1.0, abs(value))


def support_rtol(dtype: torch.dtype) -> float:
    """``sqrt(eps)``: the relative distance from a subspace below which a point counts as on it.

    Far above the ``O(n eps)`` rounding of a residual ``x - U U^T x``, far below a genuine departure.
    """
    return math.sqrt(torch.finfo(dtype).eps)


def rank_tolerance(eigen_max: float, size: int, dtype: torch.dtype, scale: float = 0.0) -> float:
    """``size * eps * max(eigen_max, CENTERING_ROUNDINGS * scale)``: below it an eigenvalue of a PSD ``G`` is zero.

    ``size``: terms summed into each entry of ``G`` (``N``); ``scale``: its magnitude *before centering*
    (``max |K_ij|`` or ``max_i |phi_i|^2``); derived in docs/numerics.
    """
    return rounding_tolerance(dtype, size, max(eigen_max, CENTERING_ROUNDINGS * scale, 0.0))


def scatter_rounding_scale(raw_scale: float, trace: float, size: int) -> float:
    """The ``scale`` of :func:`rank_tolerance` for a scatter ``Phi_c^T Phi_c`` centered *before* the product.

    ``raw_scale``: ``max_i |phi_i|^2``; ``trace``: ``sum_i |phi_i - m|^2``; ``size``: ``N`` (docs/numerics).
    """
    return math.sqrt(max(trace, 0.0) * raw_scale / max(size, 1)) * (4.0 / CENTERING_ROUNDINGS)


def feature_rank(values: torch.Tensor, size: int, raw_scale: float, trace: float, max_rank: int) -> int:
    """Rank (at most ``max_rank``) of a scatter matrix from its float64 eigenvalues (k,), descending.

    ``size``, ``raw_scale``, ``trace`` as in :func:`scatter_rounding_scale`.
    """
    if values.numel() == 0:
        return 0
    tol = rank_tolerance(float(values[0]), size, torch.float64, scatter_rounding_scale(raw_scale, trace, size))
    return min(int((values > tol).sum()), max_rank)


def matrix_scale(A: torch.Tensor) -> float:
    """``max |A_ij|`` without allocating ``|A|``; NaN (or inf) when ``A`` has a non-finite entry."""
    if A.numel() == 0:
        return 0.0
    # aminmax propagates NaN, so one pass proves every entry finite (or not). Detached: a float of a
    # tensor with a graph makes torch warn during differentiated fits.
    low, high = torch.aminmax(A.detach())
    return max(float(high), -float(low))


def check_gram_scale(scale: float, size: int, dtype: torch.dtype, *, what: str, advice: str) -> float:
    """``scale`` (the pre-centering magnitude of a Gram/scatter matrix) unchanged, or ValueError.

    Refused when not finite or when ``(size * scale)^2`` overflows ``dtype``: that bounds every squared
    quantity the models form later, so a fit never yields ``inf``/NaN samples.
    """
    finfo = torch.finfo(dtype)
    name = str(dtype).replace("torch.", "")
    if not math.isfinite(scale):
        raise ValueError(f"the {what} has non-finite entries (NaN, or inf beyond the {name} range). {advice}")
    if size * scale >= math.sqrt(finfo.max):
        raise ValueError(
            f"the {what} reaches {scale:.3g}: with N = {size}, squared quantities such as lam^2 / N would "
            f"overflow {name} (max {finfo.max:.3g}). {advice}"
        )
    return scale
