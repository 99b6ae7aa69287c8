"""Issue 40, items 2 and 3: atomic saves, loads bounded by the header, paths that are not files, nested dtypes.

Before: a save that failed half-way (a full disk) left the previous model cut in half; a JSON ``NaN`` in the
metadata raised a bare ValueError from the digest; a 2 GB file of zeros was read whole (7.1 s, 2.27 GB) before it
was refused; a folder, a named pipe or a link to /dev/zero "did not exist"; a float32 tensor nested in a
float64 model loaded and changed its outputs (the crafted-file sweep's "float32" edits, tests/io/crafted.py).
"""

from __future__ import annotations

import errno
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import kppca
from kppca import DualPPCA, ModelFileError
from kppca import _resources
from kppca.io import format as file_format
from kppca.kernels import RBF

sys.path.insert(0, str(Path(__file__).parent))
import crafted  # noqa: E402


def _fit(seed=0, n=30):
    return DualPPCA(2, kernel=RBF(1.0)).fit(np.random.default_rng(seed).normal(size=(n, 3)))


def _half_then_full_disk(fd, data):
    os.write(fd, bytes(memoryview(data)[: len(data) // 2]))
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_save_that_fails_half_way_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "m.kppca"
    _fit(0).save(path)
    before = path.read_bytes()
    monkeypatch.setattr(file_format, "_write_all", _half_then_full_disk)
    with pytest.raises(OSError, match="No space left"):
        _fit(1, n=60).save(path)  # a larger model: the old code truncated the file to half of it
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.kppca"]  # no temporary file left behind
    monkeypatch.undo()
    kppca.load(path)


def test_a_save_interrupted_before_the_rename_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "m.kppca"
    _fit(0).save(path)
    before = path.read_bytes()

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(file_format.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _fit(1).save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["m.kppca"]


def test_a_save_keeps_the_mode_of_the_file_and_the_link_it_goes_through(tmp_path):
    target, link = tmp_path / "m.kppca", tmp_path / "link.kppca"
    _fit(0).save(target)
    os.chmod(target, 0o640)
    link.symlink_to(target)
    _fit(1).save(link)  # through the link: the file it names is replaced, the link kept
    assert link.is_symlink() and os.stat(target).st_mode & 0o777 == 0o640
    np.testing.assert_array_equal(kppca.load(link).X_fit_, _fit(1).X_fit_)


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_a_save_never_replaces_a_device(tmp_path):
    link = tmp_path / "null.kppca"
    link.symlink_to("/dev/null")
    with pytest.raises(ModelFileError, match="character device, not a regular file"):
        _fit().save(link)
    assert os.path.exists("/dev/null") and not Path("/dev/null").is_file()
    with pytest.raises(IsADirectoryError, match="is a folder"):
        _fit().save(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"cannot save to .*: folder .*nowhere' does not exist"):
        _fit().save(tmp_path / "nowhere" / "m.kppca")  # said of the target, not of a temporary name


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_json_nan_in_the_metadata_is_a_model_file_error(constant, tmp_path):
    """Before: ``ValueError: Out of range float values are not JSON compliant`` from the digest (38 crafted files)."""
    path = tmp_path / "m.kppca"
    _fit().save(path)
    document, tensors = crafted.read(path)
    text = json.dumps(document).replace('"sigma2_": ', f'"sigma2_": {constant}, "_was": ', 1)
    path.write_bytes(crafted.safetensors_bytes(tensors, metadata={file_format.METADATA_KEY: text}))
    with pytest.raises(ModelFileError, match=f"{path}.*{constant} is not a JSON value"):
        kppca.load(path)


def test_a_large_file_of_zeros_is_refused_without_reading_it(tmp_path):
    """Before: 7.1 s and 2.27 GB of memory for 2 GB of zeros. A sparse file: no disk space is used."""
    path = tmp_path / "zeros.kppca"
    with open(path, "wb") as f:
        f.truncate(2 * 10**9)
    start = time.perf_counter()
    with pytest.raises(ModelFileError, match="not a readable safetensors file"):
        kppca.load(path)
    assert time.perf_counter() - start < 1.0


def test_bytes_appended_to_a_model_are_refused_before_they_are_read(tmp_path):
    path = tmp_path / "m.kppca"
    _fit().save(path)
    with open(path, "ab") as f:
        f.truncate(path.stat().st_size + 2 * 10**9)  # 2 GB of (sparse) zeros after the last tensor
    start = time.perf_counter()
    with pytest.raises(ModelFileError, match="2000000000 bytes after the last tensor belong to no tensor"):
        kppca.load(path)
    assert time.perf_counter() - start < 1.0


def test_a_file_larger_than_the_memory_available_is_refused_with_the_sizes(tmp_path, monkeypatch):
    path = tmp_path / "m.kppca"
    _fit().save(path)
    monkeypatch.setattr(_resources, "available_memory", lambda device="cpu": 1000)
    with pytest.raises(ModelFileError, match=r"loading .*m.kppca needs at least .* more than the 1 kB of memory"):
        kppca.load(path)


def test_paths_that_are_not_files_say_what_they_are(tmp_path):
    folder = tmp_path / "folder.kppca"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match="is a folder, not a model file"):
        kppca.load(folder)
    if hasattr(os, "mkfifo"):
        pipe = tmp_path / "pipe.kppca"
        os.mkfifo(pipe)
        with pytest.raises(ModelFileError, match="is a named pipe"):
            kppca.load(pipe)  # answered at once: opening it does not wait for a writer
    if os.path.exists("/dev/zero"):
        link = tmp_path / "zero.kppca"
        link.symlink_to("/dev/zero")
        with pytest.raises(ModelFileError, match=r"is a character device \(a link to /dev/zero\)"):
            kppca.load(link)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        kppca.load(tmp_path / "missing.kppca")


@pytest.mark.parametrize("where", ["state/centerer_/column_means_", "state/centerer_/grand_mean_"])
def test_a_float32_tensor_nested_in_a_float64_model_is_refused(where, tmp_path):
    """Before: loaded with the digest recomputed, then wrong outputs (grand_mean_) or a raw torch error."""
    path = tmp_path / "m.kppca"
    _fit().save(path)
    document, tensors = crafted.read(path)
    tensors = {**tensors, where: tensors[where].to(torch.float32)}
    crafted.write(path, document, tensors)
    with pytest.raises(ModelFileError, match=r"centerer_.*has dtype torch.float32, expected the model's float "
                                             r"dtype torch.float64"):
        kppca.load(path)
