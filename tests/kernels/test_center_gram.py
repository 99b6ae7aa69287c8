"""``center_gram``: the centered Gram matrix inside an autograd graph (the deep RKM classifier's levels)."""

from __future__ import annotations

import torch

from kppca.kernels import RBF, KernelCenterer
from kppca.kernels.gram import center_gram


def _symmetric(n: int, seed: int) -> torch.Tensor:
    A = torch.randn(n, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return A + A.T


def test_values_are_the_centerers_bitwise():
    K = _symmetric(37, 0)
    assert torch.equal(center_gram(K), KernelCenterer().fit_center_(K.clone()))


def test_input_is_not_modified():
    K = _symmetric(9, 1)
    before = K.clone()
    center_gram(K.requires_grad_(True)).sum().backward()
    assert torch.equal(K.detach(), before)


def test_gradient_matches_finite_differences():
    # Perturbations of A move K = A + A^T symmetrically, the only directions the forward is defined on.
    A = torch.randn(7, 7, generator=torch.Generator().manual_seed(2), dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda A: center_gram(A + A.T), (A,))


def test_level_gradient_equals_the_explicit_product():
    """Tr(H^T M K(P) M H) differentiated in P both ways; each entry sums at most N^2 products of size at
    most max |grad| (the reference's), so float64 rounding stays within N^2 eps of that."""
    N, s = 30, 3
    g = torch.Generator().manual_seed(3)
    P = torch.randn(N, s, generator=g, dtype=torch.float64)
    H = torch.linalg.qr(torch.randn(N, s, generator=g, dtype=torch.float64)).Q
    kernel = RBF(1.5)
    M = torch.eye(N, dtype=torch.float64) - 1.0 / N

    def grad(center) -> torch.Tensor:
        Q = P.clone().requires_grad_(True)
        value = torch.trace(H.T @ center(kernel.gram(Q, Q)) @ H)
        return torch.autograd.grad(value, Q)[0]

    ours, reference = grad(center_gram), grad(lambda K: M @ K @ M)
    scale = float(reference.abs().max())
    assert scale > 0
    torch.testing.assert_close(ours, reference, rtol=0, atol=N**2 * torch.finfo(torch.float64).eps * scale)
