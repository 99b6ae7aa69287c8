"""Curves of a fit: a model's eigenvalue spectrum, and the objective histories of iterative fits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["plot_spectrum", "plot_history"]


def plot_spectrum(
    model: Any,
    *,
    ax: Any = None,
    n_show: int | None = None,
    log: bool = True,
    color: str = "C0",
) -> Any:
    """Plot the variances ``lambda_p / N`` against ``p``, with the cut at ``q`` and the level ``sigma2``.

    ``sigma2``, the mean of the discarded variances, is drawn dashed over the discarded directions.

    Parameters
    ----------
    model : fitted :class:`~kppca.DualPPCA` or :class:`~kppca.PrimalPPCA`
        Its full spectrum is used (cached by the model; an ``O(N^3)`` eigendecomposition after a partial fit).
    ax : matplotlib Axes, optional
    n_show : int, optional
        Number of eigenvalues shown (default: all ``r`` up to 200, and at least ``3 q``).
    log : bool, default True
        Logarithmic vertical axis.
    color : str, default "C0"

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    values, _ = model._full_eigen()
    lam = np.asarray(values.detach().cpu().numpy(), dtype=np.float64) / model.n_samples_
    q, r, s2 = model.n_components_, model.rank_, model.sigma2_
    if n_show is None:
        n_show = min(r, max(200, 3 * q))
    n_show = int(max(1, min(n_show, len(lam))))
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    p = np.arange(1, n_show + 1)
    kept = p <= q
    ax.plot(p[kept], lam[:n_show][kept], "o-", ms=3, color=color, label=f"kept ({q})")
    ax.plot(p[~kept], lam[:n_show][~kept], ".-", ms=2, color="0.55", label=f"discarded ({r - q} in all)")
    ax.hlines(s2, q + 0.5, n_show + 0.5, colors="C3", linestyles="--", label=f"sigma2 = {s2:.3g}")
    ax.axvline(q + 0.5, color="k", lw=0.8, ls=":", label=f"q = {q}")
    if log:
        ax.set_yscale("log")
    ev = float(np.asarray(model.explained_variance_ratio_.sum()))
    ax.set_xlabel("component p")
    ax.set_ylabel("variance lambda_p / N")
    ax.set_title(f"spectrum: explained variance {100 * ev:.2f} %, rank {r}", fontsize=10)
    ax.legend(fontsize=8)
    return ax


def plot_history(histories: Sequence[Sequence[float]], ax: Any = None, *, labels: Sequence[str] | None = None,
                 ylabel: str = "objective J") -> Any:
    """Plot one objective curve per history against the iteration number.

    Parameters
    ----------
    histories : sequence of sequence of float
        E.g. ``[m.history for m in DeepRKMClassifier.models_]`` or ``[OptimizeResult.history]``.
    ax : matplotlib Axes, optional
        Default: the current axes.
    labels : sequence of str, optional
        One per history (default ``"model k"`` when there are several).
    ylabel : str

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    for k, hist in enumerate(histories):
        label = labels[k] if labels is not None else (f"model {k}" if len(histories) > 1 else None)
        ax.plot(list(hist), label=label)
    ax.set_xlabel("iteration")
    ax.set_ylabel(ylabel)
    if labels is not None or len(histories) > 1:
        ax.legend()
    return ax
