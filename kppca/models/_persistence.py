"""Safe model files: tensors in safetensors, everything else as JSON in its header.

A model file is one `safetensors <https://github.com/huggingface/safetensors>`_
file. Its header metadata holds a single JSON document (key ``"kppca"``)::

    {"format": "kppca-model", "format_version": 1, "kppca_version": "0.1.0",
     "class": "DualPPCA", "params": {...}, "state": {...}}

``params`` are the constructor parameters (``get_params(deep=False)``),
``state`` every other instance attribute except the cache (
``BasePPCA._cache_attribute``, a :class:`~kppca._cache.LazyCache`). Values are encoded by type (:func:`_encode`):
JSON scalars, lists, tagged dicts for tuples/dicts/dtypes/devices/numpy values,
``{"__tensor__": name}`` for tensors (stored bit-exactly in the safetensors
body), and ``{"__object__": name, "params": ..., "state": ...}`` for kernels,
feature maps and the kernel centerer, where ``name`` is a key of a fixed
table (:func:`_object_classes`). Loading therefore never imports or executes
anything named by the file: it can only build the classes of these tables
and fill them with tensors, numbers and strings. Anything else is rejected
with :class:`ModelFileError`.
"""

from __future__ import annotations

import inspect
import json
import math
import numbers
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._param_validation import validate_parameter_constraints

FORMAT_NAME = "kppca-model"
#: Version of the layout above; files with a larger version are refused (written by a newer kppca).
FORMAT_VERSION = 1
#: The safetensors metadata key holding the JSON document.
METADATA_KEY = "kppca"
_REQUIRED_FIELDS = ("format", "format_version", "kppca_version", "class", "params", "state")
_TAGS = (
    "__tensor__", "__ndarray__", "__ndarray_str__", "__numpy_scalar__", "__tuple__", "__dict__",
    "__dtype__", "__device__", "__float__", "__object__", "__custom_kernel__",
)  # fmt: skip


class ModelFileError(ValueError):
    """A file that is not a valid kppca model file: not safetensors, corrupt, truncated, or unknown content.

    The message names the file and what is wrong with it.
    """


class CustomKernelError(ValueError):
    """Raised by ``save`` for a model whose kernel is user code (a callable or a ``Kernel`` subclass)."""


def _model_classes() -> dict[str, type]:
    # Imported here: _persistence is imported by _base, which dual/primal import.
    from .dual import DualPPCA
    from .primal import PrimalPPCA

    return {"PrimalPPCA": PrimalPPCA, "DualPPCA": DualPPCA}


def _object_classes() -> dict[str, type]:
    """The only classes (besides the models) a file may ask for, by their names in model files."""
    from ..features.base import FeatureMapKernel
    from ..features.registry import FEATURE_MAPS
    from ..kernels.centering import KernelCenterer
    from ..kernels.registry import KERNELS

    table: dict[str, type] = {f"kernel:{name}": cls for name, cls in KERNELS.items()}
    table.update({f"feature_map:{name}": cls for name, cls in FEATURE_MAPS.items()})
    table["kernel:feature_map"] = FeatureMapKernel
    table["kernel_centerer"] = KernelCenterer
    return table


def _init_params(obj: Any) -> dict[str, Any]:
    """Constructor parameters of a registered object (scikit-learn estimators or ``KernelCenterer``)."""
    if hasattr(obj, "get_params"):
        return obj.get_params(deep=False)
    # KernelCenterer (not an estimator): the same convention, arguments stored under their names.
    names = [p for p in inspect.signature(type(obj).__init__).parameters if p != "self"]
    return {name: getattr(obj, name) for name in names}


