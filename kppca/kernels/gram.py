"""The training Gram matrix, built in row blocks into one ``N x N`` buffer."""

from __future__ import annotations

import torch

from .._linalg import block_rows
from .base import CallableKernel, Kernel

__all__ = ["gram_matrix"]


def gram_matrix(kernel: Kernel, X: torch.Tensor, *, batch_size: int | None = None) -> torch.Tensor:
    """``K = [k(x_i, x_j)]`` (N, N), exactly symmetric, with no ``N x N`` temporary.

    Row block ``b`` is evaluated against the points up to its end only (the lower
    triangle) and mirrored into the upper triangle, so the kernel is evaluated on
    about ``N^2 / 2`` pairs and the memory beyond the result is one block of
    ``batch_size x N`` values (by default about 128 MiB, see
    :func:`kppca._linalg.block_rows`: at most ``N / 8`` rows). The diagonal is ``kernel.diag(X)``, exact for
    stationary kernels (``k(x, x) = 1`` for the RBF kernel).

    A :class:`~kppca.kernels.CallableKernel` (a user's function, which may be wrong)
    is evaluated on full row blocks instead, and checked for symmetry: a kernel must
    satisfy ``k(x, y) = k(y, x)``.

    Parameters
    ----------
    kernel : Kernel
    X : Tensor of shape (N, D)
    batch_size : int, optional
        Rows per block.

    Returns
    -------
    Tensor of shape (N, N), on ``X``'s device and dtype.

    Raises
    ------
    ValueError
        When a callable kernel's matrix is not symmetric.
    """
    N = X.shape[0]
    rows = block_rows(batch_size, N, X.dtype)  # at most N / 8 rows by default
    callable_kernel = isinstance(kernel, CallableKernel)
    if N <= rows and not callable_kernel:
        # One block: the kernel's own Gram matrix (symmetric by construction for the built-ins).
        return kernel.gram(X, X)
    K = torch.empty((N, N), dtype=X.dtype, device=X.device)
    if callable_kernel:
        # Always copied into this buffer: a user's function may return (a view of) an array it
        # keeps, and the caller centers K in place.
        for i in range(0, N, rows):
            K[i : i + rows] = kernel.gram(X[i : i + rows], X)
        _check_symmetric(K, rows)
        return K
    for i in range(0, N, rows):
        j = min(i + rows, N)
        block = kernel.gram(X[i:j], X[:j])
        K[i:j, :j] = block
        K[:i, i:j] = block[:, :i].T
        diag_block = K[i:j, i:j]
        diag_block.copy_((diag_block + diag_block.T) / 2)  # a small block: symmetric to the last bit
    K.diagonal().copy_(kernel.diag(X))
    return K


def _check_symmetric(K: torch.Tensor, rows: int) -> None:
    scale = max(float(K.amax()), -float(K.amin()), 1.0) if K.numel() else 1.0
    tol = 1e3 * torch.finfo(K.dtype).eps * scale
    for i in range(0, K.shape[0], rows):
        if float((K[i : i + rows] - K[:, i : i + rows].T).abs().max()) > tol:
            raise ValueError("the kernel's Gram matrix is not symmetric; a kernel must satisfy k(x, y) = k(y, x).")
