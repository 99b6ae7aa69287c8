"""Safe model files for every estimator: save, load, registration and declared fitted state.

A model file is one safetensors file: the tensors bit-exact, everything else JSON in its header, one SHA-256
checksum over both. Classes take part by registering (:func:`register`) and declaring their fitted state
(``_fitted_constraints``); loading builds only registered classes, validates what it reads and runs no code.
"""

from .api import SavableMixin, load, save
from .format import FORMAT_VERSION, CustomKernelError, ModelFileError
from .registry import register, registered
from .specs import ESTIMATOR_STATE, OPTIONAL, ArraySpec, DictOf, FloatDtype, ListOf, Record, TensorSpec, TupleOf

__all__ = [
    "save", "load", "register", "registered", "SavableMixin", "ModelFileError", "CustomKernelError", "FORMAT_VERSION",
    "TensorSpec", "ArraySpec", "ListOf", "TupleOf", "DictOf", "Record", "FloatDtype", "OPTIONAL", "ESTIMATOR_STATE",
]
