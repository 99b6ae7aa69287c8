"""Every estimator of the package fitted and used on a GPU (``device="cuda"``); runs only where CUDA is available.

Each one is fitted on CPU inputs with ``device="cuda"`` (its tensors live on the GPU, its outputs come back
as numpy, as for CPU inputs) and on CUDA tensors (its outputs stay there). Every prediction method must
run there and give finite values of the CPU fit's shape; classifiers, on well-separated classes, the CPU
fit's labels (rounding cannot move a point across a margin this wide).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.datasets import make_blobs
from test_common import ESTIMATORS

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

METHODS = ("predict", "transform", "predict_proba", "decision_function", "score_samples", "inverse_transform")


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    """60 points in 4 dimensions, 3 classes 10 standard deviations apart."""
    return make_blobs(n_samples=60, n_features=4, centers=3, cluster_std=1.0, center_box=(-15, 15), random_state=3)


def _targets(estimator, X: np.ndarray, labels: np.ndarray):
    if is_classifier(estimator):
        return labels
    if is_regressor(estimator):
        return X[:, 0] - 2 * X[:, 1]
    return None


def _outputs(model, X) -> dict:
    out = {}
    for name in METHODS:
        if not hasattr(model, name):
            continue
        arg = model.transform(X) if name == "inverse_transform" else X
        out[name] = getattr(model, name)(arg)
    return out


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=[f"{i}-{type(e).__name__}" for i, e in enumerate(ESTIMATORS)])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # short test fits, by design
def test_estimator_runs_on_the_gpu(estimator, data):
    X, labels = data
    y = _targets(estimator, X, labels)
    cpu = clone(estimator).set_params(dtype="float64").fit(X, y)
    gpu = clone(estimator).set_params(dtype="float64", device="cuda").fit(X, y)
    expected = _outputs(cpu, X)
    for name, value in _outputs(gpu, X).items():
        value = np.asarray(value)
        assert value.shape == np.shape(expected[name]), name
        if value.dtype.kind == "f":
            assert np.isfinite(value).all(), name
    if is_classifier(estimator):
        np.testing.assert_array_equal(gpu.predict(X), cpu.predict(X))
    # CUDA inputs: outputs stay on the GPU
    Xt = torch.as_tensor(X, device="cuda")
    yt = None if y is None else torch.as_tensor(y, device="cuda")
    on_device = clone(estimator).set_params(dtype="float64", device="cuda").fit(Xt, yt)
    for name, value in _outputs(on_device, Xt).items():
        if isinstance(value, torch.Tensor):
            assert value.device.type == "cuda", name
