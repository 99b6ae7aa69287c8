"""The model-file container: a safetensors file whose header metadata holds one JSON document.

Its ``sha256`` digest of the rest and of the tensors detects corruption and careless edits, not a forger.
Reading copies the whole file into memory once (a loaded model never maps its file) and bounds the JSON's
size and nesting depth before parsing it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

import torch

from .._param_validation import Integral, Interval

FORMAT_NAME = "kppca-model"
#: The version written and read by this kppca (a larger one is a newer kppca's, a smaller one a development version's).
FORMAT_VERSION = 3
#: The safetensors metadata key holding the JSON document.
METADATA_KEY = "kppca"
#: Bounds checked before any JSON is parsed: nesting depth (a model needs < 20) and header size.
MAX_JSON_DEPTH = 64
MAX_HEADER_BYTES = 100 * 2**20  # the limit safetensors itself applies
_REQUIRED_FIELDS = ("format", "format_version", "kppca_version", "class", "params", "state")
# JSON strings (with escapes) are skipped when brackets are counted.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
#: safetensors dtype names -> torch dtypes (the ones kppca writes, and the other common ones).
_SAFETENSORS_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}  # fmt: skip
_NONNEGATIVE_INT = Interval(Integral, 0, None, closed="left")


class ModelFileError(ValueError):
    """A file that is not a valid kppca model file (not safetensors, corrupt, truncated, unknown content)."""


class CustomKernelError(ValueError):
    """Raised by ``save`` for a model whose kernel is user code (a callable or a ``Kernel`` subclass)."""


def invalid(path: Any, what: str) -> ModelFileError:
    """The error for a file that is a kppca model file in form but not in content."""
    return ModelFileError(f"{path} is not a valid kppca model file: {what}.")


def document_digest(document: dict[str, Any], tensors: dict[str, torch.Tensor]) -> str:
    """SHA-256 (hex) of ``document`` (canonical JSON, less ``sha256``), then of ``tensors`` (CPU) in name order."""
    digest = hashlib.sha256()
    fields = {k: v for k, v in document.items() if k != "sha256"}
    digest.update(json.dumps(fields, sort_keys=True, separators=(",", ":"), allow_nan=False).encode())
    for name in sorted(tensors):
        T = tensors[name].detach().cpu().contiguous()
        digest.update(json.dumps([name, str(T.dtype), list(T.shape)]).encode())
        if T.numel():
            digest.update(T.reshape(-1).view(torch.uint8).numpy())  # the buffer itself, no copy
    return digest.hexdigest()


def json_depth(text: str) -> int:
    """Largest nesting depth of arrays/objects in the JSON ``text`` (strings skipped), without parsing it."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def parse_json(text: str, path: Any, what: str) -> Any:
    """``json.loads`` after the size and depth bounds (never a RecursionError)."""
    if len(text) > MAX_HEADER_BYTES:
        raise invalid(path, f"its {what} is larger than {MAX_HEADER_BYTES} bytes")
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise invalid(path, f"its {what} is nested {depth} levels deep (at most {MAX_JSON_DEPTH} are allowed)")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: also ints beyond Python's digit limit
        raise invalid(path, f"its {what} is not JSON that kppca reads ({exc})") from exc


