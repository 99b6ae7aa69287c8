"""Explicit feature maps ``phi: R^D -> R^d`` for the primal model: the base class, the identity, the polynomial
kernel's exact map and random Fourier features."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable

import numpy as np
import scipy.sparse
import torch
from sklearn.base import BaseEstimator

from .._param_validation import Integral, Interval, Real, check_scalar, fit_context
from .._validation import ArrayLike, as_input_tensor, as_tensor, numpy_rng, to_output
from ..io.record import FittedState, HasFittedState, fitted
from ..io.specs import TensorSpec
from ..kernels.bandwidth import check_bandwidth, resolve_bandwidth
from ..kernels.base import Kernel
from ..kernels.standard import apply_monomial_map, check_polynomial_params, monomial_map


@dataclasses.dataclass(frozen=True, kw_only=True)
class FeatureMapState(FittedState):
    """What every fitted feature map records: the input width."""

    n_features_in_: int = fitted(Interval(Integral, 1, None, closed="left"))


class FeatureMap(HasFittedState, BaseEstimator):
    """Base class: ``fit(X)`` draws or learns what the map needs, ``transform(X)`` applies it.

    Feature maps are scikit-learn estimators; ``fit`` validates the hyper-parameters, and what it learns ends with ``_``.
    """

    _state_type = FeatureMapState
    #: How model files treat instances of unregistered subclasses (refused: files store no code).
    _model_file_kind = "feature map"

    def _check_params(self) -> None:
        """Validate the hyper-parameters; raise ``ValueError``/``TypeError`` naming the bad one."""

    @fit_context
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

    def output_width(self) -> int | None:
        """``d``, the width of :meth:`map`'s output, read from the fitted state (None: not known without mapping)."""
        return None

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

    def against(self, Y: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
        """``X -> gram(X, Y)`` with ``phi(Y)`` mapped once, not once per row block of ``X`` (bitwise the same)."""
        fy = self.explicit_features(Y)
        return lambda X: self.explicit_features(X) @ fy.T


class Identity(FeatureMap):
    """``phi(x) = x``: the linear kernel's feature map (classical PPCA)."""

    def map(self, X: torch.Tensor) -> torch.Tensor:
        return X.clone()

    def output_width(self) -> int:
        return self.n_features_in_


class PolynomialFeatures(FeatureMap):
    """Exact map with ``<phi(x), phi(y)> = (x . y + coef0)^degree`` (:class:`kppca.kernels.Polynomial`).

    One scaled monomial of ``[sqrt(coef0), x]`` per multiset of ``degree`` indices
    (:func:`kppca.kernels.standard.monomial_map`): ``C(D + degree, degree)`` features, so keep both small.

    Parameters
    ----------
    degree : int, default 2
    coef0 : float, default 1.0
        Non-negative (both checked by ``fit``).

    Attributes
    ----------
    index_ : Tensor of shape (d, degree)
    weights_ : Tensor of shape (d,)
    coef0_ : float
    """

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class State(FeatureMapState):
        # "n_monomials": a symbol of its own (a model's "d" may be another width)
        index_: torch.Tensor = fitted(TensorSpec("int", ("n_monomials", "degree"), nonnegative=True))
        weights_: torch.Tensor = fitted(TensorSpec(torch.float64, ("n_monomials",)))
        coef0_: float = fitted(Interval(Real, 0, None, closed="left"))

    _state_type = State

    def __init__(self, degree: int = 2, coef0: float = 1.0):
        self.degree = degree
        self.coef0 = coef0

    def _check_params(self) -> None:
        check_polynomial_params(self.degree, self.coef0)

    def _fit(self, X: torch.Tensor) -> None:
        # map() uses the fitted coef0_, consistent with index_ and weights_.
        self.index_, self.weights_, self.coef0_ = monomial_map(X.shape[1], self.degree, self.coef0)

    def map(self, X: torch.Tensor) -> torch.Tensor:
        return apply_monomial_map(X, self.index_, self.weights_, self.coef0_)

    def output_width(self) -> int:
        return self.weights_.shape[0]


class RandomFourierFeatures(FeatureMap):
    """``phi(x) = sqrt(2/d) cos(x Omega + b)`` with ``Omega ~ N(0, bandwidth^-2 I)``, ``b ~ U[0, 2 pi]``.

    ``<phi(x), phi(y)>`` estimates the RBF kernel (:class:`kppca.kernels.RBF`) without bias, with error
    ``O(1 / sqrt(n_features))`` (Rahimi & Recht, 2007).

    Parameters
    ----------
    bandwidth : float or {"scale", "median"}, default 1.0
        Positive and finite, or a rule resolved from the data by ``fit`` as for :class:`kppca.kernels.RBF`.
    n_features : int, default 500
        Output dimension ``d``.
    random_state : int, numpy Generator or None

    Attributes
    ----------
    bandwidth_ : float
        The width used (``bandwidth``, or its rule's value on the training data).
    omega_ : Tensor of shape (D, d)
    offset_ : Tensor of shape (d,)
    """

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class State(FeatureMapState):
        bandwidth_: float = fitted(Interval(Real, 0, None, closed="neither"))
        omega_: torch.Tensor = fitted(TensorSpec(torch.float64, ("n_features_in_", "n_features")))
        offset_: torch.Tensor = fitted(TensorSpec(torch.float64, ("n_features",)))

    _state_type = State

    def __init__(self, bandwidth: float = 1.0, n_features: int = 500, random_state=None):
        self.bandwidth = bandwidth
        self.n_features = n_features
        self.random_state = random_state

    def _check_params(self) -> None:
        check_bandwidth(self.bandwidth)
        check_scalar(self.n_features, "n_features", [Interval(Integral, 0, None, closed="neither")])

    def _fit(self, X: torch.Tensor) -> None:
        # Draw with numpy so the map depends only on random_state, not on the device.
        rng = numpy_rng(self.random_state)
        n_features = int(self.n_features)
        self.bandwidth_ = resolve_bandwidth(self.bandwidth, X)
        with np.errstate(over="ignore"):
            omega = rng.standard_normal((X.shape[1], n_features)) / self.bandwidth_
        if not np.isfinite(omega).all():
            raise ValueError(
                f"RandomFourierFeatures: the frequencies 1 / bandwidth overflow float64 (bandwidth={self.bandwidth!r}); "
                "use a larger bandwidth, e.g. the data's standard deviation."
            )
        offset = rng.uniform(0.0, 2.0 * math.pi, n_features)
        self.omega_ = torch.as_tensor(omega, dtype=torch.float64)
        self.offset_ = torch.as_tensor(offset, dtype=torch.float64)

    def output_width(self) -> int:
        return self.omega_.shape[1]

    def map(self, X: torch.Tensor) -> torch.Tensor:
        # The fitted width, not the parameter: set_params after fit must not rescale a stale draw.
        proj = torch.addmm(self.offset_.to(X.device, X.dtype), X, self.omega_.to(X.device, X.dtype))
        if not bool(torch.isfinite(proj).all()) and bool(torch.isfinite(X).all()):
            # A tiny bandwidth: Omega ~ 1 / bandwidth overflows float32 (or X Omega overflows);
            # cos of a huge but finite float64 phase is still defined.
            proj = torch.addmm(self.offset_.to(X.device), X.to(torch.float64), self.omega_.to(X.device))
            if not bool(torch.isfinite(proj).all()):
                raise ValueError(
                    f"RandomFourierFeatures: X / bandwidth overflows float64 (bandwidth={self.bandwidth!r} is "
                    "far below the data's scale); use a larger bandwidth, e.g. the data's standard deviation."
                )
        return proj.cos_().to(X.dtype).mul_(math.sqrt(2.0 / self.omega_.shape[1]))
