"""Levels of a deep RKM as objects: each owns its kernel, objective terms, stationarity solve and chain step.

Notation (paper §4-5, rows are points): level ``l`` has hidden features ``H_l``, weight ``eta_l`` and kernel ``K_l``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from ..._linalg import eigh_descending, rounding_tolerance
from ..._param_validation import Integral, Interval, Real, check_scalar, check_sequence
from ...io import register
from ...io.record import constrained, field_constraints
from ...kernels import CenteredGram
from ...kernels.base import Kernel
from ...kernels.standard import Linear, as_kernel
from ...optim import random_stiefel
from ..shallow import resolve_kernel
from ..lssvm import solve_lssvm_dual

__all__ = ["KPCALevel", "LSSVMLevel", "Level", "OBJECTIVES", "check_objective", "combine_terms", "default_levels",
           "psd_solve", "run_chain", "stabilize"]

_POS_REAL = Interval(Real, 0, None, closed="neither")
_COUNT = Interval(Integral, 1, None, closed="left")
_KERNEL = (Kernel, str, callable)  # a level's kernel before it is resolved

#: ``DeepRKM(objective=...)`` values: Table 1's B, A and C.
OBJECTIVES = ("stabilized", "variance", "regression")


def stabilize(Jl: torch.Tensor, c_stab: float) -> torch.Tensor:
    """A KPCA level's stabilised term ``J_l + c_stab/2 J_l^2`` (paper eq. 5.3)."""
    return Jl + 0.5 * c_stab * Jl ** 2


def check_objective(params: dict) -> None:
    """ValueError for an ``objective`` the solver does not minimise, or ``"variance"`` without stabilisation."""
    objective, solver = params.get("objective", "stabilized"), params.get("solver")
    if objective != "stabilized" and solver not in ("primal", "feedforward"):
        raise ValueError(f"objective={objective!r} is a variant of the primal objective (paper Table 1): use "
                         f"solver='primal' or solver='feedforward', or objective='stabilized' with "
                         f"solver={solver!r}.")
    if objective == "variance" and float(params["c_stab"]) <= 0:
        raise ValueError("objective='variance' needs c_stab > 0: the reward -c0 ||e||^2 is unbounded below "
                         "without the stabilisation terms c_stab/2 J_l^2.")


def combine_terms(is_output: Sequence[bool], terms: Sequence[torch.Tensor], scores: Sequence[torch.Tensor | None],
                  *, objective: str = "stabilized", c0: float = 1.0) -> torch.Tensor:
    """The minimised objective of a primal solver from the levels' terms, a variant of Table 1 (paper §6.1).

    Per level: whether it is the output level, its scalar term (a KPCA level's stabilised by :func:`stabilize`)
    and a KPCA level's scores ``e_l`` (N, s_l) on the training points. ``"stabilized"`` (models 1,B / 2,B) sums
    all terms, ``"variance"`` (1,A / 2,A) also subtracts ``c0 sum_l ||e_l||^2`` (our reading of the paper's reward
    on the scores' variance; unbounded below, as the free ``Lam_l`` absorbs the growth of ``e_l``, so a fit is
    where ``max_iter`` steps lead), and ``"regression"`` (1,C / 2,C) keeps the output level's term alone.
    """
    total = terms[0].new_zeros(())
    for out, t, e in zip(is_output, terms, scores):
        if out:
            total = total + t
        elif objective != "regression":
            total = total + t
            if objective == "variance":
                total = total - c0 * (e ** 2).sum()
    return total


