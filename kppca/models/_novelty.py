"""The novelty score of both models: the fraction of ``|phi(x) - m|^2`` that lies outside ``H_E``."""

from __future__ import annotations

import numpy as np
import torch

from .._linalg import rounding_tolerance
from .._validation import ArrayLike


class NoveltyMixin:
    """``novelty_score``; subclasses provide ``_outside_and_total(X)``: outside part, total, its rounding floor (M,)."""

    def novelty_score(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Fraction of ``|phi(x) - m|^2`` outside ``H_E``, per point: 0 = inside the training span, 1 = orthogonal.

        A scale-free detector of inputs unlike the training data, which ``score`` cannot see. A point at
        the feature-space mean scores 0. Dual: accurate to about ``N eps (max k + lam_1)`` absolute (a
        difference of kernel sums); primal: the residual is formed explicitly. Needs the complete spectrum
        (computed once after a partial fit).

        Parameters
        ----------
        X : array-like of shape (M, D)

        Returns
        -------
        ndarray or Tensor of shape (M,)
            Values in ``[0, 1]``; the type of ``X``.
        """
        Xt = self._validate_new_input(X, method="novelty_score")
        rows = self._block_rows()
        parts = [self._outside_and_total(Xt[i : i + rows]) for i in range(0, Xt.shape[0], rows)]
        if parts:
            outside, total, floor = (torch.cat(column) for column in zip(*parts))
        else:
            outside = total = floor = Xt.new_zeros(0)
        # Below the rounding floor the point is indistinguishable from the mean, which lies in m + H_E.
        at_mean = total <= floor
        fraction = torch.where(at_mean, torch.zeros_like(total), outside / torch.where(at_mean, 1.0, total))
        return self._to_output(fraction.clamp(0.0, 1.0), X)


class DualNoveltyMixin(NoveltyMixin):
    """Novelty through kernel values (:class:`~kppca.DualPPCA`)."""

    def _outside_and_total(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        values, vectors = self._full_eigen()
        K_x = self._gram().raw_vectors(X)  # the training set's share of the evaluation done once
        kxx = self.kernel_.diag(X)
        N = self.n_samples_
        if self.centerer_.center:
            row_means = K_x.mean(1)
            grand = self.centerer_.grand_mean_
            total = kxx - 2 * row_means + grand
            scale = kxx.abs() + 2 * row_means.abs() + grand.abs()
        else:
            total, scale = kxx, kxx.abs()
        k_c = self.centerer_.transform(K_x)
        inside = ((k_c @ vectors) ** 2 / values).sum(1)
        # Worst-case rounding of the three kernel terms, plus the dropped eigenvalues (< N eps lam_1).
        floor = rounding_tolerance(K_x.dtype, N, scale + float(values[0]))
        return total - inside, total, floor


class PrimalNoveltyMixin(NoveltyMixin):
    """Novelty from explicit features (:class:`~kppca.PrimalPPCA`)."""

    def _outside_and_total(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        _, V = self._full_eigen()
        C = self.feature_map_.map(X) - self.mean_
        residual = C - (C @ V) @ V.T  # formed explicitly: no cancellation between |phi - m|^2 and its projection
        total = (C**2).sum(1)
        # Each entry of phi - m carries an error up to eps (|phi_j| + |m_j|): below this, x is at the mean.
        eps = torch.finfo(C.dtype).eps
        floor = C.shape[1] * eps**2 * 2 * ((C + self.mean_) ** 2).sum(1).add_((self.mean_**2).sum())
        return (residual**2).sum(1), total, floor
