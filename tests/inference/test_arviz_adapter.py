"""ArviZ adapter (0.x path for real, 1.x path through a fake module), latent summaries and uncertainty plots."""

from __future__ import annotations

import sys
import types
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pyro  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import LineCollection, PatchCollection  # noqa: E402
from pyro.infer import MCMC, NUTS  # noqa: E402
from scipy.stats import chi2, norm  # noqa: E402

from kppca import DualPPCA, PrimalPPCA  # noqa: E402
from kppca.inference import (  # noqa: E402
    arviz_major_version,
    arviz_summary,
    bayesian_model,
    draws_summary,
    from_pyro_mcmc,
    latent_model,
    latent_summary,
    normal_hdi,
    sample_hdi,
    to_inference_data,
)
from kppca.kernels import RBF  # noqa: E402
from kppca.plotting.uncertainty import credible_ellipse, plot_latent_forest, plot_latent_uncertainty  # noqa: E402

warnings.filterwarnings("ignore", message=".*ArviZ is undergoing a major refactor.*")


@pytest.fixture(scope="module")
def fitted():
    X = np.random.default_rng(0).normal(size=(25, 3))
    return DualPPCA(2, kernel=RBF(1.5)).fit(X), X


class FakeArviz1(types.ModuleType):
    """Stands in for ArviZ >= 1: records ``from_dict`` calls (positional nested groups)."""

    def __init__(self, version: str = "1.0.0"):
        super().__init__("arviz")
        self.__version__ = version
        self.calls: list[tuple[tuple, dict]] = []

    def from_dict(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return {"fake_datatree": True}

    def summary(self, data, **kwargs):
        import pandas as pd

        self.calls.append(((data,), kwargs))
        return pd.DataFrame({"mean": [0.5], "sd": [1.0], "hdi94_lb": [-1.0], "hdi94_ub": [2.0]}, index=["h[0]"])


def _installed_major() -> int:
    return arviz_major_version()


# ---------------------------------------------------------------------------- closed-form draws
@pytest.mark.skipif(_installed_major() >= 1, reason="checks the ArviZ 0.x InferenceData layout")
def test_to_inference_data_layout_and_values(fitted):
    import arviz as az

    model, X = fitted
    idata = to_inference_data(model, X[:6], num_draws=2000, num_chains=3, random_state=0, obs_names=list("abcdef"))
    assert isinstance(idata, az.InferenceData)
    h = idata.posterior["h"]
    assert h.dims == ("chain", "draw", "obs", "component")
    assert h.shape == (3, 2000, 6, 2)
    assert list(h.coords["obs"].values) == list("abcdef")
    assert list(h.coords["component"].values) == [0, 1]
    assert idata.posterior.attrs["n_components"] == 2
    assert idata.posterior.attrs["sigma2"] == pytest.approx(model.sigma2_)
    # Exact independent draws: the sample mean is within 4.5 standard errors of the closed form.
    post = model.latent_posterior(X[:6])
    sd = post.stddev.numpy()
    mean = h.mean(("chain", "draw")).values
    assert np.abs((mean - post.mean.numpy()) / (sd / np.sqrt(6000))).max() < 4.5
    # ArviZ's own tools work on it: its HDI is the closed-form one up to Monte-Carlo error. An HDI endpoint
    # from 6000 draws moves by a few hundredths of an sd (the shortest window is flat near its optimum).
    hdi = az.hdi(idata, hdi_prob=0.9)["h"].values  # (obs, component, 2)
    lo, hi = normal_hdi(post.mean.numpy(), sd, 0.9)
    np.testing.assert_array_less(np.abs(hdi[..., 0] - lo), 0.15 * sd)
    np.testing.assert_array_less(np.abs(hdi[..., 1] - hi), 0.15 * sd)


def test_to_inference_data_is_reproducible(fitted):
    model, X = fitted
    fake1, fake2 = FakeArviz1(), FakeArviz1()
    to_inference_data(model, X[:4], num_draws=20, num_chains=2, random_state=5, arviz_module=fake1)
    to_inference_data(model, X[:4], num_draws=20, num_chains=2, random_state=5, arviz_module=fake2)
    np.testing.assert_array_equal(fake1.calls[0][0][0]["posterior"]["h"], fake2.calls[0][0][0]["posterior"]["h"])


def test_to_inference_data_arviz1_branch_calls_from_dict_with_nested_groups(fitted, monkeypatch):
    model, X = fitted
    fake = FakeArviz1("1.0.0")
    monkeypatch.setitem(sys.modules, "arviz", fake)  # the adapter imports arviz lazily: it gets the fake
    out = to_inference_data(model, X[:5], num_draws=7, num_chains=2, random_state=0)
    assert out == {"fake_datatree": True}
    assert len(fake.calls) == 1
    args, kwargs = fake.calls[0]
    # 1.x: one positional nested mapping {group: {var: array}}, no `posterior=` keyword.
    assert len(args) == 1 and "posterior" not in kwargs
    (groups,) = args
    assert set(groups) == {"posterior"}
    assert groups["posterior"]["h"].shape == (2, 7, 5, 2)  # (chain, draw, obs, component)
    assert kwargs["dims"] == {"h": ["obs", "component"]}
    assert kwargs["coords"] == {"obs": [0, 1, 2, 3, 4], "component": [0, 1]}
    assert kwargs["attrs"]["posterior"]["n_components"] == 2


def test_arviz0_branch_uses_keyword_groups(fitted):
    model, X = fitted
    calls = []

    class Posterior:
        attrs: dict = {}

    class FakeIData:
        posterior = Posterior()

    fake = types.SimpleNamespace(__version__="0.23.4", from_dict=lambda *a, **k: calls.append((a, k)) or FakeIData())
    to_inference_data(model, X[:3], num_draws=4, num_chains=1, random_state=0, arviz_module=fake)
    args, kwargs = calls[0]
    assert args == () and kwargs["posterior"]["h"].shape == (1, 4, 3, 2)
    assert kwargs["dims"] == {"h": ["obs", "component"]}


def test_to_inference_data_validates_counts(fitted):
    model, X = fitted
    with pytest.raises(ValueError, match="num_draws"):
        to_inference_data(model, X, num_draws=0, arviz_module=FakeArviz1())
    with pytest.raises(ValueError, match="obs_names"):
        to_inference_data(model, X[:3], obs_names=["a"], arviz_module=FakeArviz1())


# ---------------------------------------------------------------------------- MCMC conversion
@pytest.fixture(scope="module")
def small_mcmc(fitted):
    model, X = fitted
    pyro.set_rng_seed(0)
    mcmc = MCMC(NUTS(latent_model(model, X[:3])), warmup_steps=50, num_samples=40, num_chains=1,
                disable_progbar=True)
    mcmc.run()
    return mcmc


@pytest.mark.skipif(_installed_major() >= 1, reason="checks the ArviZ 0.x InferenceData layout")
def test_from_pyro_mcmc_same_dims_as_closed_form(small_mcmc):
    idata = from_pyro_mcmc(small_mcmc, obs_names=["x0", "x1", "x2"])
    h = idata.posterior["h"]
    assert h.dims == ("chain", "draw", "obs", "component")
    assert h.shape == (1, 40, 3, 2)
    assert list(h.coords["obs"].values) == ["x0", "x1", "x2"]


def test_from_pyro_mcmc_arviz1_branch(small_mcmc):
    fake = FakeArviz1("1.2.0")
    from_pyro_mcmc(small_mcmc, arviz_module=fake)
    (groups,), kwargs = fake.calls[0]
    assert groups["posterior"]["h"].shape == (1, 40, 3, 2)
    assert kwargs["dims"]["h"] == ["obs", "component"]
    assert kwargs["coords"]["obs"] == [0, 1, 2]


def test_from_pyro_mcmc_recomputes_deterministic_sites():
    X = np.random.default_rng(1).normal(size=(20, 4))
    model = PrimalPPCA(2).fit(X)
    fn = bayesian_model(model, learn_loading=True, collapse_latent=True)
    pyro.set_rng_seed(0)
    mcmc = MCMC(NUTS(fn), warmup_steps=30, num_samples=20, disable_progbar=True)
    mcmc.run()
    fake = FakeArviz1()
    from_pyro_mcmc(mcmc, model=fn, deterministic=["W"], arviz_module=fake)
    (groups,), kwargs = fake.calls[0]
    post = groups["posterior"]
    assert post["W"].shape == (1, 20, 2, 2) and post["sigma2"].shape == (1, 20)
    # W is the lower-triangular Bartlett factor built from the sampled W_chi2 / W_lower.
    np.testing.assert_allclose(post["W"][..., 1, 0], post["W_lower"][..., 0])
    assert kwargs["dims"]["W"] == ["component_row", "component"]
    with pytest.raises(ValueError, match="model"):
        from_pyro_mcmc(mcmc, deterministic=["W"], arviz_module=fake)


# ---------------------------------------------------------------------------- summaries
def test_latent_summary_closed_form_hdi_is_normal_quantile(fitted):
    model, X = fitted
    df = latent_summary(model, X[:4], hdi_prob=0.9)
    assert list(df.columns) == ["mean", "sd", "hdi_lower", "hdi_upper"]
    assert df.index.names == ["obs", "component"] and len(df) == 8
    assert df.attrs["hdi_prob"] == 0.9
    post = model.latent_posterior(X[:4])
    np.testing.assert_allclose(df["mean"].unstack().to_numpy(), post.mean.numpy())
    np.testing.assert_allclose(df["sd"].unstack().to_numpy(), post.stddev.numpy())
    z = norm.ppf(0.95)  # 1.6449: 5 % in each tail
    np.testing.assert_allclose(df["hdi_upper"] - df["mean"], z * df["sd"], rtol=1e-12)
    np.testing.assert_allclose(df["mean"] - df["hdi_lower"], z * df["sd"], rtol=1e-12)
    # The sd is N sigma2 / lam_p, the same for every point.
    np.testing.assert_allclose(
        df["sd"].unstack().to_numpy()[0] ** 2, model.n_samples_ * model.sigma2_ / model.eigenvalues_.numpy()
    )


def test_draws_summary_matches_closed_form(fitted):
    model, X = fitted
    fake = FakeArviz1()
    to_inference_data(model, X[:3], num_draws=5000, num_chains=2, random_state=0, arviz_module=fake)
    draws = fake.calls[0][0][0]["posterior"]["h"]  # (chain, draw, obs, component)
    est = draws_summary(draws, hdi_prob=0.94)
    exact = latent_summary(model, X[:3], hdi_prob=0.94)
    sd = exact["sd"].to_numpy()
    for col in ["mean", "hdi_lower", "hdi_upper"]:
        # 10000 draws: SE of the mean 0.01 sd; of a 3 % quantile ~0.025 sd.
        np.testing.assert_allclose(est[col].to_numpy(), exact[col].to_numpy(), atol=0.1 * sd.max())
    np.testing.assert_allclose(est["sd"].to_numpy(), sd, rtol=0.05)


def test_sample_hdi_is_shortest_interval():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200000, 2)) * [1.0, 3.0] + [0.0, 5.0]
    lo, hi = sample_hdi(x, 0.8)
    z = norm.ppf(0.9)
    # The shortest window is flat near its optimum, so its position is noisier than a quantile: ~0.02 sd here.
    np.testing.assert_array_less(np.abs(lo - [-z, 5 - 3 * z]), [0.05, 0.15])
    np.testing.assert_array_less(np.abs(hi - [z, 5 + 3 * z]), [0.05, 0.15])
    # Skewed draws: the HDI is shorter than the central interval.
    e = rng.exponential(size=100000)
    lo, hi = sample_hdi(e, 0.9)
    assert lo == pytest.approx(0.0, abs=1e-3) and hi == pytest.approx(-np.log(0.1), rel=0.02)
    with pytest.raises(ValueError, match="hdi_prob"):
        sample_hdi(e, 1.5)


