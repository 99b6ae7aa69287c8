"""The mean of each row's ``k`` largest entries of a symmetric matrix stored as its lower triangle.

The sampling smoother's hub scores are this mean over the raw training Gram matrix, whose buffer holds the
lower triangle of ``K_c`` only. A ``topk`` needs whole rows: at N = 60,000 mirroring the buffer (the first
touch of its 7 GB upper half), un-centering every row and the ``topk`` took 33 s (``benchmarks/README.md``).
Here the lower triangle is read tile by tile, each tile serving its rows and, transposed, its columns, by
element-wise passes instead of a selection (Floyd and Rivest's sampling idea):

1. a sample of ``n_sample`` columns gives each row a first threshold ``t0``, its k-th largest sampled value;
2. one pass counts the entries above ``t0``; a second counts those above ``t1``, chosen from the sample on
   the other side of the k-th largest entry with a margin;
3. interpolating between the two counts places the k-th largest entry; a third pass sums the entries above
   the upper end of a band around it and collects those inside (150-250 a row at N = 60,000), of which the
   ``k - count(> upper)`` largest are added.

The result is the exact mean, up to rounding in another order than a ``topk``'s. The rows (about one in a
thousand) whose band misses the k-th largest entry are computed from whole rows. With numba installed the
count and band passes run as compiled loops (:mod:`kppca._linalg.fused_passes`), which count and select the
same entries.
"""

from __future__ import annotations

import torch

from . import fused_passes

#: Columns sampled for the first thresholds; the bands shrink with more, the sample costs ``N n_sample``.
N_SAMPLE = 2048

#: Up to this N, whole rows and a ``topk`` (no sample: the passes' overhead would not pay).
DIRECT_MAX = 4096

#: Tile of the lower triangle: rows x columns (16 MiB in float32). Each pass runs a few element-wise torch
#: operations per tile; with ``OMP_WAIT_POLICY=PASSIVE`` (set by ``import kppca``) every one wakes the sleeping
#: OpenMP threads, so fewer, larger tiles: at N = 16,000 a count pass took 0.47 s in tiles of 128 x 4096 and
#: 0.24 s in 512 x 8192 (with spinning threads 0.16 and 0.18 s).
TILE_ROWS, TILE_COLUMNS = 512, 8192

#: The tile on a GPU, where element-wise kernels are cheap and each tile costs kernel launches and, in the
#: band pass, a synchronisation (its ``nonzero``): larger tiles (chosen on an H200, benchmarks/README.md).
GPU_TILE_ROWS, GPU_TILE_COLUMNS = 2048, 32768

#: Margin of the second threshold beyond the k-th largest entry, in standard deviations of its estimate.
MARGIN_SD = 3.0

#: Allowance for the count's curvature between the two thresholds, times ``between * f (1 - f)`` entries
#: (``f`` the interpolated fraction). On MNIST at N = 60,000 (k = 6,000): 611 rows fall back with 0.1, 66 with
#: 0.25 and 60 with 0.5, whose bands are 108, 156 and 236 entries a row (the hub scores 14.0, 14.6, 15.1-16.0 s).
CURVATURE = 0.25


def row_top_means(L: torch.Tensor, shift: torch.Tensor, k: int, *, n_sample: int | None = None,
                  direct_max: int | None = None) -> torch.Tensor:
    """Mean of the ``k`` largest ``w_ij = A_ij + shift_j`` over ``j != i``, for each row of the symmetric ``A``.

    Parameters
    ----------
    L : Tensor of shape (N, N)
        Its lower triangle (diagonal included) is that of ``A``; the strict upper one is never used (read at
        most inside diagonal blocks, whose pages the lower triangle shares).
    shift : Tensor of shape (N,)
        Added to each column (the column means that un-center ``K_c``).
    k : int
        In ``[1, N - 1]``.
    n_sample, direct_max : int, optional
        Columns sampled for the first thresholds; the largest N computed from whole rows (default: the module's
        :data:`N_SAMPLE` and :data:`DIRECT_MAX`, read at the call).

    Returns
    -------
    Tensor of shape (N,), float64
    """
    N = L.shape[0]
    if not 1 <= k <= N - 1:
        raise ValueError(f"k must be in [1, N - 1] = [1, {N - 1}], got {k}.")
    n_sample = N_SAMPLE if n_sample is None else n_sample
    if N <= (DIRECT_MAX if direct_max is None else direct_max):
        return _whole_rows(L, shift, k, torch.arange(N, device=L.device))
    lower, upper = _band_limits(L, shift, k, min(n_sample, N))
    if fused_passes.available(L, shift):
        total, need, band = fused_passes.band_means(L, shift, lower, upper, k)
    else:
        total, above, band_rows, band_values = _band_pass(L, shift, lower, upper)
        need = k - above  # the band's largest entries still to take
        band = torch.bincount(band_rows, minlength=N)
        total = total.index_add(0, *_largest_of_band(band_rows, band_values, band, need))
    out = total / k
    rest = ((need < 0) | (need > band)).nonzero()[:, 0]  # the k-th largest entry outside the band
    if rest.numel():
        out[rest] = _whole_rows(L, shift, k, rest)
    return out


