"""The fit's Gram buffer holds one triangle: the build, the centering and Lanczos read the lower one only.

The strict upper triangle of the buffer is poisoned with NaN in these tests: any read of it would
show in the results. Tolerances: a sum of ``N`` terms computed in two orders differs by at most
``N eps sum |a_i|`` (the standard bound for recursive summation, applied to both orders).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca._linalg import matrix_scale
from kppca.kernels.gram_factors import CholeskyFactor
from kppca.kernels import RBF, CallableKernel, CenteredGram, KernelCenterer, Laplacian, Linear, Polynomial
from kppca.kernels.gram import _lower_row_sums, gram_matrix, lower_gram_matrix, mirror_lower_


def _poison_upper(K: torch.Tensor) -> torch.Tensor:
    """``K`` with NaN written over its strict upper triangle, in place."""
    upper = torch.ones_like(K, dtype=torch.bool).triu_(1)
    return K.masked_fill_(upper, float("nan"))


def _symmetric(n: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    A = torch.randn(n, n, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    return ((A + A.T) / 2).to(dtype)


@pytest.fixture
def X():
    return torch.as_tensor(np.random.default_rng(0).normal(size=(150, 4)))


@pytest.mark.parametrize("kernel", [RBF(1.3), Laplacian(2.0), Linear(), Polynomial(3, 1.0),
                                    CallableKernel(lambda A, B: (1 + A @ B.T) ** 2)],
                         ids=["rbf-in-place", "laplacian", "linear", "polynomial", "callable"])
@pytest.mark.parametrize("batch_size", [None, 7])
def test_lower_gram_matrix_scale_is_the_largest_entry(X, kernel, batch_size):
    """The scale is read off the diagonal (in-place RBF) or the blocks as built: ``max |K_ij|`` exactly.

    (The entries themselves are tested against ``kernel.gram`` in ``tests/test_scale.py``.)"""
    K, scale = lower_gram_matrix(kernel, X, batch_size=batch_size)
    whole = mirror_lower_(K)
    assert torch.equal(whole, whole.T)
    assert scale == matrix_scale(whole)


def test_lower_gram_matrix_scale_is_nan_for_a_non_finite_kernel(X):
    kernel = CallableKernel(lambda A, B: torch.full((A.shape[0], B.shape[0]), float("inf"), dtype=A.dtype))
    _, scale = lower_gram_matrix(kernel, X, batch_size=7)
    assert not np.isfinite(scale)


@pytest.mark.parametrize("batch_size", [None, 7, 1000])
def test_mirror_lower_reads_the_lower_triangle_only(batch_size):
    S = _symmetric(90, torch.float64)
    K = _poison_upper(S.clone())
    assert torch.equal(mirror_lower_(K, batch_size=batch_size), S)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64-symv", "float32-tiles"])
def test_lower_row_sums_are_the_row_sums_of_the_symmetric_matrix(dtype):
    n = 700
    S = _symmetric(n, dtype, seed=1)
    sums = _lower_row_sums(_poison_upper(S.clone()))
    assert sums.dtype == torch.float64
    exact = S.double().sum(1)
    # Both orders of summation (in float64) err by at most n eps sum |a| each.
    bound = 2 * n * np.finfo(np.float64).eps * S.double().abs().sum(1)
    assert bool(((sums - exact).abs() <= bound).all())


@pytest.mark.parametrize("center", [True, False])
def test_centering_the_lower_triangle_gives_the_centered_matrix(X, center):
    K = gram_matrix(RBF(1.3), X)
    full, lower = KernelCenterer(center), KernelCenterer(center)
    K_full = full.fit_center_(K.clone())
    K_lower = mirror_lower_(lower.fit_center_(_poison_upper(K.clone()), lower=True))
    n, eps = K.shape[0], np.finfo(np.float64).eps
    # Column means from two orders of summation (entries in [0, 1]): |difference| <= 2 n eps max|K|.
    torch.testing.assert_close(lower.column_means_, full.column_means_, rtol=0, atol=2 * n * eps)
    torch.testing.assert_close(lower.grand_mean_, full.grand_mean_, rtol=0, atol=2 * n * eps)
    # Each entry subtracts m_i + m_j - g: three means, plus the rounding of the subtractions.
    torch.testing.assert_close(K_lower, K_full, rtol=0, atol=6 * n * eps + 4 * eps)
    assert torch.equal(K_lower, K_lower.T)


def test_partial_spectrum_reads_the_lower_triangle_only():
    X = torch.as_tensor(np.random.default_rng(2).normal(size=(400, 5)))
    clean, poisoned = CenteredGram(RBF(2.0), X), CenteredGram(RBF(2.0), X)
    _poison_upper(poisoned._lower())
    a, b = clean.spectrum("partial", 6), poisoned.spectrum("partial", 6)
    assert torch.equal(a.values, b.values) and torch.equal(a.vectors, b.vectors)
    assert a.trace == b.trace and a.rank == b.rank
    # The whole matrix is made on first use, from the lower triangle: the dense fit's matrix bitwise.
    dense = CenteredGram(RBF(2.0), X)
    dense.spectrum("dense")
    assert torch.equal(poisoned.matrix, dense.matrix)
    assert not bool(torch.isnan(poisoned.matrix).any())


def test_cholesky_factor_reads_the_lower_triangle_only():
    """The raw factor restores and factors ``K`` in the buffer from its lower triangle (the fit's state)."""
    X = torch.as_tensor(np.random.default_rng(3).normal(size=(300, 4)))
    clean, poisoned = CenteredGram(RBF(2.0), X), CenteredGram(RBF(2.0), X)
    _poison_upper(poisoned._lower())
    a, b = clean.cholesky(), poisoned.cholesky()
    assert isinstance(a, CholeskyFactor) and isinstance(b, CholeskyFactor) and torch.equal(a.L, b.L)
    L_b = b.L
    K = gram_matrix(RBF(2.0), X)
    # A factor reproduces its matrix to the backward error n eps |K| (entries of K in [0, 1]).
    torch.testing.assert_close(L_b @ L_b.T, K, rtol=0, atol=4 * K.shape[0] * np.finfo(np.float64).eps)


def test_devices_without_the_one_triangle_route_build_the_whole_matrix(monkeypatch):
    """Where BLAS ``symv`` cannot serve (a CUDA tensor; emulated here), the build mirrors and centers the whole
    matrix at once, and its spectrum is the one-triangle route's to rounding."""
    from kppca._linalg import eigen

    X = torch.as_tensor(np.random.default_rng(4).normal(size=(400, 5)))
    one_triangle = CenteredGram(RBF(2.0), X).spectrum("partial", 6)
    monkeypatch.setattr(eigen, "supports", lambda A: False)
    whole = CenteredGram(RBF(2.0), X)
    spectrum = whole.spectrum("partial", 6)
    assert not whole._lower_only and torch.equal(whole._matrix, whole._matrix.T)
    # Both centerings agree to 2 n eps (entries in [0, 1]); eigenvalues move by at most the
    # spectral norm of that perturbation, n times the entry bound.
    n, eps = X.shape[0], np.finfo(np.float64).eps
    torch.testing.assert_close(spectrum.values, one_triangle.values, rtol=0, atol=6 * n * n * eps)
