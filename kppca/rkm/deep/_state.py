"""The fitted state of the deep RKMs, one record each (:mod:`kppca.io.record`), and the predictions that their
checks and their estimators share: the output of a :class:`~kppca.rkm.DeepRKM` and the class scores of a
:class:`~kppca.rkm.DeepRKMClassifier` from its smoother codes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from ..._param_validation import Integral, Interval, Real
from ...io import ArraySpec, DictOf, ListOf, TensorSpec, TupleOf, register
from ...io.record import EstimatorState, FittedState, fitted
from ...kernels import Kernel, squared_distances
from ...preimage import kernel_smoother
from ...preimage.bandwidth_search import gaussian_smoother_weights
from .levels import Level, run_chain
from .solvers import get_solver

__all__ = ["BinaryDeepModel", "DeepLSSVMClassifierState", "DeepRKMClassifierState", "DeepRKMState",
           "class_scores", "mlp_scores", "smoother_codes"]

_REAL = Interval(Real, None, None)  # finite
_COUNT = Interval(Integral, 1, None, closed="left")
_STEPS = Interval(Integral, 0, None, closed="left")
_HISTORY = ListOf([TupleOf([str], [_REAL])])  # (phase, objective) after each phase or iteration
#: Residuals or gradient norms per level and pass: diagnostics, which may overflow (a gradient at a start far
#: from the optimum in float32-scaled data).
_RESIDUALS = ListOf([ListOf([Real])])


# ----------------------------------------------------------------------------- DeepRKM
@dataclasses.dataclass(frozen=True, kw_only=True)
class DeepRKMState(EstimatorState):
    """:class:`~kppca.rkm.DeepRKM`'s record ("m" prototypes), in float64; ``solver_state_`` is the solver's own
    state (e.g. the feed-forward network's weights), ``solver_`` the solver that fitted (and so predicts)."""

    _single_output: bool = fitted("boolean")
    solver_: str = fitted(str)
    levels_: list = fitted(ListOf([Level]))
    kernel_: Any = fitted(Kernel, callable)
    prototypes_: torch.Tensor = fitted(TensorSpec(torch.float64, ("m", "n_features_in_")))
    prototype_indices_: torch.Tensor = fitted(TensorSpec("int", ("m",)))
    hidden_features_: list = fitted(ListOf([TensorSpec(torch.float64, ndim=2)]))  # prototypes, or every point
    intercept_: torch.Tensor = fitted(TensorSpec(torch.float64, ndim=1))
    # Level-wise Lam_l are least-squares calibrations of the chain, of either sign; the check below wants
    # finite outputs.
    scales_: list = fitted(ListOf([TensorSpec(torch.float64, ndim=1), None]))
    objective_history_: list = fitted(_HISTORY)
    residual_history_: list = fitted(_RESIDUALS)
    n_iter_: int = fitted(_STEPS)
    solver_state_: dict = fitted(DictOf([str], [TensorSpec(torch.float64), ListOf([TensorSpec(torch.float64),
                                                                                     "boolean"]),
                                                _REAL, _STEPS, str, None]))

    @classmethod
    def from_old_state(cls, state: dict[str, Any]) -> dict[str, Any]:
        """Version 3 did not store ``solver_``: of its solvers only the feed-forward one keeps a network
        (``solver_state_``), and only the level-wise one starts its history at ``"init"``."""
        state = super().from_old_state(state)
        if "solver_" not in state:
            history = state.get("objective_history_") or [("",)]
            state["solver_"] = ("feedforward" if state.get("solver_state_") else
                                "levelwise" if history[0][0] == "init" else "primal")
        return state

    def check(self) -> str | None:
        """The levels, hidden features and solver state fit together: one point's outputs."""
        if self.intercept_.numel() < 1 or (self._single_output and self.intercept_.numel() != 1):
            return f"intercept_ has {self.intercept_.numel()} outputs"
        for i, (H, lam) in enumerate(zip(self.hidden_features_, self.scales_)):
            if lam is not None and lam.shape != H.shape[1:]:
                return f"scales_[{i}] has shape {tuple(lam.shape)}, hidden_features_[{i}] {tuple(H.shape)}"
        X = torch.zeros(1, self.n_features_in_, dtype=self.intercept_.dtype, device=self.intercept_.device)
        out = self.outputs(X)
        if tuple(out.shape) != (1, self.intercept_.shape[0]) or not bool(torch.isfinite(out).all()):
            return (f"its outputs for one point have shape {tuple(out.shape)} or are not finite (expected "
                    f"(1, {self.intercept_.shape[0]}), finite)")
        return None

    def outputs(self, X: torch.Tensor) -> torch.Tensor:
        """Outputs (M, p) on inputs ``X`` in the working dtype: the solver's own model (feed-forward networks), else
        the chain of levels."""
        own = get_solver(self.solver_).predict
        with torch.no_grad():
            if own is not None:
                return own(self.levels_, self.solver_state_, self.scales_, self.intercept_, X)
            return run_chain(self.levels_, X, self.prototypes_, self.hidden_features_, self.intercept_, self.scales_)[0]


# ----------------------------------------------------------------------------- DeepRKMClassifier
@register(name="kppca.rkm.BinaryDeepModel")
@dataclasses.dataclass(frozen=True, kw_only=True)
class BinaryDeepModel(FittedState):
    """Fitted state of one deep model (one binary problem, or the shared MLP code).

    ``H`` (N, sum s_j) stacked orthonormal hidden features; ``w`` (s_L, 1) and ``b`` (1,) the LS-SVM head (None
    for the MLP head); ``history`` the objective per iteration.
    """

    H: torch.Tensor = fitted(TensorSpec(ndim=2))
    w: torch.Tensor | None = fitted(TensorSpec(ndim=2), None)
    b: torch.Tensor | None = fitted(TensorSpec(ndim=1), None)
    history: list = fitted(ListOf([_REAL]))
    n_iter: int = fitted(_STEPS)
    converged: bool = fitted("boolean")


def mlp_scores(Z: torch.Tensor, params: list[torch.Tensor], scale: float) -> torch.Tensor:
    """Logits (M, p) of codes ``Z`` (M, s_L); the codes are multiplied by ``scale = sqrt(N)`` first."""
    return torch.relu(scale * Z @ params[0] + params[1]) @ params[2] + params[3]


def class_scores(Z: list[torch.Tensor], models: list[BinaryDeepModel], mlp_params: list | None,
                 mlp_input_scale: float | None) -> torch.Tensor:
    """Class scores (M, p) (binary LS-SVM: (M, 1)) from the last-level codes of each model: the MLP head when the
    classifier has one (``mlp_params``), else each model's LS-SVM head."""
    if mlp_params is not None:
        return mlp_scores(Z[0], mlp_params, mlp_input_scale)
    return torch.cat([z @ m.w + m.b for z, m in zip(Z, models)], dim=1)


def smoother_codes(X: torch.Tensor, X_fit: torch.Tensor, bandwidth: float, models: list[BinaryDeepModel],
                   s_L: int) -> list[torch.Tensor]:
    """Last-level codes (M, s_L) of new points ``X`` for every model: the Gaussian smoother of the training codes
    (nearest training points for far queries)."""
    W = gaussian_smoother_weights(squared_distances(X, X_fit), bandwidth, X, X_fit)
    return [kernel_smoother(W, m.H[:, -s_L:]) for m in models]


@dataclasses.dataclass(frozen=True, kw_only=True)
class DeepRKMClassifierState(EstimatorState):
    """:class:`~kppca.rkm.DeepRKMClassifier`'s record ("n" training points); ``mlp_params_`` and
    ``mlp_input_scale_`` exist for the MLP head only, ``median_nn_distance_`` for a searched smoother width."""

    classes_: np.ndarray = fitted(ArraySpec(ndim=1))
    kernel_: Any = fitted(Kernel, callable)
    unsupervised_history_: list = fitted(ListOf([_REAL]), optional=True)  # init="kpca" only
    models_: list = fitted(ListOf([BinaryDeepModel]))
    n_components_: list = fitted(ListOf([_COUNT]))
    X_fit_: torch.Tensor = fitted(TensorSpec(shape=("n", "n_features_in_")))
    hidden_features_: list = fitted(ListOf([TensorSpec(shape=("n", None))]))
    n_iter_: int = fitted(_STEPS)
    smoother_scores_: dict = fitted(DictOf([Interval(Real, 0, None, closed="neither")], [Interval(Real, 0, 1)]))
    median_nn_distance_: float = fitted(Interval(Real, 0, None, closed="left"), optional=True)
    smoother_bandwidth_: float = fitted(Interval(Real, 0, None, closed="neither"))
    mlp_params_: list = fitted(ListOf([TensorSpec(ndim=2), TensorSpec(ndim=1)], length=4), optional=True)
    mlp_input_scale_: float = fitted(Interval(Real, 0, None, closed="neither"), optional=True)

    def check(self) -> str | None:
        """The models, head and classes fit together, and one point's scores are finite."""
        p, sizes, N = len(self.classes_), self.n_components_, self.X_fit_.shape[0]
        if p < 2 or len(np.unique(self.classes_)) != p:
            return f"classes_ is {self.classes_!r}; a classifier needs at least 2 distinct classes"
        stored = self.stored()
        P, scale = stored.get("mlp_params_"), stored.get("mlp_input_scale_")
        mlp = P is not None or scale is not None  # fit sets both for the MLP head only
        head = "mlp" if mlp else "lssvm"
        expected = 1 if (mlp or p == 2) else p
        if len(self.models_) != expected or len(self.hidden_features_) != expected:
            return (f"models_ has {len(self.models_)} and hidden_features_ {len(self.hidden_features_)} models, "
                    f"expected {expected} (head={head!r}, {p} classes)")
        s, s_L = sum(sizes), sizes[-1]
        for k, (m, H) in enumerate(zip(self.models_, self.hidden_features_)):
            if tuple(m.H.shape) != (N, s) or tuple(H.shape) != (N, s):
                return (f"models_[{k}].H has shape {tuple(m.H.shape)} and hidden_features_[{k}] {tuple(H.shape)}, "
                        f"expected (N, sum(n_components_)) = ({N}, {s})")
            if not mlp and (m.w is None or m.b is None or tuple(m.w.shape) != (s_L, 1) or tuple(m.b.shape) != (1,)):
                shapes = [None if t is None else tuple(t.shape) for t in (m.w, m.b)]
                return f"models_[{k}] has head weights w, b of shapes {shapes}, expected [({s_L}, 1), (1,)]"
        if mlp:
            hidden = P[1].shape[0] if P is not None else 0
            want = [(s_L, hidden), (hidden,), (hidden, p), (p,)]
            if P is None or scale is None or [tuple(t.shape) for t in P] != want or hidden < 1:
                got = None if P is None else [tuple(t.shape) for t in P]
                return f"mlp_params_ has shapes {got}, expected {want} (codes of {s_L} columns, {p} classes)"
        Z = smoother_codes(self.X_fit_[:1], self.X_fit_, self.smoother_bandwidth_, self.models_, s_L)
        S = class_scores(Z, self.models_, P, scale)
        cols = 1 if (not mlp and p == 2) else p
        if tuple(S.shape) != (1, cols) or not bool(torch.isfinite(S).all()):
            return f"its scores for one point have shape {tuple(S.shape)} or are not finite (expected (1, {cols}))"
        return None


# ----------------------------------------------------------------------------- DeepLSSVMClassifier
@dataclasses.dataclass(frozen=True, kw_only=True)
class DeepLSSVMClassifierState(EstimatorState):
    """:class:`~kppca.rkm.DeepLSSVMClassifier`'s record ("n" training points, "c" classes), in float64."""

    classes_: np.ndarray = fitted(ArraySpec(shape=("c",)))
    kernel_: Any = fitted(Kernel, callable)
    X_fit_: torch.Tensor = fitted(TensorSpec(torch.float64, ("n", "n_features_in_")))
    dual_coef_: torch.Tensor = fitted(TensorSpec(torch.float64, ("n", "c")))
    intercept_: torch.Tensor = fitted(TensorSpec(torch.float64, ("c",)))
    hidden_features_: list = fitted(ListOf([TensorSpec(torch.float64, ("n", None))], length=2))
    objective_history_: list = fitted(_HISTORY)
    residual_history_: list = fitted(_RESIDUALS)
    temperature_: float = fitted(Interval(Real, 0, None, closed="neither"))

