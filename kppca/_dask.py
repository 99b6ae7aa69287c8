"""Blockwise reductions of Dask arrays whose memory per worker does not grow with the number of blocks.

One graph over all blocks lets the scheduler run blocks ahead of their merges: at N = 300,000 rows in
blocks of 10,000 a worker held up to 300 MB of finished blocks and partial results that waited for a merge
(``benchmarks/README.md``, issue 39). Computing the blocks in waves of a few per worker thread, each wave
merged in a tree on the workers and its result merged here, bounds what a worker holds by the wave.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

#: Blocks per worker thread in one wave. One: with two, a worker sometimes held two blocks' work at once, and
#: over the 50 waves of 10**6 rows that happened often enough to raise its peak by up to 14 % over 50,000 rows
#: (945 -> 1,009-1,075 MiB); with one, 844-846 and 851-852 MiB, for a fit 3-8 % longer (threads wait for a
#: wave's slowest block) (``benchmarks/README.md``, issue 39).
BLOCKS_PER_THREAD = 1


def dask_client() -> Any:
    """The current ``dask.distributed`` Client, or None (distributed not imported, or no client running)."""
    if "distributed" not in sys.modules:  # a Client can only exist once distributed was imported
        return None
    from distributed import get_client

    try:
        return get_client()
    except ValueError:  # "No clients found"
        return None


def scheduler_threads() -> int:
    """Worker threads of the current ``dask.distributed`` client, else this machine's cores."""
    client = dask_client()
    if client is None:  # Dask's local scheduler
        return os.cpu_count() or 1
    return max(1, sum(client.nthreads().values()))


def reduce_blocks(tasks: Sequence[Any], merge: Callable[[Any, Any], Any]) -> Any:
    """``merge`` over the results of ``tasks`` (one Dask ``Delayed`` per block, at least one), in block order.

    Each wave of ``BLOCKS_PER_THREAD`` blocks per worker thread is merged pairwise on the workers; the waves'
    results are merged here, one after the other. ``merge`` must be associative (it may differ in rounding).
    """
    import dask

    merge_task = dask.delayed(merge, pure=True)
    wave = BLOCKS_PER_THREAD * scheduler_threads()
    total = None
    for start in range(0, len(tasks), wave):
        parts = list(tasks[start : start + wave])
        while len(parts) > 1:
            pairs = range(0, len(parts), 2)
            parts = [merge_task(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in pairs]
        (result,) = dask.compute(parts[0])
        total = result if total is None else merge(total, result)
    return total
