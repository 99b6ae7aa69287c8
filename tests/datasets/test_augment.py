"""Tests for kppca.datasets.augmented_mnist (offline: the bundled digits or fake IDX files)."""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest
import torch

from kppca._param_validation import InvalidParameterError
from kppca.datasets import MNIST_ENV_VAR, MNIST_SHAPE, augmented_mnist, load_mnist, write_idx


@pytest.fixture(autouse=True)
def _no_mnist_env(monkeypatch):
    # A developer's own KPPCA_MNIST_DIR must not change what the tests load.
    monkeypatch.delenv(MNIST_ENV_VAR, raising=False)


def _rows_of(base: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Index in ``base`` of each row of ``X`` (-1 where a row is no row of ``base``)."""
    lookup = {row.tobytes(): i for i, row in enumerate(base)}
    return np.array([lookup.get(row.tobytes(), -1) for row in X])


@pytest.mark.parametrize("dtype, expected", [("float64", np.float64), ("float32", np.float32),
                                             (np.float32, np.float32), (torch.float32, np.float32),
                                             (None, np.float64)])
def test_shapes_dtype_and_range(dtype, expected):
    X, y = augmented_mnist(300, random_state=0, dtype=dtype)
    assert X.shape == (300, 784) and X.dtype == expected
    assert y.shape == (300,) and y.dtype == np.int64
    assert X.min() >= 0.0 and X.max() <= 1.0
    assert set(np.unique(y).tolist()) <= set(range(10))


def test_default_is_float64_like_load_mnist():
    X, _ = augmented_mnist(5, random_state=0)
    assert X.dtype == load_mnist(n_samples=5, random_state=0)[0].dtype == np.float64


def test_deterministic_for_a_seed_and_different_across_seeds():
    X1, y1 = augmented_mnist(500, random_state=3)
    X2, y2 = augmented_mnist(500, random_state=3)
    X3, _ = augmented_mnist(500, random_state=4)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.array_equal(X1, X3)


def test_a_generator_is_advanced_so_batches_differ_reproducibly():
    rng = np.random.default_rng(0)
    a, _ = augmented_mnist(50, random_state=rng)
    b, _ = augmented_mnist(50, random_state=rng)
    assert not np.array_equal(a, b)
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(augmented_mnist(50, random_state=rng)[0], a)
    np.testing.assert_array_equal(augmented_mnist(50, random_state=rng)[0], b)


def test_no_shift_no_noise_gives_exact_base_digits_with_their_labels():
    base, labels = load_mnist()
    X, y = augmented_mnist(1200, max_shift=0, noise=0.0, random_state=1)
    where = _rows_of(base, X)
    assert (where >= 0).all()
    np.testing.assert_array_equal(y, labels[where])
    assert len(set(where.tolist())) == 1200  # fewer rows than base digits: no repeats


def test_float32_copies_equal_load_mnist_cast_to_float32():
    base, _ = load_mnist()
    X, _ = augmented_mnist(200, max_shift=0, noise=0, random_state=0, dtype="float32")
    assert (_rows_of(base.astype(np.float32), X) >= 0).all()


def test_base_digits_are_used_evenly_beyond_the_base_size():
    base, _ = load_mnist(digits=[4])  # 500 bundled fours
    X, y = augmented_mnist(1100, digits=4, max_shift=0, noise=0, random_state=0)
    assert (y == 4).all()
    uses = Counter(_rows_of(base, X).tolist())
    assert -1 not in uses and len(uses) == 500
    assert set(uses.values()) == {2, 3}  # 1100 = 2 * 500 + 100


def _translated(imgs: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """``imgs`` moved down by ``dy`` and right by ``dx`` pixels, zero fill (reference implementation)."""
    h, w = imgs.shape[1:]
    out = np.zeros_like(imgs)
    out[:, max(0, dy) : h + min(0, dy), max(0, dx) : w + min(0, dx)] = imgs[
        :, max(0, -dy) : h + min(0, -dy), max(0, -dx) : w + min(0, -dx)
    ]
    return out


def test_shifted_digits_are_translated_copies_with_zero_fill():
    base, _ = load_mnist(digits=[7])
    imgs = base.reshape(-1, *MNIST_SHAPE)
    s = 2
    shifts = [(dy, dx) for dy in range(-s, s + 1) for dx in range(-s, s + 1)]
    candidates = np.stack([_translated(imgs, dy, dx) for dy, dx in shifts])  # (25, 500, 28, 28)
    candidates = candidates.reshape(len(shifts) * len(imgs), -1)
    X, y = augmented_mnist(40, digits=7, max_shift=s, noise=0, random_state=5)
    assert (y == 7).all()
    used = set()
    for x in X:
        hits = np.flatnonzero((candidates == x).all(axis=1))
        assert hits.size, "a row is no shifted copy of a base digit"
        used.update(shifts[h // len(imgs)] for h in hits)
    assert len(used) > 5  # the shifts really vary


def test_zero_fill_not_wrap_around_on_full_images(tmp_path):
    # Random bytes up to the border: a wrap-around (np.roll) would be caught here, not on real digits.
    rng = np.random.default_rng(1)
    images = rng.integers(1, 256, size=(10, 28, 28), dtype=np.uint8)
    write_idx(os.path.join(tmp_path, "train-images-idx3-ubyte"), images)
    write_idx(os.path.join(tmp_path, "train-labels-idx1-ubyte"), np.arange(10, dtype=np.uint8))
    X, y = augmented_mnist(30, max_shift=1, noise=0, random_state=0, path=tmp_path)
    for x, label in zip(X.reshape(-1, *MNIST_SHAPE), y):
        refs = [_translated(images[label : label + 1], dy, dx)[0] / 255.0 for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
        assert any(np.array_equal(x, r) for r in refs)


def test_noise_changes_pixels_by_about_its_size():
    clean, y0 = augmented_mnist(400, max_shift=0, noise=0, random_state=2)
    noisy, y1 = augmented_mnist(400, max_shift=0, noise=0.05, random_state=2)
    np.testing.assert_array_equal(y0, y1)  # same base digits: the noise is drawn after the order
    diff = noisy - clean
    mid = (clean > 0.2) & (clean < 0.8)  # away from the clipping at 0 and 1
    assert abs(diff[mid].std() - 0.05) < 0.005
    assert noisy.min() >= 0.0 and noisy.max() <= 1.0


def test_digits_selection_and_labels():
    _, y = augmented_mnist(600, digits=[3, 8], random_state=0)
    assert set(y.tolist()) == {3, 8}
    assert abs(int((y == 3).sum()) - 300) <= 1  # 500 of each in the bundled set: balanced


def test_user_idx_files_via_path_and_environment(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(20, 28, 28), dtype=np.uint8)
    lab = np.repeat(np.arange(10, dtype=np.uint8), 2)
    write_idx(os.path.join(tmp_path, "train-images-idx3-ubyte"), images)
    write_idx(os.path.join(tmp_path, "train-labels-idx1-ubyte"), lab)
    X, y = augmented_mnist(20, max_shift=0, noise=0, random_state=0, path=tmp_path)
    where = _rows_of(images.reshape(20, -1) / 255.0, X)
    assert (where >= 0).all() and len(set(where.tolist())) == 20
    np.testing.assert_array_equal(y, lab[where])
    monkeypatch.setenv(MNIST_ENV_VAR, str(tmp_path))
    np.testing.assert_array_equal(augmented_mnist(20, max_shift=0, noise=0, random_state=0)[0], X)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": 0}, "n_samples must be an int in the range"),
        ({"n_samples": 2.5}, "n_samples must be an int"),
        ({"n_samples": True}, "n_samples must be an int"),
        ({"max_shift": -1}, "max_shift must be an int in the range"),
        ({"max_shift": 1.0}, "max_shift must be an int"),
        ({"noise": -0.1}, "noise must be a float in the range"),
        ({"noise": float("nan")}, "noise must be a float"),
        ({"noise": "0.1"}, "noise must be a float"),
        ({"random_state": "seed"}, "random_state must be"),
        ({"dtype": "int32"}, "dtype='int32' is not supported"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, match):
    args = {"n_samples": 10, **kwargs}
    with pytest.raises(InvalidParameterError, match=match):
        augmented_mnist(**args)


def test_shift_larger_than_the_image_is_refused():
    with pytest.raises(ValueError, match=r"max_shift=28 would move every pixel out of the 28x28 images"):
        augmented_mnist(10, max_shift=28)


def test_unknown_digit_is_refused():
    with pytest.raises(ValueError, match=r"digits\[0\] must be an int in the range \[0, 9\]"):
        augmented_mnist(10, digits=[11])


def test_n_samples_one():
    X, y = augmented_mnist(1, random_state=0)
    assert X.shape == (1, 784) and y.shape == (1,)


def test_base_rows_and_dask_blocks():
    da = pytest.importorskip("dask.array")
    from kppca.datasets.augment import augmented_mnist_blocks

    X0, y0 = load_mnist()
    base = np.flatnonzero(y0 == 3)[:5]
    X, y = augmented_mnist(12, base=base, max_shift=0, noise=0.0, random_state=0)
    assert set(y) == {3} and all(any(np.array_equal(r, b) for b in X0[base]) for r in X)
    with pytest.raises(ValueError, match="base must be"):
        augmented_mnist(3, base=[len(y0)])
    Xd, yd = augmented_mnist_blocks(25, block_rows=10, random_state=1, base=base, dtype="float32")
    assert isinstance(Xd, da.Array) and Xd.chunks[0] == (10, 10, 5) and Xd.dtype == np.float32
    Xc, yc = da.compute(Xd, yd)
    assert Xc.shape == (25, 784) and set(yc) == {3}
    # block i is augmented_mnist(rows_i) with its own seed
    seed0 = int(np.random.default_rng(1).integers(2**62, size=3)[0])
    np.testing.assert_array_equal(Xc[:10], augmented_mnist(10, random_state=seed0, base=base, dtype="float32")[0])
