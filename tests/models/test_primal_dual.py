"""Primal (explicit features) and dual (kernel) PPCA describe the same model.

Every dual quantity must equal the primal one pushed through ``Phi_c`` (spec,
"Reference values to test against"), and both must equal the closed-form ML
solution computed here independently with numpy from the explicit features.
Code orientation: ``Phi_c`` is (N, d), rows ``phi(x_i) - m``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca.features import Identity, PolynomialFeatures, RandomFourierFeatures
from kppca.kernels import RBF, Linear

RTOL = 1e-9


def assert_rel(actual, expected, tol=RTOL, what=""):
    """max |actual - expected| <= tol * max |expected| (relative to the scale of the quantity)."""
    a = np.asarray(torch.as_tensor(actual).detach().cpu().numpy() if isinstance(actual, torch.Tensor) else actual)
    e = np.asarray(torch.as_tensor(expected).detach().cpu().numpy() if isinstance(expected, torch.Tensor) else expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    scale = max(np.abs(e).max(), 1e-300)
    err = np.abs(a - e).max()
    assert err <= tol * scale, f"{what}: max abs error {err:.3g} > {tol:g} * {scale:.3g}"


def np_(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def column_signs(reference: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Signs s with other * s ~ reference, column by column."""
    s = np.sign((reference * other).sum(0))
    assert np.all(s != 0)
    return s


# ----------------------------------------------------------------------------- independent reference


class Reference:
    """Closed-form ML PPCA from explicit features, in plain numpy."""

    def __init__(self, Phi: np.ndarray, center: bool, n_components=None, sigma2=None):
        N = Phi.shape[0]
        self.m = Phi.mean(0) if center else np.zeros(Phi.shape[1])
        self.Phi_c = Phi - self.m
        lam = np.linalg.eigvalsh(self.Phi_c @ self.Phi_c.T)[::-1]
        tol = N * np.finfo(float).eps * lam[0]
        self.r = int((lam > tol).sum())
        self.trace = float(np.trace(self.Phi_c @ self.Phi_c.T))
        self.lam = lam[: self.r]
        if isinstance(n_components, int):
            q = n_components
        elif isinstance(n_components, float):
            q = int(np.argmax(np.cumsum(self.lam) / self.trace >= n_components)) + 1
        elif n_components is None and sigma2 is not None:
            q = int((self.lam / N > sigma2).sum())
        else:
            raise AssertionError("mode not covered by the reference")
        self.q = q
        if sigma2 is None:
            sigma2 = self.lam[q:].sum() / (N * (self.r - q))
        self.sigma2 = sigma2
        self.N = N

    def loglik(self) -> float:
        N, r, q = self.N, self.r, self.q
        logdet = np.log(self.lam[:q] / N).sum() + (r - q) * math.log(self.sigma2)
        return -N / 2 * (r * math.log(2 * math.pi) + logdet + r)


# ----------------------------------------------------------------------------- the comparison


