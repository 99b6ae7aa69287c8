"""The default pre-image of latent traversals stays in the training inputs' range (issue 26, item 7)."""

from __future__ import annotations

import numpy as np

from kppca import DualPPCA
from kppca.datasets import load_mnist


def test_default_traversal_stays_in_the_pixel_range():
    """Before: the learned map gave pixels from -1.8 to 2.5 (grey backgrounds, halos); an explicit method keeps
    its own output (the clip is the default's)."""
    X, _ = load_mnist(digits=[0, 1], n_samples=400, random_state=0)
    model = DualPPCA(30).fit(X)
    grid = model.latent_traversal((0, 1), 6, 2.0)
    assert grid.min() >= X.min() and grid.max() <= X.max()
    learned = model.latent_traversal((0, 1), 6, 2.0, "learned")
    assert learned.min() < X.min() or learned.max() > X.max()  # what the clip removes
    inside = (learned >= X.min()) & (learned <= X.max())
    np.testing.assert_array_equal(grid[inside], learned[inside])  # the same map, only clipped
