"""Subset ensemble with a ridge combiner (deep-RKM paper §6.2.3)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import Ridge
from sklearn.utils.estimator_checks import parametrize_with_checks

from kppca._linalg.threads import compute_threads
from kppca.kernels import RBF
from kppca.rkm import DeepLSSVMClassifier, LSSVMClassifier, SubsetEnsembleClassifier
from kppca.rkm import ensemble
from kppca.rkm.ensemble import stratified_subsets


def _digits(n=400, seed=0):
    X, y = load_digits(return_X_y=True)
    idx = np.random.default_rng(seed).permutation(len(y))[:n]
    return X[idx] / 16.0, y[idx]


@parametrize_with_checks([
    SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=20, random_state=0),
    SubsetEnsembleClassifier(subset_size=30, noise=0.1, clip=None, random_state=0),
    SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=20, validation_fraction=None, random_state=0),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_subsets_are_disjoint_cover_and_stratified():
    codes = np.repeat(np.arange(10), 40)
    subsets = stratified_subsets(codes, 50, np.random.default_rng(0))
    assert len(subsets) == 8
    allidx = np.concatenate(subsets)
    np.testing.assert_array_equal(np.sort(allidx), np.arange(400))
    for s in subsets:
        np.testing.assert_array_equal(np.bincount(codes[s], minlength=10), 5)  # the paper's 5 per class


def test_subsets_proportional_for_imbalanced_classes():
    codes = np.concatenate([np.zeros(300, int), np.ones(100, int)])
    for s in stratified_subsets(codes, 40, np.random.default_rng(1)):
        assert abs(np.bincount(codes[s])[1] - 10) <= 1  # 1/4 of 40


def test_combiner_is_the_ridge_solution_on_the_holdout():
    X, y = _digits(300)
    model = SubsetEnsembleClassifier(LSSVMClassifier(RBF(2.0)), subset_size=50, ridge=0.3,
                                     random_state=0).fit(X, y)
    hold = model.holdout_indices_
    assert len(model.estimators_) == len(model.subsets_) == (300 - len(hold)) // 50
    # the submodels never saw the held-out points: subsets index the training part only
    assert len(np.intersect1d(hold, np.setdiff1d(np.arange(300), hold))) == 0
    # independent features: tanh of each submodel's one-vs-all correlations on the hold-out
    Z = np.concatenate([np.tanh(e.decision_function(X[hold])) for e in model.estimators_], axis=1)
    T = np.where(y[hold][:, None] == model.classes_[None, :], 1.0, -1.0)
    ref = Ridge(alpha=0.3, fit_intercept=True, solver="cholesky").fit(Z, T)
    # both solve the same SPD system; its condition (features are tanh values, ridge 0.3) ~ 1e6 at most
    np.testing.assert_allclose(model.coef_.numpy(), ref.coef_.T, atol=1e-8)
    np.testing.assert_allclose(model.intercept_.numpy(), ref.intercept_, atol=1e-8)
    np.testing.assert_allclose(model.decision_function(X[:20]), ref.predict(
        np.concatenate([np.tanh(e.decision_function(X[:20])) for e in model.estimators_], axis=1)), atol=1e-8)


def test_noisy_copies_are_clipped_and_input_unchanged():
    X, y = _digits(200)
    X0 = X.copy()
    model = SubsetEnsembleClassifier(LSSVMClassifier(RBF(2.0)), subset_size=40, noise=0.5,
                                     random_state=0).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    n_train = 200 - len(model.holdout_indices_)
    assert max(int(s.max()) for s in model.subsets_) >= n_train  # noisy copies are used
    assert len(model.estimators_) == 2 * n_train // 40
    fitted = np.concatenate([e.X_fit_.numpy() for e in model.estimators_])
    assert fitted.min() >= 0.0 and fitted.max() <= 1.0
    # noise made values off the 1/16 grid of the digits
    assert np.mean(np.abs(fitted * 16 - np.round(fitted * 16)) > 1e-9) > 0.2


def test_parallel_equals_sequential_and_beats_chance():
    X, y = _digits(400)
    kw = dict(subset_size=50, random_state=3)
    est = DeepLSSVMClassifier(RBF(2.0), ridge=1e-2, random_state=0)
    seq = SubsetEnsembleClassifier(est, **kw).fit(X[:300], y[:300])
    par = SubsetEnsembleClassifier(est, n_jobs=2, **kw).fit(X[:300], y[:300])
    # Worker processes run their BLAS with other thread counts, so sums are rounded in another
    # order. Each member solves level-1 systems M + ridge I of order n = 50 with the fused
    # M = K / eta + H2 H2^T / eta2 (RBF entries <= 1, unit columns in H2): condition number at most
    # (n / eta + 1 / eta2 + ridge) / ridge, and a backward-stable solve is accurate to n eps times
    # that; the level-wise passes chain 2 n_passes + 1 such solves.
    n, ridge, eta, eta2 = kw["subset_size"], est.ridge, est.eta, est.eta_levels[0]
    condition = (n / eta + 1 / eta2 + ridge) / ridge
    seq_values, par_values = seq.decision_function(X[300:]), par.decision_function(X[300:])
    tol = (2 * est.n_passes + 1) * n * np.finfo(float).eps * condition * np.abs(seq_values).max()
    np.testing.assert_allclose(par_values, seq_values, rtol=0, atol=tol)
    assert seq.score(X[300:], y[300:]) > 0.8


def test_single_class_subset_and_bad_estimator():
    X = np.random.default_rng(0).normal(size=(44, 2))
    y = np.r_[np.zeros(40), np.ones(4)]
    with pytest.raises(ValueError, match="single class"):
        SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=2, random_state=0).fit(X, y)
    with pytest.raises(TypeError, match="decision_function"):
        SubsetEnsembleClassifier(object()).fit(X, y)


def _assert_same_fit(a, b, X):
    """Every submodel and the combiner bitwise equal: each submodel's seed is drawn before any fit."""
    assert len(a.estimators_) == len(b.estimators_)
    for ea, eb in zip(a.estimators_, b.estimators_):
        np.testing.assert_array_equal(ea.decision_function(X), eb.decision_function(X))
    np.testing.assert_array_equal(a.coef_.numpy(), b.coef_.numpy())  # from the same features, bitwise
    np.testing.assert_array_equal(a.intercept_.numpy(), b.intercept_.numpy())


