"""Every estimator round-trips through a model file: every public output and fitted attribute bit-exact.

One case per estimator and variant (solver, form, head). Outputs are compared
with ``assert_array_equal`` (bit-exact): the file keeps every tensor's bits,
dtype and memory layout, and the loaded model runs the same operations on the
same inputs. Every class declares its own fitted state (its record, ``kppca.io.record``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import kppca
from kppca import DualPPCA, PrimalPPCA
from kppca.features import Nystroem, RandomFourierFeatures
from kppca.kernels import RBF, Polynomial
from kppca.kernels import Laplacian
from kppca.rkm import (
    DeepLSSVMClassifier,
    DeepRKM,
    DeepRKMClassifier,
    KernelPCARKM,
    KernelPMF,
    KPCALevel,
    LSSVMClassifier,
    LSSVMLevel,
    LSSVMRegressor,
    MultiViewKPCA,
    NARForecaster,
    SubsetEnsembleClassifier,
)


def _np(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _data(rng):
    X, Xt = rng.normal(size=(24, 3)), rng.normal(size=(5, 3))
    return X, Xt, np.sin(X[:, 0]) + 0.1 * X[:, 1], (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int), np.arange(24) % 3


def _dask_rows(X, y):
    """``X`` and ``y`` as Dask arrays of row blocks: a fit that keeps no training inputs."""
    da = pytest.importorskip("dask.array")
    return da.from_array(X, chunks=(10, 3)), da.from_array(y, chunks=10)


def _ppca_outputs(m, Xt):
    out = {
        "transform": m.transform(Xt), "score_samples": m.score_samples(Xt), "score": m.score(Xt),
        "sample": m.sample(3, random_state=0), "inverse": m.inverse_transform(m.transform(Xt)),
        "novelty": m.novelty_score(Xt), "latent_cov": m.latent_covariance_,
        "names": m.get_feature_names_out(),
    }
    if isinstance(m, DualPPCA):
        out.update(reconstruct=m.reconstruct_kernel(Xt), sample_kernel=m.sample_kernel(3, random_state=1))
    else:
        out.update(reconstruct=m.reconstruct_features(Xt), sample_features=m.sample_features(3, random_state=1))
    return out


def _assert_same_output(a, b, where):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same_output(x, y, f"{where}[{i}]")
    else:
        assert type(a) is type(b), where
        np.testing.assert_array_equal(_np(b), _np(a), err_msg=where)


def _views(X):
    return [X[:, :2], X[:, 2:]]


def _multiview_outputs(m, Xt):
    return {
        "transform": m.transform(_views(Xt)),
        "predict_view": m.predict_view(_views(Xt), 1),
        "sample": m.sample(3, random_state=0),
    }


def _regressor_outputs(m, Xt, y):
    return {"predict": m.predict(Xt), "score": m.score(Xt, y[: len(Xt)])}


def _classifier_outputs(m, Xt, y):
    out = {"decision": m.decision_function(Xt), "predict": m.predict(Xt), "score": m.score(Xt, y[: len(Xt)])}
    if hasattr(m, "predict_proba"):
        out["proba"] = m.predict_proba(Xt)
    if hasattr(m, "latent_codes"):
        out["codes"] = m.latent_codes(Xt)
    return out


def _pmf_outputs(m, Xt, y=None):
    out = {"score_samples": m.score_samples(Xt)}
    if y is not None:
        out.update(predict=m.predict(Xt), proba=m.predict_proba(Xt), log_proba=m.predict_log_proba(Xt),
                   score=m.score(Xt, y[: len(Xt)]))
    return out


def _feedforward(toeplitz=False):
    return DeepRKM([KPCALevel(2, 0.5), KPCALevel(2, 2.0), LSSVMLevel(ridge=0.3, eta=0.7)], solver="feedforward",
                   hidden_units=4, c_stab=0.01, max_iter=60, toeplitz=toeplitz, random_state=0)


# name -> (make estimator, fit arguments from the data, outputs)
CASES = {
    "primal": (lambda: PrimalPPCA(2), lambda d: (d[0],), lambda m, d: _ppca_outputs(m, d[1])),
    "primal-rff": (lambda: PrimalPPCA(2, feature_map=RandomFourierFeatures(1.0, n_features=20, random_state=0)),
                   lambda d: (d[0], d[4]), lambda m, d: _ppca_outputs(m, d[1])),
    "dual": (lambda: DualPPCA(2, kernel=RBF(1.5)), lambda d: (d[0], d[4]), lambda m, d: _ppca_outputs(m, d[1])),
    # a landmark model fitted on Dask: pre-images and class-conditional samples over the landmarks
    "primal-landmarks-dask": (lambda: PrimalPPCA(2, feature_map=Nystroem(RBF(1.5), n_landmarks=12, random_state=0)),
                              lambda d: _dask_rows(d[0], d[4]),
                              lambda m, d: {**_ppca_outputs(m, d[1]), "class": m.sample(3, random_state=0, y=1)}),
    "dual-partial": (lambda: DualPPCA(2, kernel=Polynomial(2), eigen_solver="partial", random_state=0),
                     lambda d: (d[0],), lambda m, d: _ppca_outputs(m, d[1])),
    "multiview-primal": (lambda: MultiViewKPCA(2), lambda d: (_views(d[0]),), lambda m, d: _multiview_outputs(m, d[1])),
    "multiview-dual": (lambda: MultiViewKPCA(2, kernels=[RBF(1.0), None]), lambda d: (_views(d[0]),),
                       lambda m, d: _multiview_outputs(m, d[1])),
    "multiview-stiefel": (lambda: MultiViewKPCA(2, kernels=[RBF(1.0), RBF(1.0)], solver="stiefel", max_iter=30,
                                                random_state=0),
                          lambda d: (_views(d[0]),), lambda m, d: _multiview_outputs(m, d[1])),
    "nar": (lambda: NARForecaster(3, 2), lambda d: (np.sin(0.3 * np.arange(40)),),
            lambda m, d: {"forecast": m.forecast(5), "history": m.forecast(3, history=np.sin(0.3 * np.arange(6)))}),
    "nar-dual": (lambda: NARForecaster(3, 2, kernel_x=RBF(1.0), kernel_y=RBF(1.0)),
                 lambda d: (np.sin(0.3 * np.arange(40)),), lambda m, d: {"forecast": m.forecast(5)}),
    "lssvm-regressor": (lambda: LSSVMRegressor(kernel=RBF(1.0)), lambda d: (d[0], d[2]),
                        lambda m, d: _regressor_outputs(m, d[1], d[2])),
    "lssvm-regressor-primal": (lambda: LSSVMRegressor(feature_map=RandomFourierFeatures(1.0, 15, random_state=0)),
                               lambda d: (d[0], d[2]), lambda m, d: _regressor_outputs(m, d[1], d[2])),
    "lssvm-classifier": (lambda: LSSVMClassifier(kernel=RBF(1.0)), lambda d: (d[0], d[3]),
                         lambda m, d: _classifier_outputs(m, d[1], d[3])),
    "lssvm-classifier-3": (lambda: LSSVMClassifier(kernel=RBF(1.0), multi_class="code"), lambda d: (d[0], d[4]),
                           lambda m, d: _classifier_outputs(m, d[1], d[4])),
    "kernel-pca-rkm": (lambda: KernelPCARKM(2, kernel=RBF(1.0)), lambda d: (d[0],),
                       lambda m, d: {"transform": m.transform(d[1]), "names": m.get_feature_names_out()}),
    "deep-rkm": (lambda: DeepRKM(n_passes=3), lambda d: (d[0], d[2]), lambda m, d: _regressor_outputs(m, d[1], d[2])),
    "deep-rkm-primal": (lambda: DeepRKM(solver="primal", n_prototypes=10, max_iter=20, random_state=0),
                        lambda d: (d[0], d[2]), lambda m, d: _regressor_outputs(m, d[1], d[2])),
    "deep-rkm-classifier": (lambda: DeepRKMClassifier(max_iter=20, random_state=0), lambda d: (d[0], d[3]),
                            lambda m, d: _classifier_outputs(m, d[1], d[3])),
    "deep-rkm-classifier-mlp": (lambda: DeepRKMClassifier(head="mlp", max_iter=20, random_state=0),
                                lambda d: (d[0], d[4]), lambda m, d: _classifier_outputs(m, d[1], d[4])),
    # float32 data: the deep RKM keeps float64 state (its working dtype) and float32 outputs
    "deep-rkm-float32": (lambda: DeepRKM(n_passes=2), lambda d: (d[0].astype(np.float32), d[2].astype(np.float32)),
                         lambda m, d: _regressor_outputs(m, d[1].astype(np.float32), d[2].astype(np.float32))),
    "deep-rkm-feedforward": (_feedforward, lambda d: (d[0], d[2]), lambda m, d: _regressor_outputs(m, d[1], d[2])),
    "deep-rkm-feedforward-toeplitz": (lambda: _feedforward(toeplitz=True), lambda d: (d[0], d[2]),
                                      lambda m, d: _regressor_outputs(m, d[1], d[2])),
    "kernel-pmf": (lambda: KernelPMF(), lambda d: (d[0],), lambda m, d: _pmf_outputs(m, d[1])),
    "kernel-pmf-classes": (lambda: KernelPMF(kernel=Laplacian(2.0)), lambda d: (d[0], d[4]),
                           lambda m, d: _pmf_outputs(m, d[1], d[4])),
    # the primal needs an explicit map with non-negative values: the linear kernel on positive data
    "kernel-pmf-primal": (lambda: KernelPMF(kernel="linear", solver="primal"), lambda d: (np.abs(d[0]), d[3]),
                          lambda m, d: _pmf_outputs(m, np.abs(d[1]), d[3])),
    "deep-lssvm-classifier": (lambda: DeepLSSVMClassifier(n_passes=1, random_state=0), lambda d: (d[0], d[3]),
                              lambda m, d: _classifier_outputs(m, d[1], d[3])),
    "deep-lssvm-classifier-3": (lambda: DeepLSSVMClassifier(random_state=0), lambda d: (d[0], d[4]),
                                lambda m, d: _classifier_outputs(m, d[1], d[4])),
    # nested estimators: the fitted submodels and the unfitted template are saved recursively
    "subset-ensemble": (lambda: SubsetEnsembleClassifier(LSSVMClassifier(kernel=RBF(1.0)), subset_size=8,
                                                         random_state=0),
                        lambda d: (d[0], d[4]), lambda m, d: _classifier_outputs(m, d[1], d[4])),
    "subset-ensemble-deep": (lambda: SubsetEnsembleClassifier(subset_size=8, random_state=0),
                             lambda d: (d[0], d[3]), lambda m, d: _classifier_outputs(m, d[1], d[3])),
}


def _assert_same_value(a, b, where):
    assert type(a) is type(b), f"{where}: {type(a).__name__} became {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        # the memory layout (it changes how matmuls round); strides of size-1 dimensions carry no layout
        def layout(T):
            return [s for s, n in zip(T.stride(), T.shape) if n > 1]

        assert layout(a) == layout(b), where
        assert torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, where
        np.testing.assert_array_equal(b, a, err_msg=where)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same_value(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _assert_same_value(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        _assert_same_state(a, b, where)
    else:
        assert a == b, where


def _assert_same_state(a, b, where):
    """Every attribute that is not a cache, recursively (nested kernels, views, levels, estimators)."""
    if dataclasses.is_dataclass(a):
        keys = [f.name for f in dataclasses.fields(a) if f.compare]  # a record's derived values are no state
    else:
        keys = [k for k in vars(a) if k not in ("_cache_",)]
    assert set(keys) <= set(vars(b)) | {f.name for f in dataclasses.fields(b)} if dataclasses.is_dataclass(b) \
        else set(keys) <= set(vars(b)), f"{where}: missing {set(keys) - set(vars(b))}"
    for k in keys:
        va = getattr(a, k)
        if k == "random_state" and not (va is None or isinstance(va, int)):
            continue  # Generators are saved as None (documented)
        _assert_same_value(va, getattr(b, k), f"{where}.{k}")


@pytest.mark.parametrize("case", list(CASES))
def test_round_trip_is_bit_exact(case, rng, tmp_path):
    make, fit_args, outputs = CASES[case]
    data = _data(rng)
    model = make().fit(*fit_args(data))
    path = tmp_path / "model.kppca"
    model.save(path)
    before = outputs(model, data)
    loaded = kppca.load(path)
    assert type(loaded) is type(model) and loaded is not model
    after = outputs(loaded, data)
    assert before.keys() == after.keys()
    for key in before:
        _assert_same_output(before[key], after[key], key)
    _assert_same_state(model, loaded, type(model).__name__)
    # kppca.save and the class's load give the same file and the same model
    kppca.save(model, tmp_path / "again.kppca")
    assert (tmp_path / "again.kppca").read_bytes() == path.read_bytes()
    assert type(type(model).load(path)) is type(model)


def test_every_estimator_is_covered():
    """The cases above name every registered estimator class (a new estimator needs a case)."""
    from kppca.io import registered

    estimators = {cls for cls in registered().values() if hasattr(cls, "get_params")}
    covered = {type(make()) for make, _, _ in CASES.values()}
    assert estimators <= covered, f"no round-trip case for {sorted(c.__name__ for c in estimators - covered)}"
    # and every case is a registered estimator (a case for an unregistered class would test nothing here)
    assert covered == estimators
    # every public kppca estimator class is registered (a new estimator must declare its fitted state)
    from sklearn.base import BaseEstimator

    public = {getattr(kppca.rkm, n) for n in kppca.rkm.__all__} | {getattr(kppca, n) for n in kppca.__all__}
    public = {c for c in public if isinstance(c, type) and issubclass(c, BaseEstimator)}
    assert public <= estimators, f"not registered: {sorted(c.__name__ for c in public - estimators)}"
