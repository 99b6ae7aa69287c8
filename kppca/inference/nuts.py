"""NUTS on the Pyro models of :mod:`kppca.inference`, chains one after the other, with a progress bar.

The bar is the package's, not Pyro's: Pyro's ``tqdm.auto`` warns in notebooks without ipywidgets.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .._param_validation import Integral, Interval, check_scalar
from .._progress import tqdm
from .._validation import numpy_rng

__all__ = ["run_nuts"]


def run_nuts(
    fn: Callable[..., Any],
    *,
    warmup_steps: int = 200,
    num_samples: int = 500,
    num_chains: int = 1,
    random_state: Any = None,
    progress: bool = False,
    **nuts_options: Any,
) -> dict[str, torch.Tensor]:
    """Draws of every sampled site of the Pyro model ``fn`` by NUTS, ``num_chains`` chains in this process.

    Parameters
    ----------
    fn : callable
        A Pyro model, e.g. :func:`~kppca.inference.latent_model` or :func:`~kppca.inference.bayesian_model`.
    warmup_steps, num_samples : int, default 200, 500
        Per chain (``warmup_steps`` may be 0).
    num_chains : int, default 1
        Run one after the other (Pyro's ``num_chains`` would start one process per chain).
    random_state : int, numpy Generator or None
        Seeds of the chains; the global random states (torch, numpy, ``random``) are restored afterwards.
    progress : bool, default False
        Show a tqdm bar over all ``num_chains * (warmup_steps + num_samples)`` steps (Pyro's own is off).
    **nuts_options
        Passed to ``pyro.infer.NUTS`` (``target_accept_prob``, ``max_tree_depth``, ...).

    Returns
    -------
    dict of str to Tensor of shape (num_chains, num_samples, ...)
        One entry per sampled site, e.g. ``"h"`` of shape (num_chains, num_samples, M, q);
        :func:`~kppca.inference.from_groups` makes ArviZ data of them.
    """
    warmup = int(check_scalar(warmup_steps, "warmup_steps", [Interval(Integral, 0, None, closed="left")]))
    draws = int(check_scalar(num_samples, "num_samples", [Interval(Integral, 1, None, closed="left")]))
    chains = int(check_scalar(num_chains, "num_chains", [Interval(Integral, 1, None, closed="left")]))
    if not callable(fn):
        raise TypeError(f"fn must be a Pyro model (a callable such as latent_model(model, X)), got {type(fn).__name__}.")
    import pyro
    from pyro.infer import MCMC, NUTS

    seeds = numpy_rng(random_state).integers(2**31, size=chains)
    bar = tqdm(total=chains * (warmup + draws), desc="NUTS", leave=False, disable=not progress)

    def step(kernel: Any, params: Any, stage: str, i: int) -> None:
        bar.update(1)

    results = []
    states = (random.getstate(), np.random.get_state())
    try:
        with torch.random.fork_rng(devices=[]):
            for chain, seed in enumerate(seeds):
                bar.set_description_str(f"NUTS chain {chain + 1}/{chains}")
                pyro.set_rng_seed(int(seed))
                mcmc = MCMC(NUTS(fn, **nuts_options), num_samples=draws, warmup_steps=warmup, hook_fn=step,
                            disable_progbar=True)
                mcmc.run()
                results.append(mcmc.get_samples())
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        bar.close()
    return {site: torch.stack([r[site] for r in results]) for site in results[0]}
