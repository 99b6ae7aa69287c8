"""What the machine offers: memory available for an allocation, and what kind of thing a path names.

Standard library only at import (torch is imported for a CUDA device alone, which implies it is loaded), so the
``kppca`` command refuses a request that cannot fit before it loads the library.
"""

from __future__ import annotations

import os
import stat
from typing import Any

#: The advice of a refusal when nothing more specific applies.
MEMORY_ADVICE = "use float32 (half the memory), landmarks, or smaller batches"


class InsufficientMemoryError(ValueError, MemoryError):
    """A request refused before any allocation: it needs more memory than the device has available.

    A ``ValueError`` (a wrong size for this machine) and a ``MemoryError`` (what it would have raised later).
    """


def _meminfo() -> dict[str, int] | None:
    """``/proc/meminfo`` in bytes (Linux), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    info = {}
    for line in lines:
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            info[key] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return info


def available_memory(device: Any = "cpu", *, swap: bool = True) -> int | None:
    """Bytes an allocation on ``device`` (a ``torch.device`` or its name) can take now; None where unknown.

    CPU: ``MemAvailable + SwapFree`` (swap counts, so nothing that could complete is refused; ``swap=False``:
    RAM alone), else ``os.sysconf``'s free pages. CUDA: free memory plus what torch's allocator holds unused.
    """
    kind = getattr(device, "type", str(device).partition(":")[0])
    if kind == "cuda":
        import torch  # a CUDA device exists only once torch is loaded

        try:
            free, _ = torch.cuda.mem_get_info(device)
            return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))
        except (RuntimeError, AssertionError, ValueError):
            return None
    if kind != "cpu":
        return None
    info = _meminfo()
    if info and "MemAvailable" in info:
        return info["MemAvailable"] + (info.get("SwapFree", 0) if swap else 0)
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):  # not POSIX, or the names are unknown here
        return None


def size_text(nbytes: float) -> str:
    """``nbytes`` for a person: ``28.8 GB``, ``512 kB`` (decimal units)."""
    for unit, scale in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{int(nbytes)} bytes"


def check_memory(nbytes: int, what: str, advice: str = MEMORY_ADVICE, device: Any = "cpu") -> None:
    """Refuse ``what`` (e.g. ``"sample(n=10**12)"``) with ``advice`` when ``nbytes`` exceed the memory available.

    Never refused where the available memory is unknown.
    """
    available = available_memory(device)
    if available is not None and nbytes > available:
        kind = getattr(device, "type", str(device).partition(":")[0])
        where = "GPU memory" if kind == "cuda" else "memory"
        raise InsufficientMemoryError(
            f"{what} needs at least {size_text(nbytes)}, more than the {size_text(available)} of {where} available "
            f"now; {advice}."
        )


def path_kind(path: str | os.PathLike) -> str | None:
    """None for an existing regular file (links followed), else what ``path`` is: ``"missing"``, ``"a folder"``, ..."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError as exc:  # a loop of links, a name too long, no permission on a folder above
        return f"unreadable ({exc.strerror or exc})"
    return file_kind(mode)


def file_kind(mode: int) -> str | None:
    """None for a regular file's ``st_mode``, else what it is (``"a folder"``, ``"a named pipe"``, ...)."""
    if stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")
