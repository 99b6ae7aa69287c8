"""Many MNIST-like digits from a few (random small shifts and pixel noise), for benchmarks at large ``N``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._param_validation import Integral, Interval, Real, check_scalar, dtype_from_spec
from .._validation import numpy_rng
from ._subsample import RandomState, check_n_samples
from .mnist import PathLike, load_mnist

__all__ = ["augmented_mnist", "augmented_mnist_blocks"]

# Rows per block: the temporaries stay near 50 MB at float64. Changing it changes the data drawn for a seed.
_BLOCK_ROWS = 8192


def augmented_mnist(
    n_samples: int,
    *,
    digits: Any = None,
    max_shift: int = 2,
    noise: float = 0.05,
    random_state: RandomState = None,
    path: PathLike | None = None,
    dtype: Any = "float64",
    base: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """MNIST digits augmented by random shifts and Gaussian pixel noise, any number of rows.

    Every base digit (the selected rows of :func:`load_mnist`) is used once, in random order, before any is
    used again; each copy is shifted (the uncovered border is black), noised and clipped to [0, 1]. Filled
    in blocks: the working memory beyond the output is a few tens of MB, and the result for a seed does not
    depend on the machine.

    Parameters
    ----------
    n_samples : int
        Number of rows (may exceed the number of base digits).
    digits : None, int or iterable of int, default None
        Classes of the base digits, from 0..9; None uses all ten.
    max_shift : int, default 2
        Largest shift ``|dy|``, ``|dx|`` in pixels, below the image side.
    noise : float, default 0.05
        Standard deviation of the pixel noise (intensities in [0, 1]); 0 adds none.
    random_state : None, int, numpy.random.Generator or torch.Generator, default None
        A ``Generator`` advances, so calling again gives the next batch: a stream for ``partial_fit``
        that never exists whole in memory.
    path : str or os.PathLike, optional
        Folder with the MNIST IDX files, as in :func:`load_mnist`; the training split is used.
    dtype : {"float64", "float32"}, default "float64"
        Floating type of ``X``; float32 halves the memory (and the estimators' precision).
    base : array-like of int, optional
        Rows of ``load_mnist(digits=digits, path=path)`` to use as base digits; None uses all.

    Returns
    -------
    X : numpy.ndarray of shape (n_samples, 784), in [0, 1]
    y : numpy.ndarray of shape (n_samples,), dtype int64
        The label of each row's base digit.

    Raises
    ------
    MNISTNotFoundError
        If ``path`` does not hold the MNIST files.

    Examples
    --------
    >>> X, y = augmented_mnist(20000, random_state=0)
    >>> X.shape, X.dtype, float(X.min()) >= 0.0, float(X.max()) <= 1.0
    ((20000, 784), dtype('float64'), True, True)
    """
    n_samples = check_n_samples(n_samples)
    max_shift = int(check_scalar(max_shift, "max_shift", [Interval(Integral, 0, None, closed="left")]))
    noise = float(check_scalar(noise, "noise", [Interval(Real, 0, None, closed="left")]))
    np_dtype = np.dtype(_numpy_float(dtype))
    rng = numpy_rng(random_state)

    images, labels = load_mnist(digits=digits, path=path, return_images=True)
    if base is not None:
        rows = np.asarray(base)
        if rows.ndim != 1 or rows.size == 0 or rows.dtype.kind not in "iu" or rows.min() < 0 or rows.max() >= len(labels):
            raise ValueError(f"base must be a non-empty 1-D array of row indices in [0, {len(labels)}), got {base!r}.")
        images, labels = images[rows], labels[rows]
    height, width = images.shape[1:]
    if max_shift >= min(height, width):
        raise ValueError(
            f"max_shift={max_shift} would move every pixel out of the {height}x{width} images; "
            f"use a value from 0 to {min(height, width) - 1} (a shift of 1 to 3 pixels keeps digits readable)."
        )
    # Back to the exact bytes: a byte per pixel, and a lookup table that gives exactly load_mnist's values.
    base = np.rint(images * 255.0).astype(np.uint8)
    del images
    lut = (np.arange(256, dtype=np.float64) / 255.0).astype(np_dtype)
    n_base = len(base)

    # Whole random permutations of the base set, concatenated: balanced reuse.
    n_rounds = -(-n_samples // n_base)
    order = np.concatenate([rng.permutation(n_base) for _ in range(n_rounds)])[:n_samples]
    y = labels[order].astype(np.int64)

    X = np.empty((n_samples, height * width), dtype=np_dtype)
    if max_shift:
        # Zero-padded base: a shifted image is a window of it, gathered for a whole block at once.
        s = max_shift
        padded = np.zeros((n_base, height + 2 * s, width + 2 * s), dtype=np.uint8)
        padded[:, s : s + height, s : s + width] = base
        rows = np.arange(height)[None, :, None]
        cols = np.arange(width)[None, None, :]
    for start in range(0, n_samples, _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, n_samples)
        idx = order[start:stop]
        if max_shift:
            # Output pixel (r, c) of an image moved by (dy, dx) is input pixel (r - dy, c - dx).
            dy, dx = rng.integers(-max_shift, max_shift + 1, size=(2, stop - start))
            block = padded[
                idx[:, None, None],
                rows + (s - dy)[:, None, None],
                cols + (s - dx)[:, None, None],
            ]
        else:
            block = base[idx]
        out = X[start:stop]
        # mode="clip" avoids the buffered copy of mode="raise"; bytes are always valid indices.
        np.take(lut, block.reshape(stop - start, -1), out=out, mode="clip")
        if noise:
            out += noise * rng.standard_normal(out.shape, dtype=np_dtype)
            np.clip(out, 0.0, 1.0, out=out)
    return X, y


def _numpy_float(dtype: Any) -> type:
    """numpy's float32 or float64 for a ``dtype`` argument (the estimators' vocabulary)."""
    resolved = dtype_from_spec(dtype)  # raises, naming the argument, for anything else
    return np.float32 if resolved == torch.float32 else np.float64


def augmented_mnist_blocks(
    n_samples: int,
    *,
    block_rows: int = 10_000,
    random_state: RandomState = None,
    **options: Any,
) -> tuple[Any, Any]:
    """:func:`augmented_mnist` as Dask arrays whose row blocks are generated where they are computed.

    Each block is an :func:`augmented_mnist` call with its own seed drawn from ``random_state``, so a
    worker holds only the blocks it works on (and the reuse of base digits is balanced per block).

    Parameters
    ----------
    n_samples : int
    block_rows : int, default 10,000
        Rows per block (the last one may be shorter).
    random_state : None, int or numpy.random.Generator
    **options
        ``digits``, ``max_shift``, ``noise``, ``path``, ``dtype``, ``base`` of :func:`augmented_mnist`.

    Returns
    -------
    X : dask.array.Array of shape (n_samples, D)
    y : dask.array.Array of shape (n_samples,), int64, with the same row blocks
    """
    import dask
    import dask.array as da

    n_samples = check_n_samples(n_samples)
    block_rows = check_n_samples(block_rows, "block_rows")
    np_dtype = np.dtype(_numpy_float(options.get("dtype", "float64")))
    width = load_mnist(digits=options.get("digits"), path=options.get("path"))[0].shape[1]
    sizes = [min(block_rows, n_samples - start) for start in range(0, n_samples, block_rows)]
    seeds = numpy_rng(random_state).integers(2**62, size=len(sizes))
    make = dask.delayed(augmented_mnist, nout=2, pure=True)
    X_blocks, y_blocks = [], []
    for n, seed in zip(sizes, seeds):
        X_b, y_b = make(n, random_state=int(seed), **options)
        X_blocks.append(da.from_delayed(X_b, shape=(n, width), dtype=np_dtype))
        y_blocks.append(da.from_delayed(y_b, shape=(n,), dtype=np.int64))
    return da.concatenate(X_blocks), da.concatenate(y_blocks)
