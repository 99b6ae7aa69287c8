"""``kppca ... --device cuda``: the main job on a GPU; runs only where CUDA is available."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from kppca.cli.main import main  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

SMALL = ["--digits", "0", "1", "--no-progress", "--n-train", "200", "--n-components", "5"]


def test_sample_on_the_gpu_and_a_gpu_model_file_on_the_cpu(tmp_path):
    gpu = tmp_path / "gpu.npy"
    assert main(["sample", *SMALL, "--device", "cuda", "--n-samples", "6", "--out", str(gpu)]) == 0
    samples = np.load(gpu)
    assert samples.shape == (6, 784) and np.isfinite(samples).all()
    model = tmp_path / "m.kppca"
    assert main(["fit", *SMALL, "--device", "cuda", "--save", str(model)]) == 0
    for device in ("cpu", "cuda"):  # the file loads on either; the CPU's by default
        out = tmp_path / f"from_file_{device}.npy"
        assert main(["sample", "--model", str(model), "--device", device, "--n-samples", "6", "--no-progress",
                     "--out", str(out)]) == 0
        assert np.load(out).shape == (6, 784)
