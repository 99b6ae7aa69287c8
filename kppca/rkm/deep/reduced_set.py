"""Reduced-set estimation of a deep RKM in the primal (paper §5.2), minimised by L-BFGS.

Prototypes ``x~_1..x~_M`` (a random subset of the training points); the unknowns are the
prototypes' hidden features ``H~_l`` (``M x s_l``) of every level, the bias ``b`` and, for
every KPCA level, positive scales ``Lam_l`` (parametrised by their logarithms). The chain
(:func:`~kppca.rkm.deep.chain.run_chain`) gives the scores ``e_l`` and the prediction on all
``N`` training points; with ``G_l = k_l(P_l, P_l)`` the minimised objective is eq. 5.3
generalised to any levels, ``J = sum_l J_l`` with each level's term from
:meth:`~kppca.rkm.deep.levels.Level.primal_term` (the LS-SVM's data fit plus
``1/(2 eta) Tr(H~^T G H~)``; a KPCA level's stabilised ``J_l + c_stab/2 J_l^2``), combined by
:func:`~kppca.rkm.deep.objective.combine_terms` (``DeepRKM(objective=...)``: Table 1's models 1,B,
1,A with the variance reward ``-c0 sum ||e_l||^2``, or 1,C with the regression level's term only).

The targets are standardised first (:func:`standardize_targets`): the objective's squares
of ``y`` would otherwise underflow (``y ~ 1e-300``) or overflow, and the L-BFGS tolerances
are relative to a unit scale. The output level's ``H~`` and ``b`` are mapped back to the
units of ``y``, so the chain predicts in them directly.
"""

from __future__ import annotations

import torch

from ...optim import minimize
from .chain import run_chain
from .levels import Level
from .objective import combine_terms
from .solvers import DeepFit, register_solver

__all__ = ["fit_reduced_set", "standardize_targets"]


def standardize_targets(Y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(Y - mean) / scale`` per column without under- or overflow; returns ``(Ys, mean, scale)``.

    Each column is divided by its largest magnitude ``c`` first, so the mean and the
    standard deviation are computed on numbers in [-1, 1] (no squares of 1e-300 or 1e300),
    then multiplied back: ``scale = c * std(Y / c)``. A constant column gets ``scale = 1``.
    """
    c = Y.abs().amax(0)
    c = torch.where(c > 0, c, torch.ones_like(c))
    U = Y / c
    mu = U.mean(0)
    sd = (U - mu).pow(2).mean(0).sqrt()
    sd = torch.where(sd > 0, sd, torch.ones_like(sd))
    return (U - mu) / sd, c * mu, c * sd


def _objective(levels: list[Level], prototypes: torch.Tensor, Y: torch.Tensor, grams0: tuple, c_stab: float,
               objective: str = "stabilized", c0: float = 1.0):
    outs = [lev.is_output for lev in levels]

    def J(*flat: torch.Tensor) -> torch.Tensor:
        L = len(levels)
        H, b, logs = list(flat[:L]), flat[L], iter(flat[L + 1:])
        lam = [None if lev.is_output else torch.exp(next(logs)) for lev in levels]
        try:
            _, es = run_chain(levels, None, prototypes, H, b, lam, Y, gram0=grams0[0])
            terms = []
            for l, lev in enumerate(levels):
                G = grams0[1] if l == 0 else lev.kernel.gram(H[l - 1], H[l - 1])
                terms.append(lev.primal_term(G, H[l], es[l], lam[l], Y, c_stab))
            total = combine_terms(outs, terms, es, objective=objective, c0=c0)
        except ValueError:
            # A kernel refuses a trial point of the line search that overflows it: a NaN value (with a graph,
            # so the search can continue) marks the step as no descent; lbfgs rejects such an iterate.
            return sum((t * float("nan")).sum() for t in flat)
        return total

    return J


def fit_reduced_set(levels: list[Level], X: torch.Tensor, Y: torch.Tensor, *, params: dict,
                    generator: torch.Generator) -> DeepFit:
    """Draw the prototypes, initialise every level (:meth:`Level.primal_start`), minimise ``J`` by L-BFGS.

    Initialisation: KPCA levels from the uncoupled kernel PCA of the prototypes, the output
    level from its reduced-set ridge solution given the initial chain. L-BFGS with a
    strong-Wolfe line search, one iteration at a time; an iterate that does not lower ``J``
    is rejected and ends the run, so ``objective_history`` is non-increasing.
    """
    N = X.shape[0]
    M = min(int(params["n_prototypes"]), N)
    idx = torch.randperm(N, generator=generator, device=generator.device)[:M].to(X.device)
    P = X[idx]
    Ys, y_mean, y_scale = standardize_targets(Y)
    grams0 = (levels[0].gram(X, P), levels[0].gram(P))
    H, logs, b, z = [], [], None, X
    levels = list(levels)
    for l, lev in enumerate(levels):
        Pl = P if l == 0 else H[l - 1]
        if l > 0:  # a data-scaled kernel takes its width from the previous level's initial features
            lev = levels[l] = lev.fit_kernel(Pl)
        G = grams0[1] if l == 0 else lev.gram(Pl)
        K_zP = grams0[0] if l == 0 else lev.gram(z, Pl)
        Hl, bl, log_lam, z = lev.primal_start(G, K_zP, Ys)
        H.append(Hl)
        if bl is not None:
            b = bl
        if log_lam is not None:
            logs.append(log_lam)
    if b is None:  # pragma: no cover - the estimator guarantees one output level
        raise ValueError("the levels have no output level")
    J = _objective(levels, P, Ys, grams0, float(params["c_stab"]), params.get("objective", "stabilized"),
                   float(params.get("c0", 1.0)))
    res = minimize(J, H + [b] + logs, method="lbfgs", manifold=None, max_iter=int(params["max_iter"]),
                   tol=float(params["tol"]), progress=bool(params.get("progress", False)),
                   desc="deep RKM (reduced set)", warn=False)  # the estimator warns
    L = len(levels)
    H, b, logs = list(res.x[:L]), res.x[L], iter(res.x[L + 1:])
    scales = [None if lev.is_output else torch.exp(next(logs)) for lev in levels]
    j = next(l for l, lev in enumerate(levels) if lev.is_output)
    H[j], b = H[j] * y_scale[None, :], b * y_scale + y_mean  # the output level in the units of y
    history = [(f"iter {k}", v) for k, v in enumerate(res.history)]
    return DeepFit(H, b, scales, P, idx, history, [res.grad_history], res.n_iter, res.converged or int(params["max_iter"]) == 0,
                   levels=levels, message=res.message)


register_solver("primal", fit_reduced_set)
