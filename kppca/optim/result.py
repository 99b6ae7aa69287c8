"""The one result type of :func:`kppca.optim.minimize`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from .._param_validation import Integral, Interval, Real
from ..io import DictOf, ListOf, TensorSpec, register
from ..io.record import constrained

_REAL = Interval(Real, None, None)  # finite
_NONNEG_INT = Interval(Integral, 0, None, closed="left")


@register(name="kppca.optim.OptimizeResult")
@dataclass
class OptimizeResult:
    """Outcome of :func:`kppca.optim.minimize` (every method).

    Attributes
    ----------
    x : Tensor or list of Tensor
        The final point (detached), structured as ``x0``.
    fun : float
        Objective at ``x``.
    n_iter : int
        Iterations (accepted steps) taken.
    converged : bool
        True when the method's stopping criterion was met.
    grad_norm : float
        Norm of the (Riemannian, projected) gradient at ``x``, NaN where the method has none.
    history : list of float
        Objective at the start and after every iteration.
    params : list of Tensor
        Unconstrained parameters optimised beside ``H`` (method ``"pgd"``), else empty.
    step_sizes : list of float
        Accepted step sizes (line-search methods).
    grad_history : list of float
        Gradient norm after every iteration (``"lbfgs"``).
    message : str
        Why the run stopped.
    method : str
    state : dict or None
        Optimiser state to pass back as ``state=`` (``"adam"`` without a manifold).
    """

    x: Any = constrained(TensorSpec(ndim=2), ListOf([TensorSpec()]))
    fun: float = constrained(_REAL)
    n_iter: int = constrained(_NONNEG_INT)
    converged: bool = constrained("boolean")
    grad_norm: float = constrained(Interval(Real, 0, None, closed="left"), default=math.nan)  # files: Stiefel runs
    history: list[float] = constrained(ListOf([_REAL]), default_factory=list)
    params: list[torch.Tensor] = constrained(ListOf([TensorSpec()]), None, default_factory=list)
    step_sizes: list[float] = constrained(ListOf([_REAL]), None, default_factory=list)
    grad_history: list[float] = constrained(ListOf([_REAL]), None, default_factory=list)
    message: str = constrained(str, default="")
    method: str = constrained(str, default="")
    state: dict | None = constrained(
        DictOf([str], [TensorSpec("any_float"), _REAL, _NONNEG_INT, "boolean", str, None]), None, default=None)

    @property
    def H(self) -> Any:  # noqa: N802 - the hidden features' name in the RKM papers
        """The final point on the Stiefel manifold (alias of ``x``)."""
        return self.x

    @property
    def objective(self) -> float:
        """Alias of ``fun``."""
        return self.fun

