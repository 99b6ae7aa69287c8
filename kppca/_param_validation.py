"""Hyper-parameter validation in scikit-learn's vocabulary (``Interval``, ``StrOptions``), and the fit context.

Estimators declare ``_parameter_constraints`` (name -> allowed constraints, any one may hold) and wrap ``fit``
with :func:`fit_context`; function arguments use :func:`check_scalar` and :func:`check_sequence`. Besides
:class:`Constraint` objects, a constraint may be ``None``, ``"boolean"`` (not an int), ``"random_state"``,
``"dtype"``, ``"device"`` (one that exists here), ``callable`` or a type (an instance of it).
"""

from __future__ import annotations

import functools
import math
import numbers
from numbers import Integral, Real
from typing import Any, Callable, Iterable

import numpy as np
import torch

#: Largest seed a ``torch.Generator`` accepts (it stores an unsigned 64-bit integer).
MAX_SEED = 2**64 - 1


class InvalidParameterError(ValueError, TypeError):
    """A hyper-parameter has the wrong type or value (a ``ValueError`` and a ``TypeError``, as scikit-learn's)."""


class Constraint:
    """A predicate on a parameter value with a human-readable description."""

    def is_satisfied_by(self, value: Any) -> bool:
        raise NotImplementedError

    def __str__(self) -> str:
        raise NotImplementedError


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


class RealNotInt(Real):
    """Reals that are not integers (a fraction, distinguished from a count): scikit-learn's ``RealNotInt``."""


RealNotInt.register(float)


class Interval(Constraint):
    """Numbers of one type in an interval (scikit-learn's ``Interval``, stricter).

    ``type`` is ``Integral``, ``Real`` (ints too) or ``RealNotInt``; unlike scikit-learn, bools are never
    numbers and reals must be finite. A bound of None is unbounded.
    """

    def __init__(self, type: type, left: float | None, right: float | None, *, closed: str = "both"):
        if type not in (Integral, Real, RealNotInt):
            raise ValueError(f"unknown interval type {type!r}")
        if closed not in ("left", "right", "both", "neither"):
            raise ValueError(f"unknown closed={closed!r}")
        self.type, self.left, self.right, self.closed = type, left, right, closed

    def is_satisfied_by(self, value: Any) -> bool:
        if self.type is Integral:
            if not _is_int(value):
                return False
        elif not _is_real(value) or (self.type is RealNotInt and _is_int(value)) or not math.isfinite(value):
            return False
        if self.left is not None:
            if value < self.left or (value == self.left and self.closed in ("right", "neither")):
                return False
        if self.right is not None:
            if value > self.right or (value == self.right and self.closed in ("left", "neither")):
                return False
        return True

    def __str__(self) -> str:
        what = "an int" if self.type is Integral else "a float"
        lo = "-inf" if self.left is None else f"{self.left:g}"
        hi = "inf" if self.right is None else f"{self.right:g}"
        lb = "[" if self.closed in ("left", "both") and self.left is not None else "("
        rb = "]" if self.closed in ("right", "both") and self.right is not None else ")"
        return f"{what} in the range {lb}{lo}, {hi}{rb}"


class StrOptions(Constraint):
    """One of a fixed set of strings, compared exactly (scikit-learn's ``StrOptions``)."""

    def __init__(self, options: Iterable[str]):
        self.options = tuple(options)
        if not all(isinstance(o, str) for o in self.options):
            raise ValueError(f"StrOptions takes strings, got {self.options!r}")

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.options

    def __str__(self) -> str:
        return "one of {" + ", ".join(repr(o) for o in sorted(self.options, key=str)) + "}"


class _Predicate(Constraint):
    """The values for which ``test`` is true, described by ``description`` (the shorthands' constraints)."""

    def __init__(self, test: Callable[[Any], bool], description: str):
        self.test, self.description = test, description

    def is_satisfied_by(self, value: Any) -> bool:
        return bool(self.test(value))

    def __str__(self) -> str:
        return self.description


def _is_random_state(value: Any) -> bool:
    if value is None or isinstance(value, (np.random.Generator, np.random.RandomState, torch.Generator)):
        return True
    return _is_int(value) and 0 <= value <= MAX_SEED


_DTYPE_NAMES = {"float32": torch.float32, "float64": torch.float64}


def dtype_from_spec(dtype: Any) -> torch.dtype | None:
    """The torch dtype meant by a ``dtype`` parameter (None stays None), or raise."""
    if dtype is None:
        return None
    if isinstance(dtype, (str, torch.dtype)):  # "float32", "torch.float64", "double", torch.float32, ...
        key = str(dtype).replace("torch.", "").replace("numpy.", "")
        key = {"double": "float64", "float": "float32", "single": "float32"}.get(key, key)
    else:
        try:
            key = np.dtype(dtype).name
        except TypeError:
            key = None
    if key in _DTYPE_NAMES:
        return _DTYPE_NAMES[key]
    raise InvalidParameterError(
        f"dtype={dtype!r} is not supported; use 'float64', 'float32' or None (float32 data stay float32, "
        "everything else becomes float64)."
    )


def _parses(parse: Callable[[Any], Any]) -> Callable[[Any], bool]:
    """Whether ``parse`` accepts a value (it raises InvalidParameterError on the others)."""

    def test(value: Any) -> bool:
        try:
            parse(value)
        except InvalidParameterError:
            return False
        return True

    return test


