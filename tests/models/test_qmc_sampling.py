"""Quasi-random latent codes (``sample(qmc=True)``, the default of ``kppca sample``): draws of the same distribution
that cover it more evenly than independent ones."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca import DualPPCA
from kppca.cli.main import main
from kppca.datasets import load_digits
from kppca.kernels import RBF
from kppca.models.generation.latent import LatentMixture, standard_normal_codes
from kppca.preimage.strategies import SAMPLE_SMOOTHER_OPTIONS


def _mixture(K: int = 7, q: int = 3, seed: int = 0) -> LatentMixture:
    """Components 100 apart along the first axis, with unit-size covariances."""
    g = torch.Generator().manual_seed(seed)
    weights = torch.rand(K, generator=g, dtype=torch.float64) + 0.05
    means = torch.randn(K, q, generator=g, dtype=torch.float64)
    means[:, 0] = 100 * torch.arange(K)
    scales = torch.rand(K, 1, 1, generator=g, dtype=torch.float64) + 0.1  # covariances 0.1 I to 1.1 I
    return LatentMixture(weights / weights.sum(), means, torch.linalg.cholesky(torch.eye(q) * scales))


def _components(mix: LatentMixture, codes: torch.Tensor) -> torch.Tensor:
    """The component each code was drawn from: the nearest mean along the first axis. Exact for quasi-random
    codes: each lies within 8.3 sd (the normal quantile of 2^-53, where the uniforms are clamped; sd <= 1.05)
    of its mean along that axis, less than half the distance between means."""
    return torch.round(codes[:, 0] / 100).long()


@pytest.mark.parametrize("seed", range(5))
def test_components_follow_the_weights_within_two_draws(seed):
    # The first coordinate of the first 2^m points of a scrambled Sobol sequence is a (0, m, 1)-net: exactly one
    # point in each [j / 2^m, (j + 1) / 2^m). A component owns an interval of length w_k of that coordinate, which
    # holds between n w_k - 2 and n w_k + 2 of those cells (partial cells at both ends).
    mix, n = _mixture(), 1024
    g = torch.Generator().manual_seed(seed)
    counts = torch.bincount(_components(mix, mix.sample(n, g, qmc=True)), minlength=7).double()
    assert (counts - n * mix.weights).abs().max() <= 2
    # independent draws: multinomial counts, sd sqrt(n w (1 - w)) ~ 10 here, far outside that band
    iid = torch.bincount(_components(mix, mix.sample(n, torch.Generator().manual_seed(seed))), minlength=7).double()
    assert (iid - n * mix.weights).abs().max() > 2


def test_each_code_is_a_draw_from_the_mixture():
    # Over independent seeds, the code in one fixed position of a quasi-random set is an independent draw of the
    # mixture; its mean and each component's share then have the usual Monte Carlo error (bound: 5 sd).
    mix, seeds = _mixture(K=3, q=2, seed=1), 3000
    codes = torch.stack([mix.sample(8, torch.Generator().manual_seed(s), qmc=True)[5] for s in range(seeds)])
    share = torch.bincount(_components(mix, codes), minlength=3).double() / seeds
    assert ((share - mix.weights).abs() <= 5 * torch.sqrt(mix.weights * (1 - mix.weights) / seeds)).all()
    cov = mix.scale_trils @ mix.scale_trils.mT
    mean = mix.weights @ mix.means
    total = (mix.weights[:, None, None] * (cov + mix.means[:, :, None] * mix.means[:, None, :])).sum(0)
    total -= mean[:, None] * mean[None, :]
    assert ((codes.mean(0) - mean).abs() <= 5 * torch.sqrt(total.diagonal() / seeds)).all()


def test_standard_normal_codes_are_normal_quantiles_of_a_scrambled_sobol_sequence():
    g = torch.Generator().manual_seed(3)
    h = standard_normal_codes(512, 4, g, True, torch.float32, torch.device("cpu"))
    assert h.dtype == torch.float32 and h.shape == (512, 4) and torch.isfinite(h).all()
    # the 1-D net again: each coordinate has exactly one point in each 1/512 of its quantiles
    cells = torch.floor(torch.special.ndtr(h.double()) * 512).long()
    for j in range(4):
        assert torch.equal(torch.sort(cells[:, j]).values, torch.arange(512))
    with pytest.raises(ValueError, match="Sobol sequence of 21202 dimensions.*qmc=False"):
        standard_normal_codes(2, 21202, g, True, torch.float64, torch.device("cpu"))
    # independent draws are torch.randn's, bitwise
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert torch.equal(standard_normal_codes(5, 4, g1, False, torch.float64, torch.device("cpu")),
                       torch.randn((5, 4), generator=g2, dtype=torch.float64))


@pytest.fixture(scope="module")
def model() -> DualPPCA:
    X, y = load_digits(n_samples=150, random_state=2)
    return DualPPCA(5, kernel=RBF(1.5)).fit(X, y)


def test_model_samples_with_qmc(model):
    a = model.sample(8, random_state=0, qmc=True)
    np.testing.assert_array_equal(a, model.sample(8, random_state=0, qmc=True))
    assert not np.array_equal(a, model.sample(8, random_state=1, qmc=True))
    assert not np.array_equal(a, model.sample(8, random_state=0))  # the default: independent draws
    # the noise-free prior maps the quasi-random normal codes
    codes = standard_normal_codes(6, model.n_components_, torch.Generator().manual_seed(4), True, torch.float64,
                                  torch.device("cpu"))
    np.testing.assert_array_equal(model.sample(6, random_state=4, latent="prior", noise=False, qmc=True),
                                  model.inverse_transform(codes.numpy(), selection="local", **SAMPLE_SMOOTHER_OPTIONS))
    # the exact sample (prior with noise) draws no codes: qmc changes nothing
    np.testing.assert_array_equal(model.sample(3, random_state=5, latent="prior", qmc=True),
                                  model.sample(3, random_state=5, latent="prior"))
    assert model.sample(4, random_state=0, y=1, qmc=True).shape == (4, model.n_features_in_)
    with pytest.raises(ValueError, match="qmc"):
        model.sample(2, qmc="yes")


def test_cli_draws_quasi_random_codes_unless_told_otherwise(tmp_path, monkeypatch):
    monkeypatch.delenv("KPPCA_MNIST_DIR", raising=False)
    seen = []
    original = DualPPCA.sample

    def spy(self, *args, **kwargs):
        seen.append(kwargs.get("qmc"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(DualPPCA, "sample", spy)
    tiny = ["--digits", "0", "1", "--n-train", "40", "--n-components", "2", "--no-progress", "--threads", "1",
            "--n-samples", "3"]
    for flag, expected in (([], True), (["--no-qmc"], False), (["--qmc"], True)):
        assert main(["sample", "--out", str(tmp_path / "s.npy"), *tiny, *flag]) == 0
        assert seen[-1] is expected
