"""Issue 26 in the command line: --report without held-out digits of a class (item 8), --bandwidth 1e300 (item 10)."""

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


def test_a_bandwidth_too_wide_for_the_pixels_names_the_option(capsys):
    """Issue 26, item 10. Before: --bandwidth 1e300 failed in the fit with advice to rescale X, never naming
    --bandwidth (the kernel is 1 between any two digits)."""
    argv = ["sample", "--bandwidth", "1e300", "--digits", "0", "1", "--n-train", "40", "--n-components", "2",
            "--no-progress", "--threads", "1"]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "argument --bandwidth: 1e+300 is so wide" in err and "default is 5.0" in err
