"""Data-derived kernel widths: ``RBF(bandwidth="scale")``, ``"median"`` and ``Kernel.resolve``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import pdist

from kppca import DualPPCA
from kppca.features import Nystroem
from kppca.kernels import RBF, ColumnKernel, Laplacian, Linear, Polynomial, as_kernel

EPS = np.finfo(np.float64).eps


def _lower_median(values: np.ndarray) -> float:
    # torch.median returns the lower of the two middle values for an even count.
    return float(np.sort(values)[(len(values) - 1) // 2])


def test_defaults_are_rules_resolved_from_data():
    assert RBF().bandwidth == "scale" and Laplacian().bandwidth == "median"
    assert as_kernel("rbf").bandwidth == "scale" and not as_kernel("rbf").is_resolved
    assert RBF(2.0).is_resolved and Linear().is_resolved and Polynomial().is_resolved


@pytest.mark.parametrize("kernel", [RBF(), RBF("median"), Laplacian(), RBF() + Linear(), ColumnKernel(RBF(), [0])])
def test_unresolved_kernel_says_to_resolve(kernel, rng):
    X = rng.normal(size=(4, 2))
    for call in (lambda: kernel(X), lambda: kernel.gram(torch.tensor(X), torch.tensor(X)), lambda: kernel.diag(torch.tensor(X))):
        with pytest.raises(ValueError, match=r"resolve\(X_train\).*or pass a number"):
            call()


def test_scale_rule_is_sklearns_gamma_scale(rng):
    X = 3.0 * rng.normal(size=(50, 4)) + 7.0
    bw = RBF("scale").resolve(X).bandwidth
    gamma = 1.0 / (X.shape[1] * X.var())  # scikit-learn's gamma="scale"
    # var sums N*D terms in float64 (relative rounding <= N D eps), then a sqrt halves it.
    assert abs(1.0 / (2.0 * bw**2) - gamma) <= X.size * EPS * gamma


@pytest.mark.parametrize("kernel_cls, metric", [(RBF, "euclidean"), (Laplacian, "cityblock")])
def test_median_rule_against_scipy(kernel_cls, metric, rng):
    X = rng.normal(size=(31, 3))
    X[5] = X[4]  # a duplicate pair: zero distances are left out of the median
    d = pdist(X, metric)
    expected = _lower_median(d[d > 0])
    got = kernel_cls("median").resolve(X).bandwidth
    # Euclidean: the centered expansion is accurate to ~(D + 4) eps relative on squared distances.
    assert abs(got - expected) <= 10 * X.shape[1] * EPS * expected


def test_median_rule_subsamples_large_data_evenly(rng):
    X = rng.normal(size=(2500, 2))
    rows = np.linspace(0, 2499, 2000).astype(np.int64)
    assert RBF("median").resolve(X).bandwidth == RBF("median").resolve(X[rows]).bandwidth
    assert RBF("median").resolve(X).bandwidth == RBF("median").resolve(X.copy()).bandwidth  # deterministic


@pytest.mark.parametrize("rule", ["scale", "median"])
@pytest.mark.parametrize("exponent", [-900, -400, 0, 400, 900])
def test_rules_are_scale_equivariant_to_the_bit(rule, exponent, rng):
    """Multiplying X by a power of two multiplies the width by it exactly, even where the
    squares of the data over- or underflow float64 (2^900 ~ 1e271): the rules and the
    kernel compute in a scaled form, so the Gram matrix is bitwise the same."""
    X = rng.normal(size=(40, 3))
    c = math.ldexp(1.0, exponent)
    k1, kc = RBF(rule).resolve(X), RBF(rule).resolve(X * c)
    assert kc.bandwidth == k1.bandwidth * c
    np.testing.assert_array_equal(kc(X * c), k1(X))


def test_resolve_returns_a_new_kernel_and_keeps_self(rng):
    X = rng.normal(size=(20, 3))
    kernel = RBF()
    resolved = kernel.resolve(X)
    assert type(resolved) is RBF and resolved is not kernel and kernel.bandwidth == "scale"
    fixed = RBF(1.5)
    assert fixed.resolve(X) is fixed


def test_composites_resolve_their_parts(rng):
    X = np.hstack([rng.normal(size=(30, 2)), 100.0 * rng.normal(size=(30, 1))])
    total = (RBF() * Laplacian() + Linear()).resolve(X)
    inner = total.kernels[0]
    assert inner.kernels[0].bandwidth == RBF().resolve(X).bandwidth
    assert inner.kernels[1].bandwidth == Laplacian().resolve(X).bandwidth
    # a column kernel takes the width of its own columns (a view's own scale)
    view = ColumnKernel(RBF(), [2]).resolve(X)
    assert view.base.bandwidth == RBF().resolve(X[:, [2]]).bandwidth
    assert view.columns == [2]


@pytest.mark.parametrize("X", [np.ones((5, 3)), np.zeros((1, 2))])
@pytest.mark.parametrize("rule", ["scale", "median"])
def test_rules_need_distinct_rows(X, rule):
    with pytest.raises(ValueError, match=rf"bandwidth='{rule}'.*pass a number"):
        RBF(rule).resolve(X)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: RBF("mean"), ValueError, r"bandwidth='mean' is not a rule.*\['median', 'scale'\]"),
        (lambda: Laplacian("scale"), ValueError, r"\['median'\]"),
        (lambda: RBF(None), TypeError, r"bandwidth must be a float in the range \(0, inf\)"),
        (lambda: RBF(True), TypeError, r"bandwidth must be a float in the range \(0, inf\)"),
        (lambda: RBF(float("nan")), ValueError, r"bandwidth must be a float in the range \(0, inf\)"),
    ],
)
def test_bad_bandwidths_are_named(make, error, match, rng):
    with pytest.raises(error, match=match):
        make().resolve(rng.normal(size=(5, 2)))


def test_estimators_record_the_resolved_width(rng):
    X = 50.0 * rng.normal(size=(40, 3))
    model = DualPPCA(2, kernel="rbf").fit(X)
    assert model.kernel == "rbf" and model.kernel_.bandwidth == RBF().resolve(X).bandwidth
    explicit = DualPPCA(2, kernel=RBF(model.kernel_.bandwidth)).fit(X)
    np.testing.assert_array_equal(model.transform(X), explicit.transform(X))
    fmap = Nystroem(n_landmarks=10, random_state=0).fit(X)
    assert fmap.kernel == "rbf" and fmap.kernel_.bandwidth == RBF().resolve(X).bandwidth
