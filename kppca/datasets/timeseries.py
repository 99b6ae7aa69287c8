"""Time series for auto-regressive forecasting (no network access)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from .._param_validation import Integral, Interval, Real, check_scalar

__all__ = ["load_santafe", "sum_of_sines"]

_POSITIVE = Interval(Real, 0, None, closed="neither")


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

    Read from the copy bundled with ``reservoirpy`` (10,093 values; ``pip install kppca[rkm]``).

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
            "`pip install kppca[rkm]` (or `pip install reservoirpy`)."
        )
    # The file only: importing reservoirpy is slow.
    path = Path(spec.origin).parent / "datasets" / "santafe_laser.npy"
    series = np.load(path, allow_pickle=False).astype(np.float64).ravel()  # data only, never code
    check_scalar(n_train, "n_train", [Interval(Integral, 1, None, closed="left")])
    check_scalar(n_test, "n_test", [Interval(Integral, 0, None, closed="left")])
    if n_train + n_test > series.size:
        raise ValueError(f"n_train={n_train} and n_test={n_test} must fit in the {series.size} values of the series.")
    return series[:n_train].copy(), series[n_train : n_train + n_test].copy()
