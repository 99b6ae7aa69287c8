"""Kernels (batched, torch-native) and the centering of Gram matrices.

All kernels map ``(X (n, D), Y (m, D)) -> (n, m)``; they accept numpy arrays or
tensors and compute in float64 by default.
"""

from .base import CallableKernel, Kernel
from .centered_gram import CenteredGram
from .centering import KernelCenterer
from .composite import ColumnKernel, ProductKernel, SumKernel
from .registry import KERNELS, as_kernel
from .standard import RBF, Laplacian, Linear, Polynomial, squared_distances

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
]
