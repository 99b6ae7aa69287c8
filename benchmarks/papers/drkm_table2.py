"""DRKM classifier paper (Tonin et al.), Table 2: MNIST test accuracy by number of KPCA levels.

1, 2, 3 KPCA levels (s = 6 / 3+3 / 2+2+2, RBF level 1, RBF levels after) and a linear LS-SVM level,
eta = 1, lambda = 0.5, at most 100 iterations, from DKPCA initialisation with fine-tuning; N = 50 ... 1,000
stratified training digits drawn from the training pool, ``--reps`` repetitions (subset and initialisation
seeded by the repetition), tested on the held-out digits. Beside each cell: a pixel-space 1-NN on the same
split and how often the classifier agrees with it. Closes with a paired test (same splits) of two levels
against one: the mean difference, its sd, a paired t-test and a Wilcoxon signed-rank test, per N and pooled.

Usage::

    python benchmarks/papers/drkm_table2.py --mnist-dir DIR [--sizes 50 100 250 500 750 1000] [--reps 10]
        [--smoother loo|kernel] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import warnings
from concurrent.futures import ProcessPoolExecutor

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from _common import Report, add_data_arguments, load_split
from scipy import stats

PAPER = {  # N -> mean (sd) accuracy % for 1, 2, 3 levels
    50: ((57.27, 5.75), (61.05, 1.24), (61.02, 1.23)), 100: ((59.76, 4.51), (65.97, 1.03), (65.64, 1.70)),
    250: ((71.24, 5.74), (75.74, 0.50), (75.69, 0.49)), 500: ((75.15, 7.47), (81.11, 1.22), (81.35, 0.43)),
    750: ((79.68, 7.01), (83.89, 0.23), (83.90, 0.20)), 1000: ((80.59, 7.64), (85.29, 0.45), (85.29, 0.69)),
}
DEPTHS = {1: (6,), 2: (3, 3), 3: (2, 2, 2)}
_DATA: tuple = ()


def _init(data: tuple) -> None:
    global _DATA
    _DATA = data


def subset(y: np.ndarray, N: int, seed: int) -> np.ndarray:
    """N stratified rows of the pool (as equal per class as N allows), seeded."""
    from sklearn.model_selection import train_test_split

    return train_test_split(np.arange(len(y)), train_size=N, stratify=y, random_state=seed)[0]


def job(task: tuple) -> dict:
    N, rep, smoother, max_iter = task
    from kppca.rkm import DeepRKMClassifier

    Xp, yp, Xte, yte = _DATA
    idx = subset(yp, N, rep)
    Xtr, ytr = Xp[idx], yp[idx]
    d2 = (Xte**2).sum(1)[:, None] - 2 * Xte @ Xtr.T + (Xtr**2).sum(1)[None, :]
    nn = ytr[d2.argmin(1)]
    row = {"N": N, "rep": rep, "nn_accuracy": float((nn == yte).mean())}
    warnings.simplefilter("ignore")
    for depth, sizes in DEPTHS.items():
        m = DeepRKMClassifier(sizes, eta=1.0, ridge=0.5, max_iter=max_iter, smoother_bandwidth=smoother,
                              random_state=rep).fit(Xtr, ytr)
        pred = m.predict(Xte)
        row[f"acc{depth}"] = float((pred == yte).mean())
        row[f"agree{depth}"] = float((pred == nn).mean())
    return row


def paired(rows: list[dict]) -> dict:
    """Two levels minus one level, paired by split: mean, sd, t-test and Wilcoxon p-values (in points)."""
    d = 100 * np.array([r["acc2"] - r["acc1"] for r in rows])
    out = {"mean_diff": float(d.mean()), "sd_diff": float(d.std(ddof=1)) if len(d) > 1 else float("nan"), "n": len(d)}
    if len(d) > 1 and np.ptp(d) > 0:
        out["t_p"] = float(stats.ttest_rel([r["acc2"] for r in rows], [r["acc1"] for r in rows]).pvalue)
        out["wilcoxon_p"] = float(stats.wilcoxon(d).pvalue)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_arguments(ap)
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 250, 500, 750, 1000])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--smoother", choices=["loo", "kernel"], default="loo", help="smoother_bandwidth rule")
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    data = load_split(args)
    report = Report("drkm-table2", args)
    # repetition-major: a run stopped early still has every N, with fewer repetitions
    tasks = [(N, args.seed + r, args.smoother, args.max_iter) for r in range(args.reps) for N in sorted(args.sizes)]
    rows = []
    with ProcessPoolExecutor(args.jobs, initializer=_init, initargs=(data,)) as ex:
        for row in ex.map(job, tasks):
            rows.append(row)
            print("split", {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    print(f"{'':48} {'paper':>20} | {'ours mean (sd), 1-NN agreement':>14}")
    for N in sorted(args.sizes):
        part = [r for r in rows if r["N"] == N]
        for depth in DEPTHS:
            acc = 100 * np.array([r[f"acc{depth}"] for r in part])
            agree = 100 * np.mean([r[f"agree{depth}"] for r in part])
            pm, ps = PAPER.get(N, ((np.nan, np.nan),) * 3)[depth - 1]
            sd = acc.std(ddof=1) if len(acc) > 1 else float("nan")
            report.line(f"N = {N}, {depth} level(s)", f"{pm:.2f} ({ps:.2f})", f"{acc.mean():.2f} ({sd:.2f}), {agree:.1f}",
                        N=N, levels=depth, mean=round(acc.mean(), 2), sd=round(sd, 2), reps=len(acc),
                        paper_mean=pm, paper_sd=ps, nn_agreement=round(agree, 1))
        nn = 100 * np.mean([r["nn_accuracy"] for r in part])
        t = paired(part)
        print(f"  N = {N}: 1-NN {nn:.2f} %; two levels - one: {t['mean_diff']:+.2f} (sd {t['sd_diff']:.2f}) points, "
              f"t-test p = {t.get('t_p', float('nan')):.3g}, Wilcoxon p = {t.get('wilcoxon_p', float('nan')):.3g}")
        report.cells.append({"cell": f"N = {N}, two levels - one", "N": N, "nn_accuracy": round(nn, 2), **t})
    pooled = paired(rows)
    print(f"pooled over N: two levels - one {pooled['mean_diff']:+.2f} points, t-test p = "
          f"{pooled.get('t_p', float('nan')):.3g}, Wilcoxon p = {pooled.get('wilcoxon_p', float('nan')):.3g}")
    report.close(paired_two_vs_one=pooled, smoother=args.smoother)


if __name__ == "__main__":
    main()
