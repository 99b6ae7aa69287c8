"""Class filtering and stratified subsampling shared by the labelled loaders (the same semantics and errors)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._param_validation import Integral, Interval, check_scalar, check_sequence
from .._validation import check_random_state, numpy_rng

RandomState = Any  # None, int, numpy Generator or RandomState


def sklearn_seed(random_state: RandomState) -> int | np.random.RandomState | None:
    """``random_state`` as scikit-learn takes it; a ``Generator`` gives a seed drawn from it (it advances)."""
    check_random_state(random_state)
    if random_state is None or isinstance(random_state, np.random.RandomState):
        return random_state
    if isinstance(random_state, (np.random.Generator, torch.Generator)):
        return int(numpy_rng(random_state).integers(2**31 - 1))
    return int(random_state) % 2**32  # scikit-learn's RandomState takes seeds below 2**32


def check_n_samples(n_samples: Any, name: str = "n_samples") -> int:
    """``n_samples`` as a positive Python int (a TypeError for non-integers and bools, a ValueError below 1)."""
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
    """Increasing int64 indices of the rows of the classes ``labels``; ``n_samples`` of them stratified by class."""
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
    """Fresh ``(X, y)`` of the selected rows: float64 ``images / scale``, flat unless ``return_images``."""
    rows = select_indices(labels, labels=digits, n_samples=n_samples, random_state=random_state, source=source)
    X = images[rows].astype(np.float64) / scale
    if not return_images:
        X = X.reshape(len(rows), -1)
    return X, labels[rows]
