"""File arguments are checked before torch is imported; long stages show progress."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time

import pytest

from kppca.cli.commands import COMMANDS
from kppca.cli.common import Stages
from kppca.cli.main import _stage_names, build_parser

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run_main(argv: list[str]) -> tuple[int, str, list[str]]:
    """main(argv) in a fresh interpreter: exit status, stderr, heavy modules it imported."""
    code = (
        "import contextlib, io, sys\n"
        "from kppca.cli.main import main\n"
        "err = io.StringIO()\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):\n"
        f"    code = main({argv!r})\n"
        "print(code)\n"
        "print(err.getvalue().strip())\n"
        "print([m for m in ('torch', 'sklearn', 'scipy', 'matplotlib') if m in sys.modules])\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    env.pop("KPPCA_MNIST_DIR", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    status, err, loaded = proc.stdout.strip().split("\n")
    return int(status), err, eval(loaded)  # a list literal printed above


@pytest.mark.parametrize("case", ["model", "out", "npy", "mnist", "save", "spectrum", "traverse"])
def test_bad_paths_are_refused_before_torch_loads(tmp_path, case):
    missing = tmp_path / "nowhere"
    argv = {
        "model": ["sample", "--model", str(tmp_path / "nosuch.kppca"), "--out", str(tmp_path / "a.png")],
        "out": ["sample", "--out", str(missing / "a.png")],
        "npy": ["sample", "--out", str(tmp_path / "a.png"), "--out", str(missing / "a.npy")],
        "mnist": ["fit", "--mnist-dir", str(missing)],
        "save": ["fit", "--save", str(missing / "m.kppca")],
        "spectrum": ["fit", "--spectrum", str(tmp_path)],  # a folder, not a file
        "traverse": ["traverse", "--out", str(missing / "t.png")],
    }[case]
    status, err, loaded = _run_main(argv)
    assert status == 1, err
    assert err.startswith("kppca: error:") and "\n" not in err
    expected = {"model": "does not exist", "mnist": "not an existing folder", "spectrum": "is a folder"}
    assert expected.get(case, "does not exist") in err
    assert loaded == [], loaded  # answered before the library (torch, scikit-learn, matplotlib) loads
    assert not any(tmp_path.iterdir()) if case != "spectrum" else True  # nothing was written


def test_report_has_a_training_stage_of_its_own():
    parser = build_parser()
    args = parser.parse_args(["sample", "--report"])
    names = _stage_names(args, COMMANDS["sample"])
    assert names.index("train judge") + 1 == names.index("report")
    plain = _stage_names(parser.parse_args(["sample"]), COMMANDS["sample"])
    assert "train judge" not in plain and "report" not in plain


def test_long_stage_keeps_redrawing_the_bar(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    stages = Stages(["slow"], enabled=True)
    before = err.getvalue().count("\r")
    stages.run("slow", time.sleep, 1.3)  # the ticker redraws every 0.5 s
    stages.close()
    assert err.getvalue().count("\r") - before >= 3  # at least two redraws while it ran, plus the update
    assert "slow" in err.getvalue()


def test_disabled_progress_writes_nothing(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    stages = Stages(["quiet"], enabled=False)
    assert stages.run("quiet", lambda: 3) == 3
    stages.close()
    assert err.getvalue() == ""


def test_report_judges_are_the_same_side_by_side_or_one_after_the_other(monkeypatch):
    """With two threads the stage trains the feature network beside the classifier: the same judges, bit for bit."""
    import argparse
    import importlib

    import numpy as np
    import torch

    from kppca._linalg.threads import compute_threads
    from kppca.cli.commands.sample import _train_judge
    from kppca.datasets import load_mnist

    features_module = importlib.import_module("kppca.metrics.digit_features")  # the package exports a function of that name

    X, _ = load_mnist()
    order = np.random.default_rng(0).permutation(len(X))  # the bundled digits are sorted by class
    model = argparse.Namespace(X_fit_=torch.as_tensor(X[order[:4200]]))  # 800 held out
    args = argparse.Namespace(mnist_dir=None)
    judges = []
    for threads in (2, 1):
        monkeypatch.setattr(features_module, "_TRAINED", {})  # train again, not from the cache
        with compute_threads(threads) as used:
            assert used == threads
            X_ref, y_ref, _, classifier, network = _train_judge(args, model)
            assert (network is None) == (threads == 1)  # side by side: the network is still training
            net = network.result() if network is not None else features_module.digit_features(X_ref, y_ref)
            assert features_module.digit_features(X_ref, y_ref) is net  # the one the stage trained, cached
        assert len(features_module._TRAINED) == 1
        judges.append((classifier, net))
    (clf_a, net_a), (clf_b, net_b) = judges
    assert np.array_equal(clf_a.coef_, clf_b.coef_) and np.array_equal(clf_a.intercept_, clf_b.intercept_)
    assert all(torch.equal(u, v) for u, v in zip(net_a.weights + net_a.biases, net_b.weights + net_b.biases))


def test_report_is_the_same_with_the_network_beside_it_or_before_it(monkeypatch, capsys, tmp_path):
    """With two threads the report's other measures run while the network trains: the same printed report."""
    import importlib

    from kppca.cli.commands import sample
    from kppca.cli.main import main

    threads_module = importlib.import_module("kppca._linalg.threads")
    features_module = importlib.import_module("kppca.metrics.digit_features")
    train_judge, beside, reports = sample._train_judge, [], []

    def spy(*args):
        judge = train_judge(*args)
        beside.append(judge[-1] is not None)  # the network's future: still training beside the stage
        return judge

    monkeypatch.setattr(sample, "_train_judge", spy)
    for threads in (2, 1):
        monkeypatch.setattr(threads_module, "available_threads", lambda n=threads: n)
        monkeypatch.setattr(features_module, "_TRAINED", {})  # train again, not from the cache
        argv = ["sample", "--report", "--digits", "0", "1", "--n-train", "300", "--n-samples", "16",
                "--no-progress", "--out", str(tmp_path / "s.npy")]
        assert main(argv) == 0
        out = capsys.readouterr().out
        reports.append(out[out.index("quality report") : out.index("generated ")])
    assert beside == [True, False]
    assert "Fréchet" in reports[0] and reports[0] == reports[1]