def device_from_spec(device: Any) -> torch.device:
    """The torch device meant by a ``device`` parameter (None is the CPU), checked to exist here."""
    if device is None:
        return torch.device("cpu")
    if not isinstance(device, (str, torch.device)):
        raise InvalidParameterError(
            f"device must be None, a string such as 'cpu' or 'cuda:0', or a torch.device, got {device!r}."
        )
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise InvalidParameterError(
            f"device={device!r} is not a torch device name; use 'cpu', 'cuda' or 'cuda:<index>'."
        ) from exc
    if dev.type != "cpu":
        # A zero-size allocation is the one test that covers every reason a device is unusable
        # (torch built without CUDA, no driver, index out of range, ...).
        try:
            torch.empty(0, device=dev)
        except (RuntimeError, AssertionError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InvalidParameterError(
                f"device={device!r} is not available on this machine ({reason}); use device='cpu'."
            ) from exc
    return dev


_SHORTHANDS: dict[str, Constraint] = {
    "boolean": _Predicate(lambda value: isinstance(value, (bool, np.bool_)), "True or False"),
    "random_state": _Predicate(
        _is_random_state, "None, an int in the range [0, 2**64 - 1], a numpy Generator/RandomState or a torch.Generator"
    ),
    "dtype": _Predicate(_parses(dtype_from_spec), "None, 'float64' or 'float32' (or the torch/numpy float dtype)"),
    "device": _Predicate(_parses(device_from_spec), "None or an available torch device ('cpu', 'cuda', 'cuda:0', ...)"),
}


def make_constraint(constraint: Any) -> Constraint:
    """Turn a shorthand (see the module docstring) into a :class:`Constraint`."""
    if isinstance(constraint, Constraint):
        return constraint
    if constraint is None:
        return _Predicate(lambda value: value is None, "None")
    if constraint is callable:
        return _Predicate(callable, "a callable")
    if isinstance(constraint, str) and constraint in _SHORTHANDS:
        return _SHORTHANDS[constraint]
    if isinstance(constraint, (type, tuple)):
        kinds = constraint if isinstance(constraint, tuple) else (constraint,)
        description = " or ".join(f"an instance of {k.__module__.split('.')[0]}.{k.__qualname__}"
                                  if k.__module__ != "builtins" else f"a {k.__name__}" for k in kinds)
        return _Predicate(lambda value: isinstance(value, constraint), description)
    raise ValueError(f"unknown constraint {constraint!r}")  # a programming error, not a user's


def _describe(constraints: list[Constraint]) -> str:
    parts = [str(c) for c in constraints]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def validate_parameter_constraints(
    constraints: dict[str, list[Any]], params: dict[str, Any], caller: str, hints: dict[str, str] | None = None
) -> None:
    """Check each parameter named in ``constraints`` against its list (any one may hold); ``hints`` add advice."""
    for name, allowed in constraints.items():
        if name not in params:
            continue
        value = params[name]
        made = [make_constraint(c) for c in allowed]
        if any(c.is_satisfied_by(value) for c in made):
            continue
        hint = (hints or {}).get(name)
        raise InvalidParameterError(
            f"The {name!r} parameter of {caller} must be {_describe(made)}. Got {value!r} instead."
            + (f" {hint}" if hint else "")
        )


def check_scalar(value: Any, name: str, constraints: list[Any]) -> Any:
    """Validate one argument of a function with the same vocabulary; return it unchanged."""
    made = [make_constraint(c) for c in constraints]
    if not any(c.is_satisfied_by(value) for c in made):
        raise InvalidParameterError(f"{name} must be {_describe(made)}, got {value!r}.")
    return value


def check_sequence(
    value: Any, name: str, constraints: list[Any], *, length: int | None = None, repeat: int | None = None,
    what: str = "",
) -> list[Any]:
    """Validate a sequence argument item by item with the same vocabulary; return it as a list.

    ``length``: the number of items (None: any, at least one). ``repeat``: a single valid item stands for
    ``repeat`` copies (``n_components=2`` for ``(2, 2)``). ``what`` names the items in the message.
    """
    made = [make_constraint(c) for c in constraints]
    ok = lambda v: any(c.is_satisfied_by(v) for c in made)  # noqa: E731
    if repeat is not None and ok(value):
        return [value] * repeat
    iterable = isinstance(value, Iterable) and not isinstance(value, (str, bytes, dict))
    items = list(value) if iterable else None
    count = "one or more" if length is None else f"{length}"
    shape = f"a list of {count} items{' ' + what if what else ''}"
    if items is None or not items or (length is not None and len(items) != length):
        same = " (the same for every item)" if repeat is not None and repeat > 1 else ""
        single = f"{_describe(made)}{same} or " if repeat is not None else ""
        raise InvalidParameterError(f"{name} must be {single}{shape}, each {_describe(made)}; got {value!r}.")
    for i, item in enumerate(items):
        if not ok(item):
            raise InvalidParameterError(f"{name}[{i}] must be {_describe(made)} ({name} is {shape}), got {item!r}.")
    return items


def fit_context(fit: Callable) -> Callable:
    """Decorate an estimator's ``fit``: validate ``_parameter_constraints`` first, and make the fit atomic.

    The state drafted while ``fit`` runs becomes the record (``state_``) only when it returns; a failed fit puts
    every attribute back (``fit`` only rebinds attributes). ``partial_fit`` drafts from the current record.
    """

    @functools.wraps(fit)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        validate_parameter_constraints(
            getattr(self, "_parameter_constraints", {}),
            self.get_params(deep=False),
            type(self).__name__,
            getattr(self, "_parameter_hints", None),
        )
        saved = dict(self.__dict__)
        drafting = hasattr(self, "_begin_state") and "_draft_" not in self.__dict__  # the outermost fit drafts
        try:
            if drafting:
                self._begin_state(keep=fit.__name__ == "partial_fit")
            result = fit(self, *args, **kwargs)
            if drafting:
                self._publish_state()
            return result
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    return wrapper
