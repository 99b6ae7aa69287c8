"""The ``kppca`` command (examples: README's "Command line"); parsed before torch, scikit-learn or the models load.

Exit status: 0 on success; 2 for invalid arguments, including values the library refuses before any work;
1 for other errors the user can fix; 130 when interrupted. Messages are one line (the traceback with ``--debug``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from typing import Any, Sequence

from .. import __version__
from .commands import COMMANDS
from .common import (
    DEFAULTS,
    PROG,
    USER_ERRORS,
    OptionError,
    Stages,
    UserError,
    check_image_format,
    check_paths,
    in_option_words,
    one_line,
)

__all__ = ["main", "build_parser", "DEFAULTS", "PROG"]


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line (no usage block), exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> Parser:
    """The argument parser of the ``kppca`` command: one sub-parser (also a :class:`Parser`) per command."""
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


def _stage_names(args: Any, command: Any) -> list[str]:
    """The stages this run goes through (those of the command that the options do not skip)."""
    loading = bool(getattr(args, "model", None))
    report = getattr(args, "report", False)
    written = {what for _, what in command.outputs(args)}
    skipped = {"load data": loading, "fit model": loading, "train judge": not report, "report": not report,
               "save model": "model" not in written, "plot spectrum": "image" not in written,
               "write image": "image" not in written, "write samples": "samples" not in written}
    return (["load model"] if loading else []) + [n for n in command.STAGES if not skipped.get(n)]


def _load_library(threads: int | None) -> int | None:
    """Import the library (only now: the options are valid); set torch's ``threads``, returning the previous count."""
    if "matplotlib.pyplot" not in sys.modules:  # the command only writes files
        import matplotlib

        matplotlib.use("Agg")
    importlib.import_module("kppca.models")
    if threads is None:
        return None
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    return previous


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``kppca`` command with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version, bad arguments
        return int(exit_.code or 0) if not isinstance(exit_.code, str) else 2
    command = COMMANDS[args.command]
    usage = f"{PROG} {args.command}"

    def option_error(exc: OptionError) -> int:
        print(f"{usage}: error: {one_line(exc)} (see '{usage} --help')", file=sys.stderr)
        return 2

    try:
        if hasattr(command, "check"):
            command.check(args)
    except OptionError as exc:
        return option_error(exc)

    def show_warning(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None):
        print(f"{PROG}: warning: {' '.join(str(message).split())}", file=sys.stderr)

    if args.bandwidth is None and not getattr(args, "model", None):
        args.bandwidth = DEFAULTS["bandwidth"]

    stages = None
    threads = None
    try:
        # File arguments before the library loads: a wrong path answers in a fraction of a second.
        outputs = command.outputs(args)
        check_paths(args, outputs)
        with warnings.catch_warnings():
            warnings.showwarning = show_warning
            # Raised while compiling a dependency's source whose bytecode was not built at install (pyro 1.9's
            # escape sequences on Python 3.12): nothing the command's user can act on.
            warnings.filterwarnings("ignore", category=SyntaxWarning)
            progress = args.progress if args.progress is not None else sys.stderr.isatty()
            stages = Stages(["import library", *_stage_names(args, command)], progress)
            threads = stages.run("import library", _load_library, args.threads)
            for out, what in outputs:
                if what == "image":
                    check_image_format(out)  # now that matplotlib is loaded
            command.run(args, stages)
            total = stages.close()
            timings = ", ".join(f"{k} {v:.2f} s" for k, v in stages.timings.items())
            print(f"timings: {timings}; total {total:.2f} s")
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except OptionError as exc:
        if args.debug:
            raise
        return option_error(exc)
    except (UserError, *USER_ERRORS) as exc:
        if args.debug:
            raise
        print(f"{PROG}: error: {in_option_words(exc, args, stages and stages.current)}", file=sys.stderr)
        return 1
    finally:
        if stages is not None:
            stages.bar.close()
        if threads is not None:
            import torch

            torch.set_num_threads(threads)