# ----------------------------------------------------------------------------- encoding
class _Encoder:
    """Turns Python values into JSON, collecting tensors into ``self.tensors``."""

    def __init__(self, allow_custom_kernel: bool):
        self.allow_custom_kernel = allow_custom_kernel
        self.tensors: dict[str, torch.Tensor] = {}
        self.names = {cls: name for name, cls in _object_classes().items()}

    def encode(self, value: Any, where: str) -> Any:
        from ..features.base import FeatureMap
        from ..kernels.base import Kernel

        if isinstance(value, torch.Tensor):
            # A CPU copy (the caller's tensors are never touched); dtype and bits are kept
            # exactly. clone() keeps a dense layout such as LAPACK's column-major vectors;
            # the layout is recorded because matmuls round differently on different
            # layouts, and round trips must be bit-exact. safetensors stores row-major.
            copy = value.detach().cpu().clone()
            self.tensors[where] = copy.contiguous()
            if copy.is_contiguous():
                return {"__tensor__": where}
            return {"__tensor__": where, "strides": list(copy.stride())}
        if isinstance(value, np.ndarray):
            if value.dtype.kind in "OUS":
                items = value.ravel().tolist()
                if not all(isinstance(v, str) for v in items):
                    raise TypeError(f"cannot save {where}: an object array whose entries are not all strings.")
                kind = "object" if value.dtype.kind == "O" else "str"
                return {"__ndarray_str__": items, "shape": list(value.shape), "dtype": kind}
            if value.dtype.kind not in "biuf":
                raise TypeError(f"cannot save {where}: numpy arrays of dtype {value.dtype} are not supported.")
            self.tensors[where] = torch.from_numpy(np.ascontiguousarray(value).copy())
            return {"__ndarray__": where}
        if isinstance(value, np.generic) and not isinstance(value, (np.str_, np.bytes_)):
            if value.dtype.kind not in "biuf":
                raise TypeError(f"cannot save {where}: numpy scalars of dtype {value.dtype} are not supported.")
            return {"__numpy_scalar__": value.dtype.str, "value": self.encode(value.item(), where)}
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, float):
            # JSON has no NaN/inf; repr() of a float round-trips exactly, json keeps it.
            return value if math.isfinite(value) else {"__float__": repr(value)}
        if isinstance(value, list):
            return [self.encode(v, f"{where}/{i}") for i, v in enumerate(value)]
        if isinstance(value, tuple):
            return {"__tuple__": [self.encode(v, f"{where}/{i}") for i, v in enumerate(value)]}
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                raise TypeError(f"cannot save {where}: a dict with non-string keys.")
            return {"__dict__": {k: self.encode(v, f"{where}/{k}") for k, v in value.items()}}
        if isinstance(value, torch.dtype):
            return {"__dtype__": str(value).replace("torch.", "")}
        if isinstance(value, torch.device):
            return {"__device__": str(value)}
        name = self.names.get(type(value))
        if name is not None:
            return self.encode_object(value, name, where)
        if isinstance(value, Kernel) or (callable(value) and not isinstance(value, (type, FeatureMap))):
            return self.encode_custom_kernel(value, where)
        if isinstance(value, FeatureMap):
            raise TypeError(
                f"cannot save {where}: the feature map {type(value).__name__} is not one of kppca's feature maps "
                "(kppca.features.FEATURE_MAPS); model files store feature maps by name, never code."
            )
        raise TypeError(
            f"cannot save {where}: values of type {type(value).__name__} are not supported in model files "
            "(tensors, numpy arrays, numbers, strings, lists, tuples, dicts, kernels and feature maps are)."
        )

    def encode_object(self, obj: Any, name: str, where: str) -> dict:
        params = _init_params(obj)
        encoded_params = {}
        for key, value in params.items():
            if key == "random_state" and not (value is None or isinstance(value, numbers.Integral)):
                value = None  # a Generator's state is not stored (see BasePPCA.save)
            encoded_params[key] = self.encode(value, f"{where}/{key}")
        state = {k: self.encode(v, f"{where}/{k}") for k, v in vars(obj).items() if k not in params}
        return {"__object__": name, "params": encoded_params, "state": state}

    def encode_custom_kernel(self, value: Any, where: str) -> dict:
        from ..kernels.base import CallableKernel

        fn = value.fn if isinstance(value, CallableKernel) else value
        label = getattr(fn, "__name__", type(fn).__name__)
        if not self.allow_custom_kernel:
            raise CustomKernelError(
                f"cannot save {where}: the kernel {label!r} is user code, and model files never store code "
                "(loading them must not run anything). Save with allow_callable_kernel=True to store the model "
                "without it, then supply it again when loading: kppca.load(path, kernel=...)."
            )
        from ..kernels.base import Kernel

        return {"__custom_kernel__": label, "wrapped": isinstance(value, Kernel)}


