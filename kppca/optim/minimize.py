"""One entry point for the package's iterative optimisation: :func:`minimize`."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from sklearn.exceptions import ConvergenceWarning

from .._param_validation import Integral, Interval, Real, StrOptions, check_scalar
from .euclidean import adam, lbfgs
from .projected import projected_gradient
from .result import OptimizeResult
from .riemannian import GEOOPT_METHODS, geoopt_minimize
from .stiefel import check_orthonormal

__all__ = ["METHODS", "STIEFEL_METHODS", "minimize"]

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
        For a geoopt method when geoopt is not installed (``pip install kppca[rkm]``).
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
