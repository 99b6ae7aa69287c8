"""Each row's mean of its k largest entries, from the lower triangle, against numpy's sort of the whole rows."""

import numpy as np
import pytest
import torch

from kppca._linalg import CENTERING_ROUNDINGS, fused_passes, row_selection
from kppca._linalg.row_selection import row_top_means
from kppca.kernels import RBF
from kppca.kernels.centered_gram import CenteredGram


def reference(A: np.ndarray, shift: np.ndarray, k: int) -> np.ndarray:
    """The definition, in float64: sort each row of ``A + shift`` without its diagonal, average the k largest."""
    W = A.astype(np.float64) + shift.astype(np.float64)[None, :]
    np.fill_diagonal(W, -np.inf)
    return -np.sort(-W, axis=1)[:, :k].mean(1)


def tolerance(W_max: float, k: int, dtype: torch.dtype) -> float:
    """``(3k + 5) eps max|w|``, for any order of the sums (torch's tiles, the compiled loops' threads and lanes).

    A row's mean is ``(sum of the excesses w - upper over the c <= k entries above upper + upper c + the
    k - c largest band values) / k``: at most k + 1 additions of terms whose magnitudes add up to at most
    ``2 c W + c W + (k - c) W <= 3 k W`` (``W = max|w|``, ``|upper| <= W``), so a rounding error of at most
    ``(k + 1) eps 3 k W`` (first order, whatever the order); divided by k, ``3 (k + 1) eps W``. One rounding more
    per entry ``A_ij + shift_j`` (a near-tie may swap which of two entries within it is taken) and for the
    division. A wrong entry taken moves an integer matrix's mean by at least ``1 / k``, far beyond this."""
    return (3 * k + 5) * torch.finfo(dtype).eps * W_max


def symmetric_lower(rng, N: int, dtype: torch.dtype, integer: bool = False):
    """A symmetric matrix (numpy), its lower triangle as a tensor with NaN above (never read) and a shift."""
    if integer:  # many ties
        B = rng.integers(-2, 3, size=(N, N)).astype(np.float64)
    else:  # an RBF Gram matrix moved to both signs
        X = rng.normal(size=(N, 4))
        B = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(2) / 4) - 0.3
    A = np.tril(B) + np.tril(B, -1).T
    L = torch.as_tensor(A, dtype=dtype).clone()
    L[torch.ones(N, N, dtype=torch.bool).triu(1)] = float("nan")
    shift = rng.uniform(0, 0.1, size=N) if not integer else rng.integers(0, 2, size=N).astype(np.float64)
    return A, L, torch.as_tensor(shift, dtype=dtype)


def use_torch_passes(patch: pytest.MonkeyPatch) -> None:
    """The torch passes even with numba, in tiles small enough that a few hundred rows cross many of them (the
    production tiles are 512 x 8192)."""
    patch.setattr(fused_passes, "available", lambda L, shift: False)
    patch.setattr(row_selection, "TILE_ROWS", 16)
    patch.setattr(row_selection, "TILE_COLUMNS", 48)


