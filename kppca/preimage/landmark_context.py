"""A pre-image context over landmarks, for a primal model that keeps no training inputs.

The Nyström landmarks ``L`` span the feature space (:meth:`~kppca.features.base.FeatureMap.reference_set`),
so the strategies work over them as over training points. The model's mean need not lie in the affine hull
of ``phi(L)``: the ``alpha`` slot of :class:`~kppca.preimage.FeaturePoints` holds the uncentered expansion
``beta`` (``psi = phi(L)^T beta``), which always exists, rather than centered dual coefficients (the
derivation is in docs/numerics).
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

    Build it with :meth:`from_features`; ``landmark_gram = phi(L) phi(L)^T`` (m, m) is small enough to keep.
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
        return cls(landmarks, kernel, centerer, (centered**2).sum(1), landmark_gram=features @ features.T)

    def gram_rows(self, start: int, stop: int) -> torch.Tensor:
        """Raw Gram rows ``phi(L)[start:stop] phi(L)^T`` of the landmarks (stop - start, m)."""
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
