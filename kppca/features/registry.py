"""Feature maps by name, for model files (a file names a class by a key here, never by an import path)."""

from __future__ import annotations

from .base import FeatureMap, Identity
from .nystroem import Nystroem
from .polynomial import PolynomialFeatures
from .random_fourier import RandomFourierFeatures

#: Name -> feature-map class.
FEATURE_MAPS: dict[str, type[FeatureMap]] = {
    "identity": Identity,
    "random_fourier": RandomFourierFeatures,
    "nystroem": Nystroem,
    "polynomial_features": PolynomialFeatures,
}


__all__ = ["FEATURE_MAPS"]
