"""The base class of the pre-image strategies and the option vocabulary they share.

See :mod:`kppca.preimage.strategies` for the strategies and how models call them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch

from .._param_validation import Integral, Interval, Real, validate_parameter_constraints
from .context import FeaturePoints, TrainingContext

__all__ = ["Preimage"]

_COUNT = Interval(Integral, 1, None, closed="left")
_POSITIVE = Interval(Real, 0, None, closed="neither")
_NONNEGATIVE = Interval(Real, 0, None, closed="left")


def _at_most(n_neighbors: Any, N: int) -> Any:
    """Clamp an integer ``n_neighbors`` to the training-set size (other values go to the library checks)."""
    if _COUNT.is_satisfied_by(n_neighbors) and n_neighbors > N:
        return N
    return n_neighbors


class Preimage:
    """Base class of the pre-image strategies (see the module docstring).

    Subclasses declare ``name``, ``_defaults`` (option -> default) and ``_constraints``
    (option -> allowed values, in :mod:`kppca._param_validation` vocabulary) and
    implement ``_map(points, context, cache)`` for one block of rows.
    """

    name: ClassVar[str]
    _defaults: ClassVar[dict[str, Any]]
    _constraints: ClassVar[dict[str, list[Any]]]
    #: Whether the strategy works on rows independently (so callers may split a batch in blocks).
    rowwise: ClassVar[bool] = True

    def __init__(self, **options: Any):
        unknown = sorted(set(options) - set(self._defaults))
        if unknown:
            raise ValueError(
                f"unknown option(s) {', '.join(unknown)} for preimage={self.name!r}; it accepts: "
                f"{', '.join(self._defaults)}."
            )
        opts = {**self._defaults, **options}
        validate_parameter_constraints(self._constraints, opts, f"preimage={self.name!r}")
        self.options = opts

    def get_params(self) -> dict[str, Any]:
        """The options of this strategy (defaults filled in)."""
        return dict(self.options)

    def __repr__(self) -> str:
        arrays = (np.ndarray, torch.Tensor)
        shown = ", ".join(f"{k}={v!r}" for k, v in self.options.items() if not isinstance(v, arrays))
        return f"{type(self).__name__}({shown})"

    def prepare(self, context: TrainingContext, cache: dict, sampled: bool = True) -> None:
        """Compute, into ``cache``, what this strategy derives from the training set alone.

        Callers that are about to release training-set data (a model whose Gram matrix
        becomes its sampling factor) call it first; the default does nothing.
        """

    def __call__(
        self,
        points: FeaturePoints,
        context: TrainingContext,
        cache: dict | None = None,
        *,
        block_rows: int | None = None,
    ) -> torch.Tensor:
        """Inputs (M, D) for the feature-space ``points`` given the training ``context``.

        ``cache`` (a dict owned by the caller, emptied when the training set changes)
        keeps what is fitted once per training set; ``block_rows`` bounds the rows
        processed at once (memory).
        """
        cache = {} if cache is None else cache
        M = len(points)
        if M == 0:
            return context.X.new_zeros((0, context.X.shape[1]))
        if not self.rowwise or block_rows is None or block_rows >= M:
            return self._map(points, context, cache, 0)
        return torch.cat([
            self._map(points.rows(i, i + block_rows), context, cache, i) for i in range(0, M, block_rows)
        ])

    def _map(self, points: FeaturePoints, context: TrainingContext, cache: dict, start: int) -> torch.Tensor:
        raise NotImplementedError
