"""The argument parser of ``kppca``: one sub-parser per module of :mod:`kppca.cli.commands`.

The shared option groups are in :mod:`kppca.cli.options`, the argument types in
:mod:`kppca.cli.types`; none of them imports torch, so ``--help``, ``--version`` and
argument errors are answered before the library is loaded.
"""

from __future__ import annotations

import argparse

from .. import __version__
from .commands import COMMANDS
from .common import PROG


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line (no usage block), exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> Parser:
    """The argument parser of the ``kppca`` command (sub-parsers are :class:`Parser` too)."""
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
