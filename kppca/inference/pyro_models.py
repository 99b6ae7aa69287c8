"""Pyro model functions for the latent codes (and, optionally, ``sigma2`` and ``W``) of a PPCA model.

Every model here is written in the ``r`` coordinates of ``H_E`` along the
orthonormal eigenbasis of the fitted model, never in the ambient space:

* primal: ``y = V_r^T (phi(x) - m)`` with ``V_r`` (d, r) the principal directions;
  ``y | h ~ N(V_r^T W h, sigma2 I_r)``;
* dual: ``u = E_r^T k_c(x)`` with ``E_r`` (N, r) the eigenvectors of ``K_c``;
  ``u | h ~ N(E_r^T K_c A h, sigma2 diag(lam_r))``.

``k_c | h`` is a Gaussian supported on ``range(K_c)`` (N-dimensional vectors, rank
``r``); sampling or observing it in its ``r`` coordinates keeps NUTS away from flat
directions, and ``pyro.deterministic`` embeds the coordinates back into ``R^N``
(``k_c = E_r u``) or ``R^d`` (``phi = V_r y + m``) for predictive checks.

All functions use ``pyro.plate("data", M)`` over the data points, so they work with
``pyro.infer.SVI``, ``pyro.infer.MCMC`` (NUTS/HMC) and ``pyro.infer.Predictive``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import pyro
import pyro.distributions as dist
import torch

from ..models import DualPPCA, PrimalPPCA
from ..models._base import BasePPCA

__all__ = [
    "primal_latent_model",
    "dual_latent_model",
    "bayesian_ppca_model",
    "latent_model",
    "bayesian_model",
    "subspace_coordinates",
]


# ---------------------------------------------------------------------------- helpers
def _num_points(obs: torch.Tensor | None, num_points: int | None) -> int:
    if obs is not None:
        if num_points is not None and num_points != obs.shape[0]:
            raise ValueError(f"num_points={num_points} does not match the {obs.shape[0]} observed rows.")
        return obs.shape[0]
    if num_points is None:
        raise ValueError("pass the observations or num_points (the plate size) for prior/predictive sampling.")
    return int(num_points)


def _standard_normal_latent(q: int, like: torch.Tensor) -> torch.Tensor:
    """``h_i ~ N(0, I_q)``; must be called inside the data plate."""
    zeros = like.new_zeros(q)
    return pyro.sample("h", dist.Normal(zeros, torch.ones_like(zeros)).to_event(1))


# ---------------------------------------------------------------------------- latent-only models
def primal_latent_model(
    y: torch.Tensor | None,
    loading: torch.Tensor,
    sigma2: float | torch.Tensor,
    *,
    basis: torch.Tensor | None = None,
    mean: torch.Tensor | None = None,
    num_points: int | None = None,
) -> torch.Tensor:
    """Primal PPCA with fixed parameters, latent ``h`` only: ``phi_i = W h_i + m + zeta_i``.

    Sites: ``"h"`` (M, q) latent; ``"y"`` (M, r) the coordinates of
    ``phi_i - m`` in ``H_E`` (observed when ``y`` is given); ``"phi"`` (M, d)
    deterministic ``V_r y + m`` when ``basis`` is given.

    Parameters
    ----------
    y : Tensor of shape (M, r) or None
        Observed coordinates ``V_r^T (phi(x_i) - m)``; None to sample them.
    loading : Tensor of shape (r, q)
        ``V_r^T W`` (for the ML fit ``[diag(sqrt(lam_q/N - sigma2)); 0]`` up to signs).
    sigma2 : float or 0-d Tensor
    basis : Tensor of shape (d, r), optional
        ``V_r``, to embed ``y`` into feature space.
    mean : Tensor of shape (d,), optional
        ``m``; zero when omitted.
    num_points : int, optional
        Plate size ``M`` when ``y`` is None.

    Returns
    -------
    Tensor of shape (M, q)
        The latent codes ``h`` of this trace.
    """
    M = _num_points(y, num_points)
    r, q = loading.shape
    noise = torch.as_tensor(sigma2, dtype=loading.dtype, device=loading.device).sqrt()
    with pyro.plate("data", M):
        h = _standard_normal_latent(q, loading)
        y = pyro.sample("y", dist.Normal(h @ loading.T, noise.expand(r)).to_event(1), obs=y)
        if basis is not None:
            offset = mean if mean is not None else basis.new_zeros(basis.shape[0])
            pyro.deterministic("phi", y @ basis.T + offset, event_dim=1)
    return h


def dual_latent_model(
    u: torch.Tensor | None,
    loading: torch.Tensor,
    sigma2: float | torch.Tensor,
    eigenvalues: torch.Tensor,
    *,
    basis: torch.Tensor | None = None,
    num_points: int | None = None,
) -> torch.Tensor:
    """Dual PPCA with fixed parameters, latent ``h`` only: ``k_c | h ~ N(K_c A h, sigma2 K_c)``.

    ``k_c`` is degenerate (supported on ``range(K_c)``), so it is modelled through
    its ``r`` coordinates ``u = E_r^T k_c``, which are independent given ``h``
    with variances ``sigma2 lam_p``.

    Sites: ``"h"`` (M, q) latent; ``"u"`` (M, r) (observed when ``u`` is given);
    ``"k_c"`` (M, N) deterministic ``E_r u`` when ``basis`` is given.

    Parameters
    ----------
    u : Tensor of shape (M, r) or None
        Observed ``E_r^T k_c(x_i)``; None to sample.
    loading : Tensor of shape (r, q)
        ``E_r^T K_c A`` (for the ML fit ``[diag(lam_q sqrt(1/N - sigma2/lam_q)); 0]`` up to signs).
    sigma2 : float or 0-d Tensor
    eigenvalues : Tensor of shape (r,)
        All non-zero eigenvalues ``lam`` of ``K_c``.
    basis : Tensor of shape (N, r), optional
        ``E_r``, to embed ``u`` into ``R^N``.
    num_points : int, optional
        Plate size when ``u`` is None.

    Returns
    -------
    Tensor of shape (M, q)
    """
    M = _num_points(u, num_points)
    r, q = loading.shape
    if eigenvalues.shape != (r,):
        raise ValueError(f"eigenvalues must have shape ({r},) to match loading, got {tuple(eigenvalues.shape)}.")
    scale = (torch.as_tensor(sigma2, dtype=loading.dtype, device=loading.device) * eigenvalues).sqrt()
    with pyro.plate("data", M):
        h = _standard_normal_latent(q, loading)
        u = pyro.sample("u", dist.Normal(h @ loading.T, scale).to_event(1), obs=u)
        if basis is not None:
            pyro.deterministic("k_c", u @ basis.T, event_dim=1)
    return h


# ---------------------------------------------------------------------------- Bayesian variant
def _bartlett_loading(q: int, scale: float, like: torch.Tensor) -> torch.Tensor:
    """Sample a lower-triangular ``W`` (q, q) whose ``W W^T`` has the law of ``G G^T``, ``G_ij ~ N(0, scale^2)``.

    Bartlett decomposition of the Wishart(q, scale^2 I) matrix ``G G^T``: its
    Cholesky factor has ``W_ii = scale sqrt(c_i)``, ``c_i ~ chi2(q - i)``
    (``i = 0 .. q-1``) and ``W_ij ~ N(0, scale^2)`` below the diagonal.
    """
    df = torch.arange(q, 0, -1, dtype=like.dtype, device=like.device)
    c = pyro.sample("W_chi2", dist.Chi2(df).to_event(1))
    rows, cols = torch.tril_indices(q, q, offset=-1, device=like.device)
    W = torch.diag_embed(scale * c.sqrt())
    if rows.numel():
        n_low = rows.numel()
        low = pyro.sample(
            "W_lower", dist.Normal(like.new_zeros(n_low), like.new_full((n_low,), scale)).to_event(1)
        )
        W = W.index_put((rows, cols), low)
    return pyro.deterministic("W", W, event_dim=2)


def bayesian_ppca_model(
    y: torch.Tensor | None,
    n_components: int,
    *,
    sigma2_prior: dist.Distribution,
    loading: torch.Tensor | None = None,
    loading_prior_scale: float | None = None,
    collapse_latent: bool = False,
    rank: int | None = None,
    num_points: int | None = None,
) -> None:
    """PPCA in the ``r`` orthonormal coordinates of ``H_E`` with priors on ``sigma2`` and optionally ``W``.

    ``y_i | h_i ~ N(L h_i, sigma2 I_r)``, ``h_i ~ N(0, I_q)``, ``sigma2 ~ sigma2_prior``,
    where the loading ``L`` (r, q) is either fixed or ``[W; 0]`` with
    ``W`` (q, q) Gaussian (``N(0, s^2)`` entries) in the top-``q`` principal
    coordinates. That restriction keeps the problem small (``q (q+1) / 2``
    parameters instead of ``r q``). Because the likelihood sees ``W`` only
    through ``W W^T``, ``W`` is sampled in its lower-triangular (Bartlett) form,
    which has exactly the law of ``W W^T`` under the Gaussian prior but not
    the flat ring of rotations ``W -> W R`` that NUTS cannot mix over.

    Sites: ``"sigma2"`` (); ``"W_chi2"`` (q,), ``"W_lower"`` (q (q-1) / 2,) and
    deterministic ``"W"`` (q, q) when the loading is not fixed; ``"h"`` (M, q)
    unless ``collapse_latent``; ``"y"`` (M, r).

    Parameters
    ----------
    y : Tensor of shape (M, r) or None
        Coordinates of the centered data along the principal directions (see
        :func:`subspace_coordinates`); None to sample (then pass ``rank`` and ``num_points``).
    n_components : int
        ``q``.
    sigma2_prior : Distribution
        A positive scalar prior, e.g. ``InverseGamma(a, b)`` or ``LogNormal(mu, s)``.
    loading : Tensor of shape (r, q), optional
        Fixed loading (e.g. the ML ``V_r^T W``); then only ``sigma2`` (and ``h``) are random.
    loading_prior_scale : float, optional
        Prior standard deviation ``s`` of the entries of ``W``; required when ``loading`` is None.
    collapse_latent : bool, default False
        Integrate ``h`` out analytically: ``y_i ~ N(0, L L^T + sigma2 I)``. Much
        cheaper for NUTS when only ``sigma2`` / ``W`` matter.
    rank : int, optional
        ``r`` when ``y`` is None and ``loading`` is None.
    num_points : int, optional
        Plate size when ``y`` is None.
    """
    M = _num_points(y, num_points)
    q = int(n_components)
    if y is not None:
        r = y.shape[1]
    elif loading is not None:
        r = loading.shape[0]
    elif rank is not None:
        r = int(rank)
    else:
        raise ValueError("pass y, loading or rank so that the dimension r of H_E is known.")
    if not 1 <= q < r:
        raise ValueError(f"n_components must satisfy 1 <= q < r = {r}, got {q}.")
    sigma2 = pyro.sample("sigma2", sigma2_prior)
    if loading is None:
        if loading_prior_scale is None:
            raise ValueError("pass loading_prior_scale (prior sd of W) or a fixed loading.")
        like = y if y is not None else torch.zeros((), dtype=torch.float64)
        loading = torch.cat([_bartlett_loading(q, float(loading_prior_scale), like), like.new_zeros((r - q, q))])
    elif loading.shape != (r, q):
        raise ValueError(f"loading must have shape ({r}, {q}), got {tuple(loading.shape)}.")
    if not collapse_latent:
        primal_latent_model(y, loading, sigma2, num_points=M)
        return
    with pyro.plate("data", M):
        # A dense r x r covariance: cheap for the small problems this variant is meant for.
        cov = loading @ loading.T + sigma2 * torch.eye(r, dtype=loading.dtype, device=loading.device)
        pyro.sample("y", dist.MultivariateNormal(loading.new_zeros(r), covariance_matrix=cov), obs=y)


# ---------------------------------------------------------------------------- builders from fitted models
def _check_model(model: Any) -> BasePPCA:
    if not isinstance(model, (PrimalPPCA, DualPPCA)):
        raise TypeError(f"model must be a fitted PrimalPPCA or DualPPCA, got {type(model).__name__}.")
    model._check_fitted("the pyro model builders")
    return model


def subspace_coordinates(model: PrimalPPCA | DualPPCA, X: Any) -> torch.Tensor:
    """Coordinates of ``phi(x) - m`` along all ``r`` orthonormal principal directions of ``H_E``.

    The same numbers for the primal and the dual model (up to the sign of each
    direction): ``V_r^T (phi - m)`` = ``diag(lam)^{-1/2} E_r^T k_c``.

    Parameters
    ----------
    model : fitted PrimalPPCA or DualPPCA
    X : array-like of shape (M, D)

    Returns
    -------
    Tensor of shape (M, r)
    """
    model = _check_model(model)
    return model._subspace_coordinates(model._validate_new_input(X, method="subspace_coordinates"))


def _loading_coordinates(model: BasePPCA) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(all eigenvalues (r,), basis (·, r), loading in that basis (r, q)) of a fitted model.

    The loading is computed as ``basis^T W`` (primal) or ``basis^T K_c A``
    (dual) rather than assumed diagonal, so it stays right whatever sign
    convention the cached full eigenbasis and the top-``q`` vectors use.
    """
    values, basis = model._full_eigen()
    if isinstance(model, PrimalPPCA):
        loading = basis.T @ model.W_
    else:
        lam = model.eigenvalues_
        KcA = model.eigenvectors_ * (lam * torch.sqrt(1.0 / model.n_samples_ - model.sigma2_ / lam))
        loading = basis.T @ KcA
    return values, basis, loading


