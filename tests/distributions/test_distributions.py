"""DegenerateMultivariateNormal against scipy's singular multivariate normal, alone and from the dual model."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multivariate_normal
from sklearn.metrics.pairwise import rbf_kernel

from kppca import DualPPCA
from kppca.distributions import DegenerateMultivariateNormal
from kppca.kernels import RBF, Linear


def np_(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def random_factor(gen, n, m):
    """A well-conditioned factor F (n, m) of rank min(n, m): U diag(s) V^T with s in [0.5, 2]."""
    r = min(n, m)
    U, _ = np.linalg.qr(gen.normal(size=(n, r)))
    V, _ = np.linalg.qr(gen.normal(size=(m, r)))
    return U @ np.diag(gen.uniform(0.5, 2.0, r)) @ V.T


# ----------------------------------------------------------------------------- the distribution alone


@settings(max_examples=25, deadline=None, database=None)
@given(n=st.integers(2, 7), m=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_log_prob_matches_scipy_for_random_factors(n, m, seed):
    gen = np.random.default_rng(seed)
    F = random_factor(gen, n, m)
    loc = gen.normal(size=n)
    values = loc + gen.normal(size=(5, m)) @ F.T  # on the support
    d = DegenerateMultivariateNormal(torch.tensor(loc), torch.tensor(F))
    ref = multivariate_normal(loc, F @ F.T, allow_singular=True)
    assert d.rank == min(n, m)
    np.testing.assert_allclose(np_(d.log_prob(torch.tensor(values))), ref.logpdf(values), rtol=1e-9, atol=1e-9)
    assert float(d.entropy()) == pytest.approx(ref.entropy(), rel=1e-9, abs=1e-9)


def test_basis_constructor_equals_factor_constructor(rng):
    F = random_factor(rng, 6, 3)
    U, s, _ = np.linalg.svd(F, full_matrices=False)
    loc = torch.tensor(rng.normal(size=6))
    a = DegenerateMultivariateNormal(loc, torch.tensor(F))
    b = DegenerateMultivariateNormal(loc, basis=torch.tensor(U), basis_scale=torch.tensor(s))
    values = torch.tensor(loc.numpy() + rng.normal(size=(4, 3)) @ F.T)
    np.testing.assert_allclose(np_(b.log_prob(values)), np_(a.log_prob(values)), rtol=1e-12)
    np.testing.assert_allclose(np_(b.covariance_matrix), F @ F.T, atol=1e-12)
    np.testing.assert_allclose(np_(a.variance), np.diag(F @ F.T), rtol=1e-12)
    assert torch.equal(a.mean, loc) and torch.equal(a.mode, loc)


@pytest.fixture
def rank2_in_r5(rng):
    F = random_factor(rng, 5, 2)
    loc = rng.normal(size=5)
    # a unit vector orthogonal to range(F)
    Q, _ = np.linalg.qr(np.column_stack([F, rng.normal(size=5)]))
    return loc, F, Q[:, 2]


def test_off_support_is_minus_inf_or_error(rank2_in_r5, rng):
    loc, F, off = rank2_in_r5
    on = loc + F @ rng.normal(size=2)
    values = torch.tensor(np.stack([on, on + 0.1 * off, on + 1e-3 * off]))
    lenient = DegenerateMultivariateNormal(torch.tensor(loc), torch.tensor(F), validate_args=False)
    out = np_(lenient.log_prob(values))
    assert np.isfinite(out[0]) and np.all(np.isneginf(out[1:]))
    scipy_out = multivariate_normal(loc, F @ F.T, allow_singular=True).logpdf(np_(values))
    np.testing.assert_array_equal(np.isneginf(out), np.isneginf(scipy_out))
    strict = DegenerateMultivariateNormal(torch.tensor(loc), torch.tensor(F), validate_args=True)
    assert np.isfinite(float(strict.log_prob(values[0])))
    with pytest.raises(ValueError, match="off the support"):
        strict.log_prob(values)


def test_shapes_expand_and_rsample(rank2_in_r5):
    loc, F, _ = rank2_in_r5
    Ft = torch.tensor(F)
    batch_loc = torch.tensor(np.stack([loc, loc + F[:, 0], loc - F[:, 1]]))  # batch (3,)
    d = DegenerateMultivariateNormal(batch_loc, Ft)
    assert d.batch_shape == (3,) and d.event_shape == (5,)
    torch.manual_seed(0)
    x = d.rsample((7,))
    assert x.shape == (7, 3, 5)
    assert d.log_prob(x).shape == (7, 3)
    assert d.covariance_matrix.shape == (3, 5, 5) and d.variance.shape == (3, 5)
    assert d.entropy().shape == (3,)
    # samples lie on loc + range(F)
    resid = (x - batch_loc) - (x - batch_loc) @ torch.linalg.pinv(Ft).T @ Ft.T
    assert float(resid.abs().max()) < 1e-12
    # reproducible through torch's global generator
    torch.manual_seed(0)
    assert torch.equal(d.rsample((7,)), x)

    single = DegenerateMultivariateNormal(torch.tensor(loc), Ft)
    e = single.expand((4, 2))
    assert e.batch_shape == (4, 2) and e.event_shape == (5,)
    v = single.rsample((4, 2))
    np.testing.assert_allclose(np_(e.log_prob(v)), np_(single.log_prob(v)), rtol=1e-13)
    assert e.rsample().shape == (4, 2, 5)
    assert e.entropy().shape == (4, 2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(scale_factor=torch.ones(4, 2)), "scale_factor must have shape"),
        (dict(basis=torch.eye(5)[:, :2]), "basis and basis_scale must be given together"),
        (
            dict(basis=torch.eye(5)[:, :2], basis_scale=torch.tensor([1.0, 0.0], dtype=torch.float64)),
            "strictly positive",
        ),
        (dict(basis=torch.eye(5)[:, :2], basis_scale=torch.ones(3, dtype=torch.float64)), "basis must be"),
        (dict(), "give scale_factor"),
    ],
)
def test_constructor_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DegenerateMultivariateNormal(torch.zeros(5, dtype=torch.float64), **kwargs)


def test_scalar_loc_rejected():
    with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
        DegenerateMultivariateNormal(torch.tensor(0.0), torch.ones(1, 1))


# ----------------------------------------------------------------------------- distributions of the dual model


def _reference_gram(X, bandwidth):
    """K_c and its eigen-decomposition computed independently with scikit-learn + numpy."""
    N = X.shape[0]
    M = np.eye(N) - np.ones((N, N)) / N
    K_c = M @ rbf_kernel(X, gamma=1.0 / (2 * bandwidth**2)) @ M
    lam, E = np.linalg.eigh(K_c)
    return K_c, lam[::-1], E[:, ::-1]


@pytest.fixture(params=["dense", "partial"])
def rbf_model(request, rng):
    X = rng.normal(size=(30, 3))
    model = DualPPCA(3, kernel=RBF(1.2), eigen_solver=request.param, random_state=0).fit(X)
    return model, X, rng.normal(size=(5, 3))


@pytest.mark.parametrize("factor", ["fast", "symmetric"])
def test_kernel_marginal_log_prob_matches_scipy(rbf_model, factor):
    model, X, Xt = rbf_model
    N, q, s2 = 30, model.n_components_, model.sigma2_
    K_c, lam, E = _reference_gram(X, 1.2)
    r = model.rank_
    c = np.concatenate([lam[:q] ** 2 / N, s2 * lam[q:r]])
    S = (E[:, :r] * c) @ E[:, :r].T
    ref = multivariate_normal(np.zeros(N), S, allow_singular=True)
    marginal = model.kernel_marginal(factor)
    assert marginal.batch_shape == () and marginal.event_shape == (N,)
    assert marginal.rank == r == N - 1
    kc = torch.as_tensor(model.centered_kernel(Xt))  # genuine kernel vectors: on range(K_c)
    samples = torch.as_tensor(model.sample_kernel(4, random_state=0, factor=factor))
    values = torch.cat([kc, samples])
    np.testing.assert_allclose(np_(marginal.log_prob(values)), ref.logpdf(np_(values)), rtol=1e-8)
    assert float(marginal.entropy()) == pytest.approx(ref.entropy(), rel=1e-9)
    # a constant shift leaves range(K_c) = 1^perp: off the support
    with pytest.raises(ValueError, match="off the support"):
        marginal.log_prob(values + 1.0)
    marginal._validate_args = False
    assert np.all(np.isneginf(np_(marginal.log_prob(values + 1.0))))


def test_kernel_conditional_log_prob_matches_scipy(rbf_model):
    model, X, Xt = rbf_model
    N = 30
    K_c, _, _ = _reference_gram(X, 1.2)
    h = np_(model.transform(Xt))
    cond = model.kernel_conditional(h)
    assert cond.batch_shape == (5,) and cond.event_shape == (N,)
    loc_ref = h @ (K_c @ np_(model.A_)).T
    np.testing.assert_allclose(np_(cond.mean), loc_ref, atol=1e-10)
    kc = np_(model.centered_kernel(Xt))
    lp = np_(cond.log_prob(torch.tensor(kc)))
    for j in range(5):
        ref = multivariate_normal(loc_ref[j], model.sigma2_ * K_c, allow_singular=True).logpdf(kc[j])
        assert lp[j] == pytest.approx(ref, rel=1e-8)
    # a single code (q,) gives batch shape (1,)
    assert model.kernel_conditional(h[0]).batch_shape == (1,)
    torch.manual_seed(1)
    assert cond.rsample((2,)).shape == (2, 5, N)


def test_low_rank_kernel_distributions(rng):
    """Linear kernel with D = 4 < N: range(K_c) has dimension 4, every other direction is off the support."""
    X, Xt = rng.normal(size=(25, 4)), rng.normal(size=(3, 4))
    for solver in ("dense", "partial"):
        model = DualPPCA(2, kernel=Linear(), eigen_solver=solver, random_state=0).fit(X)
        Xc = X - X.mean(0)
        K_c = Xc @ Xc.T
        lam, E = np.linalg.eigh(K_c)
        lam, E = lam[::-1][:4], E[:, ::-1][:, :4]
        c = np.concatenate([lam[:2] ** 2 / 25, model.sigma2_ * lam[2:]])
        S = (E * c) @ E.T
        kc = np_(model.centered_kernel(Xt))
        for factor in ("fast", "symmetric"):
            marginal = model.kernel_marginal(factor)
            assert marginal.rank == 4
            ref = multivariate_normal(np.zeros(25), S, allow_singular=True).logpdf(kc)
            np.testing.assert_allclose(np_(marginal.log_prob(torch.tensor(kc))), ref, rtol=1e-8)
        cond = model.kernel_conditional(np.zeros(2))
        ref = multivariate_normal(np.zeros(25), model.sigma2_ * K_c, allow_singular=True).logpdf(kc)
        np.testing.assert_allclose(np_(cond.log_prob(torch.tensor(kc))), ref, rtol=1e-8)
        off = torch.tensor(rng.normal(size=25))
        with pytest.raises(ValueError, match="off the support"):
            cond.log_prob(off)


def test_latent_prior_and_posterior_objects(rbf_model):
    model, _, Xt = rbf_model
    prior = model.latent_prior()
    q = model.n_components_
    assert prior.event_shape == (q,) and torch.equal(prior.covariance_matrix, torch.eye(q, dtype=torch.float64))
    post = model.latent_posterior(Xt)
    assert post.batch_shape == (5,) and post.event_shape == (q,)
    lam = np_(model.eigenvalues_)
    np.testing.assert_allclose(np_(post.covariance_matrix[2]), np.diag(30 * model.sigma2_ / lam), rtol=1e-12)
    np.testing.assert_allclose(np_(post.mean), np_(model.transform(Xt)), rtol=1e-12)
    np.testing.assert_allclose(np_(model.latent_covariance_), np.diag(30 * model.sigma2_ / lam), rtol=1e-12)
    h = post.mean[0]
    ref = multivariate_normal(np_(post.mean[0]), np.diag(30 * model.sigma2_ / lam)).logpdf(np_(h) + 0.1)
    assert float(post.log_prob(h + 0.1)[0]) == pytest.approx(ref, rel=1e-12)
    assert math.isfinite(float(prior.log_prob(h)))


# ----------------------------------------------------------------------------- KL divergences

from torch.distributions import MultivariateNormal, kl_divergence  # noqa: E402

EPS64 = float(np.finfo(np.float64).eps)


def kl_pseudo_inverse(loc_p, S_p, loc_q, S_q, r):
    """Independent closed form: 1/2 [tr(S_q^+ S_p) + d^T S_q^+ d - r + log pdet S_q - log pdet S_p] (numpy eigh)."""
    def pinv_logpdet(S):
        w, V = np.linalg.eigh(S)
        keep = w > w.max() * 1e-10  # the spectra below are in [0.25, 4] or exactly 0 up to rounding
        return (V[:, keep] / w[keep]) @ V[:, keep].T, np.log(w[keep]).sum()

    Sq_pinv, logpdet_q = pinv_logpdet(S_q)
    _, logpdet_p = pinv_logpdet(S_p)
    d = loc_p - loc_q
    return 0.5 * (np.trace(Sq_pinv @ S_p) + d @ Sq_pinv @ d - r + logpdet_q - logpdet_p)


def same_support_pair(gen, n, r, batch=()):
    """Two degenerate normals on one r-dimensional affine subspace of R^n (different factors and means)."""
    U, _ = np.linalg.qr(gen.normal(size=(n, r)))
    F_p = U @ random_factor(gen, r, r + 2)  # any factors with range(F) = range(U)
    F_q = U @ random_factor(gen, r, r)
    loc_q = gen.normal(size=n)
    loc_p = loc_q + gen.normal(size=batch + (r,)) @ U.T
    return loc_p, F_p, loc_q, F_q


@pytest.mark.parametrize("n, r", [(6, 3), (5, 5), (4, 1)])
def test_kl_degenerate_matches_the_pseudo_inverse_formula(rng, n, r):
    loc_p, F_p, loc_q, F_q = same_support_pair(rng, n, r)
    p = DegenerateMultivariateNormal(torch.tensor(loc_p), torch.tensor(F_p))
    q = DegenerateMultivariateNormal(torch.tensor(loc_q), torch.tensor(F_q))
    got = float(kl_divergence(p, q))
    ref = kl_pseudo_inverse(loc_p, F_p @ F_p.T, loc_q, F_q @ F_q.T, r)
    # Singular values of the factors are in [0.5, 2]: the covariances have condition number <= 16 on the
    # support, so both computations are backward stable to ~ n * 16 * eps relative to the terms (each O(n)).
    assert got == pytest.approx(ref, abs=100 * n * 16 * EPS64 * n * max(1.0, abs(ref)))
    assert got > 0
    assert float(kl_divergence(p, p)) == pytest.approx(0.0, abs=100 * n * 16 * EPS64 * n)


def test_kl_degenerate_matches_a_monte_carlo_estimate(rng):
    n, r = 7, 3
    loc_p, F_p, loc_q, F_q = same_support_pair(rng, n, r)
    p = DegenerateMultivariateNormal(torch.tensor(loc_p), torch.tensor(F_p))
    q = DegenerateMultivariateNormal(torch.tensor(loc_q), torch.tensor(F_q))
    torch.manual_seed(0)
    x = p.sample((20000,))
    log_ratio = (p.log_prob(x) - q.log_prob(x)).numpy()
    assert np.isfinite(log_ratio).all()  # both densities are w.r.t. the same r-dimensional Lebesgue measure
    estimate, se = log_ratio.mean(), log_ratio.std(ddof=1) / math.sqrt(len(log_ratio))
    # 5 standard errors: a correct formula fails with probability < 1e-6 (CLT; 20,000 draws).
    assert abs(float(kl_divergence(p, q)) - estimate) < 5 * se


def test_kl_full_rank_equals_torch_multivariate_normal(rng):
    n = 5
    F, G = random_factor(rng, n, n), random_factor(rng, n, n + 3)
    m1, m2 = rng.normal(size=n), rng.normal(size=n)
    mvn_p = MultivariateNormal(torch.tensor(m1), covariance_matrix=torch.tensor(F @ F.T))
    mvn_q = MultivariateNormal(torch.tensor(m2), covariance_matrix=torch.tensor(G @ G.T))
    dp = DegenerateMultivariateNormal(torch.tensor(m1), torch.tensor(F))
    dq = DegenerateMultivariateNormal(torch.tensor(m2), torch.tensor(G))
    ref = float(kl_divergence(mvn_p, mvn_q))  # torch's own closed form
    tol = 100 * n * 16 * EPS64 * n * max(1.0, ref)  # condition numbers <= 16, as above
    for a, b in [(dp, dq), (dp, mvn_q), (mvn_p, dq)]:
        assert float(kl_divergence(a, b)) == pytest.approx(ref, abs=tol), (type(a), type(b))


def test_kl_is_infinite_when_the_supports_differ(rng):
    n, r = 6, 3
    loc_p, F_p, loc_q, F_q = same_support_pair(rng, n, r)
    q = DegenerateMultivariateNormal(torch.tensor(loc_q), torch.tensor(F_q))
    # a lower rank inside the same subspace: q gives p's support measure zero
    lower = DegenerateMultivariateNormal(torch.tensor(loc_p), torch.tensor(F_p[:, :1] @ np.ones((1, 2))))
    assert lower.rank == 1
    # the same rank, another subspace
    other = DegenerateMultivariateNormal(torch.tensor(loc_q), torch.tensor(random_factor(rng, n, r)))
    # the same directions, the mean moved off q's subspace
    U = np.linalg.svd(F_q, full_matrices=False)[0]
    normal = rng.normal(size=n)
    normal -= U @ (U.T @ normal)
    shifted = DegenerateMultivariateNormal(torch.tensor(loc_q + normal), torch.tensor(F_p))
    for p in (lower, other, shifted):
        assert math.isinf(float(kl_divergence(p, q))) and math.isinf(float(kl_divergence(q, p)))
    # a full-rank normal against a degenerate one, both ways
    full = MultivariateNormal(torch.tensor(loc_q), covariance_matrix=torch.eye(n, dtype=torch.float64))
    assert math.isinf(float(kl_divergence(full, q))) and math.isinf(float(kl_divergence(q, full)))


def test_kl_batches_broadcast_and_mark_off_support_means(rng):
    n, r = 5, 2
    loc_p, F_p, loc_q, F_q = same_support_pair(rng, n, r, batch=(4,))
    U = np.linalg.svd(F_q, full_matrices=False)[0]
    off = rng.normal(size=n)
    off -= U @ (U.T @ off)
    loc_p[2] += off / np.linalg.norm(off)  # one member of the batch off the subspace
    p = DegenerateMultivariateNormal(torch.tensor(loc_p), torch.tensor(F_p))
    q = DegenerateMultivariateNormal(torch.tensor(loc_q), torch.tensor(F_q))
    kl = kl_divergence(p, q)
    assert kl.shape == (4,)
    for i in range(4):
        if i == 2:
            assert math.isinf(float(kl[i]))
        else:
            ref = kl_pseudo_inverse(loc_p[i], F_p @ F_p.T, loc_q, F_q @ F_q.T, r)
            assert float(kl[i]) == pytest.approx(ref, abs=100 * n * 16 * EPS64 * n * max(1.0, abs(ref)))


def test_kl_of_point_masses_and_batched_mvn_error():
    loc = torch.zeros(3, dtype=torch.float64)
    empty = torch.zeros(3, 0, dtype=torch.float64)
    here = DegenerateMultivariateNormal(loc, empty)
    there = DegenerateMultivariateNormal(loc + 1.0, empty)
    assert here.rank == 0
    assert float(kl_divergence(here, here)) == 0.0 and math.isinf(float(kl_divergence(here, there)))
    batched = MultivariateNormal(torch.zeros(2, 3, dtype=torch.float64),
                                 scale_tril=torch.eye(3, dtype=torch.float64).expand(2, 3, 3).clone())
    full = DegenerateMultivariateNormal(loc, torch.eye(3, dtype=torch.float64))
    with pytest.raises(NotImplementedError, match="batch of covariance"):
        kl_divergence(full, batched)
