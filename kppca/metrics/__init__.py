"""Criteria for evaluating and selecting fitted models, and for judging generated samples."""

from . import digit_features as _digit_features
from . import sample_quality as _sample_quality
from . import scoring as _scoring
from .digit_features import *  # noqa: F403 -- the names re-exported are those of each module's __all__
from .sample_quality import *  # noqa: F403
from .scoring import *  # noqa: F403

__all__ = [*_sample_quality.__all__, *_digit_features.__all__, *_scoring.__all__]
