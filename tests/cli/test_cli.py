"""The ``kppca`` command line: tiny end-to-end runs and every bad-argument path."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kppca import __version__  # noqa: E402
from kppca.cli.main import build_parser, main  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TINY = ["--digits", "0", "1", "--n-train", "40", "--n-components", "2", "--no-progress", "--threads", "1"]


def _is_png(path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(8) == PNG_SIGNATURE


@pytest.fixture(autouse=True)
def _no_env_mnist(monkeypatch):
    monkeypatch.delenv("KPPCA_MNIST_DIR", raising=False)


def test_sample_in_process(tmp_path, capsys):
    out = tmp_path / "samples.png"
    assert main(["sample", "--out", str(out), "--n-samples", "6", *TINY]) == 0
    assert _is_png(out)
    text = capsys.readouterr().out
    for word in ("explained variance", "sigma2", "q = 2", "rank", "timings", "fit model"):
        assert word in text


def test_sample_via_python_m(tmp_path):
    out = tmp_path / "tmp.png"
    env = {k: v for k, v in os.environ.items() if k != "KPPCA_MNIST_DIR"}
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run(
        [sys.executable, "-m", "kppca", "sample", "--out", str(out), "--n-samples", "4", "--preimage", "knn", *TINY],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert _is_png(out)
    assert "wrote" in proc.stdout


def test_traverse_fit_save_and_reuse(tmp_path, capsys):
    model = tmp_path / "model.kppca"
    spectrum = tmp_path / "spectrum.png"
    assert main(["fit", "--save", str(model), "--spectrum", str(spectrum), *TINY]) == 0
    assert model.exists() and _is_png(spectrum)
    trav = tmp_path / "trav.png"
    assert main(["traverse", "--model", str(model), "--n-steps", "3", "--out", str(trav), "--no-progress"]) == 0
    assert _is_png(trav)
    again = tmp_path / "again.png"
    assert main(["sample", "--model", str(model), "--bandwidth", "3", "--n-samples", "3", "--out", str(again),
                 "--preimage", "fixed_point", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "ignoring --bandwidth" in captured.err
    assert _is_png(again)


def test_version_and_help(capsys):
    assert main(["--version"]) == 0
    assert __version__ in capsys.readouterr().out
    assert main(["--help"]) == 0
    assert "sample" in capsys.readouterr().out
    for command, options in {
        "sample": ["--digits", "--n-train", "--bandwidth", "--n-components", "--sigma2", "--n-samples", "--preimage",
                   "--seed", "--out", "--mnist-dir", "--model", "--progress", "--n-cols"],
        "traverse": ["--components", "--n-steps", "--extent", "--out", "--model"],
        "fit": ["--save", "--spectrum", "--mnist-dir"],
    }.items():
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        for option in options:
            assert option in text, (command, option)
    # every option has a help text
    for action in build_parser()._subparsers._group_actions[0].choices["sample"]._actions:
        assert action.help, action.option_strings


def _error(capsys, argv, code):
    assert main(argv) == code
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    assert err.startswith("kppca")
    return err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["sample", "--digits", "11"], "digits are 0..9"),
        (["sample", "--digits", "a"], "digits are 0..9"),
        (["sample", "--n-samples", "-3"], r"must be an int in the range [1, inf), got -3"),
        (["sample", "--n-train", "0"], r"must be an int in the range [1, inf), got 0"),
        (["sample", "--n-train", "2.5"], r"must be an int in the range [1, inf), got 2.5"),
        (["sample", "--seed", "x"], "expected a number, got 'x'"),
        (["sample", "--preimage", "magic"], "unknown pre-image"),
        (["sample", "--bandwidth", "-1"], "must be a float in the range (0, inf), got -1"),
        (["sample", "--threads", "0"], r"must be an int in the range [1, inf)"),
        (["sample", "--n-components", "1.5"], "(0, 1)"),
        (["sample", "--n-components", "0"], r"an int in the range [1, inf) or a float in the range (0, 1), got 0"),
        (["traverse", "--components", "1", "1"], "must differ"),
        (["traverse", "--n-steps", "1"], "must be an int in the range [2, inf), got 1"),
        (["sample", "--no-such-option"], "unrecognized"),
        ([], "required"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2(capsys, argv, needle):
    err = _error(capsys, argv, 2)
    assert needle in err


def test_user_errors_exit_1(tmp_path, capsys):
    out = str(tmp_path / "x.png")
    err = _error(capsys, ["sample", "--model", str(tmp_path / "missing.pt"), "--out", out], 1)
    assert "missing.pt" in err and "does not exist" in err
    err = _error(capsys, ["sample", "--mnist-dir", str(tmp_path / "nowhere"), "--out", out], 1)
    assert "nowhere" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    err = _error(capsys, ["sample", "--mnist-dir", str(empty), "--out", out], 1)
    assert "train-images-idx3-ubyte" in err
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a model")
    err = _error(capsys, ["sample", "--model", str(bad), "--out", out], 1)
    assert "cannot read model file" in err
    err = _error(capsys, ["sample", "--digits", "0", "--n-train", "100000", "--out", out], 1)
    assert "exceeds" in err
    err = _error(capsys, ["sample", *TINY, "--out", str(tmp_path / "no" / "dir" / "x.png")], 1)
    assert "does not exist" in err
    err = _error(capsys, ["sample", *TINY, "--out", str(tmp_path / "x.xyz")], 1)
    assert "unsupported image format" in err
    err = _error(capsys, ["traverse", *TINY, "--components", "0", "5", "--out", out], 1)
    assert "out of range" in err
    err = _error(capsys, ["sample", *TINY, "--sigma2", "100", "--out", out], 1)
    assert "sigma2" in err


def test_save_into_unwritable_place_fails_before_fitting(tmp_path, capsys):
    # Tests may run as root, which ignores permission bits: use places nobody can write to.
    blocker = tmp_path / "file.txt"
    blocker.write_text("a file, not a folder")
    targets = [blocker / "model.pt", tmp_path / "missing" / "model.pt"]
    if os.path.isdir("/proc/self"):  # Linux: /proc refuses new files even to root
        targets.append("/proc/kppca-test-model.pt")
    for target in targets:
        assert main(["fit", *TINY, "--save", str(target)]) == 1
        captured = capsys.readouterr()
        err = captured.err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in captured.err, captured.err
        assert err.startswith("kppca: error: cannot write") and str(target) in err
        assert "fit model" not in captured.out and "data:" not in captured.out  # checked before any work


def test_save_probe_leaves_no_file_behind_and_keeps_existing_ones(tmp_path, capsys):
    from kppca.cli.common import check_writable

    new = tmp_path / "new.pt"
    check_writable(str(new), "model")
    assert not new.exists()
    old = tmp_path / "old.pt"
    old.write_bytes(b"previous content")
    check_writable(str(old), "model")
    assert old.read_bytes() == b"previous content"


@pytest.mark.parametrize(
    "error, needle",
    [
        (OSError(28, "No space left on device"), "No space left on device"),
        (RuntimeError("[enforce fail at inline_container.cc:747] . open file failed with strerror: Permission denied"),
         "Permission denied"),
    ],
)
def test_save_failure_is_one_line(tmp_path, capsys, monkeypatch, error, needle):
    from kppca.models import DualPPCA

    def fail(self, path):
        raise error

    monkeypatch.setattr(DualPPCA, "save", fail)
    target = tmp_path / "model.kppca"
    err = _error(capsys, ["fit", *TINY, "--save", str(target)], 1)
    assert str(target) in err and needle in err
    assert "enforce fail" not in err and ".cc" not in err


@pytest.mark.parametrize("error", [ValueError, TypeError, OSError])
def test_load_errors_are_one_line(tmp_path, capsys, monkeypatch, error):
    # Whatever the model loader raises for a file that is not a model, main() reports it in one line.
    import importlib

    cli = importlib.import_module("kppca.cli.common")  # where the commands look the loader up

    class NotAModel(error):
        pass

    def load(path, device=None):
        raise NotAModel(f"{path!r} is not a kppca model file:\nit starts with a PNG signature")

    monkeypatch.setattr(cli, "load_model", load)
    png = tmp_path / "digits.png"
    png.write_bytes(PNG_SIGNATURE + bytes(64))
    err = _error(capsys, ["sample", "--model", str(png), "--out", str(tmp_path / "x.png")], 1)
    assert "digits.png" in err and "PNG signature" in err


def test_model_option_with_an_image_is_one_line(tmp_path, capsys):
    png = tmp_path / "digits.png"
    assert main(["sample", *TINY, "--n-samples", "4", "--out", str(png)]) == 0
    capsys.readouterr()
    err = _error(capsys, ["sample", "--model", str(png), "--out", str(tmp_path / "x.png")], 1)
    assert "digits.png" in err


def test_subprocess_bad_argument_has_no_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "kppca", "sample", "--preimage", "magic", "--out", str(tmp_path / "x.png")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_sample_npy_class_latent_and_report(tmp_path, capsys):
    """--out FILE.npy saves (n, 784) pixels in [0, 1]; --digit-class gives that class; --report prints the check."""
    npy, png = tmp_path / "ones.npy", tmp_path / "ones.png"
    argv = ["sample", "--out", str(npy), "--out", str(png), "--n-samples", "5", "--digit-class", "1", "--report", *TINY]
    assert main(argv) == 0
    S = np.load(npy)
    assert S.shape == (5, 784) and S.min() >= 0.0 and S.max() <= 1.0
    assert _is_png(png)
    text = capsys.readouterr().out
    assert "latent 'mixture' of class 1" in text and "classified as requested: 1:" in text
    assert "effective classes" in text and "MMD" in text
    only = tmp_path / "PRIOR.NPY"  # the exact name, whatever its case (np.save(name) would append .npy)
    assert main(["sample", "--out", str(only), "--n-samples", "3", "--latent", "prior", *TINY]) == 0
    assert np.load(only).shape == (3, 784)
    text = capsys.readouterr().out
    assert "latent 'prior'" in text and text.count("wrote ") == 1  # only the array: no default picture


def test_digit_class_from_a_saved_model(tmp_path, capsys):
    model = tmp_path / "m.kppca"
    assert main(["fit", "--save", str(model), *TINY]) == 0
    out = tmp_path / "zeros.npy"
    assert main(["sample", "--model", str(model), "--digit-class", "0", "--n-samples", "2", "--out", str(out),
                 "--no-progress"]) == 0
    assert np.load(out).shape == (2, 784)
    capsys.readouterr()
    assert main(["sample", "--model", str(model), "--digit-class", "7", "--out", str(out), "--no-progress"]) == 1
    assert "not seen in fit" in capsys.readouterr().err


@pytest.mark.parametrize("argv, needle", [
    (["sample", "--digit-class", "12"], "0..9"),
    (["sample", "--latent", "uniform"], "choose from prior, mixture"),
])
def test_new_flags_reject_bad_values(capsys, argv, needle):
    assert main(argv) == 2
    assert needle in capsys.readouterr().err


# ----------------------------------------------------------------------------- start-up and messages (issue 20, 18)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _python(code: str) -> str:
    """Run ``code`` in a fresh interpreter (this checkout first on the path); its stdout."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_kppca_loads_no_pyro_arviz_matplotlib_or_subpackages():
    heavy = ["pyro", "arviz", "matplotlib", "kppca.plotting", "kppca.inference", "kppca.rkm", "kppca.distributions"]
    code = (
        "import sys, kppca\n"
        f"heavy = {heavy!r} + ['torch', 'sklearn']\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "heavy = heavy[:-2]\n"
        "kppca.DualPPCA, kppca.PrimalPPCA, kppca.kernels, kppca.features, kppca.load, kppca.ModelFileError\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "print('torch' in sys.modules)\n"
    )
    bare, with_models, torch_loaded = _python(code).splitlines()
    assert bare == "[]", bare
    assert with_models == "[]", with_models  # the estimators do not need Pyro until a distribution is asked for
    assert torch_loaded == "True"


