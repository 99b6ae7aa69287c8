"""Small shared fixtures for the core tests (kernels, features, models, distributions).

Kept deliberately minimal:

* ``rng`` -- a fresh ``numpy.random.Generator`` seeded with 0.
* ``_no_full_mnist`` (autouse) -- hides ``$KPPCA_MNIST_DIR`` from every test, so that CI exporting it
  changes no test's data; ``tests/datasets/test_full_mnist.py`` reads it at import instead.
* ``structured_data`` -- float64 array (40, 6): three strong latent directions
  (standard deviations 5, 3, 2) plus isotropic noise (0.3) and a non-zero mean.
  Its centered spectrum has a clear gap after three components.
"""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _no_full_mnist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KPPCA_MNIST_DIR", raising=False)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture
def structured_data() -> np.ndarray:
    gen = np.random.default_rng(12345)
    N, D = 40, 6
    basis, _ = np.linalg.qr(gen.normal(size=(D, 3)))
    latent = gen.normal(size=(N, 3)) * np.array([5.0, 3.0, 2.0])
    return latent @ basis.T + 0.3 * gen.normal(size=(N, D)) + gen.normal(size=D)
