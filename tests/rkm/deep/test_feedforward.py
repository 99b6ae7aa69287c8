"""Deep feed-forward networks trained within the deep RKM objective (paper §5.3): DeepRKM(solver="feedforward")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from _asserts import central_differences

from kppca.rkm import DeepRKM, KPCALevel, LSSVMLevel
from kppca.rkm.deep.feedforward import _initial, _layout, feedforward_objective, toeplitz

LEVELS = [KPCALevel(2, 0.5), KPCALevel(2, 2.0), LSSVMLevel(ridge=0.3, eta=0.7)]


def _np_objective(flat, layout, X, Y, etas, ridge, c, objective="stabilized", c0=0.0):
    """J_deep,Pstab in numpy from the flat unknowns (independent of the torch code); Table 1's variants:
    "variance" subtracts c0 sum_j ||e_j||^2 of every KPCA level, "regression" keeps the last level's terms only."""
    it = iter([np.asarray(t, dtype=np.float64) for t in flat])
    mats = []
    for spec in layout:
        u, beta, W = next(it), next(it), next(it)
        if spec["toeplitz"]:
            n_in = spec["n_in"]
            u = scipy.linalg.toeplitz(u[n_in - 1:], u[n_in - 1::-1])
        mats.append((u, beta, W))
    B = next(it)
    loglams = list(it)
    z, J = X, 0.0
    for l, (U, beta, W) in enumerate(mats):
        a = np.tanh(z @ U.T + beta) @ W
        if l == len(mats) - 1:
            r = Y - a - B
            J += (r**2).sum() / (2 * ridge) + etas[l] / 2 * (W**2).sum()
        else:
            lam = np.exp(loglams[l])
            Jl = -0.5 * (a**2 / lam).sum() + etas[l] / 2 * (W**2).sum()
            if objective != "regression":
                J += Jl + c / 2 * Jl**2
            if objective == "variance":
                J -= c0 * np.trace(a.T @ a)  # Tr(sum_j e_j e_j^T)
            z = a / lam
    return J


def _problem(toeplitz_u, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(15, 3))
    Y = rng.normal(size=(15, 2))
    layout = _layout(LEVELS, 3, 2, [4, 3, 5], toeplitz_u)
    gen = torch.Generator().manual_seed(seed)
    flat = _initial(layout, torch.from_numpy(X), gen)
    # move away from the start (Lam = I, B = 0) so every term is exercised
    flat = [t + 0.3 * torch.randn(t.shape, generator=gen, dtype=torch.float64) for t in flat]
    return X, Y, layout, flat


