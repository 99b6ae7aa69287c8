"""Issue 40, items 4 and 5: requests that cannot fit are refused up front with the size they need and the advice;
data torch cannot hold is named as ``X``; ``sample(y=...)`` after a 2-D ``y`` says what happened to it.

Before: ``sample(10**12)``, ``sample(2**63)``, ``forecast(10**9)`` and ``DualPPCA`` on 60,000 float64 rows (a
28.8 GB Gram matrix on a 24 GiB machine) reached the allocator (raw torch errors, MemoryError); a 'meta' tensor
and ``np.longdouble`` data gave torch's messages; a 2-D ``y`` was followed by "fit the model with fit(X, y)".
The available memory is set by monkeypatching (24 GiB, as in the issue), so the refusals do not depend on the
machine running the tests.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca import _resources
from kppca.kernels import RBF
from kppca.rkm import NARForecaster

GIB24 = 24 * 2**30  # 25.8 GB


@pytest.fixture
def machine_of_24_gib(monkeypatch):
    monkeypatch.setattr(_resources, "available_memory", lambda device="cpu": GIB24)


@pytest.fixture(scope="module")
def dual():
    X = np.random.default_rng(0).normal(size=(40, 3))
    return DualPPCA(2, kernel=RBF(1.5), random_state=0).fit(X)


@pytest.mark.parametrize("n", [10**12, 2**63])
def test_sample_beyond_memory_is_refused_at_once(n, dual, machine_of_24_gib):
    start = time.perf_counter()
    # per row: 3 inputs + 2 codes + 2 x 40 kernel vector and coefficients, 8 bytes each
    need = _resources.size_text(n * (3 + 2 + 80) * 8)
    with pytest.raises(_resources.InsufficientMemoryError,
                       match=rf"sample\(n={n}\) needs at least {re.escape(need)}, more than the 25.8 GB of memory available "
                             "now; draw fewer rows per call"):
        dual.sample(n)
    with pytest.raises(MemoryError, match="float32"):  # a MemoryError too, for code that catches those
        dual.sample_kernel(n)
    assert time.perf_counter() - start < 1.0


def test_primal_sample_counts_its_feature_width(machine_of_24_gib):
    model = PrimalPPCA(2).fit(np.random.default_rng(0).normal(size=(30, 5)))
    n = GIB24 // ((5 + 2 + 5) * 8) + 1  # one row more than fits: output, codes and features
    with pytest.raises(ValueError, match=rf"sample\(n={n}\) needs at least"):
        model.sample(n)
    assert model.sample(2, random_state=0).shape == (2, 5)


def test_a_gram_matrix_beyond_memory_is_refused_before_it_is_computed(machine_of_24_gib):
    X = np.zeros((60_000, 1))
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"the 60000 x 60000 float64 Gram matrix of DualPPCA.fit needs at least "
                                         r"28.8 GB, more than the 25.8 GB .* fit in float32 .*landmarks"):
        DualPPCA(2, kernel=RBF(1.0)).fit(X)
    assert time.perf_counter() - start < 1.0
    assert not hasattr(DualPPCA(2), "X_fit_")


def test_a_forecast_beyond_memory_is_refused(machine_of_24_gib):
    model = NARForecaster(3, 2).fit(np.sin(0.3 * np.arange(60)))
    with pytest.raises(ValueError, match=r"forecast\(n_steps=10000000000\) needs at least 240 GB, more than the "
                                         r"25.8 GB .* continue from them \(history="):
        model.forecast(10**10)  # the forecast, its original-scale copy and a temporary: 3 x 10**10 x 8 bytes


def test_unknown_memory_never_refuses(monkeypatch, dual):
    monkeypatch.setattr(_resources, "_meminfo", lambda: None)
    monkeypatch.setattr(_resources.os, "sysconf", lambda name: (_ for _ in ()).throw(ValueError(name)))
    assert _resources.available_memory("cpu") is None
    _resources.check_memory(10**30, "anything")  # unknown: allowed
    assert dual.sample(2, random_state=0).shape == (2, 3)


def test_available_memory_reads_meminfo(monkeypatch):
    monkeypatch.setattr(_resources, "_meminfo", lambda: {"MemAvailable": 3 * 2**30, "SwapFree": 2**30})
    assert _resources.available_memory("cpu") == 4 * 2**30
    assert _resources.available_memory(torch.device("meta")) is None  # devices without a known size: never refused


def test_data_torch_cannot_hold_is_named_as_x():
    with pytest.raises(ValueError, match="X is a tensor on the 'meta' device, which holds no data"):
        DualPPCA(2).fit(torch.empty((10, 3), device="meta"))
    X = np.random.default_rng(0).normal(size=(20, 3))
    model = DualPPCA(2, kernel=RBF(1.5)).fit(X)
    with pytest.raises(ValueError, match="X is a tensor on the 'meta' device"):
        model.transform(torch.empty((2, 3), dtype=torch.float64, device="meta"))
    if np.finfo(np.longdouble).max > np.finfo(np.float64).max:  # x86: 80-bit long double
        np.testing.assert_array_equal(model.transform(X.astype(np.longdouble)), model.transform(X))
        huge = X.astype(np.longdouble)
        huge[0, 0] = np.longdouble(10) ** 400
        with pytest.raises(ValueError, match="X has dtype float128 with values beyond the float64 range"):
            model.transform(huge)


def test_sample_y_after_a_2d_y_says_only_1d_labels_are_kept():
    X = np.random.default_rng(0).normal(size=(30, 3))
    model = DualPPCA(2, kernel=RBF(1.5)).fit(X, np.zeros((30, 2)))
    with pytest.raises(ValueError, match="fit was given a 2-D y, and only 1-D class labels are kept") as info:
        model.sample(2, y=1)
    assert "fit(X, y)" not in str(info.value)
    model.fit(X, np.linspace(0.0, 1.0, 30))
    with pytest.raises(ValueError, match="fit was given a y that is not class labels"):
        model.sample(2, y=1)
    model.fit(X)
    with pytest.raises(ValueError, match=r"fit it with fit\(X, y\)"):
        model.sample(2, y=1)
