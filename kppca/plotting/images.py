"""Image grids: generated samples, reconstructions and latent traversals."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .._param_validation import Integral, Interval, check_scalar
from .._validation import as_numpy

__all__ = ["image_shape_for", "tile_images", "plot_image_grid", "plot_latent_traversal"]


def _tick(v: float) -> str:
    return f"{0.0 if abs(v) < 1e-9 else v:.2g}"


def image_shape_for(n_features: int) -> tuple[int, int]:
    """``(side, side)`` for square images of ``n_features`` pixels (784 -> (28, 28)).

    Raises
    ------
    ValueError
        If ``n_features`` is not a perfect square; pass ``image_shape`` explicitly then.
    """
    side = math.isqrt(int(n_features))
    if side * side != n_features or side == 0:
        raise ValueError(
            f"cannot infer the image shape of {n_features} pixels (not a perfect square); pass image_shape=(h, w)."
        )
    return side, side


def tile_images(
    images: Any,
    image_shape: tuple[int, int] | None = None,
    n_cols: int | None = None,
    pad: int = 1,
    fill: float = np.nan,
) -> np.ndarray:
    """Arrange images in one 2-D mosaic array (row-major order).

    Parameters
    ----------
    images : array-like or Tensor of shape (n, h * w) or (n, h, w)
    image_shape : (h, w), optional
        Shape of one image for flat rows (default: square).
    n_cols : int, optional
        Images per row (default ``ceil(sqrt(n))``).
    pad : int, default 1
        Pixels between images.
    fill : float, default NaN
        Value of the padding and of empty cells (NaN shows as the background).

    Returns
    -------
    ndarray of shape (rows * (h + pad) - pad, n_cols * (w + pad) - pad)
    """
    A = as_numpy(images, np.float64)
    if A.ndim == 2:
        h, w = image_shape if image_shape is not None else image_shape_for(A.shape[1])
        if h * w != A.shape[1]:
            raise ValueError(f"image_shape {image_shape} does not match rows of {A.shape[1]} pixels.")
        A = A.reshape(-1, h, w)
    elif A.ndim != 3:
        raise ValueError(f"images must have shape (n, h*w) or (n, h, w), got {A.shape}.")
    n, h, w = A.shape
    if n == 0:
        raise ValueError("images is empty; nothing to plot.")
    if n_cols is None:
        n_cols = math.ceil(math.sqrt(n))
    n_cols = min(int(check_scalar(n_cols, "n_cols", [Interval(Integral, 1, None, closed="left")])), n)
    n_rows = math.ceil(n / n_cols)
    cells = np.full((n_rows * n_cols, h + pad, w + pad), fill, dtype=np.float64)
    cells[:n, :h, :w] = A
    mosaic = cells.reshape(n_rows, n_cols, h + pad, w + pad).transpose(0, 2, 1, 3)
    mosaic = mosaic.reshape(n_rows * (h + pad), n_cols * (w + pad))
    return mosaic[: mosaic.shape[0] - pad, : mosaic.shape[1] - pad]


def plot_image_grid(
    images: Any,
    image_shape: tuple[int, int] | None = None,
    n_cols: int | None = None,
    *,
    ax: Any = None,
    cmap: str = "gray",
    vmin: float | None = None,
    vmax: float | None = None,
    pad: int = 1,
    title: str | None = None,
) -> Any:
    """Show images (e.g. generated digits) in a grid, as one mosaic in a single Axes.

    Parameters
    ----------
    images, image_shape, n_cols, pad
        As in :func:`tile_images`.
    ax : matplotlib Axes, optional
        Where to draw; a new figure is made when omitted.
    cmap : str, default "gray"
    vmin, vmax : float, optional
        Colour limits, shared by all images (default: min and max over all images,
        so blurred pre-images keep their contrast).
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    mosaic = tile_images(images, image_shape, n_cols, pad)
    if ax is None:
        rows, cols = mosaic.shape
        scale = 6.0 / max(rows, cols)
        _, ax = plt.subplots(figsize=(max(cols * scale, 2.0), max(rows * scale, 2.0)))
    finite = mosaic[np.isfinite(mosaic)]
    vmin = float(finite.min()) if vmin is None else vmin
    vmax = float(finite.max()) if vmax is None else vmax
    if vmax <= vmin:
        vmax = vmin + 1.0
    cm = plt.get_cmap(cmap).with_extremes(bad="white")
    ax.imshow(np.ma.masked_invalid(mosaic), cmap=cm, vmin=vmin, vmax=vmax, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title)
    return ax


def plot_latent_traversal(
    model: Any = None,
    components: Sequence[int] = (0, 1),
    n_steps: int = 8,
    extent: float | tuple[float, float] = 2.0,
    preimage: str | None = None,
    *,
    grid: Any = None,
    codes: Any = None,
    image_shape: tuple[int, int] | None = None,
    ax: Any = None,
    cmap: str = "gray",
    **preimage_options: Any,
) -> Any:
    """Latent traversal (paper, Fig. 4c): inputs over a grid of two latent components.

    Either pass a fitted ``model`` (then :meth:`latent_traversal` is called with
    ``components``, ``n_steps``, ``extent``, ``preimage``) or a precomputed
    ``grid`` of shape (rows, cols, D) with its ``codes`` (rows, cols, q).

    Returns
    -------
    matplotlib.axes.Axes
        Columns vary the first component (left to right), rows the second
        (top to bottom, decreasing); the tick labels give the code values.
    """
    import matplotlib.pyplot as plt

    if grid is None:
        if model is None:
            raise ValueError("pass a fitted model or a precomputed grid.")
        grid, codes = model.latent_traversal(
            components, n_steps, extent, preimage, return_codes=True, **preimage_options
        )
    G = as_numpy(grid, np.float64)
    if G.ndim != 3:
        raise ValueError(f"grid must have shape (rows, cols, D), got {G.shape}.")
    rows, cols, D = G.shape
    h, w = image_shape if image_shape is not None else image_shape_for(D)
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.7 * cols, 1.0 + 0.7 * rows))
    pad = 1
    plot_image_grid(G.reshape(rows * cols, D), (h, w), cols, ax=ax, cmap=cmap, pad=pad)
    comps = tuple(components) if not isinstance(components, int) else (components,)
    if codes is not None:
        C = as_numpy(codes, np.float64)
        ax.set_xticks([c * (w + pad) + w / 2 for c in range(cols)])
        ax.set_xticklabels([_tick(v) for v in C[0, :, comps[0]]], fontsize=7)
        ax.set_xlabel(f"h[{comps[0]}]")
        if rows > 1 and len(comps) > 1:
            ax.set_yticks([r * (h + pad) + h / 2 for r in range(rows)])
            ax.set_yticklabels([_tick(v) for v in C[:, 0, comps[1]]], fontsize=7)
            ax.set_ylabel(f"h[{comps[1]}]")
    return ax
