"""Generation hooks of the two models: how each represents a feature-space point ``psi``.

:class:`~kppca.PrimalPPCA` holds the feature vectors themselves. With the identity feature map the
features are the inputs and no pre-image is needed; with another map the points go to the strategies
through the map's induced kernel ``feature_map_.as_kernel()``, or over its landmarks (docs/architecture.md).

:class:`~kppca.DualPPCA` holds its centered kernel vector and dual coefficients: ``k_c = Phi_c^T (psi - m)``
and ``psi - m = Phi_c alpha``; uncentered models read ``K``, ``Phi``, ``0`` for ``K_c``, ``Phi_c``, ``m``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..._cache import LazyCache
from ..._linalg import block_rows
from ..._progress import tqdm
from ..._validation import ArrayLike, as_tensor, numpy_rng
from ...kernels import KernelCenterer
from ...kernels.gram_factors import GramFactor
from ...preimage import FeaturePoints, TrainingContext
from ...preimage.context import Factored, LandmarkContext
from ...preimage.strategies import Preimage, make_preimage
from .. import _streaming
from .base import GenerationMixin

__all__ = ["PrimalGenerationMixin", "DualGenerationMixin"]


class PrimalGenerationMixin(GenerationMixin[torch.Tensor]):
    """Generation for :class:`~kppca.PrimalPPCA` (see :mod:`kppca.models.generation`)."""

    def reconstruct_features(self, X: Any) -> Any:
        """MAP reconstruction in feature space, ``W h_MAP + m``, shape (M, d) (:meth:`reconstruct` maps it to inputs).

        Parameters
        ----------
        X : array-like of shape (M, D)
        """
        Xt = self._validate_new_input(X, method="reconstruct_features")
        return self._to_output(self._reconstruction_points(Xt), X)

    def _uses_landmarks(self) -> bool:
        """True for a fitted model without training inputs whose feature map has landmarks."""
        if self._has_state("X_fit_") or not self._has_state("feature_map_"):
            return False
        return self.feature_map_.reference_set() is not None

    def _has_training_codes(self) -> bool:
        return self._has_state("X_fit_") or self._uses_landmarks()

    def _keep_latent_sample(self, fmap: Any, rows: torch.Tensor, y: Any) -> Any:
        """Keep ``_latent_extra``, up to ``LATENT_SAMPLE - m`` uniform rows besides the ``m`` landmarks ``fmap`` chose
        from ``rows``, for the latent mixture and the pre-images; the labels of both (None unless ``y`` is one label
        per row)."""
        idx = getattr(fmap, "landmark_indices_", None)
        if idx is None or fmap.reference_set() is None:
            return None
        seed = self.random_state if self.random_state is not None else getattr(fmap, "random_state", None)
        idx = idx.numpy()
        others = np.setdiff1d(np.arange(rows.shape[0]), idx)
        others = others[numpy_rng(seed).permutation(len(others))][: max(0, _streaming.LATENT_SAMPLE - len(idx))]
        extra = rows[torch.as_tensor(others, dtype=torch.int64, device=rows.device)].clone()
        if len(extra):
            self._latent_extra = extra
        labels = None if y is None else np.asarray(y)
        if labels is not None and (labels.ndim != 1 or labels.shape[0] != rows.shape[0]):
            return None
        return None if labels is None else np.concatenate([labels[idx], labels[others]])

    def _training_coordinates(self) -> torch.Tensor:
        """Principal coordinates (n, q) of the training inputs, or of the kept rows (landmarks, ``_latent_extra``)."""
        if not self._uses_landmarks():
            from ...features.base import Identity

            if isinstance(self.feature_map_, Identity):  # no pre-image reads phi(X): cache no copy of X
                return self._principal_coordinates(self.X_fit_)
            # The cached phi(X) - m of the pre-images and context: the same operations as
            # _principal_coordinates(X_fit_), without a second map of the training set.
            return self._centered_train_features() @ self.components_.T
        # The kept rows' features are the cached ones the context and pre-images use (one map per fit).
        Phi_c, _ = self._landmark_features()
        return Phi_c @ self.components_.T

    def _landmark_stage(self, what: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, named on a tqdm line while it runs when ``progress`` is on (see ``PrimalPPCA``)."""
        if not getattr(self, "progress", False):  # getattr: a model pickled before the parameter existed
            return compute()
        with tqdm(total=1, desc=f"{type(self).__name__}: {what}", leave=False, bar_format="{desc} [{elapsed}]") as bar:
            out = compute()
            bar.update(1)
        return out

    def _latent_mixture(self, label_index: int | None) -> Any:
        if not self._uses_landmarks() or ("latent-mixture", label_index) in self._cache:
            return super()._latent_mixture(label_index)
        fit = super()._latent_mixture
        return self._landmark_stage("latent mixture", lambda: fit(label_index))

    def _landmark_inputs(self) -> torch.Tensor:
        """The rows a model without training inputs keeps, (n, D): its ``m`` landmarks, then ``_latent_extra``."""
        landmarks, _ = self.feature_map_.reference_set()
        extra = getattr(self, "_latent_extra", None)
        rows = landmarks if extra is None else torch.cat([landmarks.to(extra.device, extra.dtype), extra])
        return rows.to(self._device, self._dtype)

    def _landmark_features(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``phi(S) - m`` (n, d) of the kept rows ``S = [L; extra]``, and ``C`` (m, d) with ``psi = phi(L)^T C psi``.

        The one map of the kept rows, cached per fit: the latent codes, the pre-image context and the pre-images
        all read it.
        """
        def compute() -> tuple[torch.Tensor, torch.Tensor]:
            _, C = self.feature_map_.reference_set()
            S = self._landmark_inputs()
            Phi_c = self._landmark_stage(f"mapping {len(S)} kept rows (landmarks first)",
                                         lambda: self.feature_map_.map(S) - self.mean_)
            return Phi_c, C.to(self._device, self._dtype)

        return self._cached("landmark-features", compute)

    def _training_context(self) -> TrainingContext:
        """The context over the training points, or over the kept rows (landmarks first) when no inputs are kept."""
        if self._uses_landmarks():
            Phi_c, _ = self._landmark_features()
            return self._landmark_stage("the kept rows' context", lambda: LandmarkContext.from_features(
                self._landmark_inputs(), Phi_c + self.mean_, self.mean_, self.feature_map_.as_kernel(),
                bool(self.center),
            ))
        # The feature map's induced kernel K = Phi Phi^T.
        Phi_c = self._centered_train_features()
        m = self.mean_
        centerer = KernelCenterer(bool(self.center)).set_statistics_(Phi_c @ m + m @ m, m @ m)  # K 1/N, 1^T K 1/N^2
        return TrainingContext(self.X_fit_, self.feature_map_.as_kernel(), centerer, (Phi_c**2).sum(1))

    def _gen_cache(self) -> LazyCache:
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
            beta = psi @ C.T  # psi = phi(L)^T beta over the landmarks; the other kept rows' coefficients are 0
            alpha = torch.cat([beta, beta.new_zeros(beta.shape[0], Phi_c.shape[0] - beta.shape[1])], 1)
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


class DualGenerationMixin(GenerationMixin[FeaturePoints]):
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
        if self._gram_factor().spans_complement_of_ones:
            # K positive definite: range(K_c) is the complement of 1, the projection a centering.
            k_c = k_c - k_c.mean(1, keepdim=True) if self.center else k_c
        else:
            k_c = self._gram().times_matrix(alpha)  # the projection on range(K_c) that alpha represents
        out = self._points_to_inputs(self._points(k_c, alpha), strategy)
        return self._to_output(out[0] if single else out, K_c_rows)

    def _gram_factor(self) -> GramFactor:
        """The square root of ``K_c`` that sampling and solves use: the eigenpairs after a dense fit, else Cholesky.

        It depends on the fit alone; the one consumer of the ``N x N`` buffer (docs/architecture.md).
        """
        def factor() -> GramFactor:
            gram = self._gram()
            if self.eigen_solver_ == "dense":
                return gram.eigen_factor()
            if gram.has_matrix:
                make_preimage(None).prepare(self.preimage_context(), self._gen_cache(), sampled=True)
            return gram.cholesky()

        return self._cache.get("gram-factor", factor)

    def _training_context(self) -> TrainingContext:
        c = self.centerer_
        diag = self.kernel_.diag(self.X_fit_)
        if c.center:
            diag = diag - 2 * c.column_means_ + c.grand_mean_
        return TrainingContext(self.X_fit_, self.kernel_, c, diag, self._gram())

    def _points(self, k_c: torch.Tensor, alpha: torch.Tensor | Factored) -> FeaturePoints:
        def coordinates(n_coordinates: Any) -> tuple[torch.Tensor, torch.Tensor, Any]:
            """Principal coordinates: training ``E_p sqrt(lam_p)`` and new ``k_c E_p / sqrt(lam_p)``."""
            p, basis = self._learned_dimension(n_coordinates)
            lam, E = (self.eigenvalues_, self.eigenvectors_) if basis == "top" else self._full_eigen()
            root, E = lam[:p].sqrt(), E[:, :p]
            return E * root, (k_c @ E) / root, (p, basis)

        return FeaturePoints(k_c, alpha, coordinates)

    def _latent_points(self, h: torch.Tensor) -> FeaturePoints:
        # k_c = K_c A h = E_q diag(lam a) h and psi - m = Phi_c A h, so alpha = A h.
        a = self._a_scale
        E = self.eigenvectors_
        return self._points((h * (self.eigenvalues_ * a)) @ E.T, Factored(h * a, E))

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
        return self._gram_factor().width

    def _noise_kernel_vectors(self, a: torch.Tensor) -> torch.Tensor:
        """``sigma a F^T`` (n, N) for draws ``a`` (n, r'), without forming ``F`` (partial fits)."""
        return self._gram_factor().apply(a).mul_(self.sigma2_**0.5)

    def _reconstruction_points(self, X: torch.Tensor) -> FeaturePoints:
        coef = self._gram().project(X, self.eigenvectors_) * self._shrinkage  # E_q^T (k_c)_MAP
        E, lam = self.eigenvectors_, self.eigenvalues_
        return self._points(coef @ E.T, (coef / lam) @ E.T)

    def _points_to_inputs(
        self, points: FeaturePoints, strategy: Preimage, candidates: torch.Tensor | None = None, sampled: bool = False
    ) -> torch.Tensor:
        points = dataclasses.replace(points, candidates=candidates, sampled=sampled)
        return strategy(points, self.preimage_context(), self._gen_cache(), block_rows=self._block_rows())

    def _dual_coefficients(self, k_c: torch.Tensor) -> torch.Tensor:
        """``alpha`` with ``K_c alpha = k_c`` for a batch (M, N); the route depends only on the fit."""
        return self._gram_factor().solve(k_c)