# ---------------------------------------------------------------------------- plots
def _half_extents(patch) -> np.ndarray:
    """Half-widths of the patch's bounding box in data coordinates (x, y)."""
    box = patch.get_path().get_extents(patch.get_patch_transform())  # exact extents of the Bezier curves
    return np.array([box.width, box.height]) / 2


def test_credible_ellipse_diagonal_half_widths():
    prob = 0.94
    radius = np.sqrt(chi2.ppf(prob, df=2))  # 2.372
    for cov in (np.diag([4.0, 1.0]), np.diag([0.25, 9.0])):
        e = credible_ellipse([1.0, -2.0], cov, prob)
        np.testing.assert_allclose(e.center, [1.0, -2.0])
        np.testing.assert_allclose(_half_extents(e), radius * np.sqrt(np.diag(cov)), rtol=1e-6)
        np.testing.assert_allclose(sorted([e.width, e.height]), sorted(2 * radius * np.sqrt(np.diag(cov))))


def test_credible_ellipse_rotated_covariance_holds_its_mass():
    cov = np.array([[2.0, 1.2], [1.2, 1.0]])
    prob = 0.8
    e = credible_ellipse([0.5, 0.5], cov, prob)
    # Bounding box of {x : x^T C^-1 x <= r^2} has half-widths r sqrt(C_ii), whatever the rotation
    # (to ~1e-5: matplotlib draws the circle as cubic Bezier arcs).
    np.testing.assert_allclose(_half_extents(e), np.sqrt(chi2.ppf(prob, 2) * np.diag(cov)), rtol=1e-4)
    # Monte-Carlo: the fraction of N(mean, cov) draws inside is prob (SE ~ 0.003 for 20000 draws).
    pts = np.random.default_rng(0).multivariate_normal([0.5, 0.5], cov, size=20000)
    unit = e.get_patch_transform().inverted().transform(pts)  # the ellipse maps to the unit circle
    inside = np.mean(np.hypot(unit[:, 0], unit[:, 1]) <= 1.0)
    assert inside == pytest.approx(prob, abs=0.015)


