"""What every kppca estimator shares: input validation, fitted checks, tags, output conversion."""

from .estimator import KernelEstimator, KernelTransformerMixin, detach_target

__all__ = ["KernelEstimator", "KernelTransformerMixin", "detach_target"]
