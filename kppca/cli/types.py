"""Argument types of the ``kppca`` command: one factory for the numeric checks, plus digits and names."""

from __future__ import annotations

import argparse
from typing import Any

from .._param_validation import Interval, InvalidParameterError, check_scalar
from ..models import DualPPCA
from ..models.generation import LATENTS, PREIMAGE_METHODS


def checked_number(constraints: list[Any]) -> Any:
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


positive_int = checked_number([Interval("int", 1, None, closed="left")])
nonnegative_int = checked_number([Interval("int", 0, None, closed="left")])
positive_float = checked_number([Interval("real", 0, None, closed="neither")])
steps = checked_number([Interval("int", 2, None, closed="left")])
#: ``--n-components``: the models' constraint less its non-numeric options ('mle', None).
components = checked_number(
    [c for c in DualPPCA._parameter_constraints["n_components"] if isinstance(c, Interval)]
)


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
