"""A symmetric CPU matrix as a Lanczos operator through BLAS ``symv``, and when to run it on one thread.

``symv`` reads one triangle (half the memory traffic of ``gemv``, and Lanczos is bound by memory
traffic), in scipy's BLAS, the one ARPACK runs on: alternating between thread pools leaves one
pool's threads spinning. A small matrix runs on one thread, since OpenBLAS's workers keep spinning
after the last call for longer than a second thread saves. Only float32/float64 CPU tensors qualify.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.linalg import blas
from scipy.sparse.linalg import LinearOperator

__all__ = ["ONE_THREAD_BYTES", "reads_one_triangle", "supports", "symmetric_operator"]

#: A matrix of at most this many bytes goes through Lanczos on one BLAS thread.
ONE_THREAD_BYTES = 64 * 2**20

_PREFIX = {torch.float32: "s", torch.float64: "d"}


def supports(A: torch.Tensor) -> bool:
    """True when ``A`` is a float32/float64 CPU tensor, the case the BLAS routines here serve."""
    return A.device.type == "cpu" and A.dtype in _PREFIX


def reads_one_triangle(A: torch.Tensor) -> bool:
    """True when :func:`symmetric_operator` serves ``A``: Lanczos then reads its lower triangle only."""
    return supports(A) and A.is_contiguous()


def symmetric_operator(A: torch.Tensor) -> LinearOperator:
    """``x -> A x`` as a scipy ``LinearOperator`` for a contiguous CPU ``A`` (n, n), reading its lower triangle only.

    ``A`` is shared, not copied.
    """
    if not reads_one_triangle(A):
        raise ValueError("symmetric_operator needs a contiguous float32/float64 CPU tensor.")
    symv = getattr(blas, _PREFIX[A.dtype] + "symv")
    A_f = A.numpy().T  # Fortran order: its upper triangle is A's lower one
    n = A.shape[0]

    def matvec(x: np.ndarray) -> np.ndarray:
        return symv(1.0, A_f, np.ravel(x), lower=0)

    return LinearOperator((n, n), matvec=matvec, dtype=A_f.dtype)
