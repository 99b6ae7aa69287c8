"""Deep RKM (LS-SVM + two linear KPCA levels) solved level-wise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca.kernels import RBF
from kppca.rkm import DeepRKM, LSSVMRegressor


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = np.arange(-10, 10, 0.2)
    y = np.sin(0.3 * x) + np.cos(0.5 * x) + np.sin(2 * x) + 0.5 * rng.normal(size=x.size)
    return x[:, None], y


@pytest.mark.parametrize("s", [(1, 1), (7, 2)])
def test_stationarity_of_the_levels(data, s):
    X, y = data
    m = DeepRKM(RBF(0.7), n_components=s, lambda_=0.05, eta_levels=(1e-2, 1e-2), n_passes=4, random_state=0).fit(X, y)
    H1, H2, H3, b = m.H1_, m.H2_, m.H3_, m.intercept_
    K = RBF(0.7).gram(torch.tensor(X), torch.tensor(X))
    # The last phase (backward) ends with level 1: its fused linear system holds exactly.
    r1 = (K + 1.0 * H2 @ H2.T / 1e-2) @ H1 + 0.05 * H1 + b - torch.tensor(y)[:, None]
    assert float(r1.abs().max()) < 1e-8 * float(np.abs(y).max())
    assert float(H1.sum(0).abs().max()) < 1e-8 * float(H1.abs().sum())
    # The KPCA levels hold unit-norm eigenvectors (H^T H = I).
    for H, k in ((H2, s[0]), (H3, s[1])):
        assert float((H.T @ H - torch.eye(k, dtype=H.dtype)).abs().max()) < 1e-12
    assert len(m.objective_history_) == 1 + 2 * 4


def test_zero_passes_is_the_plain_lssvm(data):
    X, y = data
    deep = DeepRKM(RBF(0.7), lambda_=0.05, n_passes=0).fit(X, y)
    basic = LSSVMRegressor(RBF(0.7), lambda_=0.05).fit(X, y)
    assert np.abs(deep.predict(X) - basic.predict(X)).max() < 1e-9


def test_objective_history_is_finite_and_deterministic(data):
    X, y = data
    a = DeepRKM(RBF(0.7), n_components=(3, 2), random_state=1).fit(X, y)
    b = DeepRKM(RBF(0.7), n_components=(3, 2), random_state=1).fit(X, y)
    assert a.objective_history_ == b.objective_history_
    assert all(np.isfinite(v) for _, v in a.objective_history_)
    assert np.array_equal(a.predict(X), b.predict(X))


def test_bad_components():
    with pytest.raises(ValueError, match="n_components"):
        DeepRKM(n_components=(1, 2)).fit(np.zeros((5, 1)) + np.arange(5)[:, None], np.arange(5.0))
