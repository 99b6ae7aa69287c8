"""What the shallow RKMs share to build and diagonalise training kernel matrices.

* :func:`resolve_kernel`: the fitted kernel of an estimator, the default ``"rbf"``
  taking its width from the data (median heuristic) as scikit-learn's
  ``gamma="scale"`` does;
* :func:`training_gram`: every training Gram matrix goes through the core's
  blocked builder (:func:`kppca.kernels.gram.gram_matrix`) and its scale check
  (:func:`kppca._linalg.check_gram_scale`), so non-finite or overflow-prone
  kernels are refused with one message;
* :func:`top_spectrum`: top eigenpairs through :mod:`kppca._linalg`'s spectra,
  with the RKMs' "n_components exceeds the rank" rule (and a rank-0 message that
  does not advise ``n_components <= 0``).

INTEGRATION: ``training_gram`` is the one place to swap for ``kppca.kernels.CenteredGram``,
``resolve_kernel`` the one place to swap for ``RBF(bandwidth="scale").resolve(X)``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from .._linalg import Spectrum, check_gram_scale, full_spectrum, matrix_scale, partial_spectrum
from ..kernels import RBF, Kernel
from ..kernels.gram import gram_matrix
from ..kernels.registry import as_kernel
from ..preimage import median_heuristic_bandwidth

__all__ = ["resolve_kernel", "training_gram", "top_spectrum", "DEFAULT_GRAM_ADVICE"]

DEFAULT_GRAM_ADVICE = "Check that the kernel is finite on X, rescale X (e.g. standardise it) or use dtype='float64'."

#: Largest order solved densely; above it (and for few components) Lanczos is used.
_DENSE_LIMIT = 2000


def resolve_kernel(kernel: Any, X: torch.Tensor) -> Kernel:
    """The kernel to fit with: a copy of ``kernel``; the string ``"rbf"`` gets a data-derived width.

    ``"rbf"`` (the RKMs' default) means an RBF kernel whose bandwidth is the median
    distance between training rows (the median heuristic; 1.0 when every row is
    the same): a width on the data's scale, as scikit-learn's ``gamma="scale"``.
    An explicit ``RBF(...)`` object keeps its own bandwidth.

    Parameters
    ----------
    kernel : Kernel, str, callable or None
    X : Tensor of shape (N, D), the training inputs

    Returns
    -------
    Kernel
        A new object (the estimator's parameter is never modified).
    """
    if isinstance(kernel, str) and kernel.lower() == "rbf":
        try:
            width = median_heuristic_bandwidth(X)
        except ValueError:  # all rows coincide: no distance to take a scale from
            width = 1.0
        if not np.isfinite(width) or width <= 0:
            width = 1.0
        return RBF(width)
    return copy.deepcopy(as_kernel(kernel))


def training_gram(kernel: Kernel, X: torch.Tensor, *, what: str = "Gram matrix of `kernel` on X",
                  advice: str = DEFAULT_GRAM_ADVICE) -> tuple[torch.Tensor, float]:
    """``K = [k(x_i, x_j)]`` (N, N) and its magnitude ``max |K_ij|``, checked finite and overflow-free.

    Raises
    ------
    ValueError
        When ``K`` has non-finite entries or would overflow later squared quantities.
    """
    K = gram_matrix(kernel, X)
    scale = check_gram_scale(matrix_scale(K), X.shape[0], K.dtype, what=what, advice=advice)
    return K, scale


def top_spectrum(
    A: torch.Tensor,
    s: int,
    *,
    what: str,
    scale: float = 0.0,
    size: int | None = None,
    max_rank: int | None = None,
    random_state: np.random.Generator | None = None,
) -> Spectrum:
    """The top ``s`` eigenpairs of a symmetric PSD matrix ``A`` (m, m), refusing ``s`` above its rank.

    Dense (:func:`kppca._linalg.full_spectrum`) for ``m <= 2000`` or ``3 s >= m``,
    Lanczos (:func:`kppca._linalg.partial_spectrum`) otherwise; eigenvalues below
    the rounding level of ``A`` (see :func:`kppca._linalg.rank_tolerance`) do not count.

    Returns
    -------
    Spectrum
        ``values`` (s,) descending, ``vectors`` (m, s) with the package's sign convention.

    Raises
    ------
    ValueError
        ``A`` is not PSD, numerically zero (rank 0: constant data or a degenerate
        kernel), or ``s`` exceeds its numerical rank.
    """
    m = A.shape[0]
    n_terms = size or m
    if m <= _DENSE_LIMIT or 3 * s >= m:
        spec = full_spectrum(A, what=what, max_rank=max_rank, scale=scale, size=n_terms)
    else:
        rng = np.random.default_rng(0) if random_state is None else random_state
        # The rank is the count of the top s eigenvalues above the rounding level: a lower bound
        # that decides whether s components exist, which is all that is asked here.
        spec = partial_spectrum(A, s, rank=lambda tol: s, random_state=rng, what=what, scale=scale, size=n_terms)
        spec = Spectrum(spec.values, spec.vectors, spec.trace, int((spec.values > spec.tolerance).sum()),
                        False, spec.tolerance)
    if spec.rank == 0:
        raise ValueError(
            f"the {what} is numerically zero (rank 0): the data carry no variation under this kernel "
            "(constant or duplicated rows, or a kernel that is constant on them), so no component can be "
            "extracted. Check the data, or use a kernel (or bandwidth) that separates the points."
        )
    if s > spec.rank:
        raise ValueError(
            f"n_components={s} exceeds the numerical rank {spec.rank} of the {what}: only {spec.rank} "
            f"directions carry variance. Use n_components <= {spec.rank}."
        )
    return Spectrum(spec.values[:s].clone(), spec.vectors[:, :s].clone(), spec.trace, spec.rank,
                    spec.complete, spec.tolerance)
