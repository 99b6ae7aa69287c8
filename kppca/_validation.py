"""Input checking and numpy/torch conversion shared by every public entry point (the user's array is never modified)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse
import torch

from ._param_validation import check_scalar, dtype_from_spec
from ._resources import check_memory

ArrayLike = Any  # numpy array, torch tensor, or nested sequence


def resolve_dtype(dtype: Any, like: ArrayLike = None) -> torch.dtype:
    """The torch dtype to compute in: ``dtype`` if given, else float32 for float32 ``like``, else float64."""
    resolved = dtype_from_spec(dtype)
    if resolved is not None:
        return resolved
    data_dtype = getattr(like, "dtype", None)
    if data_dtype in (torch.float32, np.float32) or (isinstance(data_dtype, np.dtype) and data_dtype == np.float32):
        return torch.float32
    return torch.float64


def is_numpy_like(X: ArrayLike) -> bool:
    """True when results for ``X`` should be returned as numpy arrays."""
    return not isinstance(X, torch.Tensor)


def _to_numpy(X: ArrayLike, name: str) -> np.ndarray:
    """``X`` as a numeric numpy array (may share memory with ``X``; never written to)."""
    if scipy.sparse.issparse(X):
        raise TypeError(
            f"Sparse data was passed for {name}, but dense data is required; convert it with {name}.toarray()."
        )
    try:
        arr = np.asarray(X)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} could not be converted to an array: {exc}") from exc
    if arr.dtype.kind in "USV":
        raise TypeError(f"{name} has dtype {arr.dtype}; pass numeric (float) data.")
    if arr.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} is complex; pass real-valued data.")
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 8:  # long double: torch has no such dtype
        with np.errstate(over="ignore"):
            wide, arr = arr, arr.astype(np.float64)
        if not np.array_equal(np.isfinite(arr), np.isfinite(wide)):
            raise ValueError(f"{name} has dtype {wide.dtype} with values beyond the float64 range; rescale it.")
    if arr.dtype == object:
        # Object arrays of numbers (e.g. from a mixed DataFrame) are fine; anything else is not.
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} has dtype object and could not be converted to numbers: {exc}") from exc
    return arr


def as_tensor(
    X: ArrayLike,
    name: str = "X",
    *,
    ndim: int | tuple[int, ...] = 2,
    dtype: torch.dtype | None = None,
    device: torch.device | None = None,
    min_samples: int = 1,
) -> torch.Tensor:
    """``X`` as a validated tensor of ``dtype`` (float64) on ``device`` (CPU), never sharing memory with ``X``.

    ``min_samples``: the least length of the first axis. Sparse input is refused (the models need dense Gram matrices).
    """
    dtype = resolve_dtype(dtype)
    device = torch.device("cpu") if device is None else device
    if isinstance(X, torch.Tensor):
        if X.layout != torch.strided:
            raise TypeError(
                f"Sparse data was passed for {name}, but dense data is required; convert it with {name}.to_dense()."
            )
        if X.device.type == "meta":
            raise ValueError(f"{name} is a tensor on the 'meta' device, which holds no data; pass a tensor with "
                             "data (on 'cpu' or a GPU).")
        if X.is_complex():
            raise ValueError(f"Complex data not supported: {name} is complex; pass real-valued data.")
        T = X.detach().to(device=device, dtype=dtype)
        # .to() returns the same object when nothing changes: copy, so in-place work never touches the user's tensor.
        if T.data_ptr() == X.data_ptr():
            T = T.clone()
    else:
        # torch refuses negative strides (X[::-1], np.flip); torch.tensor copies, so X itself is never shared.
        T = torch.tensor(np.ascontiguousarray(_to_numpy(X, name)), dtype=dtype, device=device)
    ndims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if T.ndim not in ndims:
        want = " or ".join(str(d) for d in ndims)
        hint = ""
        if 2 in ndims and T.ndim == 1:
            hint = (" Reshape your data either using X.reshape(-1, 1) if it has a single feature or "
                    "X.reshape(1, -1) if it is a single sample.")
        raise ValueError(f"{name} must have {want} dimension(s), got shape {tuple(T.shape)}.{hint}")
    if T.ndim >= 1 and T.shape[0] < min_samples:
        raise ValueError(
            f"{name} has {T.shape[0]} sample(s) (shape={tuple(T.shape)}) while a minimum of {min_samples} is required."
        )
    if T.ndim == 2 and T.shape[1] == 0:
        raise ValueError(f"{name} has 0 feature(s) (shape={tuple(T.shape)}) while a minimum of 1 is required.")
    # A finite sum proves every entry finite (NaN and inf propagate); only an overflowing or
    # non-finite sum needs the elementwise check, which allocates a mask as large as X.
    if T.numel() and not bool(torch.isfinite(T.sum())):
        if not bool(torch.isfinite(T).all()):
            raise ValueError(f"{name} contains NaN or infinity; remove or impute those entries first.")
    return T


def as_input_tensor(X: ArrayLike) -> tuple[torch.Tensor, bool]:
    """``X`` (n, D) for an evaluation (``kernel(X, Y)``), and whether to return numpy; sparse ``X`` is densified."""
    X = X.toarray() if scipy.sparse.issparse(X) else X
    dtype = X.dtype if isinstance(X, torch.Tensor) and X.is_floating_point() else None
    device = X.device if isinstance(X, torch.Tensor) else None
    return as_tensor(X, "X", dtype=dtype, device=device), is_numpy_like(X)


def check_feature_names(estimator: Any, X: ArrayLike, *, reset: bool) -> None:
    """Record (``reset=True``) or check the column names of ``X`` against ``feature_names_in_``, as scikit-learn."""
    columns = getattr(X, "columns", None)
    names = None  # unless X is DataFrame-like with string column names only
    if columns is not None and not isinstance(X, (np.ndarray, torch.Tensor)):
        names = np.asarray(list(columns), dtype=object)
        if not (len(names) and all(isinstance(n, str) for n in names)):
            names = None
    if reset:
        if names is not None:
            estimator.feature_names_in_ = names
        else:
            estimator._forget_state("feature_names_in_")
        return
    fitted = getattr(estimator, "feature_names_in_", None)
    cls = type(estimator).__name__
    if names is None:
        if fitted is not None:
            warnings.warn(f"X does not have valid feature names, but {cls} was fitted with feature names", UserWarning)
        return
    if fitted is None:
        warnings.warn(f"X has feature names, but {cls} was fitted without feature names", UserWarning)
        return
    if len(fitted) == len(names) and bool(np.all(fitted == names)):
        return
    message = "The feature names should match those that were passed during fit.\n"
    unseen = sorted(set(names) - set(fitted))
    missing = sorted(set(fitted) - set(names))

    def listed(items: list[str], limit: int = 5) -> str:
        out = "".join(f"- {item}\n" for item in items[:limit])
        return out + ("- ...\n" if len(items) > limit else "")

    if unseen:
        message += "Feature names unseen at fit time:\n" + listed(unseen)
    if missing:
        message += "Feature names seen at fit time, yet now missing:\n" + listed(missing)
    if not unseen and not missing:
        message += "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(message)


def check_new_input(estimator: Any, X: ArrayLike, name: str = "X") -> torch.Tensor:
    """New data for a fitted estimator, its feature names and width checked, as a tensor of its dtype and device."""
    check_feature_names(estimator, X, reset=False)
    T = as_tensor(X, name, dtype=estimator._dtype, device=estimator._device)
    if T.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"{name} has {T.shape[1]} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input; pass data with the same columns as in fit."
        )
    return T


def as_numpy(values: Any, dtype: Any = None) -> np.ndarray:
    """An array-like or a tensor on any device (moved to the host) as a numpy array."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=dtype)


