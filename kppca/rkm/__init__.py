"""Restricted Kernel Machines: multi-view kernel PCA in primal and dual form, and forecasting with it;
LS-SVM, kernel PCA and the matrix SVD as RKMs, the deep RKM of the 2017 paper and the deep RKM classifier.

The optimisers (Stiefel manifold, L-BFGS) live in :mod:`kppca.optim`; geoopt (``pip install kppca[rkm]``)
is imported only when ``solver="stiefel"`` (or ``optimizer="geoopt"``) is used.
"""

from .forecasting import NARForecaster, lag_windows, plot_forecasts
from .multiview import MultiViewKPCA

from .deep import DeepRKM, DeepRKMClassifier, KPCALevel, LSSVMLevel
from .lssvm import LSSVMClassifier, LSSVMRegressor, solve_lssvm_dual, solve_lssvm_primal
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
]

# --- issue 19: the rest of the deep RKM paper ---
from .kernel_pmf import KernelPMF

__all__ += ["KernelPMF"]
from .deep import DeepLSSVMClassifier

__all__ += ["DeepLSSVMClassifier"]
from .ensemble import SubsetEnsembleClassifier

__all__ += ["SubsetEnsembleClassifier"]
