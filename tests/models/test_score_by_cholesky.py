"""score_samples through the Cholesky factor of K against the dense eigendecomposition path (its definition)."""

import numpy as np
import pytest
import torch

from kppca.datasets import load_mnist
from kppca.kernels import RBF
from kppca.models import DualPPCA
from kppca.models._base import BasePPCA


def _data(n_fit=300, n_new=40):
    X, _ = load_mnist(n_samples=n_fit + n_new, random_state=3)  # a stratified random subset
    return X[:n_fit], X[n_fit:]


def _dense(model, X):
    """Today's path: coordinates along every resolved eigenvector of K_c from its dense eigh."""
    return BasePPCA._log_likelihood(model, torch.as_tensor(X, dtype=model._dtype))


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cholesky_route_agrees_with_dense_eigh(center, dtype):
    X, X_new = _data()
    # A width that keeps K well conditioned, so float32 resolves the whole spectrum too.
    model = DualPPCA(5, kernel=RBF(3.0), center=center, eigen_solver="partial", dtype=dtype, random_state=0).fit(X)
    new = torch.as_tensor(model.score_samples(X_new))
    gram = model._gram()
    assert gram.has_cholesky and not gram.has_eigh  # the factor route ran, no eigendecomposition
    old = _dense(model, X_new)  # computes the eigendecomposition now (from the rebuilt K_c)
    assert gram.has_eigh
    N, q, r = model.n_samples_, model.n_components_, model.rank_
    lam = gram.eigh()[0].double()
    eps = torch.finfo(model._dtype).eps
    # Tolerance from conditioning: both paths are backward stable (the factor and the eigh reproduce
    # K_c to ~N eps |K_c|), and a quadratic form z^T G^+ z moves by at most N eps kappa times itself
    # under such a perturbation (kappa = lam_1 / lam_r, the condition number of G on H_E); the split
    # between the top q directions and the rest moves with the Lanczos eigenvectors, whose angle to the
    # dense ones is at most N eps lam_1 / (lam_q - lam_{q+1}) (Davis-Kahan). The log-likelihood is minus
    # half of that quadratic part (plus a constant); 10 covers the constants of the backward-error bounds.
    constant = r * np.log(2 * np.pi) + float(torch.log(model.eigenvalues_.double() / N).sum()) \
        + (r - q) * np.log(model.sigma2_)
    quad = -2.0 * old.double() - constant
    kappa = float(lam[0] / lam[-1])
    angle = float(N * eps * lam[0] / (lam[q - 1] - lam[q]))
    tol = 10.0 * (N * eps * kappa + angle) * quad.abs() * 0.5
    err = (new.double() - old.double()).abs()
    assert bool((err <= tol).all()), float((err / tol).max())
    assert len(new) == len(X_new)
    # The route is the fit's, not the cache's: with the eigenpairs now computed, the same values again.
    assert torch.equal(torch.as_tensor(model.score_samples(X_new)), new)


def test_unresolved_spectrum_falls_back_to_the_dense_path():
    # A smooth kernel on 1-D data: K_c's spectrum decays below its rounding level, so the dense path
    # drops directions; the factor cannot reproduce that and must not be used.
    X = np.linspace(0.0, 1.0, 150)[:, None]
    X_new = np.array([[0.123], [0.5001], [0.77]])
    model = DualPPCA(3, kernel=RBF(0.5), eigen_solver="partial", random_state=0).fit(X)
    new = torch.as_tensor(model.score_samples(X_new))
    gram = model._gram()
    assert gram.has_eigh and gram.eigh()[0].shape[0] < model.rank_  # some directions unresolved
    assert torch.equal(new, _dense(model, X_new))  # the same computation


def test_dense_fit_keeps_its_eigenpairs():
    X, X_new = _data(200, 10)
    model = DualPPCA(5, kernel=RBF(5.0), eigen_solver="dense").fit(X)
    new = torch.as_tensor(model.score_samples(X_new))
    assert not model._gram().has_cholesky  # nothing cubic beyond the fit's eigh
    assert torch.equal(new, _dense(model, X_new))


def test_score_is_mean_of_score_samples_and_empty_input_is_refused():
    X, X_new = _data(200, 10)
    model = DualPPCA(5, kernel=RBF(5.0), eigen_solver="partial", random_state=0).fit(X)
    assert model.score(X_new) == pytest.approx(float(np.mean(model.score_samples(X_new))), rel=1e-12)
