"""Files written by earlier kppca versions in a format version this kppca still reads load, and give the outputs
they gave when written, bitwise (outputs changed on purpose since then: those of the same model fitted today).

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


#: Outputs that changed on purpose since the files were written (CHANGELOG.md says how), by case: compared with
#: those of the same model fitted today. A landmark model builds its pre-images over all the rows it keeps, not
#: over its landmarks only (the file's 12 landmarks and 12 further rows).
CHANGED = {"primal-landmarks-dask": {"sample", "inverse", "class"}}


def test_every_readable_old_version_has_files():
    assert {v for v, _ in OLD} == set(READABLE_VERSIONS[:-1])
    assert len(OLD) == len(CASES) * len(READABLE_VERSIONS[:-1]), "a round-trip case without an old file"


@pytest.mark.parametrize("version, case", OLD, ids=[f"v{v}-{c}" for v, c in OLD])
def test_old_file_loads_and_gives_its_outputs(version, case, tmp_path):
    folder = HERE / "data" / f"v{version}"
    model = kppca.load(folder / f"{case}.kppca")
    make, fit_args, outputs = CASES[case]
    data = _data(np.random.default_rng(0))
    got: dict = {}
    for key, value in outputs(model, data).items():
        flatten(value, key, got)
    changed = CHANGED.get(case, set())
    today: dict = {}
    if changed:
        for key, value in outputs(make().fit(*fit_args(data)), data).items():
            flatten(value, key, today)
    with np.load(folder / f"{case}.npz") as stored:
        assert sorted(got) == sorted(stored.files)
        for key in stored.files:
            if key in changed:
                assert not np.array_equal(today[key], stored[key]), f"{key} no longer differs: drop it from CHANGED"
            np.testing.assert_array_equal(got[key], today[key] if key in changed else stored[key], err_msg=key)
    # and it saves in today's format, which reads back to the same model
    model.save(tmp_path / "again.kppca")
    assert type(kppca.load(tmp_path / "again.kppca")) is type(model)
