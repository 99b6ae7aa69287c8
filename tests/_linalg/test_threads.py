import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

from kppca._linalg import available_threads, compute_threads, section_threads
from kppca._linalg import threads as threads_module
from kppca.kernels import RBF, CenteredGram


def test_threadpoolctl_blas_limit_is_honoured():
    before = torch.get_num_threads()
    with threadpool_limits(limits=1, user_api="blas"):
        assert available_threads() == 1
        with compute_threads() as n:
            assert n == 1 and torch.get_num_threads() == 1 and section_threads() == 1
    assert torch.get_num_threads() == before and section_threads() is None


def test_torch_thread_setting_is_an_upper_bound():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert available_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_the_count_follows_settings_not_the_machines_load(monkeypatch):
    """Results round by the thread count, so the count must not follow the momentary load (issue 40):
    with the same settings it is the same whatever /proc/loadavg says."""
    monkeypatch.setattr(threads_module, "_process_cores", lambda: 2)
    monkeypatch.setattr(threads_module.torch, "get_num_threads", lambda: 2)
    monkeypatch.setattr(threads_module, "_blas_limit", lambda: None)
    real_open = open

    def busy_open(path, *args, **kwargs):  # a machine with 40 runnable threads
        if str(path) == "/proc/loadavg":
            import io

            return io.StringIO("40.00 40.00 40.00 41/500 12345\n")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", busy_open)
    assert available_threads() == 2
    monkeypatch.setattr(threads_module, "_blas_limit", lambda: 1)
    assert available_threads() == 1  # a caller's BLAS limit still counts


def test_sections_nest_and_restore():
    before = torch.get_num_threads()
    with compute_threads(1) as outer:
        with compute_threads(2) as inner:  # the outer section decides
            assert inner == outer == 1 == torch.get_num_threads()
        assert section_threads() == 1
    assert torch.get_num_threads() == before


def test_rebuild_uses_the_first_builds_thread_count(monkeypatch):
    X = torch.as_tensor(np.random.default_rng(0).normal(size=(300, 5)))
    counts = iter([2, 1, 1, 1])
    monkeypatch.setattr(threads_module, "available_threads", lambda: next(counts))
    g = CenteredGram(RBF(1.0), X, batch_size=64)
    K = g.matrix.clone()
    assert g._threads == 2
    g.release()
    assert torch.equal(g.matrix, K)  # rebuilt with the same threads, hence bitwise
    assert g._threads == 2


def test_concurrent_sections_restore_the_process_settings():
    import threading

    from threadpoolctl import threadpool_info

    def blas_limits():
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    before, blas_before = torch.get_num_threads(), blas_limits()
    barrier = threading.Barrier(4)
    seen = []

    def work():
        with compute_threads(1) as n:
            barrier.wait()  # all four sections are open at once
            seen.append((n, torch.get_num_threads()))
            barrier.wait()

    workers = [threading.Thread(target=work) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert seen == [(1, 1)] * 4
    assert torch.get_num_threads() == before and section_threads() is None
    assert blas_limits() == blas_before  # the BLAS limits are back too


def test_overlapping_blas_blocks_restore_the_limits_they_found(monkeypatch):
    """Two Python threads' blas_threads blocks, the first to open ending first: one limit set, undone once
    by the last block to end (undoing per block would leave the second block's limit in place). A
    recording controller stands in for threadpoolctl's: with scipy's OpenBLAS, a limit set from a worker
    thread after the main thread set one does not take hold, so real limits cannot show the order."""
    import threading

    events = []

    class Limiter:
        def restore_original_limits(self):
            events.append("restore")

    class Controller:
        def limit(self, limits):
            events.append(("limit", limits))
            return Limiter()

    monkeypatch.setattr(threads_module, "_blas_controller", lambda: Controller())
    first_open, second_open, first_done = threading.Event(), threading.Event(), threading.Event()

    def first():
        with threads_module.blas_threads(1):
            first_open.set()
            second_open.wait()
            events.append("first ends")
        first_done.set()

    def second():
        first_open.wait()
        with threads_module.blas_threads(1):
            second_open.set()
            first_done.wait()
            events.append("second ends")

    workers = [threading.Thread(target=first), threading.Thread(target=second)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert events == [("limit", 1), "first ends", "second ends", "restore"]
    with threads_module.blas_threads(3):  # and a later block limits afresh
        pass
    assert events[-2:] == [("limit", 3), "restore"]


@pytest.mark.parametrize("preset, expected", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_importing_kppca_first_lets_idle_openmp_threads_sleep(preset, expected):
    """Spinning idle threads beside busy processes slow a fit 1.3-2x (issue 40): ``import kppca`` before torch
    sets OMP_WAIT_POLICY=PASSIVE for torch's OpenMP, and keeps a value the user set."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if preset is not None:
        env["OMP_WAIT_POLICY"] = preset
    code = "import os, kppca, torch; print(os.environ['OMP_WAIT_POLICY'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == expected
