"""The standard kernels: linear, RBF (Gaussian), polynomial and Laplacian."""

from __future__ import annotations

import torch

from .._validation import check_positive
from .base import Kernel


def squared_distances(X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Pairwise squared Euclidean distances, shape (n, m), clipped at 0.

    Uses the expansion ``|x|^2 + |y|^2 - 2 x.y`` (one matrix product, the
    dominant cost); rounding can make it slightly negative, hence the clip.
    """
    xx = (X * X).sum(1)
    yy = (Y * Y).sum(1)
    # addmm broadcasts the (n, 1) column, so only the (n, m) result is allocated.
    D = torch.addmm(xx[:, None], X, Y.T, alpha=-2.0).add_(yy[None, :])
    return D.clamp_(min=0.0)


class Linear(Kernel):
    """``k(x, y) = x . y``; the feature map is the identity."""

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return X @ Y.T

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        return (X * X).sum(1)


class RBF(Kernel):
    """Gaussian kernel ``k(x, y) = exp(-||x - y||^2 / (2 bandwidth^2))``.

    Parameters
    ----------
    bandwidth : float, default 1.0
        The length scale sigma of the paper (not scikit-learn's ``gamma``;
        ``gamma = 1 / (2 bandwidth^2)``).
    """

    def __init__(self, bandwidth: float = 1.0):
        self.bandwidth = float(check_positive(bandwidth, "bandwidth"))

    @property
    def gamma(self) -> float:
        """scikit-learn's parameterisation, ``1 / (2 bandwidth^2)``."""
        return 1.0 / (2.0 * self.bandwidth**2)

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return squared_distances(X, Y).mul_(-self.gamma).exp_()

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        return torch.ones(X.shape[0], dtype=X.dtype, device=X.device)


class Laplacian(Kernel):
    """Laplacian kernel ``k(x, y) = exp(-||x - y||_1 / bandwidth)`` (L1 distance, as scikit-learn).

    Parameters
    ----------
    bandwidth : float, default 1.0
        Length scale; scikit-learn's ``gamma = 1 / bandwidth``.
    """

    def __init__(self, bandwidth: float = 1.0):
        self.bandwidth = float(check_positive(bandwidth, "bandwidth"))

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return torch.cdist(X, Y, p=1.0).div_(-self.bandwidth).exp_()

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        return torch.ones(X.shape[0], dtype=X.dtype, device=X.device)


class Polynomial(Kernel):
    """Polynomial kernel ``k(x, y) = (x . y + coef0)^degree``.

    Parameters
    ----------
    degree : int, default 2
    coef0 : float, default 1.0
        Must be non-negative so that the kernel is positive semi-definite.
    """

    def __init__(self, degree: int = 2, coef0: float = 1.0):
        self.degree = int(check_positive(degree, "degree", integer=True))
        if coef0 < 0:
            raise ValueError(f"coef0 must be >= 0 for a positive semi-definite kernel, got {coef0}.")
        self.coef0 = float(coef0)

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        return (X @ Y.T).add_(self.coef0).pow_(self.degree)

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        return ((X * X).sum(1) + self.coef0) ** self.degree
