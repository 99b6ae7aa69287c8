"""Landmark selection over the whole data set, in memory or blockwise on a Dask array, and the Nyström
feature map built on the landmarks.

``"uniform"`` keeps the ``m`` rows of smallest ``U(0, 1)`` key, blockwise then merged pairwise (exactly uniform,
see docs/distributed.md); keys seeded by ``(seed, block)`` give the same landmarks on any scheduler.
``"kmeans++"`` seeds in the kernel's feature space (Arthur and Vassilvitskii, 2007) over a uniform pool.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._dask import reduce_blocks
from .._linalg import rank_tolerance
from .._param_validation import Integral, Interval, StrOptions, check_scalar
from .._validation import numpy_rng
from ..io.record import fitted
from ..io.specs import TensorSpec
from ..kernels.base import Kernel
from ..kernels.standard import as_kernel
from .base import FeatureMap, FeatureMapState

__all__ = [
    "LANDMARK_SELECTIONS", "POOL_FACTOR", "Reservoir", "block_reservoir", "reservoir", "kmeanspp", "Nystroem",
]

#: The landmark selection rules of :class:`~kppca.features.Nystroem`.
LANDMARK_SELECTIONS: tuple[str, ...] = ("uniform", "kmeans++")

#: Size of the uniform pool that k-means++ chooses from, in landmarks.
POOL_FACTOR = 4


@dataclass(frozen=True)
class Reservoir:
    """At most ``size`` rows with their keys, row ids and labels (one block's bottom-``k`` sample).

    Attributes
    ----------
    keys : ndarray of shape (k,), float64
    ids : ndarray of shape (k,), int64
        Row position in the whole array (``block << 40 | row`` when block sizes are unknown).
    rows : ndarray of shape (k, D)
    labels : ndarray of shape (k,) or None
    size : int
    """

    keys: np.ndarray
    ids: np.ndarray
    rows: np.ndarray
    labels: np.ndarray | None
    size: int

    def merge(self, other: "Reservoir") -> "Reservoir":
        """The ``size`` smallest keys of both (ties by row id: deterministic)."""
        keys = np.concatenate([self.keys, other.keys])
        ids = np.concatenate([self.ids, other.ids])
        keep = np.lexsort((ids, keys))[: self.size]
        labels = None if self.labels is None else np.concatenate([self.labels, other.labels])[keep]
        return Reservoir(keys[keep], ids[keep], np.concatenate([self.rows, other.rows])[keep], labels, self.size)


def block_reservoir(rows: Any, labels: Any, size: int, seed: int, block: int, offset: int | None) -> Reservoir:
    """The bottom-``size`` sample of one block (runs on a Dask worker).

    Parameters
    ----------
    rows : array of shape (n, D)
    labels : array of shape (n,) or None
    size : int
    seed, block : int
        The keys come from ``numpy.random.default_rng([seed, block])``.
    offset : int or None
        Position of the block's first row in the whole array (None: unknown).
    """
    rows = np.asarray(rows)
    n = rows.shape[0]
    keys = np.random.default_rng([seed, block]).random(n)
    keep = np.argsort(keys, kind="stable")[:size]
    start = offset if offset is not None else block << 40
    labels = None if labels is None else np.asarray(labels).reshape(-1)[keep]
    return Reservoir(keys[keep], (start + keep).astype(np.int64), rows[keep], labels, size)


def reservoir(X: Any, size: int, random_state: Any = None, y: Any = None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """A uniformly random subset of ``min(size, N)`` rows of ``X``, drawn by random keys (module docstring).

    Parameters
    ----------
    X : array of shape (N, D), numpy or Dask
        A Dask array is reduced blockwise on Dask's current scheduler; only ``size`` rows per task travel.
    size : int
    random_state : int, Generator or None
    y : array of shape (N,), optional
        Labels (a Dask array with the same row chunks as ``X``, or in memory), carried along.

    Returns
    -------
    rows : ndarray of shape (k, D)
        In increasing key order (a random order).
    labels : ndarray of shape (k,) or None
    ids : ndarray of shape (k,), int64
        Row positions in ``X``.
    """
    seed = int(numpy_rng(random_state).integers(2**62))
    if not (hasattr(X, "__dask_graph__") and hasattr(X, "to_delayed")):
        # In memory: the same keys as one block (block index 0).
        res = block_reservoir(X, y, size, seed, 0, 0)
        return res.rows, res.labels, res.ids
    import dask

    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    row_chunks = X.chunks[0]
    blocks = X.to_delayed().ravel().tolist()
    known = not any(np.isnan(c) for c in row_chunks)
    bounds = np.cumsum((0,) + tuple(row_chunks))
    label_blocks = [None] * len(blocks)
    if hasattr(y, "to_delayed"):
        label_blocks = y.rechunk((row_chunks,)).to_delayed().ravel().tolist()
    elif y is not None:
        if not known:
            raise ValueError("y in memory needs X's block sizes; call X.compute_chunk_sizes() or pass y as Dask.")
        y = np.asarray(y)
        label_blocks = [y[bounds[i] : bounds[i + 1]] for i in range(len(blocks))]
    offsets = bounds[:-1] if known else [None] * len(blocks)
    take = dask.delayed(block_reservoir, pure=True)
    parts = [
        take(b, lab, size, seed, i, None if off is None else int(off))
        for i, (b, lab, off) in enumerate(zip(blocks, label_blocks, offsets))
    ]
    res = reduce_blocks(parts, Reservoir.merge)
    return res.rows, res.labels, res.ids


def kmeanspp(X: torch.Tensor, n: int, kernel: Any, random_state: Any = None) -> torch.Tensor:
    """Indices of ``n`` rows of ``X`` chosen by k-means++ seeding in ``kernel``'s feature space, shape (n,).

    Each next row is drawn with probability proportional to its squared feature-space distance to the
    nearest chosen row; when every remaining row is at distance 0, uniformly among the unchosen ones.
    """
    rng = numpy_rng(random_state)
    N = X.shape[0]
    if not 1 <= n <= N:
        raise ValueError(f"cannot choose {n} landmarks from {N} rows.")
    diag = kernel.diag(X)
    chosen = np.empty(n, dtype=np.int64)
    chosen[0] = rng.integers(N)
    d2 = torch.full((N,), torch.inf, dtype=X.dtype, device=X.device)
    taken = torch.zeros(N, dtype=torch.bool, device=X.device)
    for t in range(n):
        if t > 0:
            p = d2.clamp(min=0.0).masked_fill(taken, 0.0).to(torch.float64).cpu().numpy()
            total = p.sum()
            if total > 0 and np.isfinite(total):
                chosen[t] = rng.choice(N, p=p / total)
            else:
                chosen[t] = rng.choice(np.flatnonzero(~taken.cpu().numpy()))
        j = int(chosen[t])
        taken[j] = True
        k = kernel.gram(X, X[j : j + 1])[:, 0]
        d2 = torch.minimum(d2, diag + diag[j] - 2 * k)
    return torch.as_tensor(chosen, device=X.device)


class Nystroem(FeatureMap):
    """``phi(x) = K_LL^{-1/2} k_L(x)`` for ``n_landmarks`` landmarks chosen from the training points.

    ``<phi(x), phi(y)> = k_L(x)^T K_LL^+ k_L(y)`` approximates ``k(x, y)``, exactly on the landmarks; null
    directions of ``K_LL`` are dropped (a pseudo-inverse square root, not a regularisation). The landmarks
    are the map's :meth:`reference_set`.

    Parameters
    ----------
    kernel : Kernel, callable or str
    n_landmarks : int, default 100
        Positive, at most the number of training points (checked by ``fit``).
    landmark_selection : {"uniform", "kmeans++"}, default "uniform"
        A uniform random subset of the rows given to ``fit``, or k-means++ seeding in feature space
        (:func:`~kppca.features.landmarks.kmeanspp`) over a uniform pool of ``4 * n_landmarks`` rows.
    random_state : int, numpy Generator or None

    Attributes
    ----------
    kernel_ : Kernel
    landmarks_ : Tensor of shape (n_landmarks, D)
    normalization_ : Tensor of shape (n_landmarks, d), ``d <= n_landmarks``
    landmark_indices_ : Tensor of shape (n_landmarks,), int64
        Rows of the data given to ``fit`` that are the landmarks.
    """

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class State(FeatureMapState):
        kernel_: Kernel = fitted(Kernel)
        # The map's own dtype, that of the rows it was fitted on (map() computes in its input's dtype).
        landmarks_: torch.Tensor = fitted(TensorSpec("own_float", ("m", "n_features_in_")))
        normalization_: torch.Tensor = fitted(TensorSpec("own_float", ("m", None)))
        landmark_indices_: torch.Tensor = fitted(TensorSpec(torch.int64, ("m",), nonnegative=True), optional=True)

    _state_type = State

    def __init__(
        self, kernel: Kernel | str = "rbf", n_landmarks: int = 100, landmark_selection: str = "uniform",
        random_state=None,
    ):
        self.kernel = kernel
        self.n_landmarks = n_landmarks
        self.landmark_selection = landmark_selection
        self.random_state = random_state

    def _check_params(self) -> None:
        check_scalar(self.n_landmarks, "n_landmarks", [Interval(Integral, 0, None, closed="neither")])
        check_scalar(self.landmark_selection, "landmark_selection", [StrOptions(LANDMARK_SELECTIONS)])
        as_kernel(self.kernel)._check_params()

    def pool_size(self, n_rows: int | None = None) -> int:
        """Uniformly drawn rows ``fit`` needs to choose its landmarks (``POOL_FACTOR`` times more for k-means++)."""
        self._check_params()
        size = int(self.n_landmarks) * (1 if self.landmark_selection == "uniform" else POOL_FACTOR)
        return size if n_rows is None else min(size, n_rows)

    def _fit(self, X: torch.Tensor) -> None:
        n = X.shape[0]
        n_landmarks = int(self.n_landmarks)
        if n_landmarks > n:
            raise ValueError(f"n_landmarks={n_landmarks} exceeds the {n} training points; lower it.")
        self.kernel_ = as_kernel(self.kernel).resolve(X)  # a data-derived width from the training set
        rng = numpy_rng(self.random_state)
        # A uniform draw of the pool; "uniform" keeps it whole (its pool is the n_landmarks rows).
        pool = rng.choice(n, size=self.pool_size(n), replace=False)
        idx = torch.as_tensor(pool, device=X.device)
        if self.landmark_selection == "kmeans++":
            idx = idx[kmeanspp(X[idx], n_landmarks, self.kernel_, rng)]
        self.landmark_indices_ = idx.to(torch.int64).cpu()
        self.landmarks_ = X[idx].clone()
        K_ll = self.kernel_.gram(self.landmarks_, self.landmarks_)
        values, vectors = torch.linalg.eigh(K_ll)
        tol = rank_tolerance(float(values.max()), len(values), values.dtype)
        if float(values.min()) < -tol:
            raise ValueError("the kernel's Gram matrix on the landmarks is not positive semi-definite.")
        keep = values > tol
        self.normalization_ = vectors[:, keep] / values[keep].sqrt()

    def output_width(self) -> int:
        return self.normalization_.shape[1]

    def map(self, X: torch.Tensor) -> torch.Tensor:
        landmarks = self.landmarks_.to(X.device, X.dtype)
        return self.kernel_.gram(X, landmarks) @ self.normalization_.to(X.device, X.dtype)

    def reference_set(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The landmarks ``L`` (n_landmarks, D) and ``C = normalization_`` (n_landmarks, d): ``phi(L)^T C = I_d``."""
        if not hasattr(self, "landmarks_"):
            return None
        return self.landmarks_, self.normalization_
