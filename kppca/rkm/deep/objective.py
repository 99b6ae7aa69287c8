"""The objective variants of Table 1 of the deep RKM paper (§6.1), combined once for every primal solver.

A primal solver computes each level's term and its KPCA levels' scores ``e_l``; :func:`combine_terms` adds them
for ``DeepRKM(objective=...)``: ``"stabilized"`` (models 1,B / 2,B) sums all terms, ``"variance"`` (1,A / 2,A)
also subtracts ``c0 sum_l ||e_l||^2`` (our reading of the paper's reward on the scores' variance; unbounded
below, as the free ``Lam_l`` absorbs the growth of ``e_l``, so a fit is where ``max_iter`` steps lead), and
``"regression"`` (1,C / 2,C) keeps the output level's term alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["OBJECTIVES", "check_objective", "combine_terms", "stabilize"]

#: ``DeepRKM(objective=...)`` values: Table 1's B, A and C.
OBJECTIVES = ("stabilized", "variance", "regression")


def stabilize(Jl: torch.Tensor, c_stab: float) -> torch.Tensor:
    """A KPCA level's stabilised term ``J_l + c_stab/2 J_l^2`` (paper eq. 5.3)."""
    return Jl + 0.5 * c_stab * Jl ** 2


def check_objective(params: dict) -> None:
    """ValueError for an ``objective`` the solver does not minimise, or ``"variance"`` without stabilisation."""
    objective, solver = params.get("objective", "stabilized"), params.get("solver")
    if objective != "stabilized" and solver not in ("primal", "feedforward"):
        raise ValueError(f"objective={objective!r} is a variant of the primal objective (paper Table 1): use "
                         f"solver='primal' or solver='feedforward', or objective='stabilized' with "
                         f"solver={solver!r}.")
    if objective == "variance" and float(params["c_stab"]) <= 0:
        raise ValueError("objective='variance' needs c_stab > 0: the reward -c0 ||e||^2 is unbounded below "
                         "without the stabilisation terms c_stab/2 J_l^2.")


def combine_terms(is_output: Sequence[bool], terms: Sequence[torch.Tensor], scores: Sequence[torch.Tensor | None],
                  *, objective: str = "stabilized", c0: float = 1.0) -> torch.Tensor:
    """The minimised objective from the levels' terms.

    Per level: whether it is the output level, its scalar term (a KPCA level's stabilised by :func:`stabilize`)
    and a KPCA level's scores ``e_l`` (N, s_l) on the training points; ``c0`` weighs the variance reward.
    """
    total = terms[0].new_zeros(())
    for out, t, e in zip(is_output, terms, scores):
        if out:
            total = total + t
        elif objective != "regression":
            total = total + t
            if objective == "variance":
                total = total - c0 * (e ** 2).sum()
    return total
