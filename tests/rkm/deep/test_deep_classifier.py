"""Deep RKM classifier (the projected-gradient tests moved to tests/optim/test_minimize.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from kppca.datasets import load_mnist
from kppca.kernels import RBF
from kppca.preimage import KernelSmoother
from kppca.rkm import DeepRKMClassifier


@pytest.fixture(scope="module")
def mnist_split():
    X, y = load_mnist(digits=[0, 1, 7], n_samples=360, random_state=0)
    perm = np.random.default_rng(0).permutation(len(y))  # rows come in source order
    X, y = X[perm], y[perm]
    return X[:120], y[:120], X[120:], y[120:]


@pytest.fixture(scope="module")
def fitted(mnist_split):
    Xtr, ytr, _, _ = mnist_split
    return DeepRKMClassifier((3, 3), max_iter=15, random_state=0).fit(Xtr, ytr)


def test_deep_classifier_beats_chance_and_constraints(fitted, mnist_split):
    _, _, Xte, yte = mnist_split
    assert fitted.score(Xte, yte) > 0.8  # chance is 1/3
    assert len(fitted.models_) == 3  # one binary deep model per class
    for m in fitted.models_:
        H = m.H
        assert float((H.T @ H - torch.eye(6, dtype=H.dtype)).abs().max()) < 1e-10
        hist = np.array(m.history)
        assert np.all(np.diff(hist) <= 1e-12 * np.abs(hist[:-1]))
    assert fitted.smoother_bandwidth_ in fitted.smoother_scores_


def test_deep_classifier_deterministic_for_seed(fitted, mnist_split):
    Xtr, ytr, Xte, _ = mnist_split
    again = DeepRKMClassifier((3, 3), max_iter=15, random_state=0).fit(Xtr, ytr)
    for a, b in zip(fitted.models_, again.models_):
        assert torch.equal(a.H, b.H)
    assert np.array_equal(fitted.predict(Xte), again.predict(Xte))


def test_out_of_sample_codes_are_the_smoother_output(fitted, mnist_split):
    Xtr = mnist_split[0]
    codes = fitted.latent_codes(Xtr)
    m = fitted.models_[0]
    ref = KernelSmoother(RBF(fitted.smoother_bandwidth_)).fit(Xtr, m.H[:, -3:].numpy()).predict(Xtr)
    assert np.allclose(codes[:, :3], ref, rtol=0, atol=1e-14)


def test_fixed_bandwidth_and_mlp_head(mnist_split):
    Xtr, ytr, Xte, yte = mnist_split
    m = DeepRKMClassifier((3,), head="mlp", max_iter=30, smoother_bandwidth=4.0, random_state=0).fit(Xtr, ytr)
    assert m.smoother_bandwidth_ == 4.0 and m.smoother_scores_ == {}
    assert m.score(Xte, yte) > 0.6
    assert m.decision_function(Xte).shape == (len(Xte), 3)


def test_too_many_components_is_refused():
    X = np.random.default_rng(0).normal(size=(5, 2))
    with pytest.raises(ValueError, match="n_components"):
        DeepRKMClassifier((4, 3)).fit(X, [0, 1, 0, 1, 0])


def test_geoopt_optimizer_keeps_constraint_and_learns(mnist_split):
    pytest.importorskip("geoopt")
    Xtr, ytr, Xte, yte = mnist_split
    m = DeepRKMClassifier((3,), optimizer="geoopt", max_iter=15, random_state=0).fit(Xtr, ytr)
    for mm in m.models_:
        assert float((mm.H.T @ mm.H - torch.eye(3, dtype=mm.H.dtype)).abs().max()) < 1e-10
    assert m.score(Xte, yte) > 0.8


def test_far_points_get_the_nearest_codes(fitted, mnist_split):
    # Raw Gaussian weights of a far point all underflow; the codes stay defined.
    Xte = mnist_split[2][:5] + 50.0
    assert np.all(np.isfinite(fitted.latent_codes(Xte)))
    assert fitted.predict(Xte).shape == (5,)


# ---------------------------------------------------------------- reliability (issue 18, item 11)
@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    return X, (X[:, 0] > 0).astype(int)


def test_tiny_smoother_bandwidth_is_the_nearest_neighbour(blobs):
    """A width whose weights all underflow gives each query its nearest training point's code."""
    X, y = blobs
    m = DeepRKMClassifier((2,), max_iter=5, smoother_bandwidth=1e-300, random_state=0).fit(X, y)
    codes = m.latent_codes(X)
    assert np.array_equal(codes, m.models_[0].H[:, -2:].numpy())  # each training point is its own neighbour
    assert np.array_equal(m.predict(X[:5] + 1e-9), m.predict(X[:5]))


def test_far_queries_predict(blobs, ):
    X, y = blobs
    m = DeepRKMClassifier((2,), max_iter=5, random_state=0).fit(X, y)
    for far in (X[:4] * 1e300, X[:4] + 1e200):
        assert np.isfinite(m.latent_codes(far)).all() and m.predict(far).shape == (4,)


