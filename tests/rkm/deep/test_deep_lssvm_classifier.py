"""LS-SVM-first deep RKM classifier (deep-RKM paper §4.2, §6.2.2)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.utils.estimator_checks import parametrize_with_checks

from kppca.kernels import RBF
from kppca.rkm import DeepLSSVMClassifier, LSSVMClassifier

# Name of the LS-SVM ridge (renamed from lambda_ to ridge on the scaffold branch).
_RIDGE = "ridge" if "ridge" in LSSVMClassifier().get_params() else "lambda_"


def _digits(n=300, seed=0):
    X, y = load_digits(return_X_y=True)
    idx = np.random.default_rng(seed).permutation(len(y))[:n]
    return X[idx] / 16.0, y[idx]


@parametrize_with_checks([DeepLSSVMClassifier(n_passes=1, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_zero_passes_is_the_one_vs_all_lssvm():
    X, y = _digits(200)
    deep = DeepLSSVMClassifier(RBF(1.5), ridge=1e-2, n_passes=0, random_state=0).fit(X, y)
    flat = LSSVMClassifier(RBF(1.5), **{_RIDGE: 1e-2}).fit(X, y)
    # LSSVMClassifier scores the outputs F by their correlation with the ±1 codebook B: S = F B^T
    B = flat.codebook_.numpy()
    F_flat = np.linalg.solve(B, flat.decision_function(X[:50]).T).T
    # same Cholesky solve of the same system: agreement to rounding, outputs are O(1)
    np.testing.assert_allclose(deep.decision_function(X[:50]), F_flat, atol=1e-9)


def test_level_one_solves_the_fused_bordered_system():
    """After the last backward phase H1, b solve [[K/eta1 + H2 H2^T/eta2 + lambda I, 1], [1^T, 0]] [H1; b^T] = [Y; 0]."""
    X, y = _digits(150)
    eta2 = 1e-2
    model = DeepLSSVMClassifier(RBF(1.5), n_components=(3, 2), ridge=1e-2, eta=1.0, eta_levels=(eta2, 1e-2),
                                n_passes=2, random_state=0).fit(X, y)
    H2 = model.hidden_features_[0].numpy()
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = np.exp(-d2 / (2 * 1.5**2))
    N, C = len(y), len(model.classes_)
    Y = -np.ones((N, C))
    Y[np.arange(N), np.searchsorted(model.classes_, y)] = 1.0
    A = np.zeros((N + 1, N + 1))
    A[:N, :N] = K + H2 @ H2.T / eta2 + 1e-2 * np.eye(N)
    A[:N, N] = A[N, :N] = 1.0
    sol = np.linalg.solve(A, np.vstack([Y, np.zeros((1, C))]))
    # condition of A ~ ||H2 H2^T / eta2|| / lambda = 1e4: relative error <= 1e4 * N * eps ~ 3e-10
    np.testing.assert_allclose(model.dual_coef_.numpy(), sol[:N], atol=1e-8 * np.abs(sol[:N]).max())
    np.testing.assert_allclose(model.intercept_.numpy(), sol[N], atol=1e-8 * np.abs(sol[N]).max())
    # the KPCA levels actually changed level 1: it differs from the plain LS-SVM solve
    A[:N, :N] -= H2 @ H2.T / eta2
    plain = np.linalg.solve(A, np.vstack([Y, np.zeros((1, C))]))
    assert np.abs(plain[:N] - sol[:N]).max() > 1e-3 * np.abs(sol[:N]).max()


def test_predict_is_argmax_and_proba_consistent():
    X, y = _digits(300)
    model = DeepLSSVMClassifier(RBF(1.5), n_components=(2, 1), ridge=1e-2, eta_levels=(1e-3, 1e-3),
                                random_state=0).fit(X[:200], y[:200])
    F = model.decision_function(X[200:])
    P = model.predict_proba(X[200:])
    np.testing.assert_array_equal(model.predict(X[200:]), model.classes_[F.argmax(1)])
    np.testing.assert_array_equal(P.argmax(1), F.argmax(1))
    np.testing.assert_allclose(P.sum(1), 1.0, rtol=1e-12)
    assert model.score(X[200:], y[200:]) > 0.85  # digits at N = 200: the plain LS-SVM reaches ~0.95


def test_binary_decision_sign():
    X, y = _digits(120)
    yb = (y >= 5).astype(int)
    model = DeepLSSVMClassifier(RBF(1.5), ridge=1e-2, random_state=0).fit(X, yb)
    d = model.decision_function(X)
    assert d.shape == (len(yb),)
    np.testing.assert_array_equal(model.predict(X), (d > 0).astype(int))


def test_bad_parameters():
    X, y = _digits(40)
    with pytest.raises(ValueError, match="s3 <= s2"):
        DeepLSSVMClassifier(n_components=(1, 2)).fit(X, y)
    with pytest.raises(ValueError, match="eta_levels"):
        DeepLSSVMClassifier(eta_levels=(1.0, -1.0)).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        DeepLSSVMClassifier().fit(X, np.zeros(len(X)))
