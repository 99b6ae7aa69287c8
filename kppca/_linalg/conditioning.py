"""The smallest eigenvalue of a symmetric positive definite matrix, bounded from below through its Cholesky factor."""

from __future__ import annotations

import scipy.linalg
import torch

__all__ = ["smallest_eigenvalue_bound"]


def smallest_eigenvalue_bound(L: torch.Tensor) -> float:
    """A lower estimate ``1 / ||A^{-1}||_1`` of ``lam_min(A)``, ``A = L L^T`` (``L`` (n, n) lower, CPU), in ``O(n^2)``.

    LAPACK's ``?pocon`` estimates the norm, at worst a small factor low, so callers keep a safety factor;
    0.0 when ``A`` is numerically singular.
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
