"""Latent distributions for sampling: the prior (exact model), a mixture on training codes, class-conditional."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca.datasets import load_digits
from kppca.features import RandomFourierFeatures
from kppca.kernels import RBF
from kppca.models.generation.latent import fit_latent_mixture
from kppca.preimage.strategies import SAMPLE_SMOOTHER_OPTIONS


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return load_digits(n_samples=150, random_state=2)


@pytest.fixture(scope="module")
def model(data) -> DualPPCA:
    X, y = data
    return DualPPCA(5, kernel=RBF(1.5)).fit(X, y)


def test_prior_with_noise_is_the_exact_model_sample(model):
    k_c = model.sample_kernel(7, random_state=3)
    # kernel_preimage re-projects k_c on range(K_c) (K_c K_c^+ k_c): the weights move by ~N eps |K| (|K| <= 1),
    # a weighted mean of pixels in [0, 1] by as much relative to its weights.
    N = model.n_samples_
    # (sample() resolves selection="auto" to "local", a map of given vectors to "raw": name it, and the
    # default pre-image's options for samples)
    np.testing.assert_allclose(model.sample(7, random_state=3, latent="prior"),
                               model.kernel_preimage(k_c, selection="local", **SAMPLE_SMOOTHER_OPTIONS),
                               rtol=0, atol=10 * N * np.finfo(float).eps)
    # noise defaults to True for the prior: the exact model sample
    np.testing.assert_array_equal(model.sample(7, random_state=3, latent="prior", noise=True),
                                  model.sample(7, random_state=3, latent="prior"))


def test_noise_free_prior_is_the_conditional_mean_of_standard_normal_codes(model):
    gen = torch.Generator().manual_seed(4)
    h = torch.randn((6, model.n_components_), generator=gen, dtype=torch.float64)
    np.testing.assert_array_equal(
        model.sample(6, random_state=4, latent="prior", noise=False),
        model.inverse_transform(h.numpy(), selection="local", **SAMPLE_SMOOTHER_OPTIONS),
    )


def test_mixture_samples_are_reproducible_and_noise_is_optional(model):
    a = model.sample(8, random_state=0, latent="mixture")
    np.testing.assert_array_equal(a, model.sample(8, random_state=0, latent="mixture"))
    assert a.shape == (8, model.n_features_in_)
    assert not np.array_equal(a, model.sample(8, random_state=1, latent="mixture"))
    noisy = model.sample(8, random_state=0, latent="mixture", noise=True)
    assert noisy.shape == a.shape and not np.array_equal(noisy, a)


def test_mixture_fit_recovers_two_clusters():
    gen = torch.Generator().manual_seed(0)
    codes = torch.cat([torch.randn(300, 2, generator=gen, dtype=torch.float64) * 0.1 - 3,
                       torch.randn(100, 2, generator=gen, dtype=torch.float64) * 0.1 + 3])
    mix = fit_latent_mixture(codes, 2)
    order = torch.argsort(mix.means[:, 0])
    # weights 3/4 and 1/4 up to the sampling error of 400 points (sd ~ 0.022)
    np.testing.assert_allclose(mix.weights[order], [0.75, 0.25], atol=0.001)
    draws = mix.sample(4000, torch.Generator().manual_seed(1))
    frac = float((draws[:, 0] > 0).double().mean())
    assert abs(frac - 0.25) < 5 * (0.25 * 0.75 / 4000) ** 0.5  # binomial 5-sigma bound


def test_float32_mixture_of_collapsed_components_is_factored_in_float64():
    # Regression: RBF(1e-3) on 1-D data makes every code a spike; mixture components collapse
    # on a few codes with covariance eigenvalues from reg_covar = 1e-6 to ~35, a condition number
    # (~4e7) beyond float32's 1/eps, and torch's float32 Cholesky of the rounded covariance failed.
    X = np.random.default_rng(0).normal(size=(1200, 1))
    m = DualPPCA(5, kernel=RBF(0.001), dtype="float32", random_state=0).fit(X)
    S = m.sample(3, latent="mixture", random_state=0)
    assert S.shape == (3, 1) and np.isfinite(S).all()
    mix = m._latent_mixture(None)
    assert mix.scale_trils.dtype == torch.float32
    # The float32 factor is the float64 one rounded: L L^T reproduces each covariance to float32
    # rounding of its entries (|L|^2 eps32 per entry, q terms).
    L = mix.scale_trils.double()
    # The reference: the same EM on the same codes in float64 (the fit runs in float64 whatever the
    # codes' dtype; test_em_agrees_with_scikit_learn checks that EM against an independent one).
    codes = (m._training_coordinates() * m._gain).double()  # the codes the mixture is fitted on
    L64 = fit_latent_mixture(codes, len(mix.weights)).scale_trils
    cov = L64 @ L64.transpose(1, 2)
    bound = 5 * codes.shape[1] * np.finfo(np.float32).eps * float(cov.diagonal(dim1=1, dim2=2).max())
    assert float((L @ L.transpose(1, 2) - cov).abs().max()) < bound


def test_collapsed_component_far_from_the_origin():
    """40 identical codes at |h| ~ 2e5 form one component of covariance ``REG_COVAR I``. The M-step
    centres the codes first: their mean is off by at most ``M eps |h|`` (~2e-9), so the covariance
    is ``REG_COVAR I`` to ~1e-17; ``E[h h^T] - mu mu^T`` would cancel to ``q eps |h|^2`` (~4e-5),
    forty times ``REG_COVAR``, and could lose positive definiteness."""
    from kppca.models.generation import latent

    gen = torch.Generator().manual_seed(0)
    codes = torch.cat([torch.randn(300, 5, generator=gen, dtype=torch.float64) + 1e5,
                       torch.full((40, 5), 1e5 + 50.0, dtype=torch.float64)])
    mix = fit_latent_mixture(codes, 3)
    j = int((mix.means - (1e5 + 50.0)).abs().sum(1).argmin())
    cov = mix.scale_trils[j] @ mix.scale_trils[j].T
    assert abs(float(mix.weights[j]) - 40 / 340) < 1e-9
    torch.testing.assert_close(cov, latent.REG_COVAR * torch.eye(5, dtype=torch.float64), rtol=0, atol=1e-12)


def test_m_step_leaves_out_only_terms_below_its_rounding():
    """The M-step sums each covariance over the codes whose terms ``r_ij (h_i - mu_j)(h_i - mu_j)^T`` matter.
    Against every term summed in numpy: the terms left out move each entry by at most ``eps T_j`` (``T_j =
    sum_i r_ij |h_i - mu_j|^2``), each of the two sums of M terms rounds by at most ``M eps T_j`` and the
    factor's product ``L L^T`` by ``q eps`` of its entries, all over ``nk_j``. A code of responsibility 1e-20 at
    |h| ~ 2e12 weighs ``4e4`` in ``T_j``: a rule by responsibility alone would drop it and miss by that much."""
    from kppca.models.generation import latent

    gen = torch.Generator().manual_seed(7)
    M, K, q = 600, 3, 4
    codes = torch.randn(M, q, generator=gen, dtype=torch.float64)
    codes[0] = 1e12
    resp = torch.rand(M, K, generator=gen, dtype=torch.float64) ** 40  # a third of them below 1e-20
    resp[0] = 1e-20
    components, kept = latent._contributing_codes(codes, resp, (resp.T @ codes) / resp.sum(0)[:, None])
    assert int((kept == 0).sum()) == K and bool((components[kept == 0] == torch.arange(K)).all())  # the far code
    assert len(kept) < 0.8 * M * K  # the terms below rounding are left out
    _, means, trils = latent._m_step(codes, resp)
    X, R = codes.numpy(), resp.numpy()
    eps = np.finfo(np.float64).eps
    nk = R.sum(0) + 10 * eps
    mu = R.T @ X / nk[:, None]
    for j in range(K):
        d = X - mu[j]
        cov = (d.T * R[:, j]) @ d / nk[j] + latent.REG_COVAR * np.eye(q)
        T = float(R[:, j] @ (d**2).sum(1))
        bound = (2 * M + 1 + q) * eps * T / nk[j]
        np.testing.assert_allclose((trils[j] @ trils[j].T).numpy(), cov, rtol=0, atol=bound)
        np.testing.assert_allclose(means[j].numpy(), mu[j], rtol=0, atol=M * eps * 1e12)


def test_em_agrees_with_scikit_learn():
    """Our EM from k-means is scikit-learn's ``GaussianMixture`` EM (same M-step, E-step and stopping rule):
    started from the same parameters, both reach the same mixture. Each iteration is backward stable
    in float64 and the fixed point is attracting, so the two runs differ by rounding amplified over
    a few iterations: 1e-8 relative to the codes' scale leaves six orders of margin above q M eps."""
    from sklearn.mixture import GaussianMixture

    from kppca.models.generation import latent

    gen = torch.Generator().manual_seed(3)
    centres = torch.randn(4, 6, generator=gen, dtype=torch.float64) * 3
    codes = centres[torch.arange(600) % 4] + torch.randn(600, 6, generator=gen, dtype=torch.float64)
    mix = fit_latent_mixture(codes, 4, n_init=1)  # the run from the first k-means start
    labels = latent._kmeans_labels(codes, 4, torch.Generator().manual_seed(0))
    w0, mu0, L0 = latent._m_step(codes, torch.nn.functional.one_hot(labels, 4).double())
    prec0 = torch.cholesky_inverse(L0)
    gm = GaussianMixture(4, covariance_type="full", reg_covar=latent.REG_COVAR, tol=latent.EM_TOL,
                         max_iter=latent.MAX_EM_ITER, weights_init=w0.numpy(), means_init=mu0.numpy(),
                         precisions_init=prec0.numpy()).fit(codes.numpy())
    scale = float(codes.abs().max())
    np.testing.assert_allclose(mix.weights.numpy(), gm.weights_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(mix.means.numpy(), gm.means_, rtol=0, atol=1e-8 * scale)
    cov = (mix.scale_trils @ mix.scale_trils.transpose(1, 2)).numpy()
    np.testing.assert_allclose(cov, gm.covariances_, rtol=0, atol=1e-8 * scale**2)


@pytest.mark.parametrize("solver", ["dense", "partial"])
def test_dual_training_codes_are_read_off_the_eigenpairs(solver):
    """The mixture's training codes ``sqrt(lam_p) u_p`` equal the projection ``K_c u_p / sqrt(lam_p)`` of the
    training inputs (an independent N x N pass) to the eigen-solver's residual: ``|K_c u - lam u| <= N eps lam_1``
    for a backward-stable solver, divided by ``sqrt(lam_q)``."""
    X = np.random.default_rng(0).normal(size=(300, 5))
    m = DualPPCA(5, kernel=RBF(2.0), eigen_solver=solver, random_state=0).fit(X)
    lam = m.eigenvalues_
    bound = 300 * np.finfo(np.float64).eps * float(lam[0]) / float(lam[-1].sqrt())
    assert float((m._training_coordinates() - m._principal_coordinates(m.X_fit_)).abs().max()) <= bound


def _sklearn_log_likelihood(mix, codes) -> float:
    """Mean log-likelihood of ``codes`` under ``mix``, by scikit-learn's own density (an independent computation)."""
    from sklearn.mixture import GaussianMixture

    cov = (mix.scale_trils @ mix.scale_trils.transpose(1, 2)).numpy()
    gm = GaussianMixture(len(mix.weights), covariance_type="full")
    gm.weights_, gm.means_, gm.covariances_ = mix.weights.numpy(), mix.means.numpy(), cov
    gm.precisions_cholesky_ = np.linalg.cholesky(np.linalg.inv(cov))
    return float(gm.score(codes.numpy()))


def test_several_em_starts_keep_the_most_likely_run(monkeypatch):
    """n_init starts EM from k-means seeds drawn in turn from one generator, the first being n_init=1's. With
    short runs as long as full ones, the run kept has the highest log-likelihood, so never below the first
    start's. On 12 overlapping clusters fitted with 6 components the starts reach different local optima, and
    the best of 6 is strictly better than one for some seeds (a test that could not fail otherwise).
    Differences are read by scikit-learn's density."""
    from kppca.models.generation import latent

    monkeypatch.setattr(latent, "SHORT_EM_ITER", latent.MAX_EM_ITER)
    gen = torch.Generator().manual_seed(5)
    centres = torch.randn(12, 4, generator=gen, dtype=torch.float64) * 2.5
    codes = centres[torch.arange(1200) % 12] + torch.randn(1200, 4, generator=gen, dtype=torch.float64)
    gains = []
    for seed in range(4):
        one = _sklearn_log_likelihood(fit_latent_mixture(codes, 6, random_state=seed, n_init=1), codes)
        best = _sklearn_log_likelihood(fit_latent_mixture(codes, 6, random_state=seed, n_init=6), codes)
        assert best >= one - 1e-9  # rounding of two evaluations of the same mixture
        gains.append(best - one)
    assert max(gains) > 1e-3
    with pytest.raises(ValueError, match="n_init"):
        fit_latent_mixture(codes, 6, n_init=0)


def test_short_runs_continue_the_most_likely_start(monkeypatch):
    """The default short runs ("small EM"): the start kept is the most likely after SHORT_EM_ITER iterations,
    then run to convergence; its log-likelihood is the best of the starts' there, and is not below it after."""
    from kppca.models.generation import latent

    gen = torch.Generator().manual_seed(5)
    centres = torch.randn(12, 4, generator=gen, dtype=torch.float64) * 2.5
    codes = centres[torch.arange(1200) % 12] + torch.randn(1200, 4, generator=gen, dtype=torch.float64)
    seen = []
    em = latent._em
    monkeypatch.setattr(latent, "_em", lambda H, params, n: seen.append(em(H, params, n)) or seen[-1])
    mix = fit_latent_mixture(codes, 6, random_state=1, n_init=4)
    assert len(seen) in (4, 5)  # four short runs, then the continuation unless the best had converged
    best = max(run[0] for run in seen[:4])
    final = _sklearn_log_likelihood(mix, codes)
    # EM never lowers the likelihood: the final one is at least the chosen start's (to EM_TOL of its stop)
    assert final >= best - latent.EM_TOL


def test_em_on_many_codes_runs_on_a_random_subset_then_on_all(monkeypatch):
    """Beyond MAX_EM_CODES codes the starts and the run to convergence use a random subset, then REFINE_EM_ITER
    iterations use all codes. Two clusters 60 sd apart hold 3/4 and 1/4 of the codes, so every responsibility
    is 0 or 1 to rounding and a weight is a count of codes over the codes used: 47 / 200 for this seed's subset
    without the last iteration, 1,000 / 4,000 with it."""
    from kppca.models.generation import latent

    monkeypatch.setattr(latent, "MAX_EM_CODES", 200)
    gen = torch.Generator().manual_seed(0)
    codes = torch.cat([torch.randn(3000, 2, generator=gen, dtype=torch.float64) * 0.1 - 3,
                       torch.randn(1000, 2, generator=gen, dtype=torch.float64) * 0.1 + 3])

    def right_weight(mix):
        return float(mix.weights[int(torch.argmax(mix.means[:, 0]))])

    mix = fit_latent_mixture(codes, 2)
    assert abs(right_weight(mix) * 4000 - 1000) < 1e-6
    # one start by default beyond MAX_EM_CODES codes, and deterministic
    torch.testing.assert_close(fit_latent_mixture(codes, 2, n_init=1).means, mix.means, rtol=0, atol=0)
    torch.testing.assert_close(fit_latent_mixture(codes, 2).means, mix.means, rtol=0, atol=0)
    monkeypatch.setattr(latent, "REFINE_EM_ITER", 0)
    assert abs(right_weight(fit_latent_mixture(codes, 2)) * 200 - 47) < 1e-6
    # the component cap counts all codes (4,000 // (5 * 3) = 266), not the subset's 200 (13)
    assert len(fit_latent_mixture(codes, 50, n_init=1).weights) == 50


def test_e_step_in_blocks_matches_one_block():
    """Over blocks the E-step gives each code the responsibilities of one block: the same products row by row.
    A log-density here is a sum of q + 3 = 8 terms of size at most 50, so a different blocking of the products
    could move it by at most about 8 * 50 eps = 400 eps, and a responsibility (at most 1) by twice that."""
    from kppca.models.generation import latent

    gen = torch.Generator().manual_seed(1)
    codes = torch.randn(1000, 5, generator=gen, dtype=torch.float64)
    params = latent._kmeans_start(codes, 4, gen)
    one, mean_one = latent._e_step(codes, params, codes.new_empty(1000, 20))
    blocks, mean_blocks = latent._e_step(codes, params, codes.new_empty(300, 20))
    eps = torch.finfo(torch.float64).eps
    assert float(latent._log_weighted_densities(codes, *params).abs().max()) < 50
    torch.testing.assert_close(blocks, one, rtol=0, atol=1e3 * eps)
    assert abs(mean_blocks - mean_one) < 1e3 * eps * abs(mean_one)


def test_mixture_components_rule_of_the_number_of_codes():
    """One component per 200 codes, in [10, 60]: 10 at the bundled default's 2,000 codes (today's value)."""
    from kppca.models.generation.latent import mixture_components

    assert [mixture_components(m) for m in (100, 2000, 2199, 2200, 5000, 10000, 12000, 60000)] == \
        [10, 10, 10, 11, 25, 50, 60, 60]
    codes = torch.randn(5000, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert len(fit_latent_mixture(codes, "auto", n_init=1).weights) == 25  # 5000 // (5 * 3) = 333 allows it
    assert len(fit_latent_mixture(codes, 3, n_init=1).weights) == 3  # an explicit count is kept
    with pytest.raises(ValueError, match="'auto'"):
        fit_latent_mixture(codes, "many")


def test_mixture_keeps_fewer_components_for_few_codes():
    codes = torch.randn(40, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert fit_latent_mixture(codes, 20).weights.shape == (2,)  # 40 // (5 * 4)


def test_class_conditional_samples_come_from_the_requested_class(model, data):
    X, y = data
    wanted = np.array([0, 3, 3, 7, 9, 0])
    S = model.sample(len(wanted), random_state=0, y=wanted, n_neighbors=1)
    # with one neighbour the pre-image is a training digit, of the requested class
    nearest = ((S[:, None, :] - X[None, :, :]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(y[nearest], wanted)
    S7 = model.sample(5, random_state=1, y=7, preimage="knn", n_neighbors=3, weighting="uniform")
    assert S7.shape == (5, X.shape[1])


def test_class_conditional_errors(data):
    X, y = data
    unlabeled = DualPPCA(4, kernel=RBF(1.5)).fit(X)
    with pytest.raises(ValueError, match=r"fit\(X, y\)"):
        unlabeled.sample(3, y=1)
    labeled = DualPPCA(4, kernel=RBF(1.5)).fit(X, y)
    with pytest.raises(ValueError, match="not seen in fit"):
        labeled.sample(3, y=11)
    with pytest.raises(ValueError, match="one label or 3 labels"):
        labeled.sample(3, y=[1, 2])
    with pytest.raises(ValueError, match="one label per training point"):
        DualPPCA(4, kernel=RBF(1.5)).fit(X, y[:-1])
    with pytest.raises(ValueError, match="latent"):
        labeled.sample(3, latent="uniform")
    # Targets that are not class labels are ignored, as by any transformer in a pipeline.
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline

    for target in (np.column_stack([y, y]).astype(float), y + 0.5 * np.arange(len(y))):
        pipe = make_pipeline(DualPPCA(3, kernel=RBF(1.5)), Ridge()).fit(X, target)
        assert not hasattr(pipe[0], "sample_classes_")
    labeled.fit(X)  # a refit without labels forgets the old ones
    assert not hasattr(labeled, "sample_classes_")
    with pytest.raises(ValueError, match=r"fit\(X, y\)"):
        labeled.sample(3, y=1)


def test_string_labels(data):
    X, y = data
    names = np.array(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])[y]
    m = DualPPCA(4, kernel=RBF(1.5)).fit(X, names)
    S = m.sample(4, random_state=0, y="seven", n_neighbors=1)
    nearest = ((S[:, None, :] - X[None, :, :]) ** 2).sum(-1).argmin(1)
    assert set(y[nearest]) == {7}


@pytest.mark.parametrize("fmap", [None, "rff"])
def test_primal_latents(data, fmap):
    X, y = data
    feature_map = RandomFourierFeatures(1.5, n_features=60, random_state=0) if fmap else None
    m = PrimalPPCA(4, feature_map=feature_map).fit(X, y)
    exact = m.sample(5, random_state=2, latent="prior")
    if fmap is None:  # the identity map: the features are the inputs
        np.testing.assert_array_equal(exact, m.sample_features(5, random_state=2))
    mix = m.sample(5, random_state=2, latent="mixture")
    assert mix.shape == (5, X.shape[1])
    cls = m.sample(4, random_state=0, y=3, **({} if fmap is None else {"n_neighbors": 1}))
    assert cls.shape == (4, X.shape[1])
    if fmap:  # pre-images restricted to class 3
        nearest = ((cls[:, None, :] - X[None, :, :]) ** 2).sum(-1).argmin(1)
        assert set(y[nearest]) == {3}
    with pytest.raises(ValueError, match="factor"):
        m.sample(2, factor="symmetric", latent="prior")


def test_mixture_needs_training_inputs():
    X = np.random.default_rng(0).normal(size=(40, 3))
    streamed = PrimalPPCA(2).partial_fit(X[:20]).partial_fit(X[20:])
    assert streamed.sample(3, random_state=0).shape == (3, 3)  # identity map: the exact sample needs no inputs
    with pytest.raises(ValueError, match="does not keep"):
        streamed.sample(3, latent="mixture")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_latents_and_classes_on_cuda(data):
    X, y = data
    m = DualPPCA(4, kernel=RBF(1.5), device="cuda").fit(torch.as_tensor(X), y)
    for kw in ({"latent": "prior"}, {"latent": "mixture"}, {"y": 3}):
        S = m.sample(5, random_state=0, **kw)
        assert isinstance(S, torch.Tensor) and S.device.type == "cuda" and S.shape == (5, X.shape[1])


# ----------------------------------------------------------------------------- the default, latent="auto"
@pytest.mark.parametrize("kind", ["dual", "primal", "primal-rff"])
def test_default_latent_is_the_mixture_when_training_inputs_are_kept(kind, data):
    X, y = data
    if kind == "dual":
        m = DualPPCA(4, kernel=RBF(1.5)).fit(X, y)
    else:
        fmap = RandomFourierFeatures(1.5, n_features=60, random_state=0) if kind == "primal-rff" else None
        m = PrimalPPCA(4, feature_map=fmap).fit(X, y)
    default = m.sample(6, random_state=5)
    # same seed, same codes, same pre-image: bitwise
    np.testing.assert_array_equal(default, m.sample(6, random_state=5, latent="mixture"))
    np.testing.assert_array_equal(default, m.sample(6, random_state=5, latent="auto"))
    assert not np.array_equal(default, m.sample(6, random_state=5, latent="prior"))  # the choice is visible
    # class-conditional sampling with the default latent: the class's mixture
    np.testing.assert_array_equal(m.sample(4, random_state=1, y=7), m.sample(4, random_state=1, y=7, latent="mixture"))
    S = m.sample(4, random_state=1, y=7, n_neighbors=1)
    if kind != "primal":  # pre-images from class 7 only (the identity map needs no pre-image)
        nearest = ((S[:, None, :] - X[None, :, :]) ** 2).sum(-1).argmin(1)
        assert set(y[nearest]) == {7}


def test_default_latent_is_the_exact_prior_without_training_inputs():
    X = np.random.default_rng(0).normal(size=(40, 3))
    streamed = PrimalPPCA(2).partial_fit(X[:20]).partial_fit(X[20:])
    assert not hasattr(streamed, "X_fit_")  # no training codes: no mixture
    default = streamed.sample(5, random_state=3)
    np.testing.assert_array_equal(default, streamed.sample(5, random_state=3, latent="prior"))
    np.testing.assert_array_equal(default, streamed.sample(5, random_state=3, latent="auto"))
    # the identity map: the exact prior sample is the feature-space sample
    np.testing.assert_array_equal(default, streamed.sample_features(5, random_state=3))
    # the same model fitted in memory keeps its inputs and defaults to the mixture
    kept = PrimalPPCA(2).fit(X)
    assert not np.array_equal(kept.sample(5, random_state=3), kept.sample(5, random_state=3, latent="prior"))
