"""The same model fitted on the GPU and on the CPU (float64) agrees to the rounding its conditioning allows.

Runs only where ``torch.cuda.is_available()``. cuBLAS/cuSOLVER sum in other orders than the CPU's BLAS and
LAPACK, so the two fits differ by rounding: each comparison's bound is the backward error of the symmetric
eigenproblem, ``||dK|| <= c N eps ||K||`` with ``||K|| <= trace K``, carried to what is compared (an
eigenvalue moves by at most ``||dK||``; an eigenvector by ``||dK|| / gap``, the gap after the q-th value).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kppca
from kppca import DualPPCA, PrimalPPCA
from kppca.kernels import RBF

from _asserts import assert_within

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

EPS = np.finfo(np.float64).eps
C = 64  # the constant of the eigensolvers' backward error bound (LAPACK quotes p(N) eps, p a modest polynomial)
Q = 3


@pytest.fixture
def clusters() -> tuple[np.ndarray, np.ndarray]:
    """60 training and 7 new points in 5 dimensions: 4 well-separated clusters (a clear gap after 3 values)."""
    rng = np.random.default_rng(7)
    centers = rng.normal(scale=4.0, size=(4, 5))
    X = centers[np.arange(60) % 4] + rng.normal(scale=0.5, size=(60, 5))
    return X, centers[np.arange(7) % 4] + rng.normal(scale=0.5, size=(7, 5))


def _relative_perturbation(K: np.ndarray, q: int) -> tuple[float, float]:
    """(``||dK||``, ``||dK|| / gap``) for the centered Gram ``K`` (N, N): the bounds of value and vector errors."""
    N = len(K)
    H = np.eye(N) - 1.0 / N
    values = np.linalg.eigvalsh(H @ K @ H)[::-1]
    dK = C * N * EPS * values.clip(0).sum()
    return dK, dK / (values[q - 1] - values[q])


def test_dual_on_gpu_agrees_with_cpu(clusters):
    X, Xnew = clusters
    kernel = RBF(3.0)
    cpu = DualPPCA(Q, kernel=kernel, random_state=0).fit(X)
    gpu = DualPPCA(Q, kernel=kernel, random_state=0, device="cuda").fit(torch.as_tensor(X, device="cuda"))
    dK, dV = _relative_perturbation(np.asarray(kernel(X, X)), Q)
    assert_within(gpu.eigenvalues_, cpu.eigenvalues_, dK, "eigenvalues_")
    assert_within(gpu.sigma2_, cpu.sigma2_, dK, "sigma2_")
    # codes: E^T k_c scaled; each moves by at most |k_c| (<= sqrt(N) max|K| = sqrt(N)) times the vector error,
    # times the largest gain, which maps principal coordinates to codes
    codes = cpu.transform(Xnew)
    gain = float(np.max(np.abs(codes)))
    bound = np.sqrt(len(X)) * dV * (1.0 + gain)
    assert_within(gpu.transform(torch.as_tensor(Xnew, device="cuda")), codes, bound, "transform")
    # the log-likelihood: sigma2 and the eigenvalues enter through logs and ratios, relative error dK / sigma2
    ll = cpu.score_samples(Xnew)
    bound = np.abs(ll) * dK / cpu.sigma2_ + len(X) * (dV + dK / cpu.sigma2_)
    assert_within(gpu.score_samples(torch.as_tensor(Xnew, device="cuda")), ll, bound, "score_samples")


def test_dual_generation_on_gpu_is_reproducible_and_stays_there(clusters):
    X, _ = clusters
    y = np.arange(60) % 4
    model = DualPPCA(Q, kernel=RBF(3.0), device="cuda", random_state=0).fit(torch.as_tensor(X, device="cuda"), y)
    for kwargs in ({}, {"latent": "prior"}, {"y": 2}):
        first = model.sample(9, random_state=4, **kwargs)
        assert first.device.type == "cuda" and first.shape == (9, 5) and bool(torch.isfinite(first).all())
        torch.testing.assert_close(model.sample(9, random_state=4, **kwargs), first, rtol=0, atol=0)
    kernel_rows = model.sample_kernel(5, random_state=1)
    assert kernel_rows.device.type == "cuda" and bool(torch.isfinite(kernel_rows).all())
    path = model.latent_traversal((0, 1), n_steps=4)
    assert path.device.type == "cuda" and bool(torch.isfinite(path).all())


def test_gpu_model_file_loads_on_cpu_with_the_same_outputs_to_rounding(clusters, tmp_path):
    X, Xnew = clusters
    gpu = DualPPCA(Q, kernel=RBF(3.0), device="cuda").fit(torch.as_tensor(X, device="cuda"))
    kppca.save(gpu, tmp_path / "m.kppca")
    cpu = kppca.load(tmp_path / "m.kppca", map_location="cpu")
    np.testing.assert_array_equal(cpu.eigenvalues_.numpy(), gpu.eigenvalues_.cpu().numpy())  # stored bit for bit
    _, dV = _relative_perturbation(np.asarray(RBF(3.0)(X, X)), Q)
    # the same stored state, evaluated by two BLAS: a matrix-vector product's rounding, N eps per entry
    codes = gpu.transform(torch.as_tensor(Xnew, device="cuda")).cpu().numpy()
    assert_within(cpu.transform(Xnew), codes, C * len(X) * EPS * (1.0 + np.abs(codes)), "transform after load")


def test_primal_on_gpu_agrees_with_cpu(clusters):
    X, Xnew = clusters
    cpu = PrimalPPCA(Q).fit(X)
    gpu = PrimalPPCA(Q, device="cuda").fit(torch.as_tensor(X, device="cuda"))
    # the covariance (D, D) has the same nonzero spectrum as the centered linear Gram, over N
    dK, dV = _relative_perturbation(X @ X.T, Q)
    assert_within(gpu.eigenvalues_, cpu.eigenvalues_, dK / len(X), "eigenvalues_")
    codes = cpu.transform(Xnew)
    bound = np.abs(Xnew - X.mean(0)).sum(1, keepdims=True) * dV * (1.0 + np.max(np.abs(codes)))
    assert_within(gpu.transform(torch.as_tensor(Xnew, device="cuda")), codes, bound, "transform")