# ----------------------------------------------------------------------------- decoding
class _Decoder:
    """Inverse of :class:`_Encoder`; every unexpected shape raises :class:`ModelFileError`."""

    def __init__(self, path: Path, tensors: Any, device: torch.device | None, kernel: Any):
        self.path = path
        self.file = tensors  # a safetensors handle
        self.keys = set(tensors.keys())
        self.device = device
        self.kernel = kernel
        self.used_kernel = False
        self.classes = _object_classes()

    def fail(self, what: str) -> ModelFileError:
        return ModelFileError(f"{self.path} is not a valid kppca model file: {what}.")

    def tensor(self, name: Any) -> torch.Tensor:
        if not isinstance(name, str) or name not in self.keys:
            raise self.fail(f"it refers to a tensor {name!r} that the file does not contain")
        try:
            T = self.file.get_tensor(name)
        except Exception as exc:  # corrupt body
            raise self.fail(f"tensor {name!r} cannot be read ({exc})") from exc
        return T if self.device is None else T.to(self.device)

    def restride(self, T: torch.Tensor, strides: Any, name: str) -> torch.Tensor:
        """A copy of ``T`` with the saved memory layout (a dense permutation of the dimensions)."""
        ok = isinstance(strides, list) and len(strides) == T.ndim and all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in strides
        )
        if ok:  # dense and non-overlapping: sorted by stride, each is the product of the smaller dims
            expected = 1
            for dim in sorted(range(T.ndim), key=lambda d: (strides[d], T.shape[d])):
                ok = ok and (strides[dim] == expected or T.shape[dim] <= 1)
                expected *= max(T.shape[dim], 1)
        if not ok:
            raise self.fail(f"tensor {name!r} has an invalid memory layout {strides!r}")
        return torch.empty_strided(T.shape, strides, dtype=T.dtype, device=T.device).copy_(T)

    def decode(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict):
            raise self.fail(f"unexpected JSON value {value!r}")
        tag = next((t for t in _TAGS if t in value), None)
        if tag is None:
            raise self.fail(f"an untagged JSON object with keys {sorted(value)}")
        body = value[tag]
        if tag == "__tensor__":
            T = self.tensor(body)
            return T if "strides" not in value else self.restride(T, value["strides"], body)
        if tag == "__ndarray__":
            return self.tensor(body).cpu().numpy()
        if tag == "__ndarray_str__":
            if not isinstance(body, list) or not all(isinstance(v, str) for v in body):
                raise self.fail("a string array with non-string entries")
            arr = np.array(body, dtype=object if value.get("dtype") == "object" else str)
            try:
                return arr.reshape([int(s) for s in value.get("shape", [len(body)])])
            except (TypeError, ValueError) as exc:
                raise self.fail(f"a string array with a bad shape ({exc})") from exc
        if tag == "__numpy_scalar__":
            try:
                dtype = np.dtype(str(body))
            except TypeError as exc:
                raise self.fail(f"unknown numpy dtype {body!r}") from exc
            if dtype.kind not in "biuf":
                raise self.fail(f"numpy scalars of dtype {dtype} are not allowed")
            return dtype.type(self.decode(value.get("value")))
        if tag == "__float__":
            if body not in ("nan", "inf", "-inf"):
                raise self.fail(f"bad special float {body!r}")
            return float(body)
        if tag == "__tuple__":
            if not isinstance(body, list):
                raise self.fail("a tuple that is not a list")
            return tuple(self.decode(v) for v in body)
        if tag == "__dict__":
            if not isinstance(body, dict):
                raise self.fail("a dict that is not a JSON object")
            return {k: self.decode(v) for k, v in body.items()}
        if tag == "__dtype__":
            if body not in ("float64", "float32", "float16", "bfloat16", "int64", "int32", "bool"):
                raise self.fail(f"unknown dtype {body!r}")
            return getattr(torch, body)
        if tag == "__device__":
            try:
                return torch.device(str(body))
            except RuntimeError as exc:
                raise self.fail(f"unknown device {body!r}") from exc
        if tag == "__object__":
            return self.decode_object(value)
        return self.decode_custom_kernel(value)  # "__custom_kernel__"

    def attributes(self, encoded: Any, what: str) -> dict[str, Any]:
        """Decode a ``name -> value`` JSON object whose names become attribute or parameter names."""
        if not isinstance(encoded, dict):
            raise self.fail(f"{what} is not a JSON object")
        for key in encoded:
            if not key.isidentifier() or key.startswith("__"):
                raise self.fail(f"{what} has an invalid name {key!r}")
        return {key: self.decode(v) for key, v in encoded.items()}

    def decode_object(self, value: dict) -> Any:
        name = value["__object__"]
        cls = self.classes.get(name) if isinstance(name, str) else None
        if cls is None:
            raise self.fail(f"unknown object type {name!r} (known: {', '.join(sorted(self.classes))})")
        params = self.attributes(value.get("params"), f"the parameters of {name}")
        state = self.attributes(value.get("state"), f"the state of {name}")
        try:
            obj = cls(**params)
        except TypeError as exc:
            raise self.fail(f"bad parameters for {name}: {exc}") from exc
        self.assign(obj, state, name)
        return obj

    def assign(self, obj: Any, state: dict[str, Any], what: str) -> None:
        """Set the fitted attributes; names of methods or properties of the class are refused."""
        for key, value in state.items():
            existing = getattr(type(obj), key, None)
            if callable(existing) or isinstance(existing, property):
                raise self.fail(f"the state of {what} would replace its method or property {key!r}")
            setattr(obj, key, value)

    def decode_custom_kernel(self, value: dict) -> Any:
        from ..kernels.registry import as_kernel

        if self.kernel is None:
            raise ModelFileError(
                f"{self.path} was saved without its custom kernel {value['__custom_kernel__']!r} (code is never "
                "stored in model files); pass it again: kppca.load(path, kernel=your_kernel)."
            )
        self.used_kernel = True
        return as_kernel(self.kernel) if value.get("wrapped") else self.kernel


