"""Sphinx configuration for the kppca documentation.

Build (warnings are errors, as in CI)::

    python -m pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

Notebooks under ``docs/notebooks`` are rendered from their stored outputs
(``nb_execution_mode = "off"``); ``tests/test_notebooks.py`` executes them.
One page per ``examples/*.py`` script is generated at build time into
``docs/_generated/examples`` (see :func:`generate_example_pages`).
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # import the checkout even without `pip install -e .`
os.environ.setdefault("MPLBACKEND", "Agg")  # autodoc imports kppca.plotting

import kppca  # noqa: E402

# -- project ------------------------------------------------------------------
project = "kppca"
author = "kppca developers"
copyright = "kppca developers"
release = kppca.__version__
version = ".".join(release.split(".")[:2])

# -- extensions ---------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    # MathJax 3 shipped with the docs (copied to _static/mathjax, mathjax_path set to it): formulas
    # render without network; tests/test_docs_offline.py checks it in a headless browser.
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "myst_nb",  # also registers myst_parser for .md pages
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints", "Thumbs.db", ".DS_Store", "README.md"]
templates_path: list[str] = []

# -- MyST / myst-nb -----------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # notebooks are committed with their outputs
nb_merge_streams = True
# Example pages render each script's docstring as Markdown; a docstring with its own
# section underlines must not fail the build over heading levels.
suppress_warnings = ["myst.header"]

# -- autodoc / napoleon (numpy style) -----------------------------------------
autosummary_generate = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_default_options = {"members": True}
# Keep the pages light and offline: no heavy imports are mocked, kppca's own
# dependencies (torch, pyro, scikit-learn) are required to build the docs.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = True  # a separate rtype field, so autodoc adds no second one
napoleon_use_ivar = False  # `.. attribute::` keeps trailing underscores (n_components_)
napoleon_preprocess_types = False

# -- HTML ---------------------------------------------------------------------
html_theme = "sphinx_rtd_theme"
html_title = f"kppca {release}"
# kppca.css: wide tables, code, signatures and formulas scroll instead of being clipped at the
# content column (checked in a headless browser by tests/test_docs_offline.py).
html_static_path = ["_static"]
html_css_files = ["kppca.css"]
html_show_sourcelink = True


# -- example pages ------------------------------------------------------------
EXAMPLES_DIR = ROOT / "examples"
GENERATED_DIR = DOCS / "_generated" / "examples"


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` only when it differs, so incremental builds stay incremental."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _example_summary(script: Path) -> tuple[str, str]:
    """Title and body of a script's module docstring (empty when it has none)."""
    try:
        doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    except SyntaxError:
        doc = ""
    lines = doc.strip().splitlines()
    if not lines:
        return script.stem.replace("_", " ").capitalize(), ""
    title = lines[0].strip().rstrip(".")
    body = "\n".join(lines[1:]).strip()
    return title, body


def generate_example_pages() -> list[str]:
    """One MyST page per ``examples/*.py`` plus the toctree that lists them.

    A script's module docstring gives the page title (first line) and its
    introduction (the rest, rendered as Markdown); the code follows via
    ``literalinclude``. Pages of scripts that no longer exist are removed.
    Returns the page names, sorted.
    """
    scripts = sorted(EXAMPLES_DIR.glob("*.py")) if EXAMPLES_DIR.is_dir() else []
    scripts = [s for s in scripts if not s.name.startswith("_")]
    names = []
    for script in scripts:
        title, body = _example_summary(script)
        rel = os.path.relpath(script, GENERATED_DIR).replace(os.sep, "/")
        run = f"Run it from the repository root with `python examples/{script.name}`"
        if "argparse" in script.read_text(encoding="utf-8"):
            run += f"; `python examples/{script.name} --help` lists its options"
        text = (
            f"# {title}\n\n"
            f"{body}\n\n"
            f"{run}.\n\n"
            f"```{{literalinclude}} {rel}\n:language: python\n:linenos:\n```\n"
        )
        _write_if_changed(GENERATED_DIR / f"{script.stem}.md", text)
        names.append(script.stem)
    if GENERATED_DIR.is_dir():
        for stale in GENERATED_DIR.glob("*.md"):
            if stale.stem not in names:
                stale.unlink()
    if names:
        entries = "\n".join(f"_generated/examples/{n}" for n in names)
        toc = f"```{{toctree}}\n:maxdepth: 1\n\n{entries}\n```\n"
    else:
        toc = "No example scripts are available in `examples/` yet.\n"
    # Not a source suffix: only read through the include in examples.md.
    _write_if_changed(GENERATED_DIR / "toctree.inc", toc)
    return names


