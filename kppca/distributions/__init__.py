"""Pyro distributions used by the models.

``DegenerateMultivariateNormal`` represents the singular Gaussians of the dual
model (``k_c | h`` and ``k_c`` live on ``range(K_c)``) exactly.
"""

from .degenerate_normal import DegenerateMultivariateNormal

__all__ = ["DegenerateMultivariateNormal"]