def check_agreement(primal, dual, fmap, X, Xt, center, tol=RTOL):
    Phi, Phit = np_(fmap.transform(X)), np_(fmap.transform(Xt))
    m = Phi.mean(0) if center else np.zeros(Phi.shape[1])
    Phi_c, Phit_c = Phi - m, Phit - m
    q, N = primal.n_components_, X.shape[0]
    assert dual.n_components_ == q and dual.rank_ == primal.rank_

    assert primal.sigma2_ == pytest.approx(dual.sigma2_, rel=tol)
    assert_rel(primal.eigenvalues_, dual.eigenvalues_, tol, "eigenvalues")
    assert_rel(primal.explained_variance_ratio_, dual.explained_variance_ratio_, tol, "explained variance ratio")
    assert primal.total_variance_ == pytest.approx(dual.total_variance_, rel=tol)

    # W = Phi_c^T A, up to the sign of each column
    W_dual = Phi_c.T @ np_(dual.A_)
    W_primal = np_(primal.W_)
    s = column_signs(W_primal, W_dual)
    assert_rel(W_dual * s, W_primal, tol, "W = Phi_c^T A")

    # posterior means (with the same signs) and covariances
    Hp, Hd = np_(primal.transform(Xt)), np_(dual.transform(Xt))
    assert_rel(np.abs(Hd), np.abs(Hp), tol, "|h_MAP|")
    assert_rel(Hd * s, Hp, tol, "h_MAP (signs aligned)")
    cov_p = np_(primal.latent_posterior(Xt).covariance_matrix)
    cov_d = np_(dual.latent_posterior(Xt).covariance_matrix)
    assert cov_p.shape == (Xt.shape[0], q, q)
    assert_rel(cov_d, cov_p, tol, "posterior covariance")
    lam = np_(primal.eigenvalues_)
    assert_rel(cov_p[0], np.diag(N * primal.sigma2_ / lam), tol, "posterior covariance = N sigma2 / lam")

    # centered kernel vectors and the marginal covariance of k_c
    assert_rel(dual.centered_kernel(Xt), Phit_c @ Phi_c.T, tol, "k_c(x)")
    S_ref = Phi_c @ (W_primal @ W_primal.T + primal.sigma2_ * np.eye(Phi.shape[1])) @ Phi_c.T
    assert_rel(dual.get_covariance(), S_ref, tol, "get_covariance")
    assert_rel(dual.kernel_marginal("fast").covariance_matrix, S_ref, tol, "kernel_marginal(fast)")
    assert_rel(dual.kernel_marginal("symmetric").covariance_matrix, S_ref, tol, "kernel_marginal(symmetric)")

    # reconstructions: k_c of the primal MAP reconstruction equals the dual kernel-space reconstruction
    rec_primal = (np_(primal.reconstruct_features(Xt)) - m) @ Phi_c.T
    assert_rel(dual.reconstruct_kernel(Xt), rec_primal, tol, "reconstruction")

    # conditional of k_c given h: the primal conditional pushed through Phi_c
    h = Hp[:3]
    cond = dual.kernel_conditional(h * s)
    assert_rel(cond.mean, (h @ W_primal.T) @ Phi_c.T, tol, "E[k_c | h]")
    assert_rel(cond.covariance_matrix[0], primal.sigma2_ * Phi_c @ Phi_c.T, tol, "Cov[k_c | h]")
    fcond = primal.feature_conditional(h)
    assert_rel((np_(fcond.mean) - m) @ Phi_c.T, (h @ W_primal.T) @ Phi_c.T, tol, "E[phi | h]")

    # likelihoods
    assert_rel(dual.score_samples(Xt), primal.score_samples(Xt), tol, "score_samples")
    assert dual.score(Xt) == pytest.approx(primal.score(Xt), rel=tol)
    return s


def fit_pair(fmap, X, **kwargs):
    if not hasattr(fmap, "n_features_in_"):
        fmap.fit(X)
    primal = PrimalPPCA(feature_map=fmap, **kwargs).fit(X)
    dual = DualPPCA(kernel=fmap.as_kernel(), **kwargs).fit(X)
    return primal, dual


def _data(rng, N, D, scales=None):
    scales = np.linspace(2.0, 0.5, D) if scales is None else scales
    return rng.normal(size=(N, D)) * scales + rng.normal(size=D)


MAPS = {
    # name: (feature map factory, N, D) ; d = output dimension
    "identity": (Identity, 40, 6),  # d = 6 < N
    "identity-wide": (Identity, 15, 30),  # d = 30 > N: primal eigen-problem on the Gram side
    "poly": (lambda: PolynomialFeatures(2, 1.0), 40, 3),  # d = 10 < N, rank 9 when centered
    "rff": (lambda: RandomFourierFeatures(2.0, n_features=25, random_state=0), 40, 3),
    "rff-wide": (lambda: RandomFourierFeatures(0.5, n_features=90, random_state=1), 30, 3),  # d > N
}


@pytest.mark.parametrize("center", [True, False], ids=["centered", "uncentered"])
@pytest.mark.parametrize("name", list(MAPS))
def test_primal_equals_dual_and_closed_form(rng, name, center):
    factory, N, D = MAPS[name]
    X, Xt = _data(rng, N, D), _data(rng, 7, D)
    q = 2
    fmap = factory()
    primal, dual = fit_pair(fmap, X, n_components=q, center=center)
    check_agreement(primal, dual, fmap, X, Xt, center)

    ref = Reference(np_(fmap.transform(X)), center, n_components=q)
    assert primal.rank_ == ref.r
    assert primal.sigma2_ == pytest.approx(ref.sigma2, rel=RTOL)
    assert_rel(primal.eigenvalues_, ref.lam[:q], RTOL, "eigenvalues vs numpy")
    assert_rel(primal.explained_variance_ratio_, ref.lam[:q] / ref.trace, RTOL, "explained variance ratio")
    # W^T W = diag(lam/N - sigma2) (orthogonal columns of prescribed norms)
    W = np_(primal.W_)
    assert_rel(W.T @ W, np.diag(ref.lam[:q] / N - ref.sigma2), RTOL, "W^T W")
    # training log-likelihood = spec's closed form, on both sides
    assert float(np_(dual.score_samples(X)).sum()) == pytest.approx(ref.loglik(), rel=1e-10)
    assert float(np_(primal.score_samples(X)).sum()) == pytest.approx(ref.loglik(), rel=1e-10)
    if center:
        np.testing.assert_allclose(np_(dual.transform(X)).mean(0), 0.0, atol=1e-10)