def test_lazy_names_resolve_and_are_listed():
    import kppca

    for name in kppca.__all__:
        assert getattr(kppca, name) is not None
        assert name in dir(kppca)
    from kppca import DualPPCA, load, save
    from kppca.io import load as io_load, save as io_save
    from kppca.models import DualPPCA as same

    assert DualPPCA is same and load is io_load and save is io_save
    assert kppca.rkm.__name__ == "kppca.rkm" and "rkm" in dir(kppca)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        kppca.nope  # noqa: B018


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["sample", "--help"], ["sample", "--bandwidth", "-1"],
                                  ["traverse", "--preimage", "magic"], ["fit", "--seed", str(2**70)]])
def test_help_version_and_argument_errors_do_not_import_torch(argv):
    code = (
        "import contextlib, io, sys\n"
        "from kppca.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    code = main({argv!r})\n"
        "print(code, [m for m in ('torch', 'sklearn', 'scipy', 'pyro', 'matplotlib') if m in sys.modules])\n"
    )
    code_, loaded = _python(code).strip().split(" ", 1)
    assert code_ == ("0" if "--help" in argv or "--version" in argv else "2")
    assert loaded == "[]", (argv, loaded)


def test_cli_names_and_ranges_are_the_librarys():
    from kppca._param_validation import MAX_SEED, Integral, Interval, InvalidParameterError, check_scalar
    from kppca.cli import options as types
    from kppca.models import DualPPCA
    from kppca.models.generation import DEFAULT_PREIMAGE, LATENTS, PREIMAGE_METHODS

    assert types.LATENTS == LATENTS and types.PREIMAGE_METHODS == PREIMAGE_METHODS
    assert types.DEFAULT_PREIMAGE == DEFAULT_PREIMAGE and types.MAX_SEED == MAX_SEED
    # --n-components: the models' constraint less its non-numeric options ('mle', None)
    n_components = [c for c in DualPPCA._parameter_constraints["n_components"] if isinstance(c, Interval)]
    library = {
        types.positive_int: [Interval(Integral, 1, None, closed="left")],
        types.nonnegative_int: [Interval(Integral, 0, None, closed="left")],
        types.positive_float: DualPPCA._parameter_constraints["sigma2"][:1],
        types.steps: [Interval(Integral, 2, None, closed="left")],
        types.components: n_components,
        types.seed: ["random_state"],
    }
    values = ["-1", "0", "1", "2", "0.5", "1.0", "2.5", "1e-300", "1e300", "inf", "nan", "-0.0", str(2**64 - 1),
              str(2**64), str(10**400)]
    for convert, constraints in library.items():
        for text in values:
            try:
                value = int(text)
            except ValueError:
                value = float(text)
            try:
                check_scalar(value, "x", constraints)
                accepted = True
            except (InvalidParameterError, OverflowError):  # OverflowError: math.isfinite(10**400) in the library
                accepted = False
            try:
                convert(text)
                ours = True
            except argparse.ArgumentTypeError as exc:
                ours = False
                if constraints != ["random_state"]:  # same words as the library
                    with pytest.raises(InvalidParameterError) as lib:
                        check_scalar(value, "x", constraints)
                    assert str(exc) in str(lib.value), (str(exc), str(lib.value))
            if text == str(10**400) and not accepted:
                continue  # the library cannot even compare it; the CLI passes it on (a kernel then refuses it)
            assert ours == accepted, (convert.ranges, text)


