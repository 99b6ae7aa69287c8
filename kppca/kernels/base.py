"""Kernel interface: a batched, torch-native ``k(X, Y)``; sums, products and column subsets of kernels.

Kernels are scikit-learn estimators whose ``__init__`` only stores its arguments: parameters are validated on use.
The composite kernels live here with the operators that build them, so no import goes in a circle.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Callable, NamedTuple

import scipy.sparse
import torch
from sklearn.base import BaseEstimator

from .._param_validation import check_sequence, validate_parameter_constraints
from .._validation import ArrayLike, as_input_tensor, as_tensor, to_output


#: Largest explicit feature dimension formed to count the rank of a Gram matrix exactly; beyond it, numerically.
MAX_EXPLICIT_FEATURES = 4096


class Kernel(BaseEstimator):
    """Base class of positive semi-definite kernels.

    Subclasses implement :meth:`gram` on tensors (calling :meth:`_check_params` first); ``kernel(X, Y)``
    accepts numpy arrays or tensors and returns the same type as ``X``.
    """

    #: How model files treat instances of unregistered subclasses: user code, stored only by name.
    _model_file_kind = "kernel"

    #: True when the Gram matrix of distinct points is always positive definite (RBF, Laplacian): its
    #: rank is then known without a numerical test (:func:`kppca.kernels.rank.structural_rank`).
    strictly_positive_definite: bool = False

    def explicit_features(self, X: torch.Tensor) -> torch.Tensor | None:
        """The feature vectors ``phi(x)`` (n, d) when the kernel has a cheap explicit finite map (exact ranks), else None."""
        return None

    #: What each hyper-parameter may be (:mod:`kppca._param_validation`), with optional advice per parameter.
    _parameter_constraints: dict[str, list[Any]] = {}
    _parameter_hints: dict[str, str] = {}

    def _check_params(self) -> None:
        """Validate the hyper-parameters against ``_parameter_constraints`` on every use; raise naming the bad one."""
        if self._parameter_constraints:
            validate_parameter_constraints(self._parameter_constraints, self.get_params(deep=False),
                                           type(self).__name__, self._parameter_hints)

    @property
    def is_resolved(self) -> bool:
        """False while a parameter is a rule to be resolved from data (see :meth:`resolve`)."""
        return True

    def resolve(self, X: ArrayLike) -> "Kernel":
        """This kernel with its data-derived parameters computed on the training data ``X``.

        Parameters
        ----------
        X : array-like of shape (n, D)
            The training inputs (as the estimator's ``fit`` sees them).

        Returns
        -------
        Kernel
            ``self`` when nothing is to be resolved, else a new kernel with numbers in place of the
            rules (``RBF("median").resolve(X)`` is ``RBF(<median distance of X>)``).
        """
        self._check_params()
        return self

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

    def against(self, Y: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
        """``X -> gram(X, Y)`` (bitwise) for a ``Y`` (m, D) that many calls share (a fitted model's training set).

        A kernel computes its share that depends on ``Y`` alone once here, not per row block.
        """
        return lambda X: self.gram(X, Y)

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        """``k(x_i, x_i)`` for every row, shape (n,) (here by small diagonal blocks; subclasses use closed forms)."""
        self._check_params()
        block = 512
        chunks = [X[i : i + block] for i in range(0, X.shape[0], block)]
        parts = [self.gram(chunk, chunk).diagonal() for chunk in chunks]  # one object: Y is X
        return torch.cat(parts) if parts else X.new_zeros(0)

    def __call__(self, X: ArrayLike, Y: ArrayLike | None = None) -> torch.Tensor:
        """``k(X, Y)`` of shape (n, m) (``Y = X`` when omitted); numpy (or scipy.sparse) in, numpy out."""
        self._check_params()
        Xt, numpy_out = as_input_tensor(X)
        # scipy.sparse Y is densified as X is (a kernel matrix is dense whatever the inputs).
        Y = Y.toarray() if scipy.sparse.issparse(Y) else Y
        Yt = Xt if Y is None else as_tensor(Y, "Y", dtype=Xt.dtype, device=Xt.device)
        if Yt.shape[1] != Xt.shape[1]:
            raise ValueError(f"X has {Xt.shape[1]} features but Y has {Yt.shape[1]}; they must match.")
        return to_output(self.gram(Xt, Yt), numpy_out)

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        # All constructor parameters, not only the non-default ones (scikit-learn's default).
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({params})"

    def __add__(self, other: Any) -> Kernel:
        """``k1 + k2``: the :class:`SumKernel` (nested sums are flattened)."""
        return self._combined(other, SumKernel)

    def __mul__(self, other: Any) -> Kernel:
        """``k1 * k2``: the elementwise :class:`ProductKernel` (flattened)."""
        return self._combined(other, ProductKernel)

    def _combined(self, other: Any, composite: type[_Composite]) -> Kernel:
        if not isinstance(other, Kernel):
            return NotImplemented
        return composite([part for k in (self, other) for part in (k.kernels if type(k) is composite else [k])])


class CallableKernel(Kernel):
    """Wrap a user function ``fn(X, Y) -> (n, m)`` as a :class:`Kernel`.

    ``fn`` receives torch tensors and may return a tensor or a numpy array. It is not assumed PSD: the
    models check the spectrum and raise. A model with a callable kernel cannot be saved with its
    kernel (code is never stored in model files; see :meth:`kppca.DualPPCA.save`).

    Parameters
    ----------
    fn : callable ``fn(X (n, D), Y (m, D)) -> (n, m)``
    """

    def __init__(self, fn: Callable[[torch.Tensor, torch.Tensor], ArrayLike]):
        self.fn = fn

    _parameter_constraints = {"fn": [callable]}
    _parameter_hints = {"fn": "A kernel must be a Kernel or a callable fn(X, Y) returning the (n, m) Gram matrix."}

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        self._check_params()
        out = torch.as_tensor(self.fn(X, Y), dtype=X.dtype, device=X.device)
        if out.shape != (X.shape[0], Y.shape[0]):
            raise ValueError(
                f"the kernel function returned shape {tuple(out.shape)}; expected "
                f"({X.shape[0]}, {Y.shape[0]}) for inputs with {X.shape[0]} and {Y.shape[0]} rows."
            )
        return out

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        return f"CallableKernel({getattr(self.fn, '__name__', repr(self.fn))})"


class _Combination(NamedTuple):
    """How a composite kernel combines its parts."""

    symbol: str  # between the parts in the repr
    definite_if: Callable[[Iterable[bool]], bool]  # any / all of the parts strictly positive definite
    combine: Callable[..., torch.Tensor]  # two Gram matrices, in place with out=
    reduce: Callable[..., torch.Tensor]  # stacked diagonals, along dimension 0


class _Composite(Kernel):
    """A kernel built from a list of kernels; subclasses set ``_how`` and ``_join_features(parts, X)``."""

    _how: _Combination

    def __init__(self, kernels: Sequence[Kernel]):
        self.kernels = kernels

    def _check_params(self) -> None:
        for k in check_sequence(self.kernels, f"{type(self).__name__}: kernels", [Kernel]):
            k._check_params()

    @property
    def is_resolved(self) -> bool:
        return all(k.is_resolved for k in self.kernels)

    def resolve(self, X: ArrayLike) -> Kernel:
        self._check_params()
        if self.is_resolved:
            return self
        return type(self)([k.resolve(X) for k in self.kernels])

    @property
    def strictly_positive_definite(self) -> bool:
        return self._how.definite_if(getattr(k, "strictly_positive_definite", False) for k in self.kernels)

    def explicit_features(self, X: torch.Tensor) -> torch.Tensor | None:
        parts = [k.explicit_features(X) for k in self.kernels]
        return None if any(P is None for P in parts) else self._join_features(parts, X)

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        self._check_params()
        # Y passed as it is: with ``Y is X``, stationary kernels make the Gram diagonal exact.
        parts = [k.gram(X, Y) for k in self.kernels]
        out = parts[0].clone()
        for P in parts[1:]:
            self._how.combine(out, P, out=out)
        return out

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        self._check_params()
        return self._how.reduce(torch.stack([k.diag(X) for k in self.kernels]), 0)

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        return "(" + f" {self._how.symbol} ".join(repr(k) for k in self.kernels) + ")"


class SumKernel(_Composite):
    """``k(x, y) = sum_j k_j(x, y)``, PSD; build it with ``k1 + k2``.

    Parameters
    ----------
    kernels : list of Kernel
    """

    # K_1 + K_2 with K_1 positive definite and K_2 positive semi-definite is positive definite.
    _how = _Combination("+", any, torch.add, torch.sum)

    def _join_features(self, parts: list[torch.Tensor], X: torch.Tensor) -> torch.Tensor | None:
        # The concatenated maps (a dimension count alone would overstate the rank of k + k).
        return torch.cat(parts, dim=1)


class ProductKernel(_Composite):
    """``k(x, y) = prod_j k_j(x, y)`` (elementwise, PSD by the Schur product theorem); build it with ``k1 * k2``.

    Parameters
    ----------
    kernels : list of Kernel
    """

    # Schur product theorem: the elementwise product of positive definite matrices is positive definite.
    _how = _Combination("*", all, torch.mul, torch.prod)

    def _join_features(self, parts: list[torch.Tensor], X: torch.Tensor) -> torch.Tensor | None:
        # The row-wise Kronecker product of the maps, while it stays small.
        if math.prod(P.shape[1] for P in parts) > MAX_EXPLICIT_FEATURES:
            return None
        out = parts[0]
        for P in parts[1:]:
            out = (out[:, :, None] * P[:, None, :]).reshape(X.shape[0], -1)
        return out


class ColumnKernel(Kernel):
    """A kernel on a subset of the input columns: ``k(x, y) = base(x[columns], y[columns])``.

    With views side by side, the multi-view kernel is ``ColumnKernel(k_1, cols_1) + ... + ColumnKernel(k_V, cols_V)``.

    Parameters
    ----------
    base : Kernel
    columns : slice or sequence of int
    """

    def __init__(self, base: Kernel, columns: slice | Sequence[int]):
        self.base = base
        self.columns = columns

    _parameter_constraints = {"base": [Kernel], "columns": [slice, list, tuple, range]}

    def _check_params(self) -> None:
        super()._check_params()
        self.base._check_params()

    @property
    def is_resolved(self) -> bool:
        return self.base.is_resolved

    def resolve(self, X: ArrayLike) -> Kernel:
        """Resolve ``base`` on the selected columns of ``X`` (a view's own scale)."""
        self._check_params()
        if self.is_resolved:
            return self
        Xt = X if isinstance(X, torch.Tensor) else as_tensor(X, "X")
        return type(self)(self.base.resolve(self._select(Xt)), self.columns)

    # Distinct inputs can agree on the selected columns: never strictly positive definite.
    def explicit_features(self, X: torch.Tensor) -> torch.Tensor | None:
        return self.base.explicit_features(self._select(X))

    def _select(self, X: torch.Tensor) -> torch.Tensor:
        cols = self.columns if isinstance(self.columns, slice) else list(self.columns)
        return X[:, cols]

    def gram(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        self._check_params()
        Xs = self._select(X)
        return self.base.gram(Xs, Xs if Y is X else self._select(Y))

    def diag(self, X: torch.Tensor) -> torch.Tensor:
        self._check_params()
        return self.base.diag(self._select(X))