@pytest.mark.parametrize("kwargs, match", [
    ({"smoother_grid": [np.inf]}, "smoother_grid"),
    ({"smoother_grid": ["a"]}, "smoother_grid"),
    ({"smoother_grid": []}, "smoother_grid"),
    ({"n_components": ["a"]}, "n_components"),
    ({"n_components": [True]}, "n_components"),
])
def test_bad_options_name_the_argument(blobs, kwargs, match):
    X, y = blobs
    with pytest.raises(ValueError, match=match):
        DeepRKMClassifier(max_iter=2, random_state=0, **kwargs).fit(X, y)


def test_constant_X_message_names_X(blobs):
    _, y = blobs
    with pytest.raises(ValueError, match="X has no two distinct rows") as info:
        DeepRKMClassifier((2,), max_iter=2).fit(np.ones((40, 3)), y)
    assert "bandwidth" not in str(info.value) and "Z" not in str(info.value)


def test_non_psd_callable_kernel_is_refused(blobs):
    X, y = blobs
    with pytest.raises(ValueError, match="not positive semi-definite"):
        DeepRKMClassifier((2,), kernel=lambda A, B: -((A @ B.T) ** 2), max_iter=2).fit(X, y)


def test_ridge_head_is_the_lssvm_primal_solution(fitted, mnist_split):
    """The head (w, b) of each binary model solves the LS-SVM primal normal equations on its codes
    (numpy lstsq on the augmented ridge system, independent of the package's solver)."""
    _, ytr, _, _ = mnist_split
    m = fitted.models_[0]
    Z = m.H[:, -3:].numpy()
    t = np.where(ytr == fitted.classes_[0], 1.0, -1.0)
    ridge_eta = fitted.ridge * fitted.eta
    A = np.vstack([np.hstack([Z, np.ones((len(Z), 1))]), np.hstack([np.sqrt(ridge_eta) * np.eye(3), np.zeros((3, 1))])])
    sol = np.linalg.lstsq(A, np.concatenate([t, np.zeros(3)]), rcond=None)[0]
    assert np.allclose(m.w.numpy()[:, 0], sol[:3], rtol=0, atol=1e-10) and abs(float(m.b[0]) - sol[3]) < 1e-10


def test_warns_when_stopped_early(blobs):
    from sklearn.exceptions import ConvergenceWarning

    X, y = blobs
    with pytest.warns(ConvergenceWarning, match="stopped before convergence"):
        DeepRKMClassifier((2,), max_iter=1, tol=0.0, random_state=0).fit(X, y)


def test_plot_history_draws_one_curve_per_model(fitted):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    out = fitted.plot_history(ax=ax)
    assert out is ax and len(ax.lines) == len(fitted.models_)
    for line, m in zip(ax.lines, fitted.models_):
        assert np.array_equal(line.get_ydata(), np.asarray(m.history))
    plt.close(fig)


