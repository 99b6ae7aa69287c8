"""Progress bars: tqdm's notebook widget where ipywidgets can draw it (else tqdm.auto warns), its text bar elsewhere."""

from __future__ import annotations

import importlib.util
from typing import Any


def tqdm(*args: Any, **kwargs: Any) -> Any:
    """A tqdm progress bar (same arguments): ``tqdm.auto``'s when ipywidgets is installed, else ``tqdm.std``'s."""
    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm as bar
    else:
        from tqdm.std import tqdm as bar
    return bar(*args, **kwargs)
