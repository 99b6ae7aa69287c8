"""Least-squares support vector machines written as Restricted Kernel Machines.

The RKM form of LS-SVM regression (deep-RKM paper, §3.1) is

``J = sum_i (y_i - W^T phi(x_i) - b)^T h_i - lambda/2 sum_i h_i^T h_i + eta/2 Tr(W^T W)``

with one hidden (conjugate) feature ``h_i`` (p,) per training point. Its
stationary points give two equivalent linear systems:

dual (kernel ``K``, N x N)
    ``[[K/eta + lambda I, 1], [1^T, 0]] [H; b^T] = [Y; 0]``, prediction
    ``y(x) = (1/eta) sum_j h_j k(x_j, x) + b``;
primal (explicit features ``Phi``, N x d_f)
    ``[[Phi^T Phi + lambda eta I, Phi^T 1], [1^T Phi, N]] [W; b^T] = [Phi^T Y; 1^T Y]``,
    prediction ``y(x) = W^T phi(x) + b``; ``W = Phi^T H / eta`` links the two.

Regularisation convention: ``lambda_`` multiplies the identity in the dual
system, so it is the *inverse* of Suykens' ``gamma`` (and of kerch's
``gamma``) when ``eta = 1``; the effective ridge of the primal is
``lambda_ * eta``. Larger ``lambda_`` means a smoother fit.

Both systems are solved through the Schur complement of the bordered
(saddle-point) matrix: a Cholesky factor of the positive definite block and
one scalar (dual) or the centred normal equations (primal), never a generic
solve of the indefinite bordered matrix. The same factors give the exact
leave-one-out residuals in closed form (Cawley & Talbot, 2004), stored as
``loo_residuals_`` and used to calibrate :meth:`LSSVMClassifier.predict_proba`.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from scipy.optimize import minimize_scalar
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.exceptions import DataConversionWarning, NotFittedError
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets

from .._linalg import cholesky_or_none
from .._param_validation import Interval, Options, fit_context
from .._validation import (
    ArrayLike,
    check_new_input,
    as_tensor,
    check_feature_names,
    is_numpy_like,
    resolve_device,
    resolve_dtype,
    to_output,
)
from ..features import FeatureMap
from ..kernels import Kernel, Linear
from ..kernels.registry import as_kernel

__all__ = ["LSSVMClassifier", "LSSVMRegressor", "LSSVMSolution", "solve_lssvm_dual", "solve_lssvm_primal"]


class LSSVMSolution:
    """Result of one LS-SVM solve (internal container, also returned by the functional solvers).

    Attributes
    ----------
    coef : Tensor of shape (N, p) (dual: the hidden features ``H``) or (d_f, p) (primal: ``W``)
    intercept : Tensor of shape (p,)
    loo_residuals : Tensor of shape (N, p)
        ``y_i - f^{(-i)}(x_i)``, the residual of point i under the model trained without it.
    """

    def __init__(self, coef: torch.Tensor, intercept: torch.Tensor, loo_residuals: torch.Tensor):
        self.coef, self.intercept, self.loo_residuals = coef, intercept, loo_residuals


def _chol(A: torch.Tensor, what: str, advice: str) -> torch.Tensor:
    L = cholesky_or_none(A)
    if L is None:
        raise ValueError(f"the {what} is not numerically positive definite; {advice}")
    return L


def solve_lssvm_dual(K: torch.Tensor, Y: torch.Tensor, lambda_: float, eta: float) -> LSSVMSolution:
    """Solve ``[[K/eta + lambda I, 1], [1^T, 0]] [H; b^T] = [Y; 0]`` by its Schur complement.

    With ``A = K/eta + lambda I = L L^T`` (positive definite for a PSD kernel and
    ``lambda > 0``), ``nu = A^{-1} 1`` and the scalar Schur complement
    ``s = 1^T nu``: ``b^T = 1^T A^{-1} Y / s`` and ``H = A^{-1} Y - nu b^T``.

    Parameters
    ----------
    K : Tensor of shape (N, N), symmetric PSD Gram matrix
    Y : Tensor of shape (N, p)
    lambda_, eta : float > 0

    Returns
    -------
    LSSVMSolution
        ``coef`` is ``H`` (N, p); leave-one-out residuals ``h_i / [M^{-1}]_ii``
        with ``M`` the bordered matrix.
    """
    N = K.shape[0]
    A = K / eta
    A.diagonal().add_(lambda_)
    L = _chol(A, "matrix K/eta + lambda_ I of the LS-SVM dual system",
              "the kernel is probably not positive semi-definite; use a valid kernel or a larger lambda_.")
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


def solve_lssvm_primal(Phi: torch.Tensor, Y: torch.Tensor, lambda_: float, eta: float) -> LSSVMSolution:
    """Solve the primal LS-SVM system with explicit features by its Schur complement.

    Eliminating ``b^T = (1^T Y - 1^T Phi W) / N`` (the Schur complement of the
    scalar block ``N``) leaves the centred normal equations
    ``(Phi_c^T Phi_c + lambda eta I) W = Phi_c^T Y_c``, solved by Cholesky.

    Parameters
    ----------
    Phi : Tensor of shape (N, d_f)
    Y : Tensor of shape (N, p)

    Returns
    -------
    LSSVMSolution
        ``coef`` is ``W`` (d_f, p); leave-one-out residuals ``e_i / (1 - hat_ii)``
        with the hat matrix ``11^T/N + Phi_c G^{-1} Phi_c^T``.
    """
    N, _d = Phi.shape
    mu, ybar = Phi.mean(0), Y.mean(0)
    Pc, Yc = Phi - mu, Y - ybar
    G = Pc.T @ Pc
    G.diagonal().add_(lambda_ * eta)
    L = _chol(G, "matrix Phi_c^T Phi_c + lambda_ eta I of the LS-SVM primal system",
              "the features are not finite or lambda_ * eta is too small for their scale.")
    W = torch.cholesky_solve(Pc.T @ Yc, L)
    b = ybar - mu @ W
    E = Y - Phi @ W - b
    R = torch.linalg.solve_triangular(L, Pc.T, upper=False)  # L^{-1} Phi_c^T, (d, N)
    hat = 1.0 / N + (R * R).sum(0)
    return LSSVMSolution(W, b, E / (1.0 - hat)[:, None])


def _softmax(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(1, keepdims=True)


def _fit_temperature(logits: np.ndarray, codes: np.ndarray) -> float:
    """Temperature ``T`` minimising the mean log-loss of ``softmax(logits / T)`` (searched on log T)."""

    def loss(log_t: float) -> float:
        Z = logits / np.exp(log_t)
        Z = Z - Z.max(1, keepdims=True)
        return float(np.mean(np.log(np.exp(Z).sum(1)) - Z[np.arange(len(codes)), codes]))

    res = minimize_scalar(loss, bounds=(-7.0, 7.0), method="bounded")
    return float(np.exp(res.x))


class _LSSVMBase(BaseEstimator):
    """Shared fit machinery of the LS-SVM regressor and classifier."""

    _parameter_constraints = {
        "kernel": [Kernel, str, callable, None],
        "feature_map": [FeatureMap, None],
        "lambda_": [Interval("real", 0, None, closed="neither")],
        "eta": [Interval("real", 0, None, closed="neither")],
        "solver": [Options({"auto", "dual", "primal"})],
        "dtype": ["dtype"],
        "device": ["device"],
    }
    _parameter_hints = {
        "lambda_": "lambda_ is the ridge of the dual system (Suykens' 1/gamma); use a small positive value "
        "such as 1e-3 for a close fit.",
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        # ``lambda_`` is a hyper-parameter that ends with "_": scikit-learn's default test would misfire.
        return hasattr(self, "intercept_")

    # ------------------------------------------------------------------ fit core
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

    def _prepare(self, X: ArrayLike) -> torch.Tensor:
        self._dtype = resolve_dtype(self.dtype, like=X)
        self._device = resolve_device(self.device)
        self._numpy_fit_ = is_numpy_like(X)
        check_feature_names(self, X, reset=True)
        Xt = as_tensor(X, "X", dtype=self._dtype, device=self._device, min_samples=2)
        self.n_features_in_ = Xt.shape[1]
        return Xt

    def _solve(self, X: torch.Tensor, Y: torch.Tensor) -> LSSVMSolution:
        N, d = X.shape
        self.solver_ = self._resolve(N, d)
        lam, eta = float(self.lambda_), float(self.eta)
        if self.feature_map is not None:
            self.feature_map_ = clone(self.feature_map).fit(X.cpu())
            self.kernel_ = self.feature_map_.as_kernel()
        elif self.solver_ == "primal":
            self.feature_map_ = None
            self.kernel_ = Linear()
        else:
            self.feature_map_ = None
            self.kernel_ = copy.deepcopy(as_kernel(self.kernel).resolve(X))  # a data-derived width from X
        if self.solver_ == "primal":
            Phi = self._features(X)
            sol = solve_lssvm_primal(Phi, Y, lam, eta)
            self.coef_ = sol.coef
            self.__dict__.pop("dual_coef_", None)
            self.__dict__.pop("X_fit_", None)
        else:
            K = self.kernel_.gram(X, X)
            if not bool(torch.isfinite(K).all()):
                raise ValueError("the Gram matrix of `kernel` on X has NaN or infinite entries; check the kernel.")
            sol = solve_lssvm_dual(K, Y, lam, eta)
            self.dual_coef_ = sol.coef
            self.X_fit_ = X
            self.__dict__.pop("coef_", None)
        self.intercept_ = sol.intercept
        self.loo_residuals_ = sol.loo_residuals
        return sol

    def _features(self, X: torch.Tensor) -> torch.Tensor:
        if self.feature_map_ is None:
            return X
        return self.feature_map_.map(X.cpu()).to(dtype=X.dtype, device=X.device)

    def _check_fitted(self, method: str) -> None:
        if not hasattr(self, "intercept_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call fit(X, y) before {method}()."
            )

    def _input(self, X: ArrayLike) -> torch.Tensor:
        return check_new_input(self, X)

    def _raw_decision(self, X: torch.Tensor) -> torch.Tensor:
        """Outputs ``f(x)`` (M, p) of the fitted linear system."""
        if self.solver_ == "primal":
            return self._features(X) @ self.coef_ + self.intercept_
        return self.kernel_.gram(X, self.X_fit_) @ self.dual_coef_ / float(self.eta) + self.intercept_


class LSSVMRegressor(RegressorMixin, _LSSVMBase):
    """LS-SVM regression in RKM form, solved in the dual (kernel) or the primal (explicit features).

    Parameters
    ----------
    kernel : Kernel, str, callable or None, default "rbf"
        Kernel of the dual system (ignored when ``feature_map`` is given: the
        map's own kernel ``<phi(x), phi(y)>`` is used so both systems agree).
    feature_map : kppca.features.FeatureMap or None, default None
        Explicit features for the primal system (fitted on ``X`` in ``fit``).
        With ``kernel="linear"`` and no map, the identity features are used.
    lambda_ : float > 0, default 0.1
        Weight of ``-lambda/2 sum h_i^T h_i``: the ridge added to ``K/eta`` in the
        dual system (Suykens' ``1/gamma``).
    eta : float > 0, default 1.0
        Weight of ``eta/2 Tr(W^T W)``; the kernel enters as ``K/eta``.
    solver : {"auto", "dual", "primal"}, default "auto"
        "auto" takes the primal when explicit features exist and are fewer
        than the training points, the dual otherwise.
    dtype, device
        Computation dtype (float64 by default, float32 data stays float32) and torch device.

    Attributes
    ----------
    dual_coef_ : Tensor of shape (N, p)
        Hidden features ``H`` (dual solver).
    coef_ : Tensor of shape (d_f, p)
        Interconnection matrix ``W`` (primal solver).
    intercept_ : Tensor of shape (p,)
    loo_residuals_ : Tensor of shape (N, p)
        Exact leave-one-out residuals ``y_i - f^{(-i)}(x_i)``; ``(loo_residuals_**2).mean()``
        is the LOO mean squared error, a cheap criterion to tune ``lambda_`` and the kernel.
    solver_ : str
    kernel_ : Kernel
    n_features_in_ : int
    """

    def __init__(
        self,
        kernel: Kernel | Callable | str | None = "rbf",
        *,
        feature_map: FeatureMap | None = None,
        lambda_: float = 0.1,
        eta: float = 1.0,
        solver: str = "auto",
        dtype: Any = None,
        device: Any = None,
    ):
        self.kernel = kernel
        self.feature_map = feature_map
        self.lambda_ = lambda_
        self.eta = eta
        self.solver = solver
        self.dtype = dtype
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    @fit_context
    def fit(self, X: ArrayLike, y: ArrayLike) -> LSSVMRegressor:
        """Fit to inputs ``X`` (N, D) and targets ``y`` (N,) or (N, p). Returns ``self``."""
        if y is None:
            raise ValueError("LSSVMRegressor requires y to be passed, but the target y is None.")
        Xt = self._prepare(X)
        Y = as_tensor(y, "y", ndim=(1, 2), dtype=self._dtype, device=self._device)
        if Y.shape[0] != Xt.shape[0]:
            raise ValueError(f"X has {Xt.shape[0]} rows but y has {Y.shape[0]}; they must match.")
        self._single_output = Y.ndim == 1
        self._solve(Xt, Y.reshape(Y.shape[0], -1))
        return self

    def predict(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Predictions ``(M,)`` (single output) or ``(M, p)``."""
        self._check_fitted("predict")
        out = self._raw_decision(self._input(X))
        if self._single_output:
            out = out[:, 0]
        return to_output(out, is_numpy_like(X))


class LSSVMClassifier(ClassifierMixin, _LSSVMBase):
    """LS-SVM classification in RKM form: the regression system on ±1 codes of the labels.

    Binary problems use one output (+1 for ``classes_[1]``). Multiclass
    problems use one-vs-all (``multi_class="ova"``: p outputs, output k is +1
    for class k and -1 otherwise, predicted class = largest output) or a
    minimum-length output code (``multi_class="code"``: ``ceil(log2 p)``
    outputs carrying the bits of the class index, decoded by the codeword
    with the largest correlation).

    Parameters
    ----------
    kernel, feature_map, lambda_, eta, solver, dtype, device
        As in :class:`LSSVMRegressor`.
    multi_class : {"ova", "code"}, default "ova"

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    codebook_ : Tensor of shape (n_classes, n_outputs)
        ±1 target code of each class.
    dual_coef_, coef_, intercept_, loo_residuals_, solver_, kernel_, n_features_in_
        As in :class:`LSSVMRegressor`, for the coded targets.
    temperature_ : float
        Calibration temperature of :meth:`predict_proba`.
    """

    _parameter_constraints = {**_LSSVMBase._parameter_constraints, "multi_class": [Options({"ova", "code"})]}

    def __init__(
        self,
        kernel: Kernel | Callable | str | None = "rbf",
        *,
        feature_map: FeatureMap | None = None,
        lambda_: float = 0.1,
        eta: float = 1.0,
        solver: str = "auto",
        multi_class: str = "ova",
        dtype: Any = None,
        device: Any = None,
    ):
        self.kernel = kernel
        self.feature_map = feature_map
        self.lambda_ = lambda_
        self.eta = eta
        self.solver = solver
        self.multi_class = multi_class
        self.dtype = dtype
        self.device = device

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
    def fit(self, X: ArrayLike, y: ArrayLike) -> LSSVMClassifier:
        """Fit to inputs ``X`` (N, D) and class labels ``y`` (N,). Returns ``self``."""
        if y is None:
            raise ValueError("LSSVMClassifier requires y to be passed, but the target y is None.")
        Xt = self._prepare(X)
        y_arr = np.asarray(y)
        if y_arr.ndim != 1:
            if y_arr.ndim == 2 and y_arr.shape[1] == 1:
                warnings.warn(
                    "A column-vector y was passed when a 1d array was expected; it is raveled to shape (n_samples,).",
                    DataConversionWarning,
                    stacklevel=2,
                )
                y_arr = y_arr.ravel()
            else:
                raise ValueError(f"y must be 1-D class labels, got shape {y_arr.shape}.")
        check_classification_targets(y_arr)
        if y_arr.shape[0] != Xt.shape[0]:
            raise ValueError(f"X has {Xt.shape[0]} rows but y has {y_arr.shape[0]}; they must match.")
        enc = LabelEncoder().fit(y_arr)
        if len(enc.classes_) < 2:
            raise ValueError(
                f"y has only 1 class ({enc.classes_[0]!r}); classification needs at least 2 classes."
            )
        self.classes_ = enc.classes_
        codes = enc.transform(y_arr)
        book = torch.as_tensor(self.make_codebook(len(self.classes_), self.multi_class),
                               dtype=self._dtype, device=self._device)
        self.codebook_ = book
        Y = book[torch.as_tensor(codes, device=self._device)]
        self._solve(Xt, Y)
        # Calibration on leave-one-out decision values: honest scores, as on unseen data.
        loo_scores = self._class_scores(Y - self.loo_residuals_).detach().cpu().numpy()
        self.temperature_ = _fit_temperature(self._logits(loo_scores), codes)
        return self

    def _logits(self, S: np.ndarray) -> np.ndarray:
        """Per-class logits (M, n_classes) from class scores (binary: ``[0, s]``)."""
        return np.column_stack([np.zeros(len(S)), S[:, 0]]) if len(self.classes_) == 2 else S

    def _class_scores(self, F: torch.Tensor) -> torch.Tensor:
        """Per-class scores from output values F (M, n_outputs): binary -> (M, 1), else correlations (M, p)."""
        if len(self.classes_) == 2:
            return F
        return F @ self.codebook_.T

    def decision_function(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Scores: (M,) for binary problems (positive means ``classes_[1]``), else (M, n_classes).

        One-vs-all: the p outputs themselves; output codes: correlation of the
        outputs with each class's codeword.
        """
        self._check_fitted("decision_function")
        S = self._class_scores(self._raw_decision(self._input(X)))
        if len(self.classes_) == 2:
            S = S[:, 0]
        return to_output(S, is_numpy_like(X))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Class labels (M,) (a numpy array, as scikit-learn)."""
        self._check_fitted("predict")
        S = self._class_scores(self._raw_decision(self._input(X)))
        idx = (S[:, 0] > 0).long() if len(self.classes_) == 2 else S.argmax(1)
        return self.classes_[idx.cpu().numpy()]

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities (M, n_classes), calibrated on leave-one-out decision values.

        ``softmax(scores / T)`` (binary: ``sigmoid(s / T)``) with one temperature
        ``T = temperature_`` fitted in ``fit`` by minimising the log-loss of the
        exact leave-one-out scores of the training points (temperature scaling,
        a one-parameter Platt calibration without a held-out set). The
        probabilities reflect how the scores behave on unseen points, and their
        argmax is the prediction of :meth:`predict`. They are estimates, not a
        model likelihood.
        """
        self._check_fitted("predict_proba")
        S = self._class_scores(self._raw_decision(self._input(X))).detach().cpu().numpy()
        return _softmax(self._logits(S) / self.temperature_)
