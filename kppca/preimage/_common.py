"""Small helpers shared by the pre-image functions (argument checks, dtype/device choice, output type)."""

from __future__ import annotations

from typing import Any

import torch

from .._param_validation import Integral, Interval, check_scalar
from .._validation import as_tensor, is_numpy_like, to_output


def dtype_device(*arrays: Any) -> tuple[torch.dtype | None, torch.device | None]:
    """Pick the working dtype and device from the first torch tensor among ``arrays``.

    A floating tensor keeps its dtype when it is float32/float64 (anything else,
    and numpy input, computes in float64) and every tensor keeps its device, so
    CUDA inputs are processed on the GPU without a round trip through numpy.
    """
    for a in arrays:
        if isinstance(a, torch.Tensor):
            dtype = a.dtype if a.dtype in (torch.float32, torch.float64) else None
            return dtype, a.device
    return None, None


def as_batch(rows: Any, name: str, *others: Any) -> tuple[torch.Tensor, bool, bool]:
    """``rows`` of shape (M, N) or (N,) as an (M, N) tensor, whether it was 1-D, and whether the output is numpy.

    The dtype and device come from :func:`dtype_device` over ``rows`` and ``others``.
    """
    numpy_out = is_numpy_like(rows)
    dtype, device = dtype_device(rows, *others)
    R = as_tensor(rows, name, ndim=(1, 2), dtype=dtype, device=device)
    single = R.ndim == 1
    return (R[None] if single else R), single, numpy_out


def weights_and_targets(
    rows: Any, targets: Any, rows_name: str
) -> tuple[torch.Tensor, torch.Tensor, bool, bool, bool]:
    """Validate a block of per-training-point rows (weights or distances) against the targets.

    Parameters
    ----------
    rows : array-like of shape (M, N) or (N,)
    targets : array-like of shape (N, D) or (N,)
    rows_name : str
        Argument name used in error messages.

    Returns
    -------
    R : Tensor of shape (M, N)
    T : Tensor of shape (N, D)
    single, vector_targets, numpy_out : bool
        Whether ``rows`` was 1-D, ``targets`` 1-D, and the result should be numpy.
    """
    R, single, numpy_out = as_batch(rows, rows_name, targets)
    T = as_tensor(targets, "targets", ndim=(1, 2), dtype=R.dtype, device=R.device)
    vector_targets = T.ndim == 1
    T = T[:, None] if vector_targets else T
    if R.shape[1] != T.shape[0]:
        raise ValueError(
            f"{rows_name} has {R.shape[1]} column(s) (training points) but targets has {T.shape[0]} row(s); "
            "they must match."
        )
    return R, T, single, vector_targets, numpy_out


def check_n_neighbors(n_neighbors: Any, n_samples: int, *, allow_none: bool) -> int | None:
    """Validate ``n_neighbors`` against the number of training points ``n_samples``."""
    n_neighbors = check_scalar(n_neighbors, "n_neighbors", [Interval(Integral, 1, None, closed="left")]
                               + ([None] if allow_none else []))
    if n_neighbors is None:
        return None
    n_neighbors = int(n_neighbors)
    if n_neighbors > n_samples:
        raise ValueError(
            f"n_neighbors={n_neighbors} exceeds the number of training points ({n_samples}); "
            f"use at most {n_samples}" + (" or None (all points)." if allow_none else ".")
        )
    return n_neighbors


def format_rows(rows: torch.Tensor, limit: int = 10) -> str:
    """Readable list of (at most ``limit``) row indices for error messages."""
    idx = rows.flatten().tolist()
    shown = ", ".join(str(i) for i in idx[:limit])
    return f"[{shown}{', ...' if len(idx) > limit else ''}] ({len(idx)} row(s))"


def batch_output(result: torch.Tensor, *, single: bool, numpy_out: bool, extra: torch.Tensor | None = None) -> Any:
    """A pre-image function's return value: ``result``, or ``(result, extra)`` when ``extra`` is given.

    Both have the batch in their first dimension, which is dropped when the input was a single
    point (``single``); numpy in -> numpy out (``numpy_out``), torch in -> torch out.
    """
    result = to_output(result[0] if single else result, numpy_out)
    if extra is None:
        return result
    return result, to_output(extra[0] if single else extra, numpy_out)
