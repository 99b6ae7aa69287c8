"""Deep RKM of the 2017 paper (§4.2, §5.1): an LS-SVM level followed by two kernel PCA levels.

Levels (rows are points, ``H1`` (N, p), ``H2`` (N, s2), ``H3`` (N, s3))::

    level 1  LS-SVM regression on (x_i, y_i), hidden features h1_i
    level 2  kernel PCA on the h1_i (linear kernel), hidden features h2_i
    level 3  kernel PCA on the h2_i (linear kernel), hidden features h3_i

``J_deep = J1 + J2 + J3``. With the interconnection matrices eliminated
(``W_l = (1/eta_l) sum_i phi_l(.) h_l,i^T``) its stationary points are, for linear
kernels in levels 2 and 3 (paper eq. 4.18),

* level 1: ``[[K1/eta1 + H2 H2^T/eta2 + lambda1 I, 1], [1^T, 0]] [H1; b^T] = [Y; 0]``
  -- an LS-SVM whose kernel is *fused* with the level-2 features;
* level 2: ``(H1 H1^T/eta2 + H3 H3^T/eta3) H2 = H2 Lam2``;
* level 3: ``(H2 H2^T/eta3) H3 = H3 Lam3``,

with ``H2^T H2 = I``, ``H3^T H3 = I`` (unit-norm eigenvectors, the top ``s``).
:meth:`DeepRKM.fit` solves them level-wise (§5.1): an initialisation of ``H2``,
``H3`` (random orthonormal), then ``n_passes`` times a forward phase (level 1 ->
2 -> 3) and a backward phase (level 2 -> 1). After every phase the reduced
objective

``L = Tr(Y^T H1) - 1/2 Tr(H1^T (K1/eta1 + lambda1 I) H1) - 1/(2 eta2) ||H1^T H2||^2 - 1/(2 eta3) ||H2^T H3||^2``

(``J_deep`` with the ``W`` eliminated; the ``lambda2, lambda3`` terms are
constant for orthonormal ``H2, H3`` and dropped) is recorded in
``objective_history_``. Level 1 *maximises* ``L`` in ``H1`` and levels 2-3
*minimise* it in ``H2, H3``: the stationary point is a saddle point, so the
history is reported as is, not forced to be monotone.

Prediction (eq. 4.16): ``y(x) = (1/eta1) sum_j h1_j k1(x_j, x) + b``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import NotFittedError

from .._linalg import eigh_descending
from .._param_validation import Interval, fit_context
from .._validation import (
    ArrayLike,
    as_tensor,
    check_feature_names,
    is_numpy_like,
    resolve_device,
    resolve_dtype,
    to_output,
    torch_generator,
)
from ..kernels import Kernel
from ..kernels.registry import as_kernel
from .lssvm import solve_lssvm_dual
from .projected_gradient import project_stiefel

__all__ = ["DeepRKM"]


class DeepRKM(RegressorMixin, BaseEstimator):
    """Deep RKM regression: LS-SVM level + two linear kernel PCA levels, solved level-wise.

    Parameters
    ----------
    kernel : Kernel, str or callable, default "rbf"
        Kernel ``K1`` of the LS-SVM level.
    n_components : (int, int) or int, default (1, 1)
        ``(s2, s3)``, components of the two KPCA levels (an int ``s`` means ``(s, s)``).
    lambda_ : float > 0, default 0.01
        ``lambda1`` of the LS-SVM level (ridge of its dual system, Suykens' 1/gamma).
    eta : float > 0, default 1.0
        ``eta1``.
    eta_levels : (float, float), default (1e-5, 1e-5)
        ``(eta2, eta3)``; the paper's synthetic example selects ``1/eta2 = 1/eta3 = 1e5``
        (the KPCA levels weigh heavily in the kernel fusion).
    n_passes : int >= 0, default 10
        Forward-backward passes after the initialisation (0 gives the plain LS-SVM
        with ``H2 = 0`` fused in).
    random_state, dtype, device

    Attributes
    ----------
    H1_, H2_, H3_ : Tensor
        Hidden features of the three levels.
    intercept_ : Tensor of shape (p,)
    objective_history_ : list of (str, float)
        ``("init" | "forward k" | "backward k", L)`` after each phase.
    X_fit_, kernel_
    """

    _parameter_constraints = {
        "kernel": [Kernel, str, callable, None],
        "n_components": [list, tuple, Interval("int", 1, None, closed="left")],
        "lambda_": [Interval("real", 0, None, closed="neither")],
        "eta": [Interval("real", 0, None, closed="neither")],
        "eta_levels": [list, tuple],
        "n_passes": [Interval("int", 0, None, closed="left")],
        "random_state": ["random_state"],
        "dtype": ["dtype"],
        "device": ["device"],
    }

    def __init__(self, kernel: Any = "rbf", *, n_components: Sequence[int] = (1, 1), lambda_: float = 0.01,
                 eta: float = 1.0, eta_levels: Sequence[float] = (1e-5, 1e-5), n_passes: int = 10,
                 random_state: Any = None, dtype: Any = None, device: Any = None):
        self.kernel = kernel
        self.n_components = n_components
        self.lambda_ = lambda_
        self.eta = eta
        self.eta_levels = eta_levels
        self.n_passes = n_passes
        self.random_state = random_state
        self.dtype = dtype
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.target_tags.multi_output = True
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "intercept_")

    # ------------------------------------------------------------------ level solvers
    def _level1(self, H2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        eta1, eta2 = float(self.eta), float(self._etas[0])
        # K1/eta1 + H2 H2^T/eta2 = (K1 + (eta1/eta2) H2 H2^T) / eta1: the fused kernel.
        sol = solve_lssvm_dual(self._K1 + (eta1 / eta2) * (H2 @ H2.T), self._Y, float(self.lambda_), eta1)
        return sol.coef, sol.intercept

    def _top(self, M: torch.Tensor, s: int) -> torch.Tensor:
        return eigh_descending(M)[1][:, :s]

    def _level2(self, H1: torch.Tensor, H3: torch.Tensor) -> torch.Tensor:
        eta2, eta3 = self._etas
        return self._top(H1 @ H1.T / eta2 + H3 @ H3.T / eta3, self._s[0])

    def _level3(self, H2: torch.Tensor) -> torch.Tensor:
        return self._top(H2 @ H2.T / self._etas[1], self._s[1])

    def objective(self, H1: torch.Tensor, H2: torch.Tensor, H3: torch.Tensor) -> float:
        """Reduced deep-RKM objective ``L(H1, H2, H3)`` (module docstring) on the training data."""
        eta1, (eta2, eta3), lam = float(self.eta), self._etas, float(self.lambda_)
        A = (H1 * (self._K1 @ H1)).sum() / eta1 + lam * (H1 * H1).sum()
        val = (self._Y * H1).sum() - 0.5 * A - 0.5 / eta2 * (H1.T @ H2).pow(2).sum() - 0.5 / eta3 * (H2.T @ H3).pow(2).sum()
        return float(val)

    @fit_context
    def fit(self, X: ArrayLike, y: ArrayLike) -> DeepRKM:
        """Fit on ``X`` (N, D) and ``y`` (N,) or (N, p) by level-wise forward/backward passes."""
        if y is None:
            raise ValueError("DeepRKM requires y to be passed, but the target y is None.")
        self._dtype = resolve_dtype(self.dtype, like=X)
        self._device = resolve_device(self.device)
        check_feature_names(self, X, reset=True)
        Xt = as_tensor(X, "X", dtype=self._dtype, device=self._device, min_samples=2)
        self.n_features_in_ = Xt.shape[1]
        Y = as_tensor(y, "y", ndim=(1, 2), dtype=self._dtype, device=self._device)
        if Y.shape[0] != Xt.shape[0]:
            raise ValueError(f"X has {Xt.shape[0]} rows but y has {Y.shape[0]}; they must match.")
        self._single_output = Y.ndim == 1
        self._Y = Y.reshape(Y.shape[0], -1)
        N = Xt.shape[0]
        comps = self.n_components
        self._s = [int(comps)] * 2 if isinstance(comps, (int, np.integer)) else [int(s) for s in comps]
        self._etas = [float(e) for e in self.eta_levels]
        if len(self._s) != 2 or any(s < 1 for s in self._s) or self._s[0] > N or self._s[1] > self._s[0]:
            raise ValueError(f"n_components must be (s2, s3) with 1 <= s3 <= s2 <= N = {N}, got {self.n_components!r}.")
        if len(self._etas) != 2 or any(not (e > 0) for e in self._etas):
            raise ValueError(f"eta_levels must be two positive floats (eta2, eta3), got {self.eta_levels!r}.")
        self.kernel_ = copy.deepcopy(as_kernel(self.kernel))
        self._K1 = self.kernel_.gram(Xt, Xt)
        gen = torch_generator(self.random_state, self._device)
        H2 = project_stiefel(torch.randn(N, self._s[0], generator=gen, dtype=self._dtype, device=self._device))
        H3 = project_stiefel(torch.randn(N, self._s[1], generator=gen, dtype=self._dtype, device=self._device))
        H1, b = self._level1(H2 if self.n_passes else torch.zeros_like(H2))
        history = [("init", self.objective(H1, H2, H3))]
        for k in range(1, int(self.n_passes) + 1):
            # forward: level 1 -> 2 -> 3
            H1, b = self._level1(H2)
            H2 = self._level2(H1, H3)
            H3 = self._level3(H2)
            history.append((f"forward {k}", self.objective(H1, H2, H3)))
            # backward: level 2 -> 1
            H2 = self._level2(H1, H3)
            H1, b = self._level1(H2)
            history.append((f"backward {k}", self.objective(H1, H2, H3)))
        self.H1_, self.H2_, self.H3_, self.intercept_ = H1, H2, H3, b
        self.objective_history_ = history
        self.X_fit_ = Xt
        del self._K1, self._Y
        return self

    def predict(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """``y(x) = (1/eta1) sum_j h1_j k1(x_j, x) + b``: (M,) or (M, p)."""
        if not hasattr(self, "intercept_"):
            raise NotFittedError("This DeepRKM instance is not fitted yet; call fit(X, y) before predict().")
        check_feature_names(self, X, reset=False)
        Xt = as_tensor(X, "X", dtype=self._dtype, device=self._device)
        if Xt.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xt.shape[1]} features, but DeepRKM is expecting {self.n_features_in_} features as input.")
        out = self.kernel_.gram(Xt, self.X_fit_) @ self.H1_ / float(self.eta) + self.intercept_
        if self._single_output:
            out = out[:, 0]
        return to_output(out, is_numpy_like(X))