def test_plot_latent_uncertainty_returns_axes_with_ellipses(fitted):
    model, X = fitted
    ax = plot_latent_uncertainty(model, X, prob=0.9, c=np.arange(len(X)), max_ellipses=10)
    assert isinstance(ax, plt.Axes)
    ellipses = [c for c in ax.collections if isinstance(c, PatchCollection)]
    assert len(ellipses) == 1 and len(ellipses[0].get_paths()) == 10
    # The scatter shows the posterior means.
    offsets = [c for c in ax.collections if not isinstance(c, PatchCollection)][0].get_offsets()
    np.testing.assert_allclose(np.asarray(offsets), model.transform(X))
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="components"):
        plot_latent_uncertainty(model, X, components=(0, 0))


def test_plot_latent_forest_draws_hdi_segments(fitted):
    model, X = fitted
    fig, ax = plt.subplots()
    out = plot_latent_forest(model, X, indices=[3, 7, 11], hdi_prob=0.94, ax=ax)
    assert out is ax
    lines = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(lines) == 2  # one per component
    table = latent_summary(model, X, 0.94)
    for p, lc in enumerate(lines):
        segs = np.array(lc.get_segments())  # (3, 2 endpoints, xy)
        expected = table.xs(p, level="component").loc[[3, 7, 11]]
        np.testing.assert_allclose(segs[:, 0, 0], expected["hdi_lower"])
        np.testing.assert_allclose(segs[:, 1, 0], expected["hdi_upper"])
    # First selected point at the top.
    ticks = dict(zip(ax.get_yticks(), [t.get_text() for t in ax.get_yticklabels()]))
    assert [ticks[y] for y in sorted(ticks, reverse=True)] == ["3", "7", "11"]
    plt.close(fig)


