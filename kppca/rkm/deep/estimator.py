"""Deep RKM regression of the 2017 paper (§4-5): levels composed by :class:`DeepRKM`, fitted by a registered solver."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from sklearn.base import MultiOutputMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning

from ..._linalg.threads import compute_section
from ..._param_validation import Integral, Interval, Real, StrOptions, fit_context
from ..._validation import ArrayLike, torch_generator
from ...base import RUNTIME_CONSTRAINTS, KernelEstimator
from ...io import register
from ...kernels import Kernel
from . import feedforward as _feedforward  # noqa: F401 - registers solver="feedforward"
from . import levelwise as _levelwise  # noqa: F401 - registers solver="levelwise"
from . import reduced_set as _reduced_set  # noqa: F401 - registers solver="primal"
from ._state import DeepRKMState
from .levels import OBJECTIVES, Level, check_objective, default_levels
from .solvers import get_solver

__all__ = ["DeepRKM", "working_dtype"]

def working_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a deep RKM is solved in: float64 for float32 (or lower) input, else ``dtype``.

    The level-wise LS-SVM system has a condition number up to ``(||K||/eta1 + 1/eta2) / ridge``, ``1e7`` with
    the defaults (beyond float32's ``1/eps``), and the reduced-set objective squares Gram-scale quantities.
    """
    return torch.float64 if torch.finfo(dtype).bits < 64 else dtype


#: Constraints of the parameters of :func:`~kppca.rkm.deep.levels.default_levels` (spread with ``**``).
LEVEL_CONSTRAINTS: dict[str, list[Any]] = {
    "kernel": [Kernel, str, callable, None],
    "n_components": [list, tuple, Interval(Integral, 1, None, closed="left")],
    "ridge": [Interval(Real, 0, None, closed="neither")],
    "eta": [Interval(Real, 0, None, closed="neither")],
    "eta_levels": [list, tuple],
    "n_passes": [Interval(Integral, 0, None, closed="left")],
}