def psd_solve(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Minimum-norm solution of ``A X = B`` for a symmetric PSD ``A`` (eigenvalues below rounding dropped).

    Below the eigensolver's backward error ``n eps lam_max`` directions carry no information; dropping them,
    not adding a jitter, gives the least-squares solution even for a singular ``A`` (nearly constant data).
    """
    vals, vecs = torch.linalg.eigh(A)
    tol = rounding_tolerance(A.dtype, A.shape[0], float(vals.abs().max()))
    inv = torch.where(vals > tol, 1.0 / vals.clamp_min(tol if tol > 0 else 1.0), torch.zeros_like(vals))
    return vecs @ (inv[:, None] * (vecs.T @ B))


class Level:
    """Interface of a deep RKM level (subclasses are frozen dataclasses): ``kernel``, ``eta`` and ``is_output``
    (True for the level whose features give the prediction, the LS-SVM); the solvers call only these methods."""

    is_output = False
    kernel: Any
    eta: float

    def resolved(self, index: int, n_samples: int) -> Level:
        """A copy validated against its fields' declared constraints, with a deep copy of its kernel as a
        :class:`~kppca.kernels.Kernel`."""
        for name, constraints in (field_constraints(type(self)) or {}).items():
            check_scalar(getattr(self, name), f"levels[{index}].{name}", constraints)
        return replace(self, kernel=copy.deepcopy(as_kernel(self.kernel)))

    def fit_kernel(self, Z: torch.Tensor) -> Level:
        """A copy whose kernel has its data-derived widths resolved on the level's inputs ``Z``."""
        return replace(self, kernel=resolve_kernel(self.kernel, Z))

    def width(self, n_outputs: int) -> int:
        """Number of columns of ``H``."""
        raise NotImplementedError

    def levelwise_ready(self, index: int) -> str | None:
        """Why this level cannot be solved level-wise at position ``index`` (None when it can)."""
        if index > 0 and type(self.kernel) is not Linear:
            return "not linear"
        return None

    def gram(self, A: torch.Tensor, B: torch.Tensor | None = None) -> torch.Tensor:
        """The level's kernel matrix ``k(A, B)``; ``B=None``: its own uncentred training Gram matrix (the LS-SVM
        has a bias), built by :class:`~kppca.kernels.CenteredGram` for the core's blocked build and scale check."""
        if B is None:
            return CenteredGram(self.kernel, A, center=False, what=f"Gram matrix of the level kernel {self.kernel!r}",
                                advice="Rescale the data or choose kernel parameters suited to its scale.").matrix
        K = self.kernel.gram(A, B)
        if not bool(torch.isfinite(K).all()):
            raise ValueError(f"the Gram matrix of the level kernel {self.kernel!r} has NaN or infinite entries; "
                             "rescale the data or choose a kernel parameter suited to its scale.")
        return K

    def levelwise_start(self, N: int, p: int, generator: torch.Generator, dtype: torch.dtype,
                        device: torch.device) -> torch.Tensor:
        raise NotImplementedError

    def levelwise_solve(self, M: torch.Tensor, Y: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Solve the level's stationarity equations for the fused matrix ``M``; returns ``(H, b)``."""
        raise NotImplementedError

    def kpca_term(self, H: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
        """``-1/(2 eta) Tr(H^T K H)`` as a differentiable scalar: the kernel PCA term of the level's objective."""
        return -0.5 / float(self.eta) * (H * (K @ H)).sum()

    def levelwise_objective(self, H: torch.Tensor, K: torch.Tensor, Y: torch.Tensor) -> float:
        """The level's term of the reduced deep objective ``L``."""
        return -0.5 * float((H * (K @ H)).sum()) / float(self.eta)

    def levelwise_residual(self, M: torch.Tensor, H: torch.Tensor, b: torch.Tensor, Y: torch.Tensor) -> float:
        """Relative residual of the level's stationarity equations (Frobenius norms)."""
        raise NotImplementedError

    def chain_step(self, K_zP: torch.Tensor, H: torch.Tensor, b: torch.Tensor, scale: torch.Tensor | None,
                   Y: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(e, z_next)``: the level's scores (KPCA) or prediction (output level) from ``k(z, P) H / eta``,
        and the next level's input (None when the chain ends here)."""
        raise NotImplementedError

    def calibrate_scale(self, e: torch.Tensor, H: torch.Tensor) -> torch.Tensor | None:
        """Level-wise ``diag(Lam)`` from the chain's scores on the training points (None for the output level)."""
        return None

    def primal_start(self, G: torch.Tensor, K_zP: torch.Tensor, Y: torch.Tensor) -> tuple:
        """Initial ``(H~, b or None, log Lam or None, z_next)`` from the prototypes' Gram ``G`` and ``k(z, P)``."""
        raise NotImplementedError

    def primal_term(self, G: torch.Tensor, H: torch.Tensor, e: torch.Tensor, lam: torch.Tensor | None,
                    Y: torch.Tensor, c_stab: float) -> torch.Tensor:
        """The level's term of the stabilised reduced-set objective."""
        raise NotImplementedError


@register(name="kppca.rkm.LSSVMLevel")
@dataclass(frozen=True)
class LSSVMLevel(Level):
    """The LS-SVM regression level of a :class:`~kppca.rkm.DeepRKM`.

    Its level-wise equations are ``[[M + ridge I, 1], [1^T, 0]] [H; b^T] = [Y; 0]``, its objective term
    ``Tr(Y^T H) - 1/(2 eta) Tr(H^T K H) - ridge/2 ||H||^2``.

    Parameters
    ----------
    kernel : Kernel, str or callable, default "rbf"
        On the inputs when it is the first level, else on the previous level's hidden features.
    ridge : float > 0, default 0.01
        Ridge ``lambda`` of its dual system (Suykens' ``1/gamma``).
    eta : float > 0, default 1.0
        Weight of ``Tr(W^T W)``.
    """

    kernel: Any = constrained(*_KERNEL, default="rbf")
    ridge: float = constrained(_POS_REAL, default=0.01)
    eta: float = constrained(_POS_REAL, default=1.0)

    is_output = True

    def width(self, n_outputs: int) -> int:
        return n_outputs

    def levelwise_start(self, N, p, generator, dtype, device):
        return torch.zeros(N, p, dtype=dtype, device=device)

    def levelwise_solve(self, M, Y, b):
        eta = float(self.eta)
        sol = solve_lssvm_dual(M * eta, Y, float(self.ridge), eta)
        return sol.coef, sol.intercept

    def levelwise_objective(self, H, K, Y):
        return (super().levelwise_objective(H, K, Y) + float((Y * H).sum())
                - 0.5 * float(self.ridge) * float((H * H).sum()))

    def levelwise_residual(self, M, H, b, Y):
        A = M + float(self.ridge) * torch.eye(M.shape[0], dtype=M.dtype, device=M.device)
        r1 = A @ H + b[None, :] - Y
        num = math.hypot(float(torch.linalg.norm(r1)), float(torch.linalg.norm(H.sum(0))))
        den = (float(torch.linalg.norm(A)) * float(torch.linalg.norm(H))
               + math.sqrt(M.shape[0]) * float(torch.linalg.norm(b)) + float(torch.linalg.norm(Y)))
        return num / den if den > 0 else num

    def chain_step(self, K_zP, H, b, scale, Y):
        yhat = K_zP @ H / float(self.eta) + b[None, :]
        # Later levels see the residual's conjugate feature h = e / ridge; at prediction the chain ends here (eq. 4.16).
        return yhat, None if Y is None else (Y - yhat) / float(self.ridge)

    def primal_start(self, G, K_zP, Y):
        # Reduced-set LS-SVM on the chain's inputs: ridge regression in (H~, b) with the regulariser G / eta.
        ridge, eta = float(self.ridge), float(self.eta)
        M = G.shape[0]
        Phi = torch.cat([K_zP / eta, torch.ones(K_zP.shape[0], 1, dtype=G.dtype, device=G.device)], dim=1)
        R = torch.zeros(M + 1, M + 1, dtype=G.dtype, device=G.device)
        R[:M, :M] = G / eta
        theta = psd_solve(Phi.T @ Phi / ridge + R, Phi.T @ Y / ridge)
        return theta[:M], theta[M], None, (Y - Phi @ theta) / ridge

    def primal_term(self, G, H, e, lam, Y, c_stab):
        return ((Y - e) ** 2).sum() / (2 * float(self.ridge)) + (H * (G @ H)).sum() / (2 * float(self.eta))


@register(name="kppca.rkm.KPCALevel")
@dataclass(frozen=True)
class KPCALevel(Level):
    """A kernel PCA level of a :class:`~kppca.rkm.DeepRKM`.

    Its level-wise equations are ``M H = H Lam``, ``H^T H = I`` (top ``s`` eigenvectors of the fused matrix),
    its objective term ``-1/(2 eta) Tr(H^T K H)``.

    Parameters
    ----------
    n_components : int >= 1
        Number of hidden features ``s`` of the level.
    eta : float > 0, default 1.0
        Weight of the level (``1/eta`` weighs its kernel in the fused matrices).
    kernel : Kernel, str or callable, default "linear"
        On the previous level's hidden features (on the inputs for a first level); linear after the first
        level for ``solver="levelwise"``.
    """

    n_components: int = constrained(_COUNT)
    eta: float = constrained(_POS_REAL, default=1.0)
    kernel: Any = constrained(*_KERNEL, default="linear")

    def resolved(self, index: int, n_samples: int) -> KPCALevel:
        # The bound the declaration cannot know: a level has at most N components.
        check_scalar(self.n_components, f"levels[{index}].n_components (at most N = {n_samples})",
                     [Interval(Integral, 1, n_samples)])
        return super().resolved(index, n_samples)

    def width(self, n_outputs: int) -> int:
        return int(self.n_components)

    def levelwise_start(self, N, p, generator, dtype, device):
        return random_stiefel(N, int(self.n_components), generator=generator, dtype=dtype, device=device)

    def levelwise_solve(self, M, Y, b):
        return eigh_descending(M)[1][:, : self.n_components], b

    def levelwise_residual(self, M, H, b, Y):
        MH = M @ H
        num = float(torch.linalg.norm(MH - H @ (H.T @ MH)))
        den = float(torch.linalg.norm(M)) * float(torch.linalg.norm(H))
        return num / den if den > 0 else num

    def chain_step(self, K_zP, H, b, scale, Y):
        e = K_zP @ H / float(self.eta)
        return e, None if scale is None else e / scale[None, :]

    def calibrate_scale(self, e, H):
        return (e * e).sum(0) / (e * H).sum(0)  # 1/Lam = argmin_c ||c e - h|| per column

    def primal_start(self, G, K_zP, Y):
        # Uncoupled kernel PCA of the prototypes: top eigenvectors of G / eta, Lam their eigenvalues.
        M, s_req = G.shape[0], int(self.n_components)
        s = min(s_req, M)
        vals, vecs = eigh_descending(G / float(self.eta))
        V = torch.zeros(M, s_req, dtype=G.dtype, device=G.device)
        V[:, :s] = vecs[:, :s]
        lam = torch.ones(s_req, dtype=G.dtype, device=G.device) * max(float(vals[0]), 1.0)
        lam[:s] = vals[:s].clamp_min(max(float(vals[0]) * 1e-8, torch.finfo(G.dtype).tiny))
        return V, None, torch.log(lam), K_zP @ V / float(self.eta) / lam[None, :]

    def primal_term(self, G, H, e, lam, Y, c_stab):
        Jl = -0.5 * (e ** 2 / lam[None, :]).sum() + (H * (G @ H)).sum() / (2 * float(self.eta))
        return stabilize(Jl, c_stab)


def default_levels(kernel: Any, n_components: Any, ridge: float, eta: float, eta_levels: Any, *,
                   output_last: bool = False) -> list[Level]:
    """The default architecture from the scalar parameters: the paper's LS-SVM level (with ``kernel``) then two
    KPCA levels, or with ``output_last`` (e.g. §5.3's networks) two KPCA levels then a linear LS-SVM level."""
    s = check_sequence(n_components, "n_components", [_COUNT], length=2, repeat=2, what="(s2, s3)")
    etas = check_sequence(eta_levels, "eta_levels", [_POS_REAL], length=2, what="(eta2, eta3)")
    if output_last:
        return [KPCALevel(int(s[0]), float(etas[0]), kernel), KPCALevel(int(s[1]), float(etas[1])),
                LSSVMLevel("linear", float(ridge), float(eta))]
    return [LSSVMLevel(kernel, float(ridge), float(eta)),
            KPCALevel(int(s[0]), float(etas[0])), KPCALevel(int(s[1]), float(etas[1]))]


def run_chain(levels: Sequence[Level], X: torch.Tensor | None, prototypes: torch.Tensor, H: Sequence[torch.Tensor],
              b: torch.Tensor, scales: Sequence[torch.Tensor | None], Y: torch.Tensor | None = None,
              gram0: torch.Tensor | None = None) -> tuple[torch.Tensor | None, list]:
    """The forward chain (paper eqs. 4.9 and 5.4) on the rows of ``X`` through the first ``len(H)`` levels.

    Level ``l`` computes ``e_l = k_l(z_{l-1}, P_l) H_l / eta_l`` (``z_0 = X``, ``P_1 = prototypes``,
    ``P_l = H_{l-1}``) and passes on ``z_l`` (:meth:`Level.chain_step`); without ``Y`` the chain stops at the
    output level.

    Parameters
    ----------
    levels : sequence of Level
    X : Tensor of shape (n, D) or None
        None when ``gram0`` is given.
    prototypes : Tensor of shape (M, D)
    H : sequence of Tensor
        Hidden features ``(M, s_l)`` of the prototypes per level.
    b : Tensor of shape (p,)
    scales : sequence of Tensor or None
        ``diag(Lam_l)`` of the KPCA levels.
    Y : Tensor of shape (n, p), optional
        Training targets (the training chain).
    gram0 : Tensor of shape (n, M), optional
        The first level's kernel between the rows and the prototypes.

    Returns
    -------
    yhat : Tensor of shape (n, p) or None
        The output level's prediction (None when it was not reached).
    es : list
        ``e_l`` per level reached (the output level's entry is its prediction).
    """
    z, yhat, es = X, None, []
    L = len(H)
    for l, level in enumerate(levels[:L]):
        P = prototypes if l == 0 else H[l - 1]
        K = gram0 if l == 0 and gram0 is not None else level.kernel.gram(z, P)
        e, z = level.chain_step(K, H[l], b, scales[l], Y)
        es.append(e)
        if level.is_output:
            yhat = e
        if l + 1 < L and z is None:  # prediction stops at the output level (eq. 4.16)
            break
    return yhat, es
