"""``kppca traverse``: a grid over two latent components mapped back to pixels (paper, Fig. 4c)."""

from __future__ import annotations

import argparse
from typing import Any

from ..common import Stages, UserError, image_shape, prepare
from ..options import (
    ComponentsAction, add_model_options, add_preimage_option, add_run_options, nonnegative_int, positive_float, steps,
)

NAME = "traverse"
STAGES = ["load data", "fit model", "generate", "write image"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        NAME, help="fit (or load) a model and write a latent traversal grid (paper, Fig. 4c)",
        description="Map a regular grid of latent codes h (two components varied, the others 0) through the "
        "conditional mean K_c A h and a pre-image back to pixels; columns vary the first component, rows "
        "the second.",
    )
    add_model_options(p, loadable=True)
    g = p.add_argument_group("traversal")
    g.add_argument("--components", type=nonnegative_int, nargs=2, default=[0, 1], metavar=("I", "J"),
                   action=ComponentsAction,
                   help="the two latent components to vary, 0-based (default: 0 1)")
    g.add_argument("--n-steps", type=steps, default=8, metavar="K",
                   help="values per component, at least 2 (default: 8)")
    g.add_argument("--extent", type=positive_float, default=2.0, metavar="E",
                   help="each component runs over [-E, E] prior standard deviations (default: 2; the paper uses 1)")
    add_preimage_option(g)
    g.add_argument("--out", default="kppca_traversal.png", metavar="FILE",
                   help="output image (default: kppca_traversal.png)")
    add_run_options(p)


def outputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    return [(args.out, "image")]


def run(args: argparse.Namespace, stages: Stages) -> None:
    import matplotlib.pyplot as plt

    from ...plotting import plot_latent_traversal, save_figure

    model = prepare(args, stages)
    shape = image_shape(model)
    comps = tuple(args.components)
    if max(comps) >= model.n_components_:
        raise UserError(
            f"--components {comps[0]} {comps[1]} out of range: the model has q = {model.n_components_} "
            f"components (0..{model.n_components_ - 1})."
        )
    grid, codes = stages.run(
        "generate", model.latent_traversal, comps, args.n_steps, args.extent, args.preimage, return_codes=True
    )

    def draw() -> None:
        fig, ax = plt.subplots(figsize=(0.6 * args.n_steps + 1.2, 0.6 * args.n_steps + 1.0))
        plot_latent_traversal(grid=grid, codes=codes, components=comps, image_shape=shape, ax=ax)
        ax.set_title(f"latent traversal, q = {model.n_components_}, pre-image: {args.preimage}", fontsize=9)
        save_figure(fig, args.out)

    stages.run("write image", draw)
    print(f"traversed components {comps[0]} and {comps[1]} over [-{args.extent:g}, {args.extent:g}] "
          f"in {args.n_steps} steps")
    print(f"wrote {args.out}")


