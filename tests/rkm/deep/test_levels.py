"""Deep RKM level objects, the chain and the solver registry, each against an independent computation."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from kppca.kernels import RBF, Kernel, Linear
from kppca.rkm import DeepRKM, KPCALevel, LSSVMLevel
from kppca.rkm.deep import SOLVERS, register_solver
from kppca.rkm.deep.levels import psd_solve, run_chain
from kppca.rkm.deep.levelwise import fit_levelwise
from kppca.rkm.deep.reduced_set import standardize_targets

EPS = float(np.finfo(np.float64).eps)
dd = dict(dtype=torch.float64)


@pytest.fixture
def pieces():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(12, 12, generator=g, **dd)
    M = A @ A.T / 12
    Y = torch.randn(12, 2, generator=g, **dd)
    return M, Y


def test_lssvm_level_solves_the_bordered_system(pieces):
    """[[M + ridge I, 1], [1^T, 0]] [H; b^T] = [Y; 0], checked by a dense LU solve of the bordered matrix."""
    M, Y = pieces
    lev = LSSVMLevel(ridge=0.3, eta=2.0)
    H, b = lev.levelwise_solve(M, Y, torch.zeros(2, **dd))
    n = M.shape[0]
    B = torch.zeros(n + 1, n + 1, **dd)
    B[:n, :n] = M + 0.3 * torch.eye(n, **dd)
    B[:n, n] = B[n, :n] = 1.0
    ref = torch.linalg.solve(B, torch.cat([Y, torch.zeros(1, 2, **dd)]))
    # cond(B) <~ 1e3 here: agreement to ~1e3 * n * eps
    assert torch.allclose(H, ref[:n], rtol=0, atol=1e4 * EPS) and torch.allclose(b, ref[n], rtol=0, atol=1e4 * EPS)
    assert lev.levelwise_residual(M, H, b, Y) < 100 * n * EPS


def test_kpca_level_takes_the_top_eigenvectors(pieces):
    M, _ = pieces
    lev = KPCALevel(3)
    H, _ = lev.levelwise_solve(M, None, None)
    vals = np.linalg.eigvalsh(M.numpy())[::-1][:3]
    assert np.allclose(np.diag((H.T @ M @ H).numpy()), vals, rtol=0, atol=100 * EPS * vals[0])
    assert float((H.T @ H - torch.eye(3, **dd)).abs().max()) < 100 * EPS
    assert lev.levelwise_residual(M, H, None, None) < 100 * 12 * EPS


def test_level_objective_terms(pieces):
    M, Y = pieces
    H = torch.randn(12, 2, generator=torch.Generator().manual_seed(3), **dd)
    Hn, Mn, Yn = H.numpy(), M.numpy(), Y.numpy()
    ls = LSSVMLevel(ridge=0.3, eta=2.0)
    ref = np.trace(Yn.T @ Hn) - np.trace(Hn.T @ Mn @ Hn) / 4.0 - 0.15 * (Hn ** 2).sum()
    assert abs(ls.levelwise_objective(H, M, Y) - ref) < 1e3 * EPS * abs(ref)
    kp = KPCALevel(2, eta=0.5)
    ref = -np.trace(Hn.T @ Mn @ Hn)
    assert abs(kp.levelwise_objective(H, M, Y) - ref) < 1e3 * EPS * abs(ref)
    # reduced-set terms: LS-SVM data fit + regulariser; KPCA stabilised J_l + c/2 J_l^2
    e = M[:, :2]
    ref_ls = ((Yn - e.numpy()) ** 2).sum() / 0.6 + np.trace(Hn.T @ Mn @ Hn) / 4.0
    assert abs(float(ls.primal_term(M, H, e, None, Y, 1.0)) - ref_ls) < 1e3 * EPS * abs(ref_ls)
    lam = torch.tensor([2.0, 3.0], **dd)
    Jl = -0.5 * (e.numpy() ** 2 / lam.numpy()).sum() + np.trace(Hn.T @ Mn @ Hn) / 1.0
    ref_kp = Jl + 0.5 * 0.7 * Jl ** 2
    assert abs(float(kp.primal_term(M, H, e, lam, Y, 0.7)) - ref_kp) < 1e3 * EPS * abs(ref_kp)


def test_chain_steps_and_run_chain(pieces):
    """The chain of eq. 5.4 written out by hand in numpy: KPCA then LS-SVM."""
    _, Y = pieces
    g = torch.Generator().manual_seed(1)
    X = torch.randn(12, 3, generator=g, **dd)
    P = X[:5]
    H1, H2 = torch.randn(5, 2, generator=g, **dd), torch.randn(5, 2, generator=g, **dd)
    b, lam = torch.tensor([0.5, -1.0], **dd), torch.tensor([2.0, 4.0], **dd)
    levels = [KPCALevel(2, eta=2.0, kernel=RBF(1.3)).resolved(0, 12), LSSVMLevel(Linear(), ridge=0.1).resolved(1, 12)]
    yhat, es = run_chain(levels, X, P, [H1, H2], b, [lam, None])
    Xn, Pn = X.numpy(), P.numpy()
    K1 = np.exp(-((Xn[:, None] - Pn[None]) ** 2).sum(-1) / (2 * 1.3 ** 2))
    e1 = K1 @ H1.numpy() / 2.0
    z = e1 / lam.numpy()
    ref = z @ H1.numpy().T @ H2.numpy() / 1.0 + b.numpy()  # linear kernel on the previous level's prototypes H1
    assert np.allclose(es[0].numpy(), e1, rtol=0, atol=1e3 * EPS)
    assert np.allclose(yhat.numpy(), ref, rtol=0, atol=1e3 * EPS * np.abs(ref).max())
    # the LS-SVM's conjugate feature (Y - yhat) / ridge feeds a later level in training
    _, z_next = levels[1].chain_step(torch.tensor(z @ H1.numpy().T), H2, b, None, Y)
    assert np.allclose(z_next.numpy(), (Y.numpy() - ref) / 0.1, rtol=0, atol=1e4 * EPS * np.abs(ref).max())


def test_resolved_validates_and_copies_the_kernel():
    k = RBF(2.0)
    lev = KPCALevel(2, kernel=k).resolved(0, 10)
    assert isinstance(lev.kernel, Kernel) and lev.kernel is not k
    rbf = LSSVMLevel("rbf").resolved(0, 10)
    Z = torch.tensor([[0.0], [1.0], [5.0]], **dd)  # Var = 14/3 (ddof 0), D = 1
    fitted = rbf.fit_kernel(Z).kernel
    assert isinstance(fitted, RBF) and np.isclose(fitted.bandwidth, np.sqrt(14 / 3 / 2), rtol=1e-14)
    assert rbf.levelwise_ready(1) is not None and rbf.levelwise_ready(0) is None
    with pytest.raises(ValueError, match=r"levels\[1\].eta must be a float in the range \(0, inf\), got inf"):
        KPCALevel(2, eta=float("inf")).resolved(1, 10)
    with pytest.raises(ValueError, match=r"levels\[0\].ridge"):
        LSSVMLevel(ridge=float("nan")).resolved(0, 10)
    with pytest.raises(ValueError, match="n_components"):
        KPCALevel(11).resolved(0, 10)


def test_psd_solve_is_the_pseudo_inverse_on_a_singular_matrix():
    g = torch.Generator().manual_seed(0)
    V = torch.randn(6, 3, generator=g, **dd)
    A = V @ V.T  # rank 3
    B = torch.randn(6, 2, generator=g, **dd)
    ref = np.linalg.pinv(A.numpy(), rcond=1e-10) @ B.numpy()
    assert np.allclose(psd_solve(A, B).numpy(), ref, rtol=0, atol=1e-9 * np.abs(ref).max())


@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e300])
def test_standardize_targets_is_stable(scale):
    y = np.array([[1.0], [2.0], [4.0], [-3.0]])
    Ys, mean, sd = standardize_targets(torch.tensor(y * scale))
    ref = (y - y.mean()) / y.std()
    assert np.allclose(Ys.numpy(), ref, rtol=0, atol=10 * EPS)
    assert np.isclose(float(mean[0]), y.mean() * scale, rtol=10 * EPS, atol=0)
    assert np.isclose(float(sd[0]), y.std() * scale, rtol=10 * EPS, atol=0)


def test_a_registered_solver_plugs_in_without_editing_the_estimator():
    """A new solver module registers itself; DeepRKM(solver=name) finds it through the registry."""
    calls = []

    def fit_twice_passes(levels, X, Y, *, params, generator, factor):
        calls.append(params["n_passes"])
        return fit_levelwise(levels, X, Y, params={**params, "n_passes": factor * params["n_passes"]},
                             generator=generator)

    register_solver("test-double-passes", functools.partial(fit_twice_passes, factor=2))
    try:
        X, y = np.linspace(-2, 2, 20)[:, None], np.sin(np.linspace(-2, 2, 20))
        a = DeepRKM(solver="test-double-passes", n_passes=2, random_state=0).fit(X, y)
        b = DeepRKM(n_passes=4, random_state=0).fit(X, y)
        assert calls == [2] and a.objective_history_ == b.objective_history_
    finally:
        del SOLVERS["test-double-passes"]
    with pytest.raises(ValueError, match=r"solver must be one of \[[^\]]*'levelwise', 'primal'\], got 'test-double-passes'"):
        DeepRKM(solver="test-double-passes").fit(X, y)


def test_default_architecture_follows_the_solvers_output_position():
    """levels=None: LS-SVM first by default, last for a solver registered with output_last (the
    estimator asks the registry, it names no level type)."""
    from kppca.rkm.deep.levels import default_levels

    first = default_levels(RBF(1.0), (2, 1), 0.1, 1.0, (0.5, 0.25))
    last = default_levels(RBF(1.0), 2, 0.1, 1.0, (0.5, 0.25), output_last=True)
    assert [lev.is_output for lev in first] == [True, False, False]
    assert [lev.is_output for lev in last] == [False, False, True]
    assert [lev.width(3) for lev in first] == [3, 2, 1] and [lev.width(3) for lev in last] == [2, 2, 3]
    assert [lev.eta for lev in last] == [0.5, 0.25, 1.0] and last[2].ridge == 0.1 and last[0].kernel.bandwidth == 1.0
    assert not SOLVERS["levelwise"].output_last and not SOLVERS["primal"].output_last
    with pytest.raises(ValueError, match=r"n_components\[1\] must be an int in the range \[1, inf\)"):
        default_levels("rbf", (2, 0), 0.1, 1.0, (1.0, 1.0))


def test_estimator_builds_the_default_architecture_the_solver_asks_for():
    from kppca.rkm.deep.levelwise import check_levelwise

    register_solver("test-output-last", fit_levelwise, check=check_levelwise, output_last=True)
    try:
        X, y = np.linspace(-2, 2, 20)[:, None], np.sin(np.linspace(-2, 2, 20))
        m = DeepRKM(solver="test-output-last", n_components=(2, 1), n_passes=1, random_state=0).fit(X, y)
        assert [type(lev) for lev in m.levels_] == [KPCALevel, KPCALevel, LSSVMLevel]
    finally:
        SOLVERS.pop("test-output-last")
