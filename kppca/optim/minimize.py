"""One entry point for the package's iterative optimisation, :func:`minimize`, and its unconstrained methods."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from sklearn.exceptions import ConvergenceWarning

from .._param_validation import Integral, Interval, Real, StrOptions, check_scalar
from .._progress import tqdm
from .result import OptimizeResult
from .stiefel import GEOOPT_METHODS, check_orthonormal, geoopt_minimize, projected_gradient

#: Methods on the Stiefel manifold: geoopt's Riemannian optimisers and the projected gradient.
STIEFEL_METHODS = GEOOPT_METHODS + ("pgd",)
#: Methods per manifold (``None``: unconstrained).
METHODS = {"stiefel": STIEFEL_METHODS, None: ("lbfgs", "adam")}


def minimize(fun: Callable[..., torch.Tensor], x0: torch.Tensor | Sequence[torch.Tensor], *, method: str = "adam",
             manifold: str | None = "stiefel", params: Sequence[torch.Tensor] = (), max_iter: int = 1000,
             tol: float = 1e-8, lr: float | None = None, progress: bool = False, desc: str | None = None,
             warn: bool = True, state: dict | None = None, **options: Any) -> OptimizeResult:
    """Minimise ``fun`` from ``x0``, on the Stiefel manifold ``{H : H^T H = I}`` or unconstrained.

    Parameters
    ----------
    fun : callable
        Returns a scalar tensor, differentiable by autograd: ``fun(H, *params)`` on the manifold, else ``fun(*x)``.
    x0 : Tensor of shape (n, s), or sequence of Tensor
        Starting point, never modified. On the Stiefel manifold it must have orthonormal columns
        (``"pgd"`` projects it instead).
    method : str, default "adam"
        On ``manifold="stiefel"``: geoopt's ``"adam"``, ``"sgd"``, ``"line_search"`` (Armijo steepest
        descent), ``"cg"`` (Fletcher-Reeves), or ``"pgd"`` (:func:`projected_gradient`, no geoopt needed).
        With ``manifold=None``: ``"lbfgs"`` (strong Wolfe, non-increasing) or ``"adam"`` (``max_iter`` steps).
    manifold : {"stiefel", None}, default "stiefel"
    params : sequence of Tensor
        ``"pgd"`` only: unconstrained parameters stepped beside ``H``.
    max_iter : int >= 0, default 1000
    tol : float >= 0, default 1e-8
        Stopping tolerance relative to ``max(1, |f|)``, on the (Riemannian or projected) gradient norm, or
        on the decrease per iteration (``"lbfgs"``).
    lr : float > 0, optional
        Step of ``"adam"``/``"sgd"``.
    progress : bool, default False
        Show a tqdm progress bar.
    desc : str, optional
        Label of the progress bar and of the warning.
    warn : bool, default True
        Issue a :class:`~sklearn.exceptions.ConvergenceWarning` when the run stops before its criterion is
        met (never for ``"adam"`` without a manifold, which has none).
    state : dict, optional
        ``"adam"`` without a manifold: the ``state`` of an earlier result, to resume.
    **options
        Method-specific settings: ``step``, ``c``, ``shrink``, ``max_backtracks`` (``"pgd"``);
        ``history_size``, ``max_eval`` (``"lbfgs"``).

    Returns
    -------
    OptimizeResult

    Raises
    ------
    ImportError
        For a geoopt method when geoopt is not installed (the rkm extra: ``pip install ".[rkm]"`` from the source tree).
    """
    manifold = check_scalar(manifold, "manifold", [StrOptions(["stiefel"]), None])
    method = check_scalar(method, "method", [StrOptions(list(METHODS[manifold]))])
    max_iter = check_scalar(max_iter, "max_iter", [Interval(Integral, 0, None, closed="left")])
    tol = check_scalar(tol, "tol", [Interval(Real, 0, None, closed="left")])
    if lr is not None:
        lr = check_scalar(lr, "lr", [Interval(Real, 0, None, closed="neither")])
    if not callable(fun):
        raise TypeError(f"fun must be a callable returning a scalar tensor, got {type(fun).__name__}.")
    desc = desc or method
    if manifold == "stiefel":
        if method == "pgd":
            result = projected_gradient(fun, x0, params, max_iter=max_iter, tol=tol, progress=progress, desc=desc,
                                        **options)
        else:
            check_scalar(max_iter, f"max_iter (method={method!r})", [Interval(Integral, 1, None, closed="left")])
            result = geoopt_minimize(fun, check_orthonormal(x0), method=method, max_iter=max_iter, tol=tol, lr=lr,
                                     progress=progress, desc=desc)
    else:
        xs = [x0] if isinstance(x0, torch.Tensor) else list(x0)
        if method == "lbfgs":
            result = lbfgs(fun, xs, max_iter=max_iter, tol=tol, progress=progress, desc=desc, **options)
        else:
            result = adam(fun, xs, max_iter=max_iter, lr=lr, progress=progress, desc=desc, state=state)
        if isinstance(x0, torch.Tensor):
            result.x = result.x[0]
    if warn and not result.converged and not (manifold is None and method == "adam"):
        warnings.warn(f"{desc}: the optimiser ({method!r}) stopped before convergence ({result.message}) after "
                      f"{result.n_iter} iterations; increase max_iter or loosen tol.", ConvergenceWarning,
                      stacklevel=2)
    return result


def _leaves(x0: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [t.detach().clone(memory_format=torch.contiguous_format).requires_grad_(True) for t in x0]


def lbfgs(fun: Callable[..., torch.Tensor], x0: Sequence[torch.Tensor], *, max_iter: int, tol: float,
          progress: bool, desc: str, history_size: int = 20, max_eval: int = 25) -> OptimizeResult:
    """``torch.optim.LBFGS`` (strong Wolfe) one iteration at a time; a step that does not lower ``fun`` ends the run."""
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
    bar = tqdm(total=max_iter, desc=desc, leave=False, disable=not progress)
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
        bar.update()
        bar.set_postfix(objective=f"{new:.6g}")
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
    """``max_iter`` steps of ``torch.optim.Adam`` (default ``lr`` 1e-2), no stopping rule; ``state`` resumes a run."""
    params = _leaves(x0)
    opt = torch.optim.Adam(params, lr=1e-2 if lr is None else lr)
    if state is not None:
        opt.load_state_dict(state)
    history: list[float] = []
    bar = tqdm(total=max_iter, desc=desc, leave=False, disable=not progress)
    for _ in range(max_iter):
        opt.zero_grad()
        loss = fun(*params)
        loss.backward()
        history.append(float(loss.detach()))
        opt.step()
        bar.update()
        bar.set_postfix(objective=f"{history[-1]:.6g}")
    bar.close()
    with torch.no_grad():
        final = float(fun(*params))
    history.append(final)
    return OptimizeResult(x=[p.detach() for p in params], fun=final, n_iter=max_iter, converged=False,
                          history=history, message="fixed number of steps", method="adam",
                          state=opt.state_dict())