# ---------------------------------------------------------------------------- arviz.summary on both majors
def test_arviz_summary_is_the_same_call_on_both_majors_with_raw_values():
    """On the installed ArviZ (0.x in CI, 1.x on Python >= 3.12): unrounded means and sds equal numpy's, and the
    interval holds the asked mass of the draws (ArviZ's own HDI rule: the narrowest of its sample windows)."""
    from kppca.inference import from_groups

    # component 1 is of order 0.01, which rounding to two decimals would erase
    x = np.random.default_rng(3).normal(size=(4, 250, 3, 2)) * [1.0, 0.01]
    data = from_groups({"posterior": {"h": x}}, dims={"h": ["obs", "component"]})
    table = arviz_summary(data, ["h"], kind="stats", hdi_prob=0.9)
    assert list(table.columns) == ["mean", "sd", "hdi_lower", "hdi_upper"]
    pooled = x.reshape(-1, 6)
    eps = np.finfo(np.float64).eps
    S = len(pooled)
    # a sum of S terms rounds by at most S eps sum|x|; unrounded, the 0.01-scale component keeps its digits
    np.testing.assert_allclose(table["mean"], pooled.mean(0), rtol=0, atol=S * eps * np.abs(pooled).max(0).max())
    np.testing.assert_allclose(table["sd"], pooled.std(0, ddof=1), rtol=4 * S * eps)
    inside = ((pooled >= table["hdi_lower"].to_numpy()) & (pooled <= table["hdi_upper"].to_numpy())).mean(0)
    assert np.all(inside >= 0.9 - 1 / S) and np.all(inside <= 0.9 + 2 / S)
    full = arviz_summary(data, ["h"])
    assert {"mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat"} <= set(full.columns)
    with pytest.raises(ValueError, match="hdi_prob"):
        arviz_summary(data, hdi_prob=1.5)


def test_arviz_summary_on_arviz_1_asks_for_the_hdi_and_names_its_columns():
    fake = FakeArviz1("1.3.0")
    table = arviz_summary("data", ["h"], kind="stats", hdi_prob=0.8, arviz_module=fake)
    (args, kwargs), = fake.calls
    assert args == ("data",)
    assert kwargs == {"var_names": ["h"], "kind": "stats", "ci_prob": 0.8, "ci_kind": "hdi", "round_to": "none"}
    assert list(table.columns) == ["mean", "sd", "hdi_lower", "hdi_upper"]
