"""Pairwise distances: exact zeros for identical rows, no cancellation for near rows, no overflow."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _asserts import assert_within

from kppca.kernels import RBF, Laplacian, squared_distances
from kppca.kernels.distances import exp_neg_scaled, pairwise_distances, scaled_squared_distances

EPS = np.finfo(np.float64).eps


def test_identical_rows_have_distance_zero_whether_or_not_y_is_passed(rng):
    """Issue 18.13: RBF(1e-3)(A, A) had diagonal entries 4.9e-4 and 1e-107, RBF(1e-3)(A) exactly 1."""
    A = 1e6 * rng.normal(size=(50, 2))
    np.testing.assert_array_equal(np.diag(RBF(1e-3)(A, A)), 1.0)
    np.testing.assert_array_equal(RBF(1e-3)(A, A), RBF(1e-3)(A))
    # rows of X that reappear in Y, in another order and among other rows
    idx = [7, 3, 41]
    K = RBF(1e-3)(A[idx], np.vstack([A, 1e6 * rng.normal(size=(5, 2))]))
    np.testing.assert_array_equal(K[np.arange(3), idx], 1.0)
    T = torch.tensor(A)
    D = squared_distances(T, T.clone())
    assert torch.equal(D.diagonal(), torch.zeros(50, dtype=torch.float64))
    for dtype in (torch.float32, torch.float64):
        Tc = T.to(dtype)
        assert torch.equal(squared_distances(Tc[idx], Tc)[torch.arange(3), idx], torch.zeros(3, dtype=dtype))


@pytest.mark.parametrize("offset", [0.0, 1e3])
def test_near_rows_are_not_lost_to_cancellation(rng, offset):
    """Pairs 1e-9 apart on data of norm ~1: the expansion alone has an absolute error of
    ~D eps |x|^2 ~ 1e-15, a million times the true 1e-18; the recomputed entries are
    direct differences, accurate to (D + 2) eps relative (each difference is rounded once,
    then D squares are summed)."""
    D_feat = 3
    X = rng.normal(size=(20, D_feat)) + offset
    Y = X + 1e-9 * rng.normal(size=X.shape)
    out = squared_distances(torch.tensor(X), torch.tensor(Y)).numpy()
    direct = ((X - Y) ** 2).sum(1)  # the same rounding model as the recomputed entries
    assert_within(np.diag(out), direct, 2 * (D_feat + 2) * EPS * direct)


def test_scaled_distances_do_not_overflow_or_underflow(rng):
    X = rng.normal(size=(10, 3))
    ref = squared_distances(torch.tensor(X), torch.tensor(X)).numpy()
    for exponent in (-1060, -600, 600, 1000):  # squares of 2^600 overflow float64; of 2^-600 underflow
        c = math.ldexp(1.0, exponent)
        D, s = scaled_squared_distances(torch.tensor(X * c), torch.tensor(X * c))
        assert s != 1.0 and torch.isfinite(D).all()
        # the data and the distances scale by exact powers of two (2^-1060 is subnormal: X * c
        # keeps only ~2 bits, so there the distances agree to that precision only)
        ratio = (c / s) ** 2
        if exponent > -1000:
            np.testing.assert_array_equal(D.numpy(), ref * ratio)
        else:
            assert_within(D.numpy(), ref * ratio, 0.5 * ref.max() * ratio)
    d, s = pairwise_distances(torch.tensor(X * 2.0**1020), torch.tensor(X * 2.0**1020), "l1")
    assert s != 1.0 and torch.isfinite(d).all()


def test_exp_neg_scaled_limits():
    d = torch.tensor([0.0, 1e-290, 1.0, 1e300], dtype=torch.float64)
    for power in (1, 2):
        np.testing.assert_array_equal(exp_neg_scaled(d.clone(), 1.0, 1e-300, power), [1.0, 0.0, 0.0, 0.0])
        np.testing.assert_array_equal(exp_neg_scaled(d.clone(), 1.0, 5e-324, power), [1.0, 0.0, 0.0, 0.0])
        assert exp_neg_scaled(d.clone(), 1.0, 1e300, power)[:3].tolist() == [1.0, 1.0, 1.0]
    # an argument of exactly 1/2 (power 2) and 1 (power 1) where the factor is not representable in float32
    d32 = torch.tensor([0.0, 1.0], dtype=torch.float32)
    assert exp_neg_scaled(d32.clone(), 2.0**-100, 2.0**-100, 2).tolist() == [1.0, pytest.approx(math.exp(-0.5))]
    assert exp_neg_scaled(d32.clone(), 1.0, 2.0**-140, 1).tolist() == [1.0, 0.0]


def test_laplacian_identical_rows_exactly_one(rng):
    A = 1e6 * rng.normal(size=(30, 4)) + 1e4
    np.testing.assert_array_equal(np.diag(Laplacian(1e-3)(A, A.copy())), 1.0)


@pytest.mark.parametrize("scale", [1.0, 1e-160, 1e150, 1e306])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_against_equals_gram_bitwise(rng, scale, dtype):
    """``kernel.against(Y)(X)`` is ``kernel.gram(X, Y)`` to the last bit, also where the data need the
    power-of-two rescaling (the precomputed side then is not used) and for rows equal to rows of Y."""
    if dtype == torch.float32 and scale != 1.0:
        scale = {1e-160: 1e-20, 1e150: 1e18, 1e306: 1e37}[scale]
    Y = torch.tensor(scale * rng.normal(size=(60, 5)), dtype=dtype)
    X = torch.cat([Y[[4, 17]], torch.tensor(scale * rng.normal(size=(30, 5)), dtype=dtype)])
    for kernel in (RBF(scale), RBF(3 * scale), Laplacian(scale)):
        to_Y = kernel.against(Y)
        for block in (X, X[:7], X[7:]):
            assert torch.equal(to_Y(block), kernel.gram(block, Y))
        assert torch.equal(to_Y(X)[[0, 1], [4, 17]], torch.ones(2, dtype=dtype))


def test_centered_gram_prepares_the_training_side_once(rng, monkeypatch):
    """New points' kernel vectors reuse the training set's centered copy and norms across calls and blocks."""
    from kppca.kernels import CenteredGram
    from kppca.kernels import distances

    built = []
    original = distances.SquaredDistancesTo.__init__

    def counting(self, Y):
        built.append(Y.shape)
        original(self, Y)

    monkeypatch.setattr(distances.SquaredDistancesTo, "__init__", counting)
    X = torch.tensor(rng.normal(size=(80, 4)))
    G = CenteredGram(RBF(2.0), X, batch_size=16)
    basis = torch.eye(80, dtype=torch.float64)[:, :3]
    new = torch.tensor(rng.normal(size=(50, 4)))
    expected = G.centerer.transform(RBF(2.0).gram(new, X)) @ basis
    for _ in range(3):
        assert torch.equal(G.project(new, basis), expected)  # 4 blocks of 16 rows each time
    assert built == [(80, 4)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_data_whose_mean_overflows_give_the_kernel_not_nan(rng, dtype):
    """Rows near the dtype's largest value: the sum behind their mean overflows before any centered
    value does. Scaling data and width by one power of two leaves the RBF kernel bitwise unchanged."""
    exponent = math.frexp(torch.finfo(dtype).max)[1] - 6  # 300 rows of such values sum beyond the largest float
    X = torch.tensor(rng.uniform(0.5, 1.0, size=(300, 4)), dtype=dtype)
    big = X * 2.0**exponent
    assert torch.isinf(big.sum(0)).all()
    expected = RBF(0.5).gram(X, X)
    assert torch.equal(RBF(0.5 * 2.0**exponent).gram(big, big), expected)
    assert torch.equal(RBF(0.5 * 2.0**exponent).against(big[100:])(big[:100]), RBF(0.5).gram(X[:100], X[100:]))
    from kppca.kernels.gram import gram_matrix

    # The training Gram matrix of the big rows is formed blockwise by kernel.gram (the in-place fill's
    # mean overflows), the small rows' by the fill: both expand |x - y|^2 = |x|^2 + |y|^2 - 2 x.y on
    # centered rows, whose rounding is (D + 2) eps times the scaled squared norms (at most D / 2 = 2
    # here), so the exponents, and with exp' <= 1 the kernel values, agree to 6 * 2 * eps; 32 eps.
    K = gram_matrix(RBF(0.5 * 2.0**exponent), big, batch_size=64)
    assert torch.isfinite(K).all()
    assert float((K - gram_matrix(RBF(0.5), X, batch_size=64)).abs().max()) <= 32 * torch.finfo(dtype).eps
