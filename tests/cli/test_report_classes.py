"""``kppca sample --report`` refuses a report whose classifier cannot see a class trained on (issue 26, item 8)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from kppca.cli.main import main  # noqa: E402
from kppca.datasets import load_mnist  # noqa: E402


def test_report_without_held_out_digits_of_a_trained_class_is_refused(tmp_path, capsys):
    """Before: every bundled zero trained the model and the report judged with a classifier that never saw a
    zero ("effective classes 2.00 (real 4.00)"), without a warning."""
    zeros = len(load_mnist(digits=0)[1])
    argv = ["sample", "--digits", "0", "--n-train", str(zeros), "--n-components", "2", "--n-samples", "3",
            "--report", "--out", str(tmp_path / "s.npy"), "--no-progress", "--threads", "1"]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "class(es) [0] were all used for training" in err and "--n-train" in err
