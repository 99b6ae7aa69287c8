"""Shared linear algebra of the estimators, one concept per module.

* :mod:`.blocks`: row blocks of bounded memory (:func:`block_rows`, :func:`map_row_blocks`);
* :mod:`.tolerances`: rounding levels and magnitude checks (:func:`rank_tolerance`, ...);
* :mod:`.scatter`: float64 feature statistics (:func:`centered_scatter`, :func:`centered_rows`);
* :mod:`.factorizations`: Cholesky factorisations (in place, pivoted, checked) and solves;
* :mod:`.eigen`: dense and Lanczos eigensolvers, the sign convention and the one
  dense-or-Lanczos policy (:func:`prefer_partial`);
* :mod:`.symmetric`: a symmetric CPU matrix as a BLAS ``symv`` operator (one triangle read; one thread when small);
* :mod:`.spectra`: the spectrum of a PSD problem (top eigenpairs, trace, rank, rounding level);
* :mod:`.conditioning`: a lower estimate of the smallest eigenvalue from a Cholesky factor;
* :mod:`.threads`: the threads of kppca's compute sections (caller's limits, free cores).

The names other modules use are re-exported here (``from kppca._linalg import X``).
"""

from .blocks import block_rows, map_row_blocks
from .conditioning import smallest_eigenvalue_bound
from .eigen import eigh_descending, eigh_top, flip_signs, orthonormalize_columns, prefer_partial
from .factorizations import cholesky_in_place, cholesky_or_none, cholesky_solve, pivoted_cholesky
from .scatter import centered_rows, centered_scatter
from .spectra import Spectrum, full_spectrum, partial_spectrum, solve_spectrum
from .threads import available_threads, blas_threads, compute_threads, section_threads
from .tolerances import (
    CENTERING_ROUNDINGS,
    check_gram_scale,
    feature_rank,
    matrix_scale,
    objective_rounding,
    rank_tolerance,
    rounding_tolerance,
    scatter_rounding_scale,
    support_rtol,
)

__all__ = [
    "block_rows",
    "map_row_blocks",
    "prefer_partial",
    "eigh_descending",
    "eigh_top",
    "flip_signs",
    "orthonormalize_columns",
    "cholesky_in_place",
    "cholesky_or_none",
    "cholesky_solve",
    "pivoted_cholesky",
    "centered_rows",
    "centered_scatter",
    "Spectrum",
    "full_spectrum",
    "partial_spectrum",
    "solve_spectrum",
    "smallest_eigenvalue_bound",
    "available_threads",
    "blas_threads",
    "compute_threads",
    "section_threads",
    "CENTERING_ROUNDINGS",
    "check_gram_scale",
    "feature_rank",
    "matrix_scale",
    "objective_rounding",
    "rank_tolerance",
    "rounding_tolerance",
    "scatter_rounding_scale",
    "support_rtol",
]
