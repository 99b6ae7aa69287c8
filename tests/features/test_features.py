"""Explicit feature maps: exactness / approximation of the kernels they stand for."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _asserts import assert_within
from sklearn.metrics import pairwise

from kppca.features import Identity, Nystroem, PolynomialFeatures, RandomFourierFeatures
from kppca.kernels import RBF, Linear, Polynomial


def polynomial_rounding(X, Y, degree, coef0, n_features):
    """Entrywise rounding bound for polynomial-kernel values computed two ways.

    Both ``phi(x).phi(y)`` (``n_features`` products) and ``(x.y + c)^degree`` err by a few
    eps relative to ``((|x|^2 + c)(|y|^2 + c))^(degree / 2)``, the size of the largest
    term, not relative to the value (which can be near zero).
    """
    eps = np.finfo(np.float64).eps
    scale = np.outer(np.sum(X**2, 1) + coef0, np.sum(Y**2, 1) + coef0) ** (degree / 2)
    return 4 * (n_features + X.shape[1] + degree) * eps * scale


@pytest.mark.parametrize("degree, coef0", [(1, 1.0), (2, 1.0), (3, 0.5), (2, 0.0), (4, 2.0)])
def test_polynomial_features_reproduce_polynomial_kernel(rng, degree, coef0):
    X, Y = rng.normal(size=(7, 3)), rng.normal(size=(5, 3))
    fmap = PolynomialFeatures(degree, coef0).fit(X)
    FX, FY = fmap.transform(X), fmap.transform(Y)
    assert FX.shape == (7, math.comb(3 + degree, degree))
    ref = pairwise.polynomial_kernel(X, Y, degree=degree, gamma=1.0, coef0=coef0)
    atol = polynomial_rounding(X, Y, degree, coef0, FX.shape[1])
    assert_within(FX @ FY.T, ref, atol)
    assert_within(FX @ FY.T, Polynomial(degree, coef0)(X, Y), atol)


def test_polynomial_features_too_large():
    with pytest.raises(ValueError, match="exact polynomial map would have"):
        PolynomialFeatures(degree=6).fit(np.zeros((2, 40)))


def _rff_error(X, n_features, seed):
    fmap = RandomFourierFeatures(bandwidth=1.3, n_features=n_features, random_state=seed).fit(X)
    F = fmap.transform(X)
    return np.abs(F @ F.T - pairwise.rbf_kernel(X, gamma=1.0 / (2 * 1.3**2))).mean()


def test_rff_approximates_rbf_and_error_shrinks(rng):
    X = rng.normal(size=(15, 3))
    small = np.mean([_rff_error(X, 30, s) for s in range(4)])
    large = np.mean([_rff_error(X, 3000, s) for s in range(4)])
    # Monte-Carlo error ~ 1/sqrt(d): a factor 100 in d gives ~10x smaller error; ask for 4x.
    assert large < small / 4
    assert large < 0.05


def test_rff_deterministic_with_random_state(rng):
    X = rng.normal(size=(6, 2))
    a = RandomFourierFeatures(n_features=20, random_state=3).fit(X).transform(X)
    b = RandomFourierFeatures(n_features=20, random_state=3).fit(X).transform(X)
    c = RandomFourierFeatures(n_features=20, random_state=4).fit(X).transform(X)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    # the draw does not depend on the training data, only on the input dimension and the seed
    d = RandomFourierFeatures(n_features=20, random_state=3).fit(X[:2] + 5.0).transform(X)
    np.testing.assert_array_equal(a, d)


def test_rff_formula(rng):
    X = rng.normal(size=(4, 2))
    fmap = RandomFourierFeatures(bandwidth=0.7, n_features=11, random_state=0).fit(X)
    omega, b = fmap.omega_.numpy(), fmap.offset_.numpy()
    # the argument x.omega + b is rounded by <= D eps |x||omega_j| + eps |b| on each side (other
    # summation order) and cos is 1-Lipschitz; cos itself adds ~eps. Absolute: cos can be ~0.
    eps = np.finfo(np.float64).eps
    arg_error = 2 * (X.shape[1] * eps * np.linalg.norm(X, axis=1)[:, None] * np.linalg.norm(omega, axis=0) + eps * np.abs(b))
    expected = np.sqrt(2 / 11) * np.cos(X @ omega + b)
    assert_within(fmap.transform(X), expected, np.sqrt(2 / 11) * (arg_error + 2 * eps))


def test_nystroem_exact_on_landmarks(rng):
    X = rng.normal(size=(20, 3))
    kern = RBF(1.0)
    fmap = Nystroem(kern, n_landmarks=8, random_state=0).fit(X)
    L = fmap.landmarks_.numpy()
    # landmarks are training rows
    assert all(np.any(np.all(np.isclose(X, row), axis=1)) for row in L)
    FL, FX = fmap.transform(L), fmap.transform(X)
    np.testing.assert_allclose(FL @ FL.T, pairwise.rbf_kernel(L, gamma=0.5), atol=1e-10)
    # k(x, landmark) is reproduced exactly for any x (the Nystroem projection is exact there)
    np.testing.assert_allclose(FX @ FL.T, pairwise.rbf_kernel(X, L, gamma=0.5), atol=1e-10)


def test_nystroem_drops_null_directions_of_low_rank_kernel(rng):
    X = rng.normal(size=(12, 3))
    fmap = Nystroem(Linear(), n_landmarks=8, random_state=1).fit(X)
    assert fmap.normalization_.shape == (8, 3)
    F = fmap.transform(X)
    # 8 landmarks span R^3, so the linear kernel is reproduced for every point
    np.testing.assert_allclose(F @ F.T, X @ X.T, atol=1e-10)


def test_nystroem_too_many_landmarks(rng):
    with pytest.raises(ValueError, match="n_landmarks=30 exceeds the 10 training points"):
        Nystroem("rbf", n_landmarks=30).fit(rng.normal(size=(10, 2)))


@pytest.mark.parametrize(
    "fmap",
    [
        Identity(),
        PolynomialFeatures(2, 0.5),
        RandomFourierFeatures(0.9, n_features=40, random_state=0),
        Nystroem("rbf", n_landmarks=6, random_state=0),
    ],
    ids=["identity", "poly", "rff", "nystroem"],
)
def test_as_kernel_is_inner_product_of_features(rng, fmap):
    X, Y = rng.normal(size=(10, 3)), rng.normal(size=(4, 3))
    fmap.fit(X)
    kern = fmap.as_kernel()
    FX, FY = fmap.transform(X), fmap.transform(Y)
    # the same features, multiplied in two summation orders: <= d eps |phi(x)||phi(y)| each
    eps, d = np.finfo(np.float64).eps, FX.shape[1]
    nx, ny = np.linalg.norm(FX, axis=1), np.linalg.norm(FY, axis=1)
    assert_within(kern(X, Y), FX @ FY.T, 2 * d * eps * np.outer(nx, ny))
    assert_within(kern(X), FX @ FX.T, 2 * d * eps * np.outer(nx, nx))
    out = kern(torch.tensor(X, dtype=torch.float32), torch.tensor(Y, dtype=torch.float32))
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), FX @ FY.T, rtol=1e-4, atol=1e-4)


def test_identity_and_io_types(rng):
    X = rng.normal(size=(5, 3))
    fmap = Identity().fit(X)
    out = fmap.transform(X)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, X)
    T = torch.tensor(X)
    outT = fmap.transform(T)
    assert isinstance(outT, torch.Tensor)
    outT += 1.0
    np.testing.assert_array_equal(T.numpy(), X)  # the map returns a copy


def test_feature_map_errors(rng):
    with pytest.raises(RuntimeError, match="not fitted"):
        RandomFourierFeatures().transform(rng.normal(size=(3, 2)))
    fmap = PolynomialFeatures(2).fit(rng.normal(size=(3, 2)))
    with pytest.raises(ValueError, match="X has 3 features, but PolynomialFeatures was fitted with 2"):
        fmap.transform(rng.normal(size=(3, 3)))
    # hyper-parameters are stored as given (scikit-learn rule) and checked by fit
    X = rng.normal(size=(3, 2))
    with pytest.raises(ValueError, match="n_features"):
        RandomFourierFeatures(n_features=0).fit(X)
    with pytest.raises(ValueError, match="bandwidth"):
        RandomFourierFeatures(bandwidth=-1.0).fit(X)
    with pytest.raises(ValueError, match="coef0"):
        PolynomialFeatures(2, coef0=-0.1).fit(X)
    with pytest.raises(TypeError, match="degree"):
        PolynomialFeatures(2.5).fit(X)
    with pytest.raises(ValueError, match="n_landmarks"):
        Nystroem(n_landmarks=0).fit(X)
    with pytest.raises(ValueError, match="bandwidth"):
        Nystroem(RBF(-2.0), n_landmarks=2).fit(X)


def test_random_fourier_features_resolve_a_width_rule(rng):
    X = 40.0 * rng.normal(size=(30, 3))
    fmap = RandomFourierFeatures("scale", n_features=20, random_state=0).fit(X)
    assert fmap.bandwidth == "scale" and fmap.bandwidth_ == RBF("scale").resolve(X).bandwidth
    twin = RandomFourierFeatures(fmap.bandwidth_, n_features=20, random_state=0).fit(X)
    np.testing.assert_array_equal(fmap.transform(X), twin.transform(X))
    with pytest.raises(ValueError, match="bandwidth='mean' is not a rule"):
        RandomFourierFeatures("mean").fit(X)


def test_feature_map_kernel_against_maps_the_fixed_side_once(rng):
    # against(Y) is gram(X, Y) bit for bit, with phi(Y) mapped once for all row blocks of X; a training
    # context reading its Gram rows in blocks (the default pre-image's hub scores) maps X once, not per block.
    from kppca._linalg import rounding_tolerance
    from kppca.preimage import TrainingContext

    X = torch.as_tensor(rng.normal(size=(50, 3)))
    fmap = RandomFourierFeatures(1.5, n_features=40, random_state=0).fit(X)
    kernel = fmap.as_kernel()
    calls, inner = [], fmap.map
    fmap.map = lambda Z: calls.append(len(Z)) or inner(Z)
    rows_of = kernel.against(X)
    assert calls == [50]
    for start in range(0, 50, 20):
        assert torch.equal(rows_of(X[start:start + 20]), kernel.gram(X[start:start + 20], X))
    context = TrainingContext.from_inputs(X, kernel)
    calls.clear()
    blocks = [context.gram_rows(start, start + 10) for start in range(0, 50, 10)]
    assert calls == [50] + [10] * 5  # X once, then each block
    # X[:] is not X: the unsymmetrised product. Blocks of 10 rows may take other BLAS kernels than all 50 (on
    # some CPUs): each entry sums 40 products |phi_k(x) phi_k(y)| <= 2 / 40, each side within 40 eps of their sum, 2.
    both = 2 * rounding_tolerance(torch.float64, 40, 2.0)
    np.testing.assert_allclose(torch.cat(blocks), kernel.gram(X, X[:]), rtol=0, atol=both)
