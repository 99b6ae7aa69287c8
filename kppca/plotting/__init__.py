"""Figures for fitted models (matplotlib; functions return Axes or Figures and never call ``plt.show``).

* :func:`plot_image_grid` -- generated digits, reconstructions (a mosaic of images);
* :func:`plot_latent_traversal` -- inputs over a grid of two latent components (paper, Fig. 4c);
* :func:`plot_spectrum` -- ``lambda_p / N`` against ``p`` with the ``sigma2`` level and the cut ``q``;
* :func:`plot_toy_generation` -- 2-D data with the PPCA and KPCA reconstructions and samples (paper, Fig. 3);
* :func:`plot_latent_uncertainty` -- latent codes with credible ellipses of their posterior;
* :func:`plot_latent_forest` -- forest plot of the latent posteriors of selected points.
"""

from .figures import save_figure
from .images import image_shape_for, plot_image_grid, plot_latent_traversal, tile_images
from .spectrum import plot_spectrum
from .toy import plot_toy_generation
from .uncertainty import credible_ellipse, plot_latent_forest, plot_latent_uncertainty

__all__ = [
    "credible_ellipse",
    "image_shape_for",
    "plot_latent_forest",
    "plot_latent_uncertainty",
    "plot_image_grid",
    "plot_latent_traversal",
    "plot_spectrum",
    "plot_toy_generation",
    "save_figure",
    "tile_images",
]
