"""Per-point summaries of the latent codes: mean, sd and highest-density intervals (closed form or draws)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy.stats import norm

from .._param_validation import Interval, Real, check_scalar
from .arviz_adapter import _obs_coords

__all__ = ["latent_summary", "draws_summary", "normal_hdi", "sample_hdi"]


def _check_prob(hdi_prob: float) -> float:
    return float(check_scalar(hdi_prob, "hdi_prob", [Interval(Real, 0, 1, closed="neither")]))


def normal_hdi(mean: Any, sd: Any, hdi_prob: float = 0.94) -> tuple[np.ndarray, np.ndarray]:
    """HDI of ``N(mean, sd^2)`` (elementwise): ``mean -+ z sd``, ``z = Phi^{-1}((1 + hdi_prob)/2)``.

    Parameters
    ----------
    mean, sd : array-like of the same shape
    hdi_prob : float in (0, 1), default 0.94

    Returns
    -------
    lower, upper : ndarray
    """
    z = norm.ppf(0.5 + 0.5 * _check_prob(hdi_prob))
    mean, sd = np.asarray(mean, dtype=np.float64), np.asarray(sd, dtype=np.float64)
    return mean - z * sd, mean + z * sd


def sample_hdi(draws: Any, hdi_prob: float = 0.94, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Shortest interval holding ``ceil(hdi_prob * S)`` of ``S`` draws, along ``axis``.

    Parameters
    ----------
    draws : array-like, ``S`` draws along ``axis``
    hdi_prob : float in (0, 1), default 0.94
    axis : int, default 0

    Returns
    -------
    lower, upper : ndarray with ``axis`` removed
    """
    hdi_prob = _check_prob(hdi_prob)
    x = np.sort(np.moveaxis(np.asarray(draws, dtype=np.float64), axis, 0), axis=0)
    S = x.shape[0]
    k = int(np.ceil(hdi_prob * S))  # draws inside the interval
    if k < 2 or k > S:
        raise ValueError(f"{S} draws are too few for hdi_prob={hdi_prob}.")
    widths = x[k - 1 :] - x[: S - k + 1]  # every window of k consecutive order statistics
    start = np.argmin(widths, axis=0)
    lower = np.take_along_axis(x, start[None], axis=0)[0]
    upper = np.take_along_axis(x, (start + k - 1)[None], axis=0)[0]
    return lower, upper


def _frame(mean: np.ndarray, sd: np.ndarray, lower: np.ndarray, upper: np.ndarray,
           obs_names: Sequence[Any] | None, hdi_prob: float, source: str) -> pd.DataFrame:
    M, q = mean.shape
    index = pd.MultiIndex.from_product([_obs_coords(M, obs_names), range(q)], names=["obs", "component"])
    df = pd.DataFrame(
        {"mean": mean.ravel(), "sd": sd.ravel(), "hdi_lower": lower.ravel(), "hdi_upper": upper.ravel()},
        index=index,
    )
    df.attrs.update({"hdi_prob": hdi_prob, "source": source})
    return df


def latent_summary(
    model: Any, X: Any, hdi_prob: float = 0.94, *, obs_names: Sequence[Any] | None = None
) -> pd.DataFrame:
    """Closed-form summary of ``p(h | x)`` for every point and component.

    Parameters
    ----------
    model : fitted PrimalPPCA or DualPPCA
    X : array-like of shape (M, D)
    hdi_prob : float in (0, 1), default 0.94
    obs_names : sequence of length M, optional
        Labels of the points; default ``0 .. M-1``.

    Returns
    -------
    pandas.DataFrame
        ``M q`` rows indexed by (obs, component); columns ``mean``, ``sd``, ``hdi_lower``, ``hdi_upper``;
        ``df.attrs["hdi_prob"]``. ``df["mean"].unstack()`` is the (M, q) table of posterior means.
    """
    hdi_prob = _check_prob(hdi_prob)
    post = model.latent_posterior(X)
    mean = post.mean.detach().cpu().numpy()
    sd = torch.broadcast_to(post.stddev, post.mean.shape).detach().cpu().numpy()
    lower, upper = normal_hdi(mean, sd, hdi_prob)
    return _frame(mean, sd, lower, upper, obs_names, hdi_prob, "closed form")


def draws_summary(
    draws: Any, hdi_prob: float = 0.94, *, obs_names: Sequence[Any] | None = None
) -> pd.DataFrame:
    """The table of :func:`latent_summary` estimated from posterior draws of ``h``.

    Parameters
    ----------
    draws : array-like of shape (S, M, q) or (chain, draw, M, q)
        E.g. ``mcmc.get_samples()["h"]`` or ``idata.posterior["h"].values``.
    hdi_prob : float in (0, 1), default 0.94
    obs_names : sequence of length M, optional

    Returns
    -------
    pandas.DataFrame
        Same layout as :func:`latent_summary`; ``sd`` uses the ``S - 1`` divisor.
    """
    hdi_prob = _check_prob(hdi_prob)
    x = draws.detach().cpu().numpy() if isinstance(draws, torch.Tensor) else np.asarray(draws, dtype=np.float64)
    if x.ndim == 4:
        x = x.reshape(-1, *x.shape[2:])  # pool the chains
    if x.ndim != 3:
        raise ValueError(f"draws must have shape (S, M, q) or (chain, draw, M, q), got {x.shape}.")
    lower, upper = sample_hdi(x, hdi_prob, axis=0)
    return _frame(x.mean(0), x.std(0, ddof=1), lower, upper, obs_names, hdi_prob, "draws")
