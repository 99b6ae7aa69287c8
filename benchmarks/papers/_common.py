"""What the paper scripts share: the data arguments and split, the timer, the paper-beside-ours lines, the JSON line.

Data: the official MNIST training files from ``--mnist-dir`` (or ``$KPPCA_MNIST_DIR``). Models train on the
first rows and are tested on the last 10,000 training digits (the deep RKM paper's validation part), which
no model or choice sees; ``--test-images FILE --test-labels FILE`` test on any IDX pair instead (e.g. the
official ``t10k`` files; gzip or plain). Files smaller than 20,000 digits (the smoke test's) hold out their
last fifth.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from typing import Any

import numpy as np

from kppca.datasets import load_mnist
from kppca.datasets.mnist import read_idx

#: Test digits held out at the end of the training files (the paper's validation part).
HOLDOUT = 10_000


def add_data_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--mnist-dir", default=None, help="folder of the MNIST IDX files (default $KPPCA_MNIST_DIR)")
    ap.add_argument("--test-images", default=None, help="IDX images to test on (default: last 10,000 training)")
    ap.add_argument("--test-labels", default=None, help="IDX labels of --test-images")
    ap.add_argument("--seed", type=int, default=0)


def load_split(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(X_pool, y_pool, X_test, y_test)``: the training pool (all but the held-out end) and the test set."""
    folder = args.mnist_dir or os.environ.get("KPPCA_MNIST_DIR")
    if not folder:
        sys.exit("no MNIST files: pass --mnist-dir FOLDER or set KPPCA_MNIST_DIR (the official IDX files).")
    X, y = load_mnist(path=folder, subset="train")
    hold = HOLDOUT if len(y) >= 2 * HOLDOUT else len(y) // 5
    if (args.test_images is None) != (args.test_labels is None):
        sys.exit("pass both --test-images and --test-labels, or neither.")
    if args.test_images is None:
        return X[:-hold], y[:-hold], X[-hold:], y[-hold:]
    Xt = read_idx(args.test_images).reshape(-1, X.shape[1]).astype(np.float64) / 255.0
    yt = read_idx(args.test_labels).astype(np.int64)
    if len(Xt) != len(yt):
        sys.exit(f"--test-images has {len(Xt)} images but --test-labels {len(yt)} labels.")
    return X[:-hold], y[:-hold], Xt, yt


def peak_memory_gib() -> float:
    """Peak resident memory of this process or of its largest finished child (worker), in GiB."""
    kib = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return kib / 2**20


class Report:
    """Prints ``paper | ours`` lines as they come and the closing JSON line with time and peak memory."""

    def __init__(self, experiment: str, args: argparse.Namespace):
        self.experiment, self.start, self.cells = experiment, time.perf_counter(), []
        self.settings = {k: v for k, v in vars(args).items() if k not in ("mnist_dir",)}

    def line(self, what: str, paper: str, ours: str, **figures: Any) -> None:
        print(f"{what:<48} paper {paper:>14} | ours {ours:>14}", flush=True)
        self.cells.append({"cell": what, **figures})

    def close(self, **figures: Any) -> dict:
        seconds = time.perf_counter() - self.start
        # CPU time of this process and its finished workers: on a shared machine, the wall time's lower bound
        cpu = sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                  for f in ("ru_utime", "ru_stime"))
        out = {"experiment": self.experiment, **figures, "cells": self.cells, "seconds": round(seconds, 1),
               "cpu_seconds": round(cpu, 1),
               "peak_memory_gib": round(peak_memory_gib(), 2), "settings": self.settings}
        print(f"time {seconds:.0f} s (CPU {cpu:.0f} s), peak memory {out['peak_memory_gib']:.2f} GiB", flush=True)
        print(json.dumps(out), flush=True)
        return out
