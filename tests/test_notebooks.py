"""The documentation's executable parts: every notebook under docs/, and the quickstart.

The docs are built from the notebooks' *stored* outputs (myst-nb with
``nb_execution_mode = "off"``), so these tests are what keeps them from rotting:
each ``docs/**/*.ipynb`` is executed top to bottom with nbclient in the
``python3`` Jupyter kernel, with ``KPPCA_DOCS_SMALL=1`` so that notebooks can
shrink their data. Run only these with::

    python -m pytest tests/test_notebooks.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SKIP_PARTS = {"_build", "_generated", "jupyter_execute", ".ipynb_checkpoints"}
NOTEBOOKS = sorted(p for p in DOCS.rglob("*.ipynb") if not SKIP_PARTS.intersection(p.relative_to(DOCS).parts))
CELL_TIMEOUT = 300  # seconds per cell
KERNEL = "python3"


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(DOCS)) for p in paths]


@pytest.fixture
def kernel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Environment inherited by the Jupyter kernel that nbclient starts."""
    monkeypatch.setenv("KPPCA_DOCS_SMALL", "1")
    # One thread each: the machines running the tests are shared, and small
    # problems are slower with several threads competing for the cores.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.setenv(var, "1")
    # CI exports MPLBACKEND=Agg; in a kernel the inline backend is the right one.
    monkeypatch.delenv("MPLBACKEND", raising=False)


def _run(nb, cwd: Path):
    client = nbclient.NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name=KERNEL, resources={"metadata": {"path": str(cwd)}}
    )
    return client.execute()


def test_notebooks_are_collected() -> None:
    assert NOTEBOOKS, f"no notebooks found under {DOCS}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_executes(path: Path, kernel_env: None) -> None:
    nb = nbformat.read(path, as_version=4)
    _run(nb, path.parent)  # raises CellExecutionError with the failing cell and traceback
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_stored_with_outputs(path: Path) -> None:
    """The docs render stored outputs only: commit notebooks executed, top to bottom."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert code, "notebook has no code cells"
    missing = [i for i, c in enumerate(code) if c.get("execution_count") is None]
    assert not missing, (
        f"code cells {missing} have not been executed; run the notebook (e.g. "
        f"`jupyter nbconvert --to notebook --execute --inplace {path.relative_to(ROOT)}`) before committing"
    )
    counts = [c["execution_count"] for c in code]
    assert counts == sorted(counts), "cells were executed out of order; restart and run all before committing"
    stored_errors = [o for c in code for o in c.get("outputs", []) if o.output_type == "error"]
    assert not stored_errors, "the stored outputs contain an error"


def test_python3_kernel_runs_this_interpreter(kernel_env: None) -> None:
    """The ``python3`` kernel spec must resolve to the Python running the tests (the venv's)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import sys; print(sys.prefix)")]
    _run(nb, ROOT)
    printed = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.output_type == "stream").strip()
    assert os.path.realpath(printed) == os.path.realpath(sys.prefix)


def test_quickstart_runs(tmp_path: Path) -> None:
    """Every ```python block of docs/quickstart.md, concatenated, runs without error."""
    text = (DOCS / "quickstart.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)
    assert blocks, "no python blocks found in quickstart.md"
    script = tmp_path / "quickstart.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    env = {**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=CELL_TIMEOUT
    )
    assert result.returncode == 0, result.stderr[-4000:]
