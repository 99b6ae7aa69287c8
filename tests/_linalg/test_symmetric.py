"""The symv Lanczos operator and the in-place RBF Gram fill, against plain torch products and dense eigh."""

import math

import numpy as np
import pytest
import torch

from kppca._linalg import eigen, eigh_top
from kppca.kernels import RBF
from kppca.kernels.gram import gram_matrix


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_symmetric_operator_reads_the_lower_triangle_only(rng, dtype):
    n = 29
    B = torch.as_tensor(rng.normal(size=(n, n)), dtype=dtype)
    A = (B + B.T).contiguous()
    x = rng.normal(size=n).astype(np.float64 if dtype == torch.float64 else np.float32)
    expected = A.double() @ torch.as_tensor(x, dtype=torch.float64)
    A_poisoned = A.clone()
    upper = torch.ones(n, n, dtype=torch.bool).triu(1)
    A_poisoned[upper] = float("nan")
    y = eigen.symmetric_operator(A_poisoned).matvec(x)
    # n terms per entry: |error| <= n eps sum_j |a_ij x_j|.
    tol = n * torch.finfo(dtype).eps * (A.double().abs() @ torch.as_tensor(np.abs(x), dtype=torch.float64))
    assert bool(((torch.as_tensor(y, dtype=torch.float64) - expected).abs() <= tol).all())


def test_the_blas_routines_refuse_what_they_cannot_serve():
    with pytest.raises(ValueError, match="float32/float64"):
        eigen.symmetric_operator(torch.zeros(3, 3, dtype=torch.float16))
    with pytest.raises(ValueError, match="contiguous"):
        eigen.symmetric_operator(torch.zeros(6, 6)[::2, ::2])
    assert not eigen.supports(torch.zeros(2, dtype=torch.int64))


def test_eigh_top_on_the_operator_equals_dense_eigh(rng):
    n, k = 300, 6
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    values = np.geomspace(1.0, 1e-6, n)
    A = torch.as_tensor((Q * values) @ Q.T)
    A = (A + A.T) / 2
    top_values, top_vectors = eigh_top(A, k, random_state=np.random.default_rng(0))
    dense_values, dense_vectors = torch.linalg.eigh(A)
    # Eigenvalues of a symmetric matrix move by at most ||dA|| ~ n eps ||A|| (Weyl).
    eps = torch.finfo(A.dtype).eps
    torch.testing.assert_close(top_values, dense_values.flip(0)[:k], rtol=0, atol=n * eps * values[0])
    # Eigenvectors of either solver are within an angle theta ~ n eps ||A|| / gap of the exact ones,
    # so |cos| >= 1 - theta^2 / 2 (less the n-term rounding of the dot product).
    gap = min(values[i] - values[i + 1] for i in range(k))
    theta = 2 * n * eps * values[0] / gap
    overlap = (top_vectors.T @ dense_vectors.flip(1)[:, :k]).diagonal().abs()
    assert bool((overlap >= 1 - theta**2 / 2 - n * eps).all())


@pytest.mark.parametrize("size_limit, threads, blas_during", [(None, 2, 1), (0, 2, 2), (0, 1, 1)])
def test_a_small_matrix_wakes_no_blas_worker(rng, monkeypatch, size_limit, threads, blas_during):
    """Small: ARPACK and symv on one BLAS thread (OpenBLAS's workers would spin after the iteration,
    taking a core from what runs next); large: on the section's threads; the section's limits restored."""
    import kppca._linalg.eigen as eigen
    from kppca._linalg import compute_threads
    from kppca._linalg.threads import _blas_controller

    if size_limit is not None:
        monkeypatch.setattr(eigen, "ONE_THREAD_BYTES", size_limit)
    seen = {}
    real_eigsh = eigen.eigsh

    def spy(op, **kwargs):
        seen["blas"] = {int(lib.num_threads) for lib in _blas_controller().lib_controllers}
        return real_eigsh(op, **kwargs)

    monkeypatch.setattr(eigen, "eigsh", spy)
    B = torch.as_tensor(rng.normal(size=(60, 60)))
    with compute_threads(threads):
        before = {int(lib.num_threads) for lib in _blas_controller().lib_controllers}
        eigen.eigh_top(B @ B.T, 3)
        after = {int(lib.num_threads) for lib in _blas_controller().lib_controllers}
    assert seen["blas"] == {blas_during} and before == after == {threads}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_rbf_gram_by_syrk_equals_the_kernel(rng, dtype):
    """The in-place fill (a product per row block into the buffer, tiles, mirroring)."""
    N, D = 2100, 9  # 16 row blocks of more than one 64-row tile
    X = torch.as_tensor(rng.normal(size=(N, D)), dtype=dtype)
    kernel = RBF(2.0)
    K = gram_matrix(kernel, X)
    assert torch.equal(K, K.T)
    assert bool((K.diagonal() == 1).all())
    ref = kernel.gram(X.double(), X.double())
    # The exponent z_i.z_j - s_i - s_j (z = sqrt(2 gamma)(x - mean)) is formed with (D + 2) roundings
    # of terms bounded by (|z_i| + |z_j|)^2; exp turns that absolute error into a relative one on
    # K <= 1, plus the exp's own rounding. The reference is formed the same way in float64, with the
    # same error in float64's eps: the two errors add (they are of one size when dtype is float64, and
    # the thread count changes the products' rounding, so they can point the same way).
    Xc = X.double() - X.double().mean(0)
    norms = Xc.norm(dim=1) * math.sqrt(2 * kernel.gamma)
    eps = torch.finfo(dtype).eps + torch.finfo(torch.float64).eps
    bound = (D + 3) * eps * ((norms[:, None] + norms[None, :]) ** 2 + 1)
    assert bool(((K.double() - ref).abs() <= bound).all())
