"""What a fitted estimator derives lazily (factors, eigendecompositions, Gram matrices: up to ``O(N^3)``).

The one place that ``fit`` resets and that pickles and model files leave out (recomputed bitwise the same).
"""

from __future__ import annotations

import copy
from typing import Any, Callable


class LazyCache:
    """A keyed store of values computed on first use."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def get(self, key: str, compute: Callable[[], Any]) -> Any:
        """The value under ``key``, computed by ``compute()`` and stored on first use."""
        if key not in self._values:
            self._values[key] = compute()
        return self._values[key]

    def peek(self, key: str) -> Any:
        """The value under ``key`` if computed, else None."""
        return self._values.get(key)

    def set(self, key: str, value: Any) -> None:
        """Store a value computed elsewhere (e.g. a by-product of ``fit``)."""
        self._values[key] = value

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    # Pickles carry an empty cache (recomputed on demand); a deep copy keeps the values, as the rest of the estimator.
    def __reduce__(self) -> tuple[type, tuple]:
        return (type(self), ())

    def __deepcopy__(self, memo: dict) -> "LazyCache":
        new = type(self)()
        new._values = copy.deepcopy(self._values, memo)
        return new
