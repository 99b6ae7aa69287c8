"""Square roots ``F F^T = K_c`` of the centered Gram matrix, one immutable type per way of computing them.

Each type writes its draws ``a F^T`` and solves ``K_c alpha = k_c`` once, so no consumer re-checks a route.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from .._linalg import cholesky_solve

__all__ = ["GramFactor", "EigenFactor", "CholeskyFactor", "PivotedCholeskyFactor"]


@dataclass(frozen=True, eq=False)
class EigenFactor:
    """``F = E diag(sqrt(lam))`` from the eigenpairs of ``K_c`` above its rounding level.

    Parameters
    ----------
    values : Tensor of shape (k,)
        Eigenvalues, descending, all above the rounding tolerance.
    vectors : Tensor of shape (N, k)
    """

    values: torch.Tensor
    vectors: torch.Tensor
    #: Whether ``range(K_c)`` is known to be the complement of ``1`` (centered) or everything: not from eigenpairs.
    spans_complement_of_ones = False

    @property
    def width(self) -> int:
        """Number of columns ``r'`` of :meth:`sqrt` (the width of the draws ``a``)."""
        return int(self.values.shape[0])

    def sqrt(self) -> torch.Tensor:
        """``F`` (N, r')."""
        return self.vectors * self.values.sqrt()

    def apply(self, a: torch.Tensor) -> torch.Tensor:
        """``a F^T`` (n, N) for rows ``a`` (n, r')."""
        return a @ self.sqrt().T

    def solve(self, k_c: torch.Tensor) -> torch.Tensor:
        """``alpha`` (M, N) with ``K_c alpha = k_c`` for rows ``k_c`` in ``range(K_c)``: the pseudo-inverse."""
        return ((k_c @ self.vectors) / self.values) @ self.vectors.T


@dataclass(frozen=True, eq=False)
class CholeskyFactor:
    """``L = chol(K)`` (N, N) of the *raw* Gram matrix (``K`` positive definite): ``M L`` is a square root of ``K_c``.

    Parameters
    ----------
    L : Tensor of shape (N, N)
        Lower triangular.
    center : bool
        Whether the model centers (``K_c = M K M``); else ``K_c = K`` and ``F = L``.
    """

    L: torch.Tensor
    center: bool
    spans_complement_of_ones = True

    @property
    def width(self) -> int:
        return int(self.L.shape[1])

    def sqrt(self) -> torch.Tensor:
        """``M L`` (a new ``N x N`` matrix), or ``L`` uncentered."""
        return self.L - self.L.mean(0, keepdim=True) if self.center else self.L  # (M L)(M L)^T = M K M = K_c

    def apply(self, a: torch.Tensor) -> torch.Tensor:
        """``a (M L)^T`` (n, N) without forming ``M L``."""
        out = a @ self.L.T
        if self.center:
            out -= out.mean(1, keepdim=True)  # M (L a): rows of the result are centered
        return out

    def solve(self, k_c: torch.Tensor) -> torch.Tensor:
        """``alpha = K^{-1} (k_c + t 1)`` with ``t`` making ``1^T alpha = 0`` (centered), so ``K_c alpha = k_c``."""
        if not self.center:
            return cholesky_solve(self.L, k_c.T).T
        ones = k_c.new_ones(k_c.shape[1], 1)
        sol = cholesky_solve(self.L, torch.cat([k_c.T, ones], dim=1))
        u, v = sol[:, :-1], sol[:, -1:]
        alpha = (u - v * (u.sum(0) / v.sum())).T
        return alpha - alpha.mean(1, keepdim=True)


@dataclass(frozen=True, eq=False)
class PivotedCholeskyFactor:
    """A pivoted Cholesky factor ``L_c`` (N, r') of ``K_c`` itself, for a numerically singular ``K``.

    Parameters
    ----------
    L : Tensor of shape (N, r')
    eigen : callable returning EigenFactor
        The eigenpairs of ``K_c`` (computed on first solve, ``O(N^3)``): solves use the pseudo-inverse.
    """

    L: torch.Tensor
    eigen: Callable[[], EigenFactor]
    spans_complement_of_ones = False

    @property
    def width(self) -> int:
        return int(self.L.shape[1])

    def sqrt(self) -> torch.Tensor:
        return self.L

    def apply(self, a: torch.Tensor) -> torch.Tensor:
        return a @ self.L.T

    def solve(self, k_c: torch.Tensor) -> torch.Tensor:
        return self.eigen().solve(k_c)


#: Any square root of ``K_c`` a :class:`~kppca.kernels.CenteredGram` hands out.
GramFactor = EigenFactor | CholeskyFactor | PivotedCholeskyFactor
