"""The built documentation typesets its formulas without network and clips nothing, in a real (headless) browser.

MathJax is bundled with the docs (``sphinx-mathjax-offline`` in ``docs/conf.py``). Each page is
opened from disk by Chromium with every network request sent to a closed port, MathJax is given
virtual time to run, and the resulting DOM must hold typeset math (``mjx-container`` elements,
one per formula) and no raw TeX delimiters ``\\(`` / ``\\[`` outside code.

At a 1280 px wide window no text of a page may be cut off: every piece of text must lie inside the
box of its nearest ancestor that hides overflow (or inside the window when none does); inside a
scroll container only code, signatures and formulas may reach past its visible box, prose must wrap
(``docs/_static/kppca.css``: table cells wrap; wide code, signatures and formulas scroll).

Needs the html build (``python -m sphinx -b html docs docs/_build/html``) and ``chromium``
(Debian: ``apt-get install chromium``); skipped without them, except under CI (``CI`` set),
where ``.ci/run`` provides both and a skip would hide a failure.
"""

from __future__ import annotations

import html as html_lib
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

HTML = Path(__file__).resolve().parents[1] / "docs" / "_build" / "html"
PAGES = ["index.html", "theory.html", "notebooks/01_primal_vs_dual.html"]
#: Pages with the widest tables, code and signatures (issue 27), checked for clipped text.
CLIP_PAGES = PAGES + [
    "architecture.html", "coming_from_sklearn.html", "quickstart.html", "installation.html", "api/kppca.html",
    "api/models.html",
]
CLIP_WIDTH = 1280
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


def _render(browser: str, page: Path, width: int = 1280) -> str:
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--window-size={width},900", "--hide-scrollbars",
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


#: Runs after the page has loaded (and MathJax has had its virtual time) and lists every text node cut
#: off at the window's width. A text node is cut off when its box reaches past
#: * the box of its nearest ancestor that hides horizontal overflow (``overflow-x: hidden|clip``), or
#:   the window when there is none; or
#: * the visible box of its nearest scroll container (``overflow-x: auto|scroll``) while it is prose:
#:   only code, signatures and formulas (which cannot wrap) may be reached by scrolling; prose must
#:   wrap (a table whose cells do not wrap pushes whole columns out of sight behind a scroll bar).
_CLIP_SCRIPT = """
<script>
window.addEventListener("load", function () { setTimeout(function () {
  var report = [], width = document.documentElement.clientWidth;
  var main = document.querySelector('[role="main"]') || document.body;
  var walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (var node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim()) continue;
    var el = node.parentElement;
    // not shown: scripts, styles, permalinks, and MathJax's copy of each formula for screen readers
    if (el.closest("script, style, .headerlink, mjx-assistive-mml")) continue;
    var range = document.createRange(); range.selectNodeContents(node);
    var r = range.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    var unbreakable = !!el.closest("pre, code, kbd, mjx-container, .math, .sig, .highlight");
    var right = width;
    for (var a = el; a; a = a.parentElement) {
      var ox = getComputedStyle(a).overflowX;
      if (ox === "auto" || ox === "scroll") { right = unbreakable ? Infinity : a.getBoundingClientRect().right; break; }
      if (ox === "hidden" || ox === "clip") { right = a.getBoundingClientRect().right; break; }
    }
    if (r.right > right + 1) report.push(el.tagName + " " + Math.round(r.right) + ">" + Math.round(right) + ": "
                                          + node.textContent.trim().slice(0, 50));
  }
  var pre = document.createElement("pre"); pre.id = "kppca-clip-report";
  pre.textContent = JSON.stringify(report); document.body.appendChild(pre);
}, 1000); });
</script>
"""


#: Lists every token (a run of non-space characters) of inline code that the layout breaks across lines: a
#: range over the token's characters then has boxes at more than one height (`kernel="linea` / `r"`).
_TOKEN_SCRIPT = """
<script>
window.addEventListener("load", function () { setTimeout(function () {
  var report = [], main = document.querySelector('[role="main"]') || document.body;
  main.querySelectorAll("code").forEach(function (code) {
    if (code.closest("pre, .highlight, .sig")) return;  // blocks and signatures scroll, they do not wrap
    var walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      var re = /\\S+/g, m;
      while ((m = re.exec(node.textContent))) {
        var range = document.createRange();
        range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
        var tops = {};
        Array.prototype.forEach.call(range.getClientRects(),
                                     function (r) { if (r.width > 0) tops[Math.round(r.top)] = 1; });
        if (Object.keys(tops).length > 1) report.push(m[0].slice(0, 50));
      }
    }
  });
  var pre = document.createElement("pre"); pre.id = "kppca-token-report";
  pre.textContent = JSON.stringify(report); document.body.appendChild(pre);
}, 1000); });
</script>
"""


def _measure(name: str, script: str, report_id: str, tmp_path: Path) -> list:
    """Render a copy of page ``name`` with ``script`` at the clip width and return the list it reports."""
    page = HTML / name
    _require(page.is_file(), f"{page} is not built")
    browser = _browser()
    _require(browser is not None, "no chromium to render the docs with")
    # A copy of the page with the measuring script; <base> keeps its stylesheets and scripts resolving.
    html = page.read_text(encoding="utf-8")
    html = html.replace("<head>", f'<head><base href="{page.parent.as_uri()}/">', 1)
    html = html.replace("</body>", script + "</body>", 1)
    probe = tmp_path / page.name
    probe.write_text(html, encoding="utf-8")
    dom = _render(browser, probe, CLIP_WIDTH)
    match = re.search(rf'<pre id="{report_id}">(.*?)</pre>', dom, re.S)
    assert match, f"{name}: the measuring script did not run"
    return json.loads(html_lib.unescape(match.group(1)))


@pytest.mark.parametrize("name", CLIP_PAGES)
def test_no_text_is_clipped_at_1280px(name, tmp_path):
    clipped = _measure(name, _CLIP_SCRIPT, "kppca-clip-report", tmp_path)
    assert not clipped, f"{name}: {len(clipped)} text piece(s) cut off at {CLIP_WIDTH} px, e.g. {clipped[:5]}"


@pytest.mark.parametrize("name", CLIP_PAGES)
def test_no_code_token_is_broken_at_1280px(name, tmp_path):
    """Inline code wraps between words only (issue 43: `kernel="linea r"`, `eigen_solver="dens e"` in tables)."""
    broken = _measure(name, _TOKEN_SCRIPT, "kppca-token-report", tmp_path)
    assert not broken, f"{name}: {len(broken)} code token(s) broken across lines at {CLIP_WIDTH} px: {broken[:5]}"
