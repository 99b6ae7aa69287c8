"""Files written by earlier kppca versions in a format version this kppca still reads load, and give the outputs
they gave when written, bitwise.

The files and their outputs (``tests/io/data/v<N>/``) were written by ``tests/io/data/write_fixtures.py`` on the
``main`` of their time; one per round-trip case (every registered estimator and variant).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import kppca
from kppca.io.format import READABLE_VERSIONS

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "data"))
from write_fixtures import flatten  # noqa: E402

from test_roundtrip import CASES, _data  # noqa: E402

OLD = [(v, case) for v in READABLE_VERSIONS[:-1] for case in CASES if (HERE / "data" / f"v{v}" / f"{case}.kppca").exists()]


def test_every_readable_old_version_has_files():
    assert {v for v, _ in OLD} == set(READABLE_VERSIONS[:-1])
    assert len(OLD) == len(CASES) * len(READABLE_VERSIONS[:-1]), "a round-trip case without an old file"


@pytest.mark.parametrize("version, case", OLD, ids=[f"v{v}-{c}" for v, c in OLD])
def test_old_file_loads_and_gives_its_outputs(version, case, tmp_path):
    folder = HERE / "data" / f"v{version}"
    model = kppca.load(folder / f"{case}.kppca")
    _, _, outputs = CASES[case]
    got: dict = {}
    for key, value in outputs(model, _data(np.random.default_rng(0))).items():
        flatten(value, key, got)
    with np.load(folder / f"{case}.npz") as stored:
        assert sorted(got) == sorted(stored.files)
        for key in stored.files:
            np.testing.assert_array_equal(got[key], stored[key], err_msg=key)
    # and it saves in today's format, which reads back to the same model
    model.save(tmp_path / "again.kppca")
    assert type(kppca.load(tmp_path / "again.kppca")) is type(model)