def write_file(path: str | Path, document: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    """Write ``document`` (JSON-ready, without the digest) and ``tensors`` (CPU, contiguous) to ``path``."""
    from safetensors.torch import save as safetensors_bytes

    document = {**document, "sha256": document_digest(document, tensors)}
    data = safetensors_bytes(tensors, metadata={METADATA_KEY: json.dumps(document)})
    Path(path).write_bytes(data)


def _not_safetensors(path: Path, reason: str) -> ModelFileError:
    return ModelFileError(
        f"{path} is not a kppca model file (not a readable safetensors file: {reason}). Models saved by "
        "earlier kppca versions (torch.save pickles) are not read, because unpickling can run code; "
        "refit and save again."
    )


def _header(data: bytes, path: Path) -> dict[str, Any]:
    """The safetensors JSON header of ``data``, bounded and parsed."""
    if len(data) < 8:
        raise _not_safetensors(path, f"{len(data)} bytes, shorter than the 8-byte header length")
    size = int.from_bytes(data[:8], "little")
    if size > MAX_HEADER_BYTES or 8 + size > len(data):
        raise _not_safetensors(path, f"a header length of {size} bytes that the file of {len(data)} bytes cannot hold")
    try:
        text = data[8 : 8 + size].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_safetensors(path, f"its header is not UTF-8 ({exc})") from exc
    try:
        header = parse_json(text, path, "safetensors header")
    except ModelFileError as exc:
        raise _not_safetensors(path, str(exc)) from exc
    if not isinstance(header, dict):
        raise _not_safetensors(path, "its header is not a JSON object")
    return header


def _ints(values: Any) -> bool:
    """A list of non-negative ints (a shape, or a pair of offsets)."""
    return isinstance(values, list) and all(_NONNEGATIVE_INT.is_satisfied_by(v) for v in values)


def _tensors(data: bytearray, header: dict[str, Any], path: Path) -> dict[str, torch.Tensor]:
    """Every tensor the header lists, copied out of ``data``; the entries checked as safetensors checks them."""
    begin_body = 8 + int.from_bytes(data[:8], "little")
    body = len(data) - begin_body
    tensors, spans = {}, []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        entry = entry if isinstance(entry, dict) else {}
        dtype = _SAFETENSORS_DTYPES.get(entry.get("dtype"))
        shape, offsets = entry.get("shape"), entry.get("data_offsets")
        if not (dtype is not None and _ints(shape) and _ints(offsets) and len(offsets) == 2
                and 0 <= offsets[0] <= offsets[1] <= body):
            raise _not_safetensors(path, f"bad header entry for tensor {name!r}")
        itemsize = torch.empty((), dtype=dtype).element_size()
        count = math.prod(shape) * itemsize
        if offsets[1] - offsets[0] != count:
            raise _not_safetensors(path, f"tensor {name!r} has {offsets[1] - offsets[0]} bytes for {count} expected")
        spans.append((offsets[0], offsets[1], name))
        start = begin_body + offsets[0]
        raw = torch.frombuffer(data, dtype=torch.uint8, offset=start, count=count) if count else torch.empty(0)
        if start % itemsize:  # misaligned for the dtype (never so in files kppca writes): copy the bytes first
            raw = raw.clone()
        tensors[name] = raw.to(torch.uint8).view(dtype).reshape(shape).clone()
    spans.sort()
    for (_, end, a), (begin, _, b) in zip(spans, spans[1:]):
        if begin < end:
            raise _not_safetensors(path, f"tensors {a!r} and {b!r} overlap")
    return tensors


def read_file(path: str | Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The JSON document (format, version and fields checked) and the CPU tensors of a verified model file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file {str(path)!r} does not exist.")
    with path.open("rb") as f:  # one read into memory of our own: nothing below refers to the file again
        data = bytearray(path.stat().st_size)
        if f.readinto(data) != len(data):
            raise _not_safetensors(path, "the file changed while it was read")
    header = _header(data, path)
    metadata = header.get("__metadata__") or {}
    if not isinstance(metadata, dict) or METADATA_KEY not in metadata:
        raise ModelFileError(f"{path} is a safetensors file but not a kppca model (no {METADATA_KEY!r} metadata).")
    if not isinstance(metadata[METADATA_KEY], str):
        raise invalid(path, "its metadata is not a JSON string")
    document = parse_json(metadata[METADATA_KEY], path, "metadata")
    if not isinstance(document, dict):
        raise invalid(path, "its metadata is not a JSON object")
    missing = [field for field in _REQUIRED_FIELDS if field not in document]
    if missing:
        raise invalid(path, f"missing field(s) {', '.join(missing)}")
    if document["format"] != FORMAT_NAME:
        raise ModelFileError(f"{path} is not a kppca model file (format {document['format']!r}).")
    version = document["format_version"]
    if not Interval(Integral, 1, None, closed="left").is_satisfied_by(version):
        raise invalid(path, f"bad format_version {version!r}")
    if version != FORMAT_VERSION:
        fix = "upgrade kppca" if version > FORMAT_VERSION else "refit the model with this kppca and save it again"
        raise ModelFileError(
            f"{path} was written by kppca {str(document['kppca_version'])[:40]} in model-file format version "
            f"{version}; this kppca reads version {FORMAT_VERSION} only: {fix}."
        )
    tensors = _tensors(data, header, path)
    del data
    expected = document.get("sha256")
    if not isinstance(expected, str):
        raise invalid(path, "it has no sha256 digest")
    if document_digest(document, tensors) != expected:
        raise invalid(path, "the sha256 digest of its metadata and tensors does not match (the file is corrupt or "
                            "was edited)")
    return document, tensors
