"""Kernels by name, for ``kernel="rbf"`` and for model files.

A model file names its kernel class by a key of :data:`KERNELS` (never by an import path), so loading
can only build these classes.
"""

from __future__ import annotations

from typing import Callable

from .base import CallableKernel, Kernel
from .polynomial import Polynomial
from .standard import RBF, Laplacian, Linear

#: Name -> kernel class, for ``kernel="name"`` and for model files.
KERNELS: dict[str, type[Kernel]] = {"linear": Linear, "rbf": RBF, "laplacian": Laplacian, "polynomial": Polynomial}


def as_kernel(kernel: Kernel | Callable | str | None) -> Kernel:
    """Resolve the ``kernel`` argument of the models.

    Parameters
    ----------
    kernel : Kernel, callable ``fn(X, Y)``, str or None
        A :class:`Kernel` as is; a name of :data:`KERNELS` (case-insensitive): that kernel with
        default parameters; None: :class:`Linear`; a callable: wrapped in :class:`CallableKernel`.

    Returns
    -------
    Kernel
    """
    if kernel is None:
        return Linear()
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        if kernel.lower() not in KERNELS:
            raise ValueError(f"kernel={kernel!r} is unknown; use one of {sorted(KERNELS)} or a Kernel instance.")
        return KERNELS[kernel.lower()]()
    if not callable(kernel):
        raise TypeError(f"kernel must be a Kernel or a callable fn(X, Y), got {type(kernel).__name__}.")
    return CallableKernel(kernel)
