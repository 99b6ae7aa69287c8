"""Figures of fitted models (matplotlib): the functions return Axes or Figures and never call ``plt.show``."""

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