def _cache_attributes() -> tuple[str, ...]:
    from ._base import BasePPCA

    return (BasePPCA._cache_attribute,)


# ----------------------------------------------------------------------------- public functions
def save_model(model: Any, path: str | Path, *, allow_callable_kernel: bool = False) -> None:
    """Write a fitted model to ``path`` (see :meth:`kppca.DualPPCA.save`)."""
    from safetensors.torch import save as safetensors_bytes

    from .. import __version__

    cls_name = type(model).__name__
    if _model_classes().get(cls_name) is not type(model):
        raise TypeError(f"only PrimalPPCA and DualPPCA models can be saved, not {cls_name}.")
    encoder = _Encoder(allow_callable_kernel)
    params = model.get_params(deep=False)
    skip = set(params) | set(_cache_attributes())
    encoded_params = {}
    for key, value in params.items():
        if key == "random_state" and not (value is None or isinstance(value, numbers.Integral)):
            value = None  # Generators are not stored: documented in save()
        encoded_params[key] = encoder.encode(value, f"params/{key}")
    state = {k: encoder.encode(v, f"state/{k}") for k, v in vars(model).items() if k not in skip}
    document = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "kppca_version": __version__,
        "class": cls_name,
        "params": encoded_params,
        "state": state,
    }
    data = safetensors_bytes(encoder.tensors, metadata={METADATA_KEY: json.dumps(document)})
    Path(path).write_bytes(data)


