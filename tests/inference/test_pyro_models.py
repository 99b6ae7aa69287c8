"""Pyro models of the latent codes: NUTS / SVI posteriors against the closed form, and the Bayesian variant."""

from __future__ import annotations

import warnings

import numpy as np
import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import MCMC, NUTS, SVI, Predictive, Trace_ELBO
from pyro.infer.autoguide import AutoMultivariateNormal
from pyro.optim import ClippedAdam
from pyro.poutine.util import site_is_subsample

from kppca import DualPPCA, PrimalPPCA
from kppca.inference import bayesian_model, bayesian_ppca_model, latent_model, subspace_coordinates
from kppca.kernels import RBF

warnings.filterwarnings("ignore", message=".*ArviZ is undergoing a major refactor.*")

# 4.5 standard errors: with at most ~100 simultaneous comparisons, a correct sampler
# exceeds it somewhere with probability ~100 * 7e-6 < 1e-3 (and the seeds are fixed).
Z_TOL = 4.5


def _data(n: int = 20, d: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


def _fitted(kind: str, X: np.ndarray):
    if kind == "primal":
        return PrimalPPCA(2).fit(X)
    return DualPPCA(2, kernel=RBF(1.5)).fit(X)


def _ppca_data(n: int, seed: int = 0, d: int = 6, q: int = 2, noise: float = 0.5) -> np.ndarray:
    """Draws from a PPCA with ``q`` strong directions in ``R^d`` (a fixed W for every ``n``)."""
    W = np.random.default_rng(123).normal(size=(d, q)) * 2.0
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, q)) @ W.T + noise * rng.normal(size=(n, d))


def _ess(x: np.ndarray) -> np.ndarray:
    """Effective sample size of each element of single-chain draws ``x`` (S, ...).

    Geyer's initial monotone sequence estimator on FFT autocorrelations (as in
    Stan / ArviZ, without chain splitting), written here so the test does not
    depend on the ArviZ version's array API.
    """
    x = np.asarray(x, dtype=np.float64)
    S = x.shape[0]
    flat = x.reshape(S, -1) - x.reshape(S, -1).mean(0)
    f = np.fft.rfft(flat, n=2 * S, axis=0)
    acov = np.fft.irfft(f * np.conj(f), axis=0)[:S] / S
    rho = acov / acov[0]
    ess = np.empty(flat.shape[1])
    for j in range(flat.shape[1]):
        pairs = rho[: S - S % 2, j].reshape(-1, 2).sum(1)  # Gamma_k = rho_2k + rho_2k+1
        k = np.argmax(pairs <= 0) if np.any(pairs <= 0) else len(pairs)
        gam = np.minimum.accumulate(pairs[:k])  # positive and monotone
        tau = -1.0 + 2.0 * gam.sum()
        ess[j] = S / max(tau, 1.0 / np.log10(S))
    return ess.reshape(x.shape[1:])


# ---------------------------------------------------------------------------- structure
@pytest.mark.parametrize("kind", ["primal", "dual"])
def test_latent_model_sites_and_embedding(kind):
    X = _data()
    model = _fitted(kind, X)
    fn = latent_model(model, X)
    trace = pyro.poutine.trace(fn).get_trace()
    N, q, r = model.n_samples_, model.n_components_, model.rank_
    obs_site = "y" if kind == "primal" else "u"
    emb_site = "phi" if kind == "primal" else "k_c"
    assert trace.nodes["h"]["value"].shape == (N, q)
    assert not trace.nodes["h"]["is_observed"]
    assert trace.nodes[obs_site]["is_observed"]
    assert trace.nodes[obs_site]["value"].shape == (N, r)
    # The only latent site is h: NUTS never sees the flat directions of the degenerate k_c.
    latent = [
        n for n, s in trace.nodes.items() if s["type"] == "sample" and not s["is_observed"] and not site_is_subsample(s)
    ]
    assert latent == ["h"]
    # The deterministic embedding returns the observed features / centered kernel vectors exactly.
    embedded = trace.nodes[emb_site]["value"]
    expected = model.features(X) - model.mean_.numpy() if kind == "primal" else model.centered_kernel(X)
    if kind == "primal":
        embedded = embedded - model.mean_
    np.testing.assert_allclose(embedded.numpy(), expected, atol=1e-10)


