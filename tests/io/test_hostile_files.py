"""Regressions of the reliability sweep (issue 18, items 1 and 5): files are read once and trusted never.

Each test names the failure it guards against; before the kppca.io rewrite each
of these loaded silently, crashed later, or killed the process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save as safetensors_bytes

import kppca
from kppca import DualPPCA, ModelFileError
from kppca.io.format import METADATA_KEY, json_depth
from kppca.kernels import RBF

sys.path.insert(0, str(Path(__file__).parent))
import crafted  # noqa: E402

DATA = Path(__file__).parent / "data"


def _fit(rng, n=30, seed_shift=0.0):
    return DualPPCA(2, kernel=RBF(1.0)).fit(rng.normal(size=(n, 3)) + seed_shift)


def _raw(path):
    """The JSON document and tensors of a file (read without kppca's checks)."""
    return crafted.read(path)


def _write(path, document_text, tensors):
    """A file with the given JSON text and a recomputed digest (as a forger writes it: only validation refuses it)."""
    crafted.write(path, json.loads(document_text), tensors)


def _write_text(path, document_text, tensors):
    """A file whose metadata is ``document_text`` as is (its digest is never reached: the text is refused first)."""
    text = document_text[:-1] + f', "sha256": "{"0" * 64}"}}'
    path.write_bytes(safetensors_bytes(tensors, metadata={METADATA_KEY: text}))


def _edit_state(path, **entries):
    document, tensors = _raw(path)
    document["state"].update(entries)
    _write(path, json.dumps(document), tensors)


# ----------------------------------------------------------------------------- item 1: no memory map
def test_loaded_model_ignores_later_writes_to_its_file(rng, tmp_path):
    """Before: saving another model of the same size to the path silently changed A.transform (memory map)."""
    path, Xt = tmp_path / "m.kppca", rng.normal(size=(5, 3))
    _fit(rng).save(path)
    A = kppca.load(path)
    before = A.transform(Xt)
    _fit(rng, seed_shift=3.0).save(path)  # same size, other values
    np.testing.assert_array_equal(A.transform(Xt), before)


def test_loaded_model_survives_truncation_and_a_smaller_file(rng, tmp_path):
    """Before: truncating the file, or saving a smaller model there, killed the process with SIGBUS."""
    path, Xt = tmp_path / "m.kppca", rng.normal(size=(5, 3))
    _fit(rng, n=200).save(path)
    A = kppca.load(path)
    before = A.transform(Xt)
    path.write_bytes(path.read_bytes()[:100])
    np.testing.assert_array_equal(A.transform(Xt), before)
    _fit(rng, n=10).save(path)
    np.testing.assert_array_equal(A.transform(Xt), before)
    np.testing.assert_array_equal(A.score_samples(Xt), A.score_samples(Xt))
    A.X_fit_.add_(0.0)  # the loaded tensors are writable memory of the model's own


# ----------------------------------------------------------------------------- item 5: validated state
def test_parameter_constraints_in_the_state_are_refused(rng, tmp_path):
    """Before: `_parameter_constraints: {}` loaded and switched validation off for later refits."""
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    _edit_state(path, _parameter_constraints={"__dict__": {}})
    with pytest.raises(ModelFileError, match="'_parameter_constraints', which DualPPCA does not declare"):
        kppca.load(path)


def test_nan_sigma2_is_refused(rng, tmp_path):
    """Before: `sigma2_ = NaN` loaded (NaN scores)."""
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    _edit_state(path, sigma2_={"__float__": "nan"})
    with pytest.raises(ModelFileError, match=r"'sigma2_'.*float in the range \(0, inf\).*nan"):
        kppca.load(path)


def test_negative_n_components_is_refused(rng, tmp_path):
    """Before: `n_components_ = -5` loaded and failed later."""
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    _edit_state(path, n_components_=-5)
    with pytest.raises(ModelFileError, match=r"'n_components_'.*int in the range \[1, inf\).*-5"):
        kppca.load(path)


@pytest.mark.parametrize(
    "entries, match",
    [
        ({"rank_": "29"}, r"'rank_'.*an int.*'29'"),
        ({"eigenvalues_": [1.0, 2.0]}, r"'eigenvalues_'.*a list, expected a tensor"),
        ({"kernel_": 3}, r"'kernel_'"),
        ({"_device": "cpu"}, r"_device is not a device"),
        ({"_dtype": {"__dtype__": "int64"}}, r"'_dtype'.*torch.float32 or torch.float64"),
        ({"n_samples_": 31}, r"'X_fit_'.*size 30 along axis 0, expected n_samples_ = 31"),
        ({"eigenvectors_": {"__tensor__": "state/eigenvalues_"}}, r"'eigenvectors_'.*1 dimension"),
        ({"feature_names_in_": {"__ndarray_str__": ["a"], "shape": [1], "dtype": "object"}},
         r"'feature_names_in_'.*size 1 along axis 0, expected n_features_in_ = 3"),
    ],
    ids=["rank-str", "list-for-tensor", "kernel-int", "device-str", "int-dtype", "shape-relation", "ndim",
         "names-length"],
)
def test_ill_typed_state_is_refused(entries, match, rng, tmp_path):
    """Before: ill-typed values loaded and failed later (or gave wrong results)."""
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    _edit_state(path, **entries)
    with pytest.raises(ModelFileError, match=match):
        kppca.load(path)


def test_nonfinite_tensor_is_refused(rng, tmp_path):
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    document, tensors = _raw(path)
    tensors["state/eigenvectors_"] = tensors["state/eigenvectors_"].clone()
    tensors["state/eigenvectors_"].view(-1)[0] = float("inf")
    _write(path, json.dumps(document), tensors)
    with pytest.raises(ModelFileError, match="'eigenvectors_'.*NaN or infinite"):
        kppca.load(path)


def test_cache_override_is_refused(rng, tmp_path):
    """Before: a cache entry in the file loaded and was trusted as derived state."""
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    _edit_state(path, _cache_={"__dict__": {"gram_c": {"__tensor__": "state/eigenvectors_"}}})
    with pytest.raises(ModelFileError, match="'_cache_', which DualPPCA does not declare"):
        kppca.load(path)


@pytest.mark.parametrize("where", ["metadata", "header"])
def test_deeply_nested_json_is_refused_without_recursion_error(where, rng, tmp_path):
    """Before: deeply nested JSON raised RecursionError."""
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    document, tensors = _raw(path)
    deep = "[" * 100_000 + "]" * 100_000
    if where == "metadata":
        text = json.dumps(document).replace('"state": {', '"state": {"x_": ' + deep + ", ", 1)
        _write_text(path, text, tensors)
    else:  # the safetensors header itself, around the metadata
        data = path.read_bytes()
        size = int.from_bytes(data[:8], "little")
        header = data[8 : 8 + size].decode()
        header = header[:-1] + ', "deep": ' + deep + "}"
        header += " " * (-len(header) % 8)
        path.write_bytes(len(header).to_bytes(8, "little") + header.encode() + data[8 + size :])
    with pytest.raises(ModelFileError, match=r"nested 10000\d levels deep \(at most 64"):
        kppca.load(path)


def test_json_depth_skips_strings():
    assert json_depth('{"a": "[[[[", "b": [1, {"c": "]\\"]"}]}') == 3


def test_unavailable_device_is_a_model_file_error(rng, tmp_path):
    """Before: `_device = "cuda:7"` raised an AssertionError (torch without CUDA) on load."""
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    _edit_state(path, _device={"__device__": "cuda:7"})
    with pytest.raises(ModelFileError, match=r"saved on cuda:7, which is not available here.*map_location='cpu'"):
        kppca.load(path)
    assert kppca.load(path, map_location="cpu")._device == torch.device("cpu")


def test_flipped_byte_in_tensor_data_is_detected(rng, tmp_path):
    """Before: a flipped byte in the tensor data went unnoticed (a silently different model)."""
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[:8], "little")
    data[8 + size + 100] ^= 0x01  # inside the body (the tensors)
    path.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match="sha256 digest of its metadata and tensors does not match"):
        kppca.load(path)


