"""Dual (kernel) probabilistic PCA: everything through the centered Gram matrix."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import torch

from .._linalg import support_rtol
from .._param_validation import Integral, Interval, check_scalar, fit_context
from .._validation import ArrayLike, numpy_rng, torch_generator
from ..io import TensorSpec, register
from ..kernels.base import Kernel
from ..kernels.centered_gram import CenteredGram
from ..kernels.centering import KernelCenterer
from ..kernels.registry import as_kernel
from ._base import BasePPCA
from ._likelihood import log_likelihood_by_cholesky
from ._novelty import DualNoveltyMixin
from .generation import DualGenerationMixin

if TYPE_CHECKING:  # Pyro (under kppca.distributions) is imported on first use
    from ..distributions import DegenerateMultivariateNormal


@register
class DualPPCA(DualNoveltyMixin, DualGenerationMixin, BasePPCA):
    r"""Probabilistic PCA in the dual: the model ``phi = W h + m + zeta`` through a kernel.

    With ``K_c = E diag(lam) E^T`` the centered Gram matrix of the ``N`` training
    points, the ML solution is ``A = E_q diag(sqrt(1/N - sigma2/lam))`` with
    ``W = Phi_c A``, and ``sigma2 = sum_{p>q} lam_p / (N (r - q))`` (see
    ``docs/theory``). Dual variables are centered kernel vectors ``k_c(x)`` in
    ``R^N``; they all live in the ``r``-dimensional ``range(K_c)``.

    Parameters
    ----------
    n_components : int, float in (0, 1), "mle" or None, default None
        ``q``, the fraction of explained variance to keep, or Minka's choice.
        None means ``min(2, r - 1)`` (two components whenever the rank ``r`` of the
        centered data allows, so the default fits any data of rank >= 2), unless
        ``sigma2`` is given alone (then ``q`` follows from it). Unlike scikit-learn's
        None (all components): pass ``sigma2=1e-12`` alone for that (docs: "Coming from scikit-learn").
    sigma2 : float, optional
        Noise variance. Alone: ``q = #{p : lam_p / N > sigma2}``. With an integer
        ``n_components``: fixed instead of estimated (e.g. small values for the
        kernel-PCA limit). A fixed ``sigma2`` allows ``q`` up to the rank ``r``; the
        estimated one needs ``q < r``.
    kernel : Kernel, callable ``fn(X, Y)``, str or None, default "linear"
    center : bool, default True
        False gives the uncentered model (``mu = 0``).
    eigen_solver : {"auto", "dense", "partial"}, default "auto"
        "partial" computes only the top ``q`` eigenpairs (Lanczos); "dense" the
        whole spectrum; where Lanczos cannot serve (a fraction, "mle", ``sigma2``
        alone, ``q > N - 2``) the dense solver runs and ``eigen_solver_`` says so.
        "auto" uses "partial" for integer ``q <= N/10`` when ``N > 1000``. Eigenvectors
        follow a deterministic sign convention (largest entry positive).
    random_state : int, Generator or None
        Seeds the Lanczos start vector.
    dtype : {"float64", "float32"}, torch/numpy float dtype or None, default None
        None follows the data, as scikit-learn does: float32 input is fitted
        (and transformed) in float32, everything else in float64.
    device : torch device or str, default None (the CPU)
    batch_size : int or None, default None
        Rows processed at once when kernel values are computed: the training Gram
        matrix (built in row blocks into one ``N x N`` buffer), and new points in
        ``transform``, ``score_samples``, ``novelty_score`` and the pre-images (each
        block holds ``batch_size x N`` kernel values). None sizes blocks to about
        128 MiB whatever ``M``. Results do not depend on it beyond rounding.

    Attributes
    ----------
    n_components_ : int
    sigma2_ : float
    rank_ : int
        The rank ``r`` of ``K_c`` (the dimension of ``H_E``), decided by the kernel's
        structure so that it does not depend on the dtype or the eigensolver (see
        :mod:`kppca.kernels.rank` and ``docs/theory``): ``n_distinct - 1`` for strictly
        positive definite kernels (RBF, Laplacian), the float64 rank of the centered
        features for explicit finite maps (the linear kernel, the polynomial kernel's exact
        map while it has at most 4,096 features); only other kernels (a callable) are counted
        numerically (eigenvalues above ``N eps max(lam_1, 4 max|K_ij|)``, or pivots of a
        pivoted Cholesky factorisation with the partial solver).
    eigenvalues_ : Tensor of shape (q,)
        Top eigenvalues ``lam_p`` of ``K_c`` (variances are ``lam_p / N``).
    eigenvectors_ : Tensor of shape (N, q)
        ``E_q``.
    A_ : Tensor of shape (N, q)
    total_variance_ : float
        ``trace(K_c) / N``.
    explained_variance_, explained_variance_ratio_ : Tensor of shape (q,)
        ``lam_p / N`` and ``lam_p / trace(K_c)`` (sum it for the paper's "explained variance").
    X_fit_ : Tensor of shape (N, D)
    centerer_ : KernelCenterer
    kernel_ : Kernel
    """

    def _check_fitted_state(self) -> str | None:
        """The centerer's statistics are of the training Gram matrix (N = n_samples_; see kppca.io)."""
        means = getattr(self.centerer_, "column_means_", None)
        if means is None or means.shape != (self.n_samples_,):
            return f"centerer_.column_means_ must have shape ({self.n_samples_},)"
        return None

    def __init__(
        self,
        n_components: int | float | str | None = None,
        *,
        sigma2: float | None = None,
        kernel: Kernel | Callable | str | None = "linear",
        center: bool = True,
        eigen_solver: str = "auto",
        random_state: Any = None,
        dtype: torch.dtype | str | None = None,
        device: torch.device | str | None = None,
        batch_size: int | None = None,
    ):
        self._store_params(locals())

    # ------------------------------------------------------------------ fit
    _parameter_constraints = {
        **BasePPCA._parameter_constraints,
        "kernel": [Kernel, str, callable, None],
    }
    #: The fitted state a model file may hold (see :mod:`kppca.io.specs`); a custom kernel is supplied at load.
    _fitted_constraints = {
        **BasePPCA._fitted_constraints,
        "kernel_": [Kernel, callable],
        "centerer_": [KernelCenterer],
        "X_fit_": [TensorSpec(shape=("n_samples_", "n_features_in_"))],
        "eigenvectors_": [TensorSpec(shape=("n_samples_", "n_components_"))],
        "A_": [TensorSpec(shape=("n_samples_", "n_components_"))],
    }

    @fit_context
    def fit(self, X: ArrayLike, y: Any = None) -> "DualPPCA":
        """Fit the ML model to ``X`` of shape (N, D). Returns ``self``.

        Cost: the Gram matrix (``O(N^2 D)``, built in row blocks into one ``N x N``
        buffer and centered in place), then the top ``q`` eigenpairs: ``O(N^2 q)`` per
        Lanczos sweep with the partial solver, ``O(N^3)`` with the dense one. The rank
        ``r`` comes from the kernel's structure (see ``rank_``), so the partial fit
        has no cubic step; what needs one (the sampling factor, also behind
        ``score_samples``; the full eigendecomposition where that factor does not
        resolve the spectrum) is computed on first use. Memory:
        one ``N x N`` matrix (a :class:`~kppca.kernels.CenteredGram`, kept as a cache for
        later calls; the Cholesky factor of the exact sample is computed in its memory on first
        use, see :mod:`kppca.models.generation.dual`), plus row blocks of at most ``N / 32`` rows.

        ``y`` (optional): class labels, one per row, are kept only for class-conditional
        sampling, ``sample(n, y=label)``; any other target (continuous, multi-output) is
        ignored, as by a scikit-learn transformer in a pipeline. If the fit fails, a previously
        fitted model is left unchanged.
        """
        X, _ = self._validate_fit_input(X)
        # A private copy: set_params(kernel__...) on the estimator must not change a fitted model.
        self.kernel_ = copy.deepcopy(as_kernel(self.kernel).resolve(X))  # a data-derived width ("scale") from X
        N = X.shape[0]
        solver = self._resolve_solver(N)
        gram = CenteredGram(
            self.kernel_, X, center=self.center, batch_size=self.batch_size,
            what="Gram matrix of `kernel` on X",
        )
        # The rank comes from the kernel's structure (from X, before the N x N buffer exists), or,
        # for a kernel without structure, from the spectrum: eigenvalues, or pivots of a pivoted
        # Cholesky of K_c (O(N r^2)) with the partial solver.
        spectrum = gram.spectrum(solver, self.n_components, random_state=numpy_rng(self.random_state))
        self.centerer_ = gram.centerer
        self.X_fit_ = X
        self._remember_labels(y, N)
        self._set_ml_estimates(spectrum, N)
        q = self.n_components_
        self.eigenvectors_ = spectrum.vectors[:, :q].clone()
        self.A_ = self.eigenvectors_ * torch.sqrt(1.0 / N - self.sigma2_ / self.eigenvalues_)
        self._cache.set("gram", gram)
        return self

    # ------------------------------------------------------------------ kernel-space helpers
    def centered_kernel(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Centered kernel vectors ``k_c(x) = Phi_c^T (phi(x) - m)`` of new points.

        Parameters
        ----------
        X : array-like of shape (M, D)

        Returns
        -------
        ndarray or Tensor of shape (M, N); rows sum to zero when ``center=True``.
        """
        Xt = self._validate_new_input(X, method="centered_kernel")  # first: the fitted check
        return self._to_output(self._gram().centered_vectors(Xt), X)

    def _gram(self) -> CenteredGram:
        """The model's :class:`~kppca.kernels.CenteredGram`: fit's object, or one rebuilt lazily from ``X_fit_``.

        A rebuilt object (a loaded or unpickled model) takes the fitted centerer, rank and top
        eigenvalue, so its tolerance and every factor are those of the fit (the matrix bitwise).
        """
        def rebuild() -> CenteredGram:
            return CenteredGram(
                self.kernel_, self.X_fit_, center=self.center, batch_size=self.batch_size,
                centerer=self.centerer_, rank=self.rank_, eigen_max=float(self.eigenvalues_[0]),
                what="Gram matrix of `kernel` on X",
            )

        return self._cache.get("gram", rebuild)

    @property
    def _sqrt_route(self) -> str:
        """How ``K_c`` is factored for sampling: from the eigenpairs after a dense fit, else by Cholesky."""
        return "eigen" if self.eigen_solver_ == "dense" else "cholesky"

    def _principal_coordinates(self, X: torch.Tensor) -> torch.Tensor:
        return self._gram().project(X, self.eigenvectors_) / self.eigenvalues_.sqrt()

    def _training_coordinates(self) -> torch.Tensor:
        """Principal coordinates of the training inputs (N, q): ``K_c u_p / sqrt(lam_p) = sqrt(lam_p) u_p``.

        Read off the eigenpairs (equal to projecting ``X_fit_`` up to the eigen-solver's
        rounding), so the latent mixture needs no ``N x N`` kernel pass after sampling has
        factored ``K_c`` in place.
        """
        return self.eigenvectors_ * self.eigenvalues_.sqrt()

    def _log_likelihood(self, X: torch.Tensor) -> torch.Tensor:
        """``score_samples`` of validated inputs: from the Cholesky factor of ``K`` when it reproduces the
        dense path (every eigenvalue of ``K_c`` resolved, see :mod:`kppca.models._likelihood`), else dense."""
        logp = log_likelihood_by_cholesky(self, X)
        return super()._log_likelihood(X) if logp is None else logp

    def _subspace_coordinates(self, X: torch.Tensor) -> torch.Tensor:
        values, vectors = self._full_eigen()
        return self._gram().project(X, vectors) / values.sqrt()

    def _full_eigen(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The eigenpairs of ``K_c`` above the rounding level (at most ``r``; computed once, ``O(N^3)``).

        With a structural rank, the last of the ``r`` eigenvalues of a smooth kernel
        can be below the rounding level of ``K_c``: those directions are not resolved
        numerically and are left out (see ``score_samples``).
        """
        return self._gram().eigh()

    # ------------------------------------------------------------------ distributions of k_c
    def kernel_conditional(self, h: ArrayLike) -> DegenerateMultivariateNormal:
        """The distribution of ``k_c | h``: ``N(K_c A h, sigma2 K_c)`` on ``range(K_c)``.

        Parameters
        ----------
        h : array-like of shape (M, q) or (q,)

        Returns
        -------
        DegenerateMultivariateNormal
            Batch shape (M,), event shape (N,).
        """
        from ..distributions import DegenerateMultivariateNormal

        self._check_fitted("kernel_conditional")
        h = self._latent(h)
        # K_c A = E_q diag(lam * a) because E_q are eigenvectors of K_c.
        scale = self.eigenvalues_ * torch.sqrt(1.0 / self.n_samples_ - self.sigma2_ / self.eigenvalues_)
        loc = h @ (self.eigenvectors_ * scale).T
        sigma = self.sigma2_**0.5
        # the same factor whatever was cached: reproducible rsample
        F = sigma * self._factored_gram().sqrt(self._sqrt_route)
        # The support is always the resolved eigenbasis of K_c (one rank, fixed by the fit), whatever
        # was computed before: O(N^3) once after a partial fit, as the SVD of F would be.
        values, vectors = self._full_eigen()
        scale = sigma * values.sqrt()
        return DegenerateMultivariateNormal(
            loc, F, basis=vectors, basis_scale=scale, support_rtol=self._support_rtol(scale)
        )

    def marginal_scales(self) -> torch.Tensor:
        """``sqrt(c_p)`` of the marginal covariance ``S = E diag(c) E^T`` of ``k_c``, shape (r,).

        ``c_p = lam_p^2 / N`` for ``p <= q`` and ``sigma2 lam_p`` for ``q < p <= r``.
        """
        self._check_fitted("marginal_scales")
        values, _ = self._full_eigen()
        q = self.n_components_
        c = torch.cat([values[:q] ** 2 / self.n_samples_, self.sigma2_ * values[q:]])
        return c.sqrt()

    def sampling_factor(self, factor: str = "fast") -> torch.Tensor:
        """A square root ``F`` of the marginal covariance ``S`` of ``k_c`` (``F F^T = S``).

        Parameters
        ----------
        factor : {"fast", "symmetric"}, default "fast"
            "symmetric": the paper's ``B = E diag(sqrt(c)) E^T`` (N, N), which
            needs the full eigendecomposition (``O(N^3)``, cached).
            "fast": ``[E_q diag(sqrt(lam^2/N - sigma2 lam)), sigma L]`` (N, q + r')
            with ``L L^T = K_c`` from a Cholesky factorisation (``O(N^3 / 3)``,
            cached) and only the top ``q`` eigenpairs. Same distribution.

        Returns
        -------
        Tensor of shape (N, N) or (N, q + r')
        """
        self._check_fitted("sampling_factor")
        if factor == "symmetric":
            def symmetric() -> torch.Tensor:
                _, vectors = self._full_eigen()
                return (vectors * self.marginal_scales()) @ vectors.T

            return self._cache.get("symmetric_factor", symmetric)
        if factor == "fast":
            noise = self.sigma2_**0.5 * self._factored_gram().sqrt(self._sqrt_route)
            return torch.cat([self._top_factor(), noise], dim=1)
        raise ValueError(f"factor={factor!r} is unknown; use 'fast' or 'symmetric'.")

    def _top_factor(self) -> torch.Tensor:
        """The top block ``E_q diag(sqrt(lam^2/N - sigma2 lam))`` (N, q) of the fast factor."""
        lam = self.eigenvalues_
        return self.eigenvectors_ * torch.sqrt(lam**2 / self.n_samples_ - self.sigma2_ * lam)

    def kernel_marginal(self, factor: str = "fast") -> DegenerateMultivariateNormal:
        """The marginal distribution of ``k_c``: ``N(0, S)`` on ``range(K_c)``.

        ``rsample`` draws ``k_c = F a`` with ``F`` from :meth:`sampling_factor`
        (``B a`` for ``factor="symmetric"``). ``S = Phi_c^T (W W^T + sigma2 I) Phi_c``
        (not the paper's ``A A^T + sigma2 K_c^{-1}``, which is the covariance of
        the dual coefficients). The support is the span of the eigenvectors of ``K_c``
        above its rounding level, whatever the solver and whatever was computed
        before (the full eigendecomposition, ``O(N^3)``, is computed once after a
        partial fit); the directions below it carry at most ``sigma2 tol`` of noise
        variance, which ``log_prob`` tolerates off the basis.

        Returns
        -------
        DegenerateMultivariateNormal
            Batch shape (), event shape (N,).
        """
        from ..distributions import DegenerateMultivariateNormal

        self._check_fitted("kernel_marginal")
        F = self.sampling_factor(factor)
        loc = torch.zeros(self.n_samples_, dtype=self._dtype, device=self._device)
        # Always the resolved eigenbasis (see kernel_conditional): a density of the fitted model alone.
        basis, scale = self._full_eigen()[1], self.marginal_scales()
        return DegenerateMultivariateNormal(
            loc, F, basis=basis, basis_scale=scale, support_rtol=self._support_rtol(scale)
        )

    def _support_rtol(self, basis_scale: torch.Tensor) -> float:
        """Relative off-basis tolerance of the kernel-space distributions, from the fit's rounding level.

        The basis holds the ``k`` eigenvectors of ``K_c`` above its rounding level ``tol``; along
        the other ``N - k`` directions the model's noise has variance at most ``sigma2 tol``, which
        no computation resolves, and a sampler (eigen or Cholesky factor, dense or partial fit)
        may put it there. The norm of such a component is below ``sigma sqrt(tol) (sqrt(N - k) + 6)``
        except with probability ``exp(-18)`` (Gaussian norm concentration); ``log_prob`` compares
        residuals with ``rtol * size``, ``size >= max(basis_scale)``.
        """
        eps_rtol = support_rtol(self._dtype)  # the distribution's default
        m = self.n_samples_ - basis_scale.shape[0]
        allowance = (self.sigma2_ * self._gram().tolerance) ** 0.5 * (m**0.5 + 6.0)
        return max(eps_rtol, allowance / float(basis_scale.max()))

    def sample_kernel(self, n: int, random_state: Any = None, factor: str = "fast") -> np.ndarray | torch.Tensor:
        """Draw ``n`` centered kernel vectors ``k_c = F a`` from the marginal model.

        Parameters
        ----------
        n : int
        random_state : int, Generator or None
        factor : {"fast", "symmetric"}, default "fast"
            See :meth:`sampling_factor`; both give the same distribution.

        Returns
        -------
        ndarray or Tensor of shape (n, N)
            (numpy when the model was fitted on numpy data). Rows sum to zero when centered.
        """
        self._check_fitted("sample_kernel")
        n = int(check_scalar(n, "n", [Interval(Integral, 1, None, closed="left")]))
        return self._to_output(self._draw_kernel(n, torch_generator(random_state, self._device), factor))

    def _draw_kernel(self, n: int, generator: torch.Generator, factor: str) -> torch.Tensor:
        """``n`` draws ``k_c = F a`` (n, N) of the marginal model, a tensor (behind :meth:`sample_kernel`)."""
        if factor == "fast":
            # a @ [top, sigma M L]^T by blocks: the (N, q + r') factor is never materialised.
            top = self._top_factor()
            q = top.shape[1]
            a = torch.randn((int(n), q + self._noise_width()), generator=generator, dtype=self._dtype,
                            device=self._device)
            return self._noise_kernel_vectors(a[:, q:]).addmm_(a[:, :q], top.T)
        F = self.sampling_factor(factor)
        a = torch.randn((int(n), F.shape[1]), generator=generator, dtype=self._dtype, device=self._device)
        return a @ F.T

    # ------------------------------------------------------------------ reconstruction, covariance
    def reconstruct_kernel(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """MAP reconstruction in kernel space: ``K_c A h_MAP = E_q diag(1 - N sigma2/lam) E_q^T k_c``.

        Returns
        -------
        ndarray or Tensor of shape (M, N)
        """
        Xt = self._validate_new_input(X, method="reconstruct_kernel")
        shrink = 1.0 - self.n_samples_ * self.sigma2_ / self.eigenvalues_
        coords = self._gram().project(Xt, self.eigenvectors_)
        return self._to_output((coords * shrink) @ self.eigenvectors_.T, X)

    def get_covariance(self) -> torch.Tensor:
        """The marginal covariance ``S`` (N, N) of ``k_c`` (needs the full eigendecomposition)."""
        self._check_fitted("get_covariance")
        _, vectors = self._full_eigen()
        return (vectors * self.marginal_scales() ** 2) @ vectors.T
