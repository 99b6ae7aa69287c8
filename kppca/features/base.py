"""Explicit feature maps ``phi: R^D -> R^d`` for the primal model."""

from __future__ import annotations

import torch

from .._validation import ArrayLike, as_tensor, is_numpy_like, to_output
from ..kernels.base import Kernel


class FeatureMap:
    """Base class: ``fit(X)`` draws or learns what the map needs, ``transform(X)`` applies it.

    Every map also exposes :meth:`as_kernel`, the kernel ``<phi(x), phi(y)>`` it
    induces, so the dual model can be run on exactly the same feature space.
    """

    def fit(self, X: ArrayLike) -> "FeatureMap":
        """Prepare the map for inputs like ``X`` (n, D). Returns ``self``."""
        X = as_tensor(X, "X")
        self.n_features_in_ = X.shape[1]
        self._fit(X)
        return self

    def _fit(self, X: torch.Tensor) -> None:
        """Subclass hook: learn or draw the map's parameters."""

    def map(self, X: torch.Tensor) -> torch.Tensor:
        """Apply the map to a validated tensor (n, D) -> (n, d). Subclasses implement this."""
        raise NotImplementedError

    def transform(self, X: ArrayLike) -> torch.Tensor:
        """Map ``X`` (n, D) to features (n, d); numpy in, numpy out."""
        if not hasattr(self, "n_features_in_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(X) first.")
        numpy_out = is_numpy_like(X)
        dtype = X.dtype if isinstance(X, torch.Tensor) and X.is_floating_point() else None
        Xt = as_tensor(X, "X", dtype=dtype, device=X.device if isinstance(X, torch.Tensor) else None)
        if Xt.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {Xt.shape[1]} features, but {type(self).__name__} was fitted with {self.n_features_in_}."
            )
        return to_output(self.map(Xt), numpy_out)

    def fit_transform(self, X: ArrayLike) -> torch.Tensor:
        return self.fit(X).transform(X)

    def as_kernel(self) -> Kernel:
        """The kernel ``k(x, y) = <phi(x), phi(y)>`` of this (fitted) map."""
        return FeatureMapKernel(self)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.endswith("_") and not k.startswith("_"))
        return f"{type(self).__name__}({params})"


class FeatureMapKernel(Kernel):
    """Linear kernel on the output of a fitted :class:`FeatureMap`."""

    def __init__(self, feature_map: FeatureMap):
        self.feature_map = feature_map

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        fx = self.feature_map.map(X)
        fy = fx if Y is X else self.feature_map.map(Y)
        return fx @ fy.T


class Identity(FeatureMap):
    """``phi(x) = x``: the linear kernel's feature map (classical PPCA)."""

    def map(self, X: torch.Tensor) -> torch.Tensor:
        return X.clone()
