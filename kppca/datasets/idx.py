"""Reader and writer for the IDX format of the original MNIST files, plain or gzip-compressed.

Gzip is recognised from its magic bytes, not the name: downloaded copies are often renamed or
decompressed without fixing the suffix.
"""

from __future__ import annotations

import gzip
import math
import os
import zlib
from typing import Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["read_idx", "write_idx", "IDX_DTYPES"]

#: Map from IDX type code to the big-endian numpy dtype stored in the file.
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}

# Keyed on (kind, itemsize), so that write_idx accepts either byte order.
_CODE_FOR_KIND: dict[tuple[str, int], int] = {(dt.kind, dt.itemsize): code for code, dt in IDX_DTYPES.items()}

_GZIP_MAGIC = b"\x1f\x8b"
_INT32_MAX = 2**31 - 1


def _corrupt(path: PathLike, what: str) -> ValueError:
    """The one error of every malformed file."""
    return ValueError(f"corrupt IDX file {os.fspath(path)!r}: {what}")


def _shape_text(shape: tuple[int, ...]) -> str:
    """``shape`` for an error message, elided when a corrupt header declares many dimensions."""
    if len(shape) <= 6:
        return str(shape)
    return f"({shape[0]}, {shape[1]}, {shape[2]}, ..., {shape[-1]})"


def _bytes_text(n: int) -> str:
    """A byte count for an error message (a corrupt header can declare astronomically many)."""
    return str(n) if n < 10**15 else f"{n:.3g}"


def read_idx(path: PathLike) -> np.ndarray:
    """Read an IDX file (plain or gzip-compressed) into a numpy array.

    Parameters
    ----------
    path : str or os.PathLike
        File to read; gzip is detected from the content, whatever the suffix.

    Returns
    -------
    numpy.ndarray
        A fresh, writable, native-endian array of the shape declared in the header (e.g. ``uint8`` of
        shape ``(n, 28, 28)`` for MNIST images).

    Raises
    ------
    ValueError
        If the content is not a valid IDX file (bad magic number or type code, truncated, trailing
        bytes); the message starts with ``"corrupt IDX file <path>"``.
    """
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            # A cut-off download typically ends up here.
            raise _corrupt(path, f"gzip stream is damaged or truncated ({exc})") from exc
    if len(data) < 4:
        raise _corrupt(path, f"only {len(data)} byte(s), too short for the 4-byte magic number")
    if data[0] != 0 or data[1] != 0:
        raise _corrupt(
            path,
            f"bad magic number 0x{data[:4].hex()} (the first two bytes must be zero); "
            "this is not an IDX file",
        )
    code, ndim = data[2], data[3]
    if code not in IDX_DTYPES:
        known = ", ".join(f"0x{c:02X}" for c in IDX_DTYPES)
        raise _corrupt(path, f"unknown type code 0x{code:02X} in the magic number (known codes: {known})")
    header_len = 4 + 4 * ndim
    if len(data) < header_len:
        raise _corrupt(path, f"truncated header: {ndim} dimension sizes declared but the file has {len(data)} bytes")
    shape = tuple(int(d) for d in np.frombuffer(data, dtype=">i4", count=ndim, offset=4))
    if any(d < 0 for d in shape):
        raise _corrupt(path, f"negative dimension size in the {ndim}-dimensional shape {_shape_text(shape)}")
    dtype = IDX_DTYPES[code]
    n_values = math.prod(shape)  # Python ints: no overflow even for absurd headers
    expected = header_len + n_values * dtype.itemsize
    # A wrong dimension count (byte 3) shows up as a size mismatch; say how many were declared.
    declared = f"the header declares {ndim} dimension(s), shape {_shape_text(shape)} of {dtype.newbyteorder('=').name}"
    if len(data) < expected:
        raise _corrupt(
            path, f"truncated data: {declared}, which needs {_bytes_text(expected)} bytes, the file has {len(data)}"
        )
    if len(data) > expected:
        raise _corrupt(
            path,
            f"{len(data) - expected} byte(s) of trailing garbage: {declared}, which needs exactly {expected} bytes",
        )
    values = np.frombuffer(data, dtype=dtype, count=n_values, offset=header_len)
    # astype copies: writable, native-endian, and the file's bytes are not kept alive.
    return values.astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def write_idx(path: PathLike, array: np.ndarray, *, compress: bool | None = None) -> None:
    """Write ``array`` to ``path`` in IDX format.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file; overwritten if it exists.
    array : array-like
        At most 255 dimensions, each below ``2**31``, of a dtype IDX stores (``uint8``, ``int8``, ``int16``,
        ``int32``, ``float32``, ``float64``); nothing is cast, so convert ``int64`` labels first.
    compress : bool or None, default None
        Gzip-compress the file; ``None`` compresses exactly when the name ends in ``.gz``.
    """
    arr = np.asarray(array)
    code = _CODE_FOR_KIND.get((arr.dtype.kind, arr.dtype.itemsize))
    if code is None:
        allowed = ", ".join(dt.newbyteorder("=").name for dt in IDX_DTYPES.values())
        raise TypeError(f"array has dtype {arr.dtype}, which IDX cannot store; convert it to one of: {allowed}.")
    if arr.ndim > 255:
        raise ValueError(f"array has {arr.ndim} dimensions; IDX stores at most 255.")
    if any(d > _INT32_MAX for d in arr.shape):
        raise ValueError(f"array shape {arr.shape} has a dimension that does not fit in a 32-bit IDX header.")
    header = bytes([0, 0, code, arr.ndim]) + np.asarray(arr.shape, dtype=">i4").tobytes()
    payload = header + np.ascontiguousarray(arr, dtype=IDX_DTYPES[code]).tobytes()
    if compress is None:
        compress = os.fspath(path).endswith(".gz")
    if compress:
        # mtime=0 keeps the output byte-identical across runs.
        payload = gzip.compress(payload, mtime=0)
    with open(path, "wb") as fh:
        fh.write(payload)
