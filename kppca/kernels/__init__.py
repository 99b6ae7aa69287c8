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