def latent_model(
    model: PrimalPPCA | DualPPCA, X: Any | None = None, *, num_points: int | None = None
) -> Callable[[], torch.Tensor]:
    """A zero-argument Pyro model for the latent codes of ``X`` under a fitted model (ML parameters fixed).

    The returned callable can be handed directly to ``pyro.infer.NUTS``,
    ``SVI`` / autoguides and ``Predictive``. Its posterior over ``"h"`` is the
    closed form :meth:`~kppca.DualPPCA.latent_posterior`.

    Parameters
    ----------
    model : fitted PrimalPPCA or DualPPCA
        Primal: :func:`primal_latent_model` observing ``y = V_r^T (phi - m)``
        (the component of ``phi - m`` outside ``H_E`` is not modelled, as in
        ``score_samples``). Dual: :func:`dual_latent_model` observing ``u = E_r^T k_c``.
    X : array-like of shape (M, D), optional
        Points whose latent codes are inferred; None gives a generative model
        of ``num_points`` points (prior / predictive sampling).
    num_points : int, optional
        Plate size when ``X`` is None.

    Returns
    -------
    callable
        ``functools.partial`` of the model function with every argument bound.
    """
    model = _check_model(model)
    values, basis, loading = _loading_coordinates(model)
    Xt = None if X is None else model._validate_new_input(X, method="latent_model")
    if isinstance(model, PrimalPPCA):
        y = None if Xt is None else model._centered_features(Xt) @ basis
        return functools.partial(
            primal_latent_model, y, loading, model.sigma2_, basis=basis, mean=model.mean_, num_points=num_points
        )
    u = None if Xt is None else model._gram().project(Xt, basis)
    return functools.partial(
        dual_latent_model, u, loading, model.sigma2_, values, basis=basis, num_points=num_points
    )


