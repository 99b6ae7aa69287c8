"""Kernels and kernel centering, checked against scikit-learn and explicit matrix formulas."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _asserts import assert_within
from sklearn.metrics import pairwise
from sklearn.preprocessing import KernelCenterer as SkKernelCenterer

from kppca.kernels import (
    RBF,
    CallableKernel,
    KernelCenterer,
    Laplacian,
    Linear,
    Polynomial,
    as_kernel,
)


@pytest.fixture
def XY(rng):
    return rng.normal(size=(9, 4)), rng.normal(size=(6, 4))


# ----------------------------------------------------------------------------- values vs scikit-learn


@pytest.mark.parametrize(
    "kernel, reference",
    [
        (Linear(), lambda X, Y: pairwise.linear_kernel(X, Y)),
        (RBF(1.0), lambda X, Y: pairwise.rbf_kernel(X, Y, gamma=0.5)),
        (RBF(2.5), lambda X, Y: pairwise.rbf_kernel(X, Y, gamma=1.0 / (2 * 2.5**2))),
        (Polynomial(3, coef0=0.7), lambda X, Y: pairwise.polynomial_kernel(X, Y, degree=3, gamma=1.0, coef0=0.7)),
        (Polynomial(2, coef0=0.0), lambda X, Y: pairwise.polynomial_kernel(X, Y, degree=2, gamma=1.0, coef0=0.0)),
        (Laplacian(1.7), lambda X, Y: pairwise.laplacian_kernel(X, Y, gamma=1.0 / 1.7)),
    ],
    ids=["linear", "rbf1", "rbf2.5", "poly3", "poly2-homogeneous", "laplacian"],
)
def test_kernel_values_match_sklearn(kernel, reference, XY):
    X, Y = XY
    out = kernel(X, Y)
    assert isinstance(out, np.ndarray)
    assert out.dtype == np.float64 and out.shape == (9, 6)
    np.testing.assert_allclose(out, reference(X, Y), rtol=1e-12, atol=1e-12)
    # Y omitted means Y = X; the Gram matrix is symmetric
    np.testing.assert_allclose(kernel(X), reference(X, X), rtol=1e-12, atol=1e-12)
    # diag() agrees with the diagonal of the Gram matrix
    np.testing.assert_allclose(kernel.diag(torch.tensor(X)).numpy(), np.diag(reference(X, X)), rtol=1e-12)


def test_rbf_gamma_property():
    assert RBF(4.0).gamma == pytest.approx(1.0 / 32.0)


@pytest.mark.parametrize("kernel", [Linear(), RBF(1.3), Polynomial(2), Laplacian(0.8)])
def test_torch_in_torch_out_and_float32_preserved(kernel, XY):
    X, Y = XY
    ref = kernel(X, Y)
    out64 = kernel(torch.tensor(X), torch.tensor(Y))
    assert isinstance(out64, torch.Tensor) and out64.dtype == torch.float64
    np.testing.assert_allclose(out64.numpy(), ref, rtol=1e-12, atol=1e-12)
    out32 = kernel(torch.tensor(X, dtype=torch.float32), torch.tensor(Y, dtype=torch.float32))
    assert isinstance(out32, torch.Tensor) and out32.dtype == torch.float32
    np.testing.assert_allclose(out32.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_integer_and_list_inputs_give_float64_numpy():
    X = [[0, 1], [2, 3], [4, 5]]
    out = Linear()(X)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    np.testing.assert_array_equal(out, np.array(X, float) @ np.array(X, float).T)


# ----------------------------------------------------------------------------- callables and names


def test_callable_kernel(XY):
    X, Y = XY

    def cubic(A, B):
        return (A @ B.T) ** 3

    kern = as_kernel(cubic)
    assert isinstance(kern, CallableKernel)
    # Each side rounds x.y by at most D eps |x||y| (torch and numpy sum in different orders), and
    # cubing (derivative 3 (x.y)^2) adds two roundings: a bound in |x||y|, not relative to x.y,
    # which can be near zero.
    eps, D = np.finfo(np.float64).eps, X.shape[1]
    norms = np.linalg.norm(X, axis=1)[:, None] * np.linalg.norm(Y, axis=1)[None, :]
    assert_within(kern(X, Y), (X @ Y.T) ** 3, (6 * D + 4) * eps * norms**3)
    # a callable returning numpy is accepted too
    kern_np = as_kernel(lambda A, B: np.asarray(A) @ np.asarray(B).T)
    assert_within(kern_np(X, Y), X @ Y.T, 2 * D * eps * norms)
    assert "cubic" in repr(kern)


def test_callable_kernel_bad_output_shape(XY):
    X, Y = XY
    kern = as_kernel(lambda A, B: A @ A.T)
    with pytest.raises(ValueError, match=r"kernel function returned shape \(9, 9\)"):
        kern(X, Y)


def test_as_kernel_names_and_errors():
    assert isinstance(as_kernel(None), Linear)
    assert isinstance(as_kernel("RBF"), RBF)
    assert isinstance(as_kernel("laplacian"), Laplacian)
    assert isinstance(as_kernel("polynomial"), Polynomial)
    k = RBF(2.0)
    assert as_kernel(k) is k
    with pytest.raises(ValueError, match="kernel='cosine' is unknown"):
        as_kernel("cosine")
    with pytest.raises(TypeError, match="kernel must be a Kernel or a callable"):
        as_kernel(3.0)
    # scikit-learn rule: __init__ stores, use validates (set_params bypasses __init__)
    with pytest.raises(TypeError, match="kernel must be a Kernel or a callable"):
        CallableKernel(3.0)(np.zeros((2, 2)))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: RBF(0.0), "bandwidth"),
        (lambda: RBF(-1.0), "bandwidth"),
        (lambda: Laplacian(float("inf")), "bandwidth"),
        (lambda: Polynomial(0), "degree"),
        (lambda: Polynomial(2.5), "degree"),
        (lambda: Polynomial(2, coef0=-1.0), "coef0"),
    ],
)
def test_bad_hyperparameters(make, match):
    """Bad values are stored as given (scikit-learn rule) and rejected, by name, on use."""
    kernel = make()
    X = np.zeros((3, 2))
    with pytest.raises((ValueError, TypeError), match=match):
        kernel(X)
    with pytest.raises((ValueError, TypeError), match=match):
        kernel.gram(torch.tensor(X), torch.tensor(X))
    with pytest.raises((ValueError, TypeError), match=match):
        kernel.diag(torch.tensor(X))
    # a valid kernel made invalid through set_params is caught the same way
    good = type(kernel)()
    good.set_params(**kernel.get_params())
    with pytest.raises((ValueError, TypeError), match=match):
        good(X)


def test_feature_count_mismatch(rng):
    with pytest.raises(ValueError, match="X has 3 features but Y has 2"):
        RBF()(rng.normal(size=(4, 3)), rng.normal(size=(5, 2)))
    with pytest.raises(ValueError, match="X must have 2 dimension"):
        Linear()(rng.normal(size=4))


# ----------------------------------------------------------------------------- centering


def _explicit_centering(K: np.ndarray, K_x: np.ndarray) -> np.ndarray:
    """The spec's formula for a test block, written with the centering matrix."""
    N = K.shape[0]
    M_ = K_x.shape[0]
    one_N = np.ones((N, N)) / N
    one_MN = np.ones((M_, N)) / N
    return K_x - one_MN @ K - K_x @ one_N + one_MN @ K @ one_N


