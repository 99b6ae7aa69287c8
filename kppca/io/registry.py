"""Which classes a model file may name: those registered under a stable name (:func:`register`).

Nothing is imported from a name read in a file: a registry miss imports only :data:`PLUGIN_PACKAGES`.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from .specs import field_constraints

#: kppca packages whose import registers every class a model file may name (imported on a registry miss).
PLUGIN_PACKAGES = ("kppca.kernels", "kppca.features", "kppca.models", "kppca.rkm")

_CLASSES: dict[str, type] = {}
_CUSTOM_KERNEL: dict[str, Callable[[Any], Any]] = {}


def register(cls: type | None = None, *, name: str | None = None, component: bool = False) -> Any:
    """Register ``cls`` with the model-file format (usable as ``@register`` or ``@register(name=...)``).

    Parameters
    ----------
    cls : type
        The class. Its parameters are stored by ``get_params(deep=False)``, dataclass fields or ``__init__``
        arguments kept under their own names (a dataclass's fields declare their constraints with
        :func:`kppca.io.record.constrained`); its fitted state is its record (``_state_type``).
    name : str, optional
        The stable name written to files (never change it), default ``"<top-level package>.<class name>"``.
    component : bool, default False
        A part of models (a kernel, a feature map, the centerer), never a model file's top-level class.

    Returns
    -------
    type
        ``cls`` itself.

    Raises
    ------
    ValueError
        ``name`` is already taken by another class, or ``cls`` declares no fitted state.
    """
    def decorate(klass: type) -> type:
        declares = getattr(klass, "_state_type", None) is not None or field_constraints(klass) is not None
        if not declares and (hasattr(klass, "fit") or not component):  # what fits must say what it keeps
            raise ValueError(
                f"{klass.__qualname__} declares no fitted state (a record class in _state_type, or dataclass fields "
                "declared with kppca.io.record.constrained): a model file may hold only declared state."
            )
        key = name or f"{klass.__module__.split('.')[0]}.{klass.__qualname__}"
        other = _CLASSES.get(key)
        if other is not None and (other.__module__, other.__qualname__) != (klass.__module__, klass.__qualname__):
            taken = f"{other.__module__}.{other.__qualname__}"
            raise ValueError(f"the model-file name {key!r} is already registered for {taken}.")
        _CLASSES[key] = klass
        klass._file_format_name = key  # read back by name_of; subclasses do not inherit it (checked there)
        klass._file_component = component
        return klass

    return decorate if cls is None else decorate(cls)


def name_of(cls: type) -> str | None:
    """The registered name of exactly ``cls`` (not of a registered base class), or None."""
    key = cls.__dict__.get("_file_format_name")
    return key if key is not None and _CLASSES.get(key) is cls else None


def registered(components: bool = False) -> dict[str, type]:
    """A copy of the registry, name -> class (after importing kppca's packages); components only if asked."""
    for package in PLUGIN_PACKAGES:
        importlib.import_module(package)
    return {k: c for k, c in _CLASSES.items() if components or not c.__dict__.get("_file_component", False)}


def lookup(key: str) -> type | None:
    """The registered class named ``key``, or None (kppca's estimator packages imported until it is registered)."""
    for package in PLUGIN_PACKAGES:
        if key in _CLASSES:
            break
        importlib.import_module(package)
    return _CLASSES.get(key)


def set_custom_kernel_wrapper(wrap: Callable[[Any], Any]) -> None:
    """How a user's kernel given at load is wrapped where the file says it was (set by :mod:`kppca.kernels`)."""
    _CUSTOM_KERNEL["wrap"] = wrap


def wrap_custom_kernel(kernel: Any) -> Any:
    """``kernel`` as a kppca kernel (a callable wrapped), by the wrapper :mod:`kppca.kernels` registered."""
    if "wrap" not in _CUSTOM_KERNEL:
        importlib.import_module(PLUGIN_PACKAGES[0])
    return _CUSTOM_KERNEL["wrap"](kernel)
