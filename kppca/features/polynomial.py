"""Exact finite feature map of the polynomial kernel (for small degree and dimension)."""

from __future__ import annotations

import math
from itertools import combinations_with_replacement

import torch

from .._validation import check_positive
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
    """

    def __init__(self, degree: int = 2, coef0: float = 1.0):
        self.degree = int(check_positive(degree, "degree", integer=True))
        if coef0 < 0:
            raise ValueError(f"coef0 must be >= 0, got {coef0}.")
        self.coef0 = float(coef0)

    def _fit(self, X: torch.Tensor) -> None:
        dim = X.shape[1] + 1
        n_out = math.comb(dim + self.degree - 1, self.degree)
        if n_out > 200_000:
            raise ValueError(
                f"the exact polynomial map would have {n_out} features; use the dual model with "
                "kernels.Polynomial, or RandomFourierFeatures/Nystroem."
            )
        combos = list(combinations_with_replacement(range(dim), self.degree))
        self.index_ = torch.tensor(combos, dtype=torch.long)  # (d, degree)
        coef = []
        for combo in combos:
            counts = [combo.count(j) for j in set(combo)]
            coef.append(math.factorial(self.degree) / math.prod(math.factorial(c) for c in counts))
        self.weights_ = torch.tensor(coef, dtype=torch.float64).sqrt()

    def map(self, X: torch.Tensor) -> torch.Tensor:
        lifted = torch.cat([torch.full_like(X[:, :1], math.sqrt(self.coef0)), X], dim=1)
        index = self.index_.to(X.device)
        return lifted[:, index].prod(-1) * self.weights_.to(X.device, X.dtype)
