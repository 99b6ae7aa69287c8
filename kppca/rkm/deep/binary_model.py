"""The fitted state of one binary deep model of the deep RKM classifier."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

__all__ = ["BinaryDeepModel"]


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
