"""Safe model files for every estimator: save, load, registration and declared fitted state."""

from .api import SavableMixin, load, save
from .format import FORMAT_VERSION, CustomKernelError, ModelFileError
from .registry import register, registered
from .specs import OPTIONAL, ArraySpec, DictOf, FloatDtype, ListOf, Record, TensorSpec, TupleOf

__all__ = [
    "save", "load", "register", "registered", "SavableMixin", "ModelFileError", "CustomKernelError", "FORMAT_VERSION",
    "TensorSpec", "ArraySpec", "ListOf", "TupleOf", "DictOf", "Record", "FloatDtype", "OPTIONAL",
]
