"""Nyström feature map: an explicit map from a kernel evaluated on landmark points."""

from __future__ import annotations

import torch

from .._linalg import rank_tolerance
from .._param_validation import Integral, Interval, check_scalar
from .._validation import numpy_rng
from ..io.specs import TensorSpec
from ..kernels.base import Kernel
from ..kernels.registry import as_kernel
from .base import FeatureMap


class Nystroem(FeatureMap):
    """``phi(x) = K_LL^{-1/2} k_L(x)`` for ``n_landmarks`` training points drawn at random.

    ``<phi(x), phi(y)> = k_L(x)^T K_LL^+ k_L(y)`` is the Nyström approximation
    of ``k(x, y)``; it is exact on the landmarks. Null directions of ``K_LL``
    (duplicate landmarks, low-rank kernels) are dropped from the map, which is
    a pseudo-inverse square root, not a regularisation.

    Parameters
    ----------
    kernel : Kernel, callable or str
    n_landmarks : int, default 100
        At most the number of training points.
        Positive integer (checked by ``fit``).
    random_state : int, numpy Generator or None

    Attributes
    ----------
    kernel_ : Kernel
        ``kernel`` resolved by :func:`kppca.kernels.as_kernel`.
    landmarks_ : Tensor of shape (n_landmarks, D)
    normalization_ : Tensor of shape (n_landmarks, d), ``d <= n_landmarks``
    """

    _fitted_constraints = {
        **FeatureMap._fitted_constraints,
        "kernel_": [Kernel],
        "landmarks_": [TensorSpec(shape=("m", "n_features_in_"))],
        "normalization_": [TensorSpec(shape=("m", None))],
    }

    def __init__(self, kernel: Kernel | str = "rbf", n_landmarks: int = 100, random_state=None):
        self.kernel = kernel
        self.n_landmarks = n_landmarks
        self.random_state = random_state

    def _check_params(self) -> None:
        check_scalar(self.n_landmarks, "n_landmarks", [Interval(Integral, 0, None, closed="neither")])
        as_kernel(self.kernel)._check_params()

    def _fit(self, X: torch.Tensor) -> None:
        n = X.shape[0]
        n_landmarks = int(self.n_landmarks)
        if n_landmarks > n:
            raise ValueError(f"n_landmarks={n_landmarks} exceeds the {n} training points; lower it.")
        self.kernel_ = as_kernel(self.kernel).resolve(X)  # a data-derived width from the training set
        idx = numpy_rng(self.random_state).choice(n, size=n_landmarks, replace=False)
        self.landmarks_ = X[torch.as_tensor(idx, device=X.device)].clone()
        K_ll = self.kernel_.gram(self.landmarks_, self.landmarks_)
        values, vectors = torch.linalg.eigh(K_ll)
        if float(values.min()) < -rank_tolerance(float(values.max()), len(values), values.dtype):
            raise ValueError("the kernel's Gram matrix on the landmarks is not positive semi-definite.")
        keep = values > rank_tolerance(float(values.max()), len(values), values.dtype)
        self.normalization_ = vectors[:, keep] / values[keep].sqrt()

    def map(self, X: torch.Tensor) -> torch.Tensor:
        landmarks = self.landmarks_.to(X.device, X.dtype)
        return self.kernel_.gram(X, landmarks) @ self.normalization_.to(X.device, X.dtype)
