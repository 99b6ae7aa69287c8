"""Kernel PCA and the matrix SVD as RKMs, against numpy and the package's kernel PCA."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca import DualPPCA
from kppca.kernels import RBF, as_kernel
from kppca.rkm import KernelPCARKM, matrix_svd_rkm

EPS = np.finfo(np.float64).eps


def test_svd_rkm_matches_numpy():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(7, 5))
    res = matrix_svd_rkm(A)
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    gap = np.min(np.diff(s[::-1]))
    tol = 20 * 12 * EPS * s[0] / gap
    assert np.abs(res.values - s).max() < 20 * 12 * EPS * s[0]
    # Columns agree up to one sign per triplet (shared by u and v).
    signs = np.sign((res.left * U).sum(0))
    assert np.abs(res.left - U * signs).max() < tol
    assert np.abs(res.right - Vt.T * signs).max() < tol
    # Stationarity of the RKM: A beta = lambda alpha, A^T alpha = lambda beta.
    assert np.abs(A @ res.right - res.left * res.values).max() < 1e-12 * s[0]
    assert np.abs(A.T @ res.left - res.right * res.values).max() < 1e-12 * s[0]


def test_svd_rkm_rank_deficient_and_torch():
    rng = np.random.default_rng(1)
    A = torch.tensor(rng.normal(size=(6, 2)) @ rng.normal(size=(2, 4)))
    res = matrix_svd_rkm(A, 3)
    assert isinstance(res.values, torch.Tensor) and res.values.shape == (2,)


def test_kpca_rkm_stationarity_and_package_kpca():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    eta = 2.0
    m = KernelPCARKM(3, kernel=RBF(1.5), eta=eta).fit(X)
    H, lam = m.hidden_features_.numpy(), m.eigenvalues_.numpy()
    K = RBF(1.5)(X)
    C = np.eye(50) - 1.0 / 50
    Kc = C @ K @ C
    # (1/eta) K_c H = H Lam to rounding: residual ~ N eps ||K||.
    assert np.abs(Kc @ H / eta - H * lam).max() < 50 * 50 * EPS * np.abs(K).max()
    assert np.allclose(H.T @ H, np.eye(3), atol=1e-12)
    # Same eigenpairs as the package's dual model (kernel PCA in the dual).
    ref = DualPPCA(3, kernel=RBF(1.5)).fit(X)
    E = ref.eigenvectors_.numpy()
    gap = np.min(np.abs(np.diff(np.linalg.eigvalsh(Kc)[::-1][:4])))
    assert np.abs(np.abs(E.T @ H).diagonal() - 1).max() < 100 * 50 * EPS * np.abs(K).max() / gap
    # Training scores are H Lam.
    assert np.abs(m.transform(X) - H * lam).max() < 1e-8 * lam[0]


def test_kpca_rkm_too_many_components():
    X = np.random.default_rng(0).normal(size=(4, 2))
    with pytest.raises(ValueError, match="n_components"):
        KernelPCARKM(5, kernel="linear").fit(X)


def test_kpca_rkm_rank_zero_does_not_advise_zero_components():
    for kernel in ("linear", RBF(1.0)):
        with pytest.raises(ValueError, match="rank 0") as info:
            KernelPCARKM(1, kernel=kernel).fit(np.ones((5, 3)))
        assert "n_components <= 0" not in str(info.value)


def test_kpca_rkm_default_rbf_width_from_data():
    X = np.random.default_rng(0).normal(size=(30, 3)) * 50
    m = KernelPCARKM(2).fit(X)
    assert isinstance(m.kernel_, RBF)
    assert m.kernel_.bandwidth == pytest.approx(np.sqrt(X.shape[1] * X.var() / 2), rel=1e-12)  # "scale" rule
    # Same as passing that width explicitly (bitwise: the same kernel object state).
    ref = KernelPCARKM(2, kernel=RBF(m.kernel_.bandwidth)).fit(X)
    assert torch.equal(m.hidden_features_, ref.hidden_features_)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_check_psd_kernel_accepts_valid_kernels_and_refuses_invalid_ones(dtype):
    """Cauchy-Schwarz on the raw Gram matrix recovered from K_c: valid kernels (also far from unit scale) pass,
    -||x - y|| (centred matrix PSD, kernel not) and a negative diagonal are refused."""
    from kppca.kernels import CenteredGram, Laplacian, Linear, Polynomial
    from kppca.rkm.shallow import check_psd_kernel

    X = torch.as_tensor(np.random.default_rng(0).normal(size=(40, 3)) * 1e3, dtype=dtype)
    for kernel in (RBF(1.0), RBF(1e4), Laplacian(50.0), Linear(), Polynomial(2, 1.0), RBF(1e3) + Linear()):
        check_psd_kernel(CenteredGram(kernel, X))
    for bad in (lambda A, B: -torch.cdist(A, B), lambda A, B: -(A @ B.T)):
        with pytest.raises(ValueError, match="not positive semi-definite"):
            check_psd_kernel(CenteredGram(as_kernel(bad), X))
