"""Files written by earlier kppca versions in a format version this kppca still reads load, and give the outputs
they gave when written (outputs changed on purpose since then: those of the same model fitted today).

The outputs were stored on the machine that wrote the files. Another CPU takes other BLAS kernels (AVX2 or
AVX-512 paths of MKL and OpenBLAS, other blockings), whose sums round in another order, so the comparison
allows rounding (:func:`machine_tolerance`); what it must catch, a misread value, is off by 6e-8 relative (a
float32 cast) or by O(1). Re-saved in today's format, a file gives the same outputs bitwise on this machine.

The files and their outputs (``tests/io/data/v<N>/``) were written by ``tests/io/data/write_fixtures.py`` on the
``main`` of their time; one per round-trip case (every registered estimator and variant).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import kppca
from kppca._linalg import rounding_tolerance
from kppca.io.format import READABLE_VERSIONS

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "data"))
from write_fixtures import flatten  # noqa: E402

from test_roundtrip import CASES, _data  # noqa: E402

#: Bounds behind :func:`machine_tolerance`: each output sums at most ``INNER`` products (24 training points,
#: 40 random features, 3 inputs; an eigen- or Cholesky factor of the 24 x 24 matrices), and an error in those
#: sums is amplified at most ``CONDITION`` times (a PPCA model's ``(lambda_1 + sigma2) / sigma2``, asserted
#: below: 347 for the dual fixture, the largest).
INNER, CONDITION = 64, 1e3


def machine_tolerance(stored: np.ndarray) -> float:
    """How far another machine's rounding can move an output: ``INNER * CONDITION * eps`` of its scale.

    The scale has a floor of 1: the fixture's data are standard normal, so an output near 0 (a novelty score,
    a residual) is a difference of O(1) terms and carries their rounding.
    """
    scale = max(1.0, float(np.abs(stored).max())) if stored.size else 1.0
    return rounding_tolerance(torch.float64, INNER * CONDITION, scale)


def assert_same_output(got: np.ndarray, expected: np.ndarray, key: str) -> None:
    """Equal where exact (labels, strings, integers), else within :func:`machine_tolerance`."""
    if expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, expected, err_msg=key)
        return
    np.testing.assert_allclose(got, expected, rtol=0, atol=machine_tolerance(expected), err_msg=key)


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
    if hasattr(model, "sigma2_"):  # the CONDITION bound holds for the fixture
        assert (float(model.eigenvalues_.max()) + model.sigma2_) / model.sigma2_ <= CONDITION
    changed = CHANGED.get(case, set())
    today: dict = {}
    if changed:
        for key, value in outputs(make().fit(*fit_args(data)), data).items():
            flatten(value, key, today)
    with np.load(folder / f"{case}.npz") as stored:
        assert sorted(got) == sorted(stored.files)
        for key in stored.files:
            if key in changed:
                differs = not np.allclose(today[key], stored[key], rtol=0, atol=machine_tolerance(stored[key]))
                assert differs, f"{key} no longer differs beyond rounding: drop it from CHANGED"
            assert_same_output(got[key], today[key] if key in changed else stored[key], key)
    # and it saves in today's format, which reads back to the same model: the same outputs, bitwise
    model.save(tmp_path / "again.kppca")
    again = kppca.load(tmp_path / "again.kppca")
    assert type(again) is type(model)
    resaved: dict = {}
    for key, value in outputs(again, data).items():
        flatten(value, key, resaved)
    for key in got:
        np.testing.assert_array_equal(resaved[key], got[key], err_msg=key)
