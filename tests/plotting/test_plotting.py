"""kppca.plotting on the Agg backend: image grids, spectrum, latent traversal, the toy figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from kppca import DualPPCA, PrimalPPCA  # noqa: E402
from kppca.datasets import load_digits, make_moons  # noqa: E402
from kppca.kernels import RBF  # noqa: E402
from kppca.inference import kpca_limit_model  # noqa: E402
from kppca.plotting import (  # noqa: E402
    image_shape_for,
    plot_image_grid,
    plot_latent_traversal,
    plot_spectrum,
    plot_toy_generation,
    tile_images,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def digit_model():
    X, _ = load_digits(n_samples=80, random_state=0)
    return DualPPCA(4, kernel=RBF(1.5)).fit(X)


def test_tile_images_layout():
    imgs = np.arange(5 * 6, dtype=float).reshape(5, 6)  # five 2x3 images
    mosaic = tile_images(imgs, (2, 3), n_cols=2, pad=1)
    assert mosaic.shape == (3 * 3 - 1, 2 * 4 - 1)
    np.testing.assert_array_equal(mosaic[:2, :3], imgs[0].reshape(2, 3))
    np.testing.assert_array_equal(mosaic[3:5, 4:7], imgs[3].reshape(2, 3))
    assert np.isnan(mosaic[6:8, 4:7]).all()  # empty sixth cell
    assert tile_images(torch.zeros(4, 3, 3)).shape == (7, 7)
    with pytest.raises(ValueError, match="perfect square"):
        tile_images(np.zeros((2, 10)))
    with pytest.raises(ValueError, match="n_cols"):
        tile_images(np.zeros((2, 4)), n_cols=0)
    assert image_shape_for(784) == (28, 28)


def test_plot_image_grid(digit_model):
    S = digit_model.sample(10, random_state=0)
    ax = plot_image_grid(S, n_cols=5, title="samples")
    assert ax.get_title() == "samples"
    assert len(ax.images) == 1 and ax.images[0].get_array().shape == (2 * 9 - 1, 5 * 9 - 1)
    fig, ax2 = plt.subplots()
    assert plot_image_grid(torch.rand(3, 16), ax=ax2, vmin=0, vmax=1) is ax2


def test_plot_spectrum(digit_model):
    ax = plot_spectrum(digit_model)
    q, s2 = digit_model.n_components_, digit_model.sigma2_
    (hline,) = [c for c in ax.collections if "sigma2" in str(c.get_label())]
    assert np.allclose(hline.get_segments()[0][:, 1], s2)
    assert any(f"q = {q}" == line.get_label() for line in ax.lines)
    assert ax.get_yscale() == "log"
    assert plot_spectrum(PrimalPPCA(3).fit(np.random.default_rng(0).normal(size=(30, 5))), n_show=4, log=False)


def test_plot_latent_traversal(digit_model):
    ax = plot_latent_traversal(digit_model, components=(0, 2), n_steps=3, extent=1.0)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["-1", "0", "1"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "0", "-1"]
    assert ax.get_ylabel() == "h[2]"
    grid = digit_model.latent_traversal(n_steps=2)
    assert plot_latent_traversal(grid=grid) is not None
    with pytest.raises(ValueError):
        plot_latent_traversal()


def test_plot_toy_generation():
    X, _ = make_moons(30, random_state=0)
    fig, models = plot_toy_generation(X, (1, 3), bandwidth=0.5, n_generated=20, return_models=True)
    assert len(fig.axes) == 2 and set(models) == {1, 3}
    assert "explained variance" in fig.axes[0].get_title()
    ppca, kpca = models[3]
    assert kpca.n_components_ == 3 and kpca.sigma2_ < 1e-5 * ppca.sigma2_
    # the scatter layers: generated, data, KPCA and PPCA reconstructions
    assert [len(c.get_offsets()) for c in fig.axes[1].collections] == [20, 30, 30, 30]
    fig2, axes = plt.subplots(1, 1)
    assert plot_toy_generation(X, (2,), axes=axes, preimage="knn") is fig2
    with pytest.raises(ValueError, match="shape"):
        plot_toy_generation(np.zeros((5, 3)))


def test_kpca_limit_matches_projection():
    X, _ = make_moons(25, random_state=1)
    ppca = DualPPCA(3, kernel=RBF(0.5)).fit(X)
    kpca = kpca_limit_model(ppca, X)
    E = kpca.eigenvectors_.numpy()
    k_c = kpca.centered_kernel(X)
    recon, proj = kpca.reconstruct_kernel(X), k_c @ E @ E.T
    # On training points (k_c = K_c e_i) the gap is exactly -N sigma2 E E^T, whose entries are at most
    # N sigma2 = 1e-6 lam_q; rounding in the (N, N) products adds ~ N eps lam_1.
    N, s2 = kpca.n_samples_, kpca.sigma2_
    rounding = N * np.finfo(np.float64).eps * float(kpca.eigenvalues_[0])
    np.testing.assert_allclose(recon, proj, rtol=0, atol=N * s2 + rounding)
    np.testing.assert_allclose(recon - proj, -N * s2 * E @ E.T, rtol=0, atol=rounding)
