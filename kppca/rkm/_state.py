"""The fitted state of the shallow RKMs, one record each: the LS-SVMs, the kernel pmf and kernel PCA.

Shape symbols: ``"n"`` training points, ``"p"`` outputs, ``"f"`` explicit features, ``"c"`` classes, ``"s"``
hidden features. :class:`~kppca.rkm.NARForecaster`'s record is in its module (its MultiViewKPCA imports these).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from .._param_validation import Interval, Real, StrOptions
from ..features import FeatureMap
from ..io import ArraySpec, TensorSpec
from ..io.record import ABSENT, EstimatorState, derived, fitted
from ..kernels import Kernel, KernelCenterer


def map_features(feature_map: FeatureMap | None, X: torch.Tensor) -> torch.Tensor:
    """The explicit features of ``X`` (M, D) under a fitted map (``X`` itself without one), in ``X``'s dtype and device."""
    if feature_map is None:
        return X
    return feature_map.map(X.cpu()).to(dtype=X.dtype, device=X.device)


@dataclasses.dataclass(frozen=True, kw_only=True)
class LSSVMState(EstimatorState):
    """What both LS-SVMs store: the solved linear system, primal (``coef_``) or dual (``hidden_features_`` with
    the training inputs ``X_fit_``), its intercept and the exact leave-one-out residuals."""

    solver_: str = fitted(StrOptions({"primal", "dual"}))
    feature_map_: FeatureMap | None = fitted(FeatureMap, None)
    kernel_: Any = fitted(Kernel, callable)
    coef_: torch.Tensor = fitted(TensorSpec(shape=("f", "p")), optional=True)  # primal solver
    hidden_features_: torch.Tensor = fitted(TensorSpec(shape=("n", "p")), optional=True)  # dual solver
    X_fit_: torch.Tensor = fitted(TensorSpec(shape=("n", "n_features_in_")), optional=True)  # dual solver
    intercept_: torch.Tensor = fitted(TensorSpec(shape=("p",)))
    # A point of leverage 1 (e.g. N <= d_f + 1 in the primal) has no leave-one-out fit: inf or NaN there.
    loo_residuals_: torch.Tensor = fitted(TensorSpec(shape=("n", "p"), finite=False))

    def check(self) -> str | None:
        """The fitted parts fit together: one point's outputs have the intercept's width."""
        stored = self.stored()
        needed = ("coef_",) if self.solver_ == "primal" else ("hidden_features_", "X_fit_")
        missing = [name for name in needed if name not in stored]
        if missing:
            return f"solver_={self.solver_!r} needs {', '.join(missing)}"
        x = torch.zeros(1, self.n_features_in_, dtype=self._dtype, device=self._device)
        out = self.outputs(x, 1.0)  # eta scales the outputs, not their shape
        if tuple(out.shape) != (1, self.intercept_.shape[0]):
            return f"its outputs have shape {tuple(out.shape)[1:]}, expected ({self.intercept_.shape[0]},)"
        return None

    def outputs(self, X: torch.Tensor, eta: float) -> torch.Tensor:
        """Outputs ``f(x)`` (M, p) of the fitted linear system on ``X`` (M, D) in the fit's dtype and device;
        ``eta`` is the estimator's parameter (not fitted state: it scales ``K`` in the dual)."""
        if self.solver_ == "primal":
            return map_features(self.feature_map_, X) @ self.coef_ + self.intercept_
        return self.kernel_.gram(X, self.X_fit_) @ self.hidden_features_ / eta + self.intercept_


@dataclasses.dataclass(frozen=True, kw_only=True)
class LSSVMRegressorState(LSSVMState):
    """:class:`~kppca.rkm.LSSVMRegressor`'s record: whether ``y`` was one target (1-D predictions)."""

    _single_output: bool = fitted("boolean")


@dataclasses.dataclass(frozen=True, kw_only=True)
class LSSVMClassifierState(LSSVMState):
    """:class:`~kppca.rkm.LSSVMClassifier`'s record: the classes, their ±1 codes and the calibration temperature."""

    classes_: np.ndarray = fitted(ArraySpec(shape=("c",)))
    codebook_: torch.Tensor = fitted(TensorSpec(shape=("c", "p")))  # one code per class
    temperature_: float = fitted(Interval(Real, 0, None, closed="neither"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class KernelPMFState(EstimatorState):
    """:class:`~kppca.rkm.KernelPMF`'s record: the training points, their pmf and ``log eta``; the primal weights
    (primal solver) and the class of each point (with labels)."""

    kernel_: Any = fitted(Kernel, callable)
    solver_: str = fitted(StrOptions({"dual", "primal"}))
    X_fit_: torch.Tensor = fitted(TensorSpec(shape=("n", "n_features_in_")))
    probabilities_: torch.Tensor = fitted(TensorSpec(shape=("n",), nonnegative=True))
    log_eta_: float = fitted(Interval(Real, None, None))
    coef_: torch.Tensor = fitted(TensorSpec(shape=("f",)), optional=True)  # primal solver
    classes_: np.ndarray = fitted(ArraySpec(ndim=1), optional=True)  # with labels only
    y_codes_: torch.Tensor = fitted(TensorSpec("int", ("n",)), optional=True)

    def check(self) -> str | None:
        """The labels' codes index ``classes_``; the primal weights live in the kernel's explicit feature space."""
        codes = self.y_codes_
        if (codes is ABSENT) != (self.classes_ is ABSENT):
            return "classes_ and y_codes_ must be both present or both absent"
        if codes is not ABSENT and codes.numel() and not (0 <= int(codes.min()) and int(codes.max()) < len(self.classes_)):
            return f"y_codes_ holds codes outside [0, {len(self.classes_)}) (one per entry of classes_)"
        if (self.coef_ is ABSENT) != (self.solver_ == "dual"):
            return "coef_ must be present exactly with solver_='primal'"
        if self.solver_ == "primal":
            Phi = self.kernel_.explicit_features(self.X_fit_[:1])
            if Phi is None or Phi.shape[1] != self.coef_.shape[0]:
                return "coef_ does not match the kernel's explicit features"
        return None


@dataclasses.dataclass(frozen=True, kw_only=True)
class KernelPCARKMState(EstimatorState):
    """:class:`~kppca.rkm.KernelPCARKM`'s record: the kernel, its centering statistics, the training points, the
    hidden features ``H`` and the eigenvalues ``lambda_k``; the number of components follows from ``H``."""

    kernel_: Any = fitted(Kernel, callable)
    centerer_: KernelCenterer = fitted(KernelCenterer)
    hidden_features_: torch.Tensor = fitted(TensorSpec(shape=("n", "s")))
    eigenvalues_: torch.Tensor = fitted(TensorSpec(shape=("s",)))
    X_fit_: torch.Tensor = fitted(TensorSpec(shape=("n", "n_features_in_")))

    #: Format version 3 stored it; it is derived now.
    derived_in_old_files = ("n_components_",)

    @derived
    def n_components_(self) -> int:
        """The number of hidden features ``s``."""
        return self.hidden_features_.shape[1]
