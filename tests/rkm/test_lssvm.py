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


# ---------------------------------------------------------------------- issue 18, item 2: float32
def test_float32_primal_fits_where_float64_does():
    """3 points in 3-D scaled by 1e4: Phi_c^T Phi_c + ridge eta I has eigenvalues ~1e8 and 0.1 (rank 2 + ridge),
    so the normal equations were singular in float32 (cond ~1e9 > 1/eps32); the QR of the ridge-augmented
    features (cond ~3e4) is not, and agrees with float64 at float32's rounding level."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 3)) * 1e4
    y = np.sin(X[:, 0] / 1e4) + 0.1 * X[:, 1] / 1e4
    m64 = LSSVMRegressor(kernel="linear", solver="primal").fit(X, y)
    m32 = LSSVMRegressor(kernel="linear", solver="primal", dtype="float32").fit(X.astype(np.float32), y)
    assert m32.coef_.dtype == torch.float32
    # Least squares by QR: relative error ~ cond(M) eps32 (M = [Phi_c; sqrt(ridge eta) I]), times the
    # magnitude of the fitted values.
    Pc = X - X.mean(0)
    M = np.vstack([Pc, np.sqrt(0.1) * np.eye(3)])
    assert np.linalg.cond(M.T @ M) > 1 / np.finfo(np.float32).eps  # the case the normal equations lose
    bound = 10 * np.linalg.cond(M) * np.finfo(np.float32).eps * (np.abs(y).max() + 1)
    np.testing.assert_allclose(m32.predict(X), m64.predict(X), rtol=0, atol=bound)


def test_infinite_loo_residual_is_kept_and_saved(tmp_path):
    """3 points, 3 features: a point of leverage 1 has no leave-one-out fit, so its LOO residual is infinite in
    float32. The fit's record accepts it (it is what the closed form gives), and the model saves and loads."""
    import kppca

    X = (np.random.default_rng(0).normal(size=(3, 3)) * 1e4).astype(np.float32)
    y = np.sin(X[:, 0] / 1e4)
    model = LSSVMRegressor(kernel="linear", solver="primal", dtype="float32").fit(X, y)
    assert not bool(torch.isfinite(model.loo_residuals_).all())
    kppca.save(model, tmp_path / "lssvm.kppca")
    loaded = kppca.load(tmp_path / "lssvm.kppca")
    assert torch.equal(loaded.loo_residuals_, model.loo_residuals_)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_float32_dual_beyond_precision_says_float64():
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(30, 3)) * 1e6).astype(np.float32)
    y = rng.normal(size=30)
    LSSVMRegressor(kernel="linear", solver="dual").fit(X.astype(np.float64), y)  # fine in float64
    with pytest.raises(ValueError, match=r"singular to float32 precision.*beyond float32: use dtype='float64'"):
        LSSVMRegressor(kernel="linear", solver="dual").fit(X, y)


def test_float32_dual_non_psd_kernel_is_named():
    """Above the rounding level a failed Cholesky means the kernel is not PSD (not a precision problem)."""
    K = torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=torch.float32)  # eigenvalues 3, -1
    with pytest.raises(ValueError, match="kernel is not positive semi-definite"):
        solve_lssvm_dual(K, torch.ones(2, 1, dtype=torch.float32), 0.1, 1.0)


def test_float32_dual_matches_float64_on_issue_example():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    m64 = LSSVMRegressor().fit(X, y)
    m32 = LSSVMRegressor().fit(X.astype(np.float32), y)
    K = m64.kernel_.gram(torch.as_tensor(X), torch.as_tensor(X)).numpy()
    cond = np.linalg.cond(K + 0.1 * np.eye(30))
    np.testing.assert_allclose(m32.predict(X), m64.predict(X), rtol=0,
                               atol=30 * cond * np.finfo(np.float32).eps * np.abs(y).max())


# ---------------------------------------------------------------------- issue 18, item 7: data-scaled RBF
def test_default_rbf_width_comes_from_the_data():
    X, Y = _data()
    for scale in (1e-3, 1.0, 1e3):
        m = LSSVMRegressor().fit(X * scale, Y)
        # "scale" rule: bandwidth = sqrt(D Var(X) / 2), Var over all entries (scikit-learn's gamma="scale").
        expected = np.sqrt(X.shape[1] * (X * scale).var() / 2)
        assert isinstance(m.kernel_, RBF) and m.kernel_.bandwidth == pytest.approx(expected, rel=1e-12)
        # The fit is scale-free: predictions of the scaled problem are those of the unscaled one.
        np.testing.assert_allclose(m.predict(X * scale), LSSVMRegressor().fit(X, Y).predict(X), atol=1e-8)
    assert LSSVMRegressor().kernel == "rbf"  # the parameter stays as passed
    assert LSSVMRegressor(RBF(1.0)).fit(X, Y).kernel_.bandwidth == 1.0  # an explicit width is kept
    assert LSSVMClassifier(RBF()).fit(X, Y[:, 0] > 0).kernel_.bandwidth == pytest.approx(
        np.sqrt(X.shape[1] * X.var() / 2), rel=1e-12)


# ---------------------------------------------------------------------- issue 18, item 14
def test_nan_labels_name_y():
    X, _ = _data()
    y = np.where(X[:, 0] > 0, 1.0, 0.0)
    y[3] = np.nan
    with pytest.raises(ValueError, match=r"^y \(the class labels\) contains NaN"):
        LSSVMClassifier().fit(X, y)


def test_score_with_requires_grad_tensor_y():
    X, Y = _data()
    y = torch.tensor(Y[:, 0], requires_grad=True)
    reg = LSSVMRegressor().fit(X, y)
    assert reg.score(torch.as_tensor(X), y) == pytest.approx(reg.score(X, Y[:, 0]), abs=1e-12)
    labels = torch.tensor((X[:, 0] > 0).astype(float), requires_grad=True)
    clf = LSSVMClassifier().fit(X, labels)
    assert clf.score(X, labels) == pytest.approx(float(np.mean(clf.predict(X) == labels.detach().numpy())))


def test_not_fitted_message():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match=r"LSSVMRegressor instance is not fitted yet; call fit\(X, y\) before predict"):
        LSSVMRegressor().predict(np.zeros((1, 2)))
