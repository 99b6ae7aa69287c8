"""The vocabulary of declared state (what a record's or a stored dataclass's field may hold) and its checks."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch

from .._param_validation import (
    Constraint, Integral, Interval, InvalidParameterError, make_constraint, validate_parameter_constraints,
)

#: In a constraint list: the attribute may be absent from the state.
OPTIONAL = "optional"

_FLOATS = (torch.float32, torch.float64)
_DTYPE_KINDS = {
    "any_float": (torch.float16, torch.bfloat16, torch.float32, torch.float64),
    "own_float": _FLOATS,
    "int": (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8),
    "bool": (torch.bool,),
}


class StateConstraint(Constraint):
    """A constraint that may refer to other attributes of the same state (shapes, the model's dtype)."""

    def check(self, value: Any, context: "ShapeContext") -> str | None:
        """None when ``value`` satisfies the constraint, else why not."""
        raise NotImplementedError

    def is_satisfied_by(self, value: Any) -> bool:  # without a state: structure only
        return self.check(value, ShapeContext({})) is None


class ShapeContext:
    """The state being validated, the shape symbols bound so far, and the (enclosing) model's float dtype."""

    def __init__(self, state: dict[str, Any], dtype: torch.dtype | None = None):
        self.state = state
        self.symbols: dict[str, int] = {}
        own = state.get("_dtype")
        self.dtype = own if isinstance(own, torch.dtype) else dtype

    def check_shape(self, shape: tuple[int, ...], expected: tuple[Any, ...] | None) -> str | None:
        if expected is None:
            return None
        if len(shape) != len(expected):
            return f"has {len(shape)} dimension(s), expected {len(expected)}"
        bound: dict[str, int] = {}  # symbols bound by this shape, kept only if all of it matches
        for axis, (size, want) in enumerate(zip(shape, expected)):
            if want is None:
                continue
            if isinstance(want, str) and want in self.state:
                value = self.state[want]
                if not Interval(Integral, None, None).is_satisfied_by(value):
                    return f"has a size given by {want!r}, which is not an int"
                want_value, label = int(value), f"{want} = {int(value)}"
            elif isinstance(want, str):
                want_value = self.symbols.get(want, bound.setdefault(want, size))
                label = f"{want} = {want_value} (as elsewhere in the file)"
            else:
                want_value, label = int(want), str(want)
            if size != want_value:
                return f"has size {size} along axis {axis}, expected {label}"
        self.symbols.update(bound)
        return None


class TensorSpec(StateConstraint):
    """A torch tensor of a given dtype kind, shape and value range.

    Parameters
    ----------
    dtype : {"float", "own_float", "any_float", "int", "bool"} or torch.dtype, default "float"
        "float": float32/float64, and the model's ``_dtype`` when the state or an enclosing model's has one;
        "own_float": float32/float64 whatever the model's (a part computing in its own dtype).
    shape : tuple, optional
        Per axis an int, None (any size), the name of an int attribute of the state (``"n_samples_"``) or a
        free symbol (``"d"``), bound by its first use and equal wherever else it appears. None: any shape.
    ndim : int, optional
        Number of dimensions when ``shape`` is not given.
    finite : bool, default True
    positive, nonnegative : bool, default False
    """

    def __init__(self, dtype: Any = "float", shape: tuple | None = None, *, ndim: int | None = None,
                 finite: bool = True, positive: bool = False, nonnegative: bool = False):
        self.dtype, self.shape, self.ndim = dtype, None if shape is None else tuple(shape), ndim
        self.finite, self.positive, self.nonnegative = finite, positive, nonnegative

    def _dtype_ok(self, dtype: torch.dtype, context: ShapeContext) -> str | None:
        if isinstance(self.dtype, torch.dtype):
            return None if dtype == self.dtype else f"has dtype {dtype}, expected {self.dtype}"
        if self.dtype == "float":
            model = context.dtype
            if dtype not in _FLOATS or (model is not None and dtype != model):
                return f"has dtype {dtype}, expected the model's float dtype {model or 'float32/float64'}"
            return None
        return None if dtype in _DTYPE_KINDS[self.dtype] else f"has dtype {dtype}, expected {self.dtype}"

    def check(self, value: Any, context: ShapeContext) -> str | None:
        if not isinstance(value, torch.Tensor):
            return f"is a {type(value).__name__}, expected a tensor"
        if self.ndim is not None and value.ndim != self.ndim:
            return f"has {value.ndim} dimension(s), expected {self.ndim}"
        reason = self._dtype_ok(value.dtype, context) or context.check_shape(tuple(value.shape), self.shape)
        if reason or not (value.dtype.is_floating_point and value.numel()):
            return reason
        # Reductions, not elementwise masks: fit checks its record, so this runs on every fit (NaN propagates).
        low, high = value.amin(), value.amax()
        if self.finite and not bool(torch.isfinite(low) & torch.isfinite(high)):
            return "holds NaN or infinite values"
        if self.positive and not bool(low > 0):
            return "holds values <= 0 (all must be positive)"
        if self.nonnegative and not bool(low >= 0):
            return "holds negative values"
        return None

    def __str__(self) -> str:
        return f"a {self.dtype} tensor" + (f" of shape {self.shape}" if self.shape else "")


class ArraySpec(StateConstraint):
    """A numpy array (e.g. class labels or feature names).

    Parameters
    ----------
    kind : str, default "biufOU"
        Allowed numpy dtype kinds (``np.dtype.kind``); object arrays must hold strings or numbers.
    shape, ndim : as for :class:`TensorSpec`
    """

    def __init__(self, kind: str = "biufOU", shape: tuple | None = None, *, ndim: int | None = None):
        self.kind, self.shape, self.ndim = kind, None if shape is None else tuple(shape), ndim

    def check(self, value: Any, context: ShapeContext) -> str | None:
        if not isinstance(value, np.ndarray):
            return f"is a {type(value).__name__}, expected a numpy array"
        if value.dtype.kind not in self.kind:
            return f"has dtype {value.dtype}, expected one of the kinds {self.kind!r}"
        if self.ndim is not None and value.ndim != self.ndim:
            return f"has {value.ndim} dimension(s), expected {self.ndim}"
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            return "holds NaN or infinite values"
        return context.check_shape(value.shape, self.shape)

    def __str__(self) -> str:
        return "a numpy array"


def _check_one(value: Any, constraints: list[Any], context: ShapeContext) -> str | None:
    """None if ``value`` satisfies one of ``constraints`` (an instance of a listed class: by its class), else why."""
    for c in constraints:
        if isinstance(c, type) and isinstance(value, c):
            reason = validate_object(value, symbols=context.symbols, dtype=context.dtype)
            return None if reason is None else f"({type(value).__name__}): {reason}"
    reasons = []
    for c in constraints:
        if c == OPTIONAL:
            continue
        if isinstance(c, StateConstraint):
            reason = c.check(value, context)
        else:
            made = make_constraint(c)
            reason = None if made.is_satisfied_by(value) else f"must be {made}, got {_short(value)}"
        if reason is None:
            return None
        reasons.append(reason)
    return "; or ".join(reasons) or "has no allowed value"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _first_failure(checks: Iterable[tuple[str, Any, list[Any]]], context: ShapeContext) -> str | None:
    """``"<label> <reasons>"`` for the first ``(label, value, constraints)`` whose value fails, else None."""
    for label, value, constraints in checks:
        reason = _check_one(value, constraints, context)
        if reason:
            return f"{label} {reason}"
    return None


class ListOf(StateConstraint):
    """A list (or tuple, with ``as_tuple=True``) whose items each satisfy one of ``items``.

    ``length`` is an int, the name of an int attribute, or a free symbol.
    """

    def __init__(self, items: list[Any], *, length: Any = None, as_tuple: bool = False):
        self.items, self.length, self.tuple = list(items), length, as_tuple

    def check(self, value: Any, context: ShapeContext) -> str | None:
        if not isinstance(value, tuple if self.tuple else list):
            return f"is a {type(value).__name__}, expected a {'tuple' if self.tuple else 'list'}"
        if self.length is not None:
            reason = context.check_shape((len(value),), (self.length,))
            if reason:
                return "length " + reason.replace(" along axis 0", "")
        return _first_failure(((f"item {i}", item, self.items) for i, item in enumerate(value)), context)

    def __str__(self) -> str:
        return "a tuple" if self.tuple else "a list"


class TupleOf(StateConstraint):
    """A tuple (or list, with ``as_list=True``) with one constraint list per position."""

    def __init__(self, *positions: list[Any], as_list: bool = False):
        self.positions, self.list = positions, as_list

    def check(self, value: Any, context: ShapeContext) -> str | None:
        if not isinstance(value, list if self.list else tuple) or len(value) != len(self.positions):
            return f"is {_short(value)}, expected a sequence of {len(self.positions)} item(s)"
        items = ((f"item {i}", item, allowed) for i, (item, allowed) in enumerate(zip(value, self.positions)))
        return _first_failure(items, context)

    def __str__(self) -> str:
        return f"a tuple of {len(self.positions)}"


class DictOf(StateConstraint):
    """A dict whose keys and values each satisfy one of ``keys`` and ``values``."""

    def __init__(self, keys: list[Any], values: list[Any]):
        self.keys, self.values = list(keys), list(values)

    def check(self, value: Any, context: ShapeContext) -> str | None:
        if not isinstance(value, dict):
            return f"is a {type(value).__name__}, expected a dict"
        # Each key is checked before its value; both failures name the entry by its key.
        entries = ((f"entry {_short(key)}", part, allowed) for key, item in value.items()
                   for part, allowed in ((key, self.keys), (item, self.values)))
        return _first_failure(entries, context)

    def __str__(self) -> str:
        return "a dict"


class Record(StateConstraint):
    """A dict with exactly the keys of ``fields``, each value satisfying one of its constraints."""

    def __init__(self, fields: dict[str, list[Any]]):
        self.fields = dict(fields)

    def check(self, value: Any, context: ShapeContext) -> str | None:
        if not isinstance(value, dict) or set(value) != set(self.fields):
            return f"is {_short(value)}, expected a dict with the keys {sorted(self.fields)}"
        entries = ((f"entry {key!r}", value[key], allowed) for key, allowed in self.fields.items())
        return _first_failure(entries, context)

    def __str__(self) -> str:
        return f"a dict with the keys {sorted(self.fields)}"


class FloatDtype(Constraint):
    """``torch.float32`` or ``torch.float64`` (a model's computing dtype)."""

    def is_satisfied_by(self, value: Any) -> bool:
        return value in _FLOATS and isinstance(value, torch.dtype)

    def __str__(self) -> str:
        return "torch.float32 or torch.float64"


def is_fitted_name(key: str) -> bool:
    """A public fitted attribute, scikit-learn style: ``name_`` (no leading underscore)."""
    return key.endswith("_") and not key.startswith("_") and key.isidentifier()


def field_constraints(cls: type) -> dict[str, list[Any]] | None:
    """Field name -> constraints of a dataclass whose fields declare them (``metadata["constraints"]``), else None."""
    if not dataclasses.is_dataclass(cls):
        return None
    declared = {f.name: f.metadata["constraints"] for f in dataclasses.fields(cls) if "constraints" in f.metadata}
    return declared or None


def is_record(obj: Any) -> bool:
    """Whether ``obj`` is a fitted-state record (a :class:`kppca.io.record.FittedState`), by its interface."""
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type) and callable(getattr(obj, "stored", None)) \
        and callable(getattr(obj, "check", None))


