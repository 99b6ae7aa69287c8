"""Rounding levels: when an eigenvalue of a computed PSD matrix counts as zero, and the magnitude checks behind them."""

from __future__ import annotations

import math

import torch

__all__ = [
    "CENTERING_ROUNDINGS",
    "rounding_tolerance",
    "objective_rounding",
    "support_rtol",
    "rank_tolerance",
    "scatter_rounding_scale",
    "feature_rank",
    "matrix_scale",
    "check_gram_scale",
]

#: Error of a centered Gram entry ``K_ij - m_i - m_j + g`` in units of ``eps * max|K|``, to first
#: order: half an ulp from evaluating ``K_ij``, half an ulp from each of the three centering
#: operations, and about one ulp from each of the two means ``m_i``, ``m_j`` (sums of ``N``
#: numbers of size ``max|K|``): 1/2 + 3/2 + 2 = 4. Kernels whose own evaluation is less accurate
#: than a few ulps of ``max|K|`` are covered only up to this factor.
CENTERING_ROUNDINGS = 4.0


def rounding_tolerance(dtype: torch.dtype, n: int, scale: float | torch.Tensor) -> float | torch.Tensor:
    """The rounding level ``n * eps(dtype) * scale`` of a quantity built from ``n`` terms of magnitude ``scale``.

    The one dtype-aware tolerance of the checks that decide whether a computed
    matrix is usable: ``n`` entries of size ``scale``, each rounded at relative
    precision ``eps`` (2.2e-16 in float64, 1.2e-7 in float32), add up to an
    absolute error of at most about ``n * eps * scale`` in a sum, an inner product
    or an eigenvalue (Weyl's bound with the ``n x n`` error matrix's norm). A
    margin (a ridge, an eigenvalue) below this level cannot be told from rounding
    in ``dtype``: the problem is beyond that precision (use float64, or rescale).

    Parameters
    ----------
    dtype : torch.dtype
        Floating dtype of the computation.
    n : int
        Number of terms (e.g. the order ``N`` of a Gram matrix).
    scale : float or Tensor
        Magnitude of the terms (e.g. ``max |K_ij|``); a tensor gives one level per entry
        (e.g. ``sum_j |W_ij|`` per row: the rounding level of each row sum).

    Returns
    -------
    float, or Tensor like ``scale``
    """
    return float(n) * torch.finfo(dtype).eps * (scale if isinstance(scale, torch.Tensor) else float(scale))


def objective_rounding(value: float, dtype: torch.dtype) -> float:
    """``100 eps max(1, |f|)``: a change of an iteratively computed objective ``f`` below it is rounding, not progress.

    The objectives the optimisers compare are sums of many rounded terms: a rise or a decrease
    of less than about a hundred ulps of ``max(1, |f|)`` cannot be told from their rounding.
    """
    return 100 * torch.finfo(dtype).eps * max(1.0, abs(value))


def support_rtol(dtype: torch.dtype) -> float:
    """``sqrt(eps)``: the default relative distance from a subspace below which a point counts as on it.

    Half the digits: far above the ``O(n eps)`` rounding of a computed residual ``x - U U^T x``
    (rounding never puts a point off the support), and small enough that a genuine departure
    is not taken for rounding.
    """
    return math.sqrt(torch.finfo(dtype).eps)


def rank_tolerance(eigen_max: float, size: int, dtype: torch.dtype, scale: float = 0.0) -> float:
    """Absolute threshold below which an eigenvalue of a PSD matrix counts as zero.

    Parameters
    ----------
    eigen_max : float
        Largest eigenvalue of the matrix ``G`` whose rank is counted.
    size : int
        Number of terms summed into each entry of ``G`` (its order ``N`` for a
        Gram matrix; the number of samples for a scatter matrix).
    dtype : torch dtype
        Precision ``G`` was computed in (``eps`` = 2.2e-16 in float64, 1.2e-7 in float32).
    scale : float, default 0.0
        Largest magnitude of the matrix *before centering*: ``max |K_ij|`` of the raw
        Gram matrix (its largest diagonal entry for a PSD kernel), or the largest
        squared uncentered feature norm ``max_i |phi_i|^2`` for a scatter matrix.

    Returns
    -------
    float
        ``size * eps * max(eigen_max, CENTERING_ROUNDINGS * scale)``.

    Notes
    -----
    Two error sources bound the eigenvalues that are indistinguishable from zero:

    * the eigensolver's backward error, ``~ size * eps * ||G|| = size * eps * eigen_max``;
    * the rounding error already in ``G``. A centered entry ``K_ij - m_i - m_j + g`` is a
      difference of numbers of size up to ``scale``, so its error is *absolute*, about
      ``CENTERING_ROUNDINGS * eps * scale`` (see that constant), however small the centered
      entry. The error matrix is structured (the errors of the means ``m_i`` repeat along
      rows and columns, a rank-one pattern), so its 2-norm reaches the bound
      ``||E||_2 <= N max |E_ij|`` rather than the ``sqrt(N)`` of independent errors.

    Data far from the origin (an offset of 1e4 in a linear kernel) make ``scale`` many
    orders of magnitude above ``eigen_max``; a tolerance relative to ``eigen_max`` only
    then calls rounding noise "negative eigenvalues" or "rank".
    """
    return rounding_tolerance(dtype, size, max(eigen_max, CENTERING_ROUNDINGS * scale, 0.0))