def _band_limits(L: torch.Tensor, shift: torch.Tensor, k: int, s: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row ``(lower, upper)``, (N,) each, between which the k-th largest ``w_ij`` lies (nearly always)."""
    N = L.shape[0]
    sample = torch.linspace(0, N - 1, s, device=L.device).round().long()
    kk = max(1, min(s - 1, round(k * (s - 1) / (N - 1))))  # the sample rank of the k-th largest entry
    top = _sampled_top(L, shift, sample, min(s - 1, 2 * kk + 64))  # (N, r), descending
    t0 = top[:, kk - 1].contiguous()
    above0 = _count_pass(L, shift, t0)
    # t1 on the other side of the k-th largest entry: its sample-rank distance from t0 estimated from the count
    # above t0, plus MARGIN_SD standard deviations of the count between two sample ranks (Poisson).
    gap = (above0 - k).abs().double() * (s - 1) / (N - 1)
    step = (gap + MARGIN_SD * (gap + 1).sqrt() + 2).ceil().long()
    rank1 = torch.where(above0 >= k, kk - 1 - step, kk - 1 + step).clamp(0, top.shape[1] - 1)
    t1 = top.gather(1, rank1[:, None])[:, 0].contiguous()
    del top
    above1 = _count_pass(L, shift, t1)
    # Between t0 and t1 the count is nearly linear in the value: interpolate where it is k, and keep MARGIN_SD
    # standard deviations (Poisson, of the entries in between) and a curvature allowance on either side.
    between = (above0 - above1).abs().double()
    frac = ((above0 - k).abs().double() / between.clamp(min=1)).clamp(0, 1)  # of the way from t0 to t1
    t2 = t0.double() + (t1.double() - t0.double()) * frac
    spread = MARGIN_SD * (between * frac * (1 - frac)).sqrt() + CURVATURE * between * frac * (1 - frac) + 2
    half = spread * (t1.double() - t0.double()).abs() / between.clamp(min=1)
    bracketed = (above0 - k) * (above1 - k) <= 0
    hi, lo = torch.maximum(t0, t1).double(), torch.minimum(t0, t1).double()
    upper = torch.where(bracketed, torch.minimum(t2 + half, hi), hi).to(L.dtype)
    lower = torch.where(bracketed, torch.maximum(t2 - half, lo), lo).to(L.dtype)
    return lower, upper


def _largest_of_band(rows: torch.Tensor, values: torch.Tensor, band: torch.Tensor,
                     need: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(rows, values)`` of each row's ``need`` largest band entries, for an ``index_add`` (values in float64)."""
    order = _by_row_largest_first(rows, values)
    rows = rows[order]
    first = torch.cumsum(band, 0) - band  # where each row's entries start
    rank = torch.arange(rows.numel(), device=rows.device) - first[rows]
    keep = rank < need[rows]
    return rows[keep], values[order][keep].double()


def _by_row_largest_first(rows: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """The order that groups ``(rows, values)`` by row, ascending, and each row's values descending."""
    if values.dtype == torch.float32:
        # One sort of int64 keys: the row, then the value's bits made monotone (negatives' other bits flipped).
        bits = values.view(torch.int32).long()
        monotone = torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits)  # ascending with the value
        return torch.sort(rows * (1 << 32) + ((1 << 31) - 1 - monotone)).indices
    order = torch.sort(values, descending=True, stable=True).indices
    return order[torch.sort(rows[order], stable=True).indices]


def _columns(L: torch.Tensor, cols: torch.Tensor, i0: int, i1: int) -> torch.Tensor:
    """``A[i0:i1, cols]`` (i1 - i0, len(cols)) for ascending ``cols``, from the lower triangle of ``L``.

    ``A_ij = L[i, j]`` for ``j <= i``, else ``L[j, i]``: rows of ``L`` left of the block's end and, transposed,
    the columns' rows from the block's start; the strict upper triangle is read only inside the block.
    """
    a, c = (int(v) for v in torch.searchsorted(cols, torch.tensor([i0, i1], device=cols.device)))
    W = L.new_empty(i1 - i0, cols.numel())
    W[:, :c] = L[i0:i1].index_select(1, cols[:c])
    upper = L[cols[a:], i0:i1].T
    i = torch.arange(i0, i1, device=L.device)[:, None]
    W[:, a:] = torch.where(cols[None, a:] <= i, W[:, a:], upper) if c > a else upper
    return W


def _whole_rows(L: torch.Tensor, shift: torch.Tensor, k: int, rows: torch.Tensor) -> torch.Tensor:
    """The exact means for ascending ``rows`` from whole rows and a ``topk``, (len(rows),).

    In blocks of at most ``N / 32`` rows and 4 Mi entries: each block and its temporaries beside ``L``.
    """
    N = L.shape[0]
    out = torch.empty(rows.numel(), dtype=torch.float64, device=L.device)
    step = max(1, min(N // 32, (1 << 22) // N))
    for b in range(0, rows.numel(), step):
        R = rows[b : b + step]
        # A symmetric: its rows R are its columns R, assembled in blocks of a tile's columns (the strict upper
        # triangle is read only inside those blocks: at N = 60,000 it is never touched outside them)
        columns = _tile_shape(L)[1]
        W = torch.cat([_columns(L, R, i0, min(i0 + columns, N)) for i0 in range(0, N, columns)])
        W = W.T.add(shift[None, :])
        W[torch.arange(R.numel(), device=L.device), R] = -torch.inf  # not its own neighbour
        out[b : b + step] = torch.topk(W, k, dim=1, sorted=False).values.sum(1, dtype=torch.float64) / k
    return out


def _sampled_top(L: torch.Tensor, shift: torch.Tensor, sample: torch.Tensor, r: int) -> torch.Tensor:
    """The ``r`` largest ``w_ij`` over the sampled columns ``j != i`` (ascending ``sample``), descending, (N, r)."""
    N, s = L.shape[0], sample.numel()
    out = L.new_empty(N, r)
    step = max(1, (1 << 22) // s)
    for i0 in range(0, N, step):
        i1 = min(i0 + step, N)
        W = _columns(L, sample, i0, i1).add_(shift[sample][None, :])
        W[torch.arange(i0, i1, device=L.device)[:, None] == sample[None, :]] = -torch.inf  # not its own neighbour
        out[i0:i1] = torch.topk(W, r, dim=1).values
    return out


def _tiles(L: torch.Tensor, shift: torch.Tensor):
    """``(rows, W, axis)`` over the lower triangle: ``W`` holds ``w`` of the rows ``rows`` along its ``axis``.

    Each off-diagonal tile is produced twice, for its rows (axis 0) and, transposed, for its columns
    (axis 1), by the same addition, so that every pass sees bitwise the same ``w``. ``W`` is a reused buffer.
    """
    N = L.shape[0]
    rows, columns = _tile_shape(L)
    buffer = L.new_empty(_tile_size(L))
    for i0 in range(0, N, rows):
        i1 = min(i0 + rows, N)
        D = L[i0:i1, i0:i1].tril()
        W = (D + D.tril(-1).T).add_(shift[None, i0:i1])
        W.diagonal().fill_(-torch.inf)  # not its own neighbour
        yield slice(i0, i1), W, 0
        for j0 in range(0, i0, columns):
            j1 = min(j0 + columns, i0)
            T, W = L[i0:i1, j0:j1], buffer[: (i1 - i0) * (j1 - j0)].view(i1 - i0, j1 - j0)
            yield slice(i0, i1), torch.add(T, shift[None, j0:j1], out=W), 0
            yield slice(j0, j1), torch.add(T, shift[i0:i1, None], out=W), 1


def _tile_shape(L: torch.Tensor) -> tuple[int, int]:
    """(rows, columns) of a tile for ``L``'s device; at most ``N / 32`` rows (a few tiles' temporaries are small
    beside ``L``)."""
    rows, columns = (TILE_ROWS, TILE_COLUMNS) if L.device.type == "cpu" else (GPU_TILE_ROWS, GPU_TILE_COLUMNS)
    return max(1, min(rows, L.shape[0] // 32)), columns


def _tile_size(L: torch.Tensor) -> int:
    """Entries of the largest tile (the diagonal ones are square)."""
    rows, columns = _tile_shape(L)
    return rows * min(columns, L.shape[0])


def _along(t: torch.Tensor, rows: slice, axis: int) -> torch.Tensor:
    """Per-row thresholds ``t[rows]`` shaped to broadcast along a tile's ``axis``."""
    return t[rows][:, None] if axis == 0 else t[rows][None, :]


def _difference(W: torch.Tensor, t: torch.Tensor, scratch: torch.Tensor) -> torch.Tensor:
    """``W - t`` written into the start of the flat ``scratch`` (a buffer reused over the tiles), shaped as ``W``."""
    return torch.sub(W, t, out=scratch[: W.numel()].view(W.shape))


def _above(W: torch.Tensor, t: torch.Tensor, scratch: torch.Tensor) -> torch.Tensor:
    """``(W - t)_+``: positive exactly where ``W > t`` (a difference of floats is 0 only if they are equal).

    Arithmetic, not comparisons: on CPU torch's float passes run several times faster than its boolean ones.
    """
    return _difference(W, t, scratch).clamp_min_(0)


def _count_pass(L: torch.Tensor, shift: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``#{j : w_ij > t_i}`` of every row, (N,) int64, up to the entries equal to ``t_i`` (counted as half).

    From the sum of ``sign(w - t)`` (``#above - #below``): one pass fewer than a clamp. The counts only place
    the next thresholds; the band pass counts exactly.
    """
    if fused_passes.available(L, shift):
        return fused_passes.count_pass(L, shift, t)
    N = L.shape[0]
    signs = torch.zeros(N, dtype=torch.float64, device=L.device)
    scratch = L.new_empty(_tile_size(L))
    for rows, W, axis in _tiles(L, shift):
        signs[rows] += _difference(W, _along(t, rows, axis), scratch).sign_().sum(1 - axis)
    return ((signs + N) / 2).round().long()  # N entries per row, its own (-inf) below


def _band_pass(L: torch.Tensor, shift: torch.Tensor, lower: torch.Tensor,
               upper: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per row the sum (float64) and count of the entries above ``upper``, and the entries in ``(lower, upper]``.

    Returns ``(sums, counts, band_rows, band_values)``: the band as (row, value) pairs in no particular order.
    """
    N = L.shape[0]
    sums = torch.zeros(N, dtype=torch.float64, device=L.device)
    counts = torch.zeros(N, dtype=L.dtype, device=L.device)
    over_upper, over_lower = L.new_empty(_tile_size(L)), L.new_empty(_tile_size(L))
    band_rows, band_values = [], []
    for rows, W, axis in _tiles(L, shift):
        up, lo = _along(upper, rows, axis), _along(lower, rows, axis)
        X = _above(W, up, over_upper)
        sums[rows] += X.sum(1 - axis)  # the excess over upper; its count times upper is added below
        X.sign_()
        counts[rows] += X.sum(1 - axis)
        inside = _above(W, lo, over_lower).sign_().sub_(X)  # 1 where lower < w <= upper
        where = inside.nonzero()
        if where.numel():
            band_rows.append(where[:, axis] + rows.start)
            band_values.append(W[where[:, 0], where[:, 1]])
    counts = counts.round().long()
    sums += upper.double() * counts
    if not band_rows:
        return sums, counts, torch.zeros(0, dtype=torch.int64, device=L.device), L.new_zeros(0)
    return sums, counts, torch.cat(band_rows), torch.cat(band_values)
