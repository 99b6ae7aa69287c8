"""Kernel sums and products: k1 + k2, k1 * k2, and a multi-view kernel as a kernel expression."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import clone

from kppca.kernels import (
    RBF,
    ColumnKernel,
    Linear,
    Polynomial,
    ProductKernel,
    SumKernel,
)
from kppca.rkm import MultiViewKPCA


def test_sum_and_product_values(rng):
    X, Y = rng.normal(size=(6, 3)), rng.normal(size=(4, 3))
    a, b, c = RBF(1.5), Linear(), Polynomial(degree=2)
    np.testing.assert_allclose((a + b)(X, Y), a(X, Y) + b(X, Y), rtol=1e-15)
    np.testing.assert_allclose((a * c)(X, Y), a(X, Y) * c(X, Y), rtol=1e-15)
    k = a + b + a * c
    assert isinstance(k, SumKernel) and len(k.kernels) == 3
    assert isinstance((a * b) * c, ProductKernel) and len(((a * b) * c).kernels) == 3
    np.testing.assert_allclose(k(X), a(X) + b(X) + a(X) * c(X), rtol=1e-14)
    Xt = torch.as_tensor(X)
    np.testing.assert_allclose(k.diag(Xt).numpy(), np.diag(k(X)), rtol=1e-14)


def test_composite_is_psd_and_clonable(rng):
    X = rng.normal(size=(30, 2))
    k = RBF(1.0) * Polynomial(degree=3) + Linear()
    assert np.linalg.eigvalsh(k(X)).min() > -1e-10 * np.abs(k(X)).max()
    k2 = clone(k)
    np.testing.assert_array_equal(k2(X), k(X))
    k.set_params(kernels=[RBF(2.0)])
    assert repr(k) == "(RBF(bandwidth=2.0))"


def test_adding_a_non_kernel_fails():
    import pytest

    with pytest.raises(TypeError):
        RBF() + 1.0


def test_multiview_kernel_is_a_sum_of_column_kernels(rng):
    X, Y = rng.normal(size=(25, 3)), rng.normal(size=(25, 2))
    joint = ColumnKernel(RBF(2.0), slice(0, 3)) + ColumnKernel(Linear(), [3, 4])
    one = MultiViewKPCA(3, kernels=[joint]).fit([np.hstack([X, Y])])
    two = MultiViewKPCA(3, kernels=[RBF(2.0), Linear()], form="dual").fit([X, Y])
    np.testing.assert_allclose(one.hidden_features_.numpy(), two.hidden_features_.numpy(), atol=1e-10)
