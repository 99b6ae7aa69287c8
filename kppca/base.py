"""The one estimator scaffold: the fit preamble, the fitted check, tags and output conversion.

Constructors only store their arguments (``self._store_params(locals())``); ``fit`` is wrapped by
:func:`~kppca._param_validation.fit_context`, which checks them against ``_parameter_constraints``.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import numpy as np
import scipy.sparse
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._cache import LazyCache
from ._param_validation import device_from_spec
from .io import SavableMixin
from .io.record import HasFittedState
from ._validation import (
    ArrayLike,
    as_numpy,
    as_tensor,
    check_feature_names,
    check_new_input,
    is_numpy_like,
    resolve_dtype,
    to_output,
)

__all__ = [
    "DEVICE_CONSTRAINTS",
    "RUNTIME_CONSTRAINTS",
    "KernelEstimator",
    "KernelTransformerMixin",
    "detach_target",
]

#: Constraints of ``dtype`` / ``device``, spread (``**``) into every estimator's ``_parameter_constraints``.
DEVICE_CONSTRAINTS: dict[str, list[Any]] = {"dtype": ["dtype"], "device": ["device"]}
#: :data:`DEVICE_CONSTRAINTS` plus the seed and the progress bar, for estimators with random steps.
RUNTIME_CONSTRAINTS: dict[str, list[Any]] = {
    "random_state": ["random_state"],
    "progress": ["boolean"],
    **DEVICE_CONSTRAINTS,
}

_UNSET: Any = object()


def _warn_column_vector() -> None:
    warnings.warn(
        "A column-vector y was passed when a 1d array was expected; it is raveled to shape (n_samples,).",
        DataConversionWarning,
        stacklevel=4,  # the estimator's fit, through _validate_fit_input and _encode_classes or _continuous_target
    )


class KernelEstimator(HasFittedState, SavableMixin, BaseEstimator):
    """Base class of kppca's estimators (a scikit-learn ``BaseEstimator``)."""

    #: The attribute whose presence means "fitted" (a subclass may set another).
    _fitted_marker: str = "n_features_in_"
    #: Whether ``X`` may be a scipy.sparse matrix or array (densified on entry, see :meth:`_densify`).
    _accepts_sparse: bool = False

    def _store_params(self, arguments: dict[str, Any]) -> None:
        """Set each constructor argument unchanged, as scikit-learn's ``get_params``/``clone`` expect."""
        for name, value in arguments.items():
            # ``__class__`` is a local of methods that call ``super()``: not a parameter.
            if name not in ("self", "__class__"):
                setattr(self, name, value)

    @property
    def _cache(self) -> LazyCache:
        """Values derived from the fitted state on first use: the record's (the draft's during a fit)."""
        values = self.__dict__
        cache = values.get("_draft_cache_")
        if cache is None and values.get("state_") is not None:
            cache = values["state_"]._derived
        return LazyCache() if cache is None else cache  # unfitted: nothing worth keeping

    def _check_fit_params(self) -> None:
        """Rules that relate several hyper-parameters (each one alone is checked by ``fit_context``); a hook."""

    def _begin_fit(self, X: Any) -> None:
        """The fit preamble: parameter relations, dtype, device, whether outputs are numpy."""
        self._check_fit_params()
        self._dtype = resolve_dtype(getattr(self, "dtype", None), like=X)  # float32 input stays float32
        self._device = device_from_spec(getattr(self, "device", None))
        self._numpy_fit_ = is_numpy_like(X)

    def _validate_fit_input(
        self,
        X: ArrayLike,
        y: ArrayLike = None,
        *,
        min_samples: int = 2,
        target: str | None = None,
        multi_output: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Validate the training data and record its metadata; ``(Xt, yt)``, ``Xt`` (N, D) in the fit dtype and device.

        ``target``: None (``yt`` is None), ``"classes"`` (sets ``classes_``; ``yt`` the long codes (N,)) or
        ``"continuous"`` (``yt`` float, (N,), or (N, p) with ``multi_output``). A column-vector ``y`` is
        raveled with a ``DataConversionWarning``.
        """
        if target not in (None, "classes", "continuous"):
            raise ValueError(f"target must be None, 'classes' or 'continuous', got {target!r}.")
        if target is not None and y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        X = self._densify(X)
        self._begin_fit(X)
        check_feature_names(self, X, reset=True)
        Xt = as_tensor(X, "X", dtype=self._dtype, device=self._device, min_samples=min_samples)
        self.n_features_in_ = Xt.shape[1]
        if target is None:
            return Xt, None
        yt = self._encode_classes(y) if target == "classes" else self._continuous_target(y, multi_output)
        if yt.shape[0] != Xt.shape[0]:
            raise ValueError(f"X has {Xt.shape[0]} rows but y has {yt.shape[0]}; they must match.")
        return Xt, yt

    def _encode_classes(self, y: ArrayLike) -> torch.Tensor:
        """Set ``classes_`` and return the integer code of each label (a long tensor on ``_device``)."""
        y_arr = as_numpy(y)  # a tensor, even one that requires grad, is detached first
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            _warn_column_vector()
            y_arr = y_arr.ravel()
        if y_arr.ndim != 1:
            raise ValueError(f"y must be 1-D class labels, got shape {y_arr.shape}.")
        if y_arr.dtype.kind == "f" and not bool(np.isfinite(y_arr).all()):
            raise ValueError("y (the class labels) contains NaN or infinity; remove those samples or impute a label.")
        if y_arr.dtype == object and any(isinstance(v, float) and v != v for v in y_arr):
            raise ValueError("y (the class labels) contains NaN; remove those samples or impute a label.")
        check_classification_targets(y_arr)
        enc = LabelEncoder().fit(y_arr)
        if len(enc.classes_) < 2:
            raise ValueError(
                f"y has only 1 class ({enc.classes_[0]!r}); classification needs at least 2 classes."
            )
        self.classes_ = enc.classes_
        return torch.as_tensor(enc.transform(y_arr), dtype=torch.long, device=self._device)

    def _continuous_target(self, y: ArrayLike, multi_output: bool) -> torch.Tensor:
        """``y`` as a float tensor of the fit dtype and device (1-D, or 2-D when ``multi_output``)."""
        Y = as_tensor(y, "y", ndim=(1, 2), dtype=self._dtype, device=self._device)
        if not multi_output and Y.ndim == 2:
            if Y.shape[1] != 1:
                raise ValueError(f"y must be 1-D (one target), got shape {tuple(Y.shape)}.")
            _warn_column_vector()
            Y = Y[:, 0]
        return Y

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, self._fitted_marker)

    def _check_fitted(self, method: str) -> None:
        """Raise :class:`~sklearn.exceptions.NotFittedError` before ``fit``, naming its required arguments."""
        if self.__sklearn_is_fitted__():
            return
        # e.g. "X, y": fit's positional parameters without defaults
        required = ", ".join(
            p.name for p in inspect.signature(self.fit).parameters.values()
            if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty
        )
        check_is_fitted(self, msg=f"This %(name)s instance is not fitted yet; call fit({required}) before {method}().")

    def _validate_new_input(self, X: ArrayLike, name: str = "X", *, method: str) -> torch.Tensor:
        """New data for the fitted model: fitted check, feature names and count, fit dtype and device."""
        self._check_fitted(method)
        return check_new_input(self, self._densify(X), name)

    def _densify(self, X: ArrayLike) -> ArrayLike:
        """A scipy.sparse ``X`` as a dense array (dtype kept) if the estimator accepts sparse input, else unchanged."""
        if self._accepts_sparse and scipy.sparse.issparse(X):
            return X.toarray()
        return X

    def _to_output(self, T: torch.Tensor, like: Any = _UNSET) -> np.ndarray | torch.Tensor:
        """``T`` as numpy when ``like`` (default: the fit input) was numpy-like, else the tensor itself."""
        numpy_out = self._numpy_fit_ if like is _UNSET else is_numpy_like(like)
        return to_output(T, numpy_out)

    def __sklearn_tags__(self):  # noqa: D105 - scikit-learn's estimator tags
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self._accepts_sparse  # densified on entry: kernels and scatter matrices are dense
        tags.input_tags.allow_nan = False
        return tags


class KernelTransformerMixin(TransformerMixin):
    """scikit-learn's ``TransformerMixin`` for kppca transformers: float32 and float64 are preserved.

    A mixin because ``TransformerMixin`` precedes :class:`KernelEstimator` in the MRO and sets the
    transformer tags after it: ``class Model(KernelTransformerMixin, KernelEstimator)``.
    """

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]  # with dtype=None
        return tags


def detach_target(X: Any, y: Any) -> tuple[Any, Any]:
    """``(X, y)`` for scikit-learn's ``score`` mixins: tensors become numpy arrays (detached, on the CPU)."""
    return tuple(a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else a for a in (X, y))
