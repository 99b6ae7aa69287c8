"""Smoke test of benchmarks/papers/: every script runs end to end on a few hundred bundled digits.

The digits are written to temporary IDX files (the training pair gzipped, a separate test pair plain), so
the scripts' data path, ``--test-images``/``--test-labels`` and closing JSON line are exercised without the
full MNIST files. The numbers at this size mean nothing; docs/papers.md quotes the full runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kppca.datasets import load_mnist
from kppca.datasets.mnist import write_idx

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "benchmarks" / "papers"


@pytest.fixture(scope="module")
def idx_files(tmp_path_factory):
    """400 training digits (train-*.gz, 40 per class) and 200 test digits (plain IDX), disjoint."""
    X, y = load_mnist(n_samples=600, random_state=0)
    perm = np.random.default_rng(0).permutation(len(y))  # rows come sorted by class
    pixels, labels = np.round(X[perm] * 255).astype(np.uint8).reshape(-1, 28, 28), y[perm].astype(np.uint8)
    folder = tmp_path_factory.mktemp("mnist")
    write_idx(folder / "train-images-idx3-ubyte.gz", pixels[:400])
    write_idx(folder / "train-labels-idx1-ubyte.gz", labels[:400])
    write_idx(folder / "test-images.idx", pixels[400:])
    write_idx(folder / "test-labels.idx", labels[400:])
    return folder


def run(script: str, folder: Path, *args: str) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    env.pop("KPPCA_MNIST_DIR", None)
    proc = subprocess.run([sys.executable, str(SCRIPTS / script), "--mnist-dir", str(folder), *args],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert "paper" in proc.stdout and "peak memory" in proc.stdout
    figures = json.loads(lines[-1])
    assert figures["seconds"] > 0 and figures["peak_memory_gib"] > 0 and figures["cells"]
    return figures


def test_ensemble_script(idx_files):
    out = run("deep_rkm_ensemble.py", idx_files, "--n-train", "300", "--test-images",
              str(idx_files / "test-images.idx"), "--test-labels", str(idx_files / "test-labels.idx"))
    # 300 training digits + 300 noisy copies in subsets of 50, the combiner on the 300; tested on the 200 given
    assert out["experiment"] == "deep-rkm-ensemble" and out["n_submodels"] == 12 and out["n_test"] == 200
    assert 0 <= out["test_error"] < 0.5  # ten classes: chance is 0.9


def test_table2_script(idx_files):
    out = run("drkm_table2.py", idx_files, "--sizes", "50", "--reps", "2", "--max-iter", "3")
    cells = [c for c in out["cells"] if "levels" in c]
    assert [c["levels"] for c in cells] == [1, 2, 3] and all(c["reps"] == 2 for c in cells)
    assert out["paired_two_vs_one"]["n"] == 2


def test_table3_script(idx_files):
    out = run("drkm_table3.py", idx_files, "--n-train", "100", "--runs", "1", "--max-iter", "3",
              "--cnn-epochs", "1")
    assert len(out["cells"]) == 8 and out["n_test"] == 80  # the last fifth of 400 training digits
    reference = [c for c in out["cells"] if "scikit-learn" in c["model"]]
    assert len(reference) == 2 and all(c["paper_accuracy"] is None for c in reference)


def test_fig4_script(idx_files, tmp_path):
    out = run("dual_ppca_fig4.py", idx_files, "--n-samples", "8", "--out", str(tmp_path / "fig4.png"))
    assert (tmp_path / "fig4.png").stat().st_size > 0
    assert 0 < out["cells"][0]["explained_variance"] < 100
    bw = out["cells"][2]["matching_bandwidth"]  # None when no width in [1, 50] gives the paper's 27.97 %
    assert bw is None or 1 < bw < 50


def test_missing_data_is_a_clear_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "KPPCA_MNIST_DIR"}
    proc = subprocess.run([sys.executable, str(SCRIPTS / "drkm_table2.py")], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode != 0 and "--mnist-dir" in proc.stderr
