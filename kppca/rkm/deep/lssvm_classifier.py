"""Classification with the LS-SVM-first deep RKM (deep-RKM paper §4.2, §6.2.2).

A :class:`~kppca.rkm.DeepRKM` whose LS-SVM level has one ±1 output per class, solved level-wise (eq. 4.18);
the class is the argmax of the level-1 outputs ``f(x) = (1/eta1) sum_j h1_j k(x_j, x) + b`` (eq. 4.16).
Paper settings (USPS): ``RBF(bandwidth=sqrt(45))``, ``s2 = 10, s3 = 1``, ``lambda1 = 1e-6``, ``1/eta2 = 1/eta3 = 1e6``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from scipy.special import softmax
from sklearn.base import ClassifierMixin

from ..._linalg.threads import compute_section
from ..._param_validation import fit_context
from ..._validation import ArrayLike
from ...base import DEVICE_CONSTRAINTS, KernelEstimator
from ...io import register
from ...kernels import Kernel
from ..lssvm import _fit_temperature, solve_lssvm_dual
from ._state import DeepLSSVMClassifierState
from .estimator import LEVEL_CONSTRAINTS, DeepRKM, working_dtype
from .levels import default_levels

__all__ = ["DeepLSSVMClassifier"]


@register(name="kppca.DeepLSSVMClassifier")
class DeepLSSVMClassifier(ClassifierMixin, KernelEstimator):
    """Deep RKM classifier: LS-SVM (one output per class) + two linear KPCA levels, solved level-wise.

    Parameters
    ----------
    kernel : Kernel, str or callable, default "rbf"
        Level-1 kernel on the inputs.
    n_components : (int, int) or int, default (1, 1)
        ``(s2, s3)`` hidden features of levels 2 and 3 (``s3 <= s2 <= N``: level 3's kernel on ``H2`` has rank ``s2``).
    ridge : float > 0, default 1e-3
        Level-1 ``lambda1``: the ridge added to the fused matrix in the LS-SVM system.
    eta : float > 0, default 1.0
        Level-1 ``eta1``.
    eta_levels : (float, float), default (1e-2, 1e-2)
        ``(eta2, eta3)``; small values weigh levels 2 and 3 strongly (the paper's ``1e-6`` with
        ``ridge = 1e-6`` gives a level-1 condition number ~1e12, solved in float64).
    n_passes : int >= 0, default 2
        Forward-backward passes (0 is the plain one-vs-all LS-SVM).
    random_state, dtype, device
        Seed of the initial KPCA features, floating dtype, torch device.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    dual_coef_ : Tensor of shape (N, n_classes)
        Level-1 hidden features ``H1``.
    intercept_ : Tensor of shape (n_classes,)
    hidden_features_ : list of 2 Tensors, shapes (N, s2) and (N, s3)
        ``H2, H3``.
    X_fit_ : Tensor of shape (N, D)
        Training inputs in the working dtype (float64 for float32 data, as DeepRKM).
    kernel_ : Kernel
    objective_history_ : list of (str, float)
        The reduced deep objective after every phase (not monotone: saddle point, see DeepRKM).
    residual_history_ : list of list of float
        Relative residuals of the level equations after every pass.
    temperature_ : float
        Temperature of :meth:`predict_proba`, fitted on leave-one-out outputs of level 1.
    n_features_in_ : int
    """

    _state_type = DeepLSSVMClassifierState

    _parameter_constraints = {**LEVEL_CONSTRAINTS, "random_state": ["random_state"], **DEVICE_CONSTRAINTS}

    def __init__(self, kernel: Kernel | Callable | str | None = "rbf", *, n_components: Sequence[int] | int = (1, 1),
                 ridge: float = 1e-3, eta: float = 1.0, eta_levels: Sequence[float] = (1e-2, 1e-2),
                 n_passes: int = 2, random_state: Any = None, dtype: Any = None, device: Any = None):
        self._store_params(locals())

    _fitted_marker = "intercept_"

    @fit_context
    @compute_section
    def fit(self, X: ArrayLike, y: ArrayLike) -> DeepLSSVMClassifier:
        """Fit to inputs ``X`` (N, D) and class labels ``y`` (N,). Returns ``self``."""
        Xt, codes = self._validate_fit_input(X, y, target="classes")
        Xt = Xt.to(working_dtype(self._dtype))  # float32 data are solved in float64 (as DeepRKM)
        levels = default_levels(self.kernel, self.n_components, self.ridge, self.eta, self.eta_levels)
        s2, s3 = levels[1].width(0), levels[2].width(0)
        if s3 > s2:
            raise ValueError(f"n_components must be (s2, s3) with s3 <= s2 (level 3's linear kernel on H2 has "
                             f"rank s2), got {self.n_components!r}.")
        if s2 > Xt.shape[0]:
            raise ValueError(f"n_components: s2 = {s2} exceeds the number of training points N = {Xt.shape[0]}.")
        Y = -torch.ones(Xt.shape[0], len(self.classes_), dtype=Xt.dtype, device=self._device)
        Y[torch.arange(Xt.shape[0], device=self._device), codes] = 1.0
        try:
            deep = DeepRKM(levels, n_passes=int(self.n_passes), solver="levelwise", random_state=self.random_state,
                           dtype=Xt.dtype, device=Xt.device).fit(Xt, Y)
        except ValueError as exc:  # DeepRKM's advice is about y and its solvers; here y is +-1 codes
            if "left the floating-point range" not in str(exc):
                raise
            raise ValueError(f"the level-wise passes left the floating-point range with ridge={self.ridge!r} and "
                             f"eta_levels={self.eta_levels!r}: the level-1 system is too close to singular; use a "
                             "larger ridge (default 1e-3) or larger eta_levels.") from exc
        H1, H2, H3 = deep.hidden_features_
        self.kernel_ = deep.kernel_
        self.X_fit_ = Xt
        self.dual_coef_, self.intercept_ = H1, deep.intercept_
        self.hidden_features_ = [H2, H3]
        self.objective_history_, self.residual_history_ = deep.objective_history_, deep.residual_history_
        # Calibration: level 1 with levels 2-3 held fixed is an LS-SVM with the fused matrix
        # K/eta1 + H2 H2^T/eta2; its exact leave-one-out outputs are honest scores.
        eta1 = float(self.eta)
        fused = self.kernel_.gram(Xt, Xt) + (eta1 / levels[1].eta) * (H2 @ H2.T)
        loo = Y - solve_lssvm_dual(fused, Y, float(self.ridge), eta1).loo_residuals
        self.temperature_ = _fit_temperature(loo.detach().cpu().numpy(), codes.cpu().numpy())
        return self

    def _outputs(self, X: ArrayLike, method: str) -> torch.Tensor:
        Xt = self._validate_new_input(X, method=method).to(self.X_fit_.dtype)
        F = self.kernel_.gram(Xt, self.X_fit_) @ self.dual_coef_ / float(self.eta) + self.intercept_
        return F.to(self._dtype)

    def decision_function(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Level-1 outputs ``f(x)`` (M, n_classes); two classes: ``f_1 - f_0`` (M,), positive for ``classes_[1]``."""
        F = self._outputs(X, "decision_function")
        if len(self.classes_) == 2:
            F = F[:, 1] - F[:, 0]
        return self._to_output(F, X)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """``classes_[argmax_k f_k(x)]`` (M,)."""
        idx = self._outputs(X, "predict").argmax(1).cpu().numpy()
        return self.classes_[idx]

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """``softmax(f(x) / temperature_)`` (M, n_classes), a calibration (not a likelihood) whose argmax is
        :meth:`predict`'s class."""
        F = self._outputs(X, "predict_proba").detach().cpu().numpy()
        return softmax(F / self.temperature_, axis=1)
