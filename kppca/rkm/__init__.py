"""Restricted Kernel Machines: multi-view kernel PCA in primal and dual form, and forecasting with it;
LS-SVM, kernel PCA and the matrix SVD as RKMs, the deep RKM of the 2017 paper and the deep RKM classifier.

The Stiefel solver needs the optional dependency geoopt (``pip install kppca[rkm]``);
it is imported only when ``solver="stiefel"`` (or ``optimizer="geoopt"``) is used.
"""

from .forecasting import NARForecaster, lag_windows, plot_forecasts
from .multiview import MultiViewKPCA
from .solvers import StiefelResult, stiefel_minimize, top_eigenpairs

from .deep import DeepRKM, KPCALevel, LSSVMLevel
from .deep_classifier import DeepRKMClassifier
from .lssvm import LSSVMClassifier, LSSVMRegressor, solve_lssvm_dual, solve_lssvm_primal
from .projected_gradient import ProjectedGradientResult, project_stiefel, projected_gradient
from .shallow import KernelPCARKM, SVDResult, matrix_svd_rkm

__all__ = [
    # multi-view kernel PCA and forecasting (spec section 1)
    "MultiViewKPCA",
    "NARForecaster",
    "lag_windows",
    "plot_forecasts",
    # shallow RKMs (section 2)
    "LSSVMRegressor",
    "LSSVMClassifier",
    "solve_lssvm_dual",
    "solve_lssvm_primal",
    "KernelPCARKM",
    "matrix_svd_rkm",
    "SVDResult",
    # deep RKMs (section 3)
    "DeepRKM",
    "LSSVMLevel",
    "KPCALevel",
    "DeepRKMClassifier",
    # solvers
    "StiefelResult",
    "stiefel_minimize",
    "top_eigenpairs",
    "projected_gradient",
    "project_stiefel",
    "ProjectedGradientResult",
]

# --- issue 19: the rest of the deep RKM paper ---
from .kernel_pmf import KernelPMF

__all__ += ["KernelPMF"]
from .deep_lssvm_classifier import DeepLSSVMClassifier

__all__ += ["DeepLSSVMClassifier"]
from .ensemble import SubsetEnsembleClassifier

__all__ += ["SubsetEnsembleClassifier"]
