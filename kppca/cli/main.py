"""The ``kppca`` command: fit the dual model on MNIST, generate digits, traverse the latent space.

    kppca sample --out digits.png          # fit on 2,000 digits, draw 64 new ones (all ten classes)
    kppca sample --digit-class 7 --out sevens.npy   # 64 new 7s as an array (64, 784)
    kppca traverse --out traversal.png     # grid over two latent components (paper, Fig. 4c)
    kppca fit --save model.pt              # fit, report, save; reuse with --model model.pt

Exit status: 0 on success, 2 for invalid arguments, 1 for other errors the user
can fix (missing files, inconsistent settings); messages are one line on stderr.

The parser is in :mod:`kppca.cli.parser`, argument types in :mod:`kppca.cli.types`,
shared steps in :mod:`kppca.cli.common` and one module per command in
:mod:`kppca.cli.commands`.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Sequence

from .commands import COMMANDS
from .common import DEFAULTS, PROG, USER_ERRORS, Stages, UserError, progress_enabled
from .parser import build_parser

__all__ = ["main", "build_parser", "DEFAULTS", "PROG"]



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
    command = COMMANDS[args.command]
    outs = getattr(args, "out", None)
    outs = outs if isinstance(outs, list) else []
    skipped = {"load data": loading, "fit model": loading, "save model": not getattr(args, "save", None),
               "plot spectrum": not getattr(args, "spectrum", None), "report": not getattr(args, "report", False),
               "write samples": not any(o.lower().endswith(".npy") for o in outs),
               "write image": bool(outs) and all(o.lower().endswith(".npy") for o in outs)}
    names = (["load model"] if loading else []) + [n for n in command.STAGES if not skipped.get(n)]

    stages = None
    threads = None
    if args.threads is not None:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(args.threads)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = show_warning
            stages = Stages(names, progress_enabled(args))
            command.run(args, stages)
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
