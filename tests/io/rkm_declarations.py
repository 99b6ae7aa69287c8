"""Fitted-state declarations of the RKM estimators, applied here until their classes carry them.

Each block below is meant to be pasted into its class (as ``_fitted_constraints``,
with ``@kppca.io.register`` on the class); :func:`apply` registers the classes
that do not declare themselves yet, so that the round-trip tests run today.
Once a class declares its own state, ``apply`` leaves it alone. Two sets: the
classes as they are on this branch, and as they are after the integration of
the scaffold/deep/gram branches (chosen by whether ``kppca.optim`` exists).
"""

from __future__ import annotations

from kppca._param_validation import Interval, Options
from kppca.features.base import FeatureMap
from kppca.io import OPTIONAL, ArraySpec, DictOf, FloatDtype, ListOf, TensorSpec, TupleOf, register
from kppca.io.registry import name_of
from kppca.kernels.base import Kernel
from kppca.kernels.centering import KernelCenterer

POS_INT = Interval("int", 1, None, closed="left")
NONNEG_INT = Interval("int", 0, None, closed="left")
REAL = Interval("real", None, None)  # finite
POS_REAL = Interval("real", 0, None, closed="neither")
NONNEG_REAL = Interval("real", 0, None, closed="left")

#: What every scaffold estimator records at fit (dtype, device, input metadata).
SCAFFOLD = {
    "_dtype": [FloatDtype()],
    "_device": ["device"],
    "n_features_in_": [POS_INT],
    "feature_names_in_": [ArraySpec("OU", ("n_features_in_",)), OPTIONAL],
}

# ---------------------------------------------------------------- kppca/rkm/solvers.py
STIEFEL_RESULT = {  # a helper object: rebuilt from these attributes alone
    "H": [TensorSpec(ndim=2)],
    "objective": [REAL],
    "n_iter": [NONNEG_INT],
    "converged": ["boolean"],
    "grad_norm": [NONNEG_REAL],
    "history": [ListOf([REAL])],
}

# ---------------------------------------------------------------- kppca/rkm/views.py
FITTED_VIEW = {  # a helper object; "n" samples, "d" input width, "f" features, "s" components
    "X_fit_": [TensorSpec(shape=("n", "d"))],
    "center": ["boolean"],
    "feature_map_": [FeatureMap, None],
    "kernel_": [Kernel, callable],
    "centerer_": [KernelCenterer],
    "phi_mean_": [TensorSpec(shape=("f",)), None],
    "_raw_features": [None],  # a fit-time cache, released at the end of fit
    "gram_hidden_": [TensorSpec(shape=("n", "s")), None],
    "row_mean_hidden_": [TensorSpec(shape=("s",)), None],
    "weight_basis_": [TensorSpec(shape=("n", "s")), None],
    "weight_offset_": [TensorSpec(shape=("n",)), None],
    "raw_scale_": [NONNEG_REAL, OPTIONAL],  # dual views only
    "inner_": [TensorSpec(shape=("s", "s"))],
}


def multiview_kpca(result_class: type | None = None) -> dict:
    """kppca/rkm/multiview.py: MultiViewKPCA (``result_class``: the Stiefel solver's result type)."""
    from kppca.rkm.views import FittedView

    if result_class is None:
        from kppca.rkm.solvers import StiefelResult as result_class

    return {
        "_numpy_fit_": ["boolean"],
        "solver_result_": [result_class, None],
        "_gamma_diagonal": ["boolean"],
        "form_": [Options({"primal", "dual"})],
        "n_views_": [POS_INT],
        "n_samples_": [POS_INT],
        "n_features_in_": [POS_INT, OPTIONAL],  # single-view input only
        "views_": [ListOf([FittedView], length="n_views_")],
        "_single_view_input_": ["boolean"],
        "n_iter_": [POS_INT],
        "view_widths_": [ListOf([POS_INT], length="n_views_")],
        "H_": [TensorSpec(shape=("n_samples_", "n_components_"))],
        "Gamma_": [TensorSpec(shape=("n_components_", "n_components_"))],
        "eigenvalues_": [TensorSpec(shape=("n_components_",))],
        "n_components_": [POS_INT],
        "U_": [ListOf([TensorSpec(shape=(None, "n_components_")), None], length="n_views_")],
    }


