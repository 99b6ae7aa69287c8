"""Dual (kernel) probabilistic PCA: everything through the centered Gram matrix."""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import torch

from .._linalg.threads import compute_section
from .._linalg import compute_threads, rounding_tolerance, smallest_eigenvalue_bound, support_rtol
from .._param_validation import Integral, Interval, check_scalar, fit_context
from .._validation import ArrayLike, check_gram_memory, check_sample_memory, numpy_rng, torch_generator
from ..io import register
from ..kernels.base import Kernel
from ..kernels.centered_gram import CenteredGram
from ..kernels.gram_factors import CholeskyFactor
from ..kernels.standard import as_kernel
from ._base import BasePPCA
from ._state import DualState
from .generation import DualGenerationMixin

if TYPE_CHECKING:  # Pyro (under kppca.distributions) is imported on first use
    from ..distributions import DegenerateMultivariateNormal

#: ``lam_min(K)`` must exceed the rounding level of ``K_c`` by this factor (covers the lower estimate of
#: ``||K^{-1}||_1`` and the rounding of the eigenvalues), so the dense path would keep every eigenvalue too.
RESOLVED_MARGIN = 100.0


@register
class DualPPCA(DualGenerationMixin, BasePPCA):
    r"""Probabilistic PCA in the dual: the model ``phi = W h + m + zeta`` through a kernel.

    With ``K_c = E diag(lam) E^T`` the centered Gram matrix of the ``N`` training points, the ML
    solution is ``W = Phi_c A``, ``A = E_q diag(sqrt(1/N - sigma2/lam))`` (see ``docs/theory``).
    Dual variables are centered kernel vectors ``k_c(x)`` in the ``r``-dimensional ``range(K_c)``.

    Parameters
    ----------
    n_components : int, float in (0, 1), "mle" or None, default None
        ``q``, the fraction of explained variance to keep, or Minka's choice. None means
        ``min(2, r - 1)`` unless ``sigma2`` is given alone (then ``q`` follows from it); unlike
        scikit-learn's None (all components: pass ``sigma2=1e-12`` alone for that).
    sigma2 : float, optional
        Noise variance. Alone: ``q = #{p : lam_p / N > sigma2}``. With an integer ``n_components``:
        fixed instead of estimated (small values give the kernel-PCA limit), allowing ``q`` up to ``r``.
    kernel : Kernel, callable ``fn(X, Y)``, str or None, default "linear"
    center : bool, default True
        False gives the uncentered model (``mu = 0``).
    eigen_solver : {"auto", "dense", "partial"}, default "auto"
        "partial": only the top ``q`` eigenpairs (Lanczos), unless it cannot serve (a fraction, "mle",
        ``sigma2`` alone, ``q > N - 2``: ``eigen_solver_`` records "dense"). "auto": "partial" for integer
        ``q <= N/10`` when ``N > 1000``.
    random_state : int, Generator or None
        Seeds the Lanczos start vector.
    dtype : {"float64", "float32"}, torch/numpy float dtype or None, default None
        None follows the data, as scikit-learn does: float32 input stays float32, anything else is float64.
    device : torch device or str, default None (the CPU)
    batch_size : int or None, default None
        Rows per block of kernel values (the training Gram matrix, and new points against the ``N``
        training points); None sizes blocks to about 128 MiB. Results do not depend on it beyond rounding.

    Attributes
    ----------
    n_components_ : int
    sigma2_ : float
    rank_ : int
        The rank ``r`` of ``K_c`` (the dimension of ``H_E``), from the kernel's structure where it has
        one (independent of dtype and solver, see :mod:`kppca.kernels.rank`), else counted numerically.
    eigenvalues_ : Tensor of shape (q,)
        Top eigenvalues ``lam_p`` of ``K_c`` (variances are ``lam_p / N``).
    eigenvectors_ : Tensor of shape (N, q)
        ``E_q``, each with its largest entry positive.
    A_ : Tensor of shape (N, q)
    total_variance_ : float
        ``trace(K_c) / N``.
    explained_variance_, explained_variance_ratio_ : Tensor of shape (q,)
        ``lam_p / N`` and ``lam_p / trace(K_c)`` (sum it for the paper's "explained variance").
    X_fit_ : Tensor of shape (N, D)
    centerer_ : KernelCenterer
    kernel_ : Kernel
    """

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

    _parameter_constraints = {**BasePPCA._parameter_constraints, "kernel": [Kernel, str, callable, None]}
    #: The fitted state (a custom kernel is supplied at load).
    _state_type = DualState

    @fit_context
    @compute_section
    def fit(self, X: ArrayLike, y: Any = None) -> "DualPPCA":
        """Fit the ML model to ``X`` of shape (N, D). Returns ``self``.

        Cost: the Gram matrix (``O(N^2 D)``), then the top ``q`` eigenpairs (``O(N^2 q)`` per Lanczos
        sweep, ``O(N^3)`` dense); cubic steps that sampling or ``score_samples`` need run on first use.
        Memory: one ``N x N`` matrix, kept for later calls. ``y`` (optional): class labels, kept only
        for ``sample(n, y=label)``; any other target is ignored. A failed fit leaves the model unchanged.
        """
        X, _ = self._validate_fit_input(X)
        check_gram_memory(X, "DualPPCA.fit")
        # A private copy: set_params(kernel__...) on the estimator must not change a fitted model.
        self.kernel_ = copy.deepcopy(as_kernel(self.kernel).resolve(X))  # a data-derived width ("scale") from X
        N = X.shape[0]
        solver = self._resolve_solver(N)
        gram = CenteredGram(
            self.kernel_, X, center=self.center, batch_size=self.batch_size,
            what="Gram matrix of `kernel` on X",
        )
        spectrum = gram.spectrum(solver, self.n_components, random_state=numpy_rng(self.random_state))
        self.centerer_ = gram.centerer
        self.X_fit_ = X
        self._remember_labels(y, N)
        self._set_ml_estimates(spectrum, N)
        q = self.n_components_
        self.eigenvectors_ = spectrum.vectors[:, :q].clone()
        self._cache.set("gram", gram)
        return self

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
        """The model's :class:`~kppca.kernels.CenteredGram`: fit's, or one rebuilt from ``X_fit_`` with the fit's
        centerer, rank and top eigenvalue (so the same tolerance and factors)."""
        def rebuild() -> CenteredGram:
            return CenteredGram(
                self.kernel_, self.X_fit_, center=self.center, batch_size=self.batch_size,
                centerer=self.centerer_, rank=self.rank_, eigen_max=float(self.eigenvalues_[0]),
                what="Gram matrix of `kernel` on X",
            )

        return self._cache.get("gram", rebuild)

    def _principal_coordinates(self, X: torch.Tensor) -> torch.Tensor:
        return self._gram().project(X, self.eigenvectors_) / self.eigenvalues_.sqrt()

    def _training_coordinates(self) -> torch.Tensor:
        """Principal coordinates of the training inputs (N, q), ``sqrt(lam_p) u_p``: no kernel pass."""
        return self.eigenvectors_ * self.eigenvalues_.sqrt()

    def _log_likelihood(self, X: torch.Tensor) -> torch.Tensor:
        """``score_samples`` of validated inputs: by Cholesky where it applies, else the dense definition."""
        logp = self._cholesky_log_likelihood(X)
        return super()._log_likelihood(X) if logp is None else logp

    def _cholesky_log_likelihood(self, X: torch.Tensor) -> torch.Tensor | None:
        """``score_samples`` (M,) by Cholesky (docs/numerics); None unless every eigenvalue of ``K_c`` is resolved."""
        # Whether the route applies depends on the fit alone, so a saved-and-loaded copy scores alike bitwise.
        # K positive definite needs a strictly PD kernel and distinct points (full structural rank).
        if (
            self.eigen_solver_ != "partial"
            or self._device.type != "cpu"
            or self._dtype not in (torch.float32, torch.float64)
            or not getattr(self.kernel_, "strictly_positive_definite", False)
            or self.rank_ != self.n_samples_ - int(self.center)
        ):
            return None
        factor = self._gram_factor()  # after a partial fit the Cholesky factor, shared with sampling
        gram = self._gram()
        with compute_threads():
            if not isinstance(factor, CholeskyFactor) or \
                    smallest_eigenvalue_bound(factor.L) <= RESOLVED_MARGIN * gram.tolerance:
                return None
            L = factor.L
            E, lam = self.eigenvectors_, self.eigenvalues_
            q, r, N, s2 = self.n_components_, self.rank_, self.n_samples_, self.sigma2_
            if self.center:
                v = torch.linalg.solve_triangular(L, L.new_ones(N, 1), upper=False)
                v_hat = v / torch.linalg.vector_norm(v)

            def block(Xb: torch.Tensor) -> torch.Tensor:
                k_c = gram.centered_vectors(Xb)  # (m, N)
                c = k_c @ E  # (m, q): coordinates times sqrt(lam)
                z = k_c.addmm_(c, E.T, alpha=-1.0)  # the top q directions removed, in place
                u = torch.linalg.solve_triangular(L, z.T, upper=False)  # (N, m)
                if self.center:
                    u = u.addmm_(v_hat, v_hat.T @ u, alpha=-1.0)  # projection orthogonal to L^{-1} 1
                tail = (u * u).sum(0)
                top = ((c / lam) ** 2).sum(1) * N  # sum_p y_p^2 / (lam_p / N)
                return top + tail / s2

            rows = self._block_rows()
            quad = torch.cat([block(X[i : i + rows]) for i in range(0, X.shape[0], rows)]) if X.shape[0] else \
                X.new_zeros(0)
        log_det = float(torch.log(lam / N).sum()) + (r - q) * math.log(s2)
        return -0.5 * (r * math.log(2 * math.pi) + log_det + quad)

    def _subspace_coordinates(self, X: torch.Tensor) -> torch.Tensor:
        values, vectors = self._full_eigen()
        return self._gram().project(X, vectors) / values.sqrt()

    def _full_eigen(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The eigenpairs of ``K_c`` above its rounding level (at most ``r``; computed once, ``O(N^3)``)."""
        return self._gram().eigh()

    def _outside_and_total(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        values, vectors = self._full_eigen()
        K_x = self._gram().raw_vectors(X)  # the training set's share of the evaluation done once
        kxx = self.kernel_.diag(X)
        N = self.n_samples_
        if self.centerer_.center:
            row_means = K_x.mean(1)
            grand = self.centerer_.grand_mean_
            total = kxx - 2 * row_means + grand
            scale = kxx.abs() + 2 * row_means.abs() + grand.abs()
        else:
            total, scale = kxx, kxx.abs()
        k_c = self.centerer_.transform(K_x)
        inside = ((k_c @ vectors) ** 2 / values).sum(1)
        # Worst-case rounding of the three kernel terms, plus the dropped eigenvalues (< N eps lam_1).
        floor = rounding_tolerance(K_x.dtype, N, scale + float(values[0]))
        return total - inside, total, floor

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
        self._check_fitted("kernel_conditional")
        h = self._latent(h)
        # K_c A = E_q diag(lam * a) because E_q are eigenvectors of K_c.
        scale = self.eigenvalues_ * self._a_scale
        loc = h @ (self.eigenvectors_ * scale).T
        sigma = self.sigma2_**0.5
        F = sigma * self._gram_factor().sqrt()  # the factor depends on the fit alone: reproducible
        # The support is always the resolved eigenbasis of K_c, whatever was computed before.
        values, _ = self._full_eigen()
        return self._kernel_distribution(loc, F, sigma * values.sqrt())

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
            "symmetric": the paper's ``B = E diag(sqrt(c)) E^T`` (N, N), from the full eigendecomposition.
            "fast": ``[E_q diag(sqrt(lam^2/N - sigma2 lam)), sigma L]`` (N, q + r') with ``L L^T = K_c``
            (Cholesky, ``O(N^3 / 3)``). Same distribution; both cached.

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
            noise = self.sigma2_**0.5 * self._gram_factor().sqrt()
            return torch.cat([self._top_factor(), noise], dim=1)
        raise ValueError(f"factor={factor!r} is unknown; use 'fast' or 'symmetric'.")

    def _top_factor(self) -> torch.Tensor:
        """The top block ``E_q diag(sqrt(lam^2/N - sigma2 lam))`` (N, q) of the fast factor."""
        lam = self.eigenvalues_
        return self.eigenvectors_ * torch.sqrt(lam**2 / self.n_samples_ - self.sigma2_ * lam)

    def kernel_marginal(self, factor: str = "fast") -> DegenerateMultivariateNormal:
        """The marginal distribution of ``k_c``: ``N(0, S)`` on ``range(K_c)``.

        ``S = Phi_c^T (W W^T + sigma2 I) Phi_c``; ``rsample`` draws ``k_c = F a`` with ``F`` from
        :meth:`sampling_factor`. The support is the span of the eigenvectors of ``K_c`` above its
        rounding level (the full eigendecomposition, once after a partial fit).

        Parameters
        ----------
        factor : {"fast", "symmetric"}, default "fast"
            See :meth:`sampling_factor`.

        Returns
        -------
        DegenerateMultivariateNormal
            Batch shape (), event shape (N,).
        """
        self._check_fitted("kernel_marginal")
        F = self.sampling_factor(factor)
        loc = torch.zeros(self.n_samples_, dtype=self._dtype, device=self._device)
        return self._kernel_distribution(loc, F, self.marginal_scales())

    def _kernel_distribution(
        self, loc: torch.Tensor, F: torch.Tensor, basis_scale: torch.Tensor
    ) -> DegenerateMultivariateNormal:
        """``N(loc, F F^T)`` on the eigenbasis of ``K_c``, off-basis tolerance from the fit's rounding level ``tol``.

        Off the ``k`` basis vectors a sampler may put noise of variance up to ``sigma2 tol``, whose norm is
        below ``sigma sqrt(tol) (sqrt(N - k) + 6)`` except with probability ``exp(-18)``.
        """
        from ..distributions import DegenerateMultivariateNormal

        eps_rtol = support_rtol(self._dtype)  # the distribution's default
        m = self.n_samples_ - basis_scale.shape[0]
        allowance = (self.sigma2_ * self._gram().tolerance) ** 0.5 * (m**0.5 + 6.0)
        rtol = max(eps_rtol, allowance / float(basis_scale.max()))
        _, vectors = self._full_eigen()
        return DegenerateMultivariateNormal(loc, F, basis=vectors, basis_scale=basis_scale, support_rtol=rtol)

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
            numpy when the model was fitted on numpy data; rows sum to zero when centered.
        """
        self._check_fitted("sample_kernel")
        n = int(check_scalar(n, "n", [Interval(Integral, 1, None, closed="left")]))
        check_sample_memory(self, n, f"sample_kernel(n={n})")
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

    def reconstruct_kernel(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """MAP reconstruction in kernel space: ``K_c A h_MAP = E_q diag(1 - N sigma2/lam) E_q^T k_c``.

        Parameters
        ----------
        X : array-like of shape (M, D)
            Inputs to reconstruct (their codes ``h_MAP = transform(X)``).

        Returns
        -------
        ndarray or Tensor of shape (M, N)
        """
        Xt = self._validate_new_input(X, method="reconstruct_kernel")
        coords = self._gram().project(Xt, self.eigenvectors_)
        return self._to_output((coords * self._shrinkage) @ self.eigenvectors_.T, X)

    def get_covariance(self) -> torch.Tensor:
        """The marginal covariance ``S`` (N, N) of ``k_c`` (needs the full eigendecomposition)."""
        self._check_fitted("get_covariance")
        _, vectors = self._full_eigen()
        return (vectors * self.marginal_scales() ** 2) @ vectors.T
