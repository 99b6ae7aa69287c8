"""Landmark selection: the blockwise reservoir is exactly uniform; k-means++ spreads landmarks; Nystroem's rules."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy import stats

from kppca.features import Nystroem
from kppca.features.landmarks import Reservoir, block_reservoir, kmeanspp, reservoir
from kppca.kernels import RBF


def _subset_counts(draw, N: int, m: int, trials: int) -> np.ndarray:
    """How often each m-subset of range(N) is drawn in ``trials`` calls of ``draw(seed) -> ids``."""
    index = {s: i for i, s in enumerate(itertools.combinations(range(N), m))}
    counts = np.zeros(len(index))
    for t in range(trials):
        counts[index[tuple(sorted(int(i) for i in draw(t)))]] += 1
    return counts


def _blockwise(sizes, m, seed):
    """The reservoir of blocks of the given sizes, merged in a tree as the Dask path does."""
    offsets = np.cumsum((0,) + tuple(sizes))[:-1]
    rows = np.arange(sum(sizes), dtype=float)[:, None]
    parts = [block_reservoir(rows[o : o + n], None, m, seed, b, int(o)) for b, (o, n) in enumerate(zip(offsets, sizes))]
    while len(parts) > 1:
        parts = [parts[i].merge(parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    return parts[0].ids


def _chi2_bound(n_cells: int) -> float:
    # Pearson's statistic of multinomial counts with equal cell probabilities is
    # asymptotically chi2(n_cells - 1) (expected counts here >= 400, far in the
    # asymptotic regime). The bound is its 1 - 1e-6 quantile: an exactly uniform sampler
    # exceeds it with probability 1e-6 (and the seeds are fixed, so the test is deterministic).
    return float(stats.chi2.isf(1e-6, n_cells - 1))


def test_blockwise_reservoir_is_exactly_uniform_over_subsets():
    sizes, m, trials = (3, 1, 3), 3, 14000  # 35 subsets of 7 rows, 400 expected draws each
    counts = _subset_counts(lambda t: _blockwise(sizes, m, seed=t), 7, m, trials)
    expected = trials / len(counts)
    statistic = float(((counts - expected) ** 2 / expected).sum())
    assert statistic < _chi2_bound(len(counts)), statistic


def test_the_uniformity_check_rejects_a_biased_reservoir():
    # A plausible wrong rule: keys = random ranks scaled by block size (not i.i.d. uniform).
    # It favours the lone row of the middle block (key 1/2 always); the same check must reject it.
    sizes, m, trials = (3, 1, 3), 3, 14000

    def biased(seed):
        rng = np.random.default_rng(seed)
        keys = np.concatenate([(rng.permutation(n) + 1) / (n + 1) for n in sizes])
        return np.argsort(keys, kind="stable")[:m]

    counts = _subset_counts(biased, 7, m, trials)
    expected = trials / len(counts)
    assert float(((counts - expected) ** 2 / expected).sum()) > _chi2_bound(len(counts))


def test_dask_reservoir_equals_the_blockwise_composition_and_carries_labels():
    da = pytest.importorskip("dask.array")
    X = np.arange(50 * 2, dtype=float).reshape(50, 2)
    y = np.arange(50) % 7
    sizes = (13, 20, 7, 10)
    rows, labels, ids = reservoir(da.from_array(X, chunks=(sizes, 1)), 6, random_state=3, y=da.from_array(y, chunks=(sizes,)))
    seed = int(np.random.default_rng(3).integers(2**62))
    assert sorted(ids) == sorted(_blockwise(sizes, 6, seed))
    np.testing.assert_array_equal(rows, X[ids])
    np.testing.assert_array_equal(labels, y[ids])
    # y in memory gives the same labels; in memory, X gives a subset of the same size
    _, labels2, ids2 = reservoir(da.from_array(X, chunks=(sizes, 1)), 6, random_state=3, y=y)
    np.testing.assert_array_equal(ids2, ids)
    np.testing.assert_array_equal(labels2, labels)
    rows_mem, _, ids_mem = reservoir(X, 6, random_state=3)
    assert len(set(ids_mem.tolist())) == 6 and np.array_equal(rows_mem, X[ids_mem])
    # more rows asked for than exist: all of them
    assert sorted(reservoir(da.from_array(X, chunks=(sizes, 2)), 80, random_state=0)[2]) == list(range(50))


def test_reservoir_merge_keeps_the_smallest_keys():
    a = Reservoir(np.array([0.1, 0.7]), np.array([0, 1]), np.zeros((2, 1)), None, 2)
    b = Reservoir(np.array([0.3, 0.05]), np.array([5, 6]), np.ones((2, 1)), None, 2)
    merged = a.merge(b)
    np.testing.assert_array_equal(merged.ids, [6, 0])


def test_kmeanspp_reaches_every_cluster():
    # Ten tight, far-apart clusters of very unequal sizes (1,000 .. 10 rows): uniform sampling of
    # ten rows misses the small clusters, k-means++ takes one landmark per cluster (after the
    # first, the next draw is from the unreached clusters with probability >= 1 - 1e-30 here).
    rng = np.random.default_rng(0)
    sizes = [1000, 500, 200, 100, 60, 40, 30, 20, 15, 10]
    centers = rng.normal(size=(10, 3)) * 100
    X = torch.as_tensor(np.concatenate([c + 0.01 * rng.normal(size=(n, 3)) for c, n in zip(centers, sizes)]))
    cluster = np.repeat(np.arange(10), sizes)
    for seed in range(3):
        idx = kmeanspp(X, 10, RBF(5.0), random_state=seed).numpy()
        assert len(set(idx.tolist())) == 10
        assert sorted(cluster[idx]) == list(range(10))


def test_kmeanspp_with_duplicates_fills_up_uniformly():
    X = torch.zeros((6, 2), dtype=torch.float64)
    X[3:] = 1.0
    idx = kmeanspp(X, 4, RBF(1.0), random_state=0).numpy()
    assert len(set(idx.tolist())) == 4
    with pytest.raises(ValueError, match="cannot choose 7 landmarks from 6 rows"):
        kmeanspp(X, 7, RBF(1.0))


def test_nystroem_selection_rules_and_reference_set(rng):
    X = rng.normal(size=(80, 3))
    for rule in ("uniform", "kmeans++"):
        fmap = Nystroem(RBF(1.0), n_landmarks=12, landmark_selection=rule, random_state=0).fit(X)
        L, C = fmap.reference_set()
        np.testing.assert_array_equal(L.numpy(), X[fmap.landmark_indices_.numpy()])
        # phi(L)^T C = I_d (eigenvectors of K_LL: rounding ~ cond(K_LL) eps)
        phi_L = fmap.transform(L)
        cond = float(np.linalg.cond(RBF(1.0)(L, L)))
        np.testing.assert_allclose((phi_L.T @ C).numpy(), np.eye(C.shape[1]), atol=100 * cond * np.finfo(float).eps)
    assert Nystroem(n_landmarks=5).pool_size() == 5 and Nystroem(n_landmarks=5, landmark_selection="kmeans++").pool_size() == 20
    with pytest.raises(ValueError, match="landmark_selection"):
        Nystroem(n_landmarks=5, landmark_selection="leverage").fit(X)
    assert Nystroem().reference_set() is None  # unfitted
