"""The built-in kernels (linear, polynomial, RBF, Laplacian) and :data:`KERNELS`, their names.

The polynomial kernel's exact map lives here: it serves :class:`kppca.features.PolynomialFeatures` and exact ranks.
"""

from __future__ import annotations

import math
from itertools import combinations_with_replacement
from typing import Callable

import torch

from .._param_validation import Integral, Interval, Real, check_scalar
from .._validation import ArrayLike
from .bandwidth import check_bandwidth, resolve_bandwidth
from .base import MAX_EXPLICIT_FEATURES, CallableKernel, Kernel
from .distances import (
    SquaredDistancesTo,
    exp_neg_scaled,
    pairwise_distances,
    scaled_squared_distances,
)

__all__ = [
    "Linear", "Polynomial", "RBF", "Laplacian", "KERNELS", "as_kernel",
    "check_polynomial_params", "monomial_map", "apply_monomial_map",
]

_LOG_FLOAT64_MAX = math.log(torch.finfo(torch.float64).max)

#: Largest exact map :func:`monomial_map` builds (beyond it, use the dual model or random features).
MAX_MONOMIALS = 200_000


class Linear(Kernel):
    """``k(x, y) = x . y``; the feature map is the identity.

    Values beyond the dtype's range are ``inf``: the estimators check their Gram matrices and say to rescale X.
    """

    def explicit_features(self, X: torch.Tensor) -> torch.Tensor:
        return X

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return X @ Y.T

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        return (X * X).sum(1)


def check_polynomial_params(degree: object, coef0: object) -> tuple[int, float]:
    """Validate ``degree`` (positive integer) and ``coef0`` (real, >= 0, ``coef0^degree`` finite): ``(int, float)``."""
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
        """The exact map (:func:`monomial_map`) while it has at most ``MAX_EXPLICIT_FEATURES`` features, else None."""
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


class _Stationary(Kernel):
    """A kernel ``exp(-(distance / bandwidth)^p / p)`` with a numeric or data-resolved ``bandwidth``."""

    _metric = "l2"

    def __init__(self, bandwidth: float | str = "median"):
        self.bandwidth = bandwidth

    def _check_params(self) -> None:
        check_bandwidth(self.bandwidth, self._metric)

    @property
    def is_resolved(self) -> bool:
        return not isinstance(check_bandwidth(self.bandwidth, self._metric), str)

    def resolve(self, X: ArrayLike) -> Kernel:
        """A new kernel with ``bandwidth`` computed on ``X`` (n, D) by its rule; ``self`` when it is a number."""
        if self.is_resolved:
            return self
        return type(self)(resolve_bandwidth(self.bandwidth, X, self._metric))

    def _width(self) -> float:
        value = check_bandwidth(self.bandwidth, self._metric)
        if isinstance(value, str):
            name = type(self).__name__
            raise ValueError(
                f"{name}(bandwidth={value!r}) takes its width from the training data: call "
                f"kernel.resolve(X_train) first (estimators do this in fit), or pass a number, e.g. {name}(1.0)."
            )
        return value

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        self._width()
        return torch.ones(X.shape[0], dtype=X.dtype, device=X.device)


class RBF(_Stationary):
    """Gaussian kernel ``k(x, y) = exp(-||x - y||^2 / (2 bandwidth^2))``.

    Translation invariant to rounding; identical rows give exactly 1.

    Parameters
    ----------
    bandwidth : float or {"scale", "median"}, default "scale"
        The length scale sigma (scikit-learn's ``gamma = 1 / (2 bandwidth^2)``), positive and finite;
        or a rule resolved from the training data by :meth:`resolve`: ``"scale"`` (scikit-learn's
        ``gamma="scale"``, ``sqrt(D Var(X) / 2)``; the lower held-out error of the two in our
        comparisons) or ``"median"`` (the median distance between training points). Checked on use.
    """

    strictly_positive_definite = True  # Gaussian kernels have full-rank Gram matrices on distinct points

    def __init__(self, bandwidth: float | str = "scale"):
        self.bandwidth = bandwidth

    @property
    def gamma(self) -> float:
        """scikit-learn's parameterisation, ``1 / (2 bandwidth^2)`` (``inf``/0 beyond the float range)."""
        return 0.5 / self._width() / self._width()

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        width = self._width()
        D, s = scaled_squared_distances(X, Y)
        return exp_neg_scaled(D, s, width, 2)

    def against(self, Y: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
        width = self._width()
        distances = SquaredDistancesTo(Y)
        return lambda X: exp_neg_scaled(*distances(X), width, 2)


class Laplacian(_Stationary):
    """Laplacian kernel ``k(x, y) = exp(-||x - y||_1 / bandwidth)`` (L1 distance, as scikit-learn).

    Translation invariant to rounding (the L1 distance is summed directly).

    Parameters
    ----------
    bandwidth : float or "median", default "median"
        Length scale (scikit-learn's ``gamma = 1 / bandwidth``), positive and finite; or ``"median"``,
        the median L1 distance between training points, resolved by :meth:`resolve`. Checked on use.
    """

    strictly_positive_definite = True  # exp(-|t|) has a positive Fourier transform (Bochner)
    _metric = "l1"

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        width = self._width()
        d, s = pairwise_distances(X, Y, "l1")
        return exp_neg_scaled(d, s, width, 1)


#: Name -> kernel class, for ``kernel="name"`` and for model files.
KERNELS: dict[str, type[Kernel]] = {"linear": Linear, "rbf": RBF, "laplacian": Laplacian, "polynomial": Polynomial}


def as_kernel(kernel: Kernel | Callable | str | None) -> Kernel:
    """Resolve the ``kernel`` argument of the models.

    Parameters
    ----------
    kernel : Kernel, callable ``fn(X, Y)``, str or None
        A :class:`Kernel` as is; a name of :data:`KERNELS` (case-insensitive): that kernel with
        default parameters; None: :class:`Linear`; a callable: wrapped in :class:`CallableKernel`.

    Returns
    -------
    Kernel
    """
    if kernel is None:
        return Linear()
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        if kernel.lower() not in KERNELS:
            raise ValueError(f"kernel={kernel!r} is unknown; use one of {sorted(KERNELS)} or a Kernel instance.")
        return KERNELS[kernel.lower()]()
    if not callable(kernel):
        raise TypeError(f"kernel must be a Kernel or a callable fn(X, Y), got {type(kernel).__name__}.")
    return CallableKernel(kernel)
