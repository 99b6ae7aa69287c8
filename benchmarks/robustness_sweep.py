"""Robustness sweep: thousands of random configurations, each fitted and every output exercised.

Counts each outcome (see ``tests/robustness.py``): successful fits with finite
outputs, clear errors, rejections of valid built-in kernels, non-finite outputs
and unclear exceptions. The issue's target is zero of the last three.

Usage::

    python benchmarks/robustness_sweep.py --n-configs 2000 --seed 0 [--show 20]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from robustness import DEFECTS, OUTCOMES, random_config, run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-configs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=20, help="print this many defects of each kind")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    results = collections.defaultdict(list)
    start = time.perf_counter()
    for _ in tqdm(range(args.n_configs), desc="configurations"):
        cfg = random_config(rng)
        outcome, detail = run(cfg)
        results[outcome].append((cfg, detail))
    print(f"{args.n_configs} configurations in {time.perf_counter() - start:.0f} s")
    for name in OUTCOMES:
        print(f"  {name:24s} {len(results[name]):6d}")
    clear = collections.Counter(detail.split(";")[0][:90] for _, detail in results["clear_error"])
    print("most common clear errors:")
    for text, count in clear.most_common(8):
        print(f"  {count:5d}  {text}")
    for name in DEFECTS:
        for cfg, detail in results[name][: args.show]:
            print(f"[{name}] {cfg}\n    {detail}")


if __name__ == "__main__":
    main()
