"""Generation in input space: samples, latent codes and reconstructions mapped back through a pre-image.

The mixins here add to :class:`~kppca.DualPPCA` and :class:`~kppca.PrimalPPCA` the methods that bring
feature-space points back to inputs, implemented once in :class:`~kppca.models.generation.base.GenerationMixin`;
the pre-image is a strategy of :mod:`kppca.preimage.strategies` (``preimage=`` takes its name, or the object).
"""

from ...preimage.strategies import DEFAULT_PREIMAGE, PREIMAGE_METHODS, PREIMAGE_OPTIONS, resolve_preimage
from .base import GenerationMixin
from .hooks import DualGenerationMixin, PrimalGenerationMixin
from .latent import LATENTS

__all__ = [
    "GenerationMixin",
    "DualGenerationMixin",
    "PrimalGenerationMixin",
    "PREIMAGE_METHODS",
    "PREIMAGE_OPTIONS",
    "DEFAULT_PREIMAGE",
    "LATENTS",
    "resolve_preimage",
]
