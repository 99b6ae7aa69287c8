"""scikit-learn's toy generators and 8x8 digits with fixed output types (float64, int64 labels), and time series.

``sklearn.datasets`` is imported inside the functions: its import costs about half a second.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .._param_validation import Integral, Interval, Real, check_scalar
from ._subsample import RandomState, check_n_samples, read_only, select_images, sklearn_seed

__all__ = ["DIGITS_SHAPE", "load_digits", "load_santafe", "make_circles", "make_moons", "make_swiss_roll",
           "sum_of_sines"]

#: Height and width of one image of :func:`load_digits`.
DIGITS_SHAPE: tuple[int, int] = (8, 8)

_POSITIVE = Interval(Real, 0, None, closed="neither")


def _sklearn_toy(name: str, n_samples: int, noise: Any, random_state: RandomState, **options: Any) -> tuple[Any, Any]:
    """``sklearn.datasets.<name>`` on validated arguments, ``X`` as float64."""
    import sklearn.datasets

    noise = float(check_scalar(noise, "noise", [Interval(Real, 0, None, closed="left")]))
    make = getattr(sklearn.datasets, name)
    X, y = make(n_samples=n_samples, noise=noise, random_state=sklearn_seed(random_state), **options)
    return X.astype(np.float64), y


def make_moons(
    n_samples: int = 50, noise: float = 0.1, random_state: RandomState = None
) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaving half circles, the classic non-linear toy problem.

    Parameters
    ----------
    n_samples : int, default 50
    noise : float, default 0.1
        Standard deviation of the Gaussian noise added to each coordinate.
    random_state : None, int or numpy.random.Generator, default None

    Returns
    -------
    X : numpy.ndarray of shape (n_samples, 2), dtype float64
    y : numpy.ndarray of shape (n_samples,), dtype int64
        Moon membership, 0 or 1.
    """
    X, y = _sklearn_toy("make_moons", check_n_samples(n_samples), noise, random_state)
    return X, y.astype(np.int64)


def make_circles(
    n_samples: int = 50, noise: float = 0.05, factor: float = 0.5, random_state: RandomState = None
) -> tuple[np.ndarray, np.ndarray]:
    """Two concentric circles, which no linear projection separates.

    Parameters
    ----------
    n_samples : int, default 50
    noise : float, default 0.05
        Standard deviation of the Gaussian noise added to each coordinate.
    factor : float, default 0.5
        Radius of the inner circle relative to the outer one, in (0, 1).
    random_state : None, int or numpy.random.Generator, default None

    Returns
    -------
    X : numpy.ndarray of shape (n_samples, 2), dtype float64
    y : numpy.ndarray of shape (n_samples,), dtype int64
        0 for the outer circle, 1 for the inner one.
    """
    n = check_n_samples(n_samples)
    check_scalar(factor, "factor", [Interval(Real, 0, 1, closed="neither")])
    X, y = _sklearn_toy("make_circles", n, noise, random_state, factor=float(factor))
    return X, y.astype(np.int64)


