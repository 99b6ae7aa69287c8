"""Generation hooks of :class:`~kppca.PrimalPPCA`: feature-space points as feature vectors.

With the identity feature map the features are the inputs and no pre-image is needed; with another
map the points go to the strategies through the map's induced kernel ``feature_map_.as_kernel()``.
"""

from __future__ import annotations

from typing import Any

import torch

from ...kernels import KernelCenterer
from ...preimage import FeaturePoints, TrainingContext
from ...preimage.strategies import Preimage
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

    # ------------------------------------------------------------------ hooks (points are feature vectors)
    def _training_context(self) -> TrainingContext:
        # The feature map's induced kernel K = Phi Phi^T.
        Phi_c = self._centered_train_features()
        m = self.mean_
        centerer = KernelCenterer(bool(self.center))
        centerer.column_means_ = Phi_c @ m + m @ m  # K 1/N
        centerer.grand_mean_ = m @ m
        return TrainingContext(self.X_fit_, self.feature_map_.as_kernel(), centerer, (Phi_c**2).sum(1))

    def _gen_cache(self) -> dict:
        # Every pre-image needs the training inputs (or landmarks); a model fitted from statistics has none.
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
        """Inputs for feature vectors ``psi`` (M, d) in ``m + H_E``."""
        from ...features.base import Identity

        if isinstance(self.feature_map_, Identity):
            return psi
        lam, V = self._full_eigen()
        Phi_c = self._centered_train_features()
        y = (psi - self.mean_) @ V  # coordinates along the principal directions
        PV = Phi_c @ V  # (N, r) = E diag(sqrt(lam))
        alpha = (y / lam) @ PV.T  # psi - m = Phi_c^T alpha
        return self._feature_preimage(psi, Phi_c, alpha, strategy, candidates, sampled, self._block_rows())

    def _feature_preimage(
        self, psi: torch.Tensor, Phi_c: torch.Tensor, alpha: torch.Tensor, strategy: Preimage,
        candidates: torch.Tensor | None, sampled: bool, block_rows: int,
    ) -> torch.Tensor:
        """``strategy`` on ``psi`` (M, d) over n points (training or landmarks) of centered features ``Phi_c`` (n, d).

        ``alpha`` (M, n) is the expansion of ``psi`` on those points.
        """
        def coordinates(n_coordinates: Any) -> tuple[torch.Tensor, torch.Tensor, Any]:
            p, which = self._learned_dimension(n_coordinates)
            Vp = self.components_.T[:, :p] if which == "top" else self._full_eigen()[1][:, :p]
            return Phi_c @ Vp, (psi - self.mean_) @ Vp, (p, which)

        points = FeaturePoints((psi - self.mean_) @ Phi_c.T, alpha, coordinates, candidates, sampled)
        return strategy(points, self.preimage_context(), self._gen_cache(), block_rows=block_rows)
