"""The training Gram matrix, built in row blocks into one ``N x N`` buffer, and its centering in feature space."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import torch

from .._linalg import block_rows, matrix_scale
from ..io.record import FittedState, HasFittedState, fitted
from ..io.specs import TensorSpec
from .base import CallableKernel, Kernel
from .distances import _needs_scaling
from .standard import RBF

__all__ = ["center_gram", "gram_matrix", "lower_gram_matrix", "mirror_lower_"]


def gram_matrix(kernel: Kernel, X: torch.Tensor, *, batch_size: int | None = None) -> torch.Tensor:
    """``K = [k(x_i, x_j)]`` (N, N), exactly symmetric, with no ``N x N`` temporary (see :func:`lower_gram_matrix`)."""
    K, _ = lower_gram_matrix(kernel, X, batch_size=batch_size)
    return mirror_lower_(K)


def lower_gram_matrix(kernel: Kernel, X: torch.Tensor, *, batch_size: int | None = None) -> tuple[torch.Tensor, float]:
    """The lower triangle of ``K = [k(x_i, x_j)]`` (N, N) and ``max |K_ij|``, with no ``N x N`` temporary.

    Each row block is evaluated against the points up to its end only (about ``N^2 / 2`` pairs), since
    the Lanczos iteration and the centering read one triangle. A :class:`~kppca.kernels.CallableKernel`
    (a user's function, which may be wrong) is evaluated on full row blocks instead and checked for symmetry.

    Parameters
    ----------
    kernel : Kernel
    X : Tensor of shape (N, D)
    batch_size : int, optional
        Rows per block (by default blocks of about 128 MiB).

    Returns
    -------
    K : Tensor of shape (N, N), on ``X``'s device and dtype
        Its lower triangle (diagonal included) holds the kernel values; the strict upper one is unspecified.
    scale : float
        ``max |K_ij|`` (NaN when an entry is not finite).

    Raises
    ------
    ValueError
        When a callable kernel's matrix is not symmetric.
    """
    N = X.shape[0]
    rows = block_rows(batch_size, N, X.dtype)  # a small fraction of N rows by default
    callable_kernel = isinstance(kernel, CallableKernel)
    fill = _rbf_filler(kernel, X) if type(kernel) is RBF else None  # None where the fast form is unsafe
    if N <= rows and not callable_kernel and fill is None:
        # One block: the kernel's own Gram matrix (symmetric by construction for the built-ins).
        K = kernel.gram(X, X)
        return K, matrix_scale(K)
    K = torch.empty((N, N), dtype=X.dtype, device=X.device)
    if callable_kernel:
        # Always copied into this buffer: a user's function may return (a view of) an array it
        # keeps, and the caller centers K in place.
        for i in range(0, N, rows):
            K[i : i + rows] = kernel.gram(X[i : i + rows], X)
        _check_symmetric(K, rows)
        return K, matrix_scale(K)
    if fill is not None and batch_size is None:
        # Written in place, a block costs no memory: 16 large blocks run closer to peak speed and
        # compute only 1 / 16 more products than the triangle.
        rows = max(rows, -(-N // 16))
    diagonal = kernel.diag(X)
    # The RBF fill's entries are in [0, 1], never NaN (finite rows, checked squares): the diagonal's 1 is
    # the largest, so no pass over K is needed.
    scales = [matrix_scale(diagonal)]
    for i in range(0, N, rows):
        j = min(i + rows, N)
        if fill is not None:
            fill(i, j, K[i:j, :j])  # written in place: no block temporary
        else:
            K[i:j, :j] = kernel.gram(X[i:j], X[:j])
        diag_block = K[i:j, i:j]
        diag_block.copy_((diag_block + diag_block.T) / 2)  # a small block: symmetric to the last bit
        diag_block.diagonal().copy_(diagonal[i:j])
        if fill is None:
            scales.append(matrix_scale(K[i:j, :j]))  # the block as it stays
    return K, float(torch.tensor(scales, dtype=torch.float64).max())  # max() keeps a NaN


def mirror_lower_(K: torch.Tensor, *, batch_size: int | None = None) -> torch.Tensor:
    """Copy the lower triangle of ``K`` (N, N) into its strict upper triangle **in place**, by blocks; returns ``K``."""
    N = K.shape[0]
    rows = block_rows(batch_size, N, K.dtype)
    for i in range(0, N, rows):
        j = min(i + rows, N)
        K[:i, i:j] = K[i:j, :i].T
        square = K[i:j, i:j]
        square.copy_(square.tril() + square.tril(-1).mT)
    return K


#: Rows whose exponential is taken at once: the second pass (clip, exp) finds the tile still in the CPU cache.
_TILE_ROWS = 256


def _rbf_filler(kernel: RBF, X: torch.Tensor) -> Callable[[int, int, torch.Tensor], None] | None:
    """``fill(i, j, out)`` writing ``out = K[i:j, :j]`` of the RBF kernel on ``X`` in place; None where unsafe.

    With ``Z = sqrt(2 gamma) (X - mean)`` and ``s_i = |z_i|^2 / 2``, the exponent ``z_i . z_j - s_i - s_j``
    is one BLAS product of the rows ``[z_i, -s_i, 1]`` and ``[z_j, 1, -s_j]``, then clipped at 0 and
    exponentiated in place; it agrees with ``kernel.gram`` to the rounding of the expansion.
    """
    gamma = kernel.gamma  # validates the bandwidth
    if not (0.0 < gamma < math.inf):
        return None  # a width beyond the float range: kernel.gram forms the exponent stably (its limits)
    N, D = X.shape
    c = X.mean(0, keepdim=True) if N else X.new_zeros((1, D))
    rows, cols = X.new_empty((N, D + 2)), X.new_empty((N, D + 2))
    Z = torch.sub(X, c, out=rows[:, :D]).mul_(math.sqrt(2.0 * gamma))  # written into its place in the rows
    largest = matrix_scale(Z)  # no |Z| temporary
    if not math.isfinite(largest) or _needs_scaling(largest, X.dtype, D, 2):
        # The mean or the squares of the scaled data over- or underflow: kernel.gram rescales them exactly.
        return None
    half_sq = (Z * Z).sum(1).mul_(0.5)
    rows[:, D], rows[:, D + 1] = -half_sq, 1.0
    cols[:, :D], cols[:, D], cols[:, D + 1] = Z, 1.0, -half_sq

    def fill(i: int, j: int, out: torch.Tensor) -> None:
        # out: a row-strided view of the buffer, written by the BLAS directly. beta = 0: the buffer's
        # previous contents are not read (torch.empty garbage, NaN included).
        out.addmm_(rows[i:j], cols[:j].T, beta=0.0)
        for t in range(0, out.shape[0], _TILE_ROWS):
            out[t : t + _TILE_ROWS].clamp_(max=0.0).exp_()

    return fill


def _check_symmetric(K: torch.Tensor, rows: int) -> None:
    scale = max(float(K.amax()), -float(K.amin()), 1.0) if K.numel() else 1.0
    tol = 1e3 * torch.finfo(K.dtype).eps * scale
    for i in range(0, K.shape[0], rows):
        if float((K[i : i + rows] - K[:, i : i + rows].T).abs().max()) > tol:
            raise ValueError(
                "the kernel's Gram matrix is not symmetric; a kernel must satisfy k(x, y) = k(y, x). A probabilistic "
                "model reads it as inner products of feature vectors (its covariance), which are symmetric; "
                "symmetrize the kernel, e.g. fn(A, B) = (k(A, B) + k(B, A).T) / 2."
            )


@dataclasses.dataclass(frozen=True, kw_only=True)
class CentererState(FittedState):
    """:class:`KernelCenterer`'s statistics of the training Gram matrix."""

    # Optional: an unused centerer (a view that never formed its Gram matrix) is saved without them.
    column_means_: torch.Tensor = fitted(TensorSpec(shape=("n",)), optional=True)
    grand_mean_: torch.Tensor = fitted(TensorSpec(shape=()), optional=True)


class KernelCenterer(HasFittedState):
    """Center training Gram matrices (``K_c = M K M``, ``M = I - 11^T/N``) and test kernel blocks.

    Parameters
    ----------
    center : bool, default True
        False gives the uncentered variant (identity operation).

    Attributes
    ----------
    column_means_ : Tensor of shape (N,)
        ``K 1 / N`` for the training Gram matrix ``K``.
    grand_mean_ : Tensor of shape ()
        ``1^T K 1 / N^2``.
    """

    _state_type = CentererState  # none in an unused centerer

    def __init__(self, center: bool = True):
        self.center = center

    def set_statistics_(self, column_means: torch.Tensor, grand_mean: torch.Tensor) -> KernelCenterer:
        """Use the statistics ``K 1 / N`` (N,) and ``1^T K 1 / N^2`` of a training Gram matrix known otherwise."""
        self.__dict__["state_"] = CentererState(column_means_=column_means, grand_mean_=grand_mean)
        return self

    def fit_center_(self, K: torch.Tensor, *, lower: bool = False) -> torch.Tensor:
        """Store the statistics of the training Gram matrix and center it **in place**.

        Parameters
        ----------
        K : Tensor of shape (N, N), symmetric
            A Gram matrix owned by the caller (never a user's array).
        lower : bool, default False
            Read and center the lower triangle only (diagonal included), for the caller to mirror
            (:func:`~kppca.kernels.gram.mirror_lower_`): the result is the same bitwise.

        Returns
        -------
        Tensor of shape (N, N)
            ``K`` itself, now equal to ``M K M`` (its lower triangle when ``lower``).
        """
        sums = _lower_row_sums(K) if lower else _column_sums(K)
        means = sums / max(K.shape[0], 1)
        self.set_statistics_(means.to(K.dtype), means.mean().to(K.dtype))
        if self.center:
            self._correct_(K, torch.Tensor.sub_, lower)
        return K

    def restore_(self, K_c: torch.Tensor, *, lower: bool = False) -> torch.Tensor:
        """Undo :meth:`fit_center_` **in place**: the training ``K = K_c + K1/N 1^T + 1 1^T K/N - 1^T K 1/N^2``.

        Parameters
        ----------
        K_c : Tensor of shape (N, N)
            The centered training Gram matrix (owned by the caller).
        lower : bool, default False
            Restore the lower triangle only (diagonal included), as for a Cholesky factor.

        Returns
        -------
        Tensor of shape (N, N)
            ``K_c`` itself, now equal to ``K`` (up to rounding; its lower triangle when ``lower``).
        """
        if self.center:
            self._correct_(K_c, torch.Tensor.add_, lower)
        return K_c

    def _correct_(self, K: torch.Tensor, apply_: Callable, lower: bool) -> None:
        """``apply_(K_ij, (m_i + m_j) - g)`` in place, by tiles of rows (symmetric bitwise, whatever the tile)."""
        cm, g, N = self.column_means_, self.grand_mean_, K.shape[0]
        # 2**20 corrections a tile (4-8 MiB): with OMP_WAIT_POLICY=PASSIVE each operation wakes the OpenMP threads,
        # and tiles of 2**17 (3 rows at N = 60,000) spent more time waking them than computing
        tile = (1 << 20) // max(1, K.shape[1]) + 1
        for i in range(0, N, tile):
            end = min(i + tile, N) if lower else N
            apply_(K[i : i + tile, :end], (cm[i : i + tile, None] + cm[None, :end]).sub_(g))

    def transform(self, K_x: torch.Tensor) -> torch.Tensor:
        """Center a block of kernel vectors against the training set.

        Parameters
        ----------
        K_x : Tensor of shape (M, N)
            ``K_x[j, i] = k(x_j, x_i)`` for new points ``x_j`` and training points ``x_i``.

        Returns
        -------
        Tensor of shape (M, N)
            Rows ``k_c(x_j)``; each row sums to zero when centering.
        """
        if not self.center:
            return K_x.clone()
        row_means = K_x.mean(1, keepdim=True)
        return (K_x - self.column_means_[None, :]).sub_(row_means).add_(self.grand_mean_)

    def uncenter(self, K_c: torch.Tensor, row_means: torch.Tensor | float,
                 columns: slice | torch.Tensor | None = None) -> torch.Tensor:
        """Invert :meth:`transform` given the (usually unknown) row means ``s = 1^T k / N``.

        Parameters
        ----------
        K_c : Tensor of shape (M, N), or (M, c) of the training columns ``columns``
        row_means : Tensor of shape (M,) or float
        columns : slice or Tensor of shape (M, c), optional
            The training points of ``K_c``'s columns: a range, or per row (as ``torch.gather``); None: all N.
            Each entry is computed as for the whole matrix (the same value).

        Returns
        -------
        Tensor of the shape of ``K_c``
        """
        if not self.center:
            return K_c.clone()
        column_means = self.column_means_.to(dtype=K_c.dtype, device=K_c.device)
        column_means = column_means[None, :] if columns is None else (
            column_means[None, columns] if isinstance(columns, slice) else column_means[columns])
        grand_mean = self.grand_mean_.to(dtype=K_c.dtype, device=K_c.device)
        s = torch.as_tensor(row_means, dtype=K_c.dtype, device=K_c.device)
        s = s.reshape(-1, 1) if s.ndim else s
        return (K_c + column_means).add_(s - grand_mean)  # one result, no second temporary


def _column_sums(K: torch.Tensor) -> torch.Tensor:
    """``K.sum(0)`` accumulated in float64 (a float32 ``K`` converted by row blocks, not copied)."""
    if K.dtype == torch.float64:
        return K.sum(0)  # one reduction over K (a few parallel regions, not one per block)
    sums = torch.zeros(K.shape[1], dtype=torch.float64, device=K.device)
    # float64 blocks of 1 MiB: with 16 MiB blocks the allocator kept enough mapped to grow the fit's
    # peak memory by up to half of K's (tests/test_scale.py)
    rows = max(1, (1 << 17) // max(1, K.shape[1]))
    for i in range(0, K.shape[0], rows):
        sums += K[i : i + rows].sum(0, dtype=torch.float64)
    return sums


class _CenterGram(torch.autograd.Function):
    """``M K M`` with a one-pass backward (see :func:`center_gram`)."""

    @staticmethod
    def forward(ctx, K: torch.Tensor) -> torch.Tensor:  # noqa: D102 - see center_gram
        return KernelCenterer().fit_center_(K.detach().clone())

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # noqa: D102 - the adjoint of K -> M K M is itself
        return grad - grad.mean(0, keepdim=True) - grad.mean(1, keepdim=True) + grad.mean()


def center_gram(K: torch.Tensor) -> torch.Tensor:
    """The centered copy ``M K M`` (N, N) of a symmetric Gram matrix ``K`` in an autograd graph.

    The values are :meth:`KernelCenterer.fit_center_`'s, bitwise. Autograd through that in-place method
    would record one slice copy per row tile, each copying the whole ``N x N`` gradient back (``N^3``
    work: 6 s of a 7 s backward at N = 4,000); here the backward applies the same linear map once:
    ``M G M`` for the incoming gradient ``G`` (any, not only symmetric), three ``N^2`` passes.
    """
    return _CenterGram.apply(K)


def _lower_row_sums(K: torch.Tensor) -> torch.Tensor:
    """Row sums (N,) in float64 of the symmetric matrix whose lower triangle (diagonal included) ``K`` holds.

    Not BLAS ``symv``: its sequential sums err by up to ``N eps``, which made nearly constant data indefinite.
    """
    N = K.shape[0]
    sums = torch.zeros(N, dtype=torch.float64, device=K.device)
    # 2**20-2**21 entries a tile: fewer operations for OpenMP's sleeping threads to wake (see _correct_)
    width = 1 << (21 if K.dtype == torch.float64 else 20)
    tile = max(1, width // max(1, N))
    for i in range(0, N, tile):
        j = min(i + tile, N)
        left, square = K[i:j, :i], K[i:j, i:j]
        sums[i:j] += left.sum(1, dtype=torch.float64) + square.tril().sum(1, dtype=torch.float64)
        sums[:i] += left.sum(0, dtype=torch.float64)
        sums[i:j] += square.tril(-1).sum(0, dtype=torch.float64)
    return sums
