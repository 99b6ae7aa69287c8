"""Deep RKM (2017 paper): level-wise saddle-point passes and the reduced-set primal solver."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.utils.estimator_checks import parametrize_with_checks

from _asserts import central_differences

from kppca.kernels import RBF
from kppca.rkm import DeepRKM, KPCALevel, LSSVMLevel, LSSVMRegressor

EPS = float(np.finfo(np.float64).eps)


def F(x):
    return np.sin(0.3 * x) + np.cos(0.5 * x) + np.sin(2 * x)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = np.arange(-10, 10, 0.2)
    y = F(x) + 0.5 * rng.normal(size=x.size)
    return x[:, None], y


# ---------------------------------------------------------------- level-wise solver
@pytest.mark.parametrize("s", [(1, 1), (7, 2)])
def test_stationarity_of_the_levels(data, s):
    X, y = data
    m = DeepRKM(kernel=RBF(0.7), n_components=s, ridge=0.05, eta_levels=(1e-2, 1e-2), n_passes=4,
                random_state=0).fit(X, y)
    (H1, H2, H3), b = m.hidden_features_, m.intercept_
    K = RBF(0.7).gram(torch.tensor(X), torch.tensor(X))
    # The last phase (backward) ends with level 1: its fused linear system holds exactly.
    r1 = (K + 1.0 * H2 @ H2.T / 1e-2) @ H1 + 0.05 * H1 + b - torch.tensor(y)[:, None]
    assert float(r1.abs().max()) < 1e-8 * float(np.abs(y).max())
    assert float(H1.sum(0).abs().max()) < 1e-8 * float(H1.abs().sum())
    # The KPCA levels hold unit-norm eigenvectors (H^T H = I).
    for H, k in ((H2, s[0]), (H3, s[1])):
        assert float((H.T @ H - torch.eye(k, dtype=H.dtype)).abs().max()) < 1e-12
    assert len(m.objective_history_) == 1 + 2 * 4
    assert len(m.residual_history_) == 1 + 4 and all(len(r) == 3 for r in m.residual_history_)
    assert m.residual_history_[-1][0] < 1e-12  # level 1 was solved last


@pytest.mark.parametrize("s", [(1, 1), (3, 2)])
def test_levelwise_fixed_point(data, s):
    """With a weak coupling (eta2 = 100) the passes contract to a fixed point where every level's
    equations hold: the relative residuals are backward errors, O(N eps) ~ 1e-14 once converged."""
    X, y = data
    m = DeepRKM(kernel=RBF(0.7), n_components=s, ridge=0.05, eta_levels=(100.0, 1.0), n_passes=30,
                random_state=0).fit(X, y)
    assert max(m.residual_history_[-1]) < 1e-8
    # ... and independently of the recorded residuals: the level equations at the returned point.
    Xt, Y = torch.tensor(X), torch.tensor(y)[:, None]
    (H1, H2, H3), b = m.hidden_features_, m.intercept_
    A = RBF(0.7).gram(Xt, Xt) + H2 @ H2.T / 100.0 + 0.05 * torch.eye(len(y), dtype=H1.dtype)
    assert float(torch.linalg.norm(A @ H1 + b - Y)) < 1e-8 * float(torch.linalg.norm(A) * torch.linalg.norm(H1))
    for M, H in ((H1 @ H1.T / 100.0 + H3 @ H3.T, H2), (H2 @ H2.T, H3)):
        R = M @ H - H @ (H.T @ M @ H)
        assert float(torch.linalg.norm(R)) < 1e-8 * float(torch.linalg.norm(M))
    # the objective settles too: the last two passes record the same values to rounding
    vals = [v for _, v in m.objective_history_]
    assert abs(vals[-1] - vals[-3]) <= 1e-8 * abs(vals[-1])


def test_zero_passes_is_the_plain_lssvm(data):
    X, y = data
    deep = DeepRKM(kernel=RBF(0.7), ridge=0.05, n_passes=0).fit(X, y)
    basic = LSSVMRegressor(RBF(0.7), ridge=0.05).fit(X, y)
    assert np.abs(deep.predict(X) - basic.predict(X)).max() < 1e-9


def test_objective_history_is_finite_and_deterministic(data):
    X, y = data
    a = DeepRKM(kernel=RBF(0.7), n_components=(3, 2), random_state=1).fit(X, y)
    b = DeepRKM(kernel=RBF(0.7), n_components=(3, 2), random_state=1).fit(X, y)
    assert a.objective_history_ == b.objective_history_
    assert a.residual_history_ == b.residual_history_
    assert all(np.isfinite(v) for _, v in a.objective_history_)
    assert np.array_equal(a.predict(X), b.predict(X))


def test_levels_none_equals_explicit_levels(data):
    X, y = data
    a = DeepRKM(kernel=RBF(0.7), n_components=(3, 2), ridge=0.05, eta_levels=(1.0, 0.5), random_state=0).fit(X, y)
    levels = [LSSVMLevel(RBF(0.7), ridge=0.05), KPCALevel(3, eta=1.0), KPCALevel(2, eta=0.5)]
    b = DeepRKM(levels, random_state=0).fit(X, y)
    assert a.objective_history_ == b.objective_history_
    assert np.array_equal(a.predict(X), b.predict(X))


# ---------------------------------------------------------------- both level orders
ORDERS = {
    "lssvm_first": [LSSVMLevel(RBF(0.7), ridge=0.05), KPCALevel(3, eta=1.0), KPCALevel(2, eta=1.0)],
    "lssvm_last": [KPCALevel(10, eta=1.0, kernel=RBF(0.7)), KPCALevel(3, eta=1.0), LSSVMLevel("linear", ridge=0.05)],
    "one_kpca_level_last": [KPCALevel(10, kernel=RBF(0.7)), LSSVMLevel("linear", ridge=0.05)],
}


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_both_orders_fit_and_predict_levelwise(data, order):
    X, y = data
    m = DeepRKM(ORDERS[order], n_passes=5, random_state=0).fit(X, y)
    pred = m.predict(X)
    assert isinstance(pred, np.ndarray) and pred.shape == y.shape and np.isfinite(pred).all()
    assert len(m.hidden_features_) == len(ORDERS[order])
    assert len(m.residual_history_[-1]) == len(ORDERS[order])
    if order == "lssvm_first":  # eq. 4.16 is the fused LS-SVM itself
        assert m.score(X, y) > 0.3


@pytest.mark.parametrize("order", ["lssvm_first", "lssvm_last"])
def test_both_orders_fit_and_predict_primal(data, order):
    X, y = data
    levels = [LSSVMLevel(RBF(0.7), ridge=0.05), KPCALevel(3, kernel=RBF(1.0)), KPCALevel(2)] if order == "lssvm_first" \
        else [KPCALevel(5, kernel=RBF(0.7)), KPCALevel(2, kernel=RBF(1.0)), LSSVMLevel(RBF(1.0), ridge=0.05)]
    m = DeepRKM(levels, solver="primal", n_prototypes=30, max_iter=10, random_state=0).fit(X, y)
    assert m.predict(X).shape == y.shape and np.isfinite(m.predict(X)).all()
    assert [h.shape[0] for h in m.hidden_features_] == [30, 30, 30]


# ---------------------------------------------------------------- primal reduced-set solver
def _primal(seed=0, **kw):
    levels = [KPCALevel(5, kernel=RBF(0.7)), KPCALevel(2, kernel=RBF(1.0)), LSSVMLevel(RBF(1.0), ridge=0.1)]
    return DeepRKM(levels, solver="primal", n_prototypes=40, random_state=seed, **{"max_iter": 60, **kw})


def test_primal_objective_is_non_increasing_and_deterministic(data):
    X, y = data
    a, b = _primal().fit(X, y), _primal().fit(X, y)
    vals = np.array([v for _, v in a.objective_history_])
    assert len(vals) == a.n_iter_ + 1 and a.n_iter_ > 5
    # accepted iterates lower J; recorded values are each a single evaluation of J, so the only
    # slack is the rounding of one evaluation: a few eps times the magnitude of J
    slack = 16 * EPS * np.abs(vals).max()
    assert np.all(np.diff(vals) <= slack)
    assert vals[-1] < vals[0]
    assert a.objective_history_ == b.objective_history_
    assert np.array_equal(a.predict(X), b.predict(X))
    assert torch.equal(a.prototype_indices_, b.prototype_indices_)
    c = _primal(seed=1).fit(X, y)
    assert not torch.equal(a.prototype_indices_, c.prototype_indices_)


def test_primal_beats_the_mean_on_the_synthetic_function(data):
    """The paper's architecture (LS-SVM + 2 linear KPCA levels, 1/eta2 = 1/eta3 = 1e5) in the primal
    with 40 of 100 points as prototypes: noise variance 0.25, so a smoother with ~20 effective degrees
    of freedom has a test MSE ~ 0.25 * 20 / 100 = 0.05, against ~1.4 for the mean."""
    X, y = data
    m = DeepRKM(kernel=RBF(0.7), ridge=0.05, solver="primal", n_prototypes=40, max_iter=60, random_state=0).fit(X, y)
    xt = np.arange(-9.99, 9.99, 0.07)
    mse = float(np.mean((m.predict(xt[:, None]) - F(xt)) ** 2))
    mse_mean = float(np.mean((F(xt) - y.mean()) ** 2))
    assert mse < 0.1 * mse_mean


def test_primal_lssvm_first_starts_at_the_reduced_set_lssvm(data):
    """max_iter=0 returns the initial point: the Nystrom (reduced-set) LS-SVM, which with all points
    as prototypes is the full LS-SVM (the same ridge problem in the dual)."""
    X, y = data
    m = DeepRKM(kernel=RBF(0.7), ridge=0.05, eta_levels=(1.0, 1.0), solver="primal", n_prototypes=len(y),
                max_iter=0, random_state=0).fit(X, y)
    basic = LSSVMRegressor(RBF(0.7), ridge=0.05).fit(X, y)
    assert np.abs(m.predict(X) - basic.predict(X)).max() < 1e-6 * np.abs(y).max()


# ---------------------------------------------------------------- errors
def test_bad_components():
    with pytest.raises(ValueError, match="n_components"):
        DeepRKM(n_components=(1, 2)).fit(np.zeros((5, 1)) + np.arange(5)[:, None], np.arange(5.0))


@pytest.mark.parametrize("levels, match", [
    ([KPCALevel(1), KPCALevel(1)], "levels must .* exactly one output level"),
    ([LSSVMLevel()], "levels must be a list of at least two"),
    ([KPCALevel(1), LSSVMLevel(), KPCALevel(1)], "first"),
    ([LSSVMLevel(), LSSVMLevel(), KPCALevel(1)], "levels must .* exactly one output level"),
    ([LSSVMLevel(), "kpca"], "of type"),
    ([LSSVMLevel(), KPCALevel(0)], "n_components"),
    ([LSSVMLevel(), KPCALevel(2, eta=-1.0)], "eta"),
    ([LSSVMLevel(ridge=0.0), KPCALevel(2)], "ridge"),
    ([LSSVMLevel(), KPCALevel(2, kernel="rbf")], "linear kernels"),
    ([KPCALevel(2, kernel="rbf"), LSSVMLevel("rbf")], "linear kernels"),
])
def test_bad_levels(levels, match):
    X, y = np.arange(8.0)[:, None], np.sin(np.arange(8.0))
    with pytest.raises(ValueError, match=match):
        DeepRKM(levels).fit(X, y)


def test_primal_accepts_nonlinear_later_levels():
    X, y = np.arange(8.0)[:, None], np.sin(np.arange(8.0))
    DeepRKM([LSSVMLevel(), KPCALevel(2, kernel="rbf")], solver="primal", max_iter=3, random_state=0).fit(X, y)


# ---------------------------------------------------------------- reliability (issue 18)
def _sine(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.sin(X[:, 0]) + 0.1 * X[:, 1]


def test_float32_fits_with_the_defaults_like_float64():
    """Item 2: the default level-wise system K/eta1 + H2 H2^T/eta2 + ridge I has condition ~1e7 > 1/eps(float32);
    float32 data are solved in float64, so a float32 fit is the float64 fit of the same (exactly converted)
    numbers, its predictions that fit's rounded to float32 -- bit for bit."""
    X, y = _sine()
    X32, y32 = X.astype(np.float32), y.astype(np.float32)
    m32 = DeepRKM(random_state=0).fit(X32, y32)
    m64 = DeepRKM(random_state=0).fit(X32.astype(np.float64), y32.astype(np.float64))
    p32 = m32.predict(X32)
    assert p32.dtype == np.float32
    assert np.array_equal(p32, m64.predict(X32.astype(np.float64)).astype(np.float32))
    assert m32.score(X32, y32) > 0.99


