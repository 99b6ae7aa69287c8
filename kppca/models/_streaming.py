"""Sufficient statistics of the primal model, accumulated batch by batch or block by block.

The ML fit of :class:`~kppca.PrimalPPCA` needs only the number of points ``N``,
the feature mean ``m`` (d,) and the scatter ``S = sum_i (phi_i - m)(phi_i - m)^T``
(d, d) -- plus ``max_i |phi_i|^2``, which sets the rounding level of the rank
count. These can be formed on pieces of the data and merged exactly (Chan,
Golub and LeVeque's pairwise update)::

    n = n_a + n_b,   delta = m_b - m_a,   m = m_a + delta n_b / n,
    S = S_a + S_b + delta delta^T n_a n_b / n

so ``PrimalPPCA.partial_fit`` (one batch at a time) and ``PrimalPPCA.fit`` on a
Dask array (blocks reduced in a tree on Dask's scheduler) compute the same
statistics as the in-memory ``fit``, up to the order of the floating-point sums.
They are kept in float64 whatever the model's dtype: a long stream of float32
updates would otherwise lose ``~ n_batches * eps_32`` relative accuracy.
Uncentered models (``center=False``) keep ``m = 0`` and the second moment
``sum_i phi_i phi_i^T``, for which the merge is a plain sum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._linalg import centered_scatter
from .._param_validation import device_from_spec, dtype_from_spec
from .._validation import as_tensor

#: Precision of the accumulated statistics (see the module docstring).
STATS_DTYPE = torch.float64


@dataclass(frozen=True)
class ScatterStats:
    """Count, mean and scatter of a set of feature vectors, in float64.

    Attributes
    ----------
    count : int
        Number of feature vectors ``n``.
    mean : Tensor of shape (d,)
        Their mean (zeros for uncentered statistics).
    scatter : Tensor of shape (d, d)
        ``sum_i (phi_i - mean)(phi_i - mean)^T``.
    max_sq_norm : float
        ``max_i |phi_i|^2`` of the *uncentered* vectors (0 when ``count == 0``).
    """

    count: int
    mean: torch.Tensor
    scatter: torch.Tensor
    max_sq_norm: float

    @classmethod
    def from_batch(cls, Phi: torch.Tensor, center: bool) -> "ScatterStats":
        """Statistics of the rows of ``Phi`` (n, d); ``center=False`` gives the uncentered second moment.

        Accumulated in float64 by row blocks of bounded memory (no float64 copy of a
        float32 ``Phi``): the mean first, then the centered scatter block by block.
        """
        n, d = Phi.shape
        if n == 0:
            zeros = Phi.new_zeros(d, dtype=STATS_DTYPE)
            return cls(0, zeros, Phi.new_zeros((d, d), dtype=STATS_DTYPE), 0.0)
        mean, scatter, max_sq = centered_scatter(Phi, center)
        return cls(n, mean, scatter, max_sq)

    def merge(self, other: "ScatterStats") -> "ScatterStats":
        """The statistics of the union of both sets (Chan et al.'s pairwise update).

        The correction term ``delta delta^T n_a n_b / n`` is formed from the
        difference of the two means, never from uncentered sums, so no
        cancellation between large moments occurs (the reason for this form).
        """
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
        """``trace(S) = sum_i |phi_i - mean|^2``."""
        return float(self.scatter.diagonal().sum())

    def to(self, device: torch.device) -> "ScatterStats":
        """The same statistics on ``device``."""
        return ScatterStats(self.count, self.mean.to(device), self.scatter.to(device), self.max_sq_norm)

    # The model stores its statistics as a plain dict so that model files keep them
    # through their generic encoding of tensors and numbers.
    def to_state(self) -> dict[str, Any]:
        """A dict of tensors and numbers (what ``PrimalPPCA`` stores and model files save)."""
        return {"count": self.count, "mean": self.mean, "scatter": self.scatter, "max_sq_norm": self.max_sq_norm}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "ScatterStats":
        """Inverse of :meth:`to_state`."""
        return cls(int(state["count"]), state["mean"], state["scatter"], float(state["max_sq_norm"]))


# ----------------------------------------------------------------------------- Dask
def is_dask_collection(X: Any) -> bool:
    """True for Dask collections (arrays, dataframes), detected without importing Dask."""
    return hasattr(X, "__dask_graph__") and type(X).__module__.split(".")[0] == "dask"


def dask_rows(X: Any) -> Any:
    """``X`` checked to be a 2-D Dask array, rechunked to whole rows per block (what ``fit`` reads blockwise)."""
    try:
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - a Dask collection implies Dask is installed
        raise ImportError(
            'fitting a Dask array needs dask[array]: pip install ".[dask]" from the kppca source tree.'
        ) from exc
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
    recorded = model.__dict__.get("_stream_params")
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
    """Statistics of one row-block of the Dask array (runs on a Dask worker)."""
    # Blocks may be empty (rows filtered out); their statistics are neutral in the merge.
    X = as_tensor(block, "X (a block of the Dask array)", dtype=dtype, device=device, min_samples=0)
    return ScatterStats.from_batch(feature_map.map(X), center).to(torch.device("cpu"))


def dask_stats(
    X: Any, feature_map: Any, *, dtype: torch.dtype, device: torch.device, center: bool
) -> ScatterStats:
    """Statistics of ``phi(X)`` for a 2-D Dask array ``X`` (whole rows per block, as :func:`dask_rows` returns it).

    Each row-block is mapped through the fitted ``feature_map`` (pickled to the workers when they are
    processes), in the model's ``dtype`` and on its ``device``, and reduced to :class:`ScatterStats` by a
    task; the per-block statistics are merged pairwise in a balanced tree of tasks on Dask's current
    scheduler (the local threads by default, or a ``dask.distributed`` cluster when a ``Client`` exists).
    Only the (d, d) statistics travel between tasks.
    """
    import dask

    blocks = X.to_delayed().ravel().tolist()
    block_stats = dask.delayed(_block_stats, pure=True)
    merge = dask.delayed(ScatterStats.merge, pure=True)
    parts = [block_stats(b, feature_map, dtype, device, center) for b in blocks]
    while len(parts) > 1:
        parts = [merge(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    (stats,) = dask.compute(parts[0])
    return stats.to(device)


def dask_map_sample(
    X: Any, feature_map: Any, y: Any, *, dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, Any]:
    """The rows an unfitted ``feature_map`` is fitted on when ``X`` is a Dask array, and their labels.

    A map that chooses landmarks (it has ``pool_size``, as ``Nystroem``) gets a uniform
    reservoir of ``max(pool_size(), LATENT_SAMPLE)`` rows drawn from all blocks
    (:func:`kppca.features.landmarks.reservoir`, exactly uniform) with their labels ``y``;
    any other unfitted map the first non-empty block (labels None); a fitted map (or None
    for the identity, fitted later) an empty sample, of which only the width is checked.
    """
    width = int(X.shape[1])
    if feature_map is not None and hasattr(feature_map, "n_features_in_"):
        return torch.empty((0, width), dtype=dtype), None
    if feature_map is not None and hasattr(feature_map, "pool_size"):
        from ..features.landmarks import reservoir

        size = max(feature_map.pool_size(), LATENT_SAMPLE)  # the landmarks' pool and the latent sample
        rows, labels, _ = reservoir(X, size, feature_map.random_state, y)
        if not len(rows):
            raise ValueError("X has 0 sample(s) while a minimum of 2 is required.")
        return as_tensor(rows, "X", dtype=dtype, device=device), labels
    # The first non-empty block (computed once more for the statistics). Blocks of unknown
    # size (NaN, e.g. after filtering rows) are computed to see.
    sample = None
    for i, n in enumerate(X.chunks[0]):
        if n == 0:
            continue
        sample = X.blocks[i].compute()
        if len(sample):
            break
    if sample is None or not len(sample):
        raise ValueError("X has 0 sample(s) while a minimum of 2 is required.")
    return as_tensor(sample, "X", dtype=dtype, device=device), None


#: Rows of the uniform sample (landmarks included) whose codes the latent mixture of a landmark
#: model without training inputs is fitted on: a mixture of more codes than landmarks follows the
#: data's code distribution more closely, at ``LATENT_SAMPLE x D`` floats kept with the model.
LATENT_SAMPLE = 4000


def latent_sample(feature_map: Any, rows: torch.Tensor, y: Any, rng: Any) -> tuple[torch.Tensor | None, Any]:
    """Rows besides the landmarks for the latent mixture, and labels of ``[landmarks; those rows]``.

    ``feature_map`` was just fitted on ``rows`` (a uniform sample of the data, or the first
    batch of ``partial_fit``) and chose its landmarks ``rows[landmark_indices_]``; up to
    ``LATENT_SAMPLE - m`` other rows are drawn uniformly (``rng``, a numpy Generator). The labels
    are ``y`` (one per row of ``rows``) at the landmarks then at those rows, or None when ``y`` is
    not one label per row (then it is ignored, as any other target). ``(None, None)`` for a map
    without landmarks.
    """
    idx = getattr(feature_map, "landmark_indices_", None)
    if idx is None or feature_map.reference_set() is None:
        return None, None
    idx = idx.numpy()
    others = np.setdiff1d(np.arange(rows.shape[0]), idx)
    others = others[rng.permutation(len(others))][: max(0, LATENT_SAMPLE - len(idx))]
    extra = rows[torch.as_tensor(others, dtype=torch.int64, device=rows.device)].clone()
    labels = None if y is None else np.asarray(y)
    if labels is not None and (labels.ndim != 1 or labels.shape[0] != rows.shape[0]):
        labels = None
    return extra, (None if labels is None else np.concatenate([labels[idx], labels[others]]))
