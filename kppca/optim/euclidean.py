"""Unconstrained methods of :func:`kppca.optim.minimize`, on a list of tensors ``x`` with ``fun(*x)``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from .result import OptimizeResult, ProgressBar

__all__ = ["adam", "lbfgs"]


def _leaves(x0: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [t.detach().clone(memory_format=torch.contiguous_format).requires_grad_(True) for t in x0]


def lbfgs(fun: Callable[..., torch.Tensor], x0: Sequence[torch.Tensor], *, max_iter: int, tol: float,
          progress: bool, desc: str, history_size: int = 20, max_eval: int = 25) -> OptimizeResult:
    """``torch.optim.LBFGS`` (strong Wolfe) one iteration at a time, ``history`` non-increasing.

    A step that does not lower ``fun`` ends the run; converged when an iteration lowers ``fun`` by at most
    ``tol * max(1, |f|)``.
    """
    params = _leaves(x0)
    opt = torch.optim.LBFGS(params, lr=1.0, max_iter=1, max_eval=max_eval, history_size=history_size,
                            tolerance_grad=0.0, tolerance_change=0.0, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = fun(*params)
        loss.backward()
        return loss

    with torch.no_grad():
        current = float(fun(*params))
    if not math.isfinite(current):
        raise ValueError("the objective is not finite at the starting point; check the inputs and parameters.")
    history, grads, n_iter = [current], [], 0
    converged, message = False, f"max_iter={max_iter} reached"
    bar = ProgressBar(progress, max_iter, desc)
    for k in range(1, max_iter + 1):
        saved = [p.detach().clone() for p in params]
        opt.step(closure)
        with torch.no_grad():
            new = float(fun(*params))
        if not (new <= current):  # not a decrease (or not finite): reject and stop
            with torch.no_grad():
                for p, s in zip(params, saved):
                    p.copy_(s)
            message = "a step did not lower the objective (rounding level or an ill-conditioned problem)"
            break
        n_iter = k
        history.append(new)
        grads.append(math.sqrt(sum(float((p.grad ** 2).sum()) for p in params if p.grad is not None)))
        bar.update(objective=f"{new:.6g}")
        done = current - new <= tol * max(1.0, abs(current))
        current = new
        if done:
            converged, message = True, "relative decrease below tol"
            break
    bar.close()
    return OptimizeResult(x=[p.detach() for p in params], fun=current, n_iter=n_iter, converged=converged,
                          grad_norm=grads[-1] if grads else math.nan, history=history, grad_history=grads,
                          message=message, method="lbfgs")


def adam(fun: Callable[..., torch.Tensor], x0: Sequence[torch.Tensor], *, max_iter: int, lr: float | None,
         progress: bool, desc: str, state: dict | None = None) -> OptimizeResult:
    """``max_iter`` steps of ``torch.optim.Adam`` (default ``lr`` 1e-2); ``state`` resumes an earlier run.

    No stopping rule (``converged`` is False); the returned ``state`` keeps the moments for a caller that
    alternates Adam with other steps (the MLP head of the deep RKM classifier).
    """
    params = _leaves(x0)
    opt = torch.optim.Adam(params, lr=1e-2 if lr is None else lr)
    if state is not None:
        opt.load_state_dict(state)
    history: list[float] = []
    bar = ProgressBar(progress, max_iter, desc)
    for _ in range(max_iter):
        opt.zero_grad()
        loss = fun(*params)
        loss.backward()
        history.append(float(loss.detach()))
        opt.step()
        bar.update(objective=f"{history[-1]:.6g}")
    bar.close()
    with torch.no_grad():
        final = float(fun(*params))
    history.append(final)
    return OptimizeResult(x=[p.detach() for p in params], fun=final, n_iter=max_iter, converged=False,
                          history=history, message="fixed number of steps", method="adam",
                          state=opt.state_dict())