def test_primal_float32_polynomial_on_large_scale_predicts_finite():
    """Item 4: Polynomial(2, 1) on 1e6-scaled float32 data squares Gram entries ~1e25 beyond float32."""
    from kppca.kernels import Polynomial

    X, y = _sine()
    X32 = (1e6 * X).astype(np.float32)
    m = DeepRKM(kernel=Polynomial(2, 1), solver="primal", n_prototypes=30, max_iter=20, random_state=0)
    m.fit(X32, y.astype(np.float32))
    assert np.isfinite(m.predict(X32)).all()


def test_primal_nearly_constant_float32_data_fit():
    """Item 4: a singular reduced-set ridge system (all kernel rows equal) is solved by its pseudo-inverse."""
    X, y = _sine()
    X32 = (1.0 + 1e-7 * X).astype(np.float32)
    # the default width follows the data's (tiny) scale; any fit must be finite
    assert np.isfinite(DeepRKM(solver="primal", max_iter=20, random_state=0).fit(X32, y.astype(np.float32))
                       .predict(X32)).all()
    m = DeepRKM(kernel=RBF(1.0), solver="primal", max_iter=20, random_state=0).fit(X32, y.astype(np.float32))
    p = m.predict(X32)
    assert np.isfinite(p).all()
    # at width 1 nothing distinguishes the rows: the prediction is the mean of y, to float32 rounding of the output
    assert np.allclose(p, y.mean(), rtol=0, atol=1e-5)


