"""Explicit feature maps ``phi: R^D -> R^d`` for the primal model."""

from __future__ import annotations

import copy

import scipy.sparse
import torch
from sklearn.base import BaseEstimator

from .._param_validation import Integral, Interval
from .._validation import ArrayLike, as_input_tensor, as_tensor, to_output
from ..kernels.base import Kernel


class FeatureMap(BaseEstimator):
    """Base class: ``fit(X)`` draws or learns what the map needs, ``transform(X)`` applies it.

    :meth:`as_kernel` gives the induced kernel ``<phi(x), phi(y)>``, so the dual model can run on the
    same feature space. Feature maps are scikit-learn estimators (``get_params``/``set_params``/``clone``);
    ``fit`` validates the hyper-parameters, and what it learns ends with ``_``.
    """

    #: The fitted state a model file may hold (checked at save and load, :mod:`kppca.io.specs`).
    _fitted_constraints: dict = {"n_features_in_": [Interval(Integral, 1, None, closed="left")]}

    def _check_params(self) -> None:
        """Validate the hyper-parameters; raise ``ValueError``/``TypeError`` naming the bad one."""

    def fit(self, X: ArrayLike, y: object = None) -> "FeatureMap":
        """Prepare the map for inputs like ``X`` (n, D); ``y`` is ignored. Returns ``self``."""
        self._check_params()
        X = as_tensor(X.toarray() if scipy.sparse.issparse(X) else X, "X")  # sparse: densified
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
        Xt, numpy_out = as_input_tensor(X)
        if Xt.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {Xt.shape[1]} features, but {type(self).__name__} was fitted with {self.n_features_in_}."
            )
        return to_output(self.map(Xt), numpy_out)

    def fit_transform(self, X: ArrayLike, y: object = None) -> torch.Tensor:
        """``fit(X)`` then ``transform(X)``, shape (n, d)."""
        return self.fit(X).transform(X)

    def as_kernel(self) -> Kernel:
        """The kernel ``k(x, y) = <phi(x), phi(y)>`` of this (fitted) map."""
        return FeatureMapKernel(self)

    def reference_set(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Reference inputs ``L`` (n_ref, D) whose features span the map's range, and ``C`` (n_ref, d) with
        ``phi(L)^T C = I_d``, or None; a primal model without its training inputs builds pre-images from ``L``."""
        return None

    # All constructor parameters, as for the kernels (scikit-learn prints only the non-default ones).
    __repr__ = Kernel.__repr__


class FeatureMapKernel(Kernel):
    """Linear kernel on the output of a fitted :class:`FeatureMap`.

    Parameters
    ----------
    feature_map : FeatureMap
        A fitted map. ``clone`` of this kernel keeps it fitted (a deep copy: a kernel has no ``fit``);
        ``set_params`` on the map's hyper-parameters does not refit it.
    """

    def __init__(self, feature_map: FeatureMap):
        self.feature_map = feature_map

    def _check_params(self) -> None:
        if not isinstance(self.feature_map, FeatureMap):
            raise TypeError(
                f"feature_map must be a kppca.features.FeatureMap, got {type(self.feature_map).__name__}."
            )
        if not hasattr(self.feature_map, "n_features_in_"):
            raise RuntimeError(
                f"the feature_map {self.feature_map!r} of this FeatureMapKernel is not fitted; "
                "fit it first (feature_map.fit(X)) or use feature_map.fit(X).as_kernel()."
            )

    def __sklearn_clone__(self) -> "FeatureMapKernel":
        return type(self)(copy.deepcopy(self.feature_map))

    def explicit_features(self, X: torch.Tensor) -> torch.Tensor:
        self._check_params()
        return self.feature_map.map(X)

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        fx = self.explicit_features(X)
        fy = fx if Y is X else self.feature_map.map(Y)
        return fx @ fy.T


class Identity(FeatureMap):
    """``phi(x) = x``: the linear kernel's feature map (classical PPCA)."""

    def map(self, X: torch.Tensor) -> torch.Tensor:
        return X.clone()
