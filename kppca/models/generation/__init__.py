"""Generation in input space: samples, latent codes and reconstructions mapped back through a pre-image.

The dual model lives in feature space and is known only through kernel values: a
generated point ``psi`` is a centered kernel vector ``k_c = Phi_c^T (psi - m)`` (spec,
"Conditional and marginal"). The mixins of this package add to :class:`~kppca.DualPPCA`
and :class:`~kppca.PrimalPPCA` the methods that bring such points back to inputs,
implemented once in :class:`~kppca.models.generation.base.GenerationMixin`:

* ``sample(n, latent=..., y=...)`` -- draw from a Gaussian mixture on the training codes
  (the default, ``latent="auto"``, when the model kept its training inputs), from the
  model's prior (``latent="prior"``: the exact sample), or from one class;
* ``inverse_transform(h)`` -- the conditional mean ``K_c A h`` (``W h + m``) of latent codes;
* ``reconstruct(X)`` -- the MAP reconstruction, in inputs for both models (the
  feature-space ones are ``reconstruct_kernel`` and ``reconstruct_features``);
* ``latent_traversal()`` -- a grid over two latent components (paper, Fig. 4c);
* ``kernel_preimage(K_c_rows)`` (dual) -- any centered kernel vectors.

The pre-image itself is a strategy object of :mod:`kppca.preimage.strategies`
(``preimage=`` takes its name plus options as keywords, or the object), called with
the model's :meth:`preimage_context` (a :class:`~kppca.preimage.TrainingContext`).

Default pre-image: the kernel smoother over 10 training points weighted by their raw
kernel values, chosen in ``sample`` with a local hubness correction and elsewhere by
raw similarity (``selection="auto"``, see :mod:`kppca.preimage.strategies`); with ``latent="mixture"``
(the default of ``kppca sample`` and, through ``"auto"``, of ``sample``) the samples are classified as
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