def test_primal_is_scale_equivariant_in_y():
    """Item 4: y * 1e-300 predicted ~1e15 too large; the standardised objective makes predictions
    scale with y (the same L-BFGS path up to the rounding of the standardisation, a few eps)."""
    X, y = _sine()
    a = DeepRKM(solver="primal", max_iter=20, random_state=0).fit(X, y)
    b = DeepRKM(solver="primal", max_iter=20, random_state=0).fit(X, y * 1e-300)
    assert np.allclose(b.predict(X) / 1e-300, a.predict(X), rtol=1e-6, atol=1e-6 * np.abs(y).max())


def test_infinite_eta_levels_says_finite():
    X, y = _sine()
    with pytest.raises(ValueError, match=r"eta_levels\[0\] must be a float in the range \(0, inf\) .*got inf"):
        DeepRKM(eta_levels=(np.inf, 1.0)).fit(X, y)


def test_failed_fit_leaves_the_model_unchanged():
    X, y = _sine()
    m = DeepRKM(random_state=0).fit(X, y)
    before = m.predict(X)
    with pytest.raises(ValueError):
        m.set_params(eta_levels=(np.inf, 1.0)).fit(X, y)
    assert np.array_equal(m.predict(X), before)


def test_not_fitted_message():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match=r"call fit\(X, y\) before predict\(\)"):
        DeepRKM().predict(np.zeros((2, 1)))