@pytest.fixture(params=["torch", "compiled"])
def small_tiles(request, monkeypatch):
    """Each path: the torch passes in small tiles, or the compiled ones (skipped without numba)."""
    if request.param == "compiled":
        pytest.importorskip("numba")
        assert fused_passes.available(torch.zeros(2, 2), torch.zeros(2))
    else:
        use_torch_passes(monkeypatch)
    return request.param


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("threads", [1, 3])
def test_the_compiled_passes_select_what_the_torch_passes_do(rng, monkeypatch, dtype, integer, threads):
    """The same counts (ties counted as half) and the same band, whatever the threads; the means within the
    rounding of both (each within :func:`tolerance` of the exact one)."""
    pytest.importorskip("numba")
    N, k = 300, 30
    A, L, shift = symmetric_lower(rng, N, dtype, integer)
    lower, upper = row_selection._band_limits(L, shift, k, 64)
    with monkeypatch.context() as torch_only:
        use_torch_passes(torch_only)
        counts = [row_selection._count_pass(L, shift, t) for t in (lower, upper)]
        sums, above, rows, values = row_selection._band_pass(L, shift, lower, upper)
    for t, expected in zip((lower, upper), counts):
        assert torch.equal(fused_passes.count_pass(L, shift, t, threads), expected)
    need, band = k - above, torch.bincount(rows, minlength=N)
    expected_total = sums.index_add(0, *row_selection._largest_of_band(rows, values, band, need))
    got_total, got_need, got_band = fused_passes.band_means(L, shift, lower, upper, k, threads)
    assert torch.equal(got_need, need) and torch.equal(got_band, band)
    held = (need >= 0) & (need <= band)  # the rows whose k-th largest entry the band holds (the others go whole)
    assert held.sum() >= N // 4  # not a vacuous comparison (the integer matrix's ties leave 40 % of rows held)
    np.testing.assert_allclose(got_total[held].numpy() / k, expected_total[held].numpy() / k, rtol=0,
                               atol=2 * tolerance(float(np.abs(A).max() + shift.abs().max()), k, dtype))


def test_the_compiled_passes_serve_only_what_they_read_as_torch_does():
    pytest.importorskip("numba")
    L = torch.zeros(4, 4)
    assert fused_passes.available(L, torch.zeros(4))
    assert not fused_passes.available(L, torch.zeros(4, dtype=torch.float64))  # torch would add in float64
    assert not fused_passes.available(L.T, torch.zeros(4))  # not contiguous
    assert not fused_passes.available(L.half(), torch.zeros(4).half())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("k_fraction", [0.0, 0.1, 0.5, 1.0])
def test_the_sampled_passes_equal_the_sort(rng, small_tiles, dtype, integer, k_fraction):
    N = 400
    k = min(N - 1, max(1, round(k_fraction * (N - 1))))
    A, L, shift = symmetric_lower(rng, N, dtype, integer)
    expected = reference(A.astype(np.float32) if dtype == torch.float32 else A, shift.numpy(), k)
    got = row_top_means(L, shift, k, n_sample=64, direct_max=0).numpy()
    tol = tolerance(float(np.abs(A).max() + shift.abs().max()), k, dtype)
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol)
    direct = row_top_means(L, shift, k).numpy()  # N <= DIRECT_MAX: whole rows
    np.testing.assert_allclose(direct, expected, rtol=0, atol=tol)


@pytest.mark.parametrize("margins", [True, False])
def test_rows_whose_thresholds_miss_fall_back_to_whole_rows(rng, small_tiles, monkeypatch, margins):
    """Without margins many rows' bands miss the k-th largest entry and are computed whole (exactly); with the
    default margins few do (the passes' speed rests on it: a wrong sample or threshold shows here)."""
    if not margins:
        monkeypatch.setattr(row_selection, "MARGIN_SD", 0.0)
        monkeypatch.setattr(row_selection, "CURVATURE", 0.0)
    whole_rows, fallen_back = row_selection._whole_rows, []

    def counting(L, shift, k, rows):
        fallen_back.append(rows.numel())
        return whole_rows(L, shift, k, rows)

    monkeypatch.setattr(row_selection, "_whole_rows", counting)
    N, k = 300, 40
    A, L, shift = symmetric_lower(rng, N, torch.float64)
    got = row_top_means(L, shift, k, n_sample=64, direct_max=0).numpy()
    if margins:
        assert sum(fallen_back) <= 0.05 * N
    else:
        assert 0.1 * N < sum(fallen_back) < N  # many rows, not all, took the other route
    np.testing.assert_allclose(got, reference(A, shift.numpy(), k), rtol=0, atol=tolerance(1.1, k, torch.float64))