def test_linear_kernel_default_dual_equals_primal_identity(structured_data, rng):
    X = structured_data
    primal = PrimalPPCA(3).fit(X)
    dual = DualPPCA(3, kernel=Linear()).fit(X)
    dual_default = DualPPCA(3).fit(X)  # kernel="linear" is the default
    check_agreement(primal, dual, Identity().fit(X), X, rng.normal(size=(5, 6)), True)
    np.testing.assert_array_equal(dual.transform(X), dual_default.transform(X))


# ----------------------------------------------------------------------------- n_components modes


@pytest.fixture
def poly_setting(rng):
    X = _data(rng, 40, 3, scales=np.array([2.0, 1.0, 0.4]))
    fmap = PolynomialFeatures(2, 1.0).fit(X)
    ref = Reference(np_(fmap.transform(X)), True, n_components=1)
    return X, fmap, ref


def test_mode_fraction(poly_setting, rng):
    X, fmap, base = poly_setting
    frac = float(0.5 * (np.cumsum(base.lam)[2] + np.cumsum(base.lam)[3]) / base.trace)  # between q = 3 and 4
    primal, dual = fit_pair(fmap, X, n_components=frac)
    ref = Reference(base.Phi_c + base.m, True, n_components=frac)
    assert ref.q == 4
    assert primal.n_components_ == dual.n_components_ == ref.q
    assert primal.sigma2_ == pytest.approx(ref.sigma2, rel=RTOL)
    assert float(np_(primal.explained_variance_ratio_).sum()) >= frac
    check_agreement(primal, dual, fmap, X, _data(rng, 5, 3), True)


def test_mode_sigma2_only(poly_setting, rng):
    X, fmap, base = poly_setting
    N = X.shape[0]
    sigma2 = float(np.sqrt(base.lam[2] * base.lam[3]) / N)  # between lam_3/N and lam_4/N
    primal, dual = fit_pair(fmap, X, sigma2=sigma2)
    assert primal.n_components_ == dual.n_components_ == 3
    assert primal.sigma2_ == dual.sigma2_ == sigma2
    W = np_(primal.W_)
    assert_rel(W.T @ W, np.diag(base.lam[:3] / N - sigma2), RTOL, "W^T W with fixed sigma2")
    check_agreement(primal, dual, fmap, X, _data(rng, 5, 3), True)


def test_mode_int_and_sigma2(poly_setting, rng):
    X, fmap, base = poly_setting
    N = X.shape[0]
    sigma2 = float(0.5 * base.lam[1] / N)  # fixed, much larger than the ML estimate
    primal, dual = fit_pair(fmap, X, n_components=2, sigma2=sigma2)
    assert primal.n_components_ == 2 and primal.sigma2_ == dual.sigma2_ == sigma2
    A = np_(dual.A_)
    # A^T K_c A = diag(lam (1/N - sigma2/lam)) = diag(lam/N - sigma2)
    K_c = base.Phi_c @ base.Phi_c.T
    assert_rel(A.T @ K_c @ A, np.diag(base.lam[:2] / N - sigma2), RTOL, "A^T K_c A")
    check_agreement(primal, dual, fmap, X, _data(rng, 5, 3), True)


def test_mode_mle_and_default(poly_setting, rng):
    X, fmap, _ = poly_setting
    primal, dual = fit_pair(fmap, X, n_components="mle")
    assert primal.n_components_ == dual.n_components_ >= 1
    check_agreement(primal, dual, fmap, X, _data(rng, 5, 3), True)
    # n_components=None and no sigma2 means q = 2
    assert DualPPCA(kernel=fmap.as_kernel()).fit(X).n_components_ == 2


