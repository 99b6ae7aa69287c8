"""Pre-image strategy objects over a TrainingContext, used with and without a PPCA model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca.datasets import load_digits
from kppca.features import RandomFourierFeatures
from kppca.kernels import RBF
from kppca.preimage import (
    AutoPreimage,
    FeaturePoints,
    KNNPreimage,
    Preimage,
    SmootherPreimage,
    TrainingContext,
    kernel_smoother,
    make_preimage,
    uncenter_kernel_vectors,
)

EPS = np.finfo(np.float64).eps


@pytest.fixture(scope="module")
def digits() -> np.ndarray:
    X, _ = load_digits(n_samples=100, random_state=1)
    return X


@pytest.fixture(scope="module")
def context(digits) -> TrainingContext:
    return TrainingContext.from_inputs(digits, RBF(1.5))


def _training_points(ctx: TrainingContext, rows: list[int]) -> FeaturePoints:
    """psi = phi(x_i): alpha = e_i - 1/N (so psi - m = Phi_c alpha), k_c = K_c e_i."""
    N = ctx.n_samples
    K = ctx.kernel.gram(ctx.X, ctx.X)
    K_c = K - ctx.centerer.column_means_[:, None] - ctx.centerer.column_means_[None, :] + ctx.centerer.grand_mean_
    alpha = torch.eye(N, dtype=K.dtype)[rows] - 1.0 / N
    return FeaturePoints(K_c[rows], alpha)


def test_context_matches_the_model(digits, context):
    model = DualPPCA(4, kernel=RBF(1.5)).fit(digits)
    ctx = model.preimage_context()
    N = len(digits)
    bound = N * EPS  # |K| <= 1 for the RBF kernel: sums of N terms
    np.testing.assert_allclose(ctx.centerer.column_means_, context.centerer.column_means_, rtol=0, atol=bound)
    np.testing.assert_allclose(ctx.diag_centered, context.diag_centered, rtol=0, atol=4 * bound)


def test_raw_weights_and_distances_are_exact_for_training_points(context):
    rows = [0, 5, 17]
    pts = _training_points(context, rows)
    K = context.kernel.gram(context.X, context.X)
    bound = 4 * context.n_samples * EPS
    np.testing.assert_allclose(context.raw_weights(pts.k_c, pts.alpha), K[rows], rtol=0, atol=bound)
    D2 = context.sq_distances(pts.k_c, pts.alpha)
    np.testing.assert_allclose(D2[np.arange(3), rows], 0.0, atol=bound)
    assert (D2 > 1e-3).sum(1).tolist() == [context.n_samples - 1] * 3  # no duplicated digits


def test_model_context_gives_the_raw_gram_rows(digits, context):
    model = DualPPCA(4, kernel=RBF(1.5)).fit(digits)
    ctx = model.preimage_context()
    assert ctx.gram is model._gram() and model._gram().has_matrix and context.gram is None
    K = RBF(1.5).gram(torch.as_tensor(digits), torch.as_tensor(digits))
    bound = 4 * len(digits) * EPS  # centering and un-centering: sums of N terms of size <= 1
    np.testing.assert_allclose(ctx.gram_rows(10, 30), K[10:30], rtol=0, atol=bound)
    np.testing.assert_allclose(context.gram_rows(10, 30), K[10:30], rtol=0, atol=0)


def test_a_kept_context_survives_the_sampling_factor(digits):
    """After a partial fit the first exact sample factors the cached K_c in place: a context handed out
    before must not read that memory as K_c (it asks the Gram object, which evaluates the kernel)."""
    model = DualPPCA(4, kernel=RBF(1.5), eigen_solver="partial", random_state=0).fit(digits)
    ctx = model.preimage_context()
    assert ctx.gram.has_matrix
    model.sample(3, random_state=0, latent="prior")
    assert not ctx.gram.has_matrix and ctx.gram.has_cholesky
    X = torch.as_tensor(digits)
    np.testing.assert_array_equal(ctx.gram_rows(0, 3), RBF(1.5).gram(X[:3], X))  # the same computation


def test_auto_selection_corrects_hubs_for_samples_only(digits):
    model = DualPPCA(4, kernel=RBF(1.5)).fit(digits)
    np.testing.assert_array_equal(model.sample(6, random_state=0), model.sample(6, random_state=0, selection="local"))
    assert not np.array_equal(model.sample(6, random_state=0), model.sample(6, random_state=0, selection="raw"))
    # Maps of given points: the smoother's "auto" selection is "raw" (the default pre-image, "auto", maps
    # them with the learned map instead, so the smoother is named here).
    np.testing.assert_array_equal(model.reconstruct(digits[:6], preimage="smoother"),
                                  model.reconstruct(digits[:6], preimage="smoother", selection="raw"))
    h = model.transform(digits[:6])
    np.testing.assert_array_equal(model.inverse_transform(h, preimage="smoother"),
                                  model.inverse_transform(h, preimage="smoother", selection="raw"))


def test_hub_neighbors_as_a_fraction(context):
    a = SmootherPreimage(selection="local", hub_neighbors=0.2).hub_scores(context, {})
    b = SmootherPreimage(selection="local", hub_neighbors=20).hub_scores(context, {})  # 0.2 * 100
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="hub_neighbors"):
        SmootherPreimage(hub_neighbors=1.5)


def test_hub_neighbors_auto_is_the_rule_of_n(context):
    a = SmootherPreimage(selection="local", hub_neighbors="auto").hub_scores(context, {})
    b = SmootherPreimage(selection="local", hub_neighbors=10).hub_scores(context, {})  # 0.1 * 100 (N <= 5,000)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="hub_neighbors"):
        SmootherPreimage(hub_neighbors="all")


def test_hub_window_rule():
    """0.1 N up to 5,000, then 500 (N / 5000)^0.8: continuous, increasing, a falling fraction of N."""
    from kppca.preimage.strategies import hub_window

    assert [hub_window(n) for n in (1, 20, 2000, 5000)] == [0, 2, 200, 500]
    # computed apart: 500 * 4**0.8 = 500 * 2**1.6 = 1515.72; 500 * 12**0.8 = 3650.19
    assert hub_window(20_000) == 1516 and hub_window(60_000) == 3650
    n = np.arange(4_000, 70_000, 500)
    k = np.array([hub_window(int(v)) for v in n])
    assert np.all(np.diff(k) > 0) and np.all(np.diff(k / n) <= 1e-12)


def test_strategies_without_a_model(context, digits):
    """An RKM-style user: context from inputs, points from its own expansion, no PPCA model."""
    pts = _training_points(context, [3, 4])
    np.testing.assert_allclose(KNNPreimage(n_neighbors=1)(pts, context), digits[[3, 4]], atol=0)
    out = SmootherPreimage(n_neighbors=None, selection="raw", clip_negative=False)(pts, context)
    K = context.kernel.gram(context.X, context.X).numpy()
    np.testing.assert_allclose(out, kernel_smoother(K[[3, 4]], digits, clip_negative=False), atol=1e-12)


@pytest.mark.parametrize("selection", ["raw", "centered", "local"])
def test_smoother_selects_by_its_score_and_weighs_by_raw_kernel_values(context, digits, selection):
    model = DualPPCA(4, kernel=RBF(1.5)).fit(digits)
    k_c = torch.as_tensor(model.sample_kernel(6, random_state=0))
    alpha = model._dual_coefficients(k_c)
    pts = FeaturePoints(k_c, alpha)
    strategy = SmootherPreimage(n_neighbors=7, selection=selection, hub_neighbors=9)
    out = strategy(pts, context).numpy()
    W = context.raw_weights(k_c, alpha).numpy()
    K = context.kernel.gram(context.X, context.X).numpy()
    np.fill_diagonal(K, -np.inf)
    hubs = {"raw": 0.0, "centered": context.centerer.column_means_.numpy(),
            "local": np.sort(K, 1)[:, -9:].mean(1)}[selection]
    expected = []
    for w, s in zip(W, W - hubs):
        keep = np.argsort(-s)[:7]
        wk = np.clip(w[keep], 0, None)
        expected.append(wk @ digits[keep] / wk.sum())
    np.testing.assert_allclose(out, np.array(expected), rtol=0, atol=1e-12)
    if selection == "raw":  # the previous smoother (un-centered with the exact span row mean) exactly
        s_exact = context.row_means(alpha)
        old = kernel_smoother(uncenter_kernel_vectors(k_c, context.centerer, s_exact), digits, n_neighbors=7)
        np.testing.assert_allclose(out, old, rtol=0, atol=1e-12)


def test_candidates_restrict_the_neighbours(context, digits):
    pts = _training_points(context, [0, 1, 2])
    allowed = torch.zeros((3, context.n_samples), dtype=torch.bool)
    allowed[:, 50:] = True
    masked = FeaturePoints(pts.k_c, pts.alpha, None, allowed)
    for strategy in (SmootherPreimage(n_neighbors=1), KNNPreimage(n_neighbors=1)):
        out = strategy(masked, context).numpy()
        # each output is one allowed training digit
        d = ((out[:, None, :] - digits[None, 50:, :]) ** 2).sum(-1).min(1)
        np.testing.assert_allclose(d, 0.0, atol=1e-20)


def test_make_preimage():
    assert isinstance(make_preimage(), AutoPreimage)
    assert isinstance(make_preimage("smoother"), SmootherPreimage)
    assert make_preimage("Fixed_Point").name == "fixed-point"
    s = SmootherPreimage(n_neighbors=3)
    assert make_preimage(s) is s
    with pytest.raises(ValueError, match="set them when building"):
        make_preimage(s, n_neighbors=4)
    with pytest.raises(ValueError, match="unknown option"):
        make_preimage("knn", selection="raw")
    with pytest.raises(ValueError, match="selection"):
        make_preimage("smoother", selection="hubless")
    with pytest.raises(ValueError, match="unknown"):
        make_preimage("nearest")
    assert "selection='auto'" in repr(make_preimage())
    assert isinstance(s, Preimage)


def test_models_accept_a_strategy_object(digits):
    model = DualPPCA(4, kernel=RBF(1.5)).fit(digits)
    np.testing.assert_array_equal(
        model.sample(5, random_state=0, preimage=KNNPreimage(n_neighbors=3)),
        model.sample(5, random_state=0, preimage="knn", n_neighbors=3),
    )


def test_reconstruct_means_inputs_on_both_models(digits):
    """``reconstruct`` returns inputs (D columns); the feature-space one is ``reconstruct_features``."""
    ident = PrimalPPCA(4).fit(digits)
    np.testing.assert_array_equal(ident.reconstruct(digits[:5]), ident.reconstruct_features(digits[:5]))
    rff = PrimalPPCA(4, feature_map=RandomFourierFeatures(1.5, n_features=80, random_state=0)).fit(digits)
    assert rff.reconstruct_features(digits[:5]).shape == (5, 80)
    rec = rff.reconstruct(digits[:5], preimage="knn", n_neighbors=1)
    assert rec.shape == (5, digits.shape[1])
    np.testing.assert_allclose(rec, rff.inverse_transform(rff.transform(digits[:5]), preimage="knn", n_neighbors=1))


def test_sampled_codes_keep_their_dual_coefficients_factored(digits):
    """A dual model's latent points hold ``alpha = (h a) E^T`` as its factors; every strategy sees that matrix
    (``dual_coefficients()``: numpy's product, to the rounding of q terms), and the smoother's row means ``alpha (K 1/N - 1^T K 1/N^2)``
    from the factors agree with the dense product's: two sums over N and q terms of ``|alpha_i| |v_i|``, each
    rounding by at most ``(N + q) eps`` of ``sum |left| |right|^T |v|``."""
    from kppca.preimage.context import Factored

    m = DualPPCA(5, kernel=RBF(1.5)).fit(digits)
    h = torch.randn(7, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    points = m._latent_points(h)
    assert isinstance(points.alpha, Factored) and points.alpha.shape == (7, 100)
    dense = points.dual_coefficients()
    left, right = (h * m._a_scale).numpy(), m.eigenvectors_.numpy()
    bound = 2 * 5 * EPS * (abs(left) @ abs(right).T).max()
    np.testing.assert_allclose(dense.numpy(), left @ right.T, rtol=0, atol=bound)
    np.testing.assert_allclose(points.select(slice(2, 5)).dual_coefficients().numpy(), (left @ right.T)[2:5], rtol=0,
                               atol=bound)
    ctx = m.preimage_context()
    c = ctx.centerer
    v = (c.column_means_ - c.grand_mean_).abs()
    scale = (points.alpha.left.abs() @ (points.alpha.right.abs().T @ v)).numpy()
    np.testing.assert_allclose(ctx.row_means(points.alpha).numpy(), ctx.row_means(dense).numpy(), rtol=0,
                               atol=2 * (100 + 5) * EPS * scale.max())


@pytest.mark.parametrize("M, N, k", [(7, 50, 3), (5, 40, 12), (1, 9, 8)])
def test_largest_by_column_blocks_is_one_topk_over_whole_rows(monkeypatch, M, N, k):
    """Blocks of columns (here 8 wide, or k if larger), merged block by block, find the same indices in the same
    order as one ``topk`` over whole rows (distinct scores: the order among ties is the only freedom)."""
    from kppca.preimage import strategies

    S = torch.randn(M, N, generator=torch.Generator().manual_seed(k), dtype=torch.float64)
    seen = []
    monkeypatch.setattr(strategies, "SCORE_BLOCK_ENTRIES", 8 * M)
    idx = strategies._largest_by_column_blocks(lambda c: seen.append(c) or S[:, c], M, N, k)
    assert len(seen) > 1  # several blocks
    torch.testing.assert_close(idx, torch.topk(S, k, dim=1).indices, rtol=0, atol=0)


def test_raw_weights_of_some_columns_are_the_entries_of_the_whole_matrix(digits):
    """``raw_weights(..., columns)`` of a range or of per-row indices: bitwise the entries of the whole matrix."""
    m = DualPPCA(5, kernel=RBF(1.5)).fit(digits)
    points = m._latent_points(torch.randn(6, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64))
    ctx = m.preimage_context()
    W = ctx.raw_weights(points.k_c, points.alpha)
    torch.testing.assert_close(ctx.raw_weights(points.k_c, points.alpha, slice(30, 71)), W[:, 30:71], rtol=0, atol=0)
    s = ctx.row_means(points.alpha)  # given once for many blocks: the same entries
    torch.testing.assert_close(ctx.raw_weights(points.k_c, points.alpha, slice(30, 71), row_means=s), W[:, 30:71],
                               rtol=0, atol=0)
    idx = torch.randint(0, 100, (6, 4), generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(ctx.raw_weights(points.k_c, points.alpha, idx), torch.gather(W, 1, idx), rtol=0,
                               atol=0)
