"""Start-up time and memory of ``import kppca`` and of the ``kppca`` command, beside ``import numpy``/``torch``.

Each command runs in a fresh interpreter, ``--repeats`` times, *interleaved* (one run of every
command per round), so that a change of machine load hits all of them alike; the table gives the
median wall time, the median peak resident set size (``ru_maxrss`` of the child, from
``os.wait4``) and the ratios the targets are stated in:

* ``kppca --help``, ``kppca --version`` and an argument error: at most 5x ``python -c "import numpy"``;
* ``import kppca``: at most 1.3x ``python -c "import torch"``.

The load average is printed before and after; on a shared machine compare ratios from one run only.

Run from the repository root (the working tree's ``kppca`` is imported, not an installed copy)::

    python benchmarks/bench_startup.py               # 7 rounds
    python benchmarks/bench_startup.py --repeats 3   # quicker
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (label, python arguments); the CLI is run as ``python -m kppca`` so that the working tree's copy is used.
COMMANDS: list[tuple[str, list[str]]] = [
    ("import numpy", ["-c", "import numpy"]),
    ("import torch", ["-c", "import torch"]),
    ("import kppca", ["-c", "import kppca"]),
    ("from kppca import DualPPCA, PrimalPPCA", ["-c", "from kppca import DualPPCA, PrimalPPCA"]),
    ("import torch, sklearn.base", ["-c", "import torch, sklearn.base"]),
    ("kppca --help", ["-m", "kppca", "--help"]),
    ("kppca --version", ["-m", "kppca", "--version"]),
    ("kppca sample --help", ["-m", "kppca", "sample", "--help"]),
    ("kppca sample --bandwidth -1 (error)", ["-m", "kppca", "sample", "--bandwidth", "-1"]),
]

#: Which baseline each target ratio is measured against, and the target.
TARGETS = {
    "import kppca": ("import torch", 1.3),
    "from kppca import DualPPCA, PrimalPPCA": ("import torch", 1.3),
    "import torch, sklearn.base": ("import torch", 1.3),
    "kppca --help": ("import numpy", 5.0),
    "kppca --version": ("import numpy", 5.0),
    "kppca sample --bandwidth -1 (error)": ("import numpy", 5.0),
}


def run_once(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of ``python args`` in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = 0  # reaped by wait4
    return wall, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="rounds; each runs every command once (default 7)")
    opts = parser.parse_args()

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; python {sys.version.split()[0]}")
    times: dict[str, list[float]] = {label: [] for label, _ in COMMANDS}
    rss: dict[str, list[float]] = {label: [] for label, _ in COMMANDS}
    run_once(COMMANDS[0][1])  # warm the file cache once, untimed
    for _ in range(opts.repeats):
        for label, args in COMMANDS:
            wall, mib = run_once(args)
            times[label].append(wall)
            rss[label].append(mib)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {opts.repeats} rounds\n")

    med = {label: statistics.median(v) for label, v in times.items()}
    print("| command | median (s) | min-max (s) | peak RSS (MiB) | ratio | target |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, _ in COMMANDS:
        ratio = target = ""
        if label in TARGETS:
            base, limit = TARGETS[label]
            ratio = f"{med[label] / med[base]:.2f}x {base.split()[-1]}"
            target = f"<= {limit:g}x"
        lo, hi = min(times[label]), max(times[label])
        print(f"| `{label}` | {med[label]:.3f} | {lo:.2f}-{hi:.2f} | {statistics.median(rss[label]):.0f} "
              f"| {ratio} | {target} |")


if __name__ == "__main__":
    main()
