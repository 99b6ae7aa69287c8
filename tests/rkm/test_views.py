"""Views of a multi-view model: splitting the input, resolving kernels/maps, per-view Gram and centering."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca.features import Identity, RandomFourierFeatures
from kppca.kernels import RBF, KernelCenterer, Linear
from kppca.rkm import MultiViewKPCA
from kppca.rkm.views import TrainingView, resolve_view_specs, split_views


def test_split_views():
    a, b = np.zeros((3, 2)), np.zeros((3, 1))
    assert split_views([a, b]) == ([a, b], False)
    items, single = split_views(a)
    assert single and items[0] is a
    items, single = split_views([[1.0, 2.0], [3.0, 4.0]])  # a nested list of numbers: one view
    assert single and len(items) == 1
    with pytest.raises(ValueError, match="views is None"):
        split_views(None)
    with pytest.raises(ValueError, match="list of 2-D arrays"):
        split_views([a, np.zeros(3)])


def test_resolve_view_specs_kinds():
    rff = RandomFourierFeatures(1.0, 10, random_state=0)
    specs = resolve_view_specs(4, [None, Linear(), "rbf", rff], None)
    assert isinstance(specs[0][1], Identity) and isinstance(specs[1][1], Identity)
    assert isinstance(specs[2][0], RBF) and specs[2][0].bandwidth == "scale"  # resolved on the view's data at fit
    assert specs[3][0] is None and isinstance(specs[3][1], RandomFourierFeatures) and specs[3][1] is not rff
    kernel, fmap = resolve_view_specs(1, [RBF(2.0)], None)[0]
    assert isinstance(kernel, RBF) and kernel.bandwidth == 2.0 and fmap is None
    with pytest.raises(ValueError, match="either kernels or feature_maps"):
        resolve_view_specs(1, [None], [None])
    with pytest.raises(ValueError, match="kernels has 1 entries but there are 2 views"):
        resolve_view_specs(2, [None], None)
    with pytest.raises(TypeError, match="feature_maps\\[0\\] must be"):
        resolve_view_specs(1, None, [RBF()])


def test_training_view_gram_is_centered_kernel_matrix():
    X = torch.as_tensor(np.random.default_rng(0).normal(size=(8, 3)))
    view = TrainingView(X, RBF(1.5), None, center=True)
    Kc = view.gram()
    K = RBF(1.5).gram(X, X)
    M = torch.eye(8, dtype=X.dtype) - 1.0 / 8
    assert torch.allclose(Kc, M @ K @ M, atol=1e-14)
    assert view.raw_scale_ == pytest.approx(float(K.abs().max()))
    ref = KernelCenterer(True)
    ref.fit_center_(K.clone())
    assert torch.allclose(view.centerer_.column_means_, ref.column_means_, atol=1e-15)


def test_training_view_gram_refuses_non_finite_kernel():
    X = torch.tensor([[0.0], [1.0], [np.inf]], dtype=torch.float64)
    with pytest.raises(ValueError, match="non-finite"):
        TrainingView(X, Linear(), None, center=True).gram()


def test_explicit_view_gram_from_centered_features():
    X = torch.as_tensor(np.random.default_rng(1).normal(size=(6, 2)) + 1e3)
    view = TrainingView(X, None, Identity().fit(X), center=True)
    Xc = X - X.mean(0)
    assert torch.allclose(view.gram(), Xc @ Xc.T, atol=1e-9)


def test_new_view_width():
    """A new view is read in the model's dtype and must have the width its view had in fit."""
    rng = np.random.default_rng(0)
    two = MultiViewKPCA(1).fit([rng.normal(size=(6, 2)).astype(np.float32), rng.normal(size=(6, 3))])
    assert two.transform([np.zeros((2, 2)), np.zeros((2, 3))]).dtype == np.float32
    with pytest.raises(ValueError, match=r"views\[1\] has 2 features, but this view had 3"):
        two.transform([np.zeros((2, 2)), np.zeros((2, 2))])
    one = MultiViewKPCA(1).fit(rng.normal(size=(6, 3)))
    with pytest.raises(ValueError, match="X has 2 features, but MultiViewKPCA is expecting 3"):
        one.transform(np.zeros((2, 2)))
