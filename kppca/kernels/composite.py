"""Sums and products of kernels: ``k1 + k2`` and ``k1 * k2`` are kernels again.

A sum of PSD kernels is PSD (its feature map is the concatenation of the maps), and
so is a product (Schur product theorem; the feature map is the tensor product).
The multi-view kernel matrix ``K = sum_v K_v`` on the concatenated views is a sum of
kernels that each read their own columns (see ``columns`` below).
"""

from __future__ import annotations

import math

from collections.abc import Sequence

import torch

from .base import MAX_EXPLICIT_FEATURES, Kernel

__all__ = ["ColumnKernel", "ProductKernel", "SumKernel"]


class _Composite(Kernel):
    _symbol = "?"

    def __init__(self, kernels: Sequence[Kernel]):
        self.kernels = kernels

    def _check_params(self) -> None:
        if not isinstance(self.kernels, (list, tuple)) or len(self.kernels) < 1:
            raise ValueError(f"{type(self).__name__} needs a non-empty list of kernels, got {self.kernels!r}.")
        for i, k in enumerate(self.kernels):
            if not isinstance(k, Kernel):
                raise TypeError(f"{type(self).__name__}: kernels[{i}] must be a Kernel, got {type(k).__name__}.")
            k._check_params()

    def _parts(self, X: torch.Tensor, Y: torch.Tensor) -> list[torch.Tensor]:
        self._check_params()
        # Keep the ``Y is X`` identity: stationary kernels make the Gram diagonal exact with it.
        return [k.gram(X, X if Y is X else Y) for k in self.kernels]

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        return "(" + f" {self._symbol} ".join(repr(k) for k in self.kernels) + ")"


class SumKernel(_Composite):
    """``k(x, y) = sum_j k_j(x, y)``; build it with ``k1 + k2``.

    Parameters
    ----------
    kernels : list of Kernel
    """

    _symbol = "+"

    @property
    def strictly_positive_definite(self) -> bool:
        # K_1 + K_2 with K_1 positive definite and K_2 positive semi-definite is positive definite.
        return any(getattr(k, "strictly_positive_definite", False) for k in self.kernels)

    def explicit_features(self, X: torch.Tensor) -> torch.Tensor | None:
        # The feature map of a sum is the concatenation of the maps (a dimension count alone would
        # overstate the rank of k + k).
        parts = [k.explicit_features(X) for k in self.kernels]
        return None if any(P is None for P in parts) else torch.cat(parts, dim=1)

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        parts = self._parts(X, Y)
        out = parts[0].clone()
        for P in parts[1:]:
            out += P
        return out

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        self._check_params()
        return torch.stack([k.diag(X) for k in self.kernels]).sum(0)


class ProductKernel(_Composite):
    """``k(x, y) = prod_j k_j(x, y)`` (elementwise); build it with ``k1 * k2``.

    Parameters
    ----------
    kernels : list of Kernel
    """

    _symbol = "*"

    @property
    def strictly_positive_definite(self) -> bool:
        # Schur product theorem: the elementwise product of positive definite matrices is positive definite.
        return all(getattr(k, "strictly_positive_definite", False) for k in self.kernels)

    def explicit_features(self, X: torch.Tensor) -> torch.Tensor | None:
        # The feature map of a product is the tensor (row-wise Kronecker) product of the maps,
        # used while it stays small; beyond that the rank is counted numerically.
        parts = [k.explicit_features(X) for k in self.kernels]
        if any(P is None for P in parts) or math.prod(P.shape[1] for P in parts) > MAX_EXPLICIT_FEATURES:
            return None
        out = parts[0]
        for P in parts[1:]:
            out = (out[:, :, None] * P[:, None, :]).reshape(X.shape[0], -1)
        return out

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        parts = self._parts(X, Y)
        out = parts[0].clone()
        for P in parts[1:]:
            out *= P
        return out

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        self._check_params()
        return torch.stack([k.diag(X) for k in self.kernels]).prod(0)


class ColumnKernel(Kernel):
    """A kernel on a subset of the input columns: ``k(x, y) = base(x[columns], y[columns])``.

    With views stacked side by side (``X = [X_1 ... X_V]``), the multi-view kernel is
    ``ColumnKernel(k_1, cols_1) + ... + ColumnKernel(k_V, cols_V)``.

    Parameters
    ----------
    base : Kernel
    columns : slice or sequence of int
    """

    def __init__(self, base: Kernel, columns: slice | Sequence[int]):
        self.base = base
        self.columns = columns

    def _check_params(self) -> None:
        if not isinstance(self.base, Kernel):
            raise TypeError(f"base must be a Kernel, got {type(self.base).__name__}.")
        if not isinstance(self.columns, (slice, list, tuple, range)):
            raise TypeError(f"columns must be a slice or a list of column indices, got {type(self.columns).__name__}.")
        self.base._check_params()

    # Distinct inputs can agree on the selected columns: never strictly positive definite.
    def explicit_features(self, X: torch.Tensor) -> torch.Tensor | None:
        return self.base.explicit_features(self._select(X))

    def _select(self, X: torch.Tensor) -> torch.Tensor:
        cols = self.columns if isinstance(self.columns, slice) else list(self.columns)
        return X[:, cols]

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        self._check_params()
        Xs = self._select(X)
        return self.base.gram(Xs, Xs if Y is X else self._select(Y))

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        self._check_params()
        return self.base.diag(self._select(X))
