"""Agreement with scikit-learn (PCA, KernelPCA, Minka's MLE) and scikit-learn estimator conventions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal
from sklearn.base import clone
from sklearn.decomposition import PCA, KernelPCA
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kppca import DualPPCA, PrimalPPCA
from kppca.kernels import RBF


def np_(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def column_signs(reference, other):
    s = np.sign((reference * other).sum(0))
    assert np.all(s != 0)
    return s


# ----------------------------------------------------------------------------- classical PPCA = sklearn PCA


@pytest.mark.parametrize("model_cls", [PrimalPPCA, DualPPCA], ids=["primal", "dual-linear"])
def test_linear_ppca_matches_sklearn_pca(structured_data, rng, model_cls):
    X = structured_data
    N, D = X.shape
    q = 3  # q < d < N: classical PPCA
    Xt = rng.normal(size=(8, D)) * 3
    ours = model_cls(q).fit(X)
    sk = PCA(q, svd_solver="full").fit(X)
    c = (N - 1) / N  # scikit-learn divides by N - 1

    assert ours.sigma2_ == pytest.approx(sk.noise_variance_ * c, rel=1e-10)
    np.testing.assert_allclose(np_(ours.explained_variance_), sk.explained_variance_ * c, rtol=1e-10)
    np.testing.assert_allclose(np_(ours.explained_variance_ratio_), sk.explained_variance_ratio_, rtol=1e-10)
    assert ours.rank_ == D

    # sklearn's PCA.transform is (x - mean) V; ours is h = diag(N sqrt(lam/N - sigma2) / lam) V^T (x - m)
    lam = np_(ours.eigenvalues_)
    z = sk.transform(Xt)
    h = np_(ours.transform(Xt))
    expected = z * (N * np.sqrt(lam / N - ours.sigma2_) / lam)
    np.testing.assert_allclose(h * column_signs(expected, h), expected, rtol=1e-9, atol=1e-12)

    if model_cls is PrimalPPCA:
        W_ref = sk.components_.T * np.sqrt((sk.explained_variance_ - sk.noise_variance_) * c)
        W = np_(ours.W_)
        np.testing.assert_allclose(W * column_signs(W_ref, W), W_ref, rtol=1e-9, atol=1e-12)
        comps = np_(ours.components_)
        np.testing.assert_allclose(comps * column_signs(sk.components_.T, comps.T)[:, None], sk.components_, atol=1e-10)
        # Two summation orders of N terms: the means differ by at most N eps max|X| (absolute: a column mean
        # may be near zero, where a relative tolerance would not follow from anything).
        np.testing.assert_allclose(np_(ours.mean_), sk.mean_, rtol=0, atol=N * np.finfo(float).eps * np.abs(X).max())
        cov = np_(ours.get_covariance())
        np.testing.assert_allclose(cov, sk.get_covariance() * c, rtol=1e-9, atol=1e-12)
        # r = d: our likelihood on H_E is the ordinary Gaussian density with that covariance
        ref = multivariate_normal(mean=X.mean(0), cov=cov, allow_singular=True).logpdf(Xt)
        np.testing.assert_allclose(np_(ours.score_samples(Xt)), ref, rtol=1e-10)
        assert ours.score(Xt) == pytest.approx(ref.mean(), rel=1e-10)


# ----------------------------------------------------------------------------- KPCA limit


@pytest.mark.parametrize("q", [2, 4])
def test_dual_kpca_limit_matches_sklearn_kernel_pca(rng, q):
    X, Xt = rng.normal(size=(40, 3)), rng.normal(size=(6, 3))
    bw = 1.5
    gamma = 1.0 / (2 * bw**2)
    K, Kt = rbf_kernel(X, gamma=gamma), rbf_kernel(Xt, X, gamma=gamma)
    N = X.shape[0]
    ours = DualPPCA(q, sigma2=1e-12, kernel=RBF(bw)).fit(X)
    assert ours.sigma2_ == 1e-12
    kpca = KernelPCA(q, kernel="precomputed", eigen_solver="dense").fit(K)
    lam = np_(ours.eigenvalues_)
    np.testing.assert_allclose(lam, kpca.eigenvalues_, rtol=1e-10)
    # h_p = sqrt(N / lam_p) z_p at sigma2 -> 0 (the 1e-12 shifts it by ~ N sigma2 / lam relative)
    z = kpca.transform(Kt)
    h = np_(ours.transform(Xt))
    expected = z * np.sqrt(N / lam)
    s = column_signs(expected, h)
    np.testing.assert_allclose(h * s, expected, rtol=1e-8, atol=1e-10)
    # same through the named kernel in scikit-learn
    z_rbf = KernelPCA(q, kernel="rbf", gamma=gamma, eigen_solver="dense").fit(X).transform(Xt)
    np.testing.assert_allclose(np.abs(z_rbf), np.abs(z), rtol=1e-9, atol=1e-12)
    # reconstruction -> KPCA projection E_q E_q^T k_c = sum_p z_p sqrt(lam_p) e_p
    E = kpca.eigenvectors_
    proj = (z * np.sqrt(lam)) @ E.T
    np.testing.assert_allclose(np_(ours.reconstruct_kernel(Xt)), proj, rtol=1e-8, atol=1e-10)
    # posterior covariance N sigma2 / lam -> 0
    assert float(np_(ours.latent_covariance_).max()) < 1e-9


# ----------------------------------------------------------------------------- Minka's MLE


def _low_rank_data(seed, N, D, k, noise):
    gen = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(gen.normal(size=(D, k)))
    scales = np.linspace(6.0, 3.0, k)
    return (gen.normal(size=(N, k)) * scales) @ basis.T + noise * gen.normal(size=(N, D)) + 1.0


@pytest.mark.parametrize(
    "seed, N, D, k, noise",
    [(0, 60, 8, 1, 0.5), (1, 60, 8, 2, 0.5), (2, 50, 10, 3, 0.3), (3, 60, 7, 4, 1.0)],
)
def test_mle_dimension_matches_sklearn(seed, N, D, k, noise):
    X = _low_rank_data(seed, N, D, k, noise)
    sk_q = PCA(n_components="mle", svd_solver="full").fit(X).n_components_
    assert sk_q == k  # the structure is clear enough that sklearn finds it
    assert PrimalPPCA("mle").fit(X).n_components_ == sk_q
    assert DualPPCA("mle").fit(X).n_components_ == sk_q


@pytest.mark.parametrize("seed", range(4))
def test_mle_dimension_matches_sklearn_without_clear_structure(seed):
    """Same criterion, so the same choice even when the answer is not obvious (scale-invariant evidence)."""
    gen = np.random.default_rng(100 + seed)
    X = gen.normal(size=(45, 9)) * np.geomspace(4.0, 0.5, 9) @ np.linalg.qr(gen.normal(size=(9, 9)))[0]
    sk_q = PCA(n_components="mle", svd_solver="full").fit(X).n_components_
    assert PrimalPPCA("mle").fit(X).n_components_ == sk_q
    assert DualPPCA("mle").fit(X).n_components_ == sk_q


# ----------------------------------------------------------------------------- estimator conventions


@pytest.mark.parametrize("model_cls", [PrimalPPCA, DualPPCA])
def test_get_set_params_and_clone(model_cls):
    model = model_cls(3, sigma2=0.1, center=False, random_state=7)
    params = model.get_params()
    assert params["n_components"] == 3 and params["sigma2"] == 0.1 and params["center"] is False
    assert params["random_state"] == 7
    assert model.set_params(n_components=2, sigma2=None) is model
    assert model.n_components == 2 and model.sigma2 is None
    twin = clone(model)
    assert twin is not model and twin.get_params() == model.get_params()
    assert "n_components=2" in repr(model)


def test_dual_params_include_kernel():
    model = DualPPCA(2, kernel=RBF(3.0))
    assert isinstance(model.get_params()["kernel"], RBF)
    twin = clone(model)
    assert twin.kernel.bandwidth == 3.0


@pytest.mark.parametrize("model_cls", [PrimalPPCA, DualPPCA])
def test_fit_returns_self_and_fit_transform(structured_data, model_cls):
    X = structured_data
    model = model_cls(2)
    assert model.fit(X) is model
    H = model.transform(X)
    H2 = model_cls(2).fit_transform(X)
    np.testing.assert_allclose(H2, H, rtol=1e-12, atol=1e-12)
    # refitting with other parameters replaces the fitted state
    model.set_params(n_components=3).fit(X)
    assert model.transform(X).shape == (X.shape[0], 3)


def test_works_in_a_pipeline(structured_data):
    X = structured_data
    pipe = make_pipeline(StandardScaler(), DualPPCA(2, kernel=RBF(2.0)))
    H = pipe.fit_transform(X)
    ref = DualPPCA(2, kernel=RBF(2.0)).fit_transform(StandardScaler().fit_transform(X))
    np.testing.assert_allclose(H, ref, rtol=1e-12, atol=1e-12)
    assert np.isfinite(pipe.score(X))


@pytest.mark.parametrize("solver", ["dense", "partial"])
def test_refit_replaces_every_cache(rng, solver):
    """Regression: a second fit reused the previous fit's eigendecomposition and sampling factors."""
    X1, X2, Xt = rng.normal(size=(30, 3)), 2.0 * rng.normal(size=(30, 3)), rng.normal(size=(4, 3))
    model = DualPPCA(2, kernel=RBF(1.0), random_state=0)
    model.fit(X1)
    model.sample_kernel(2, random_state=0, factor="symmetric")
    model.sample_kernel(2, random_state=0, factor="fast")
    model.score_samples(Xt)
    model.set_params(eigen_solver=solver).fit(X2)
    fresh = DualPPCA(2, kernel=RBF(1.0), eigen_solver=solver, random_state=0).fit(X2)
    for factor in ("fast", "symmetric"):
        a = model.sample_kernel(3, random_state=1, factor=factor)
        b = fresh.sample_kernel(3, random_state=1, factor=factor)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(model.score_samples(Xt), fresh.score_samples(Xt), rtol=1e-12)
    np.testing.assert_allclose(np_(model.get_covariance()), np_(fresh.get_covariance()), atol=1e-12)

    primal = PrimalPPCA(1).fit(X1)
    primal.score_samples(Xt)
    primal.set_params(eigen_solver=solver).fit(X2)
    fresh_p = PrimalPPCA(1, eigen_solver=solver).fit(X2)
    np.testing.assert_allclose(primal.score_samples(Xt), fresh_p.score_samples(Xt), rtol=1e-12)
    np.testing.assert_allclose(primal.sample_features(3, random_state=0), fresh_p.sample_features(3, random_state=0),
                               rtol=1e-12, atol=1e-12)
