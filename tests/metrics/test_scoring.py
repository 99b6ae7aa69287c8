"""Held-out input-space reconstruction error as a criterion across kernels and bandwidths."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from scipy.spatial.distance import pdist
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from kppca import DualPPCA, PrimalPPCA
from kppca.datasets import load_digits, make_moons
from kppca.features import RandomFourierFeatures
from kppca.kernels import RBF
from kppca.metrics import (
    SCORING_PREIMAGE,
    make_reconstruction_scorer,
    reconstruction_error,
    reconstruction_samples,
    reconstruction_scorer,
)


def _bandwidth_search(X: np.ndarray, q: int, grid: list[float], scoring=None) -> GridSearchCV:
    cv = KFold(3, shuffle=True, random_state=0)
    params = {"kernel": [RBF(b) for b in grid]}
    return GridSearchCV(DualPPCA(q), params, scoring=scoring, cv=cv).fit(X)


def _check_sensible(search: GridSearchCV, X: np.ndarray, grid: list[float]) -> float:
    best = search.best_params_["kernel"].bandwidth
    median = float(np.median(pdist(X)))
    assert grid[0] < best < grid[-1], f"picked an end of the grid: {best}"
    # The usual RBF scale: a fraction of the median pairwise distance (0.43 and 0.33 measured here).
    assert 0.2 * median <= best <= median, (best, median)
    return best


def test_picks_a_sensible_bandwidth_on_two_moons():
    X, _ = make_moons(200, noise=0.1, random_state=0)
    grid = [0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10]
    search = _bandwidth_search(X, 2, grid, scoring=reconstruction_scorer)
    _check_sensible(search, X, grid)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(scores < 0)  # negated errors: greater is better


def test_picks_a_sensible_bandwidth_on_digits_where_score_picks_the_widest():
    X, _ = load_digits(n_samples=300, random_state=0)
    grid = [0.3, 0.5, 1, 1.5, 2, 3, 5, 10, 30]
    _check_sensible(_bandwidth_search(X, 5, grid, scoring=reconstruction_scorer), X, grid)
    # The symptom this criterion replaces: the log-likelihood on H_E keeps rising with the bandwidth.
    by_likelihood = _bandwidth_search(X, 5, grid)
    assert by_likelihood.best_params_["kernel"].bandwidth == grid[-1]


def test_cross_val_score_equals_the_error_on_each_fold():
    X, _ = make_moons(60, noise=0.1, random_state=1)
    cv = KFold(2, shuffle=True, random_state=0)
    model = DualPPCA(2, kernel=RBF(0.5))
    scores = cross_val_score(model, X, scoring=reconstruction_scorer, cv=cv)
    expected = [-reconstruction_error(DualPPCA(2, kernel=RBF(0.5)).fit(X[tr]), X[te]) for tr, te in cv.split(X)]
    np.testing.assert_allclose(scores, expected, rtol=0, atol=0)


def test_default_preimage_is_the_smoother_on_all_weights(rng):
    X, Y = rng.normal(size=(40, 3)), rng.normal(size=(10, 3))
    model = DualPPCA(2, kernel=RBF(1.0)).fit(X)
    X_hat = model.reconstruct(Y, preimage="smoother", n_neighbors=None)
    expected = ((Y - X_hat) ** 2).sum(1)
    # reconstruct and inverse_transform(transform) are algebraically equal routes: they differ by
    # a few eps in the shrinkage factors, amplified by the smoother's normalisation (well-conditioned here).
    np.testing.assert_allclose(reconstruction_samples(model, Y), expected, rtol=1e-12)
    assert reconstruction_error(model, Y) == pytest.approx(expected.mean(), rel=1e-12)
    assert SCORING_PREIMAGE == {"preimage": "smoother", "n_neighbors": None}
    # Options given without a method override the default's; another method is another number.
    np.testing.assert_allclose(
        reconstruction_samples(model, Y, n_neighbors=5),
        ((Y - model.reconstruct(Y, preimage="smoother", n_neighbors=5)) ** 2).sum(1),
        rtol=1e-12,
    )
    assert reconstruction_error(model, Y, "knn") != reconstruction_error(model, Y)


def test_primal_identity_map_needs_no_preimage(structured_data):
    X, Y = structured_data[:30], structured_data[30:]
    model = PrimalPPCA(3).fit(X)
    h = model.transform(Y)
    X_hat = h @ model.W_.numpy().T + model.mean_.numpy()
    expected = ((Y - X_hat) ** 2).sum(1).mean()
    # W h + m directly: the only rounding is that of the products (relative eps * D terms).
    assert reconstruction_error(model, Y) == pytest.approx(expected, rel=1e-12)
    assert reconstruction_error(model, Y, "knn") == reconstruction_error(model, Y)


def test_primal_with_random_features_goes_through_the_preimage(rng):
    X, Y = rng.normal(size=(40, 2)), rng.normal(size=(8, 2))
    fmap = RandomFourierFeatures(1.0, n_features=50, random_state=0).fit(X)
    model = PrimalPPCA(2, feature_map=fmap).fit(X)
    err = reconstruction_error(model, Y)
    assert np.isfinite(err) and err > 0
    assert reconstruction_error(model, Y, "knn", n_neighbors=1) != err


def test_types_and_inputs_untouched(rng):
    X, Y = rng.normal(size=(30, 2)), rng.normal(size=(6, 2))
    model = DualPPCA(2, kernel=RBF(1.0)).fit(X)
    before = Y.copy()
    s = reconstruction_samples(model, Y)
    assert isinstance(s, np.ndarray) and s.shape == (6,) and np.all(s >= 0)
    np.testing.assert_array_equal(Y, before)
    t = reconstruction_samples(model, torch.as_tensor(Y))
    assert isinstance(t, torch.Tensor)
    np.testing.assert_array_equal(t.numpy(), s)
    assert isinstance(reconstruction_scorer(model, Y), float)


def test_scorer_is_picklable_and_validates_early():
    scorer = make_reconstruction_scorer("knn", n_neighbors=3)
    clone = pickle.loads(pickle.dumps(scorer))
    assert repr(clone) == "make_reconstruction_scorer(preimage='knn', n_neighbors=3)"
    with pytest.raises(ValueError, match="unknown"):
        make_reconstruction_scorer("nearest")
    with pytest.raises(ValueError, match="n_neighbours"):
        make_reconstruction_scorer(n_neighbours=3)


def test_errors(rng):
    X = rng.normal(size=(10, 2))
    with pytest.raises(NotFittedError, match="fit"):
        reconstruction_error(DualPPCA(2), X)
    with pytest.raises(TypeError, match="PrimalPPCA or kppca.DualPPCA"):
        reconstruction_error(object(), X)
    model = DualPPCA(1).fit(X)
    with pytest.raises(ValueError, match="features"):
        reconstruction_error(model, np.zeros((2, 3)))
