"""The model-file container: a safetensors file whose header metadata holds one JSON document.

Its ``sha256`` digest of the rest and of the tensors detects corruption and careless edits, not a forger.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

import torch

from .._param_validation import Integral, Interval
from .._resources import InsufficientMemoryError, check_memory, file_kind, path_kind

FORMAT_NAME = "kppca-model"
#: The version written and read by this kppca (a larger one is a newer kppca's, a smaller one a development version's).
FORMAT_VERSION = 4
#: Older versions this kppca still reads (version 3 stored values that version 4 derives; see CHANGELOG.md).
READABLE_VERSIONS = (3, FORMAT_VERSION)
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
    error = ModelFileError(f"{path} is not a valid kppca model file: {what}.")
    error.reason = what  # read by the decoder to say where, in a nested object, the file went wrong
    return error


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


def _refuse_constant(name: str) -> None:
    """``json.loads`` accepts NaN and Infinity, which are not JSON (kppca writes them as tagged strings)."""
    raise ValueError(f"{name} is not a JSON value")


def parse_json(text: str, path: Any, what: str) -> Any:
    """``json.loads`` after the size and depth bounds (never a RecursionError)."""
    if len(text) > MAX_HEADER_BYTES:
        raise invalid(path, f"its {what} is larger than {MAX_HEADER_BYTES} bytes")
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise invalid(path, f"its {what} is nested {depth} levels deep (at most {MAX_JSON_DEPTH} are allowed)")
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:  # ValueError: also ints beyond Python's digit limit
        raise invalid(path, f"its {what} is not JSON that kppca reads ({exc})") from exc


def write_file(path: str | Path, document: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    """Write ``document`` (JSON-ready, without the digest) and ``tensors`` (CPU, contiguous) to ``path``, atomically.

    The bytes go to a temporary file beside the target (beside the file a symbolic link names), are flushed to
    disk, and replace the target in one ``os.replace``: a failure at any point (a full disk, an interruption)
    leaves the previous file as it was and no temporary file behind.
    """
    from safetensors.torch import save as safetensors_bytes

    document = {**document, "sha256": document_digest(document, tensors)}
    data = safetensors_bytes(tensors, metadata={METADATA_KEY: json.dumps(document, allow_nan=False)})
    target = Path(os.path.realpath(path))  # replace the file a link names, not the link
    kind = path_kind(target)
    if kind == "a folder":
        raise IsADirectoryError(f"cannot save to {str(path)!r}: it is a folder; give a file name.")
    if kind not in (None, "missing"):  # never replace a device or a pipe (e.g. /dev/null) by a file
        raise ModelFileError(f"cannot save to {str(path)!r}: it is {kind}, not a regular file.")
    mode = os.stat(target).st_mode & 0o7777 if kind is None else 0o666 & ~_umask()
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:  # said of the target, not of the temporary name the user never chose
        where = f"folder {str(target.parent)!r} does not exist" if not target.parent.is_dir() else exc.strerror
        raise type(exc)(exc.errno, f"cannot save to {str(path)!r}: {where}") from None
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)  # the bytes are on disk before the name points at them
            if hasattr(os, "fchmod"):  # mkstemp's file is private (0600): the target's mode, or a new file's
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError, AttributeError):  # the rename itself survives a crash (POSIX only)
        folder = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte of ``data`` is written (a short write is not an error)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _umask() -> int:
    """The process's umask (read from /proc where possible: setting it to read it is not thread-safe)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _not_safetensors(path: Path, reason: str) -> ModelFileError:
    return ModelFileError(
        f"{path} is not a kppca model file (not a readable safetensors file: {reason}). Models saved by "
        "earlier kppca versions (torch.save pickles) are not read, because unpickling can run code; "
        "refit and save again."
    )


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading, refused unless it is a regular file (never blocking on a named pipe)."""
    try:  # O_NONBLOCK: opening a pipe does not wait for a writer (no effect on regular files)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise FileNotFoundError(f"model file {str(path)!r} does not exist.") from None
    except IsADirectoryError:  # where a folder cannot be opened at all
        raise IsADirectoryError(f"{str(path)!r} is a folder, not a model file; give the file's name.") from None
    kind = file_kind(os.fstat(fd).st_mode)  # of what was opened: no race with a later replacement
    if kind is not None:
        os.close(fd)
        if kind == "a folder":
            raise IsADirectoryError(f"{str(path)!r} is a folder, not a model file; give the file's name.")
        link = f" (a link to {os.path.realpath(path)})" if path.is_symlink() else ""
        raise ModelFileError(f"{path} is {kind}{link}, not a kppca model file: model files are regular files.")
    return os.fdopen(fd, "rb")


def _read_exactly(f: BinaryIO, buffer: Any, path: Path) -> None:
    """Fill ``buffer`` (writable) from ``f``; a file that ends early changed while it was read."""
    view, done = memoryview(buffer).cast("B"), 0
    while done < len(view):
        got = f.readinto(view[done:])
        if not got:
            raise _not_safetensors(path, "the file ended early (it changed while it was read)")
        done += got


def _header(f: BinaryIO, size: int, path: Path) -> tuple[dict[str, Any], int]:
    """The safetensors JSON header of the file ``f`` of ``size`` bytes, bounded and parsed, and where its body starts."""
    if size < 8:
        raise _not_safetensors(path, f"{size} bytes, shorter than the 8-byte header length")
    first = bytearray(8)
    _read_exactly(f, first, path)
    length = int.from_bytes(first, "little")
    if length > MAX_HEADER_BYTES or 8 + length > size:
        raise _not_safetensors(path, f"a header length of {length} bytes that the file of {size} bytes cannot hold")
    raw = bytearray(length)
    _read_exactly(f, raw, path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_safetensors(path, f"its header is not UTF-8 ({exc})") from exc
    try:
        header = parse_json(text, path, "safetensors header")
    except ModelFileError as exc:
        raise _not_safetensors(path, str(exc)) from exc
    if not isinstance(header, dict):
        raise _not_safetensors(path, "its header is not a JSON object")
    return header, 8 + length


def _ints(values: Any) -> bool:
    """A list of non-negative ints (a shape, or a pair of offsets)."""
    return isinstance(values, list) and all(_NONNEGATIVE_INT.is_satisfied_by(v) for v in values)


def _entries(header: dict[str, Any], body: int, path: Path) -> list[tuple[int, int, str, torch.dtype, list[int]]]:
    """``(begin, end, name, dtype, shape)`` of every tensor the header lists, by offset, checked as safetensors
    checks them: known dtypes, sizes that match the shapes, and spans that cover the ``body`` bytes exactly."""
    spans = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        entry = entry if isinstance(entry, dict) else {}
        dtype = _SAFETENSORS_DTYPES.get(entry.get("dtype"))
        shape, offsets = entry.get("shape"), entry.get("data_offsets")
        if not (dtype is not None and _ints(shape) and _ints(offsets) and len(offsets) == 2
                and 0 <= offsets[0] <= offsets[1] <= body):
            raise _not_safetensors(path, f"bad header entry for tensor {name!r}")
        count = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        if offsets[1] - offsets[0] != count:
            raise _not_safetensors(path, f"tensor {name!r} has {offsets[1] - offsets[0]} bytes for {count} expected")
        spans.append((offsets[0], offsets[1], name, dtype, shape))
    spans.sort(key=lambda s: s[:2])
    end, previous = 0, None
    for begin, stop, name, _, _ in spans:
        if begin < end:
            raise _not_safetensors(path, f"tensors {previous!r} and {name!r} overlap")
        if begin > end:
            raise _not_safetensors(path, f"{begin - end} bytes before tensor {name!r} belong to no tensor")
        end, previous = stop, name
    if end != body:  # e.g. gigabytes appended to a model file: refused before they are read
        raise _not_safetensors(path, f"{body - end} bytes after the last tensor belong to no tensor")
    return spans


def _tensors(f: BinaryIO, spans: list[tuple[int, int, str, torch.dtype, list[int]]], path: Path
             ) -> dict[str, torch.Tensor]:
    """Every tensor of ``spans`` read from ``f`` (at the start of the body) into memory of its own."""
    tensors = {}
    for begin, stop, name, dtype, shape in spans:
        raw = torch.empty(stop - begin, dtype=torch.uint8)
        _read_exactly(f, raw.numpy(), path)
        tensors[name] = raw.view(dtype).reshape(shape) if raw.numel() else torch.empty(shape, dtype=dtype)
    return tensors


def read_file(path: str | Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The JSON document (format, version and fields checked) and the CPU tensors of a verified model file.

    The header is checked first (its size, the JSON's depth, the version, tensor entries that tile the rest of
    the file), then only the tensor bytes it declares are read, into memory of their own, if memory allows.
    """
    path = Path(path)
    with _open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        header, begin_body = _header(f, size, path)
        document = _document(header, path)
        spans = _entries(header, size - begin_body, path)
        try:
            check_memory(size - begin_body, f"loading {path}", "load it on a machine with more memory")
        except InsufficientMemoryError as exc:
            raise ModelFileError(str(exc)) from None
        tensors = _tensors(f, spans, path)
    expected = document.get("sha256")
    if not isinstance(expected, str):
        raise invalid(path, "it has no sha256 digest")
    if document_digest(document, tensors) != expected:
        raise invalid(path, "the sha256 digest of its metadata and tensors does not match (the file is corrupt or "
                            "was edited)")
    return document, tensors


def _document(header: dict[str, Any], path: Path) -> dict[str, Any]:
    """The kppca document in the metadata of a safetensors ``header``: parsed, its fields and version checked."""
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
    if version not in READABLE_VERSIONS:
        fix = "upgrade kppca" if version > FORMAT_VERSION else "refit the model with this kppca and save it again"
        readable = " and ".join(map(str, READABLE_VERSIONS))
        raise ModelFileError(
            f"{path} was written by kppca {str(document['kppca_version'])[:40]} in model-file format version "
            f"{version}; this kppca reads versions {readable}: {fix}."
        )
    return document
