"""The sigma2 -> 0 limit of dual PPCA against scikit-learn's kernel PCA."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kppca import DualPPCA
from kppca.datasets import make_moons
from kppca.inference import default_sigma2_grid, kpca_limit_sweep
from kppca.kernels import RBF

ROOT = Path(__file__).resolve().parents[2]
SIGMA2 = [1e-2, 1e-3, 1e-4, 1e-6, 1e-8, 1e-10]


@pytest.fixture(scope="module")
def moons():
    # The paper's setting: two moons, N = 50, RBF bandwidth 2.
    X, _ = make_moons(50, noise=0.1, random_state=0)
    return X


@pytest.fixture(scope="module")
def table(moons):
    return kpca_limit_sweep(moons, RBF(2.0), [1, 2, 3], SIGMA2, include_ml=True)


def test_errors_vanish_linearly_and_monotonically(table):
    for q, block in table.groupby("n_components"):
        sweep = block.sort_values("sigma2", ascending=False)
        for col in ("reconstruction_error", "latent_error", "posterior_sd"):
            values = sweep[col].to_numpy()
            assert np.all(np.diff(values) < 0), (q, col, values)  # strictly decreasing with sigma2
        for col in ("reconstruction_error", "latent_error"):
            ratio = (sweep[col] / sweep["sigma2"]).to_numpy()
            # O(sigma2): error / sigma2 is bounded, in fact nearly constant (first-order term).
            assert ratio.max() < 100 and ratio.max() / ratio.min() < 3, (q, col, ratio)
        at_tiny = sweep[np.isclose(sweep["sigma2"], 1e-10, rtol=1e-9, atol=0.0)]
        assert len(at_tiny) == 1
        assert float(at_tiny["reconstruction_error"].iloc[0]) < 1e-8
        assert float(at_tiny["latent_error"].iloc[0]) < 1e-8


def test_table_columns_and_closed_forms(table, moons):
    assert list(table.columns) == [
        "n_components", "sigma2", "ml", "noise_fraction", "reconstruction_error",
        "latent_error", "posterior_sd", "explained_variance",
    ]
    assert len(table) == 3 * (len(SIGMA2) + 1)
    for q, block in table.groupby("n_components"):
        model = DualPPCA(q, kernel=RBF(2.0)).fit(moons)
        ml = block[block["ml"]]
        assert len(ml) == 1 and float(ml["sigma2"].iloc[0]) == pytest.approx(model.sigma2_)
        # Explained variance does not depend on sigma2 for a fixed q.
        np.testing.assert_allclose(block["explained_variance"], float(model.explained_variance_ratio_.sum()))
        np.testing.assert_allclose(block["noise_fraction"], block["sigma2"] / model.total_variance_)
        lam_q = float(model.eigenvalues_[-1])
        np.testing.assert_allclose(block["posterior_sd"], np.sqrt(model.n_samples_ * block["sigma2"] / lam_q))
        # On training points the reconstruction gap is exactly E_q diag(N sigma2) E_q^T (rows k_c = K_c e_i):
        # relative Frobenius norm N sigma2 sqrt(q) / ||lam_q||_2.
        N = model.n_samples_
        lam = model.eigenvalues_.numpy()
        expected = N * block["sigma2"] * np.sqrt(q) / np.linalg.norm(lam)
        # The table subtracts two independently computed (N, N) projections of norm ||lam_q||_2, so the
        # measured error carries an absolute floor ||delta P||_F / ||P||_F, whatever sigma2 is: eigenvectors
        # from a backward-stable solver (backward error ~ N eps ||K_c||_2) move the rank-q projection by
        # ~ N eps lam_1 / (lam_q - lam_{q+1}). rtol: rounding of the two Frobenius norms (N^2 terms each).
        spectrum = np.linalg.eigvalsh(model._gram().matrix.numpy())[::-1]
        eps = np.finfo(np.float64).eps
        floor = N * eps * spectrum[0] / (spectrum[q - 1] - spectrum[q])
        assert floor < 1e-3 * expected.min()  # the closed form is still checked to 0.1 % at the smallest sigma2
        np.testing.assert_allclose(block["reconstruction_error"], expected, rtol=N**2 * eps, atol=floor)


def test_out_of_sample_points_converge_too(moons):
    X_eval, _ = make_moons(30, noise=0.1, random_state=7)
    df = kpca_limit_sweep(moons, RBF(2.0), 2, [1e-3, 1e-6, 1e-10], X_eval=X_eval, include_ml=False)
    assert not df["ml"].any()
    assert np.all(np.diff(df["reconstruction_error"]) < 0) and np.all(np.diff(df["latent_error"]) < 0)
    assert df["latent_error"].iloc[-1] < 1e-8 and df["reconstruction_error"].iloc[-1] < 1e-8


def test_default_grid_is_valid_and_invalid_sigma2_raises(moons):
    df = kpca_limit_sweep(moons, "rbf", 2, include_ml=False)
    model = DualPPCA(2, kernel="rbf").fit(moons)
    lam_q_n = float(model.eigenvalues_[-1]) / model.n_samples_
    np.testing.assert_allclose(df["sigma2"], default_sigma2_grid(lam_q_n))
    assert (df["sigma2"] < lam_q_n).all()
    with pytest.raises(ValueError, match="lambda_q/N"):
        kpca_limit_sweep(moons, RBF(2.0), 3, [10.0])
    with pytest.raises(ValueError, match="n_components"):
        kpca_limit_sweep(moons, RBF(2.0), [0])


def test_example_script_prints_table_and_saves_figure(tmp_path):
    out = tmp_path / "figs" / "limit.png"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    env.pop("DISPLAY", None)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "kpca_limit.py"), "--out", str(out)],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "reconstruction_error" in proc.stdout and "latent_error" in proc.stdout
    assert out.exists() and out.stat().st_size > 10_000
