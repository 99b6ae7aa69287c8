"""Row blocks: how many rows of an ``(M, N)`` computation are done at once, and mapping over them."""

from __future__ import annotations

from typing import Callable

import torch

__all__ = ["BLOCK_BYTES", "BLOCK_FRACTION", "MIN_BLOCK_ROWS", "block_rows", "map_row_blocks"]

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
