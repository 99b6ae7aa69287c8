"""Generation hooks of :class:`~kppca.DualPPCA`: a point ``psi`` as its centered kernel vector and dual coefficients.

``k_c = Phi_c^T (psi - m)`` and ``psi - m = Phi_c alpha``; uncentered models read ``K``, ``Phi``, ``0`` for ``K_c``,
``Phi_c``, ``m``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ..._validation import ArrayLike, as_tensor
from ...kernels.centered_gram import CenteredGram
from ...preimage import FeaturePoints, TrainingContext
from ...preimage.strategies import Preimage, make_preimage
from .base import GenerationMixin

__all__ = ["DualGenerationMixin"]


class DualGenerationMixin(GenerationMixin):
    """Generation for :class:`~kppca.DualPPCA` (see :mod:`kppca.models.generation`)."""

    def kernel_preimage(
        self, K_c_rows: ArrayLike, preimage: str | Preimage | None = None, **preimage_options: Any
    ) -> Any:
        """Inputs for arbitrary centered kernel vectors (e.g. draws of :meth:`kernel_conditional`).

        Each row is read as the point ``psi = m + Phi_c K_c^+ k_c``, exact for vectors in ``range(K_c)``.

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
        strategy = make_preimage(preimage, **preimage_options)
        k_c = as_tensor(K_c_rows, "K_c_rows", ndim=(1, 2), dtype=self._dtype, device=self._device)
        single = k_c.ndim == 1
        k_c = k_c[None] if single else k_c
        if k_c.shape[1] != self.n_samples_:
            raise ValueError(
                f"K_c_rows has {k_c.shape[1]} columns but the model was fitted on {self.n_samples_} points."
            )
        alpha = self._dual_coefficients(k_c)
        if self._factored_gram().range_is_complement_of_ones(self._sqrt_route):
            # K positive definite: range(K_c) is the complement of 1, the projection a centering.
            k_c = k_c - k_c.mean(1, keepdim=True) if self.center else k_c
        else:
            k_c = (self._gram().matrix @ alpha.T).T  # the projection on range(K_c) that alpha represents
        out = self._points_to_inputs(self._points(k_c, alpha), strategy)
        return self._to_output(out[0] if single else out, K_c_rows)

    def _factored_gram(self) -> CenteredGram:
        """The Gram object with the factor of the sampling route (``_sqrt_route``) computed, on first use.

        Before the Cholesky factor takes ``K_c``'s memory, the hub scores of the default pre-image are
        read from ``K_c`` (cached), so ``sample`` never pays a kernel pass for them.
        """
        gram = self._gram()
        if self._sqrt_route == "cholesky" and not gram.has_cholesky:
            if gram.has_matrix:
                make_preimage(None).prepare(self.preimage_context(), self._gen_cache(), sampled=True)
            gram.cholesky()
        return gram

    # ------------------------------------------------------------------ hooks
    def _training_context(self) -> TrainingContext:
        c = self.centerer_
        diag = self.kernel_.diag(self.X_fit_)
        if c.center:
            diag = diag - 2 * c.column_means_ + c.grand_mean_
        return TrainingContext(self.X_fit_, self.kernel_, c, diag, self._gram())

    def _points(self, k_c: torch.Tensor, alpha: torch.Tensor) -> FeaturePoints:
        def coordinates(n_coordinates: Any) -> tuple[torch.Tensor, torch.Tensor, Any]:
            """Principal coordinates: training ``E_p sqrt(lam_p)`` and new ``k_c E_p / sqrt(lam_p)``."""
            p, basis = self._learned_dimension(n_coordinates)
            lam, E = (self.eigenvalues_, self.eigenvectors_) if basis == "top" else self._full_eigen()
            root, E = lam[:p].sqrt(), E[:, :p]
            return E * root, (k_c @ E) / root, (p, basis)

        return FeaturePoints(k_c, alpha, coordinates)

    def _latent_points(self, h: torch.Tensor) -> FeaturePoints:
        # k_c = K_c A h = E_q diag(lam a) h and psi - m = Phi_c A h, so alpha = A h.
        a = torch.sqrt(1.0 / self.n_samples_ - self.sigma2_ / self.eigenvalues_)
        E = self.eigenvectors_
        return self._points((h * (self.eigenvalues_ * a)) @ E.T, (h * a) @ E.T)

    def _marginal_points(self, n: int, generator: torch.Generator, factor: str) -> FeaturePoints:
        k_c = self._draw_kernel(n, generator, factor)
        return self._points(k_c, self._dual_coefficients(k_c))

    def _add_noise(self, points: FeaturePoints, generator: torch.Generator) -> FeaturePoints:
        # k_c | h ~ N(K_c A h, sigma2 K_c): add sigma L a with L L^T = K_c.
        a = torch.randn((len(points), self._noise_width()), generator=generator, dtype=self._dtype, device=self._device)
        k_c = self._noise_kernel_vectors(a).add_(points.k_c)
        return self._points(k_c, self._dual_coefficients(k_c))

    def _noise_width(self) -> int:
        """Number of columns ``r'`` of the noise factor ``F`` (``F F^T = K_c``)."""
        return self._factored_gram().sqrt_width(self._sqrt_route)

    def _noise_kernel_vectors(self, a: torch.Tensor) -> torch.Tensor:
        """``sigma a F^T`` (n, N) for draws ``a`` (n, r'), without forming ``F`` (partial fits)."""
        return self._factored_gram().apply_sqrt(a, self._sqrt_route).mul_(self.sigma2_**0.5)

    def _reconstruction_points(self, X: torch.Tensor) -> FeaturePoints:
        shrink = 1.0 - self.n_samples_ * self.sigma2_ / self.eigenvalues_
        coef = self._gram().project(X, self.eigenvectors_) * shrink  # E_q^T (k_c)_MAP
        E, lam = self.eigenvectors_, self.eigenvalues_
        return self._points(coef @ E.T, (coef / lam) @ E.T)

    def _points_to_inputs(
        self, points: FeaturePoints, strategy: Preimage, candidates: torch.Tensor | None = None, sampled: bool = False
    ) -> torch.Tensor:
        points = dataclasses.replace(points, candidates=candidates, sampled=sampled)
        return strategy(points, self.preimage_context(), self._gen_cache(), block_rows=self._block_rows())

    def _dual_coefficients(self, k_c: torch.Tensor) -> torch.Tensor:
        """``alpha`` with ``K_c alpha = k_c`` for a batch (M, N); the route depends only on the fit."""
        return self._factored_gram().solve(k_c, self._sqrt_route)
