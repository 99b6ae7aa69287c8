"""Gaussians on a subspace such as ``range(K_c)``, without jitter; importing this registers their KL divergences."""

from .degenerate_normal import DegenerateMultivariateNormal
from .kl import kl_degenerate_normals

__all__ = ["DegenerateMultivariateNormal", "kl_degenerate_normals"]
