"""Generation in input space: sample, inverse_transform, reconstruct, latent_traversal, kernel_preimage."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca.datasets import load_digits
from kppca.features import RandomFourierFeatures
from kppca.kernels.gram_factors import CholeskyFactor
from kppca.kernels import RBF
from kppca.preimage.strategies import SAMPLE_SMOOTHER_OPTIONS, hub_window
from kppca.models.generation import DEFAULT_PREIMAGE, PREIMAGE_METHODS, PREIMAGE_OPTIONS, resolve_preimage
from kppca.preimage import kernel_smoother

METHODS = list(PREIMAGE_METHODS)


@pytest.fixture(scope="module")
def digits() -> np.ndarray:
    X, _ = load_digits(n_samples=120, random_state=0)
    return X  # (120, 64) in [0, 1]


@pytest.fixture(scope="module")
def model(digits) -> DualPPCA:
    return DualPPCA(5, kernel=RBF(1.5)).fit(digits)


def _gram(X: np.ndarray, bandwidth: float) -> np.ndarray:
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * bandwidth**2))


# ----------------------------------------------------------------------------- pre-image wiring


@pytest.mark.parametrize("solver", ["dense", "partial"])
def test_uncentering_is_exact_on_training_points(digits, solver):
    """The smoother sees the exact raw kernel rows of training points (span estimate), via eigh or Cholesky."""
    X = digits[:80]
    m = DualPPCA(4, kernel=RBF(1.5), eigen_solver=solver).fit(X)
    assert m._gram().has_eigh == (solver == "dense")
    K = _gram(X, 1.5)
    K_c = m._gram().matrix.numpy()
    out = m.kernel_preimage(K_c[:7], preimage="smoother", n_neighbors=None, clip_negative=False)
    np.testing.assert_allclose(out, kernel_smoother(K[:7], X, clip_negative=False), atol=1e-10)


def test_dual_coefficients_cholesky_equals_pseudoinverse(digits):
    m = DualPPCA(4, kernel=RBF(1.5), eigen_solver="partial").fit(digits)
    k_c = torch.as_tensor(m.sample_kernel(5, random_state=0))
    alpha_chol = m._dual_coefficients(k_c)
    assert isinstance(m._gram().cholesky(), CholeskyFactor)  # chol(K) of the sampling factor solves for alpha
    values, vectors = m._full_eigen()
    np.testing.assert_array_equal(m._dual_coefficients(k_c), alpha_chol)  # the route depends on the fit only
    alpha_eig = ((k_c @ vectors) / values) @ vectors.T
    np.testing.assert_allclose(alpha_chol, alpha_eig, rtol=0, atol=1e-8 * float(alpha_eig.abs().max()))
    dense = DualPPCA(4, kernel=RBF(1.5), eigen_solver="dense").fit(digits)
    dense._dual_coefficients(k_c)
    assert not dense._gram().has_cholesky  # the dense route needs no factor


def test_training_kernel_vectors_map_back_to_training_points(model, digits):
    K_c = model._gram().matrix.numpy()
    idx = [0, 17, 42, 99]
    # knn and the one-neighbour smoother select the training point itself: exact up to an ulp of the
    # pixels (in [0, 1]). The fixed-point iteration stops on a step of 1e-8 (1 + |z|) and the learned map
    # has a ridge bias (alpha = 1e-8; 4e-7 here): method accuracies, not rounding, so 1e-5 for both.
    eps = np.finfo(np.float64).eps
    for method, opts, atol in [("knn", {"n_neighbors": 1}, 4 * eps), ("smoother", {"n_neighbors": 1}, 4 * eps),
                               ("fixed-point", {}, 1e-5), ("learned", {"alpha": 1e-8, "n_coordinates": 30}, 1e-5)]:
        out = model.kernel_preimage(K_c[idx], preimage=method, **opts)
        np.testing.assert_allclose(out, digits[idx], rtol=0, atol=atol, err_msg=method)


def test_reconstruct_close_to_rank_recovers_training_points(digits):
    """q close to the rank and sigma2 -> 0: (k_c)_MAP ~ k_c, so exact pre-images return the points.

    Known bias: the kernel smoother with all weights returns the kernel-weighted mean of the
    training points (the same as with the exact kernel row), not the point itself.
    """
    X = digits[:60]
    m = DualPPCA(55, sigma2=1e-12, kernel=RBF(2.0)).fit(X)
    np.testing.assert_allclose(m.reconstruct(X[:10], preimage="knn", n_neighbors=1), X[:10], atol=1e-12)
    np.testing.assert_allclose(m.reconstruct(X[:10], preimage="learned", alpha=1e-8), X[:10], atol=1e-4)
    smooth = m.reconstruct(X[:10], preimage="smoother", n_neighbors=None)
    # Not a rounding tolerance: q = 55 < rank 59 leaves the 4 smallest eigen-directions out of (k_c)_MAP,
    # which moves the smoother's weights (2.9e-3 here; rounding changes that by ~1e-13): a bound on that bias.
    np.testing.assert_allclose(smooth, kernel_smoother(_gram(X, 2.0)[:10], X), atol=1e-2)
    assert np.abs(smooth - X[:10]).max() > 0.3  # the bias is real
    fixed = m.reconstruct(X[:10], preimage="fixed-point")
    assert np.abs(fixed - X[:10]).max() < 0.15


def test_reconstruct_with_ml_sigma2_shrinks_toward_the_mean(digits):
    """Known bias: with ML sigma2 the reconstruction is pulled toward the training mean."""
    X = digits[:60]
    ppca = DualPPCA(5, kernel=RBF(1.5)).fit(X)
    kpca = DualPPCA(5, sigma2=1e-10, kernel=RBF(1.5)).fit(X)
    k_ppca = ppca.reconstruct_kernel(X)
    k_kpca = kpca.reconstruct_kernel(X)
    assert np.linalg.norm(k_ppca) < np.linalg.norm(k_kpca)
    mean = X.mean(0)
    opts = dict(preimage="smoother", n_neighbors=None)
    assert np.linalg.norm(ppca.reconstruct(X, **opts) - mean) < np.linalg.norm(kpca.reconstruct(X, **opts) - mean)


@pytest.mark.parametrize("method", METHODS)
def test_reconstruct_is_inverse_transform_of_transform(model, digits, method):
    X = digits[:9]
    np.testing.assert_allclose(
        model.reconstruct(X, preimage=method), model.inverse_transform(model.transform(X), preimage=method),
        atol=1e-9,
    )


@pytest.mark.parametrize("method", METHODS)
def test_sample_is_preimage_of_sample_kernel(model, method):
    S = model.sample(6, random_state=3, preimage=method, latent="prior")
    K = model.sample_kernel(6, random_state=3)
    # sample() corrects hubs by default (selection="auto" is "local" for samples, "raw" for given vectors)
    # The default ("auto") samples with the smoother and maps given vectors with the learned map.
    opts = {"selection": "local"} if method in ("smoother", "auto") else {}
    if method == "auto":
        opts |= SAMPLE_SMOOTHER_OPTIONS
    ref = "smoother" if method == "auto" else method
    np.testing.assert_allclose(S, model.kernel_preimage(K, preimage=ref, **opts), atol=1e-8)


def test_fixed_point_needs_rbf(digits):
    m = DualPPCA(3, kernel="linear").fit(digits)
    with pytest.raises(NotImplementedError, match="RBF"):
        m.sample(2, preimage="fixed-point")
    assert m.sample(2, random_state=0, preimage="knn").shape == (2, 64)


@pytest.mark.filterwarnings("ignore::kppca.preimage.PreimageConvergenceWarning")
def test_uncentered_model(digits):
    X = digits[:50]
    m = DualPPCA(3, kernel=RBF(1.5), center=False).fit(X)
    K = _gram(X, 1.5)
    out = m.kernel_preimage(K[:4], preimage="smoother", n_neighbors=None, clip_negative=False)
    np.testing.assert_allclose(out, kernel_smoother(K[:4], X, clip_negative=False), atol=1e-10)
    np.testing.assert_allclose(m.kernel_preimage(K[:4], preimage="knn", n_neighbors=1), X[:4], atol=1e-12)
    assert m.sample(3, random_state=0, preimage="fixed-point").shape == (3, 64)


# ----------------------------------------------------------------------------- shapes, batching, types


@pytest.mark.parametrize("method", METHODS)
def test_shapes(model, method):
    assert model.sample(7, random_state=0, preimage=method).shape == (7, 64)
    assert model.inverse_transform(np.zeros(5), preimage=method).shape == (1, 64)
    assert model.inverse_transform(np.zeros((3, 5)), preimage=method).shape == (3, 64)
    grid = model.latent_traversal(n_steps=4, preimage=method)
    assert grid.shape == (4, 4, 64)


def test_chunking_does_not_change_results(model):
    full = {m: model.sample(9, random_state=1, preimage=m) for m in METHODS}
    model.set_params(batch_size=4)  # a parameter read at use: no refit needed
    for m in METHODS:
        np.testing.assert_allclose(model.sample(9, random_state=1, preimage=m), full[m], atol=1e-10)
    model.set_params(batch_size=None)


def test_latent_traversal_layout(model):
    grid, codes = model.latent_traversal((1, 3), n_steps=5, extent=(-1.0, 2.0), return_codes=True)
    assert grid.shape == (5, 5, 64) and codes.shape == (5, 5, 5)
    np.testing.assert_allclose(codes[0, :, 1], np.linspace(-1, 2, 5))  # columns: first component, increasing
    np.testing.assert_allclose(codes[:, 0, 3], np.linspace(2, -1, 5))  # rows: second component, decreasing
    assert np.all(codes[:, :, [0, 2, 4]] == 0)
    # the default pre-image is clipped to the training inputs' range (issue 26, item 7)
    expected = np.clip(model.inverse_transform(codes.reshape(25, 5)), model.X_fit_.min().item(),
                       model.X_fit_.max().item())
    np.testing.assert_allclose(grid.reshape(25, 64), expected, atol=1e-12)
    one = model.latent_traversal(2, n_steps=3)
    assert one.shape == (1, 3, 64)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"components": (0, 5)}, "out of range"),
        ({"components": (1, 1)}, "different"),
        ({"components": (0, 1, 2)}, "one or two"),
        ({"n_steps": 1}, "n_steps"),
        ({"extent": (1.0, -1.0)}, "lo < hi"),
        ({"extent": "wide"}, "extent"),
    ],
)
def test_latent_traversal_errors(model, kwargs, match):
    with pytest.raises(ValueError, match=match):
        model.latent_traversal(**kwargs)


def test_reproducible(model):
    for method in METHODS:
        a = model.sample(4, random_state=7, preimage=method)
        b = model.sample(4, random_state=7, preimage=method)
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(model.sample(4, random_state=7), model.sample(4, random_state=8))
    gen = np.random.default_rng(0)
    assert model.sample(2, random_state=gen).shape == (2, 64)


def test_output_types(digits):
    Xt = torch.tensor(digits[:60])
    mt = DualPPCA(3, kernel=RBF(1.5)).fit(Xt)
    assert isinstance(mt.sample(2, random_state=0), torch.Tensor)
    assert isinstance(mt.latent_traversal(n_steps=2), torch.Tensor)
    assert isinstance(mt.reconstruct(Xt[:2]), torch.Tensor)
    assert isinstance(mt.reconstruct(digits[:2]), np.ndarray)
    assert isinstance(mt.inverse_transform(torch.zeros(2, 3)), torch.Tensor)
    assert isinstance(mt.inverse_transform(np.zeros((2, 3))), np.ndarray)
    mn = DualPPCA(3, kernel=RBF(1.5)).fit(digits[:60])
    assert isinstance(mn.sample(2, random_state=0), np.ndarray)
    assert isinstance(mn.kernel_preimage(torch.zeros(60)), torch.Tensor)
    assert mn.kernel_preimage(np.zeros(60)).shape == (64,)
    m32 = DualPPCA(3, kernel=RBF(1.5), dtype=torch.float32).fit(Xt)
    assert m32.sample(2, random_state=0, preimage="smoother").dtype == torch.float32


def test_options_validation(model):
    assert resolve_preimage(None, {}) == (DEFAULT_PREIMAGE, PREIMAGE_OPTIONS[DEFAULT_PREIMAGE])
    assert resolve_preimage("Fixed_Point", {})[0] == "fixed-point"
    with pytest.raises(ValueError, match="unknown"):
        model.sample(2, preimage="magic")
    with pytest.raises(ValueError, match="weighting"):
        model.sample(2, preimage="smoother", weighting="distance")
    with pytest.raises(TypeError):
        model.sample(2, preimage=3)
    with pytest.raises(ValueError, match=r"n must be an int in the range \[1, inf\)"):
        model.sample(-1)
    with pytest.raises(ValueError, match="n_coordinates"):
        model.sample(2, preimage="learned", n_coordinates=0)
    # option values are declared per method (each strategy class's _constraints) and checked before any work
    with pytest.raises(ValueError, match=r"'weighting' parameter of preimage='knn' must be one of \{'distance', 'uniform'\}"):
        model.sample(2, preimage="knn", weighting="nearest")
    with pytest.raises(TypeError, match=r"'clip_negative' parameter of preimage='smoother' must be True or False"):
        model.sample(2, preimage="smoother", clip_negative=1)
    # the default ("auto") takes the options of the smoother and of the learned map, checked the same way
    with pytest.raises(TypeError, match=r"'clip_negative' parameter of preimage='auto' must be True or False"):
        model.sample(2, clip_negative=1)
    with pytest.raises(ValueError, match=r"'tol' parameter of preimage='fixed-point' must be a float in the range \[0, inf\)"):
        model.sample(2, preimage="fixed-point", tol=-1.0)
    # n_neighbors above N keeps every training point
    assert model.sample(2, random_state=0, preimage="knn", n_neighbors=10**6).shape == (2, 64)


def test_learned_map_is_cached_and_refit_invalidates(digits):
    m = DualPPCA(3, kernel=RBF(1.5)).fit(digits[:60])
    m.sample(2, random_state=0, preimage="learned", latent="prior")
    m.sample(2, random_state=0, preimage="learned", n_coordinates=8, latent="prior")
    keys = [k for k in m._gen_cache() if isinstance(k, tuple) and k[0] == "learned"]
    assert len(keys) == 2
    m.fit(digits[60:])
    out = m.sample(5, random_state=0, preimage="knn", n_neighbors=1, latent="prior")
    assert all(any(np.allclose(row, x) for x in digits[60:]) for row in out)
    assert not any(isinstance(k, tuple) and k[0] == "learned" for k in m._gen_cache())


def test_pickle_drops_cache_and_keeps_results(model, tmp_path):
    a = model.sample(3, random_state=0, preimage="learned")
    state = model.__getstate__()
    assert "_gen_cache_" not in state
    path = tmp_path / "m.pt"
    model.save(path)
    loaded = DualPPCA.load(path)
    np.testing.assert_allclose(loaded.sample(3, random_state=0, preimage="learned"), a, atol=1e-10)
    assert pickle.loads(pickle.dumps(model)).sample(1, random_state=0).shape == (1, 64)


# ----------------------------------------------------------------------------- primal


def test_primal_identity_map(digits):
    p = PrimalPPCA(4).fit(digits)
    np.testing.assert_array_equal(p.sample(5, random_state=2, latent="prior"), p.sample_features(5, random_state=2))
    h = np.random.default_rng(0).normal(size=(3, 4))
    np.testing.assert_allclose(p.inverse_transform(h), h @ p.W_.numpy().T + p.mean_.numpy(), atol=1e-12)
    np.testing.assert_allclose(p.inverse_transform(p.transform(digits[:4])), p.reconstruct(digits[:4]), atol=1e-12)
    assert p.latent_traversal(n_steps=3).shape == (3, 3, 64)
    assert isinstance(p.inverse_transform(torch.zeros(1, 4)), torch.Tensor)
    with pytest.raises(ValueError, match="unknown"):
        p.sample(2, preimage="magic")


@pytest.mark.parametrize("method", ["smoother", "knn", "learned"])
def test_primal_feature_map_matches_dual_with_induced_kernel(digits, method):
    X = digits[:80]
    fmap = RandomFourierFeatures(bandwidth=1.5, n_features=40, random_state=0).fit(X)
    primal = PrimalPPCA(4, feature_map=fmap).fit(X)
    dual = DualPPCA(4, kernel=fmap.as_kernel()).fit(X)
    assert primal.sigma2_ == pytest.approx(dual.sigma2_, rel=1e-8)
    a = primal.inverse_transform(primal.transform(X[:6]), preimage=method)
    b = dual.reconstruct(X[:6], preimage=method)
    np.testing.assert_allclose(a, b, atol=1e-7)
    assert primal.sample(5, random_state=0, preimage=method).shape == (5, 64)


def test_primal_feature_map_fixed_point_not_implemented(digits):
    fmap = RandomFourierFeatures(bandwidth=1.5, n_features=30, random_state=0)
    p = PrimalPPCA(3, feature_map=fmap).fit(digits[:50])
    with pytest.raises(NotImplementedError, match="fixed-point"):
        p.sample(2, preimage="fixed-point")


def test_sample_does_not_depend_on_call_order(digits):
    """After a partial fit the exact sample factors K_c in its own memory. The default sample's pre-image
    reads K_c (hub scores): they are taken before the factor, so ``sample`` after ``sample_kernel``
    reads no kernel rows and gives bitwise what it gives first."""
    from kppca.preimage.strategies import make_preimage

    def fitted():
        return DualPPCA(4, kernel=RBF(1.5), eigen_solver="partial", random_state=0).fit(digits)

    first = fitted().sample(5, random_state=3)
    model = fitted()
    model.sample_kernel(2, random_state=0)
    gram = model._gram()
    assert gram.has_cholesky and not gram.has_matrix
    hub_keys = [k for k in model._gen_cache() if isinstance(k, tuple) and k[0] == "local-hub-scores"]
    assert make_preimage(None).choose(sampled=True).options["hub_neighbors"] == "auto"
    assert hub_keys == [("local-hub-scores", hub_window(len(digits)))]
    calls = []
    gram.kernel = _CountingKernel(gram.kernel, calls)  # any kernel evaluation of training rows is counted
    np.testing.assert_array_equal(model.sample(5, random_state=3), first)
    assert calls == []


class _CountingKernel:
    def __init__(self, kernel, calls):
        self.kernel, self.calls = kernel, calls

    def gram(self, A, B):
        self.calls.append(A.shape[0])
        return self.kernel.gram(A, B)
