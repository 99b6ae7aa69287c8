"""kppca.metrics.sample_quality (Fréchet distance) and digit_features: the Fréchet feature distance (FID recipe)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

from kppca.datasets import load_mnist
from kppca.metrics import (
    digit_features,
    frechet_distance,
    frechet_feature_distance,
    gaussian_statistics,
    sample_quality,
    train_digit_features,
)


def _scipy_frechet(mu1, S1, mu2, S2) -> float:
    # The textbook formula with scipy's general matrix square root of the (non-symmetric) product.
    root = scipy.linalg.sqrtm(S1 @ S2)
    return float(np.sum((mu1 - mu2) ** 2) + np.trace(S1) + np.trace(S2) - 2 * np.trace(root).real)


def _random_spd(gen: np.random.Generator, d: int, condition: float) -> np.ndarray:
    Q, _ = np.linalg.qr(gen.normal(size=(d, d)))
    return (Q * np.geomspace(1.0, 1.0 / condition, d)) @ Q.T


@pytest.mark.parametrize("d, condition", [(2, 1.0), (8, 10.0), (30, 1e4)])
def test_matches_scipy_sqrtm_on_random_spd(d, condition):
    gen = np.random.default_rng(d)
    S1, S2 = _random_spd(gen, d, condition), _random_spd(gen, d, condition)
    mu1, mu2 = gen.normal(size=d), gen.normal(size=d)
    ours = frechet_distance(mu1, S1, mu2, S2)
    ref = _scipy_frechet(mu1, S1, mu2, S2)
    # Both are sums of O(d) terms of size ~1 whose square roots carry relative error
    # ~ condition * eps (eigenvalues down to 1/condition): 100 d condition eps absolute.
    assert ours == pytest.approx(ref, abs=100 * d * condition * np.finfo(float).eps)


def test_closed_forms():
    eps = np.finfo(float).eps
    S = _random_spd(np.random.default_rng(0), 5, 10.0)
    mu = np.arange(5.0)
    # Same Gaussian: 0 (up to rounding of Tr S ~ 1; clipped at 0, never negative).
    assert 0.0 <= frechet_distance(mu, S, mu, S) < 100 * eps * np.trace(S)
    # A shift only: |delta|^2.
    assert frechet_distance(mu, S, mu + 2.0, S) == pytest.approx(5 * 4.0, rel=1e-12)
    # Commuting (diagonal) covariances: sum (sqrt(a) - sqrt(b))^2.
    a, b = np.array([1.0, 4.0, 9.0]), np.array([4.0, 1.0, 16.0])
    expected = np.sum((np.sqrt(a) - np.sqrt(b)) ** 2)
    assert frechet_distance(np.zeros(3), np.diag(a), np.zeros(3), np.diag(b)) == pytest.approx(expected, rel=1e-12)
    # A singular covariance (rank 1) against itself: still 0, no NaN from the square root.
    v = np.ones((4, 1))
    assert frechet_distance(np.zeros(4), v @ v.T, np.zeros(4), v @ v.T) < 100 * eps * 4


def test_statistics_and_errors():
    F = np.random.default_rng(0).normal(size=(50, 3))
    mu, S = gaussian_statistics(F)
    np.testing.assert_allclose(mu.numpy(), F.mean(0), rtol=1e-14)
    np.testing.assert_allclose(S.numpy(), np.cov(F, rowvar=False), rtol=1e-12)
    assert gaussian_statistics(torch.as_tensor(F, dtype=torch.float32))[0].dtype == torch.float64
    with pytest.raises(ValueError, match="at least 2 rows"):
        gaussian_statistics(F[:1])
    with pytest.raises(ValueError, match="one d"):
        frechet_distance(np.zeros(2), np.eye(2), np.zeros(3), np.eye(3))
    with pytest.raises(ValueError, match="NaN"):
        frechet_distance(np.array([np.nan, 0.0]), np.eye(2), np.zeros(2), np.eye(2))


@pytest.fixture(scope="module")
def digits():
    X, y = load_mnist(random_state=0)
    gen = np.random.default_rng(0)
    order = gen.permutation(len(y))  # the bundled digits are sorted by class
    return X[order[:3000]], y[order[:3000]], X[order[3000:4000]], y[order[3000:4000]]


@pytest.fixture(scope="module")
def net(digits):
    _, _, X_ref, y_ref = digits
    torch.set_num_threads(1)
    return digit_features(X_ref, y_ref)


def test_network_is_deterministic_cached_and_classifies(digits, net):
    X, y, X_ref, y_ref = digits
    assert digit_features(X_ref, y_ref) is net  # cached for the same data and settings
    again = train_digit_features(X_ref[:200], y_ref[:200], epochs=2)
    twin = train_digit_features(X_ref[:200], y_ref[:200], epochs=2)
    assert all(torch.equal(a, b) for a, b in zip(again.weights, twin.weights))
    # Held-out accuracy of a 1,000-digit MLP on MNIST is ~0.9; 0.8 fails only if training broke.
    assert (net.predict_proba(X[:1000]).argmax(1) == y[:1000]).mean() > 0.8
    assert net.features(X[:5]).shape == (5, 64)


def test_two_samples_of_real_digits_are_close_and_closer_with_more(digits, net):
    X, _, X_ref, _ = digits
    values = [frechet_feature_distance(X[:n], X_ref, net) for n in (250, 1000, 3000)]
    # The bias of the plug-in estimate shrinks with n (about like 1/n); the sizes differ 3-4x.
    assert values[0] > values[1] > values[2]


def test_shift_and_blur_grow_it_monotonically(digits, net):
    from scipy.ndimage import gaussian_filter, shift

    X, _, X_ref, _ = digits
    images = X[:1000].reshape(-1, 28, 28)
    blurred = [frechet_feature_distance(gaussian_filter(images, (0, s, s)).reshape(-1, 784), X_ref, net)
               for s in (0.0, 0.7, 1.4, 2.1)]
    shifted = [frechet_feature_distance(shift(images, (0, s, s), order=1).reshape(-1, 784), X_ref, net)
               for s in (0.0, 1.0, 2.0, 3.0)]
    assert all(a < b for a, b in zip(blurred, blurred[1:])), blurred
    assert all(a < b for a, b in zip(shifted, shifted[1:])), shifted


def test_sample_quality_reports_it(digits, net):
    X, _, X_ref, y_ref = digits
    blurred = X[:500].reshape(-1, 28, 28)
    from scipy.ndimage import gaussian_filter

    blurred = gaussian_filter(blurred, (0, 1.5, 1.5)).reshape(-1, 784)
    q = sample_quality(blurred, X_ref, y_ref, train=X[500:1000], mmd=False)
    assert q.frechet is not None and q.real_frechet is not None
    assert q.frechet > 3 * q.real_frechet  # blur sigma 1.5: far from real digits
    assert q.frechet == pytest.approx(frechet_feature_distance(blurred, X_ref, net), rel=1e-12)
    assert "Fréchet" in q.summary()
    assert sample_quality(blurred, X_ref, y_ref, mmd=False, frechet=False).frechet is None


def _trained_with_torch_optim_adam(X, y, *, epochs, random_state=0, batch_size=64, lr=1e-3, weight_decay=1e-4):
    """The feature network trained by autograd and ``torch.optim.Adam(fused=True)`` (on one thread, as ours)."""
    from kppca.metrics.digit_features import _one_thread

    with _one_thread():
        return _torch_optim_adam_training(X, y, epochs=epochs, random_state=random_state, batch_size=batch_size,
                                          lr=lr, weight_decay=weight_decay)


def _torch_optim_adam_training(X, y, *, epochs, random_state, batch_size, lr, weight_decay):
    from kppca.metrics.digit_features import HIDDEN, _init_layers

    classes, target = np.unique(y, return_inverse=True)
    gen = torch.Generator().manual_seed(random_state)
    layers = _init_layers([X.shape[1], *HIDDEN, len(classes)], gen)
    params = [p.clone().requires_grad_() for layer in layers for p in layer]
    opt = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, fused=True)
    Xt, yt = torch.as_tensor(np.asarray(X, dtype=np.float32)), torch.as_tensor(target.astype(np.int64))
    for _ in range(epochs):
        order = torch.randperm(Xt.shape[0], generator=gen)
        for start in range(0, Xt.shape[0], batch_size):
            idx = order[start : start + batch_size]
            opt.zero_grad()
            h = Xt[idx]
            for i in range(len(layers)):
                h = torch.nn.functional.linear(h, params[2 * i], params[2 * i + 1])  # what torch.nn.Linear computes
                h = h if i == len(layers) - 1 else torch.relu(h)
            torch.nn.functional.cross_entropy(h, yt[idx]).backward()
            opt.step()
    return params


def test_written_out_training_gives_autograd_and_torch_optim_adams_weights(digits):
    # The operations autograd and torch.optim.Adam(fused=True) call (see digit_features' module docstring):
    # equal bit for bit, over enough steps (3 epochs of 300 digits, 15 steps, a partial last batch) for any
    # difference to show.
    _, _, X_ref, y_ref = digits
    ours = train_digit_features(X_ref[:300], y_ref[:300], epochs=3)
    ref = _trained_with_torch_optim_adam(X_ref[:300], y_ref[:300], epochs=3)
    mine = [t for pair in zip(ours.weights, ours.biases) for t in pair]
    assert len(mine) == len(ref)
    assert all(torch.equal(a, b.detach()) for a, b in zip(mine, ref))


def test_training_does_not_import_torch_dynamo():
    # torch.optim's optimisers import torch._dynamo when constructed (about a second): the reason for
    # the written-out update.
    import subprocess
    import sys

    code = ("import sys, numpy as np; from kppca.metrics import train_digit_features; "
            "g = np.random.default_rng(0); train_digit_features(g.random((40, 6)), np.arange(40) % 2, epochs=1); "
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_training_is_on_one_thread_whatever_the_callers_count(digits):
    # Products of another thread count round differently (the judge of the default command moved its
    # Fréchet distances in the fourth digit): one thread always, and the caller's count restored.
    _, _, X_ref, y_ref = digits
    previous = torch.get_num_threads()
    try:
        runs = []
        for threads in (2, 1):
            torch.set_num_threads(threads)
            net = train_digit_features(X_ref[:300], y_ref[:300], epochs=2)
            assert torch.get_num_threads() == threads
            runs.append((net, net.features(X_ref[:50])))
    finally:
        torch.set_num_threads(previous)
    (a, fa), (b, fb) = runs
    assert all(torch.equal(u, v) for u, v in zip(a.weights + a.biases, b.weights + b.biases))
    assert np.array_equal(fa, fb)


def test_training_leaves_torch_global_random_stream_alone():
    # The network draws from its own seeded generator only: the caller's torch.manual_seed stream is not moved.
    g = np.random.default_rng(0)
    X, y = g.random((40, 6)), np.arange(40) % 2
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    train_digit_features(X, y, epochs=1)
    assert torch.equal(torch.rand(3), expected)