def declared(cls: type) -> dict[str, list[Any]]:
    """The fitted-state declaration of ``cls``: its record's fields (``cls`` a record or its owner), else {}."""
    record = getattr(cls, "_state_type", None)
    return field_constraints(record if record is not None else cls) or {}


def stored_state(obj: Any) -> dict[str, Any] | None:
    """The fitted state of a record, or of an object that holds one (``state_``), as a dict; else None."""
    record = obj if is_record(obj) else getattr(obj, "__dict__", {}).get("state_")
    return record.stored() if is_record(record) else None


def init_params(obj: Any) -> dict[str, Any]:
    """Constructor arguments of ``obj``: ``get_params``, a record's or dataclass's fields, or ``__init__``'s."""
    if hasattr(obj, "get_params"):
        return obj.get_params(deep=False)
    if is_record(obj):
        return obj.stored()
    if dataclasses.is_dataclass(obj):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
    # e.g. KernelCenterer: arguments stored under their own names, as scikit-learn does.
    names = [p for p in inspect.signature(type(obj).__init__).parameters if p not in ("self", "args", "kwargs")]
    return {name: getattr(obj, name) for name in names}


def validate_object(obj: Any, *, unfitted: bool = False, symbols: dict[str, int] | None = None,
                    dtype: torch.dtype | None = None) -> str | None:
    """None if a live object is valid by its own class (parameters, then declared fitted state, recursively), else why.

    ``unfitted=True`` accepts a template; ``symbols`` and ``dtype`` are those of the enclosing object.
    """
    cls, record_type = type(obj), getattr(type(obj), "_state_type", None)
    if record_type is None and dataclasses.is_dataclass(obj):
        # A record, or a plain dataclass that files store (a level): its fields are all there is.
        return validate_state(cls, init_params(obj), {}, symbols, dtype) or check_relations(obj)
    params = init_params(obj)
    try:
        if hasattr(obj, "_check_params"):
            obj._check_params()
        if hasattr(obj, "get_params") and isinstance(getattr(cls, "_parameter_constraints", None), dict):
            validate_parameter_constraints(cls._parameter_constraints, params, cls.__name__)
    except (InvalidParameterError, ValueError, TypeError) as exc:
        return f"has an invalid parameter ({exc})"
    for key, value in params.items():
        # Kernels and feature maps (what has ``_check_params``) among the parameters, checked by their classes.
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if hasattr(item, "_check_params") and not isinstance(item, type):
                reason = validate_object(item, unfitted=True)
                if reason:
                    return f"parameter {key!r} ({type(item).__name__}): {reason}"
    state = stored_state(obj) or {}  # {}: an unfitted owner of a record, or an object that keeps none
    if unfitted and not state:
        return None
    return validate_state(cls, state, params, symbols, dtype) or check_relations(obj)


