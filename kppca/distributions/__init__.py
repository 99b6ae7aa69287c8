"""Pyro distributions used by the models.

The dual model's Gaussians (``k_c | h`` and ``k_c``) live on ``range(K_c)``, so they are represented exactly,
without jitter. Importing this package registers their KL divergences (:mod:`kppca.distributions.kl`).
"""

from .degenerate_normal import DegenerateMultivariateNormal
from .kl import kl_degenerate_normals

__all__ = ["DegenerateMultivariateNormal", "kl_degenerate_normals"]
