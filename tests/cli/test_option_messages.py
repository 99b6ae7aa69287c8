"""Issue 40, items 3-5 on the command line: every message about an option's value names the flag; requests that
cannot fit are refused before any work; a --model that is not a file says what it is.

Before: ``--n-components 0.999999`` named ``n_components``; ``--n-train 12`` named neither ``--n-train`` nor
``--n-components``; ``--n-samples 1000000000000`` and ``--threads 100000`` ended in tracebacks; a folder, a named
pipe or a link to /dev/zero given as ``--model`` "did not exist".
"""

from __future__ import annotations

import argparse
import os
import time

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from kppca import _resources  # noqa: E402
from kppca.cli.common import in_option_words  # noqa: E402
from kppca.cli.main import main  # noqa: E402

SMALL = ["--digits", "0", "1", "--no-progress", "--threads", "1"]


@pytest.fixture(autouse=True)
def _no_env_mnist(monkeypatch):
    monkeypatch.delenv("KPPCA_MNIST_DIR", raising=False)


def _error(capsys, argv, status):
    assert main(argv) == status
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_n_components_beyond_the_data_names_the_flag(capsys, tmp_path):
    err = _error(capsys, ["fit", *SMALL, "--n-train", "40", "--n-components", "0.999999"], 1)
    assert "--n-components=0.999999" in err and "an integer --n-components" in err
    assert " n_components" not in err


def test_too_few_training_digits_name_n_train_and_n_components(capsys, tmp_path):
    err = _error(capsys, ["sample", *SMALL, "--n-train", "12", "--out", str(tmp_path / "s.npy")], 1)
    assert "--n-components = 30 must be smaller than the rank" in err
    assert "--n-train 12 digits - 1 = 11: raise --n-train or lower --n-components" in err
    assert not (tmp_path / "s.npy").exists()


def test_samples_beyond_memory_are_refused_before_the_data_are_read(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(_resources, "available_memory", lambda device="cpu": 24 * 2**30)
    start = time.perf_counter()
    err = _error(capsys, ["sample", *SMALL, "--n-samples", "1000000000000", "--out", str(tmp_path / "s.png")], 2)
    assert time.perf_counter() - start < 1.0
    # 10**12 x 784 pixels x 8 bytes, the least a float64 sample needs
    assert "argument --n-samples: 1000000000000 samples needs at least 6.27 PB, more than the 25.8 GB" in err
    err = _error(capsys, ["sample", *SMALL, "--n-samples", "2000000", "--n-train", "2000", "--dtype", "float32"], 2)
    assert "needs at least 38.3 GB" in err  # 2e6 x (784 + 2 x 2,000) x 4 bytes: the kernel vectors count
    capsys.readouterr()


def test_threads_beyond_the_machine_are_refused(capsys):
    cores = os.cpu_count() or 1
    err = _error(capsys, ["sample", "--threads", str(cores + 1)], 2)
    assert f"argument --threads: must be at most the {cores} CPU(s) of this machine, got {cores + 1}" in err


def test_a_model_path_that_is_not_a_file_says_what_it_is(capsys, tmp_path):
    folder = tmp_path / "folder.kppca"
    folder.mkdir()
    cases = {folder: "is a folder"}
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.kppca")
        cases[tmp_path / "pipe.kppca"] = "is a named pipe"
    if os.path.exists("/dev/zero"):
        (tmp_path / "zero.kppca").symlink_to("/dev/zero")
        cases[tmp_path / "zero.kppca"] = "is a character device (a link to /dev/zero)"
    for path, what in cases.items():
        err = _error(capsys, ["sample", "--model", str(path), "--out", str(tmp_path / "s.png")], 1)
        assert f"--model '{path}' {what}, not a model file" in err


def test_saving_over_a_device_is_refused_before_fitting(capsys, tmp_path):
    if not os.path.exists("/dev/null"):
        pytest.skip("needs /dev/null")
    err = _error(capsys, ["fit", *SMALL, "--save", "/dev/null"], 1)
    assert "cannot write '/dev/null': it is not a regular file" in err
    assert "data:" not in capsys.readouterr().out


def test_library_words_become_flags_only_for_parameters():
    args = argparse.Namespace(model=None, n_train=50)
    text = in_option_words(ValueError("sigma2=2 is above sigma2_ and n_components_ = 3; n_components too"), args,
                           "fit model")
    assert text == "--sigma2=2 is above sigma2_ and n_components_ = 3; --n-components too"
    loaded = argparse.Namespace(model="m.kppca", n_train=None)  # a loaded model's words are the file's
    assert in_option_words(ValueError("n_components=2"), loaded, "generate") == "n_components=2"
    memory = _resources.InsufficientMemoryError("sample(n=10) needs at least 1 GB")
    assert in_option_words(memory, loaded, "generate").endswith("Here: a smaller --n-samples.")


def test_device_names_are_checked_before_any_work(capsys, tmp_path, monkeypatch):
    """``--device``: a name that is no torch device, or a GPU this machine lacks, is refused naming the flag."""
    import torch

    out = str(tmp_path / "s.npy")
    for bad in ("gpu", "cuda:x", "cpu:0"):
        err = _error(capsys, ["sample", *SMALL, "--device", bad, "--out", out], 2)
        assert f"argument --device: expected 'cpu', 'cuda' or 'cuda:N' (N a GPU's number), got {bad!r}" in err
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    err = _error(capsys, ["sample", *SMALL, "--device", "cuda", "--out", out], 2)
    assert "argument --device: cuda asks for a GPU, but torch sees no CUDA device here" in err
    assert "leave --device out to compute on the CPU" in err
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    err = _error(capsys, ["sample", *SMALL, "--device", "cuda:2", "--out", out], 2)
    assert "argument --device: cuda:2 does not exist: this machine has 2 CUDA device(s), cuda:0 to cuda:1" in err
    assert not os.path.exists(out)


def test_device_cpu_is_the_default(capsys, tmp_path):
    """``--device cpu`` computes what the default does, bit for bit."""
    import numpy as np

    common = ["sample", *SMALL, "--n-train", "60", "--n-components", "4", "--n-samples", "3"]
    assert main([*common, "--out", str(tmp_path / "a.npy")]) == 0
    assert main([*common, "--device", "cpu", "--out", str(tmp_path / "b.npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))


def test_syntax_warnings_of_dependencies_stay_out_of_the_output(capsys, tmp_path, monkeypatch):
    """A dependency compiled on first import (its bytecode not built at install: pyro 1.9 on Python 3.12) warns
    about its own escape sequences; that is no message for the command's user. Library warnings still show."""
    import importlib
    import warnings

    cli = importlib.import_module("kppca.cli.main")  # the module: kppca.cli.main is also the function's name
    load = cli._load_library

    def loading(threads):
        warnings.warn_explicit("invalid escape sequence '\\g'", SyntaxWarning, "site/pyro/ops/stats.py", 514)
        warnings.warn("a library warning", UserWarning)
        return load(threads)

    monkeypatch.setattr(cli, "_load_library", loading)
    argv = ["sample", *SMALL, "--n-train", "40", "--n-components", "2", "--n-samples", "2"]
    assert main([*argv, "--out", str(tmp_path / "s.npy")]) == 0
    err = capsys.readouterr().err
    assert "invalid escape sequence" not in err
    assert "kppca: warning: a library warning" in err
