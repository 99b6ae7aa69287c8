"""A pre-image context over landmarks: the training context of a model that keeps no training inputs.

A primal model fitted blockwise (``partial_fit``, a Dask array) keeps its feature mean
``m``, its principal directions and a feature map whose *reference set* (the Nyström
landmarks ``L``) spans the feature space: ``psi = phi(L)^T beta`` for every feature
vector ``psi``, with ``beta = C psi`` (:meth:`~kppca.features.base.FeatureMap.reference_set`).
The pre-image strategies then work over the landmarks exactly as over training points,
with the approximate kernel ``phi(x)^T phi(z)``.

The model's mean ``m`` is the mean over *all* the data, not over the landmarks, so it need
not lie in the affine hull of ``phi(L)``; then some ``psi - m`` have no expansion
``psi - m = sum_j alpha_j (phi(l_j) - m)`` (the dual coefficients of
:class:`~kppca.preimage.TrainingContext`). A :class:`LandmarkContext` therefore carries the
*uncentered* expansion ``beta`` (``psi = sum_j beta_j phi(l_j)``, which always exists) in
the ``alpha`` slot of :class:`~kppca.preimage.FeaturePoints`, and computes the two
quantities the strategies read from it exactly:

* ``<m, psi> = sum_j beta_j <phi(l_j), m>`` (:meth:`LandmarkContext.row_means`), hence the
  raw kernel weights ``<phi(l_j), psi>``, and
* ``|psi - m|^2 = sum_j beta_j <phi(l_j), psi> - 2 <m, psi> + |m|^2``
  (:meth:`LandmarkContext.sq_distances`).

The centered kernel vectors ``k_c = (phi(L) - m)(psi - m)`` keep their meaning. The
fixed-point iteration, which reads ``alpha`` as centered dual coefficients of an RBF
kernel, never applies: the context's kernel is the feature map's induced kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..kernels import KernelCenterer
from .context import TrainingContext

__all__ = ["LandmarkContext"]


@dataclass(frozen=True, eq=False)
class LandmarkContext(TrainingContext):
    """A :class:`~kppca.preimage.TrainingContext` over landmarks; ``alpha`` is the uncentered expansion ``beta``.

    Build it with :meth:`from_features`. ``X`` holds the landmarks, ``kernel`` the feature
    map's induced kernel, ``centerer.column_means_ = phi(L) m`` and ``grand_mean_ = |m|^2``
    (``m`` the model's feature mean), ``diag_centered = |phi(l_j) - m|^2`` and
    ``landmark_gram = phi(L) phi(L)^T``, the raw Gram matrix of the landmarks (m, m), small enough to keep.
    """

    landmark_gram: torch.Tensor | None = None

    @classmethod
    def from_features(cls, landmarks: torch.Tensor, features: torch.Tensor, mean: torch.Tensor, kernel,
                      center: bool = True) -> "LandmarkContext":
        """The context of landmarks ``L`` (n, D) with features ``phi(L)`` (n, d) and the model's mean ``m`` (d,)."""
        m = mean if center else torch.zeros_like(mean)
        centerer = KernelCenterer(bool(center))
        centerer.column_means_ = features @ m
        centerer.grand_mean_ = m @ m
        centered = features - m
        # The m x m Gram matrix of the landmarks is small: kept, so that training Gram rows (hub
        # scores) are read, not recomputed through the feature map.
        return cls(landmarks, kernel, centerer, (centered**2).sum(1), landmark_gram=features @ features.T)

    def gram_rows(self, start: int, stop: int) -> torch.Tensor:
        """Raw Gram rows ``phi(L)[start:stop] phi(L)^T`` of the landmarks (stop - start, m)."""
        if self.landmark_gram is None:
            return super().gram_rows(start, stop)
        return self.landmark_gram[start:stop]

    def row_means(self, alpha: torch.Tensor) -> torch.Tensor:
        """``<m, psi> = beta^T phi(L) m`` for ``psi = phi(L)^T beta`` (``alpha`` holds ``beta``), shape (M,)."""
        if not self.center:
            return alpha.new_zeros(alpha.shape[0])
        return alpha @ self.centerer.column_means_

    def sq_distances(self, k_c: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
        """``|psi - phi(l_j)|^2`` (M, n) from ``k_c`` and the uncentered expansion ``beta`` (in ``alpha``), >= 0."""
        raw = self.raw_weights(k_c, alpha)  # <phi(l_j), psi>
        sq_norms = (alpha * raw).sum(1)  # |psi|^2 = beta^T phi(L) psi
        if self.center:
            sq_norms = sq_norms - 2 * self.row_means(alpha) + self.centerer.grand_mean_
        return (sq_norms.clamp(min=0.0)[:, None] - 2 * k_c + self.diag_centered).clamp(min=0.0)