# Runs when Sphinx reads this file, i.e. before it collects the source files.
generate_example_pages()


# -- API pages of the young subpackages ----------------------------------------
#: Subpackages whose content is still growing. Their pages are generated so that
#: they document whatever exists: the package's ``__all__`` when it defines one,
#: otherwise each public submodule. An empty package gives a short page.
GROWING_PACKAGES = ("inference", "plotting", "cli")
API_GENERATED_DIR = DOCS / "_generated" / "api"


def generate_growing_api_pages() -> None:
    """Write ``_generated/api/<name>.rst`` for each of :data:`GROWING_PACKAGES`."""
    import importlib
    import importlib.util
    import pkgutil

    for name in GROWING_PACKAGES:
        modname = f"kppca.{name}"
        title = f"``{modname}``"
        lines = [title, "=" * len(title), ""]
        try:
            module = importlib.import_module(modname)
        except ImportError:
            # Not there at all: say so rather than fail (a *broken* import still
            # fails the build through autodoc when the package exists).
            if importlib.util.find_spec(modname) is None:
                lines += ["This subpackage is not available in this version.", ""]
                _write_if_changed(API_GENERATED_DIR / f"{name}.rst", "\n".join(lines))
                continue
            raise
        lines += [f".. automodule:: {modname}", ""]
        if getattr(module, "__all__", None) is None and hasattr(module, "__path__"):
            subs = sorted(
                m.name for m in pkgutil.iter_modules(module.__path__) if not m.name.startswith("_")
            )
            for sub in subs:
                full = f"{modname}.{sub}"
                lines += [
                    f"``{full}``",
                    "-" * (len(full) + 4),
                    "",
                    f".. automodule:: {full}",
                    "",
                ]
        if name == "cli":
            lines += _cli_usage(module)
        _write_if_changed(API_GENERATED_DIR / f"{name}.rst", "\n".join(lines))


def _cli_usage(module) -> list[str]:
    """``--help`` of the command and of each sub-command, when ``build_parser`` exists."""
    build_parser = getattr(module, "build_parser", None)
    if build_parser is None:
        return []
    import argparse

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "88"  # argparse wraps to the terminal width
    try:
        parser = build_parser()
        parser.prog = "kppca"
        helps = [("kppca", parser.format_help())]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    helps.append((f"kppca {sub_name}", sub.format_help()))
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    lines = ["Usage", "-----", ""]
    for title, text in helps:
        lines += [f"``{title} --help``:", "", ".. code-block:: text", ""]
        lines += [f"   {line}".rstrip() for line in text.rstrip().splitlines()]
        lines += [""]
    return lines


generate_growing_api_pages()


# -- autodoc: inherited members only from kppca ----------------------------------
def _skip_foreign_inherited(app, what, name, obj, skip, options):
    """Hide members a kppca class inherits from scikit-learn (``set_output`` etc.).

    ``:inherited-members:`` is needed to show the methods the estimators share
    through ``BasePPCA`` (``transform``, ``latent_posterior``, ...); the mixins'
    own methods are documented by scikit-learn and their docstrings refer to
    labels of its documentation.
    """
    if what != "class":
        return None
    target = getattr(obj, "fget", obj)  # properties
    target = getattr(target, "__func__", target)  # class and static methods
    module = getattr(target, "__module__", None)
    if callable(target) and isinstance(module, str) and not module.startswith("kppca"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_inherited)
