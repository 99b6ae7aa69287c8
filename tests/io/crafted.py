"""Crafted model files: every saved value of every registered estimator, nested parts included, made invalid.

Shared by ``tests/io/test_hostile_files.py`` (every case, a bounded sample of
edits) and ``benchmarks/robustness_sweep.py --part files`` (every edit, with
counts). A crafter edits the JSON document or a tensor and recomputes the
file's digest (a digest detects corruption, not forgery), so only validation
can refuse the result. Each edit makes one value invalid for what it is: a
tensor one row short, of an integer dtype or the other float dtype, holding NaN or -inf, transposed; a
float NaN, -inf, or -1 where it was positive, or a JSON NaN (not JSON); an int -1, one more, or 5,000
digits long; a string unknown; a list one item short; a device "meta".

A crafted file ends in exactly one outcome (:data:`OUTCOMES`): refused with a
``ModelFileError`` (the target), or loaded and then harmless (every output
bit-identical: the value was not used by any output), silently different,
failing at first use, or another exception at load.
"""

from __future__ import annotations

import copy
import json
import sys
import warnings
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch
from safetensors.torch import save as safetensors_bytes

import kppca
from kppca.io import ModelFileError
from kppca.io import format as file_format

OUTCOMES = ("refused", "harmless", "silently_different", "fails_at_first_use", "other_error_at_load")
DEFECTS = ("silently_different", "fails_at_first_use", "other_error_at_load")


