"""Deep RKM of the 2017 paper (§4-5): one LS-SVM level and kernel PCA levels, coupled.

Architecture
------------
``levels`` is an ordered list of :class:`LSSVMLevel` and :class:`KPCALevel` with
exactly one LS-SVM level, either

* **first** (paper §4.2, eq. 4.18): LS-SVM on ``(x_i, y_i)``, then KPCA levels each
  on the hidden features of the previous level; or
* **last** (paper §4.1, eq. 4.11): KPCA levels (the first on the inputs, the next
  ones on the previous level's hidden features), then the LS-SVM regression on the
  last KPCA level's hidden features.

Any number ``>= 1`` of KPCA levels is accepted. ``levels=None`` is the paper's
synthetic-example architecture, LS-SVM (``kernel``, ``lambda_``, ``eta``) + two
linear KPCA levels (``n_components = (s2, s3)``, ``eta_levels = (eta2, eta3)``).

Notation: level ``l`` has hidden features ``H_l`` (rows are points; ``s_l``
columns for a KPCA level, ``p`` outputs for the LS-SVM level), weight ``eta_l``,
and its *own* kernel matrix ``K_l``: the input kernel on ``X`` for level 1, a
kernel on the rows of ``H_{l-1}`` for the later levels (``H_{l-1} H_{l-1}^T`` when
linear). With the interconnection matrices eliminated,
``W_l = (1/eta_l) sum_i phi_l(.) h_l,i^T``, the level objectives are

* LS-SVM: ``J = Tr(Y^T H) - 1/(2 eta) Tr(H^T K H) - lambda/2 ||H||^2`` with ``1^T H = 0``;
* KPCA:   ``J = -1/(2 eta) Tr(H^T K H)`` with ``H^T H = I`` (the ``lambda`` terms
  are constant on that set and dropped),

and the reduced deep objective is their sum ``L``.

Level-wise solving (``solver="levelwise"``, paper §5.1)
-------------------------------------------------------
For linear kernels in all levels after the first, the stationarity conditions
of ``L`` are (eqs. 4.11, 4.18, written for any number of levels) with the fused
matrices ``M_l = K_l/eta_l + H_{l+1} H_{l+1}^T / eta_{l+1}`` (the second term
absent for the last level):

* LS-SVM level: ``[[M_l + lambda I, 1], [1^T, 0]] [H_l; b^T] = [Y; 0]``;
* KPCA level:   ``M_l H_l = H_l Lam_l``, ``H_l^T H_l = I`` (top ``s_l`` eigenvectors).

They are solved by forward (level 1 -> L) and backward (level L-1 -> 1) phases,
each level solved with the others fixed. This is a *saddle-point* iteration: the
LS-SVM solve maximises ``L`` in its ``H`` while the eigen steps minimise it in the
KPCA features, and the paper itself notes (§4, before eq. 4.4) that the deep
objective "is not directly usable for minimization due to the minus sign terms".
The reduced objective recorded after every phase therefore need *not* be
monotone, and with a strong coupling (the paper's ``1/eta2 = 1/eta3 = 1e5``) the
passes may cycle instead of settling. ``residual_history_`` records after every
pass the relative residual of every level's equations, so one can see whether a
fixed point was reached.

Reduced set in the primal (``solver="primal"``, paper §5.2)
-----------------------------------------------------------
See :class:`DeepRKM` for the exact objective; it is minimised with L-BFGS and a
strong-Wolfe line search, every accepted iterate lowering the objective.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import NotFittedError

from .._linalg import eigh_descending
from .._param_validation import Interval, Options, fit_context
from .._validation import (
    ArrayLike,
    as_tensor,
    check_feature_names,
    is_numpy_like,
    resolve_device,
    resolve_dtype,
    to_output,
    torch_generator,
)
from ..kernels import Kernel
from ..kernels.registry import as_kernel
from ..kernels.standard import RBF, Laplacian, Linear
from .lssvm import solve_lssvm_dual
from .projected_gradient import project_stiefel

__all__ = ["DeepRKM", "LSSVMLevel", "KPCALevel"]


@dataclass(frozen=True)
class LSSVMLevel:
    """The LS-SVM regression level of a :class:`DeepRKM`.

    Parameters
    ----------
    kernel : Kernel, str or callable, default "rbf"
        Its kernel: on the inputs when it is the first level, on the previous
        level's hidden features when it is the last one.
    lambda_ : float > 0, default 0.01
        Ridge of its dual system (Suykens' ``1/gamma``).
    eta : float > 0, default 1.0
        Weight of ``Tr(W^T W)``.
    """

    kernel: Any = "rbf"
    lambda_: float = 0.01
    eta: float = 1.0


@dataclass(frozen=True)
class KPCALevel:
    """A kernel PCA level of a :class:`DeepRKM`.

    Parameters
    ----------
    n_components : int >= 1
        Number of hidden features ``s`` of the level.
    eta : float > 0, default 1.0
        Weight of the level (``1/eta`` weighs its kernel in the fused matrices).
    kernel : Kernel, str or callable, default "linear"
        Kernel on the previous level's hidden features (on the inputs for a first
        level). ``solver="levelwise"`` needs it linear except in the first level.
    """

    n_components: int
    eta: float = 1.0
    kernel: Any = "linear"


class DeepRKM(RegressorMixin, BaseEstimator):
    """Deep RKM regression (2017 paper): an LS-SVM level and kernel PCA levels, coupled.

    Parameters
    ----------
    levels : list of LSSVMLevel / KPCALevel, optional
        The architecture, in order (module docstring): exactly one
        :class:`LSSVMLevel`, first or last, and at least one :class:`KPCALevel`.
        ``None``: ``[LSSVMLevel(kernel, lambda_, eta), KPCALevel(s2, eta2),
        KPCALevel(s3, eta3)]`` from the next four parameters.
    kernel : Kernel, str or callable, default "rbf"
        LS-SVM kernel when ``levels`` is None.
    n_components : (int, int) or int, default (1, 1)
        ``(s2, s3)`` when ``levels`` is None (an int ``s`` means ``(s, s)``).
    lambda_ : float > 0, default 0.01
        LS-SVM ``lambda1`` when ``levels`` is None.
    eta : float > 0, default 1.0
        LS-SVM ``eta1`` when ``levels`` is None.
    eta_levels : (float, float), default (1e-5, 1e-5)
        ``(eta2, eta3)`` when ``levels`` is None; the paper's synthetic example
        selects ``1/eta2 = 1/eta3 = 1e5``.
    n_passes : int >= 0, default 10
        ``solver="levelwise"``: forward-backward passes after the initialisation
        (0 with the LS-SVM first gives the plain LS-SVM).
    solver : {"levelwise", "primal"}, default "levelwise"
        ``"levelwise"``: paper §5.1 (module docstring), the dual on all ``N`` points,
        linear kernels in every level after the first. ``"primal"``: paper §5.2,
        reduced set, any kernels.
    n_prototypes : int >= 1, default 100
        ``solver="primal"``: number ``M`` of prototypes (``min(M, N)``), a uniformly
        random subset of the training points drawn with ``random_state``.
    c_stab : float >= 0, default 1.0
        ``solver="primal"``: weight of the stabilisation terms.
    max_iter : int >= 0, default 200
        ``solver="primal"``: L-BFGS iterations.
    tol : float >= 0, default 1e-10
        ``solver="primal"``: stop when an iteration lowers the objective by less than
        ``tol * max(1, |J|)``.
    random_state, dtype, device
        Seed (initial KPCA features of the level-wise solver; prototypes of the
        primal one), floating dtype and torch device.

    Notes
    -----
    **Primal objective** (``solver="primal"``). Prototypes ``x~_1..x~_M``; the
    unknowns are the prototypes' hidden features ``H~_l`` (``M x s_l``) of every
    level, the bias ``b`` and, for every KPCA level, positive scales
    ``Lam_l = diag(lam_l)`` (parametrised by their logarithms). The prototypes'
    inputs of level ``l`` are ``P_1 = X~`` and ``P_l = H~_{l-1}`` (eq. 5.2:
    ``W~_l = (1/eta_l) sum_j phi_l(P_l,j) h~_l,j^T``). For all ``N`` training points
    the chain of eq. 5.4 gives, level by level, with ``z_0 = x_i``,

    * KPCA level:   ``e_l = (1/eta_l) k_l(z_{l-1}, P_l) H~_l``,  ``z_l = e_l Lam_l^{-1}``;
    * LS-SVM level: ``yhat = (1/eta_l) k_l(z_{l-1}, P_l) H~_l + b``, residual
      ``r = y - yhat`` and, when further levels follow, ``z_l = r / lambda`` (the
      LS-SVM's conjugate feature ``h = e / lambda``).

    With ``G_l = k_l(P_l, P_l)`` (so ``eta_l/2 Tr(W~_l^T W~_l) = 1/(2 eta_l) Tr(H~_l^T G_l H~_l)``)
    the minimised objective is eq. 5.3 generalised to any levels,

    ``J = J_LS + sum_{KPCA l} (J_l + c_stab/2 J_l^2)``,

    ``J_LS = 1/(2 lambda) sum_i ||r_i||^2 + 1/(2 eta) Tr(H~^T G H~)``,
    ``J_l = -1/2 sum_i e_l,i^T Lam_l^{-1} e_l,i + 1/(2 eta_l) Tr(H~_l^T G_l H~_l)``.

    Choices where the paper leaves them open: the data terms sum over all ``N``
    training points (the prototypes only parametrise the ``W~``); ``Lam_l`` are free
    unknowns (as in ``min`` of eq. 5.3), so each stabilised KPCA term is bounded
    below by ``-1/(2 c_stab)`` and ``J`` is bounded below; with the LS-SVM first the
    KPCA levels act on the residual features ``r / lambda`` and the prediction is the
    LS-SVM level's (eq. 4.16). Initialisation: KPCA levels from the uncoupled
    kernel PCA of the prototypes (top eigenvectors of ``G_l / eta_l``, ``Lam_l`` their
    eigenvalues), the LS-SVM level from its reduced-set ridge solution given the
    initial chain. Minimisation: ``torch.optim.LBFGS`` (strong-Wolfe line search)
    one iteration at a time; an iterate that does not lower ``J`` is rejected and
    ends the run, so ``objective_history_`` is non-increasing.

    **Prediction.** LS-SVM first: ``y(x) = (1/eta1) sum_j h1_j k1(x_j, x) + b``
    (eq. 4.16; prototypes instead of all points in the primal). LS-SVM last: the
    chain above (eqs. 4.9 / 5.4). For ``solver="levelwise"`` the paper's
    ``Lam_l`` ("the eigenvalues", exact for uncoupled levels where ``e_l = Lam_l h_l``
    on the training points) is calibrated level by level: ``1/lam_l,k`` is the
    least-squares scale that maps the chain's score column ``e_l,k`` on the
    training points onto ``H_l[:, k]``, i.e. ``lam = (e.e)/(e.h)``; it is the
    eigenvalue when the levels are uncoupled, and keeps the chain consistent with
    the fitted hidden features as far as the coupling allows. Caveat (measured):
    with the LS-SVM last, its large hidden features pull the previous KPCA level
    out of the span the chain can reach from the inputs, and the level-wise
    out-of-sample predictions can then be poor; the primal solver fits the chain
    itself and has no such gap.

    Attributes
    ----------
    levels_ : list of LSSVMLevel / KPCALevel
        The resolved architecture (kernels as :class:`~kppca.kernels.Kernel` copies).
    hidden_features_ : list of Tensor
        ``H_l`` per level (``N x s_l`` level-wise; ``M x s_l`` prototypes' features in
        the primal). ``H1_, H2_, H3_`` alias the first three.
    scales_ : list of Tensor or None
        ``diag(Lam_l)`` of the KPCA levels (None for the LS-SVM level).
    intercept_ : Tensor of shape (p,)
    objective_history_ : list of (str, float)
        Level-wise: ``("init" | "forward k" | "backward k", L)`` after each phase.
        Primal: ``("iter k", J)``, ``"iter 0"`` the initial point.
    residual_history_ : list of list of float
        Level-wise: after the initialisation and after every pass, the relative
        residual of each level's equations: ``||[(M+lambda I) H + 1 b^T - Y; 1^T H]|| /
        (||M+lambda I|| ||H|| + sqrt(N) ||b|| + ||Y||)`` for the LS-SVM level and
        ``||M H - H (H^T M H)|| / (||M|| ||H||)`` for a KPCA level (Frobenius norms).
        Primal: the gradient norm of ``J`` after every iteration (one entry).
    prototypes_ : Tensor
        Training points of the reduced set (primal), or all training points.
    prototype_indices_ : Tensor
    n_iter_ : int
    kernel_ : Kernel
        The first level's kernel.
    """

    _parameter_constraints = {
        "levels": [list, tuple, None],
        "kernel": [Kernel, str, callable, None],
        "n_components": [list, tuple, Interval("int", 1, None, closed="left")],
        "lambda_": [Interval("real", 0, None, closed="neither")],
        "eta": [Interval("real", 0, None, closed="neither")],
        "eta_levels": [list, tuple],
        "n_passes": [Interval("int", 0, None, closed="left")],
        "solver": [Options(["levelwise", "primal"])],
        "n_prototypes": [Interval("int", 1, None, closed="left")],
        "c_stab": [Interval("real", 0, None, closed="left")],
        "max_iter": [Interval("int", 0, None, closed="left")],
        "tol": [Interval("real", 0, None, closed="left")],
        "random_state": ["random_state"],
        "dtype": ["dtype"],
        "device": ["device"],
    }
    _parameter_hints = {
        "levels": "levels is a list of LSSVMLevel and KPCALevel; a kernel goes in DeepRKM(kernel=...).",
    }

    def __init__(self, levels: Any = None, *, kernel: Any = "rbf", n_components: Sequence[int] = (1, 1),
                 lambda_: float = 0.01, eta: float = 1.0, eta_levels: Sequence[float] = (1e-5, 1e-5),
                 n_passes: int = 10, solver: str = "levelwise", n_prototypes: int = 100, c_stab: float = 1.0,
                 max_iter: int = 200, tol: float = 1e-10, random_state: Any = None, dtype: Any = None,
                 device: Any = None):
        self.levels = levels
        self.kernel = kernel
        self.n_components = n_components
        self.lambda_ = lambda_
        self.eta = eta
        self.eta_levels = eta_levels
        self.n_passes = n_passes
        self.solver = solver
        self.n_prototypes = n_prototypes
        self.c_stab = c_stab
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.dtype = dtype
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.target_tags.multi_output = True
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "intercept_")

    # ------------------------------------------------------------------ architecture
    def _resolve_levels(self, N: int) -> list:
        levels, kernel = self.levels, self.kernel
        if levels is None:
            comps = self.n_components
            s = [int(comps)] * 2 if isinstance(comps, (int, np.integer)) else list(comps)
            if len(s) != 2 or not all(isinstance(v, (int, np.integer)) and v >= 1 for v in s):
                raise ValueError(f"n_components must be (s2, s3), two ints >= 1, got {self.n_components!r}.")
            etas = list(self.eta_levels)
            if len(etas) != 2 or not all(isinstance(e, (int, float, np.floating, np.integer)) and e > 0
                                         for e in etas):
                raise ValueError(f"eta_levels must be two positive floats (eta2, eta3), got {self.eta_levels!r}.")
            levels = [LSSVMLevel(kernel, float(self.lambda_), float(self.eta)),
                      KPCALevel(int(s[0]), float(etas[0])), KPCALevel(int(s[1]), float(etas[1]))]
        supported = ("levels must be a list of LSSVMLevel and KPCALevel with exactly one LSSVMLevel, placed first "
                     "(LS-SVM then KPCA levels, paper eq. 4.18) or last (KPCA levels then the LS-SVM, eq. 4.11), "
                     "and at least one KPCALevel")
        levels = list(levels)
        bad = [type(v).__name__ for v in levels if not isinstance(v, (LSSVMLevel, KPCALevel))]
        if bad:
            raise ValueError(f"{supported}; got elements of type {bad}.")
        where = [i for i, v in enumerate(levels) if isinstance(v, LSSVMLevel)]
        if len(levels) < 2 or len(where) != 1 or where[0] not in (0, len(levels) - 1):
            raise ValueError(f"{supported}; got {[type(v).__name__ for v in levels]}.")
        out = []
        for i, lev in enumerate(levels):
            if not (isinstance(lev.eta, (int, float, np.floating, np.integer)) and lev.eta > 0
                    and math.isfinite(lev.eta)):
                raise ValueError(f"levels[{i}].eta must be a positive float, got {lev.eta!r}.")
            if isinstance(lev, LSSVMLevel):
                if not (isinstance(lev.lambda_, (int, float, np.floating, np.integer)) and lev.lambda_ > 0):
                    raise ValueError(f"levels[{i}].lambda_ must be a positive float, got {lev.lambda_!r}.")
            else:
                s = lev.n_components
                if not (isinstance(s, (int, np.integer)) and 1 <= s <= N):
                    raise ValueError(f"levels[{i}].n_components must be an int in [1, N = {N}], got {s!r}.")
            out.append(replace(lev, kernel=copy.deepcopy(as_kernel(lev.kernel))))
        if self.solver == "levelwise":
            nonlin = [i for i, lev in enumerate(out[1:], 1) if type(lev.kernel) is not Linear]
            if nonlin:
                raise ValueError(f"solver='levelwise' needs linear kernels in every level after the first (paper "
                                 f"§5.1); levels {nonlin} are not linear. Use solver='primal' for other kernels.")
            last, prev = out[-1], out[-2]
            if isinstance(last, KPCALevel) and isinstance(prev, KPCALevel) and last.n_components > prev.n_components:
                raise ValueError(f"n_components: the last KPCA level's {last.n_components} components exceed the "
                                 f"rank {prev.n_components} of its linear kernel on the previous level (need "
                                 f"s_last <= s_previous, e.g. n_components=(s2, s3) with s3 <= s2).")
        return out

    @property
    def _lssvm_first(self) -> bool:
        return isinstance(self.levels_[0], LSSVMLevel)

    # ------------------------------------------------------------------ level-wise solver
    def _own(self, l: int, H: list) -> torch.Tensor:
        return self._K0 if l == 0 else H[l - 1] @ H[l - 1].T

    def _fused(self, l: int, H: list, couple: bool = True) -> torch.Tensor:
        M = self._own(l, H) / float(self.levels_[l].eta)
        if couple and l + 1 < len(H):
            M = M + H[l + 1] @ H[l + 1].T / float(self.levels_[l + 1].eta)
        return M

    def _solve_level(self, l: int, H: list, b: torch.Tensor, couple: bool = True):
        lev, M = self.levels_[l], self._fused(l, H, couple)
        if isinstance(lev, LSSVMLevel):
            sol = solve_lssvm_dual(M * float(lev.eta), self._Y, float(lev.lambda_), float(lev.eta))
            return sol.coef, sol.intercept
        return eigh_descending(M)[1][:, : lev.n_components], b

    def _levelwise_objective(self, H: list) -> float:
        val = 0.0
        for l, lev in enumerate(self.levels_):
            val -= 0.5 * float((H[l] * (self._own(l, H) @ H[l])).sum()) / float(lev.eta)
            if isinstance(lev, LSSVMLevel):
                val += float((self._Y * H[l]).sum()) - 0.5 * float(lev.lambda_) * float((H[l] * H[l]).sum())
        return val

    def _residuals(self, H: list, b: torch.Tensor) -> list[float]:
        out = []
        for l, lev in enumerate(self.levels_):
            M, Hl = self._fused(l, H), H[l]
            if isinstance(lev, LSSVMLevel):
                A = M + float(lev.lambda_) * torch.eye(M.shape[0], dtype=M.dtype, device=M.device)
                r1 = A @ Hl + b[None, :] - self._Y
                num = math.hypot(float(torch.linalg.norm(r1)), float(torch.linalg.norm(Hl.sum(0))))
                den = (float(torch.linalg.norm(A)) * float(torch.linalg.norm(Hl))
                       + math.sqrt(M.shape[0]) * float(torch.linalg.norm(b)) + float(torch.linalg.norm(self._Y)))
            else:
                MH = M @ Hl
                num = float(torch.linalg.norm(MH - Hl @ (Hl.T @ MH)))
                den = float(torch.linalg.norm(M)) * float(torch.linalg.norm(Hl))
            out.append(num / den if den > 0 else num)
        return out

    def _fit_levelwise(self, Xt: torch.Tensor, gen: torch.Generator) -> None:
        levels, N, L = self.levels_, Xt.shape[0], len(self.levels_)
        self._K0 = levels[0].kernel.gram(Xt, Xt)
        p = self._Y.shape[1]
        H = []
        for lev in levels:
            if isinstance(lev, KPCALevel):
                H.append(project_stiefel(torch.randn(N, lev.n_components, generator=gen, dtype=self._dtype,
                                                     device=self._device)))
            else:
                H.append(torch.zeros(N, p, dtype=self._dtype, device=self._device))
        b = torch.zeros(p, dtype=self._dtype, device=self._device)
        j = 0 if self._lssvm_first else L - 1
        H[j], b = self._solve_level(j, H, b, couple=bool(self.n_passes) or j == L - 1)
        history = [("init", self._levelwise_objective(H))]
        residuals = [self._residuals(H, b)]
        for k in range(1, int(self.n_passes) + 1):
            for l in range(L):
                H[l], b = self._solve_level(l, H, b)
            history.append((f"forward {k}", self._levelwise_objective(H)))
            for l in range(L - 2, -1, -1):
                H[l], b = self._solve_level(l, H, b)
            history.append((f"backward {k}", self._levelwise_objective(H)))
            residuals.append(self._residuals(H, b))
        self.prototypes_, self.prototype_indices_ = Xt, torch.arange(N, device=self._device)
        scales = [None] * L
        for l, lev in enumerate(levels):  # calibrate Lam_l level by level along the chain (class Notes)
            if isinstance(lev, KPCALevel):
                _, es = self._chain(Xt, H[: l + 1], b, scales[: l + 1], self._Y)
                e = es[l]
                scales[l] = (e * e).sum(0) / (e * H[l]).sum(0)  # 1/Lam = argmin_c ||c e - h|| per column
        self.hidden_features_, self.intercept_, self.scales_ = H, b, scales
        self.objective_history_, self.residual_history_ = history, residuals
        self.n_iter_ = int(self.n_passes)
        del self._K0

    # ------------------------------------------------------------------ primal reduced-set solver
    def _chain(self, X: torch.Tensor, Ht: list, b: torch.Tensor, lam: list, Y: torch.Tensor | None = None,
               gram0: torch.Tensor | None = None):
        """Eq. 5.4 on the rows of ``X``: per level the scores ``e_l`` (KPCA) or prediction; returns (yhat, e's).

        ``gram0``: the first level's kernel between ``X`` and the prototypes when already computed.
        """
        z, yhat, es = X, None, []
        for l, lev in enumerate(self.levels_[: len(Ht)]):
            P = self.prototypes_ if l == 0 else Ht[l - 1]
            K = gram0 if l == 0 and gram0 is not None else lev.kernel.gram(z, P)
            e = K @ Ht[l] / float(lev.eta)
            if isinstance(lev, KPCALevel):
                es.append(e)
                if l + 1 < len(Ht):
                    z = e / lam[l][None, :]
            else:
                yhat = e + b[None, :]
                es.append(None)
                if l + 1 < len(Ht):
                    if Y is None:  # prediction: the LS-SVM level is the output (eq. 4.16)
                        return yhat, es
                    z = (Y - yhat) / float(lev.lambda_)
        return yhat, es

    def _primal_objective(self, Ht: list, b: torch.Tensor, loglam: list, grams0: tuple) -> torch.Tensor:
        """The objective on the training rows; ``grams0`` = the first level's kernel (inputs x prototypes,
        prototypes x prototypes), constant during the optimisation and computed once per fit."""
        lam = [None if g is None else torch.exp(g) for g in loglam]
        yhat, es = self._chain(None, Ht, b, lam, self._Y, gram0=grams0[0])
        c = float(self.c_stab)
        J = yhat.new_zeros(())
        for l, lev in enumerate(self.levels_):
            G = grams0[1] if l == 0 else lev.kernel.gram(Ht[l - 1], Ht[l - 1])
            reg = (Ht[l] * (G @ Ht[l])).sum() / (2 * float(lev.eta))
            if isinstance(lev, LSSVMLevel):
                J = J + ((self._Y - yhat) ** 2).sum() / (2 * float(lev.lambda_)) + reg
            else:
                Jl = -0.5 * (es[l] ** 2 / lam[l][None, :]).sum() + reg
                J = J + Jl + 0.5 * c * Jl ** 2
        return J

    def _init_primal(self, Xt: torch.Tensor, grams0: tuple) -> tuple[list, torch.Tensor, list]:
        dd = dict(dtype=self._dtype, device=self._device)
        M, p = self.prototypes_.shape[0], self._Y.shape[1]
        Ht, loglam = [None] * len(self.levels_), [None] * len(self.levels_)
        b = torch.zeros(p, **dd)
        z = Xt
        for l, lev in enumerate(self.levels_):
            P = self.prototypes_ if l == 0 else Ht[l - 1]
            G = grams0[1] if l == 0 else lev.kernel.gram(P, P)
            K_zP = grams0[0] if l == 0 else lev.kernel.gram(z, P)
            if isinstance(lev, KPCALevel):
                s = min(lev.n_components, M)
                vals, vecs = eigh_descending(G / float(lev.eta))
                V = torch.zeros(M, lev.n_components, **dd)
                V[:, :s] = vecs[:, :s]
                lam = torch.ones(lev.n_components, **dd) * max(float(vals[0]), 1.0)
                lam[:s] = vals[:s].clamp_min(max(float(vals[0]) * 1e-8, torch.finfo(self._dtype).tiny))
                Ht[l], loglam[l] = V, torch.log(lam)
                z = K_zP @ V / float(lev.eta) / lam[None, :]
            else:
                # reduced-set LS-SVM on the chain's inputs: ridge regression in (H~, b)
                lam_, eta = float(lev.lambda_), float(lev.eta)
                Phi = torch.cat([K_zP / eta, torch.ones(z.shape[0], 1, **dd)], dim=1)
                R = torch.zeros(M + 1, M + 1, **dd)
                R[:M, :M] = G / eta
                A = Phi.T @ Phi / lam_ + R
                A = A + torch.eye(M + 1, **dd) * (1e-12 * float(A.diagonal().abs().max()))
                theta = torch.linalg.solve(A, Phi.T @ self._Y / lam_)
                Ht[l], b = theta[:M], theta[M]
                yhat = Phi @ theta
                z = (self._Y - yhat) / lam_
        return Ht, b, loglam

    def _fit_primal(self, Xt: torch.Tensor, gen: torch.Generator) -> None:
        N = Xt.shape[0]
        M = min(int(self.n_prototypes), N)
        idx = torch.randperm(N, generator=gen, device=gen.device)[:M].to(self._device)
        self.prototype_indices_ = idx
        self.prototypes_ = Xt[idx]
        kernel0 = self.levels_[0].kernel
        grams0 = (kernel0.gram(Xt, self.prototypes_), kernel0.gram(self.prototypes_, self.prototypes_))
        Ht, b, loglam = self._init_primal(Xt, grams0)
        params = [t.clone(memory_format=torch.contiguous_format).requires_grad_(True) for t in Ht]
        params += [b.clone(memory_format=torch.contiguous_format).requires_grad_(True)]
        params += [g.clone().requires_grad_(True) for g in loglam if g is not None]
        L = len(Ht)

        def unpack():
            it = iter(params[L + 1:])
            return params[:L], params[L], [None if g is None else next(it) for g in loglam]

        def f() -> torch.Tensor:
            return self._primal_objective(*unpack(), grams0)

        opt = torch.optim.LBFGS(params, lr=1.0, max_iter=1, max_eval=25, history_size=20, tolerance_grad=0.0,
                                tolerance_change=0.0, line_search_fn="strong_wolfe")

        def closure() -> torch.Tensor:
            opt.zero_grad()
            loss = f()
            loss.backward()
            return loss

        with torch.no_grad():
            current = float(f())
        history, grads, n_iter = [("iter 0", current)], [], 0
        for k in range(1, int(self.max_iter) + 1):
            saved = [p.detach().clone() for p in params]
            opt.step(closure)
            with torch.no_grad():
                new = float(f())
            if not (new <= current):  # not a decrease (or not finite): reject and stop
                with torch.no_grad():
                    for p, s in zip(params, saved):
                        p.copy_(s)
                break
            n_iter = k
            history.append((f"iter {k}", new))
            grads.append(math.sqrt(sum(float((p.grad ** 2).sum()) for p in params if p.grad is not None)))
            done = current - new <= float(self.tol) * max(1.0, abs(current))
            current = new
            if done:
                break
        Ht, b, loglam = unpack()
        self.hidden_features_ = [t.detach() for t in Ht]
        self.intercept_ = b.detach()
        self.scales_ = [None if g is None else torch.exp(g.detach()) for g in loglam]
        self.objective_history_, self.residual_history_, self.n_iter_ = history, [grads], n_iter

    # ------------------------------------------------------------------ public API
    @fit_context
    def fit(self, X: ArrayLike, y: ArrayLike) -> DeepRKM:
        """Fit on ``X`` (N, D) and ``y`` (N,) or (N, p) with the chosen solver."""
        if y is None:
            raise ValueError("DeepRKM requires y to be passed, but the target y is None.")
        self._dtype = resolve_dtype(self.dtype, like=X)
        self._device = resolve_device(self.device)
        check_feature_names(self, X, reset=True)
        Xt = as_tensor(X, "X", dtype=self._dtype, device=self._device, min_samples=2)
        self.n_features_in_ = Xt.shape[1]
        Y = as_tensor(y, "y", ndim=(1, 2), dtype=self._dtype, device=self._device)
        if Y.shape[0] != Xt.shape[0]:
            raise ValueError(f"X has {Xt.shape[0]} rows but y has {Y.shape[0]}; they must match.")
        self._single_output = Y.ndim == 1
        self._Y = Y.reshape(Y.shape[0], -1)
        self.levels_ = self._resolve_levels(Xt.shape[0])
        self.levels_[0] = replace(self.levels_[0], kernel=self.levels_[0].kernel.resolve(Xt))  # width from X
        # Later levels see hidden features that change during the fit: a width rule there keeps the
        # former fixed default 1.0 (see kppca.kernels.bandwidth; the deep RKM may choose better).
        self.levels_[1:] = [replace(v, kernel=v.kernel if v.kernel.is_resolved else type(v.kernel)(1.0))
                            if isinstance(v.kernel, (RBF, Laplacian)) else v for v in self.levels_[1:]]
        self.kernel_ = self.levels_[0].kernel
        gen = torch_generator(self.random_state, self._device)
        if self.solver == "levelwise":
            self._fit_levelwise(Xt, gen)
        else:
            self._fit_primal(Xt, gen)
        for i, name in enumerate(("H1_", "H2_", "H3_")):
            if i < len(self.hidden_features_):
                setattr(self, name, self.hidden_features_[i])
        del self._Y
        return self

    def predict(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Predictions (M,) or (M, p): eq. 4.16 (LS-SVM first) or the chain of eqs. 4.9 / 5.4 (LS-SVM last)."""
        if not hasattr(self, "intercept_"):
            raise NotFittedError("This DeepRKM instance is not fitted yet; call fit(X, y) before predict().")
        check_feature_names(self, X, reset=False)
        Xt = as_tensor(X, "X", dtype=self._dtype, device=self._device)
        if Xt.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xt.shape[1]} features, but DeepRKM is expecting {self.n_features_in_} features as input.")
        with torch.no_grad():
            out, _ = self._chain(Xt, self.hidden_features_, self.intercept_, self.scales_)
        if self._single_output:
            out = out[:, 0]
        return to_output(out, is_numpy_like(X))
