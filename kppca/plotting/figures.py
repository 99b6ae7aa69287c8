"""Writing figures to files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["save_figure"]


def save_figure(fig: Any, path: str | Path, *, dpi: int = 100, close: bool = True) -> Path:
    """Write ``fig`` to ``path`` (format from the suffix, PNG when none), creating missing folders.

    Parameters
    ----------
    fig : matplotlib Figure
    path : str or Path
    dpi : int, default 100
    close : bool, default True
        Close the figure afterwards (scripts and the command line draw many figures).

    Returns
    -------
    Path
    """
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fig.savefig(path, format=path.suffix[1:].lower() or "png", dpi=dpi, bbox_inches="tight")
    finally:
        if close:
            plt.close(fig)
    return path
