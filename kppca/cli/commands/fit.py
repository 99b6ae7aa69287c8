"""``kppca fit``: fit a model, report it, optionally save it and plot its spectrum."""

from __future__ import annotations

import argparse
from typing import Any

from ..common import Stages, prepare, save_model
from ..options import add_model_options, add_run_options

NAME = "fit"
STAGES = ["load data", "fit model", "save model", "plot spectrum"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        NAME, help="fit a model, report it and optionally save it",
        description="Fit the dual PPCA model on MNIST digits, print explained variance, sigma2, q, rank and "
        "timings, and optionally save the model (--save) and plot its eigenvalue spectrum (--spectrum).",
    )
    add_model_options(p, loadable=False)
    g = p.add_argument_group("output files")
    g.add_argument("--save", metavar="FILE",
                   help="write the fitted model there, e.g. model.kppca (a safetensors file with a JSON header: "
                   "loading it runs no code; reuse it with --model FILE or kppca.load(FILE))")
    g.add_argument("--spectrum", metavar="FILE",
                   help="also plot the eigenvalue spectrum lambda_p/N with the sigma2 level there (PNG)")
    add_run_options(p)


def outputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    return ([(args.save, "model")] if args.save else []) + ([(args.spectrum, "image")] if args.spectrum else [])


def run(args: argparse.Namespace, stages: Stages) -> None:
    model = prepare(args, stages)
    if args.save:
        stages.run("save model", save_model, model, args.save)
        print(f"saved the model to {args.save}")
    if args.spectrum:
        def draw() -> None:
            from ...plotting import plot_spectrum, save_figure  # matplotlib only for --spectrum

            save_figure(plot_spectrum(model).figure, args.spectrum)  # a new 6 x 4 inch figure

        stages.run("plot spectrum", draw)
        print(f"wrote {args.spectrum}")