@parametrize_with_checks([DeepRKM(LEVELS, solver="feedforward", hidden_units=4, c_stab=0.01, max_iter=60,
                                 random_state=0),
                          DeepRKM(LEVELS, solver="feedforward", hidden_units=4, c_stab=1.0, objective="variance",
                                  c0=0.1, max_iter=60, random_state=0),
                          DeepRKM(LEVELS, solver="feedforward", hidden_units=4, objective="regression", max_iter=60,
                                  random_state=0)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # few iterations on purpose
        check(estimator)


def test_toeplitz_matches_scipy():
    t = torch.arange(1.0, 8.0, dtype=torch.float64)  # n_rows + n_cols - 1 = 7
    U = toeplitz(t, 4, 4).numpy()
    np.testing.assert_array_equal(U, scipy.linalg.toeplitz(t.numpy()[3:], t.numpy()[3::-1]))
    assert toeplitz(t, 3, 5).shape == (3, 5)


@pytest.mark.parametrize("toeplitz_u", [False, True])
def test_objective_matches_independent_numpy(toeplitz_u):
    X, Y, layout, flat = _problem(toeplitz_u)
    J = feedforward_objective(LEVELS, layout, torch.as_tensor(X), torch.as_tensor(Y), c_stab=0.8)
    ref = _np_objective([t.numpy() for t in flat], layout, X, Y, [0.5, 2.0, 0.7], 0.3, 0.8)
    # sums of O(100) terms of size O(1): rounding ~1e-14 relative
    assert float(J(*flat)) == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("toeplitz_u", [False, True])
@pytest.mark.parametrize("objective, c0", [("variance", 0.1), ("variance", 10.0), ("regression", 1.0)])
def test_objective_variants_match_independent_numpy(toeplitz_u, objective, c0):
    X, Y, layout, flat = _problem(toeplitz_u)
    J = feedforward_objective(LEVELS, layout, torch.as_tensor(X), torch.as_tensor(Y), c_stab=0.8,
                              objective=objective, c0=c0)
    ref = _np_objective([t.numpy() for t in flat], layout, X, Y, [0.5, 2.0, 0.7], 0.3, 0.8, objective, c0)
    base = _np_objective([t.numpy() for t in flat], layout, X, Y, [0.5, 2.0, 0.7], 0.3, 0.8)
    assert abs(ref - base) > 1e-3 * abs(base)  # the variant changes the value at this point
    # sums of O(100) terms of size O(1) (times c0 <= 10): rounding ~1e-14 relative
    assert float(J(*flat)) == pytest.approx(ref, rel=1e-12)


def test_regression_objective_is_the_pure_regression_fit():
    """2,C: J = 1/(2 ridge) sum ||y - yhat||^2 + eta_L/2 ||W_L||^2, whatever the KPCA levels' eta and c_stab."""
    X, Y, layout, flat = _problem(False, seed=2)
    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    other = [KPCALevel(2, 30.0), KPCALevel(2, 1e-3), LEVELS[2]]
    J1 = float(feedforward_objective(LEVELS, layout, Xt, Yt, c_stab=0.8, objective="regression")(*flat))
    J2 = float(feedforward_objective(other, layout, Xt, Yt, c_stab=50.0, objective="regression")(*flat))
    from kppca.rkm.deep.feedforward import _weights, network_forward
    weights, B = _weights(flat, layout)
    _, yhat = network_forward(weights, B, Xt)
    W3 = flat[8].numpy()
    pure = ((Y - yhat.numpy()) ** 2).sum() / (2 * 0.3) + 0.7 / 2 * (W3**2).sum()
    assert J1 == pytest.approx(pure, rel=1e-12) and J2 == pytest.approx(pure, rel=1e-12)


@pytest.mark.parametrize("toeplitz_u", [False, True])
@pytest.mark.parametrize("objective", ["stabilized", "variance"])
def test_gradient_matches_finite_differences(toeplitz_u, objective):
    X, Y, layout, flat = _problem(toeplitz_u, seed=1)
    J = feedforward_objective(LEVELS, layout, torch.as_tensor(X), torch.as_tensor(Y), c_stab=0.8,
                              objective=objective, c0=0.1)
    xs = [t.clone().requires_grad_(True) for t in flat]
    grads = torch.autograd.grad(J(*xs), xs)
    base = [t.numpy().copy() for t in flat]
    args = (layout, X, Y, [0.5, 2.0, 0.7], 0.3, 0.8, objective, 0.1)
    scale = max(1.0, abs(_np_objective(base, *args)))
    for g, fd in zip(grads, central_differences(lambda vals: _np_objective(vals, *args), base, h=1e-5)):
        # central differences: truncation h^2 |J'''| ~ 1e-10 |J|, rounding eps |J| / h ~ 1e-11 |J|
        np.testing.assert_allclose(g.numpy().ravel(), fd, atol=1e-7 * scale, rtol=1e-6)


def test_toeplitz_has_fewer_unknowns():
    _, _, layout, flat = _problem(True)
    _, _, layout_full, flat_full = _problem(False)
    assert flat[0].shape == (4 + 3 - 1,) and flat_full[0].shape == (4, 3)
    assert flat[3].shape == (3 + 2 - 1,)  # second level: 3 units on s1 = 2 inputs
    assert flat[6].shape == flat_full[6].shape == (5, 2)  # the last level's U stays full


def _synthetic(n_noise=0.1, seed=0):
    F = lambda x: np.sin(0.3 * x) + np.cos(0.5 * x) + np.sin(2 * x)  # noqa: E731
    x = np.arange(-10, 10 + 1e-9, 0.2)[:, None]
    rng = np.random.default_rng(seed)
    return x, F(x[:, 0]) + n_noise * rng.normal(size=len(x)), F


@pytest.mark.parametrize("toeplitz_u", [False, True])
def test_fit_records_non_increasing_objective_and_predicts_the_network(toeplitz_u):
    X, y, F = _synthetic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = DeepRKM(LEVELS, solver="feedforward", hidden_units=(10, 6, 10), toeplitz=toeplitz_u, c_stab=0.01,
                    max_iter=150, random_state=0).fit(X, y)
    h = np.array([v for _, v in m.objective_history_])
    assert len(h) == m.n_iter_ + 1 and np.all(np.diff(h) <= 0) and h[-1] < h[0]
    # prediction = the network written out in numpy from the stored weights
    st = m.solver_state_
    z = X
    for l in range(2):
        z = np.tanh(z @ st["U"][l].numpy().T + st["beta"][l].numpy()) @ st["W"][l].numpy() / m.scales_[l].numpy()
    out = np.tanh(z @ st["U"][2].numpy().T + st["beta"][2].numpy()) @ st["W"][2].numpy() + m.intercept_.numpy()
    np.testing.assert_allclose(m.predict(X), out[:, 0], rtol=1e-12, atol=1e-12)
    if toeplitz_u:
        U = st["U"][0].numpy()
        np.testing.assert_array_equal(U[1:, 1:], U[:-1, :-1])  # constant diagonals
    # the fit explains most of the signal (the mean predictor has R^2 = 0)
    assert m.score(X, y) > 0.5


def test_feedforward_needs_kpca_levels_first_and_hidden_units():
    X, y, _ = _synthetic()
    with pytest.raises(ValueError, match="KPCA levels followed by the regression level"):
        DeepRKM([LSSVMLevel(ridge=0.1), KPCALevel(1)], solver="feedforward", hidden_units=3).fit(X, y)
    with pytest.raises(ValueError, match="hidden_units"):
        DeepRKM(LEVELS, solver="feedforward", hidden_units=(3, 3)).fit(X, y)
    with pytest.raises(ValueError, match="c_stab > 0"):
        DeepRKM(LEVELS, solver="feedforward", hidden_units=3, c_stab=0.0).fit(X, y)


def test_feedforward_fits_with_the_default_levels_and_hidden_units():
    """Issue 26, item 6. Before: levels=None refused ("needs KPCA levels followed by the regression level") and
    hidden_units=None refused: the default of every solver must fit."""
    X, y, _ = _synthetic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = DeepRKM(solver="feedforward", max_iter=20, random_state=0).fit(X, y)
    assert [type(lev).__name__ for lev in m.levels_] == ["KPCALevel", "KPCALevel", "LSSVMLevel"]
    assert [U.shape[0] for U in m.solver_state_["U"]] == [20, 20, 20]  # hidden_units=None: 20 per level
    assert np.isfinite(m.predict(X)).all()


@pytest.mark.parametrize("objective, c0", [("variance", 10.0), ("regression", 1.0)])
def test_variant_fits_record_non_increasing_objective(objective, c0):
    X, y, _ = _synthetic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m = DeepRKM(LEVELS, solver="feedforward", hidden_units=(10, 6, 10), c_stab=0.01, objective=objective, c0=c0,
                    max_iter=100, random_state=0).fit(X, y)
    h = np.array([v for _, v in m.objective_history_])
    # every accepted L-BFGS step lowers J (a step that does not is rejected and ends the run)
    assert len(h) == m.n_iter_ + 1 and np.all(np.diff(h) <= 0) and h[-1] < h[0]
    if objective == "regression":  # (the variance reward, c0 = 10 against c_stab = 0.01, spreads the scores instead)
        assert m.score(X, y) > 0.5


def test_regression_fit_ignores_the_kpca_terms():
    """2,C minimises the regression level's terms only: the KPCA levels' eta and c_stab do not change the fit
    (they do with the stabilised objective)."""
    X, y, _ = _synthetic()
    other = [KPCALevel(2, 30.0), KPCALevel(2, 1e-3), LEVELS[2]]
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for objective in ("regression", "stabilized"):
            a = DeepRKM(LEVELS, solver="feedforward", hidden_units=4, objective=objective, c_stab=0.01, max_iter=20,
                        random_state=0).fit(X, y)
            b = DeepRKM(other, solver="feedforward", hidden_units=4, objective=objective, c_stab=5.0, max_iter=20,
                        random_state=0).fit(X, y)
            fits[objective] = (a, b)
    a, b = fits["regression"]
    assert a.objective_history_ == b.objective_history_
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    a, b = fits["stabilized"]
    assert a.objective_history_ != b.objective_history_


def test_objective_parameters_are_validated():
    X, y, _ = _synthetic()
    with pytest.raises(ValueError, match="objective='variance' needs c_stab > 0"):
        DeepRKM(LEVELS, solver="feedforward", hidden_units=3, objective="variance", c_stab=0.0).fit(X, y)
    with pytest.raises(ValueError, match="objective"):
        DeepRKM(LEVELS, solver="feedforward", hidden_units=3, objective="A").fit(X, y)
    with pytest.raises(ValueError, match="c0"):
        DeepRKM(LEVELS, solver="feedforward", hidden_units=3, objective="variance", c0=0.0).fit(X, y)
    with pytest.raises(ValueError, match="solver='primal' or solver='feedforward'"):
        DeepRKM(objective="regression").fit(X, y)  # the level-wise solver has no primal objective
    m = DeepRKM(LEVELS, solver="feedforward", hidden_units=3, objective="regression", c_stab=0.0, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert np.isfinite(m.fit(X, y).predict(X)).all()  # no stabilisation needed without KPCA terms


def test_variance_objective_is_unbounded_below():
    """The documented caveat of 2,A: scaling W_1 by t and choosing Lam_1 = (sum ||e_1||^2 / 2) / (1/c + eta/2 ||W_1||^2)
    (all components equal) holds J_1 at -1/c_stab, the minimum of the stabilised term, while -c0 ||e_1||^2 falls
    like -t^2 (the later levels see tanh-saturated inputs, so their terms stay bounded)."""
    X, Y, layout, flat = _problem(False, seed=3)
    base = [t.numpy().copy() for t in flat]
    c, c0, eta1 = 0.8, 0.1, 0.5
    vals = []
    for t in (1.0, 1e2, 1e4):
        v = [a.copy() for a in base]
        v[2] = t * base[2]
        e1 = np.tanh(X @ v[0].T + v[1]) @ v[2]
        lam = 0.5 * (e1**2).sum() / (1 / c + eta1 / 2 * (v[2] ** 2).sum())
        v[10] = np.full_like(base[10], np.log(lam))
        vals.append(_np_objective(v, layout, X, Y, [eta1, 2.0, 0.7], 0.3, c, "variance", c0))
    J = feedforward_objective(LEVELS, layout, torch.as_tensor(X), torch.as_tensor(Y), c_stab=c, objective="variance",
                              c0=c0)
    assert float(J(*[torch.as_tensor(a) for a in v])) == pytest.approx(vals[-1], rel=1e-10)
    assert vals[0] > vals[1] > vals[2] and vals[2] < -1e6  # ~ -c0 t^2 ||e_1(t=1)||^2


def test_initial_units_are_centred_on_training_points():
    """Issue 26: each hidden unit's tanh starts with its transition (pre-activation 0) at one training point's
    input to its layer (checked independently in numpy: the layer's inputs recomputed from the initial weights),
    not at the origin; centred=False keeps beta = 0."""
    rng = np.random.default_rng(3)
    X = rng.normal(loc=5.0, size=(30, 3))  # data away from the origin
    layout = _layout(LEVELS, 3, 2, [4, 3, 5], False)
    flat = [t.numpy() for t in _initial(layout, torch.from_numpy(X), torch.Generator().manual_seed(0))]
    z = X
    for l in range(len(layout)):
        U, beta, W = flat[3 * l: 3 * l + 3]
        pre = z @ U.T + beta  # (N, units)
        # 0 at some training point for every unit, up to rounding of a sum of 3-5 products of O(10) values
        assert np.abs(pre).min(axis=0).max() < 1e-12
        z = np.tanh(pre) @ W  # Lam = I at the start
    plain = _initial(layout, torch.from_numpy(X), torch.Generator().manual_seed(0), centred=False)
    assert all(float(plain[3 * l + 1].abs().max()) == 0.0 for l in range(len(layout)))


def test_default_budget_is_the_solvers_own(monkeypatch):
    """max_iter=None (the default): 600 L-BFGS iterations for the feed-forward network, 200 for the primal
    solver; an explicit max_iter is used as given."""
    from kppca.rkm.deep.feedforward import DEFAULT_MAX_ITER
    from kppca.rkm.deep.solvers import get_solver

    assert DeepRKM().max_iter is None
    assert get_solver("feedforward").max_iter == DEFAULT_MAX_ITER == 600 and get_solver("primal").max_iter == 200
    X, y, _ = _synthetic()
    seen = []
    import kppca.rkm.deep.feedforward as ff

    original = ff.minimize

    def spy(*args, **kwargs):
        seen.append(kwargs["max_iter"])
        return original(*args, **{**kwargs, "max_iter": 2})  # the budget is what is checked, not the fit

    monkeypatch.setattr(ff, "minimize", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        DeepRKM(solver="feedforward", random_state=0).fit(X, y)
        DeepRKM(solver="feedforward", max_iter=7, random_state=0).fit(X, y)
    assert seen == [600, 7]
