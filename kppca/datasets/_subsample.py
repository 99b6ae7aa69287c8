"""Class filtering and stratified subsampling shared by the labelled loaders.

:func:`select_indices` implements the ``digits`` / ``n_samples`` /
``random_state`` semantics of :func:`kppca.datasets.load_mnist` and
:func:`kppca.datasets.load_digits` once, so both loaders accept the same inputs
and raise the same errors; :func:`read_only` marks the arrays they cache.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._param_validation import Integral, Interval, check_scalar, check_sequence
from .._validation import check_random_state, numpy_rng

__all__ = ["check_n_samples", "parse_labels", "read_only", "select_indices", "sklearn_seed"]

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


def parse_labels(labels: Any, n_classes: int = 10, name: str = "digits") -> list[int] | None:
    """Validate a class selection such as ``digits=[3, 5]``.

    Parameters
    ----------
    labels : None, int or iterable of int
        ``None`` keeps every class; a single int is treated as ``[labels]``.
    n_classes : int
        Labels are ``0 .. n_classes - 1``.
    name : str
        Argument name used in error messages.

    Returns
    -------
    list of int or None
        Sorted, de-duplicated labels, or None for "all classes".

    Raises
    ------
    ValueError
        If an entry is not a label (including non-integers such as ``'a'`` or ``3.0``),
        or if the selection is empty.
    """
    if labels is None:
        return None
    items = check_sequence(labels, name, [Interval(Integral, 0, n_classes - 1, closed="both")], repeat=1,
                           what="(class labels)")
    return sorted({int(item) for item in items})


def read_only(images: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)`` made read-only in place: guards shared cached arrays against in-place edits."""
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def _allocate(counts: np.ndarray, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """Split ``n_samples`` over classes proportionally to ``counts``.

    Uses the largest-remainder method in exact integer arithmetic, so the
    result always sums to ``n_samples`` and never exceeds a class count. Ties
    between equal remainders are broken at random (via ``rng``) rather than by
    label, so that no digit is systematically favoured.

    Parameters
    ----------
    counts : numpy.ndarray of shape (n_classes,)
        Number of available samples per class (all positive).
    n_samples : int
        Total to draw, at most ``counts.sum()``.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of shape (n_classes,)
        Samples to draw per class.
    """
    total = int(counts.sum())
    scaled = n_samples * counts.astype(np.int64)
    take = scaled // total
    remainder = scaled % total
    missing = n_samples - int(take.sum())
    # Sort by remainder (descending), random key as tie-breaker.
    order = np.lexsort((rng.random(len(counts)), -remainder))
    take[order[:missing]] += 1
    return take


def select_indices(
    y: np.ndarray,
    *,
    labels: Any = None,
    n_samples: Any = None,
    random_state: RandomState = None,
    n_classes: int = 10,
    name: str = "digits",
    source: str = "the data set",
) -> np.ndarray:
    """Indices of the rows kept after class filtering and stratified subsampling.

    Parameters
    ----------
    y : numpy.ndarray of shape (n,)
        Integer class labels of the full data set.
    labels : None, int or iterable of int
        Classes to keep (see :func:`parse_labels`); None keeps all.
    n_samples : None or int
        None keeps every selected row; an int draws that many rows without
        replacement, stratified: each class gets a share proportional to its
        frequency among the selected rows (largest-remainder rounding).
    random_state : None, int, numpy.random.Generator or RandomState
        Makes the subsample reproducible.
    n_classes : int
        ``labels`` are ``0 .. n_classes - 1``.
    name : str
        Name of the ``labels`` argument in error messages.
    source : str
        Description of the data for error messages (e.g. a folder).

    Returns
    -------
    numpy.ndarray of shape (n_kept,), dtype int64
        Increasing row indices: the kept rows stay in their original order.

    Raises
    ------
    ValueError
        Unknown labels, a requested class with no rows, a non-positive
        ``n_samples`` or more samples than available.
    TypeError
        Non-integer ``n_samples`` or unsupported ``random_state``.
    """
    y = np.asarray(y)
    wanted = parse_labels(labels, n_classes, name)
    if wanted is None:
        keep = np.arange(len(y))
    else:
        present = set(np.unique(y).tolist())
        absent = [d for d in wanted if d not in present]
        if absent:
            raise ValueError(f"{name}={wanted}: {source} has no samples with label(s) {absent}.")
        keep = np.flatnonzero(np.isin(y, wanted))
    if n_samples is None:
        return keep.astype(np.int64)

    n = check_n_samples(n_samples)
    if n > len(keep):
        which = "" if wanted is None else f" with {name}={wanted}"
        raise ValueError(f"n_samples={n} is more than the {len(keep)} sample(s) available in {source}{which}.")
    rng = numpy_rng(random_state)
    classes, counts = np.unique(y[keep], return_counts=True)
    take = _allocate(counts, n, rng)
    chosen = [
        rng.choice(keep[y[keep] == c], size=int(k), replace=False)
        for c, k in zip(classes, take)
        if k > 0
    ]
    return np.sort(np.concatenate(chosen)).astype(np.int64)
