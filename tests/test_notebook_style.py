"""The committed notebooks read as lessons: no plumbing shown, no project internals cited, exercises and references.

The notebooks under ``docs/notebooks`` are teaching material (issue 29). What a reader
sees must be the lesson, so this checks every committed notebook without running it:

* no visible cell shows test plumbing: the ``KPPCA_DOCS_SMALL`` switch or a warnings
  filter belong in a cell tagged ``remove-cell`` (MyST-NB drops it from the page);
* the markdown cites neither the benchmark scripts (``benchmarks/``), nor the test
  suite (``tests/``), nor the specification: a lesson's statements are shown in the
  lesson, measurements and their history live in ``benchmarks/README.md``;
* each notebook has a "Things to try" section with 3 or 4 exercises and a "References"
  section.

It needs no kernel and runs in a fraction of a second.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "docs" / "notebooks"
NOTEBOOKS = sorted(p for p in NOTEBOOK_DIR.glob("*.ipynb"))

HIDDEN_TAGS = {"remove-cell", "remove-input"}

#: Plumbing that must not be shown in a code cell (the regex, what it is).
PLUMBING = [
    (re.compile(r"KPPCA_DOCS_SMALL"), "the KPPCA_DOCS_SMALL switch of the test suite"),
    (re.compile(r"\bwarnings\.(filterwarnings|simplefilter|catch_warnings)\b"), "a warnings filter"),
]

#: What the markdown of a lesson must not cite.
CITATIONS = [
    (re.compile(r"\bbenchmarks/"), "a benchmark script or its report (benchmarks/...)"),
    (re.compile(r"\btests?/\w"), "the test suite (tests/...)"),
    (re.compile(r"\btest suite\b", re.I), "the test suite"),
    (re.compile(r"\bthe spec(ification)?\b|\bspec's\b|\bspec\.md\b", re.I), "the specification"),
    # the folder of private specs and papers beside the repository (spelled as a character class so
    # that this file itself names no path outside the repository)
    (re.compile(r"\.\.[/\\]shared|\bwork[/\\]shared"), "the project's private specs and papers"),
]


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _tags(cell: dict) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def _load(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _headed_section(cells: list[dict], title: str) -> str | None:
    """The text of the markdown from heading ``title`` (any level) to the next heading of that level or higher."""
    text = "\n".join(_source(c) for c in cells if c["cell_type"] == "markdown")
    heading = re.search(rf"^(#+)\s*{title}\s*$", text, flags=re.M | re.I)
    if heading is None:
        return None
    level = len(heading.group(1))
    rest = text[heading.end():]
    end = re.search(rf"^#{{1,{level}}}\s", rest, flags=re.M)
    return rest[: end.start()] if end else rest


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 7, NOTEBOOKS  # seven lessons: a check of nothing would pass


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_plumbing_is_shown(path: Path):
    problems = []
    for index, cell in enumerate(_load(path)):
        if cell["cell_type"] != "code" or _tags(cell) & HIDDEN_TAGS:
            continue
        for pattern, what in PLUMBING:
            if pattern.search(_source(cell)):
                problems.append(f"cell {index} shows {what}; move it to a cell tagged 'remove-cell'")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_markdown_cites_no_project_internals(path: Path):
    problems = []
    for index, cell in enumerate(_load(path)):
        if cell["cell_type"] != "markdown":
            continue
        for pattern, what in CITATIONS:
            match = pattern.search(_source(cell))
            if match:
                problems.append(f"cell {index} cites {what}: {match.group(0)!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_has_exercises_and_references(path: Path):
    cells = _load(path)
    exercises = _headed_section(cells, "Things to try")
    assert exercises is not None, "no 'Things to try' heading (3-4 exercises for the reader)"
    items = re.findall(r"^\s*(?:\d+\.|[-*])\s+\S", exercises, flags=re.M)
    assert 3 <= len(items) <= 4, f"'Things to try' lists {len(items)} exercises, not 3 or 4"
    references = _headed_section(cells, "References")
    assert references is not None, "no 'References' heading"
    entries = re.findall(r"^\s*(?:\d+\.|[-*])\s+\S", references, flags=re.M)
    assert entries, "the 'References' section lists nothing"
    summary = _headed_section(cells, "Summary")
    assert summary is not None and summary.strip(), "no 'Summary' section"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_lesson_opens_with_a_figure(path: Path):
    """The first visible code cell that produces output shows a picture (the motivating figure)."""
    for cell in _load(path):
        if cell["cell_type"] != "code" or _tags(cell) & HIDDEN_TAGS:
            continue
        outputs = cell.get("outputs", [])
        if not outputs:
            continue
        assert any("image/png" in o.get("data", {}) for o in outputs), (
            "the first visible code cell with output shows no figure; open with a motivating figure"
        )
        return
    pytest.fail("no visible code cell has an output")


def test_the_checks_can_fail():
    """Each check flags a deliberately bad notebook (a test that cannot fail is a defect)."""
    shown = {"cell_type": "code", "metadata": {}, "source": "import os\nos.environ['KPPCA_DOCS_SMALL']"}
    hidden = {"cell_type": "code", "metadata": {"tags": ["remove-cell"]}, "source": shown["source"]}
    assert any(p.search(shown["source"]) for p, _ in PLUMBING) and _tags(hidden) & HIDDEN_TAGS
    for text in ("see `benchmarks/README.md`", "checked by tests/rkm/test_x.py", "the spec's rule"):
        assert any(p.search(text) for p, _ in CITATIONS), text
    cells = [{"cell_type": "markdown", "source": "## Things to try\n\n1. a\n2. b\n\n## References\n\n- x"}]
    section = _headed_section(cells, "Things to try")
    assert len(re.findall(r"^\s*(?:\d+\.|[-*])\s+\S", section, flags=re.M)) == 2
    assert _headed_section(cells, "Summary") is None
