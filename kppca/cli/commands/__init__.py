"""One module per ``kppca`` command, importing nothing heavy (``kppca --help`` builds the parser from them).

Each has ``NAME``, ``STAGES``, ``add_parser(subparsers)``, ``outputs(args)`` (the files it writes, as
``(path, what)``, what being "image", "samples" or "model"), ``run(args, stages)`` and optionally
``check(args)`` (raises :class:`~kppca.cli.common.OptionError` before the library is imported).
"""

from . import fit, sample, traverse

#: The commands, in the order ``kppca --help`` lists them.
COMMANDS = {module.NAME: module for module in (sample, traverse, fit)}

__all__ = ["COMMANDS"]
