"""Solvers for trace maximisation: dense top-``s`` eigenvectors and Riemannian optimisation on the Stiefel manifold.

Both training routes of the multi-view KPCA (and the deep RKMs built on the same
objective) land here:

* :func:`top_eigenpairs` -- the ``solver="eig"`` route: the top ``s`` eigenpairs of a
  symmetric PSD matrix (``C`` in the primal, ``K`` in the dual) from the package's
  eigensolvers in :mod:`kppca._linalg`, with their PSD / rank checks and the
  deterministic sign convention :func:`kppca._linalg.flip_signs`.
* :func:`stiefel_minimize` -- the ``solver="stiefel"`` route: minimise a
  differentiable ``objective(H)`` over ``{H : H^T H = I}`` with **geoopt**
  (``ManifoldParameter`` on ``geoopt.EuclideanStiefel()`` and a Riemannian optimiser).

This is the only module of :mod:`kppca` that imports geoopt, and it does so lazily
inside the functions that need it, so ``import kppca.rkm`` works without the
optional ``rkm`` extra.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .._linalg import eigh_top, full_spectrum, rank_tolerance
from .._param_validation import Interval, Options, check_scalar

__all__ = ["STIEFEL_METHODS", "StiefelResult", "import_geoopt", "stiefel_minimize", "top_eigenpairs"]

#: Optimisers accepted by :func:`stiefel_minimize`.
STIEFEL_METHODS = ("adam", "sgd", "line_search", "cg")
#: Steps without a smaller Riemannian gradient norm after which Adam/SGD halve their step.
STALL_STEPS = 20

# Above this size with few components, Lanczos (ARPACK) beats a dense eigh.
_DENSE_LIMIT = 1500


def import_geoopt() -> Any:
    """Import geoopt, or raise an ImportError that says how to install it."""
    try:
        import geoopt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "solver='stiefel' needs the optional dependency geoopt (Riemannian optimisation on the "
            "Stiefel manifold); install it with `pip install kppca[rkm]` (or `pip install geoopt`), "
            "or use solver='eig'."
        ) from exc
    return geoopt


# ----------------------------------------------------------------------------------------------
# Dense eigen route
# ----------------------------------------------------------------------------------------------


def top_eigenpairs(
    A: torch.Tensor,
    s: int,
    *,
    what: str,
    scale: float = 0.0,
    size: int | None = None,
    max_rank: int | None = None,
    random_state: np.random.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Top ``s`` eigenpairs of a symmetric PSD matrix, refusing ``s`` above its numerical rank.

    Parameters
    ----------
    A : Tensor of shape (m, m), symmetric PSD
    s : int
        Number of eigenpairs, ``1 <= s <= m``.
    what : str
        Name of ``A`` in error messages (e.g. ``"multi-view kernel matrix K"``).
    scale, size : float, int
        Rounding scale and number of summed terms, as in :func:`kppca._linalg.full_spectrum`.
    max_rank : int, optional
        Structural rank bound (``n - 1`` for a centered Gram matrix).
    random_state : numpy Generator, optional
        Starting vector of the Lanczos iteration (used when ``m`` is large and ``s`` small).

    Returns
    -------
    values : Tensor of shape (s,)
        Descending eigenvalues, all above the rounding level.
    vectors : Tensor of shape (m, s)
        Orthonormal eigenvectors; the largest-magnitude entry of each column is positive.
    rank : int
        Numerical rank of ``A`` (a lower bound ``>= s`` when the partial solver was used).

    Raises
    ------
    ValueError
        When ``A`` is not PSD, or ``s`` exceeds its numerical rank.
    """
    m = A.shape[0]
    if not 1 <= s <= m:
        raise ValueError(f"n_components={s} must be in [1, {m}] for the {what} of size {m}.")
    n_terms = size or m
    if m <= _DENSE_LIMIT or 3 * s >= m:
        spec = full_spectrum(A, what=what, max_rank=max_rank, scale=scale, size=n_terms)
        rank = spec.rank
        if s > rank:
            raise ValueError(
                f"n_components={s} exceeds the numerical rank {rank} of the {what}: only {rank} directions carry "
                f"variance. Use n_components <= {rank}."
            )
        return spec.values[:s].clone(), spec.vectors[:, :s].clone(), rank
    rng = np.random.default_rng(0) if random_state is None else random_state
    values, vectors = eigh_top(A, s, random_state=rng)
    tol = rank_tolerance(float(values[0]), n_terms, A.dtype, scale)
    trace = float(A.diagonal().sum())
    if float(values[0]) <= tol or trace < float(values.sum()) - tol:
        raise ValueError(f"the {what} is numerically zero or not positive semi-definite.")
    rank = int((values > tol).sum())
    if rank < s:
        raise ValueError(
            f"n_components={s} exceeds the numerical rank {rank} of the {what}: only {rank} directions carry "
            f"variance. Use n_components <= {rank}."
        )
    return values, vectors, rank


