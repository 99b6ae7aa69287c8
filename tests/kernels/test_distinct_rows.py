"""count_distinct_rows (the structural rank of strictly positive definite kernels) against torch.unique."""

import pytest
import torch

from kppca.kernels.rank import count_distinct_rows


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_distinct_rows_equal_a_lexicographic_unique(rng, dtype):
    base = torch.as_tensor(rng.integers(0, 3, size=(40, 3)), dtype=dtype)  # many repeated rows
    X = torch.cat([base, base[::3]])[torch.as_tensor(rng.permutation(54))]
    assert count_distinct_rows(X) == torch.unique(X, dim=0).shape[0]


def test_signed_zeros_are_one_value():
    X = torch.tensor([[0.0, 1.0], [-0.0, 1.0], [0.0, -0.0], [-0.0, 0.0]])
    assert count_distinct_rows(X) == 2
    assert count_distinct_rows(X[::2]) == 2  # a strided view is read as its values


def test_the_input_is_left_alone():
    X = torch.tensor([[-0.0, 2.0], [0.0, 2.0]])
    count_distinct_rows(X)
    assert torch.signbit(X[0, 0])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_rows_whose_bits_sum_alike_are_compared_in_full(dtype):
    """Permuted entries give the same wrap-around sum of bits: those rows must still count as distinct."""
    X = torch.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [1.0, 2.0, 3.0], [2.0, 1.0, 3.0], [5.0, 5.0, 5.0]], dtype=dtype)
    assert count_distinct_rows(X) == 4
