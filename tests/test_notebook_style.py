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

* no visible cell asserts, or writes the lesson's prose (``Markdown(...)``), or reads a
  function's defaults through ``__kwdefaults__``: checks belong in hidden cells;
* every number the prose states is *computed*: it appears in a stored output of an earlier
  code cell, or in the source of a code cell (a parameter the code sets, or a hidden cell
  that asserts it). Orderings ("larger", "most balanced") cannot be recognised from the text;
  the hidden cells assert them, and ``tests/test_notebooks.py`` runs those cells, so a claim
  that stops holding fails there;
* each reference names its authors and year, and its venue (an italic title or journal, an
  arXiv number, or "Preprint").

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
    (re.compile(r"^\s*assert\b", re.M), "an assert (a check of the text belongs in a hidden cell)"),
    (re.compile(r"\bMarkdown\("), "code that writes the lesson's prose (Markdown(...))"),
    (re.compile(r"__kwdefaults__"), "a function's defaults read through __kwdefaults__"),
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


# -- numbers in the prose ------------------------------------------------------------------------

#: Markdown that states no result: display maths, inline maths, code spans, roles and link targets.
_NOT_PROSE = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$|\{\w+\}`[^`]*`|`[^`]*`|\]\([^)]*\)", re.S)
#: A number: 1,000 / 2.1856 / 94 (a digit inside a word, as in "q2" or "8x8", is not one).
_NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")
#: Numbers that name a place, not a result: "section 3", "Fig. 4", "eq. 19", "Table 2", a year.
_PLACE = re.compile(
    r"(section|sections|§|fig\.|figure|table|eq\.|eqs\.|equation|lesson|appendix|algorithm|corollar\w*|prop\.)"
    r"\s*[\d.,\u2013 and-]*$",
    re.I,
)
_YEAR = re.compile(r"(19|20)\d\d")
#: Sections whose numbers are not claims about the lesson's results.
_NO_CLAIMS = ("References", "Things to try")


def _prose(markdown: str) -> str:
    """The markdown's sentences, without headings, maths, code and the sections that make no claims."""
    kept, skipping = [], False
    for line in markdown.split("\n"):
        heading = re.match(r"^#+\s*(.*)", line)
        if heading:
            skipping = heading.group(1).strip().startswith(_NO_CLAIMS)
            continue
        if not skipping:
            kept.append(line)
    return _NOT_PROSE.sub(" ", "\n".join(kept))


#: A sentence that quotes the literature at a given place, "Suykens (2017, Table 2) reports ...":
#: its numbers are the source's, not the lesson's.
_QUOTE = re.compile(r"\((?:19|20)\d\d, (?:Table|Fig\.|Figure|§|Section)")


def _numbers(text: str) -> set[str]:
    return {m.group(0).replace(",", "") for m in re.finditer(r"\d[\d,]*(?:\.\d+)?", text.replace(",", ""))}


def _output_text(cell: dict) -> str:
    parts = []
    for output in cell.get("outputs", []):
        text = output.get("text", "")
        parts.append("".join(text) if isinstance(text, list) else text)
        for key in ("text/plain", "text/html"):
            value = output.get("data", {}).get(key, "")
            parts.append("".join(value) if isinstance(value, list) else value)
    return "\n".join(parts)


def unbacked_numbers(cells: list[dict]) -> list[tuple[int, str, str]]:
    """(cell index, number, context) for each number of the prose that no code computes or sets.

    A number is backed when it appears in the stored output of a code cell *before* the
    markdown cell (a result the reader has just seen) or in the source of any code cell (a
    parameter the code sets, or a hidden cell that asserts it).
    """
    code = [c for c in cells if c["cell_type"] == "code"]
    in_sources = _numbers("\n".join(_source(c) for c in code))
    shown: set[str] = set()
    problems = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            shown |= _numbers(_output_text(cell))
            continue
        if cell["cell_type"] != "markdown":
            continue
        sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z*])", _prose(_source(cell)))
        text = " ".join(s for s in sentences if not _QUOTE.search(s))
        for match in _NUMBER.finditer(text):
            number = match.group(0).replace(",", "")
            if _YEAR.fullmatch(number) or _PLACE.search(text[max(0, match.start() - 30): match.start()]):
                continue
            if number not in shown and number not in in_sources:
                context = text[max(0, match.start() - 50): match.end() + 20].replace("\n", " ")
                problems.append((index, number, context))
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_numbers_in_the_prose_are_computed(path: Path):
    problems = unbacked_numbers(_load(path))
    assert not problems, "\n".join(
        f"cell {i}: {number!r} is stated but neither printed before nor set or asserted by code: ...{context}..."
        for i, number, context in problems
    )


#: A reference: "Surname, I. ... (YYYY)." with a venue (italics, an arXiv number or "Preprint").
_REFERENCE = re.compile(r"^[A-Z][\w\u00C0-\u017F' -]+, [A-Z]\.")


def _reference_problems(section: str) -> list[str]:
    entries = re.split(r"^\s*(?:\d+\.|[-*])\s+", section, flags=re.M)[1:]
    problems = []
    for entry in entries:
        entry = " ".join(entry.split())
        if not _REFERENCE.match(entry):
            problems.append(f"no authors ('Surname, I.'): {entry[:70]!r}")
        if not re.search(r"\((19|20)\d\d\)", entry):
            problems.append(f"no year '(YYYY)': {entry[:70]!r}")
        if not re.search(r"\*[^*]+\*|arXiv:\d{4}\.\d{4,5}|Preprint", entry):
            problems.append(f"no venue (italic journal or book, arXiv number, or 'Preprint'): {entry[:70]!r}")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_references_are_complete(path: Path):
    section = _headed_section(_load(path), "References")
    assert section is not None, "no 'References' heading"
    problems = _reference_problems(section)
    assert not problems, "\n".join(problems)


def test_the_claim_checks_can_fail():
    """A stated number that no code produces, a visible assert and an incomplete reference are flagged."""
    cells = [
        {"cell_type": "code", "metadata": {}, "source": "x = 5", "outputs": [{"output_type": "stream", "text": "0.42"}]},
        {"cell_type": "markdown", "source": "The error is 0.42 at width 5 (section 3, 2017), and 0.37 at 7."},
    ]
    assert [n for _, n, _ in unbacked_numbers(cells)] == ["0.37", "7"]
    # a number printed only *after* the sentence does not back it
    later = [cells[1], cells[0]]
    assert [n for _, n, _ in unbacked_numbers(later)] == ["0.42", "0.37", "7"]
    quoted = [{"cell_type": "markdown", "source": "Suykens (2017, Table 2) reports 0.0374. We find 0.05."}]
    assert [n for _, n, _ in unbacked_numbers(quoted)] == ["0.05"]
    assert any(p.search("x = 1\nassert x > 0") for p, _ in PLUMBING)
    assert any(p.search("Markdown(f'{x} is best')") for p, _ in PLUMBING)
    assert len(_reference_problems("- *Dual Probabilistic PCA*: the paper.\n")) == 2
    assert not _reference_problems("- Suykens, J. A. K. (2017). Deep RKMs. *Neural Computation*, 29(8).\n")
