"""The spectrum of a PSD problem: top eigenpairs, float64 trace, rank and rounding level, dense or by Lanczos."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .eigen import eigh_descending, eigh_top
from .factorizations import cholesky_or_none, pivoted_cholesky
from .._validation import precision_advice
from .tolerances import rank_tolerance

#: Why an indefinite kernel is refused (scikit-learn's KernelPCA fits one; K_c is a covariance here), and what to do.
INDEFINITE_ADVICE = (
    " An indefinite Gram matrix is the covariance of no feature vectors: use a valid (PSD) kernel, or clip "
    "the matrix's negative eigenvalues to zero before fitting."
)

@dataclass
class Spectrum:
    """Eigen-information of the PSD matrix ``G`` (n, n).

    ``values`` (k,) descending and ``vectors`` (n, k): the top eigenpairs (every one above the rounding
    level ``tolerance`` when ``complete``); ``trace`` summed in float64; ``rank``: the structural rank
    when one was given, else the numerical count (``values`` may hold fewer entries).
    """

    values: torch.Tensor
    vectors: torch.Tensor
    trace: float
    rank: int
    complete: bool
    tolerance: float = 0.0


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
    """The one entry into the spectrum of a PSD ``G`` (n, n): dense ``eigh`` or, for "partial", the top ``k``.

    ``what`` names ``G`` in messages; ``max_rank``: a structural bound (``N - 1`` centered); ``scale``
    (the magnitude before centering) and ``size`` (terms per entry, default ``n``) set :func:`rank_tolerance`;
    ``rank``: structural (an int), a callable ``rank(tol)`` (partial only), or None (counted above ``tol``
    when dense, by Cholesky pivots when partial); ``random_state`` draws the Lanczos start (seed 0 when None).
    ValueError when ``G`` is not PSD, (dense) LAPACK's ``eigh`` does not converge or (partial) ``G`` is zero.
    """
    trace = float(G.diagonal().sum(dtype=torch.float64))
    n_terms = size or G.shape[0]
    if solver == "dense":
        try:
            values, vectors = eigh_descending(G)
        except torch.linalg.LinAlgError as exc:  # LAPACK's iteration gave up: say what to change
            raise ValueError(
                f"the dense eigendecomposition of the {what} did not converge (LAPACK's iteration stopped): its "
                "eigenvalues are too clustered at this precision; rescale X or choose kernel parameters suited to "
                "its scale." + precision_advice(G.dtype, "rounded kernel values cluster the small eigenvalues")
            ) from exc
        tol = rank_tolerance(float(values[0]), n_terms, G.dtype, scale)
        if float(values[-1]) < -tol:
            raise ValueError(
                f"the {what} is not positive semi-definite (smallest eigenvalue {float(values[-1]):.3g}, "
                f"largest {float(values[0]):.3g}, rounding level {tol:.3g})." + INDEFINITE_ADVICE
                + precision_advice(G.dtype, "rounding can make a valid kernel's matrix indefinite")
            )
        resolved = int((values > tol).sum())
        if max_rank is not None:
            resolved = min(resolved, max_rank)
        rank = resolved if rank is None or callable(rank) else int(rank)
        resolved = min(resolved, rank)
        return Spectrum(values[:resolved], vectors[:, :resolved], trace, rank, True, tol)
    # trace(G) bounds every eigenvalue of a PSD G: checked before Lanczos, which fails obscurely on zero.
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
    values, vectors = eigh_top(G, int(k), random_state=random_state)
    if float(values[0]) <= 0:
        raise ValueError(f"the {what} has no positive eigenvalue; the data (or kernel) are degenerate.")
    tol = rank_tolerance(float(values[0]), n_terms, G.dtype, scale)
    if trace < float(values.sum()) - tol:
        raise ValueError(
            f"the {what} is not positive semi-definite (its trace is below the sum of its top eigenvalues)."
            + INDEFINITE_ADVICE
        )
    if rank is None:
        bound = G.shape[0] if max_rank is None else max_rank
        # Full when a plain Cholesky succeeds, else the pivots of a pivoted one, O(n r^2).
        full = G.shape[0] <= bound and cholesky_or_none(G, tol) is not None
        r = G.shape[0] if full else min(pivoted_cholesky(G, tol).shape[1], bound)
    else:
        r = rank(tol) if callable(rank) else int(rank)
    return Spectrum(values, vectors, trace, r, False, tol)
