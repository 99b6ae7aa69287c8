"""Pyro 1.9.1's generic distribution checks (``tests/distributions/test_distributions.py``) for kppca's distributions.

Applied to :class:`~kppca.distributions.DegenerateMultivariateNormal` (full rank and rank 2 in
``R^5``; batch shapes ``()`` and ``(3,)``; the factor and the basis constructors) and to the
distributions the models return (``kernel_marginal``, ``kernel_conditional``, ``feature_marginal``,
``feature_conditional``, ``latent_posterior``). Pyro's fixtures hand each check a distribution and
test data drawn from it; here the test data are the distribution's own samples. Settings and
tolerances are Pyro's: ``assert_equal``'s ``prec = 1e-5``, 50,000 samples and a failure rate of
``2e-5`` for the goodness of fit, 100,000 samples with ``atol = 0.02, rtol = 0.05`` for mean and variance.

Upstream checks that cannot apply, and why:

* ``test_cdf_icdf``, ``test_support_is_discrete``, ``test_enumerate_support*``: univariate or
  discrete distributions only.
* ``test_expand_reshaped_distribution``, ``test_expand_enumerate_support``: about Pyro's own
  ``Reshape``/``Independent`` wrappers and discrete supports, not about a distribution class.
* ``test_gof`` on the ambient space for the degenerate cases: the density is with respect to
  Lebesgue measure on the ``r``-dimensional support, so the check is run on coordinates in the
  support's orthonormal basis with Pyro's manifold dimension ``dim = r`` (as Pyro passes ``dim`` for
  ``ProjectedNormal``). For the models' distributions the coordinates are also whitened (see the test).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
import torch
from pyro.distributions import TorchDistribution
from pyro.distributions.testing.gof import auto_goodness_of_fit
from pyro.distributions.util import broadcast_shape

from kppca import DualPPCA, PrimalPPCA
from kppca.distributions import DegenerateMultivariateNormal
from kppca.kernels import RBF

TEST_FAILURE_RATE = 2e-5  # Pyro's tests/common.py


def _assert_equal(actual, expected, prec=1e-5):
    """Pyro's ``assert_equal`` for tensors: elementwise within ``prec`` (infinities equal)."""
    torch.testing.assert_close(actual, expected, atol=prec, rtol=0, equal_nan=False)


def _factor(n, m, seed):
    g = torch.Generator().manual_seed(seed)
    return 0.3 * torch.randn(n, m, generator=g, dtype=torch.float64)


def _loc(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64)


def _case(name):
    """(constructor keyword arguments, distribution) of one named case."""
    if name == "full-rank":
        kw = dict(loc=_loc((5,), 0), scale_factor=_factor(5, 5, 1))
    elif name == "full-rank-batch":
        kw = dict(loc=_loc((3, 5), 0), scale_factor=_factor(5, 7, 1))
    elif name == "rank2":
        kw = dict(loc=_loc((5,), 0), scale_factor=_factor(5, 2, 1))
    elif name == "rank2-batch":
        kw = dict(loc=_loc((3, 5), 0), scale_factor=_factor(5, 2, 1) @ _factor(2, 4, 2))
    elif name == "basis":
        Q, _ = torch.linalg.qr(_factor(5, 3, 1))
        kw = dict(loc=_loc((2, 5), 0), basis=Q, basis_scale=torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64),
                  support_rtol=1e-6)  # a scalar argument: shape () in infer_shapes
    else:
        return None, _model_case(name)
    return kw, DegenerateMultivariateNormal(**kw)


_X = np.random.default_rng(0).normal(size=(12, 3))


def _model_case(name):
    if name == "kernel_marginal":
        return DualPPCA(2, kernel=RBF(2.0)).fit(_X).kernel_marginal()
    if name == "kernel_conditional":
        return DualPPCA(2, kernel=RBF(2.0)).fit(_X).kernel_conditional(np.zeros((3, 2)))
    if name == "feature_marginal":
        return PrimalPPCA(1).fit(_X).feature_marginal()
    if name == "feature_conditional":
        return PrimalPPCA(1).fit(_X).feature_conditional(np.zeros((3, 1)))
    if name == "latent_posterior":
        return DualPPCA(2, kernel=RBF(2.0)).fit(_X).latent_posterior(_X[:3])
    raise AssertionError(name)


CONSTRUCTED = ["full-rank", "full-rank-batch", "rank2", "rank2-batch", "basis"]
FROM_MODELS = ["kernel_marginal", "kernel_conditional", "feature_marginal", "feature_conditional", "latent_posterior"]
ALL = CONSTRUCTED + FROM_MODELS