def scatter_rounding_scale(raw_scale: float, trace: float, size: int) -> float:
    """The ``scale`` argument of :func:`rank_tolerance` for a scatter ``Phi_c^T Phi_c`` centered *before* the product.

    Centering the features first leaves an absolute error ``Delta`` with
    ``|Delta_ik| <~ 2 eps |phi_ik|`` (the subtraction and the mean), so
    ``||Delta||_F <= 2 eps sqrt(N max_i |phi_i|^2)``; the scatter's error
    ``Phi_c^T Delta + Delta^T Phi_c`` then has 2-norm at most
    ``2 sqrt(lam_1) ||Delta||_F <= 4 eps sqrt(N lam_1 max_i |phi_i|^2)``, with
    ``lam_1 <= trace``. That is ``N eps * CENTERING_ROUNDINGS * sqrt(trace max|phi|^2 / N)``,
    far below the ``N eps max|phi|^2`` of a centered Gram matrix when the data sit far
    from the origin.

    Parameters
    ----------
    raw_scale : float
        ``max_i |phi_i|^2`` (uncentered squared feature norms).
    trace : float
        ``trace(Phi_c^T Phi_c) = sum_i |phi_i - m|^2``.
    size : int
        Number of samples ``N``.

    Returns
    -------
    float
    """
    return math.sqrt(max(trace, 0.0) * raw_scale / max(size, 1)) * (4.0 / CENTERING_ROUNDINGS)


def feature_rank(values: torch.Tensor, size: int, raw_scale: float, trace: float, max_rank: int) -> int:
    """Rank of a scatter (or centered feature Gram) matrix from its float64 eigenvalues.

    Parameters
    ----------
    values : Tensor of shape (k,)
        Eigenvalues, descending, computed in float64 from features centered *before*
        the product.
    size, raw_scale, trace
        As for :func:`scatter_rounding_scale`.
    max_rank : int
        Structural bound, ``min(d, N - center)``.

    Returns
    -------
    int
        Eigenvalues above ``rank_tolerance(lam_1, N, float64, scatter_rounding_scale(...))``,
        capped at ``max_rank``.
    """
    if values.numel() == 0:
        return 0
    tol = rank_tolerance(float(values[0]), size, torch.float64, scatter_rounding_scale(raw_scale, trace, size))
    return min(int((values > tol).sum()), max_rank)


def matrix_scale(A: torch.Tensor) -> float:
    """``max |A_ij|`` without allocating ``|A|``; NaN (or inf) when ``A`` has a non-finite entry.

    Read from ``A`` detached: a float of a tensor with a graph makes torch warn during fits that
    differentiate through the caller.

    Parameters
    ----------
    A : Tensor of any shape

    Returns
    -------
    float
    """
    if A.numel() == 0:
        return 0.0
    # aminmax propagates NaN, so one pass proves every entry finite (or not).
    low, high = torch.aminmax(A.detach())
    return max(float(high), -float(low))


def check_gram_scale(scale: float, size: int, dtype: torch.dtype, *, what: str, advice: str) -> float:
    """Validate the pre-centering magnitude ``scale`` of a Gram/scatter matrix built in ``dtype``.

    The models square Gram-scale quantities summed over ``size`` terms (``lam_p^2 / N``
    in the marginal covariance of kernel vectors and its sampling factor, squared norms
    of kernel vectors, feature covariances). All are bounded by ``(size * scale)^2``,
    so requiring that to be finite makes every later step overflow-free; a model that
    fits but returns ``inf``/NaN samples is refused at fit time instead.

    Parameters
    ----------
    scale : float
        From :func:`matrix_scale` (``max |K_ij|``) or the largest squared feature norm.
    size : int
        Number of training points ``N``.
    dtype : torch dtype
    what : str
        The matrix, for the message (e.g. ``"Gram matrix of `kernel` on X"``).
    advice : str
        What the user can change (named arguments), appended to the message.

    Returns
    -------
    float
        ``scale``, unchanged.

    Raises
    ------
    ValueError
        When ``scale`` is NaN/inf or ``(size * scale)^2`` exceeds the largest ``dtype`` number.
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
