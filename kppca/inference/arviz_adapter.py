"""Latent posteriors as ArviZ data: closed-form draws and Pyro MCMC results, for ArviZ 0.x and 1.x.

ArviZ 0.x's ``from_dict`` takes the groups as keywords, 1.x's (an ``xarray.DataTree``, no ``from_pyro``)
as one nested mapping; :func:`from_groups` is the one place that knows the difference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from .._param_validation import Integral, Interval, Real, check_scalar
from .._validation import torch_generator

__all__ = ["to_inference_data", "from_pyro_mcmc", "from_groups", "arviz_major_version", "arviz_summary", "LATENT_DIMS"]

#: Dimension names of the latent codes ``h`` after (chain, draw).
LATENT_DIMS = ("obs", "component")

#: Default dims of the sites of :mod:`kppca.inference.pyro_models` (sample dims excluded).
DEFAULT_SITE_DIMS: dict[str, list[str]] = {
    "h": list(LATENT_DIMS),
    "y": ["obs", "coordinate"],
    "u": ["obs", "coordinate"],
    "W": ["component_row", "component"],
    "W_chi2": ["component"],
    "W_lower": ["lower_index"],
    "sigma2": [],
}


def _import_arviz(arviz_module: Any = None) -> Any:
    if arviz_module is not None:
        return arviz_module
    import arviz  # imported lazily: it is slow and warns on import

    return arviz


def arviz_major_version(arviz_module: Any = None) -> int:
    """Major version of the installed (or given) ArviZ module."""
    az = _import_arviz(arviz_module)
    return int(str(az.__version__).split(".")[0])


def from_groups(
    groups: Mapping[str, Mapping[str, np.ndarray]],
    *,
    dims: Mapping[str, Sequence[str]] | None = None,
    coords: Mapping[str, Sequence[Any]] | None = None,
    attrs: Mapping[str, Any] | None = None,
    arviz_module: Any = None,
) -> Any:
    """Build the installed ArviZ's data object from ``{group: {variable: array}}``.

    Parameters
    ----------
    groups : mapping
        E.g. ``{"posterior": {"h": array (chain, draw, obs, component)}}``.
    dims : mapping of variable name -> list of dimension names (sample dims excluded)
    coords : mapping of dimension name -> coordinate values
    attrs : mapping, optional
        Attributes of the posterior group.
    arviz_module : module, optional
        Instead of ``import arviz`` (for tests).

    Returns
    -------
    arviz.InferenceData (ArviZ 0.x) or xarray.DataTree (ArviZ >= 1)
    """
    az = _import_arviz(arviz_module)
    dims = {k: list(v) for k, v in (dims or {}).items()}
    coords = {k: list(v) for k, v in (coords or {}).items()}
    data = {g: {k: np.asarray(v) for k, v in d.items()} for g, d in groups.items()}
    if arviz_major_version(az) >= 1:
        kwargs: dict[str, Any] = {"dims": dims, "coords": coords}
        if attrs:
            kwargs["attrs"] = {"posterior": dict(attrs)} if "posterior" in data else {"/": dict(attrs)}
        return az.from_dict(data, **kwargs)
    idata = az.from_dict(**data, dims=dims, coords=coords)
    if attrs and "posterior" in data:
        idata.posterior.attrs.update(dict(attrs))
    return idata


def arviz_summary(
    data: Any, var_names: Sequence[str] | None = None, *, kind: str = "all", hdi_prob: float = 0.94,
    arviz_module: Any = None,
) -> Any:
    """``arviz.summary`` called the same way on ArviZ 0.x and 1.x: unrounded values, the HDI in two fixed columns.

    ArviZ 1 renamed ``hdi_prob`` to ``ci_prob`` (with ``ci_kind="hdi"``) and the interval's columns from
    ``hdi_3%``/``hdi_97%`` to ``hdi94_lb``/``hdi94_ub``; both round by default.

    Parameters
    ----------
    data : ArviZ data (e.g. from :func:`to_inference_data` or :func:`from_groups`)
    var_names : sequence of str, optional
    kind : {"all", "stats", "diagnostics"}, default "all"
    hdi_prob : float in (0, 1), default 0.94
    arviz_module : module, optional
        Instead of ``import arviz`` (for tests).

    Returns
    -------
    pandas.DataFrame
        One row per scalar variable; ``kind="stats"`` columns ``mean``, ``sd``, ``hdi_lower``, ``hdi_upper``, and
        ``kind="all"`` adds ArviZ's diagnostics (``mcse_mean``, ``mcse_sd``, ``ess_bulk``, ``ess_tail``, ``r_hat``).
    """
    az = _import_arviz(arviz_module)
    hdi_prob = float(check_scalar(hdi_prob, "hdi_prob", [Interval(Real, 0, 1, closed="neither")]))
    if arviz_major_version(az) >= 1:
        table = az.summary(data, var_names=var_names, kind=kind, ci_prob=hdi_prob, ci_kind="hdi", round_to="none")
    else:
        table = az.summary(data, var_names=var_names, kind=kind, hdi_prob=hdi_prob, round_to="none")
    interval = [c for c in table.columns if str(c).startswith("hdi")]  # lower bound first in both versions
    return table.rename(columns=dict(zip(interval, ("hdi_lower", "hdi_upper"))))


def _obs_coords(M: int, obs_names: Sequence[Any] | None) -> list[Any]:
    if obs_names is None:
        return list(range(M))
    names = list(obs_names)
    if len(names) != M:
        raise ValueError(f"obs_names has {len(names)} entries but there are {M} points.")
    return names


def to_inference_data(
    model: Any,
    X: Any,
    *,
    num_draws: int = 1000,
    num_chains: int = 4,
    random_state: Any = None,
    obs_names: Sequence[Any] | None = None,
    arviz_module: Any = None,
) -> Any:
    """Draws of the closed-form latent posterior ``p(h | x)`` as ArviZ data.

    The draws are exact and independent, arranged in chains so that ArviZ's diagnostics and plots apply.

    Parameters
    ----------
    model : fitted PrimalPPCA or DualPPCA
    X : array-like of shape (M, D)
    num_draws : int, default 1000
        Draws per chain.
    num_chains : int, default 4
    random_state : int, Generator or None
    obs_names : sequence of length M, optional
        Coordinates of the ``obs`` dimension; default ``0 .. M-1``.
    arviz_module : module, optional

    Returns
    -------
    arviz.InferenceData (ArviZ 0.x) or xarray.DataTree (ArviZ >= 1)
        Posterior variable ``h`` (chain, draw, obs, component); attributes ``n_components``, ``sigma2``, ``model``.
    """
    num_draws = int(check_scalar(num_draws, "num_draws", [Interval(Integral, 1, None, closed="left")]))
    num_chains = int(check_scalar(num_chains, "num_chains", [Interval(Integral, 1, None, closed="left")]))
    post = model.latent_posterior(X)
    loc, std = post.mean.detach(), post.stddev.detach()  # (M, q), (M, q); the covariance is diagonal
    M, q = loc.shape
    gen = torch_generator(random_state, loc.device)
    eps = torch.randn((num_chains, num_draws, M, q), generator=gen, dtype=loc.dtype, device=loc.device)
    h = (loc + std * eps).cpu().numpy()
    attrs = {
        "model": type(model).__name__,
        "n_components": int(model.n_components_),
        "sigma2": float(model.sigma2_),
        "source": "closed-form latent posterior",
    }
    return from_groups(
        {"posterior": {"h": h}},
        dims={"h": list(LATENT_DIMS)},
        coords={"obs": _obs_coords(M, obs_names), "component": list(range(q))},
        attrs=attrs,
        arviz_module=arviz_module,
    )


def from_pyro_mcmc(
    mcmc: Any,
    *,
    var_names: Sequence[str] | None = None,
    dims: Mapping[str, Sequence[str]] | None = None,
    coords: Mapping[str, Sequence[Any]] | None = None,
    obs_names: Sequence[Any] | None = None,
    model: Any = None,
    deterministic: Sequence[str] = (),
    arviz_module: Any = None,
) -> Any:
    """Convert a finished ``pyro.infer.MCMC`` run into the same layout as :func:`to_inference_data`.

    Parameters
    ----------
    mcmc : pyro.infer.MCMC
    var_names : sequence of str, optional
        Sites to keep; default all sampled sites.
    dims, coords : mapping, optional
        Extra or overriding dims per site and coordinate values; this package's sites have defaults.
    obs_names : sequence of length M, optional
    model : callable, optional
        The sampled model with its arguments bound (e.g. from :func:`~kppca.inference.latent_model`);
        needed for ``deterministic``.
    deterministic : sequence of str, default ()
        ``pyro.deterministic`` sites (MCMC does not store them) to recompute per draw, e.g. ``("W",)``
        for :func:`~kppca.inference.bayesian_model` with ``learn_loading=True``.
    arviz_module : module, optional

    Returns
    -------
    arviz.InferenceData (ArviZ 0.x) or xarray.DataTree (ArviZ >= 1)
        ``posterior``, plus ``sample_stats`` with ``diverging`` when the run recorded it.
    """
    samples = mcmc.get_samples(group_by_chain=True)
    names = list(samples) if var_names is None else list(var_names)
    missing = [n for n in names if n not in samples]
    if missing:
        raise KeyError(f"sites {missing} are not in the MCMC samples (available: {sorted(samples)}).")
    posterior = {n: samples[n].detach().cpu().numpy() for n in names}
    if deterministic:
        if model is None:
            raise ValueError("pass the sampled model to recompute deterministic sites.")
        from pyro import poutine
        from pyro.infer import Predictive

        flat = mcmc.get_samples()
        chains, draws = next(iter(samples.values())).shape[:2]
        recomputed = Predictive(model, posterior_samples=flat, return_sites=list(deterministic))()
        # Predictive pads sites with batch dims up to the plate nesting; one conditioned trace gives the true shape.
        trace = poutine.trace(poutine.condition(model, {k: v[0] for k, v in flat.items()})).get_trace()
        for n in deterministic:
            shape = tuple(trace.nodes[n]["value"].shape)
            posterior[n] = recomputed[n].detach().cpu().numpy().reshape(chains, draws, *shape)
    all_dims = {n: list(d) for n, d in DEFAULT_SITE_DIMS.items() if n in posterior}
    all_dims.update({n: list(d) for n, d in (dims or {}).items()})
    all_coords: dict[str, list[Any]] = {}
    if "h" in posterior and all_dims.get("h") == list(LATENT_DIMS):
        M, q = posterior["h"].shape[2:]
        all_coords["obs"] = _obs_coords(M, obs_names)
        all_coords["component"] = list(range(q))
    if "W" in posterior and all_dims.get("W") == DEFAULT_SITE_DIMS["W"]:
        all_coords.setdefault("component", list(range(posterior["W"].shape[-1])))
        all_coords["component_row"] = list(range(posterior["W"].shape[-2]))
    all_coords.update({k: list(v) for k, v in (coords or {}).items()})
    groups: dict[str, dict[str, np.ndarray]] = {"posterior": posterior}
    extra = mcmc.get_extra_fields(group_by_chain=True) if hasattr(mcmc, "get_extra_fields") else {}
    if "diverging" in extra:
        groups["sample_stats"] = {"diverging": extra["diverging"].detach().cpu().numpy().astype(bool)}
    return from_groups(groups, dims=all_dims, coords=all_coords, arviz_module=arviz_module)
