"""One configuration of the robustness sweep: build data and a model, fit, exercise every output.

Shared by ``tests/test_robustness_sweep.py`` (a bounded, derandomised hypothesis
test) and ``benchmarks/robustness_sweep.py`` (thousands of configurations, with
counts). A configuration ends in exactly one outcome:

``"ok"``
    the fit succeeded and every output was finite;
``"clear_error"``
    a ``ValueError``/``TypeError`` with a short message (the data cannot be
    modelled, e.g. rank below 2 after centering, or values that overflow the dtype);
``"rejected_valid_kernel"``
    a built-in kernel or feature map (all positive semi-definite) was refused as
    "not positive semi-definite";
``"nonfinite_output"``
    the fit succeeded but an output held NaN or infinity;
``"error_after_fit"``
    the fit succeeded but an output method with valid arguments raised (e.g. a
    distribution rejecting its own sample, a pre-image without weights);
``"unclear_error"``
    any other exception (``RuntimeError``, ``LinAlgError``, ``IndexError``, ARPACK
    errors, ...) or an over-long message.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca.features import Nystroem, PolynomialFeatures, RandomFourierFeatures
from kppca.kernels import RBF, Laplacian, Linear, Polynomial

OUTCOMES = ("ok", "clear_error", "rejected_valid_kernel", "nonfinite_output", "error_after_fit", "unclear_error")

#: The outcomes that are defects (the sweep's target is zero of each).
DEFECTS = ("rejected_valid_kernel", "nonfinite_output", "error_after_fit", "unclear_error")

#: Longest message still counted as clear (one or two sentences).
MAX_MESSAGE = 400

DUAL_KERNELS = ("linear", "rbf", "laplacian", "polynomial")
PRIMAL_MAPS = ("identity", "rff", "nystroem", "polynomial")


@dataclass(frozen=True)
class Config:
    """One point of the sweep (every field is a plain value, so failures print readably)."""

    form: str  # "dual" or "primal"
    family: str  # a name from DUAL_KERNELS or PRIMAL_MAPS
    bandwidth: float  # RBF / Laplacian / RFF / Nystroem length scale
    n_samples: int
    n_features: int
    scale: float  # multiplies standard-normal data
    offset: float  # added to every entry
    low_rank: bool  # data of rank min(2, D) before the offset
    dtype: str
    center: bool
    n_components: Any
    eigen_solver: str
    seed: int


def make_data(cfg: Config) -> np.ndarray:
    rng = np.random.default_rng(cfg.seed)
    N, D = cfg.n_samples, cfg.n_features
    if cfg.low_rank:
        k = min(2, D)
        Z = rng.normal(size=(N, k)) @ rng.normal(size=(k, D))
    else:
        Z = rng.normal(size=(N, D))
    return (cfg.scale * Z + cfg.offset).astype(cfg.dtype)


def make_model(cfg: Config) -> DualPPCA | PrimalPPCA:
    common = dict(
        n_components=cfg.n_components,
        center=cfg.center,
        eigen_solver=cfg.eigen_solver,
        random_state=cfg.seed,
        dtype=cfg.dtype,
    )
    b = cfg.bandwidth
    if cfg.form == "dual":
        kernel = {
            "linear": Linear(),
            "rbf": RBF(b),
            "laplacian": Laplacian(b),
            "polynomial": Polynomial(2, 1.0),
        }[cfg.family]
        return DualPPCA(kernel=kernel, **common)
    fmap = {
        "identity": None,
        "rff": RandomFourierFeatures(bandwidth=b, n_features=40, random_state=cfg.seed),
        "nystroem": Nystroem(RBF(b), n_landmarks=min(cfg.n_samples, 15), random_state=cfg.seed),
        "polynomial": PolynomialFeatures(2, 1.0),
    }[cfg.family]
    return PrimalPPCA(feature_map=fmap, **common)


def _finite(value: Any) -> bool:
    t = torch.as_tensor(value) if not isinstance(value, torch.Tensor) else value
    return bool(torch.isfinite(t).all())


def exercise(model: DualPPCA | PrimalPPCA, X: np.ndarray) -> list[str]:
    """Call every public output on a fitted model; return the names of the non-finite ones."""
    bad = []
    probe = X[: min(len(X), 5)]
    outputs = {
        "transform": lambda: model.transform(probe),
        "score_samples": lambda: model.score_samples(probe),
        "latent_posterior.log_prob": lambda: model.latent_posterior(probe).log_prob(
            torch.as_tensor(model.transform(probe))
        ),
        "sample": lambda: model.sample(3, random_state=0),
        "inverse_transform": lambda: model.inverse_transform(np.ones((2, model.n_components_))),
        "reconstruct": lambda: model.reconstruct(probe),
    }
    if isinstance(model, DualPPCA):
        outputs["sample_kernel"] = lambda: model.sample_kernel(3, random_state=0)
        outputs["kernel_marginal.log_prob(sample)"] = lambda: _self_log_prob(model.kernel_marginal())
        outputs["kernel_conditional.log_prob(sample)"] = lambda: _self_log_prob(
            model.kernel_conditional(np.zeros((1, model.n_components_)))
        )
    else:
        outputs["sample_features"] = lambda: model.sample_features(3, random_state=0)
        outputs["feature_marginal.log_prob(sample)"] = lambda: _self_log_prob(model.feature_marginal())
    for name, fn in outputs.items():
        if not _finite(fn()):
            bad.append(name)
    return bad


def _self_log_prob(d: Any) -> torch.Tensor:
    torch.manual_seed(0)
    return d.log_prob(d.sample((2,)))


def run(cfg: Config) -> tuple[str, str]:
    """Fit and exercise one configuration; return ``(outcome, detail)``."""
    X = make_data(cfg)
    if not np.isfinite(X).all():  # the data themselves overflow the dtype: not a model question
        return "clear_error", "data overflow"
    model = make_model(cfg)
    stage = "fit"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X)
            stage = "outputs"
            bad = exercise(model, X)
    except (ValueError, TypeError) as exc:
        message = str(exc)
        if stage == "outputs":
            return "error_after_fit", f"{type(exc).__name__}: {message[:300]}"
        if "positive semi-definite" in message:
            return "rejected_valid_kernel", f"{stage}: {message}"
        if not message or len(message) > MAX_MESSAGE:
            return "unclear_error", f"{stage}: {type(exc).__name__} ({len(message)} chars): {message[:200]}"
        return "clear_error", f"{stage}: {message}"
    except Exception as exc:  # noqa: BLE001 - every other exception is a defect of the sweep's kind
        return "unclear_error", f"{stage}: {type(exc).__name__}: {str(exc)[:300]}"
    if bad:
        return "nonfinite_output", ", ".join(bad)
    return "ok", ""


def random_config(rng: np.random.Generator) -> Config:
    """A configuration drawn from the ranges of the issue (bandwidths 1e-3..1e3, offsets up to
    1e4, scales 1e-6..1e6, float32/float64, N from 2 to 1200, every kernel and feature map)."""
    form = str(rng.choice(["dual", "primal"]))
    family = str(rng.choice(DUAL_KERNELS if form == "dual" else PRIMAL_MAPS))
    N = int(rng.choice([2, 3, 5, 10, 30, 100, 300, 1200], p=[0.08, 0.1, 0.12, 0.2, 0.2, 0.15, 0.1, 0.05]))
    n_components: Any = [None, 1, 2, 0.8, "mle"][int(rng.integers(5))]
    eigen_solver = str(rng.choice(["auto", "auto", "dense", "partial"]))
    if eigen_solver == "partial" and not isinstance(n_components, int):
        n_components = 1
    return Config(
        form=form,
        family=family,
        bandwidth=float(10 ** rng.uniform(-3, 3)),
        n_samples=N,
        n_features=int(rng.integers(1, 8)),
        scale=float(10 ** rng.uniform(-6, 6)),
        offset=float(rng.choice([0.0, 10.0, 1e2, 1e3, 1e4])),
        low_rank=bool(rng.random() < 0.25),
        dtype=str(rng.choice(["float32", "float64"])),
        center=bool(rng.random() < 0.8),
        n_components=n_components,
        eigen_solver=eigen_solver,
        seed=int(rng.integers(2**31)),
    )


def summarize(outcomes: list[str]) -> dict[str, int]:
    return {name: outcomes.count(name) for name in OUTCOMES}


__all__ = ["Config", "OUTCOMES", "DEFECTS", "run", "random_config", "summarize", "make_data", "make_model"]
