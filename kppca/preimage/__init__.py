"""Pre-images: from feature-space points (kernel vectors) back to inputs.

A point generated or reconstructed by a kernel model lives in feature space and is
known only through kernel values (a centered kernel vector ``k_c``, or expansion
coefficients ``gamma``); these functions map it back to the input space (or, for
Restricted Kernel Machines, to a latent code). All work on batches of M points at
once, take numpy arrays or torch tensors (numpy in -> numpy out, torch in -> torch
out, on the tensor's device) and compute in float64 by default.

Strategy objects
----------------
:class:`SmootherPreimage`, :class:`KNNPreimage`, :class:`FixedPointPreimage` and
:class:`LearnedMapPreimage` wrap these functions for models: built from options
(:func:`make_preimage`), called with :class:`FeaturePoints` and a
:class:`TrainingContext`. The models' default, :class:`AutoPreimage` (``"auto"``),
chooses between the smoother (sampled points) and the learned map (maps of given points).

Which method when
-----------------
:func:`kernel_smoother` (with :func:`uncenter_kernel_vectors` first for centered vectors)
    The default for generation from the dual model (paper eq. 19) and for RKM
    out-of-sample codes. Closed form, any non-negative kernel, one matrix product.
    A weighted mean: it stays in the convex hull of the training targets and is
    biased toward the mean when the kernel is wide (use ``n_neighbors`` to
    sharpen it). ``estimate="span"`` un-centers vectors from the model exactly.
:func:`knn_preimage` (with :func:`feature_space_sq_distances`)
    Fast and robust: returns (a mean of) actual training points. ``n_neighbors=1``
    gives realistic but non-novel samples; larger values blur. Any kernel.
:func:`fixed_point_preimage` (with :func:`dual_coefficients_to_expansion`)
    Mika et al.'s iteration for the RBF kernel: minimises the feature-space
    distance, so it is the most faithful when it converges, but it is local,
    iterative and needs expansion coefficients; it falls back to the best
    training point rather than returning NaN.
:class:`LearnedPreimage`
    Kernel ridge regression from coordinates (principal projections, latent
    codes) to inputs, fitted once on training pairs; then prediction is cheap
    and not confined to the convex hull. Needs a bandwidth and a ridge ``alpha``
    (``"cv"``: by exact leave-one-out error, see :func:`select_bandwidth_and_ridge`)
    and coordinates rather than kernel vectors.
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