@register(name="kppca.DeepRKM")
class DeepRKM(MultiOutputMixin, RegressorMixin, KernelEstimator):
    """Deep RKM regression (2017 paper): an LS-SVM level and kernel PCA levels, coupled.

    Parameters
    ----------
    levels : list of Level, optional
        The architecture, in order: at least two :class:`Level` objects with exactly one output level, first
        or last. ``None``: ``[LSSVMLevel(kernel, ridge, eta), KPCALevel(s2, eta2), KPCALevel(s3, eta3)]``
        from the next four parameters (:func:`~kppca.rkm.deep.levels.default_levels`).
    kernel : Kernel, str or callable, default "rbf"
        LS-SVM kernel when ``levels`` is None. ``"rbf"`` (here or in a level) is ``RBF()`` with its width
        resolved on the level's training inputs (scikit-learn's ``gamma="scale"``) and recorded in ``levels_``.
    n_components : (int, int) or int, default (1, 1)
        ``(s2, s3)`` when ``levels`` is None (an int ``s`` means ``(s, s)``).
    ridge : float > 0, default 0.01
        LS-SVM ridge ``lambda1`` when ``levels`` is None.
    eta : float > 0, default 1.0
        LS-SVM ``eta1`` when ``levels`` is None.
    eta_levels : (float, float), default (1e-5, 1e-5)
        ``(eta2, eta3)`` when ``levels`` is None (the paper's synthetic example).
    n_passes : int >= 0, default 10
        ``solver="levelwise"``: forward-backward passes after the initialisation.
    solver : str, default "levelwise"
        A registered solver (:func:`~kppca.rkm.deep.solvers.register_solver`): ``"levelwise"`` (paper §5.1, all
        ``N`` points, linear kernels after the first level), ``"primal"`` (§5.2, reduced set, any kernels) or
        ``"feedforward"`` (§5.3, KPCA levels then the LS-SVM, one hidden layer per level).
    n_prototypes : int >= 1, default 100
        ``solver="primal"``: number of prototypes, a random subset of ``min(M, N)`` training points.
    c_stab : float >= 0, default 1.0
        ``solver="primal"`` / ``"feedforward"``: weight of the stabilisation terms.
    objective : {"stabilized", "variance", "regression"}, default "stabilized"
        ``solver="primal"`` / ``"feedforward"``: the minimised objective, Table 1's models B, A and C
        (:func:`~kppca.rkm.deep.levels.combine_terms`; ``"variance"`` needs ``c_stab > 0`` and is unbounded below).
    c0 : float > 0, default 1.0
        ``objective="variance"``: weight of the reward on the KPCA scores' variance (the paper tunes 0.1-1000).
    max_iter : int >= 0 or None, default None
        ``solver="primal"`` / ``"feedforward"``: L-BFGS iterations (a ConvergenceWarning when they run out).
        None: the solver's own budget (200 for ``"primal"``, 600 for ``"feedforward"``).
    tol : float >= 0, default 1e-10
        ``solver="primal"``: stop when an iteration lowers the objective by less than ``tol * max(1, |J|)``.
    progress : bool, default False
        Show a progress bar for the iterative solvers.
    hidden_units : int or sequence of int, optional
        ``solver="feedforward"``: hidden units of each level's layer (an int: every level's); None: 20.
    toeplitz : bool, default False
        ``solver="feedforward"``: Toeplitz ``U`` in every level but the last (model 2,B,T).
    random_state, dtype, device
        Seed (initial KPCA features of the level-wise solver; prototypes of the primal one), floating
        dtype and torch device. float32 data are solved in float64 (:func:`working_dtype`), predicted in float32.

    Notes
    -----
    Predictions come from the chain of levels (:func:`~kppca.rkm.deep.levels.run_chain`, eqs. 4.9, 4.16, 5.4).
    With the LS-SVM last, the level-wise solver's out-of-sample predictions can be poor (its ``Lam_l`` are
    calibrated afterwards); the primal solver fits the chain itself.

    Attributes
    ----------
    levels_ : list of Level
        The resolved architecture.
    hidden_features_ : list of Tensor
        ``H_l`` per level (``N x s_l`` level-wise; the prototypes' ``M x s_l`` in the primal).
    scales_ : list of Tensor or None
        ``diag(Lam_l)`` of the KPCA levels (None for the LS-SVM level).
    intercept_ : Tensor of shape (p,)
    objective_history_ : list of (str, float)
        Level-wise: ``("init" | "forward k" | "backward k", L)`` after each phase; primal: ``("iter k", J)``.
    residual_history_ : list of list of float
        Level-wise: each level's relative residual after the start and every pass
        (:meth:`Level.levelwise_residual`); primal: the gradient norm after every iteration.
    prototypes_ : Tensor
        Training points of the reduced set (primal), or all training points.
    prototype_indices_ : Tensor
    n_iter_ : int
    kernel_ : Kernel
        The first level's kernel.
    solver_ : str
        The solver that fitted the model (and so predicts with its own model, if it has one).
    solver_state_ : dict
        The solver's own state (e.g. the feed-forward network's weights).
    """

    _state_type = DeepRKMState

    _parameter_constraints = {
        "levels": [list, tuple, None],
        **LEVEL_CONSTRAINTS,
        "solver": [str],
        "n_prototypes": [Interval(Integral, 1, None, closed="left")],
        "c_stab": [Interval(Real, 0, None, closed="left")],
        "objective": [StrOptions(OBJECTIVES)],
        "c0": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 0, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "hidden_units": [Interval(Integral, 1, None, closed="left"), list, tuple, None],
        "toeplitz": ["boolean"],
        **RUNTIME_CONSTRAINTS,
    }
    _parameter_hints = {
        "levels": "levels is a list of Level objects (kppca.rkm.deep.levels); a kernel goes in DeepRKM(kernel=...).",
    }
    #: Parameters no longer taken, which model files written before still hold at None (dropped at load).
    _retired_params = ("solver_options",)
    _fitted_marker = "intercept_"

    def __init__(self, levels: Any = None, *, kernel: Any = "rbf", n_components: Sequence[int] = (1, 1),
                 ridge: float = 0.01, eta: float = 1.0, eta_levels: Sequence[float] = (1e-5, 1e-5),
                 n_passes: int = 10, solver: str = "levelwise",
                 n_prototypes: int = 100, c_stab: float = 1.0, objective: str = "stabilized", c0: float = 1.0,
                 max_iter: int | None = None, tol: float = 1e-10,
                 progress: bool = False, hidden_units: Any = None, toeplitz: bool = False, random_state: Any = None,
                 dtype: Any = None, device: Any = None):
        self._store_params(locals())

    def _resolve_levels(self, N: int) -> list[Level]:
        if self.levels is None:
            levels = default_levels(self.kernel, self.n_components, self.ridge, self.eta, self.eta_levels,
                                    output_last=get_solver(self.solver).output_last)
        else:
            levels = list(self.levels)
        supported = ("levels must be a list of at least two Level objects (kppca.rkm.deep.levels) with exactly one "
                     "output level (its is_output is True), placed first (paper eq. 4.18) or last (eq. 4.11)")
        bad = [type(v).__name__ for v in levels if not isinstance(v, Level)]
        if bad:
            raise ValueError(f"{supported}; got elements of type {bad}.")
        where = [i for i, v in enumerate(levels) if v.is_output]
        if len(levels) < 2 or len(where) != 1 or where[0] not in (0, len(levels) - 1):
            raise ValueError(f"{supported}; got {[type(v).__name__ for v in levels]}.")
        return [lev.resolved(i, N) for i, lev in enumerate(levels)]

    @fit_context
    @compute_section
    def fit(self, X: ArrayLike, y: ArrayLike) -> DeepRKM:
        """Fit on ``X`` (N, D) and ``y`` (N,) or (N, p) with the chosen solver."""
        Xt, Y = self._validate_fit_input(X, y, target="continuous", multi_output=True)
        solver = get_solver(self.solver)
        levels = self._resolve_levels(Xt.shape[0])
        work = working_dtype(self._dtype)
        Xw = Xt.to(work)
        try:
            levels[0] = levels[0].fit_kernel(Xw)
        except ValueError as exc:
            if not bool((Xw == Xw[:1]).all()):
                raise
            name = str(self._dtype).replace("torch.", "")
            hint = "" if self._dtype == torch.float64 else (
                f", or float64 data ({name} keeps fewer significant digits than the variation of X may need)")
            raise ValueError("X has no two distinct rows, so a kernel width cannot be taken from its spread; pass "
                             f"a kernel with a numeric width (e.g. kernel=RBF(1.0)){hint}.") from exc
        params = self.get_params(deep=False)
        if params["max_iter"] is None:  # each iterative solver's own budget
            params["max_iter"] = solver.max_iter
        check_objective(params)
        if solver.check is not None:
            solver.check(levels, params)
        generator = torch_generator(self.random_state, self._device)
        result = solver.fit(levels, Xw, Y.reshape(Y.shape[0], -1).to(work), params=params,
                            generator=generator)
        state = list(result.hidden_features) + [result.intercept] + [s for s in result.scales if s is not None]
        if not all(bool(torch.isfinite(t).all()) for t in state):
            raise ValueError(f"the {self.solver!r} solver produced non-finite hidden features: the data's scale is "
                             "beyond the working precision of the kernels; standardise X and y, or choose kernel "
                             "parameters suited to their scale" + (
                                 "; objective='variance' is unbounded below (Lam absorbs the growth of the KPCA "
                                 "scores): lower c0, raise c_stab or lower max_iter" if self.objective == "variance"
                                 else "") + ".")
        levels = levels if result.levels is None else result.levels
        self.levels_, self.kernel_ = levels, levels[0].kernel
        self.hidden_features_, self.intercept_, self.scales_ = result.hidden_features, result.intercept, result.scales
        self.prototypes_, self.prototype_indices_ = result.prototypes, result.prototype_indices
        self.objective_history_, self.residual_history_ = result.objective_history, result.residual_history
        self.n_iter_, self.solver_state_, self.solver_ = result.n_iter, result.extra, self.solver
        self._single_output = Y.ndim == 1
        if not result.converged:
            warnings.warn(f"DeepRKM(solver={self.solver!r}) stopped before convergence after {result.n_iter} "
                          f"iterations ({result.message}); increase max_iter or loosen tol.", ConvergenceWarning,
                          stacklevel=4)  # the caller of fit (through fit_context and compute_section)
        return self

    def predict(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Predictions (M,) or (M, p): eq. 4.16 (LS-SVM first) or the chain of eqs. 4.9 / 5.4 (LS-SVM last)."""
        Xt = self._validate_new_input(X, method="predict").to(self.intercept_.dtype)
        out = self.state_.outputs(Xt).to(self._dtype)
        return self._to_output(out[:, 0] if self._single_output else out, like=X)
