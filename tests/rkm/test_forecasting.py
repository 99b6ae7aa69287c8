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
