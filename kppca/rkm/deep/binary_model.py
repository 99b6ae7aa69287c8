"""The fitted state of one binary deep model of the deep RKM classifier."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..._param_validation import Integral, Interval, Real
from ...io import ListOf, TensorSpec, register

__all__ = ["BinaryDeepModel"]


@register(name="kppca.rkm.BinaryDeepModel")
@dataclass
class BinaryDeepModel:
    """Fitted state of one deep model (one binary problem, or the shared MLP code).

    ``H`` (N, sum s_j) stacked hidden features with orthonormal columns; ``w`` (s_L, 1) and
    ``b`` (1,) the LS-SVM head (None for the MLP head); ``history`` the objective per iteration.
    """

    H: torch.Tensor
    w: torch.Tensor | None = None
    b: torch.Tensor | None = None
    history: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False

    #: The state a model file holds (a helper object, rebuilt from it alone).
    _fitted_constraints = {
        "H": [TensorSpec(ndim=2)],
        "w": [TensorSpec(ndim=2), None],
        "b": [TensorSpec(ndim=1), None],
        "history": [ListOf([Interval(Real, None, None)])],
        "n_iter": [Interval(Integral, 0, None, closed="left")],
        "converged": ["boolean"],
    }
