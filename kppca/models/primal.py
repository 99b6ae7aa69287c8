"""Primal probabilistic PCA on explicit features ``phi(x)``."""

from __future__ import annotations

import copy
from typing import Any

import torch

from .._linalg import check_gram_scale, eigh_descending, orthonormalize_columns, scatter_rounding_scale
from .._param_validation import fit_context
from .._validation import ArrayLike, check_count, torch_generator
from ..distributions import DegenerateMultivariateNormal
from ..features.base import FeatureMap, Identity
from ._base import BasePPCA
from ._novelty import PrimalNoveltyMixin
from .generation import PrimalGenerationMixin

_FEATURE_ADVICE = "Check that `feature_map` is finite on X, rescale X (e.g. standardise it) or use dtype='float64'."


class PrimalPPCA(PrimalNoveltyMixin, PrimalGenerationMixin, BasePPCA):
    r"""Probabilistic PCA in the primal: ``phi = W h + m + zeta`` with explicit features.

    With ``Phi_c`` the centered feature matrix (rows ``phi(x_i) - m``) and
    ``lam_p`` the eigenvalues of its scatter, ``W = V_q diag(sqrt(lam/N - sigma2))``
    and ``sigma2 = sum_{p>q} lam_p / (N (r - q))``: Tipping and Bishop's solution
    on ``H_E = span{phi_i - m}`` (dimension ``r``). With the identity feature map
    this is classical PPCA.

    Parameters
    ----------
    n_components : int, float in (0, 1), "mle" or None, default None
        As in :class:`~kppca.DualPPCA`.
    sigma2 : float, optional
    feature_map : FeatureMap or None, default None (identity)
        A fitted map is used as is (copied), so the primal and dual models can
        share exactly the same random features; an unfitted one is fitted on ``X``.
    center : bool, default True
    eigen_solver : {"auto", "dense", "partial"}, default "auto"
        The eigen-problem is the ``d x d`` scatter when ``d <= N``, else the
        ``N x N`` Gram matrix of the features.
    random_state, dtype, device, batch_size
        As in :class:`~kppca.DualPPCA` (``batch_size`` bounds the blocks of the pre-images,
        which evaluate the feature map's kernel against the ``N`` training points).

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
    ):
        self.n_components = n_components
        self.sigma2 = sigma2
        self.feature_map = feature_map
        self.center = center
        self.eigen_solver = eigen_solver
        self.random_state = random_state
        self.dtype = dtype
        self.device = device
        self.batch_size = batch_size

    _parameter_constraints = {**BasePPCA._parameter_constraints, "feature_map": [FeatureMap, None]}

    @fit_context
    def fit(self, X: ArrayLike, y: Any = None) -> "PrimalPPCA":
        """Fit the ML model to ``X`` of shape (N, D). Returns ``self``.

        ``y`` is ignored. If the fit fails, a previously fitted model is left unchanged.
        """
        X = self._setup(X)
        fmap = copy.deepcopy(self.feature_map) if self.feature_map is not None else Identity()
        if not hasattr(fmap, "n_features_in_"):
            fmap.fit(X)
        elif fmap.n_features_in_ != X.shape[1]:
            raise ValueError(
                f"feature_map was fitted on {fmap.n_features_in_} features but X has {X.shape[1]}."
            )
        self.feature_map_ = fmap
        Phi = fmap.map(X)
        N, d = Phi.shape
        self.mean_ = Phi.mean(0) if self.center else torch.zeros(d, dtype=Phi.dtype, device=Phi.device)
        # max_i |phi_i|^2, the diagonal scale of the raw Gram matrix: it sets the rounding level of
        # the centered scatter (rank tolerance) and bounds later products; overflow stops here.
        scale = check_gram_scale(
            float((Phi * Phi).sum(1).max()) if N else 0.0, N, Phi.dtype,
            what="feature matrix phi(X) (its squared row norms)", advice=_FEATURE_ADVICE,
        )
        Phi_c = Phi - self.mean_
        # Centered before the product, the scatter carries a smaller rounding error than K_c.
        scale = scatter_rounding_scale(scale, float((Phi_c * Phi_c).sum()), N)
        self._resolve_solver(min(d, N))
        if d <= N:
            max_rank = min(d, N - int(self.center))
            spectrum = self._solve_spectrum(
                Phi_c.T @ Phi_c, what="feature scatter matrix", max_rank=max_rank, scale=scale, size=N
            )
            V = spectrum.vectors
        else:
            # Fewer points than features: the N x N Gram matrix has the same non-zero spectrum.
            spectrum = self._solve_spectrum(
                Phi_c @ Phi_c.T, what="feature Gram matrix", max_rank=N - int(self.center), scale=scale
            )
            V = orthonormalize_columns(Phi_c.T @ spectrum.vectors / spectrum.values.sqrt())
            if spectrum.complete:
                spectrum.vectors = V
        self.X_fit_ = X
        self._set_ml_estimates(spectrum, N)
        q = self.n_components_
        self.components_ = V[:, :q].T.clone()
        self.W_ = V[:, :q] * torch.sqrt(self.eigenvalues_ / N - self.sigma2_)
        return self

    # ------------------------------------------------------------------ coordinates
    def features(self, X: ArrayLike) -> Any:
        """``phi(X)`` (M, d) with the fitted feature map."""
        self._check_fitted("features")
        return self._output(self.feature_map_.map(self._input(X)), X)

    def _centered_features(self, X: torch.Tensor) -> torch.Tensor:
        return self.feature_map_.map(X) - self.mean_

    def _principal_coordinates(self, X: torch.Tensor) -> torch.Tensor:
        return self._centered_features(X) @ self.components_.T

    def _subspace_coordinates(self, X: torch.Tensor) -> torch.Tensor:
        return self._centered_features(X) @ self._full_eigen()[1]

    def _full_eigen(self) -> tuple[torch.Tensor, torch.Tensor]:
        """All ``r`` eigenvalues and orthonormal directions ``V_r`` (d, r) spanning ``H_E`` (cached)."""
        if "_full" not in self.__dict__:
            Phi_c = self._centered_features(self.X_fit_)
            r = self.rank_
            N, d = Phi_c.shape
            if d <= N:
                values, V = eigh_descending(Phi_c.T @ Phi_c)
                values, V = values[:r], V[:, :r]
            else:
                values, E = eigh_descending(Phi_c @ Phi_c.T)
                values = values[:r]
                V = orthonormalize_columns(Phi_c.T @ E[:, :r] / values.sqrt())
            self._full = (values.clone(), V.clone())
        return self._full

    # ------------------------------------------------------------------ distributions of phi
    def _subspace_distribution(self, loc: torch.Tensor, scales: torch.Tensor) -> DegenerateMultivariateNormal:
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
        n = check_count(n, "n")
        values, V = self._full_eigen()
        q = self.n_components_
        std = torch.cat([values[:q] / self.n_samples_, torch.full_like(values[q:], self.sigma2_)]).sqrt()
        gen = torch_generator(random_state, self._device)
        a = torch.randn((int(n), std.shape[0]), generator=gen, dtype=self._dtype, device=self._device)
        return self._output((a * std) @ V.T + self.mean_)

    # ------------------------------------------------------------------ reconstruction, covariance
    def reconstruct(self, X: ArrayLike) -> Any:
        """MAP reconstruction in feature space, ``W h_MAP + m``, shape (M, d)."""
        self._check_fitted("reconstruct")
        h = self._principal_coordinates(self._input(X)) * self._gain
        return self._output(h @ self.W_.T + self.mean_, X)

    def get_covariance(self) -> torch.Tensor:
        """``W W^T + sigma2 I_d`` (d, d), the model covariance of ``phi`` (Tipping and Bishop)."""
        self._check_fitted("get_covariance")
        d = self.W_.shape[0]
        return self.W_ @ self.W_.T + self.sigma2_ * torch.eye(d, dtype=self._dtype, device=self._device)
