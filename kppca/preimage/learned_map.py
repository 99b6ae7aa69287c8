"""The learned pre-image strategy: kernel ridge regression from principal coordinates to inputs.

Its bandwidth and ridge may be chosen by exact leave-one-out error
(:mod:`kppca.preimage.ridge_cv`), and its output refined by fixed-point steps
(RBF kernels). See :mod:`kppca.preimage.strategies` for how models call strategies.
"""

from __future__ import annotations

import warnings

import torch

from .._param_validation import Integral, Interval, StrOptions
from ..kernels import RBF
from .base import _COUNT, _POSITIVE, Preimage
from .context import FeaturePoints, TrainingContext
from .fixed_point import PreimageConvergenceWarning, dual_coefficients_to_expansion, fixed_point_preimage
from .learned import LearnedPreimage, median_heuristic_bandwidth
from .ridge_cv import RIDGES, select_bandwidth_and_ridge

__all__ = ["LearnedMapPreimage"]


class LearnedMapPreimage(Preimage):
    """Kernel ridge regression from principal coordinates to inputs (:class:`~kppca.preimage.LearnedPreimage`),
    fitted once on the training points and kept in the caller's cache.

    Needs ``points.coordinates`` (models provide it); ``n_coordinates=None`` uses ``q``.
    ``bandwidth`` and ``alpha`` may be ``"cv"``: chosen by exact leave-one-out error
    (:func:`~kppca.preimage.ridge_cv.select_bandwidth_and_ridge`, once per cache);
    ``bandwidth=None`` is the median heuristic. ``refine`` > 0 runs that many
    fixed-point steps (Mika et al., RBF kernels only) from the map's output toward
    the feature-space point (see docs/theory.md).
    """

    name = "learned"
    rowwise = False
    _defaults = {"n_coordinates": None, "bandwidth": None, "alpha": 0.1, "refine": 0}
    _constraints = {
        "n_coordinates": [_COUNT, None],
        "bandwidth": [_POSITIVE, None, StrOptions(("cv",))],
        "alpha": [_POSITIVE, StrOptions(("cv",))],
        "refine": [Interval(Integral, 0, None, closed="left")],
    }

    def _map(self, points: FeaturePoints, context: TrainingContext, cache: dict, start: int) -> torch.Tensor:
        if points.coordinates is None:
            raise ValueError(
                "preimage='learned' needs principal coordinates of the points (FeaturePoints.coordinates); "
                "models provide them, a bare TrainingContext does not."
            )
        refine = self.options["refine"]
        if refine and not isinstance(context.kernel, RBF):
            raise NotImplementedError(
                f"preimage='learned' with refine={refine} takes fixed-point steps, derived for the RBF kernel "
                f"only; this model's kernel is {type(context.kernel).__name__}. Use refine=0."
            )
        train, new, key = points.coordinates(self.options["n_coordinates"])
        bandwidth, alpha = self.options["bandwidth"], self.options["alpha"]
        cache_key = ("learned", key, bandwidth, alpha)
        if cache_key not in cache:
            if "cv" in (bandwidth, alpha):
                bws = None if bandwidth == "cv" else (bandwidth or median_heuristic_bandwidth(train),)
                bw, alpha, _ = select_bandwidth_and_ridge(
                    train, context.X, bandwidths=bws, alphas=RIDGES if alpha == "cv" else (alpha,)
                )
                bandwidth = bw
            cache[cache_key] = LearnedPreimage(bandwidth=bandwidth, alpha=alpha).fit(train, context.X)
        out = cache[cache_key].predict(new)
        if refine:
            gamma = dual_coefficients_to_expansion(points.alpha) if context.center else points.alpha
            with warnings.catch_warnings():
                # A fixed number of steps, not a solve to convergence: the warning does not apply.
                warnings.simplefilter("ignore", PreimageConvergenceWarning)
                out = fixed_point_preimage(gamma, context.X, context.kernel, init=out, max_iter=refine, tol=0.0)
        return out
