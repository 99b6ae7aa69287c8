"""Kernel probability mass function as an RKM (deep-RKM paper §3.6): ``p_i = (1/eta) sum_j k(x_j, x_i)``.

The sums are taken in log space (closed form for RBF and Laplacian), so far-away points, whose kernel
values all underflow to 0, keep finite log values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from sklearn.base import ClassifierMixin

from .._linalg.threads import compute_section
from .._param_validation import StrOptions, fit_context
from .._validation import ArrayLike
from ..base import DEVICE_CONSTRAINTS, KernelEstimator
from ..io import register
from ..kernels import Kernel
from ..kernels.distances import pairwise_distances, scaled_squared_distances
from ..kernels.standard import RBF, Laplacian
from ._state import KernelPMFState
from .shallow import resolve_kernel

__all__ = ["KernelPMF", "log_kernel"]


def log_kernel(kernel: Kernel, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """``log k(x_i, y_j)`` (n, m) for a kernel with non-negative values (``ValueError`` on a negative one): RBF
    and Laplacian in closed form (no underflow), any other kernel ``log`` of its values (``-inf`` where 0)."""
    lowest = torch.finfo(X.dtype).min  # finite even where the true value is below the dtype's range
    if type(kernel) is RBF:
        D, s = scaled_squared_distances(X, Y)  # D s^2 may overflow where D does not
        return D.mul_(s).mul_(s).mul_(-kernel.gamma).clamp_(min=lowest)
    if type(kernel) is Laplacian:
        kernel._check_params()
        D, s = pairwise_distances(X, Y, metric="l1")
        return D.mul_(s).div_(-float(kernel.bandwidth)).clamp_(min=lowest)
    K = kernel.gram(X, Y)
    if not bool(torch.isfinite(K).all()):
        raise ValueError("kernel: its values on X are NaN or infinite; check the kernel and its parameters.")
    if bool((K < 0).any()):
        raise ValueError(
            f"kernel: {kernel!r} takes negative values on this data ({float(K.min()):.3g}); the kernel pmf "
            "p_i = (1/eta) sum_j k(x_j, x_i) must be non-negative. Use a kernel with non-negative values "
            "such as 'rbf' or 'laplacian'."
        )
    return torch.log(K)


@register(name="kppca.KernelPMF")
class KernelPMF(ClassifierMixin, KernelEstimator):
    """Kernel probability mass function over the training points, and its class rule (paper §3.6).

    Parameters
    ----------
    kernel : Kernel, str or callable, default "rbf"
        A kernel with non-negative values on the data (else ``fit`` and the scoring methods raise ``ValueError``).
    solver : {"dual", "primal"}, default "dual"
        "primal": ``p_i = w^T phi(x_i)``, for a kernel with ``explicit_features`` (linear, small polynomial).
    dtype, device
        Floating dtype (float64 by default; float32 data stays float32) and torch device.

    Attributes
    ----------
    probabilities_ : Tensor of shape (N,)
        ``p_i`` of the training points, ``sum_i p_i = 1``.
    log_eta_ : float
        ``log eta``, ``eta = sum_ij k(x_j, x_i)``.
    coef_ : Tensor of shape (d_f,)
        ``w`` (primal solver only).
    X_fit_ : Tensor of shape (N, D)
    classes_ : ndarray of shape (n_classes,)
        With labels only.
    y_codes_ : Tensor of shape (N,) (int64)
        Class index of every training point (with labels only).
    kernel_ : Kernel
    solver_ : str
    n_features_in_ : int
    """

    _state_type = KernelPMFState

    _parameter_constraints = {
        "kernel": [Kernel, str, callable, None],
        "solver": [StrOptions({"dual", "primal"})],
        **DEVICE_CONSTRAINTS,
    }

    def __init__(self, kernel: Kernel | Callable | str | None = "rbf", *, solver: str = "dual",
                 dtype: Any = None, device: Any = None):
        self._store_params(locals())

    _fitted_marker = "probabilities_"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        return tags

    def _features(self, X: torch.Tensor) -> torch.Tensor:
        Phi = self.kernel_.explicit_features(X)
        if Phi is None:
            raise ValueError(f"solver='primal' needs a kernel with an explicit feature map; {self.kernel_!r} has "
                             "none (or too many features). Use solver='dual'.")
        return Phi.to(dtype=X.dtype, device=X.device)

    @fit_context
    @compute_section
    def fit(self, X: ArrayLike, y: ArrayLike = None) -> KernelPMF:
        """Fit the pmf to ``X`` (N, D); with class labels ``y`` (N,) also the class rule. Returns ``self``."""
        Xt, codes = self._validate_fit_input(X, y, min_samples=1, target=None if y is None else "classes")
        if codes is not None:
            self.y_codes_ = codes
        self.kernel_ = resolve_kernel(self.kernel, Xt)  # a data-derived width (RBF()) from X, a private copy
        self.solver_ = self.solver
        self.X_fit_ = Xt
        if self.solver == "primal":
            Phi = self._features(Xt)
            s = Phi.sum(0)
            eta = float(s @ s)  # sum_ij phi(x_j)^T phi(x_i)
            if not eta > 0:
                raise ValueError("kernel: sum_ij k(x_j, x_i) is not positive on X, so eta cannot normalise the pmf; "
                                 "use a kernel with positive values such as 'rbf'.")
            self.coef_ = s / eta
            p = Phi @ self.coef_
            if bool((p < 0).any()):
                raise ValueError("kernel: some p_i = w^T phi(x_i) are negative on X; the pmf needs a kernel with "
                                 "non-negative values such as 'rbf' (solver='dual').")
            self.log_eta_ = float(np.log(eta))
            self.probabilities_ = p
        else:
            logK = log_kernel(self.kernel_, Xt, Xt)
            col = torch.logsumexp(logK, dim=0)  # log sum_j k(x_j, x_i)
            log_eta = torch.logsumexp(col, dim=0)
            if not bool(torch.isfinite(log_eta)):
                raise ValueError("kernel: all its values on X are 0 (or not finite), so eta cannot normalise the "
                                 "pmf; use a larger bandwidth.")
            self.log_eta_ = float(log_eta)
            self.probabilities_ = torch.exp(col - log_eta)
        return self

    def score_samples(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """``log p(x) = log((1/eta) sum_j k(x_j, x))`` (M,) with the training ``eta`` (``-inf`` where it is 0)."""
        Xt = self._validate_new_input(X, method="score_samples")
        if self.solver_ == "primal":
            p = self._features(Xt) @ self.coef_
            if bool((p < 0).any()):
                raise ValueError("X: w^T phi(x) is negative for some rows, so the pmf has no logarithm there; the "
                                 "kernel takes negative values on this data (use 'rbf').")
            out = torch.log(p)
        else:
            out = torch.logsumexp(log_kernel(self.kernel_, Xt, self.X_fit_), dim=1) - self.log_eta_
        return self._to_output(out, X)

    def _class_log_sums(self, X: ArrayLike, method: str) -> torch.Tensor:
        """``log sum_{j in c} k(x_j, x)`` (M, n_classes)."""
        Xt = self._validate_new_input(X, method=method)
        if not hasattr(self, "classes_"):
            raise ValueError(f"{method}() needs class labels: this KernelPMF was fitted without y; call fit(X, y).")
        logK = log_kernel(self.kernel_, Xt, self.X_fit_)
        out = logK.new_full((logK.shape[0], len(self.classes_)), -torch.inf)
        for c in range(len(self.classes_)):
            mask = self.y_codes_ == c
            if bool(mask.any()):
                out[:, c] = torch.logsumexp(logK[:, mask], dim=1)
        total = torch.logsumexp(out, dim=1)
        if not bool(torch.isfinite(total).all()):
            bad = int((~torch.isfinite(total)).nonzero()[0, 0])
            raise ValueError(f"X: all kernel values k(x_j, x) are 0 for row {bad}, so p(c | x) is undefined there; "
                             "use a kernel with a larger bandwidth.")
        return out - total[:, None]

    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """``log p(c | x)`` (M, n_classes)."""
        return self._class_log_sums(X, "predict_log_proba").detach().cpu().numpy()

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """``p(c | x) = sum_{j in c} k(x_j, x) / sum_j k(x_j, x)`` (M, n_classes); rows sum to 1."""
        return np.exp(self.predict_log_proba(X))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """The class with the largest ``p(c | x)`` (M,)."""
        idx = self._class_log_sums(X, "predict").argmax(1).cpu().numpy()
        return self.classes_[idx]
