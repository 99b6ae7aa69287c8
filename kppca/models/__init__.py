"""The primal and dual probabilistic PCA estimators."""

from ._spectrum import minka_dimension
from .dual import DualPPCA
from .primal import PrimalPPCA

__all__ = ["PrimalPPCA", "DualPPCA", "minka_dimension"]
