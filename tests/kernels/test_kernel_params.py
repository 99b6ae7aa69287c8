"""Kernels and feature maps as scikit-learn estimators, and translation-stable distances."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _asserts import assert_within
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from kppca import DualPPCA, PrimalPPCA
from kppca.features import (
    FeatureMapKernel,
    Identity,
    Nystroem,
    PolynomialFeatures,
    RandomFourierFeatures,
)
from kppca.kernels import (
    RBF,
    CallableKernel,
    Laplacian,
    Linear,
    Polynomial,
    squared_distances,
)

EPS = np.finfo(np.float64).eps


def cubic(A, B):
    return (A @ B.T) ** 3


ESTIMATORS = {
    "linear": lambda: Linear(),
    "rbf": lambda: RBF(2.0),
    "laplacian": lambda: Laplacian(0.5),
    "polynomial": lambda: Polynomial(3, coef0=0.5),
    "callable": lambda: CallableKernel(cubic),
    "identity": lambda: Identity(),
    "rff": lambda: RandomFourierFeatures(1.5, n_features=20, random_state=0),
    "nystroem": lambda: Nystroem(RBF(0.7), n_landmarks=5, random_state=1),
    "nystroem-name": lambda: Nystroem("laplacian", n_landmarks=5),
    "poly-features": lambda: PolynomialFeatures(3, coef0=0.25),
}


# ----------------------------------------------------------------------------- get_params / set_params / clone


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_clone_reproduces_every_parameter(name):
    est = ESTIMATORS[name]()
    params = est.get_params(deep=False)
    twin = clone(est)
    assert type(twin) is type(est) and twin is not est
    for key, value in params.items():
        cloned = twin.get_params(deep=False)[key]
        if hasattr(value, "get_params"):  # nested estimators are cloned, not shared
            assert cloned is not value and repr(cloned) == repr(value), key
        else:  # scikit-learn's contract: __init__ stores the argument object itself
            assert cloned is value, key
    assert repr(twin) == repr(est)


def test_init_stores_arguments_unchanged():
    bw = np.float32(2.0)
    assert RBF(bw).bandwidth is bw
    assert Polynomial(np.int64(3), coef0=1).coef0 == 1 and isinstance(Polynomial(2, coef0=1).coef0, int)
    assert Nystroem("rbf").kernel == "rbf"
    assert CallableKernel(cubic).get_params() == {"fn": cubic}
    assert RBF(2.0).get_params() == {"bandwidth": 2.0}
    assert repr(RBF(2.0)) == "RBF(bandwidth=2.0)"
    assert repr(Nystroem(RBF(1.0), n_landmarks=3)) == (
        "Nystroem(kernel=RBF(bandwidth=1.0), landmark_selection='uniform', n_landmarks=3, random_state=None)"
    )


def test_set_params_changes_values(rng):
    X = rng.normal(size=(6, 2))
    kern = RBF(1.0).set_params(bandwidth=3.0)
    assert_within(kern(X), RBF(3.0)(X), 0)
    fmap = Nystroem(RBF(1.0), n_landmarks=4, random_state=0).set_params(kernel__bandwidth=2.0)
    assert fmap.kernel.bandwidth == 2.0
    fmap.fit(X)
    assert fmap.kernel_.bandwidth == 2.0


def test_nested_model_parameters():
    model = DualPPCA(kernel=RBF(2.0)).set_params(kernel__bandwidth=3.0)
    assert model.kernel.bandwidth == 3.0
    assert model.get_params()["kernel__bandwidth"] == 3.0
    primal = PrimalPPCA(feature_map=RandomFourierFeatures(n_features=30)).set_params(feature_map__bandwidth=0.4)
    assert primal.get_params()["feature_map__bandwidth"] == 0.4
    twin = clone(primal)
    assert twin.feature_map is not primal.feature_map and twin.feature_map.bandwidth == 0.4


def test_grid_search_over_kernel_bandwidth(rng):
    X = rng.normal(size=(60, 3))
    search = GridSearchCV(DualPPCA(2, kernel=RBF(1.0)), {"kernel__bandwidth": [0.3, 1.0, 3.0]}, cv=3).fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and len(set(np.round(scores, 12))) == 3  # the bandwidth really changed
    assert search.best_estimator_.kernel_.bandwidth == search.best_params_["kernel__bandwidth"]
    # the template estimator is never modified
    assert search.estimator.kernel.bandwidth == 1.0 and not hasattr(search.estimator, "sigma2_")


def test_grid_search_over_feature_map_parameter(rng):
    X = rng.normal(size=(60, 3))
    fmap = RandomFourierFeatures(n_features=40, random_state=0)
    search = GridSearchCV(PrimalPPCA(2, feature_map=fmap), {"feature_map__bandwidth": [0.5, 2.0]}, cv=3).fit(X)
    assert search.best_estimator_.feature_map_.bandwidth == search.best_params_["feature_map__bandwidth"]
    assert not hasattr(fmap, "omega_")  # the user's map is untouched


def test_feature_map_clone_is_unfitted_but_feature_map_kernel_clone_keeps_the_fit(rng):
    X, Y = rng.normal(size=(8, 2)), rng.normal(size=(3, 2))
    fmap = RandomFourierFeatures(n_features=10, random_state=0).fit(X)
    assert not hasattr(clone(fmap), "omega_")  # scikit-learn semantics for estimators
    kern = fmap.as_kernel()
    assert kern.get_params(deep=True)["feature_map__n_features"] == 10
    twin = clone(kern)
    assert twin.feature_map is not fmap
    np.testing.assert_array_equal(twin(X, Y), kern(X, Y))
    # a DualPPCA on the induced kernel survives clone (GridSearchCV clones it)
    model = clone(DualPPCA(2, kernel=kern)).fit(X)
    assert model.n_components_ == 2


def test_feature_map_kernel_with_unfitted_map_is_a_clear_error(rng):
    with pytest.raises(RuntimeError, match="is not fitted"):
        FeatureMapKernel(RandomFourierFeatures())(rng.normal(size=(3, 2)))
    with pytest.raises(TypeError, match="feature_map must be"):
        FeatureMapKernel("rff")(rng.normal(size=(3, 2)))


def test_fitted_polynomial_features_keep_their_fit_after_set_params(rng):
    X = rng.normal(size=(5, 2))
    fmap = PolynomialFeatures(2, coef0=1.0).fit(X)
    before = fmap.transform(X)
    fmap.set_params(coef0=4.0)  # parameters change, the fitted map does not until refit
    np.testing.assert_array_equal(fmap.transform(X), before)
    refit = fmap.fit(X).transform(X)
    # rounding of two ways to evaluate the same kernel: eps times the size of the largest term
    scale = np.outer(np.sum(X**2, 1) + 4.0, np.sum(X**2, 1) + 4.0)
    atol = 4 * (refit.shape[1] + 4) * np.finfo(np.float64).eps * scale
    assert_within(refit @ refit.T, Polynomial(2, 4.0)(X), atol)


# ----------------------------------------------------------------------------- translation-stable distances


def _dyadic(rng, shape):
    """Normal data on the grid 2^-30: adding offsets up to 1e4 (< 2^14) is exact in float64 (<= 47 bits).

    So X + o holds exactly the same differences as X and any change of the kernel is the
    algorithm's rounding. The grid must stay fine: with few significant bits (e.g. 2^-10)
    even the raw expansion |x|^2 + |y|^2 - 2 x.y is exact and the test could not fail.
    """
    return np.round(rng.normal(size=shape) * 2.0**30) / 2.0**30


def _rbf_translation_tolerance(X, Y, gamma):
    """Bound on |k(X + o, Y + o) - k(X, Y)| for exactly representable translations.

    After centering by the mean ``c`` of ``Y`` (exact up to a common shift of both sets,
    which leaves distances unchanged) the expansion ``|a|^2 + |b|^2 - 2 a.b`` has error
    ``<= (D + 2) eps (|a| + |b|)^2``; the kernel changes by at most ``gamma`` times that
    (``|d exp(-gamma t)| <= gamma |dt|``), in each of the two computations, plus the
    rounding of ``exp`` itself.
    """
    c = Y.mean(0)
    a = np.linalg.norm(X - c, axis=1).max()
    b = np.linalg.norm(Y - c, axis=1).max()
    return 2 * gamma * (X.shape[1] + 2) * EPS * (a + b) ** 2 + 2 * EPS


@pytest.mark.parametrize("offset", [1.0, -100.0, 1e3, 1e4])
def test_rbf_is_translation_invariant(rng, offset):
    X, Y = _dyadic(rng, (40, 3)), _dyadic(rng, (25, 3))
    kern = RBF(1.0)
    tol = _rbf_translation_tolerance(X, Y, kern.gamma)
    assert tol < 1e-12  # the derived bound is what the issue asks for
    assert_within(kern(X + offset, Y + offset), kern(X, Y), tol)
    tol_self = _rbf_translation_tolerance(X, X, kern.gamma)
    assert_within(kern(X + offset), kern(X), tol_self)


@pytest.mark.parametrize("offset", [1.0, -100.0, 1e3, 1e4])
def test_laplacian_is_translation_invariant(rng, offset):
    X, Y = _dyadic(rng, (40, 3)), _dyadic(rng, (25, 3))
    # cdist(p=1) subtracts coordinates directly, and (x + o) - (y + o) = x - y exactly on
    # this grid (Sterbenz): the values are bitwise identical (no expansion, no cancellation).
    np.testing.assert_array_equal(Laplacian(0.8)(X + offset, Y + offset), Laplacian(0.8)(X, Y))


def test_rbf_far_scale_diagonal_is_exactly_one(rng):
    X = 1e6 * rng.normal(size=(50, 3))
    K = RBF(1e-3)(X)
    np.testing.assert_array_equal(np.diag(K), 1.0)
    T = torch.tensor(X)
    D = squared_distances(T, T)  # the same object: a self-distance matrix
    assert torch.equal(D.diagonal(), torch.zeros(50, dtype=torch.float64))
    assert float(D.min()) >= 0.0


def test_dual_fit_far_from_origin_matches_fit_at_origin(rng):
    N = 200
    Y = _dyadic(rng, (N, 2))
    near = DualPPCA(2, kernel=RBF(1.0)).fit(Y)
    far = DualPPCA(2, kernel=RBF(1.0)).fit(Y + 1000.0)  # raised "not PSD" with the raw expansion
    # entries of K differ by at most tol; eigenvalues by at most ||dK||_2 <= N tol, plus eigh's
    # backward error ~ N eps lam_1 in each fit
    tol = N * _rbf_translation_tolerance(Y, Y, 0.5) + 2 * N * EPS * float(near.eigenvalues_[0])
    assert_within(far.eigenvalues_.numpy(), near.eigenvalues_.numpy(), tol)
    assert far.rank_ == near.rank_


def test_far_apart_points_give_the_identity_kernel_and_full_rank(rng):
    N = 1200
    X = 1e6 * rng.normal(size=(N, 2))
    model = DualPPCA(2, kernel=RBF(1.0), eigen_solver="dense").fit(X)
    # the exact kernel is I (all distances ~1e6 >> bandwidth): K_c = I - 11^T/N has rank N - 1
    assert model.rank_ == N - 1
    np.testing.assert_array_equal(RBF(1.0)(X[:50]), np.eye(50))


def test_squared_distances_against_direct_differences(rng):
    X, Y = rng.normal(size=(7, 4)) + 50.0, rng.normal(size=(5, 4)) + 50.0
    direct = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    out = squared_distances(torch.tensor(X), torch.tensor(Y)).numpy()
    c = Y.mean(0)
    spread = (np.linalg.norm(X - c, axis=1).max() + np.linalg.norm(Y - c, axis=1).max()) ** 2
    assert_within(out, direct, 8 * EPS * spread + 4 * EPS * 50.0 * spread**0.5)
    # empty inputs keep their shapes
    assert squared_distances(torch.zeros(0, 4, dtype=torch.float64), torch.tensor(Y)).shape == (0, 5)
