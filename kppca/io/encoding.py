"""Values <-> JSON + tensors: plain values, tensors, and nested objects by registered name.

Tags (:data:`TAGS`) mark what JSON cannot hold directly; loading builds only what :func:`kppca.load` lists.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from typing import Any

import numpy as np
import torch

from .._param_validation import (
    Integral, Interval, InvalidParameterError, device_from_spec, validate_parameter_constraints,
)
from .format import FORMAT_VERSION, CustomKernelError, ModelFileError, invalid
from .registry import lookup, name_of, registered, wrap_custom_kernel
from .record import FittedState, InvalidStateError
from .specs import field_constraints, init_params, is_fitted_name, is_record, stored_state, validate_state

TAGS = (
    "__tensor__", "__ndarray__", "__ndarray_str__", "__numpy_scalar__", "__tuple__", "__dict__", "__items__",
    "__dtype__", "__device__", "__float__", "__object__", "__custom_kernel__", "__slice__",
)  # fmt: skip
#: Devices whose tensors hold data (a model file never names "meta" or other placeholders).
_DATA_DEVICES = ("cpu", "cuda", "mps", "xpu")
_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "bool")


def fitted_names(obj: Any, params: dict[str, Any]) -> list[str]:
    """The state to store: the fields of ``obj``'s record (none for a record, a level or a kernel, whose
    constructor arguments are all there is); any other public fitted attribute is refused."""
    record_type = getattr(type(obj), "_state_type", None)
    undeclared = [k for k in getattr(obj, "__dict__", {}) if k not in params and k != "state_" and is_fitted_name(k)]
    if undeclared and not is_record(obj):
        where = f"{type(obj).__name__}'s fitted-state record ({record_type.__name__})" if record_type else \
            f"{type(obj).__name__}, which keeps no fitted state"
        raise TypeError(
            f"cannot save {type(obj).__name__}: its fitted attribute(s) {', '.join(map(repr, undeclared))} are "
            f"not declared in {where}; model files hold only declared state."
        )
    return list(stored_state(obj) or {}) if record_type is not None else []


class Encoder:
    """Turns Python values into JSON, collecting tensors into ``self.tensors`` (CPU copies)."""

    def __init__(self, allow_custom_kernel: bool):
        self.allow_custom_kernel = allow_custom_kernel
        self.tensors: dict[str, torch.Tensor] = {}

    def encode(self, value: Any, where: str) -> Any:
        if isinstance(value, torch.Tensor):
            return self._tensor(value, where)
        if isinstance(value, np.ndarray):
            return self._ndarray(value, where)
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
            if all(isinstance(k, str) for k in value):
                return {"__dict__": {k: self.encode(v, f"{where}/{k}") for k, v in value.items()}}
            return {"__items__": [[self.encode(k, f"{where}/key{i}"), self.encode(v, f"{where}/{i}")]
                                  for i, (k, v) in enumerate(value.items())]}
        if isinstance(value, slice):  # e.g. the columns of a ColumnKernel
            return {"__slice__": [self.encode(v, f"{where}/{i}") for i, v in
                                  enumerate((value.start, value.stop, value.step))]}
        if isinstance(value, torch.dtype):
            return {"__dtype__": str(value).replace("torch.", "")}
        if isinstance(value, torch.device):
            return {"__device__": str(value)}
        return self._object(value, where)

    def _tensor(self, value: torch.Tensor, where: str) -> dict:
        # A CPU copy, bits kept exactly. The layout is recorded because matmuls round differently on different
        # layouts (e.g. LAPACK's column-major eigenvectors), and round trips must be bit-exact.
        copy = value.detach().cpu().clone()
        self.tensors[where] = copy.contiguous()
        if copy.is_contiguous():
            return {"__tensor__": where}
        return {"__tensor__": where, "strides": list(copy.stride())}

    def _ndarray(self, value: np.ndarray, where: str) -> dict:
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

    def _object(self, value: Any, where: str) -> dict:
        name = name_of(type(value))
        if name is not None:
            params, state = self.encode_parts(value, where, where)
            return {"__object__": name, "params": params, "state": state}
        kind = getattr(value, "_model_file_kind", None)  # "kernel" or "feature map": set by their base classes
        if kind == "kernel" or (kind is None and callable(value) and not isinstance(value, type)):
            fn = getattr(value, "fn", value)  # a wrapped callable (CallableKernel) by its function's name
            label = getattr(fn, "__name__", type(fn).__name__)
            if not self.allow_custom_kernel:
                raise CustomKernelError(
                    f"cannot save {where}: the kernel {label!r} is user code, and model files never store code "
                    "(loading them must not run anything). Save with allow_callable_kernel=True to store the model "
                    "without it, then supply it again when loading: kppca.load(path, kernel=...)."
                )
            return {"__custom_kernel__": label, "wrapped": kind == "kernel"}
        if kind == "feature map":
            raise TypeError(
                f"cannot save {where}: the feature map {type(value).__name__} is not one of kppca's feature maps "
                "(kppca.features.FEATURE_MAPS); model files store feature maps by name, never code."
            )
        raise TypeError(
            f"cannot save {where}: values of type {type(value).__name__} are not supported in model files "
            "(tensors, numpy arrays, numbers, strings, lists, tuples, dicts, kernels, feature maps and "
            "classes registered with kppca.io.register are)."
        )

    def encode_parts(self, obj: Any, params_where: str, state_where: str) -> tuple[dict, dict]:
        """The encoded constructor parameters and fitted state of ``obj`` (tensors named by the prefixes)."""
        params = init_params(obj)
        encoded = {}
        for key, value in params.items():
            if key == "random_state" and not (value is None or isinstance(value, numbers.Integral)):
                warnings.warn(
                    f"{params_where}/random_state of {type(obj).__name__} is a {type(value).__name__}, which a model "
                    "file cannot store; it is saved as None, so the loaded model's random draws (and a refit) "
                    "differ from this one's. Pass an int random_state to make the file reproducible.",
                    UserWarning, stacklevel=2)
                value = None
            encoded[key] = self.encode(value, f"{params_where}/{key}")
        state = {k: self.encode(getattr(obj, k), f"{state_where}/{k}") for k in fitted_names(obj, params)}
        return encoded, state


class Decoder:
    """Inverse of :class:`Encoder`; every unexpected shape raises :class:`~kppca.io.format.ModelFileError`."""

    def __init__(self, path: Any, tensors: dict[str, torch.Tensor], device: torch.device | None, kernel: Any,
                 *, override_device: bool = False, version: int = FORMAT_VERSION):
        self.path, self.tensors, self.device, self.kernel = path, tensors, device, kernel
        self.version = version  # the file's format version (older ones stored derived values too)
        self.override_device = override_device  # map_location: every estimator's _device becomes ``device``
        self.used_kernel = False
        self.in_params = False  # decoding constructor parameters (where estimators may be unfitted)

    def fail(self, what: str):
        return invalid(self.path, what)

    def tensor(self, name: Any) -> torch.Tensor:
        if not isinstance(name, str) or name not in self.tensors:
            raise self.fail(f"it refers to a tensor {name!r} that the file does not contain")
        T = self.tensors[name]
        return T if self.device is None else T.to(self.device)

    def restride(self, T: torch.Tensor, strides: Any, name: str) -> torch.Tensor:
        """A copy of ``T`` with the saved memory layout (a dense permutation of the dimensions)."""
        stride = Interval(Integral, 1, None, closed="left")
        ok = isinstance(strides, list) and len(strides) == T.ndim and all(stride.is_satisfied_by(s) for s in strides)
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
        tag = next((t for t in TAGS if t in value), None)
        if tag is None:
            raise self.fail(f"an untagged JSON object with keys {sorted(value)}")
        body = value[tag]
        if tag == "__tensor__":
            T = self.tensor(body)
            return T if "strides" not in value else self.restride(T, value["strides"], body)
        if tag == "__ndarray__":
            return self.tensor(body).cpu().numpy()
        if tag == "__object__":
            cls = lookup(body) if isinstance(body, str) else None
            if cls is None:
                raise self.fail(f"unknown object type {body!r} (known: the classes registered with kppca.io.register"
                                f", e.g. {', '.join(sorted(registered(components=True))[:6])})")
            return self.build(cls, value.get("params"), value.get("state"), body)
        if tag == "__custom_kernel__":
            if self.kernel is None:
                raise ModelFileError(
                    f"{self.path} was saved without its custom kernel {body!r} (code is never "
                    "stored in model files); pass it again: kppca.load(path, kernel=your_kernel)."
                )
            self.used_kernel = True
            return wrap_custom_kernel(self.kernel) if value.get("wrapped") else self.kernel
        return self._plain(tag, body, value)

    def _plain(self, tag: str, body: Any, value: dict) -> Any:
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
            inner = self.decode(value.get("value"))
            if not isinstance(inner, (int, float)):
                raise self.fail(f"a numpy scalar holding {inner!r}")
            return dtype.type(inner)
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
        if tag == "__items__":
            if not isinstance(body, list) or not all(isinstance(p, list) and len(p) == 2 for p in body):
                raise self.fail("a dict whose items are not [key, value] pairs")
            try:
                return {self.decode(k): self.decode(v) for k, v in body}
            except TypeError as exc:  # an unhashable key
                raise self.fail(f"a dict with a bad key ({exc})") from exc
        if tag == "__slice__":
            ok = isinstance(body, list) and len(body) == 3
            if not ok or not all(v is None or Interval(Integral, None, None).is_satisfied_by(v) for v in body):
                raise self.fail(f"a slice that is not [start, stop, step] of ints or nulls: {body!r}")
            return slice(*body)
        if tag == "__dtype__":
            if body not in _DTYPES:
                raise self.fail(f"unknown dtype {body!r}")
            return getattr(torch, body)
        # __device__: map_location when given, else the saved device, checked to exist here
        try:
            device = torch.device(str(body))
        except (RuntimeError, ValueError) as exc:
            raise self.fail(f"unknown device {str(body)[:40]!r}") from exc
        if device.type not in _DATA_DEVICES:  # e.g. "meta": tensors without data
            raise self.fail(f"device {str(device)!r} holds no data (one of {', '.join(_DATA_DEVICES)} is expected)")
        if self.override_device:
            return self.device
        try:
            return device_from_spec(device)
        except InvalidParameterError as exc:
            raise ModelFileError(
                f"{self.path} holds a model saved on {device}, which is not available here; load it with "
                "kppca.load(path, map_location='cpu')."
            ) from exc

    def attributes(self, encoded: Any, what: str) -> dict[str, Any]:
        """Decode a ``name -> value`` JSON object whose names become attribute or parameter names."""
        if not isinstance(encoded, dict):
            raise self.fail(f"{what} is not a JSON object")
        for key in encoded:
            if not key.isidentifier() or key.startswith("__"):
                raise self.fail(f"{what} has an invalid name {key!r}")
        decoded = {}
        for key, value in encoded.items():
            try:
                decoded[key] = self.decode(value)
            except ModelFileError as exc:  # a nested object: say which attribute holds it
                if getattr(exc, "reason", None) is None or not isinstance(value, dict) or "__object__" not in value:
                    raise
                raise self.fail(f"{what}, {key!r}: {exc.reason}") from exc
        return decoded

    def record(self, cls: type[FittedState], state: dict[str, Any], name: str, owner: str | None = None) -> FittedState:
        """The record ``cls(**state)`` of ``owner`` (``state`` of an older format version converted first)."""
        owner = owner or cls.__name__
        if self.version < FORMAT_VERSION:
            state = cls.from_old_state(state)
        unknown = sorted(set(state) - set(cls.constraints()))
        if unknown:
            raise self.fail(f"the state of {name} holds {', '.join(map(repr, unknown))}, which {owner} does "
                            "not declare as fitted state (a file may hold only declared attributes)")
        missing = sorted(set(cls.constraints()) - set(state) - {f.name for f in dataclasses.fields(cls)
                                                                    if f.default is not dataclasses.MISSING})
        if missing:
            raise self.fail(f"the state of {name} lacks {', '.join(map(repr, missing))} (required fitted state of "
                            f"{owner})")
        try:
            return cls(**state)
        except InvalidStateError as exc:
            raise self.fail(f"{name}: {exc}") from exc

    def build(self, cls: type, encoded_params: Any, encoded_state: Any, name: str) -> Any:
        """An instance of ``cls``: ``cls(**params)``, checked by the class's declarations, then its record.

        ``_retired_params`` (no longer taken) are dropped when None, their former default. Only an estimator
        among another's parameters (a template) may be unfitted.
        """
        in_params = self.in_params
        try:
            self.in_params = True
            params = self.attributes(encoded_params, f"the parameters of {name}")
            self.in_params = False
            state = self.attributes(encoded_state, f"the state of {name}")
        finally:
            self.in_params = in_params
        record_type = getattr(cls, "_state_type", None)
        if self.version < FORMAT_VERSION and record_type is None and not params and dataclasses.is_dataclass(cls):
            params, state = state, {}  # version 3 stored a record or a level by its fields, as state
        retired = getattr(cls, "_retired_params", ())
        params = {k: v for k, v in params.items() if not (k in retired and v is None)}
        estimator = hasattr(cls, "get_params") and name_of(cls) is not None
        if record_type is None and state:
            raise self.fail(f"the state of {name} holds {', '.join(map(repr, sorted(state)))}, but {cls.__name__} "
                            "keeps no fitted state")
        if record_type is not None and estimator and not state and not in_params:
            self.record(record_type, state, name, cls.__name__)  # unfitted: the record names what is missing
        if isinstance(cls, type) and issubclass(cls, FittedState):
            return self.record(cls, params, name)
        if field_constraints(cls) is not None:  # a plain dataclass: its fields as declared beside them
            reason = validate_state(cls, params, {})
            if reason:
                raise self.fail(reason)
        try:
            obj = cls(**params)
            if hasattr(obj, "get_params") and hasattr(cls, "_parameter_constraints"):
                # The same declared constraints as fit: a file cannot smuggle in values fit would refuse.
                validate_parameter_constraints(cls._parameter_constraints, obj.get_params(deep=False), cls.__name__)
        except (TypeError, ValueError) as exc:
            raise self.fail(f"bad parameters for {name} ({exc})") from exc
        if state:
            record = self.record(record_type, state, name, cls.__name__)
            reason = validate_state(cls, record.stored(), params)  # shapes that name parameters ("n_features")
            if reason:
                raise self.fail(reason)
            obj.__dict__["state_"] = record
        return obj
