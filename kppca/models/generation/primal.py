"""Generation hooks of :class:`~kppca.PrimalPPCA`: feature-space points as feature vectors.

With the identity feature map the features are the inputs and no pre-image is needed; with another
map the points go to the strategies through the map's induced kernel ``feature_map_.as_kernel()``.
A model without training inputs (``partial_fit``, a Dask fit) whose map has landmarks
(:meth:`~kppca.features.base.FeatureMap.reference_set`) builds its pre-images and latent mixture over
them (and the rows kept with them, ``_latent_extra``) instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..._linalg import block_rows
from ..._validation import numpy_rng
from ...kernels import KernelCenterer
from ...preimage import FeaturePoints, TrainingContext
from ...preimage.landmark_context import LandmarkContext
from ...preimage.strategies import Preimage
from .._streaming import LATENT_SAMPLE
from .base import GenerationMixin

__all__ = ["PrimalGenerationMixin"]


class PrimalGenerationMixin(GenerationMixin):
    """Generation for :class:`~kppca.PrimalPPCA` (see :mod:`kppca.models.generation`)."""

    def reconstruct_features(self, X: Any) -> Any:
        """MAP reconstruction in feature space, ``W h_MAP + m``, shape (M, d) (:meth:`reconstruct` maps it to inputs).

        Parameters
        ----------
        X : array-like of shape (M, D)
        """
        Xt = self._validate_new_input(X, method="reconstruct_features")
        return self._to_output(self._reconstruction_points(Xt), X)

    # ------------------------------------------------------------------ landmarks (no training inputs)
    def _uses_landmarks(self) -> bool:
        """True for a fitted model without training inputs whose feature map has landmarks."""
        if "X_fit_" in self.__dict__ or "feature_map_" not in self.__dict__:
            return False
        return self.feature_map_.reference_set() is not None

    def _has_training_codes(self) -> bool:
        return "X_fit_" in self.__dict__ or self._uses_landmarks()

    def _keep_latent_sample(self, fmap: Any, rows: torch.Tensor, y: Any) -> Any:
        """Keep ``_latent_extra``, up to ``LATENT_SAMPLE - m`` uniform rows besides the ``m`` landmarks ``fmap`` chose
        from ``rows``, for the latent mixture; the labels of both (None unless ``y`` is one label per row)."""
        idx = getattr(fmap, "landmark_indices_", None)
        if idx is None or fmap.reference_set() is None:
            return None
        seed = self.random_state if self.random_state is not None else getattr(fmap, "random_state", None)
        idx = idx.numpy()
        others = np.setdiff1d(np.arange(rows.shape[0]), idx)
        others = others[numpy_rng(seed).permutation(len(others))][: max(0, LATENT_SAMPLE - len(idx))]
        extra = rows[torch.as_tensor(others, dtype=torch.int64, device=rows.device)].clone()
        if len(extra):
            self._latent_extra = extra
        labels = None if y is None else np.asarray(y)
        if labels is not None and (labels.ndim != 1 or labels.shape[0] != rows.shape[0]):
            return None
        return None if labels is None else np.concatenate([labels[idx], labels[others]])

    def _training_coordinates(self) -> torch.Tensor:
        """Principal coordinates (n, q) of the training inputs, or of the landmarks and ``_latent_extra``."""
        if not self._uses_landmarks():
            return self._principal_coordinates(self.X_fit_)
        inputs = self._landmark_inputs()
        extra = self.__dict__.get("_latent_extra")
        if extra is not None:
            inputs = torch.cat([inputs, extra.to(inputs.device, inputs.dtype)])
        return self._principal_coordinates(inputs)

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

    # ------------------------------------------------------------------ hooks (points are feature vectors)
    def _training_context(self) -> TrainingContext:
        """The context over the training points, or over the landmarks when no inputs are kept."""
        if self._uses_landmarks():
            Phi_c, _ = self._landmark_features()
            return LandmarkContext.from_features(
                self._landmark_inputs(), Phi_c + self.mean_, self.mean_, self.feature_map_.as_kernel(),
                bool(self.center),
            )
        # The feature map's induced kernel K = Phi Phi^T.
        Phi_c = self._centered_train_features()
        m = self.mean_
        centerer = KernelCenterer(bool(self.center))
        centerer.column_means_ = Phi_c @ m + m @ m  # K 1/N
        centerer.grand_mean_ = m @ m
        return TrainingContext(self.X_fit_, self.feature_map_.as_kernel(), centerer, (Phi_c**2).sum(1))

    def _gen_cache(self) -> dict:
        if not self._has_training_codes():
            raise ValueError(
                f"this {type(self).__name__} was fitted incrementally (partial_fit) or from a Dask array and keeps "
                f"no training inputs, which a pre-image through its feature map {type(self.feature_map_).__name__} "
                "needs (sample, inverse_transform, reconstruct, latent_traversal). Feature-space methods work: "
                "sample_features, reconstruct_features, transform, score_samples, novelty_score. For inputs, refit "
                "with fit(X) on in-memory data (the identity feature map needs no pre-image)."
            )
        return super()._gen_cache()

    def _latent_points(self, h: torch.Tensor) -> torch.Tensor:
        return h @ self.W_.T + self.mean_

    def _marginal_points(self, n: int, generator: torch.Generator, factor: str) -> torch.Tensor:
        if factor != "fast":
            raise ValueError(f"factor={factor!r}: the primal model draws its features one way only; use 'fast'.")
        return self._draw_features(n, generator)

    def _add_noise(self, points: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        # phi | h ~ N(W h + m, sigma2 I) on m + H_E.
        _, V = self._full_eigen()
        a = torch.randn((points.shape[0], V.shape[1]), generator=generator, dtype=self._dtype, device=self._device)
        return torch.addmm(points, a, V.T, alpha=self.sigma2_**0.5)

    def _reconstruction_points(self, X: torch.Tensor) -> torch.Tensor:
        return self._latent_points(self._principal_coordinates(X) * self._gain)

    def _centered_train_features(self) -> torch.Tensor:
        return self._cached("Phi_c", lambda: self.feature_map_.map(self.X_fit_) - self.mean_)

    def _points_to_inputs(
        self, psi: torch.Tensor, strategy: Preimage, candidates: torch.Tensor | None = None, sampled: bool = False
    ) -> torch.Tensor:
        """Inputs for feature vectors ``psi`` (M, d) in ``m + H_E``, over the training points or the landmarks."""
        from ...features.base import Identity

        if isinstance(self.feature_map_, Identity):
            return psi
        if self._uses_landmarks():
            Phi_c, C = self._landmark_features()
            alpha = psi @ C.T  # psi = phi(L)^T alpha
            if candidates is not None:  # over the latent sample [landmarks; _latent_extra]: the landmarks' columns
                candidates = candidates[:, : Phi_c.shape[0]]
            rows = block_rows(self.batch_size, Phi_c.shape[0], self._dtype)
        else:
            lam, V = self._full_eigen()
            Phi_c = self._centered_train_features()
            y = (psi - self.mean_) @ V  # coordinates along the principal directions
            PV = Phi_c @ V  # (N, r) = E diag(sqrt(lam))
            alpha = (y / lam) @ PV.T  # psi - m = Phi_c^T alpha
            rows = self._block_rows()

        def coordinates(n_coordinates: Any) -> tuple[torch.Tensor, torch.Tensor, Any]:
            p, which = self._learned_dimension(n_coordinates)
            Vp = self.components_.T[:, :p] if which == "top" else self._full_eigen()[1][:, :p]
            return Phi_c @ Vp, (psi - self.mean_) @ Vp, (p, which)

        points = FeaturePoints((psi - self.mean_) @ Phi_c.T, alpha, coordinates, candidates, sampled)
        return strategy(points, self.preimage_context(), self._gen_cache(), block_rows=rows)