def test_parallel_processes_fit_the_serial_ensemble():
    X, y = _digits(300)
    make = lambda jobs: SubsetEnsembleClassifier(DeepLSSVMClassifier(RBF(2.0), n_components=(1, 1)),  # noqa: E731
                                                 subset_size=40, noise=0.2, n_jobs=jobs, random_state=3)
    # Each worker process fits on one thread; the serial fit does too, since on some CPUs the BLAS rounds by its
    # thread count (an idle AVX-512 machine gave the serial fit two threads and submodels 1e-14 apart).
    with compute_threads(1):
        serial = make(None).fit(X, y)
    parallel = make(2).fit(X, y)
    _assert_same_fit(serial, parallel, X[:50])
    # evaluated by chunks of submodels in two processes: the same features, outputs summed in another order
    coef = serial.coef_.numpy()
    np.testing.assert_allclose(parallel.decision_function(X), serial.set_params(n_jobs=None).decision_function(X),
                               rtol=0, atol=coef.shape[0] * np.finfo(float).eps * np.abs(coef).sum(0).max())


def test_dask_client_fits_the_serial_ensemble():
    distributed = pytest.importorskip("distributed")
    from kppca._dask import dask_client as _dask_client

    X, y = _digits(200)
    make = lambda: SubsetEnsembleClassifier(LSSVMClassifier(RBF(2.0)), subset_size=40, random_state=1)  # noqa: E731
    serial = make().fit(X, y)
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        assert _dask_client() is client  # the dask backend is the one taken
        on_dask = make().fit(X, y)
    assert _dask_client() is None
    _assert_same_fit(serial, on_dask, X[:50])


def test_evaluation_is_batched_and_batching_changes_nothing(monkeypatch):
    X, y = _digits(300)
    model = SubsetEnsembleClassifier(LSSVMClassifier(RBF(2.0)), subset_size=50, batch_size=1000,
                                     random_state=0).fit(X, y)
    whole = model.decision_function(X)
    rows = []
    original = ensemble._features
    monkeypatch.setattr(ensemble, "_features", lambda est, classes, Xb: rows.append(len(Xb)) or original(est, classes, Xb))
    model.set_params(batch_size=7)
    batched = model.decision_function(X)
    assert rows == [7] * (300 // 7) + [300 % 7]  # never more than batch_size rows of features at once
    # per row the same features; the combiner's dot products of length q may be summed in another order:
    # |error| <= q eps sum_i |z_i c_i| <= q eps max_j sum_i |c_ij| (|tanh| <= 1)
    coef = model.coef_.numpy()
    np.testing.assert_allclose(batched, whole, rtol=0, atol=coef.shape[0] * np.finfo(float).eps * np.abs(coef).sum(0).max())