def test_dual_predictive_samples_live_on_range_of_Kc():
    X = _data(15)
    model = DualPPCA(2, kernel=RBF(1.5)).fit(X)
    fn = latent_model(model, num_points=4000)
    pyro.set_rng_seed(1)
    samples = Predictive(fn, num_samples=1)()
    kc = samples["k_c"][0]  # (4000, N)
    values, vectors = model._full_eigen()
    # Centered (rows sum to zero) and inside range(K_c): nothing outside the r eigen-directions.
    np.testing.assert_allclose(kc.sum(1).numpy(), 0.0, atol=1e-9)
    outside = kc - (kc @ vectors) @ vectors.T
    assert float(outside.abs().max()) < 1e-9
    # Marginal coordinates u = E_r^T k_c have the variances c_p of S = E diag(c) E^T.
    c = model.marginal_scales() ** 2
    var = (kc @ vectors).var(0)
    # Relative sd of a variance from n normal draws is sqrt(2 / n) ~ 0.022.
    np.testing.assert_allclose((var / c).numpy(), 1.0, atol=Z_TOL * np.sqrt(2 / 4000))


# ---------------------------------------------------------------------------- NUTS
@pytest.mark.parametrize("kind", ["primal", "dual"])
def test_nuts_latent_posterior_matches_closed_form(kind):
    X = _data(20)
    model = _fitted(kind, X)
    pyro.set_rng_seed(0)
    mcmc = MCMC(NUTS(latent_model(model, X)), warmup_steps=300, num_samples=300, disable_progbar=True)
    mcmc.run()
    h = mcmc.get_samples()["h"].numpy()  # (S, N, q)
    post = model.latent_posterior(X)
    mu, sd = post.mean.numpy(), post.stddev.numpy()

    # Means: Monte-Carlo standard error sd / sqrt(ESS), element by element.
    ess = _ess(h)
    z_mean = (h.mean(0) - mu) / (sd / np.sqrt(ess))
    assert np.abs(z_mean).max() < Z_TOL, np.abs(z_mean).max()

    # Variances: the estimator of E[(h - mu)^2 / sd^2] = 1 has sd sqrt(2 / ESS_sq) for a Gaussian,
    # with ESS_sq the effective size of the squared standardized deviations.
    sq = ((h - mu) / sd) ** 2
    ess_sq = _ess(sq)
    z_var = (sq.mean(0) - 1.0) / np.sqrt(2.0 / ess_sq)
    assert np.abs(z_var).max() < Z_TOL, np.abs(z_var).max()

    # Cross-covariance of the two components vanishes: correlation within ~1/sqrt(ESS).
    std = (h - mu) / sd
    corr = (std[..., 0] * std[..., 1]).mean(0)
    assert np.abs(corr).max() < Z_TOL / np.sqrt(ess.min())


# ---------------------------------------------------------------------------- SVI
@pytest.mark.parametrize("kind", ["primal", "dual"])
def test_svi_multivariate_normal_guide_matches_closed_form(kind):
    X = _data(20)
    model = _fitted(kind, X)
    Xq = X[:5]  # 10 latent dimensions: a full-rank guide converges in a few hundred steps
    fn = latent_model(model, Xq)
    pyro.set_rng_seed(0)
    pyro.clear_param_store()
    guide = AutoMultivariateNormal(fn)
    steps = 1000
    optim = ClippedAdam({"lr": 0.05, "lrd": 0.01 ** (1 / steps)})  # decay to 5e-4: little SGD jitter at the end
    svi = SVI(fn, guide, optim, Trace_ELBO(num_particles=8, vectorize_particles=True, max_plate_nesting=1))
    for _ in range(steps):
        svi.step()
    post = model.latent_posterior(Xq)
    mu, sd = post.mean.reshape(-1), post.stddev.reshape(-1)
    loc = guide.loc.detach()
    L = (guide.scale[:, None] * guide.scale_tril).detach()
    cov = L @ L.T
    # The guide family contains the exact (Gaussian) posterior, so the ELBO optimum is exact; what is left
    # is the optimiser's noise, a few percent of a posterior sd (measured: <= 5 %). Allow 15 %.
    assert float(((loc - mu) / sd).abs().max()) < 0.15
    corr_err = (cov - torch.diag(sd**2)) / (sd[:, None] * sd[None, :])
    assert float(corr_err.abs().max()) < 0.15


# ---------------------------------------------------------------------------- Bayesian variant
def _sigma2_posterior_on_grid(model, y: torch.Tensor, prior: dist.Distribution, loading: torch.Tensor):
    """Exact posterior mean and sd of sigma2 (1-d quadrature) for the collapsed model with fixed loading."""
    grid = torch.linspace(0.3 * model.sigma2_, 3.0 * model.sigma2_, 4000, dtype=torch.float64)
    # y_i ~ N(0, L L^T + s2 I): in the eigenbasis of L L^T the coordinates are independent, variances d_k + s2.
    d, U = torch.linalg.eigh(loading @ loading.T)
    ss = ((y @ U) ** 2).sum(0)  # (r,) sums of squares per eigen-coordinate
    var = d[None, :] + grid[:, None]  # (G, r)
    logp = -0.5 * (y.shape[0] * torch.log(var) + ss / var).sum(1) + prior.log_prob(grid)
    w = torch.softmax(logp, 0)
    mean = float((w * grid).sum())
    return mean, float(((w * (grid - mean) ** 2).sum()).sqrt())


