"""What every kppca estimator shares: input validation, fitted checks, tags, output conversion."""

from .estimator import KernelEstimator, KernelTransformerMixin

__all__ = ["KernelEstimator", "KernelTransformerMixin"]
