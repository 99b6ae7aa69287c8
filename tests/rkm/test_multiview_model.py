"""MultiViewKPCA: primal == dual, Stiefel == eig, missing-view inference, the one-view KPCA limit.

Tolerances follow from conditioning: an eigenvector of a symmetric matrix ``A`` computed
in floating point is off by about ``n eps ||A|| / gap`` (``gap`` the distance to the
nearest other eigenvalue), and an approximate invariant subspace with residual ``r``
(the Riemannian gradient norm) is off by at most ``r / gap`` (Davis-Kahan).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca import DualPPCA
from kppca.features import PolynomialFeatures, RandomFourierFeatures
from kppca.kernels import RBF
from kppca.rkm import MultiViewKPCA

EPS = np.finfo(np.float64).eps


def two_views(n=60, seed=0):
    gen = np.random.default_rng(seed)
    Z = gen.normal(size=(n, 3)) * np.array([3.0, 2.0, 1.0])
    X = Z @ gen.normal(size=(3, 5)) + 0.3 * gen.normal(size=(n, 5)) + 1.0
    Y = Z @ gen.normal(size=(3, 2)) + 0.3 * gen.normal(size=(n, 2)) - 2.0
    return X, Y


def eig_tolerance(model, factor=100.0):
    """``factor * n eps lam_1 / min gap`` over the kept eigenvalues and the first dropped one."""
    K = model_gram(model)
    lam = np.linalg.eigvalsh(K)[::-1]
    s = model.n_components_
    gaps = np.abs(np.diff(lam[: s + 1]))
    return factor * K.shape[0] * EPS * lam[0] / gaps.min(), gaps.min()


def model_gram(model):
    """The (centered, unless ``center=False``) multi-view kernel matrix, computed independently with numpy."""
    n = model.n_samples_
    M = np.eye(n) - np.ones((n, n)) / n if model.center else np.eye(n)
    K = np.zeros((n, n))
    for v in model.views_:
        Kv = v.kernel_.gram(v.X_fit_, v.X_fit_).numpy()
        K += M @ Kv @ M
    return K


@pytest.mark.parametrize(
    "maps",
    [
        None,
        [RandomFourierFeatures(bandwidth=3.0, n_features=40, random_state=0), None],
        [PolynomialFeatures(degree=2), None],
    ],
    ids=["linear", "rff", "polynomial"],
)
def test_primal_equals_dual(maps):
    X, Y = two_views()
    kw = {} if maps is None else {"feature_maps": maps}
    primal = MultiViewKPCA(3, form="primal", **kw).fit([X, Y])
    dual = MultiViewKPCA(3, form="dual", **kw).fit([X, Y])
    assert (primal.form_, dual.form_) == ("primal", "dual")
    tol, _ = eig_tolerance(dual)
    # Same sign convention on H in both forms: equal, not only up to signs.
    np.testing.assert_allclose(primal.hidden_features_.numpy(), dual.hidden_features_.numpy(), rtol=0, atol=tol)
    lam1 = float(dual.eigenvalues_[0])
    np.testing.assert_allclose(primal.Gamma_.numpy(), dual.Gamma_.numpy(), rtol=0, atol=100 * 60 * EPS * lam1)
    Xn, Yn = two_views(7, seed=1)
    hp, hd = primal.transform([Xn, Yn]), dual.transform([Xn, Yn])
    np.testing.assert_allclose(hp, hd, rtol=0, atol=1e-8)
    np.testing.assert_allclose(primal.predict_view([Xn, None], 1), dual.predict_view([Xn, None], 1), rtol=0, atol=1e-8)
    assert tol < 1e-8


def test_h_is_eigenbasis_of_k():
    X, Y = two_views()
    m = MultiViewKPCA(3).fit([X, Y])
    K = model_gram(m)
    H = m.hidden_features_.numpy()
    np.testing.assert_allclose(H.T @ H, np.eye(3), atol=1e-12)
    lam = np.linalg.eigvalsh(K)[::-1][:3]
    np.testing.assert_allclose(np.diag(m.Gamma_.numpy()), lam, rtol=1e-10)
    np.testing.assert_allclose(K @ H, H * lam, atol=1e-9 * lam[0])
    # U_v = Phi_v^T H and sum_v U_v^T U_v = Gamma.
    UU = sum(U.numpy().T @ U.numpy() for U in m.U_)
    np.testing.assert_allclose(UU, m.Gamma_.numpy(), atol=1e-10 * lam[0])


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_stiefel_rotated_equals_eig(form):
    X, Y = two_views()
    eig = MultiViewKPCA(3, form=form).fit([X, Y])
    st = MultiViewKPCA(3, form=form, solver="stiefel", random_state=0, tol=1e-9).fit([X, Y])
    res = st.solver_result_
    assert res.converged
    lam = np.linalg.eigvalsh(model_gram(eig))[::-1]
    gap = np.abs(np.diff(lam[:4])).min()
    # Davis-Kahan: the subspace (and, after rotation, each eigenvector) is off by <= r / gap.
    # In the primal the residual is that of C, and H = Phi U~ Lam^{-1/2} magnifies it by <= sqrt(lam_1 / lam_s).
    amplify = 1.0 if form == "dual" else np.sqrt(lam[0] / lam[2])
    bound = 4 * res.grad_norm / gap * amplify + 1e-10
    np.testing.assert_allclose(st.hidden_features_.numpy(), eig.hidden_features_.numpy(), rtol=0, atol=bound)
    np.testing.assert_allclose(np.diag(st.Gamma_.numpy()), np.diag(eig.Gamma_.numpy()), rtol=0,
                               atol=4 * res.grad_norm ** 2 / gap + 1e-9 * lam[0])


def test_stiefel_unrotated_gamma_not_diagonal_same_eigenvalues():
    X, Y = two_views()
    eig = MultiViewKPCA(3, form="dual").fit([X, Y])
    st = MultiViewKPCA(3, form="dual", solver="stiefel", rotate=False, random_state=0, tol=1e-9).fit([X, Y])
    G = st.Gamma_.numpy()
    off = np.abs(G - np.diag(np.diag(G))).max()
    assert off > 1e-3 * np.abs(G).max()  # a random start does not land on the eigenbasis
    res = st.solver_result_
    lam = np.linalg.eigvalsh(model_gram(eig))[::-1]
    gap = lam[2] - lam[3]
    np.testing.assert_allclose(st.eigenvalues_.numpy(), eig.eigenvalues_.numpy(), rtol=0,
                               atol=4 * res.grad_norm ** 2 / gap + 1e-9 * lam[0])
    # Same subspace: projectors agree.
    P1, P2 = st.hidden_features_.numpy() @ st.hidden_features_.numpy().T, eig.hidden_features_.numpy() @ eig.hidden_features_.numpy().T
    np.testing.assert_allclose(P1, P2, atol=4 * res.grad_norm / gap + 1e-10)


def test_stiefel_is_deterministic():
    X, Y = two_views()
    a = MultiViewKPCA(2, solver="stiefel", random_state=3, max_iter=50).fit([X, Y])
    b = MultiViewKPCA(2, solver="stiefel", random_state=3, max_iter=50).fit([X, Y])
    assert torch.equal(a.hidden_features_, b.hidden_features_)


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_missing_view_is_latent_least_squares(form):
    """With linear views, sum_v U_v^T U_v = Gamma, so eq. 15 is y = U_y argmin_h ||x_c - U_x h||."""
    X, Y = two_views()
    s = 3
    m = MultiViewKPCA(s, form=form).fit([X, Y])
    Xn, _ = two_views(9, seed=2)
    # Independent numpy computation from the joint covariance.
    mx, my = X.mean(0), Y.mean(0)
    Phi = np.hstack([X - mx, Y - my])
    lam, V = np.linalg.eigh(Phi.T @ Phi)
    U = V[:, ::-1][:, :s] * np.sqrt(lam[::-1][:s])
    Ux, Uy = U[:5], U[5:]
    h, *_ = np.linalg.lstsq(Ux, (Xn - mx).T, rcond=None)
    expected = (Uy @ h).T + my
    np.testing.assert_allclose(m.predict_view([Xn, None], 1), expected, rtol=0, atol=1e-9)


def test_one_view_is_kpca_limit_of_dual_ppca():
    """One view: H_ = DualPPCA's eigenvectors, Gamma_ = its eigenvalues, and for every sigma2
    DualPPCA.transform = sqrt(N) sqrt(1 - N sigma2 / lam) * MultiViewKPCA.transform (docs/theory.md)."""
    gen = np.random.default_rng(0)
    X, Xn = gen.normal(size=(50, 4)), gen.normal(size=(6, 4))
    N, q = 50, 3
    rkm = MultiViewKPCA(q, kernels=[RBF(2.0)]).fit([X])
    lam = rkm.eigenvalues_.numpy()
    for ratio in (1e-8, 0.3):
        sigma2 = ratio * lam[-1] / N
        ppca = DualPPCA(q, kernel=RBF(2.0), sigma2=sigma2).fit(X)
        np.testing.assert_allclose(ppca.eigenvalues_.numpy()[:q], lam, rtol=1e-12)
        np.testing.assert_allclose(ppca.eigenvectors_[:, :q].numpy(), rkm.hidden_features_.numpy(), rtol=0, atol=1e-10)
        factor = np.sqrt(N) * np.sqrt(1 - N * sigma2 / lam)
        np.testing.assert_allclose(ppca.transform(Xn), factor * rkm.transform([Xn]), rtol=1e-10)


def test_single_array_is_one_view_and_numpy_out():
    X, _ = two_views()
    m = MultiViewKPCA(2).fit(X)
    out = m.transform(X[:4])
    assert isinstance(out, np.ndarray) and out.shape == (4, 2)
    t = m.transform(torch.as_tensor(X[:4]))
    assert isinstance(t, torch.Tensor)


def test_rescale_false_primal_equals_dual_and_h_scaled():
    X, Y = two_views()
    p = MultiViewKPCA(3, form="primal", rescale=False).fit([X, Y])
    d = MultiViewKPCA(3, form="dual", rescale=False).fit([X, Y])
    ref = MultiViewKPCA(3, form="dual").fit([X, Y])
    np.testing.assert_allclose(p.hidden_features_.numpy(), d.hidden_features_.numpy(), atol=1e-10)
    np.testing.assert_allclose(d.hidden_features_.numpy(), ref.hidden_features_.numpy() / np.sqrt(ref.eigenvalues_.numpy()), atol=1e-12)


def test_nonlinear_view_prediction_and_sampling():
    X, Y = two_views()
    m = MultiViewKPCA(2, kernels=[RBF(4.0), None]).fit([X, Y])  # s <= rank of the known view Y
    pred = m.predict_view([None, Y[:5]], 0)
    assert pred.shape == (5, 5) and np.isfinite(pred).all()
    # The kernel smoother is a convex combination of training inputs.
    assert (pred.min(0) >= X.min(0) - 1e-9).all() and (pred.max(0) <= X.max(0) + 1e-9).all()
    samples = m.sample(8, random_state=0)
    assert [a.shape for a in samples] == [(8, 5), (8, 2)]
    again = m.sample(8, random_state=0)
    np.testing.assert_array_equal(samples[1], again[1])
    mix = m.sample(4, latent="mixture", random_state=1)
    assert all(np.isfinite(a).all() for a in mix)
    # Linear view samples lie in the affine span mean + U_y h.
    lin = MultiViewKPCA(1).fit([X, Y])
    Ys = lin.sample(5, random_state=0)[1]
    d = Ys - Y.mean(0)
    assert np.linalg.matrix_rank(d, tol=1e-8 * np.abs(d).max()) == 1


# ------------------------------------------------------------------------------------------------
# Pre-images of a non-linear view: primal (explicit map) == dual (its induced kernel), centered or not
# ------------------------------------------------------------------------------------------------


def poly_views(n=60, seed=0):
    """View 0 (5 columns) feeds a degree-2 polynomial map; view 1 (2 columns) is linear."""
    X, Y = two_views(n, seed)
    return 0.3 * X, Y


def smoother_condition(model, view, weights):
    """Forward-error factor of the kernel smoother ``x = sum_i w_i x_i / sum_i w_i`` (clipped weights):
    a relative perturbation ``e`` of every weight moves ``x`` by at most
    ``e * sum_i |w_i| |x_i - x| / sum_i w_i``; the largest factor over the rows."""
    Xf = model.views_[view].X_fit_.numpy()
    w = np.clip(weights, 0, None)
    x = w @ Xf / w.sum(1, keepdims=True)
    spread = np.abs(Xf[None, :, :] - x[:, None, :]).max(2)  # (m, n)
    return float(((np.abs(weights) * spread).sum(1) / w.sum(1)).max())


@pytest.mark.parametrize("center", [True, False])
def test_polynomial_view_preimage_primal_equals_dual(center):
    """predict_view and sample of a polynomial view: primal (PolynomialFeatures(2), exact raw weights
    <phi(x_i), U h + m>) and dual (Polynomial(2) kernel, centered kernel vectors K_c H h un-centered
    with the exact row mean s = grand mean + (H h) . (K 1/n - grand mean)) give the same inputs.
    Before the fix the dual used s = grand mean (centered: 0.34 apart) and, uncentered, centered
    K_v anyway (1.7 apart)."""
    from kppca.kernels import Polynomial

    X, Y = poly_views()
    s = 2  # <= rank of the known 2-column view, so view 0 can be inferred from view 1
    primal = MultiViewKPCA(s, form="primal", feature_maps=[PolynomialFeatures(2), None], center=center).fit([X, Y])
    dual = MultiViewKPCA(s, form="dual", kernels=[Polynomial(2, 1.0), None], center=center).fit([X, Y])
    # New points for the centered model; the uncentered one (phi = U h, no mean) gives some new points
    # no positive similarity to any training point, so use training rows there.
    Yn = two_views(7, seed=1)[1] if center else Y[:7]
    tol_H, _ = eig_tolerance(dual)  # already 100 x the rounding-level eigenvector error
    # The exact raw weights of the primal prediction, recomputed with numpy: the conditioning of the
    # pre-image. A perturbation tol_H of H changes every weight by ~ tol_H sqrt(n) relative (H enters
    # K_v H (Gamma - H^T K_v H)^{-1} H^T k linearly, with Gamma - H^T K_v H well conditioned here).
    U0, U1 = primal.U_[0].numpy(), primal.U_[1].numpy()
    G = primal.Gamma_.numpy()
    A = G - U0.T @ U0
    mean1 = primal.views_[1].phi_mean_.numpy()
    h = np.linalg.solve(A, U1.T @ (Yn - mean1).T).T
    view0 = primal.views_[0]
    Phi_raw = view0.feature_map_.map(view0.X_fit_).numpy()
    weights = (h @ U0.T + view0.phi_mean_.numpy()) @ Phi_raw.T
    n = X.shape[0]
    tol = tol_H * np.sqrt(n) * np.linalg.cond(A) * smoother_condition(primal, 0, weights)
    # 3e-9 centered; 1.1e-8 uncentered, where a row's positive weights nearly cancel (factor 59).
    # Observed: ~1e-14 either way; before the fix 0.34 (centered) and 1.7 (uncentered).
    assert tol < 2e-8
    expected = np.clip(weights, 0, None) @ X / np.clip(weights, 0, None).sum(1, keepdims=True)
    pp, pd = primal.predict_view([None, Yn], 0), dual.predict_view([None, Yn], 0)
    np.testing.assert_allclose(pp, expected, rtol=0, atol=tol)
    np.testing.assert_allclose(pd, pp, rtol=0, atol=tol)
    if center:
        # Generation: the same hidden draws (same random_state, same H up to rounding) decode alike.
        for a, b in zip(primal.sample(6, random_state=0), dual.sample(6, random_state=0)):
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-8)


def test_uncentered_kernel_view_uses_raw_gram():
    """center=False: the missing-view inference reads H^T K_v H with the raw K_v (not M K_v M)."""
    from kppca.kernels import Polynomial

    X, Y = poly_views()
    m = MultiViewKPCA(2, form="dual", kernels=[Polynomial(2, 1.0), None], center=False).fit([X, Y])
    H = m.hidden_features_.numpy()
    K0 = (X @ X.T + 1.0) ** 2
    K = K0 + Y @ Y.T
    lam1 = np.linalg.eigvalsh(K)[-1]
    np.testing.assert_allclose(H.T @ K @ H, m.Gamma_.numpy(), rtol=0, atol=1e-10 * lam1)
    # Eq. 16 with raw kernels, independently: h = (Gamma - H^T K_0 H)^{-1} H^T k_1(y), k_0 = K_0 H h.
    Yn = Y[:5]
    A = m.Gamma_.numpy() - H.T @ K0 @ H
    h = np.linalg.solve(A, H.T @ (Y @ Yn.T)).T
    w = np.clip(h @ (K0 @ H).T, 0, None)
    expected = w @ X / w.sum(1, keepdims=True)
    tol_H, _ = eig_tolerance(m)
    tol = tol_H * np.sqrt(X.shape[0]) * np.linalg.cond(A) * smoother_condition(m, 0, h @ (K0 @ H).T)
    np.testing.assert_allclose(m.predict_view([None, Yn], 0), expected, rtol=0, atol=tol)


def test_decoding_rebuilds_no_gram_and_maps_no_training_features(monkeypatch):
    """predict_view / sample (and so every forecast step) use what fit stored (n x s arrays):
    the target view's kernel and feature map are not evaluated on the training set again."""
    X, Y = poly_views()
    kernel_model = MultiViewKPCA(2, kernels=[RBF(3.0), None]).fit([X, Y])
    map_model = MultiViewKPCA(2, feature_maps=[PolynomialFeatures(2), None], form="dual").fit([X, Y])
    before = [kernel_model.predict_view([None, Y[:3]], 0), map_model.predict_view([None, Y[:3]], 0)]

    def forbidden(*args, **kwargs):
        raise AssertionError("training Gram matrix / features recomputed at prediction time")

    monkeypatch.setattr(kernel_model.views_[0].kernel_, "gram", forbidden)
    monkeypatch.setattr(map_model.views_[0].feature_map_, "map", forbidden)
    np.testing.assert_array_equal(kernel_model.predict_view([None, Y[:3]], 0), before[0])
    np.testing.assert_array_equal(map_model.predict_view([None, Y[:3]], 0), before[1])
    assert kernel_model.sample(3, random_state=0)[0].shape == (3, 5)
    assert map_model.sample(3, random_state=0)[0].shape == (3, 5)
    # Only n x s (or smaller) state is kept per view.
    n, s = X.shape[0], 2
    assert kernel_model.views_[0].gram_hidden_.shape == (n, s)
    assert map_model.views_[0].weight_basis_.shape == (n, s)
    assert not hasattr(map_model.views_[0], "_raw_features")  # the training features are not kept after fit
