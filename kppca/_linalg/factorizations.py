"""Cholesky factorisations of PSD matrices: in place, pivoted (rank-revealing), checked, solves, and conditioning."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import torch

from .tolerances import rank_tolerance

def pivoted_cholesky(A: torch.Tensor, atol: float, *, overwrite: bool = False) -> torch.Tensor:
    """Factor ``L`` (n, r) with ``L L^T = A`` for a PSD ``A`` (n, n) of numerical rank ``r`` (LAPACK ``?pstrf``, CPU).

    ``atol``: the pivot threshold; ``overwrite``: factor a contiguous CPU ``A`` in its own memory (consumed).
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
    """Lower Cholesky factor ``L`` (n, n) of a contiguous symmetric PD ``A``, written over ``A``; None when not PD.

    Only the lower triangle of ``A`` is read, and ``A`` is consumed either way. Pivots are not checked.
    """
    # A row-major symmetric A is its own column-major transpose: factoring A.mT in place needs no second matrix.
    view = A.mT
    info = torch.empty((), dtype=torch.int32, device=A.device)
    U, info = torch.linalg.cholesky_ex(view, upper=True, out=(view, info))
    if int(info) != 0:
        return None
    return U.mT.tril_()


def cholesky_solve(L: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``A^{-1} B`` (n, k) from the lower Cholesky factor ``L`` of ``A`` (n, n)."""
    # Two triangular solves read L where it is (torch.cholesky_solve copies it to LAPACK's layout).
    return torch.linalg.solve_triangular(L.mT, torch.linalg.solve_triangular(L, B, upper=False), upper=True)


def cholesky_or_none(A: torch.Tensor, atol: float | None = None) -> torch.Tensor | None:
    """Lower Cholesky factor of ``A`` when every pivot ``L_ii^2`` is above ``atol`` (``n eps max pivot``), else None.

    A factorisation can succeed with pivots at rounding level, hiding a singular matrix.
    """
    L, info = torch.linalg.cholesky_ex(A)
    if int(info) != 0:
        return None
    pivots = L.diagonal() ** 2
    if atol is None:
        atol = rank_tolerance(float(pivots.max()), A.shape[0], A.dtype)
    return L if bool(pivots.min() > atol) else None


def smallest_eigenvalue_bound(L: torch.Tensor) -> float:
    """A lower estimate ``1 / ||A^{-1}||_1`` of ``lam_min(A)``, ``A = L L^T`` (``L`` (n, n) lower, CPU), in ``O(n^2)``.

    ``?pocon`` may estimate a small factor low, so callers keep a safety factor; 0.0 when ``A`` is singular.
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
