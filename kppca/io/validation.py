"""Building an object from a file's parameters and state, validated before anything is set.

Registered classes (:mod:`kppca.io.registry`): parameters are checked against
``_parameter_constraints`` as ``fit`` checks them, the fitted state against
``_fitted_constraints`` (:func:`kppca.io.specs.validate_state`); a class without
``get_params`` (a helper object such as a fitted view or level) is rebuilt
without calling ``__init__``, from its declared and checked state alone. Components (kernels, feature
maps, the kernel centerer), whose classes declare nothing, may hold only fitted
attributes (``name_``: no private names, no methods or properties) with plain
values and finite floating tensors.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from .._param_validation import validate_parameter_constraints
from .registry import name_of
from .specs import check_relations, is_fitted_name, validate_state


def _check_component_state(cls: type, state: dict[str, Any], fail: Callable[[str], Exception], name: str) -> None:
    for key, value in state.items():
        existing = getattr(cls, key, None)
        if callable(existing) or isinstance(existing, property):
            raise fail(f"the state of {name} would replace its method or property {key!r}")
        if not is_fitted_name(key):
            raise fail(f"the state of {name} holds {key!r}, which is not a fitted attribute (name_)")
        if isinstance(value, torch.Tensor) and value.dtype.is_floating_point and not bool(torch.isfinite(value).all()):
            raise fail(f"the fitted attribute {key!r} of {name} holds NaN or infinite values")


def build_instance(cls: type, params: dict[str, Any], state: dict[str, Any], name: str,
                   fail: Callable[[str], Exception], *, unfitted: bool = False) -> Any:
    """``cls(**params)`` with ``state`` set, after validating both.

    A parameter the class names in ``_retired_params`` (one it no longer takes) is dropped
    when the file holds it at None, its former default, so files written before still load.

    Parameters
    ----------
    cls : type
        A registered class or a component class.
    params, state : dict
        Decoded constructor arguments and fitted attributes.
    name : str
        The class's name in the file (for messages).
    fail : callable
        ``fail(what)`` returns the :class:`~kppca.io.format.ModelFileError` to raise.
    unfitted : bool, default False
        An estimator without fitted state is allowed (a nested template such as a
        meta-estimator's ``estimator`` parameter); ``state`` must then be empty.
    """
    registered = name_of(cls) is not None
    estimator = hasattr(cls, "get_params")
    if registered and not estimator:
        # A helper object (a fitted view, a level): rebuilt from its declared state alone, no __init__.
        reason = f"parameters for {name}, which is rebuilt from its state alone" if params else None
        reason = reason or validate_state(cls, state, {})
        if reason:
            raise fail(reason)
        obj = cls.__new__(cls)
        for key, value in state.items():
            object.__setattr__(obj, key, value)  # frozen dataclasses too; the names were checked above
        return obj
    if not registered:
        _check_component_state(cls, state, fail, name)
    retired = getattr(cls, "_retired_params", ())
    params = {k: v for k, v in params.items() if not (k in retired and v is None)}
    try:
        obj = cls(**params)
        if estimator and hasattr(cls, "_parameter_constraints"):
            # The same declared constraints as fit: a file cannot smuggle in values fit would refuse.
            validate_parameter_constraints(cls._parameter_constraints, obj.get_params(deep=False), cls.__name__)
    except (TypeError, ValueError) as exc:
        raise fail(f"bad parameters for {name} ({exc})") from exc
    if registered and estimator and not (unfitted and not state):
        reason = validate_state(cls, state, params)
        if reason:
            raise fail(reason)
    for key, value in state.items():
        setattr(obj, key, value)
    reason = check_relations(obj) if state else None
    if reason:
        raise fail(f"{name} {reason}")
    return obj
