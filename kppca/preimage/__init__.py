"""Pre-images: from feature-space points (kernel vectors) back to inputs.

Numpy in -> numpy out, torch in -> torch out. The smoother is closed form but confined to the convex hull
of the training targets; the fixed point (RBF only) is the most faithful when it converges; the learned map
is fitted once and not confined to the hull.
"""

from .context import FeaturePoints, TrainingContext
from .fixed_point import PreimageConvergenceWarning, dual_coefficients_to_expansion, fixed_point_preimage
from .learned import LearnedPreimage, loo_ridge_errors, median_heuristic_bandwidth, select_bandwidth_and_ridge
from .smoother import (ROW_MEAN_ESTIMATES, KernelSmoother, feature_space_sq_distances, kernel_smoother, knn_preimage,
                       uncenter_kernel_vectors)
from . import strategies as _strategies
from .strategies import *  # noqa: F403 -- the names re-exported are those of strategies.__all__

__all__ = [
    "kernel_smoother",
    "KernelSmoother",
    "uncenter_kernel_vectors",
    "ROW_MEAN_ESTIMATES",
    "feature_space_sq_distances",
    "knn_preimage",
    "fixed_point_preimage",
    "dual_coefficients_to_expansion",
    "PreimageConvergenceWarning",
    "LearnedPreimage",
    "median_heuristic_bandwidth",
    "loo_ridge_errors",
    "select_bandwidth_and_ridge",
    "TrainingContext",
    "FeaturePoints",
    *_strategies.__all__,
]
