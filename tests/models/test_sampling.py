"""Monte-Carlo checks of the samplers against the closed-form moments.

Tolerances come from the Monte-Carlo standard error of each estimate: for zero-mean
Gaussian draws ``x`` with covariance ``S``, the entry ``mean(x_i x_j)`` has standard
error ``sqrt((S_ii S_jj + S_ij^2) / n)``; we allow ``Z`` standard errors, with ``Z``
chosen so that a correct sampler fails with probability < 1e-4 over all entries
(Bonferroni over at most a few hundred entries); the seeds are fixed anyway.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics.pairwise import rbf_kernel

from kppca import DualPPCA, PrimalPPCA

Z = 5.0
N_DRAWS = 40_000


def np_(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def assert_second_moment(samples, mean, cov, z=Z):
    """Sample mean and covariance within z Monte-Carlo standard errors of the true ones, entrywise."""
    n = samples.shape[0]
    var = np.clip(np.diag(cov), 0, None)
    dev = samples - mean
    mean_err = np.abs(dev.mean(0))
    assert np.all(mean_err <= z * np.sqrt(var / n) + 1e-12), f"mean off by {mean_err.max():.3g}"
    emp = dev.T @ dev / n  # true mean known: no Bessel correction
    se = np.sqrt((np.outer(var, var) + cov**2) / n)
    ratio = np.abs(emp - cov) / (se + 1e-300)
    ok = (np.abs(emp - cov) <= z * se) | (se < 1e-14)
    assert np.all(ok), f"covariance off by {ratio[~ok].max():.2f} standard errors"


def assert_whitened(samples, mean, cov, z=Z):
    """Stronger check: whiten with the reference covariance (on its range); the result must have identity
    covariance to within z standard errors (entry (i, j) has standard error sqrt((1 + delta_ij) / n)),
    and nothing may fall outside range(cov)."""
    n = samples.shape[0]
    vals, vecs = np.linalg.eigh(cov)
    keep = vals > cov.shape[0] * np.finfo(float).eps * vals.max()
    U, s = vecs[:, keep], np.sqrt(vals[keep])
    dev = samples - mean
    outside = dev - (dev @ U) @ U.T
    assert np.abs(outside).max() <= 1e-8 * np.abs(dev).max(), "samples leave range(cov)"
    y = dev @ U / s
    emp = y.T @ y / n
    k = y.shape[1]
    se = np.sqrt((1.0 + np.eye(k)) / n)
    ratio = np.abs(emp - np.eye(k)) / se
    assert ratio.max() <= z, f"whitened covariance off by {ratio.max():.2f} standard errors"


def reference_S(X, bandwidth, q, sigma2, center=True):
    """S = E diag(c) E^T from an independent scikit-learn + numpy computation of K_c."""
    N = X.shape[0]
    K = rbf_kernel(X, gamma=1.0 / (2 * bandwidth**2))
    M = np.eye(N) - np.ones((N, N)) / N if center else np.eye(N)
    lam, E = np.linalg.eigh(M @ K @ M)
    lam, E = lam[::-1], E[:, ::-1]
    r = int((lam > N * np.finfo(float).eps * lam[0]).sum())
    c = np.concatenate([lam[:q] ** 2 / N, sigma2 * lam[q:r]])
    return (E[:, :r] * c) @ E[:, :r].T, M @ K @ M


@pytest.fixture
def small_X(rng):
    return rng.normal(size=(20, 2))


@pytest.mark.parametrize("solver", ["dense", "partial"])
@pytest.mark.parametrize("factor", ["fast", "symmetric"])
def test_sample_kernel_moments(small_X, factor, solver):
    from kppca.kernels import RBF

    model = DualPPCA(3, kernel=RBF(1.0), eigen_solver=solver, random_state=0).fit(small_X)
    S, _ = reference_S(small_X, 1.0, 3, model.sigma2_)
    draws = np_(model.sample_kernel(N_DRAWS, random_state=11, factor=factor))
    assert draws.shape == (N_DRAWS, 20) and draws.dtype == np.float64
    assert_second_moment(draws, np.zeros(20), S)
    assert_whitened(draws, np.zeros(20), S)
    # centered kernel vectors sum to zero
    np.testing.assert_allclose(draws.sum(1), 0.0, atol=1e-10 * np.abs(draws).max())


def test_sample_kernel_uncentered_moments(small_X):
    from kppca.kernels import RBF

    model = DualPPCA(3, kernel=RBF(1.0), center=False).fit(small_X)
    S, _ = reference_S(small_X, 1.0, 3, model.sigma2_, center=False)
    for factor in ("fast", "symmetric"):
        draws = np_(model.sample_kernel(N_DRAWS, random_state=5, factor=factor))
        assert_second_moment(draws, np.zeros(20), S)
        assert_whitened(draws, np.zeros(20), S)
    assert np.abs(draws.sum(1)).mean() > 1e-3  # no centering constraint


def test_the_two_factors_are_square_roots_of_S(small_X):
    from kppca.kernels import RBF

    model = DualPPCA(3, kernel=RBF(1.0)).fit(small_X)
    S, _ = reference_S(small_X, 1.0, 3, model.sigma2_)
    B = np_(model.sampling_factor("symmetric"))
    F = np_(model.sampling_factor("fast"))
    np.testing.assert_allclose(B, B.T, atol=1e-12)  # the paper's symmetric square root
    np.testing.assert_allclose(B @ B, S, atol=1e-10)
    np.testing.assert_allclose(F @ F.T, S, atol=1e-10)
    with pytest.raises(ValueError, match="factor='chol' is unknown"):
        model.sampling_factor("chol")


@pytest.mark.parametrize("solver", ["dense", "partial"])
def test_kernel_conditional_samples(small_X, solver):
    from kppca.kernels import RBF

    model = DualPPCA(3, kernel=RBF(1.0), eigen_solver=solver, random_state=0).fit(small_X)
    _, K_c = reference_S(small_X, 1.0, 3, model.sigma2_)
    h = np.array([0.5, -1.0, 2.0])
    cond = model.kernel_conditional(h)
    torch.manual_seed(3)
    draws = np_(cond.rsample((N_DRAWS,)))[:, 0, :]
    loc = K_c @ np_(model.A_) @ h
    assert_second_moment(draws, loc, model.sigma2_ * K_c)
    assert_whitened(draws, loc, model.sigma2_ * K_c)


def test_random_state_reproducibility(small_X):
    model = DualPPCA(2, kernel="rbf").fit(small_X)
    a = model.sample_kernel(5, random_state=3)
    np.testing.assert_array_equal(a, model.sample_kernel(5, random_state=3))
    assert not np.allclose(a, model.sample_kernel(5, random_state=4))
    g1, g2 = np.random.default_rng(9), np.random.default_rng(9)
    np.testing.assert_array_equal(model.sample_kernel(5, random_state=g1), model.sample_kernel(5, random_state=g2))
    t1, t2 = torch.Generator().manual_seed(2), torch.Generator().manual_seed(2)
    np.testing.assert_array_equal(model.sample_kernel(5, random_state=t1), model.sample_kernel(5, random_state=t2))
    # None draws fresh entropy
    assert not np.allclose(model.sample_kernel(5), model.sample_kernel(5))
    with pytest.raises(ValueError, match=r"n must be an int in the range \[1, inf\)"):
        model.sample_kernel(0)
    with pytest.raises(TypeError, match="random_state"):
        model.sample_kernel(2, random_state="seed")


@pytest.mark.parametrize("kernel", ["rbf", "linear", "callable"])
def test_partial_fit_samples_do_not_depend_on_what_was_computed_since(small_X, kernel):
    """Regression: after a partial fit, computing the full spectrum (score_samples) used to switch the
    sampling factor to the eigen-factor, so the same random_state gave different samples."""
    from kppca.kernels import RBF

    kern = (lambda A, B: RBF(1.0).gram(A, B)) if kernel == "callable" else kernel
    model = DualPPCA(1, kernel=kern, eigen_solver="partial", random_state=0).fit(small_X)
    a = model.sample_kernel(4, random_state=3)
    torch.manual_seed(0)
    c1 = model.kernel_conditional(np.ones(1)).rsample((3,))
    model.score_samples(small_X)  # computes and caches every eigenpair
    assert model._gram().has_eigh
    np.testing.assert_array_equal(model.sample_kernel(4, random_state=3), a)
    torch.manual_seed(0)
    assert torch.equal(model.kernel_conditional(np.ones(1)).rsample((3,)), c1)


def test_sample_kernel_output_type_follows_fit_input(small_X):
    model = DualPPCA(2, kernel="rbf").fit(torch.tensor(small_X))
    out = model.sample_kernel(3, random_state=0)
    assert isinstance(out, torch.Tensor) and out.shape == (3, 20)


# ----------------------------------------------------------------------------- primal


def test_sample_features_moments(structured_data):
    X = structured_data
    model = PrimalPPCA(2).fit(X)
    W = np_(model.W_)
    cov = W @ W.T + model.sigma2_ * np.eye(6)  # r = d = 6: H_E is the whole space
    draws = np_(model.sample_features(N_DRAWS, random_state=1))
    assert draws.shape == (N_DRAWS, 6)
    assert_second_moment(draws, X.mean(0), cov)
    assert_whitened(draws, X.mean(0), cov)
    np.testing.assert_array_equal(draws[:3], np_(model.sample_features(N_DRAWS, random_state=1))[:3])


def test_sample_counts_accept_numpy_integers(structured_data):
    primal = PrimalPPCA(2).fit(structured_data)
    dual = DualPPCA(2).fit(structured_data)
    assert np_(primal.sample_features(np.int64(3), random_state=0)).shape == (3, 6)
    assert np_(dual.sample_kernel(np.int32(3), random_state=0)).shape == (3, 40)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match=r"n must be an int in the range \[1, inf\)"):
            primal.sample_features(bad)
        with pytest.raises(ValueError, match=r"n must be an int in the range \[1, inf\)"):
            dual.sample_kernel(bad)


def test_sample_features_stay_in_H_E_when_d_exceeds_r(rng):
    X = rng.normal(size=(12, 30))
    model = PrimalPPCA(2).fit(X)
    assert model.rank_ == 11
    Xc = X - X.mean(0)
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    P = Vt[:11].T @ Vt[:11]  # projector onto H_E = span{phi_i - m}
    W = np_(model.W_)
    cov = P @ (W @ W.T + model.sigma2_ * np.eye(30)) @ P
    draws = np_(model.sample_features(N_DRAWS, random_state=2))
    dev = draws - X.mean(0)
    np.testing.assert_allclose(dev - dev @ P, 0.0, atol=1e-9)
    assert_second_moment(draws, X.mean(0), cov)
    assert_whitened(draws, X.mean(0), cov)


def test_latent_posterior_by_simulating_the_generative_model(structured_data):
    """Draw (h, phi) from the joint model; E[h | phi] = transform(phi) and the residual covariance is the
    posterior covariance N sigma2 diag(1/lam), independent of phi."""
    X = structured_data
    model = PrimalPPCA(2).fit(X)
    W, m, s2 = np_(model.W_), np_(model.mean_), model.sigma2_
    gen = np.random.default_rng(7)
    h = gen.normal(size=(N_DRAWS, 2))
    phi = h @ W.T + m + np.sqrt(s2) * gen.normal(size=(N_DRAWS, 6))
    post = model.latent_posterior(phi)
    resid = h - np_(post.mean)
    cov = np_(model.latent_covariance_)
    np.testing.assert_allclose(np_(post.covariance_matrix[0]), cov, rtol=1e-12)
    assert_second_moment(resid, np.zeros(2), cov)
    assert_whitened(resid, np.zeros(2), cov)
    # the residual is uncorrelated with the posterior mean (the mean is the regression E[h | phi])
    hm = np_(post.mean)
    cross = resid.T @ hm / N_DRAWS
    se = np.sqrt(np.outer(np.diag(cov), (hm**2).mean(0)) / N_DRAWS)
    assert np.all(np.abs(cross) <= Z * se)
    # the posterior draws have the same moments (pyro's sampler with our parameters)
    torch.manual_seed(0)
    hs = np_(model.latent_posterior(X[:1]).sample((N_DRAWS,)))[:, 0, :]
    assert_second_moment(hs, np_(model.transform(X[:1]))[0], cov)
