"""The spectrum of a PSD problem: top eigenpairs, float64 trace, rank and rounding level, dense or by Lanczos."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .eigen import eigh_descending, eigh_top
from .factorizations import numerical_rank_by_cholesky
from .._validation import precision_advice
from .tolerances import rank_tolerance

__all__ = ["INDEFINITE_ADVICE", "Spectrum", "float64_trace", "full_spectrum", "partial_spectrum", "solve_spectrum"]

#: Why an indefinite kernel is refused, and what to do (scikit-learn's KernelPCA fits one when its top
#: eigenvalues are positive; a probabilistic model cannot: K_c is its covariance in feature space).
INDEFINITE_ADVICE = (
    " An indefinite Gram matrix is the covariance of no feature vectors: use a valid (PSD) kernel, or clip "
    "the matrix's negative eigenvalues to zero before fitting."
)

@dataclass
class Spectrum:
    """Eigen-information of the PSD matrix ``G`` (n, n).

    Attributes
    ----------
    values : Tensor of shape (k,)
        Top eigenvalues, descending (all ``r`` non-zero ones when ``complete``).
    vectors : Tensor of shape (n, k)
        Matching orthonormal eigenvectors.
    trace : float
        Accumulated in float64 whatever the dtype of ``G``.
    rank : int
        The rank ``r`` the model uses: a structural value when one was given, else
        the numerical count. ``values`` may hold fewer than ``rank`` entries when
        some of the ``r`` eigenvalues are below the rounding level.
    complete : bool
        True when ``values`` holds every eigenvalue above the rounding level.
    tolerance : float
        The rounding level ``tol`` of :func:`rank_tolerance` for ``G``.
    """

    values: torch.Tensor
    vectors: torch.Tensor
    trace: float
    rank: int
    complete: bool
    tolerance: float = 0.0


def float64_trace(G: torch.Tensor) -> float:
    """``trace(G)`` summed in float64 (the diagonal of a float32 matrix loses nothing more)."""
    return float(G.diagonal().sum(dtype=torch.float64))


def full_spectrum(
    G: torch.Tensor,
    *,
    what: str,
    max_rank: int | None = None,
    scale: float = 0.0,
    size: int | None = None,
    rank: int | None = None,
) -> Spectrum:
    """Dense eigendecomposition, numerical rank and PSD check of ``G``.

    Parameters
    ----------
    G : Tensor of shape (n, n), symmetric
    what : str
        Name of ``G`` in error messages.
    max_rank : int, optional
        A structural bound on the rank (``N - 1`` for a centered Gram matrix, whose
        null vector ``1`` is known exactly).
    scale : float, default 0.0
        Magnitude of the matrix before centering (``max |K_ij|`` of the raw Gram
        matrix, or ``max_i |phi_i|^2``): centering leaves an absolute rounding error
        of that size in every entry (see :func:`~kppca._linalg.rank_tolerance`).
    size : int, optional
        Number of terms summed into each entry (default ``n``; ``N`` for a scatter matrix).
    rank : int, optional
        The rank decided by structure (:mod:`kppca.kernels.rank`). Without it the rank
        counts eigenvalues above ``tol = size * eps * max(lam_1, scale)``. Either way
        ``values`` keeps only eigenvalues above ``tol`` (at most ``rank`` of them).

    Raises
    ------
    ValueError
        If ``G`` has an eigenvalue below ``-tol`` (not positive semi-definite), or LAPACK's
        eigensolver does not converge on it.
    """
    try:
        values, vectors = eigh_descending(G)
    except torch.linalg.LinAlgError as exc:  # LAPACK's iteration gave up: say what to change
        raise ValueError(
            f"the dense eigendecomposition of the {what} did not converge (LAPACK's iteration stopped): its "
            "eigenvalues are too clustered at this precision; rescale X or choose kernel parameters suited to its "
            "scale." + precision_advice(G.dtype, "rounded kernel values cluster the small eigenvalues")
        ) from exc
    tol = rank_tolerance(float(values[0]), size or G.shape[0], G.dtype, scale)
    if float(values[-1]) < -tol:
        raise ValueError(
            f"the {what} is not positive semi-definite (smallest eigenvalue {float(values[-1]):.3g}, "
            f"largest {float(values[0]):.3g}, rounding level {tol:.3g})." + INDEFINITE_ADVICE
            + precision_advice(G.dtype, "rounding can make a valid kernel's matrix indefinite")
        )
    resolved = int((values > tol).sum())
    if max_rank is not None:
        resolved = min(resolved, max_rank)
    if rank is None:
        rank = resolved
    resolved = min(resolved, rank)
    return Spectrum(values[:resolved], vectors[:, :resolved], float64_trace(G), rank, True, tol)


def partial_spectrum(
    G: torch.Tensor,
    k: int,
    *,
    rank: int | Callable[[float], int],
    random_state: np.random.Generator,
    what: str,
    scale: float = 0.0,
    size: int | None = None,
) -> Spectrum:
    """Top-``k`` eigenpairs by Lanczos, the float64 trace, and the rank.

    ``rank`` is the structural rank (an int), or a callable ``rank(tol)`` that counts it
    against the eigenvalue tolerance ``tol`` (the numerical fallback).

    ``scale`` and ``size`` as in :func:`full_spectrum`; ``tol = size * eps * max(lam_1, scale)``.

    Raises
    ------
    ValueError
        When ``G`` is numerically zero (rank 0), or not PSD.
    """
    trace = float64_trace(G)
    n_terms = size or G.shape[0]
    # G is PSD, so trace(G) bounds every eigenvalue: a trace at rounding level means rank 0.
    # Checked before Lanczos, which fails obscurely on a zero operator ("starting vector is zero").
    zero_tol = rank_tolerance(0.0, n_terms, G.dtype, scale)
    if trace < -zero_tol:
        raise ValueError(
            f"the {what} is not positive semi-definite (negative trace {trace:.3g})." + INDEFINITE_ADVICE
        )
    if trace <= zero_tol:
        raise ValueError(
            f"the {what} is numerically zero (trace {trace:.3g}): it has rank 0 and no principal "
            "direction to find. Check X for constant or duplicated rows."
        )
    values, vectors = eigh_top(G, k, random_state=random_state)
    if float(values[0]) <= 0:
        raise ValueError(f"the {what} has no positive eigenvalue; the data (or kernel) are degenerate.")
    tol = rank_tolerance(float(values[0]), n_terms, G.dtype, scale)
    if trace < float(values.sum()) - tol:
        raise ValueError(
            f"the {what} is not positive semi-definite (its trace is below the sum of its top eigenvalues)."
            + INDEFINITE_ADVICE
        )
    r = rank(tol) if callable(rank) else int(rank)
    return Spectrum(values, vectors, trace, r, False, tol)


def solve_spectrum(
    G: torch.Tensor,
    solver: str,
    k: int | None = None,
    *,
    what: str,
    max_rank: int | None = None,
    rank: int | Callable[[float], int] | None = None,
    scale: float = 0.0,
    size: int | None = None,
    random_state: np.random.Generator | None = None,
) -> Spectrum:
    """The one entry into the spectrum of a PSD matrix ``G`` (n, n): every estimator's solve comes here.

    Parameters
    ----------
    solver : {"dense", "partial"}
        "dense": :func:`full_spectrum`; "partial": the top ``k`` by Lanczos (:func:`partial_spectrum`).
    k : int, required for "partial"
    what, scale, size
        As for :func:`full_spectrum` (messages, rounding level).
    max_rank : int, optional
        Structural bound on the rank (``n - 1`` for a centered Gram matrix).
    rank : int, callable or None
        The rank decided by structure (an int), or a callable ``rank(tol)`` counting it; None counts it
        numerically (the eigenvalues when dense, a pivoted Cholesky of ``G`` when partial).
    random_state : numpy Generator, optional
        The Lanczos start vector (seed 0 when None).
    """
    if solver == "dense":
        fixed = None if rank is None or callable(rank) else int(rank)
        return full_spectrum(G, what=what, max_rank=max_rank, scale=scale, size=size, rank=fixed)
    if rank is None:
        bound = G.shape[0] if max_rank is None else max_rank

        def rank(tol: float) -> int:  # no structure: pivots of a pivoted Cholesky of G, O(n r^2)
            return numerical_rank_by_cholesky(G, bound, tol)

    rng = np.random.default_rng(0) if random_state is None else random_state
    return partial_spectrum(G, int(k), rank=rank, random_state=rng, what=what, scale=scale, size=size)