def test_the_tile_follows_the_device():
    """CPU tiles on the CPU, the larger GPU tiles elsewhere (a meta tensor stands for a GPU's), at most N / 32 rows."""
    assert row_selection._tile_shape(torch.empty(100_000, 1, device="meta").expand(100_000, 100_000)) == (
        row_selection.GPU_TILE_ROWS, row_selection.GPU_TILE_COLUMNS)
    assert row_selection._tile_shape(torch.empty(100_000, 1).expand(100_000, 100_000)) == (
        row_selection.TILE_ROWS, row_selection.TILE_COLUMNS)
    assert row_selection._tile_shape(torch.empty(3_200, 1, device="meta").expand(3_200, 3_200))[0] == 100


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("integer", [False, True])
def test_the_passes_on_a_gpu_equal_the_sort(rng, monkeypatch, dtype, integer):
    """On a GPU the torch passes run in the GPU tiles (here small, so that a few hundred rows cross many)."""
    monkeypatch.setattr(row_selection, "GPU_TILE_ROWS", 16)
    monkeypatch.setattr(row_selection, "GPU_TILE_COLUMNS", 48)
    N, k = 400, 40
    A, L, shift = symmetric_lower(rng, N, dtype, integer)
    got = row_top_means(L.cuda(), shift.cuda(), k, n_sample=64, direct_max=0)
    assert got.device.type == "cuda"
    expected = reference(A.astype(np.float32) if dtype == torch.float32 else A, shift.numpy(), k)
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=0,
                               atol=tolerance(float(np.abs(A).max() + shift.abs().max()), k, dtype))


def test_k_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"k must be in \[1, N - 1\]"):
        row_top_means(torch.zeros(5, 5), torch.zeros(5), 5)


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("direct_max", [0, row_selection.DIRECT_MAX])
def test_the_gram_buffer_gives_the_raw_kernel_rows_means(rng, small_tiles, monkeypatch, center, direct_max):
    """From ``K_c``'s lower triangle and the column means, the means of the raw ``K``'s rows, without a mirror."""
    monkeypatch.setattr(row_selection, "DIRECT_MAX", direct_max)
    monkeypatch.setattr(row_selection, "N_SAMPLE", 64)
    N, k = 350, 35
    X = rng.normal(size=(N, 3))
    gram = CenteredGram(RBF(1.5), torch.as_tensor(X), center=center)
    K = np.asarray(RBF(1.5)(X, X))  # the whole raw matrix, never centered
    assert gram.raw_top_means(k) is None  # no buffer yet: the caller evaluates the kernel
    gram.centerer  # builds the buffer (its lower triangle) and the statistics
    got = gram.raw_top_means(k).numpy()
    # K_c's entries carry CENTERING_ROUNDINGS eps max|K| of rounding; un-centering adds two more roundings.
    tol = tolerance(1.0, k, torch.float64) + (CENTERING_ROUNDINGS + 2) * torch.finfo(torch.float64).eps
    np.testing.assert_allclose(got, reference(K, np.zeros(N), k), rtol=0, atol=tol)
    gram.release()
    assert gram.raw_top_means(k) is None  # never rebuilt for this


def test_a_numba_that_cannot_load_leaves_the_torch_passes_with_a_warning(rng, monkeypatch):
    """An installed numba built for another numpy must not break sampling: the torch passes serve, and say so."""
    import builtins
    import importlib.util

    real_import = builtins.__import__

    def failing_import(name, *args, **kwargs):
        if name == "numba":
            raise ImportError("Numba needs NumPy 2.3 or less")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())  # "installed"
    monkeypatch.setattr(builtins, "__import__", failing_import)
    fused_passes._kernels.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="numba is installed but cannot be imported.*run in torch"):
            assert not fused_passes.available(torch.zeros(4, 4), torch.zeros(4))
        A, L, shift = symmetric_lower(rng, 200, torch.float64)
        got = row_top_means(L, shift, 20, n_sample=64, direct_max=0).numpy()
        np.testing.assert_allclose(got, reference(A, shift.numpy(), 20), rtol=0,
                                   atol=tolerance(1.1, 20, torch.float64))
    finally:
        fused_passes._kernels.cache_clear()  # the next test loads numba again
