"""One module per ``kppca`` command.

Each has ``NAME``, ``STAGES``, ``add_parser(subparsers)``, ``outputs(args)`` (the files it
writes, as ``(path, what)`` with ``what`` one of "image", "samples", "model": checked before
the library is imported, an image's format once matplotlib is) and ``run(args, stages)``, and
optionally ``check(args)``, which raises :class:`~kppca.cli.common.OptionError` for option
combinations that cannot work (called before the library is imported). Module level
imports nothing heavy: the parser is built from these modules for ``kppca --help``.

A new command is a new module here plus one line in :data:`COMMANDS`.
"""

from . import fit, sample, traverse

#: The commands, in the order ``kppca --help`` lists them.
COMMANDS = {module.NAME: module for module in (sample, traverse, fit)}

__all__ = ["COMMANDS"]
