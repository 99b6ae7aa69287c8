"""The standard kernels: linear, RBF (Gaussian), polynomial and Laplacian."""

from __future__ import annotations

import math
import numbers

import torch

from .._validation import check_positive
from .base import MAX_EXPLICIT_FEATURES, Kernel


def squared_distances(X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Pairwise squared Euclidean distances, shape (n, m), clipped at 0.

    Uses the expansion ``|x - c|^2 + |y - c|^2 - 2 (x - c).(y - c)`` with ``c``
    the mean of ``Y`` (one matrix product, the dominant cost). Centering first
    makes the result translation invariant: the expansion of raw coordinates
    loses ``eps * |x|^2`` to cancellation, i.e. everything for data far from
    the origin (``Y + 1000``), while after centering the error is
    ``~ D eps (|x - c|^2 + |y - c|^2)``, relative to the spread of the data.
    ``c`` depends on ``Y`` only, so row blocks of ``X`` (against the same
    training set ``Y``) give the same numbers as one call. When ``Y is X`` the
    diagonal is set to exactly 0 (``k(x, x) = 1`` for the RBF kernel at any
    scale); rounding can make other entries slightly negative, hence the clip.

    Parameters
    ----------
    X : Tensor of shape (n, D)
    Y : Tensor of shape (m, D)
        Usually the training set; pass ``X`` itself for a self-distance matrix.

    Returns
    -------
    Tensor of shape (n, m)
    """
    same = Y is X
    # c is a tiny (1, D) row; the centered copies are the size of the inputs, not (n, m, D).
    c = Y.mean(0, keepdim=True) if Y.shape[0] else Y.new_zeros((1, Y.shape[1]))
    Xc = X - c
    Yc = Xc if same else Y - c
    xx = (Xc * Xc).sum(1)
    yy = xx if same else (Yc * Yc).sum(1)
    # addmm broadcasts the (n, 1) column, so only the (n, m) result is allocated.
    D = torch.addmm(xx[:, None], Xc, Yc.T, alpha=-2.0).add_(yy[None, :])
    if same:
        D.diagonal().zero_()
    return D.clamp_(min=0.0)


def _check_bandwidth(bandwidth: object) -> float:
    return float(check_positive(bandwidth, "bandwidth"))


class Linear(Kernel):
    """``k(x, y) = x . y``; the feature map is the identity."""

    def explicit_features(self, X: torch.Tensor) -> torch.Tensor:
        return X

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return X @ Y.T

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        return (X * X).sum(1)


class RBF(Kernel):
    """Gaussian kernel ``k(x, y) = exp(-||x - y||^2 / (2 bandwidth^2))``.

    Translation invariant to rounding (see :func:`squared_distances`).

    Parameters
    ----------
    bandwidth : float, default 1.0
        The length scale sigma of the paper (not scikit-learn's ``gamma``;
        ``gamma = 1 / (2 bandwidth^2)``). Must be positive and finite (checked on use).
    """

    strictly_positive_definite = True  # Gaussian kernels have full-rank Gram matrices on distinct points

    def __init__(self, bandwidth: float = 1.0):
        self.bandwidth = bandwidth

    def _check_params(self) -> None:
        _check_bandwidth(self.bandwidth)

    @property
    def gamma(self) -> float:
        """scikit-learn's parameterisation, ``1 / (2 bandwidth^2)``."""
        return 1.0 / (2.0 * _check_bandwidth(self.bandwidth) ** 2)

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return squared_distances(X, Y).mul_(-self.gamma).exp_()

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        self._check_params()
        return torch.ones(X.shape[0], dtype=X.dtype, device=X.device)


class Laplacian(Kernel):
    """Laplacian kernel ``k(x, y) = exp(-||x - y||_1 / bandwidth)`` (L1 distance, as scikit-learn).

    ``torch.cdist(p=1)`` sums ``|x_i - y_i|`` directly (no expansion), so the
    kernel is translation invariant to rounding.

    Parameters
    ----------
    bandwidth : float, default 1.0
        Length scale; scikit-learn's ``gamma = 1 / bandwidth``. Positive and finite (checked on use).
    """

    strictly_positive_definite = True  # exp(-|t|) has a positive Fourier transform (Bochner)

    def __init__(self, bandwidth: float = 1.0):
        self.bandwidth = bandwidth

    def _check_params(self) -> None:
        _check_bandwidth(self.bandwidth)

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        bandwidth = _check_bandwidth(self.bandwidth)
        return torch.cdist(X, Y, p=1.0).div_(-bandwidth).exp_()

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        self._check_params()
        return torch.ones(X.shape[0], dtype=X.dtype, device=X.device)


def check_polynomial_params(degree: object, coef0: object) -> tuple[int, float]:
    """Validate ``degree`` (positive integer) and ``coef0`` (real, >= 0); return them as ``(int, float)``."""
    degree = int(check_positive(degree, "degree", integer=True))
    if isinstance(coef0, bool) or not isinstance(coef0, numbers.Real):
        raise TypeError(f"coef0 must be a real number, got {coef0!r}.")
    if not coef0 >= 0 or coef0 == float("inf"):  # `not >=` also catches NaN
        raise ValueError(f"coef0 must be >= 0 (and finite) for a positive semi-definite kernel, got {coef0}.")
    return degree, float(coef0)


class Polynomial(Kernel):
    """Polynomial kernel ``k(x, y) = (x . y + coef0)^degree``.

    Parameters
    ----------
    degree : int, default 2
        Positive integer (checked on use).
    coef0 : float, default 1.0
        Must be non-negative so that the kernel is positive semi-definite.
    """

    def __init__(self, degree: int = 2, coef0: float = 1.0):
        self.degree = degree
        self.coef0 = coef0

    def _check_params(self) -> None:
        check_polynomial_params(self.degree, self.coef0)

    def explicit_features(self, X: torch.Tensor) -> torch.Tensor | None:
        """The exact map (:class:`~kppca.features.PolynomialFeatures`) while it has at most
        :data:`~kppca.kernels.base.MAX_EXPLICIT_FEATURES` features, else None.

        Its dimension is ``C(D + degree, degree)`` (``C(D + degree - 1, degree)`` when
        ``coef0 = 0``); that only bounds the rank, which the features give exactly (the
        constant feature of ``coef0 > 0`` disappears on centering, points on a curve
        satisfy polynomial relations).
        """
        degree, coef0 = check_polynomial_params(self.degree, self.coef0)
        D = X.shape[1]
        n_features = math.comb(D + degree, degree) if coef0 > 0 else math.comb(D + degree - 1, degree)
        if n_features > MAX_EXPLICIT_FEATURES:
            return None
        from ..features.polynomial import PolynomialFeatures  # features build on kernels: imported late

        return PolynomialFeatures(degree, coef0).fit(X).map(X)

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        degree, coef0 = check_polynomial_params(self.degree, self.coef0)
        return (X @ Y.T).add_(coef0).pow_(degree)

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        degree, coef0 = check_polynomial_params(self.degree, self.coef0)
        return ((X * X).sum(1) + coef0) ** degree
