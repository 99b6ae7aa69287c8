"""Random Fourier features approximating the RBF kernel (Rahimi & Recht, 2007)."""

from __future__ import annotations

import math

import numpy as np
import torch

from .._param_validation import Integral, Interval, Real, check_scalar
from .._validation import numpy_rng
from ..io.specs import TensorSpec
from ..kernels.bandwidth import check_bandwidth, resolve_bandwidth
from .base import FeatureMap


class RandomFourierFeatures(FeatureMap):
    """``phi(x) = sqrt(2/d) cos(x Omega + b)`` with ``Omega ~ N(0, bandwidth^-2 I)``, ``b ~ U[0, 2 pi]``.

    ``<phi(x), phi(y)>`` estimates the RBF kernel (:class:`kppca.kernels.RBF`) without bias, with error
    ``O(1 / sqrt(n_features))``.

    Parameters
    ----------
    bandwidth : float or {"scale", "median"}, default 1.0
        Positive and finite, or a rule resolved from the data by ``fit`` as for :class:`kppca.kernels.RBF`.
    n_features : int, default 500
        Output dimension ``d``.
    random_state : int, numpy Generator or None

    Attributes
    ----------
    bandwidth_ : float
        The width used (``bandwidth``, or its rule's value on the training data).
    omega_ : Tensor of shape (D, d)
    offset_ : Tensor of shape (d,)
    """

    _fitted_constraints = {
        **FeatureMap._fitted_constraints,
        "bandwidth_": [Interval(Real, 0, None, closed="neither")],
        "omega_": [TensorSpec(torch.float64, ("n_features_in_", "n_features"))],
        "offset_": [TensorSpec(torch.float64, ("n_features",))],
    }

    def __init__(self, bandwidth: float = 1.0, n_features: int = 500, random_state=None):
        self.bandwidth = bandwidth
        self.n_features = n_features
        self.random_state = random_state

    def _check_params(self) -> None:
        check_bandwidth(self.bandwidth)
        check_scalar(self.n_features, "n_features", [Interval(Integral, 0, None, closed="neither")])

    def _fit(self, X: torch.Tensor) -> None:
        # Draw with numpy so the map depends only on random_state, not on the device.
        rng = numpy_rng(self.random_state)
        n_features = int(self.n_features)
        self.bandwidth_ = resolve_bandwidth(self.bandwidth, X)
        with np.errstate(over="ignore"):
            omega = rng.standard_normal((X.shape[1], n_features)) / self.bandwidth_
        if not np.isfinite(omega).all():
            raise ValueError(
                f"RandomFourierFeatures: the frequencies 1 / bandwidth overflow float64 (bandwidth={self.bandwidth!r}); "
                "use a larger bandwidth, e.g. the data's standard deviation."
            )
        offset = rng.uniform(0.0, 2.0 * math.pi, n_features)
        self.omega_ = torch.as_tensor(omega, dtype=torch.float64)
        self.offset_ = torch.as_tensor(offset, dtype=torch.float64)

    def map(self, X: torch.Tensor) -> torch.Tensor:
        # The fitted width, not the parameter: set_params after fit must not rescale a stale draw.
        proj = torch.addmm(self.offset_.to(X.device, X.dtype), X, self.omega_.to(X.device, X.dtype))
        if not bool(torch.isfinite(proj).all()) and bool(torch.isfinite(X).all()):
            # A tiny bandwidth: Omega ~ 1 / bandwidth overflows float32 (or X Omega overflows);
            # cos of a huge but finite float64 phase is still defined.
            proj = torch.addmm(self.offset_.to(X.device), X.to(torch.float64), self.omega_.to(X.device))
            if not bool(torch.isfinite(proj).all()):
                raise ValueError(
                    f"RandomFourierFeatures: X / bandwidth overflows float64 (bandwidth={self.bandwidth!r} is "
                    "far below the data's scale); use a larger bandwidth, e.g. the data's standard deviation."
                )
        return proj.cos_().to(X.dtype).mul_(math.sqrt(2.0 / self.omega_.shape[1]))
