"""The paper's toy figure: 2-D data, its dual PPCA and kernel PCA reconstructions, and generated points."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .._validation import as_numpy
from ..inference.kpca_limit import kpca_limit_model

__all__ = ["plot_toy_generation"]


def plot_toy_generation(
    X: Any,
    n_components: Sequence[int] = (1, 3, 10),
    bandwidth: float = 0.5,
    *,
    n_generated: int = 200,
    preimage: str = "smoother",
    preimage_options: dict | None = None,
    random_state: int = 0,
    axes: Any = None,
    return_models: bool = False,
) -> Any:
    """Dual PPCA on 2-D data for several ``q`` (paper, Fig. 3): one panel per ``q``.

    Each panel shows the data (black), their MAP reconstruction with ML ``sigma2`` (blue), the kernel PCA
    reconstruction (``sigma2 -> 0``; red) and ``n_generated`` samples (grey), all through the same pre-image.

    Parameters
    ----------
    X : array-like of shape (N, 2)
    n_components : sequence of int, default (1, 3, 10)
    bandwidth : float, default 0.5
        RBF bandwidth sigma in ``exp(-|x - y|^2 / (2 sigma^2))``. The paper's explained variances on two moons
        are closer to those of 0.5 (``gamma = 2``) than of the 2 it states (neither matches its q = 1 value).
    n_generated : int, default 200
    preimage : str, default "smoother"
        The paper's kernel smoother; on all weights by default (``n_neighbors=None``): a Gaussian-like cloud of
        generated points, as in the paper.
    preimage_options : dict, optional
    random_state : int, default 0
    axes : sequence of matplotlib Axes, optional
        One per ``q``; a new figure is made when omitted.
    return_models : bool, default False
        Also return ``{q: (ppca, kpca)}``.

    Returns
    -------
    matplotlib.figure.Figure (and the models when ``return_models``)
    """
    import matplotlib.pyplot as plt

    from ..kernels import RBF
    from ..models import DualPPCA

    Xn = as_numpy(X, np.float64)
    if Xn.ndim != 2 or Xn.shape[1] != 2:
        raise ValueError(f"X must have shape (N, 2) for this figure, got {Xn.shape}.")
    qs = [int(q) for q in n_components]
    if preimage_options is None:
        preimage_options = {"n_neighbors": None} if preimage == "smoother" else {}
    if axes is None:
        fig, axes = plt.subplots(1, len(qs), figsize=(4.2 * len(qs), 4.0), squeeze=False)
        axes = axes[0]
    else:
        axes = list(np.atleast_1d(axes))
        if len(axes) != len(qs):
            raise ValueError(f"got {len(axes)} axes for {len(qs)} values of n_components.")
        fig = axes[0].figure
    models = {}
    for ax, q in zip(axes, qs):
        ppca = DualPPCA(q, kernel=RBF(bandwidth)).fit(Xn)
        kpca = kpca_limit_model(ppca, Xn)
        models[q] = (ppca, kpca)
        S = ppca.sample(n_generated, random_state=random_state, preimage=preimage, **preimage_options)
        R = ppca.reconstruct(Xn, preimage=preimage, **preimage_options)
        Rk = kpca.reconstruct(Xn, preimage=preimage, **preimage_options)
        ax.scatter(S[:, 0], S[:, 1], s=8, c="0.7", label="generated", zorder=1)
        ax.scatter(Xn[:, 0], Xn[:, 1], s=14, c="k", label="data", zorder=3)
        ax.scatter(Rk[:, 0], Rk[:, 1], s=14, c="C3", marker="x", label="KPCA reconstruction", zorder=4)
        ax.scatter(R[:, 0], R[:, 1], s=14, c="C0", marker="+", label="PPCA reconstruction", zorder=5)
        ev = float(np.asarray(ppca.explained_variance_ratio_.sum()))
        rel_s2 = ppca.sigma2_ / ppca.total_variance_
        ax.set_title(f"q = {q}: explained variance {100 * ev:.2f} %,\nsigma2 = {100 * rel_s2:.2f} % (N = {len(Xn)})",
                     fontsize=9)
        ax.set_aspect("equal", adjustable="datalim")
    axes[0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    if return_models:
        return fig, models
    return fig
