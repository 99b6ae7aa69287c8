"""Criteria for evaluating and selecting fitted models.

:func:`reconstruction_error` and its scorers (:func:`make_reconstruction_scorer`,
:data:`reconstruction_scorer`) measure held-out error in the input space, so they
compare models across kernels, bandwidths and feature maps, unlike
``score`` (a log-likelihood on the model's own ``H_E``). For novelty detection
see the models' ``novelty_score``. For generated samples, :func:`sample_quality`
(classifier confidence, class balance, novelty, MMD two-sample test, Fréchet
feature distance: :func:`frechet_distance`, :func:`digit_features`).
"""

from .digit_features import DigitFeatures, digit_features, train_digit_features
from .frechet import frechet_distance, frechet_feature_distance, gaussian_statistics
from .sample_quality import SampleQuality, effective_classes, mmd_test, sample_quality
from . import scoring as _scoring
from .scoring import *  # noqa: F403 -- the names re-exported are those of scoring.__all__

__all__ = [
    "sample_quality",
    "SampleQuality",
    "effective_classes",
    "mmd_test",
    "frechet_distance",
    "frechet_feature_distance",
    "gaussian_statistics",
    "DigitFeatures",
    "digit_features",
    "train_digit_features",
    *_scoring.__all__,
]
