"""Objective histories of iterative fits (deep RKM classifier models, optimisation results)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["plot_history"]


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
