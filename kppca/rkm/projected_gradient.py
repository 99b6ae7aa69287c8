"""Projected gradient descent on the Stiefel manifold with Armijo backtracking.

Used by the deep RKM classifier (classifier paper, §3.4): the hidden features
``H`` (N, s) must satisfy ``H^T H = I``. One iteration takes a gradient step on
``H`` (and on optional unconstrained parameters such as ``w, b``) and maps ``H``
back to the manifold with the Euclidean projection ``Pi(M) = P Q^T`` for the thin
SVD ``M = P S Q^T`` (the polar factor: the closest matrix with orthonormal
columns in Frobenius norm). The step ``alpha`` is found by backtracking until
the sufficient-decrease (Armijo) condition for projected steps holds,

``f(x_new) <= f(x) - c / alpha * ||x_new - x||^2``,

so the objective never increases; ``alpha`` grows again (x2) after an accepted
step so that it can recover from one short step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

__all__ = ["ProjectedGradientResult", "project_stiefel", "projected_gradient"]


def project_stiefel(M: torch.Tensor) -> torch.Tensor:
    """Closest matrix with orthonormal columns to ``M`` (N, s), ``N >= s``: ``P Q^T`` from the thin SVD.

    Raises
    ------
    ValueError
        When ``M`` has more columns than rows (no (N, s) matrix has ``s > N`` orthonormal columns).
    """
    if M.shape[-2] < M.shape[-1]:
        raise ValueError(
            f"cannot project a {tuple(M.shape)} matrix onto the Stiefel manifold: it needs at least as many "
            "rows as columns (reduce the number of components or add training points)."
        )
    P, _, Qh = torch.linalg.svd(M, full_matrices=False)
    return P @ Qh


@dataclass
class ProjectedGradientResult:
    """Outcome of :func:`projected_gradient`.

    Attributes
    ----------
    H : Tensor of shape (N, s), orthonormal columns
    params : list of Tensor
        The unconstrained parameters at the end.
    objective : float
    n_iter : int
    converged : bool
        True when the step-normalised update fell below ``tol``.
    history : list of float
        Objective before the first and after every accepted iteration (non-increasing).
    step_sizes : list of float
    """

    H: torch.Tensor
    params: list
    objective: float
    n_iter: int
    converged: bool
    history: list = field(default_factory=list)
    step_sizes: list = field(default_factory=list)


def projected_gradient(
    objective: Callable[..., torch.Tensor],
    H0: torch.Tensor,
    params: Sequence[torch.Tensor] = (),
    *,
    max_iter: int = 100,
    tol: float = 1e-6,
    step: float = 1.0,
    c: float = 1e-4,
    shrink: float = 0.5,
    max_backtracks: int = 40,
    progress: bool = False,
    desc: str = "projected gradient",
) -> ProjectedGradientResult:
    """Minimise ``objective(H, *params)`` subject to ``H^T H = I`` by projected gradient with Armijo steps.

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
        Stop when ``||x_new - x|| / alpha`` (the projected-gradient norm) is below
        ``tol * max(1, |f|)``.
    step : float, default 1.0
        First trial step.
    c, shrink : float
        Armijo constant and backtracking factor.
    max_backtracks : int
        An iteration that finds no acceptable step ends the run (``converged`` False
        unless the gradient is already at rounding level).
    progress : bool
        Show a tqdm bar.

    Returns
    -------
    ProjectedGradientResult
    """
    H = project_stiefel(H0.detach())
    ps = [p.detach().clone() for p in params]

    def value_and_grads(H: torch.Tensor, ps: list) -> tuple[torch.Tensor, list]:
        leaves = [H.clone().requires_grad_(True)] + [p.clone().requires_grad_(True) for p in ps]
        f = objective(*leaves)
        grads = torch.autograd.grad(f, leaves, allow_unused=True)
        grads = [torch.zeros_like(l) if g is None else g for l, g in zip(leaves, grads)]
        return f.detach(), grads

    def value(H: torch.Tensor, ps: list) -> torch.Tensor:
        with torch.no_grad():
            return objective(H, *ps)

    f, grads = value_and_grads(H, ps)
    if not bool(torch.isfinite(f)):
        raise ValueError("the objective is not finite at the starting point; check the inputs and parameters.")
    history, steps = [float(f)], []
    alpha = float(step)
    converged = False
    it = 0
    bar = None
    if progress:
        from .._progress import tqdm

        bar = tqdm(total=max_iter, desc=desc)
    for it in range(1, max_iter + 1):
        accepted = False
        for _ in range(max_backtracks):
            H_new = project_stiefel(H - alpha * grads[0])
            ps_new = [p - alpha * g for p, g in zip(ps, grads[1:])]
            moved = float((H_new - H).pow(2).sum()) + sum(float((a - b).pow(2).sum()) for a, b in zip(ps_new, ps))
            f_new = value(H_new, ps_new)
            if bool(torch.isfinite(f_new)) and float(f_new) <= float(f) - c / alpha * moved:
                accepted = True
                break
            alpha *= shrink
        if not accepted:
            it -= 1
            break
        pg_norm = moved ** 0.5 / alpha
        H, ps = H_new, ps_new
        f, grads = value_and_grads(H, ps)
        history.append(float(f))
        steps.append(alpha)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(objective=float(f))
        if pg_norm <= tol * max(1.0, abs(float(f))):
            converged = True
            break
        alpha = min(alpha * 2.0, float(step) * 1e3)
    if bar is not None:
        bar.close()
    return ProjectedGradientResult(H, ps, float(f), it, converged, history, steps)
