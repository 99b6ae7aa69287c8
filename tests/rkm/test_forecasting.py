"""NARForecaster and lag_windows: the paper's sum-of-sines checks and the SantaFe laser."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca.datasets import load_santafe, sum_of_sines
from kppca.features import RandomFourierFeatures
from kppca.kernels import RBF
from kppca.rkm import NARForecaster, lag_windows


def test_lag_windows_layout():
    x = np.arange(10.0)
    X, y = lag_windows(x, 3)
    assert X.shape == (6, 4) and y.shape == (6,)
    np.testing.assert_array_equal(X[0], [0, 1, 2, 3])
    assert y[0] == 4 and y[-1] == 9
    X2, y2 = lag_windows(np.vstack([x, x + 100]), 3)
    assert X2.shape == (12, 4) and y2[6] == 104
    with pytest.raises(ValueError, match="needs at least"):
        lag_windows(x[:3], 3)


def test_santafe_window_count():
    train, test = load_santafe()
    assert train.shape == (1000,) and test.shape == (100,)
    X, _ = lag_windows(train, 70)
    assert X.shape == (929, 71)


@pytest.fixture(scope="module")
def sines():
    x = sum_of_sines()
    return x[:400], x[400:500]


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_sum_of_sines_exact_and_rescaling_ablation(sines, form):
    """A sum of two sines is an order-4 linear recurrence: s = 4 linear components forecast it exactly."""
    train, test = sines
    exact = NARForecaster(40, 4, form=form).fit(train)
    assert exact.form_ == form
    assert np.mean((exact.forecast(100) - test) ** 2) < 1e-12
    ablation = NARForecaster(40, 4, form=form, rescale=False).fit(train)
    assert np.mean((ablation.forecast(100) - test) ** 2) > 0.1


@pytest.mark.parametrize("form", ["primal", "dual"])
@pytest.mark.parametrize("rotate", [True, False])
def test_sum_of_sines_exact_with_stiefel_training(sines, form, rotate):
    """C (primal) and K (dual) have rank 4 here: the Stiefel iterate keeps a null-space component that the
    objective cannot see. Unless the solver removes it, Gamma = U~^T C U~ is deflated and the forecasts break
    (MSE 0.30 in the primal when SGD oscillated along that flat direction)."""
    train, test = sines
    model = NARForecaster(40, 4, form=form, solver="stiefel", rotate=rotate, random_state=0).fit(train)
    assert model.model_.solver_result_.converged
    assert np.mean((model.forecast(100) - test) ** 2) < 1e-12


def test_primal_dual_forecasts_agree_with_rff(sines):
    train, _ = sines
    fmap = RandomFourierFeatures(bandwidth=3.0, n_features=60, random_state=0)
    p = NARForecaster(10, 6, kernel_x=fmap, kernel_y=None, form="primal").fit(train)
    d = NARForecaster(10, 6, kernel_x=fmap, kernel_y=None, form="dual").fit(train)
    np.testing.assert_allclose(p.forecast(30), d.forecast(30), rtol=0, atol=1e-8)


def test_batched_forecast_equals_one_by_one(sines):
    train, _test = sines
    f = NARForecaster(10, 4).fit(train)
    hist = np.vstack([train[-50:], train[-60:-10]])
    both = f.forecast(20, hist)
    assert both.shape == (2, 20)
    np.testing.assert_allclose(both[0], f.forecast(20, train[-50:]), rtol=0, atol=1e-13)
    np.testing.assert_allclose(both[1], f.forecast(20, train[-60:-10]), rtol=0, atol=1e-13)
    assert isinstance(f.forecast(3, torch.as_tensor(train)), torch.Tensor)


def test_santafe_exact_rbf_dual():
    """The spec's independent check: dual, exact RBF (2.1856), p = 70, s = 144: standardized MSE 0.053."""
    train, test = load_santafe()
    f = NARForecaster(70, 144, kernel_x=RBF(2.1856), form="dual").fit(train)
    pred = f.forecast(100)
    mse_std = np.mean(((pred - test) / train.std(ddof=1)) ** 2)
    assert abs(mse_std - 0.053) < 0.001


