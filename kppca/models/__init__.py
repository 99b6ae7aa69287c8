"""The primal and dual probabilistic PCA estimators."""

from ._base import minka_dimension
from .dual import DualPPCA
from .primal import PrimalPPCA

__all__ = ["PrimalPPCA", "DualPPCA", "minka_dimension"]
