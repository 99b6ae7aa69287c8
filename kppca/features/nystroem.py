"""Nyström feature map: an explicit map from a kernel evaluated on landmark points."""

from __future__ import annotations

import torch

from .._linalg import rank_tolerance
from .._param_validation import Integral, Interval, StrOptions, check_scalar
from .._validation import numpy_rng
from ..io.specs import OPTIONAL, TensorSpec
from ..kernels.base import Kernel
from ..kernels.standard import as_kernel
from .base import FeatureMap
from .landmarks import LANDMARK_SELECTIONS, kmeanspp, pool_size


class Nystroem(FeatureMap):
    """``phi(x) = K_LL^{-1/2} k_L(x)`` for ``n_landmarks`` landmarks chosen from the training points.

    ``<phi(x), phi(y)> = k_L(x)^T K_LL^+ k_L(y)`` approximates ``k(x, y)``, exactly on the landmarks; null
    directions of ``K_LL`` are dropped (a pseudo-inverse square root, not a regularisation). The landmarks
    are the map's :meth:`reference_set`.

    Parameters
    ----------
    kernel : Kernel, callable or str
    n_landmarks : int, default 100
        Positive, at most the number of training points (checked by ``fit``).
    landmark_selection : {"uniform", "kmeans++"}, default "uniform"
        A uniform random subset of the rows given to ``fit``, or k-means++ seeding in feature space over a
        uniform pool of ``4 * n_landmarks`` rows, which spreads the landmarks (:mod:`kppca.features.landmarks`).
    random_state : int, numpy Generator or None

    Attributes
    ----------
    kernel_ : Kernel
    landmarks_ : Tensor of shape (n_landmarks, D)
    normalization_ : Tensor of shape (n_landmarks, d), ``d <= n_landmarks``
    landmark_indices_ : Tensor of shape (n_landmarks,), int64
        Rows of the data given to ``fit`` that are the landmarks.
    """

    _fitted_constraints = {
        **FeatureMap._fitted_constraints,
        "kernel_": [Kernel],
        "landmarks_": [TensorSpec(shape=("m", "n_features_in_"))],
        "normalization_": [TensorSpec(shape=("m", None))],
        "landmark_indices_": [TensorSpec(torch.int64, ("m",), nonnegative=True), OPTIONAL],
    }

    def __init__(
        self, kernel: Kernel | str = "rbf", n_landmarks: int = 100, landmark_selection: str = "uniform",
        random_state=None,
    ):
        self.kernel = kernel
        self.n_landmarks = n_landmarks
        self.landmark_selection = landmark_selection
        self.random_state = random_state

    def _check_params(self) -> None:
        check_scalar(self.n_landmarks, "n_landmarks", [Interval(Integral, 0, None, closed="neither")])
        check_scalar(self.landmark_selection, "landmark_selection", [StrOptions(LANDMARK_SELECTIONS)])
        as_kernel(self.kernel)._check_params()

    def pool_size(self, n_rows: int | None = None) -> int:
        """How many uniformly drawn rows ``fit`` needs to choose its landmarks (all of them are used)."""
        self._check_params()
        return pool_size(int(self.n_landmarks), self.landmark_selection, n_rows)

    def _fit(self, X: torch.Tensor) -> None:
        n = X.shape[0]
        n_landmarks = int(self.n_landmarks)
        if n_landmarks > n:
            raise ValueError(f"n_landmarks={n_landmarks} exceeds the {n} training points; lower it.")
        self.kernel_ = as_kernel(self.kernel).resolve(X)  # a data-derived width from the training set
        rng = numpy_rng(self.random_state)
        # A uniform draw of the pool; "uniform" keeps it whole (its pool is the n_landmarks rows).
        pool = rng.choice(n, size=pool_size(n_landmarks, self.landmark_selection, n), replace=False)
        idx = torch.as_tensor(pool, device=X.device)
        if self.landmark_selection == "kmeans++":
            idx = idx[kmeanspp(X[idx], n_landmarks, self.kernel_, rng)]
        self.landmark_indices_ = idx.to(torch.int64).cpu()
        self.landmarks_ = X[idx].clone()
        K_ll = self.kernel_.gram(self.landmarks_, self.landmarks_)
        values, vectors = torch.linalg.eigh(K_ll)
        tol = rank_tolerance(float(values.max()), len(values), values.dtype)
        if float(values.min()) < -tol:
            raise ValueError("the kernel's Gram matrix on the landmarks is not positive semi-definite.")
        keep = values > tol
        self.normalization_ = vectors[:, keep] / values[keep].sqrt()

    def map(self, X: torch.Tensor) -> torch.Tensor:
        landmarks = self.landmarks_.to(X.device, X.dtype)
        return self.kernel_.gram(X, landmarks) @ self.normalization_.to(X.device, X.dtype)

    def reference_set(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The landmarks ``L`` (n_landmarks, D) and ``C = normalization_`` (n_landmarks, d): ``phi(L)^T C = I_d``."""
        if not hasattr(self, "landmarks_"):
            return None
        return self.landmarks_, self.normalization_