# ----------------------------------------------------------------------------- dense vs partial solvers


def _compare_models(a, b, Xt, tol, score=True):
    assert a.n_components_ == b.n_components_ and a.rank_ == b.rank_
    assert a.sigma2_ == pytest.approx(b.sigma2_, rel=tol)
    assert_rel(a.eigenvalues_, b.eigenvalues_, tol, "eigenvalues")
    Ha, Hb = np_(a.transform(Xt)), np_(b.transform(Xt))
    assert_rel(Hb * column_signs(Ha, Hb), Ha, tol, "transform")
    if score:  # needs the full spectrum: an O(N^3) eigendecomposition after a partial fit
        assert_rel(b.score_samples(Xt), a.score_samples(Xt), tol, "score_samples")


@pytest.mark.parametrize("name", ["identity", "identity-wide", "poly"])
def test_partial_solver_matches_dense_small(rng, name):
    factory, N, D = MAPS[name]
    X, Xt = _data(rng, N, D), _data(rng, 5, D)
    fmap = factory().fit(X)
    dense_p, dense_d = fit_pair(fmap, X, n_components=3, eigen_solver="dense")
    part_p, part_d = fit_pair(fmap, X, n_components=3, eigen_solver="partial", random_state=0)
    assert part_p.eigen_solver_ == part_d.eigen_solver_ == "partial"
    assert dense_d.eigen_solver_ == "dense"
    _compare_models(dense_p, part_p, Xt, 1e-9)
    _compare_models(dense_d, part_d, Xt, 1e-9)
    S_dense = np_(dense_d.get_covariance())
    assert_rel(part_d.kernel_marginal("fast").covariance_matrix, S_dense, 1e-9, "S from the fast factor")
    assert_rel(part_d.get_covariance(), S_dense, 1e-9, "S")
    cond_cov = part_d.kernel_conditional(np.ones(3)).covariance_matrix[0]
    assert_rel(cond_cov, dense_d.sigma2_ * np_(dense_d._gram().matrix), 1e-9, "sigma2 K_c")
    check_agreement(part_p, part_d, fmap, X, Xt, True)


def test_partial_rank_of_centered_gram_is_at_most_n_minus_1():
    """Regression: LAPACK's pivoted Cholesky of K_c often keeps a rounding-error pivot along the exact
    null vector 1 (rank N instead of N - 1), which biased sigma2 and broke score_samples after a
    partial fit; the rank is capped at N - 1 and the sampling factor has that rank."""
    X = np.random.default_rng(1).normal(size=(40, 5))

    def rbf(A, B):
        return RBF(2.0).gram(A, B)

    dense = DualPPCA(3, kernel=rbf, eigen_solver="dense").fit(X)
    part = DualPPCA(3, kernel=rbf, eigen_solver="partial", random_state=0).fit(X)
    assert dense.rank_ == part.rank_ == 39
    _compare_models(dense, part, X[:5] + 0.1, 1e-9)
    assert int(torch.linalg.matrix_rank(part._gram_factor().sqrt())) == 39
    S = np_(dense.get_covariance())
    assert_rel(part.kernel_marginal("fast").covariance_matrix, S, 1e-9, "S (pivoted fast factor)")
    # uncentered: the rank may be N
    assert DualPPCA(3, kernel=rbf, eigen_solver="partial", center=False).fit(X).rank_ == 40


def test_auto_solver_switches_to_partial_for_large_n(rng):
    """N > 1000: "auto" uses Lanczos, and its Cholesky-certified rank agrees with the dense one
    for a built-in kernel and for the same kernel given as a callable.
    A full-rank kernel keeps the dense reference cheap (eigh of a low-rank 1100 x 1100 matrix is slow)."""
    N, D = 1010, 20  # above PARTIAL_MIN_SIZE, so "auto" uses Lanczos for q <= N / 10
    X, Xt = _data(rng, N, D), _data(rng, 6, D)
    kernel = RBF(6.0)
    dense = DualPPCA(3, kernel=kernel, eigen_solver="dense").fit(X)
    auto = DualPPCA(3, kernel=kernel, random_state=0).fit(X)
    via_callable = DualPPCA(3, kernel=lambda A, B: RBF(6.0).gram(A, B), random_state=0).fit(X)
    assert dense.eigen_solver_ == "dense"
    assert auto.eigen_solver_ == via_callable.eigen_solver_ == "partial"
    assert dense.rank_ == auto.rank_ == via_callable.rank_ == N - 1
    _compare_models(dense, auto, Xt, 1e-8, score=False)  # score after a partial fit: small tests
    assert via_callable.sigma2_ == pytest.approx(dense.sigma2_, rel=1e-9)
    assert_rel(via_callable.transform(Xt), auto.transform(Xt), 1e-9, "transform (callable kernel)")
    S = np_(dense.get_covariance())
    assert_rel(auto.kernel_marginal("fast").covariance_matrix, S, 1e-8, "S (fast factor, Cholesky of K)")
    assert_rel(via_callable.kernel_marginal("fast").covariance_matrix, S, 1e-8, "S (fast factor, callable)")


