"""``python -m kppca``: the ``kppca`` command line (see ``python -m kppca --help``)."""

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
