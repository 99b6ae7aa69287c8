"""A symmetric CPU matrix as a Lanczos operator through BLAS ``symv``, and when to run it on one thread.

Why ``symv`` and why scipy's BLAS:

* ``A x`` with a symmetric ``A`` read through ``symv`` touches one triangle only: half the
  memory traffic of ``gemv``, and a Lanczos iteration is bound by memory traffic.
* ARPACK (:func:`scipy.sparse.linalg.eigsh`) runs on scipy's BLAS. numpy and torch bring
  their own thread pools; alternating calls between pools on a few cores leaves one pool's
  threads spinning while the other computes (slower Lanczos iterations on few cores).
  Matrix-vector products in the same BLAS as ARPACK avoid that.

Why one thread for a matrix of at most :data:`ONE_THREAD_BYTES`: after the last call, OpenBLAS's
worker threads keep spinning for a while (a fixed number of cycles, whatever the size of the work),
taking a core from whatever runs next: the transform after a fit, the next fit of a grid search,
another process. For a small matrix the iteration is short and cache-resident, and a second thread
saves less than that spin costs; on one thread OpenBLAS wakes no worker at all.

Only float32 and float64 tensors on the CPU qualify (:func:`supports`); callers keep a torch
path for everything else (other dtypes, CUDA).
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.linalg import blas
from scipy.sparse.linalg import LinearOperator

__all__ = ["ONE_THREAD_BYTES", "reads_one_triangle", "supports", "symmetric_operator"]

#: A matrix of at most this many bytes goes through Lanczos on one BLAS thread (see the module docstring).
ONE_THREAD_BYTES = 64 * 2**20

_PREFIX = {torch.float32: "s", torch.float64: "d"}


def supports(A: torch.Tensor) -> bool:
    """True when ``A`` is a float32/float64 CPU tensor, the case the BLAS routines here serve."""
    return A.device.type == "cpu" and A.dtype in _PREFIX


def reads_one_triangle(A: torch.Tensor) -> bool:
    """True when :func:`symmetric_operator` serves ``A`` (a contiguous float32/float64 CPU tensor): Lanczos
    (:func:`~kppca._linalg.eigh_top`) then reads its lower triangle only, and elsewhere the whole matrix."""
    return supports(A) and A.is_contiguous()


def symmetric_operator(A: torch.Tensor) -> LinearOperator:
    """``x -> A x`` for a symmetric CPU matrix, reading its lower triangle only (BLAS ``symv``).

    The strict upper triangle is never read: ``A`` is taken as the symmetric matrix of its lower
    triangle (a dense ``eigh`` reads one triangle in the same way).

    Parameters
    ----------
    A : Tensor of shape (n, n), float32 or float64 on the CPU, C-contiguous; shared, not copied

    Returns
    -------
    scipy.sparse.linalg.LinearOperator
    """
    if not reads_one_triangle(A):
        raise ValueError("symmetric_operator needs a contiguous float32/float64 CPU tensor.")
    symv = getattr(blas, _PREFIX[A.dtype] + "symv")
    A_f = A.numpy().T  # Fortran order: its upper triangle is A's lower one
    n = A.shape[0]

    def matvec(x: np.ndarray) -> np.ndarray:
        return symv(1.0, A_f, np.ravel(x), lower=0)

    return LinearOperator((n, n), matvec=matvec, dtype=A_f.dtype)