def _dist(name):
    return _case(name)[1]


def _rank(d):
    return d.rank if isinstance(d, DegenerateMultivariateNormal) else d.event_shape[0]


def _log_prob_shape(d, x_size=torch.Size()):
    expected = broadcast_shape(d.shape(), x_size, strict=True)
    return expected[: len(expected) - len(d.event_shape)]


@pytest.mark.parametrize("name", ALL)
def test_support_shape(name):
    d = _dist(name)
    assert d.support.event_dim == d.event_dim
    x = d.sample((4,))
    ok = d.support.check(x)
    assert ok.shape == broadcast_shape(d.batch_shape, x.shape[: x.dim() - d.event_dim])
    assert ok.all()


@pytest.mark.parametrize("name", CONSTRUCTED)
def test_infer_shapes(name):
    kw, d = _case(name)
    shapes = {k: v.shape if isinstance(v, torch.Tensor) else () for k, v in kw.items()}
    batch_shape, event_shape = DegenerateMultivariateNormal.infer_shapes(**shapes)
    assert (d.batch_shape, d.event_shape) == (batch_shape, event_shape)


@pytest.mark.parametrize("name", ALL)
def test_batch_log_prob(name):
    """The summed log density equals scipy's (``multivariate_normal(allow_singular=True)``)."""
    d = _dist(name)
    x = d.sample()
    loc = d.loc.expand(d.batch_shape + d.event_shape).reshape(-1, d.event_shape[0]).detach().numpy()
    cov = np.asarray(d.covariance_matrix.expand(d.batch_shape + d.event_shape * 2).detach()).reshape(
        -1, d.event_shape[0], d.event_shape[0])
    xs = x.reshape(-1, d.event_shape[0]).numpy()
    expected = sum(scipy.stats.multivariate_normal(m, c, allow_singular=True).logpdf(v) for m, c, v in zip(loc, cov, xs))
    # scipy's pseudo-determinant drops singular values below its own cutoff: agreement to 1e-5 relative
    np.testing.assert_allclose(float(d.log_prob(x).sum()), expected, rtol=1e-5)


@pytest.mark.parametrize("name", ALL)
def test_batch_log_prob_shape(name):
    d = _dist(name)
    x = d.sample((2,))
    assert d.log_prob(x).size() == _log_prob_shape(d, x.size())


@pytest.mark.parametrize("name", ALL)
def test_batch_entropy_shape(name):
    d = _dist(name)
    assert d.entropy().size() == _log_prob_shape(d)


@pytest.mark.parametrize("name", [n for n in ALL if n != "latent_posterior"])
def test_score_errors_event_dim_mismatch(name):
    """A value of the wrong event size is refused (Pyro skips this check for MultivariateNormal)."""
    d = _dist(name)
    with pytest.raises((ValueError, RuntimeError)):
        d.log_prob(torch.ones(d.shape() + (1,), dtype=d.loc.dtype))


@pytest.mark.parametrize("name", ALL)
def test_score_errors_non_broadcastable_data_shape(name):
    d = _dist(name)
    shape = d.shape()
    with pytest.raises((ValueError, RuntimeError)):
        d.log_prob(torch.ones((shape[0] + 1,) + shape[1:], dtype=d.loc.dtype))


@pytest.mark.parametrize("name", ALL)
def test_support_is_not_discrete(name):
    assert not _dist(name).support.is_discrete


@pytest.mark.parametrize("name", ["full-rank", "rank2", "basis", "kernel_marginal", "feature_marginal"])
def test_gof(name):
    """Pyro's goodness of fit of log_prob to the samples, on the support's dimension ``r``."""
    d = _dist(name)
    num_samples = 50000
    with torch.random.fork_rng():
        torch.manual_seed(0)
        samples = d.sample(torch.Size([num_samples]))
    probs = d.log_prob(samples).exp().reshape(num_samples, -1)
    samples = samples.reshape(probs.shape + d.event_shape)
    whiten = name in FROM_MODELS
    for b in range(probs.size(-1)):
        x, p = samples[:, b], probs[:, b]
        if isinstance(d, DegenerateMultivariateNormal) and (d.rank < d.event_shape[0] or whiten):
            x = (x - d.loc.reshape(-1, d.event_shape[0])[b]) @ d.basis  # isometric coordinates on the support
        if whiten:
            # The models' scales spread over 2.5 decades in up to 11 dimensions, where the nearest-neighbour
            # estimator behind Pyro's check fails even Pyro's MultivariateNormal of that covariance (gof 0.0,
            # measured); whitened coordinates z / s have the density p(x) prod(s) (a constant Jacobian).
            x, p = x / d.basis_scale, p * d.basis_scale.prod()
        assert auto_goodness_of_fit(x, p, dim=_rank(d)) > TEST_FAILURE_RATE


