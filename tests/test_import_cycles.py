"""No import cycles in ``kppca``: the module graph, read from the source with ``ast``, has no
strongly connected component of more than one module (nor a module importing itself).

Every ``import``/``from ... import`` statement counts, including those inside functions
(a "lazy" import is still a dependency in both directions). ``from .pkg import name``
is an edge to ``pkg.name`` when that is a module, else to ``pkg`` (its ``__init__``).
Importing a module does not count as importing its parent packages.

Run as a script to print the components: ``python tests/test_import_cycles.py``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "kppca"


def module_graph(root: Path, package: str) -> dict[str, set[str]]:
    """``{module: {imported modules of the package}}`` for every ``.py`` file under ``root``."""
    modules: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join([package, *parts])] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rsplit(".", 1)[0]  # the package relative imports start from
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = here.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                # `import kppca.a.b` names the deepest module of the package that exists.
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
                elif target == name:
                    graph[name].add(name)  # a self-import is a cycle too
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with a cycle (Tarjan's algorithm, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    components.append(sorted(component))
    return sorted(components)


def _cycles_touching(prefixes: tuple[str, ...]) -> list[list[str]]:
    cycles = import_cycles(module_graph(PACKAGE_ROOT, "kppca"))
    return [c for c in cycles if any(m.startswith(prefixes) for m in c)]


def test_the_checker_finds_a_cycle(tmp_path):
    """The test below can fail: a two-module cycle through a lazy import and a self-import are found."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import f\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from .b import g\n    return g\n")
    (pkg / "sub" / "b.py").write_text("from pkg.sub.a import f\ng = f\n")
    (pkg / "c.py").write_text("from . import c\n")
    (pkg / "d.py").write_text("from .sub import a\nimport pkg.sub.b\n")  # no cycle: d is only an importer
    cycles = import_cycles(module_graph(pkg, "pkg"))
    assert cycles == [["pkg.c"], ["pkg.sub.a", "pkg.sub.b"]]


def test_no_import_cycle_in_kernels_and_features():
    assert _cycles_touching(("kppca.kernels", "kppca.features")) == []


def test_no_import_cycle_anywhere():
    assert import_cycles(module_graph(PACKAGE_ROOT, "kppca")) == []


if __name__ == "__main__":
    found = import_cycles(module_graph(PACKAGE_ROOT, "kppca"))
    for component in found:
        print(" <-> ".join(component))
    print(f"{len(found)} import cycle(s)")
    sys.exit(1 if found else 0)