def test_sum_of_sines_stiefel_is_exact(sines):
    """The centered windows of the series span exactly 4 dimensions, so any basis of the top-4
    eigenspace (Stiefel, rotated or not) forecasts exactly, as the eigen solution does."""
    train, test = sines
    for rotate in (True, False):
        f = NARForecaster(40, 4, form="dual", solver="stiefel", rotate=rotate, random_state=0).fit(train)
        assert f.model_.solver_result_.converged
        assert np.mean((f.forecast(100) - test) ** 2) < 1e-12



@pytest.mark.parametrize("n_components", [2, 3])
def test_primal_dual_forecasts_agree_with_linear_kernels(sines, n_components):
    """Linear kernels (Identity maps): primal and dual forecasts agree to 1e-8, on a noisy series
    (s = 2, 3 truncate it: not the exact order-4 recurrence of the clean series)."""
    train, _ = sines
    noisy = train + 0.05 * np.random.default_rng(0).normal(size=train.size)
    n_steps = 30
    p = NARForecaster(10, n_components, form="primal").fit(noisy)
    d = NARForecaster(10, n_components, form="dual").fit(noisy)
    assert (p.form_, d.form_) == ("primal", "dual")
    fp, fd = p.forecast(n_steps), d.forecast(n_steps)
    # A forecast depends on H only through its span (a rotation H O leaves eq. 15 unchanged), which
    # rounding moves by ~ n eps lam_1 / (lam_s - lam_s+1); each recursive step of a stable recurrence
    # adds at most that relative error: n_steps * max|f| * n eps lam_1 / gap_s bounds the difference.
    X, y = lag_windows((noisy - p.mean_) / p.scale_, 10)
    Phi = np.hstack([X - X.mean(0), (y - y.mean())[:, None]])
    lam = np.linalg.eigvalsh(Phi @ Phi.T)[::-1][: n_components + 1]
    np.testing.assert_allclose(d.model_.eigenvalues_.numpy(), lam[:n_components], rtol=1e-10)
    n = X.shape[0]
    bound = n_steps * np.abs(fd).max() * n * np.finfo(float).eps * lam[0] / (lam[-2] - lam[-1])
    assert bound < 1e-8
    np.testing.assert_allclose(fp, fd, rtol=0, atol=1e-8)


# ---------------------------------------------------------------------- issue 18 regressions
def _noisy_sine(T=100, period=20, seed=0):
    t = np.arange(T)
    return 1.2 * np.sin(2 * np.pi * t / period) + 0.05 * np.random.default_rng(seed).normal(size=T)


def test_feature_map_window_view_with_kernel_target_view():
    """Item 8: a map on the window view and a kernel on the next-value view (fitted on its view, dual)."""
    S = _noisy_sine()
    m = NARForecaster(4, 3, kernel_x=RandomFourierFeatures(1.0, 20, random_state=0), kernel_y=RBF(1.0)).fit(S)
    assert m.form_ == "dual"
    f = m.forecast(3)
    assert f.shape == (3,) and np.isfinite(f).all()
    # The window view is the map's kernel on the fitted map: same hidden features as passing that kernel.
    fmap = m.model_.views_[0].feature_map_
    ref = NARForecaster(4, 3, kernel_x=fmap.as_kernel(), kernel_y=RBF(1.0)).fit(S)
    np.testing.assert_allclose(ref.forecast(3), f, rtol=0, atol=1e-9)


