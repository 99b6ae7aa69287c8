"""Pyro model functions for the latent codes (and, optionally, ``sigma2`` and ``W``) of a PPCA model.

The models observe the ``r`` coordinates of a point in ``H_E`` along the fitted eigenbasis, never the
ambient vector, which is degenerate (rank ``r``): the coordinates keep NUTS away from flat directions.
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


def _num_points(obs: torch.Tensor | None, num_points: int | None) -> int:
    if obs is not None:
        if num_points is not None and num_points != obs.shape[0]:
            raise ValueError(f"num_points={num_points} does not match the {obs.shape[0]} observed rows.")
        return obs.shape[0]
    if num_points is None:
        raise ValueError("pass the observations or num_points (the plate size) for prior/predictive sampling.")
    return int(num_points)


def _standard_normal_latent(q: int, like: torch.Tensor) -> torch.Tensor:
    zeros = like.new_zeros(q)
    return pyro.sample("h", dist.Normal(zeros, torch.ones_like(zeros)).to_event(1))


def primal_latent_model(
    y: torch.Tensor | None,
    loading: torch.Tensor,
    sigma2: float | torch.Tensor,
    *,
    basis: torch.Tensor | None = None,
    mean: torch.Tensor | None = None,
    num_points: int | None = None,
) -> torch.Tensor:
    """Primal PPCA with fixed parameters, latent ``h`` only: ``y_i | h_i ~ N(V_r^T W h_i, sigma2 I_r)``.

    Sites: ``"h"`` (M, q), ``"y"`` (M, r), and ``"phi"`` (M, d) ``= V_r y + m`` when ``basis`` is given.

    Parameters
    ----------
    y : Tensor of shape (M, r) or None
        Observed coordinates ``V_r^T (phi(x_i) - m)``; None to sample them.
    loading : Tensor of shape (r, q)
        ``V_r^T W``.
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

    Observes ``u = E_r^T k_c``, independent given ``h`` with variances ``sigma2 lam_p``. Sites: ``"h"`` (M, q),
    ``"u"`` (M, r), and ``"k_c"`` (M, N) ``= E_r u`` when ``basis`` is given.

    Parameters
    ----------
    u : Tensor of shape (M, r) or None
        Observed ``E_r^T k_c(x_i)``; None to sample.
    loading : Tensor of shape (r, q)
        ``E_r^T K_c A``.
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


def _bartlett_loading(q: int, scale: float, like: torch.Tensor) -> torch.Tensor:
    """Lower-triangular ``W`` (q, q) in Bartlett form: ``W_ii = scale sqrt(chi2(q - i))``, ``N(0, scale^2)`` below."""
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

    ``y_i | h_i ~ N(L h_i, sigma2 I_r)``, ``h_i ~ N(0, I_q)``, ``sigma2 ~ sigma2_prior``, with the loading
    ``L`` (r, q) fixed or ``[W; 0]``, ``W`` (q, q) Gaussian in the top-``q`` coordinates. The likelihood sees
    ``W`` only through ``W W^T``, so ``W`` is sampled in its lower-triangular (Bartlett) form: the same law
    of ``W W^T``, without the flat ring of rotations ``W -> W R`` that NUTS cannot mix over.

    Sites: ``"sigma2"``; ``"W_chi2"``, ``"W_lower"`` and ``"W"`` (q, q) unless the loading is fixed; ``"h"``
    (M, q) unless ``collapse_latent``; ``"y"`` (M, r).

    Parameters
    ----------
    y : Tensor of shape (M, r) or None
        The data's :func:`subspace_coordinates`; None to sample (then pass ``rank`` and ``num_points``).
    n_components : int
    sigma2_prior : Distribution
        A positive scalar prior, e.g. ``InverseGamma(a, b)`` or ``LogNormal(mu, s)``.
    loading : Tensor of shape (r, q), optional
        Fixed loading (e.g. the ML ``V_r^T W``).
    loading_prior_scale : float, optional
        Prior sd of the entries of ``W``; required when ``loading`` is None.
    collapse_latent : bool, default False
        Integrate ``h`` out: much cheaper for NUTS when only ``sigma2`` and ``W`` matter.
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


def _check_model(model: Any) -> BasePPCA:
    if not isinstance(model, (PrimalPPCA, DualPPCA)):
        raise TypeError(f"model must be a fitted PrimalPPCA or DualPPCA, got {type(model).__name__}.")
    model._check_fitted("the pyro model builders")
    return model


def subspace_coordinates(model: PrimalPPCA | DualPPCA, X: Any) -> torch.Tensor:
    """Coordinates of ``phi(x) - m`` along all ``r`` orthonormal principal directions of ``H_E``.

    Primal and dual models give the same numbers, up to the sign of each direction.

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
    """(eigenvalues (r,), basis (·, r), loading (r, q)): computed, not assumed diagonal, to hold the bases' signs."""
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

    For NUTS, SVI and Predictive; its posterior over ``"h"`` is the closed form
    :meth:`~kppca.DualPPCA.latent_posterior`.

    Parameters
    ----------
    model : fitted PrimalPPCA or DualPPCA
        Gives :func:`primal_latent_model` or :func:`dual_latent_model`.
    X : array-like of shape (M, D), optional
        Points whose latent codes are inferred; None gives a generative model of ``num_points`` points.
    num_points : int, optional
        Plate size when ``X`` is None.

    Returns
    -------
    callable
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

    Parameters
    ----------
    model : fitted PrimalPPCA or DualPPCA
    X : array-like of shape (M, D), optional
        The data; default ``model.X_fit_`` (required for models fitted with ``partial_fit`` or on Dask).
    sigma2_prior : Distribution, optional
        Default ``LogNormal(log(v), 2)``, ``v = trace(K_c) / (N r)``: broad and centered on the average
        variance per direction, not on the ML estimate, so that the data must move it there.
    learn_loading : bool, default False
        False: the loading is the ML ``W``. True: ``W`` (q, q) gets a Gaussian prior.
    loading_prior_scale : float, optional
        Prior sd of ``W``'s entries; default ``sqrt(lam_1 / N)``, the largest principal standard deviation.
    collapse_latent : bool, default False
        See :func:`bayesian_ppca_model`.

    Returns
    -------
    callable
    """
    model = _check_model(model)
    if X is None and not model._has_state("X_fit_"):
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
