"""Write one model file per round-trip case, with its outputs, in the current file-format version.

Run by hand when the format version changes, *before* the change, on the then-current ``main``::

    python tests/io/data/write_fixtures.py

It writes ``tests/io/data/v<FORMAT_VERSION>/<case>.kppca`` and ``<case>.npz`` (the outputs of the fitted
model, which the loaded file must reproduce bitwise). ``tests/io/test_old_files.py`` loads them with today's
code: files of every older version that kppca still reads stay in the repository as test data.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/io: the round-trip cases

from test_roundtrip import CASES, _data  # noqa: E402

from kppca.io.format import FORMAT_VERSION  # noqa: E402


def flatten(value, key: str, out: dict) -> None:
    """Outputs as plain numpy arrays under ``key``, ``key.0``, ... (lists and tuples item by item)."""
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            flatten(item, f"{key}.{i}", out)
        return
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    out[key] = array.astype(str) if array.dtype == object else array


def main() -> None:
    folder = HERE / f"v{FORMAT_VERSION}"
    folder.mkdir(exist_ok=True)
    for case, (make, fit_args, outputs) in CASES.items():
        data = _data(np.random.default_rng(0))
        model = make().fit(*fit_args(data))
        model.save(folder / f"{case}.kppca")
        flat: dict = {}
        for key, value in outputs(model, data).items():
            flatten(value, key, flat)
        np.savez(folder / f"{case}.npz", **flat)
        print(case)


if __name__ == "__main__":
    main()
