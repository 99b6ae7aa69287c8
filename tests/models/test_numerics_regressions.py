"""Regression tests for the numerical hardening: rank tolerance, non-finite and overflowing Gram
matrices, option validation, distributions that accept their own samples."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kppca import DualPPCA, PrimalPPCA
from kppca._linalg import compute_threads
from kppca.features import PolynomialFeatures, RandomFourierFeatures
from kppca.kernels import RBF, Polynomial

# ----------------------------------------------------------------------------- item 3: rank / PSD tolerance


@pytest.mark.parametrize("offset", [1e1, 1e2, 1e3, 1e4])
@pytest.mark.parametrize("N", [10, 50, 200])
def test_linear_kernel_far_from_origin_is_psd(offset, N):
    """Regression: the PSD/rank tolerance was relative to the largest *centered* eigenvalue while
    the rounding error of K_c scales with the *uncentered* K (``max |K_ij|``); every seed failed at
    N = 10 and 50 for offset 10. Now the dual agrees with the primal (rank D, same sigma2)."""
    for seed in range(5):
        X = np.random.default_rng(seed).normal(size=(N, 4)) + offset
        dual = DualPPCA(2).fit(X)
        primal = PrimalPPCA(2).fit(X)
        assert dual.rank_ == primal.rank_ == 4
        # sigma2 = (trace - top q eigenvalues) / (N (r - q)) from K_c, whose entries carry absolute
        # error ~4 eps max|K| (max|K| ~ |x|^2): the trace gives 4 eps max|K| / (r - q) and each
        # eigenvalue N times that (the error matrix has norm <= N * entry error); x2 for the primal.
        q, r = 2, 4
        max_k = float(np.max(np.sum(X**2, 1)))
        assert abs(dual.sigma2_ - primal.sigma2_) <= 8 * (q + 1) * np.finfo(np.float64).eps * max_k / (r - q)


def test_partial_solver_far_from_origin():
    X = np.random.default_rng(0).normal(size=(200, 4)) + 1e3
    dense = DualPPCA(2, eigen_solver="dense").fit(X)
    part = DualPPCA(2, eigen_solver="partial", random_state=0).fit(X)
    assert dense.rank_ == part.rank_ == 4
    # both from the same K_c (entry error ~4 eps max|K|): see test_linear_kernel_far_from_origin_is_psd
    max_k = float(np.max(np.sum(X**2, 1)))
    assert abs(part.sigma2_ - dense.sigma2_) <= 8 * 3 * np.finfo(np.float64).eps * max_k / 2
    assert np.isfinite(part.sample(3, random_state=0)).all()


@pytest.mark.parametrize("bandwidth", [10.0, 100.0, 1e3])
def test_wide_rbf_is_psd(bandwidth):
    """Regression: ``DualPPCA(2, kernel=RBF(10.)).fit(X)`` raised 'not positive semi-definite' (K ~ 1
    everywhere, K_c tiny). 20 of 20 seeds failed for bandwidth 100 and 1000."""
    for seed in range(5):
        X = np.random.default_rng(seed).normal(size=(50, 4))
        model = DualPPCA(2, kernel=RBF(bandwidth)).fit(X)
        assert np.isfinite(model.sigma2_) and model.sigma2_ > 0


def test_wide_rbf_on_digits():
    datasets = pytest.importorskip("sklearn.datasets")
    X = datasets.load_digits().data
    for bandwidth in (256.0, 1e3):
        for seed in range(3):
            idx = np.random.default_rng(seed).choice(len(X), 200, replace=False)
            model = DualPPCA(2, kernel=RBF(bandwidth)).fit(X[idx])
            assert model.sigma2_ > 0


def test_float32_offset_is_psd():
    """float32 (eps 1.2e-7): the old tolerance failed 19 of 20 seeds at offset 10."""
    for seed in range(5):
        X = np.random.default_rng(seed).normal(size=(50, 4)) + 10.0
        dual = DualPPCA(2, dtype="float32").fit(X)
        primal = PrimalPPCA(2, dtype="float32").fit(X)
        assert dual.rank_ == primal.rank_ == 4


def test_float32_lost_information_gets_a_clear_error():
    """At offset 1e3 in float32 the Gram matrix's rounding (~eps |x|^2 N) exceeds the data's variance:
    the dual reports rank 0 with advice instead of 'not PSD'."""
    X = np.random.default_rng(0).normal(size=(50, 4)) + 1e3
    with pytest.raises(ValueError, match="float64"):
        DualPPCA(2, dtype="float32").fit(X)
    # the primal centers before squaring, so its scatter keeps the information
    assert PrimalPPCA(2, dtype="float32").fit(X).rank_ == 4


# ----------------------------------------------------------------------------- item 7: clear errors


def test_constant_data_partial_solver_reports_rank_zero():
    """Regression: ``fit(np.ones((1200, 3)))`` with the partial solver raised ARPACK's 'Starting vector is zero'."""
    with pytest.raises(ValueError, match="rank 0"):
        DualPPCA(2, eigen_solver="partial").fit(np.ones((1200, 3)))
    with pytest.raises(ValueError, match="rank 0"):
        DualPPCA(2, eigen_solver="dense").fit(np.ones((50, 3)))


