"""kppca: Probabilistic PCA in Hilbert space, primal and dual, with generation.

Main entry points: :class:`PrimalPPCA` (explicit features) and
:class:`DualPPCA` (kernels); see :mod:`kppca.kernels`, :mod:`kppca.features`,
:mod:`kppca.distributions`.
"""

from . import distributions, features, kernels
from .models import DualPPCA, PrimalPPCA
from .io import ModelFileError, load, save

__version__ = "0.1.0"

__all__ = ["PrimalPPCA", "DualPPCA", "save", "load", "ModelFileError", "kernels", "features", "distributions", "__version__"]
