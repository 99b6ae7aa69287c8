"""scikit-learn's toy generators and 8x8 digits with fixed output types (float64, int64 labels).

``sklearn.datasets`` is imported inside the functions: its import costs about half a second.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from .._param_validation import Interval, Real, check_scalar
from ._subsample import RandomState, check_n_samples, read_only, select_images, sklearn_seed

__all__ = ["DIGITS_SHAPE", "load_digits", "make_circles", "make_moons", "make_swiss_roll"]

#: Height and width of one image of :func:`load_digits`.
DIGITS_SHAPE: tuple[int, int] = (8, 8)


def _check_noise(noise: Any) -> float:
    return float(check_scalar(noise, "noise", [Interval(Real, 0, None, closed="left")]))


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
    from sklearn.datasets import make_moons as _sk_make_moons

    n = check_n_samples(n_samples)
    X, y = _sk_make_moons(n_samples=n, noise=_check_noise(noise), random_state=sklearn_seed(random_state))
    return X.astype(np.float64), y.astype(np.int64)


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
    from sklearn.datasets import make_circles as _sk_make_circles

    n = check_n_samples(n_samples)
    check_scalar(factor, "factor", [Interval(Real, 0, 1, closed="neither")])
    X, y = _sk_make_circles(
        n_samples=n, noise=_check_noise(noise), factor=float(factor), random_state=sklearn_seed(random_state)
    )
    return X.astype(np.float64), y.astype(np.int64)


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
    from sklearn.datasets import make_swiss_roll as _sk_make_swiss_roll

    n = check_n_samples(n_samples)
    X, t = _sk_make_swiss_roll(
        n_samples=n, noise=_check_noise(noise), random_state=sklearn_seed(random_state), hole=bool(hole)
    )
    return X.astype(np.float64), t.astype(np.float64)


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
