"""The smallest eigenvalue of a symmetric positive definite matrix, bounded from below through its Cholesky factor."""

from __future__ import annotations

import scipy.linalg
import torch

__all__ = ["smallest_eigenvalue_bound"]


def smallest_eigenvalue_bound(L: torch.Tensor) -> float:
    """An estimate from below of ``lam_min(A)`` for ``A = L L^T``, in ``O(n^2)`` (LAPACK ``?pocon``).

    ``lam_min(A) = 1 / ||A^{-1}||_2 >= 1 / ||A^{-1}||_1`` (``||B||_2 <= ||B||_1`` for a symmetric
    ``B``); LAPACK's estimator (Hager, Higham) gives ``||A^{-1}||_1`` from a few triangular
    solves with ``L``, usually exactly and in practice within a small factor from below, so callers
    keep a safety factor when comparing the result with a threshold.

    Parameters
    ----------
    L : Tensor of shape (n, n), lower triangular, float32 or float64 on the CPU

    Returns
    -------
    float
        ``1 / estimate(||A^{-1}||_1)``; 0.0 when ``A`` is numerically singular.
    """
    if L.shape[0] == 0:
        return float("inf")
    arr = L.detach().numpy()
    pocon = scipy.linalg.get_lapack_funcs("pocon", (arr,))
    # A row-major lower L is a column-major upper U = L^T with A = U^T U: no copy.
    rcond, info = pocon(arr.T, 1.0, uplo="U")
    if info != 0:  # pragma: no cover - argument error inside LAPACK
        raise RuntimeError(f"LAPACK pocon failed with info={info}")
    return float(rcond)  # rcond = 1 / (anorm * ||A^{-1}||_1) with anorm = 1
