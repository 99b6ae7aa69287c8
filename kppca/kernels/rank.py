"""The rank ``r`` of a centered Gram matrix, decided by the kernel's structure where possible.

A strictly positive definite kernel gives ``r`` from the distinct rows, an explicit finite feature map from its
centered features in float64, and anything else None (a numerical count); see docs/theory, "The rank r".
"""

from __future__ import annotations

import numpy as np
import torch

from .._linalg import centered_rows, centered_scatter, feature_rank
from .base import Kernel

__all__ = ["count_distinct_rows", "centered_feature_rank", "structural_rank"]


def count_distinct_rows(X: torch.Tensor) -> int:
    """Number of distinct rows of ``X`` (n, D): equal rows give equal feature vectors."""
    if X.shape[0] <= 1:
        return int(X.shape[0])
    if X.device.type != "cpu":
        return int(torch.unique(X, dim=0).shape[0])
    # After + 0.0 (-0.0 becomes +0.0) finite rows are equal exactly when their bits are. Only rows sharing
    # a wrap-around integer sum of their bits (rare) are compared by their bytes: linear in N D, unlike a sort.
    rows = (X + 0.0).numpy()
    bits = rows.view(np.dtype(f"u{rows.itemsize}"))
    sums = np.add.reduce(bits, axis=1, dtype=np.uint64)
    order = np.argsort(sums, kind="stable")
    sorted_sums = sums[order]
    starts = np.flatnonzero(np.r_[True, sorted_sums[1:] != sorted_sums[:-1], True])
    distinct = len(starts) - 1
    for a, b in zip(starts[:-1], starts[1:]):
        if b - a > 1:  # rows sharing a sum: equal, or a collision
            distinct += len(set(map(bytes, rows[order[a:b]]))) - 1
    return distinct


def centered_feature_rank(Phi: torch.Tensor, center: bool) -> int:
    """Numerical rank of the (centered) rows of ``Phi`` (n, d), counted in float64.

    From the float64 scatter (or ``n x n`` Gram matrix for ``d > n``): float32 and float64 features agree.

    Parameters
    ----------
    Phi : Tensor of shape (n, d)
    center : bool

    Returns
    -------
    int
        At most ``min(d, n - center)``.
    """
    n, d = Phi.shape
    max_rank = min(d, n - int(center))
    if max_rank <= 0:
        return 0
    if d <= n:
        _, G, raw_scale = centered_scatter(Phi, center)
    else:
        C, _, raw_scale = centered_rows(Phi, center)  # n < d: a copy the size of the input
        G = C @ C.T
    trace = float(G.diagonal().sum())
    values = torch.linalg.eigvalsh(G).flip(0)
    return feature_rank(values, n, raw_scale, trace, max_rank)


def structural_rank(kernel: Kernel, X: torch.Tensor, center: bool) -> int | None:
    """The rank of the (centered) Gram matrix of ``kernel`` on ``X`` by the rule of this module, without the matrix.

    Parameters
    ----------
    kernel : Kernel
    X : Tensor of shape (N, D)
    center : bool
        Whether the Gram matrix is centered (removes one dimension).

    Returns
    -------
    int or None
        None when the kernel declares no structure (a numerical count is then needed).
    """
    if getattr(kernel, "strictly_positive_definite", False):
        return count_distinct_rows(X) - int(center)
    Phi = kernel.explicit_features(X)
    if Phi is not None:
        return centered_feature_rank(Phi, center)
    return None
