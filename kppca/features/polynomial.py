"""Exact finite feature map of the polynomial kernel (for small degree and dimension)."""

from __future__ import annotations

import math
from itertools import combinations_with_replacement

import torch

from ..kernels.standard import check_polynomial_params
from .base import FeatureMap


class PolynomialFeatures(FeatureMap):
    """Exact map with ``<phi(x), phi(y)> = (x . y + coef0)^degree`` (:class:`kppca.kernels.Polynomial`).

    Writing ``x~ = [sqrt(coef0), x]``, the kernel is ``(x~ . y~)^degree``; its
    expansion gives one feature per multiset ``alpha`` of ``degree`` indices of
    ``x~``: ``sqrt(multinomial(alpha)) * prod_j x~_{alpha_j}``. The output
    dimension is ``C(D + degree, degree)``, so keep ``D`` and ``degree`` small.

    Parameters
    ----------
    degree : int, default 2
    coef0 : float, default 1.0
        Non-negative. Both are checked by ``fit``.

    Attributes
    ----------
    index_ : Tensor of shape (d, degree)
    weights_ : Tensor of shape (d,)
    coef0_ : float
    """

    def __init__(self, degree: int = 2, coef0: float = 1.0):
        self.degree = degree
        self.coef0 = coef0

    def _check_params(self) -> None:
        check_polynomial_params(self.degree, self.coef0)

    def _fit(self, X: torch.Tensor) -> None:
        degree, coef0 = check_polynomial_params(self.degree, self.coef0)
        self.coef0_ = coef0  # map() uses the fitted value, consistent with index_ and weights_
        dim = X.shape[1] + 1
        n_out = math.comb(dim + degree - 1, degree)
        if n_out > 200_000:
            raise ValueError(
                f"the exact polynomial map would have {n_out} features; use the dual model with "
                "kernels.Polynomial, or RandomFourierFeatures/Nystroem."
            )
        combos = list(combinations_with_replacement(range(dim), degree))
        self.index_ = torch.tensor(combos, dtype=torch.long)  # (d, degree)
        coef = []
        for combo in combos:
            counts = [combo.count(j) for j in set(combo)]
            coef.append(math.factorial(degree) / math.prod(math.factorial(c) for c in counts))
        self.weights_ = torch.tensor(coef, dtype=torch.float64).sqrt()

    def map(self, X: torch.Tensor) -> torch.Tensor:
        lifted = torch.cat([torch.full_like(X[:, :1], math.sqrt(self.coef0_)), X], dim=1)
        index = self.index_.to(X.device)
        return lifted[:, index].prod(-1) * self.weights_.to(X.device, X.dtype)
