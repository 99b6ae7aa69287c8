import numpy as np
import pytest
import torch

from kppca._linalg import smallest_eigenvalue_bound


@pytest.mark.parametrize("n", [1, 7, 60, 200])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_smallest_eigenvalue_bound_brackets_lambda_min(n, dtype):
    g = torch.Generator().manual_seed(n)
    B = torch.randn(n, n, generator=g, dtype=torch.float64)
    A = B @ B.T / n + 1e-2 * torch.eye(n, dtype=torch.float64)
    lam_min = float(torch.linalg.eigvalsh(A)[0])
    L = torch.linalg.cholesky(A.to(dtype)).contiguous()
    bound = smallest_eigenvalue_bound(L)
    eps = float(torch.finfo(dtype).eps)
    rounding = 1 + 10 * n * eps * float(torch.linalg.eigvalsh(A)[-1]) / lam_min  # the factor of A + O(n eps |A|)
    # Guaranteed: ||A^-1||_1 <= sqrt(n) ||A^-1||_2 for a symmetric matrix, and the estimate is <= ||A^-1||_1.
    assert bound >= lam_min / np.sqrt(n) / rounding
    # The estimator is exact or low on these matrices, so the bound is one from below.
    assert bound <= lam_min * rounding


def test_singular_factor_gives_zero():
    L = torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    assert smallest_eigenvalue_bound(L) == 0.0
