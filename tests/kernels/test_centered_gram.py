"""CenteredGram: every quantity against an independent numpy computation.

Tolerances: entries of ``K_c`` computed two ways differ by the rounding of the kernel
evaluation and of the centering, ``~ CENTERING_ROUNDINGS * eps * max|K|`` each plus the
``D eps |x - c|^2`` relative error of a squared distance expanded around the mean, so
``1e2 * eps`` absolute for these O(1) RBF matrices (inputs of norm ~3). Products of
factors (``L L^T``, ``F F^T``) reproduce their matrix to the backward error ``N eps |K|``.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from kppca._linalg import rank_tolerance
from kppca.kernels.gram_factors import CholeskyFactor, PivotedCholeskyFactor
from kppca.kernels import RBF, CenteredGram, Linear, Polynomial, as_kernel

EPS = np.finfo(np.float64).eps


def _numpy_rbf(X, bandwidth):
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * bandwidth**2))


def _center(K):
    N = K.shape[0]
    M = np.eye(N) - np.ones((N, N)) / N
    return M @ K @ M


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(120, 3))


@pytest.mark.parametrize("batch_size", [None, 7, 50])
def test_matrix_is_the_centered_gram(X, batch_size):
    g = CenteredGram(RBF(1.3), torch.as_tensor(X), batch_size=batch_size)
    ref = _center(_numpy_rbf(X, 1.3))
    K_c = g.matrix.numpy()
    np.testing.assert_allclose(K_c, ref, rtol=0, atol=1e2 * EPS)
    assert np.array_equal(K_c, K_c.T)  # exactly symmetric: mirrored blocks
    np.testing.assert_allclose(g.centerer.column_means_.numpy(), _numpy_rbf(X, 1.3).mean(0), rtol=0, atol=1e2 * EPS)
    assert g.scale == 1.0  # max |K_ij| of an RBF matrix: its unit diagonal


def test_rbf_far_from_the_origin_is_translation_invariant(X):
    """The in-place RBF build expands squared distances around the data mean, as squared_distances does."""
    a = CenteredGram(RBF(1.3), torch.as_tensor(X)).matrix
    b = CenteredGram(RBF(1.3), torch.as_tensor(X + 1e4)).matrix
    # X + 1e4 is rounded to ulp(1e4) = 1.8e-12 per coordinate: distances move by ~2 * 3 * 1.8e-12 * |x| / bw^2
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-10)


def test_uncentered_matrix_is_the_gram_matrix(X):
    g = CenteredGram(RBF(1.3), torch.as_tensor(X), center=False)
    np.testing.assert_allclose(g.matrix.numpy(), _numpy_rbf(X, 1.3), rtol=0, atol=1e2 * EPS)


@pytest.mark.parametrize("kernel, rank", [(RBF(1.3), 119), (Linear(), 3), (Polynomial(2, 1.0), 9)])
def test_rank_and_dense_spectrum(X, kernel, rank):
    g = CenteredGram(kernel, torch.as_tensor(X))
    spec = g.spectrum("dense")
    K = kernel(torch.as_tensor(X)).numpy()
    lam = np.linalg.eigvalsh(_center(K))[::-1]
    assert g.rank == spec.rank == rank
    assert g.tolerance == rank_tolerance(float(spec.values[0]), 120, torch.float64, g.scale)
    k = spec.values.shape[0]
    assert k == min(rank, int((lam > g.tolerance).sum()))
    # eigenvalues of the same matrix to the solvers' backward error (Weyl): N eps lam_1 each
    np.testing.assert_allclose(spec.values.numpy(), lam[:k], rtol=0, atol=2 * 120 * EPS * lam[0])
    values, vectors = g.eigh()
    assert values is spec.values and vectors is spec.vectors  # the dense fit's eigenpairs are kept


def test_partial_spectrum_matches_dense(X):
    from kppca._linalg import compute_threads

    dense = CenteredGram(RBF(1.3), torch.as_tensor(X))
    partial = CenteredGram(RBF(1.3), torch.as_tensor(X))
    # One thread count for every section below: the bitwise comparison at the end is of two dense eigh
    # calls, whose rounding depends on the thread count (each section would take the cores free then).
    with compute_threads(torch.get_num_threads()):
        d = dense.spectrum("dense")
        p = partial.spectrum("partial", 5)
        assert not partial.has_eigh
        values, vectors = partial.eigh()  # computed on demand from the same matrix: the dense result
    assert p.rank == d.rank == 119
    np.testing.assert_allclose(p.values.numpy(), d.values[:5].numpy(), rtol=0, atol=2 * d.tolerance)
    # eigenvectors agree up to the error tol / gap (Davis-Kahan), sign convention shared
    gap = float(d.values[4] - d.values[5])
    np.testing.assert_allclose(p.vectors.numpy(), d.vectors[:, :5].numpy(), rtol=0, atol=10 * d.tolerance / gap)
    assert torch.equal(values, d.values) and torch.equal(vectors, d.vectors)


def test_callable_kernel_counts_the_rank_numerically(X):
    kern = as_kernel(lambda A, B: A @ B.T)
    for solver, k in (("dense", None), ("partial", 1)):
        g = CenteredGram(kern, torch.as_tensor(X))
        assert g.structural_rank is None
        assert g.spectrum(solver, k).rank == g.rank == 3


def test_cholesky_consumes_the_matrix_and_rebuilds_it_bitwise(X):
    g = CenteredGram(RBF(1.3), torch.as_tensor(X))
    g.spectrum("partial", 3)
    K_c = g.matrix.clone()
    factor = g.cholesky()
    assert isinstance(factor, CholeskyFactor) and factor.spans_complement_of_ones and not g.has_matrix
    L = factor.L
    K = _numpy_rbf(X, 1.3)
    np.testing.assert_allclose((L @ L.T).numpy(), K, rtol=0, atol=2 * 120 * EPS)
    F = factor.sqrt()  # M L
    assert factor.width == F.shape[1] == 120
    np.testing.assert_allclose((F @ F.T).numpy(), K_c.numpy(), rtol=0, atol=4 * 120 * EPS)
    a = torch.randn(4, F.shape[1], dtype=torch.float64)
    np.testing.assert_allclose(factor.apply(a).numpy(), (a @ F.T).numpy(), rtol=0, atol=1e2 * EPS)
    assert torch.equal(g.matrix, K_c)  # rebuilt by the same operations
    assert g.cholesky() is factor  # cached


def test_singular_gram_falls_back_to_pivoted_factor(X):
    g = CenteredGram(Linear(), torch.as_tensor(X))  # rank 3 < N: K is singular
    g.spectrum("dense")
    factor = g.cholesky()
    assert isinstance(factor, PivotedCholeskyFactor) and not factor.spans_complement_of_ones
    L = factor.sqrt()
    assert L.shape == (120, 3) and factor.width == 3
    K_c = _center(X @ X.T)
    np.testing.assert_allclose((L @ L.T).numpy(), K_c, rtol=0, atol=1e2 * 120 * EPS * np.abs(X @ X.T).max())


def test_eigen_square_root(X):
    g = CenteredGram(RBF(1.3), torch.as_tensor(X))
    g.spectrum("dense")
    factor = g.eigen_factor()
    F = factor.sqrt()
    values, _ = g.eigh()
    assert factor.width == values.shape[0] == F.shape[1] and not factor.spans_complement_of_ones
    # F F^T is K_c without the eigenvalues below the rounding level tol (at most N of them)
    np.testing.assert_allclose((F @ F.T).numpy(), g.matrix.numpy(), rtol=0, atol=120 * g.tolerance)


def test_centered_vectors_and_projection(X):
    Xt = torch.as_tensor(X)
    g = CenteredGram(RBF(1.3), Xt[:100], batch_size=16)
    Y = X[100:]
    K = _numpy_rbf(X, 1.3)
    k_new, K_train = K[100:, :100], K[:100, :100]
    ref = k_new - K_train.mean(0)[None, :] - k_new.mean(1)[:, None] + K_train.mean()
    kc = g.centered_vectors(Xt[100:])
    np.testing.assert_allclose(kc.numpy(), ref, rtol=0, atol=1e2 * EPS)
    basis = torch.randn(100, 4, dtype=torch.float64)
    np.testing.assert_allclose(g.project(torch.as_tensor(Y), basis).numpy(), ref @ basis.numpy(), atol=1e3 * EPS)
    # training points like any others, by kernel evaluations (never from the buffer, whose presence depends on
    # earlier calls): the rows of K_c to the rounding of the new-point case
    train = g.project(Xt[:100], basis)
    np.testing.assert_array_equal(train.numpy(), (g.centered_vectors(Xt[:100]) @ basis).numpy())
    np.testing.assert_allclose(train.numpy(), (g.matrix @ basis).numpy(), rtol=0, atol=1e3 * EPS)
    back = g.centerer.uncenter(kc, torch.as_tensor(k_new.mean(1)))
    np.testing.assert_allclose(back.numpy(), k_new, rtol=0, atol=1e2 * EPS)


def test_given_statistics_avoid_the_matrix(X):
    """A model rebuilt from its file passes its centerer, rank and lam_1: new points need no N x N matrix."""
    Xt = torch.as_tensor(X)
    fitted = CenteredGram(RBF(1.3), Xt)
    spec = fitted.spectrum("partial", 2)
    g = CenteredGram(RBF(1.3), Xt, centerer=fitted.centerer, rank=spec.rank, eigen_max=float(spec.values[0]))
    g.centered_vectors(Xt[:3])
    assert not g.has_matrix
    assert g.rank == fitted.rank and g.tolerance == fitted.tolerance
    assert torch.equal(g.matrix, fitted.matrix)


def test_release_and_copies(X):
    g = CenteredGram(RBF(1.3), torch.as_tensor(X))
    g.spectrum("dense")
    K_c = g.matrix.clone()
    g.release()
    assert not g.has_matrix and g.has_eigh  # factors stay
    clone = pickle.loads(pickle.dumps(g))
    assert torch.equal(clone.matrix, K_c) and torch.equal(g.matrix, K_c)


def test_float32_agrees_with_float64(X):
    g64 = CenteredGram(RBF(1.3), torch.as_tensor(X))
    g32 = CenteredGram(RBF(1.3), torch.as_tensor(X, dtype=torch.float32))
    assert g32.matrix.dtype == torch.float32
    # float32 rounding of the inputs, the product and the exponential: ~ D eps32 relative to |x|^2 ~ 10
    eps32 = np.finfo(np.float32).eps
    np.testing.assert_allclose(g32.matrix.double().numpy(), g64.matrix.numpy(), rtol=0, atol=1e2 * eps32)
    s32, s64 = g32.spectrum("partial", 3), g64.spectrum("partial", 3)
    assert s32.rank == s64.rank
    np.testing.assert_allclose(s32.values.double().numpy(), s64.values.numpy(), rtol=0, atol=2 * s32.tolerance)


def test_nonfinite_kernel_values_are_refused(X):
    bad = X.copy()
    bad[0, 0] = 1e308
    with pytest.raises(ValueError, match="non-finite"):
        CenteredGram(Linear(), torch.as_tensor(bad)).spectrum("dense")


@pytest.mark.parametrize("center", [True, False])
def test_solve_gives_dual_coefficients_on_both_routes(X, center):
    g = CenteredGram(RBF(1.3), torch.as_tensor(X), center=center)
    g.spectrum("partial", 3)
    K_c = g.matrix.clone().numpy()
    k_c = torch.as_tensor(K_c[:5] @ np.random.default_rng(1).normal(size=(120, 120)) @ K_c / 120)  # in range(K_c)
    by_eigen = g.eigen_factor().solve(k_c)
    by_cholesky = g.cholesky().solve(k_c)
    for alpha in (by_eigen, by_cholesky):
        # K_c alpha reproduces k_c up to the resolved part: the dropped eigenvalues (< tol) times |alpha|
        resid = np.abs(alpha.numpy() @ K_c - k_c.numpy()).max()
        assert resid <= 120 * g.tolerance * float(np.abs(alpha.numpy()).max()) + 1e3 * EPS * float(k_c.abs().max())
    if center:  # the Cholesky route returns the solution orthogonal to 1 explicitly (a final centering)
        np.testing.assert_allclose(by_cholesky.sum(1).numpy(), 0.0, atol=120 * EPS * float(by_cholesky.abs().max()))
