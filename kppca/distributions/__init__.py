"""Pyro distributions used by the models.

``DegenerateMultivariateNormal`` represents the singular Gaussians of the dual
model (``k_c | h`` and ``k_c`` live on ``range(K_c)``) exactly. Importing this
package registers its KL divergences with ``torch.distributions.kl_divergence``
(:mod:`kppca.distributions.kl`: closed form on a common support, ``+inf`` when the
supports differ, also against a full-rank ``MultivariateNormal``).
"""

from .degenerate_normal import DegenerateMultivariateNormal
from .kl import kl_degenerate_normals

__all__ = ["DegenerateMultivariateNormal", "kl_degenerate_normals"]
