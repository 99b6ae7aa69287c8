"""LS-SVM regression and classification as RKMs (deep-RKM paper, §3.1), solved through Schur complements."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from scipy.optimize import minimize_scalar
from scipy.special import softmax
from sklearn.base import ClassifierMixin, MultiOutputMixin, RegressorMixin, clone

from .._linalg.threads import compute_section
from .._linalg import cholesky_or_none, matrix_scale, rounding_tolerance
from .._param_validation import Interval, Real, StrOptions, fit_context
from .._validation import ArrayLike
from ..base import DEVICE_CONSTRAINTS, KernelEstimator, detach_target
from ..features import FeatureMap
from ..io import register
from ..kernels import CenteredGram, Kernel, Linear, as_kernel
from ._state import LSSVMClassifierState, LSSVMRegressorState, map_features
from .shallow import resolve_kernel

__all__ = ["LSSVMClassifier", "LSSVMRegressor", "LSSVMSolution", "solve_lssvm_dual", "solve_lssvm_primal"]


class LSSVMSolution:
    """Result of one LS-SVM solve: ``coef`` (dual: ``H`` (N, p); primal: ``W`` (d_f, p)), ``intercept`` (p,)
    and ``loo_residuals`` (N, p), the exact ``y_i - f^{(-i)}(x_i)`` (Cawley & Talbot, 2004)."""

    def __init__(self, coef: torch.Tensor, intercept: torch.Tensor, loo_residuals: torch.Tensor):
        self.coef, self.intercept, self.loo_residuals = coef, intercept, loo_residuals


def solve_lssvm_dual(K: torch.Tensor, Y: torch.Tensor, ridge: float, eta: float) -> LSSVMSolution:
    """Solve the dual system ``[[K/eta + ridge I, 1], [1^T, 0]] [H; b^T] = [Y; 0]`` by its Schur complement.

    Parameters
    ----------
    K : Tensor of shape (N, N), symmetric PSD Gram matrix
    Y : Tensor of shape (N, p)
    ridge, eta : float > 0

    Returns
    -------
    LSSVMSolution
        ``coef`` is ``H`` (N, p), predicting ``y(x) = (1/eta) sum_j h_j k(x_j, x) + b``.

    Raises
    ------
    ValueError
        ``K/eta + ridge I`` is not numerically positive definite: a ridge below its rounding level, or a non-PSD kernel.
    """
    N = K.shape[0]
    A = K / eta
    A.diagonal().add_(ridge)
    L = cholesky_or_none(A)
    if L is None:
        # K is PSD up to its rounding errors, of size N eps max|K| / eta in A (Weyl): the ridge lifts the
        # spectrum of A above that level only if it is larger.
        level = rounding_tolerance(K.dtype, N, matrix_scale(K) / eta)
        name = str(K.dtype).replace("torch.", "")
        if ridge <= level:
            more = "use dtype='float64', " if K.dtype != torch.float64 else ""
            raise ValueError(
                f"the LS-SVM dual system K/eta + ridge I is singular to {name} precision: ridge={ridge:.3g} is "
                f"below the rounding level {level:.3g} of K/eta (N eps max|K| / eta). The problem's conditioning "
                f"is beyond {name}: {more}use a larger ridge, or rescale X (e.g. standardise it)."
            )
        raise ValueError(
            "the matrix K/eta + ridge I of the LS-SVM dual system is not numerically positive definite although "
            f"ridge={ridge:.3g} is above its rounding level {level:.3g}: the kernel is not positive "
            "semi-definite; use a valid (PSD) kernel."
        )
    ones = torch.ones(N, 1, dtype=K.dtype, device=K.device)
    rhs = torch.cat([Y, ones], dim=1)
    sol = torch.cholesky_solve(rhs, L)
    Psi, nu = sol[:, :-1], sol[:, -1:]
    s = nu.sum()
    b = Psi.sum(0) / s
    H = Psi - nu * b[None, :]
    # diag(M^{-1})[:N] = diag(A^{-1}) - nu^2 / s (block inverse of the bordered matrix).
    Linv = torch.linalg.solve_triangular(L, torch.eye(N, dtype=K.dtype, device=K.device), upper=False)
    diag = (Linv * Linv).sum(0) - nu[:, 0] ** 2 / s
    return LSSVMSolution(H, b, H / diag[:, None])


def solve_lssvm_primal(Phi: torch.Tensor, Y: torch.Tensor, ridge: float, eta: float) -> LSSVMSolution:
    """Solve the primal system ``[[Phi^T Phi + ridge eta I, Phi^T 1], [1^T Phi, N]] [W; b^T] = [Phi^T Y; 1^T Y]``.

    Eliminating ``b`` leaves a centred ridge problem, solved as least squares by QR: the normal equations
    square the condition number (singular at 1e3-scaled float32 data).

    Parameters
    ----------
    Phi : Tensor of shape (N, d_f)
    Y : Tensor of shape (N, p)
    ridge, eta : float > 0

    Returns
    -------
    LSSVMSolution
        ``coef`` is ``W`` (d_f, p), predicting ``y(x) = W^T phi(x) + b``.

    Raises
    ------
    ValueError
        When the features are not finite.
    """
    N, d = Phi.shape
    if not bool(torch.isfinite(Phi).all()):
        raise ValueError("the features of the LS-SVM primal system are not finite; check the feature map and X.")
    mu, ybar = Phi.mean(0), Y.mean(0)
    Pc, Yc = Phi - mu, Y - ybar
    root = (ridge * eta) ** 0.5
    M = torch.cat([Pc, root * torch.eye(d, dtype=Phi.dtype, device=Phi.device)], dim=0)
    Q, R = torch.linalg.qr(M)  # (N + d, d), (d, d); R is non-singular: its rows include sqrt(ridge eta) I
    W = torch.linalg.solve_triangular(R, Q[:N].T @ Yc, upper=True)
    b = ybar - mu @ W
    E = Y - Phi @ W - b
    # Phi_c G^{-1} Phi_c^T = Q_1 Q_1^T with Q_1 = Q[:N] = Phi_c R^{-1}.
    hat = 1.0 / N + (Q[:N] * Q[:N]).sum(1)
    return LSSVMSolution(W, b, E / (1.0 - hat)[:, None])


def _fit_temperature(logits: np.ndarray, codes: np.ndarray) -> float:
    """Temperature ``T`` minimising the mean log-loss of ``softmax(logits / T)`` (searched on log T)."""

    def loss(log_t: float) -> float:
        Z = logits / np.exp(log_t)
        Z = Z - Z.max(1, keepdims=True)
        return float(np.mean(np.log(np.exp(Z).sum(1)) - Z[np.arange(len(codes)), codes]))

    res = minimize_scalar(loss, bounds=(-7.0, 7.0), method="bounded")
    return float(np.exp(res.x))


class _LSSVMBase(KernelEstimator):
    """Shared fit machinery of the LS-SVM regressor and classifier."""

    _parameter_constraints = {
        "kernel": [Kernel, str, callable, None],
        "feature_map": [FeatureMap, None],
        "ridge": [Interval(Real, 0, None, closed="neither")],
        "eta": [Interval(Real, 0, None, closed="neither")],
        "solver": [StrOptions({"auto", "dual", "primal"})],
        **DEVICE_CONSTRAINTS,
    }
    _parameter_hints = {
        "ridge": "ridge is the regularisation of the dual system (Suykens' 1/gamma); use a small positive value "
        "such as 1e-3 for a close fit.",
    }
    _fitted_marker = "intercept_"

    def _resolve(self, N: int, d: int) -> str:
        has_map = self.feature_map is not None or isinstance(as_kernel(self.kernel), Linear)
        if self.solver == "primal" and not has_map:
            raise ValueError(
                "solver='primal' needs explicit features: pass feature_map=... (e.g. "
                "kppca.features.RandomFourierFeatures) or kernel='linear', or use solver='dual'."
            )
        if self.solver != "auto":
            return self.solver
        if not has_map:
            return "dual"
        d_f = d if self.feature_map is None else getattr(self.feature_map, "n_features", None) or d
        return "primal" if d_f < N else "dual"

    def _solve(self, X: torch.Tensor, Y: torch.Tensor) -> None:
        N, d = X.shape
        self.solver_ = self._resolve(N, d)
        ridge, eta = float(self.ridge), float(self.eta)
        self.feature_map_ = None if self.feature_map is None else clone(self.feature_map).fit(X.cpu())
        if self.feature_map_ is not None:
            self.kernel_ = self.feature_map_.as_kernel()
        else:
            self.kernel_ = Linear() if self.solver_ == "primal" else resolve_kernel(self.kernel, X)
        if self.solver_ == "primal":
            sol = solve_lssvm_primal(map_features(self.feature_map_, X), Y, ridge, eta)
            self.coef_ = sol.coef
        else:
            # The raw K (center=False): the bordered system's intercept absorbs the centering.
            K = CenteredGram(self.kernel_, X, center=False, what="Gram matrix of `kernel` on X").matrix
            sol = solve_lssvm_dual(K, Y, ridge, eta)
            self.hidden_features_ = sol.coef
            self.X_fit_ = X
        self.intercept_ = sol.intercept
        self.loo_residuals_ = sol.loo_residuals

    def _raw_decision(self, X: ArrayLike, method: str) -> torch.Tensor:
        """Outputs ``f(x)`` (M, p) of the fitted linear system on new inputs (validated for ``method``)."""
        Xt = self._validate_new_input(X, method=method)  # first: it raises NotFittedError before state_ is read
        return self.state_.outputs(Xt, float(self.eta))


@register(name="kppca.LSSVMRegressor")
class LSSVMRegressor(MultiOutputMixin, RegressorMixin, _LSSVMBase):
    """LS-SVM regression in RKM form, solved in the dual (kernel) or the primal (explicit features).

    Parameters
    ----------
    kernel : Kernel, str, callable or None, default "rbf"
        Kernel of the dual system (with a ``feature_map``, the map's kernel). The default ``"rbf"`` takes its
        bandwidth from the data (see :mod:`kppca.kernels.bandwidth`).
    feature_map : kppca.features.FeatureMap or None, default None
        Explicit features for the primal system, fitted in ``fit`` (``kernel="linear"``: the identity).
    ridge : float > 0, default 0.1
        The paper's ``lambda``, added to ``K/eta`` in the dual system (Suykens' ``1/gamma``).
    eta : float > 0, default 1.0
        Weight of ``eta/2 Tr(W^T W)``; the kernel enters as ``K/eta``.
    solver : {"auto", "dual", "primal"}, default "auto"
        "auto": the primal when explicit features exist and are fewer than the training points.
    dtype, device
        Computation dtype (float64 by default, float32 data stays float32) and torch device.

    Attributes
    ----------
    hidden_features_ : Tensor of shape (N, p)
        Hidden features ``H`` (dual solver).
    coef_ : Tensor of shape (d_f, p)
        Interconnection matrix ``W`` (primal solver).
    intercept_ : Tensor of shape (p,)
    loo_residuals_ : Tensor of shape (N, p)
        Exact leave-one-out residuals ``y_i - f^{(-i)}(x_i)``; their mean square tunes ``ridge``.
    solver_ : str
    kernel_ : Kernel
    n_features_in_ : int
    """

    _state_type = LSSVMRegressorState

    def __init__(
        self,
        kernel: Kernel | Callable | str | None = "rbf",
        *,
        feature_map: FeatureMap | None = None,
        ridge: float = 0.1,
        eta: float = 1.0,
        solver: str = "auto",
        dtype: Any = None,
        device: Any = None,
    ):
        self._store_params(locals())

    @fit_context
    @compute_section
    def fit(self, X: ArrayLike, y: ArrayLike) -> LSSVMRegressor:
        """Fit to inputs ``X`` (N, D) and targets ``y`` (N,) or (N, p). Returns ``self``."""
        Xt, Y = self._validate_fit_input(X, y, target="continuous", multi_output=True)
        self._single_output = Y.ndim == 1
        self._solve(Xt, Y.reshape(Y.shape[0], -1))
        return self

    def predict(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Predictions ``(M,)`` (single output) or ``(M, p)``."""
        out = self._raw_decision(X, "predict")
        if self._single_output:
            out = out[:, 0]
        return self._to_output(out, X)

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: Any = None) -> float:
        """R^2 of :meth:`predict` on ``X`` against ``y`` (a tensor ``y`` may require grad)."""
        return super().score(*detach_target(X, y), sample_weight=sample_weight)


