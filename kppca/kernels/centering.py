"""Centering of Gram matrices and kernel vectors in feature space, from the training column means."""

from __future__ import annotations

from typing import Callable

import torch

from ..io.specs import OPTIONAL, TensorSpec


class KernelCenterer:
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

    #: The fitted state a model file may hold (:mod:`kppca.io.specs`); absent in an unused centerer.
    _fitted_constraints = {"column_means_": [TensorSpec(shape=("n",)), OPTIONAL],
                           "grand_mean_": [TensorSpec(shape=()), OPTIONAL]}

    def __init__(self, center: bool = True):
        self.center = center

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
        N = K.shape[0]
        sums = _lower_row_sums(K) if lower else _column_sums(K)
        means = sums / max(N, 1)
        self.column_means_ = means.to(K.dtype)
        self.grand_mean_ = means.mean().to(K.dtype)
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
        """``apply_(K_ij, (m_i + m_j) - g)`` in place, by tiles of rows (columns up to the tile's end when ``lower``).

        Tiles fit the CPU cache (one sweep over K); the correction is symmetric bitwise, so K stays symmetric.
        """
        cm, g, N = self.column_means_, self.grand_mean_, K.shape[0]
        tile = (1 << 17) // max(1, K.shape[1]) + 1  # 1 MiB float64 corrections
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
        # One new (M, N) block; the caller's K_x is left untouched.
        return (K_x - self.column_means_[None, :]).sub_(row_means).add_(self.grand_mean_)

    def uncenter(self, K_c: torch.Tensor, row_means: torch.Tensor | float) -> torch.Tensor:
        """Invert :meth:`transform` given the (usually unknown) row means ``s = 1^T k / N``.

        Parameters
        ----------
        K_c : Tensor of shape (M, N)
        row_means : Tensor of shape (M,) or float

        Returns
        -------
        Tensor of shape (M, N)
        """
        if not self.center:
            return K_c.clone()
        # The statistics follow K_c's dtype and device (e.g. float32 or CUDA kernel vectors).
        column_means = self.column_means_.to(dtype=K_c.dtype, device=K_c.device)
        grand_mean = self.grand_mean_.to(dtype=K_c.dtype, device=K_c.device)
        s = torch.as_tensor(row_means, dtype=K_c.dtype, device=K_c.device)
        s = s.reshape(-1, 1) if s.ndim else s
        return (K_c + column_means[None, :]).add_(s - grand_mean)  # one (M, N) result, no second temporary


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


def _lower_row_sums(K: torch.Tensor) -> torch.Tensor:
    """Row sums (N,) in float64 of the symmetric matrix whose lower triangle (diagonal included) ``K`` holds.

    Each tile of rows adds its row sums and its column sums. Not BLAS ``symv``: its sequential sums err
    by up to ``N eps``, which made the centered matrix of nearly constant data indefinite.
    """
    N = K.shape[0]
    sums = torch.zeros(N, dtype=torch.float64, device=K.device)
    width = 1 << (21 if K.dtype == torch.float64 else 17)
    tile = max(1, width // max(1, N))
    for i in range(0, N, tile):
        j = min(i + tile, N)
        left, square = K[i:j, :i], K[i:j, i:j]
        sums[i:j] += left.sum(1, dtype=torch.float64) + square.tril().sum(1, dtype=torch.float64)
        sums[:i] += left.sum(0, dtype=torch.float64)
        sums[i:j] += square.tril(-1).sum(0, dtype=torch.float64)
    return sums