def test_flipped_digit_in_the_metadata_is_detected(rng, tmp_path):
    """Issue 26, item 1. Before: one digit of sigma2_ changed in the JSON loaded a different model (score changed)."""
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    data = path.read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = data[8 : 8 + size].decode()
    at = header.index("sigma2_")
    digit = next(i for i in range(at, len(header)) if header[i] in "123456789")
    edited = header[:digit] + str(int(header[digit]) % 9 + 1) + header[digit + 1 :]  # same length, other digit
    path.write_bytes(data[:8] + edited.encode() + data[8 + size :])
    with pytest.raises(ModelFileError, match="sha256 digest of its metadata and tensors does not match"):
        kppca.load(path)


def test_missing_digest_is_refused(rng, tmp_path):
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    document, tensors = _raw(path)
    path.write_bytes(safetensors_bytes(tensors, metadata={METADATA_KEY: json.dumps(document)}))
    with pytest.raises(ModelFileError, match="no sha256 digest"):
        kppca.load(path)


def test_unregistered_subclass_cannot_be_saved(rng, tmp_path):
    """Registration is per class: a subclass must register itself (its state may differ)."""

    class MyDual(DualPPCA):
        pass

    model = MyDual(2).fit(rng.normal(size=(20, 3)))
    with pytest.raises(TypeError, match="MyDual cannot be saved.*@kppca.io.register"):
        model.save(tmp_path / "m.kppca")


