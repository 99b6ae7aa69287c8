"""Plots of latent uncertainty from the closed-form posterior: credible ellipses and forest plots."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import PatchCollection
from matplotlib.patches import Ellipse
from scipy.stats import chi2

from .._validation import as_numpy
from ..inference.summaries import latent_summary

__all__ = ["credible_ellipse", "plot_latent_uncertainty", "plot_latent_forest"]


def credible_ellipse(mean: Any, cov: Any, prob: float = 0.94, **kwargs: Any) -> Ellipse:
    """The ``prob`` credible ellipse of a 2-d Gaussian ``N(mean, cov)`` as a matplotlib patch.

    Parameters
    ----------
    mean : array-like of shape (2,)
    cov : array-like of shape (2, 2)
        Symmetric positive definite.
    prob : float in (0, 1), default 0.94
        Probability mass inside the ellipse.
    **kwargs
        Passed to :class:`matplotlib.patches.Ellipse` (default ``fill=False``).

    Returns
    -------
    matplotlib.patches.Ellipse
        ``width`` / ``height`` are the full axis lengths ``2 sqrt(chi2_2^{-1}(prob) mu_i)``
        for the eigenvalues ``mu_1 >= mu_2`` of ``cov``; ``angle`` (degrees) is that of the major axis.
    """
    if not 0 < prob < 1:
        raise ValueError(f"prob must lie in (0, 1), got {prob!r}.")
    mean = np.asarray(mean, dtype=np.float64).reshape(-1)
    cov = np.asarray(cov, dtype=np.float64)
    if mean.shape != (2,) or cov.shape != (2, 2):
        raise ValueError(f"need mean of shape (2,) and cov of shape (2, 2), got {mean.shape} and {cov.shape}.")
    values, vectors = np.linalg.eigh(0.5 * (cov + cov.T))
    if values[0] <= 0:
        raise ValueError("cov must be positive definite.")
    radius2 = chi2.ppf(prob, df=2)  # squared Mahalanobis radius holding `prob` of the mass
    major = vectors[:, 1]
    angle = float(np.degrees(np.arctan2(major[1], major[0])))
    kwargs.setdefault("fill", False)
    return Ellipse(
        (float(mean[0]), float(mean[1])),
        width=2.0 * np.sqrt(radius2 * values[1]),
        height=2.0 * np.sqrt(radius2 * values[0]),
        angle=angle,
        **kwargs,
    )


def plot_latent_uncertainty(
    model: Any,
    X: Any,
    *,
    components: tuple[int, int] = (0, 1),
    prob: float = 0.94,
    c: Any = None,
    ax: Axes | None = None,
    max_ellipses: int | None = 200,
    ellipse_kwargs: dict[str, Any] | None = None,
    scatter_kwargs: dict[str, Any] | None = None,
) -> Axes:
    """Scatter of posterior means of ``h`` with one credible ellipse per point.

    Parameters
    ----------
    model : fitted PrimalPPCA or DualPPCA with ``n_components_ >= 2``
    X : array-like of shape (M, D)
    components : pair of int, default (0, 1)
        The two latent components on the axes.
    prob : float, default 0.94
        Mass of each ellipse (radius from the chi-square quantile with 2 dof).
    c : array-like of shape (M,), optional
        Colours / labels for the points (e.g. classes).
    ax : Axes, optional
        Draw here; default a new figure.
    max_ellipses : int or None, default 200
        Ellipses for the first ``max_ellipses`` points only (all when None), to keep large plots legible.
    ellipse_kwargs, scatter_kwargs : dict, optional
        Passed to the patches and to ``Axes.scatter``.

    Returns
    -------
    matplotlib.axes.Axes
        The ellipses are in ``ax.collections`` as one ``PatchCollection`` (label ``"credible ellipses"``).
    """
    q = int(model.n_components_)
    i, j = components
    if not (0 <= i < q and 0 <= j < q and i != j):
        raise ValueError(f"components must be two distinct indices below n_components_ = {q}, got {components}.")
    post = model.latent_posterior(X)
    mean = as_numpy(post.mean)[:, [i, j]]
    cov = as_numpy(post.covariance_matrix)
    cov = cov.reshape(-1, q, q)[0][np.ix_([i, j], [i, j])]  # the same for every point
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5))
    n = mean.shape[0] if max_ellipses is None else min(mean.shape[0], int(max_ellipses))
    ekw = {"facecolor": "none", "edgecolor": "0.4", "linewidth": 0.8, "alpha": 0.7, **(ellipse_kwargs or {})}
    ekw.setdefault("label", "credible ellipses")
    patches = [credible_ellipse(mean[k], cov, prob) for k in range(n)]
    collection = PatchCollection(patches, match_original=False, **ekw)
    ax.add_collection(collection)
    skw = {"s": 12, "zorder": 3, **(scatter_kwargs or {})}
    ax.scatter(mean[:, 0], mean[:, 1], c=c, **skw)
    ax.set_xlabel(f"$h_{{{i + 1}}}$")
    ax.set_ylabel(f"$h_{{{j + 1}}}$")
    ax.set_title(f"posterior means, {prob:.0%} credible ellipses")
    ax.set_aspect("equal", adjustable="datalim")  # so the ellipses keep their true shape
    ax.autoscale_view()
    return ax


def plot_latent_forest(
    model: Any,
    X: Any,
    indices: Sequence[int] | None = None,
    *,
    hdi_prob: float = 0.94,
    components: Sequence[int] | None = None,
    obs_names: Sequence[Any] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Forest plot: posterior mean and HDI of each latent component for selected points.

    ArviZ's forest plot is ``arviz.plot_forest(kppca.inference.to_inference_data(model, X), var_names=["h"])``.

    Parameters
    ----------
    model : fitted PrimalPPCA or DualPPCA
    X : array-like of shape (M, D)
    indices : sequence of int, optional
        Rows of ``X`` to show (default the first ``min(M, 10)``).
    hdi_prob : float, default 0.94
    components : sequence of int, optional
        Latent components to show (default all).
    obs_names : sequence of length M, optional
        Labels of the rows of ``X``.
    ax : Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        One horizontal line (``LineCollection``) per (point, component) from ``hdi_lower`` to
        ``hdi_upper``, a marker at the mean; points on the y axis.
    """
    table = latent_summary(model, X, hdi_prob)
    M = len(table.index.levels[0])
    idx = list(range(min(M, 10))) if indices is None else [int(k) for k in indices]
    if any(not 0 <= k < M for k in idx):
        raise IndexError(f"indices must lie in [0, {M}), got {idx}.")
    names = list(range(M)) if obs_names is None else list(obs_names)
    if len(names) != M:
        raise ValueError(f"obs_names has {len(names)} entries but X has {M} rows.")
    q = int(model.n_components_)
    comps = list(range(q)) if components is None else [int(p) for p in components]
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 0.35 * len(idx) * max(len(comps), 1) + 1.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    offsets = np.linspace(-0.25, 0.25, len(comps)) if len(comps) > 1 else np.zeros(1)
    for n, p in enumerate(comps):
        rows = table.xs(p, level="component").loc[idx]
        y = np.arange(len(idx))[::-1] + offsets[n]
        color = colors[n % len(colors)]
        ax.hlines(y, rows["hdi_lower"], rows["hdi_upper"], color=color, linewidth=1.5, label=f"$h_{{{p + 1}}}$")
        ax.plot(rows["mean"], y, "o", color=color, markersize=4)
    ax.set_yticks(np.arange(len(idx))[::-1])
    ax.set_yticklabels([str(names[k]) for k in idx])
    ax.axvline(0.0, color="0.7", linewidth=0.8, zorder=0)
    ax.set_xlabel(f"latent code ({hdi_prob:.0%} HDI)")
    ax.legend(loc="best", fontsize="small")
    return ax
