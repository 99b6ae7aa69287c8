"""Kernel interface: a batched, torch-native ``k(X, Y)``."""

from __future__ import annotations

from typing import Callable

import torch

from .._validation import ArrayLike, as_tensor, is_numpy_like, to_output


class Kernel:
    """Base class of positive semi-definite kernels.

    Subclasses implement :meth:`gram` on tensors; ``kernel(X, Y)`` accepts numpy
    arrays or tensors and returns the same type as ``X``.
    """

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        """Kernel matrix between the rows of two tensors.

        Parameters
        ----------
        X : Tensor of shape (n, D)
        Y : Tensor of shape (m, D)

        Returns
        -------
        Tensor of shape (n, m)
        """
        raise NotImplementedError

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        """``k(x_i, x_i)`` for every row, shape (n,).

        The generic version takes the diagonals of small diagonal blocks, so it
        costs ``O(n * block)`` kernel evaluations; subclasses override it when a
        closed form exists.
        """
        block = 512
        parts = [self.gram(X[i : i + block], X[i : i + block]).diagonal() for i in range(0, X.shape[0], block)]
        return torch.cat(parts) if parts else X.new_zeros(0)

    def __call__(self, X: ArrayLike, Y: ArrayLike | None = None) -> torch.Tensor:
        numpy_out = is_numpy_like(X)
        dtype = X.dtype if isinstance(X, torch.Tensor) and X.is_floating_point() else None
        device = X.device if isinstance(X, torch.Tensor) else None
        Xt = as_tensor(X, "X", dtype=dtype, device=device)
        Yt = Xt if Y is None else as_tensor(Y, "Y", dtype=Xt.dtype, device=Xt.device)
        if Yt.shape[1] != Xt.shape[1]:
            raise ValueError(f"X has {Xt.shape[1]} features but Y has {Yt.shape[1]}; they must match.")
        return to_output(self.gram(Xt, Yt), numpy_out)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"


class CallableKernel(Kernel):
    """Wrap a user function ``fn(X, Y) -> (n, m)`` as a :class:`Kernel`.

    The function receives torch tensors and may return a tensor or a numpy
    array. Positive semi-definiteness is not assumed: the models check the
    spectrum of the Gram matrix and raise if it is not PSD.
    """

    def __init__(self, fn: Callable[[torch.Tensor, torch.Tensor], ArrayLike]):
        if not callable(fn):
            raise TypeError(f"kernel must be a Kernel or a callable fn(X, Y), got {type(fn).__name__}.")
        self.fn = fn

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        out = self.fn(X, Y)
        out = torch.as_tensor(out, dtype=X.dtype, device=X.device)
        if out.shape != (X.shape[0], Y.shape[0]):
            raise ValueError(
                f"the kernel function returned shape {tuple(out.shape)}; expected "
                f"({X.shape[0]}, {Y.shape[0]}) for inputs with {X.shape[0]} and {Y.shape[0]} rows."
            )
        return out

    def __repr__(self) -> str:
        return f"CallableKernel({getattr(self.fn, '__name__', repr(self.fn))})"


def as_kernel(kernel: Kernel | Callable | str | None) -> Kernel:
    """Resolve the ``kernel`` argument of the models.

    Accepts a :class:`Kernel`, a callable ``fn(X, Y)``, the strings ``"linear"``
    / ``"rbf"`` / ``"laplacian"`` / ``"polynomial"`` (default parameters) or None (linear).
    """
    from .standard import RBF, Laplacian, Linear, Polynomial

    if kernel is None:
        return Linear()
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        named = {"linear": Linear, "rbf": RBF, "laplacian": Laplacian, "polynomial": Polynomial}
        if kernel.lower() not in named:
            raise ValueError(f"kernel={kernel!r} is unknown; use one of {sorted(named)} or a Kernel instance.")
        return named[kernel.lower()]()
    return CallableKernel(kernel)