def load_model(
    path: str | Path, *, map_location: str | torch.device | None = None, kernel: Any = None
) -> Any:
    """Load a model saved by :meth:`PrimalPPCA.save <kppca.PrimalPPCA.save>` / :meth:`DualPPCA.save <kppca.DualPPCA.save>`.

    Nothing in the file is executed or imported: it may only name the model
    classes and kppca's registered kernels and feature maps, filled with
    tensors, numbers and strings.

    Parameters
    ----------
    path : str or Path
    map_location : str or torch.device, optional
        Device for the tensors (e.g. ``"cpu"`` for a model saved on a GPU);
        default: the device the model was saved from.
    kernel : Kernel or callable, optional
        The custom kernel of a model saved with ``allow_callable_kernel=True``
        (required for such files, refused for the others).

    Returns
    -------
    PrimalPPCA or DualPPCA
        The class recorded in the file, fitted.

    Raises
    ------
    ModelFileError
        The file is not a kppca model file: another format (a PNG, an old
        pickle), truncated or corrupt, from a newer kppca, naming an unknown
        class, missing fields, or a custom-kernel file loaded without ``kernel=``.
    FileNotFoundError
        ``path`` does not exist.
    """
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file {str(path)!r} does not exist.")
    try:
        handle = safe_open(str(path), framework="pt", device="cpu")
    except Exception as exc:  # SafetensorError and friends: not safetensors, truncated, corrupt
        raise ModelFileError(
            f"{path} is not a kppca model file (not a readable safetensors file: {exc}). Models saved by "
            "earlier kppca versions (torch.save pickles) are not read, because unpickling can run code; "
            "refit and save again."
        ) from exc
    with handle as f:
        metadata = f.metadata() or {}
        if METADATA_KEY not in metadata:
            raise ModelFileError(f"{path} is a safetensors file but not a kppca model (no {METADATA_KEY!r} metadata).")
        try:
            document = json.loads(metadata[METADATA_KEY])
        except json.JSONDecodeError as exc:
            raise ModelFileError(f"{path} is not a valid kppca model file: its metadata is not JSON ({exc}).") from exc
        if not isinstance(document, dict):
            raise ModelFileError(f"{path} is not a valid kppca model file: its metadata is not a JSON object.")
        missing = [field for field in _REQUIRED_FIELDS if field not in document]
        if missing:
            raise ModelFileError(f"{path} is not a valid kppca model file: missing field(s) {', '.join(missing)}.")
        if document["format"] != FORMAT_NAME:
            raise ModelFileError(f"{path} is not a kppca model file (format {document['format']!r}).")
        version = document["format_version"]
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ModelFileError(f"{path} is not a valid kppca model file: bad format_version {version!r}.")
        if version > FORMAT_VERSION:
            raise ModelFileError(
                f"{path} was written by kppca {document['kppca_version']} in model-file format version {version}; "
                f"this kppca reads version {FORMAT_VERSION} and older: upgrade kppca."
            )
        classes = _model_classes()
        cls = classes.get(document["class"]) if isinstance(document["class"], str) else None
        if cls is None:
            raise ModelFileError(
                f"{path} is not a valid kppca model file: unknown model class {document['class']!r} "
                f"(known: {', '.join(classes)})."
            )
        if map_location is not None:
            device = torch.device(map_location)
        else:  # the tensors go back where the model lived
            saved = document["state"].get("_device") if isinstance(document["state"], dict) else None
            device = _Decoder(path, f, None, None).decode(saved) if isinstance(saved, dict) else None
            if device is not None and not isinstance(device, torch.device):
                raise ModelFileError(f"{path} is not a valid kppca model file: _device is not a device.")
        decoder = _Decoder(path, f, device, kernel)
        params = decoder.attributes(document["params"], "params")
        state = decoder.attributes(document["state"], "state")
    caches = set(_cache_attributes()) & set(state)
    if caches:
        raise ModelFileError(f"{path} is not a valid kppca model file: it stores caches {sorted(caches)}.")
    if "sigma2_" not in state:
        raise ModelFileError(f"{path} is not a valid kppca model file: it holds no fitted state.")
    if kernel is not None and not decoder.used_kernel:
        raise ValueError(
            f"kernel= is only for models saved with a custom kernel (allow_callable_kernel=True); {path} stores "
            "its kernel by name. Drop the kernel argument."
        )
    try:
        model = cls(**params)
        # The same declared constraints as fit: a file cannot smuggle in values fit would refuse.
        validate_parameter_constraints(cls._parameter_constraints, model.get_params(deep=False), cls.__name__)
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"{path} is not a valid kppca model file: bad parameters ({exc}).") from exc
    decoder.assign(model, state, cls.__name__)
    if map_location is not None:
        model._device = torch.device(map_location)
    return model
