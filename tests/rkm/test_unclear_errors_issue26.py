"""Issue 26, items 9 and 10: values near the float64 limit, scaled views, far points and bad targets
give finite results or a ValueError/TypeError naming the argument and the fix."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from kppca import DualPPCA
from kppca.kernels import RBF, Laplacian
from kppca.kernels.distances import power_of_two_scale, squared_distances
from kppca.rkm import DeepLSSVMClassifier, DeepRKM, KernelPMF, LSSVMClassifier, MultiViewKPCA


def _huge(rng, n=30):
    """Values up to 1.7e308: centring them in float64 overflows (their differences reach 3.4e308)."""
    return np.clip(rng.normal(size=(n, 3)), -1.7, 1.7) * 1e308


def test_power_of_two_scale_never_overflows():
    assert power_of_two_scale(1.7e308) == math.ldexp(1.0, 1023)  # 2^1024 is not a float
    assert power_of_two_scale(3.0) == 4.0


def test_squared_distances_of_values_near_the_limit(rng):
    """Before: OverflowError (math range error). Distances are exact up to a power of two: compare with the
    same points scaled by 2^-1000 (an exact scaling), whose distances are ordinary numbers."""
    X = torch.as_tensor(_huge(rng, 6))
    D = squared_distances(X, X)
    small = squared_distances(X * 2.0**-1000, X * 2.0**-1000)
    assert bool((torch.diagonal(D) == 0).all())
    # D is small * 2^2000: beyond float64 wherever small > 0 (2^2000 overflows), so +inf there
    assert bool(torch.isinf(D[small > 0]).all())


@pytest.mark.parametrize("make", [lambda: DeepRKM(n_passes=1), lambda: DeepLSSVMClassifier(n_passes=1),
                                  lambda: LSSVMClassifier(), lambda: KernelPMF()])
def test_values_near_the_limit_fit_or_fail_clearly(make, rng):
    X = _huge(rng)
    y = (np.arange(30) % 2).astype(int)
    model = make()
    target = y.astype(float) if isinstance(model, DeepRKM) else (None if isinstance(model, KernelPMF) else y)
    try:
        model.fit(X, target)
    except ValueError as exc:  # a clear error is fine; an OverflowError was not
        assert "kernel" in str(exc) or "X" in str(exc)


@pytest.mark.parametrize("kernels", [None, [None, RBF(1.0)]])
def test_a_view_scaled_by_1e300_is_a_clear_error(kernels, rng):
    """Before: a raw LinAlgError from the eigensolver."""
    X = rng.normal(size=(30, 4))
    with pytest.raises(ValueError, match=r"holds infinite values.*standardise the views"):
        MultiViewKPCA(2, kernels=kernels).fit([X[:, :2] * 1e300, X[:, 2:]])


@pytest.mark.parametrize("kernel", ["rbf", Laplacian(1.0)])
def test_kernel_pmf_of_far_points_is_finite(kernel, rng):
    """Before: -inf for points 1e200 away (the squared distance overflows); now the dtype's most negative
    number, and the order of nearer far points is kept."""
    X = rng.normal(size=(30, 3))
    model = KernelPMF(kernel=kernel).fit(X)
    scores = model.score_samples(np.concatenate([X[:2] + 1e3, X[:2] + 1e200]))
    assert np.isfinite(scores).all()
    assert scores[0] > scores[2] and scores[2] >= np.finfo(np.float64).min


def test_nan_in_y_of_dual_ppca_names_y(rng):
    X = rng.normal(size=(30, 4))
    y = X[:, 0].copy()
    y[3] = np.nan
    with pytest.raises(ValueError, match="Input y contains NaN"):
        DualPPCA(2).fit(X, y)


def test_deep_lssvm_advice_names_its_own_parameters(rng):
    """Before: advice to standardise y and use solver='primal' (neither exists for this classifier), and
    eta_levels=(inf, 1) reported as the internal levels[1].eta."""
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match=r"ridge=1e-300.*use a larger ridge") as info:
        DeepLSSVMClassifier(ridge=1e-300).fit(X, y)
    assert "standardise y" not in str(info.value) and "solver" not in str(info.value)
    with pytest.raises(ValueError, match=r"eta_levels\[0\] must be a float in the range \(0, inf\).*got inf"):
        DeepLSSVMClassifier(eta_levels=(float("inf"), 1)).fit(X, y)
