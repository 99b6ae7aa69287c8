"""Projected gradient on the Stiefel manifold with Armijo backtracking (method ``"pgd"``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from .result import OptimizeResult, ProgressBar
from .stiefel import project_stiefel

__all__ = ["projected_gradient"]


def projected_gradient(objective: Callable[..., torch.Tensor], H0: torch.Tensor,
                       params: Sequence[torch.Tensor] = (), *, max_iter: int = 100, tol: float = 1e-6,
                       step: float = 1.0, c: float = 1e-4, shrink: float = 0.5, max_backtracks: int = 40,
                       progress: bool = False, desc: str = "projected gradient") -> OptimizeResult:
    """Minimise ``objective(H, *params)`` subject to ``H^T H = I`` by projected gradient with Armijo steps.

    Each step moves ``H`` and ``params`` along their gradients and maps ``H`` back with
    :func:`project_stiefel`; ``alpha`` backtracks until ``f(x_new) <= f(x) - c / alpha * ||x_new - x||^2``
    (so ``f`` never increases), then doubles again (at most ``1e3 * step``) to recover from a short step.

    Parameters
    ----------
    objective : callable ``(H, *params) -> scalar Tensor``
        Differentiable with torch autograd.
    H0 : Tensor of shape (N, s)
        Starting point; it is projected onto the manifold first.
    params : sequence of Tensor
        Unconstrained parameters stepped with the same ``alpha`` (not projected).
    max_iter : int, default 100
    tol : float, default 1e-6
        Stop when ``||x_new - x|| / alpha`` (the projected-gradient norm) is below ``tol * max(1, |f|)``.
    step : float, default 1.0
        First trial step.
    c, shrink : float, default 1e-4, 0.5
        Armijo constant and backtracking factor.
    max_backtracks : int, default 40
        An iteration that finds no acceptable step ends the run (``converged`` False).
    progress : bool, default False
        Show a tqdm bar.
    desc : str, default "projected gradient"
        Label of the progress bar.

    Returns
    -------
    OptimizeResult
        With the final ``params`` and the accepted ``step_sizes``.
    """
    H = project_stiefel(H0.detach())
    ps = [p.detach().clone() for p in params]

    def value_and_grads(H: torch.Tensor, ps: list) -> tuple[torch.Tensor, list]:
        leaves = [H.clone().requires_grad_(True)] + [p.clone().requires_grad_(True) for p in ps]
        f = objective(*leaves)
        grads = torch.autograd.grad(f, leaves, allow_unused=True)
        return f.detach(), [torch.zeros_like(l) if g is None else g for l, g in zip(leaves, grads)]

    f, grads = value_and_grads(H, ps)
    if not bool(torch.isfinite(f)):
        raise ValueError("the objective is not finite at the starting point; check the inputs and parameters.")
    history, steps = [float(f)], []
    alpha, converged, it, pg_norm = float(step), False, 0, float("nan")
    message = f"max_iter={max_iter} reached"
    bar = ProgressBar(progress, max_iter, desc)
    for it in range(1, max_iter + 1):
        accepted = False
        for _ in range(max_backtracks):
            H_new = project_stiefel(H - alpha * grads[0])
            ps_new = [p - alpha * g for p, g in zip(ps, grads[1:])]
            moved = float((H_new - H).pow(2).sum()) + sum(float((a - b).pow(2).sum()) for a, b in zip(ps_new, ps))
            with torch.no_grad():
                f_new = objective(H_new, *ps_new)
            if bool(torch.isfinite(f_new)) and float(f_new) <= float(f) - c / alpha * moved:
                accepted = True
                break
            alpha *= shrink
        if not accepted:
            it -= 1
            message = f"no step satisfied the Armijo condition after {max_backtracks} backtracks"
            break
        pg_norm = moved ** 0.5 / alpha
        H, ps = H_new, ps_new
        f, grads = value_and_grads(H, ps)
        history.append(float(f))
        steps.append(alpha)
        bar.update(objective=float(f))
        if pg_norm <= tol * max(1.0, abs(float(f))):
            converged, message = True, "projected-gradient norm below tol"
            break
        alpha = min(alpha * 2.0, float(step) * 1e3)
    bar.close()
    return OptimizeResult(x=H, fun=float(f), n_iter=it, converged=converged, grad_norm=pg_norm, history=history,
                          params=ps, step_sizes=steps, message=message, method="pgd")
