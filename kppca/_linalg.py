"""Symmetric eigensolvers, numerical rank and square-root factors.

The models only need the top ``q`` eigenpairs of a PSD matrix (``K_c`` in the
dual, the scatter matrix in the primal), its trace and its rank. ``dense`` uses
a full ``torch.linalg.eigh``; ``partial`` uses Lanczos (ARPACK through
``scipy.sparse.linalg.eigsh``) with the matrix products done in torch on the
matrix's own device, so the cost is ``O(N^2 q)`` per sweep instead of ``O(N^3)``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import torch
from scipy.sparse.linalg import LinearOperator, eigsh


def rank_tolerance(eigen_max: float, size: int, dtype: torch.dtype) -> float:
    """Absolute threshold below which an eigenvalue of a PSD matrix counts as zero.

    Eigenvalues of a symmetric matrix are computed with an absolute error of
    about ``size * eps * ||A||``, so anything below that is numerically zero.
    """
    return float(size * torch.finfo(dtype).eps * max(eigen_max, 0.0))


def flip_signs(vectors: torch.Tensor) -> torch.Tensor:
    """Deterministic sign convention: the largest-magnitude entry of each column is positive.

    Parameters
    ----------
    vectors : Tensor of shape (n, k)

    Returns
    -------
    Tensor of shape (n, k), the columns multiplied by +-1.
    """
    if vectors.shape[1] == 0:
        return vectors
    idx = vectors.abs().argmax(0)
    signs = torch.sign(vectors[idx, torch.arange(vectors.shape[1], device=vectors.device)])
    signs[signs == 0] = 1
    return vectors * signs


def eigh_descending(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Full eigendecomposition of a symmetric matrix, eigenvalues in descending order.

    Returns
    -------
    values : Tensor of shape (n,)
    vectors : Tensor of shape (n, n), columns with the :func:`flip_signs` convention.
    """
    values, vectors = torch.linalg.eigh(A)
    return values.flip(0), flip_signs(vectors.flip(1))


def eigh_top(
    A: torch.Tensor, k: int, *, random_state: np.random.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top ``k`` eigenpairs of a symmetric PSD matrix by Lanczos iteration (ARPACK).

    Parameters
    ----------
    A : Tensor of shape (n, n)
    k : int, ``1 <= k < n``
    random_state : numpy Generator, optional
        Draws the starting vector, so results are reproducible.

    Returns
    -------
    values : Tensor of shape (k,), descending
    vectors : Tensor of shape (n, k), with the :func:`flip_signs` convention.
    """
    n = A.shape[0]
    rng = np.random.default_rng(0) if random_state is None else random_state
    v0 = rng.uniform(-1.0, 1.0, n)
    np_dtype = np.float64 if A.dtype == torch.float64 else np.float32
    if A.device.type == "cpu":
        op = A.numpy()  # shares memory; ARPACK only reads it
    else:
        def matvec(x: np.ndarray) -> np.ndarray:
            xt = torch.as_tensor(np.asarray(x, dtype=np_dtype), device=A.device)
            return (A @ xt).cpu().numpy()

        op = LinearOperator((n, n), matvec=matvec, matmat=matvec, dtype=np_dtype)
    values, vectors = eigsh(op, k=k, which="LA", v0=v0.astype(np_dtype), tol=0)
    order = np.argsort(values)[::-1]
    values = torch.as_tensor(values[order].copy(), dtype=A.dtype, device=A.device)
    vectors = torch.as_tensor(vectors[:, order].copy(), dtype=A.dtype, device=A.device)
    return values, flip_signs(vectors)


def pivoted_cholesky(A: torch.Tensor, atol: float | None = None) -> torch.Tensor:
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

    Returns
    -------
    Tensor of shape (n, r) on ``A``'s device.
    """
    n = A.shape[0]
    arr = A.detach().cpu().numpy().astype(np.float64 if A.dtype == torch.float64 else np.float32, copy=True)
    if atol is None:
        atol = n * np.finfo(arr.dtype).eps * float(np.max(np.diag(arr), initial=0.0))
    pstrf = scipy.linalg.get_lapack_funcs("pstrf", (arr,))
    c, piv, rank, info = pstrf(arr, tol=atol, lower=1)
    if info < 0:  # pragma: no cover - argument error inside LAPACK
        raise RuntimeError(f"LAPACK pstrf failed with info={info}")
    L_perm = np.tril(c)[:, :rank]
    L = np.empty_like(L_perm)
    L[piv - 1] = L_perm  # undo the symmetric pivoting: A = P L L^T P^T
    return torch.as_tensor(L, dtype=A.dtype, device=A.device)


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
