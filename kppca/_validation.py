"""Input checking and numpy/torch conversion shared by every public entry point.

Every public function that takes user data goes through :func:`as_tensor`, so the
error messages (which name the argument and say how to fix it) are the same
everywhere, and the user's array is never modified: we always work on a copy or
on a freshly converted tensor.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import torch

ArrayLike = Any  # numpy array, torch tensor, or nested sequence

DEFAULT_DTYPE = torch.float64


def resolve_dtype(dtype: torch.dtype | str | None) -> torch.dtype:
    """Return a floating torch dtype (float64 when ``dtype`` is None)."""
    if dtype is None:
        return DEFAULT_DTYPE
    if isinstance(dtype, str):
        name = dtype.replace("torch.", "")
        if not hasattr(torch, name):
            raise TypeError(f"dtype={dtype!r} is not a torch dtype; use 'float64' or 'float32'.")
        dtype = getattr(torch, name)
    if dtype not in (torch.float64, torch.float32):
        raise TypeError(f"dtype={dtype} is not supported; use torch.float64 (default) or torch.float32.")
    return dtype


def resolve_device(device: torch.device | str | None) -> torch.device:
    """Return a torch device (CPU when ``device`` is None)."""
    return torch.device("cpu") if device is None else torch.device(device)


def is_numpy_like(X: ArrayLike) -> bool:
    """True when results for ``X`` should be returned as numpy arrays."""
    return not isinstance(X, torch.Tensor)


def as_tensor(
    X: ArrayLike,
    name: str = "X",
    *,
    ndim: int | tuple[int, ...] = 2,
    dtype: torch.dtype | None = None,
    device: torch.device | None = None,
    min_samples: int = 1,
    allow_nonfinite: bool = False,
) -> torch.Tensor:
    """Convert ``X`` to a floating tensor and validate it.

    Parameters
    ----------
    X : array-like or torch.Tensor
        The user's data. It is never modified: the result is a copy whenever
        the conversion would otherwise share memory with ``X``.
    name : str
        Argument name used in error messages.
    ndim : int or tuple of int
        Accepted number(s) of dimensions.
    dtype, device
        Target dtype (float64 by default) and device (CPU by default).
    min_samples : int
        Minimum length of the first axis.
    allow_nonfinite : bool
        Accept NaN/inf (only for internal use).

    Returns
    -------
    torch.Tensor
        A tensor with the requested dtype and device.
    """
    dtype = resolve_dtype(dtype)
    device = resolve_device(device)
    if isinstance(X, torch.Tensor):
        if X.is_complex():
            raise TypeError(f"{name} is complex; pass real-valued data.")
        T = X.detach().to(device=device, dtype=dtype)
        # .to() returns the same object when nothing changes: copy so that
        # in-place work downstream can never touch the user's tensor.
        if T.data_ptr() == X.data_ptr():
            T = T.clone()
    else:
        try:
            arr = np.asarray(X)
        except Exception as exc:  # pragma: no cover - exotic inputs
            raise TypeError(f"{name} could not be converted to an array: {exc}") from exc
        if arr.dtype == object or arr.dtype.kind in "USV":
            raise TypeError(f"{name} has dtype {arr.dtype}; pass numeric (float) data.")
        if arr.dtype.kind == "c":
            raise TypeError(f"{name} is complex; pass real-valued data.")
        T = torch.tensor(arr, dtype=dtype, device=device)  # torch.tensor always copies
    ndims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if T.ndim not in ndims:
        want = " or ".join(str(d) for d in ndims)
        hint = " Reshape a single sample with X.reshape(1, -1)." if 2 in ndims and T.ndim == 1 else ""
        raise ValueError(f"{name} must have {want} dimension(s), got shape {tuple(T.shape)}.{hint}")
    if T.ndim >= 1 and T.shape[0] < min_samples:
        raise ValueError(f"{name} has {T.shape[0]} sample(s); at least {min_samples} are required.")
    # A finite sum proves every entry finite (NaN and inf propagate); only an overflowing or
    # non-finite sum needs the elementwise check, which allocates a mask as large as X.
    if not allow_nonfinite and T.numel() and not bool(torch.isfinite(T.sum())):
        if not bool(torch.isfinite(T).all()):
            raise ValueError(f"{name} contains NaN or infinity; remove or impute those entries first.")
    return T


def to_output(T: torch.Tensor, like_numpy: bool) -> np.ndarray | torch.Tensor:
    """Return ``T`` as a numpy array when the user's input was not a tensor."""
    if like_numpy:
        return T.detach().cpu().numpy()
    return T


def check_positive(value: Any, name: str, *, allow_none: bool = False, integer: bool = False) -> Any:
    """Validate a strictly positive scalar hyper-parameter."""
    if value is None and allow_none:
        return None
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        what = "an integer" if integer else "a real number"
        raise TypeError(f"{name} must be {what}, got {value!r}.")
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite, got {value!r}.")
    return value


def torch_generator(random_state: Any, device: torch.device) -> torch.Generator:
    """Build a seeded ``torch.Generator`` on ``device``.

    ``random_state`` may be None (fresh entropy), an int, a
    ``numpy.random.Generator``/``RandomState`` (a seed is drawn from it) or a
    ``torch.Generator`` (returned as is).
    """
    if isinstance(random_state, torch.Generator):
        return random_state
    gen = torch.Generator(device=device)
    if random_state is None:
        gen.seed()
    elif isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        gen.manual_seed(int(random_state.integers(2**62)) if hasattr(random_state, "integers")
                        else int(random_state.randint(2**31 - 1)))
    elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}.")
        gen.manual_seed(int(random_state))
    else:
        raise TypeError(
            "random_state must be None, an int, a numpy Generator/RandomState or a torch.Generator, "
            f"got {type(random_state).__name__}."
        )
    return gen


def numpy_rng(random_state: Any) -> np.random.Generator:
    """Build a numpy ``Generator`` from the same kinds of ``random_state`` as :func:`torch_generator`."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31 - 1))
    if isinstance(random_state, torch.Generator):
        return np.random.default_rng(int(torch.randint(2**31 - 1, (1,), generator=random_state)))
    if random_state is None or (isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)):
        return np.random.default_rng(random_state)
    raise TypeError(
        "random_state must be None, an int, a numpy Generator/RandomState or a torch.Generator, "
        f"got {type(random_state).__name__}."
    )
