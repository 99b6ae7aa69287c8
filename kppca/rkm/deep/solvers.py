"""The registry of deep RKM solvers: ``DeepRKM(solver=name)`` looks the name up here.

A solver's ``fit(levels, X, Y, *, params, generator)`` gets the resolved levels, ``X`` (N, D) and ``Y`` (N, p) in
the working dtype, the estimator's ``get_params`` and a seeded generator, and returns a :class:`DeepFit`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["DeepFit", "DeepSolver", "SOLVERS", "get_solver", "register_solver"]


@dataclass
class DeepFit:
    """What a solver returns; the estimator stores it as the fitted attributes of the same names (with a
    trailing ``_``, see :class:`~kppca.rkm.DeepRKM`), ``extra`` as ``solver_state_``.

    ``converged`` is False when an iterative solver stopped before its criterion (the estimator warns, with
    ``message``); ``levels`` are the levels with the kernels the solver fitted to their inputs (None: as given).
    """

    hidden_features: list
    intercept: torch.Tensor
    scales: list
    prototypes: torch.Tensor
    prototype_indices: torch.Tensor
    objective_history: list
    residual_history: list
    n_iter: int
    converged: bool = True
    extra: dict = field(default_factory=dict)
    levels: list | None = None
    message: str = ""


@dataclass(frozen=True)
class DeepSolver:
    """A registered solver: its ``fit`` and its ``check`` of the levels."""

    name: str
    fit: Callable[..., DeepFit]
    check: Callable[[list, dict], None] | None = None
    #: ``predict(levels, solver_state, scales, intercept, X) -> (M, p)`` of a model that is not the kernel chain.
    predict: Callable[..., torch.Tensor] | None = None
    #: True when the default architecture (``DeepRKM(levels=None)``) must have the output level last.
    output_last: bool = False
    #: Iterations when ``DeepRKM(max_iter=None)`` (the default).
    max_iter: int = 200


SOLVERS: dict[str, DeepSolver] = {}


def register_solver(name: str, fit: Callable[..., DeepFit], *, check: Callable[[list, dict], None] | None = None,
                    predict: Callable[..., torch.Tensor] | None = None, output_last: bool = False,
                    max_iter: int = 200) -> None:
    """Register ``fit`` and its options (the fields of :class:`DeepSolver`) for ``DeepRKM(solver=name)``."""
    SOLVERS[name] = DeepSolver(name, fit, check, predict, output_last, int(max_iter))


def get_solver(name: Any) -> DeepSolver:
    """The solver registered as ``name``, or a ValueError listing the registered ones."""
    if not isinstance(name, str) or name not in SOLVERS:
        raise ValueError(f"solver must be one of {sorted(SOLVERS)}, got {name!r}.")
    return SOLVERS[name]