def test_default_rbf_width_follows_the_data():
    """Item 7: kernel="rbf" takes scikit-learn's gamma="scale" width sqrt(D Var(X) / 2) (numpy, independent)."""
    X, y = _sine()
    m = DeepRKM(random_state=0).fit(X * 1e3, y)
    assert np.isclose(m.kernel_.bandwidth, np.sqrt(X.shape[1] * (X * 1e3).var() / 2), rtol=1e-12)
    assert m.score(X * 1e3, y) > 0.99  # scale-free: the same fit as on X


def test_primal_warns_when_stopped_early_at_the_callers_line():
    from sklearn.exceptions import ConvergenceWarning

    X, y = _sine()
    with pytest.warns(ConvergenceWarning, match=r"DeepRKM\(solver='primal'\) stopped before convergence") as rec:
        DeepRKM(solver="primal", max_iter=2, random_state=0).fit(X, y)
    assert rec[0].filename == __file__


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_levelwise_at_extreme_y_scales_says_standardise(scale):
    """The level-wise passes are not equivariant to the scale of y (the output level's features enter the next
    level's kernel squared): beyond the floating-point range the message says what to change."""
    X, y = _sine()
    with pytest.raises(ValueError, match=r"standardise y .*solver='primal'"):
        DeepRKM(random_state=0).fit(X, y * scale)


SWEEP = [(scale, offset, kernel, n, solver) for scale in (1e-6, 1.0, 1e6) for offset in (0.0, 1e4)
         for kernel in ("rbf", "linear", "poly") for n in (3, 30) for solver in ("levelwise", "primal")]


