"""LS-SVM in RKM form: dual == primal == KKT solve, stationarity, closed-form LOO, classification."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca.features import RandomFourierFeatures
from kppca.kernels import RBF
from kppca.rkm import (
    LSSVMClassifier,
    LSSVMRegressor,
    solve_lssvm_dual,
    solve_lssvm_primal,
)

EPS = np.finfo(np.float64).eps


def _data(N=60, D=3, p=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    Y = np.column_stack([np.sin(X[:, 0]) + 0.1 * rng.normal(size=N) for _ in range(p)]) + np.arange(p)
    return X, Y


def _kkt(K, Y, lam, eta):
    N = K.shape[0]
    M = np.zeros((N + 1, N + 1))
    M[:N, :N] = K / eta + lam * np.eye(N)
    M[:N, N] = M[N, :N] = 1.0
    sol = np.linalg.solve(M, np.vstack([Y, np.zeros((1, Y.shape[1]))]))
    return sol[:N], sol[N], M


def _tol(M):
    # Backward-stable solves: relative error ~ N eps cond(M).
    return 50 * M.shape[0] * EPS * np.linalg.cond(M)


def test_dual_matches_kkt_solve_and_stationarity():
    X, Y = _data()
    lam, eta = 0.3, 2.0
    K = RBF(1.5)(X)
    H_ref, b_ref, M = _kkt(K, Y, lam, eta)
    sol = solve_lssvm_dual(torch.tensor(K), torch.tensor(Y), lam, eta)
    H, b = sol.coef.numpy(), sol.intercept.numpy()
    tol = _tol(M)
    assert np.abs(H - H_ref).max() <= tol * np.abs(H_ref).max()
    assert np.abs(b - b_ref).max() <= tol * np.abs(b_ref).max()
    # Stationarity of J: y_i - W^T phi_i - b = lambda h_i (W eliminated) and sum_i h_i = 0.
    resid = Y - K @ H / eta - b - lam * H
    assert np.abs(resid).max() < 1e-8 * np.abs(Y).max()
    assert np.abs(H.sum(0)).max() < 1e-8 * np.abs(H).sum()


def test_dual_equals_primal_on_explicit_features():
    X, Y = _data(N=80)
    fm = RandomFourierFeatures(bandwidth=1.2, n_features=30, random_state=0)
    common = {"feature_map": fm, "ridge": 0.05, "eta": 1.5}
    d = LSSVMRegressor(solver="dual", **common).fit(X, Y)
    p = LSSVMRegressor(solver="primal", **common).fit(X, Y)
    Xt = np.random.default_rng(1).normal(size=(20, 3))
    assert np.abs(d.predict(Xt) - p.predict(Xt)).max() < 1e-9
    assert np.abs(d.intercept_.numpy() - p.intercept_.numpy()).max() < 1e-9
    # W = Phi^T H / eta links the two representations.
    Phi = d.feature_map_.map(torch.tensor(X))
    assert torch.allclose(Phi.T @ d.hidden_features_ / 1.5, p.coef_, atol=1e-9)
    assert torch.allclose(d.loo_residuals_, p.loo_residuals_, atol=1e-9)
    # Primal stationarity: (Phi^T Phi + lambda eta I) W + Phi^T 1 b^T = Phi^T Y.
    Wn, bn, Pn = p.coef_.numpy(), p.intercept_.numpy(), Phi.numpy()
    r = (Pn.T @ Pn + 0.05 * 1.5 * np.eye(30)) @ Wn + np.outer(Pn.sum(0), bn) - Pn.T @ Y
    assert np.abs(r).max() < 1e-8 * np.abs(Pn.T @ Y).max()


def test_primal_solver_matches_functional_form_for_linear_kernel():
    X, Y = _data(N=40)
    m = LSSVMRegressor(kernel="linear", solver="primal", ridge=0.2).fit(X, Y)
    sol = solve_lssvm_primal(torch.tensor(X), torch.tensor(Y), 0.2, 1.0)
    assert torch.allclose(m.coef_, sol.coef)
    d = LSSVMRegressor(kernel="linear", solver="dual", ridge=0.2).fit(X, Y)
    assert np.abs(d.predict(X) - m.predict(X)).max() < 1e-9


@pytest.mark.parametrize("solver", ["dual", "primal"])
def test_loo_residuals_equal_brute_force(solver):
    X, Y = _data(N=25)
    kw = {"kernel": "linear"} if solver == "primal" else {"kernel": RBF(1.0)}
    m = LSSVMRegressor(solver=solver, ridge=0.1, **kw).fit(X, Y)
    brute = np.empty_like(Y)
    for i in range(len(X)):
        keep = np.arange(len(X)) != i
        mi = LSSVMRegressor(solver=solver, ridge=0.1, **kw).fit(X[keep], Y[keep])
        brute[i] = Y[i] - mi.predict(X[i : i + 1])[0]
    assert np.abs(m.loo_residuals_.numpy() - brute).max() < 1e-8 * np.abs(brute).max()


def test_single_output_shape_and_numpy_out():
    X, Y = _data(p=1)
    m = LSSVMRegressor(ridge=0.01).fit(X, Y[:, 0])
    out = m.predict(X[:5])
    assert isinstance(out, np.ndarray) and out.shape == (5,)
    assert m.score(X, Y[:, 0]) > 0.8
    t = m.predict(torch.tensor(X[:5]))
    assert isinstance(t, torch.Tensor)


def test_primal_without_features_is_refused():
    X, Y = _data()
    with pytest.raises(ValueError, match="feature_map"):
        LSSVMRegressor(kernel="rbf", solver="primal").fit(X, Y)


@pytest.mark.parametrize("multi_class", ["ova", "code"])
def test_classifier_multiclass(multi_class):
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    clf = LSSVMClassifier(RBF(1.0), ridge=0.1, multi_class=multi_class).fit(X, y)
    assert clf.score(X, y) > 0.9
    n_out = 3 if multi_class == "ova" else 2
    assert clf.codebook_.shape == (3, n_out)
    P = clf.predict_proba(X)
    assert P.shape == (150, 3) and np.allclose(P.sum(1), 1.0)
    assert (clf.classes_[P.argmax(1)] == clf.predict(X)).mean() > 0.9


def test_classifier_binary_decision_sign():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-2, 1, (30, 2)), rng.normal(2, 1, (30, 2))])
    y = np.array(["a"] * 30 + ["b"] * 30)
    clf = LSSVMClassifier(kernel="linear").fit(X, y)
    s = clf.decision_function(X)
    assert s.shape == (60,)
    assert np.array_equal(clf.predict(X), np.where(s > 0, "b", "a"))
    assert clf.score(X, y) > 0.95


def test_single_class_is_refused():
    with pytest.raises(ValueError, match="1 class"):
        LSSVMClassifier().fit(np.zeros((5, 2)) + np.arange(5)[:, None], np.ones(5))
