"""Robustness sweep: thousands of random configurations, each fitted and every output exercised.

Two parts:

``ppca``
    ``DualPPCA``/``PrimalPPCA`` configurations (``tests/robustness.py``); counts each outcome.
``rkm``
    the seven RKM estimators (``tests/robustness_rkm.py``): every configuration in float64
    and float32 on the same data, eight kernels plus the estimator's default; per
    estimator, a fixed set of bad inputs; and extreme valid inputs (values near 1e308,
    a view scaled by 1e300, far points, ill-typed or extreme parameters). The table gives per estimator: bad inputs answered
    unclearly or accepted, unclear errors of valid configurations, non-finite outputs, errors
    after a successful fit, and float32 failures where float64 fits.

``files``
    crafted model files (``tests/io/crafted.py``): every value saved by every
    round-trip case of ``tests/io/test_roundtrip.py`` (every registered estimator,
    nested parts included) made invalid, the digest recomputed; counts how many
    are refused (``ModelFileError``) and how many load and then change outputs,
    fail at first use, or raise another error.

The issue's target is zero in every defect column.

Usage::

    python benchmarks/robustness_sweep.py --part rkm --n-configs 600 --seed 0 [--show 20] [--max-n 1000]
    python benchmarks/robustness_sweep.py --part ppca --n-configs 2000
    python benchmarks/robustness_sweep.py --part files [--every 1] [--cases deep-rkm-classifier ...]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "io"))

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

import robustness  # noqa: E402
import robustness_rkm  # noqa: E402


def ppca_part(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    results = collections.defaultdict(list)
    start = time.perf_counter()
    for _ in tqdm(range(args.n_configs), desc="configurations"):
        cfg = robustness.random_config(rng)
        outcome, detail = robustness.run(cfg)
        results[outcome].append((cfg, detail))
    print(f"{args.n_configs} PPCA configurations in {time.perf_counter() - start:.0f} s")
    for name in robustness.OUTCOMES:
        print(f"  {name:24s} {len(results[name]):6d}")
    clear = collections.Counter(detail.split(";")[0][:90] for _, detail in results["clear_error"])
    print("most common clear errors:")
    for text, count in clear.most_common(8):
        print(f"  {count:5d}  {text}")
    for name in robustness.DEFECTS:
        for cfg, detail in results[name][: args.show]:
            print(f"[{name}] {cfg}\n    {detail}")


COLUMNS = ("runs", "ok", "clear", "bad_input_unclear", "bad_input_accepted", "unclear", "rejected_psd",
           "nonfinite", "error_after_fit", "f32_fails")


def rkm_part(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    table = {e: dict.fromkeys(COLUMNS, 0) for e in robustness_rkm.ESTIMATORS}
    defects = collections.defaultdict(list)
    start = time.perf_counter()
    for estimator in robustness_rkm.ESTIMATORS:
        for case, outcome, detail in robustness_rkm.bad_input_outcomes(estimator):
            if outcome == "unclear_error":
                table[estimator]["bad_input_unclear"] += 1
                defects["bad_input_unclear"].append((estimator, case, f"{case}: {detail}"))
            elif outcome == "accepted":
                table[estimator]["bad_input_accepted"] += 1
                defects["bad_input_accepted"].append((estimator, case, f"{case}: accepted"))
    extreme = robustness_rkm.extreme_input_outcomes()
    for case, outcome, detail in extreme:
        if outcome == "unclear_error":
            defects["extreme_input_unclear"].append((case.split()[0], case, f"{case}: {detail}"))
    print(f"extreme inputs: {sum(o != 'unclear_error' for _, o, _ in extreme)} of {len(extreme)} fit or fail "
          "clearly")
    column = {"ok": "ok", "clear_error": "clear", "unclear_error": "unclear", "rejected_valid_kernel": "rejected_psd",
              "nonfinite_output": "nonfinite", "error_after_fit": "error_after_fit", "float32_fails": "f32_fails"}
    for _ in tqdm(range(args.n_configs), desc="configurations"):
        cfg = robustness_rkm.random_config(rng, max_n=args.max_n)
        for dtype, outcome, detail in robustness_rkm.run_pair(cfg):
            row = table[cfg.estimator]
            row["runs"] += dtype != "pair"
            row[column[outcome]] += 1
            if outcome in robustness_rkm.DEFECTS:
                defects[outcome].append((cfg.estimator, f"{dtype} {cfg}", detail))
    print(f"{args.n_configs} RKM configurations x 2 dtypes in {time.perf_counter() - start:.0f} s (seed {args.seed})")
    print(f"{'estimator':20s}" + "".join(f"{c:>19s}" for c in COLUMNS))
    for estimator, row in table.items():
        print(f"{estimator:20s}" + "".join(f"{row[c]:19d}" for c in COLUMNS))
    total = {c: sum(row[c] for row in table.values()) for c in COLUMNS}
    print(f"{'total':20s}" + "".join(f"{total[c]:19d}" for c in COLUMNS))
    for kind, items in defects.items():
        shown = collections.Counter((e, d[:110]) for e, _, d in items)
        print(f"\n[{kind}] {len(items)}; most common:")
        for (estimator, detail), count in shown.most_common(args.show):
            print(f"  {count:4d}  {estimator}: {detail}")


def files_part(args: argparse.Namespace) -> None:
    import tempfile

    import crafted
    from test_roundtrip import CASES, _data

    counts = collections.Counter()
    defects = collections.defaultdict(list)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        chosen = {k: v for k, v in CASES.items() if not args.cases or k in args.cases}
        for case, (make, fit_args, outputs) in tqdm(chosen.items(), desc="estimator setups"):
            data = _data(np.random.default_rng(0))
            model = make().fit(*fit_args(data))
            for label, outcome, detail in crafted.sweep_case(model, lambda m: outputs(m, data), Path(tmp),
                                                             every=args.every):
                counts[outcome] += 1
                if outcome in crafted.DEFECTS:
                    defects[outcome].append(f"{case} {label}: {detail[:120]}")
    total = sum(counts.values())
    print(f"{total} crafted files over {len(chosen)} estimator setups in {time.perf_counter() - start:.0f} s")
    for name in crafted.OUTCOMES:
        print(f"  {name:24s} {counts[name]:6d}")
    for kind, items in defects.items():
        print(f"\n[{kind}] {len(items)}:")
        for line in items[: args.show]:
            print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["ppca", "rkm", "files", "all"], default="all")
    parser.add_argument("--every", type=int, default=1, help="files part: craft every k-th edit only")
    parser.add_argument("--cases", nargs="*", default=[], help="files part: only these cases of test_roundtrip.CASES")
    parser.add_argument("--n-configs", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-n", type=int, default=1000, help="largest N of the RKM part")
    parser.add_argument("--show", type=int, default=20, help="print this many defects of each kind")
    args = parser.parse_args()
    if args.part in ("ppca", "all"):
        ppca_part(args)
    if args.part in ("rkm", "all"):
        rkm_part(args)
    if args.part in ("files", "all"):
        files_part(args)


if __name__ == "__main__":
    main()
