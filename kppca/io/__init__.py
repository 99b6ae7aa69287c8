"""Safe model files for every estimator: save, load, registration and declared fitted state.

A model file is one safetensors file: tensors bit-exact with a SHA-256
checksum, everything else as JSON in its header (:mod:`kppca.io.format`).
Classes take part by registering (:func:`register`) and declaring their fitted
state (``_fitted_constraints``, :mod:`kppca.io.specs`); loading builds only
registered classes and validates what it reads, and never runs code.

Modules: :mod:`~kppca.io.format` (container, bounds, checksum, versions),
:mod:`~kppca.io.registry` (names), :mod:`~kppca.io.specs` (declarations),
:mod:`~kppca.io.encoding` (values and nested objects, built validated), :mod:`~kppca.io.api`
(``save``/``load``, :class:`SavableMixin`).
"""

from .api import SavableMixin, load, save
from .format import FORMAT_VERSION, CustomKernelError, ModelFileError
from .registry import register, registered
from .specs import ESTIMATOR_STATE, OPTIONAL, ArraySpec, DictOf, FloatDtype, ListOf, Record, TensorSpec, TupleOf

__all__ = [
    "save",
    "load",
    "register",
    "registered",
    "SavableMixin",
    "ModelFileError",
    "CustomKernelError",
    "FORMAT_VERSION",
    "TensorSpec",
    "ArraySpec",
    "ListOf",
    "TupleOf",
    "DictOf",
    "Record",
    "FloatDtype",
    "OPTIONAL",
    "ESTIMATOR_STATE",
]