def check_relations(obj: Any) -> str | None:
    """The record's own ``check()`` (relations a declaration cannot express), run on valid state."""
    record = obj if is_record(obj) else getattr(obj, "__dict__", {}).get("state_")
    check = record.check if is_record(record) else None
    try:
        return check() if check is not None else None
    except Exception as exc:  # noqa: BLE001 - any failure of the check is a reason to refuse the state
        return f"has inconsistent fitted state ({type(exc).__name__}: {exc})"


def _holds_objects(value: Any) -> bool:
    """An object with attributes (a nested part), or a list of them."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return any(hasattr(v, "__dict__") and not isinstance(v, (torch.Tensor, np.ndarray, type)) for v in items)


def validate_state(cls: type, state: dict[str, Any], params: dict[str, Any],
                   symbols: dict[str, int] | None = None, dtype: torch.dtype | None = None) -> str | None:
    """None if ``state`` satisfies the fields :func:`declared` for ``cls`` (plain values first: they bind shapes)."""
    constraints = declared(cls)
    extra = sorted(set(state) - set(constraints))
    if extra:
        return (f"its state holds {', '.join(map(repr, extra))}, which {cls.__name__} does not declare as fitted "
                "state (a file may hold only declared attributes)")
    missing = sorted(k for k, allowed in constraints.items() if k not in state and OPTIONAL not in allowed)
    if missing:
        return f"its state lacks {', '.join(map(repr, missing))} (required fitted state of {cls.__name__})"
    context = ShapeContext({**params, **state}, dtype)
    context.symbols.update(symbols or {})
    for key in sorted((k for k in constraints if k in state), key=lambda k: _holds_objects(state[k])):
        reason = _check_one(state[key], constraints[key], context)
        if reason:
            return f"the fitted attribute {key!r} of {cls.__name__} {reason}"
    return None