@pytest.mark.parametrize("name", ALL)
def test_mean(name):
    d = _dist(name)
    torch.manual_seed(0)
    torch.testing.assert_close(d.mean, d.sample((100000,)).mean(0), atol=0.02, rtol=0.05)


@pytest.mark.parametrize("name", ALL)
def test_variance(name):
    d = _dist(name)
    torch.manual_seed(0)
    torch.testing.assert_close(d.variance, d.sample((100000,)).var(0), atol=0.02, rtol=0.05)


@pytest.mark.parametrize("validate_args", [True, False])
def test_distribution_validate_args(validate_args):
    """Invalid arguments (a NaN mean) raise ValueError when validating, construct otherwise."""
    loc = torch.tensor([0.0, float("nan")], dtype=torch.float64)
    F = torch.eye(2, dtype=torch.float64)
    if validate_args:
        with pytest.raises(ValueError):
            DegenerateMultivariateNormal(loc, F, validate_args=True)
    else:
        DegenerateMultivariateNormal(loc, F, validate_args=False)


def test_support_check_agrees_with_validated_log_prob():
    """Issue 27: ``support.check`` is True exactly where ``log_prob(validate_args=True)`` accepts the value."""
    d = DegenerateMultivariateNormal(_loc((5,), 0), _factor(5, 2, 1), validate_args=True)
    on = d.sample((3,))
    off = on + 0.1 * torch.linalg.svd(d.scale_factor)[0][:, -1]  # a step orthogonal to the support
    assert d.support.check(on).all() and not d.support.check(off).any()
    assert torch.isfinite(d.log_prob(on)).all()
    with pytest.raises(ValueError, match="off the support"):
        d.log_prob(off)


def _check_sample_shapes(small, large):
    x = small.sample()
    _assert_equal(small.log_prob(x).expand(large.batch_shape), large.log_prob(x))
    x = large.sample()
    _assert_equal(small.log_prob(x), large.log_prob(x))


def _expand(d, shape, default):
    return TorchDistribution.expand(d, shape) if default else d.expand(shape)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("sample_shape", [(), (2,), (2, 3)])
@pytest.mark.parametrize("shape_type", [torch.Size, tuple, list])
def test_expand_by(name, sample_shape, shape_type):
    small = _dist(name)
    large = small.expand_by(shape_type(sample_shape))
    assert large.batch_shape == sample_shape + small.batch_shape
    _check_sample_shapes(small, large)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("sample_shape", [(), (2,), (2, 3)])
@pytest.mark.parametrize("default", [False, True])
def test_expand_new_dim(name, sample_shape, default):
    small = _dist(name)
    large = _expand(small, torch.Size(sample_shape + tuple(small.batch_shape)), default)
    assert large.batch_shape == sample_shape + small.batch_shape
    _check_sample_shapes(small, large)


@pytest.mark.parametrize("default", [False, True])
def test_expand_existing_dim(default):
    small = DegenerateMultivariateNormal(_loc((1, 5), 0), _factor(5, 2, 1))
    large = _expand(small, torch.Size([5]), default)
    assert large.batch_shape == (5,)
    _check_sample_shapes(small, large)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("sample_shapes", [[(2, 1), (2, 3)], [(2, 1, 1), (2, 1, 3), (2, 5, 3)]])
@pytest.mark.parametrize("default", [False, True])
def test_subsequent_expands_ok(name, sample_shapes, default):
    d = _dist(name)
    original = d.batch_shape
    for shape in sample_shapes:
        proposed = torch.Size(shape) + original
        n = _expand(d, proposed, default)
        assert n.batch_shape == proposed
        _check_sample_shapes(d, n)
        d = n


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("initial_shape, proposed_shape", [[(2, 1), (4, 3)], [(2, 4), (2, 2, 1)], [(1, 2, 1), (2, 1)]])
@pytest.mark.parametrize("default", [False, True])
def test_expand_error(name, initial_shape, proposed_shape, default):
    small = _dist(name)
    large = _expand(small, torch.Size(initial_shape) + small.batch_shape, default)
    with pytest.raises((RuntimeError, ValueError)):
        large.expand(torch.Size(proposed_shape) + small.batch_shape)