@pytest.mark.parametrize("scale, offset, kernel, n, solver", SWEEP)
def test_sweep_float32_fits_where_float64_does(scale, offset, kernel, n, solver):
    """A bounded sweep (scales 1e-6..1e6, offsets, kernels, N, both solvers): only ValueErrors, finite outputs
    after every successful fit, and float32 fitting wherever float64 does (float32 is solved in float64) unless
    its message says to use float64 (1e4 + 1e-6 x is constant in float32)."""
    from kppca.kernels import Linear, Polynomial

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    k = {"rbf": "rbf", "linear": Linear(), "poly": Polynomial(2, 1)}[kernel]
    outcome = {}
    for dt in (np.float64, np.float32):
        Xs = (scale * X + offset).astype(dt)
        m = DeepRKM(kernel=k, solver=solver, max_iter=10, n_prototypes=20, random_state=0)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p = m.fit(Xs, y.astype(dt)).predict(Xs)
        except ValueError as exc:
            # float32 may refuse only where its rounding loses the data, and then it says to use float64
            outcome[dt] = "refused, use float64" if "float64 data" in str(exc) else "refused"
            continue
        assert p.dtype == dt and np.isfinite(p).all()
        outcome[dt] = "fit"
    assert outcome[np.float32] == outcome[np.float64] or outcome[np.float32] == "refused, use float64"


def test_constant_X_with_the_data_scaled_default_says_what_to_pass():
    X, y = _sine()
    with pytest.raises(ValueError, match=r"no two distinct rows.*kernel=RBF\(1.0\)") as info:
        DeepRKM().fit(np.ones_like(X), y)
    assert "float64 data" not in str(info.value)
    with pytest.raises(ValueError, match="float64 data"):
        DeepRKM().fit((1e4 + 1e-6 * X).astype(np.float32), y.astype(np.float32))
    assert np.isfinite(DeepRKM(kernel=RBF(1.0)).fit(np.ones_like(X), y).predict(X)).all()


# ---------------------------------------------------------------- Table 1 objective variants (primal)
def _rbf_np(A, B, s):
    d = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-d / (2 * s * s))


def _np_reduced_set(X, P, Y, H, b, lam, c_stab, objective, c0):
    """The reduced-set objective (eq. 5.3) of _primal's levels in numpy: KPCA(RBF 0.7, eta 1) -> KPCA(RBF 1.0,
    eta 1) -> LS-SVM(RBF 1.0, ridge 0.1, eta 1), and Table 1's variants."""
    sig = [0.7, 1.0, 1.0]
    Ps = [P, H[0], H[1]]
    z, J = X, 0.0
    for l in range(3):
        e = _rbf_np(z, Ps[l], sig[l]) @ H[l]
        reg = np.trace(H[l].T @ _rbf_np(Ps[l], Ps[l], sig[l]) @ H[l]) / 2
        if l == 2:
            J += ((Y - e - b) ** 2).sum() / (2 * 0.1) + reg
        else:
            Jl = -0.5 * (e**2 / lam[l]).sum() + reg
            if objective != "regression":
                J += Jl + c_stab / 2 * Jl**2
            if objective == "variance":
                J -= c0 * np.trace(e.T @ e)
            z = e / lam[l]
    return J


def _primal_point(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(12, 1))
    Y = rng.normal(size=(12, 1))
    P = X[:6]
    H = [rng.normal(size=(6, 5)), rng.normal(size=(6, 2)), rng.normal(size=(6, 1))]
    b = rng.normal(size=1)
    lam = [np.exp(rng.normal(size=5)), np.exp(rng.normal(size=2))]
    return X, Y, P, H, b, lam


def _primal_J(X, Y, P, c_stab, objective, c0):
    from kppca.rkm.deep.reduced_set import _objective
    levels = [KPCALevel(5, kernel=RBF(0.7)), KPCALevel(2, kernel=RBF(1.0)), LSSVMLevel(RBF(1.0), ridge=0.1)]
    Xt, Pt = torch.as_tensor(X), torch.as_tensor(P)
    grams0 = (RBF(0.7).gram(Xt, Pt), RBF(0.7).gram(Pt, Pt))
    return _objective(levels, Pt, torch.as_tensor(Y), grams0, c_stab, objective, c0)


@pytest.mark.parametrize("objective, c0", [("stabilized", 1.0), ("variance", 0.1), ("variance", 1000.0),
                                           ("regression", 1.0)])
