"""Riemannian optimisers of geoopt on the Stiefel manifold (methods ``"adam"``, ``"sgd"``, ``"line_search"``, ``"cg"``).

``geoopt.EuclideanStiefel()`` retracts by QR, ``O(n s^2)`` per step; ``geoopt.Stiefel()`` would need an
``n x n`` solve, as costly as the eigendecomposition the solver is meant to avoid. geoopt is imported
lazily, so ``import kppca`` works without the ``rkm`` extra.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch

from .._linalg import objective_rounding
from .result import OptimizeResult, ProgressBar

__all__ = ["GEOOPT_METHODS", "STALL_STEPS", "geoopt_minimize"]

#: Methods of :func:`geoopt_minimize`.
GEOOPT_METHODS = ("adam", "sgd", "line_search", "cg")
#: Steps without a smaller Riemannian gradient norm after which Adam/SGD halve their step.
STALL_STEPS = 20


def geoopt_minimize(objective: Callable[[torch.Tensor], torch.Tensor], H0: torch.Tensor, *, method: str,
                    max_iter: int, tol: float, lr: float | None, progress: bool, desc: str) -> OptimizeResult:
    """Minimise ``objective(H)`` subject to ``H^T H = I`` with a geoopt optimiser (see :func:`kppca.optim.minimize`).

    Stops at ``||grad_R f(H)||_F <= tol * max(1, |f(H)|)``, after ``max_iter`` steps, or when a line search
    finds no decrease. Adam/SGD halve their step when ``f`` rises or the gradient norm stalls for
    :data:`STALL_STEPS` steps, and return the best point seen.
    """
    try:
        import geoopt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the Riemannian methods ('adam', 'sgd', 'line_search', 'cg' on the Stiefel manifold) need the "
            "optional dependency geoopt; install it with `pip install kppca[rkm]` (or `pip install geoopt`), "
            "or use method='pgd' (projected gradient) or an eigen solver."
        ) from exc
    from geoopt.optim.rlinesearch import LineSearchWarning

    manifold = geoopt.EuclideanStiefel()
    H = geoopt.ManifoldParameter(H0.detach().clone(), manifold=manifold)

    def value_and_grad() -> tuple[float, float, torch.Tensor]:
        H.grad = None
        value = objective(H)
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            raise ValueError("objective(H) must return a scalar torch.Tensor.")
        if not bool(torch.isfinite(value.detach())):
            raise ValueError(f"objective(H) is not finite ({float(value.detach()):.3g}).")
        value.reshape(()).backward()
        egrad = H.grad.detach()
        rgrad = manifold.egrad2rgrad(H.detach(), egrad)
        return float(value.detach()), float(torch.linalg.norm(rgrad)), egrad

    line_search = method in ("line_search", "cg")
    opt = None
    if method == "adam":
        opt = geoopt.optim.RiemannianAdam([H], lr=1e-2 if lr is None else lr)
    elif line_search:
        cg = "steepest" if method == "line_search" else "fr"
        opt = geoopt.optim.RiemannianLineSearch([H], line_search_method="armijo", cg_method=cg)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        value = objective(H).reshape(())
        if not bool(torch.isfinite(value.detach())):
            # A trial step left the valid region (a retraction of a huge step): +inf makes the search back off.
            return torch.tensor(math.inf, dtype=H.dtype)
        value.backward()
        return value.detach()  # geoopt hands it to scipy's Armijo search, which calls numpy() on it

    bar = ProgressBar(progress, max_iter, desc)
    history: list[float] = []
    grad_norms: list[float] = []  # since the last change of step size
    best = (math.inf, H.detach().clone())
    converged, n_iter, message = False, 0, f"max_iter={max_iter} reached"
    try:
        for n_iter in range(max_iter + 1):
            f, gnorm, egrad = value_and_grad()
            history.append(f)
            grad_norms.append(gnorm)
            if f < best[0]:
                best = (f, H.detach().clone())
            if gnorm <= tol * max(1.0, abs(f)):
                converged, message = True, "gradient norm below tol"
                break
            if n_iter == max_iter:
                break
            if method == "sgd" and opt is None:  # default step: the size of the starting point
                step_size = lr if lr is not None else 1.0 / max(float(torch.linalg.norm(egrad)), 1e-300)
                opt = geoopt.optim.RiemannianSGD([H], lr=step_size)
            rounding = objective_rounding(f, H.dtype)
            rose = len(history) > 1 and f > history[-2] + rounding
            # A step can also oscillate along a flat direction (the null space of a rank-deficient matrix) without
            # raising f: only the gradient norm shows it, by not improving over a window of steps.
            stalled = len(grad_norms) > STALL_STEPS and min(grad_norms[-STALL_STEPS:]) >= min(grad_norms[:-STALL_STEPS])
            if not line_search and (rose or stalled):
                for group in opt.param_groups:  # the step overshoots the optimum: halve it
                    group["lr"] *= 0.5
                grad_norms = grad_norms[-1:]
            if line_search:
                with warnings.catch_warnings():
                    # No decrease along the direction: handled just below (stop at rounding level).
                    warnings.filterwarnings("ignore", category=LineSearchWarning)
                    opt.step(closure)
                if not opt.step_size_history or opt.step_size_history[-1] in (None, 0):
                    f, gnorm, _ = value_and_grad()
                    history.append(f)
                    n_iter += 1
                    message = "the line search found no decrease (rounding level)"
                    break
            else:
                opt.step()
            bar.update(objective=f"{f:.6g}", grad=f"{gnorm:.2e}")
    finally:
        bar.close()
    H_final = H.detach().clone()
    if history[-1] > best[0] + objective_rounding(best[0], H.dtype):
        # Adam/SGD are not monotone: return the best point seen and its gradient.
        with torch.no_grad():
            H.copy_(best[1])
        f, gnorm, _ = value_and_grad()
        H_final = H.detach().clone()
        converged = gnorm <= tol * max(1.0, abs(f))
    return OptimizeResult(x=H_final, fun=float(f), n_iter=int(n_iter), converged=bool(converged),
                          grad_norm=float(gnorm), history=history, message=message, method=method)
