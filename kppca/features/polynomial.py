"""Exact finite feature map of the polynomial kernel (for small degree and dimension)."""

from __future__ import annotations

import torch

from .._param_validation import Interval, Real
from ..io.specs import TensorSpec
from ..kernels.standard import apply_monomial_map, check_polynomial_params, monomial_map
from .base import FeatureMap


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

    _fitted_constraints = {
        **FeatureMap._fitted_constraints,
        "index_": [TensorSpec("int", ("d", "degree"), nonnegative=True)],
        "weights_": [TensorSpec(torch.float64, ("d",))],
        "coef0_": [Interval(Real, 0, None, closed="left")],
    }

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
