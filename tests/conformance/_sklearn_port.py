"""What the ported scikit-learn cases share: the sigma2 -> 0 map, solver and kernel names, precomputed kernels.

Ported from scikit-learn 1.9.1 (``sklearn/decomposition/tests/test_kernel_pca.py`` and
``test_pca.py`` as installed in the project's environment). The upstream suites call
``KernelPCA(n_components, kernel=..., eigen_solver=...)`` and ``PCA(...)``; a user moving
to kppca writes ``DualPPCA(q, sigma2=1e-12, kernel=...)`` and ``PrimalPPCA(q)``.

* **Scores.** ``KernelPCA.transform`` returns the projections onto the unit principal
  directions, ``u_p^T k_c(x) / sqrt(lam_p)``; kppca's ``transform`` returns the posterior mean of
  the latent code, which at ``sigma2 -> 0`` is those projections divided by the standard deviation
  ``sqrt(lam_p / N)`` (unit-variance codes on the training set). :func:`kpca_scores` multiplies by
  ``sqrt(explained_variance_)`` to get KernelPCA's (and PCA's unwhitened) scale back; the residual
  factor ``sqrt(1 - N sigma2 / lam_p)`` differs from 1 by ``N 1e-12 / (2 lam_p)``, far below the
  upstream tolerances (6 decimals) for the data used.
* **Solvers.** ``"dense"`` / ``"full"`` / ``"covariance_eigh"`` -> ``"dense"``; ``"arpack"`` ->
  ``"partial"`` (Lanczos, which falls back to the dense solver where it cannot serve ``q``, as arpack
  does); ``"auto"`` -> ``"auto"``. kppca has no randomized solver: the ``"randomized"`` parametrizations
  are not ported (each file lists them).
* **Precomputed kernels.** kppca has no ``kernel="precomputed"``; a user passes the matrix through a
  callable kernel that reads it by row index (:func:`precomputed`), with ``X`` the column of indices.
"""

from __future__ import annotations

import numpy as np
import torch

from kppca.kernels import RBF, Polynomial

#: scikit-learn's solver names -> kppca's.
SOLVERS = {"auto": "auto", "dense": "dense", "full": "dense", "covariance_eigh": "dense", "arpack": "partial"}

#: scikit-learn's ``global_random_seed`` fixture without ``SKLEARN_TESTS_GLOBAL_RANDOM_SEED``.
SEED = 42

#: The fixed sigma2 of the kernel PCA limit.
SIGMA2 = 1e-12


def kpca_scores(model, X) -> np.ndarray:
    """KernelPCA's (and unwhitened PCA's) scores from kppca's latent codes: ``transform(X) sqrt(lam / N)``."""
    return np.asarray(model.transform(X)) * np.sqrt(np.asarray(model.explained_variance_))


def rbf(gamma: float) -> RBF:
    """scikit-learn's ``rbf`` kernel ``exp(-gamma |x - y|^2)`` as kppca's ``RBF(bandwidth)``: ``exp(-|x - y|^2 / (2 b^2))``."""
    return RBF(1.0 / np.sqrt(2.0 * gamma))


def poly(n_features: int) -> Polynomial:
    """scikit-learn's default ``poly`` kernel ``(x.y / D + 1)^3``, up to the factor ``D^-3`` (same eigenvectors)."""
    return Polynomial(degree=3, coef0=float(n_features))


def precomputed(K: np.ndarray):
    """A callable kernel reading the fixed matrix ``K`` (n, n) at the row indices held in ``X[:, 0]``."""
    Kt = torch.as_tensor(np.asarray(K, dtype=np.float64))

    def kernel(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return Kt[A[:, 0].long()][:, B[:, 0].long()].to(A.dtype)

    return kernel


def indices(start: int, stop: int) -> np.ndarray:
    """The index column ``[[start], ..., [stop - 1]]`` that stands for the points of a precomputed kernel."""
    return np.arange(start, stop, dtype=np.float64)[:, None]
