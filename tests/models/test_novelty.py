"""``novelty_score``: the fraction of ``|phi(x) - m|^2`` outside ``H_E``.

Tolerances follow from the conditioning stated in ``BasePPCA.novelty_score``:
the dual value is a difference of numbers of size ``max k``, with an absolute
error of about ``N eps (max k + lam_1)``; divided by ``|phi(x) - m|^2`` this bounds
the error of the fraction (a factor 10 covers the constants of the sums).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.metrics import roc_auc_score

from kppca import DualPPCA, PrimalPPCA
from kppca.features import RandomFourierFeatures
from kppca.kernels import RBF, Linear

EPS = np.finfo(np.float64).eps


def _dual_error_bound(model: DualPPCA, X: np.ndarray) -> np.ndarray:
    """Per-point bound on the rounding error of the dual fraction (see the module docstring)."""
    Xt = torch.as_tensor(X, dtype=model.eigenvalues_.dtype)
    K_x = model.kernel_.gram(Xt, model.X_fit_)
    kmax = float(max(K_x.abs().max(), model.kernel_.diag(Xt).abs().max()))
    total = (
        model.kernel_.diag(Xt) - 2 * K_x.mean(1) + model.centerer_.grand_mean_
        if model.center
        else model.kernel_.diag(Xt)
    )
    lam1 = float(model.eigenvalues_[0])
    eps = torch.finfo(model.eigenvalues_.dtype).eps  # the model's working precision
    return (10 * model.n_samples_ * eps * (kmax + lam1) / total).double().numpy()


@pytest.mark.parametrize("center", [True, False])
def test_primal_and_dual_agree_with_the_linear_kernel(rng, center):
    # D > N so that H_E (dimension <= N) is a proper subspace and the fractions are not all 0.
    X, Y = rng.normal(size=(20, 30)) + 1.0, rng.normal(size=(7, 30)) + 1.0
    dual = DualPPCA(3, kernel=Linear(), center=center).fit(X)
    primal = PrimalPPCA(3, center=center).fit(X)
    d, p = dual.novelty_score(Y), primal.novelty_score(Y)
    assert np.all(d > 0.1)  # genuinely outside a 19- (or 20-) dimensional span of 30-d data
    np.testing.assert_array_less(np.abs(d - p), _dual_error_bound(dual, Y))


def test_primal_and_dual_agree_with_random_fourier_features(rng):
    X, Y = rng.normal(size=(30, 3)), rng.normal(size=(10, 3)) * 2.0
    fmap = RandomFourierFeatures(0.5, n_features=200, random_state=0).fit(X)
    dual = DualPPCA(3, kernel=fmap.as_kernel()).fit(X)
    primal = PrimalPPCA(3, feature_map=fmap).fit(X)
    d, p = dual.novelty_score(Y), primal.novelty_score(Y)
    assert np.all((d > 0.01) & (d < 1))  # a narrow bandwidth leaves much of phi(Y) outside the span
    np.testing.assert_array_less(np.abs(d - p), _dual_error_bound(dual, Y))


@pytest.mark.parametrize("kernel", [Linear(), RBF(2.0)])
def test_training_points_are_inside_the_span(rng, kernel):
    X = rng.normal(size=(25, 40))
    model = DualPPCA(2, kernel=kernel).fit(X)
    s = model.novelty_score(X)
    np.testing.assert_array_less(s, _dual_error_bound(model, X))
    primal = PrimalPPCA(2).fit(X)
    # Primal: explicit residual of a projection onto orthonormal V (d x r): error ~ d eps relative.
    assert primal.novelty_score(X).max() < 10 * X.shape[1] * EPS


def test_float32_models_stay_within_their_precision(rng):
    X, Y = rng.normal(size=(50, 4)).astype(np.float32), rng.normal(size=(5, 4)).astype(np.float32)
    model = DualPPCA(2, kernel=RBF(1.0), dtype=torch.float32).fit(X)
    assert model.eigenvalues_.dtype == torch.float32
    np.testing.assert_array_less(model.novelty_score(X), _dual_error_bound(model, X))
    s = model.novelty_score(Y)
    assert s.dtype == np.float32 and np.all((s >= 0) & (s <= 1))


def test_partial_solver_gives_the_same_scores(rng):
    X, Y = rng.normal(size=(60, 4)), rng.normal(size=(5, 4))
    dense = DualPPCA(3, kernel=RBF(1.0), eigen_solver="dense").fit(X)
    partial = DualPPCA(3, kernel=RBF(1.0), eigen_solver="partial", random_state=0).fit(X)
    np.testing.assert_allclose(partial.novelty_score(Y), dense.novelty_score(Y), rtol=0, atol=_dual_error_bound(dense, Y).max())


def test_a_point_at_the_mean_scores_zero(rng):
    X = rng.normal(size=(10, 30))
    mean = X.mean(0, keepdims=True)  # phi(mean) = m for the linear kernel, up to rounding
    assert DualPPCA(2, kernel=Linear()).fit(X).novelty_score(mean)[0] == 0.0
    assert PrimalPPCA(2).fit(X).novelty_score(mean)[0] == 0.0


def test_range_types_and_inputs_untouched(rng):
    X = rng.normal(size=(30, 3))
    far = np.vstack([X[:3] * 5, rng.uniform(-20, 20, size=(4, 3))])
    model = DualPPCA(2, kernel=RBF(0.5)).fit(X)
    before = far.copy()
    s = model.novelty_score(far)
    assert isinstance(s, np.ndarray) and s.shape == (7,)
    assert np.all((s >= 0) & (s <= 1))
    np.testing.assert_array_equal(far, before)
    t = model.novelty_score(torch.as_tensor(far))
    assert isinstance(t, torch.Tensor)
    np.testing.assert_array_equal(t.numpy(), s)


def test_errors():
    with pytest.raises(NotFittedError, match="novelty_score"):
        DualPPCA(2).novelty_score(np.zeros((1, 2)))
    model = PrimalPPCA(1).fit(np.random.default_rng(0).normal(size=(10, 3)))
    with pytest.raises(ValueError, match="3"):
        model.novelty_score(np.zeros((2, 4)))


def test_separates_noise_images_from_digits():
    from kppca.datasets import load_mnist

    X, _ = load_mnist(n_samples=700, random_state=0)
    train, held_out = X[:500], X[500:]
    noise = np.random.default_rng(1).uniform(size=(200, X.shape[1]))
    model = DualPPCA(10, kernel=RBF(5.0)).fit(train)
    s_digits, s_noise = model.novelty_score(held_out), model.novelty_score(noise)
    labels = np.r_[np.zeros(len(s_digits)), np.ones(len(s_noise))]
    assert roc_auc_score(labels, np.r_[s_digits, s_noise]) >= 0.95
    assert model.novelty_score(train).max() < 1e-10  # bound N eps (1 + lam_1) / |phi - m|^2 ~ 1e-12 here
