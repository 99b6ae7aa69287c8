"""``save``/``load`` and the mixin that gives every registered estimator ``.save`` and ``.load``."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import torch

from .._param_validation import device_from_spec
from .encoding import Decoder, Encoder
from .format import FORMAT_NAME, FORMAT_VERSION, ModelFileError, invalid, read_file, write_file
from .registry import lookup, name_of, registered
from .specs import validate_object


def save(model: Any, path: str | Path, *, allow_callable_kernel: bool = False) -> None:
    """Write a fitted estimator to ``path`` in kppca's safe model-file format.

    The file (any extension, format in :mod:`kppca.io`) holds no code and no caches; a Generator ``random_state``
    is saved as None, with a warning. The write is atomic: a failure leaves the previous file whole.

    Parameters
    ----------
    model : estimator
        A fitted instance of a class registered with :func:`kppca.io.register` (every kppca estimator).
    path : str or Path
    allow_callable_kernel : bool, default False
        Store a custom kernel (a callable, :class:`~kppca.kernels.CallableKernel` or a user ``Kernel``
        subclass: code) by its name only; loading then needs it: ``kppca.load(path, kernel=fn)``.

    Raises
    ------
    TypeError
        ``model`` is not of a registered class, or holds a value the format cannot store or an undeclared
        fitted attribute.
    kppca.io.CustomKernelError
        A custom kernel without ``allow_callable_kernel=True`` (a ValueError).
    kppca.ModelFileError
        The model's state breaks its class's declaration (e.g. a tensor of the wrong shape, or NaN), or ``path``
        is a device or a pipe (never replaced by a file).
    IsADirectoryError, OSError
        ``path`` is a folder; the write failed (the previous file is kept).
    """
    # The package is imported whenever this module is; read its version without importing it back.
    version = getattr(sys.modules.get("kppca"), "__version__", "unknown")
    name = name_of(type(model))
    if name is None:
        raise TypeError(
            f"{type(model).__name__} cannot be saved: its class is not registered with kppca's model-file format "
            "(decorate it with @kppca.io.register and declare its fitted state as a record in _state_type)."
        )
    encoder = Encoder(allow_callable_kernel)
    params, state = encoder.encode_parts(model, "params", "state")
    reason = validate_object(model)  # a corrupted object is refused here, not at its next load
    if reason:
        raise ModelFileError(f"cannot save {type(model).__name__}: {reason}.")
    document = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "kppca_version": version,
        "class": name,
        "params": params,
        "state": state,
    }
    write_file(path, document, encoder.tensors)


def load(path: str | Path, *, map_location: str | torch.device | None = None, kernel: Any = None) -> Any:
    """Load an estimator saved by :func:`kppca.save` or ``model.save``.

    Nothing in the file is executed or imported, and what it holds is validated as ``fit`` validates (see
    :mod:`kppca.io`); the model does not depend on the file afterwards.

    Parameters
    ----------
    path : str or Path
    map_location : str or torch.device, optional
        Device for the tensors (e.g. ``"cpu"`` for a model saved on a GPU); default: the one it was saved from.
    kernel : Kernel or callable, optional
        The custom kernel of a model saved with ``allow_callable_kernel=True`` (required there, refused elsewhere).

    Returns
    -------
    estimator
        The class recorded in the file, fitted.

    Raises
    ------
    ModelFileError
        Not a valid kppca model file (another format, corrupt, newer, invalid state, ...), not a regular file
        (a named pipe, a device), tensors larger than the memory available, a device this machine lacks, or no
        ``kernel=`` for a custom-kernel file.
    FileNotFoundError
        ``path`` does not exist.
    IsADirectoryError
        ``path`` is a folder.
    """
    path = Path(path)
    document, tensors = read_file(path)
    key = document["class"]
    cls = lookup(key) if isinstance(key, str) else None
    if cls is None or not hasattr(cls, "get_params") or cls.__dict__.get("_file_component", False):
        known = ", ".join(k for k, c in registered().items() if hasattr(c, "get_params"))
        raise invalid(path, f"unknown model class {key!r} (known: {known})")
    if map_location is not None:
        device = device_from_spec(map_location)
    else:  # the device the model was saved from, checked to exist
        state = document["state"]
        saved = state.get("_device") if isinstance(state, dict) else None
        device = None if saved is None else Decoder(path, {}, None, None).decode(saved)
        if not (device is None or isinstance(device, torch.device)):
            raise invalid(path, "_device is not a device")
    decoder = Decoder(path, tensors, device, kernel, override_device=map_location is not None,
                      version=document["format_version"])
    model = decoder.build(cls, document["params"], document["state"], cls.__name__)
    if kernel is not None and not decoder.used_kernel:
        raise ValueError(
            f"kernel= is only for models saved with a custom kernel (allow_callable_kernel=True); {path} stores "
            "its kernel by name. Drop the kernel argument."
        )
    return model


class SavableMixin:
    """``save`` and ``load`` for estimators (registration is :func:`kppca.io.register`)."""

    def save(self, path: str | Path, *, allow_callable_kernel: bool = False) -> None:
        """Save the fitted estimator to ``path``.

        Parameters
        ----------
        path, allow_callable_kernel
            As for :func:`kppca.save`.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            The estimator is not fitted.
        """
        check = getattr(self, "_check_fitted", None)
        if check is not None and len(inspect.signature(check).parameters) == 1:
            check("save")  # the scaffold's check: one message format for every method
        else:
            from sklearn.utils.validation import check_is_fitted

            check_is_fitted(self)
        save(self, path, allow_callable_kernel=allow_callable_kernel)

    @classmethod
    def load(cls, path: str | Path, map_location: str | torch.device | None = None, *, kernel: Any = None) -> Any:
        """Load an estimator written by :meth:`save` as :func:`kppca.load` does (see its errors), checking its class.

        Parameters
        ----------
        path, map_location, kernel
            As for :func:`kppca.load`.

        Raises
        ------
        TypeError
            The file holds another class than ``cls``.
        """
        obj = load(path, map_location=map_location, kernel=kernel)
        if not isinstance(obj, cls):
            raise TypeError(f"{path} holds a {type(obj).__name__}, not a {cls.__name__}.")
        return obj