# ----------------------------------------------------------------------------- older files
def test_files_of_format_version_1_are_refused_with_advice():
    """Issue 26, item 3: version 1 (development kppca 0.1.0, no checksum) is no longer read.

    Before, rewriting a file as version 1 dropped the checksum and loaded edited tensors. No
    released kppca wrote version 1 or 2, so the reader keeps one checked path only.
    """
    data = (DATA / "dual_v1.kppca").read_bytes()
    size = int.from_bytes(data[:8], "little")
    document = json.loads(json.loads(data[8 : 8 + size])["__metadata__"][METADATA_KEY])
    assert document["format_version"] == 1 and "sha256" not in document
    with pytest.raises(ModelFileError, match="format version 1; this kppca reads versions 3 and 4: refit the model"):
        kppca.load(DATA / "dual_v1.kppca")


def _with_header(path, edit):
    """Rewrite the safetensors header of ``path`` with ``edit(header)`` (the body unchanged)."""
    data = path.read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    edit(header)
    text = json.dumps(header)
    text += " " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text.encode() + data[8 + size :])


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda h: h["state/X_fit_"].update(dtype="C64"), "bad header entry for tensor 'state/X_fit_'"),
        (lambda h: h["state/X_fit_"].update(shape=[-1, 3]), "bad header entry"),
        (lambda h: h["state/X_fit_"].update(data_offsets=[0, 10**9]), "bad header entry"),
        (lambda h: h["state/X_fit_"].update(shape=[29, 3]), "has 720 bytes for 696 expected"),
        (lambda h: h["state/eigenvectors_"].update(data_offsets=h["state/X_fit_"]["data_offsets"][:1]
                                        + [h["state/X_fit_"]["data_offsets"][0] + 480]), "overlap"),
    ],
    ids=["dtype", "shape", "offsets", "size", "overlap"],
)
def test_bad_tensor_entries_are_refused(edit, match, rng, tmp_path):
    path = tmp_path / "m.kppca"
    _fit(rng).save(path)
    _with_header(path, edit)
    with pytest.raises(ModelFileError, match=match):
        kppca.load(path)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_model_round_trip_and_map_location(rng, tmp_path):
    """A model fitted on the GPU loads back there; map_location moves it (and its _device) to the CPU."""
    X, Xt = rng.normal(size=(40, 3)), rng.normal(size=(5, 3))
    model = DualPPCA(2, kernel=RBF(1.0), device="cuda").fit(X)
    model.save(tmp_path / "m.kppca")
    loaded = kppca.load(tmp_path / "m.kppca")
    assert loaded.A_.device.type == "cuda" and loaded._device.type == "cuda"
    np.testing.assert_array_equal(loaded.transform(Xt), model.transform(Xt))
    on_cpu = kppca.load(tmp_path / "m.kppca", map_location="cpu")
    assert on_cpu.A_.device.type == "cpu" and on_cpu._device == torch.device("cpu")
    assert on_cpu.transform(Xt).shape == (5, 2)
    cpu_model = DualPPCA(2, kernel=RBF(1.0)).fit(X)
    cpu_model.save(tmp_path / "c.kppca")
    moved = kppca.load(tmp_path / "c.kppca", map_location="cuda")
    assert moved.X_fit_.device.type == "cuda" and moved._device.type == "cuda"


# ----------------------------------------------------------------------------- nested estimators
def _ensemble(rng):
    from kppca.rkm import LSSVMClassifier, SubsetEnsembleClassifier

    X = rng.normal(size=(30, 3))
    y = (X[:, 0] > 0).astype(int)
    return SubsetEnsembleClassifier(LSSVMClassifier(kernel=RBF(1.0)), subset_size=8, random_state=0).fit(X, y)


