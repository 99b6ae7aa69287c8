"""``--n-train auto`` (the default, with a folder of MNIST files or the bundled digits): the largest exact model within time and memory."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kppca.cli import common  # noqa: E402
from kppca.cli.common import AUTO_BYTES_PER_N2, AUTO_MEMORY_SHARE, auto_n_train  # noqa: E402
from kppca.cli.main import main  # noqa: E402
from kppca.datasets.mnist import load_mnist, write_idx  # noqa: E402

GIB = 2.0**30


def _largest(available: float, dtype: str) -> int:
    # the largest N whose peak (bytes per N^2 times N^2) stays within the share of the available memory
    return int(np.floor(np.sqrt(AUTO_MEMORY_SHARE * available / AUTO_BYTES_PER_N2[dtype])))


def test_all_of_mnist_on_24_gib_is_float32():
    """On this 24 GiB machine 60,000 digits fit in float32 (4.16 N^2 bytes: 15 GB) but not float64 (30 GB)."""
    assert auto_n_train(60_000, None, 22 * GIB) == (60_000, "float32")
    assert 40_000 < _largest(22 * GIB, "float64") < 60_000  # so float64 would have to stop short of all


def test_float64_when_it_holds_every_digit():
    assert auto_n_train(5_000, None, 22 * GIB) == (5_000, "float64")


def test_memory_bounds_the_size():
    n, dtype = auto_n_train(60_000, None, 1 * GIB)
    assert (n, dtype) == (_largest(1 * GIB, "float32"), "float32")
    assert AUTO_BYTES_PER_N2["float32"] * n**2 <= AUTO_MEMORY_SHARE * GIB < AUTO_BYTES_PER_N2["float32"] * (n + 1) ** 2


def test_time_bounds_the_size():
    n, _ = auto_n_train(10**7, None, 10.0**15)  # memory no limit: the time budget decides
    assert common.AUTO_SECONDS_PER_N2 * n**2 <= common.AUTO_TIME_BUDGET_S
    assert common.AUTO_SECONDS_PER_N2 * (n + 1) ** 2 > common.AUTO_TIME_BUDGET_S


def test_unknown_memory_leaves_the_time_budget_to_decide():
    assert auto_n_train(10**7, None, None) == auto_n_train(10**7, None, 10.0**15)
    assert auto_n_train(500, None, None) == (500, "float64")


def test_explicit_dtype_is_kept():
    n, dtype = auto_n_train(60_000, "float64", 22 * GIB)
    assert dtype == "float64" and n == _largest(22 * GIB, "float64")


@pytest.fixture
def mnist_dir(tmp_path, monkeypatch):
    """A folder of 80 real digits (8 per class) in the official IDX format."""
    monkeypatch.delenv("KPPCA_MNIST_DIR", raising=False)
    X, y = load_mnist(n_samples=80, random_state=0)
    write_idx(tmp_path / "train-images-idx3-ubyte", np.round(X * 255).astype(np.uint8).reshape(-1, 28, 28))
    write_idx(tmp_path / "train-labels-idx1-ubyte", y.astype(np.uint8))
    return tmp_path


ARGS = ["--n-components", "2", "--n-samples", "4", "--no-progress", "--threads", "1"]


def test_a_folder_of_mnist_defaults_to_auto(mnist_dir, tmp_path, capsys):
    assert main(["sample", "--mnist-dir", str(mnist_dir), "--out", str(tmp_path / "a.png"), *ARGS]) == 0
    out = capsys.readouterr().out
    assert "--n-train auto: N = 80 of 80 digits in float64" in out and "N = 80," in out


def test_auto_needs_no_package_beyond_the_dependencies(mnist_dir, tmp_path, capsys, monkeypatch):
    """psutil is not a dependency of kppca (a plain ``pip install .`` lacks it): auto reads /proc/meminfo."""
    import sys

    monkeypatch.setitem(sys.modules, "psutil", None)  # any import of psutil now fails
    assert main(["sample", "--mnist-dir", str(mnist_dir), "--out", str(tmp_path / "a.png"), *ARGS]) == 0
    assert "--n-train auto: N = 80 of 80 digits in float64" in capsys.readouterr().out


def test_explicit_n_train_and_dtype_are_not_overridden(mnist_dir, tmp_path, capsys):
    argv = ["sample", "--mnist-dir", str(mnist_dir), "--n-train", "30", "--dtype", "float32",
            "--out", str(tmp_path / "a.png"), *ARGS]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "--n-train auto" not in out and "N = 30," in out
    argv[argv.index("--n-train") + 1] = "AUTO"  # case-insensitive, keeps the given dtype
    assert main(argv) == 0
    assert "--n-train auto: N = 80 of 80 digits in float32" in capsys.readouterr().out


def test_bundled_digits_are_all_used(tmp_path, capsys, monkeypatch):
    """Without data the default is auto too: every bundled digit of the selected classes (issue 39)."""
    monkeypatch.delenv("KPPCA_MNIST_DIR", raising=False)
    assert main(["sample", "--digits", "0", "--out", str(tmp_path / "a.png"), *ARGS]) == 0
    out = capsys.readouterr().out
    assert "--n-train auto: N = 500 of 500 digits in float64" in out and "N = 500," in out
    assert main(["sample", "--digits", "0", "--n-train", "200", "--out", str(tmp_path / "b.png"), *ARGS]) == 0
    out = capsys.readouterr().out
    assert "--n-train auto" not in out and "N = 200," in out


def test_auto_leaves_digits_for_the_report(mnist_dir, tmp_path, capsys):
    """--report judges on digits not trained on: auto keeps a sixth of these 80 (13) out of the fit."""
    argv = ["sample", "--mnist-dir", str(mnist_dir), "--report", "--out", str(tmp_path / "a.png"), *ARGS]
    main(argv)  # the report itself may refuse 13 digits; the choice is printed before
    assert "--n-train auto: N = 67 of 80 digits" in capsys.readouterr().out


def test_default_q_follows_the_training_digits():
    """30 up to 5,000 digits, 50 from 10,000, ``30 + 20 log2(N / 5,000)`` in between (computed apart)."""
    from kppca.cli.common import auto_n_components

    assert [auto_n_components(n) for n in (3, 40, 5_000)] == [30, 30, 30]  # the bundled default: unchanged
    assert [auto_n_components(n) for n in (10_000, 20_000, 60_000)] == [50, 50, 50]
    assert auto_n_components(7_071) == 40 and auto_n_components(6_000) == 35  # 20 log2(1.2) = 5.26
    q = [auto_n_components(n) for n in range(100, 70_000, 50)]
    assert all(b >= a for a, b in zip(q, q[1:]))


def test_the_cli_fits_the_rule_of_q_unless_given(mnist_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(common, "auto_n_components", lambda n: 3 if n == 80 else 99)
    args = ["sample", "--mnist-dir", str(mnist_dir), "--out", str(tmp_path / "a.png"), "--n-samples", "4",
            "--no-progress", "--threads", "1"]
    assert main(args) == 0
    assert "N = 80, q = 3," in capsys.readouterr().out
    assert main([*args, "--n-components", "2"]) == 0  # given: kept
    assert "N = 80, q = 2," in capsys.readouterr().out
    assert main([*args, "--sigma2", "0.01"]) == 0  # sigma2 alone chooses q itself
    assert "q = 3," not in capsys.readouterr().out
