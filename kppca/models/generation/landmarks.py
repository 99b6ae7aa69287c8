"""Generation of :class:`~kppca.PrimalPPCA` without training inputs: pre-images over the feature map's landmarks.

A model fitted with ``partial_fit`` or on a Dask array keeps only feature statistics; when its map has
landmarks (:meth:`~kppca.features.base.FeatureMap.reference_set`), the strategies run unchanged on a
:class:`~kppca.preimage.landmark_context.LandmarkContext`, and the latent mixture is fitted on the codes
of the landmarks and of the rows kept with them (``_latent_extra``).
"""

from __future__ import annotations

from typing import Any

import torch

from ..._linalg import block_rows
from ..._validation import numpy_rng
from ...preimage import TrainingContext
from ...preimage.landmark_context import LandmarkContext
from ...preimage.strategies import Preimage
from .._streaming import latent_sample
from .primal import PrimalGenerationMixin

__all__ = ["LandmarkGenerationMixin"]


class LandmarkGenerationMixin(PrimalGenerationMixin):
    """:class:`PrimalGenerationMixin` that falls back to the feature map's landmarks when no inputs are kept."""

    def _uses_landmarks(self) -> bool:
        """True for a fitted model without training inputs whose feature map has landmarks."""
        if "X_fit_" in self.__dict__ or "feature_map_" not in self.__dict__:
            return False
        return self.feature_map_.reference_set() is not None

    def _has_training_codes(self) -> bool:
        return "X_fit_" in self.__dict__ or self._uses_landmarks()

    def _kept_landmark_labels(self) -> Any:
        """The landmark labels of a model without inputs (kept through later partial_fit calls)."""
        if "X_fit_" in self.__dict__ or "sample_classes_" not in self.__dict__:
            return None
        return self.sample_classes_[self._label_index.cpu().numpy()]

    def _keep_latent_sample(self, fmap: Any, rows: torch.Tensor, y: Any) -> Any:
        """Keep ``_latent_extra`` (uniform rows besides the landmarks, for the latent mixture); return their labels."""
        seed = self.random_state if self.random_state is not None else getattr(fmap, "random_state", None)
        extra, labels = latent_sample(fmap, rows, y, numpy_rng(seed))
        if extra is not None and len(extra):
            self._latent_extra = extra
        return labels

    def _training_coordinates(self) -> torch.Tensor:
        if self._uses_landmarks():
            inputs = self._landmark_inputs()
            extra = self.__dict__.get("_latent_extra")
            if extra is not None:
                inputs = torch.cat([inputs, extra.to(inputs.device, inputs.dtype)])
            return self._principal_coordinates(inputs)
        return super()._training_coordinates()

    def _landmark_inputs(self) -> torch.Tensor:
        landmarks, _ = self.feature_map_.reference_set()
        return landmarks.to(self._device, self._dtype)

    def _landmark_features(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``phi(L) - m`` (n, d) and ``C`` (n, d) with ``psi = phi(L)^T C psi``, cached per fit."""
        def compute() -> tuple[torch.Tensor, torch.Tensor]:
            _, C = self.feature_map_.reference_set()
            L = self._landmark_inputs()
            return self.feature_map_.map(L) - self.mean_, C.to(self._device, self._dtype)

        return self._cached("landmark-features", compute)

    def _training_context(self) -> TrainingContext:
        """The context over the training points, or over the landmarks when no inputs are kept."""
        if not self._uses_landmarks():
            return super()._training_context()
        Phi_c, _ = self._landmark_features()
        return LandmarkContext.from_features(
            self._landmark_inputs(), Phi_c + self.mean_, self.mean_, self.feature_map_.as_kernel(), bool(self.center)
        )

    def _points_to_inputs(
        self, psi: torch.Tensor, strategy: Preimage, candidates: torch.Tensor | None = None, sampled: bool = False
    ) -> torch.Tensor:
        if not self._uses_landmarks():
            return super()._points_to_inputs(psi, strategy, candidates, sampled)
        Phi_c, C = self._landmark_features()
        beta = psi @ C.T  # psi = phi(L)^T beta
        if candidates is not None:  # over the latent sample [landmarks; _latent_extra]: the landmarks' columns
            candidates = candidates[:, : Phi_c.shape[0]]
        rows = block_rows(self.batch_size, Phi_c.shape[0], self._dtype)
        return self._feature_preimage(psi, Phi_c, beta, strategy, candidates, sampled, rows)