def nar_forecaster() -> dict:
    """kppca/rkm/forecasting.py: NARForecaster."""
    from kppca.rkm import MultiViewKPCA

    return {
        "_numpy_fit_": ["boolean"],
        "mean_": [REAL],
        "scale_": [POS_REAL],
        "model_": [MultiViewKPCA],
        "form_": [Options({"primal", "dual"})],
        "last_window_": [TensorSpec(ndim=2)],
        "n_lags_": [POS_INT],
        "n_features_in_": [POS_INT],
        # on the scaffold (branch shallow): dtype/device, and the range that the forecast warning uses
        "_dtype": [FloatDtype(), OPTIONAL],
        "_device": ["device", OPTIONAL],
        "training_range_": [TupleOf([REAL], [REAL]), OPTIONAL],
    }


#: kppca/rkm/lssvm.py: what both LS-SVMs hold ("n" training points, "p" outputs, "f" features).
LSSVM = {
    **SCAFFOLD,
    "_numpy_fit_": ["boolean"],
    "solver_": [Options({"primal", "dual"})],
    "feature_map_": [FeatureMap, None],
    "kernel_": [Kernel, callable],
    "coef_": [TensorSpec(shape=("f", "p")), OPTIONAL],  # primal solver
    "dual_coef_": [TensorSpec(shape=("n", "p")), OPTIONAL],  # dual solver
    "X_fit_": [TensorSpec(shape=("n", "n_features_in_")), OPTIONAL],  # dual solver
    "intercept_": [TensorSpec(shape=("p",))],
    "loo_residuals_": [TensorSpec(shape=("n", "p"))],
}
LSSVM_REGRESSOR = {**LSSVM, "_single_output": ["boolean"]}
LSSVM_CLASSIFIER = {
    **LSSVM,
    "classes_": [ArraySpec(ndim=1)],
    "codebook_": [TensorSpec(shape=(None, "p"))],
    "temperature_": [POS_REAL],
}

#: kppca/rkm/shallow.py: KernelPCARKM.
KERNEL_PCA_RKM = {
    **SCAFFOLD,
    "_numpy_fit_": ["boolean"],
    "kernel_": [Kernel, callable],
    "centerer_": [KernelCenterer],
    "hidden_features_": [TensorSpec(shape=("n", "n_components_"))],
    "eigenvalues_": [TensorSpec(shape=("n_components_",))],
    "X_fit_": [TensorSpec(shape=("n", "n_features_in_"))],
    "n_components_": [POS_INT],
}

#: kppca/rkm/deep.py: the level specifications (frozen dataclasses; helper objects).
LSSVM_LEVEL = {"kernel": [Kernel, str, callable], "lambda_": [POS_REAL], "eta": [POS_REAL]}
KPCA_LEVEL = {"n_components": [POS_INT], "eta": [POS_REAL], "kernel": [Kernel, str, callable]}


def deep_rkm() -> dict:
    """kppca/rkm/deep.py: DeepRKM ("m" prototypes)."""
    from kppca.rkm import KPCALevel, LSSVMLevel

    hidden = TensorSpec(shape=("m", None))
    return {
        **SCAFFOLD,
        "_single_output": ["boolean"],
        "levels_": [ListOf([LSSVMLevel, KPCALevel])],
        "kernel_": [Kernel, callable],
        "prototypes_": [TensorSpec(shape=("m", "n_features_in_"))],
        "prototype_indices_": [TensorSpec("int", ("m",), nonnegative=True)],
        "hidden_features_": [ListOf([hidden])],
        "intercept_": [TensorSpec(ndim=1)],
        "scales_": [ListOf([TensorSpec(ndim=1, positive=True), None])],
        "objective_history_": [ListOf([TupleOf([str], [REAL])])],
        "residual_history_": [ListOf([ListOf([REAL])])],
        "n_iter_": [NONNEG_INT],
        "H1_": [hidden, OPTIONAL],
        "H2_": [hidden, OPTIONAL],
        "H3_": [hidden, OPTIONAL],
    }


#: kppca/rkm/deep_classifier.py: one fitted binary model (or the shared MLP code); a helper object.
DEEP_CLASSIFIER_LEVEL = {
    "H": [TensorSpec(ndim=2)],
    "w": [TensorSpec(ndim=2), None],
    "b": [TensorSpec(ndim=1), None],
    "history": [ListOf([REAL])],
    "n_iter": [NONNEG_INT],
    "converged": ["boolean"],
}


