"""Feature maps by name, for model files (a file names a class by a key here, never by an import path)."""

from __future__ import annotations

from .base import FeatureMap, FeatureMapKernel, Identity
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


def feature_map_name(feature_map: FeatureMap) -> str | None:
    """The registry name of ``feature_map``'s class (exact type), or None."""
    for name, cls in FEATURE_MAPS.items():
        if type(feature_map) is cls:
            return name
    return None


__all__ = ["FEATURE_MAPS", "FeatureMapKernel", "feature_map_name"]