# ----------------------------------------------------------------------------------------------
# Stiefel route
# ----------------------------------------------------------------------------------------------


@dataclass
class StiefelResult:
    """Outcome of :func:`stiefel_minimize`.

    Attributes
    ----------
    H : Tensor of shape (n, s)
        The final point, ``H^T H = I`` to rounding (detached).
    objective : float
        ``objective(H)``.
    n_iter : int
        Optimiser steps taken.
    converged : bool
        True when the Riemannian gradient norm fell below the tolerance.
    grad_norm : float
        Frobenius norm of the Riemannian gradient at ``H``.
    history : list of float
        Objective value before every step, then the final value (length ``n_iter + 1``).
    """

    H: torch.Tensor
    objective: float
    n_iter: int
    converged: bool
    grad_norm: float
    history: list[float] = field(default_factory=list)


def check_orthonormal(H0: Any, name: str = "H0") -> torch.Tensor:
    """Validate a starting point: a finite floating (n, s) tensor, ``s <= n``, with ``H0^T H0 = I``.

    The tolerance ``10 n eps`` is the rounding error of a Householder QR of an
    ``(n, s)`` matrix, so any basis from :func:`torch.linalg.qr` passes.
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


def random_stiefel(n: int, s: int, *, generator: torch.Generator, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A random point of the Stiefel manifold: QR of a Gaussian (n, s) matrix with ``diag(R) > 0``."""
    G = torch.randn(n, s, generator=generator, dtype=dtype, device=generator.device).to(device)
    Q, R = torch.linalg.qr(G)
    signs = torch.sign(R.diagonal())
    signs[signs == 0] = 1
    return Q * signs