def test_runaway_forecast_warns():
    """Item 9: RBF(1000) on standardized windows runs away (to ~17 in 5 steps on a +-1.2 sine)."""
    S = _noisy_sine()
    m = NARForecaster(kernel_x=RBF(1000.0)).fit(S)
    with pytest.warns(UserWarning, match=r"leaves the training range .* by more than its width"):
        f = m.forecast(5)
    lo, hi = S.min(), S.max()
    assert f.max() > hi + (hi - lo)  # the warning is about a real excursion
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        NARForecaster().fit(S).forecast(20)  # a forecast inside the range does not warn


@pytest.mark.parametrize("factor", [1e-300, 1e300])
def test_standardisation_is_scale_free(factor):
    """Item 12: 1e-300 was 'constant' (variance underflow), 1e300 rank 0 (std overflow)."""
    S = _noisy_sine()
    ref = NARForecaster().fit(S)
    m = NARForecaster().fit(S * factor)
    # Standardising divides by max|S| first: the standardized problem is the same up to rounding
    # of the two scalings (a few eps relative).
    assert m.scale_ == pytest.approx(ref.scale_ * factor, rel=1e-13)
    np.testing.assert_allclose(m.forecast(5) / factor, ref.forecast(5), rtol=0, atol=1e-10)


def test_stable_mean_std_against_numpy():
    from kppca.rkm.forecasting import stable_mean_std

    x = np.random.default_rng(0).normal(size=50) * 3 + 7
    mean, std = stable_mean_std(torch.as_tensor(x))
    assert mean == pytest.approx(x.mean(), rel=1e-14) and std == pytest.approx(x.std(ddof=1), rel=1e-13)
    assert stable_mean_std(torch.zeros(5)) == (0.0, 0.0)
    assert stable_mean_std(torch.full((5,), 3.0))[1] == 0.0


def test_rank_zero_does_not_advise_zero_components():
    with pytest.raises(ValueError, match="rank 0") as info:
        NARForecaster(standardize=False, n_components=1).fit(np.zeros(30))
    assert "n_components <= 0" not in str(info.value)


def test_too_short_series_names_series_and_lags():
    """Item 14: lags + 2 values made one window and spoke of 'views[0] has 1 sample'."""
    with pytest.raises(ValueError, match=r"series has 5 values .* lags=3 .* at least lags \+ 3 = 6"):
        NARForecaster(lags=3).fit(np.arange(5.0))
    NARForecaster(lags=3, n_components=1).fit(np.arange(6.0) ** 2)  # two windows: enough


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_forecast_standardized_must_be_bool(bad):
    m = NARForecaster(lags=3, n_components=1).fit(_noisy_sine())
    with pytest.raises(ValueError, match="standardized must be"):
        m.forecast(3, standardized=bad)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3"])
def test_forecast_n_steps_checked(bad):
    m = NARForecaster(lags=3, n_components=1).fit(_noisy_sine())
    with pytest.raises(ValueError, match="n_steps must be an int"):
        m.forecast(bad)


def test_forecast_not_fitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match=r"call fit\(series\) before forecast\(\)"):
        NARForecaster().forecast(3)


def test_lag_order_zero_is_saved_and_loaded(tmp_path):
    """lags=0 (each window one value) is valid: its fit's record checks, and its model file loads (the lag
    order follows from the last window, so ``n_lags_`` is 0)."""
    import kppca

    model = NARForecaster(lags=0, n_components=1).fit(_noisy_sine())
    assert model.n_lags_ == 0 and model.last_window_.shape == (1, 1) and model.form_ == model.model_.form_
    kppca.save(model, tmp_path / "nar.kppca")
    loaded = kppca.load(tmp_path / "nar.kppca")
    assert loaded.n_lags_ == 0 and loaded.form_ == model.form_
    np.testing.assert_array_equal(loaded.forecast(5), model.forecast(5))


def test_fitted_state_is_read_only():
    model = NARForecaster(lags=3, n_components=1).fit(_noisy_sine())
    with pytest.raises(AttributeError, match="read-only"):
        model.mean_ = 1.0
    assert model.state_.mean_ == model.mean_
