"""How many threads kppca's own parallel sections use: the limits the caller set, never the momentary load.

Rounding depends on the thread count, so the count comes from settings only (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from typing import Any, Callable, Iterator

import torch

_state = threading.local()
# The sections active now (any Python thread): their count, torch's threads before the first, the BLAS limiter.
_global_lock = threading.Lock()
_active = 0
_active_threads = 1
_saved_threads = 1
_limiter: Any = None
_controller_lock = threading.Lock()
_controller = None
# blas_threads blocks active now (any Python thread) and the limiter the last of them undoes.
_blas_blocks = 0
_blas_block_limiter: Any = None


def _blas_controller():
    """threadpoolctl's controller of the BLAS libraries loaded now (numpy's, scipy's), created once."""
    global _controller
    with _controller_lock:
        if _controller is None:
            import scipy.linalg.blas  # noqa: F401  (loads scipy's BLAS, the one ARPACK calls)
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController().select(user_api="blas")
        return _controller


def _limit_blas(n: int) -> Any:
    """Limit the loaded BLAS libraries to ``n`` threads; threadpoolctl's limiter to undo it, or None."""
    try:
        return _blas_controller().limit(limits=n)
    except Exception:
        return None


def _blas_limit() -> int | None:
    """The smallest thread limit of the loaded BLAS libraries (a caller's ``threadpool_limits``), or None."""
    try:
        limits = [int(lib.num_threads) for lib in _blas_controller().lib_controllers]
    except Exception:  # a BLAS threadpoolctl cannot query: no limit known
        return None
    limits = [n for n in limits if n > 0]
    return min(limits) if limits else None


def _process_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def available_threads() -> int:
    """``min(torch.get_num_threads(), BLAS limits, cores of this process)``, at least 1."""
    n = min(torch.get_num_threads(), _process_cores())
    blas = _blas_limit()
    if blas is not None:
        n = min(n, blas)
    return max(1, n)


def section_threads() -> int | None:
    """The thread count of the enclosing :func:`compute_threads` section, None outside one."""
    return getattr(_state, "threads", None)


@contextlib.contextmanager
def compute_threads(threads: int | None = None) -> Iterator[int]:
    """Run a section with :func:`available_threads` (or ``threads``) threads in torch and the BLAS; yields the count.

    Nested sections keep the outer count; concurrent sections (several Python threads) share the first
    one's count, and the last to finish restores the settings.
    """
    global _active, _active_threads, _saved_threads, _limiter
    outer = section_threads()
    if outer is not None:
        yield outer
        return
    with _global_lock:
        if _active == 0:
            n = max(1, int(threads)) if threads is not None else available_threads()
            _saved_threads = torch.get_num_threads()
            _limiter = _limit_blas(n)
            if n != _saved_threads:
                torch.set_num_threads(n)
            _active_threads = n
        _active += 1
        n = _active_threads
    _state.threads = n
    try:
        yield n
    finally:
        _state.threads = None
        with _global_lock:
            _active -= 1
            if _active == 0:
                if _limiter is not None:
                    _limiter.restore_original_limits()
                    _limiter = None
                if torch.get_num_threads() != _saved_threads:
                    torch.set_num_threads(_saved_threads)


@contextlib.contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """numpy's and scipy's BLAS on ``n`` threads for the block, restored after; torch's threads untouched.

    Concurrent blocks share the first one's limit; the last to finish restores what was there before.
    """
    global _blas_blocks, _blas_block_limiter
    with _global_lock:
        if _blas_blocks == 0:
            _blas_block_limiter = _limit_blas(max(1, int(n)))
        _blas_blocks += 1
    try:
        yield
    finally:
        with _global_lock:
            _blas_blocks -= 1
            if _blas_blocks == 0 and _blas_block_limiter is not None:
                _blas_block_limiter.restore_original_limits()
                _blas_block_limiter = None


def compute_section(method: Callable) -> Callable:
    """Run ``method`` (an estimator's ``fit``) as one :func:`compute_threads` section."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with compute_threads():
            return method(*args, **kwargs)

    return wrapper
