"""The subset ensemble's combiner: ridge regression of ±1 class targets on the submodels' features.

Two routes: exact leave-one-out over a thin SVD for a combiner fitted on rows held out from the submodels
(:func:`loo_ridge`), and normal equations accumulated over row blocks for one fitted on all training rows, whose
features would not fit in memory at once (:class:`Moments`).
"""

from __future__ import annotations

import numpy as np
import torch

from .._linalg import cholesky_in_place, cholesky_solve

__all__ = ["RIDGE_GRID", "NORMAL_RIDGE_GRID", "Moments", "targets", "errors", "loo_ridge", "solved"]


#: The ridge grid of ``ridge="loo"``, relative to the largest eigenvalue of the centred scatter.
RIDGE_GRID = np.logspace(-6, 4, 41)


def targets(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """The combiner's ±1 targets (m, o): one column per class, or one (+1 for class 1) for two classes."""
    columns = np.arange(n_classes) if n_classes > 2 else np.array([1])
    return np.where(codes[:, None] == columns[None, :], 1.0, -1.0)


def errors(F: np.ndarray, codes: np.ndarray) -> int:
    """Misclassified rows of the combined outputs ``F`` (m, 1 binary or m, C)."""
    pred = (F[:, 0] > 0).astype(int) if F.shape[1] == 1 else F.argmax(1)
    return int((pred != codes).sum())


def loo_ridge(Zc: np.ndarray, T: np.ndarray, codes: np.ndarray,
               svd: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> tuple[float, int]:
    """The ridge of :data:`RIDGE_GRID` with the fewest leave-one-out errors (then least squared error), and
    those errors, from the thin SVD (``svd``, or computed) of the centred features ``Zc`` (Allen's PRESS)."""
    m = Zc.shape[0]
    Tc = T - T.mean(0)
    U, sv, _ = np.linalg.svd(Zc, full_matrices=False) if svd is None else svd
    s2 = sv**2
    top = float(s2[0]) if s2.size and s2[0] > 0 else 1.0
    UT = U.T @ Tc  # (r, o)
    best, best_key, U2 = top, (np.inf, np.inf), U**2
    for lam in top * RIDGE_GRID:
        shrink = s2 / (s2 + lam)
        residual = (Tc - U @ (shrink[:, None] * UT)) / np.maximum(1.0 - (1.0 / m + U2 @ shrink), 1e-12)[:, None]
        key = (errors(T - residual, codes), float((residual**2).sum()))
        if key < best_key:
            best, best_key = float(lam), key
    return best, int(best_key[0])


#: The ridge grid of the normal-equation combiner (one Cholesky factor per value), relative to the trace of the
#: centred Gram matrix (between its top eigenvalue and q times that): with many more rows than features the
#: best ridge is small, hence the low end.
NORMAL_RIDGE_GRID = np.logspace(-11, 0, 12)


class Moments:
    """Row sums of the features ``Z`` (m, q), the lower triangle of their Gram matrix ``G`` and their products
    with the targets ``T``, so a ridge solve needs no row of ``Z`` after the blocks pass.

    In torch (its BLAS and LAPACK): numpy's and scipy's bundled OpenBLAS 0.3.31 crashed in their threaded
    ``syrk`` (numpy's ``Z.T @ Z``, and inside scipy's Cholesky factor) from q = 16,000 on, with two threads.
    """

    def __init__(self, q: int, o: int):
        self.n, self.z, self.t = 0, torch.zeros(q, dtype=torch.float64), torch.zeros(o, dtype=torch.float64)
        self.G, self.ZT = torch.zeros((q, q), dtype=torch.float64), torch.zeros((q, o), dtype=torch.float64)

    def add(self, Z: np.ndarray, T: np.ndarray, sign: float = 1.0) -> None:
        """Add the rows ``Z`` (m, q), ``T`` (m, o) (``sign=-1``: take them out again)."""
        Z, T = torch.as_tensor(Z, dtype=torch.float64), torch.as_tensor(T, dtype=torch.float64)
        self.n += int(sign) * len(Z)
        self.z += sign * Z.sum(0)
        self.t += sign * T.sum(0)
        # The lower triangle only (all the Cholesky factor reads), by column blocks added in place: half the
        # flops of Z.T @ Z and no (q, q) temporary.
        for j in range(0, Z.shape[1], 2048):
            self.G[j:, j:j + 2048].add_(Z[:, j:].T @ Z[:, j:j + 2048], alpha=sign)
        self.ZT += sign * (Z.T @ T)

    def without(self, Z: np.ndarray, T: np.ndarray, columns: np.ndarray | None = None) -> Moments:
        """The moments of the other rows, when ``Z``, ``T`` are some of the rows added; with ``columns`` (ascending
        feature indices) those features only, and ``Z`` holds only those."""
        rest = Moments(0, 0)
        rest.n, rest.t = self.n, self.t.clone()
        if columns is None:
            rest.z, rest.ZT, rest.G = self.z.clone(), self.ZT.clone(), self.G.clone()
        else:
            cols = torch.as_tensor(columns)
            # ascending columns: the block's lower triangle is read from G's (one (q', q') copy, no intermediate)
            rest.z, rest.ZT, rest.G = self.z[cols], self.ZT[cols], self.G[cols[:, None], cols[None, :]]
        rest.add(Z, T, sign=-1.0)
        return rest

    def trace(self) -> float:
        """The trace of the centred Gram matrix, the scale of the ridge grid (at least its top eigenvalue)."""
        zbar = self.z / self.n
        return float(self.G.diagonal().sum() - self.n * (zbar @ zbar))

    def solve(self, ridge: float) -> tuple[np.ndarray, np.ndarray] | None:
        """``(coef, intercept)`` of the ridge regression with an unpenalised intercept, by a Cholesky factor of
        the centred Gram matrix plus ``ridge``; None when that is not positive definite."""
        zbar, tbar = self.z / self.n, self.t / self.n
        # G - n zbar zbar^T in the outer product's buffer: bitwise the same, one (q, q) temporary instead of two
        A = torch.outer(zbar, zbar).mul_(-self.n).add_(self.G)
        A.diagonal().add_(ridge)
        L = cholesky_in_place(A)
        if L is None:
            return None
        coef = cholesky_solve(L, self.ZT - self.n * torch.outer(zbar, tbar))
        return coef.numpy(), (tbar - zbar @ coef).numpy()


def solved(moments: Moments, ridge: float) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`Moments.solve`, or a ValueError naming the fix."""
    solution = moments.solve(ridge)
    if solution is None:
        raise ValueError(f"the combiner's normal equations are not positive definite with ridge={ridge!r}: the "
                         "submodels' features are (nearly) linearly dependent; pass a larger ridge, or ridge='loo'.")
    return solution
