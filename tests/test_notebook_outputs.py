"""The outputs stored in the committed notebooks are clean: no warning, no error, no absolute path.

The documentation is built from these stored outputs (``nb_execution_mode = "off"``), so a
warning printed while a notebook was executed (``TqdmWarning: IProgress not found``), a
traceback, or a path into the machine that ran it (``/home/...``, ``.../site-packages/...``)
would be published as is. This scans every notebook of the repository (not the build folders);
it needs no kernel and runs in a fraction of a second. ``tests/test_notebooks.py`` executes them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_PARTS = {"_build", ".ipynb_checkpoints", ".venv", "venv", "node_modules", "jupyter_execute", ".git"}
NOTEBOOKS = sorted(
    p for p in ROOT.rglob("*.ipynb") if not SKIPPED_PARTS.intersection(p.relative_to(ROOT).parts)
)

#: What must not appear in a stored output.
FORBIDDEN = {
    # "UserWarning: ...", "TqdmWarning: ...", "kppca: warning: ..." (a warnings.warn line is printed after them)
    "a warning": re.compile(r"\w*warning\s*:", re.I),
    "a traceback": re.compile(r"Traceback \(most recent call last\)"),
    "an absolute path": re.compile(
        r"(?<![\w.])(/(home|root|Users|tmp|work|usr|opt|var|private|mnt|srv|builds?)/[^\s'\"]*"
        r"|[A-Za-z]:\\[^\s'\"]+|site-packages)"
    ),
}


def _texts(output: dict) -> list[str]:
    """The text of a stored output: stream text, plain-text / html / markdown data, error fields."""
    def join(value) -> str:
        return "".join(value) if isinstance(value, list) else str(value)

    kind = output.get("output_type")
    if kind == "stream":
        return [join(output.get("text", ""))]
    if kind == "error":
        return [f"{output.get('ename')}: {output.get('evalue')}", *map(str, output.get("traceback", []))]
    data = output.get("data", {})
    return [join(data[key]) for key in ("text/plain", "text/html", "text/markdown", "text/latex") if key in data]


def test_there_are_notebooks_to_scan():
    assert len(NOTEBOOKS) >= 7, NOTEBOOKS  # docs/notebooks holds seven: a scan of nothing would pass


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_stored_outputs_are_clean(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    problems = []
    for index, cell in enumerate(notebook.get("cells", [])):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                problems.append(f"cell {index}: an error output ({output.get('ename')})")
            for text in _texts(output):
                for what, pattern in FORBIDDEN.items():
                    match = pattern.search(text)
                    if match:
                        start = max(0, match.start() - 40)
                        problems.append(f"cell {index}: {what}: ...{text[start:match.end() + 40]!r}...")
    assert not problems, "\n".join(problems)