def test_a_nested_fitted_estimator_is_validated_like_the_model(rng, tmp_path):
    """A submodel's state is checked against its class's declaration: incomplete or emptied, it is refused."""
    path = tmp_path / "m.kppca"
    _ensemble(rng).save(path)
    document, tensors = _raw(path)
    del document["state"]["estimators_"][0]["state"]["intercept_"]
    _write(path, json.dumps(document), tensors)
    with pytest.raises(ModelFileError, match="lacks 'intercept_'"):
        kppca.load(path)
    document["state"]["estimators_"][0]["state"] = {}  # not an unfitted template: a fitted submodel is required
    _write(path, json.dumps(document), tensors)
    with pytest.raises(ModelFileError, match="lacks"):
        kppca.load(path)


def test_only_a_constructor_parameter_may_be_an_unfitted_estimator(rng, tmp_path):
    """The template ``estimator`` loads unfitted, as saved; the saved model itself with no state is refused."""
    path = tmp_path / "m.kppca"
    model = _ensemble(rng)
    model.save(path)
    template = kppca.load(path).estimator
    assert type(template) is type(model.estimator) and repr(template) == repr(model.estimator)
    assert not hasattr(template, "intercept_")
    document, tensors = _raw(path)
    document["state"] = {}
    _write(path, json.dumps(document), tensors)
    with pytest.raises(ModelFileError, match="lacks"):
        kppca.load(path)


# ----------------------------------------------------------------------------- issue 26: every nested part
def _case(name):
    from test_roundtrip import CASES, _data

    make, fit_args, outputs = CASES[name]
    data = _data(np.random.default_rng(0))
    return make().fit(*fit_args(data)), (lambda m: outputs(m, data))


@pytest.mark.parametrize(
    "case, where, value, match",
    [
        ("lssvm-classifier-3", ("state", "codebook_"), "short", r"'codebook_'.*size 2 along axis 0, expected c = 3"),
        ("dual", ("state", "centerer_", "state", "column_means_"), "int64", r"'centerer_'.*column_means_.*int64"),
        ("dual", ("state", "centerer_", "state", "column_means_"), "short", r"column_means_ must have shape \(24,\)"),
        ("dual", ("state", "kernel_", "params", "bandwidth"), -1.0, r"'kernel_'.*RBF.*bandwidth"),
        ("dual", ("state", "kernel_", "params", "bandwidth"), {"__float__": "nan"}, r"'kernel_'.*bandwidth"),
        ("dual", ("state", "kernel_", "params", "bandwidth"), {"__float__": "-inf"}, r"'kernel_'.*bandwidth"),
        ("primal-rff", ("state", "feature_map_", "state", "omega_"), "short", r"'feature_map_'.*'omega_'"),
        ("primal-rff", ("state", "feature_map_", "state", "bandwidth_"), -1.0, r"'bandwidth_'"),
        ("multiview-dual", ("state", "views_", 1, "params", "X_fit_"), "short",
         r"'column_means_' of KernelCenterer has size 24 along axis 0, expected n = 23"),
        ("multiview-primal", ("state", "U_", 0), "short", r"U_\[0\] and views_\[0\].phi_mean_ disagree"),
        ("subset-ensemble", ("state", "estimators_", 0, "state", "codebook_"), "short",
         r"'codebook_' of LSSVMClassifierState has size 2 along axis 0, expected c = 3"),
        ("subset-ensemble", ("state", "coef_"), "short", r"coef_ has shape"),
        ("deep-rkm-feedforward", ("state", "scales_", 0), "short", r"scales_\[0\] has shape"),
        ("deep-rkm", ("state", "hidden_features_", 0), "short", r"DeepRKM"),
        ("kernel-pmf-primal", ("state", "coef_"), "short", r"coef_ does not match"),
        ("kernel-pmf-primal", ("state", "solver_"), "dual", r"coef_ must be present exactly with solver_='primal'"),
        ("lssvm-regressor-primal", ("state", "solver_"), "dual", r"solver_='dual' needs hidden_features_, X_fit_"),
        ("dual", ("state", "_device"), {"__device__": "meta"}, r"device 'meta' holds no data"),
        ("dual", ("state", "n_samples_"), "5000 digits", r"not JSON that kppca reads.*digits"),
    ],
    ids=lambda v: "/".join(map(str, v[1:])) if isinstance(v, tuple) else None,
)
def test_invalid_nested_state_is_a_model_file_error_naming_it(case, where, value, match, tmp_path):
    """Issue 26, items 2 and 4. Before: each of these loaded, then gave other outputs or failed at first use
    (or raised RuntimeError/NotImplementedError/ValueError instead of ModelFileError)."""
    model, _ = _case(case)
    path = tmp_path / "m.kppca"
    model.save(path)
    document, tensors = _raw(path)
    node = document
    for key in where[:-1]:
        node = node[key]
    if value in ("short", "int64"):
        name = node[where[-1]]["__tensor__"]
        tensors[name] = tensors[name][:-1].clone() if value == "short" else tensors[name].to(torch.int64)
        node[where[-1]].pop("strides", None)
    else:
        node[where[-1]] = 10**5000 - 1 if value == "5000 digits" else value
    crafted.write(path, document, tensors)
    with pytest.raises(ModelFileError, match=match):
        kppca.load(path)


