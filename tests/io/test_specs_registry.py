"""The declaration vocabulary (kppca.io.specs) and the registry, on small hand-made cases."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import torch

from kppca._param_validation import Integral, Interval, Real
from kppca.io import OPTIONAL, ArraySpec, DictOf, ListOf, Record, TensorSpec, TupleOf, register
from kppca.io.record import FittedState, InvalidStateError, constrained, fitted
from kppca.io.registry import lookup, name_of
from kppca.io.specs import ShapeContext, validate_state


@dataclasses.dataclass
class _Declared:
    n_: int = constrained(Interval(Integral, 1, None, closed="left"))
    W_: torch.Tensor = constrained(TensorSpec(shape=("n_", "d")))
    b_: torch.Tensor = constrained(TensorSpec(shape=("d",)))
    names_: np.ndarray = constrained(ArraySpec("OU", ndim=1), OPTIONAL, default=None)


def _state(**changes):
    state = {"n_": 3, "W_": torch.zeros(3, 2), "b_": torch.zeros(2)}
    state.update(changes)
    return {k: v for k, v in state.items() if v is not None}


def test_valid_state_passes_and_optional_may_be_absent():
    assert validate_state(_Declared, _state(), {}) is None
    assert validate_state(_Declared, _state(names_=np.array(["a", "b"], dtype=object)), {}) is None


@pytest.mark.parametrize(
    "changes, match",
    [
        ({"b_": torch.zeros(3)}, r"'b_'.*size 3 along axis 0, expected d = 2"),  # a free symbol, bound by W_
        ({"W_": torch.zeros(4, 2)}, r"'W_'.*expected n_ = 3"),  # an attribute of the state
        ({"W_": torch.zeros(3, 2, dtype=torch.int64)}, r"'W_'.*dtype torch.int64"),
        ({"W_": torch.full((3, 2), float("nan"))}, r"'W_'.*NaN"),
        ({"n_": None}, r"lacks 'n_'"),
        ({"extra_": 1}, r"'extra_', which _Declared does not declare"),
        ({"names_": np.array([1.5, np.nan])}, r"'names_'.*dtype float64"),
    ],
)
def test_invalid_state_is_explained(changes, match):
    reason = validate_state(_Declared, _state(**changes), {})
    assert reason is not None
    assert re.search(match, reason), reason


def test_float_spec_follows_the_models_dtype():
    spec = TensorSpec()
    assert spec.check(torch.zeros(2, dtype=torch.float32), ShapeContext({"_dtype": torch.float32})) is None
    assert "model's float dtype torch.float64" in spec.check(torch.zeros(2, dtype=torch.float32),
                                                              ShapeContext({"_dtype": torch.float64}))


def test_containers():
    context = ShapeContext({"k_": 2})
    assert ListOf([TensorSpec(ndim=1)], length="k_").check([torch.zeros(1), torch.zeros(4)], context) is None
    assert "length" in ListOf([TensorSpec(ndim=1)], length="k_").check([torch.zeros(1)], context)
    assert "item 1" in ListOf([TensorSpec(ndim=1)]).check([torch.zeros(1), "x"], context)
    assert TupleOf([str], [Interval(Real, None, None)]).check(("a", 1.0), context) is None
    assert "item 1" in TupleOf([str], [Interval(Real, None, None)]).check(("a", float("inf")), context)
    assert DictOf([Interval(Real, 0, None)], [bool]).check({0.5: True}, context) is None
    assert "entry -1" in DictOf([Interval(Real, 0, None)], [bool]).check({-1: True}, context)
    record = Record({"count": [int], "mean": [TensorSpec(ndim=1)]})
    assert record.check({"count": 2, "mean": torch.zeros(2)}, context) is None
    assert "expected a dict with the keys" in record.check({"count": 2}, context)


def test_registration_needs_a_declaration_and_a_free_name():
    class NoState:
        pass

    with pytest.raises(ValueError, match="declares no fitted state"):
        register(NoState)

    @register(name="tests.Thing")
    @dataclasses.dataclass
    class Thing:
        a: int = constrained(int)

    assert name_of(Thing) == "tests.Thing" and lookup("tests.Thing") is Thing

    class Sub(Thing):  # inherits the declaration, not the registration
        pass

    assert name_of(Sub) is None

    @dataclasses.dataclass
    class Other:
        a: int = constrained(int)

    with pytest.raises(ValueError, match="'tests.Thing' is already registered"):
        register(Other, name="tests.Thing")


def test_a_record_checks_itself_when_built_and_is_read_only():
    """fit and load validate a record the same way: by its constructor, once."""

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class _State(FittedState):
        n_: int = fitted(Interval(Integral, 1, None, closed="left"))
        W_: torch.Tensor = fitted(TensorSpec(shape=("n_", "d")))
        names_: np.ndarray = fitted(ArraySpec("OU", ndim=1), optional=True)

        def check(self):
            return "W_ must not be all zeros" if not bool(self.W_.any()) else None

    state = _State(n_=2, W_=torch.ones(2, 3))
    assert state.stored().keys() == {"n_", "W_"}  # the optional field left unset is not stored
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.n_ = 3
    with pytest.raises(InvalidStateError, match=r"'W_'.*expected n_ = 2"):
        _State(n_=2, W_=torch.ones(3, 3))
    with pytest.raises(InvalidStateError, match="W_ must not be all zeros"):
        _State(n_=2, W_=torch.zeros(2, 3))
