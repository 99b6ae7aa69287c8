"""Fitted state as one immutable record (:class:`FittedState`), built and checked at fit's end and at load.

The estimator's fitted attributes are read-only views of it; a refit makes a new record, so nothing derived
from an earlier fit survives.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, ClassVar

from .._cache import LazyCache
from .._param_validation import Integral, Interval
from .specs import OPTIONAL, ArraySpec, FloatDtype, check_relations, field_constraints, validate_state


class _Absent:
    """The value of an optional field that a fit did not set (its attribute then does not exist)."""

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"  # one instance, also after pickling


ABSENT: Any = _Absent()


class InvalidStateError(ValueError):
    """A record whose fields break their declared constraints or relations."""


def fitted(*constraints: Any, optional: bool = False) -> Any:
    """A field of a :class:`FittedState`: the constraints its value must meet (the :mod:`kppca.io.specs` vocabulary).

    ``optional=True``: the field may be left unset (``ABSENT``); its attribute then does not exist.
    """
    allowed = [*constraints, OPTIONAL] if optional else list(constraints)
    default = ABSENT if optional else dataclasses.MISSING
    return dataclasses.field(default=default, metadata={"constraints": allowed})


def constrained(*constraints: Any, **field_options: Any) -> Any:
    """A field of a plain dataclass that model files store (a deep RKM level, an optimiser's result): its value
    must meet ``constraints``; ``field_options`` as for :func:`dataclasses.field` (``default=...``)."""
    return dataclasses.field(metadata={"constraints": list(constraints)}, **field_options)


def derived(method: Callable[[Any], Any]) -> property:
    """A value computed from a record's fields on first use, once (thread-safe), then kept with the record."""
    name = method.__name__

    @functools.wraps(method)
    def get(self: FittedState) -> Any:
        return self._derived.get(name, lambda: method(self))

    return property(get)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FittedState:
    """Base of the fitted-state records. Subclasses are frozen, keyword-only dataclasses of :func:`fitted` fields.

    Construction checks each field against its constraints (shapes bind symbols across fields, float tensors
    must have the model's ``_dtype``), then the relations of :meth:`check`; a failure raises
    :class:`InvalidStateError`. ``_derived`` holds the values computed on first use (see :func:`derived`) and
    any other value the owner derives from this fit (its cache, see ``KernelEstimator._cache``).
    """

    _derived: LazyCache = dataclasses.field(default_factory=LazyCache, init=False, repr=False, compare=False)
    #: Names that files of older format versions stored but that this record derives (dropped when read).
    derived_in_old_files: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        reason = validate_state(type(self), self.stored(), {}) or check_relations(self)
        if reason:
            raise InvalidStateError(f"{type(self).__name__}: {reason}")

    @classmethod
    def constraints(cls) -> dict[str, list[Any]]:
        """Field name -> its constraint list."""
        return field_constraints(cls) or {}

    @classmethod
    def views(cls) -> list[str]:
        """The names an owner exposes as attributes: every field and every derived property."""
        properties = [n for klass in reversed(cls.__mro__) for n, v in vars(klass).items() if isinstance(v, property)]
        return [*cls.constraints(), *dict.fromkeys(properties)]

    @classmethod
    def from_old_state(cls, state: dict[str, Any]) -> dict[str, Any]:
        """The fields of a record from the state an older format version stored (a hook; drops derived values)."""
        return {k: v for k, v in state.items() if k not in cls.derived_in_old_files}

    def stored(self) -> dict[str, Any]:
        """The fields that are set (``ABSENT`` ones left out): what a model file holds."""
        return {name: getattr(self, name) for name in self.constraints() if getattr(self, name) is not ABSENT}

    def check(self) -> str | None:
        """Relations between fields that their constraints cannot state: None, or what is wrong (a hook)."""
        return None


@dataclasses.dataclass(frozen=True, kw_only=True)
class EstimatorState(FittedState):
    """What every kppca estimator's record holds (``kppca.base.KernelEstimator``): dtype, device, input metadata,
    and whether the fit's input was numpy-like (outputs are then numpy too)."""

    _dtype: Any = fitted(FloatDtype())
    _device: Any = fitted("device")
    _numpy_fit_: bool = fitted("boolean")
    n_features_in_: int = fitted(Interval(Integral, 1, None, closed="left"))
    feature_names_in_: Any = fitted(ArraySpec("OU", ("n_features_in_",)), optional=True)


class StateView:
    """An owner's read-only attribute showing one name of its record; during a fit it reads and writes the draft."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        values = obj.__dict__
        draft = values.get("_draft_")
        if draft is not None:
            if self.name in draft:
                return draft[self.name]
        else:
            state = values.get("state_")
            value = ABSENT if state is None else getattr(state, self.name)
            if value is not ABSENT:
                return value
        raise AttributeError(f"{type(obj).__name__!r} object has no attribute {self.name!r}")

    def __set__(self, obj: Any, value: Any) -> None:
        self._draft(obj)[self.name] = value

    def __delete__(self, obj: Any) -> None:
        self._draft(obj).pop(self.name, None)

    def _draft(self, obj: Any) -> dict[str, Any]:
        draft = obj.__dict__.get("_draft_")
        if draft is None:
            raise AttributeError(
                f"{self.name!r} is fitted state of {type(obj).__name__}, which only fit sets (it is read-only; "
                "refit to change it)."
            )
        return draft


class HasFittedState:
    """An object whose fitted state is one :class:`FittedState` record, ``state_``, of the class ``_state_type``.

    A fit runs between :meth:`_begin_state` and :meth:`_publish_state` (``fit_context`` calls both): writes
    collect in a draft that becomes the record at the end, so a failed fit leaves the previous record in place.
    """

    _state_type: ClassVar[type[FittedState] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        record = cls.__dict__.get("_state_type")
        if record is not None:
            for name in record.views():
                if not isinstance(cls.__dict__.get(name), (property, StateView)):
                    setattr(cls, name, StateView(name))

    def _begin_state(self, keep: bool = False) -> None:
        """Start a fit's draft: empty, or (``keep=True``, an incremental fit) the current record's fields."""
        if self._state_type is None or "_draft_" in self.__dict__:
            return
        state = self.__dict__.get("state_")
        self.__dict__["_draft_"] = state.stored() if keep and state is not None else {}
        self.__dict__["_draft_cache_"] = LazyCache()

    def _publish_state(self) -> None:
        """Build the record from the draft (checked on construction) and make it the fitted state."""
        if self._state_type is None or "_draft_" not in self.__dict__:
            return
        draft, cache = self.__dict__["_draft_"], self.__dict__["_draft_cache_"]
        try:
            record = self._state_type(**draft)
        except InvalidStateError as exc:  # a fit that produced state its own record refuses: a kppca bug
            raise RuntimeError(f"fit produced invalid fitted state ({exc}); please report this.") from exc
        for key in cache:
            record._derived.set(key, cache.peek(key))
        del self.__dict__["_draft_"], self.__dict__["_draft_cache_"]
        self.__dict__["state_"] = record

    def _has_state(self, name: str) -> bool:
        """Whether the fitted attribute ``name`` is set (in the draft during a fit)."""
        try:
            getattr(self, name)
        except AttributeError:
            return False
        return True

    def _forget_state(self, *names: str) -> None:
        """Unset fitted attributes (from the draft during a fit; plain attributes of a class without a record)."""
        draft = self.__dict__.get("_draft_")
        for name in names:
            if draft is not None and isinstance(getattr(type(self), name, None), StateView):
                draft.pop(name, None)
            else:
                self.__dict__.pop(name, None)
