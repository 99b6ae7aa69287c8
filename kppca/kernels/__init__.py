"""Kernels (batched, torch-native) and the centering of Gram matrices.

All kernels map ``(X (n, D), Y (m, D)) -> (n, m)`` on numpy arrays or tensors (float64 by default). The stationary
kernels default to a width resolved from the training data, by :meth:`Kernel.resolve` in the estimators' ``fit``.
"""

from .bandwidth import BANDWIDTH_RULES, median_heuristic_bandwidth, resolve_bandwidth
from .base import CallableKernel, ColumnKernel, Kernel, ProductKernel, SumKernel
from .centered_gram import CenteredGram
from .distances import squared_distances
from .gram import KernelCenterer
from .standard import KERNELS, RBF, Laplacian, Linear, Polynomial, as_kernel
from ..io.registry import register, set_custom_kernel_wrapper

# Model files name kernels by these keys (never by an import path); a user's callable is supplied at load.
for _name, _cls in {**KERNELS, "sum": SumKernel, "product": ProductKernel, "column": ColumnKernel}.items():
    register(_cls, name=f"kernel:{_name}", component=True)
register(KernelCenterer, name="kernel_centerer", component=True)
set_custom_kernel_wrapper(as_kernel)

__all__ = [
    "Kernel",
    "CallableKernel",
    "as_kernel",
    "KERNELS",
    "Linear",
    "RBF",
    "Polynomial",
    "Laplacian",
    "KernelCenterer",
    "CenteredGram",
    "SumKernel",
    "ProductKernel",
    "ColumnKernel",
    "squared_distances",
    "BANDWIDTH_RULES",
    "median_heuristic_bandwidth",
    "resolve_bandwidth",
]
