"""Kernel pmf (deep-RKM paper §3.6) against the direct formula, primal = dual, stationarity of eq. 3.34."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.utils.estimator_checks import parametrize_with_checks

from kppca.kernels import RBF, Laplacian, Linear, Polynomial
from kppca.rkm import KernelPMF

# float64 sums of N <= 60 positive terms: relative rounding ~ N * eps ~ 1e-14; 1e-12 leaves 100x margin.
RTOL = 1e-12


def _data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.0, 1.0, size=(n, d))


def _rbf_numpy(A, B, bw):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * bw**2))


@parametrize_with_checks([KernelPMF(), KernelPMF(kernel=Laplacian(2.0))])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_probabilities_match_direct_formula():
    X = _data()
    model = KernelPMF(kernel=RBF(0.7)).fit(X)
    K = _rbf_numpy(X, X, 0.7)
    p = K.sum(0) / K.sum()
    np.testing.assert_allclose(model.probabilities_.numpy(), p, rtol=RTOL)
    assert model.probabilities_.sum().item() == pytest.approx(1.0, abs=1e-13)
    np.testing.assert_allclose(np.exp(model.log_eta_), K.sum(), rtol=RTOL)


def test_score_samples_uses_training_eta():
    X, Z = _data(), _data(7, seed=1)
    model = KernelPMF(kernel=RBF(0.7)).fit(X)
    K = _rbf_numpy(X, X, 0.7)
    Kz = _rbf_numpy(Z, X, 0.7)
    np.testing.assert_allclose(model.score_samples(Z), np.log(Kz.sum(1) / K.sum()), rtol=RTOL)
    # on the training points the score is log p_i
    np.testing.assert_allclose(np.exp(model.score_samples(X)), model.probabilities_.numpy(), rtol=RTOL)


def test_laplacian_direct_formula():
    X, Z = _data(), _data(5, seed=2)
    model = KernelPMF(kernel=Laplacian(1.5)).fit(X)
    Kz = np.exp(-np.abs(Z[:, None, :] - X[None]).sum(-1) / 1.5)
    K = np.exp(-np.abs(X[:, None, :] - X[None]).sum(-1) / 1.5)
    np.testing.assert_allclose(model.score_samples(Z), np.log(Kz.sum(1) / K.sum()), rtol=RTOL)


@pytest.mark.parametrize("kernel", [Linear(), Polynomial(2, 1.0)])
def test_primal_equals_dual_on_explicit_maps(kernel):
    X, Z = _data(), _data(6, seed=3)  # non-negative data: linear and polynomial values are >= 0
    dual = KernelPMF(kernel=kernel).fit(X)
    primal = KernelPMF(kernel=kernel, solver="primal").fit(X)
    # explicit features reproduce the kernel to rounding; condition of sums of positive terms ~ 1
    np.testing.assert_allclose(primal.probabilities_.numpy(), dual.probabilities_.numpy(), rtol=1e-11)
    np.testing.assert_allclose(primal.score_samples(Z), dual.score_samples(Z), rtol=1e-11, atol=1e-12)
    assert primal.log_eta_ == pytest.approx(dual.log_eta_, rel=1e-12)


def test_stationarity_of_eq_3_34():
    """At (p, w, h = 1) every partial derivative of J = sum (p_i - phi_i^T w) h_i - sum p_i + eta/2 w^T w vanishes."""
    X = _data()
    model = KernelPMF(kernel=Polynomial(2, 1.0), solver="primal").fit(X)
    Phi = Polynomial(2, 1.0).explicit_features(torch.as_tensor(X))
    eta = float(np.exp(model.log_eta_))
    p = model.probabilities_.clone().requires_grad_(True)
    w = model.coef_.clone().requires_grad_(True)
    h = torch.ones(X.shape[0], dtype=torch.float64, requires_grad=True)
    J = ((p - Phi @ w) * h).sum() - p.sum() + eta / 2 * (w @ w)
    gp, gw, gh = torch.autograd.grad(J, (p, w, h))
    assert torch.all(gp == 0)  # h_i - 1 exactly
    # dJ/dh_i = p_i - phi_i^T w: rounding of a d_f-term dot product, relative to |p| ~ 1/N
    assert float(gh.abs().max()) <= 1e-13 * float(p.detach().abs().max())
    # dJ/dw = eta w - sum phi_i: relative to |sum phi_i|
    assert float(gw.abs().max()) <= 1e-12 * float(Phi.sum(0).abs().max())
    # and the wrong h (h = 2) is not stationary: the test can fail
    J2 = ((p - Phi @ w) * 2 * h).sum() - p.sum() + eta / 2 * (w @ w)
    assert float(torch.autograd.grad(J2, w)[0].abs().max()) > 1.0


def test_class_rule_matches_direct_formula_and_sums_to_one():
    X, Z = _data(60), _data(9, seed=4)
    y = np.array(["a", "b", "c"])[np.arange(60) % 3]
    model = KernelPMF(kernel=RBF(0.5)).fit(X, y)
    Kz = _rbf_numpy(Z, X, 0.5)
    expect = np.stack([Kz[:, y == c].sum(1) for c in ["a", "b", "c"]], 1) / Kz.sum(1, keepdims=True)
    P = model.predict_proba(Z)
    np.testing.assert_allclose(P, expect, rtol=RTOL)
    np.testing.assert_allclose(P.sum(1), 1.0, rtol=1e-14)
    assert list(model.predict(Z)) == list(np.array(["a", "b", "c"])[expect.argmax(1)])


def test_far_points_follow_nearest_neighbour_in_log_space():
    X = np.array([[0.0], [1.0], [5.0]])
    y = np.array([0, 0, 1])
    model = KernelPMF(kernel=RBF(0.1)).fit(X, y)
    Z = np.array([[100.0], [-100.0]])  # every k(x_j, z) underflows to 0 in float64
    assert np.all(np.isfinite(model.score_samples(Z)))
    np.testing.assert_array_equal(model.predict(Z), [1, 0])


def test_negative_kernel_values_refused():
    X = np.array([[1.0, 0.0], [-1.0, 0.1], [-1.0, 0.2]])  # sum phi = (-1, 0.3): p_1 < 0
    with pytest.raises(ValueError, match="negative"):
        KernelPMF(kernel="linear").fit(X)
    with pytest.raises(ValueError, match="negative"):
        KernelPMF(kernel="linear", solver="primal").fit(X)


def test_primal_needs_explicit_map_and_labels_needed_for_proba():
    X = _data(10)
    with pytest.raises(ValueError, match="explicit feature map"):
        KernelPMF(solver="primal").fit(X)
    model = KernelPMF().fit(X)
    with pytest.raises(ValueError, match=r"fit\(X, y\)"):
        model.predict_proba(X)


def test_failed_fit_leaves_model_unchanged_and_input_unmodified():
    X = _data(10)
    X0 = X.copy()
    model = KernelPMF().fit(X)
    p = model.probabilities_.clone()
    with pytest.raises(ValueError):
        model.set_params(kernel="linear").fit(X - 0.5)
    assert torch.equal(model.probabilities_, p)
    np.testing.assert_array_equal(X, X0)
