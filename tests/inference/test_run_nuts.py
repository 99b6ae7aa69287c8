"""run_nuts: chains in this process, seeded without touching the global random states, a progress bar on request."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

pytest.importorskip("pyro")

from kppca import DualPPCA  # noqa: E402
from kppca.inference import latent_model, run_nuts  # noqa: E402
from kppca.kernels import RBF  # noqa: E402


@pytest.fixture
def fn():
    X = np.random.default_rng(0).normal(size=(12, 3))
    return latent_model(DualPPCA(2, kernel=RBF(1.5)).fit(X), X[:3])


def test_run_nuts_draws_per_chain_and_shows_progress_on_request(fn, capsys):
    states = (torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate())
    h = run_nuts(fn, warmup_steps=5, num_samples=4, num_chains=2, random_state=0, progress=True)["h"]
    assert h.shape == (2, 4, 3, 2) and bool(torch.isfinite(h).all())
    assert not torch.equal(h[0], h[1])  # two seeds, two chains
    assert "0/18 [" in capsys.readouterr().err  # one bar over both chains' 2 x (5 + 4) steps, on stderr
    # the global random states are left as they were
    assert torch.equal(torch.get_rng_state(), states[0])
    assert np.array_equal(np.random.get_state()[1], states[1]) and random.getstate() == states[2]
    # seeded: the same draws again, and no bar without progress
    again = run_nuts(fn, warmup_steps=5, num_samples=4, num_chains=2, random_state=0)["h"]
    assert torch.equal(again, h) and capsys.readouterr().err == ""


@pytest.mark.parametrize("bad, message", [({"num_samples": 0}, "num_samples"), ({"warmup_steps": -1}, "warmup_steps"),
                                          ({"num_chains": 0}, "num_chains")])
def test_run_nuts_names_a_bad_count(fn, bad, message):
    with pytest.raises(ValueError, match=message):
        run_nuts(fn, **bad)


def test_run_nuts_counts_every_step_on_one_bar(fn, monkeypatch):
    import kppca.inference.nuts as nuts

    bars = []

    class Bar:
        def __init__(self, **kwargs):
            self.kwargs, self.n, self.descriptions = kwargs, 0, []
            bars.append(self)

        def update(self, k):
            self.n += k

        def set_description_str(self, text):
            self.descriptions.append((text, self.n))

        def close(self):
            self.closed = True

    monkeypatch.setattr(nuts, "tqdm", Bar)
    run_nuts(fn, warmup_steps=3, num_samples=2, num_chains=2, random_state=0, progress=True)
    (bar,) = bars
    assert bar.kwargs["total"] == 10 and not bar.kwargs["disable"] and bar.n == 10 and bar.closed
    assert bar.descriptions == [("NUTS chain 1/2", 0), ("NUTS chain 2/2", 5)]