def test_sigma2_posterior_concentrates_near_ml_as_n_grows():
    results = {}
    for n in (30, 300):
        X = _ppca_data(n)
        model = PrimalPPCA(2).fit(X)
        fn = bayesian_model(model, collapse_latent=True)
        pyro.set_rng_seed(0)
        mcmc = MCMC(NUTS(fn), warmup_steps=300, num_samples=300, disable_progbar=True)
        mcmc.run()
        s2 = mcmc.get_samples()["sigma2"].numpy()
        ess = float(_ess(s2))
        results[n] = (s2.mean(), s2.std(ddof=1), model.sigma2_, ess)
        # The sampler agrees with the exact 1-d posterior (quadrature) within Monte-Carlo error.
        kw = fn.keywords
        exact_mean, exact_sd = _sigma2_posterior_on_grid(model, fn.args[0], kw["sigma2_prior"], kw["loading"])
        assert abs(s2.mean() - exact_mean) < Z_TOL * exact_sd / np.sqrt(ess)
        # The posterior sits on the ML estimate (within a few posterior sd).
        assert abs(s2.mean() - model.sigma2_) < 3 * exact_sd
    (m30, sd30, ml30, _), (m300, sd300, ml300, _) = results[30], results[300]
    # N(r - q) noise coordinates inform sigma2: sd ~ sigma2 sqrt(2 / (N (r - q))), i.e. / sqrt(10) here.
    assert sd300 < 0.5 * sd30
    assert abs(m300 - ml300) / ml300 < abs(m30 - ml30) / ml30


def test_bartlett_loading_prior_has_the_gaussian_wishart_law():
    """E[W W^T] = q s^2 I for W with iid N(0, s^2) entries; the lower-triangular form keeps that law."""
    q, s, r = 3, 0.7, 5
    pyro.set_rng_seed(0)
    prior = dist.InverseGamma(torch.tensor(2.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))
    samples = Predictive(bayesian_ppca_model, num_samples=4000, return_sites=["W"])(
        None, q, sigma2_prior=prior, loading_prior_scale=s, rank=r, num_points=1
    )
    W = samples["W"].reshape(-1, q, q)
    assert torch.all(torch.triu(W, diagonal=1) == 0) and torch.all(torch.diagonal(W, dim1=-2, dim2=-1) > 0)
    WWt = (W @ W.transpose(-1, -2)).mean(0)
    # Wishart(q, s^2 I) entries have sd <= sqrt(2 q) s^2 ~ 1.2, so 4000 draws give SE <= 0.019.
    np.testing.assert_allclose(WWt.numpy(), q * s**2 * np.eye(q), atol=Z_TOL * 0.019)


def test_bayesian_model_sites_shapes():
    X = _ppca_data(25)
    model = DualPPCA(2, kernel="linear").fit(X)
    fn = bayesian_model(model, learn_loading=True)
    trace = pyro.poutine.trace(fn).get_trace()
    assert trace.nodes["sigma2"]["value"].shape == ()
    assert trace.nodes["W"]["value"].shape == (2, 2)
    assert trace.nodes["h"]["value"].shape == (25, 2)
    assert trace.nodes["y"]["is_observed"] and trace.nodes["y"]["value"].shape == (25, model.rank_)
    # The dual coordinates are those of the primal model up to the sign of each direction.
    y_primal = subspace_coordinates(PrimalPPCA(2).fit(X), X)
    np.testing.assert_allclose(trace.nodes["y"]["value"].abs().numpy(), y_primal.abs().numpy(), atol=1e-8)


def test_bayesian_loading_posterior_recovers_ml_covariance():
    X = _ppca_data(60, seed=3)
    model = PrimalPPCA(2).fit(X)
    fn = bayesian_model(model, learn_loading=True, collapse_latent=True)
    pyro.set_rng_seed(0)
    mcmc = MCMC(NUTS(fn), warmup_steps=150, num_samples=150, disable_progbar=True)
    mcmc.run()
    samples = mcmc.get_samples()
    s2 = samples["sigma2"].numpy()
    assert abs(s2.mean() - model.sigma2_) < 3 * s2.std()
    # W W^T + sigma2 I reproduces the top-q sample covariance diag(lam / N) (the ML solution).
    # "W" is a deterministic site: recompute it from the sampled Bartlett factors.
    W = Predictive(fn, posterior_samples=samples, return_sites=["W"])()["W"].reshape(-1, 2, 2)
    C = (W @ W.transpose(-1, -2)).mean(0) + float(s2.mean()) * torch.eye(2, dtype=W.dtype)
    target = torch.diag(model.eigenvalues_ / model.n_samples_)
    rel = (C - target).abs() / target.diagonal().max()
    assert float(rel.max()) < 0.25
