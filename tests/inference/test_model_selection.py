"""Choosing q (and the kernel): held-out log-likelihood sweeps and Minka's evidence (n_components="mle")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn import datasets
from sklearn.decomposition import PCA

from kppca import DualPPCA, PrimalPPCA
from kppca.inference import HeldoutSelection, select_by_heldout_likelihood
from kppca.kernels import RBF


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Run this module's eigendecompositions on one thread.

    On a shared, oversubscribed CPU, MKL's multi-threaded ``eigh`` of a 200 x 200
    matrix was measured at ~2 s (busy-waiting threads) against ~3 ms on one thread.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def _ppca_sample(n: int, d: int = 10, q: int = 3, noise: float = 0.5, seed: int = 0) -> np.ndarray:
    """Draws from a PPCA with q directions of sd 3..5 over isotropic noise: a clear eigengap after q."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.normal(size=(d, q)))
    W = basis * np.linspace(5.0, 3.0, q)
    return rng.normal(size=(n, q)) @ W.T + noise * rng.normal(size=(n, d)) + rng.normal(size=d)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "estimator", [PrimalPPCA(), DualPPCA(kernel="linear")], ids=["primal", "dual-linear"]
)
def test_heldout_sweep_recovers_true_q(estimator, seed):
    X = _ppca_sample(400, seed=seed)
    X_train, X_val = X[:200], X[200:]
    result = select_by_heldout_likelihood(estimator, X_train, X_val, {"n_components": list(range(1, 9))})
    assert isinstance(result, HeldoutSelection)
    assert result.best_params == {"n_components": 3}
    assert result.best_estimator.n_components_ == 3
    table = result.results
    assert list(table["n_components"]) == list(range(1, 9))
    assert table.loc[table["rank_test_score"] == 1, "n_components"].item() == 3
    assert result.best_score == pytest.approx(table["heldout_score"].max())
    # Training likelihood keeps increasing with q: only held-out data detect over-fitting.
    assert np.all(np.diff(table["train_score"]) > 0)
    # The template estimator is cloned, never fitted.
    assert not hasattr(estimator, "sigma2_")


def test_primal_and_dual_sweeps_agree():
    X = _ppca_sample(300, seed=4)
    grid = {"n_components": [1, 2, 3, 4, 5]}
    primal = select_by_heldout_likelihood(PrimalPPCA(), X[:150], X[150:], grid).results
    dual = select_by_heldout_likelihood(DualPPCA(kernel="linear"), X[:150], X[150:], grid).results
    np.testing.assert_allclose(primal["heldout_score"], dual["heldout_score"], rtol=1e-9)


def test_failed_grid_points_score_nan_with_a_warning():
    X = _ppca_sample(60, d=4, seed=1)
    with pytest.warns(UserWarning, match="failed to fit"):
        result = select_by_heldout_likelihood(PrimalPPCA(), X[:30], X[30:], {"n_components": [1, 2, 3, 4, 5]})
    table = result.results
    assert table.loc[table["n_components"] >= 4, "heldout_score"].isna().all()  # q >= r = 4
    assert table.loc[table["n_components"] >= 4, "error"].str.contains("n_components").all()
    assert result.best_params["n_components"] <= 3
    with pytest.raises(ValueError):
        select_by_heldout_likelihood(PrimalPPCA(), X[:30], X[30:], {"n_components": [5]}, error_score="raise")


def test_kernel_bandwidth_grid_table():
    X, _ = datasets.make_moons(120, noise=0.1, random_state=0)
    grid = {"n_components": [2, 4], "kernel": [RBF(0.5), RBF(1.0), RBF(2.0)]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every grid point must fit
        result = select_by_heldout_likelihood(DualPPCA(), X[:80], X[80:], grid)
    table = result.results
    assert len(table) == 6
    assert set(table["kernel"]) == {"RBF(bandwidth=0.5)", "RBF(bandwidth=1.0)", "RBF(bandwidth=2.0)"}
    assert np.isfinite(table["heldout_score"]).all()
    # H_E has dimension N - 1 = 79 for every bandwidth (the RBF kernel is strictly positive definite),
    # but each kernel's H_E is another space with another metric: the held-out "likelihoods" of
    # different kernels are densities on different spaces.
    assert set(table["rank_"]) == {79}
    assert isinstance(result.best_params["kernel"], RBF)


def test_empty_grid_raises():
    X = _ppca_sample(40, d=4)
    with pytest.raises(ValueError, match="empty"):
        select_by_heldout_likelihood(PrimalPPCA(), X[:20], X[20:], [])


# ---------------------------------------------------------------------------- Minka's evidence
def _mle_datasets() -> dict[str, np.ndarray]:
    """Full-rank data with N > d (then r = d and the criterion is scikit-learn's exactly)."""
    out = {
        "iris": datasets.load_iris().data,
        "wine": datasets.load_wine().data,
        "diabetes": datasets.load_diabetes().data,
        "breast_cancer": datasets.load_breast_cancer().data,
        "linnerud": datasets.load_linnerud().data,
    }
    for q in (1, 3, 5):
        out[f"ppca_q{q}"] = _ppca_sample(200, d=12, q=q, noise=1.0, seed=10 + q)
    return out


@pytest.mark.parametrize("name", list(_mle_datasets()))
def test_mle_dimension_matches_sklearn(name):
    X = _mle_datasets()[name]
    expected = PCA(n_components="mle", svd_solver="full").fit(X).n_components_
    assert PrimalPPCA("mle").fit(X).n_components_ == expected
    assert DualPPCA("mle", kernel="linear").fit(X).n_components_ == expected


def test_mle_on_rank_deficient_data_is_sklearn_on_H_E():
    """With constant pixels (rank r < d) kppca applies Minka's criterion on H_E (dimension r).

    scikit-learn keeps the d - r zero eigenvalues in the spectrum (and may return
    q = r, leaving no noise direction); on the data expressed in an orthonormal
    basis of H_E the two agree.
    """
    X = datasets.load_digits().data[:500]
    model = PrimalPPCA("mle").fit(X)
    Xc = X - X.mean(0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    coords = Xc @ Vt[: model.rank_].T
    assert model.rank_ < X.shape[1]
    assert model.n_components_ == PCA(n_components="mle", svd_solver="full").fit(coords).n_components_
    assert DualPPCA("mle", kernel="linear").fit(X).n_components_ == model.n_components_


def test_mle_sigma2_is_ml_for_the_chosen_q():
    X = _ppca_sample(300, d=8, q=2, seed=5)
    mle = DualPPCA("mle", kernel="linear").fit(X)
    fixed = DualPPCA(mle.n_components_, kernel="linear").fit(X)
    assert mle.n_components_ == 2
    assert mle.sigma2_ == pytest.approx(fixed.sigma2_, rel=1e-12)