def to_output(T: torch.Tensor, like_numpy: bool) -> np.ndarray | torch.Tensor:
    """Return ``T`` as a numpy array when the user's input was not a tensor."""
    return as_numpy(T) if like_numpy else T


def check_random_state(random_state: Any) -> Any:
    """Validate ``random_state`` (None, an int in ``[0, 2**64 - 1]``, a numpy or torch generator); return it."""
    return check_scalar(random_state, "random_state", ["random_state"])


def _seed_from(random_state: Any) -> int | None:
    """An integer seed from a validated ``random_state`` (None stays None)."""
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**62))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    if isinstance(random_state, torch.Generator):
        return int(torch.randint(2**31 - 1, (1,), generator=random_state))
    return None if random_state is None else int(random_state)


def torch_generator(random_state: Any, device: torch.device) -> torch.Generator:
    """A seeded ``torch.Generator`` on ``device`` (a ``torch.Generator`` is returned as is)."""
    check_random_state(random_state)
    if isinstance(random_state, torch.Generator):
        return random_state
    gen = torch.Generator(device=device)
    seed = _seed_from(random_state)
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(seed)
    return gen


def numpy_rng(random_state: Any) -> np.random.Generator:
    """A numpy ``Generator`` from the same kinds of ``random_state`` as :func:`torch_generator`."""
    check_random_state(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(_seed_from(random_state))


def precision_advice(dtype: torch.dtype, cause: str | None = None) -> str:
    """The advice (" In float32, <cause>: pass float64 data.") for a message on data without variation; "" in float64.

    float32 keeps about 7 digits: a small spread on a large offset can round away when the data are cast.
    """
    if torch.finfo(dtype).eps <= torch.finfo(torch.float64).eps:
        return ""
    name = str(dtype).replace("torch.", "")
    cause = cause or f"a spread below {torch.finfo(dtype).eps:.1e} of the data's magnitude is lost"
    return f" In {name}, {cause}: pass float64 data."


def check_sample_memory(model: Any, n: int, what: str) -> None:
    """Refuse ``what`` (drawing ``n`` rows from a fitted ``model``) when even its least memory is not available.

    The least: per row the output (D), the code (q) and, for a dual model, the kernel vector and dual
    coefficients over the N training points (2N), in the model's dtype.
    """
    width = model.n_features_in_ + model.n_components_
    basis, W = getattr(model, "eigenvectors_", None), getattr(model, "W_", None)  # dual (N, q), primal (d, q)
    if basis is not None:
        width += 2 * basis.shape[0]
    elif W is not None:
        width += W.shape[0]
    itemsize = torch.finfo(model._dtype).bits // 8
    check_memory(n * width * itemsize, what, "draw fewer rows per call (several calls, in batches), or fit the model "
                 "in float32 (half the memory)", model._device)


def check_gram_memory(X: torch.Tensor, what: str) -> None:
    """Refuse ``what`` (a fit on the rows of ``X``, (N, D)) when its N x N Gram matrix cannot fit in memory."""
    N, dtype = X.shape[0], str(X.dtype).replace("torch.", "")
    check_memory(N * N * X.element_size(), f"the {N} x {N} {dtype} Gram matrix of {what}",
                 "fit in float32 (dtype='float32': half the memory), use landmarks (PrimalPPCA(feature_map="
                 "Nystroem(kernel, n_landmarks=m)): an m x m matrix instead), or fit on fewer rows", X.device)
