"""MultiViewKPCA input errors and the optional geoopt dependency."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from kppca.kernels import RBF
from kppca.optim import minimize
from kppca.rkm import MultiViewKPCA


@pytest.fixture
def views():
    gen = np.random.default_rng(0)
    return [gen.normal(size=(20, 4)), gen.normal(size=(20, 2))]


def test_views_with_different_n(views):
    with pytest.raises(ValueError, match=r"views\[1\] has 19 rows but views\[0\] has 20"):
        MultiViewKPCA(2).fit([views[0], views[1][:19]])


def test_wrong_width_at_transform(views):
    m = MultiViewKPCA(2).fit(views)
    with pytest.raises(ValueError, match=r"views\[1\] has 3 features, but this view had 2"):
        m.transform([views[0], np.zeros((20, 3))])


def test_n_components_above_rank():
    gen = np.random.default_rng(0)
    z = gen.normal(size=(30, 1))
    with pytest.raises(ValueError, match="exceeds the numerical rank 2"):
        MultiViewKPCA(3, form="dual").fit([z @ [[1.0, 2.0]], z * 3 + gen.normal(size=(30, 1))])
    with pytest.raises(ValueError, match="rank"):
        MultiViewKPCA(4, form="primal").fit([z @ [[1.0, 2.0]], z])


def test_predict_view_with_every_view_missing(views):
    m = MultiViewKPCA(2).fit(views)
    with pytest.raises(ValueError, match="at least one known view"):
        m.predict_view([None, None], 1)
    with pytest.raises(ValueError, match=r"target must be an int in the range \[0, 1\]"):
        m.predict_view([views[0], None], 2)


def test_primal_needs_explicit_maps(views):
    with pytest.raises(ValueError, match="form='primal' needs an explicit feature map"):
        MultiViewKPCA(2, form="primal", kernels=[RBF(1.0), None]).fit(views)


def test_failed_refit_leaves_model_unchanged(views):
    m = MultiViewKPCA(2).fit(views)
    H = m.hidden_features_.clone()
    with pytest.raises(ValueError):
        m.fit([views[0], views[1][:5]])
    assert torch.equal(m.hidden_features_, H)


def test_transform_needs_every_view(views):
    m = MultiViewKPCA(2).fit(views)
    with pytest.raises(ValueError, match="transform needs every view"):
        m.transform([views[0], None])


def test_stiefel_checks_orthonormal_start():
    K = torch.eye(4, dtype=torch.float64)
    with pytest.raises(ValueError, match="orthonormal columns"):
        minimize(lambda H: -torch.trace(H.T @ K @ H), torch.ones(4, 2, dtype=torch.float64), manifold="stiefel")


def test_missing_geoopt_message(monkeypatch, views):
    monkeypatch.setitem(sys.modules, "geoopt", None)
    with pytest.raises(ImportError, match=r'pip install "\.\[rkm\]"'):  # from the source tree: no index release
        MultiViewKPCA(2, solver="stiefel").fit(views)


def test_n_components_above_rank_stiefel():
    gen = np.random.default_rng(0)
    z = gen.normal(size=(30, 1))
    with pytest.raises(ValueError, match="exceeds the numerical rank 2"):
        MultiViewKPCA(3, form="dual", solver="stiefel", random_state=0, max_iter=300).fit(
            [z @ [[1.0, 2.0]], z * 3 + gen.normal(size=(30, 1))]
        )


def test_predict_view_uninformative_known_view():
    """Three components from a 2-column view and a 1-column view: Gamma - U_0^T U_0 = U_1^T U_1 has
    rank 1, so view 1 informs one hidden feature and the other two stay at their prior mean 0 (with a
    warning): the least-norm solution, checked against numpy's pseudo-inverse."""
    gen = np.random.default_rng(0)
    X, y = gen.normal(size=(30, 2)), gen.normal(size=(30, 1))
    m = MultiViewKPCA(3).fit([X, y])
    with pytest.warns(UserWarning, match="2 of 3 hidden features are not identifiable from the views other than 0"):
        pred = m.predict_view([None, y[:3]], 0)
    A = (m.Gamma_ - m.views_[0].inner_).numpy()
    rhs = m._projection_sum([None, torch.as_tensor(y[:3])]).numpy()
    # rcond: eigenvalues of A below N eps lambda_1 relative to its largest are rounding (rank_tolerance)
    h = rhs @ np.linalg.pinv(0.5 * (A + A.T), rcond=30 * np.finfo(float).eps * 1e3, hermitian=True)
    expected = h @ m.U_[0].numpy().T + m.views_[0].phi_mean_.numpy()
    # One identifiable direction (condition number 1): both routes agree to a few rounding errors of
    # the 3 x 3 products, i.e. O(s eps) relative to the prediction's magnitude.
    np.testing.assert_allclose(pred, expected, rtol=0, atol=16 * 3 * np.finfo(float).eps * np.abs(expected).max())
    assert np.isfinite(pred).all()


