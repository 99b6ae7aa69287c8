"""The learned pre-image with leave-one-out bandwidth and ridge, the default for maps of given points."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import make_blobs
from sklearn.decomposition import KernelPCA

from kppca import DualPPCA
from kppca.kernels import RBF
from kppca.preimage import AutoPreimage, LearnedMapPreimage, SmootherPreimage, loo_ridge_errors, make_preimage
from kppca.preimage import select_bandwidth_and_ridge
from kppca.preimage.strategies import SAMPLE_SMOOTHER_OPTIONS


def test_loo_errors_match_refitting_without_each_point():
    gen = np.random.default_rng(0)
    Z = torch.as_tensor(gen.normal(size=(25, 2)))
    Y = torch.as_tensor(gen.normal(size=(25, 3)))
    K = RBF(1.3).gram(Z, Z)
    alphas = (1e-3, 1e-1, 1.0)
    fast = loo_ridge_errors(K, Y, alphas)
    for a, value in zip(alphas, fast):
        errs = []
        for i in range(25):
            keep = torch.arange(25) != i
            c = torch.linalg.solve(K[keep][:, keep] + a * torch.eye(24, dtype=K.dtype), Y[keep])
            errs.append(float((Y[i] - K[i, keep] @ c).square().sum()))
        # Two exact routes to one number; the LOO formula divides by 1 - H_ii >= a / (w_max + a),
        # amplifying eigh's rounding (~ n eps |K|) by at most (w_max + a) / a: relative 1e-8 is ample.
        assert float(value) == pytest.approx(np.mean(errs), rel=1e-8)


def test_selection_picks_the_grid_minimum():
    gen = np.random.default_rng(1)
    Z = torch.as_tensor(gen.uniform(-2, 2, size=(200, 1)))
    X = torch.sin(3 * Z) + 0.05 * torch.as_tensor(gen.normal(size=(200, 1)))
    bw, alpha, errors = select_bandwidth_and_ridge(Z, X)
    assert errors[(bw, alpha)] == min(errors.values()) and len(errors) == 4 * 5
    # a smooth function sampled densely with small noise: a wide ridge (1.0) fits worse than a small one
    assert alpha < 1.0


@pytest.fixture(scope="module")
def blobs() -> np.ndarray:
    return make_blobs(n_samples=100, n_features=4, random_state=0)[0]


def _rel(X: np.ndarray, R: np.ndarray) -> float:
    return float(np.linalg.norm(X - R) / np.linalg.norm(X))


def test_scikit_learn_reconstruction_test_passes_with_the_defaults(blobs):
    # scikit-learn's test_kernel_pca_inverse_transform_reconstruction: 20 components, RBF with
    # gamma = 1 / n_features = 1/4, i.e. bandwidth sqrt(2); relative error below 0.1.
    m = DualPPCA(20, kernel=RBF(2**0.5)).fit(blobs)
    err = _rel(blobs, m.inverse_transform(m.transform(blobs)))
    assert err < 0.1
    assert _rel(blobs, m.reconstruct(blobs)) == pytest.approx(err, rel=1e-9)
    # the smoother, the previous default for maps, fails the test (0.118): the default changed for a reason
    assert _rel(blobs, m.reconstruct(blobs, preimage="smoother")) > 0.1


def test_kernel_pca_limit_is_within_1_5x_of_scikit_learn(blobs):
    kpca = KernelPCA(n_components=20, kernel="rbf", gamma=0.25, fit_inverse_transform=True, alpha=1e-3)
    sk = _rel(blobs, kpca.inverse_transform(kpca.fit_transform(blobs)))
    m = DualPPCA(20, kernel=RBF(2**0.5), sigma2=1e-10).fit(blobs)
    ours = _rel(blobs, m.inverse_transform(m.transform(blobs)))
    assert ours <= 1.5 * sk


def test_auto_routes_samples_to_the_smoother_and_maps_to_the_learned_map(blobs):
    auto = make_preimage()
    assert isinstance(auto, AutoPreimage)
    assert isinstance(auto.choose(sampled=True), SmootherPreimage)
    assert isinstance(auto.choose(sampled=False), LearnedMapPreimage)
    assert auto.choose(sampled=False).options["bandwidth"] == "cv"
    assert isinstance(auto.choose(sampled=False, has_coordinates=False), SmootherPreimage)
    # naming a smoother option selects the smoother for maps too (as when it was the default)
    assert isinstance(AutoPreimage(n_neighbors=5).choose(sampled=False), SmootherPreimage)
    assert isinstance(AutoPreimage(n_neighbors=5, alpha=0.1).choose(sampled=False), LearnedMapPreimage)
    m = DualPPCA(5, kernel=RBF(2**0.5)).fit(blobs)
    np.testing.assert_array_equal(m.sample(4, random_state=0),
                                  m.sample(4, random_state=0, preimage="smoother", **SAMPLE_SMOOTHER_OPTIONS))
    # the sample options apply to samples only, and what the user names wins
    assert auto.choose(sampled=True).options["n_neighbors"] == SAMPLE_SMOOTHER_OPTIONS["n_neighbors"]
    assert AutoPreimage(n_neighbors=7).choose(sampled=True).options["n_neighbors"] == 7
    assert AutoPreimage(n_neighbors=7).choose(sampled=False).options["hub_neighbors"] == 0.2
    h = m.transform(blobs[:5])
    np.testing.assert_array_equal(m.inverse_transform(h), m.inverse_transform(h, preimage="learned", bandwidth="cv",
                                                                              alpha="cv"))


def test_refine_takes_fixed_point_steps_and_needs_rbf(blobs):
    m = DualPPCA(20, kernel=RBF(2**0.5)).fit(blobs)
    h = m.transform(blobs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fixed number of steps: no convergence warning
        refined = m.inverse_transform(h, preimage="learned", bandwidth="cv", alpha="cv", refine=3)
    assert refined.shape == blobs.shape and np.isfinite(refined).all()
    assert not np.array_equal(refined, m.inverse_transform(h))
    lin = DualPPCA(3, kernel="linear").fit(blobs)
    with pytest.raises(NotImplementedError, match="refine"):
        lin.inverse_transform(lin.transform(blobs[:2]), preimage="learned", refine=2)
    with pytest.raises(ValueError, match="refine"):
        m.inverse_transform(h, preimage="learned", refine=-1)


def test_coinciding_coordinates_search_the_ridge_only():
    """Coordinates that all coincide (q = 1 codes of two nearly equal points far from the origin, which the
    robustness sweep found once a partial solver fell back to dense) have no median distance; every RBF width
    then gives the same all-ones Gram matrix, so the search keeps one width and the map predicts the mean."""
    Z = torch.full((4, 1), 3.0, dtype=torch.float64)
    X = torch.as_tensor(np.random.default_rng(0).normal(size=(4, 5)))
    bw, alpha, errors = select_bandwidth_and_ridge(Z, X)
    assert bw == 1.0 and {b for b, _ in errors} == {1.0}
    # The all-ones Gram matrix makes the LOO error of every ridge independent of the width chosen.
    reference = loo_ridge_errors(RBF(7.0).gram(Z, Z), X - X.mean(0), tuple(a for _, a in errors))
    assert np.allclose(sorted(errors.values()), sorted(map(float, reference)), rtol=0, atol=0)


def test_inverse_transform_of_two_points_with_one_code():
    """The sweep's case: PrimalPPCA(Nystroem) on two points, q = 1, uncentered; inverse_transform is finite."""
    from kppca import PrimalPPCA
    from kppca.features import Nystroem

    X = 1000.0 + 3e-4 * np.random.default_rng(1).normal(size=(2, 2))
    model = PrimalPPCA(1, feature_map=Nystroem(RBF(0.01), n_landmarks=2, random_state=0), center=False,
                       eigen_solver="partial").fit(X)
    assert np.isfinite(model.inverse_transform(np.ones((2, 1)))).all()
