"""Pre-images: from feature-space points (kernel vectors) back to inputs.

A point generated or reconstructed by a kernel model is known only through kernel values (a centered
kernel vector ``k_c`` or expansion coefficients ``gamma``); these functions map batches of such points
back to inputs (or, for Restricted Kernel Machines, to latent codes). Numpy in -> numpy out, torch in ->
torch out on the tensor's device. The strategy objects (:func:`make_preimage`) wrap them for the models.

Which method when: :func:`kernel_smoother` is closed form but confined to the convex hull of the training
targets (biased toward their mean for wide kernels); :func:`knn_preimage` returns (means of) actual
training points; :func:`fixed_point_preimage` (RBF only) is the most faithful when it converges, but local;
:class:`LearnedPreimage` is fitted once, cheap to apply and not confined to the convex hull.
"""

from .context import FeaturePoints, TrainingContext
from .fixed_point import PreimageConvergenceWarning, dual_coefficients_to_expansion, fixed_point_preimage
from .knn import feature_space_sq_distances, knn_preimage
from .learned import LearnedPreimage, median_heuristic_bandwidth
from .ridge_cv import loo_ridge_errors, select_bandwidth_and_ridge
from .smoother import KernelSmoother, kernel_smoother
from . import strategies as _strategies
from .strategies import *  # noqa: F403 -- the names re-exported are those of strategies.__all__
from .uncenter import ROW_MEAN_ESTIMATES, uncenter_kernel_vectors

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
