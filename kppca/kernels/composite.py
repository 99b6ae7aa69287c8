"""Kernels on column subsets; with the sums of :mod:`kppca.kernels.base`, the multi-view kernel."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._validation import ArrayLike, as_tensor
from .base import Kernel

__all__ = ["ColumnKernel"]


class ColumnKernel(Kernel):
    """A kernel on a subset of the input columns: ``k(x, y) = base(x[columns], y[columns])``.

    With views side by side, the multi-view kernel is ``ColumnKernel(k_1, cols_1) + ... + ColumnKernel(k_V, cols_V)``.

    Parameters
    ----------
    base : Kernel
    columns : slice or sequence of int
    """

    def __init__(self, base: Kernel, columns: slice | Sequence[int]):
        self.base = base
        self.columns = columns

    _parameter_constraints = {"base": [Kernel], "columns": [slice, list, tuple, range]}

    def _check_params(self) -> None:
        super()._check_params()
        self.base._check_params()

    @property
    def is_resolved(self) -> bool:
        return self.base.is_resolved

    def resolve(self, X: ArrayLike) -> Kernel:
        """Resolve ``base`` on the selected columns of ``X`` (a view's own scale)."""
        self._check_params()
        if self.is_resolved:
            return self
        Xt = X if isinstance(X, torch.Tensor) else as_tensor(X, "X")
        return type(self)(self.base.resolve(self._select(Xt)), self.columns)

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
