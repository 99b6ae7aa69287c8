"""Deep RKMs: the level objects and the estimators that compose them (extending them: docs/architecture.md)."""

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
