"""Every script in examples/ runs, exits 0, writes a valid PNG to the path given by --out and warns of no
unconverged fit (a ConvergenceWarning: an example converges with its settings, or says why it stops)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_examples_exist():
    assert EXAMPLES, "no examples found"


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script, tmp_path):
    out = tmp_path / f"{script.stem}.png"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "KPPCA_MNIST_DIR")}
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run(
        [sys.executable, str(script), "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )
    assert proc.returncode == 0, f"{script.name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert out.is_file(), f"{script.name} did not write {out}"
    assert out.read_bytes()[:8] == PNG_SIGNATURE, f"{script.name} did not write a PNG"
    assert "ConvergenceWarning" not in proc.stderr, f"{script.name} did not converge:\n{proc.stderr[-4000:]}"
