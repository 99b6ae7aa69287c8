"""The one mechanism for values a fitted model derives on first use, safe when threads share the model."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any, Callable


class LazyCache:
    """What a fitted estimator derives on first use (factors, eigendecompositions: up to ``O(N^3)``), by key.

    :meth:`get` computes a missing value once, under a re-entrant lock (a computation may read other keys),
    and publishes it whole. Pickles and model files leave it out (recomputed bitwise the same). ``store``:
    where the values live (a caller's own dict); ``lock``: an owner's lock to share (default: new ones).
    """

    def __init__(self, store: MutableMapping | None = None, lock: Any = None) -> None:
        self._values: MutableMapping = {} if store is None else store
        self.lock = threading.RLock() if lock is None else lock  # an owner's lock: one lock, no lock-order deadlock

    @classmethod
    def wrap(cls, cache: "LazyCache | MutableMapping | None") -> "LazyCache":
        """``cache`` itself if a :class:`LazyCache`, else a cache over the dict given (a new one for None)."""
        return cache if isinstance(cache, LazyCache) else cls(cache)

    def get(self, key: Any, compute: Callable[[], Any]) -> Any:
        """The value under ``key``, computed by ``compute()`` and stored on first use (once, under the lock)."""
        try:
            return self._values[key]  # published values are never replaced: no lock needed to read one
        except KeyError:
            pass
        with self.lock:
            if key not in self._values:
                self._values[key] = compute()
            return self._values[key]

    def peek(self, key: Any) -> Any:
        """The value under ``key`` if computed, else None."""
        return self._values.get(key)

    def set(self, key: Any, value: Any) -> None:
        """Store a value computed elsewhere (e.g. a by-product of ``fit``, before the model is shared)."""
        with self.lock:
            self._values[key] = value

    def discard(self, key: Any) -> None:
        """Forget one value, so that the next :meth:`get` recomputes it (benchmarks comparing options)."""
        with self.lock:
            self._values.pop(key, None)

    def clear(self) -> None:
        """Forget every value (benchmarks timing first calls)."""
        with self.lock:
            self._values.clear()

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._values))  # a snapshot: another thread may add a key meanwhile

    def __len__(self) -> int:
        return len(self._values)

    # Pickles carry an empty cache (recomputed on demand); a deep copy keeps the values, with a lock of its own.
    def __reduce__(self) -> tuple[type, tuple]:
        return (type(self), ())

    def __deepcopy__(self, memo: dict) -> "LazyCache":
        with self.lock:
            return type(self)(copy.deepcopy(dict(self._values), memo))