def test_a_corrupted_model_is_refused_at_save(rng, tmp_path):
    """Issue 26, item 2: the file of a corrupted object would not load, so saving it fails (naming the part)."""
    model = _fit(rng)
    # fitted state is read-only: only a bypass of the frozen record (corruption in memory) can do this
    record = model.centerer_.state_
    object.__setattr__(record, "column_means_", record.column_means_.to(torch.int64))
    with pytest.raises(ModelFileError, match=r"cannot save DualPPCA.*'centerer_'.*int64"):
        model.save(tmp_path / "m.kppca")
    model = _fit(rng)
    model.kernel_.bandwidth = -1.0
    with pytest.raises(ModelFileError, match=r"cannot save DualPPCA.*'kernel_'.*bandwidth"):
        model.save(tmp_path / "m.kppca")
    assert not (tmp_path / "m.kppca").exists()


def test_a_generator_random_state_warns_at_save(rng, tmp_path):
    """Issue 26, item 4: a Generator cannot be stored; saving says so instead of silently writing None."""
    from kppca.rkm import DeepRKM

    X = rng.normal(size=(20, 2))
    model = DeepRKM(n_passes=1, random_state=np.random.default_rng(0)).fit(X, X[:, 0])
    with pytest.warns(UserWarning, match=r"random_state of DeepRKM is a Generator.*saved as None.*int random_state"):
        model.save(tmp_path / "m.kppca")
    assert kppca.load(tmp_path / "m.kppca").random_state is None


def test_a_retired_parameter_at_its_default_still_loads(rng, tmp_path):
    """DeepRKM no longer takes solver_options: files that hold it at None (the default) load, another value is refused."""
    from kppca.rkm import DeepRKM

    X = rng.normal(size=(20, 2))
    model = DeepRKM(n_passes=1, random_state=0).fit(X, X[:, 0])
    model.save(tmp_path / "m.kppca")
    document, tensors = crafted.read(tmp_path / "m.kppca")
    document["params"]["solver_options"] = None
    crafted.write(tmp_path / "old.kppca", document, tensors)
    np.testing.assert_array_equal(kppca.load(tmp_path / "old.kppca").predict(X), model.predict(X))
    document["params"]["solver_options"] = {"__dict__": {"factor": 2}}
    crafted.write(tmp_path / "other.kppca", document, tensors)
    with pytest.raises(ModelFileError, match="solver_options"):
        kppca.load(tmp_path / "other.kppca")


#: Edits to values that stay valid (a forger's edit, which only a signature would catch), and the
#: cases still allowed to fail at first use (none: DeepRKMClassifier checks its nested parts since issue 26).
#: ``n_samples_`` is such a value only for a model that keeps no training inputs (a landmark model
#: fitted blockwise: the count of rows it has seen); with ``X_fit_`` kept, its shape fixes it.
_PLAUSIBLE = ("rank_: +1", "degree: +1", "mean_: -1.0", "log_eta_: -1.0")
_PLAUSIBLE_WITHOUT_INPUTS = ("n_samples_: +1",)
_PENDING: tuple[str, ...] = ()


@pytest.mark.parametrize("case", sorted(__import__("test_roundtrip").CASES))
def test_crafted_files_are_refused_or_harmless(case, tmp_path):
    """Issue 26: every registered estimator's saved values, nested parts included, made invalid one at a time
    (every 4th edit of tests/io/crafted.py here; all of them in benchmarks/robustness_sweep.py --part files).
    Before: 45 loaded with other outputs, 195 failed at first use, 239 raised other errors at load."""
    model, outputs = _case(case)
    blockwise = type(model).__name__ == "PrimalPPCA" and not hasattr(model, "X_fit_")
    plausible = _PLAUSIBLE + _PLAUSIBLE_WITHOUT_INPUTS if blockwise else _PLAUSIBLE
    bad = [(label, outcome, detail) for label, outcome, detail in crafted.sweep_case(model, outputs, tmp_path, every=4)
           if outcome in crafted.DEFECTS and not label.endswith(plausible)]
    if case in _PENDING:
        bad = [b for b in bad if b[1] == "other_error_at_load"]
    assert not bad, bad
