"""Class filtering and stratified subsampling shared by the labelled loaders.

:func:`select_images` gives :func:`kppca.datasets.load_mnist` and
:func:`kppca.datasets.load_digits` the same ``digits`` / ``n_samples`` /
``random_state`` semantics and errors; :func:`read_only` marks the arrays they cache.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._param_validation import Integral, Interval, check_scalar, check_sequence
from .._validation import check_random_state, numpy_rng

__all__ = ["check_n_samples", "read_only", "select_images", "select_indices", "sklearn_seed"]

RandomState = Any  # None, int, numpy Generator or RandomState


def sklearn_seed(random_state: RandomState) -> int | np.random.RandomState | None:
    """Convert ``random_state`` into something scikit-learn's generators accept.

    scikit-learn only understands None, ints and ``RandomState``; a numpy
    ``Generator`` is turned into an int seed drawn from it, so passing the same
    generator twice gives different (but reproducible) data, as users expect.
    """
    check_random_state(random_state)
    if random_state is None or isinstance(random_state, np.random.RandomState):
        return random_state
    if isinstance(random_state, (np.random.Generator, torch.Generator)):
        return int(numpy_rng(random_state).integers(2**31 - 1))
    return int(random_state) % 2**32  # scikit-learn's RandomState takes seeds below 2**32


def check_n_samples(n_samples: Any, name: str = "n_samples") -> int:
    """Return ``n_samples`` as a positive Python int or raise.

    Raises
    ------
    TypeError
        If ``n_samples`` is not an integer (bools are refused too, since
        ``True`` is almost always a mistake here).
    ValueError
        If ``n_samples`` is zero or negative.
    """
    return int(check_scalar(n_samples, name, [Interval(Integral, 1, None, closed="left")]))


def read_only(images: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)`` made read-only in place: guards shared cached arrays against in-place edits."""
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def select_indices(
    y: np.ndarray, *, labels: Any = None, n_samples: Any = None, random_state: RandomState = None,
    source: str = "the data set",
) -> np.ndarray:
    """Indices of the rows kept after class filtering and stratified subsampling.

    Parameters
    ----------
    y : numpy.ndarray of shape (n,)
        Integer class labels 0..9 of the full data set.
    labels : None, int or iterable of int
        Classes to keep (the ``digits`` argument); None keeps all.
    n_samples : None or int
        None keeps every selected row; an int draws that many rows without
        replacement, stratified: each class gets a share proportional to its
        frequency among the selected rows (largest-remainder rounding).
    random_state : None, int, numpy.random.Generator or RandomState
        Makes the subsample reproducible.
    source : str
        Description of the data for error messages (e.g. a folder).

    Returns
    -------
    numpy.ndarray of shape (n_kept,), dtype int64
        Increasing row indices: the kept rows stay in their original order.

    Raises
    ------
    ValueError
        Unknown labels (including non-integers such as ``'a'`` or ``3.0``), an
        empty selection, a requested class with no rows, a non-positive
        ``n_samples`` or more samples than available.
    TypeError
        Non-integer ``n_samples`` or unsupported ``random_state``.
    """
    y = np.asarray(y)
    if labels is None:
        wanted = None
        keep = np.arange(len(y))
    else:
        items = check_sequence(labels, "digits", [Interval(Integral, 0, 9, closed="both")], repeat=1,
                               what="(class labels)")
        wanted = sorted({int(item) for item in items})
        present = set(np.unique(y).tolist())
        absent = [d for d in wanted if d not in present]
        if absent:
            raise ValueError(f"digits={wanted}: {source} has no samples with label(s) {absent}.")
        keep = np.flatnonzero(np.isin(y, wanted))
    if n_samples is None:
        return keep.astype(np.int64)

    n = check_n_samples(n_samples)
    if n > len(keep):
        which = "" if wanted is None else f" with digits={wanted}"
        raise ValueError(f"n_samples={n} is more than the {len(keep)} sample(s) available in {source}{which}.")
    rng = numpy_rng(random_state)
    classes, counts = np.unique(y[keep], return_counts=True)
    # Largest-remainder split of n over the classes, in exact integer arithmetic: it sums to n and never
    # exceeds a class count. Ties between equal remainders are broken at random, not by label, so that no
    # digit is systematically favoured.
    scaled = n * counts.astype(np.int64)
    take = scaled // len(keep)
    order = np.lexsort((rng.random(len(counts)), -(scaled % len(keep))))
    take[order[: n - int(take.sum())]] += 1
    chosen = [
        rng.choice(keep[y[keep] == c], size=int(k), replace=False)
        for c, k in zip(classes, take)
        if k > 0
    ]
    return np.sort(np.concatenate(chosen)).astype(np.int64)


def select_images(
    images: np.ndarray, labels: np.ndarray, scale: float, *, digits: Any, n_samples: Any,
    random_state: RandomState, source: str, return_images: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The rows of :func:`select_indices` as ``(X, y)``, ``X = images / scale`` in float64.

    ``X`` is flat unless ``return_images``. Fancy indexing copies, and the float conversion copies
    again: the cached arrays are never handed out.
    """
    rows = select_indices(labels, labels=digits, n_samples=n_samples, random_state=random_state, source=source)
    X = images[rows].astype(np.float64) / scale
    if not return_images:
        X = X.reshape(len(rows), -1)
    return X, labels[rows]
