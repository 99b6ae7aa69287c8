"""kppca: Probabilistic PCA in Hilbert space, primal and dual, with generation.

Main entry points: :class:`PrimalPPCA` (explicit features) and :class:`DualPPCA` (kernels).

Names are imported on first use (PEP 562 ``__getattr__``): ``import kppca`` loads neither torch nor
scikit-learn, so the ``kppca`` command parses its arguments before paying for them.
"""

from __future__ import annotations

import importlib as _importlib
import os as _os
import sys as _sys
from typing import TYPE_CHECKING, Any

# Idle OpenMP threads sleep instead of spinning, which would take cores from busy threads on a loaded machine
# (benchmarks/bench_contention.py). OpenMP reads this once, when torch loads: a value the user set is kept.
if "torch" not in _sys.modules:
    _os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"

__all__ = ["PrimalPPCA", "DualPPCA", "save", "load", "ModelFileError", "kernels", "features", "distributions", "__version__"]

#: Public name -> ``"module"`` (a subpackage) or ``"module:attribute"``, relative to this package.
_LAZY = {
    "PrimalPPCA": ".models:PrimalPPCA",
    "DualPPCA": ".models:DualPPCA",
    "save": ".io:save",
    "load": ".io:load",
    "ModelFileError": ".io:ModelFileError",
    **{name: f".{name}" for name in (
        "cli", "datasets", "distributions", "features", "inference", "kernels", "metrics", "models", "plotting",
        "preimage", "rkm",
    )},
}

if TYPE_CHECKING:  # what the lazy names are, for type checkers and IDEs
    from . import distributions, features, kernels
    from .models import DualPPCA, PrimalPPCA
    from .io import ModelFileError, load, save


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, _, attribute = target.partition(":")
    module = _importlib.import_module(module_name, __name__)
    value = getattr(module, attribute) if attribute else module
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    # The public API only: not the helpers this module imports for itself (importlib, Any, TYPE_CHECKING, ...).
    return sorted(set(_LAZY) | {"__version__"})
