"""Restricted Kernel Machines: multi-view kernel PCA, forecasting, LS-SVM, kernel PCA, SVD and deep RKMs."""

from .deep import DeepLSSVMClassifier, DeepRKM, DeepRKMClassifier, KPCALevel, LSSVMLevel
from .ensemble import SubsetEnsembleClassifier
from .forecasting import NARForecaster, lag_windows, plot_forecasts
from .kernel_pmf import KernelPMF
from .lssvm import LSSVMClassifier, LSSVMRegressor, solve_lssvm_dual, solve_lssvm_primal
from .multiview import MultiViewKPCA
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
    # deep RKMs (section 3) and the rest of the deep RKM paper
    "DeepRKM",
    "LSSVMLevel",
    "KPCALevel",
    "DeepRKMClassifier",
    "KernelPMF",
    "DeepLSSVMClassifier",
    "SubsetEnsembleClassifier",
]
