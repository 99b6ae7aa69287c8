"""What every kppca estimator shares: input validation, fitted checks, tags, output conversion."""

from .estimator import DEVICE_CONSTRAINTS, RUNTIME_CONSTRAINTS, KernelEstimator, KernelTransformerMixin, detach_target

__all__ = ["DEVICE_CONSTRAINTS", "RUNTIME_CONSTRAINTS", "KernelEstimator", "KernelTransformerMixin", "detach_target"]
