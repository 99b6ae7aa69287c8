"""The mechanisms behind issue 27's fixes, each against an independent computation.

The ported suites (``test_sklearn_*_contract.py``) check the contracts as scikit-learn states them;
these tests pin the edge of each rule: q up to the rank with a fixed sigma2 (and the model it
gives), the partial solver's fallback, the fraction's rounding allowance in float32, sparse input
through every entry point, and ``get_precision``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca.kernels import RBF

BOTH = [PrimalPPCA, DualPPCA]


@pytest.fixture
def X():
    gen = np.random.default_rng(3)
    return gen.normal(size=(30, 4)) @ np.diag([3.0, 2.0, 1.0, 0.5]) + 1.0


@pytest.mark.parametrize("model_cls", BOTH)
def test_q_equal_to_the_rank_with_a_fixed_sigma2(model_cls, X):
    """q = r: the marginal density is N(0, diag(lam / N)) on the r directions, no noise term."""
    model = model_cls(4, sigma2=1e-3).fit(X)
    assert model.n_components_ == model.rank_ == 4
    Xc = X - X.mean(0)
    cov = Xc.T @ Xc / X.shape[0]  # the ML covariance: with q = r the model reproduces it exactly
    expected = -0.5 * (4 * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1]
                       + np.einsum("ij,jk,ik->i", Xc, np.linalg.inv(cov), Xc))
    # cond(cov) ~ 36, entries O(10): float64 rounding far below 1e-10 relative
    np.testing.assert_allclose(model.score_samples(X), expected, rtol=1e-10)
    with pytest.raises(ValueError, match="must be smaller than the rank.*give sigma2"):
        model_cls(4).fit(X)  # the estimated sigma2 still needs a discarded direction
    with pytest.raises(ValueError, match="exceeds the rank"):
        model_cls(5, sigma2=1e-3).fit(X)


@pytest.mark.parametrize("model_cls", BOTH)
def test_rank_one_data_with_a_fixed_sigma2(model_cls):
    t = np.linspace(-1.0, 1.0, 9)
    X = np.outer(t, [1.0, 2.0, -1.0]) + 5.0
    model = model_cls(1, sigma2=1e-6).fit(X)
    assert (model.n_components_, model.rank_) == (1, 1)
    np.testing.assert_allclose(float(model.eigenvalues_[0]), 6.0 * (t**2).sum(), rtol=1e-12)
    assert np.isfinite(model.score(X))
    with pytest.raises(ValueError, match="rank 1.*estimated sigma2 needs rank >= 2"):
        model_cls(1).fit(X)
    one_feature = model_cls(1, sigma2=1e-6).fit(t[:, None])
    assert one_feature.n_components_ == 1


def test_rbf_kernel_keeps_all_n_minus_1_components_with_a_fixed_sigma2():
    X = np.random.default_rng(0).normal(size=(12, 2))
    model = DualPPCA(11, sigma2=1e-9, kernel=RBF(1.0)).fit(X)
    assert model.n_components_ == model.rank_ == 11
    assert np.isfinite(model.score(X))
    k = model.sample_kernel(3, random_state=0)
    assert np.isfinite(np.asarray(model.kernel_marginal().log_prob(torch.as_tensor(k)))).all()


@pytest.mark.parametrize("model_cls, kw, size", [(PrimalPPCA, {}, 4), (DualPPCA, {"kernel": RBF(0.5)}, 30)])
def test_partial_solver_falls_back_where_lanczos_cannot_serve(model_cls, kw, size, X):
    """q <= size - 2 runs Lanczos; beyond it, and for whole-spectrum modes, the dense solver (recorded)."""
    assert model_cls(size - 2, sigma2=1e-6, eigen_solver="partial", **kw).fit(X).eigen_solver_ == "partial"
    for mode in (dict(n_components=size - 1, sigma2=1e-6), dict(n_components=0.5), dict(n_components="mle"),
                 dict(sigma2=1e-6)):
        model = model_cls(eigen_solver="partial", **mode, **kw).fit(X)
        dense = model_cls(eigen_solver="dense", **mode, **kw).fit(X)
        assert model.eigen_solver_ == "dense"
        np.testing.assert_array_equal(np.asarray(model.eigenvalues_), np.asarray(dense.eigenvalues_))


def test_fraction_is_reached_in_float32():
    """The user's float32 sum of ratios selects q although cumsum rounds differently (allowance 2 (q + 2) eps)."""
    X = np.random.default_rng(1).normal(size=(200, 6)).astype(np.float32) * np.arange(1, 7, dtype=np.float32)
    ratios = np.asarray(PrimalPPCA(5).fit(X).explained_variance_ratio_)
    assert ratios.dtype == np.float32
    for q in range(1, 6):
        assert PrimalPPCA(float(ratios[:q].sum())).fit(X).n_components_ == q
        assert PrimalPPCA(float(ratios[:q][::-1].sum())).fit(X).n_components_ == q  # another summation order
    # a fraction clearly above the top q ratios still needs q + 1 (the allowance is rounding only)
    assert PrimalPPCA(float(ratios[:2].sum()) + 1e-4).fit(X).n_components_ == 3


@pytest.mark.parametrize("model_cls", BOTH)
def test_fraction_error_quotes_an_accepted_maximum(model_cls, X):
    with pytest.raises(ValueError, match="most the model can keep is") as info:
        model_cls(0.9999999999).fit(X)
    kept = float(str(info.value).split("keep is ")[1].split(":")[0])
    assert model_cls(kept).fit(X).n_components_ == 3  # r - 1 = 3: the quoted value itself is accepted


@pytest.mark.parametrize("model_cls", BOTH)
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_input_everywhere(model_cls, fmt, X):
    S = scipy.sparse.random(30, 4, density=0.5, random_state=0, format=fmt, dtype=np.float32)
    D = S.toarray()
    a, b = model_cls(2).fit(S), model_cls(2).fit(D)
    assert a._dtype == torch.float32  # the sparse matrix's dtype is followed, as a dense one's
    np.testing.assert_array_equal(a.transform(S), b.transform(D))
    np.testing.assert_array_equal(a.score_samples(S), b.score_samples(D))
    if model_cls is PrimalPPCA:
        streamed = PrimalPPCA(2)
        for rows in (slice(0, 15), slice(15, 30)):
            streamed.partial_fit(scipy.sparse.csr_array(D[rows]))
        ref = PrimalPPCA(2)
        for rows in (slice(0, 15), slice(15, 30)):
            ref.partial_fit(D[rows])
        np.testing.assert_array_equal(np.asarray(streamed.components_), np.asarray(ref.components_))


def test_kernels_and_feature_maps_take_sparse_input(X):
    from kppca.features import PolynomialFeatures

    S = scipy.sparse.csr_array(np.where(np.abs(X) > 1.0, X, 0.0))
    np.testing.assert_array_equal(RBF(2.0)(S, S[:3]), RBF(2.0)(S.toarray(), S.toarray()[:3]))
    fm = PolynomialFeatures(2).fit(S)
    np.testing.assert_array_equal(fm.transform(S), PolynomialFeatures(2).fit(S.toarray()).transform(S.toarray()))


def test_get_precision_is_the_inverse_covariance(X):
    model = PrimalPPCA(2).fit(X)
    cov, prec = np.asarray(model.get_covariance()), np.asarray(model.get_precision())
    # cond(cov) = (lam_1 / N) / sigma2 ~ 40: inverse to ~1e-14 relative
    np.testing.assert_allclose(prec, np.linalg.inv(cov), rtol=1e-10, atol=1e-12)
