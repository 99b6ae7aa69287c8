"""Model selection by held-out log-likelihood (``score`` on a validation set).

``score`` is a density on ``H_E``. It is a proper criterion across ``q`` only when ``H_E`` is the whole
feature space (explicit features with ``N > d``); with RBF-like kernels a larger ``q`` keeps winning, so
it is a heuristic there, as it is across kernels or bandwidths (densities on different spaces, hence the
``rank`` column). To compare kernels use :func:`kppca.metrics.reconstruction_error` on held-out data.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid

__all__ = ["select_by_heldout_likelihood", "HeldoutSelection"]

_SCALARS = (int, float, str, np.number, type(None))


@dataclass
class HeldoutSelection:
    """Result of :func:`select_by_heldout_likelihood`.

    Attributes
    ----------
    best_params : dict
        The grid point with the largest held-out log-likelihood.
    best_score : float
        Its average held-out log-likelihood per point.
    best_estimator : estimator
        A clone fitted on ``X_train`` with ``best_params``.
    results : pandas.DataFrame
        One row per grid point: a column per parameter, then ``heldout_score``, ``train_score``,
        ``n_components_``, ``sigma2_``, ``rank_``, ``error`` (why a fit failed) and ``rank_test_score`` (1 = best).
    """

    best_params: dict[str, Any]
    best_score: float
    best_estimator: Any
    results: pd.DataFrame = field(repr=False)


def select_by_heldout_likelihood(
    estimator: Any,
    X_train: Any,
    X_val: Any,
    param_grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Sequence[Any]]],
    *,
    error_score: float | str = np.nan,
) -> HeldoutSelection:
    """Fit a clone of ``estimator`` for every grid point and rank them by ``score(X_val)``.

    Parameters
    ----------
    estimator : PrimalPPCA or DualPPCA (any estimator with ``fit`` / ``score``)
        Cloned, never fitted itself.
    X_train : array-like of shape (N, D)
    X_val : array-like of shape (M, D)
        Held-out points, never fitted.
    param_grid : dict or list of dicts
        As for ``sklearn.model_selection.ParameterGrid``, e.g. ``{"n_components": range(1, 8)}``.
    error_score : float or "raise", default nan
        Held-out score of a failed fit (a warning names it); "raise" re-raises.

    Returns
    -------
    HeldoutSelection

    Raises
    ------
    ValueError
        If every grid point failed, or the grid is empty.
    """
    grid = list(ParameterGrid(param_grid))
    if not grid:
        raise ValueError("param_grid is empty.")
    rows: list[dict[str, Any]] = []
    fitted: list[Any] = []
    failures: list[str] = []
    for params in grid:
        est = clone(estimator).set_params(**params)
        # Kernel objects print as e.g. RBF(bandwidth=2.0); scalars stay as they are so the table stays numeric.
        row: dict[str, Any] = {k: v if isinstance(v, _SCALARS) else repr(v) for k, v in params.items()}
        try:
            est.fit(X_train)
            row.update(
                heldout_score=float(est.score(X_val)),
                train_score=float(est.score(X_train)),
                n_components_=int(est.n_components_),
                sigma2_=float(est.sigma2_),
                rank_=int(est.rank_),
                error="",
            )
            fitted.append(est)
        except (ValueError, np.linalg.LinAlgError, RuntimeError) as exc:
            if error_score == "raise":
                raise
            row.update(heldout_score=float(error_score), train_score=np.nan, n_components_=np.nan,
                       sigma2_=np.nan, rank_=np.nan, error=str(exc))
            failures.append(f"{params}: {exc}")
            fitted.append(None)
        rows.append(row)
    if failures:
        warnings.warn(
            f"{len(failures)} of {len(grid)} grid points failed to fit and got score {error_score}:\n"
            + "\n".join(failures),
            UserWarning,
            stacklevel=2,
        )
    results = pd.DataFrame(rows)
    scores = results["heldout_score"].to_numpy(dtype=np.float64)
    if not np.isfinite(scores).any():
        raise ValueError("no grid point could be fitted and scored; see the warnings for the reasons.")
    results["rank_test_score"] = pd.Series(-scores).rank(method="min", na_option="bottom").astype(int).to_numpy()
    best = int(np.nanargmax(np.where(np.isfinite(scores), scores, -np.inf)))
    return HeldoutSelection(
        best_params=dict(grid[best]), best_score=float(scores[best]), best_estimator=fitted[best], results=results
    )