def bayesian_model(
    model: PrimalPPCA | DualPPCA,
    X: Any | None = None,
    *,
    sigma2_prior: dist.Distribution | None = None,
    learn_loading: bool = False,
    loading_prior_scale: float | None = None,
    collapse_latent: bool = False,
) -> Callable[[], None]:
    """A zero-argument :func:`bayesian_ppca_model` on the ``H_E`` coordinates of a fitted model.

    The fitted model supplies the basis of ``H_E`` (and ``q``, and the ML
    loading when it is kept fixed); ``sigma2`` (and ``W``) get priors.

    Parameters
    ----------
    model : fitted PrimalPPCA or DualPPCA
    X : array-like of shape (M, D), optional
        The data (usually the training set); default ``model.X_fit_`` (required for models fitted
        with ``partial_fit`` or on a Dask array, which keep no training inputs).
    sigma2_prior : Distribution, optional
        Default ``LogNormal(log(v), 2)`` with ``v = trace(K_c) / (N r)`` the
        average variance per direction of ``H_E``: broad (two orders of
        magnitude either way) and centered on the total variance, not on the
        ML estimate, so that the data must move it there.
    learn_loading : bool, default False
        False: the loading is the ML ``W`` (in coordinates). True: ``W`` (q, q)
        gets a Gaussian prior in the top-``q`` coordinates.
    loading_prior_scale : float, optional
        Prior sd of ``W``'s entries; default ``sqrt(lam_1 / N)``, the largest principal standard deviation.
    collapse_latent : bool, default False
        See :func:`bayesian_ppca_model`.

    Returns
    -------
    callable
    """
    model = _check_model(model)
    if X is None and "X_fit_" not in model.__dict__:
        raise ValueError(
            f"this {type(model).__name__} was fitted incrementally (partial_fit) or from a Dask array and keeps no "
            "training inputs; pass the data explicitly: X=..."
        )
    y = subspace_coordinates(model, model.X_fit_ if X is None else X)
    values, _, loading = _loading_coordinates(model)
    if isinstance(model, DualPPCA):
        # u-coordinates are sqrt(lam)-scaled versions of y; bring the loading to the orthonormal coordinates.
        loading = loading / values.sqrt()[:, None]
    if sigma2_prior is None:
        v = model.total_variance_ / model.rank_
        sigma2_prior = dist.LogNormal(torch.tensor(math.log(v), dtype=y.dtype), torch.tensor(2.0, dtype=y.dtype))
    if learn_loading:
        top_sd = float(model.eigenvalues_[0] / model.n_samples_) ** 0.5
        scale, fixed = (loading_prior_scale if loading_prior_scale is not None else top_sd), None
    else:
        scale, fixed = None, loading
    return functools.partial(
        bayesian_ppca_model,
        y,
        model.n_components_,
        sigma2_prior=sigma2_prior,
        loading=fixed,
        loading_prior_scale=scale,
        collapse_latent=collapse_latent,
    )
