"""Saving and loading fitted models: identical outputs after the round trip, and safe files."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save as safetensors_bytes
from sklearn.exceptions import NotFittedError

import kppca
from kppca import DualPPCA, ModelFileError, PrimalPPCA
from kppca.features import Nystroem, PolynomialFeatures, RandomFourierFeatures
from kppca.kernels import RBF, CallableKernel, ColumnKernel, Laplacian, Polynomial
from kppca.io.format import document_digest
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
    # large caches are not written: the loaded model recomputes them
    assert len(loaded._cache) == 0
    assert isinstance(loaded, DualPPCA) and loaded is not model
    assert loaded.get_params().keys() == model.get_params().keys()
    assert loaded.n_components_ == model.n_components_ and loaded.sigma2_ == model.sigma2_
    assert torch.equal(loaded.A_, model.A_)
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
    np.testing.assert_array_equal(loaded.reconstruct_features(Xt), model.reconstruct_features(Xt))


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
    with pytest.raises(NotFittedError, match="before save"):
        DualPPCA(2).save(tmp_path / "unfitted.pt")
    assert not (tmp_path / "unfitted.pt").exists()


# ----------------------------------------------------------------------------- the safe format


def _fitted_dual(rng, **kwargs):
    return DualPPCA(2, kernel=RBF(1.2), **kwargs).fit(rng.normal(size=(25, 3)))


def _document(path):
    with safe_open(str(path), framework="pt", device="cpu") as f:
        return json.loads(f.metadata()["kppca"]), {k: f.get_tensor(k) for k in f.keys()}


def _rewrite(path, document, tensors):
    """``document`` and ``tensors`` with a recomputed digest (as a forger would), so only validation refuses it."""
    document = {**document, "sha256": document_digest(document, tensors)}
    path.write_bytes(safetensors_bytes(tensors, metadata={"kppca": json.dumps(document)}))


def test_file_is_safetensors_with_json_metadata(rng, tmp_path):
    model = _fitted_dual(rng)
    model.save(tmp_path / "m.any-extension")
    doc, tensors = _document(tmp_path / "m.any-extension")
    assert doc["format"] == "kppca-model" and doc["format_version"] == 4
    assert doc["kppca_version"] == kppca.__version__ and doc["class"] == "kppca.DualPPCA"
    assert doc["sha256"] == document_digest(doc, tensors) and len(doc["sha256"]) == 64
    assert doc["params"]["kernel"]["__object__"] == "kernel:rbf"
    assert doc["params"]["kernel"]["params"] == {"bandwidth": 1.2}
    assert doc["params"]["dtype"] is None and doc["state"]["_dtype"] == {"__dtype__": "float64"}
    assert "state/X_fit_" in tensors and tensors["state/X_fit_"].dtype == torch.float64
    assert not any(key.startswith(("state/_gram", "state/_full")) for key in tensors)


@pytest.mark.parametrize(
    "make",
    [
        lambda: DualPPCA(2, kernel=RBF(1.2)),
        lambda: DualPPCA(2, kernel=RBF(1.2), eigen_solver="partial", random_state=0),
        lambda: PrimalPPCA(2),
        lambda: PrimalPPCA(2, feature_map=Nystroem(RBF(1.0), n_landmarks=10, random_state=0)),
    ],
    ids=["dual-dense", "dual-partial", "primal", "primal-nystroem"],
)
def test_saved_bytes_do_not_depend_on_caches(make, rng, tmp_path):
    X = rng.normal(size=(40, 3))
    model = make().fit(X)
    model.save(tmp_path / "a.pt")
    pickled = len(pickle.dumps(model))
    model.score_samples(X)
    model.sample(2, random_state=0)
    if isinstance(model, DualPPCA):
        model.sampling_factor("symmetric")
        model.sample_kernel(2, random_state=0)
    assert len(model._cache) > 0
    model.save(tmp_path / "b.pt")
    # the fitted state did not change, so neither does a single byte of the file
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "b.pt").read_bytes()
    assert len(pickle.dumps(model)) == pickled  # pickles drop the same caches (one list of them)


def test_generator_random_state_is_saved_as_none(rng, tmp_path):
    model = DualPPCA(2, kernel=RBF(1.0), eigen_solver="partial", random_state=np.random.default_rng(0))
    model.fit(rng.normal(size=(30, 3)))
    model.save(tmp_path / "m.pt")
    assert isinstance(model.random_state, np.random.Generator)  # the model itself is untouched
    assert kppca.load(tmp_path / "m.pt").random_state is None


def test_loaded_dense_model_recomputes_the_full_spectrum_bit_exactly(rng, tmp_path):
    model = _fitted_dual(rng)
    model.save(tmp_path / "m.pt")
    loaded = kppca.load(tmp_path / "m.pt")
    assert loaded._cache.peek("full_eigen") is None
    for a, b in zip(model._full_eigen(), loaded._full_eigen()):
        assert torch.equal(a, b)


def test_kppca_load_returns_the_right_class(rng, tmp_path):
    X = rng.normal(size=(20, 3))
    PrimalPPCA(2).fit(X).save(tmp_path / "p.pt")
    DualPPCA(2).fit(X).save(tmp_path / "d.pt")
    assert type(kppca.load(tmp_path / "p.pt")) is PrimalPPCA
    assert type(kppca.load(tmp_path / "d.pt")) is DualPPCA
    assert type(BasePPCA.load(tmp_path / "d.pt")) is DualPPCA
    assert "load" in kppca.__all__ and "ModelFileError" in kppca.__all__


def test_float32_model_round_trip(rng, tmp_path):
    X, Xt = rng.normal(size=(30, 3)), rng.normal(size=(5, 3))
    model = DualPPCA(2, kernel=Laplacian(1.0), dtype="float32").fit(X)
    model.save(tmp_path / "m.pt")
    loaded = kppca.load(tmp_path / "m.pt")
    assert loaded.eigenvectors_.dtype == torch.float32 and loaded._dtype == torch.float32
    assert loaded.get_params()["dtype"] == "float32"
    np.testing.assert_array_equal(loaded.transform(Xt), model.transform(Xt))


@pytest.mark.parametrize(
    "fmap",
    [
        Nystroem("laplacian", n_landmarks=12, random_state=0),
        RandomFourierFeatures(0.8, n_features=30, random_state=np.random.default_rng(4)),
        PolynomialFeatures(2, coef0=0.5),
    ],
    ids=["nystroem", "rff-generator", "poly"],
)
def test_primal_feature_maps_round_trip(fmap, rng, tmp_path):
    X, Xt = rng.normal(size=(30, 3)), rng.normal(size=(4, 3))
    model = PrimalPPCA(2, feature_map=fmap).fit(X)
    model.save(tmp_path / "p.pt")
    loaded = kppca.load(tmp_path / "p.pt")
    assert type(loaded.feature_map_) is type(fmap)
    np.testing.assert_array_equal(loaded.features(Xt), model.features(Xt))
    np.testing.assert_array_equal(loaded.transform(Xt), model.transform(Xt))
    np.testing.assert_array_equal(loaded.score_samples(Xt), model.score_samples(Xt))
    if isinstance(fmap, RandomFourierFeatures):
        # a Generator cannot be stored: saved as None (documented); the fitted draw is kept
        assert loaded.feature_map.random_state is None
        assert torch.equal(loaded.feature_map_.omega_, model.feature_map_.omega_)


def test_dual_on_a_feature_map_kernel_round_trip(rng, tmp_path):
    X, Xt = rng.normal(size=(30, 3)), rng.normal(size=(4, 3))
    kern = Nystroem(RBF(1.0), n_landmarks=10, random_state=0).fit(X).as_kernel()
    model = DualPPCA(2, kernel=kern).fit(X)
    model.save(tmp_path / "d.pt")
    loaded = kppca.load(tmp_path / "d.pt")
    np.testing.assert_array_equal(loaded.transform(Xt), model.transform(Xt))
    assert torch.equal(loaded.kernel_.feature_map.landmarks_, kern.feature_map.landmarks_)


def test_generic_state_types_round_trip(tmp_path):
    """Values are encoded by type, not from a hand list (checked on the encoder, as any attribute may hold them)."""
    from kppca.io.encoding import Decoder, Encoder

    values = {
        "names": np.array(["a", "b", "c"], dtype=object),
        "extra": {"counts": np.arange(3), "pair": (1.5, None), "nan": float("nan"), "s": np.float32(0.25)},
        "scores": {0.5: 1.0, 0.25: 0.75},  # non-string keys
    }
    encoder = Encoder(allow_custom_kernel=False)
    encoded = {k: encoder.encode(v, f"state/{k}") for k, v in values.items()}
    encoded = json.loads(json.dumps(encoded))  # what the file holds
    decoder = Decoder(tmp_path, dict(encoder.tensors), None, None)
    loaded = {k: decoder.decode(v) for k, v in encoded.items()}
    assert loaded["names"].dtype == object and list(loaded["names"]) == ["a", "b", "c"]
    np.testing.assert_array_equal(loaded["extra"]["counts"], np.arange(3))
    assert loaded["extra"]["pair"] == (1.5, None) and np.isnan(loaded["extra"]["nan"])
    assert type(loaded["extra"]["s"]) is np.float32 and loaded["extra"]["s"] == np.float32(0.25)
    assert loaded["scores"] == {0.5: 1.0, 0.25: 0.75}
    # nothing passed was modified by the encoder
    assert values["extra"]["pair"] == (1.5, None)


def test_undeclared_attribute_is_named_at_save_time(rng, tmp_path):
    """Model files hold only declared state: an undeclared fitted attribute is a TypeError, no file written."""
    model = _fitted_dual(rng)
    model.extra_ = 1.0
    with pytest.raises(TypeError, match=r"'extra_'.*not declared in DualPPCA's fitted-state record \(DualState\)"):
        model.save(tmp_path / "m.pt")
    assert not (tmp_path / "m.pt").exists()


def test_fitted_state_is_read_only(rng, tmp_path):
    """Only fit sets the fitted state (its record): an assignment is refused, the model stays as fitted."""
    model = _fitted_dual(rng)
    before = model.centerer_
    with pytest.raises(AttributeError, match="'centerer_' is fitted state of DualPPCA.*read-only"):
        model.centerer_ = object()
    assert model.centerer_ is before
    model.save(tmp_path / "m.pt")


def test_map_location(rng, tmp_path):
    model = _fitted_dual(rng)
    model.save(tmp_path / "m.pt")
    loaded = DualPPCA.load(tmp_path / "m.pt", map_location="cpu")
    assert loaded._device == torch.device("cpu") and loaded.X_fit_.device.type == "cpu"


# ----------------------------------------------------------------------------- custom kernels


def test_callable_kernel_needs_opt_in_and_is_supplied_again(rng, tmp_path):
    X, Xt = rng.normal(size=(25, 3)), rng.normal(size=(3, 3))
    model = DualPPCA(2, kernel=CallableKernel(rbf_callable)).fit(X)
    with pytest.raises(ValueError, match=r"rbf_callable.*user code.*allow_callable_kernel=True.*kernel="):
        model.save(tmp_path / "m.pt")
    assert not (tmp_path / "m.pt").exists()
    model.save(tmp_path / "m.pt", allow_callable_kernel=True)
    with pytest.raises(ModelFileError, match=r"without its custom kernel 'rbf_callable'.*kernel="):
        kppca.load(tmp_path / "m.pt")
    loaded = kppca.load(tmp_path / "m.pt", kernel=rbf_callable)
    assert isinstance(loaded.kernel_, CallableKernel) and loaded.kernel_.fn is rbf_callable
    np.testing.assert_array_equal(loaded.transform(Xt), model.transform(Xt))


def test_kernel_argument_only_for_custom_kernels(rng, tmp_path):
    _fitted_dual(rng).save(tmp_path / "m.pt")
    with pytest.raises(ValueError, match="kernel= is only for models saved with a custom kernel"):
        kppca.load(tmp_path / "m.pt", kernel=rbf_callable)


# ----------------------------------------------------------------------------- hostile and broken files


def _evil_payload(marker):
    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))  # unpickling would create the marker file

    return Evil()


def test_pickle_with_payload_is_rejected_without_running_it(tmp_path):
    marker = tmp_path / "pwned"
    raw = tmp_path / "evil.pt"
    raw.write_bytes(pickle.dumps(_evil_payload(marker)))
    zipped = tmp_path / "evil-torch.pt"
    torch.save({"model": _evil_payload(marker)}, zipped)  # the old torch.save format
    assert not marker.exists()
    for path in (raw, zipped):
        with pytest.raises(ModelFileError, match=r"evil.*not a kppca model file.*pickle"):
            kppca.load(path)
        with pytest.raises(ModelFileError):
            DualPPCA.load(path)
    assert not marker.exists()


def test_png_and_truncated_and_empty_files(rng, tmp_path):
    png = tmp_path / "image.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    _fitted_dual(rng).save(tmp_path / "m.pt")
    data = (tmp_path / "m.pt").read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(data[: len(data) - 100])
    half_header = tmp_path / "half.pt"
    half_header.write_bytes(data[:40])
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    for path in (png, truncated, half_header, empty):
        with pytest.raises(ModelFileError, match=path.name):
            kppca.load(path)


def test_safetensors_file_that_is_not_a_model(tmp_path):
    path = tmp_path / "weights.safetensors"
    path.write_bytes(safetensors_bytes({"w": torch.zeros(3)}, metadata={"format": "pt"}))
    with pytest.raises(ModelFileError, match="not a kppca model"):
        kppca.load(path)
    path.write_bytes(safetensors_bytes({"w": torch.zeros(3)}, metadata={"kppca": "{not json"}))
    with pytest.raises(ModelFileError, match="not JSON"):
        kppca.load(path)


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d.update({"class": "os.system"}), "unknown model class 'os.system'"),
        (lambda d: d.update({"class": "BasePPCA"}), "unknown model class 'BasePPCA'"),
        (lambda d: d.pop("state"), "missing field.*state"),
        (lambda d: d.pop("params"), "missing field.*params"),
        (lambda d: d.update({"format_version": 5}), "format version 5.*upgrade kppca"),
        (lambda d: d.update({"format_version": 2}), "format version 2.*refit the model"),
        (lambda d: d.update({"format": "other"}), "format 'other'"),
        (lambda d: d["params"].update({"kernel": {"__object__": "builtins:eval", "params": {}, "state": {}}}),
         "unknown object type 'builtins:eval'"),
        (lambda d: d["params"].update({"bogus": 1}), "bad parameters"),
        (lambda d: d["params"].update({"n_components": -3}), r"bad parameters.*'n_components' parameter"),
        (lambda d: d["params"].update({"eigen_solver": "rm -rf"}), r"bad parameters.*'eigen_solver'"),
        (lambda d: d["state"].update({"__class__": "DualPPCA"}), "invalid name '__class__'"),
        (lambda d: d["state"].update({"eigenvectors_": {"__tensor__": "missing"}}), "tensor 'missing'"),
        (lambda d: d["state"].update({"eigenvectors_": {"__pickle__": "gASV"}}), "untagged JSON object"),
        (lambda d: d["state"].update({"_cache_": 0}), "'_cache_', which DualPPCA does not declare"),
        (lambda d: d["state"].pop("sigma2_"), "lacks 'sigma2_'"),
        (lambda d: d["state"]["X_fit_"].update({"strides": [1, 1]}), "invalid memory layout"),
        (lambda d: d["state"].update({"transform": "x"}), "'transform', which DualPPCA does not declare"),
        (lambda d: d["state"].update({"latent_covariance_": 1}), "'latent_covariance_', which DualPPCA does not"),
        (lambda d: d["state"]["kernel_"]["state"].update({"gamma": 2.0}), "holds 'gamma', but RBF keeps no fitted state"),
    ],
    ids=["class-path", "base-class", "no-state", "no-params", "newer", "older", "format", "object", "param", "bad-q",
         "bad-solver", "dunder",
         "tensor", "tag", "cache", "unfitted", "layout", "method", "property", "object-property"],
)
def test_crafted_metadata_is_rejected(edit, match, rng, tmp_path):
    path = tmp_path / "m.pt"
    _fitted_dual(rng).save(path)
    doc, tensors = _document(path)
    doc["state"]["X_fit_"]["strides"] = doc["state"]["X_fit_"].get("strides", [3, 1])
    edit(doc)
    _rewrite(path, doc, tensors)
    with pytest.raises(ModelFileError, match=match):
        kppca.load(path)


def test_feature_names_survive_the_round_trip(rng, tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(rng.normal(size=(20, 3)), columns=["a", "b", "c"])
    model = DualPPCA(2, kernel=RBF(1.0)).fit(frame)
    model.save(tmp_path / "m.pt")
    loaded = kppca.load(tmp_path / "m.pt")
    assert loaded.feature_names_in_.dtype == object
    np.testing.assert_array_equal(loaded.feature_names_in_, model.feature_names_in_)
    # new points (for the training set itself the fitted model reuses its cached K_c rows)
    new = pd.DataFrame(rng.normal(size=(4, 3)), columns=["a", "b", "c"])
    np.testing.assert_array_equal(loaded.transform(new), model.transform(new))
    with pytest.raises(ValueError, match="feature names"):
        loaded.transform(new.rename(columns={"a": "z"}))


@pytest.mark.parametrize("solver", ["dense", "partial"])
def test_distributions_right_after_load_match_right_after_fit(solver, rng, tmp_path):
    """A dense fit keeps its full spectrum as a cache; the loaded model recomputes it on first use."""
    X, Xt = rng.normal(size=(30, 3)), rng.normal(size=(4, 3))
    model = DualPPCA(2, kernel=RBF(1.3), eigen_solver=solver, random_state=0).fit(X)
    model.save(tmp_path / "m.pt")
    loaded = kppca.load(tmp_path / "m.pt")
    k_c = torch.as_tensor(model.centered_kernel(Xt))
    h = np.ones(2)
    np.testing.assert_array_equal(
        loaded.kernel_conditional(h).log_prob(k_c).numpy(), model.kernel_conditional(h).log_prob(k_c).numpy()
    )
    np.testing.assert_array_equal(np_(loaded.sample(3, random_state=0)), np_(model.sample(3, random_state=0)))


def test_load_in_a_fresh_process_finds_the_class_by_registration(rng, tmp_path):
    """Nothing needs importing first: a registry miss imports kppca's estimator packages (never a file's names)."""
    import subprocess
    import sys

    _fitted_dual(rng).save(tmp_path / "m.kppca")
    code = "import kppca.io, sys; m = kppca.io.load(sys.argv[1]); print(type(m).__name__, m.n_components_)"
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.kppca")], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["DualPPCA", "2"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: RBF(1.0) + Polynomial(2),
        lambda: RBF(1.0) * Laplacian(2.0),
        lambda: ColumnKernel(RBF(1.0), slice(0, 2)),
        lambda: ColumnKernel(RBF(1.0), [0, 2]) + Polynomial(1),
    ],
    ids=["sum", "product", "column-slice", "column-list-sum"],
)
def test_kernel_algebra_is_stored_by_name_not_as_code(make, rng, tmp_path):
    """Sums, products and column kernels of kppca's kernels are kernels by name (before: refused as user code)."""
    X, Xt = rng.normal(size=(25, 3)), rng.normal(size=(4, 3))
    model = DualPPCA(2, kernel=make()).fit(X)
    model.save(tmp_path / "m.kppca")
    loaded = kppca.load(tmp_path / "m.kppca")
    assert type(loaded.kernel_) is type(model.kernel_) and repr(loaded.kernel_) == repr(model.kernel_)
    np.testing.assert_array_equal(loaded.transform(Xt), model.transform(Xt))
