"""Row blocks: how many rows of an ``(M, N)`` computation are done at once, mapping over them, float64 statistics."""

from __future__ import annotations

from typing import Callable

import torch

#: Memory of one block of kernel values (rows x training points) when ``batch_size=None``.
BLOCK_BYTES = 128 * 2**20
#: Fewest rows of a default block (small problems are done in one or a few calls).
MIN_BLOCK_ROWS = 128
#: A default block has at most ``n_columns / BLOCK_FRACTION`` rows: with the temporaries of its kernel
#: evaluation it stays within about 10 % of an ``N x N`` Gram matrix (the dual model's memory targets).
BLOCK_FRACTION = 32


def block_rows(batch_size: int | None, n_columns: int, dtype: torch.dtype) -> int:
    """Rows per block of an ``(M, n_columns)`` computation: ``batch_size``, or sized by the constants above."""
    if batch_size is not None:
        return int(batch_size)
    itemsize = torch.tensor([], dtype=dtype).element_size()
    by_bytes = BLOCK_BYTES // max(1, n_columns * itemsize)
    return max(1, min(by_bytes, max(MIN_BLOCK_ROWS, -(-n_columns // BLOCK_FRACTION))))


def map_row_blocks(fn: Callable[[torch.Tensor], torch.Tensor], X: torch.Tensor, rows: int) -> torch.Tensor:
    """``fn`` (``(m, ...) -> (m, ...)``) applied to row blocks of ``X``, ``rows`` at a time, results stacked."""
    if X.shape[0] <= rows:
        return fn(X)
    return torch.cat([fn(X[i : i + rows]) for i in range(0, X.shape[0], rows)])


def centered_scatter(Phi: torch.Tensor, center: bool) -> tuple[torch.Tensor, torch.Tensor, float]:
    """``(mean (d,), scatter (d, d), max_sq_norm)`` of the rows of ``Phi`` (n >= 1, d) in float64, by row blocks.

    Rows are centered before the product (``mean`` is zero when not ``center``); ``max_sq_norm`` is uncentered.
    """
    f64 = torch.float64
    n, d = Phi.shape
    mean = Phi.sum(0, dtype=f64) / n if center else Phi.new_zeros(d, dtype=f64)
    scatter = Phi.new_zeros((d, d), dtype=f64)
    max_sq = 0.0
    rows = block_rows(None, max(d, 1), f64)
    for i in range(0, n, rows):
        P = Phi[i : i + rows].to(f64)
        max_sq = max(max_sq, float((P * P).sum(1).max()))
        C = P - mean
        scatter.addmm_(C.T, C)
    return mean, scatter, max_sq


def centered_rows(Phi: torch.Tensor, center: bool) -> tuple[torch.Tensor, torch.Tensor, float]:
    """``(C, mean, max_sq_norm)``: the rows of ``Phi`` (n, d) centered in a float64 copy ``C``, for ``d > n``."""
    # copy=True: Phi may be the model's own inputs (a float64 X for the linear kernel), centered in place below.
    P = Phi.to(torch.float64, copy=True)
    max_sq = float((P * P).sum(1).max()) if P.shape[0] else 0.0
    mean = P.mean(0) if center else P.new_zeros(P.shape[1])
    return P.sub_(mean), mean, max_sq
