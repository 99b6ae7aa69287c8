"""The Stiefel manifold ``{H in R^{n x s} : H^T H = I}``: projection, random start, check, and its optimisers.

The Riemannian ones are geoopt's: ``geoopt.EuclideanStiefel()`` retracts by QR, ``O(n s^2)`` per step;
``geoopt.Stiefel()`` would need an ``n x n`` solve, as costly as the eigendecomposition the solver is meant
to avoid. geoopt is imported lazily, so ``import kppca`` works without the ``rkm`` extra.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .._linalg import objective_rounding
from .._progress import tqdm
from .result import OptimizeResult


def project_stiefel(M: torch.Tensor) -> torch.Tensor:
    """Closest matrix with orthonormal columns to ``M`` (n, s), ``n >= s``: its polar factor ``P Q^T`` (SVD).

    Parameters
    ----------
    M : Tensor of shape (n, s)

    Returns
    -------
    Tensor of shape (n, s)
    """
    if M.shape[-2] < M.shape[-1]:
        raise ValueError(
            f"cannot project a {tuple(M.shape)} matrix onto the Stiefel manifold: it needs at least as many "
            "rows as columns (reduce the number of components or add training points)."
        )
    P, _, Qh = torch.linalg.svd(M, full_matrices=False)
    return P @ Qh


def random_stiefel(n: int, s: int, *, generator: torch.Generator, dtype: torch.dtype,
                   device: torch.device | str | None = None) -> torch.Tensor:
    """The package's one random start on the Stiefel manifold: QR of a Gaussian (n, s) matrix, ``diag(R) > 0``.

    Haar-distributed, and a deterministic function of the generator's state on any ``device``.

    Parameters
    ----------
    n, s : int
        Shape, ``1 <= s <= n``.
    generator : torch.Generator
    dtype : torch dtype
    device : torch device, optional
        Default: the generator's device.

    Returns
    -------
    Tensor of shape (n, s) with orthonormal columns.
    """
    if not 1 <= s <= n:
        raise ValueError(f"a random Stiefel point needs 1 <= s <= n, got n = {n}, s = {s}: use fewer components "
                         "or more points.")
    G = torch.randn(n, s, generator=generator, dtype=dtype, device=generator.device)
    G = G.to(device if device is not None else generator.device)
    Q, R = torch.linalg.qr(G)
    signs = torch.sign(R.diagonal())
    signs[signs == 0] = 1
    return Q * signs


def check_orthonormal(H0: Any, name: str = "H0") -> torch.Tensor:
    """Validate a starting point: a finite floating (n, s) tensor, ``s <= n``, with ``H0^T H0 = I``.

    The tolerance ``10 n eps`` bounds the rounding of a Householder QR, so any QR basis passes.
    """
    if not isinstance(H0, torch.Tensor) or not H0.is_floating_point():
        raise TypeError(f"{name} must be a floating torch.Tensor of shape (n, s), got {type(H0).__name__}.")
    if H0.ndim != 2 or H0.shape[1] < 1 or H0.shape[1] > H0.shape[0]:
        raise ValueError(f"{name} must have shape (n, s) with 1 <= s <= n, got {tuple(H0.shape)}.")
    if not bool(torch.isfinite(H0).all()):
        raise ValueError(f"{name} contains NaN or infinity.")
    n, s = H0.shape
    gram = H0.detach().T @ H0.detach()
    err = float((gram - torch.eye(s, dtype=H0.dtype, device=H0.device)).abs().max())
    tol = 10 * n * torch.finfo(H0.dtype).eps
    if err > tol:
        raise ValueError(
            f"{name} must have orthonormal columns (H0^T H0 = I): max |H0^T H0 - I| = {err:.3g} > {tol:.3g}. "
            "Orthonormalise it first, e.g. H0 = torch.linalg.qr(H0).Q."
        )
    return H0


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
    bar = tqdm(total=max_iter, desc=desc, leave=False, disable=not progress)
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
        bar.update()
        bar.set_postfix(objective=float(f))
        if pg_norm <= tol * max(1.0, abs(float(f))):
            converged, message = True, "projected-gradient norm below tol"
            break
        alpha = min(alpha * 2.0, float(step) * 1e3)
    bar.close()
    return OptimizeResult(x=H, fun=float(f), n_iter=it, converged=converged, grad_norm=pg_norm, history=history,
                          params=ps, step_sizes=steps, message=message, method="pgd")


#: Methods of :func:`geoopt_minimize`.
GEOOPT_METHODS = ("adam", "sgd", "line_search", "cg")
#: Steps without a smaller Riemannian gradient norm after which Adam/SGD halve their step.
STALL_STEPS = 20


def geoopt_minimize(objective: Callable[[torch.Tensor], torch.Tensor], H0: torch.Tensor, *, method: str,
                    max_iter: int, tol: float, lr: float | None, progress: bool, desc: str) -> OptimizeResult:
    """Minimise ``objective(H)`` subject to ``H^T H = I`` with a geoopt optimiser (see :func:`kppca.optim.minimize`)."""
    try:
        import geoopt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the Riemannian methods ('adam', 'sgd', 'line_search', 'cg' on the Stiefel manifold) need the "
            "optional dependency geoopt; install the rkm extra (from the source tree: `pip install \".[rkm]\"`; "
            "where kppca comes from a package index: `pip install \"kppca[rkm]\"`) or `pip install geoopt`, "
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

    bar = tqdm(total=max_iter, desc=desc, leave=False, disable=not progress)
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
            bar.update()
            bar.set_postfix(objective=f"{f:.6g}", grad=f"{gnorm:.2e}")
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
