"""Blockwise Dask reductions in waves (``kppca._dask``): the same result, never more than a wave at once."""

from __future__ import annotations

import os

import pytest

dask = pytest.importorskip("dask")

from kppca import _dask  # noqa: E402


def test_waves_merge_every_block_once_in_block_order(monkeypatch):
    monkeypatch.setattr(_dask, "scheduler_threads", lambda: 1)
    monkeypatch.setattr(_dask, "BLOCKS_PER_THREAD", 2)  # waves of 2 blocks: merged on the workers, then here
    computed = []
    compute = dask.compute

    def counting_compute(*args, **kwargs):
        computed.append(args[0])
        return compute(*args, **kwargs)

    monkeypatch.setattr(dask, "compute", counting_compute)
    tasks = [dask.delayed(lambda i: [i], pure=True)(i) for i in range(7)]
    # list concatenation is associative but not commutative: the order of the blocks must survive
    assert _dask.reduce_blocks(tasks, lambda a, b: a + b) == list(range(7))
    assert len(computed) == 4  # ceil(7 / 2) waves, each computed on its own
    assert _dask.reduce_blocks(tasks[:1], lambda a, b: a + b) == [0]


def test_a_wave_holds_one_block_per_worker_thread():
    """Two blocks a thread raised a worker's peak with the number of waves (benchmarks/README.md)."""
    assert _dask.BLOCKS_PER_THREAD == 1


def test_a_wave_spans_every_worker_thread_of_the_client():
    distributed = pytest.importorskip("dask.distributed")
    assert _dask.scheduler_threads() == (os.cpu_count() or 1)  # no client: the local scheduler's threads
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster, distributed.Client(cluster):
        assert _dask.scheduler_threads() == 2
