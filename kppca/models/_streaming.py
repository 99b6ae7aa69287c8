"""Sufficient statistics of the primal model (count, feature mean, scatter), accumulated batch by batch.

Pieces merge exactly (Chan, Golub and LeVeque), so ``partial_fit`` and a Dask ``fit`` match the in-memory
``fit`` up to the order of the sums; float64 whatever the model's dtype, so long streams lose no accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from .._dask import reduce_blocks
from .._linalg import centered_scatter
from .._param_validation import device_from_spec, dtype_from_spec
from .._validation import as_tensor


@dataclass(frozen=True)
class ScatterStats:
    """Count, mean (d,) (zeros if uncentered), scatter (d, d) and ``max_i |phi_i|^2`` of feature vectors, in float64."""

    count: int
    mean: torch.Tensor
    scatter: torch.Tensor
    max_sq_norm: float

    @classmethod
    def from_batch(cls, Phi: torch.Tensor, center: bool) -> "ScatterStats":
        """Statistics of the rows of ``Phi`` (n, d); ``center=False`` gives the uncentered second moment."""
        n, d = Phi.shape
        if n == 0:
            return cls(0, Phi.new_zeros(d, dtype=torch.float64), Phi.new_zeros((d, d), dtype=torch.float64), 0.0)
        mean, scatter, max_sq = centered_scatter(Phi, center)
        return cls(n, mean, scatter, max_sq)

    def merge(self, other: "ScatterStats") -> "ScatterStats":
        """The statistics of the union (Chan et al.'s update: from the difference of the means, no cancellation)."""
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        n = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.count / n)
        scatter = self.scatter + other.scatter + torch.outer(delta, delta) * (self.count * other.count / n)
        return ScatterStats(n, mean, scatter, max(self.max_sq_norm, other.max_sq_norm))

    @property
    def trace(self) -> float:
        """``sum_i |phi_i - mean|^2``."""
        return float(self.scatter.diagonal().sum())

    def to(self, device: torch.device) -> "ScatterStats":
        return ScatterStats(self.count, self.mean.to(device), self.scatter.to(device), self.max_sq_norm)

    def to_state(self) -> dict[str, Any]:
        """A plain dict of tensors and numbers, which model files save through their generic encoding."""
        return {"count": self.count, "mean": self.mean, "scatter": self.scatter, "max_sq_norm": self.max_sq_norm}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "ScatterStats":
        """Inverse of :meth:`to_state`."""
        return cls(int(state["count"]), state["mean"], state["scatter"], float(state["max_sq_norm"]))


def is_dask_collection(X: Any) -> bool:
    """True for Dask collections (arrays, dataframes), detected without importing Dask."""
    return hasattr(X, "__dask_graph__") and type(X).__module__.split(".")[0] == "dask"


def dask_rows(X: Any) -> Any:
    """``X`` checked to be a 2-D Dask array, rechunked to whole rows per block."""
    import dask.array as da  # a Dask collection implies Dask is installed
    if not isinstance(X, da.Array):
        raise TypeError(
            f"fit accepts Dask arrays, not a {type(X).__name__}; convert it, e.g. df.to_dask_array(lengths=True)."
        )
    if X.ndim != 2:
        raise ValueError(f"X must have 2 dimension(s), got a Dask array of shape {X.shape}.")
    return X.rechunk({1: -1}) if len(X.chunks[1]) > 1 else X


def streaming_signature(model: Any) -> dict[str, Any]:
    """The parameters that define the accumulated statistics, in a comparable (and saveable) form."""
    dtype = dtype_from_spec(model.dtype)
    return {
        "center": bool(model.center),
        "feature_map": None if model.feature_map is None else repr(model.feature_map),
        "dtype": None if dtype is None else str(dtype),
        "device": None if model.device is None else str(device_from_spec(model.device)),
    }


def check_streaming_signature(model: Any) -> None:
    """Refuse a ``partial_fit`` whose parameters differ from those the statistics were started with."""
    recorded = getattr(model, "_stream_params", None)
    if recorded is None:  # optional in a model file: nothing to compare
        return
    now = streaming_signature(model)
    changed = [k for k in now if now[k] != recorded.get(k)]
    if changed:
        raise ValueError(
            f"{', '.join(changed)} changed since the model's statistics were started by fit or the first "
            "partial_fit call (was "
            + ", ".join(f"{k}={recorded.get(k)}" for k in changed)
            + "): the accumulated statistics depend on them. Set them back, or call fit(X) to start a new model."
        )


def _block_stats(block: Any, feature_map: Any, dtype: torch.dtype, device: torch.device, center: bool) -> ScatterStats:
    """Statistics of one row-block of the Dask array (runs on a Dask worker); an empty block is neutral."""
    X = as_tensor(block, "X (a block of the Dask array)", dtype=dtype, device=device, min_samples=0)
    return ScatterStats.from_batch(feature_map.map(X), center).to(torch.device("cpu"))


def dask_stats(
    X: Any, feature_map: Any, *, dtype: torch.dtype, device: torch.device, center: bool
) -> ScatterStats:
    """Statistics of ``phi(X)`` for a Dask array from :func:`dask_rows`: one task per block, merged in waves."""
    import dask

    block_stats = dask.delayed(_block_stats, pure=True)
    parts = [block_stats(b, feature_map, dtype, device, center) for b in X.to_delayed().ravel().tolist()]
    return reduce_blocks(parts, ScatterStats.merge).to(device)


def dask_map_sample(
    X: Any, feature_map: Any, y: Any, *, dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, Any]:
    """The rows an unfitted ``feature_map`` is fitted on when ``X`` is a Dask array, and their labels.

    A landmark map (with ``pool_size``) gets a uniform reservoir of all blocks with its labels; any other
    unfitted map the first non-empty block (labels None); a fitted map (or None) an empty sample.
    """
    if feature_map is not None and hasattr(feature_map, "n_features_in_"):
        return torch.empty((0, int(X.shape[1])), dtype=dtype), None
    if feature_map is not None and hasattr(feature_map, "pool_size"):
        from ..features.landmarks import reservoir

        size = max(feature_map.pool_size(), LATENT_SAMPLE)  # the landmarks' pool and the latent sample
        rows, labels, _ = reservoir(X, size, feature_map.random_state, y)
        if not len(rows):
            raise ValueError("X has 0 sample(s) while a minimum of 2 is required.")
        return as_tensor(rows, "X", dtype=dtype, device=device), labels
    # The first non-empty block; blocks of unknown size (NaN, e.g. after filtering rows) are computed to see.
    for i in (i for i, n in enumerate(X.chunks[0]) if n != 0):
        sample = X.blocks[i].compute()
        if len(sample):
            return as_tensor(sample, "X", dtype=dtype, device=device), None
    raise ValueError("X has 0 sample(s) while a minimum of 2 is required.")


#: Rows (landmarks included) that a landmark model without training inputs keeps, a uniform sample of its data:
#: their codes fit the latent mixture and the pre-images are built over them, at ``LATENT_SAMPLE x D`` floats
#: kept. On all 50,000 MNIST training digits (m = 2,000, q = 50; ``benchmarks/mnist_data_size.py``, key ``keep``,
#: 10,000 samples per model, selection split 10) 20,000 rows gave FD 3.81, 35,000 3.71 and 50,000 3.46; the exact
#: model on 20,000 digits, 3.95. The first ``sample`` costs about ``(LATENT_SAMPLE / 50,000)^2 x 130 s`` (2 cores):
#: the kept rows' hub scores read their whole Gram matrix, row block by row block.
LATENT_SAMPLE = 50_000

