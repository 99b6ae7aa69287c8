"""kppca.metrics.sample_quality: classifier statistics, novelty distances, MMD two-sample test."""

from __future__ import annotations

import numpy as np
import pytest

from kppca.metrics import effective_classes, mmd_test, sample_quality


@pytest.fixture(scope="module")
def blobs() -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(0)
    centers = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    y = np.repeat(np.arange(3), 60)
    return centers[y] + gen.normal(size=(180, 2)), y


def test_effective_classes():
    assert effective_classes([5, 5, 5, 5]) == pytest.approx(4.0)
    assert effective_classes([7, 0, 0]) == pytest.approx(1.0)
    assert effective_classes([0, 0]) == 0.0
    assert 1.0 < effective_classes([9, 1]) < 2.0


def test_report_on_copies_and_on_one_class(blobs):
    X, y = blobs
    train, ref, y_ref = X[::2], X[1::2], y[1::2]
    copies = sample_quality(train, ref, y_ref, train=train, mmd=False)
    # cdist's |a|^2 + |b|^2 - 2 a.b form leaves sqrt(rounding) ~ sqrt(eps) |x| for a zero distance
    bound = 10 * np.sqrt(np.finfo(float).eps) * np.abs(X).max()
    assert copies.nn_distance < bound and copies.novelty_ratio < bound / copies.real_nn_distance
    assert copies.effective_classes == pytest.approx(3.0, abs=0.01)
    assert copies.confidence > 0.9
    only0 = sample_quality(train[y[::2] == 0], ref, y_ref, train=train, target=0, mmd=False)
    assert only0.class_histogram == {0: 30, 1: 0, 2: 0}
    assert only0.effective_classes == pytest.approx(1.0) and only0.min_class_fraction == 0.0
    assert only0.target_accuracy == {0: 1.0}
    assert "effective classes 1.00" in only0.summary()


def test_mmd_separates_shifted_sets_and_not_equal_ones():
    gen = np.random.default_rng(1)
    A, B = gen.normal(size=(80, 3)), gen.normal(size=(80, 3))
    _, p_same, _ = mmd_test(A, B, n_permutations=99, random_state=0)
    mmd2, p_shift, _ = mmd_test(A, B + 1.5, n_permutations=99, random_state=0)
    assert p_shift == pytest.approx(1 / 100)  # no permutation reaches the observed statistic
    assert p_same > 0.05 and mmd2 > 0


def test_errors(blobs):
    X, y = blobs
    with pytest.raises(ValueError, match="same D"):
        sample_quality(X[:, :1], X, y)
    with pytest.raises(ValueError, match="one entry per reference row"):
        sample_quality(X, X, y[:-1])
    with pytest.raises(ValueError, match="target"):
        sample_quality(X[:5], X, y, target=[0, 1])
