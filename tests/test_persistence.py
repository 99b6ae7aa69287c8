"""Saving and loading fitted models: identical outputs after the round trip, and safe files."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save as safetensors_bytes

import kppca
from kppca import DualPPCA, ModelFileError, PrimalPPCA
from kppca.features import Nystroem, PolynomialFeatures, RandomFourierFeatures
from kppca.kernels import RBF, CallableKernel, Laplacian, Polynomial
from kppca.models._base import BasePPCA


def rbf_callable(A, B):
    """A module-level (picklable) callable kernel: not flagged strictly positive definite."""
    return RBF(1.5).gram(A, B)


def np_(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


DUALS = {
    "rbf-dense": lambda: DualPPCA(3, kernel=RBF(1.5)),
    "rbf-partial": lambda: DualPPCA(3, kernel=RBF(1.5), eigen_solver="partial", random_state=0),
    "callable-partial": lambda: DualPPCA(3, kernel=rbf_callable, eigen_solver="partial", random_state=0),
    "poly-partial": lambda: DualPPCA(3, kernel=Polynomial(2), eigen_solver="partial", random_state=0),
    "uncentered": lambda: DualPPCA(3, kernel=RBF(1.5), center=False),
}


def _dual_outputs(model, Xt):
    return {
        "transform": np_(model.transform(Xt)),
        "score": np_(model.score_samples(Xt)),
        "reconstruct": np_(model.reconstruct_kernel(Xt)),
        "fast": np_(model.sample_kernel(4, random_state=0, factor="fast")),
        "symmetric": np_(model.sample_kernel(4, random_state=0, factor="symmetric")),
        "conditional": np_(model.kernel_conditional(np.ones(model.n_components_)).log_prob(
            torch.as_tensor(model.centered_kernel(Xt)))),
    }


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        # bit-exact: the file keeps every tensor's bits and memory layout, and the caches the
        # loaded model recomputes come from the same operations on the same inputs
        np.testing.assert_array_equal(b[key], a[key], err_msg=key)


def _save_load(model, path, **load_kwargs):
    """save + DualPPCA/PrimalPPCA.load; a callable kernel is stored as a marker and supplied again."""
    custom = callable(model.get_params()["kernel"]) if "kernel" in model.get_params() else False
    custom = custom and not isinstance(model.get_params()["kernel"], (RBF, Polynomial, Laplacian))
    model.save(path, allow_callable_kernel=custom)
    kernel = model.get_params()["kernel"] if custom else None
    return type(model).load(path, kernel=kernel, **load_kwargs)


@pytest.mark.parametrize("name", list(DUALS))
def test_dual_save_load_round_trip(name, rng, tmp_path):
    X, Xt = rng.normal(size=(30, 3)), rng.normal(size=(4, 3))
    model = DUALS[name]().fit(X)
    path = tmp_path / "dual.pt"
    loaded = _save_load(model, path)
    assert isinstance(loaded, DualPPCA) and loaded is not model
    assert loaded.get_params().keys() == model.get_params().keys()
    assert loaded.n_components_ == model.n_components_ and loaded.sigma2_ == model.sigma2_
    assert torch.equal(loaded.A_, model.A_)
    # large caches are not written: the loaded model recomputes them
    assert "_gram_c" not in loaded.__dict__ and "_gram_factor" not in loaded.__dict__
    _assert_same(_dual_outputs(model, Xt), _dual_outputs(loaded, Xt))


@pytest.mark.parametrize("name", ["rbf-partial", "callable-partial", "poly-partial"])
def test_dual_loaded_before_any_sampling(name, rng, tmp_path):
    """Save right after fit (the caches of the fit itself are dropped) and compare fresh samples."""
    X = rng.normal(size=(30, 3))
    model = DUALS[name]().fit(X)
    loaded = _save_load(model, tmp_path / "m.pt", map_location="cpu")
    a = np_(model.sample_kernel(6, random_state=1))
    b = np_(loaded.sample_kernel(6, random_state=1))
    assert a.shape == b.shape
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize(
    "make",
    [
        lambda: PrimalPPCA(2),
        lambda: PrimalPPCA(2, feature_map=RandomFourierFeatures(1.0, n_features=50, random_state=3)),
        lambda: PrimalPPCA(2, eigen_solver="partial", random_state=0),
    ],
    ids=["identity", "rff-wide", "partial"],
)
def test_primal_save_load_round_trip(make, rng, tmp_path):
    X, Xt = rng.normal(size=(30, 4)), rng.normal(size=(4, 4))
    model = make().fit(X)
    model.save(tmp_path / "p.pt")
    loaded = PrimalPPCA.load(tmp_path / "p.pt")
    np.testing.assert_array_equal(loaded.transform(Xt), model.transform(Xt))
    np.testing.assert_array_equal(loaded.sample_features(5, random_state=2), model.sample_features(5, random_state=2))
    np.testing.assert_array_equal(loaded.score_samples(Xt), model.score_samples(Xt))
    np.testing.assert_array_equal(loaded.reconstruct(Xt), model.reconstruct(Xt))


@pytest.mark.parametrize("model_cls", [PrimalPPCA, DualPPCA])
def test_pickle_round_trip(model_cls, rng):
    X, Xt = rng.normal(size=(25, 3)), rng.normal(size=(3, 3))
    model = model_cls(2).fit(X)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.transform(Xt), model.transform(Xt))
    np.testing.assert_array_equal(clone.latent_covariance_.numpy(), model.latent_covariance_.numpy())
    unfitted = pickle.loads(pickle.dumps(model_cls(4, sigma2=0.2)))
    assert unfitted.get_params()["n_components"] == 4


def test_torch_tensor_fit_round_trip_keeps_tensor_output(rng, tmp_path):
    X = torch.tensor(rng.normal(size=(20, 3)))
    model = DualPPCA(2, kernel=RBF(1.0)).fit(X)
    model.save(tmp_path / "t.pt")
    loaded = DualPPCA.load(tmp_path / "t.pt")
    out = loaded.sample_kernel(2, random_state=0)
    assert isinstance(out, torch.Tensor)
    assert torch.equal(out, model.sample_kernel(2, random_state=0))


def test_load_type_check_and_unfitted_save(rng, tmp_path):
    model = PrimalPPCA(2).fit(rng.normal(size=(10, 3)))
    model.save(tmp_path / "p.pt")
    with pytest.raises(TypeError, match="holds a PrimalPPCA, not a DualPPCA"):
        DualPPCA.load(tmp_path / "p.pt")
