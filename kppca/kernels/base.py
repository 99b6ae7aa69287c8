"""Kernel interface: a batched, torch-native ``k(X, Y)``.

Kernels are scikit-learn estimators (:class:`sklearn.base.BaseEstimator`):
``__init__`` only stores its arguments, so ``get_params``/``set_params``/``clone``
work and ``DualPPCA(kernel=RBF()).set_params(kernel__bandwidth=2.0)`` or a grid
search over ``kernel__bandwidth`` do what they say. Hyper-parameters are
validated when the kernel is used (:meth:`Kernel._check_params`), not when it is
built, because ``set_params`` bypasses ``__init__``.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from sklearn.base import BaseEstimator

from .._validation import ArrayLike, as_tensor, is_numpy_like, to_output


#: Largest explicit feature dimension a kernel forms to count the rank of a Gram matrix exactly
#: (``explicit_features``); beyond it the rank is counted numerically.
MAX_EXPLICIT_FEATURES = 4096


class Kernel(BaseEstimator):
    """Base class of positive semi-definite kernels.

    Subclasses implement :meth:`gram` on tensors (calling :meth:`_check_params`
    first); ``kernel(X, Y)`` accepts numpy arrays or tensors and returns the
    same type as ``X``.
    """

    #: True when the Gram matrix of *distinct* points is always positive definite (RBF,
    #: Laplacian): the rank of a centered Gram matrix is then known without a numerical test
    #: (see :func:`kppca.kernels.rank.structural_rank`).
    strictly_positive_definite: bool = False

    def explicit_features(self, X: torch.Tensor) -> torch.Tensor | None:
        """The feature vectors ``phi(x)`` (n, d) when the kernel has a cheap explicit finite map, else None.

        The rank of a Gram matrix is then the rank of these vectors, which is decided
        accurately from the ``d x d`` scatter instead of from the Gram matrix.
        """
        return None

    def _check_params(self) -> None:
        """Validate the hyper-parameters; raise ``ValueError``/``TypeError`` naming the bad one.

        Called by :meth:`gram`, :meth:`__call__` and :meth:`diag` of every kernel
        (the parameters may have changed through ``set_params`` since ``__init__``).
        """

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        """Kernel matrix between the rows of two tensors.

        Parameters
        ----------
        X : Tensor of shape (n, D)
        Y : Tensor of shape (m, D)
            Pass the same object as ``X`` for the Gram matrix of one set (the
            stationary kernels then make the diagonal exact).

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
        self._check_params()
        block = 512
        parts = []
        for i in range(0, X.shape[0], block):
            chunk = X[i : i + block]
            parts.append(self.gram(chunk, chunk).diagonal())
        return torch.cat(parts) if parts else X.new_zeros(0)

    def __call__(self, X: ArrayLike, Y: ArrayLike | None = None) -> torch.Tensor:
        self._check_params()
        numpy_out = is_numpy_like(X)
        dtype = X.dtype if isinstance(X, torch.Tensor) and X.is_floating_point() else None
        device = X.device if isinstance(X, torch.Tensor) else None
        Xt = as_tensor(X, "X", dtype=dtype, device=device)
        Yt = Xt if Y is None else as_tensor(Y, "Y", dtype=Xt.dtype, device=Xt.device)
        if Yt.shape[1] != Xt.shape[1]:
            raise ValueError(f"X has {Xt.shape[1]} features but Y has {Yt.shape[1]}; they must match.")
        return to_output(self.gram(Xt, Yt), numpy_out)

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        # All constructor parameters, not only the non-default ones (scikit-learn's default).
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({params})"

    def __add__(self, other: Any) -> Kernel:
        """``k1 + k2``: the :class:`~kppca.kernels.composite.SumKernel` (nested sums are flattened)."""
        from .composite import SumKernel

        if not isinstance(other, Kernel):
            return NotImplemented
        parts = [*(self.kernels if type(self) is SumKernel else [self]), *(other.kernels if type(other) is SumKernel else [other])]
        return SumKernel(parts)

    def __mul__(self, other: Any) -> Kernel:
        """``k1 * k2``: the elementwise :class:`~kppca.kernels.composite.ProductKernel` (flattened)."""
        from .composite import ProductKernel

        if not isinstance(other, Kernel):
            return NotImplemented
        parts = [
            *(self.kernels if type(self) is ProductKernel else [self]),
            *(other.kernels if type(other) is ProductKernel else [other]),
        ]
        return ProductKernel(parts)


class CallableKernel(Kernel):
    """Wrap a user function ``fn(X, Y) -> (n, m)`` as a :class:`Kernel`.

    The function receives torch tensors and may return a tensor or a numpy
    array. Positive semi-definiteness is not assumed: the models check the
    spectrum of the Gram matrix and raise if it is not PSD. ``fn`` is the
    (only) scikit-learn parameter. A model with a callable kernel cannot be
    saved with its kernel (code is never stored in model files): see
    :meth:`kppca.DualPPCA.save`.

    Parameters
    ----------
    fn : callable ``fn(X (n, D), Y (m, D)) -> (n, m)``
    """

    def __init__(self, fn: Callable[[torch.Tensor, torch.Tensor], ArrayLike]):
        self.fn = fn

    def _check_params(self) -> None:
        if not callable(self.fn):
            raise TypeError(f"kernel must be a Kernel or a callable fn(X, Y), got {type(self.fn).__name__}.")

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        self._check_params()
        out = self.fn(X, Y)
        out = torch.as_tensor(out, dtype=X.dtype, device=X.device)
        if out.shape != (X.shape[0], Y.shape[0]):
            raise ValueError(
                f"the kernel function returned shape {tuple(out.shape)}; expected "
                f"({X.shape[0]}, {Y.shape[0]}) for inputs with {X.shape[0]} and {Y.shape[0]} rows."
            )
        return out

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        return f"CallableKernel({getattr(self.fn, '__name__', repr(self.fn))})"


def __getattr__(name: str) -> Any:
    # ``as_kernel`` moved to .registry (which imports the standard kernels); this lazy
    # alias keeps ``from kppca.kernels.base import as_kernel`` working without the
    # import cycle base <-> standard.
    if name == "as_kernel":
        from .registry import as_kernel

        return as_kernel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
