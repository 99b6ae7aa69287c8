"""Tests of kppca.preimage: kernel smoother, un-centering, kNN, fixed point, learned map."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca.kernels import RBF, KernelCenterer
from kppca.preimage import (
    KernelSmoother,
    LearnedPreimage,
    PreimageConvergenceWarning,
    dual_coefficients_to_expansion,
    feature_space_sq_distances,
    fixed_point_preimage,
    kernel_smoother,
    knn_preimage,
    uncenter_kernel_vectors,
)


# ----------------------------------------------------------------------------- fixtures


def _kernel_setup(X: np.ndarray, bandwidth: float):
    """Raw Gram K (numpy), fitted centerer and centered Gram K_c (tensor)."""
    kern = RBF(bandwidth)
    K = kern(X)
    centerer = KernelCenterer()
    K_c = centerer.fit_center_(torch.tensor(K))
    return kern, K, centerer, K_c


@pytest.fixture
def blobs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    return X


@pytest.fixture
def separated():
    """Well-separated points (pairwise distances >> bandwidth 0.5)."""
    rng = np.random.default_rng(1)
    return rng.normal(scale=5.0, size=(12, 3))


# ----------------------------------------------------------------------------- smoother


def test_smoother_matches_hand_computed_weighted_mean():
    w = np.array([1.0, 2.0, 0.0, 5.0])
    T = np.array([[0.0, 1.0], [2.0, 0.0], [9.0, 9.0], [1.0, 1.0]])
    expected = (1 * T[0] + 2 * T[1] + 5 * T[3]) / 8.0
    np.testing.assert_allclose(kernel_smoother(w, T), expected, rtol=1e-14)
    assert kernel_smoother(w, T).shape == (2,)
    assert kernel_smoother(w[None], T).shape == (1, 2)
    # 1-D targets -> one value per row
    np.testing.assert_allclose(kernel_smoother(w[None], T[:, 0]), [expected[0]])


def test_smoother_options_semantics():
    w = np.array([[3.0, -1.0, 2.0, 1.0]])
    T = np.array([[1.0], [10.0], [2.0], [4.0]])
    # clip_negative=True drops the -1 weight
    np.testing.assert_allclose(kernel_smoother(w, T), [[(3 * 1 + 2 * 2 + 4) / 6.0]])
    # clip_negative=False keeps it
    np.testing.assert_allclose(kernel_smoother(w, T, clip_negative=False), [[(3 - 10 + 4 + 4) / 5.0]])
    # n_neighbors keeps the largest weights only
    np.testing.assert_allclose(kernel_smoother(w, T, n_neighbors=2), [[(3 + 4) / 5.0]])
    np.testing.assert_allclose(kernel_smoother(w, T, n_neighbors=1), [[1.0]])
    # epsilon adds to the denominator only (shrinks toward 0)
    np.testing.assert_allclose(kernel_smoother(w, T, epsilon=2.0), [[(3 + 4 + 4) / 8.0]])


def test_smoother_zero_weight_raises_with_rows_and_hints():
    w = np.array([[1.0, 1.0], [0.0, 0.0], [-1.0, -2.0]])
    T = np.eye(2)
    with pytest.raises(ValueError, match=r"row\(s\) \[1, 2\].*epsilon > 0"):
        kernel_smoother(w, T)
    # epsilon makes the all-zero rows finite (zero), never NaN
    out = kernel_smoother(w, T, epsilon=1e-3)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[1:], 0.0)


def test_smoother_centered_vector_error_and_warning(blobs):
    _, K, centerer, _ = _kernel_setup(blobs, 1.0)
    k_c = centerer.transform(torch.tensor(K[:2]))  # rows sum to 0
    with pytest.raises(ValueError, match="un-center"):
        kernel_smoother(k_c, blobs, clip_negative=False)
    with pytest.warns(UserWarning, match="centered"):
        kernel_smoother(k_c, blobs)


def test_smoother_batching_equals_row_by_row(blobs):
    rng = np.random.default_rng(3)
    W = rng.uniform(size=(7, blobs.shape[0]))
    for opts in ({}, {"n_neighbors": 4}, {"epsilon": 0.5}):
        batch = kernel_smoother(W, blobs, **opts)
        rows = np.stack([kernel_smoother(w, blobs, **opts) for w in W])
        np.testing.assert_allclose(batch, rows, rtol=1e-13)


def test_smoother_neighbours_match_numpy_over_row_blocks():
    """With ``n_neighbors`` the sums gather each row's k training rows, in blocks of ``M // k`` rows: against numpy's
    weighted mean of each row's k largest weights. Nonnegative weights, so each sum of k products rounds by at
    most ``(k + 1) eps`` of ``sum w |t|`` and the division adds one more: ``(k + 3) eps max|T|`` bounds the means.
    A negative weight and a row with fewer than k positive ones exercise the clipping."""
    rng = np.random.default_rng(5)
    N, M, k = 40, 203, 4
    W, T = rng.uniform(size=(M, N)), rng.normal(size=(N, 3))
    W[0, :] = -1.0
    W[0, :2] = [2.0, 3.0]  # two positive weights: the other two kept are clipped to 0
    W[1, 7] = -5.0
    top = np.argsort(-np.clip(W, 0, None), axis=1, kind="stable")[:, :k]
    Wk = np.clip(np.take_along_axis(W, top, 1), 0, None)
    expected = np.einsum("mk,mkd->md", Wk, T[top]) / Wk.sum(1)[:, None]
    bound = (k + 3) * np.finfo(np.float64).eps * np.abs(T).max()
    np.testing.assert_allclose(kernel_smoother(W, T, n_neighbors=k), expected, rtol=0, atol=bound)
    np.testing.assert_allclose(expected[0], (2 * T[0] + 3 * T[1]) / 5, rtol=0, atol=bound)


def test_smoother_numpy_and_torch_round_trip(blobs):
    rng = np.random.default_rng(4)
    W = rng.uniform(size=(3, blobs.shape[0]))
    out_np = kernel_smoother(W, blobs)
    assert isinstance(out_np, np.ndarray) and out_np.dtype == np.float64
    out_t = kernel_smoother(torch.tensor(W), torch.tensor(blobs))
    assert isinstance(out_t, torch.Tensor) and out_t.dtype == torch.float64
    np.testing.assert_allclose(out_t.numpy(), out_np)
    out_32 = kernel_smoother(torch.tensor(W, dtype=torch.float32), blobs)
    assert out_32.dtype == torch.float32


def test_inputs_not_modified(blobs):
    rng = np.random.default_rng(5)
    W = rng.normal(size=(3, blobs.shape[0]))
    W_t = torch.tensor(W)
    X_copy, W_copy, Wt_copy = blobs.copy(), W.copy(), W_t.clone()
    kernel_smoother(W, blobs, n_neighbors=5)
    kernel_smoother(W_t, torch.tensor(blobs), n_neighbors=5)
    _, K, centerer, K_c = _kernel_setup(blobs, 1.0)
    k_c = centerer.transform(torch.tensor(K[:3])).numpy()
    k_c_copy = k_c.copy()
    uncenter_kernel_vectors(k_c, centerer, "zero-min")
    d2 = feature_space_sq_distances(k_c, np.diag(K_c.numpy()))
    d2_copy = d2.copy()
    knn_preimage(d2, blobs, n_neighbors=2)
    gamma = np.eye(blobs.shape[0])[:3]
    gamma_copy = gamma.copy()
    fixed_point_preimage(gamma, blobs, 1.0)
    np.testing.assert_array_equal(blobs, X_copy)
    np.testing.assert_array_equal(W, W_copy)
    assert torch.equal(W_t, Wt_copy)
    np.testing.assert_array_equal(k_c, k_c_copy)
    np.testing.assert_array_equal(d2, d2_copy)
    np.testing.assert_array_equal(gamma, gamma_copy)


def test_smoother_bad_inputs(blobs):
    W = np.ones((2, blobs.shape[0]))
    with pytest.raises(ValueError, match="weights has 29 column"):
        kernel_smoother(W[:, :-1], blobs)
    with pytest.raises(ValueError, match="n_neighbors"):
        kernel_smoother(W, blobs, n_neighbors=-1)
    with pytest.raises(ValueError, match="n_neighbors"):
        kernel_smoother(W, blobs, n_neighbors=31)
    with pytest.raises(ValueError, match="epsilon"):
        kernel_smoother(W, blobs, epsilon=-1.0)
    W_nan = W.copy()
    W_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="weights contains NaN"):
        kernel_smoother(W_nan, blobs)
    with pytest.raises(ValueError, match="weights must have"):
        kernel_smoother(np.ones((1, 1, 30)), blobs)


def test_kernel_smoother_class_matches_function(blobs):
    kern = RBF(1.5)
    Xn = blobs[:5] + 0.1
    H = np.random.default_rng(6).normal(size=(blobs.shape[0], 2))  # e.g. RKM latent codes
    sm = KernelSmoother(kern, n_neighbors=10).fit(blobs, H)
    np.testing.assert_allclose(sm.predict(Xn), kernel_smoother(kern(Xn, blobs), H, n_neighbors=10))
    with pytest.raises(ValueError, match="not fitted"):
        KernelSmoother(kern).predict(Xn)


# ----------------------------------------------------------------------------- un-centering


def test_uncentering_exact_on_training_points_with_true_row_means(blobs):
    _, K, centerer, K_c = _kernel_setup(blobs, 2.0)
    K_c_rows = centerer.transform(torch.tensor(K))
    back = uncenter_kernel_vectors(K_c_rows, centerer, K.mean(1))
    np.testing.assert_allclose(back.numpy(), K, atol=1e-13)
    # the "span" estimate recovers the true row means of points in the span (training points)
    back_span, s = uncenter_kernel_vectors(K_c_rows.numpy(), centerer, "span", gram_centered=K_c,
                                           return_row_means=True)
    np.testing.assert_allclose(s, K.mean(1), atol=1e-10)
    np.testing.assert_allclose(back_span, K, atol=1e-10)
    # 1-D input and scalar estimate
    one = uncenter_kernel_vectors(K_c_rows[0].numpy(), centerer, float(K[0].mean()))
    np.testing.assert_allclose(one, K[0], atol=1e-13)


def test_uncentering_estimates(blobs):
    _, K, centerer, _ = _kernel_setup(blobs, 1.0)
    k_c = centerer.transform(torch.tensor(K[:4]))
    mean_est = uncenter_kernel_vectors(k_c, centerer, "mean")
    torch.testing.assert_close(mean_est, k_c + centerer.column_means_)
    zm = uncenter_kernel_vectors(k_c, centerer, "zero-min")
    # zero-min shifts by minus the row minimum; un-centering adds back a few terms of size <= 1 (RBF),
    # so the new minimum is 0 up to a few roundings: 1e-15 ~ 4.5 eps.
    torch.testing.assert_close(zm.min(1).values, torch.zeros(4, dtype=torch.float64), atol=1e-15, rtol=0)
    # every estimate only shifts rows by a constant
    diff = (zm - mean_est).numpy()
    np.testing.assert_allclose(diff, diff[:, :1] * np.ones_like(diff), atol=1e-14)


def test_uncentering_errors(blobs):
    _, K, centerer, _ = _kernel_setup(blobs, 1.0)
    k_c = centerer.transform(torch.tensor(K[:2]))
    with pytest.raises(ValueError, match="fitted"):
        uncenter_kernel_vectors(k_c, KernelCenterer())
    with pytest.raises(ValueError, match="29 training|fitted on 30"):
        uncenter_kernel_vectors(k_c[:, :-1], centerer)
    with pytest.raises(ValueError, match="estimate must be one of"):
        uncenter_kernel_vectors(k_c, centerer, "median")
    with pytest.raises(ValueError, match="gram_centered"):
        uncenter_kernel_vectors(k_c, centerer, "span")
    with pytest.raises(ValueError, match="one value per row"):
        uncenter_kernel_vectors(k_c, centerer, np.ones(3))


def test_smoother_on_exact_kernel_vector_narrow_and_wide(blobs):
    """Narrow RBF: the smoother returns the training point. Wide RBF: known shrinkage to the mean."""
    j = 7
    _, K, centerer, _ = _kernel_setup(blobs, 0.05)
    k_c = centerer.transform(torch.tensor(K[j:j + 1]))
    k = uncenter_kernel_vectors(k_c, centerer, K[j:j + 1].mean(1))
    np.testing.assert_allclose(kernel_smoother(k, torch.tensor(blobs))[0].numpy(), blobs[j], atol=1e-10)

    # Wide bandwidth: all weights ~1, the weighted mean is pulled toward the training mean.
    _, K_wide, _, _ = _kernel_setup(blobs, 20.0)
    x_hat = kernel_smoother(K_wide[j], blobs)
    mean = blobs.mean(0)
    assert np.linalg.norm(x_hat - mean) < 0.2 * np.linalg.norm(blobs[j] - mean)
    # ... and it still lies on x_j's side of the mean (bias is shrinkage, not a flip)
    assert np.dot(x_hat - mean, blobs[j] - mean) > 0


# ----------------------------------------------------------------------------- kNN


def test_knn_recovers_training_point_from_exact_centered_vector(blobs):
    _, K, centerer, K_c = _kernel_setup(blobs, 1.0)
    k_c = centerer.transform(torch.tensor(K))  # all training points
    d2 = feature_space_sq_distances(k_c, torch.diagonal(K_c))
    out, idx = knn_preimage(d2, torch.tensor(blobs), n_neighbors=1, return_indices=True)
    np.testing.assert_array_equal(idx[:, 0].numpy(), np.arange(blobs.shape[0]))
    np.testing.assert_allclose(out.numpy(), blobs)
    # true squared distances with sq_norms: zero to itself, matching input-space RBF geometry
    d2_true = feature_space_sq_distances(k_c, torch.diagonal(K_c), torch.diagonal(K_c))
    np.testing.assert_allclose(d2_true.numpy(), 2.0 - 2.0 * K, atol=1e-12)
    # distance weighting: an exact match takes all the weight
    np.testing.assert_allclose(knn_preimage(d2_true, blobs, n_neighbors=3, weighting="distance").numpy(), blobs)


def test_knn_weighting_and_errors():
    T = np.array([[0.0], [1.0], [10.0]])
    d2 = np.array([[1.0, 4.0, 100.0]])
    np.testing.assert_allclose(knn_preimage(d2, T, n_neighbors=2), [[0.5]])
    # 1/d weights: d = 1, 2 -> (1 * 0 + 0.5 * 1) / 1.5
    np.testing.assert_allclose(knn_preimage(d2, T, n_neighbors=2, weighting="distance"), [[1 / 3]])
    with pytest.raises(ValueError, match="true squared distances"):
        knn_preimage(d2 - 5.0, T, n_neighbors=2, weighting="distance")
    with pytest.raises(ValueError, match="n_neighbors"):
        knn_preimage(d2, T, n_neighbors=0)
    with pytest.raises(ValueError, match="weighting"):
        knn_preimage(d2, T, n_neighbors=1, weighting="gaussian")
    with pytest.raises(ValueError, match="must match"):
        knn_preimage(d2[:, :2], T)
    with pytest.raises(ValueError, match="gram_diag_centered"):
        feature_space_sq_distances(d2, np.ones(2))


# ----------------------------------------------------------------------------- fixed point


def test_dual_coefficients_to_expansion():
    N = 5
    alpha = np.eye(N)[2] - 1.0 / N  # phi_2 - m = Phi_c (e_2 - 1/N)
    np.testing.assert_allclose(dual_coefficients_to_expansion(alpha), np.eye(N)[2], atol=1e-15)
    g = dual_coefficients_to_expansion(torch.randn(3, N, dtype=torch.float64))
    torch.testing.assert_close(g.sum(1), torch.ones(3, dtype=torch.float64))


def test_fixed_point_recovers_training_points(separated):
    X = separated
    N = X.shape[0]
    _, K, centerer, K_c = _kernel_setup(X, 0.5)
    # exact coefficients, started away from the answer
    start = X + 0.3
    Z, info = fixed_point_preimage(np.eye(N), X, RBF(0.5), init=start, return_info=True)
    np.testing.assert_allclose(Z, X, atol=1e-10)
    assert info["converged"].all() and not info["fell_back"].any()
    # from exact centered kernel vectors: alpha = K_c^+ k_c, then gamma
    k_c = centerer.transform(torch.tensor(K))
    alpha = torch.linalg.pinv(K_c, hermitian=True) @ k_c.T
    gamma = dual_coefficients_to_expansion(alpha.T)
    Z2 = fixed_point_preimage(gamma, torch.tensor(X), 0.5, init="smoother")
    assert isinstance(Z2, torch.Tensor)
    np.testing.assert_allclose(Z2.numpy(), X, atol=1e-6)


def test_fixed_point_midpoint_and_batching():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [20.0, 20.0]])
    gamma = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    Z = fixed_point_preimage(gamma, X, 1.0, init=np.array([[0.2, 0.1], [19.0, 19.0]]))
    np.testing.assert_allclose(Z, [[0.5, 0.0], [20.0, 20.0]], atol=1e-6)
    # batch == row by row
    rows = np.stack([fixed_point_preimage(g, X, 1.0) for g in gamma])
    np.testing.assert_allclose(fixed_point_preimage(gamma, X, 1.0), rows, atol=1e-12)


def test_fixed_point_vanishing_denominator_and_nonconvergence():
    X = np.array([[0.0, 0.0], [2.0, 0.0]])
    gamma = np.array([[1.0, -1.0]])
    # midpoint: k(z, x0) = k(z, x1) -> denominator exactly 0 -> restart from the best training point
    Z, info = fixed_point_preimage(gamma, X, 1.0, init=np.array([[1.0, 0.0]]), return_info=True)
    assert np.isfinite(Z).all() and info["restarted"][0]
    assert Z[0, 0] < 1.0  # on x0's side
    with pytest.warns(PreimageConvergenceWarning):
        _, info = fixed_point_preimage(np.array([[0.5, 0.5]]), X, 3.0, init=np.array([[0.3, 0.2]]),
                                       max_iter=1, return_info=True)
    assert not info["converged"][0]


def test_fixed_point_errors(blobs):
    gamma = np.eye(blobs.shape[0])
    with pytest.raises(ValueError, match="gamma has 29"):
        fixed_point_preimage(gamma[:, :-1], blobs, 1.0)
    with pytest.raises(TypeError, match="RBF"):
        fixed_point_preimage(gamma, blobs, "linear")
    with pytest.raises(ValueError, match="init"):
        fixed_point_preimage(gamma, blobs, 1.0, init="random")
    with pytest.raises(ValueError, match="max_iter"):
        fixed_point_preimage(gamma, blobs, 1.0, max_iter=0)
    with pytest.raises(ValueError, match="bandwidth"):
        fixed_point_preimage(gamma, blobs, -1.0)


# ----------------------------------------------------------------------------- learned


def test_learned_preimage_fits_and_generalises():
    rng = np.random.default_rng(7)
    Z = rng.uniform(-1, 1, size=(150, 2))
    f = lambda z: np.column_stack([np.sin(2 * z[:, 0]) + z[:, 1] ** 2, z[:, 0] * z[:, 1], np.cos(z[:, 1])])
    X = f(Z)
    lp = LearnedPreimage(alpha=1e-6).fit(Z, X)
    assert lp.bandwidth_ > 0
    train_mse = np.mean((lp.predict(Z) - X) ** 2)
    assert train_mse < 1e-5
    Z_test = rng.uniform(-0.9, 0.9, size=(50, 2))
    test_mse = np.mean((lp.predict(Z_test) - f(Z_test)) ** 2)
    assert test_mse < 1e-3 * np.var(f(Z_test))
    # torch in -> torch out; far away the prediction goes back to the mean input
    far = lp.predict(torch.tensor([[50.0, 50.0]], dtype=torch.float64))
    assert isinstance(far, torch.Tensor)
    np.testing.assert_allclose(far.numpy()[0], X.mean(0), atol=1e-8)


def test_learned_preimage_errors():
    with pytest.raises(ValueError, match="not fitted"):
        LearnedPreimage().predict(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="alpha"):
        LearnedPreimage(alpha=0.0)
    with pytest.raises(ValueError, match="paired"):
        LearnedPreimage().fit(np.zeros((5, 2)), np.zeros((4, 3)))
    lp = LearnedPreimage(bandwidth=1.0).fit(np.random.default_rng(0).normal(size=(6, 2)), np.zeros((6, 3)))
    with pytest.raises(ValueError, match="columns"):
        lp.predict(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="distinct"):
        LearnedPreimage().fit(np.ones((4, 2)), np.zeros((4, 1)))


# ----------------------------------------------------------------------------- devices


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_tensors_stay_on_device(blobs):  # pragma: no cover - GPU only
    dev = torch.device("cuda")
    X = torch.tensor(blobs, device=dev)
    W = torch.rand(4, blobs.shape[0], device=dev, dtype=torch.float64)
    assert kernel_smoother(W, X).device.type == "cuda"
    assert fixed_point_preimage(torch.eye(blobs.shape[0], device=dev)[:3], X, 1.0).device.type == "cuda"
    d2 = feature_space_sq_distances(W, torch.ones(blobs.shape[0], device=dev))
    assert knn_preimage(d2, X, n_neighbors=2).device.type == "cuda"
    lp = LearnedPreimage().fit(X[:, :2], X)
    assert lp.predict(X[:3, :2]).device.type == "cuda"


def test_smoother_resolves_a_data_scaled_width_once_at_fit():
    """``KernelSmoother(RBF())`` takes its width from the training inputs at ``fit`` (kept in ``kernel_``);
    ``predict`` is the smoother of that resolved kernel's weights."""
    from kppca.preimage.smoother import KernelSmoother, kernel_smoother

    rng = np.random.default_rng(0)
    X, Xn = rng.normal(size=(40, 3)) * 7.0, rng.normal(size=(5, 3)) * 7.0
    smoother = KernelSmoother(RBF()).fit(X)
    width = float(np.sqrt(X.shape[1] * X.var() / 2.0))  # scikit-learn's gamma="scale" as a width
    assert smoother.kernel_.bandwidth == pytest.approx(width, rel=64 * np.finfo(float).eps)
    expected = kernel_smoother(RBF(smoother.kernel_.bandwidth)(torch.as_tensor(Xn), torch.as_tensor(X)),
                               torch.as_tensor(X))
    np.testing.assert_array_equal(smoother.predict(Xn), np.asarray(expected))