def deep_rkm_classifier(model_class: type | None = None) -> dict:
    """kppca/rkm/deep_classifier.py: DeepRKMClassifier ("n" training points; ``model_class``: its fitted models)."""
    if model_class is None:
        from kppca.rkm.deep_classifier import _Level as model_class

    return {
        **SCAFFOLD,
        "classes_": [ArraySpec(ndim=1)],
        "_sizes": [ListOf([POS_INT])],
        "kernel_": [Kernel, callable],
        "_level_kernels": [ListOf([Kernel, callable, None])],
        "unsupervised_history_": [ListOf([REAL])],
        "_mlp": [ListOf([TensorSpec(ndim=2), TensorSpec(ndim=1)], length=4), OPTIONAL],  # head="mlp"
        "_mlp_scale": [POS_REAL, OPTIONAL],
        "models_": [ListOf([model_class])],
        "X_fit_": [TensorSpec(shape=("n", "n_features_in_"))],
        "hidden_features_": [ListOf([TensorSpec(shape=("n", None))])],
        "n_iter_": [NONNEG_INT],
        "smoother_scores_": [DictOf([POS_REAL], [Interval("real", 0, 1)])],
        "median_nn_distance_": [NONNEG_REAL],
        "smoother_bandwidth_": [POS_REAL],
    }


# ================================================================ after the integration
# The same classes once they stand on the scaffold (branches shallow/deep/gram/rkm19): hidden
# features renamed, lambda_ -> ridge, kppca.optim's OptimizeResult, the deep package's levels.

OPTIMIZE_RESULT = {  # kppca/optim/result.py (a helper object)
    "x": [TensorSpec(ndim=2), ListOf([TensorSpec()])],
    "fun": [REAL],
    "n_iter": [NONNEG_INT],
    "converged": ["boolean"],
    "grad_norm": [NONNEG_REAL],
    "history": [ListOf([REAL])],
    "params": [ListOf([TensorSpec()]), None, OPTIONAL],
    "step_sizes": [ListOf([REAL]), None, OPTIONAL],
    "grad_history": [ListOf([REAL]), None, OPTIONAL],
    "message": [str, OPTIONAL],
    "method": [str, OPTIONAL],
    "state": [DictOf([str], [TensorSpec("any_float"), REAL, NONNEG_INT, "boolean", str, None]), None, OPTIONAL],
}


def multiview_kpca_integrated() -> dict:
    """kppca/rkm/multiview.py after the integration."""
    from kppca.optim import OptimizeResult

    declaration = {**multiview_kpca(OptimizeResult), "_dtype": [FloatDtype()], "_device": ["device"]}
    declaration["hidden_features_"] = declaration.pop("H_")
    return declaration


LSSVM_INTEGRATED = {k: v for k, v in LSSVM.items() if k != "dual_coef_"}
LSSVM_INTEGRATED["hidden_features_"] = [TensorSpec(shape=("n", "p")), OPTIONAL]  # dual solver
LSSVM_REGRESSOR_INTEGRATED = {**LSSVM_INTEGRATED, "_single_output": ["boolean"]}
LSSVM_CLASSIFIER_INTEGRATED = {**LSSVM_INTEGRATED, **{k: LSSVM_CLASSIFIER[k] for k in
                                                     ("classes_", "codebook_", "temperature_")}}
KERNEL_PCA_RKM_INTEGRATED = KERNEL_PCA_RKM
LSSVM_LEVEL_INTEGRATED = {"kernel": [Kernel, str, callable], "ridge": [POS_REAL], "eta": [POS_REAL]}


def deep_rkm_integrated() -> dict:
    """kppca/rkm/deep/estimator.py: DeepRKM after the integration."""
    from kppca.rkm import KPCALevel, LSSVMLevel

    declaration = {k: v for k, v in deep_rkm().items() if k not in ("H1_", "H2_", "H3_")}
    declaration["levels_"] = [ListOf([LSSVMLevel, KPCALevel])]
    declaration["_numpy_fit_"] = ["boolean"]
    declaration["solver_state_"] = [DictOf([str], [TensorSpec(), ListOf([TensorSpec()]), REAL, NONNEG_INT, str,
                                                   None])]
    return declaration


def deep_rkm_classifier_integrated() -> dict:
    """kppca/rkm/deep/classifier.py: DeepRKMClassifier after the integration."""
    from kppca.rkm.deep.binary_model import BinaryDeepModel

    declaration = {k: v for k, v in deep_rkm_classifier(BinaryDeepModel).items()
                   if k not in ("_sizes", "_level_kernels", "_mlp", "_mlp_scale")}
    declaration.update({
        "_numpy_fit_": ["boolean"],
        "n_components_": [ListOf([POS_INT])],
        "mlp_params_": [ListOf([TensorSpec(ndim=2), TensorSpec(ndim=1)], length=4), OPTIONAL],  # head="mlp"
        "mlp_input_scale_": [POS_REAL, OPTIONAL],
    })
    return declaration


