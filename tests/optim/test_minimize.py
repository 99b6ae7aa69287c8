"""kppca.optim: one entry point, every method checked against an independent computation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from kppca.optim import (
    METHODS,
    OptimizeResult,
    check_orthonormal,
    minimize,
    project_stiefel,
    projected_gradient,
    random_stiefel,
)

EPS = float(np.finfo(np.float64).eps)


def _psd(n: int, values: list[float], seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    lam = torch.tensor(values + [0.1] * (n - len(values)), dtype=torch.float64)
    return Q @ torch.diag(lam) @ Q.T


@pytest.mark.parametrize("method", ["pgd", "line_search", "cg", "adam", "sgd"])
def test_stiefel_methods_find_the_top_eigenspace(method):
    """-1/2 Tr(H^T A H) on St(12, 2) is minimised by the top-2 eigenvectors (torch.linalg.eigh, independent).

    At a point with Riemannian gradient norm g the subspace error is at most g / gap (Davis-Kahan),
    gap = 8 - 1 = 7 here; the tolerance 1e-7 * max(1, |f|) ~ 1e-6 bounds g, so the projectors agree to ~1e-6.
    (Adam's default step 0.01 needs more than 3,000 steps at this scale: lr=0.05.)"""
    if method != "pgd":
        pytest.importorskip("geoopt")
    A = _psd(12, [10.0, 8.0, 1.0])
    H0 = random_stiefel(12, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    res = minimize(lambda H: -0.5 * torch.trace(H.T @ A @ H), H0, method=method, manifold="stiefel",
                   max_iter=3000, tol=1e-7, lr=0.05 if method == "adam" else None, warn=False)
    assert isinstance(res, OptimizeResult) and res.method == method and res.H is res.x
    assert float((res.x.T @ res.x - torch.eye(2, dtype=torch.float64)).abs().max()) < 100 * 12 * EPS
    V = torch.linalg.eigh(A).eigenvectors[:, -2:]
    assert float(torch.linalg.norm(res.x @ res.x.T - V @ V.T)) < 1e-4
    assert abs(res.fun - (-0.5 * 18.0)) < 1e-6 * 9.0
    assert res.converged


def test_lbfgs_solves_a_quadratic_and_records_decreases():
    """min 1/2 x^T A x - b^T x has the minimiser A^{-1} b (torch.linalg.solve, independent)."""
    A = _psd(6, [5.0, 3.0, 2.0, 1.0])
    b = torch.arange(1.0, 7.0, dtype=torch.float64)
    x0 = torch.zeros(6, dtype=torch.float64)
    res = minimize(lambda x: 0.5 * x @ A @ x - b @ x, x0, method="lbfgs", manifold=None, max_iter=100, tol=1e-15,
                   warn=False)
    x_ref = torch.linalg.solve(A, b)
    # cond(A) = 50: the minimiser is determined to ~cond * eps relative (plus the stopping rule's slack)
    assert float(torch.linalg.norm(res.x - x_ref)) < 1e-6 * float(torch.linalg.norm(x_ref))
    assert np.all(np.diff(res.history) <= 0)
    assert len(res.history) == res.n_iter + 1 and len(res.grad_history) == res.n_iter
    assert torch.equal(x0, torch.zeros(6, dtype=torch.float64))  # the start is not modified


def test_lbfgs_takes_a_list_of_tensors():
    a, b = torch.ones(2, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    res = minimize(lambda u, v: ((u - 2) ** 2).sum() + ((v + 1) ** 2).sum(), [a, b], method="lbfgs", manifold=None,
                   max_iter=50, tol=1e-14, warn=False)
    assert torch.allclose(res.x[0], torch.full((2,), 2.0, dtype=torch.float64), atol=1e-7)
    assert torch.allclose(res.x[1], torch.full((3,), -1.0, dtype=torch.float64), atol=1e-7)


def test_adam_resumes_bitwise_from_its_state():
    """Two runs of 5 steps with the state carried over equal one run of 10 steps, bit for bit."""
    f = lambda w: ((w - torch.arange(4.0, dtype=torch.float64)) ** 4).sum()  # noqa: E731
    w0 = torch.zeros(4, dtype=torch.float64)
    once = minimize(f, w0, method="adam", manifold=None, max_iter=10, lr=0.1)
    first = minimize(f, w0, method="adam", manifold=None, max_iter=5, lr=0.1)
    second = minimize(f, first.x, method="adam", manifold=None, max_iter=5, lr=0.1, state=first.state)
    assert torch.equal(once.x, second.x)
    assert once.history[:5] == first.history[:5]


def test_random_stiefel_is_orthonormal_deterministic_and_sign_fixed():
    gen = lambda s: torch.Generator().manual_seed(s)  # noqa: E731
    H = random_stiefel(20, 4, generator=gen(0), dtype=torch.float64)
    check_orthonormal(H)
    assert torch.equal(H, random_stiefel(20, 4, generator=gen(0), dtype=torch.float64))
    assert not torch.equal(H, random_stiefel(20, 4, generator=gen(1), dtype=torch.float64))
    # The R factor of its own QR has a positive diagonal (the Haar-measure sign convention).
    assert bool((torch.linalg.qr(H).R.diagonal().abs() > 0.5).all())
    with pytest.raises(ValueError, match="s <= n"):
        random_stiefel(3, 4, generator=gen(0), dtype=torch.float64)


def test_convergence_warning_when_stopped_early():
    A = _psd(10, [3.0, 2.0])
    H0 = random_stiefel(10, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    with pytest.warns(ConvergenceWarning, match="max_iter=2 reached"):
        minimize(lambda H: -torch.trace(H.T @ A @ H), H0, method="pgd", max_iter=2, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        minimize(lambda H: -torch.trace(H.T @ A @ H), H0, method="pgd", max_iter=2, tol=0.0, warn=False)


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "newton"}, "method"),
    ({"method": "lbfgs", "manifold": "stiefel"}, "method"),
    ({"method": "pgd", "manifold": None}, "method"),
    ({"manifold": "sphere"}, "manifold"),
    ({"max_iter": -1, "method": "pgd"}, "max_iter"),
    ({"tol": -1.0, "method": "pgd"}, "tol"),
])
def test_bad_options(kwargs, match):
    H0 = torch.eye(4, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match=match):
        minimize(lambda H: H.sum(), H0, **kwargs)


def test_methods_table():
    assert set(METHODS["stiefel"]) == {"adam", "sgd", "line_search", "cg", "pgd"}
    assert set(METHODS[None]) == {"lbfgs", "adam"}


# ---------------------------------------------------------------- projected gradient (moved from the classifier tests)
def test_projected_gradient_stays_on_manifold_and_decreases():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(30, 30, generator=g, dtype=torch.float64)
    A = A @ A.T
    B = torch.randn(30, 2, generator=g, dtype=torch.float64)

    def f(H):  # KPCA-like term plus a coupling that is not a pure eigenproblem
        return -0.5 * (H * (A @ H)).sum() + ((H[:, :2] - B) ** 2).sum()

    H0 = torch.randn(30, 4, generator=g, dtype=torch.float64)
    res = projected_gradient(f, H0, max_iter=60, tol=0.0)
    I = torch.eye(4, dtype=torch.float64)
    assert float((res.H.T @ res.H - I).abs().max()) < 1e-10
    hist = np.array(res.history)
    # Armijo acceptance: every accepted step lowers f (rounding of f allowed).
    assert np.all(np.diff(hist) <= 1e-12 * np.abs(hist[:-1]))
    assert hist[-1] < hist[0]


def test_project_stiefel_is_polar_factor():
    M = torch.randn(10, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    Q = project_stiefel(M)
    # Polar factor: Q^T M is symmetric positive definite.
    S = Q.T @ M
    assert torch.allclose(S, S.T, atol=1e-12) and bool((torch.linalg.eigvalsh(S) > 0).all())
    with pytest.raises(ValueError, match="rows"):
        project_stiefel(M.T)


def test_pgd_steps_unconstrained_params_too():
    """min over H and w of -Tr(H^T A H)/2 + ||w - c||^2: w -> c exactly (independent of H)."""
    A = _psd(8, [4.0, 2.0])
    c = torch.tensor([1.0, -2.0], dtype=torch.float64)
    H0 = random_stiefel(8, 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    res = minimize(lambda H, w: -0.5 * (H * (A @ H)).sum() + ((w - c) ** 2).sum(), H0, method="pgd",
                   params=[torch.zeros(2, dtype=torch.float64)], max_iter=500, tol=1e-10, warn=False)
    assert torch.allclose(res.params[0], c, atol=1e-8)
