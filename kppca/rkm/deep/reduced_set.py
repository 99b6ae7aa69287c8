"""Reduced-set estimation of a deep RKM in the primal (paper §5.2), minimised by L-BFGS.

The unknowns are the hidden features ``H~_l`` (M x s_l) of ``M`` prototypes (a random subset of the training
points) in every level, the bias ``b`` and the KPCA levels' ``Lam_l`` (as logarithms). The chain
(:func:`~kppca.rkm.deep.levels.run_chain`) gives the scores and the prediction on all ``N`` points; the objective,
eq. 5.3 generalised to any levels, sums :meth:`~kppca.rkm.deep.levels.Level.primal_term` of every level
(:func:`~kppca.rkm.deep.levels.combine_terms`).
"""

from __future__ import annotations

import torch

from ...optim import minimize
from .levels import Level, combine_terms, run_chain
from .solvers import DeepFit, register_solver

__all__ = ["fit_reduced_set", "standardize_targets"]


def standardize_targets(Y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(Ys, mean, scale)``: ``Ys = (Y - mean) / scale`` per column (L-BFGS's tolerances assume a unit scale), the
    statistics taken on ``Y / max|Y|`` so they neither under- nor overflow; a constant column gets ``scale = 1``."""
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
    """Draw the prototypes, initialise every level (:meth:`Level.primal_start`), minimise ``J`` by L-BFGS on the
    standardised targets (an iterate that does not lower ``J`` ends the run: the history is non-increasing)."""
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
    return DeepFit(H, b, scales, P, idx, history, [res.grad_history], res.n_iter,
                   res.converged or int(params["max_iter"]) == 0, levels=levels, message=res.message)


register_solver("primal", fit_reduced_set)
