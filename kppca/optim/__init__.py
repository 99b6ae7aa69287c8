"""One optimisation layer: :func:`minimize` on the Stiefel manifold or unconstrained, one result type."""

from .minimize import METHODS, STIEFEL_METHODS, minimize
from .result import OptimizeResult
from .stiefel import check_orthonormal, project_stiefel, projected_gradient, random_stiefel

__all__ = [
    "METHODS",
    "STIEFEL_METHODS",
    "OptimizeResult",
    "check_orthonormal",
    "minimize",
    "project_stiefel",
    "projected_gradient",
    "random_stiefel",
]
