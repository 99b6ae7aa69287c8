"""Primal probabilistic PCA on explicit features ``phi(x)``."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import torch

from .._linalg.threads import compute_section
from .._linalg import (
    centered_rows,
    check_gram_scale,
    eigh_descending,
    orthonormalize_columns,
    scatter_rounding_scale,
    solve_spectrum,
)
from .._param_validation import Integral, Interval, check_scalar, fit_context
from .._validation import ArrayLike, check_feature_names, numpy_rng, torch_generator
from ..features.base import FeatureMap, Identity
from ..io import register
from ._base import BasePPCA
from ._state import PrimalState
from ._streaming import (
    ScatterStats,
    check_streaming_signature,
    dask_map_sample,
    dask_rows,
    dask_stats,
    is_dask_collection,
    streaming_signature,
)
from .generation.hooks import PrimalGenerationMixin

if TYPE_CHECKING:  # Pyro (under kppca.distributions) is imported on first use
    from ..distributions import DegenerateMultivariateNormal


@register
class PrimalPPCA(PrimalGenerationMixin, BasePPCA):
    r"""Probabilistic PCA in the primal: ``phi = W h + m + zeta`` with explicit features.

    Tipping and Bishop's solution ``W = V_q diag(sqrt(lam/N - sigma2))`` on ``H_E = span{phi_i - m}``,
    with ``lam_p`` the eigenvalues of the scatter of the centered features; with the identity feature
    map this is classical PPCA.

    Parameters
    ----------
    n_components : int, float in (0, 1), "mle" or None, default None
        As in :class:`~kppca.DualPPCA`.
    sigma2 : float, optional
    feature_map : FeatureMap or None, default None (identity)
        A fitted map is used as is (copied), so models can share the same random features; an unfitted
        one is fitted on ``X``.
    center : bool, default True
    eigen_solver : {"auto", "dense", "partial"}, default "auto"
        The eigen-problem is the ``d x d`` scatter when ``d <= N``, else the ``N x N`` Gram matrix.
    random_state, dtype, device, batch_size
        As in :class:`~kppca.DualPPCA` (``batch_size`` bounds the blocks of the pre-images).
    progress : bool, default False
        Name on a tqdm line each slow first step of a landmark model's generation (mapping the kept rows,
        the latent mixture, their context: seconds for thousands of rows, once per fit).

    Attributes
    ----------
    W_ : Tensor of shape (d, q)
    mean_ : Tensor of shape (d,)
    components_ : Tensor of shape (q, d)
        Orthonormal principal directions ``V_q^T``.
    n_components_, sigma2_, rank_, eigenvalues_, total_variance_,
    explained_variance_, explained_variance_ratio_
        As in :class:`~kppca.DualPPCA` (the eigenvalues are the same).
    feature_map_ : FeatureMap
    X_fit_ : Tensor of shape (N, D)
        The training inputs, after an in-memory ``fit`` only (:meth:`partial_fit` and a Dask fit keep
        ``O(d^2)`` feature statistics instead and, with a landmark map, generate from its landmarks and a
        uniform sample of further rows: ``kppca.models._streaming.LATENT_SAMPLE`` rows in all).
    sample_classes_ : ndarray of shape (n_classes,)
        The class labels for ``sample(n, y=...)``, when ``fit`` was given ``y`` (after
        ``partial_fit`` or a Dask fit: the labels of the rows kept with the feature map's landmarks).
    """

    def __init__(
        self,
        n_components: int | float | str | None = None,
        *,
        sigma2: float | None = None,
        feature_map: FeatureMap | None = None,
        center: bool = True,
        eigen_solver: str = "auto",
        random_state: Any = None,
        dtype: torch.dtype | str | None = None,
        device: torch.device | str | None = None,
        batch_size: int | None = None,
        progress: bool = False,
    ):
        self._store_params(locals())

    _parameter_constraints = {**BasePPCA._parameter_constraints, "feature_map": [FeatureMap, None],
                              "progress": ["boolean"]}
    #: The fitted state (``d`` is the feature dimension).
    _state_type = PrimalState

    @fit_context
    @compute_section
    def fit(self, X: ArrayLike, y: Any = None) -> "PrimalPPCA":
        """Fit the ML model to ``X`` of shape (N, D). Returns ``self``.

        ``X`` may be a Dask array (the ``dask`` extra): the feature statistics are then computed blockwise
        on Dask's current scheduler and merged exactly; an unfitted ``Nystroem`` map draws its landmarks
        uniformly from all blocks, any other unfitted map is fitted on the first block. ``y`` (optional):
        class labels, kept only for ``sample(n, y=label)``; any other target is ignored. Any previous fit
        is discarded; a failed fit leaves the model unchanged.
        """
        if is_dask_collection(X):
            return self._fit_dask(X, y)
        X, _ = self._validate_fit_input(X)
        fmap = self._fitted_feature_map(X)
        Phi = fmap.map(X)
        N, d = Phi.shape
        if d <= N:
            # The float64 d x d statistics, as partial_fit and the Dask fit.
            self._fit_from_stats(ScatterStats.from_batch(Phi, bool(self.center)))
        else:
            # Fewer points than features: the N x N Gram matrix has the same non-zero spectrum.
            Phi_c, mean, raw_scale = centered_rows(Phi, bool(self.center))
            self._fit_spectrum(mean, N, raw_scale, float((Phi_c * Phi_c).sum()), Phi_c=Phi_c)
        self.X_fit_ = X
        self._remember_labels(y, N)
        return self

    @fit_context
    @compute_section
    def partial_fit(self, X: ArrayLike, y: Any = None) -> "PrimalPPCA":
        """Add the batch ``X`` (n, D) to the model: the ML fit on every batch seen so far.

        The float64 feature statistics are merged exactly, so the model equals ``fit`` on the
        concatenation up to the order of the sums, in ``O(d^2)`` memory. The first call starts a new
        model and fits an unfitted ``feature_map`` on its batch (``Nystroem`` draws its landmarks
        from it); later calls add to the statistics (after ``fit`` too). ``n_components``, ``sigma2``,
        ``eigen_solver`` and ``random_state`` apply anew at every call. No ``X_fit_`` is kept: a
        landmark map generates from its landmarks, another non-identity map only in feature space.

        Parameters
        ----------
        X : array-like of shape (n, D)
            ``n >= 2`` for the first batch, ``n >= 1`` afterwards.
        y : array-like of shape (n,), optional
            Used on the first call only, when the feature map is fitted on this batch: the
            labels of its landmarks, for class-conditional sampling. Ignored otherwise.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            A width or feature names other than the first batch's, or a changed
            ``center``/``feature_map``/``dtype``/``device``.
        """
        if is_dask_collection(X):
            raise TypeError(
                "partial_fit takes in-memory batches (numpy arrays, tensors); for a Dask array call fit(X), which "
                "reduces its blocks on Dask's scheduler, or pass its blocks one by one: partial_fit(block.compute())."
            )
        stats = self._current_stats()
        if stats is None:
            X, _ = self._validate_fit_input(X)
            unfitted = self.feature_map is None or not hasattr(self.feature_map, "n_features_in_")
            fmap = self._fitted_feature_map(X)
            labels = self._keep_latent_sample(fmap, X, y) if unfitted else None
        else:
            check_streaming_signature(self)
            X = self._validate_new_input(X, method="partial_fit")
            labels = None  # a model without inputs keeps its landmarks' labels through later calls
            if not self._has_state("X_fit_") and self._has_state("sample_classes_"):
                labels = self.sample_classes_[self._label_index.cpu().numpy()]
        batch = ScatterStats.from_batch(self.feature_map_.map(X), bool(self.center))
        self._fit_stats(batch if stats is None else stats.merge(batch), labels)
        return self

    def _fitted_feature_map(self, X: torch.Tensor) -> FeatureMap:
        """A copy of ``feature_map`` (identity by default), fitted on ``X`` unless it is; sets ``feature_map_``."""
        fmap = copy.deepcopy(self.feature_map) if self.feature_map is not None else Identity()
        if not hasattr(fmap, "n_features_in_"):
            fmap.fit(X)
        elif fmap.n_features_in_ != X.shape[1]:
            raise ValueError(
                f"feature_map was fitted on {fmap.n_features_in_} features but X has {X.shape[1]}."
            )
        self.feature_map_ = fmap
        self._stream_params = streaming_signature(self)
        self._forget_state("_stream_stats", "_latent_extra")  # a new model: statistics start from this data
        return fmap

    def _fit_spectrum(
        self, mean: torch.Tensor, N: int, raw_scale: float, trace: float, *, scatter: torch.Tensor | None = None,
        Phi_c: torch.Tensor | None = None,
    ) -> None:
        """The fitted model from float64 statistics: the mean (d,) and the scatter (d, d) or centered features (N, d).

        The spectrum is computed in float64, so rank, trace and ``sigma2`` do not depend on the model's
        dtype. ``raw_scale = max_i |phi_i|^2`` and ``trace`` set the rounding level of the rank count.
        """
        # raw_scale also bounds later products: a value whose squares would overflow the model's dtype is refused.
        raw_scale = check_gram_scale(
            raw_scale, N, self._dtype, what="feature matrix phi(X) (its squared row norms)",
            advice="Check that `feature_map` is finite on X, rescale X (e.g. standardise it) or use dtype='float64'.",
        )
        scale = scatter_rounding_scale(raw_scale, trace, N)
        d = mean.shape[0]
        max_rank = min(d, N - int(self.center))
        solver = self._resolve_solver(d if scatter is not None else N)
        # Lanczos only: its start vector (a numpy Generator given as random_state is drawn from only then).
        partial = {"k": int(self.n_components), "random_state": numpy_rng(self.random_state)} if solver == "partial" \
            else {}
        if scatter is not None:
            spectrum = solve_spectrum(scatter, solver, what="feature scatter matrix", max_rank=max_rank, scale=scale,
                                      size=N, **partial)
            V = spectrum.vectors
        else:
            spectrum = solve_spectrum(Phi_c @ Phi_c.T, solver, what="feature Gram matrix", max_rank=max_rank,
                                      scale=scale, **partial)
            V = orthonormalize_columns(Phi_c.T @ spectrum.vectors / spectrum.values.sqrt())
        dtype = self._dtype
        spectrum.values, spectrum.vectors = spectrum.values.to(dtype), V.to(dtype)
        self.mean_ = mean.to(dtype)
        self._set_ml_estimates(spectrum, N)
        if spectrum.complete:  # what _full_eigen would compute
            self._cache.set("full_eigen", (spectrum.values, spectrum.vectors))
        q = self.n_components_
        self.components_ = spectrum.vectors[:, :q].T.clone()
        self.W_ = spectrum.vectors[:, :q] * torch.sqrt(self.eigenvalues_ / N - self.sigma2_)

    def _fit_from_stats(self, stats: ScatterStats) -> None:
        self._fit_spectrum(
            stats.mean.to(self._device), stats.count, stats.max_sq_norm, stats.trace,
            scatter=stats.scatter.to(self._device),
        )

    def _fit_stats(self, stats: ScatterStats, landmark_labels: Any = None) -> None:
        """Fit from statistics kept in place of the training inputs; labels of ``[landmarks; _latent_extra]``."""
        self._fit_from_stats(stats)
        self._stream_stats = stats.to_state()
        self._forget_state("X_fit_")
        ref = self.feature_map_.reference_set()
        if landmark_labels is None or ref is None:
            self._remember_labels(None, stats.count)
        else:
            extra = getattr(self, "_latent_extra", None)
            self._remember_labels(landmark_labels, ref[0].shape[0] + (0 if extra is None else extra.shape[0]))

    def _fit_dask(self, X: Any, y: Any = None) -> "PrimalPPCA":
        """``fit`` for a Dask array, inside ``fit``'s atomic context."""
        X = dask_rows(X)
        self._begin_fit(X)  # metadata only: a Dask array is not a tensor, outputs will be numpy
        check_feature_names(self, X, reset=True)
        self.n_features_in_ = int(X.shape[1])
        fmap = self.feature_map
        unfitted = fmap is None or not hasattr(fmap, "n_features_in_")
        sample, pool_labels = dask_map_sample(X, fmap, y, dtype=self._dtype, device=self._device)
        fmap = self._fitted_feature_map(sample)
        labels = self._keep_latent_sample(fmap, sample, pool_labels) if unfitted else None
        stats = dask_stats(X, fmap, dtype=self._dtype, device=self._device, center=bool(self.center))
        if stats.count < 2:
            raise ValueError(f"X has {stats.count} sample(s) while a minimum of 2 is required.")
        self._fit_stats(stats, labels)
        return self

    def _current_stats(self) -> ScatterStats | None:
        """The statistics of everything fitted so far (None for an unfitted model)."""
        if self._has_state("_stream_stats"):
            return ScatterStats.from_state(self._stream_stats)
        if self._has_state("X_fit_") and hasattr(self, "feature_map_"):
            return ScatterStats.from_batch(self.feature_map_.map(self.X_fit_), bool(self.center))
        return None

    def features(self, X: ArrayLike) -> Any:
        """``phi(X)`` (M, d) with the fitted feature map."""
        Xt = self._validate_new_input(X, method="features")  # first: the fitted check
        return self._to_output(self.feature_map_.map(Xt), X)

    def _centered_features(self, X: torch.Tensor) -> torch.Tensor:
        return self.feature_map_.map(X) - self.mean_

    def _principal_coordinates(self, X: torch.Tensor) -> torch.Tensor:
        return self._centered_features(X) @ self.components_.T

    def _subspace_coordinates(self, X: torch.Tensor) -> torch.Tensor:
        return self._centered_features(X) @ self._full_eigen()[1]

    def _full_eigen(self) -> tuple[torch.Tensor, torch.Tensor]:
        """All ``r`` eigenvalues and orthonormal directions ``V_r`` (d, r) spanning ``H_E`` (cached)."""
        def compute() -> tuple[torch.Tensor, torch.Tensor]:
            r = self.rank_
            if self.mean_.shape[0] <= self.n_samples_ or not self._has_state("X_fit_"):
                values, V = eigh_descending(self._current_stats().scatter.to(self._device))
                values, V = values[:r], V[:, :r]
            else:
                # d > N: the N x N Gram matrix of the centered features (no d x d scatter is formed).
                Phi_c, _, _ = centered_rows(self.feature_map_.map(self.X_fit_), bool(self.center))
                values, E = eigh_descending(Phi_c @ Phi_c.T)
                values = values[:r]
                V = orthonormalize_columns(Phi_c.T @ E[:, :r] / values.sqrt())
            return values.to(self._dtype).clone(), V.to(self._dtype).clone()

        return self._cache.get("full_eigen", compute)

    def _outside_and_total(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        _, V = self._full_eigen()
        C = self._centered_features(X)
        residual = C - (C @ V) @ V.T  # formed explicitly: no cancellation between |phi - m|^2 and its projection
        total = (C**2).sum(1)
        # Each entry of phi - m carries an error up to eps (|phi_j| + |m_j|): below this, x is at the mean.
        eps = torch.finfo(C.dtype).eps
        floor = C.shape[1] * eps**2 * 2 * ((C + self.mean_) ** 2).sum(1).add_((self.mean_**2).sum())
        return (residual**2).sum(1), total, floor

    def _subspace_distribution(self, loc: torch.Tensor, scales: torch.Tensor) -> DegenerateMultivariateNormal:
        from ..distributions import DegenerateMultivariateNormal

        _, V = self._full_eigen()
        return DegenerateMultivariateNormal(loc, basis=V, basis_scale=scales)

    def feature_conditional(self, h: ArrayLike) -> DegenerateMultivariateNormal:
        """``phi | h ~ N(W h + m, sigma2 I)`` on ``m + H_E``: batch shape (M,), event shape (d,)."""
        self._check_fitted("feature_conditional")
        h = self._latent(h)
        scales = torch.full((self.rank_,), self.sigma2_**0.5, dtype=self._dtype, device=self._device)
        return self._subspace_distribution(h @ self.W_.T + self.mean_, scales)

    def feature_marginal(self) -> DegenerateMultivariateNormal:
        """``phi ~ N(m, W W^T + sigma2 I)`` on ``m + H_E``: event shape (d,)."""
        self._check_fitted("feature_marginal")
        values, _ = self._full_eigen()
        q = self.n_components_
        variances = torch.cat([values[:q] / self.n_samples_, torch.full_like(values[q:], self.sigma2_)])
        return self._subspace_distribution(self.mean_, variances.sqrt())

    def sample_features(self, n: int, random_state: Any = None) -> Any:
        """Draw ``n`` feature vectors ``phi = W h + m + zeta`` from the marginal model, shape (n, d)."""
        self._check_fitted("sample_features")
        n = int(check_scalar(n, "n", [Interval(Integral, 1, None, closed="left")]))
        return self._to_output(self._draw_features(n, torch_generator(random_state, self._device)))

    def _draw_features(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """``n`` draws (n, d) of the marginal model, a tensor (behind :meth:`sample_features`)."""
        values, V = self._full_eigen()
        q = self.n_components_
        std = torch.cat([values[:q] / self.n_samples_, torch.full_like(values[q:], self.sigma2_)]).sqrt()
        a = torch.randn((int(n), std.shape[0]), generator=generator, dtype=self._dtype, device=self._device)
        return (a * std) @ V.T + self.mean_

    def get_covariance(self) -> torch.Tensor:
        """``W W^T + sigma2 I_d`` (d, d), the model covariance of ``phi`` (Tipping and Bishop)."""
        self._check_fitted("get_covariance")
        d = self.W_.shape[0]
        return self.W_ @ self.W_.T + self.sigma2_ * torch.eye(d, dtype=self._dtype, device=self._device)

    def get_precision(self) -> torch.Tensor:
        """The inverse of :meth:`get_covariance`, (d, d), by Woodbury."""
        self._check_fitted("get_precision")
        V, shrink = self.components_.T, self._shrinkage
        eye = torch.eye(V.shape[0], dtype=self._dtype, device=self._device)
        return (eye - (V * shrink) @ V.T) / self.sigma2_
