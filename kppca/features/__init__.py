"""Explicit feature maps for the primal model.

Each map's ``as_kernel()`` is the kernel it induces: the primal model on ``phi`` and the dual model on
``as_kernel()`` describe the same feature space and must agree to rounding.
"""

from .base import FeatureMap, FeatureMapKernel, Identity, PolynomialFeatures, RandomFourierFeatures
from .landmarks import Nystroem
from ..io.registry import register

#: Name -> feature-map class, for model files (a file names a class by a key here, never by an import path).
FEATURE_MAPS: dict[str, type[FeatureMap]] = {
    "identity": Identity,
    "random_fourier": RandomFourierFeatures,
    "nystroem": Nystroem,
    "polynomial_features": PolynomialFeatures,
}
for _name, _cls in FEATURE_MAPS.items():
    register(_cls, name=f"feature_map:{_name}", component=True)
register(FeatureMapKernel, name="kernel:feature_map", component=True)

__all__ = ["FeatureMap", "FeatureMapKernel", "Identity", "RandomFourierFeatures", "Nystroem", "PolynomialFeatures", "FEATURE_MAPS"]
