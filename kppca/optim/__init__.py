"""One optimisation layer: :func:`minimize` with its methods, one result type, one random Stiefel start.

* on the Stiefel manifold ``{H : H^T H = I}``: geoopt's Riemannian SGD/Adam, steepest
  descent and conjugate gradient with Armijo line searches, and the projected gradient
  with Armijo backtracking (:func:`projected_gradient`);
* unconstrained: L-BFGS with a non-increasing record, and Adam.

Used by the multi-view KPCA (Stiefel solver), the deep RKM classifier (Stiefel) and the
reduced-set deep RKM (L-BFGS). geoopt (``pip install kppca[rkm]``) is imported only by the
Riemannian methods.
"""

from .minimize import METHODS, STIEFEL_METHODS, minimize
from .projected import projected_gradient
from .result import OptimizeResult
from .stiefel import check_orthonormal, project_stiefel, random_stiefel

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
