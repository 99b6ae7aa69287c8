"""The objective variants of Table 1 of the deep RKM paper (§6.1), combined once for every primal solver.

A primal solver (:mod:`~kppca.rkm.deep.reduced_set`, models 1,·; :mod:`~kppca.rkm.deep.feedforward`,
models 2,·) computes each level's own term -- the output level's regression term, a KPCA level's
stabilised term ``J_l + c_stab/2 J_l^2`` (:func:`stabilize`) -- and the scores ``e_l`` (N, s_l) of
its KPCA levels; :func:`combine_terms` adds them according to ``DeepRKM(objective=...)``:

``"stabilized"`` (models 1,B / 2,B, the default)
    ``J_deep,Pstab = sum_{KPCA l} (J_l + c_stab/2 J_l^2) + J_out``.
``"variance"`` (models 1,A / 2,A)
    ``J_deep,Pstab - c0 sum_{KPCA l} sum_j ||e_j^(l)||^2``: our reading of the paper's
    "additional term -c0(Tr(sum_j e_j^(1) e_j^(1)T) + Tr(sum_j e_j^(2) e_j^(2)T))", a reward on the
    variance of every KPCA level's scores ``e`` (before ``Lam^{-1}``), ``j`` over the training points;
    its "``eta/2 Tr(H~(l) H~(l)T)``" terms are the regularisers every level's term already holds.
    **Unbounded below**: for fixed scores the free ``Lam_l`` brings ``J_l + c_stab/2 J_l^2`` to its
    minimum ``-1/(2 c_stab)`` whatever ``||e_l||``, so the reward drives ``e_l`` and ``Lam_l`` to
    infinity together. A fit is the point L-BFGS reaches after ``max_iter`` iterations (a small
    ``c0 / c_stab`` keeps it finite; the estimator refuses a non-finite result); ``c_stab > 0`` is
    required (:func:`check_objective`).
``"regression"`` (models 1,C / 2,C)
    ``J_out`` alone: "only the level 3 regression objective" (no KPCA or stabilisation terms;
    the KPCA levels remain as unknowns of the chain or network that feeds the regression level).

The variant changes what is minimised, not what is fitted: no new fitted attribute.
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
    """ValueError for an ``objective`` the solver does not minimise, or ``"variance"`` without stabilisation.

    ``objective`` itself is one of :data:`OBJECTIVES` (``DeepRKM._parameter_constraints``, checked before).
    """
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

    Parameters
    ----------
    is_output : sequence of bool
        Per level: the regression (output) level or a KPCA level.
    terms : sequence of Tensor (scalars)
        Per level: the output level's term, or a KPCA level's stabilised term (:func:`stabilize`).
    scores : sequence of Tensor or None
        Per level: a KPCA level's scores ``e_l`` (N, s_l) on the training points (the output level's entry is
        not read).
    objective : {"stabilized", "variance", "regression"}
    c0 : float > 0
        Weight of the variance reward (``"variance"`` only).
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
