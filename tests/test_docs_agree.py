"""What a newcomer reads agrees with the code (issue 43): versions, extras, install commands, defaults, wording.

Each statement of the docs that the code decides is checked against the code here, so they cannot drift
apart: the torch range (pyproject.toml), the extras table, the install commands in error messages and
examples, the default RBF width, what ``novelty_score`` measures, ``dir(kppca)`` and the label-type error.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL = (ROOT / "docs" / "installation.md").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _torch_spec():
    from packaging.requirements import Requirement

    return next(Requirement(r) for r in PYPROJECT["project"]["dependencies"] if Requirement(r).name == "torch")


def test_torch_range_is_the_one_pyproject_declares():
    from packaging.specifiers import SpecifierSet

    spec = _torch_spec().specifier
    for name, text in (("README.md", README), ("docs/installation.md", INSTALL)):
        stated = re.findall(r"torch[^`\n]{0,40}`([<>=!~][^`]*)`", text)
        assert stated, f"{name} states no torch range"
        for s in stated:
            assert SpecifierSet(s) == spec, f"{name} says torch `{s}`, pyproject.toml `{spec}`"
        for pinned in re.findall(r"torch==([\d.]+)", text):
            assert pinned in spec, f"{name} pins torch=={pinned}, outside {spec}"


def test_extras_table_lists_every_extra_and_its_packages():
    from packaging.requirements import Requirement

    extras = PYPROJECT["project"]["optional-dependencies"]
    rows = dict(re.findall(r"^\| `(\w+)` \|(.*)\|\s*$", INSTALL, flags=re.M))
    assert set(rows) == set(extras), f"table {sorted(rows)} vs pyproject.toml {sorted(extras)}"
    for extra, requirements in extras.items():
        for requirement in requirements:
            package = Requirement(requirement).name
            assert package.lower() in rows[extra].lower(), f"extra {extra!r}: {package} not in its table row"


def _texts():
    for path in [*ROOT.glob("kppca/**/*.py"), *ROOT.glob("examples/*.py"), ROOT / "README.md",
                 *ROOT.glob("docs/*.md")]:
        yield path, path.read_text(encoding="utf-8")


def test_index_install_commands_come_with_the_source_tree_form():
    """There is no release on a package index: ``pip install "kppca[x]"`` alone would fail for a newcomer."""
    found = 0
    for path, text in _texts():
        for match in re.finditer(r"kppca\[(\w+)\]", text):
            found += 1
            window = text[max(0, match.start() - 300): match.end() + 300]
            assert f".[{match[1]}]" in window, (
                f"{path.relative_to(ROOT)}: `kppca[{match[1]}]` without the source-tree form `.[{match[1]}]` nearby")
    assert re.search(r'pip install \\?"\.\[rkm\]', (ROOT / "kppca/optim/stiefel.py").read_text()), \
        "the geoopt ImportError must give the source-tree command"
    assert found  # the messages that name the index form are there, so the check checks something


@pytest.mark.parametrize("needs,extra", [("load_santafe", "rkm"), ("import dask", "dask")])
def test_examples_state_the_extra_they_need(needs, extra):
    users = [p for p in ROOT.glob("examples/*.py") if needs in p.read_text(encoding="utf-8")]
    for path in users:
        doc = path.read_text(encoding="utf-8").split('"""')[1]
        assert f'.[{extra}]' in doc, f"{path.name} needs the {extra} extra and its docstring does not say so"
    if needs == "load_santafe":
        assert users, "no example reads the Santa Fe series: the check checks nothing"


def test_default_rbf_width_is_the_one_the_docs_state():
    import torch

    from kppca import DualPPCA
    from kppca.kernels import RBF

    X = np.random.default_rng(0).normal(size=(60, 7)) * np.linspace(0.5, 3, 7)
    width = DualPPCA(2, kernel=RBF()).fit(X).kernel_.bandwidth
    expected = np.sqrt(X.shape[1] * X.var() / 2)  # numpy, over all entries: scikit-learn's gamma="scale"
    # a variance and a square root of well-scaled data: a few rounding errors
    assert width == pytest.approx(expected, rel=1e3 * np.finfo(float).eps)
    median = float(torch.pdist(torch.as_tensor(X)).median())
    assert abs(width - median) > 0.1 * median  # the two rules differ here: the check tells them apart
    sklearn_doc = (ROOT / "docs" / "coming_from_sklearn.md").read_text(encoding="utf-8")
    rbf_row = next(line for line in sklearn_doc.splitlines() if line.startswith('| `kernel="rbf"`'))
    for name, text in (("coming_from_sklearn.md", rbf_row), ("README.md", README)):
        assert "sqrt(D Var(X) / 2)" in text, f"{name} does not state RBF()'s width"
    assert "without a width uses the median" not in sklearn_doc


def test_novelty_score_is_the_share_outside_the_training_span_as_the_readme_says():
    """Outside the span of the centered training features, not outside the q-dimensional latent subspace."""
    from kppca import DualPPCA

    gen = np.random.default_rng(0)
    basis = np.linalg.qr(gen.normal(size=(3, 2)))[0]  # the data span a plane in R^3
    X = gen.normal(size=(30, 2)) * [3.0, 1.0] @ basis.T
    model = DualPPCA(1, kernel="linear").fit(X)  # q = 1: the latent subspace is a line in that plane
    in_plane = X.mean(0) + 2.0 * basis[:, 1]  # in the span, orthogonal to the first component
    off_plane = X.mean(0) + np.cross(basis[:, 0], basis[:, 1])
    score = model.novelty_score(np.stack([in_plane, off_plane]))
    assert score[0] == pytest.approx(0.0, abs=1e-10) and score[1] == pytest.approx(1.0, abs=1e-10)
    line = next(line for line in README.splitlines() if "novelty_score" in line or "share of |phi(x) - m|^2" in line)
    assert "span" in line and "model's subspace" not in README


def test_dir_lists_the_public_api_only():
    import kppca

    names = dir(kppca)
    assert not {"Any", "TYPE_CHECKING", "annotations", "importlib"} & set(names)
    assert {"DualPPCA", "PrimalPPCA", "save", "load", "__version__"} <= set(names)
    for name in names:
        assert getattr(kppca, name) is not None  # every listed name resolves


def test_label_of_another_type_is_named():
    from kppca import DualPPCA
    from kppca.kernels import RBF

    gen = np.random.default_rng(0)
    X, y = gen.normal(size=(40, 3)), np.repeat(np.arange(8), 5)
    model = DualPPCA(2, kernel=RBF(2.0)).fit(X, y)
    with pytest.raises(ValueError, match=r"'7' not seen in fit.*y holds strings but the labels seen in fit are "
                                         r"numbers"):
        model.sample(4, y="7")
    with pytest.raises(ValueError, match="not seen in fit") as info:
        model.sample(4, y=9)  # the same type, only unknown: no type note
    assert "strings" not in str(info.value)


def test_readme_says_how_long_the_tests_take():
    after = README[README.index("<!-- ci:test-command -->"):][:1200]
    assert re.search(r"\d+ minutes", after), "the README does not say how long the test suite takes"
