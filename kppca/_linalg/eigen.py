"""Symmetric eigensolvers (dense ``eigh`` and Lanczos), the sign convention, and the policy choosing between them.

On the CPU, Lanczos multiplies by BLAS ``symv`` (one triangle: half the memory traffic Lanczos is bound by)
in scipy's BLAS, the one ARPACK runs on: alternating between thread pools leaves one pool's threads spinning.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from scipy.linalg import blas
from scipy.sparse.linalg import LinearOperator, eigsh

from .threads import blas_threads

#: Below this order :func:`prefer_partial` chooses the dense ``eigh``: fast there, and it gives the whole spectrum.
PARTIAL_MIN_SIZE = 1000
#: Lanczos (``O(n^2 k)`` per sweep, with restarts) pays off for at most ``n / 10`` eigenpairs.
PARTIAL_SIZE_PER_PAIR = 10
#: A matrix of at most this many bytes goes through Lanczos on one BLAS thread.
ONE_THREAD_BYTES = 64 * 2**20

_PREFIX = {torch.float32: "s", torch.float64: "d"}


def prefer_partial(size: int, k: int) -> bool:
    """The dense-or-Lanczos policy: True when the top ``k`` eigenpairs of order ``size`` should come from Lanczos."""
    return size > PARTIAL_MIN_SIZE and 1 <= k <= size // PARTIAL_SIZE_PER_PAIR


def flip_signs(vectors: torch.Tensor) -> torch.Tensor:
    """``vectors`` (n, k) with each column's largest-magnitude entry made positive (deterministic signs)."""
    if vectors.shape[1] == 0:
        return vectors
    idx = vectors.abs().argmax(0)
    signs = torch.sign(vectors[idx, torch.arange(vectors.shape[1], device=vectors.device)])
    signs[signs == 0] = 1
    return vectors * signs


def orthonormalize_columns(V: torch.Tensor) -> torch.Tensor:
    """The orthonormal ``Q`` (d, r) of ``V = Q R`` with ``diag(R) > 0``, for ``V`` (d, r) of full column rank.

    Directions ``Phi_c^T E diag(lam)^{-1/2}`` from the Gram matrix lose orthogonality for small ``lam_p``
    (1e-3 seen); ``R`` is triangular, so the accurate leading columns are unchanged to rounding.
    """
    Q, R = torch.linalg.qr(V)
    signs = torch.sign(R.diagonal())
    signs[signs == 0] = 1
    return Q * signs


def eigh_descending(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues (n,) descending and eigenvectors (n, n) (:func:`flip_signs`) of a symmetric matrix."""
    values, vectors = torch.linalg.eigh(A)
    return values.flip(0), flip_signs(vectors.flip(1))


def supports(A: torch.Tensor) -> bool:
    """True when ``A`` is a float32/float64 CPU tensor, the case the BLAS routines here serve."""
    return A.device.type == "cpu" and A.dtype in _PREFIX


def reads_one_triangle(A: torch.Tensor) -> bool:
    """True when :func:`symmetric_operator` serves ``A``: Lanczos then reads its lower triangle only."""
    return supports(A) and A.is_contiguous()


def symmetric_operator(A: torch.Tensor) -> LinearOperator:
    """``x -> A x`` as a scipy ``LinearOperator`` for a contiguous CPU ``A`` (n, n), shared, lower triangle read."""
    if not reads_one_triangle(A):
        raise ValueError("symmetric_operator needs a contiguous float32/float64 CPU tensor.")
    symv = getattr(blas, _PREFIX[A.dtype] + "symv")
    A_f = A.numpy().T  # Fortran order: its upper triangle is A's lower one
    n = A.shape[0]

    def matvec(x: np.ndarray) -> np.ndarray:
        return symv(1.0, A_f, np.ravel(x), lower=0)

    return LinearOperator((n, n), matvec=matvec, dtype=A_f.dtype)


def eigh_top(
    A: torch.Tensor, k: int, *, random_state: np.random.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top ``k`` (``1 <= k < n``) eigenpairs of a symmetric PSD ``A`` (n, n) by Lanczos (ARPACK): (k,), (n, k).

    Descending, with :func:`flip_signs`; ``random_state`` draws the start vector.
    """
    n = A.shape[0]
    rng = np.random.default_rng(0) if random_state is None else random_state
    v0 = rng.uniform(-1.0, 1.0, n)
    np_dtype = np.float64 if A.dtype == torch.float64 else np.float32
    blas = contextlib.nullcontext()
    if reads_one_triangle(A):
        op = symmetric_operator(A)  # half the memory traffic, and ARPACK's own BLAS
        if A.numel() * A.element_size() <= ONE_THREAD_BYTES:
            # OpenBLAS's workers spin after the last call for longer than a second thread saves on a small matrix.
            blas = blas_threads(1)
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