@register(name="kppca.LSSVMClassifier")
class LSSVMClassifier(ClassifierMixin, _LSSVMBase):
    """LS-SVM classification in RKM form: the regression system on ±1 codes of the labels.

    Binary problems use one output (+1 for ``classes_[1]``); multiclass ones one-vs-all (``"ova"``) or
    the ``ceil(log2 p)`` bits of the class index (``"code"``), decoded by the best-correlated codeword.

    Parameters
    ----------
    kernel, feature_map, ridge, eta, solver, dtype, device
        As in :class:`LSSVMRegressor`.
    multi_class : {"ova", "code"}, default "ova"

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    codebook_ : Tensor of shape (n_classes, n_outputs)
        ±1 target code of each class.
    hidden_features_, coef_, intercept_, loo_residuals_, solver_, kernel_, n_features_in_
        As in :class:`LSSVMRegressor`, for the coded targets.
    temperature_ : float
        Calibration temperature of :meth:`predict_proba`.
    """

    _parameter_constraints = {**_LSSVMBase._parameter_constraints, "multi_class": [StrOptions({"ova", "code"})]}
    _state_type = LSSVMClassifierState

    def __init__(
        self,
        kernel: Kernel | Callable | str | None = "rbf",
        *,
        feature_map: FeatureMap | None = None,
        ridge: float = 0.1,
        eta: float = 1.0,
        solver: str = "auto",
        multi_class: str = "ova",
        dtype: Any = None,
        device: Any = None,
    ):
        self._store_params(locals())

    @staticmethod
    def make_codebook(n_classes: int, multi_class: str = "ova") -> np.ndarray:
        """±1 codebook (n_classes, n_outputs) for one-vs-all or minimum-length binary output codes."""
        if n_classes == 2:
            return np.array([[-1.0], [1.0]])
        if multi_class == "ova":
            return 2.0 * np.eye(n_classes) - 1.0
        bits = max(1, math.ceil(math.log2(n_classes)))
        idx = np.arange(n_classes)[:, None]
        return 2.0 * ((idx >> np.arange(bits)[None, :]) & 1) - 1.0

    @fit_context
    @compute_section
    def fit(self, X: ArrayLike, y: ArrayLike) -> LSSVMClassifier:
        """Fit to inputs ``X`` (N, D) and class labels ``y`` (N,). Returns ``self``."""
        Xt, codes = self._validate_fit_input(X, y, target="classes")
        self.codebook_ = torch.as_tensor(self.make_codebook(len(self.classes_), self.multi_class),
                                         dtype=self._dtype, device=self._device)
        Y = self.codebook_[codes]
        self._solve(Xt, Y)
        loo_scores = self._class_scores(Y - self.loo_residuals_).detach().cpu().numpy()
        self.temperature_ = _fit_temperature(self._logits(loo_scores), codes.cpu().numpy())
        return self

    def _logits(self, S: np.ndarray) -> np.ndarray:
        """Per-class logits (M, n_classes) from class scores (binary: ``[0, s]``)."""
        return np.column_stack([np.zeros(len(S)), S[:, 0]]) if len(self.classes_) == 2 else S

    def _class_scores(self, F: torch.Tensor) -> torch.Tensor:
        """Per-class scores from output values F (M, n_outputs): binary -> (M, 1), else correlations (M, p)."""
        return F if len(self.classes_) == 2 else F @ self.codebook_.T

    def decision_function(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Scores: (M,) for binary problems (positive means ``classes_[1]``), else (M, n_classes): the outputs
        (one-vs-all) or their correlations with the codewords (output codes)."""
        S = self._class_scores(self._raw_decision(X, "decision_function"))
        if len(self.classes_) == 2:
            S = S[:, 0]
        return self._to_output(S, X)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Class labels (M,) (a numpy array, as scikit-learn)."""
        S = self._class_scores(self._raw_decision(X, "predict"))
        idx = (S[:, 0] > 0).long() if len(self.classes_) == 2 else S.argmax(1)
        return self.classes_[idx.cpu().numpy()]

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities (M, n_classes): ``softmax(scores / temperature_)`` (binary: a sigmoid).

        The temperature minimises the log-loss of the exact leave-one-out scores of the training points, so the
        probabilities are calibrated as on unseen points; their argmax is :meth:`predict`'s class.
        """
        S = self._class_scores(self._raw_decision(X, "predict_proba")).detach().cpu().numpy()
        return softmax(self._logits(S) / self.temperature_, axis=1)

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: Any = None) -> float:
        """Mean accuracy of :meth:`predict` on ``X`` against ``y`` (a tensor ``y`` may require grad)."""
        return super().score(*detach_target(X, y), sample_weight=sample_weight)