def _moons():
    from sklearn.datasets import make_moons

    return make_moons(60, noise=0.1, random_state=0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_scores_follow_the_fitted_head():
    """The head is the fitted one (mlp_params_ exist for the MLP head only), whatever head is set after fit."""
    X, y = _moons()
    model = DeepRKMClassifier(max_iter=3, random_state=0).fit(X, y)
    before = model.decision_function(X)
    model.set_params(head="mlp")
    np.testing.assert_array_equal(model.decision_function(X), before)
    assert not hasattr(model, "mlp_params_")


def test_kernel_that_is_not_psd_is_refused_as_by_the_lssvm():
    """-||x - y|| is conditionally positive definite: its centred Gram matrix is PSD, the kernel is not."""
    from kppca.rkm import LSSVMClassifier

    X, y = _moons()
    kernel = lambda A, B: -torch.cdist(A, B)  # noqa: E731
    with pytest.raises(ValueError, match="positive semi-definite"):
        LSSVMClassifier(kernel=kernel).fit(X, y)
    with pytest.raises(ValueError, match="not positive semi-definite.*valid \\(PSD\\) kernel"):
        DeepRKMClassifier(kernel=kernel, max_iter=2, random_state=0).fit(X, y)


def test_constant_kernel_gets_the_rank_zero_message():
    """RBF(1e300) is 1 on every pair: rank 0, and no advice to use n_components <= 0."""
    X, y = _moons()
    with pytest.raises(ValueError, match=r"rank 0.*bandwidth") as err:
        DeepRKMClassifier(kernel=RBF(1e300), max_iter=2, random_state=0).fit(X, y)
    assert "<= 0" not in str(err.value)


@pytest.mark.parametrize("kw", [{}, {"fine_tune": False}, {"head": "mlp", "n_components": (2, 2)}])
def test_fit_leaks_no_autograd_warning(kw):
    import warnings

    X, y = _moons()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", category=__import__("sklearn.exceptions").exceptions.ConvergenceWarning)
        DeepRKMClassifier(max_iter=3, random_state=0, **kw).fit(X, y)


def _corrupt(model, edit):
    """The fields of ``model``'s record, copied, after ``edit`` (nested records are rebuilt by replace)."""
    import copy

    fields = copy.deepcopy(model.state_.stored())
    edit(fields)
    return fields


def _model(fields, **change):
    fields["models_"][0] = dataclasses.replace(fields["models_"][0], **change)


_CORRUPTIONS = {  # issue 26: each loaded before and failed at first use with a raw torch/numpy error
    "w transposed": (False, lambda f: _model(f, w=f["models_"][0].w.T.clone()), r"models_\[0\].*w, b"),
    "b empty": (False, lambda f: _model(f, b=f["models_"][0].b[:0].clone()), r"models_\[0\].*w, b"),
    "H one row short": (False, lambda f: _model(f, H=f["models_"][0].H[:-1].clone()), r"models_\[0\]\.H"),
    "models_ short": (False, lambda f: f["models_"].pop(), r"models_ has 0"),
    "n_components_ +1": (False, lambda f: f["n_components_"].__setitem__(1, f["n_components_"][1] + 1),
                         r"sum\(n_components_\)"),
    "classes_ short": (False, lambda f: f.__setitem__("classes_", f["classes_"][:1]), r"classes_"),
    "mlp weights transposed": (True, lambda f: f["mlp_params_"].__setitem__(0, f["mlp_params_"][0].T.clone()),
                               r"mlp_params_ has shapes"),
    "mlp bias short": (True, lambda f: f["mlp_params_"].__setitem__(3, f["mlp_params_"][3][:-1].clone()),
                       r"mlp_params_ has shapes"),
    "mlp one class short": (True, lambda f: f.__setitem__("classes_", f["classes_"][:-1]), r"mlp_params_ has shapes"),
}


@pytest.fixture(scope="module")
def small_models():
    X, y = _moons()
    y3 = np.where(X[:, 0] > 1.0, 2, y)  # three classes for the MLP head
    return {False: DeepRKMClassifier(max_iter=3, random_state=0).fit(X, y),
            True: DeepRKMClassifier(head="mlp", max_iter=3, random_state=0).fit(X, y3)}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", sorted(_CORRUPTIONS))
def test_inconsistent_nested_state_is_refused_naming_it(name, small_models, tmp_path):
    """Fitted state whose nested parts disagree (heads, codes, classes) is refused by its record, which fit and
    load both build (issue 26)."""
    import kppca
    from kppca.io.record import InvalidStateError

    mlp, edit, match = _CORRUPTIONS[name]
    good = small_models[mlp]
    good.save(tmp_path / "good.kppca")  # the intact model saves, loads and predicts as before
    np.testing.assert_array_equal(kppca.load(tmp_path / "good.kppca").predict(good.X_fit_.numpy()),
                                  good.predict(good.X_fit_.numpy()))
    bad = _corrupt(good, edit)
    with pytest.raises(InvalidStateError, match=match):
        type(good.state_)(**bad)


def test_kernel_rule_smooths_with_the_level1_width(fitted, mnist_split):
    """smoother_bandwidth="kernel": the codes are an independent Gaussian smoother at kernel_'s width, and the
    predictions follow the nearest training digit less often than at the leave-one-out width."""
    from sklearn.neighbors import KNeighborsClassifier

    Xtr, ytr, Xte, _ = mnist_split
    wide = DeepRKMClassifier((3, 3), max_iter=15, smoother_bandwidth="kernel", random_state=0).fit(Xtr, ytr)
    assert wide.smoother_bandwidth_ == wide.kernel_.bandwidth and wide.smoother_scores_ == {}
    ref = KernelSmoother(RBF(wide.kernel_.bandwidth)).fit(Xtr, wide.models_[0].H[:, -3:].numpy()).predict(Xte)
    assert np.allclose(wide.latent_codes(Xte)[:, :3], ref, rtol=0, atol=1e-14)
    nn = KNeighborsClassifier(1).fit(Xtr, ytr).predict(Xte)
    assert (wide.predict(Xte) == nn).mean() < (fitted.predict(Xte) == nn).mean()


def test_loo_rule_is_the_default(fitted, mnist_split):
    Xtr, ytr, _, _ = mnist_split
    loo = DeepRKMClassifier((3, 3), max_iter=15, smoother_bandwidth="loo", random_state=0).fit(Xtr, ytr)
    assert loo.smoother_bandwidth_ == fitted.smoother_bandwidth_ and loo.smoother_scores_ == fitted.smoother_scores_


def test_kernel_rule_needs_an_rbf_kernel(blobs):
    X, y = blobs
    with pytest.raises(ValueError, match="smoother_bandwidth='kernel'"):
        DeepRKMClassifier((2,), kernel="linear", max_iter=2, smoother_bandwidth="kernel").fit(X, y)