@pytest.fixture
def gram_blocks(rng):
    X = rng.normal(size=(12, 3))
    Xt = rng.normal(size=(5, 3))
    kern = RBF(1.5)
    return kern(X), kern(Xt, X)


def test_fit_center_equals_MKM(gram_blocks):
    K, _ = gram_blocks
    N = K.shape[0]
    M = np.eye(N) - np.ones((N, N)) / N
    centerer = KernelCenterer()
    T = torch.tensor(K)
    out = centerer.fit_center_(T)
    assert out is T  # documented: in place
    np.testing.assert_allclose(out.numpy(), M @ K @ M, atol=1e-13)
    # a mean of N entries summed in another order: absolute error <= N eps max|K| on each side
    atol = 2 * K.shape[0] * np.finfo(np.float64).eps * np.abs(K).max()
    assert_within(centerer.column_means_.numpy(), K.mean(0), atol)
    assert_within(float(centerer.grand_mean_), K.mean(), atol)
    # transform() of the training block gives the same M K M
    np.testing.assert_allclose(centerer.transform(torch.tensor(K)).numpy(), M @ K @ M, atol=1e-13)


def test_transform_matches_explicit_formula_and_sklearn(gram_blocks):
    K, K_x = gram_blocks
    centerer = KernelCenterer()
    centerer.fit_center_(torch.tensor(K))
    out = centerer.transform(torch.tensor(K_x)).numpy()
    np.testing.assert_allclose(out, _explicit_centering(K, K_x), atol=1e-13)
    sk = SkKernelCenterer().fit(K)
    np.testing.assert_allclose(out, sk.transform(K_x), atol=1e-13)
    np.testing.assert_allclose(out.sum(1), 0.0, atol=1e-13)


def test_uncenter_inverts_transform_given_row_means(gram_blocks):
    K, K_x = gram_blocks
    centerer = KernelCenterer()
    centerer.fit_center_(torch.tensor(K))
    K_xc = centerer.transform(torch.tensor(K_x))
    back = centerer.uncenter(K_xc, torch.tensor(K_x.mean(1)))
    np.testing.assert_allclose(back.numpy(), K_x, atol=1e-13)
    # a scalar row mean broadcasts over every row
    one = centerer.uncenter(K_xc[:1], float(K_x[0].mean()))
    np.testing.assert_allclose(one.numpy(), K_x[:1], atol=1e-13)


def test_uncentered_passthrough(gram_blocks):
    K, K_x = gram_blocks
    centerer = KernelCenterer(center=False)
    T = torch.tensor(K)
    np.testing.assert_array_equal(centerer.fit_center_(T).numpy(), K)
    block = torch.tensor(K_x)
    out = centerer.transform(block)
    assert out is not block
    np.testing.assert_array_equal(out.numpy(), K_x)
    np.testing.assert_array_equal(centerer.uncenter(out, 0.3).numpy(), K_x)