def test_preimage_option_is_validated(views):
    m = MultiViewKPCA(2).fit(views)
    m.predict_view([views[0], None], 1, preimage="smoother")
    with pytest.raises(ValueError, match="preimage must be"):
        m.predict_view([views[0], None], 1, preimage="knn")


@pytest.mark.parametrize("method", ["sgd", "cg"])
def test_stiefel_non_convergence_warns(views, method):
    """A Stiefel run stopped by max_iter (or, for the line searches, at rounding level above tol)
    raises sklearn's ConvergenceWarning naming max_iter and tol; geoopt's LineSearchWarning does
    not leak out."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    kw = {"max_iter": 3} if method == "sgd" else {"tol": 1e-15}  # cg stops at rounding level ~1e-15 short
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = MultiViewKPCA(2, form="dual", solver="stiefel", stiefel_method=method, random_state=0, **kw).fit(views)
    assert not m.solver_result_.converged
    kinds = [w.category for w in caught if not issubclass(w.category, DeprecationWarning)]
    assert kinds == [ConvergenceWarning], kinds
    msg = str(next(w.message for w in caught if w.category is ConvergenceWarning))
    assert "max_iter" in msg and "tol" in msg
    # A converged run is silent.
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert MultiViewKPCA(2, form="dual", solver="stiefel", stiefel_method="cg", random_state=0).fit(
            views
        ).solver_result_.converged


# ---------------------------------------------------------------------- issue 18, item 10
@pytest.fixture
def rbf_model(views):
    return MultiViewKPCA(2, kernels=[RBF(2.0), RBF(2.0)]).fit(views)


@pytest.mark.parametrize("bad", [2.5, True, "3", -1, 0])
def test_sample_n_samples_checked(rbf_model, bad):
    with pytest.raises(ValueError, match="n_samples must be an int in the range"):
        rbf_model.sample(bad)


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf")])
def test_sample_scale_checked(rbf_model, bad):
    with pytest.raises(ValueError, match="scale must be a float in the range"):
        rbf_model.sample(3, latent="mixture", scale=bad)


def test_sample_latent_and_neighbors_checked(rbf_model):
    with pytest.raises(ValueError, match="latent must be"):
        rbf_model.sample(3, latent="posterior")
    with pytest.raises(ValueError, match="n_neighbors must be"):
        rbf_model.sample(3, n_neighbors=0)


def test_predict_view_target_bool_refused(rbf_model, views):
    with pytest.raises(ValueError, match=r"target must be an int in the range \[0, 1\]"):
        rbf_model.predict_view([views[0], None], target=True)


def test_polynomial_sample_on_scaled_data_falls_back_to_nearest_point():
    """Generated polynomial-kernel weights can all be <= 0; the smoother then has no mean, and the
    pre-image is the training point with the largest weight (it used to advise 'epsilon > 0')."""
    from kppca.kernels import Polynomial
    from kppca.rkm.multiview_inference import _smoother_weights

    X = np.random.default_rng(0).normal(size=(40, 2)) * 1000
    m = MultiViewKPCA(2, kernels=[Polynomial(2, 1), Polynomial(2, 1)]).fit([X, X[:, :1]])
    out = m.sample(5, random_state=0)
    assert all(np.isfinite(o).all() for o in out)
    W = torch.tensor([[-1.0, -3.0, -2.0], [0.5, 0.25, -1.0]], dtype=torch.float64)
    fixed = _smoother_weights(W)
    assert torch.equal(fixed[0], torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64))  # argmax of row 0
    assert torch.equal(fixed[1], W[1])  # a row with positive mass is unchanged


def test_rank_zero_views_do_not_advise_zero_components():
    with pytest.raises(ValueError, match="rank 0") as info:
        MultiViewKPCA(1, kernels=[RBF(1.0), RBF(1.0)]).fit([np.ones((6, 3)), np.ones((6, 2))])
    assert "n_components <= 0" not in str(info.value)


def test_not_fitted_message_names_method():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match=r"call fit\(views\) before sample\(\)"):
        MultiViewKPCA().sample(2)
