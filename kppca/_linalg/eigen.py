"""Symmetric eigensolvers (dense ``eigh`` and Lanczos), the sign convention, and the policy choosing between them."""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from scipy.sparse.linalg import LinearOperator, eigsh

from . import symmetric
from .threads import blas_threads

__all__ = [
    "PARTIAL_MIN_SIZE",
    "PARTIAL_SIZE_PER_PAIR",
    "prefer_partial",
    "flip_signs",
    "orthonormalize_columns",
    "eigh_descending",
    "eigh_top",
]

#: Below this order the dense ``eigh`` is used whenever the caller lets :func:`prefer_partial`
#: choose: it is fast there (well under a second) and gives the whole spectrum for free.
PARTIAL_MIN_SIZE = 1000
#: Lanczos pays off for a few eigenpairs only: its cost ``O(n^2 k)`` per sweep, with restarts,
#: approaches the dense ``O(n^3)`` when ``k`` is a sizeable fraction of ``n``: at most ``n / 10``.
PARTIAL_SIZE_PER_PAIR = 10


def prefer_partial(size: int, k: int) -> bool:
    """The one dense-or-Lanczos policy: True when the top ``k`` eigenpairs of a symmetric matrix of order
    ``size`` should come from Lanczos (:func:`eigh_top`) rather than a dense ``eigh`` (see the constants above)."""
    return size > PARTIAL_MIN_SIZE and 1 <= k <= size // PARTIAL_SIZE_PER_PAIR

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


def orthonormalize_columns(V: torch.Tensor) -> torch.Tensor:
    """The orthonormal ``Q`` of ``V = Q R`` with ``diag(R) > 0``: ``V``'s columns made exactly orthonormal.

    ``V = Phi_c^T E diag(lam)^{-1/2}`` (principal directions from the Gram matrix) is
    orthonormal in exact arithmetic, but an eigenvector error ``~ eps lam_1 / gap`` is
    amplified by ``1 / sqrt(lam_p)`` for small ``lam_p``, so those columns lose
    orthogonality (1e-3 seen). A basis used for projections and densities must be
    orthonormal; since ``R`` is triangular, column ``p`` of ``Q`` only mixes columns
    ``1..p`` of ``V``, and the accurate leading directions are unchanged to rounding.

    Parameters
    ----------
    V : Tensor of shape (d, r), ``r <= d``, full column rank

    Returns
    -------
    Tensor of shape (d, r)
    """
    Q, R = torch.linalg.qr(V)
    signs = torch.sign(R.diagonal())
    signs[signs == 0] = 1
    return Q * signs


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

    On the CPU only the lower triangle of ``A`` is read (:func:`~kppca._linalg.symmetric.symmetric_operator`),
    on one BLAS thread for a small ``A`` (see :mod:`kppca._linalg.symmetric` for why).

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
    blas = contextlib.nullcontext()
    if symmetric.reads_one_triangle(A):
        op = symmetric.symmetric_operator(A)  # half the memory traffic, and ARPACK's own BLAS
        if A.numel() * A.element_size() <= symmetric.ONE_THREAD_BYTES:
            blas = blas_threads(1)  # no OpenBLAS worker woken, so none left spinning after the fit
    elif A.device.type == "cpu":
        op = A.numpy()  # shares memory; ARPACK only reads it
    else:
        def matvec(x: np.ndarray) -> np.ndarray:
            xt = torch.as_tensor(np.asarray(x, dtype=np_dtype), device=A.device)
            return (A @ xt).cpu().numpy()

        op = LinearOperator((n, n), matvec=matvec, matmat=matvec, dtype=np_dtype)
    with blas:
        values, vectors = eigsh(op, k=k, which="LA", v0=v0.astype(np_dtype), tol=0)
    order = np.argsort(values)[::-1]
    values = torch.as_tensor(values[order].copy(), dtype=A.dtype, device=A.device)
    vectors = torch.as_tensor(vectors[:, order].copy(), dtype=A.dtype, device=A.device)
    return values, flip_signs(vectors)
