"""Shared linear algebra of the estimators, one concept per module; the names other modules use are re-exported here."""

from .blocks import block_rows, centered_rows, centered_scatter, map_row_blocks
from .eigen import eigh_descending, eigh_top, flip_signs, orthonormalize_columns, prefer_partial
from .factorizations import (
    cholesky_in_place,
    cholesky_or_none,
    cholesky_solve,
    pivoted_cholesky,
    smallest_eigenvalue_bound,
)
from .row_selection import row_top_means
from .spectra import Spectrum, solve_spectrum
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
