"""The polynomial kernel and its exact finite feature map (the monomials), in one place.

:class:`kppca.features.PolynomialFeatures` (the primal model's map) and
:meth:`Polynomial.explicit_features` (the exact rank of a polynomial Gram matrix)
both use :func:`monomial_map`, so the check of ``degree``/``coef0`` and the map live
next to each other and :mod:`kppca.features` only imports :mod:`kppca.kernels`.
"""

from __future__ import annotations

import math
import numbers
from itertools import combinations_with_replacement

import torch

from .._validation import check_positive
from .base import MAX_EXPLICIT_FEATURES, Kernel
from .standard import inner_product_may_overflow, raise_if_overflowed

__all__ = ["Polynomial", "check_polynomial_params", "monomial_map", "apply_monomial_map", "n_monomials"]

#: Largest exact map :func:`monomial_map` builds (beyond it, use the dual model or random features).
MAX_MONOMIALS = 200_000


def check_polynomial_params(degree: object, coef0: object) -> tuple[int, float]:
    """Validate ``degree`` (positive integer) and ``coef0`` (real, >= 0); return them as ``(int, float)``."""
    degree = int(check_positive(degree, "degree", integer=True))
    if isinstance(coef0, bool) or not isinstance(coef0, numbers.Real):
        raise TypeError(f"coef0 must be a real number, got {coef0!r}.")
    if not coef0 >= 0 or coef0 == float("inf"):  # `not >=` also catches NaN
        raise ValueError(f"coef0 must be >= 0 (and finite) for a positive semi-definite kernel, got {coef0}.")
    return degree, float(coef0)


def n_monomials(n_features: int, degree: int, coef0: float) -> int:
    """Dimension of the exact map: ``C(D + degree, degree)``, or ``C(D + degree - 1, degree)`` when ``coef0 = 0``."""
    return math.comb(n_features + degree, degree) if coef0 > 0 else math.comb(n_features + degree - 1, degree)


def monomial_map(n_features: int, degree: object, coef0: object) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The exact map of ``(x . y + coef0)^degree`` on ``R^n_features``: ``(index, weights, coef0)``.

    Writing ``x~ = [sqrt(coef0), x]``, the kernel is ``(x~ . y~)^degree``; its expansion
    gives one feature per multiset ``alpha`` of ``degree`` indices of ``x~``:
    ``sqrt(multinomial(alpha)) * prod_j x~_{alpha_j}``.

    Returns
    -------
    index : Tensor of shape (d, degree), long
        The multisets (indices into ``x~``).
    weights : Tensor of shape (d,), float64
        ``sqrt(multinomial(alpha))``.
    coef0 : float
        The validated ``coef0``.
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
    """Polynomial kernel ``k(x, y) = (x . y + coef0)^degree``.

    Parameters
    ----------
    degree : int, default 2
        Positive integer (checked on use).
    coef0 : float, default 1.0
        Must be non-negative so that the kernel is positive semi-definite.

    Raises ``ValueError`` on use when the kernel's values overflow the dtype (naming
    ``degree``/``coef0`` and the scale of the data).
    """

    def __init__(self, degree: int = 2, coef0: float = 1.0):
        self.degree = degree
        self.coef0 = coef0

    def _check_params(self) -> None:
        check_polynomial_params(self.degree, self.coef0)

    def explicit_features(self, X: torch.Tensor) -> torch.Tensor | None:
        """The exact map (:func:`monomial_map`) while it has at most
        :data:`~kppca.kernels.base.MAX_EXPLICIT_FEATURES` features, else None.

        Its dimension only bounds the rank, which the features give exactly (the
        constant feature of ``coef0 > 0`` disappears on centering, points on a curve
        satisfy polynomial relations).
        """
        degree, coef0 = check_polynomial_params(self.degree, self.coef0)
        if n_monomials(X.shape[1], degree, coef0) > MAX_EXPLICIT_FEATURES:
            return None
        return apply_monomial_map(X, *monomial_map(X.shape[1], degree, coef0))

    def _guard(self, out: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, degree: int, coef0: float) -> torch.Tensor:
        # A cheap bound first (O((n + m) D)); the (n, m) values are scanned only when it is exceeded.
        if inner_product_may_overflow(X, Y, offset=coef0, power=degree):
            raise_if_overflowed(out, f"Polynomial(degree={degree}, coef0={coef0})", "lower degree or coef0, ")
        return out

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        degree, coef0 = check_polynomial_params(self.degree, self.coef0)
        return self._guard((X @ Y.T).add_(coef0).pow_(degree), X, Y, degree, coef0)

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        degree, coef0 = check_polynomial_params(self.degree, self.coef0)
        return self._guard(((X * X).sum(1) + coef0) ** degree, X, X, degree, coef0)
