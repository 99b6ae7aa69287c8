"""What the primal and dual PPCA estimators share: parameters, ML fit, latent posterior, likelihood, novelty."""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from scipy.special import gammaln
from sklearn.base import ClassNamePrefixFeaturesOutMixin

from .._linalg import Spectrum, block_rows, prefer_partial
from .._param_validation import Integral, Interval, Real, RealNotInt, StrOptions
from .._validation import ArrayLike, as_tensor
from ..base import DEVICE_CONSTRAINTS, KernelEstimator, KernelTransformerMixin

if TYPE_CHECKING:  # Pyro is imported on first use (import kppca stays fast)
    import pyro.distributions as dist


class BasePPCA(ClassNamePrefixFeaturesOutMixin, KernelTransformerMixin, KernelEstimator):
    """Shared machinery; use :class:`~kppca.PrimalPPCA` or :class:`~kppca.DualPPCA`.

    Subclasses provide the unit coordinates of ``phi(x) - m`` along the top ``q`` directions (M, q),
    ``_principal_coordinates(X)``, and along all ``r`` of ``H_E`` (M, r), ``_subspace_coordinates(X)``,
    and ``_outside_and_total(X)``: the squared norm outside ``H_E``, the total, its rounding floor (M,).
    """

    #: What each constructor argument may be (see :mod:`kppca._param_validation`).
    _parameter_constraints: dict[str, list[Any]] = {
        "n_components": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0, 1, closed="neither"),
            StrOptions({"mle"}),
            None,
        ],
        "sigma2": [Interval(Real, 0, None, closed="neither"), None],
        "center": ["boolean"],
        "eigen_solver": [StrOptions({"auto", "dense", "partial"})],
        "random_state": ["random_state"],
        **DEVICE_CONSTRAINTS,
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
    }
    _parameter_hints: dict[str, str] = {
        "n_components": "Pass an int for a number of components, a float in (0, 1) for a fraction of explained "
        "variance, 'mle' for Minka's choice, or None.",
        "sigma2": "For the kernel PCA limit use a small positive value together with n_components.",
    }

    _fitted_marker = "sigma2_"  # set last in fit
    _accepts_sparse = True  # as scikit-learn's KernelPCA and PCA

    def _check_fit_params(self) -> None:
        """The rules that involve both ``n_components`` and ``sigma2``."""
        if self.sigma2 is None:
            return
        if self.n_components == "mle":
            raise ValueError("n_components='mle' chooses q and sigma2 itself; do not pass sigma2 with it.")
        if isinstance(self.n_components, float):
            raise ValueError("pass either a fractional n_components or sigma2, not both.")

    def _block_rows(self) -> int:
        """Rows per block when new points meet the ``N`` training points (see ``batch_size``)."""
        return block_rows(self.batch_size, self.n_samples_, self._dtype)

    @property
    def _n_features_out(self) -> int:
        return self.n_components_

    def _latent(self, h: ArrayLike) -> torch.Tensor:
        """Validate latent codes: shape (M, q) or (q,) -> (M, q)."""
        T = as_tensor(h, "h", ndim=(1, 2), dtype=self._dtype, device=self._device)
        T = T.reshape(1, -1) if T.ndim == 1 else T
        if T.shape[1] != self.n_components_:
            raise ValueError(
                f"h has width {T.shape[1]}, but the model has n_components_ = {self.n_components_}; "
                f"pass codes of shape (n, {self.n_components_})."
            )
        return T

    def _resolve_solver(self, size: int) -> str:
        """Choose and record (``eigen_solver_``) ``"dense"`` or ``"partial"`` for a matrix of order ``size``."""
        q = self.n_components
        integer_q = isinstance(q, numbers.Integral)  # validated by fit_context: never a bool here
        if self.eigen_solver == "partial":
            # Lanczos finds k < order - 1 eigenpairs (scikit-learn's arpack goes dense too).
            partial = integer_q and q <= size - 2
        else:
            partial = self.eigen_solver == "auto" and integer_q and prefer_partial(size, int(q))
        self.eigen_solver_ = "partial" if partial else "dense"
        return self.eigen_solver_

    def _set_ml_estimates(self, spectrum: Spectrum, n_samples: int) -> None:
        """Store ``q``, ``sigma2`` and the eigenvalue summaries shared by both models."""
        if spectrum.rank < 2 and self.n_features_in_ == 1 and self.sigma2 is None:
            raise ValueError(
                f"the centered data have rank {spectrum.rank}: X has 1 feature(s), which here span(s) at most one "
                "direction; probabilistic PCA with an estimated sigma2 needs rank >= 2. Use more features, a "
                "non-linear kernel or feature map, or give sigma2 (then q = 1 of rank 1 is allowed)."
            )
        q, sigma2 = select_components(spectrum, n_samples, self.n_components, self.sigma2)
        self.n_samples_ = n_samples
        self.n_components_ = q
        self.rank_ = spectrum.rank
        self.sigma2_ = sigma2
        self.eigenvalues_ = spectrum.values[:q].clone()
        self.trace_ = spectrum.trace  # the variances, gain and posterior scale follow (see models._state)

    def transform(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Posterior mean (= MAP) of the latent codes ``h``.

        Parameters
        ----------
        X : array-like of shape (M, D)

        Returns
        -------
        ndarray or Tensor of shape (M, q)
        """
        Xt = self._validate_new_input(X, method="transform")
        return self._to_output(self._principal_coordinates(Xt) * self._gain, X)

    def latent_posterior(self, X: ArrayLike) -> dist.MultivariateNormal:
        """The posterior ``p(h | x)``: batch shape (M,), event shape (q,); one covariance for every point."""
        loc = self._principal_coordinates(self._validate_new_input(X, method="latent_posterior")) * self._gain
        import pyro.distributions as dist

        return dist.MultivariateNormal(loc, scale_tril=torch.diag(self._posterior_std))

    def latent_prior(self) -> dist.MultivariateNormal:
        """The prior ``h ~ N(0, I_q)``: event shape (q,)."""
        self._check_fitted("latent_prior")
        q = self.n_components_
        zeros = torch.zeros(q, dtype=self._dtype, device=self._device)
        import pyro.distributions as dist

        return dist.MultivariateNormal(zeros, scale_tril=torch.eye(q, dtype=self._dtype, device=self._device))

    @property
    def latent_covariance_(self) -> torch.Tensor:
        """Posterior covariance of ``h``, ``N sigma2 diag(1/lam)``, shape (q, q)."""
        self._check_fitted("latent_covariance_")
        return torch.diag(self._posterior_std**2)

    def score_samples(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Log-likelihood of each point under the marginal model on ``H_E`` (dimension ``r``).

        The variance is ``lam_p / N`` along the top ``q`` eigendirections and ``sigma2`` along the
        other ``r - q``; components outside ``H_E`` are not modelled (:meth:`novelty_score` measures
        them). Values are **not comparable across kernels** (each has its own ``H_E``); to compare
        kernels use :func:`kppca.metrics.reconstruction_error` on held-out data.

        Parameters
        ----------
        X : array-like of shape (M, D)
            Points to score; :meth:`score` is the mean of the values.

        Returns
        -------
        ndarray or Tensor of shape (M,)
        """
        return self._to_output(self._log_likelihood(self._validate_new_input(X, method="score_samples")), X)

    def _log_likelihood(self, X: torch.Tensor) -> torch.Tensor:
        """:meth:`score_samples` of validated inputs (M,), from the coordinates along the resolved eigenbasis."""
        y = self._subspace_coordinates(X)
        q, r, N, s2 = self.n_components_, self.rank_, self.n_samples_, self.sigma2_
        # Only k <= r coordinates are resolved; the other r - k directions add only their normalisation.
        k = y.shape[1]
        variances = torch.cat([self.eigenvalues_ / N, torch.full((k - q,), s2, dtype=y.dtype, device=y.device)])
        log_det = float(torch.log(self.eigenvalues_ / N).sum()) + (r - q) * math.log(s2)
        return -0.5 * (r * math.log(2 * math.pi) + log_det + (y**2 / variances).sum(1))

    def score(self, X: ArrayLike, y: Any = None) -> float:
        """Average log-likelihood of ``X`` on ``H_E`` (see :meth:`score_samples`, also for comparing kernels).

        Parameters
        ----------
        X : array-like of shape (M, D)
        y : ignored

        Returns
        -------
        float
        """
        return float(torch.as_tensor(self.score_samples(X)).mean())

    def novelty_score(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Fraction of ``|phi(x) - m|^2`` outside ``H_E``, per point: 0 = inside the training span, 1 = orthogonal.

        A scale-free detector of inputs unlike the training data, which ``score`` cannot see. Dual: accurate
        to about ``N eps (max k + lam_1)`` absolute (a difference of kernel sums); primal: the residual is
        formed explicitly. Needs the complete spectrum (computed once after a partial fit).

        Parameters
        ----------
        X : array-like of shape (M, D)

        Returns
        -------
        ndarray or Tensor of shape (M,)
            Values in ``[0, 1]``; the type of ``X``.
        """
        Xt = self._validate_new_input(X, method="novelty_score")
        rows = self._block_rows()
        parts = [self._outside_and_total(Xt[i : i + rows]) for i in range(0, Xt.shape[0], rows)]
        if parts:
            outside, total, floor = (torch.cat(column) for column in zip(*parts))
        else:
            outside = total = floor = Xt.new_zeros(0)
        # Below the rounding floor the point is indistinguishable from the mean, which lies in m + H_E.
        at_mean = total <= floor
        fraction = torch.where(at_mean, torch.zeros_like(total), outside / torch.where(at_mean, 1.0, total))
        return self._to_output(fraction.clamp(0.0, 1.0), X)


def select_components(spectrum: Spectrum, n_samples: int, n_components, sigma2) -> tuple[int, float]:
    """``(q, sigma2)`` from the spectrum and the parameters (the rules of ``DualPPCA``'s ``n_components``).

    An estimated ``sigma2 = sum_{p>q} lam_p / (N (r - q))`` needs ``q < r``; a fixed one allows ``q <= r``.
    Raises ValueError when the spectrum does not allow ``q``, or ``sigma2 >= lam_q / N``.
    """
    lam = spectrum.values.detach().cpu().numpy().astype(np.float64)
    N, r = n_samples, spectrum.rank
    estimate = sigma2 is None  # the ML sigma2 needs at least one discarded direction
    if r < (2 if estimate else 1):
        raise ValueError(
            f"the centered data have rank {r}; probabilistic PCA "
            + ("with an estimated sigma2 needs rank >= 2 (q >= 1 component plus noise; with a fixed sigma2, "
               "rank >= 1 suffices). " if estimate else "needs rank >= 1. ")
            + "The rank counts variation above the rounding level of the uncentered data: for data far from the "
            "origin (or a float32 model) subtract a constant offset from X, rescale it, or use dtype='float64'."
        )
    if lam.size == 0:
        raise ValueError(
            f"no eigenvalue of the data is above the rounding level {spectrum.tolerance:.3g} of the matrix (rank "
            f"{r} by structure): the variation of X is below the precision of the computation. Rescale X (e.g. "
            "standardise it), subtract a constant offset, or use dtype='float64'."
        )
    if n_components is None and sigma2 is None:
        # A probabilistic model keeps noise directions: r - 1 would make sigma2 the smallest eigenvalue.
        n_components = min(2, r - 1)
    if n_components == "mle":
        q = minka_dimension(lam, N)
    elif n_components is None:
        q = int((lam / N > sigma2).sum())
        if q < 1:
            raise ValueError(
                f"sigma2={sigma2:.4g} is >= lambda_1/N = {lam[0] / N:.4g}: no direction has more variance than the "
                "noise. Choose a smaller sigma2."
            )
    elif isinstance(n_components, numbers.Integral):
        q = int(n_components)
    else:
        q = _fraction_components(lam, spectrum, float(n_components))
    if q > r or (estimate and q == r):
        raise ValueError(
            f"n_components = {q} must be smaller than the rank of the centered data ({r}); the model needs at "
            "least one discarded direction to estimate sigma2. Use fewer components or give sigma2 (a fixed "
            "sigma2 allows n_components up to the rank)."
            if estimate
            else f"n_components = {q} exceeds the rank of the centered data ({r}): the data span only {r} "
            "direction(s). Use at most that many components"
            + (" or a larger sigma2." if n_components is None else ".")
        )
    resolved = int((lam > spectrum.tolerance).sum())
    if q > resolved:
        # A kept component must carry variance above the rounding level (a smooth kernel's spectrum decays below).
        raise ValueError(
            f"n_components = {q}, but only {resolved} eigenvalue(s) of the data are above the rounding level "
            f"{spectrum.tolerance:.3g} of the matrix. Use fewer components; for data far from the origin (or a "
            "float32 model) subtract a constant offset from X, rescale it, or use dtype='float64'."
        )
    if sigma2 is None:
        tail = spectrum.trace - float(lam[:q].sum())
        sigma2 = tail / (N * (r - q))
        if sigma2 <= 0:
            raise ValueError(
                f"the estimated sigma2 is not positive ({sigma2:.3g}): the discarded eigenvalues are numerically "
                f"zero. Use fewer than {q} components."
            )
        # Each eigenvalue and the trace are within the rounding level tol (Weyl), so the tail, the trace less
        # q eigenvalues or the sum of r - q, is within (min(q, r - q) + 1) tol: below that it is rounding.
        floor = (min(q, r - q) + 1) * spectrum.tolerance
        if tail <= floor:
            raise ValueError(
                f"the discarded variance trace - sum of the top {q} eigenvalues = {tail:.3g} is below the rounding "
                f"level {floor:.3g} of the matrix, so sigma2 cannot be estimated (it would be rounding noise). Use "
                "dtype='float64', fewer components, or give sigma2."
            )
    if not sigma2 < lam[q - 1] / N:
        raise ValueError(
            f"sigma2 = {sigma2:.6g} must be smaller than lambda_q/N = {lam[q - 1] / N:.6g} for q = {q} "
            "(repeated eigenvalues at the cut, or sigma2 too large). Change n_components or sigma2."
        )
    return q, float(sigma2)


def _fraction_components(lam: np.ndarray, spectrum: Spectrum, fraction: float) -> int:
    """The smallest ``q`` whose cumulative explained variance ratio reaches ``fraction`` (ML ``sigma2``: ``q < r``).

    A ratio within ``2 (q + 2) eps`` below counts as reaching it, so ``n_components =
    explained_variance_ratio_[:q].sum()`` selects ``q`` whatever the order of the sums.
    """
    r = spectrum.rank
    eps = float(torch.finfo(spectrum.values.dtype).eps)
    ratios = np.cumsum(lam) / spectrum.trace
    counts = np.arange(1, ratios.size + 1)
    reached = ratios >= fraction - 2.0 * (counts + 2) * eps
    usable = min(r - 1, ratios.size)  # one discarded direction is needed for sigma2
    q = int(np.argmax(reached)) + 1 if reached.any() else ratios.size + 1
    if q > usable:
        # In full precision (repr), so that the quoted maximum is itself accepted.
        most = float(ratios[usable - 1])
        raise ValueError(
            f"n_components={fraction!r} asks for that fraction of the variance, but the most the model can "
            f"keep is {most!r}: the top {usable} of the rank-{r} spectrum"
            + (" (at least one direction must be discarded to estimate sigma2)" if usable == r - 1 else
               f" (the only eigenvalues above the rounding level {spectrum.tolerance:.3g})")
            + f". Use a fraction of at most {most!r}, or an integer n_components."
        )
    return q


def minka_dimension(eigenvalues: np.ndarray, n_samples: int, max_components: int = 1000) -> int:
    """Minka's (2000) Laplace approximation of the PCA evidence: the best ``q``.

    scikit-learn's ``PCA(n_components="mle")`` criterion on the ``r`` non-zero eigenvalues of the
    centered Gram matrix (``r`` plays the data dimension); a scaling of the spectrum does not change ``q``.

    Parameters
    ----------
    eigenvalues : ndarray of shape (r,)
        All non-zero eigenvalues, descending.
    n_samples : int
    max_components : int, default 1000
        Candidates are ``1 .. min(r - 1, max_components)`` (each costs ``O(q r)``).

    Returns
    -------
    int
    """
    spec = np.asarray(eigenvalues, dtype=np.float64) / n_samples
    d = spec.shape[0]
    best_q, best_ll = 1, -np.inf
    log_n = math.log(n_samples)
    for q in range(1, min(d - 1, max_components) + 1):
        if spec[q - 1] < 1e-15:
            break
        i = np.arange(1, q + 1)
        pu = -q * math.log(2.0) + float(np.sum(gammaln((d - i + 1) / 2.0) - math.log(math.pi) * (d - i + 1) / 2.0))
        pl = -float(np.sum(np.log(spec[:q]))) * n_samples / 2.0
        v = max(np.finfo(np.float64).eps, float(spec[q:].sum()) / (d - q))
        pv = -math.log(v) * n_samples * (d - q) / 2.0
        m = d * q - q * (q + 1.0) / 2.0
        pp = math.log(2.0 * math.pi) * (m + q) / 2.0
        # pairwise terms i < j, i <= q, with the discarded eigenvalues replaced by v
        tilde = spec.copy()
        tilde[q:] = v
        diff = spec[:q, None] - spec[None, :]
        inv = 1.0 / tilde[None, :] - 1.0 / tilde[:q, None]
        upper = np.triu(np.ones((q, d), dtype=bool), k=1)
        with np.errstate(divide="ignore"):
            pa = float(np.sum(np.log(diff[upper] * inv[upper]))) + upper.sum() * log_n
        ll = pu + pl + pv + pp - pa / 2.0 - q * log_n / 2.0
        if ll > best_ll:
            best_q, best_ll = q, ll
    return best_q
