"""Generation in input space: samples, latent codes and reconstructions mapped back through a pre-image.

The dual model lives in feature space and is known only through kernel values: a
generated point ``psi`` is a centered kernel vector ``k_c = Phi_c^T (psi - m)`` (spec,
"Conditional and marginal"). The mixins of this package add to :class:`~kppca.DualPPCA`
and :class:`~kppca.PrimalPPCA` the methods that bring such points back to inputs
(``sample``, ``inverse_transform``, ``reconstruct``, ``latent_traversal`` and, dual only,
``kernel_preimage``), implemented once in :class:`~kppca.models.generation.base.GenerationMixin`.

The pre-image itself is a strategy object of :mod:`kppca.preimage.strategies`
(``preimage=`` takes its name plus options as keywords, or the object), called with
the model's :meth:`preimage_context` (a :class:`~kppca.preimage.TrainingContext`). The
default, :class:`~kppca.preimage.AutoPreimage`, is the hub-corrected kernel smoother for
``sample`` and the learned map elsewhere; with ``latent="mixture"`` (the default of
``kppca sample`` and, through ``"auto"``, of ``sample``) the samples are classified as
confidently as real digits, cover every class, and are not copies of training digits.
"""

from ...preimage.strategies import DEFAULT_PREIMAGE, PREIMAGE_METHODS, PREIMAGE_OPTIONS, resolve_preimage
from .base import GenerationMixin
from .dual import DualGenerationMixin
from .latent import LATENTS
from .primal import PrimalGenerationMixin

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
