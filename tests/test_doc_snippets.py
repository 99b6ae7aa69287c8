"""Every code block a newcomer reads in README.md and docs/*.md runs as written.

Python blocks are run as scripts in a temporary folder, with a time limit. Each block is a program of
its own unless the line just above its fence is a marker (an HTML comment, invisible once rendered):

* ``<!-- snippet: continue -->``: the block continues the previous python block of the same file (they run
  as one script, in order);
* ``<!-- snippet: not run: REASON -->``: the block is shown but not run (a multi-node cluster, ...); the
  reason is required.

A run fails on a non-zero exit status and on any warning or shutdown complaint on its stderr (a newcomer
who pastes the block must see no warning). Bash blocks are checked, not run, except ``--help`` lines:
every command must exist, every ``kppca`` line must parse with the real argument parser (and pass the
command's own option check), every ``pip install`` must name the source tree, an extra that
``pyproject.toml`` declares, or a torch in its range, and ``python -m`` modules must be importable.
docs/quickstart.md is run as one script by tests/test_notebooks.py::test_quickstart_runs, so not again here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Files whose python blocks another test runs (path relative to the root -> that test).
RUN_ELSEWHERE = {"docs/quickstart.md": "tests/test_notebooks.py::test_quickstart_runs"}
TIME_LIMIT = 240  # seconds per script; the slowest (a LocalCluster fit) takes about 30 s on a loaded core
MARKER = re.compile(r"<!--\s*snippet:\s*(?P<kind>continue|not run)\s*(?::\s*(?P<reason>.*?))?\s*-->")
FENCE = re.compile(r"^```(?P<lang>[^\n`]*)\n(?P<body>.*?)^```\s*$", re.M | re.S)
#: What a pasted block must not print on stderr: warnings of any kind, Dask's shutdown complaint.
COMPLAINTS = re.compile(r"Warning\b|warnings\.warn|still alive|Traceback")


@dataclass
class Block:
    path: Path
    line: int
    lang: str
    body: str
    marker: str | None  # "continue", "not run" or None
    reason: str | None

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    out = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.fullmatch(before.strip())
        out.append(Block(path, text.count("\n", 0, match.start()) + 1, match["lang"].strip(), match["body"],
                         marker["kind"] if marker else None, marker["reason"] if marker else None))
    return out


ALL = [block for path in FILES for block in _blocks(path)]


def _python_scripts() -> list[tuple[str, list[Block]]]:
    """The python blocks grouped into scripts: a block and the ``continue`` blocks after it."""
    scripts: list[tuple[str, list[Block]]] = []
    for block in ALL:
        if block.lang != "python" or block.marker == "not run":
            continue
        if block.marker == "continue":
            assert scripts and scripts[-1][1][0].path == block.path, f"{block.name} continues no python block"
            scripts[-1][1].append(block)
        else:
            scripts.append((block.name, [block]))
    return [(name, blocks) for name, blocks in scripts
            if str(blocks[0].path.relative_to(ROOT)) not in RUN_ELSEWHERE]


SCRIPTS = _python_scripts()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "KPPCA_MNIST_DIR")}
    env.update(MPLBACKEND="Agg", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    return env


def test_blocks_found_and_markers_valid():
    assert len(SCRIPTS) >= 6, "the README and docs hold fewer python scripts than expected: is the parser broken?"
    for block in ALL:
        if block.marker == "not run":
            assert block.reason and len(block.reason) > 10, f"{block.name}: say why the block is not run"
    for name, test in RUN_ELSEWHERE.items():
        path, _, function = test.partition("::")
        assert f"def {function}(" in (ROOT / path).read_text(encoding="utf-8"), f"{test} (runs {name}) is gone"
    # A marker that does not sit right above a fence is a typo that would silently run nothing.
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        n_markers = len(MARKER.findall(text))
        assert n_markers == sum(b.marker is not None for b in ALL if b.path == path), f"{path}: a stray marker"
        assert text.count("<!-- snippet") == n_markers, f"{path}: a malformed snippet marker"


@pytest.mark.slow
@pytest.mark.parametrize("name,blocks", SCRIPTS, ids=[name for name, _ in SCRIPTS])
def test_python_block_runs_as_written(name, blocks, tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text("\n\n".join(block.body for block in blocks), encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=TIME_LIMIT)
    assert proc.returncode == 0, f"{name} fails as pasted:\n{proc.stderr[-4000:]}"
    complaint = COMPLAINTS.search(proc.stderr)
    assert complaint is None, f"{name} prints a complaint on stderr:\n{proc.stderr[-4000:]}"


# ------------------------------------------------------------------ bash blocks
BASH = [block for block in ALL if block.lang in ("bash", "sh", "console")]
COMMANDS = {"pip", "python", "kppca", "git", "cd", "dask", "apt-get", "export"}


def _commands(block: Block) -> list[list[str]]:
    """Each command of the block as a word list: comments dropped, ``&&`` chains split."""
    out = []
    for line in block.body.splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            out.append(words[:cut])
            words = words[cut + 1:]
    return out


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _check_pip(words: list[str], where: str) -> None:
    from packaging.requirements import Requirement
    from packaging.version import Version

    assert words[:2] == ["pip", "install"], f"{where}: {words}"
    project = _pyproject()["project"]
    torch_spec = next(Requirement(r) for r in project["dependencies"] if r.startswith("torch"))
    extras = set(project["optional-dependencies"])
    args = [w for w in words[2:] if w != "-e"]
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--index-url":
            i += 2
            continue
        match = re.fullmatch(r"\.(?:\[(?P<extras>[\w,]+)\])?", arg)
        if match:
            unknown = set((match["extras"] or "").split(",")) - extras - {""}
            assert not unknown, f"{where}: extra(s) {unknown} not in pyproject.toml ({sorted(extras)})"
        elif arg.startswith("torch=="):
            assert Version(arg.split("==")[1]) in torch_spec.specifier, f"{where}: {arg} outside {torch_spec}"
        else:
            raise AssertionError(f"{where}: `pip install {arg}` installs something other than this source tree")
        i += 1


def _check_kppca(words: list[str], where: str) -> None:
    from kppca.cli.main import COMMANDS as CLI_COMMANDS
    from kppca.cli.main import build_parser

    if words[-1] in ("--help", "--version"):  # cheap: run it
        proc = subprocess.run([sys.executable, "-m", "kppca", *words[1:]], env=_env(), capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0 and proc.stdout, f"{where}: `{shlex.join(words)}` failed: {proc.stderr}"
        return
    try:
        args = build_parser().parse_args(words[1:])
    except SystemExit as exc:  # pragma: no cover - the failure message is the point
        raise AssertionError(f"{where}: `{shlex.join(words)}` does not parse (exit {exc.code})") from None
    command = CLI_COMMANDS[args.command]
    if hasattr(command, "check"):
        command.check(args)


def test_bash_blocks_name_real_commands_and_options():
    assert BASH, "no bash blocks found"
    seen = set()
    for block in BASH:
        for words in _commands(block):
            where, head = block.name, words[0]
            assert head in COMMANDS, f"{where}: unknown command {head!r} (add it to COMMANDS if it is real)"
            seen.add(head)
            if head == "pip":
                _check_pip(words, where)
            elif head == "kppca":
                _check_kppca(words, where)
            elif head == "python" and words[1] == "-m":
                assert importlib.util.find_spec(words[2]) is not None, f"{where}: no module {words[2]}"
            elif head == "dask" and shutil.which("dask"):
                proc = subprocess.run(["dask", words[1], "--help"], capture_output=True, text=True, timeout=120)
                assert proc.returncode == 0, f"{where}: `dask {words[1]}` is not a command"
                for option in (w for w in words[2:] if w.startswith("--")):
                    assert option in proc.stdout, f"{where}: `dask {words[1]}` has no option {option}"
    assert {"pip", "kppca", "python"} <= seen
