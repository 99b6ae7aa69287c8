"""Generation hooks of :class:`~kppca.DualPPCA`: feature-space points as kernel vectors.

A point ``psi`` is carried as its centered kernel vector ``k_c = Phi_c^T (psi - m)``
and its dual coefficients ``alpha`` (``psi - m = Phi_c alpha``): for latent codes
``alpha = A h``; for other vectors ``alpha = K_c^+ k_c``, from the full
eigendecomposition after a dense fit, and after a partial fit from the sampling
factor ``L = chol(K)`` of the raw Gram matrix (two triangular solves and a rank-one
correction for the centering, see ``_dual_coefficients``), or the full
eigendecomposition when ``K`` is numerically singular.

Uncentered models (``center=False``): ``K_c``, ``Phi_c`` and ``m`` read ``K``, ``Phi``
and ``0``.
"""

from __future__ import annotations

from typing import Any

import torch

from ..._validation import ArrayLike, as_tensor
from ...preimage import FeaturePoints, TrainingContext
from ...preimage.strategies import Preimage
from .base import GenerationMixin

__all__ = ["DualGenerationMixin"]


class DualGenerationMixin(GenerationMixin):
    """Generation for :class:`~kppca.DualPPCA` (see :mod:`kppca.models.generation`)."""

    def kernel_preimage(
        self, K_c_rows: ArrayLike, preimage: str | Preimage | None = None, **preimage_options: Any
    ) -> Any:
        """Inputs for arbitrary centered kernel vectors (e.g. draws of :meth:`kernel_conditional`).

        Each row is read as the point ``psi = m + Phi_c K_c^+ k_c`` (its projection on
        ``m + span{phi_i - m}``, exact for vectors in ``range(K_c)``).

        Parameters
        ----------
        K_c_rows : array-like of shape (M, N) or (N,)
        preimage, **preimage_options
            As in :meth:`sample`.

        Returns
        -------
        ndarray or Tensor of shape (M, D) (or (D,) for one vector), the type of ``K_c_rows``.
        """
        self._check_fitted("kernel_preimage")
        strategy = self._preimage_strategy(preimage, preimage_options)
        k_c = as_tensor(K_c_rows, "K_c_rows", ndim=(1, 2), dtype=self._dtype, device=self._device)
        single = k_c.ndim == 1
        k_c = k_c[None] if single else k_c
        if k_c.shape[1] != self.n_samples_:
            raise ValueError(
                f"K_c_rows has {k_c.shape[1]} columns but the model was fitted on {self.n_samples_} points."
            )
        alpha = self._dual_coefficients(k_c)
        if self._gram().range_is_complement_of_ones(self._sqrt_route):
            # K positive definite: range(K_c) is the complement of 1, the projection a centering.
            k_c = k_c - k_c.mean(1, keepdim=True) if self.center else k_c
        else:
            k_c = (self._centered_gram() @ alpha.T).T  # the projection on range(K_c) that alpha represents
        out = self._points_to_inputs(self._points(k_c, alpha), strategy)
        return self._to_output(out[0] if single else out, K_c_rows)

    def preimage_context(self) -> TrainingContext:
        """The :class:`~kppca.preimage.TrainingContext` of this model (cached), for pre-image strategies."""
        self._check_fitted("preimage_context")
        cache = self._gen_cache()
        if "context" not in cache:
            c = self.centerer_
            diag = self.kernel_.diag(self.X_fit_)
            if c.center:
                diag = diag - 2 * c.column_means_ + c.grand_mean_
            # K_c while the fit's matrix is alive (never rebuilt for this: a second N x N matrix); the
            # context forgets it when the Gram object reuses that memory (the Cholesky factor).
            gram = self._gram()
            context = TrainingContext(self.X_fit_, self.kernel_, c, diag, gram.peek_matrix())
            if context.gram_centered is not None:
                gram.on_release(context.release_gram)
            cache["context"] = context
        return cache["context"]

    # ------------------------------------------------------------------ hooks
    def _before_draw(self, strategy: Preimage) -> None:
        # Drawing may turn the cached K_c into the sampling factor: what the pre-image reads
        # from the Gram matrix (hub scores) is cheapest now.
        strategy.prepare(self.preimage_context(), self._gen_cache(), sampled=True)

    def _points(self, k_c: torch.Tensor, alpha: torch.Tensor) -> FeaturePoints:
        def coordinates(n_coordinates: Any) -> tuple[torch.Tensor, torch.Tensor, Any]:
            p, basis = self._learned_dimension(n_coordinates)
            train, new = self._coordinates_of(p, basis, k_c)
            return train, new, (p, basis)

        return FeaturePoints(k_c, alpha, coordinates)

    def _latent_points(self, h: torch.Tensor) -> FeaturePoints:
        # k_c = K_c A h = E_q diag(lam a) h and psi - m = Phi_c A h, so alpha = A h.
        a = torch.sqrt(1.0 / self.n_samples_ - self.sigma2_ / self.eigenvalues_)
        E = self.eigenvectors_
        return self._points((h * (self.eigenvalues_ * a)) @ E.T, (h * a) @ E.T)

    def _prior_points(self, n: int, random_state: Any, factor: str) -> FeaturePoints:
        k_c = torch.as_tensor(self.sample_kernel(n, random_state=random_state, factor=factor))
        k_c = k_c.to(dtype=self._dtype, device=self._device)
        return self._points(k_c, self._dual_coefficients(k_c))

    def _add_noise(self, points: FeaturePoints, generator: torch.Generator) -> FeaturePoints:
        # k_c | h ~ N(K_c A h, sigma2 K_c): add sigma L a with L L^T = K_c.
        a = torch.randn((len(points), self._noise_width()), generator=generator, dtype=self._dtype, device=self._device)
        k_c = self._noise_kernel_vectors(a).add_(points.k_c)
        return self._points(k_c, self._dual_coefficients(k_c))

    def _reconstruction_points(self, X: torch.Tensor) -> FeaturePoints:
        shrink = 1.0 - self.n_samples_ * self.sigma2_ / self.eigenvalues_
        coef = self._project(X, self.eigenvectors_) * shrink  # E_q^T (k_c)_MAP
        E, lam = self.eigenvectors_, self.eigenvalues_
        return self._points(coef @ E.T, (coef / lam) @ E.T)

    def _points_to_inputs(
        self, points: FeaturePoints, strategy: Preimage, candidates: torch.Tensor | None = None, sampled: bool = False
    ) -> torch.Tensor:
        if candidates is not None or sampled:
            points = FeaturePoints(points.k_c, points.alpha, points.coordinates, candidates, sampled)
        return strategy(points, self.preimage_context(), self._gen_cache(), block_rows=self._block_rows())

    # ------------------------------------------------------------------ internals
    def _coordinates_of(self, p: int, basis: str, k_c: torch.Tensor | None) -> tuple[torch.Tensor, Any]:
        """Principal coordinates: training ``E_p sqrt(lam_p)`` and new ``k_c E_p / sqrt(lam_p)``."""
        if basis == "top":
            lam, E = self.eigenvalues_[:p], self.eigenvectors_[:, :p]
        else:
            values, vectors = self._full_eigen()
            lam, E = values[:p], vectors[:, :p]
        root = lam.sqrt()
        return E * root, (None if k_c is None else (k_c @ E) / root)

    def _dual_coefficients(self, k_c: torch.Tensor) -> torch.Tensor:
        """``alpha`` with ``K_c alpha = k_c`` for a batch (M, N) (:meth:`CenteredGram.solve`).

        After a partial fit, from the sampling factor ``L = chol(K)`` when ``K`` is positive
        definite; otherwise through the eigenbasis. The route depends only on the fit, so
        results do not change with what was cached since.
        """
        return self._gram().solve(k_c, self._sqrt_route)
