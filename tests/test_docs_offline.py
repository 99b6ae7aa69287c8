"""The built documentation typesets its formulas without network, in a real (headless) browser.

MathJax is bundled with the docs (``sphinx-mathjax-offline`` in ``docs/conf.py``). Each page is
opened from disk by Chromium with every network request sent to a closed port, MathJax is given
virtual time to run, and the resulting DOM must hold typeset math (``mjx-container`` elements,
one per formula) and no raw TeX delimiters ``\\(`` / ``\\[`` outside code.

Needs the html build (``python -m sphinx -b html docs docs/_build/html``) and ``chromium``
(Debian: ``apt-get install chromium``); skipped without them, except under CI (``CI`` set),
where ``.ci/run`` provides both and a skip would hide a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

HTML = Path(__file__).resolve().parents[1] / "docs" / "_build" / "html"
PAGES = ["index.html", "theory.html", "notebooks/01_primal_vs_dual.html"]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def _require(condition: bool, reason: str) -> None:
    if not condition:
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set: .ci/run must provide it)")
        pytest.skip(reason)


class _MathCensus(HTMLParser):
    """Counts formula containers (``class="math ..."``), those holding an ``mjx-container``,
    and raw TeX delimiters in text outside ``pre``/``code``/``script``/``style``."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, bool]] = []  # (tag, is a math container)
        self.formulas = 0
        self.typeset = 0
        self.raw: list[str] = []
        self._open_math_done: list[bool] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "img", "meta", "link", "input", "hr", "source", "col", "wbr"):
            return
        classes = (dict(attrs).get("class") or "").split()
        is_math = tag in ("span", "div") and "math" in classes
        if is_math:
            self.formulas += 1
            self._open_math_done.append(False)
        if tag == "mjx-container" and self._open_math_done and not self._open_math_done[-1]:
            self._open_math_done[-1] = True
            self.typeset += 1
        self.stack.append((tag, is_math))

    def handle_endtag(self, tag):
        while self.stack:
            open_tag, is_math = self.stack.pop()
            if is_math:
                self._open_math_done.pop()
            if open_tag == tag:
                break

    def handle_data(self, data):
        if any(t in ("pre", "code", "script", "style", "textarea") for t, _ in self.stack):
            return
        for match in re.finditer(r"\\[(\[]", data):
            self.raw.append(data[max(0, match.start() - 30): match.end() + 30])


def _render(browser: str, page: Path) -> str:
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         # offline: every request that is not for a local file goes to a closed port
         "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
         # MathJax typesets asynchronously: let the page run for 20 s of virtual time (instant in real time)
         "--virtual-time-budget=20000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.parametrize("name", PAGES)
def test_formulas_are_typeset_offline(name):
    page = HTML / name
    _require(page.is_file(), f"{page} is not built")
    browser = _browser()
    _require(browser is not None, "no chromium to render the docs with")
    assert (HTML / "_static" / "mathjax" / "tex-chtml.js").is_file(), "MathJax is not bundled with the docs"
    census = _MathCensus()
    census.feed(_render(browser, page))
    assert census.formulas > 0, f"{name} has no formulas: the test would not test anything"
    assert census.typeset == census.formulas, f"{name}: {census.typeset} of {census.formulas} formulas typeset"
    assert not census.raw, f"{name}: raw TeX left, e.g. {census.raw[:3]}"