@pytest.mark.parametrize("argv, needles", [
    (["sample", "--digits", "0", "1", "--digit-class", "5"], ["argument --digit-class", "--digits 0 1"]),
    (["sample", "--seed", str(2**70)], ["argument --seed", "18446744073709551615"]),
])
def test_option_messages_name_the_option(capsys, argv, needles):
    err = _error(capsys, argv, 2)
    for needle in needles:
        assert needle in err, err
    assert "random_state" not in err and "y asks" not in err and "Traceback" not in err


def test_extreme_bandwidths_take_the_kernels_limits_or_fail_in_one_line(tmp_path):
    """RBF(1e-300) is the kernel's limit (the identity on distinct digits): sampling works. RBF(1e300) is the
    all-ones matrix, whose centered version is zero: one line naming --bandwidth (issue 26, item 10: it used
    to advise rescaling X), exit 2 as for other argument errors, no traceback."""
    env = dict(os.environ, MPLBACKEND="Agg")
    tiny = subprocess.run(
        [sys.executable, "-m", "kppca", "sample", "--bandwidth", "1e-300", *TINY, "--out", str(tmp_path / "x.npy")],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert tiny.returncode == 0, tiny.stderr
    assert np.isfinite(np.load(tmp_path / "x.npy")).all()
    huge = subprocess.run(
        [sys.executable, "-m", "kppca", "traverse", "--bandwidth", "1e300", *TINY, "--out", str(tmp_path / "y.png")],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert huge.returncode == 2 and "Traceback" not in huge.stderr
    assert len(huge.stderr.strip().splitlines()) == 1 and huge.stderr.startswith("kppca traverse: error:"), huge.stderr
    assert "argument --bandwidth: 1e+300 is so wide" in huge.stderr


def test_empty_mnist_dir_message_is_short_and_actionable(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    err = _error(capsys, ["sample", "--mnist-dir", str(empty), "--out", str(tmp_path / "x.png")], 1)
    assert "train-images-idx3-ubyte" in err and "--mnist-dir" in err and "bundled" in err
    assert len(err) < 200 + len(str(empty)), len(err)


def test_digit_class_of_a_saved_model_names_the_option(tmp_path, capsys):
    model = tmp_path / "m.kppca"
    assert main(["fit", "--save", str(model), *TINY]) == 0
    capsys.readouterr()
    err = _error(capsys, ["sample", "--model", str(model), "--digit-class", "7", "--out", str(tmp_path / "x.npy"),
                          "--no-progress"], 1)
    assert err.startswith("kppca: error: --digit-class 7") and "0, 1" in err


def test_fit_help_describes_the_safe_model_file(capsys):
    assert main(["fit", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "pickle" not in text and "model.kppca" in text and "safetensors" in text


def test_dtype_option_fits_the_model_in_that_precision(tmp_path):
    """--dtype float32 (the path to all 60,000 MNIST digits: half the Gram matrix's memory) reaches the model."""
    import torch

    from kppca import load

    models = {}
    for dtype in ("float32", "float64"):
        path = tmp_path / f"{dtype}.kppca"
        assert main(["fit", "--save", str(path), "--dtype", dtype, *TINY]) == 0
        models[dtype] = load(path)
    assert models["float32"]._dtype == torch.float32 and models["float64"]._dtype == torch.float64
    # The same fit to float32 rounding. Each kernel value's exponent |x - y|^2 / (2 bw^2) is expanded from
    # squared norms: its rounding is ~ (D + 2) eps32 |x|^2 / bw^2 ~ 786 * 6e-8 * 100 / 25 ~ 2e-4 for digits
    # (|x|^2 ~ 100, bw = 5), a relative error of the entries and so of sigma2, a mean of the discarded
    # eigenvalues of K_c / N (no cancellation: they are all positive); 1e-3 is that bound with a factor 5.
    assert abs(models["float32"].sigma2_ / models["float64"].sigma2_ - 1) < 1e-3
