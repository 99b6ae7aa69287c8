"""Dual (kernel) probabilistic PCA: everything through the centered Gram matrix."""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np
import torch

from .._linalg import (
    check_gram_scale,
    eigh_descending,
    map_row_blocks,
    matrix_scale,
    pivoted_cholesky,
    rank_tolerance,
)
from .._param_validation import fit_context
from .._validation import ArrayLike, check_count, torch_generator
from ..distributions import DegenerateMultivariateNormal
from ..kernels.base import CallableKernel, Kernel
from ..kernels.registry import as_kernel
from ..kernels.centering import KernelCenterer
from ._base import BasePPCA
from ._novelty import DualNoveltyMixin
from .generation import DualGenerationMixin

_GRAM_ADVICE = "Check that `kernel` is finite on X, rescale X (e.g. standardise it) or use dtype='float64'."


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
        ``sigma2`` is given alone (then ``q`` follows from it).
    sigma2 : float, optional
        Noise variance. Alone: ``q = #{p : lam_p / N > sigma2}``. With an integer
        ``n_components``: fixed instead of estimated (e.g. small values for the
        kernel-PCA limit).
    kernel : Kernel, callable ``fn(X, Y)``, str or None, default "linear"
    center : bool, default True
        False gives the uncentered model (``mu = 0``).
    eigen_solver : {"auto", "dense", "partial"}, default "auto"
        "partial" computes only the top ``q`` eigenpairs (Lanczos); "dense" the
        whole spectrum. "auto" uses "partial" for integer ``q <= N/10`` when
        ``N > 1000``. Eigenvectors follow a deterministic sign convention (largest
        entry positive).
    random_state : int, Generator or None
        Seeds the Lanczos start vector.
    dtype : {"float64", "float32"}, torch/numpy float dtype or None, default None
        None follows the data, as scikit-learn does: float32 input is fitted
        (and transformed) in float32, everything else in float64.
    device : torch device or str, default None (the CPU)
    batch_size : int or None, default None
        Rows of new points processed at once by ``transform``, ``score_samples``,
        ``novelty_score`` and the pre-images: each block holds ``batch_size x N``
        kernel values. None sizes blocks to about 128 MiB whatever ``M``. Results do
        not depend on it beyond rounding.

    Attributes
    ----------
    n_components_ : int
    sigma2_ : float
    rank_ : int
        Numerical rank ``r`` of ``K_c``: with the dense solver, eigenvalues above
        ``N eps max(lam_1, 4 max|K_ij|)``, ``K`` the raw Gram matrix before centering
        (centering leaves an absolute rounding error of that size, which dominates for
        data far from the origin; see :func:`kppca._linalg.rank_tolerance`). The partial
        solver has no full spectrum: a Cholesky factorisation of the raw ``K`` certifies
        ``r = N - 1`` (and becomes the sampling factor); when ``K`` is numerically
        singular a pivoted Cholesky of ``K_c`` stops at the numerical rank. Both tests
        use the same tolerance, but pivots and eigenvalues are not the same numbers, so
        near the threshold the two solvers can differ by a few.
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
        self.n_components = n_components
        self.sigma2 = sigma2
        self.kernel = kernel
        self.center = center
        self.eigen_solver = eigen_solver
        self.random_state = random_state
        self.dtype = dtype
        self.device = device
        self.batch_size = batch_size

    # ------------------------------------------------------------------ fit
    _parameter_constraints = {
        **BasePPCA._parameter_constraints,
        "kernel": [Kernel, str, callable, None],
    }

    @fit_context
    def fit(self, X: ArrayLike, y: Any = None) -> "DualPPCA":
        """Fit the ML model to ``X`` of shape (N, D). Returns ``self``.

        ``y`` is ignored. If the fit fails, a previously fitted model is left unchanged.
        """
        X = self._setup(X)
        # A private copy: set_params(kernel__...) on the estimator must not change a fitted model.
        self.kernel_ = copy.deepcopy(as_kernel(self.kernel))
        N = X.shape[0]
        max_rank = N - int(self.center)
        partial = self._resolve_solver(N) == "partial"
        K = self.kernel_.gram(X, X)
        # Magnitude before centering: it sets the rounding level of K_c (rank tolerance) and
        # bounds every later product; non-finite or overflow-prone Gram matrices stop here.
        self._gram_scale = check_gram_scale(
            matrix_scale(K), N, K.dtype, what="Gram matrix of `kernel` on X", advice=_GRAM_ADVICE
        )
        if isinstance(self.kernel_, CallableKernel):
            self._check_symmetric(K)
        # The partial solver needs the numerical rank without a full spectrum. A Cholesky of
        # the raw K settles it (numerically PD => rank(K_c) = N - 1) and gives the fast
        # sampling factor M chol(K); it must run before K is centered in place.
        raw_chol = torch.linalg.cholesky_ex(K) if partial else None
        self.centerer_ = KernelCenterer(self.center)
        K_c = self.centerer_.fit_center_(K)
        factor: list[torch.Tensor] = []

        def rank(tol: float) -> int:
            L = self._raw_cholesky_factor(*raw_chol, tol)
            if L is None:  # numerically singular K: the pivoted Cholesky stops at the rank
                L = pivoted_cholesky(K_c, tol)[:, :max_rank]
            factor.append(L)
            return min(L.shape[1], max_rank)

        spectrum = self._solve_spectrum(
            K_c, what="centered Gram matrix", max_rank=max_rank, rank=rank, scale=self._gram_scale
        )
        raw_chol = None  # the factor kept (if any) is in `factor`; free the rest now
        self.X_fit_ = X
        self._set_ml_estimates(spectrum, N)
        q = self.n_components_
        self.eigenvectors_ = spectrum.vectors[:, :q].clone()
        self.A_ = self.eigenvectors_ * torch.sqrt(1.0 / N - self.sigma2_ / self.eigenvalues_)
        self._gram_c = K_c
        if factor:
            self._gram_factor = factor[0]
        return self

    def _check_symmetric(self, K: torch.Tensor) -> None:
        scale = float(K.abs().max()) if K.numel() else 0.0
        if float((K - K.T).abs().max()) > 1e3 * torch.finfo(K.dtype).eps * max(scale, 1.0):
            raise ValueError("the kernel's Gram matrix is not symmetric; a kernel must satisfy k(x, y) = k(y, x).")

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
        self._check_fitted("centered_kernel")
        return self._output(self._centered_kernel(self._input(X)), X)

    def _centered_kernel(self, X: torch.Tensor) -> torch.Tensor:
        return self.centerer_.transform(self.kernel_.gram(X, self.X_fit_))

    def _project(self, X: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
        """``k_c(X) @ basis`` in row blocks (``batch_size``), so an (M, N) block never has to exist whole.

        The centered kernel vectors of the training points are the rows of ``K_c``:
        when ``X`` is the training set and ``K_c`` is cached, no kernel is evaluated
        (as in ``fit_transform``).
        """
        if "_gram_c" in self.__dict__ and X.shape == self.X_fit_.shape and torch.equal(X, self.X_fit_):
            return self._gram_c @ basis
        return map_row_blocks(lambda rows: self._centered_kernel(rows) @ basis, X, self._block_rows())

    def _principal_coordinates(self, X: torch.Tensor) -> torch.Tensor:
        return self._project(X, self.eigenvectors_) / self.eigenvalues_.sqrt()

    def _subspace_coordinates(self, X: torch.Tensor) -> torch.Tensor:
        values, vectors = self._full_eigen()
        return self._project(X, vectors) / values.sqrt()

    def _centered_gram(self) -> torch.Tensor:
        """``K_c`` (N, N), recomputed from ``X_fit_`` after loading a saved model."""
        if "_gram_c" not in self.__dict__:
            # Same operations as in fit, so the result is bitwise identical to the matrix fit used.
            K = self.kernel_.gram(self.X_fit_, self.X_fit_)
            self._gram_c = KernelCenterer(self.center).fit_center_(K)
        return self._gram_c

    def _full_eigen(self) -> tuple[torch.Tensor, torch.Tensor]:
        """All ``r`` non-zero eigenpairs of ``K_c`` (computed once, ``O(N^3)``)."""
        if "_full" not in self.__dict__:
            values, vectors = eigh_descending(self._centered_gram())
            r = self.rank_
            if float(values[r - 1]) <= 0:
                raise ValueError(
                    f"K_c has only {int((values > 0).sum())} positive eigenvalues, fewer than the rank {r} assumed "
                    "by the partial solver (the kernel is numerically singular); refit with eigen_solver='dense'."
                )
            self._full = (values[:r].clone(), vectors[:, :r].clone())
        return self._full

    def _rank_tolerance(self) -> float:
        """The eigenvalue tolerance the fit counted the rank against."""
        return rank_tolerance(float(self.eigenvalues_[0]), self.n_samples_, self._dtype, self._gram_scale)

    def _raw_cholesky_factor(self, L: torch.Tensor, info: torch.Tensor, tol: float) -> torch.Tensor | None:
        """``M L`` (N, N), a square root of ``K_c``, when ``L = chol(K)`` succeeded with pivots above ``tol``."""
        if int(info) != 0 or not bool((L.diagonal() ** 2).min() > tol):
            return None
        return L.sub_(L.mean(0, keepdim=True)) if self.center else L  # (M L)(M L)^T = M K M = K_c

    def _gram_square_root(self) -> torch.Tensor:
        """A factor ``L`` (N, r') with ``L L^T = K_c``.

        After a dense fit, ``E_r diag(sqrt(lam))`` from the full eigendecomposition.
        After a partial fit, the factor the fit computed: ``M chol(K)`` when the raw
        Gram matrix is positive definite, else a pivoted Cholesky factor of ``K_c``;
        a loaded model (caches dropped) recomputes it the same way, so a given
        ``random_state`` always gives the same samples.
        """
        if self.eigen_solver_ == "dense":
            values, vectors = self._full_eigen()
            return vectors * values.sqrt()
        if "_gram_factor" not in self.__dict__:
            K = self.kernel_.gram(self.X_fit_, self.X_fit_)
            if "_gram_scale" not in self.__dict__:  # not persisted: the same K gives fit's value
                self._gram_scale = matrix_scale(K)
            tol = self._rank_tolerance()
            factor = self._raw_cholesky_factor(*torch.linalg.cholesky_ex(K), tol)
            if factor is None:
                factor = pivoted_cholesky(self._centered_gram(), tol)[:, : self.rank_]
            self._gram_factor = factor
        return self._gram_factor

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
        self._check_fitted("kernel_conditional")
        h = self._latent(h)
        # K_c A = E_q diag(lam * a) because E_q are eigenvectors of K_c.
        scale = self.eigenvalues_ * torch.sqrt(1.0 / self.n_samples_ - self.sigma2_ / self.eigenvalues_)
        loc = h @ (self.eigenvectors_ * scale).T
        sigma = self.sigma2_**0.5
        F = sigma * self._gram_square_root()  # the same factor whatever was cached: reproducible rsample
        if "_full" in self.__dict__:
            values, vectors = self._full
            return DegenerateMultivariateNormal(loc, F, basis=vectors, basis_scale=sigma * values.sqrt())
        return DegenerateMultivariateNormal(loc, F)

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
            if "_symmetric_factor" not in self.__dict__:
                _, vectors = self._full_eigen()
                self._symmetric_factor = (vectors * self.marginal_scales()) @ vectors.T
            return self._symmetric_factor
        if factor == "fast":
            top, scale, L = self._fast_factor_blocks()
            return torch.cat([top, scale * L], dim=1)
        raise ValueError(f"factor={factor!r} is unknown; use 'fast' or 'symmetric'.")

    def _fast_factor_blocks(self) -> tuple[torch.Tensor, float, torch.Tensor]:
        """The fast factor as ``[top, scale * L]`` without forming it: (N, q), sigma, (N, r')."""
        lam = self.eigenvalues_
        top = self.eigenvectors_ * torch.sqrt(lam**2 / self.n_samples_ - self.sigma2_ * lam)
        return top, self.sigma2_**0.5, self._gram_square_root()

    def kernel_marginal(self, factor: str = "fast") -> DegenerateMultivariateNormal:
        """The marginal distribution of ``k_c``: ``N(0, S)`` on ``range(K_c)``.

        ``rsample`` draws ``k_c = F a`` with ``F`` from :meth:`sampling_factor`
        (``B a`` for ``factor="symmetric"``). ``S = Phi_c^T (W W^T + sigma2 I) Phi_c``
        (not the paper's ``A A^T + sigma2 K_c^{-1}``, which is the covariance of
        the dual coefficients).

        Returns
        -------
        DegenerateMultivariateNormal
            Batch shape (), event shape (N,).
        """
        self._check_fitted("kernel_marginal")
        F = self.sampling_factor(factor)
        loc = torch.zeros(self.n_samples_, dtype=self._dtype, device=self._device)
        if "_full" in self.__dict__:
            return DegenerateMultivariateNormal(loc, F, basis=self._full[1], basis_scale=self.marginal_scales())
        return DegenerateMultivariateNormal(loc, F)

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
        n = check_count(n, "n")
        gen = torch_generator(random_state, self._device)
        if factor == "fast":
            # a @ [top, sigma L]^T by blocks: the (N, q + r') factor is never materialised.
            top, scale, L = self._fast_factor_blocks()
            q = top.shape[1]
            a = torch.randn((int(n), q + L.shape[1]), generator=gen, dtype=self._dtype, device=self._device)
            return self._output(torch.addmm(a[:, :q] @ top.T, a[:, q:], L.T, alpha=scale))
        F = self.sampling_factor(factor)
        a = torch.randn((int(n), F.shape[1]), generator=gen, dtype=self._dtype, device=self._device)
        return self._output(a @ F.T)

    # ------------------------------------------------------------------ reconstruction, covariance
    def reconstruct_kernel(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """MAP reconstruction in kernel space: ``K_c A h_MAP = E_q diag(1 - N sigma2/lam) E_q^T k_c``.

        Returns
        -------
        ndarray or Tensor of shape (M, N)
        """
        self._check_fitted("reconstruct_kernel")
        Xt = self._input(X)
        shrink = 1.0 - self.n_samples_ * self.sigma2_ / self.eigenvalues_
        coords = self._project(Xt, self.eigenvectors_)
        return self._output((coords * shrink) @ self.eigenvectors_.T, X)

    def get_covariance(self) -> torch.Tensor:
        """The marginal covariance ``S`` (N, N) of ``k_c`` (needs the full eigendecomposition)."""
        self._check_fitted("get_covariance")
        _, vectors = self._full_eigen()
        return (vectors * self.marginal_scales() ** 2) @ vectors.T