def stiefel_minimize(
    objective: Callable[[torch.Tensor], torch.Tensor],
    H0: torch.Tensor,
    *,
    max_iter: int = 1000,
    tol: float = 1e-8,
    lr: float | None = None,
    method: str = "adam",
    progress: bool = False,
    desc: str = "Stiefel",
) -> StiefelResult:
    """Minimise ``objective(H)`` subject to ``H^T H = I`` with geoopt.

    ``H`` is a ``geoopt.ManifoldParameter`` on ``geoopt.EuclideanStiefel()`` (the Stiefel
    manifold with the embedded metric and a QR retraction, ``O(n s^2)`` per step; the
    canonical ``geoopt.Stiefel()`` retracts with an ``n x n`` Cayley solve, ``O(n^3)``, which
    would cost as much as the eigendecomposition the solver is meant to avoid). Each step
    uses the Riemannian gradient (the Euclidean gradient projected on the tangent space)
    and a retraction, so every iterate stays orthonormal.

    Parameters
    ----------
    objective : callable ``H (n, s) -> scalar Tensor``
        Differentiable in ``H`` (autograd), e.g. ``lambda H: -0.5 * torch.trace(H.T @ K @ H)``.
    H0 : Tensor of shape (n, s)
        Starting point with orthonormal columns (checked; it is not modified).
    max_iter : int, default 1000
        Maximum number of optimiser steps.
    tol : float, default 1e-8
        Stop when ``||grad_R f(H)||_F <= tol * max(1, |f(H)|)``: a tolerance relative
        to the objective's magnitude, so it does not depend on the scale of the data.
    lr : float, optional
        Learning rate of ``"adam"``/``"sgd"`` (default ``0.01`` for Adam; for SGD
        ``1 / ||grad_E f(H0)||_F``, a step the size of the starting point). Ignored by the
        line searches, which choose their own step.
    method : {"adam", "sgd", "line_search", "cg"}, default "adam"
        ``"adam"``: ``geoopt.optim.RiemannianAdam`` (the paper's choice of an Adam-type
        optimiser on the manifold), with the learning rate halved whenever the
        objective rises or the gradient norm has not improved for :data:`STALL_STEPS`
        steps, so that it settles instead of oscillating around the optimum (or along
        a flat direction, such as the null space of a rank-deficient matrix).
        ``"sgd"``: ``geoopt.optim.RiemannianSGD`` with the same safeguard.
        ``"line_search"``: ``geoopt.optim.RiemannianLineSearch``, steepest descent
        with an Armijo line search (full batch, monotone). ``"cg"``: the same line
        search along Fletcher-Reeves conjugate directions (fastest on trace objectives).
    progress : bool, default False
        Show a tqdm progress bar with the objective and gradient norm.
    desc : str, default "Stiefel"
        Label of the progress bar.

    Returns
    -------
    StiefelResult

    Raises
    ------
    ImportError
        When geoopt is not installed (``pip install kppca[rkm]``).
    ValueError
        For a starting point without orthonormal columns, bad options, or a
        non-finite objective.

    Notes
    -----
    Line searches: when the Armijo search finds no decrease along the direction (the
    objective is at rounding level), geoopt issues a ``LineSearchWarning``; it is caught
    here (not passed on), the iteration stops, and ``converged`` tells whether the
    gradient criterion was met. Callers that need a warning on non-convergence issue it
    from ``converged`` (:class:`~kppca.rkm.MultiViewKPCA` raises a scikit-learn
    ``ConvergenceWarning``).

    Deterministic: given ``H0``, the iterates are a fixed sequence of floating-point
    operations (no random numbers are drawn).
    """
    geoopt = import_geoopt()
    H0 = check_orthonormal(H0)
    max_iter = check_scalar(max_iter, "max_iter", [Interval("int", 1, None, closed="left")])
    tol = check_scalar(tol, "tol", [Interval("real", 0, None, closed="left")])
    method = check_scalar(method, "method", [Options(STIEFEL_METHODS)])
    if lr is not None:
        lr = check_scalar(lr, "lr", [Interval("real", 0, None, closed="neither")])
    if not callable(objective):
        raise TypeError(f"objective must be a callable H -> scalar tensor, got {type(objective).__name__}.")

    # The embedded metric with a QR retraction costs O(n s^2) per step; geoopt.Stiefel() (canonical metric)
    # retracts by a Cayley transform with an n x n solve, O(n^3): as costly as the eigendecomposition itself.
    manifold = geoopt.EuclideanStiefel()
    H = geoopt.ManifoldParameter(H0.detach().clone(), manifold=manifold)

    def evaluate() -> torch.Tensor:
        value = objective(H)
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            raise ValueError("objective(H) must return a scalar torch.Tensor.")
        if not bool(torch.isfinite(value.detach())):
            raise ValueError(f"objective(H) is not finite ({float(value.detach()):.3g}).")
        return value.reshape(())

    def value_and_grad() -> tuple[float, float, torch.Tensor]:
        H.grad = None
        value = evaluate()
        value.backward()
        egrad = H.grad.detach()
        rgrad = manifold.egrad2rgrad(H.detach(), egrad)
        return float(value.detach()), float(torch.linalg.norm(rgrad)), egrad

    line_search = method in ("line_search", "cg")
    if method == "adam":
        step_size = 1e-2 if lr is None else lr
        opt = geoopt.optim.RiemannianAdam([H], lr=step_size)
    elif method == "sgd":
        step_size = lr
        opt = None
    else:
        cg = "steepest" if method == "line_search" else "fr"
        opt = geoopt.optim.RiemannianLineSearch([H], line_search_method="armijo", cg_method=cg)
        try:
            from geoopt.optim.rlinesearch import LineSearchWarning as line_search_warning
        except ImportError:  # pragma: no cover - older/newer geoopt layouts

            class line_search_warning(RuntimeWarning):  # noqa: N801 - matches nothing
                pass

    def closure() -> torch.Tensor:
        opt.zero_grad()
        value = objective(H).reshape(())
        if not bool(torch.isfinite(value.detach())):
            # A trial step of the line search left the valid region (e.g. a retraction of a huge step):
            # report +inf so that the search backs off, instead of failing.
            return torch.tensor(math.inf, dtype=H.dtype)
        value.backward()
        # Detached: geoopt hands the value to scipy's Armijo search, which calls numpy() on it.
        return value.detach()

    bar = None
    if progress:
        from .._progress import tqdm

        bar = tqdm(total=max_iter, desc=desc, leave=False)
    history: list[float] = []
    grad_norms: list[float] = []  # since the last change of step size
    best = (math.inf, H.detach().clone())
    converged = False
    n_iter = 0
    try:
        for n_iter in range(max_iter + 1):
            f, gnorm, egrad = value_and_grad()
            history.append(f)
            grad_norms.append(gnorm)
            if f < best[0]:
                best = (f, H.detach().clone())
            if gnorm <= tol * max(1.0, abs(f)):
                converged = True
                break
            if n_iter == max_iter:
                break
            if method == "sgd" and opt is None:
                step_size = step_size if step_size is not None else 1.0 / max(float(torch.linalg.norm(egrad)), 1e-300)
                opt = geoopt.optim.RiemannianSGD([H], lr=step_size)
            rounding = 100 * torch.finfo(H.dtype).eps * max(1.0, abs(f))
            rose = len(history) > 1 and f > history[-2] + rounding
            # A step can also oscillate along a direction where the objective is flat (the null space of a
            # rank-deficient matrix: a component flips sign each step at lr = 2 / lambda_1) without raising f:
            # there only the gradient norm shows it, by not improving over a window of steps.
            stalled = len(grad_norms) > STALL_STEPS and min(grad_norms[-STALL_STEPS:]) >= min(grad_norms[:-STALL_STEPS])
            if not line_search and (rose or stalled):
                # The step overshoots the optimum: halve it (monotone safeguard).
                for group in opt.param_groups:
                    group["lr"] *= 0.5
                grad_norms = grad_norms[-1:]
            if line_search:
                with warnings.catch_warnings():
                    # geoopt warns (LineSearchWarning) when the Armijo search finds no decrease; that is
                    # handled just below (we stop at rounding level and report `converged`), so it is
                    # not passed on to the caller.
                    warnings.filterwarnings("ignore", category=line_search_warning)
                    opt.step(closure)
                if not opt.step_size_history or opt.step_size_history[-1] in (None, 0):
                    # No decrease found along the direction: we are at rounding level.
                    f, gnorm, _ = value_and_grad()
                    history.append(f)
                    n_iter += 1
                    break
            else:
                opt.step()
            if bar is not None:
                bar.update(1)
                bar.set_postfix(objective=f"{f:.6g}", grad=f"{gnorm:.2e}")
    finally:
        if bar is not None:
            bar.close()
    H_final = H.detach().clone()
    if history[-1] > best[0] + 100 * torch.finfo(H.dtype).eps * max(1.0, abs(best[0])):
        # Adam/SGD are not monotone; return the best point seen and its gradient.
        with torch.no_grad():
            H.copy_(best[1])
        f, gnorm, _ = value_and_grad()
        H_final = H.detach().clone()
        converged = gnorm <= tol * max(1.0, abs(f))
    return StiefelResult(
        H=H_final, objective=float(f), n_iter=int(n_iter), converged=bool(converged), grad_norm=float(gnorm),
        history=history,
    )
