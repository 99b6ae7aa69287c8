"""Cholesky factorisations of PSD matrices: in place, pivoted (rank-revealing), checked, and solves."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import torch

from .tolerances import rank_tolerance, rounding_tolerance

__all__ = [
    "pivoted_cholesky",
    "cholesky_in_place",
    "cholesky_solve",
    "cholesky_or_none",
    "numerical_rank_by_cholesky",
]

def pivoted_cholesky(A: torch.Tensor, atol: float | None = None, *, overwrite: bool = False) -> torch.Tensor:
    """Factor ``L`` (n, r) with ``L L^T = A`` for a PSD matrix of numerical rank ``r``.

    Uses LAPACK's pivoted Cholesky (``?pstrf``), which stops at the numerical
    rank instead of failing on singular matrices, so it works for the
    always-singular centered Gram matrix. Runs on the CPU.

    Parameters
    ----------
    A : Tensor of shape (n, n), symmetric PSD
    atol : float, optional
        Stop when every remaining pivot is below ``atol`` (default
        ``n * eps * max(diag(A))``). Pass :func:`rank_tolerance` of the largest
        eigenvalue to count against the same threshold as an eigendecomposition.
    overwrite : bool, default False
        Factor a contiguous CPU ``A`` in its own memory (``A`` is then consumed): the
        peak is ``A`` plus the ``n x r`` result, instead of three ``n x n`` arrays.

    Returns
    -------
    Tensor of shape (n, r) on ``A``'s device.
    """
    n = A.shape[0]
    np_dtype = np.float64 if A.dtype == torch.float64 else np.float32
    in_place = overwrite and A.device.type == "cpu" and A.is_contiguous() and A.dtype in (torch.float32, torch.float64)
    # A row-major symmetric matrix is its own column-major transpose: "upper" on that view leaves
    # the factor L (lower, rows pivoted) in the lower triangle of the row-major array.
    if in_place:
        arr = A.detach().numpy()
    else:  # one host copy: ``.cpu()`` of a device tensor is one already
        arr = A.detach().cpu().numpy().astype(np_dtype, copy=A.device.type == "cpu")
    if atol is None:
        atol = rounding_tolerance(torch.float64 if arr.dtype == np.float64 else torch.float32, n,
                                  float(np.max(np.diag(arr), initial=0.0)))
    pstrf = scipy.linalg.get_lapack_funcs("pstrf", (arr,))
    _, piv, rank, info = pstrf(arr.T, tol=atol, lower=0, overwrite_a=1)
    if info < 0:  # pragma: no cover - argument error inside LAPACK
        raise RuntimeError(f"LAPACK pstrf failed with info={info}")
    L = np.empty((n, rank), dtype=arr.dtype)
    rows = max(1, (1 << 20) // max(1, rank))
    for i in range(0, n, rows):
        block = np.tril(arr[i : i + rows, :rank], k=i)  # entries right of the diagonal are not the factor's
        L[piv[i : i + rows] - 1] = block  # undo the symmetric pivoting: A = P L L^T P^T
    return torch.as_tensor(L, dtype=A.dtype, device=A.device)


def cholesky_in_place(A: torch.Tensor) -> torch.Tensor | None:
    """Lower Cholesky factor of a symmetric PD matrix, written over ``A``; None when it is not PD.

    LAPACK and cuSOLVER work on column-major matrices: a row-major symmetric ``A`` is
    its own column-major transpose ``A.mT``, so factoring ``A.mT`` as ``U^T U`` with
    ``out=`` that same view runs in ``A``'s memory (no second ``n x n`` matrix) and
    leaves ``L = U^T`` in the lower triangle of ``A``. Only the lower triangle of ``A`` is read
    (the upper one may hold anything). ``A`` is consumed either way.
    Pivots are not checked against a tolerance: a factorisation that completes
    reproduces ``A`` to its backward error.

    Parameters
    ----------
    A : Tensor of shape (n, n), contiguous, symmetric

    Returns
    -------
    Tensor of shape (n, n) or None
        ``L`` (lower triangular, ``L L^T = A``), normally sharing ``A``'s memory.
    """
    view = A.mT
    info = torch.empty((), dtype=torch.int32, device=A.device)
    U, info = torch.linalg.cholesky_ex(view, upper=True, out=(view, info))
    if int(info) != 0:
        return None
    return U.mT.tril_()


def cholesky_solve(L: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``A^{-1} B`` from the lower Cholesky factor ``L`` of ``A`` (n, n), ``B`` (n, k).

    Two triangular solves: unlike ``torch.cholesky_solve``, which copies a row-major
    factor into LAPACK's layout, they read ``L`` where it is (no second ``n x n`` matrix).
    """
    return torch.linalg.solve_triangular(L.mT, torch.linalg.solve_triangular(L, B, upper=False), upper=True)


def cholesky_or_none(A: torch.Tensor, atol: float | None = None) -> torch.Tensor | None:
    """Lower Cholesky factor of ``A`` when it is numerically positive definite, else None.

    A factorisation can succeed with pivots ``L_ii^2`` at rounding level, which
    hides a numerically singular matrix: pivots must exceed ``atol`` (default
    ``n * eps * max pivot``). Fails fast (``O(n k^2)`` for a failure at step ``k``).
    """
    L, info = torch.linalg.cholesky_ex(A)
    if int(info) != 0:
        return None
    pivots = L.diagonal() ** 2
    if atol is None:
        atol = rank_tolerance(float(pivots.max()), A.shape[0], A.dtype)
    return L if bool(pivots.min() > atol) else None


def numerical_rank_by_cholesky(A: torch.Tensor, max_rank: int, atol: float | None = None) -> int:
    """Numerical rank of a PSD matrix without an eigendecomposition (capped at ``max_rank``).

    A plain Cholesky (``n^3/3``) certifies full rank; otherwise the pivoted
    Cholesky stops at the numerical rank (``O(n r^2)``). ``atol`` as in :func:`pivoted_cholesky`.
    """
    if A.shape[0] <= max_rank and cholesky_or_none(A, atol) is not None:
        return A.shape[0]
    return min(pivoted_cholesky(A, atol).shape[1], max_rank)
