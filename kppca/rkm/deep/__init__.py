"""Deep RKMs: level objects, the regression estimator with its solvers, and the deep RKM classifier.

* :mod:`.levels` -- :class:`Level`, :class:`LSSVMLevel`, :class:`KPCALevel`;
* :mod:`.chain` -- the forward chain of the levels (eqs. 4.9, 5.4);
* :mod:`.solvers` -- the solver registry (``DeepRKM(solver=name)``);
* :mod:`.levelwise`, :mod:`.reduced_set`, :mod:`.feedforward` -- the paper's §5.1, §5.2 and §5.3 solvers;
* :mod:`.objective` -- Table 1's objective variants (``DeepRKM(objective=...)``), combined once for the primal solvers;
* :mod:`.estimator` -- :class:`DeepRKM`;
* :mod:`.stacked` -- :class:`StackedKPCA`, KPCA levels under one orthonormality constraint;
* :mod:`.classifier` -- :class:`DeepRKMClassifier` (stacked KPCA levels), with :mod:`.mlp_head` and
  :mod:`.binary_model` (:class:`BinaryDeepModel`, the fitted state of one binary deep model);
* :mod:`.lssvm_classifier` -- :class:`DeepLSSVMClassifier` (a :class:`DeepRKM` with the LS-SVM first).

A new level type subclasses :class:`Level` (its methods are all a solver calls); a new solver
module calls :func:`register_solver` on import and is reached by ``DeepRKM(solver=name)``.
"""

from .classifier import DEFAULT_SMOOTHER_GRID, BinaryDeepModel, DeepRKMClassifier
from .estimator import DeepRKM, working_dtype
from .levels import KPCALevel, Level, LSSVMLevel
from .lssvm_classifier import DeepLSSVMClassifier
from .solvers import SOLVERS, DeepFit, get_solver, register_solver

__all__ = [
    "DEFAULT_SMOOTHER_GRID",
    "BinaryDeepModel",
    "DeepFit",
    "DeepLSSVMClassifier",
    "DeepRKM",
    "DeepRKMClassifier",
    "KPCALevel",
    "LSSVMLevel",
    "Level",
    "SOLVERS",
    "get_solver",
    "register_solver",
    "working_dtype",
]
