"""Generation and pre-images of uncentered models (``center=False``, the spec's variant with ``mu = 0``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from kppca import DualPPCA, PrimalPPCA
from kppca.features import RandomFourierFeatures
from kppca.kernels import RBF

METHODS = ["smoother", "knn", "fixed-point", "learned"]


def _outputs(model, V, method, seed):
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fixed-point convergence warnings are not the point here
        out = [
            (model.sample(4, random_state=seed, preimage=method, latent="prior"), 4),
            (model.inverse_transform(-np.ones((1, 2)), preimage=method), 1),
            (model.inverse_transform(2.0 * rng.normal(size=(5, 2)), preimage=method), 5),
        ]
        if isinstance(model, DualPPCA):  # the primal's reconstruct stays in feature space
            out.append((model.reconstruct(V[:5], preimage=method), 5))
        return out


@pytest.mark.parametrize("method", METHODS)
def test_uncentered_dual_generates_for_every_seed(method):
    """Regression: ``DualPPCA(2, kernel=RBF(1.5), center=False).fit(V).sample(4)`` raised 'total weight
    zero or negative' (12-15 of 20 seeds), and ``inverse_transform(-np.ones((1, 2)))`` too (20 of 20)."""
    for seed in range(20):
        V = np.random.default_rng(seed).normal(size=(60, 3))
        model = DualPPCA(2, kernel=RBF(1.5), center=False).fit(V)
        lo, hi = V.min(0), V.max(0)
        for out, n in _outputs(model, V, method, seed):
            assert out.shape == (n, 3)
            assert np.isfinite(out).all()
            if method in ("smoother", "knn"):
                # weighted means of training points: inside the data's bounding box (up to rounding)
                slack = 1e-12 * np.abs(V).max()
                assert ((out >= lo - slack) & (out <= hi + slack)).all()


def test_uncentered_smoother_keeps_defined_rows_and_falls_back_to_nearest_points():
    """With ``n_neighbors=1`` and ``selection="raw"`` both rows are the single nearest training point
    in feature space: the smoother's largest weight where it is defined (h = +1), the fallback's
    nearest point where the weights are all negative (h = -1). (The default local hub correction
    may pick another point.)"""
    V = np.random.default_rng(0).normal(size=(60, 3))
    model = DualPPCA(2, kernel=RBF(1.5), center=False).fit(V)
    h = np.array([[1.0, 0.0], [-1.0, 0.0]])
    smooth = model.inverse_transform(h, preimage="smoother", n_neighbors=1, selection="raw")
    knn = model.inverse_transform(h, preimage="knn", n_neighbors=1)
    np.testing.assert_allclose(smooth, knn, atol=1e-12)  # n = 1: the single nearest point either way


@pytest.mark.parametrize("method", ["smoother", "knn", "learned"])
def test_uncentered_primal_with_feature_map_generates(method):
    for seed in range(5):
        V = np.random.default_rng(seed).normal(size=(60, 3))
        fmap = RandomFourierFeatures(1.5, n_features=80, random_state=seed)
        model = PrimalPPCA(2, feature_map=fmap, center=False).fit(V)
        for out, n in _outputs(model, V, method, seed):
            assert out.shape == (n, 3) and np.isfinite(out).all()


def test_centered_model_unchanged_where_smoother_is_defined():
    V = np.random.default_rng(1).normal(size=(60, 3))
    model = DualPPCA(2, kernel=RBF(1.5)).fit(V)
    out = model.sample(6, random_state=0)
    assert out.shape == (6, 3) and np.isfinite(out).all()
