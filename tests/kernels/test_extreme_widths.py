"""Issue 18.6: extreme but finite kernel parameters work (the kernel's limits) or fail clearly.

Decision: every positive finite ``bandwidth`` works. The stationary kernels form the
distances and the exponent in a scaled form, so a width far below the distances gives
the identity Gram matrix (distinct points) and one far above gives all ones -- the
exact limits, not ``ZeroDivisionError``/``OverflowError``/NaN. What an estimator makes
of such a matrix (e.g. rank 0 after centering) it reports itself, as a ``ValueError``.
``Polynomial`` parameters with ``coef0**degree`` beyond float64 (every value would overflow)
raise a ``ValueError`` naming them and a usable range; values that overflow only for the
given data are ``inf`` and the estimators refuse such Gram matrices by name.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from _asserts import assert_within

from kppca import DualPPCA
from kppca.features import Nystroem, RandomFourierFeatures
from kppca.kernels import RBF, ColumnKernel, Laplacian, Linear, Polynomial
from kppca.rkm import (
    DeepRKM,
    DeepRKMClassifier,
    KernelPCARKM,
    LSSVMClassifier,
    LSSVMRegressor,
    MultiViewKPCA,
    NARForecaster,
)

TINY = [5e-324, 1e-300, 1e-30]  # far below the distances (~1) between the points
HUGE = [1e30, 1e300, 1.7976931348623157e308]  # far above

KERNELS = {
    "rbf": lambda b: RBF(b),
    "laplacian": lambda b: Laplacian(b),
    "product": lambda b: RBF(b) * Laplacian(b),
    "column": lambda b: ColumnKernel(RBF(b), [0, 2]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bandwidth", TINY + HUGE)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_stationary_kernels_take_their_limits(name, bandwidth, dtype, rng):
    # a tensor keeps its dtype (numpy input is computed in float64); distinct rows, also in columns 0, 2
    X = torch.as_tensor(rng.normal(size=(6, 3)), dtype=getattr(torch, dtype))
    kernel = KERNELS[name](bandwidth)
    limit = torch.eye(6, dtype=X.dtype) if bandwidth in TINY else torch.ones((6, 6), dtype=X.dtype)
    for K in (kernel(X), kernel(X, X.clone())):
        assert K.dtype == X.dtype
        assert torch.equal(K, limit)
    assert torch.equal(kernel.diag(X), torch.ones(6, dtype=X.dtype))
    # in a sum the limit adds to the other kernel as computed on its own (the same rounding)
    assert torch.equal((kernel + Linear())(X), limit + Linear()(X))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_fourier_features_at_extreme_widths(dtype, rng):
    X = torch.as_tensor(rng.normal(size=(8, 3)), dtype=getattr(torch, dtype))
    wide = RandomFourierFeatures(1e300, n_features=16, random_state=0).fit(X)
    Z = wide.transform(X)
    # Omega ~ 1e-300: every phase is the offset b, the features are constant across rows
    assert torch.equal(Z, Z[:1].expand_as(Z))
    narrow = RandomFourierFeatures(1e-300, n_features=16, random_state=0).fit(X)
    assert torch.isfinite(narrow.transform(X)).all() and narrow.transform(X).dtype == X.dtype
    with pytest.raises(ValueError, match=r"1 / bandwidth overflow float64 \(bandwidth=5e-324\).*larger bandwidth"):
        RandomFourierFeatures(5e-324, n_features=16, random_state=0).fit(X)
    # finite frequencies, but X / bandwidth beyond float64: named at transform
    with pytest.raises(ValueError, match=r"X / bandwidth overflows float64 \(bandwidth=1e-300"):
        narrow.transform(X * 1e10)


@pytest.mark.parametrize("bandwidth", [1e-300, 1e300])
def test_nystroem_at_extreme_widths(bandwidth, rng):
    X = rng.normal(size=(20, 3))
    fmap = Nystroem(RBF(bandwidth), n_landmarks=5, random_state=0).fit(X)
    assert np.isfinite(fmap.transform(X)).all()
    # the approximation is exact on the landmarks: there it is the kernel's limit, I or all ones,
    # up to the eigendecomposition of the 5 x 5 K_LL (backward error ~ 5 eps |K_LL|, |K_LL| <= 5)
    Z = fmap.transform(fmap.landmarks_.numpy())
    limit = np.eye(5) if bandwidth < 1 else np.ones((5, 5))
    assert_within(Z @ Z.T, limit, 10 * 5 * 5 * np.finfo(np.float64).eps)


@pytest.mark.parametrize("degree, coef0", [(2, 1e300), (2, 1.4e154), (100_000, 1.01), (1, 1.7e308)])
def test_polynomial_parameters_that_overflow_everywhere_are_named(degree, coef0):
    if degree == 1:  # coef0^1 is a finite float64: accepted
        Polynomial(degree, coef0)._check_params()
        return
    with pytest.raises(ValueError, match=r"coef0\*\*degree = .* overflows float64.*lower coef0 or degree \(coef0 <= "):
        Polynomial(degree, coef0)(np.zeros((2, 2)))


def test_values_that_overflow_for_the_data_are_inf_not_errors():
    """A kernel is a function: values beyond the dtype are inf (an optimiser probing a far point
    must see inf, not an exception); the estimators refuse non-finite Gram matrices by name."""
    X = np.full((2, 2), 1e200)
    assert np.isposinf(Linear()(X)).all() and np.isposinf(Polynomial(2, 1.0)(X)).all()
    with pytest.raises(ValueError, match="non-finite.*rescale X"):
        DualPPCA(1, kernel=Linear()).fit(np.vstack([X, np.eye(2)]))


def _estimators(kernel):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y, labels = np.sin(X[:, 0]), (X[:, 0] > 0).astype(int)
    series = np.sin(np.arange(60) / 3.0)
    views = [X[:, :2], X[:, 2:]]
    return {
        "DualPPCA": lambda: DualPPCA(2, kernel=kernel).fit(X).transform(X),
        "MultiViewKPCA": lambda: MultiViewKPCA(2, kernels=[kernel, kernel]).fit(views).transform(views),
        "NARForecaster": lambda: NARForecaster(3, 2, kernel_x=kernel, kernel_y=kernel).fit(series).forecast(5),
        "LSSVMRegressor": lambda: LSSVMRegressor(kernel).fit(X, y).predict(X),
        "LSSVMClassifier": lambda: LSSVMClassifier(kernel).fit(X, labels).predict(X),
        "KernelPCARKM": lambda: KernelPCARKM(2, kernel=kernel).fit(X).transform(X),
        "DeepRKM": lambda: DeepRKM(kernel=kernel).fit(X, y).predict(X),
        "DeepRKMClassifier": lambda: DeepRKMClassifier(kernel=kernel).fit(X, labels).predict(X),
    }


@pytest.mark.parametrize("kernel", [RBF(1e-300), RBF(1e300), Laplacian(1e-300), Laplacian(1e300)], ids=repr)
@pytest.mark.parametrize("estimator", sorted(_estimators(None)))
def test_every_kernel_estimator_fits_or_fails_clearly(estimator, kernel):
    """Before: ZeroDivisionError (1e-300) and OverflowError (1e300) in all eight."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = np.asarray(_estimators(kernel)[estimator]())
        except ValueError as exc:
            assert 0 < len(str(exc)) <= 400
            return
    assert np.isfinite(out.astype(np.float64)).all()
