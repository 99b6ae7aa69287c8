"""Kernel widths: validation, and the widths ``bandwidth="median"`` / ``"scale"`` resolved from the data at fit.

Both rules work on data scaled by a power of two, so data near the dtype's limits give the same width.
"""

from __future__ import annotations

import math

import torch

from .._param_validation import Interval, Real, StrOptions, check_scalar
from .._validation import ArrayLike, as_tensor, precision_advice
from .distances import pairwise_distances, power_of_two_scale

__all__ = ["BANDWIDTH_RULES", "check_bandwidth", "median_heuristic_bandwidth", "resolve_bandwidth", "scale_bandwidth"]

#: The width rules resolved from data, per metric ("l2" for RBF, "l1" for Laplacian).
BANDWIDTH_RULES: dict[str, tuple[str, ...]] = {"l2": ("median", "scale"), "l1": ("median",)}

_MEDIAN_MAX_POINTS = 2000


def check_bandwidth(bandwidth: object, metric: str = "l2") -> float | str:
    """The validated ``bandwidth``: a positive finite float, or a rule name of :data:`BANDWIDTH_RULES` (lower case).

    Every positive finite width is usable: extreme ones give the kernel's limits, not an overflow.
    """
    rules = BANDWIDTH_RULES[metric]
    if isinstance(bandwidth, str):
        if bandwidth.lower() not in rules:
            raise ValueError(
                f"bandwidth={bandwidth!r} is not a rule; use a positive number or one of {list(rules)} "
                "(resolved from the training data)."
            )
        return bandwidth.lower()
    return float(check_scalar(bandwidth, "bandwidth", [Interval(Real, 0, None, closed="neither"), StrOptions(rules)]))


def median_heuristic_bandwidth(Z: torch.Tensor, metric: str = "l2") -> float:
    """Median pairwise distance between distinct rows of ``Z`` (N, p).

    Parameters
    ----------
    Z : Tensor of shape (N, p)
        Uses at most 2,000 evenly spaced rows (deterministic).
    metric : {"l2", "l1"}, default "l2"
        Euclidean (RBF kernel) or L1 (Laplacian kernel) distance.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When all rows coincide (there is no distance to take the median of).
    """
    if Z.shape[0] > _MEDIAN_MAX_POINTS:
        Z = Z[torch.linspace(0, Z.shape[0] - 1, _MEDIAN_MAX_POINTS, device=Z.device).long()]
    iu = torch.triu_indices(Z.shape[0], Z.shape[0], offset=1, device=Z.device)
    d, scale = pairwise_distances(Z, Z, metric)
    d = d[iu[0], iu[1]]
    d = d[d > 0]
    if d.numel() == 0:
        raise ValueError(
            "bandwidth='median' needs at least two distinct rows of X (all rows are equal); pass a number, "
            "e.g. bandwidth=1.0." + precision_advice(Z.dtype)
        )
    # d is in units of the power of two `scale`: multiplying back is exact (or overflows honestly).
    return float(d.median()) * scale


def scale_bandwidth(Z: torch.Tensor) -> float:
    """scikit-learn's ``gamma="scale"`` as an RBF width: ``sqrt(D Var(Z) / 2)`` (``Var`` over all entries)."""
    Z64 = Z.to(torch.float64)
    scale = power_of_two_scale(Z64.abs().amax() if Z64.numel() else Z64.new_zeros(()))
    var = float((Z64 / scale).var(unbiased=False)) if Z64.numel() else 0.0
    if not var > 0:
        raise ValueError("bandwidth='scale' needs X with non-zero variance (X is constant); pass a number, e.g. "
                         "bandwidth=1.0." + precision_advice(Z.dtype))
    return math.sqrt(Z.shape[1] * var / 2.0) * scale


def resolve_bandwidth(bandwidth: float | str, X: ArrayLike, metric: str = "l2") -> float:
    """The numeric width for ``bandwidth`` on the training data ``X`` (n, D): a number is returned as is.

    Raises ``ValueError`` when the rule has no positive finite answer on ``X`` (constant data).
    """
    rule = check_bandwidth(bandwidth, metric)
    if not isinstance(rule, str):
        return rule
    Xt = X if isinstance(X, torch.Tensor) else as_tensor(X, "X")
    if Xt.ndim != 2:
        raise ValueError(f"bandwidth={rule!r} is resolved from X of shape (n, D); got shape {tuple(Xt.shape)}.")
    value = median_heuristic_bandwidth(Xt, metric) if rule == "median" else scale_bandwidth(Xt)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"bandwidth={rule!r} gave {value} on X; pass a positive number instead.")
    return value