def make_swiss_roll(
    n_samples: int = 500, noise: float = 0.0, random_state: RandomState = None, *, hole: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Points on a rolled-up 2-D sheet in 3-D.

    Parameters
    ----------
    n_samples : int, default 500
    noise : float, default 0.0
        Standard deviation of the Gaussian noise added to each coordinate.
    random_state : None, int or numpy.random.Generator, default None
    hole : bool, default False
        Cut a rectangular hole out of the sheet.

    Returns
    -------
    X : numpy.ndarray of shape (n_samples, 3), dtype float64
    t : numpy.ndarray of shape (n_samples,), dtype float64
        Position of each point along the roll (for colouring plots).
    """
    X, t = _sklearn_toy("make_swiss_roll", check_n_samples(n_samples), noise, random_state, hole=bool(hole))
    return X, t.astype(np.float64)


@lru_cache(maxsize=1)
def _read_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 digits as read-only (uint8 images, int64 labels)."""
    from sklearn.datasets import load_digits as _sk_load_digits

    bunch = _sk_load_digits()
    images = bunch.images.astype(np.uint8)  # integers 0..16: uint8 loses nothing
    labels = bunch.target.astype(np.int64)
    return read_only(images, labels)


def load_digits(
    digits: Any = None,
    n_samples: int | None = None,
    random_state: RandomState = None,
    *,
    return_images: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 8x8 handwritten digits scaled to [0, 1], a small stand-in for MNIST.

    Parameters
    ----------
    digits, n_samples, random_state
        The selection, as in :func:`kppca.datasets.load_mnist`.
    return_images : bool, default False
        Return ``X`` of shape (n, 8, 8) instead of (n, 64).

    Returns
    -------
    X : numpy.ndarray of shape (n, 64), or (n, 8, 8) with ``return_images``
        Pixel intensities as float64 in [0, 1] (raw values 0..16 divided by 16).
    y : numpy.ndarray of shape (n,), dtype int64
        Digit labels, rows in the original order.
    """
    images, labels = _read_digits()  # raw values 0..16: 4-bit counts of a downsampled 32x32 bitmap
    return select_images(images, labels, 16.0, digits=digits, n_samples=n_samples, random_state=random_state,
                         source="scikit-learn's 8x8 digits", return_images=return_images)


def sum_of_sines(
    stop: float = 5.0, step: float = 0.01, *, amplitudes: tuple[float, float] = (1.0, 0.2),
    frequencies: tuple[float, float] = (1.0, 20.0),
) -> np.ndarray:
    """A sum of two sines ``a_1 sin(f_1 t) + a_2 sin(f_2 t)`` on ``t = 0, step, ..., stop``.

    The multi-view KPCA paper's first data set; its "omega in {100, 2000}" in ``sin(2 pi omega l)`` alias to a
    constant on an integer grid, so the defaults are angular frequencies 1 and 20, the shape of its Fig. 2.

    Parameters
    ----------
    stop, step : float
        Time grid ``t = 0, step, ..., stop`` (inclusive).
    amplitudes, frequencies : pairs of float
        Angular frequencies in radians per time unit.

    Returns
    -------
    ndarray of shape (n_points,)
    """
    check_scalar(stop, "stop", [_POSITIVE])
    check_scalar(step, "step", [_POSITIVE])
    t = np.arange(int(round(stop / step)) + 1) * step
    (a1, a2), (f1, f2) = amplitudes, frequencies
    return a1 * np.sin(f1 * t) + a2 * np.sin(f2 * t)


def load_santafe(n_train: int = 1000, n_test: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """The Santa Fe laser series (Weigend & Gershenfeld), split into train and test parts.

    Read from the copy bundled with ``reservoirpy`` (10,093 values; the rkm extra: ``pip install ".[rkm]"`` from
    the source tree).

    Parameters
    ----------
    n_train, n_test : int, default 1000, 100
        Lengths of the training part (the first values) and of the test part (the next ones).

    Returns
    -------
    train, test : ndarray of shape (n_train,) and (n_test,), float64

    Raises
    ------
    ImportError
        When reservoirpy is not installed.
    """
    spec = importlib.util.find_spec("reservoirpy")
    if spec is None or spec.origin is None:
        raise ImportError(
            "load_santafe reads the Santa Fe laser series bundled with reservoirpy; install it with "
            "the rkm extra (from the source tree: `pip install \".[rkm]\"`; where kppca comes from a package index: "
            "`pip install \"kppca[rkm]\"`) or `pip install reservoirpy`."
        )
    # The file only: importing reservoirpy is slow.
    path = Path(spec.origin).parent / "datasets" / "santafe_laser.npy"
    series = np.load(path, allow_pickle=False).astype(np.float64).ravel()  # data only, never code
    check_scalar(n_train, "n_train", [Interval(Integral, 1, None, closed="left")])
    check_scalar(n_test, "n_test", [Interval(Integral, 0, None, closed="left")])
    if n_train + n_test > series.size:
        raise ValueError(f"n_train={n_train} and n_test={n_test} must fit in the {series.size} values of the series.")
    return series[:n_train].copy(), series[n_train : n_train + n_test].copy()
