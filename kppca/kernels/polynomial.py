"""The polynomial kernel and its exact finite feature map (the monomials).

The map serves both :class:`kppca.features.PolynomialFeatures` and the exact rank of a polynomial Gram
matrix, so it lives here, next to the check of ``degree``/``coef0``.
"""

from __future__ import annotations

import math
from itertools import combinations_with_replacement

import torch

from .._param_validation import Integral, Interval, Real, check_scalar
from .base import MAX_EXPLICIT_FEATURES, Kernel

__all__ = ["Polynomial", "check_polynomial_params", "monomial_map", "apply_monomial_map"]

_LOG_FLOAT64_MAX = math.log(torch.finfo(torch.float64).max)

#: Largest exact map :func:`monomial_map` builds (beyond it, use the dual model or random features).
MAX_MONOMIALS = 200_000


def check_polynomial_params(degree: object, coef0: object) -> tuple[int, float]:
    """Validate ``degree`` (positive integer) and ``coef0`` (real, >= 0); return them as ``(int, float)``.

    ``coef0^degree`` (the kernel at ``x . y = 0``) must be a finite float64, or every value would overflow.
    """
    degree = int(check_scalar(degree, "degree", [Interval(Integral, 0, None, closed="neither")]))
    coef0 = float(check_scalar(coef0, "coef0 (>= 0: a positive semi-definite kernel)", [Interval(Real, 0, None)]))
    if coef0 > 0 and degree * math.log(coef0) >= _LOG_FLOAT64_MAX:
        raise ValueError(
            f"coef0**degree = {coef0}**{degree} overflows float64, so would every kernel value; lower coef0 "
            f"or degree (coef0 <= {math.exp(_LOG_FLOAT64_MAX / degree):.3g} for degree={degree})."
        )
    return degree, float(coef0)


def monomial_map(n_features: int, degree: object, coef0: object) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The exact map of ``(x . y + coef0)^degree`` on ``R^n_features``: ``(index (d, degree), weights (d,), coef0)``.

    With ``x~ = [sqrt(coef0), x]``, one feature per multiset ``alpha`` (a row of ``index``) of ``degree``
    indices of ``x~``: ``sqrt(multinomial(alpha)) * prod_j x~_{alpha_j}``; ``weights`` (float64) holds
    the square roots, ``coef0`` is validated.
    """
    degree, coef0 = check_polynomial_params(degree, coef0)
    dim = n_features + 1
    n_out = math.comb(dim + degree - 1, degree)
    if n_out > MAX_MONOMIALS:
        raise ValueError(
            f"the exact polynomial map would have {n_out} features; use the dual model with "
            "kernels.Polynomial, or RandomFourierFeatures/Nystroem."
        )
    combos = list(combinations_with_replacement(range(dim), degree))
    index = torch.tensor(combos, dtype=torch.long)
    coef = [math.factorial(degree) / math.prod(math.factorial(combo.count(j)) for j in set(combo)) for combo in combos]
    return index, torch.tensor(coef, dtype=torch.float64).sqrt(), coef0


def apply_monomial_map(X: torch.Tensor, index: torch.Tensor, weights: torch.Tensor, coef0: float) -> torch.Tensor:
    """The features ``phi(X)`` (n, d) of :func:`monomial_map`'s ``(index, weights, coef0)``."""
    lifted = torch.cat([torch.full_like(X[:, :1], math.sqrt(coef0)), X], dim=1)
    return lifted[:, index.to(X.device)].prod(-1) * weights.to(X.device, X.dtype)


class Polynomial(Kernel):
    """Polynomial kernel ``k(x, y) = (x . y + coef0)^degree``; values beyond the dtype's range are ``inf``.

    Parameters
    ----------
    degree : int, default 2
        Positive integer (checked on use).
    coef0 : float, default 1.0
        Non-negative, so that the kernel is PSD; ``coef0**degree`` must not overflow float64 (checked on use).
    """

    def __init__(self, degree: int = 2, coef0: float = 1.0):
        self.degree = degree
        self.coef0 = coef0

    def _check_params(self) -> None:
        check_polynomial_params(self.degree, self.coef0)

    def explicit_features(self, X: torch.Tensor) -> torch.Tensor | None:
        """The exact map (:func:`monomial_map`) while it has at most ``MAX_EXPLICIT_FEATURES`` features, else None.

        Its dimension only bounds the rank; the features give it exactly.
        """
        degree, coef0 = check_polynomial_params(self.degree, self.coef0)
        D = X.shape[1]
        n_out = math.comb(D + degree, degree) if coef0 > 0 else math.comb(D + degree - 1, degree)  # no constant at 0
        if n_out > MAX_EXPLICIT_FEATURES:
            return None
        return apply_monomial_map(X, *monomial_map(X.shape[1], degree, coef0))

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        degree, coef0 = check_polynomial_params(self.degree, self.coef0)
        return (X @ Y.T).add_(coef0).pow_(degree)

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        degree, coef0 = check_polynomial_params(self.degree, self.coef0)
        return ((X * X).sum(1) + coef0) ** degree