@pytest.mark.parametrize("solver", ["dense", "partial"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_kernel_names_the_kernel(solver, bad):
    """Regression: a kernel returning NaN/inf gave 'rank 0' or ArpackError -9999."""
    X = np.random.default_rng(0).normal(size=(60, 3))

    def kernel(A, B):
        K = A @ B.T
        K[0, 0] = bad
        return K

    with pytest.raises(ValueError, match="`kernel`.*non-finite"):
        DualPPCA(2, kernel=kernel, eigen_solver=solver).fit(X)


def test_overflowing_inputs_give_clear_errors():
    """Regression: two 1e308 entries raised LinAlgError (primal and dual)."""
    X = np.random.default_rng(0).normal(size=(20, 3))
    X[0, 0] = X[1, 1] = 1e308
    with pytest.raises(ValueError, match="non-finite.*rescale X"):
        PrimalPPCA(2).fit(X)
    with pytest.raises(ValueError, match="non-finite.*rescale X"):
        DualPPCA(2).fit(X)


@pytest.mark.parametrize("scale", [1e5, 1e6])
def test_float32_polynomial_overflow_detected_at_fit(scale):
    """Regression: ``DualPPCA(1, kernel=Polynomial(3), dtype="float32").fit(1e6 * X)`` fitted with
    sigma2 = 2e36 and returned NaN samples; lam^2 / N overflows float32."""
    X = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(ValueError, match="float64"):
        DualPPCA(1, kernel=Polynomial(3), dtype="float32").fit(scale * X)
    # float64 has the range: it fits and samples are finite
    model = DualPPCA(1, kernel=Polynomial(3)).fit(scale * X)
    assert np.isfinite(model.sample_kernel(3, random_state=0)).all()


def test_large_but_safe_float32_values_fit_and_stay_finite():
    X = np.random.default_rng(0).normal(size=(40, 3)) * 1e3
    model = DualPPCA(2, kernel=Polynomial(2), dtype="float32").fit(X)
    for out in (model.sample(3, random_state=0), model.transform(X[:3]), model.inverse_transform(np.ones((2, 2))),
                model.score_samples(X[:3]), model.sample_kernel(3, random_state=0)):
        assert np.isfinite(out).all()


@pytest.mark.parametrize(
    "preimage, options",
    [
        ("smoother", {"n_neighbors": 0}),
        ("smoother", {"epsilon": -1.0}),
        ("smoother", {"estimate": "median"}),
        ("smoother", {"clip_negative": "yes"}),
        ("knn", {"n_neighbors": 0}),
        ("knn", {"n_neighbors": None}),
        ("knn", {"weighting": "gaussian"}),
        ("fixed-point", {"max_iter": 0}),
        ("fixed-point", {"init": "random"}),
        ("learned", {"alpha": 0.0}),
        ("learned", {"n_coordinates": 0}),
    ],
)
def test_preimage_option_values_validated_for_identity_primal(preimage, options):
    """Regression: ``PrimalPPCA.sample(..., n_neighbors=0)`` was accepted (the identity map ignores
    the pre-image, so option values were never checked)."""
    X = np.random.default_rng(0).normal(size=(30, 3))
    model = PrimalPPCA(2).fit(X)
    with pytest.raises((ValueError, TypeError), match=next(iter(options)) if preimage != "smoother" or
                       "estimate" not in options else "estimate"):
        model.sample(3, random_state=0, preimage=preimage, **options)
    with pytest.raises((ValueError, TypeError)):
        model.inverse_transform(np.ones((1, 2)), preimage=preimage, **options)


# ----------------------------------------------------------------------------- item 6: own samples on the support

@pytest.mark.parametrize("center", [True, False])
def test_partial_float32_distributions_accept_their_samples(center):
    """Regression: after a partial fit, once ``score_samples`` built the full eigendecomposition, the
    support test used that eigenbasis while the sampler used the Cholesky-based factor, and the
    float32 tolerance was below the factor's leak off the basis: up to 23 of 100 samples were
    'off the support' (RBF, N = 150)."""
    for seed in range(4):
        X = np.random.default_rng(seed).normal(size=(150, 5))
        m = DualPPCA(3, kernel=RBF(2.0), center=center, eigen_solver="partial", dtype="float32",
                     random_state=seed).fit(X)
        m.score_samples(X[:2])
        torch.manual_seed(0)
        for d in (m.kernel_marginal(), m.kernel_conditional(np.ones((2, 3)))):
            d._validate_args = True  # raise instead of -inf, as the report did
            assert torch.isfinite(d.log_prob(d.sample((100,)))).all()


def test_support_test_still_rejects_off_support_points():
    """The leak allowance is tiny next to a genuine off-support displacement."""
    X = np.random.default_rng(0).normal(size=(150, 5))
    m = DualPPCA(3, kernel=RBF(2.0), eigen_solver="partial", dtype="float32", random_state=0).fit(X)
    m.score_samples(X[:2])
    d = m.kernel_marginal()
    d._validate_args = False  # -inf instead of raising
    x = d.sample((4,))
    ones = torch.ones(150, dtype=torch.float32)  # K_c 1 = 0: off range(K_c) for a centered model
    off = x + 0.1 * x.norm(dim=-1, keepdim=True) * ones / ones.norm()
    assert torch.isinf(d.log_prob(off)).all()


_KERNELS = {
    "linear": ("linear", None),
    "rbf": (RBF(2.0), lambda: RandomFourierFeatures(2.0, n_features=40, random_state=0)),
    "poly": (Polynomial(2), lambda: PolynomialFeatures(2)),
}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dtype=st.sampled_from(["float32", "float64"]),
    center=st.booleans(),
    solver=st.sampled_from(["dense", "partial"]),
    kernel=st.sampled_from(sorted(_KERNELS)),
    n=st.integers(60, 160),
    full_first=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_log_prob_of_own_samples_is_finite(dtype, center, solver, kernel, n, full_first, seed):
    """Property: for every fitted configuration, ``d.log_prob(d.sample())`` is finite for the kernel and
    feature distributions and the latent posterior (validate_args on: off-support raises)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    torch.manual_seed(seed)
    kern, fmap = _KERNELS[kernel]
    dual = DualPPCA(2, kernel=kern, center=center, eigen_solver=solver, dtype=dtype, random_state=seed).fit(X)
    primal = PrimalPPCA(2, feature_map=fmap() if fmap else None, center=center, eigen_solver=solver,
                        dtype=dtype, random_state=seed).fit(X)
    if full_first:
        dual.score_samples(X[:2])
    h = rng.normal(size=(3, 2))
    dists = [dual.kernel_marginal(), dual.kernel_conditional(h), primal.feature_marginal(),
             primal.feature_conditional(h), dual.latent_posterior(X[:3]), primal.latent_posterior(X[:3])]
    if full_first:
        dists.append(dual.kernel_marginal("symmetric"))
    for d in dists:
        d._validate_args = True
        assert torch.isfinite(d.log_prob(d.sample((5,)))).all(), type(d).__name__


def test_primal_basis_from_gram_is_orthonormal():
    """Regression: with more features than points the primal's directions ``Phi_c^T E / sqrt(lam)`` lost
    orthogonality (2.5e-3) along small eigenvalues, so the support test (an orthogonal projection)
    rejected ``feature_marginal``'s own samples for 9 of 31 seeds (RFF, near-constant data)."""
    bad = 0
    for seed in range(30):
        X = np.random.default_rng(seed).normal(size=(30, 7)) * 1.3e-6 + 10.0
        fmap = RandomFourierFeatures(0.0072, n_features=40, random_state=seed)
        m = PrimalPPCA(0.8, feature_map=fmap, center=False, random_state=seed).fit(X)
        V = m._full_eigen()[1]
        # Householder QR: |Q^T Q - I| <= ~d eps (d rows), absolute on O(1) entries.
        np.testing.assert_allclose(V.T @ V, np.eye(V.shape[1]), rtol=0, atol=V.shape[0] * np.finfo(float).eps)
        d = m.feature_marginal()
        d._validate_args = False
        torch.manual_seed(0)
        bad += not bool(torch.isfinite(d.log_prob(d.sample((20,)))).all())
    assert bad == 0


def test_partial_factor_after_losing_the_gram_scale_is_unchanged():
    """Guard (not a regression): a save format that drops the private ``_gram_scale`` must not change
    the rank tolerance used to rebuild the sampling factor; it is recomputed from the same Gram matrix."""
    X = np.random.default_rng(0).normal(size=(120, 4)) + 1e3
    model = DualPPCA(2, eigen_solver="partial", random_state=0).fit(X)
    before = model.sample_kernel(3, random_state=1)
    for key in ("_gram_factor", "_gram_scale"):
        model.__dict__.pop(key, None)
    np.testing.assert_array_equal(model.sample_kernel(3, random_state=1), before)


# ----------------------------------------------------------------------------- issue 18: densities, messages


def _kernel_marginals(N):
    X = np.random.default_rng(0).normal(size=(N, 3))
    partial = DualPPCA(2, kernel=RBF(1.5), eigen_solver="partial", random_state=0).fit(X)
    dense = DualPPCA(2, kernel=RBF(1.5), eigen_solver="dense", random_state=0).fit(X)
    return X, partial, dense


def test_kernel_marginal_does_not_depend_on_call_order():
    """Regression: after a partial fit, ``kernel_marginal().log_prob(v)`` was [2352.7, 2362.5] (rank 299,
    the SVD of the Cholesky factor) and, after ``score_samples``, [2160.3, 2173.8] (rank 287, the
    eigenbasis): a distribution must depend on the fitted model only."""
    # The bound below assumes both models take their eigenbasis from eigh's of one bitwise K_c with
    # one rounding: LAPACK's rounding depends on the thread count, which kppca takes from the cores
    # free at the time, so both fits share one thread count here.
    with compute_threads(torch.get_num_threads()):
        _check_kernel_marginal_call_order()


def _check_kernel_marginal_call_order() -> None:
    X, partial, dense = _kernel_marginals(300)
    v = torch.as_tensor(partial.sample_kernel(2, random_state=1))
    before = partial.kernel_marginal().log_prob(v)
    cond_before = partial.kernel_conditional(np.ones(2)).log_prob(v)
    partial.score_samples(X[:5])
    assert torch.equal(partial.kernel_marginal().log_prob(v), before)
    assert torch.equal(partial.kernel_conditional(np.ones(2)).log_prob(v), cond_before)
    # Both solvers build K_c bitwise alike and take the basis and the scales c_p from its eigh; only
    # sigma2 differs, through the top-q eigenvalues (Lanczos vs eigh, each within the rounding level
    # tol of K_c, Weyl): |d sigma2| <= q tol / (N (r - q)). log p moves by
    # 0.5 sum_{p > q} |d sigma2| / sigma2 (1 + z_p^2 / c_p) to first order (x2 for the rest).
    values, vectors = dense._full_eigen()
    q, N, r = 2, 300, dense.rank_
    tol = dense._gram().tolerance
    z2_over_c = ((v @ vectors[:, q:]) ** 2 / (dense.sigma2_ * values[q:])).sum(1)
    dsigma = q * tol / (N * (r - q)) / dense.sigma2_
    bound = 2 * 0.5 * dsigma * ((values.shape[0] - q) + z2_over_c)
    assert bool(((before - dense.kernel_marginal().log_prob(v)).abs() <= bound).all())


@pytest.mark.parametrize("N", [300, 1100])
def test_samples_of_either_solver_lie_on_the_other_models_support(N):
    """Regression: partial-fit samples (Cholesky factor) fell off the dense model's support (its
    eigenbasis leaves out the directions below the rounding level, where the Cholesky draws put noise)."""
    _, partial, dense = _kernel_marginals(N)
    for a, b in ((partial, dense), (dense, partial)):
        draws = torch.as_tensor(a.sample_kernel(40, random_state=2))
        assert bool(torch.isfinite(b.kernel_marginal().log_prob(draws)).all())
        cond = a.kernel_conditional(np.ones(2))
        torch.manual_seed(0)
        assert bool(torch.isfinite(b.kernel_conditional(np.ones(2)).log_prob(cond.sample((10,)))).all())
    # a vector with a component along the null vector 1 of K_c is still refused
    off = torch.as_tensor(dense.sample_kernel(1, random_state=3)) + 1e-3 * float(dense.marginal_scales().max())
    with pytest.raises(ValueError, match="off the support"):
        partial.kernel_marginal().log_prob(off)


def test_structural_rank_with_every_eigenvalue_below_rounding_has_a_message():
    """Regression: ``DualPPCA(sigma2=1e-3, kernel=RBF(0.1), dtype="float32").fit(1e-6 * X)`` raised
    IndexError while building its own message (no eigenvalue above the rounding level)."""
    X = 1e-6 * np.random.default_rng(0).normal(size=(3, 4))
    with pytest.raises(ValueError, match="rounding level.*dtype='float64'"):
        DualPPCA(sigma2=1e-3, kernel=RBF(0.1), dtype="float32").fit(X)
    with pytest.raises(ValueError, match="rounding level.*dtype='float64'"):
        DualPPCA(1, kernel=RBF(0.1), dtype="float32").fit(X)


def test_fraction_needing_every_component_is_explained():
    """Regression: ``n_components=0.999999`` said "n_components = 199 must be smaller than the rank (199)"."""
    X = np.random.default_rng(0).normal(size=(200, 5))
    with pytest.raises(ValueError, match=r"n_components=0\.999999 asks for .* most the model can keep is 0\.\d+"
                       r".*discarded to estimate sigma2.*at most") as info:
        DualPPCA(0.999999).fit(X)
    assert "must be smaller than the rank" not in str(info.value)
    kept = float(info.value.args[0].split("keep is ")[1].split(":")[0])
    model = DualPPCA(4).fit(X)  # the top 4 of rank 5: exactly the fraction quoted
    assert abs(kept - float(model.explained_variance_ratio_.sum())) <= 1e-6  # printed with 6 digits
    assert DualPPCA(kept - 1e-6).fit(X).n_components_ == 4
