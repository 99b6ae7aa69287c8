"""The passes of :mod:`kppca._linalg.row_selection` as compiled loops (numba): one read of each entry a pass.

torch runs each pass as a few element-wise operations per tile, each one a trip through memory, and every
off-diagonal tile twice (for its rows and, transposed, for its columns). These loops read each entry of the
lower triangle once and serve both its row and its column in registers: at N = 60,000 on two cores the hub
scores take 6.0 s instead of 18.1 s (``benchmarks/bench_hub_scores.py``). They count and select exactly what
the torch passes do:

- a count pass gives ``#{j != i : w_ij > t_i} + #{j != i : w_ij = t_i} / 2``, rounded half to even, as the
  torch pass's sum of signs does;
- a band pass finds the entries above ``upper`` (their count and the float64 sum of their excess) and those
  in ``(lower, upper]``, of which each row's largest are added as the torch selection adds them; only the
  sums' rounding order differs.

``w_ij = A_ij + shift_j`` is formed in ``A``'s dtype, as torch adds. Optional: used when numba is installed
(the ``fast`` extra), the matrix is a contiguous CPU tensor and ``shift`` has its dtype (:func:`available`);
else the torch passes run. Rows are split between threads in blocks of equal triangle area, each
thread with its own column accumulators (the column side of every row block overlaps the others').
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Callable

import numpy as np
import torch

__all__ = ["available", "count_pass", "band_means"]


def available(L: torch.Tensor, shift: torch.Tensor) -> bool:
    """Whether the compiled passes serve ``L`` and ``shift``: numba installed, CPU, contiguous, one dtype."""
    return (L.device.type == "cpu" and L.is_contiguous() and shift.dtype == L.dtype
            and L.dtype in (torch.float32, torch.float64) and _kernels() is not None)


@functools.cache
def _kernels() -> SimpleNamespace | None:
    """The compiled loops, built on first use (numba's cache keeps them between processes); None without numba."""
    if importlib.util.find_spec("numba") is None:
        return None
    try:
        from numba import njit
    except ImportError as error:  # installed for another package, but built for another numpy, say
        warnings.warn(f"numba is installed but cannot be imported ({error}); the hub scores' passes run in torch "
                      "(the same values, slower).", RuntimeWarning, stacklevel=2)
        return None

    jit = njit(nogil=True, cache=True, boundscheck=False)

    @jit
    def count_rows(L, shift, t, r0, r1, above, equal):
        # Entry (i, j), j < i: w_ij = L_ij + shift_j for row i, w_ji = L_ij + shift_i for row j.
        for i in range(r0, r1):
            ti, si = t[i], shift[i]
            a = e = 0
            for j in range(i):
                v = L[i, j]
                w = v + shift[j]
                a += w > ti
                e += w == ti
                x = v + si
                above[j] += x > t[j]
                equal[j] += x == t[j]
            above[i] += a
            equal[i] += e

    # Reassociating the float64 sums lets them vectorize (three times faster): they round in another order.
    @njit(nogil=True, cache=True, boundscheck=False, fastmath={"reassoc"})
    def band_count_rows(L, shift, lower, upper, r0, r1, excess, over, band):
        # Branch-free: the entries above upper, their excess over it, and the band's size.
        for i in range(r0, r1):
            ui, li, si = upper[i], lower[i], shift[i]
            s = 0.0
            o = b = 0
            for j in range(i):
                v = L[i, j]
                w = v + shift[j]
                s += max(w - ui, 0.0)
                o += w > ui
                b += (w > li) & (w <= ui)
                x = v + si
                excess[j] += max(x - upper[j], 0.0)
                over[j] += x > upper[j]
                band[j] += (x > lower[j]) & (x <= upper[j])
            excess[i] += s
            over[i] += o
            band[i] += b

    @jit
    def band_fill_rows(L, shift, lower, upper, r0, r1, position, values_out):
        # The band's values, each row's from its position (advanced as written): a rare branch.
        for i in range(r0, r1):
            ui, li, si = upper[i], lower[i], shift[i]
            for j in range(i):
                v = L[i, j]
                w = v + shift[j]
                if (w > li) & (w <= ui):
                    values_out[position[i]] = w
                    position[i] += 1
                x = v + si
                if (x > lower[j]) & (x <= upper[j]):
                    values_out[position[j]] = x
                    position[j] += 1

    @jit
    def add_band_tops(start, band, values, need, r0, r1, total):
        # Each row's `need` largest band values (held by every thread's block at its start), added to its total.
        scratch = np.empty(band.sum(0)[r0:r1].max() if r1 > r0 else 0, values.dtype)
        for i in range(r0, r1):
            m = 0
            for b in range(band.shape[0]):
                for t in range(band[b, i]):
                    scratch[m] = values[start[b, i] + t]
                    m += 1
            if 0 < need[i] <= m:
                largest = np.sort(scratch[:m])[m - need[i]:]
                acc = 0.0
                for t in range(need[i]):
                    acc += largest[t]
                total[i] += acc

    return SimpleNamespace(count_rows=count_rows, band_count_rows=band_count_rows, band_fill_rows=band_fill_rows,
                           add_band_tops=add_band_tops)


def _row_blocks(N: int, threads: int) -> list[tuple[int, int]]:
    """``threads`` row ranges of about equal lower-triangle area (row i holds i entries)."""
    edges = [round(N * np.sqrt(p / threads)) for p in range(threads + 1)]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def _run(blocks: list[tuple[int, int]], work: Callable[[int, int, int], None]) -> None:
    """``work(block_index, r0, r1)`` for every block, each in its own thread (the loops release the GIL)."""
    if len(blocks) == 1:
        work(0, *blocks[0])
        return
    with ThreadPoolExecutor(len(blocks)) as pool:
        for future in [pool.submit(work, b, r0, r1) for b, (r0, r1) in enumerate(blocks)]:
            future.result()


def count_pass(L: torch.Tensor, shift: torch.Tensor, t: torch.Tensor, threads: int | None = None) -> torch.Tensor:
    """As ``row_selection._count_pass``: per row ``#{w > t} + #{w = t} / 2``, rounded half to even, (N,) int64.

    ``threads`` (default: torch's, which the compute section sets) only splits the work: the counts are the same.
    """
    kernels, A, s, tt = _kernels(), L.numpy(), _vector(shift), _vector(t.to(L.dtype))
    N = A.shape[0]
    blocks = _row_blocks(N, threads or torch.get_num_threads())
    above = np.zeros((len(blocks), N), np.int64)
    equal = np.zeros((len(blocks), N), np.int64)
    _run(blocks, lambda b, r0, r1: kernels.count_rows(A, s, tt, r0, r1, above[b], equal[b]))
    return torch.from_numpy(above.sum(0) + equal.sum(0) / 2).round().long()


def band_means(L: torch.Tensor, shift: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor, k: int,
               threads: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``row_selection``'s band pass and the selection in the band, in two reads of the triangle.

    Returns ``(total, need, band)``, (N,) each: the sum of the entries above ``upper`` plus the ``need = k -
    #{w > upper}`` largest of the ``band`` entries in ``(lower, upper]`` (float64; the band's part only where
    ``0 <= need <= band``, the rows whose k-th largest entry the band holds), ``need`` and ``band`` (int64).
    The first read counts each thread's band entries per row, which places every thread's values in one array;
    the second writes them there. ``threads`` splits the work as in :func:`count_pass`; the sums' rounding
    follows it.
    """
    kernels, A, s = _kernels(), L.numpy(), _vector(shift)
    lo, up = _vector(lower.to(L.dtype)), _vector(upper.to(L.dtype))
    N = A.shape[0]
    blocks = _row_blocks(N, threads or torch.get_num_threads())
    excess = np.zeros((len(blocks), N), np.float64)
    over = np.zeros((len(blocks), N), np.int64)
    band = np.zeros((len(blocks), N), np.int64)
    _run(blocks, lambda b, r0, r1: kernels.band_count_rows(A, s, lo, up, r0, r1, excess[b], over[b], band[b]))
    start = (np.cumsum(band.ravel()) - band.ravel()).reshape(band.shape)  # thread by thread, row by row
    values = np.empty(int(band.sum()), A.dtype)
    position = start.copy()
    _run(blocks, lambda b, r0, r1: kernels.band_fill_rows(A, s, lo, up, r0, r1, position[b], values))
    counts = over.sum(0)
    need = k - counts
    total = excess.sum(0) + up.astype(np.float64) * counts
    rows = [(round(N * p / len(blocks)), round(N * (p + 1) / len(blocks))) for p in range(len(blocks))]
    _run(rows, lambda b, r0, r1: kernels.add_band_tops(start, band, values, need, r0, r1, total))
    return torch.from_numpy(total), torch.from_numpy(need), torch.from_numpy(band.sum(0))


def _vector(v: torch.Tensor) -> np.ndarray:
    """A CPU tensor's values as a contiguous numpy array (a view where it can be)."""
    return np.ascontiguousarray(v.detach().cpu().numpy())