def test_primal_objective_variants_match_independent_numpy(objective, c0):
    X, Y, P, H, b, lam = _primal_point()
    J = _primal_J(X, Y, P, 0.3, objective, c0)
    flat = [torch.as_tensor(h) for h in H] + [torch.as_tensor(b)] + [torch.as_tensor(np.log(v)) for v in lam]
    ref = _np_reduced_set(X, P, Y, H, b, lam, 0.3, objective, c0)
    # sums of O(100) terms of size up to O(1e3) (c0 = 1000): rounding ~1e-14 relative
    assert float(J(*flat)) == pytest.approx(ref, rel=1e-11)


def test_primal_variance_gradient_matches_finite_differences():
    X, Y, P, H, b, lam = _primal_point(seed=1)
    J = _primal_J(X, Y, P, 0.3, "variance", 0.1)
    xs = [torch.as_tensor(h).requires_grad_(True) for h in H] + [torch.as_tensor(b).requires_grad_(True)] + \
        [torch.as_tensor(np.log(v)).requires_grad_(True) for v in lam]
    grads = torch.autograd.grad(J(*xs), xs)
    base = [t.detach().numpy().copy() for t in xs]

    def np_J(vals):
        return _np_reduced_set(X, P, Y, vals[:3], vals[3], [np.exp(v) for v in vals[4:]], 0.3, "variance", 0.1)

    scale = max(1.0, abs(np_J(base)))
    for g, fd in zip(grads, central_differences(np_J, base, h=1e-5)):
        # central differences: truncation h^2 |J'''| ~ 1e-10 |J|, rounding eps |J| / h ~ 1e-11 |J|
        np.testing.assert_allclose(g.numpy().ravel(), fd, atol=1e-7 * scale, rtol=1e-6)


@pytest.mark.parametrize("objective, c0", [("variance", 0.1), ("regression", 1.0)])
def test_primal_variant_history_is_non_increasing(data, objective, c0):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short run may stop at max_iter
        m = _primal(objective=objective, c0=c0, max_iter=30).fit(X, y)
    vals = np.array([v for _, v in m.objective_history_])
    assert len(vals) == m.n_iter_ + 1 and vals[-1] < vals[0]
    # one evaluation's rounding, as in test_primal_objective_is_non_increasing_and_deterministic
    assert np.all(np.diff(vals) <= 16 * EPS * np.abs(vals).max())


def test_primal_regression_fit_ignores_the_kpca_terms(data):
    """1,C minimises the regression level's terms only: c_stab does not change the fit."""
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = _primal(objective="regression", c_stab=0.0, max_iter=15).fit(X, y)
        b = _primal(objective="regression", c_stab=50.0, max_iter=15).fit(X, y)
        c = _primal(objective="stabilized", c_stab=50.0, max_iter=15).fit(X, y)
    assert a.objective_history_ == b.objective_history_
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert a.objective_history_ != c.objective_history_


def test_primal_variance_needs_stabilisation(data):
    X, y = data
    with pytest.raises(ValueError, match="objective='variance' needs c_stab > 0"):
        _primal(objective="variance", c_stab=0.0).fit(X, y)


@parametrize_with_checks([DeepRKM(kernel=RBF(3.0), solver="primal", n_prototypes=50, max_iter=5, objective="variance",
                                  c0=0.1, random_state=0),
                          DeepRKM(kernel=RBF(3.0), solver="primal", n_prototypes=50, max_iter=5, objective="regression",
                                  random_state=0)])
def test_sklearn_compatible_variants(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 5 L-BFGS iterations on purpose
        check(estimator)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_predictions_follow_the_solver_that_fitted():
    """solver_ is part of the fitted state: a later set_params(solver=...) changes the next fit, not predict."""
    X, y = _sine()
    model = DeepRKM(solver="feedforward", max_iter=5, random_state=0).fit(X, y)
    before = model.predict(X)
    model.set_params(solver="levelwise")
    assert model.solver_ == "feedforward"
    np.testing.assert_array_equal(model.predict(X), before)


@pytest.mark.parametrize("case, solver", [("deep-rkm", "levelwise"), ("deep-rkm-primal", "primal"),
                                          ("deep-rkm-feedforward", "feedforward")])
def test_files_of_format_3_name_their_solver(case, solver):
    """Format 3 did not store solver_; its reader takes it from the state (the network, the history's start)."""
    from pathlib import Path

    import kppca

    path = Path(__file__).resolve().parents[2] / "io" / "data" / "v3" / f"{case}.kppca"
    assert kppca.load(path).solver_ == solver
