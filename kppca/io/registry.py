"""Which classes a model file may name: those registered under a stable name (:func:`register`).

Nothing is imported from a name read in a file: a registry miss imports only kppca's own estimator
packages (:data:`PLUGIN_PACKAGES`), whose classes register when imported.
"""

from __future__ import annotations

import importlib
from typing import Any

#: kppca packages whose import registers every kppca estimator (imported on a registry miss).
PLUGIN_PACKAGES = ("kppca.models", "kppca.rkm")

_CLASSES: dict[str, type] = {}


def register(cls: type | None = None, *, name: str | None = None, fitted_constraints: dict | None = None) -> Any:
    """Register ``cls`` with the model-file format (usable as ``@register`` or ``@register(name=...)``).

    Parameters
    ----------
    cls : type
        The class. Its parameters are stored by ``get_params(deep=False)``, dataclass fields or ``__init__``
        arguments kept under their own names; its fitted state is what ``_fitted_constraints`` declares.
    name : str, optional
        The stable name written to files (never change it), default ``"<top-level package>.<class name>"``.
    fitted_constraints : dict, optional
        Sets ``cls._fitted_constraints`` (to declare a class from outside).

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
        if fitted_constraints is not None:
            klass._fitted_constraints = dict(fitted_constraints)
        has_record = getattr(klass, "_state_type", None) is not None or hasattr(klass, "stored")
        if not has_record and not isinstance(getattr(klass, "_fitted_constraints", None), dict):
            raise ValueError(
                f"{klass.__qualname__} declares no fitted state (a record class in _state_type): a model file may "
                "hold only declared state."
            )
        key = name or f"{klass.__module__.split('.')[0]}.{klass.__qualname__}"
        other = _CLASSES.get(key)
        if other is not None and (other.__module__, other.__qualname__) != (klass.__module__, klass.__qualname__):
            taken = f"{other.__module__}.{other.__qualname__}"
            raise ValueError(f"the model-file name {key!r} is already registered for {taken}.")
        _CLASSES[key] = klass
        klass._file_format_name = key  # read back by name_of; subclasses do not inherit it (checked there)
        return klass

    return decorate if cls is None else decorate(cls)


def name_of(cls: type) -> str | None:
    """The registered name of exactly ``cls`` (not of a registered base class), or None."""
    key = cls.__dict__.get("_file_format_name")
    return key if key is not None and _CLASSES.get(key) is cls else None


def registered() -> dict[str, type]:
    """A copy of the registry, name -> class (after importing kppca's estimator packages)."""
    for package in PLUGIN_PACKAGES:
        importlib.import_module(package)
    return dict(_CLASSES)


def lookup(key: str) -> type | None:
    """The registered class named ``key``, or None (kppca's estimator packages imported until it is registered)."""
    for package in PLUGIN_PACKAGES:
        if key in _CLASSES:
            break
        importlib.import_module(package)
    return _CLASSES.get(key)


def component_classes() -> dict[str, type]:
    """Kernels, feature maps and the kernel centerer, by their names in model files."""
    from ..features.base import FeatureMapKernel
    from ..features import FEATURE_MAPS
    from ..kernels import ColumnKernel, ProductKernel, SumKernel
    from ..kernels.gram import KernelCenterer
    from ..kernels.standard import KERNELS

    table: dict[str, type] = {f"kernel:{name}": cls for name, cls in KERNELS.items()}
    # Kernel algebra (k1 + k2, k1 * k2, a kernel on some columns): their parts are stored the same way.
    table.update({"kernel:sum": SumKernel, "kernel:product": ProductKernel, "kernel:column": ColumnKernel})
    table.update({f"feature_map:{name}": cls for name, cls in FEATURE_MAPS.items()})
    table["kernel:feature_map"] = FeatureMapKernel
    table["kernel_centerer"] = KernelCenterer
    return table