def read(path: Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The JSON document (without its digest) and the tensors of a file, read without kppca's checks."""
    document, tensors = file_format.read_file(path)[:2]  # older kppca returned the version too
    document.pop("sha256", None)
    document.pop("tensors_sha256", None)
    return document, tensors


def write(path: Path, document: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    """A file holding ``document`` and ``tensors`` with a correct digest (as a forger would write it)."""
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # the 5,000-digit ints must be writable
    try:
        if hasattr(file_format, "document_digest"):
            try:
                digest = file_format.document_digest(document, tensors)
            except ValueError:  # a JSON NaN, which no digest covers: the file must be refused before its digest
                digest = "0" * 64
            document = {**document, "sha256": digest}
        else:  # kppca before the whole-document digest (for before/after counts)
            document = {**document, "tensors_sha256": file_format.tensors_digest(tensors)}
        text = json.dumps(document)
    finally:
        sys.set_int_max_str_digits(previous)
    path.write_bytes(safetensors_bytes(tensors, metadata={file_format.METADATA_KEY: text}))


def _tensor_edits(T: torch.Tensor) -> Iterator[tuple[str, torch.Tensor]]:
    if T.ndim >= 1 and T.shape[0] > 0:
        yield "one row short", T[:-1].clone()
    if T.ndim == 2 and T.shape[0] != T.shape[1]:
        yield "transposed", T.T.contiguous()
    if T.dtype.is_floating_point and T.numel():
        yield "int64", T.to(torch.int64)
        yield "float32" if T.dtype == torch.float64 else "float64", T.to(
            torch.float32 if T.dtype == torch.float64 else torch.float64)
        for label, value in (("NaN", float("nan")), ("-inf", float("-inf"))):
            bad = T.clone()
            bad.view(-1)[0] = value
            yield label, bad


def _value_edits(value: Any) -> Iterator[tuple[str, Any]]:
    """(label, replacement JSON) for one JSON value of a document; new tensors as ("__new__", tensor)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        yield "-1", -1
        yield "+1", value + 1
        yield "5000 digits", 10**5000 - 1
    elif isinstance(value, float) or (isinstance(value, dict) and "__float__" in value):
        yield "NaN", {"__float__": "nan"}
        yield "-inf", {"__float__": "-inf"}
        yield "JSON NaN", float("nan")  # written as the non-JSON constant NaN
        if isinstance(value, float) and value > 0:
            yield "-1.0", -1.0
    elif isinstance(value, str):
        yield "unknown string", "bogus"
    elif isinstance(value, list) and value:
        yield "one item short", value[:-1]
    elif isinstance(value, dict) and "__device__" in value:
        yield "meta device", {"__device__": "meta"}
    elif isinstance(value, dict) and ("__tuple__" in value) and value["__tuple__"]:
        yield "one item short", {"__tuple__": value["__tuple__"][:-1]}


def _slots(node: Any, trail: tuple) -> Iterator[tuple[tuple, Any]]:
    """(trail, value) for every value under the ``params``/``state`` of the document and its nested objects."""
    if isinstance(node, dict):
        if "__tensor__" in node or "__ndarray__" in node or "__float__" in node or "__device__" in node:
            yield trail, node
            return
        if "__tuple__" in node:
            yield trail, node
            for i, item in enumerate(node["__tuple__"]):
                yield from _slots(item, trail + ("__tuple__", i))
            return
        for key, item in node.items():
            if key in ("__object__", "__custom_kernel__", "__dtype__", "__ndarray_str__", "shape", "dtype",
                       "strides", "wrapped"):
                continue
            yield from _slots(item, trail + (key,))
    elif isinstance(node, list):
        yield trail, node
        for i, item in enumerate(node):
            yield from _slots(item, trail + (i,))
    else:
        yield trail, node


def _set(document: dict, trail: tuple, value: Any) -> None:
    node = document
    for key in trail[:-1]:
        node = node[key]
    node[trail[-1]] = value


def crafted_files(document: dict[str, Any], tensors: dict[str, torch.Tensor]) -> Iterator[tuple[str, dict, dict]]:
    """(label, document, tensors) of every crafted variant of a saved model's document."""
    for part in ("params", "state"):
        for trail, value in _slots(document[part], (part,)):
            where = "/".join(map(str, trail))
            if isinstance(value, dict) and ("__tensor__" in value or "__ndarray__" in value):
                name = value.get("__tensor__", value.get("__ndarray__"))
                if name not in tensors:
                    continue
                for label, T in _tensor_edits(tensors[name]):
                    edited = dict(tensors)
                    edited[name] = T
                    entry = {k: v for k, v in value.items() if k != "strides"}  # the layout of the original
                    doc = copy.deepcopy(document)
                    _set(doc, trail, entry)
                    yield f"{where}: {label}", doc, edited
                continue
            for label, replacement in _value_edits(value):
                doc = copy.deepcopy(document)
                _set(doc, trail, replacement)
                yield f"{where}: {label}", doc, tensors


def _as_numpy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, (list, tuple)):
        return [_as_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_numpy(v) for k, v in value.items()}
    return np.asarray(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) or isinstance(a, dict):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        pairs = zip(a, b) if isinstance(a, list) else ((a[k], b.get(k)) for k in a)
        return all(_same(x, y) for x, y in pairs)
    if not isinstance(b, np.ndarray) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def outcome(path: Path, outputs: Any, expected: Any) -> tuple[str, str]:
    """Load the crafted file at ``path`` and classify it against the original's ``expected`` outputs."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = kppca.load(path)
    except ModelFileError as exc:
        return "refused", str(exc)
    except Exception as exc:  # noqa: BLE001 - the outcome being measured
        return "other_error_at_load", f"{type(exc).__name__}: {str(exc)[:200]}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = _as_numpy(outputs(model))
    except Exception as exc:  # noqa: BLE001
        return "fails_at_first_use", f"{type(exc).__name__}: {str(exc)[:200]}"
    return ("harmless", "") if _same(expected, got) else ("silently_different", "outputs differ")


def sweep_case(model: Any, outputs: Any, directory: Path, *, every: int = 1) -> Iterator[tuple[str, str, str]]:
    """(label, outcome, detail) of every ``every``-th crafted variant of ``model`` (fitted)."""
    original = directory / "original.kppca"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save(original)
        expected = _as_numpy(outputs(kppca.load(original)))
    document, tensors = read(original)
    crafted = directory / "crafted.kppca"
    for i, (label, doc, edited) in enumerate(crafted_files(document, tensors)):
        if i % every:
            continue
        write(crafted, doc, edited)
        yield (label, *outcome(crafted, outputs, expected))
