"""The fitted state of the PPCA models, one record each: what ``fit`` stores, and what follows from it."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from .._param_validation import Integral, Interval, Real, StrOptions
from ..features.base import FeatureMap
from ..io import ArraySpec, Record, TensorSpec
from ..io.record import EstimatorState, derived, fitted
from ..kernels.base import Kernel
from ..kernels.gram import KernelCenterer

_COUNT = Interval(Integral, 1, None, closed="left")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PPCAState(EstimatorState):
    """What both PPCA models store: input metadata, the eigenvalues kept, ``sigma2`` and the trace.

    ``trace_`` is the trace of ``K_c`` (dual) or of the feature scatter matrix (primal), summed in float64.
    """

    eigen_solver_: str = fitted(StrOptions({"dense", "partial"}))
    n_samples_: int = fitted(_COUNT)
    n_components_: int = fitted(_COUNT)
    rank_: int = fitted(_COUNT)
    sigma2_: float = fitted(Interval(Real, 0, None, closed="neither"))
    trace_: float = fitted(Interval(Real, 0, None, closed="left"))
    eigenvalues_: torch.Tensor = fitted(TensorSpec(shape=("n_components_",), positive=True))
    sample_classes_: np.ndarray = fitted(ArraySpec(ndim=1), optional=True)
    _label_index: torch.Tensor = fitted(TensorSpec("int", ("n_samples_",), nonnegative=True), optional=True)

    #: Format version 3 stored these; they are derived now.
    derived_in_old_files = ("explained_variance_", "explained_variance_ratio_", "_gain", "_posterior_std", "A_")

    @classmethod
    def from_old_state(cls, state: dict[str, Any]) -> dict[str, Any]:
        """Version 3 stored ``total_variance_ = trace / N`` in place of the trace (the ratio may differ by 1 ulp)."""
        state = super().from_old_state(state)
        if "total_variance_" in state and "trace_" not in state:
            total, n = state.pop("total_variance_"), state.get("n_samples_")
            state["trace_"] = total * n if isinstance(total, float) and isinstance(n, int) else total
        return state

    @derived
    def total_variance_(self) -> float:
        return self.trace_ / self.n_samples_

    @derived
    def explained_variance_(self) -> torch.Tensor:
        return self.eigenvalues_ / self.n_samples_

    @derived
    def explained_variance_ratio_(self) -> torch.Tensor:
        return self.eigenvalues_ / self.trace_

    @derived
    def _gain(self) -> torch.Tensor:
        """``h_MAP = gain * (unit coordinate along the p-th principal direction)``, (q,)."""
        lam, N = self.eigenvalues_, self.n_samples_
        return (N / lam) * torch.sqrt(lam / N - self.sigma2_)

    @derived
    def _posterior_std(self) -> torch.Tensor:
        """The posterior standard deviation of each code, the same for every point, (q,)."""
        return torch.sqrt(self.n_samples_ * self.sigma2_ / self.eigenvalues_)

    @derived
    def _shrinkage(self) -> torch.Tensor:
        """``1 - N sigma2 / lam_p`` (q,): a reconstruction's coordinate over the input's."""
        return 1.0 - self.n_samples_ * self.sigma2_ / self.eigenvalues_


@dataclasses.dataclass(frozen=True, kw_only=True)
class DualState(PPCAState):
    """:class:`~kppca.DualPPCA`'s record: the kernel, the centering statistics, the inputs and ``E_q``."""

    kernel_: Any = fitted(Kernel, callable)
    centerer_: KernelCenterer = fitted(KernelCenterer)
    X_fit_: torch.Tensor = fitted(TensorSpec(shape=("n_samples_", "n_features_in_")))
    eigenvectors_: torch.Tensor = fitted(TensorSpec(shape=("n_samples_", "n_components_")))

    def check(self) -> str | None:
        """The centerer's statistics are of the training Gram matrix (``N = n_samples_``)."""
        means = getattr(self.centerer_, "column_means_", None)
        if means is None or means.shape != (self.n_samples_,):
            return f"centerer_.column_means_ must have shape ({self.n_samples_},)"
        return None

    @derived
    def _a_scale(self) -> torch.Tensor:
        """``sqrt(1/N - sigma2/lam_p)`` (q,): ``A = E_q diag(a)``."""
        return torch.sqrt(1.0 / self.n_samples_ - self.sigma2_ / self.eigenvalues_)

    @derived
    def A_(self) -> torch.Tensor:
        """The dual coefficients ``A = E_q diag(sqrt(1/N - sigma2/lam))`` (N, q): ``W = Phi_c A``."""
        return self.eigenvectors_ * self._a_scale


@dataclasses.dataclass(frozen=True, kw_only=True)
class PrimalState(PPCAState):
    """:class:`~kppca.PrimalPPCA`'s record; ``d`` is the feature dimension.

    A model fitted in memory keeps ``X_fit_``; one fitted by ``partial_fit`` or on Dask keeps the float64
    feature statistics (``_stream_stats``) instead, and a landmark model the rows it generates from beyond its
    landmarks (``_latent_extra``).
    """

    feature_map_: FeatureMap = fitted(FeatureMap)
    mean_: torch.Tensor = fitted(TensorSpec(shape=("d",)))
    components_: torch.Tensor = fitted(TensorSpec(shape=("n_components_", "d")))
    W_: torch.Tensor = fitted(TensorSpec(shape=("d", "n_components_")))
    X_fit_: torch.Tensor = fitted(TensorSpec(shape=("n_samples_", "n_features_in_")), optional=True)
    _latent_extra: torch.Tensor = fitted(TensorSpec(shape=(None, "n_features_in_")), optional=True)
    # One class index per training point, or per landmark for a model without training inputs (see check).
    _label_index: torch.Tensor = fitted(TensorSpec("int", ("n_label_points",), nonnegative=True), optional=True)
    _stream_params: dict = fitted(Record({"center": ["boolean"], "feature_map": [str, None], "dtype": [str, None],
                                          "device": [str, None]}), optional=True)
    _stream_stats: dict = fitted(Record({"count": [_COUNT], "mean": [TensorSpec(torch.float64, ("d",))],
                                         "scatter": [TensorSpec(torch.float64, ("d", "d"))],
                                         "max_sq_norm": [Interval(Real, 0, None, closed="left")]}), optional=True)

    def check(self) -> str | None:
        """The map's width is ``d``; one class index per point the latent codes come from: the training inputs, else the landmarks and the
        rows kept with them (``_latent_extra``)."""
        width = self.feature_map_.output_width()
        if width is not None and width != self.mean_.shape[0]:
            return f"feature_map_ maps to {width} features but mean_ has {self.mean_.shape[0]}"
        stored = self.stored()
        index = stored.get("_label_index")
        if index is None:
            return None
        if "X_fit_" in stored:
            expected, what = self.n_samples_, "n_samples_"
        else:
            reference = self.feature_map_.reference_set()
            extra = stored.get("_latent_extra")
            expected = (0 if reference is None else reference[0].shape[0]) + (0 if extra is None else extra.shape[0])
            what = "the landmarks plus the rows of _latent_extra"
        if index.shape[0] != expected:
            return f"_label_index has {index.shape[0]} entries but {what} make {expected}"
        return None