def _legacy_table() -> list:
    import kppca.rkm as rkm
    from kppca.rkm import deep_classifier, solvers, views

    return [
        (solvers.StiefelResult, "kppca.rkm.StiefelResult", lambda: STIEFEL_RESULT),
        (views.FittedView, "kppca.rkm.FittedView", lambda: FITTED_VIEW),
        (rkm.LSSVMLevel, "kppca.rkm.LSSVMLevel", lambda: LSSVM_LEVEL),
        (rkm.KPCALevel, "kppca.rkm.KPCALevel", lambda: KPCA_LEVEL),
        (deep_classifier._Level, "kppca.rkm.DeepRKMClassifierLevel", lambda: DEEP_CLASSIFIER_LEVEL),
        (rkm.MultiViewKPCA, "kppca.MultiViewKPCA", multiview_kpca),
        (rkm.NARForecaster, "kppca.NARForecaster", nar_forecaster),
        (rkm.LSSVMRegressor, "kppca.LSSVMRegressor", lambda: LSSVM_REGRESSOR),
        (rkm.LSSVMClassifier, "kppca.LSSVMClassifier", lambda: LSSVM_CLASSIFIER),
        (rkm.KernelPCARKM, "kppca.KernelPCARKM", lambda: KERNEL_PCA_RKM),
        (rkm.DeepRKM, "kppca.DeepRKM", deep_rkm),
        (rkm.DeepRKMClassifier, "kppca.DeepRKMClassifier", deep_rkm_classifier),
    ]


def _integrated_table() -> list:
    import kppca.rkm as rkm
    from kppca.optim import OptimizeResult
    from kppca.rkm import views
    from kppca.rkm.deep.binary_model import BinaryDeepModel

    return [
        (OptimizeResult, "kppca.optim.OptimizeResult", lambda: OPTIMIZE_RESULT),
        (views.FittedView, "kppca.rkm.FittedView", lambda: FITTED_VIEW),
        (rkm.LSSVMLevel, "kppca.rkm.LSSVMLevel", lambda: LSSVM_LEVEL_INTEGRATED),
        (rkm.KPCALevel, "kppca.rkm.KPCALevel", lambda: KPCA_LEVEL),
        (BinaryDeepModel, "kppca.rkm.BinaryDeepModel", lambda: DEEP_CLASSIFIER_LEVEL),
        (rkm.MultiViewKPCA, "kppca.MultiViewKPCA", multiview_kpca_integrated),
        (rkm.NARForecaster, "kppca.NARForecaster", nar_forecaster),
        (rkm.LSSVMRegressor, "kppca.LSSVMRegressor", lambda: LSSVM_REGRESSOR_INTEGRATED),
        (rkm.LSSVMClassifier, "kppca.LSSVMClassifier", lambda: LSSVM_CLASSIFIER_INTEGRATED),
        (rkm.KernelPCARKM, "kppca.KernelPCARKM", lambda: KERNEL_PCA_RKM_INTEGRATED),
        (rkm.DeepRKM, "kppca.DeepRKM", deep_rkm_integrated),
        (rkm.DeepRKMClassifier, "kppca.DeepRKMClassifier", deep_rkm_classifier_integrated),
    ]


def apply() -> None:
    """Register every RKM class that does not register itself yet, with the declarations above."""
    import importlib.util

    import kppca.rkm as rkm

    integrated = importlib.util.find_spec("kppca.optim") is not None
    for cls, name, declaration in (_integrated_table() if integrated else _legacy_table()):
        if name_of(cls) is None:
            register(cls, name=name, fitted_constraints=declaration())
    for cls in (rkm.MultiViewKPCA, rkm.NARForecaster, rkm.LSSVMRegressor, rkm.LSSVMClassifier,
                rkm.KernelPCARKM, rkm.DeepRKM, rkm.DeepRKMClassifier):
        if not hasattr(cls, "save"):  # the scaffold will inherit kppca.io.SavableMixin
            from kppca.io import SavableMixin

            cls.save, cls.load = SavableMixin.save, classmethod(SavableMixin.load.__func__)
