"""Small helpers shared by the pre-image functions (argument checks, dtype/device choice, output type)."""

from __future__ import annotations

from typing import Any

import torch

from .._param_validation import Integral, Interval, check_scalar
from .._validation import as_tensor, is_numpy_like, to_output


def dtype_device(*arrays: Any) -> tuple[torch.dtype | None, torch.device | None]:
    """Working dtype (float32/float64, else None: float64) and device of the first torch tensor among ``arrays``."""
    for a in arrays:
        if isinstance(a, torch.Tensor):
            dtype = a.dtype if a.dtype in (torch.float32, torch.float64) else None
            return dtype, a.device
    return None, None


def as_batch(rows: Any, name: str, *others: Any) -> tuple[torch.Tensor, bool, bool]:
    """``rows`` (M, N) or (N,) as an (M, N) tensor, whether it was 1-D, and whether the output is numpy."""
    numpy_out = is_numpy_like(rows)
    dtype, device = dtype_device(rows, *others)
    R = as_tensor(rows, name, ndim=(1, 2), dtype=dtype, device=device)
    single = R.ndim == 1
    return (R[None] if single else R), single, numpy_out


def weights_and_targets(
    rows: Any, targets: Any, rows_name: str
) -> tuple[torch.Tensor, torch.Tensor, bool, bool, bool]:
    """``rows`` (M, N), ``targets`` (N, D) checked against each other, their 1-D flags, and numpy output."""
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
    """``result``, or ``(result, extra)``, without the batch dimension when ``single``, numpy if ``numpy_out``."""
    result = to_output(result[0] if single else result, numpy_out)
    if extra is None:
        return result
    return result, to_output(extra[0] if single else extra, numpy_out)