def test_singular_rbf_rank_is_structural():
    """Smooth kernels on low-dimensional data have numerically singular Gram matrices: here 155 of the
    299 eigenvalues of K_c are below its rounding level in float64 (247 in float32). Counting them made
    ``r`` (and sigma2) depend on the solver and the dtype (partial 194 vs dense 199, float32 far lower);
    the rank is now the structural ``N - 1`` of a strictly positive definite kernel on distinct points
    for every solver and dtype, and sigma2 agrees to the rounding level of the compared quantities."""
    X = np.random.default_rng(0).normal(size=(300, 2))
    N, q = 300, 5
    fits = {
        (solver, dtype): DualPPCA(q, kernel=RBF(1.0), eigen_solver=solver, dtype=dtype, random_state=0).fit(X)
        for solver in ("dense", "partial")
        for dtype in ("float64", "float32")
    }
    dense = fits["dense", "float64"]
    assert {m.rank_ for m in fits.values()} == {N - 1}
    assert len(dense._full_eigen()[0]) < 200  # numerically singular: the test is about that case
    # sigma2 = (trace - sum of q eigenvalues) / (N (r - q)): the trace and each eigenvalue carry at most the
    # rounding level tol = N eps max(lam_1, 4 max|K|) of K_c (max|K| = 1 for the RBF kernel).
    for (solver, dtype), model in fits.items():
        eps = np.finfo(dtype).eps
        tol = N * eps * max(float(dense.eigenvalues_[0]), 4.0)
        assert abs(model.sigma2_ - dense.sigma2_) <= (q + 1) * tol / (N * (N - 1 - q)), (solver, dtype)
    # The densities live on the numerically resolved part of H_E and accept their own samples.
    part = fits["partial", "float64"]
    for model in (dense, part):
        for dist in (model.kernel_conditional(np.zeros((2, q))), model.kernel_marginal()):
            assert torch.isfinite(dist.log_prob(dist.rsample((4,)))).all()
    # Both solvers resolve the same directions of the same K_c: the scores differ only through the top-q
    # eigenvalues (Lanczos vs eigh, relative error ~ N eps lam_1 / lam_q ~ 1e-12 here).
    assert_rel(part.score_samples(X[:5] + 0.1), dense.score_samples(X[:5] + 0.1), 1e-9, "score_samples")


# ----------------------------------------------------------------------------- float32


@pytest.mark.parametrize("name", ["identity", "poly", "rff-wide"])
def test_float32_agrees_with_float64(rng, name):
    factory, N, D = MAPS[name]
    X, Xt = _data(rng, N, D), _data(rng, 5, D)
    fmap = factory().fit(X)
    p64, d64 = fit_pair(fmap, X, n_components=2)
    p32, d32 = fit_pair(fmap, X, n_components=2, dtype=torch.float32)
    assert np_(d32.transform(Xt)).dtype == np.float32
    assert d32.A_.dtype == torch.float32 and p32.W_.dtype == torch.float32
    for a, b in [(p64, p32), (d64, d32), (p64, d32)]:
        assert b.rank_ == a.rank_
        assert b.sigma2_ == pytest.approx(a.sigma2_, rel=1e-3)
        assert_rel(b.eigenvalues_.double(), a.eigenvalues_, 1e-4, "eigenvalues float32")
        Ha, Hb = np_(a.transform(Xt)), np_(b.transform(Xt)).astype(float)
        assert_rel(Hb * column_signs(Ha, Hb), Ha, 1e-3, "transform float32")
        assert_rel(np_(b.score_samples(Xt)).astype(float), np_(a.score_samples(Xt)), 1e-3, "score float32")
