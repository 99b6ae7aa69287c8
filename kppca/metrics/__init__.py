"""Criteria for evaluating and selecting fitted models, and for judging generated samples.

:func:`reconstruction_error` and its scorers measure held-out error in the input space, so they compare
models across kernels and feature maps, unlike ``score`` (a log-likelihood on the model's own ``H_E``).
"""

from .digit_features import DigitFeatures, digit_features, train_digit_features
from .sample_quality import (
    SampleQuality, effective_classes, frechet_distance, frechet_feature_distance, gaussian_statistics, mmd_test,
    sample_quality,
)
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
