"""One configuration of the RKM robustness sweep: data, an RKM estimator, a fit, every output.

The RKM half of the sweep of ``tests/robustness.py`` (which covers ``DualPPCA`` and
``PrimalPPCA``), over the ranges of issue 18: scales 1e-6..1e6, offsets up to 1e4,
float32/float64, eight kernels, N from 3 to 1,000, for the seven RKM estimators.
A configuration is run in float64 and in float32 on the same data; each run ends in one
outcome of :data:`robustness.OUTCOMES`, and the pair adds ``"float32_fails"`` when
float32 does not fit where float64 does and the message does not say to use float64.

``"unclear_error"`` also covers ``ValueError``/``TypeError`` messages that do not tell the
user what to change (:data:`UNCLEAR_MESSAGES`): an estimator that did not resolve its
own default kernel width ("call kernel.resolve"), advice that cannot be followed
("n_components <= 0") or internal names.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
import torch

from kppca import DualPPCA
from kppca.features import Nystroem, RandomFourierFeatures
from kppca.kernels import RBF, Laplacian, Linear, Polynomial
from kppca.rkm import (
    DeepRKM,
    DeepRKMClassifier,
    KernelPCARKM,
    LSSVMClassifier,
    LSSVMRegressor,
    MultiViewKPCA,
    NARForecaster,
)

from robustness import MAX_MESSAGE

ESTIMATORS = (
    "MultiViewKPCA",
    "NARForecaster",
    "LSSVMRegressor",
    "LSSVMClassifier",
    "KernelPCARKM",
    "DeepRKM",
    "DeepRKMClassifier",
)

#: "default" is the estimator's own default kernel (``"rbf"``, a width resolved from the data).
KERNEL_FAMILIES = ("default", "linear", "rbf", "laplacian", "polynomial", "sum", "product", "rff", "nystroem")

#: Messages that are ValueErrors but do not say what the user should change.
UNCLEAR_MESSAGES = (
    r"kernel\.resolve\(",  # the estimator did not resolve its own default width
    r"n_components\s*<=\s*0",  # advice that cannot be followed
    r"K_c_rows|_K0\b|H1_|\bself\.",  # internal names
)

OUTCOMES = ("ok", "clear_error", "rejected_valid_kernel", "nonfinite_output", "error_after_fit", "unclear_error")
DEFECTS = ("rejected_valid_kernel", "nonfinite_output", "error_after_fit", "unclear_error", "float32_fails")


@dataclass(frozen=True)
class RKMConfig:
    """One point of the RKM sweep (plain values, so failures print readably)."""

    estimator: str
    family: str
    bandwidth: float
    n_samples: int
    n_features: int
    scale: float
    offset: float
    dtype: str
    n_components: int
    option: str  # an estimator-specific variant (solver, head, ...), "" for the default
    seed: int


def make_data(cfg: RKMConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y, labels)``: inputs, a smooth regression target and two balanced classes."""
    rng = np.random.default_rng(cfg.seed)
    Z = rng.normal(size=(cfg.n_samples, cfg.n_features))
    y = np.sin(Z[:, 0]) + 0.1 * Z[:, -1] + 0.05 * rng.normal(size=cfg.n_samples)
    labels = (np.argsort(np.argsort(Z[:, 0])) >= cfg.n_samples // 2).astype(np.int64)
    X = (cfg.scale * Z + cfg.offset).astype(cfg.dtype)
    return X, (cfg.scale * y).astype(cfg.dtype), labels


def make_kernel(cfg: RKMConfig, X: np.ndarray) -> Any:
    """The kernel of ``cfg.family`` (feature maps are fitted on X and used as their kernel);
    None for ``"default"``: the estimator's own default is used (not passed)."""
    b, f = cfg.bandwidth, cfg.family
    if f == "default":
        return None
    if f in ("rff", "nystroem"):
        fmap = (
            RandomFourierFeatures(b, n_features=40, random_state=cfg.seed)
            if f == "rff"
            else Nystroem(RBF(b), n_landmarks=min(len(X), 15), random_state=cfg.seed)
        )
        return fmap.fit(X).as_kernel() if len(X) else fmap
    return {
        "linear": Linear(),
        "rbf": RBF(b),
        "laplacian": Laplacian(b),
        "polynomial": Polynomial(2, 1.0),
        "sum": RBF(b) + Linear(),
        "product": RBF(b) * Laplacian(b),
    }[f]


def _kw(name: str, value: Any) -> dict[str, Any]:
    """``{name: value}``, or nothing for None (the estimator's default)."""
    return {} if value is None else {name: value}


def _common(cfg: RKMConfig) -> dict[str, Any]:
    return {"dtype": cfg.dtype}


def _fit_and_outputs(cfg: RKMConfig) -> tuple[Callable[[], Any], Callable[[Any], dict[str, Callable[[], Any]]]]:
    """``(fit, outputs)``: ``fit()`` returns the fitted model, ``outputs(model)`` its public outputs."""
    X, y, labels = make_data(cfg)
    kernel = make_kernel(cfg, X)
    q, probe = cfg.n_components, X[: min(len(X), 5)]
    e = cfg.estimator
    if e == "MultiViewKPCA":
        d1 = max(1, X.shape[1] // 2)
        views = [X[:, :d1], X[:, d1:] if X.shape[1] > 1 else X[:, :1] ** 2]
        kernels = None if kernel is None else [make_kernel(cfg, views[0]), make_kernel(cfg, views[1])]

        def fit():
            return MultiViewKPCA(q, **_kw("kernels", kernels), random_state=cfg.seed, **_common(cfg)).fit(views)

        def outputs(m):
            pv = [v[: len(probe)] for v in views]
            return {
                "transform": lambda: m.transform(pv),
                "sample": lambda: m.sample(3, random_state=0),
                "predict_view": lambda: m.predict_view([pv[0], None], 1),
            }

        return fit, outputs
    if e == "NARForecaster":
        series = np.concatenate([[cfg.offset], y.astype(np.float64) + cfg.offset]).astype(cfg.dtype)
        lags = 3
        # a feature map is passed unfitted: the estimator fits it on its lag windows (documented)
        kx = kernel if cfg.family not in ("rff", "nystroem") else (
            RandomFourierFeatures(cfg.bandwidth, 20, random_state=cfg.seed) if cfg.family == "rff" else RBF(cfg.bandwidth)
        )

        def fit():
            kw = {**_kw("kernel_x", kx), **_kw("kernel_y", kx)}
            return NARForecaster(lags, q, **kw, random_state=cfg.seed, **_common(cfg)).fit(series)

        return fit, lambda m: {"forecast": lambda: m.forecast(5)}
    if e == "LSSVMRegressor":
        return (
            lambda: LSSVMRegressor(**_kw("kernel", kernel), solver=cfg.option or "auto", **_common(cfg)).fit(X, y),
            lambda m: {"predict": lambda: m.predict(probe), "score": lambda: m.score(X, y)},
        )
    if e == "LSSVMClassifier":
        return (
            lambda: LSSVMClassifier(**_kw("kernel", kernel), solver=cfg.option or "auto", **_common(cfg)).fit(X, labels),
            lambda m: {
                "predict": lambda: m.predict(probe),
                "decision_function": lambda: m.decision_function(probe),
                "predict_proba": lambda: m.predict_proba(probe),
            },
        )
    if e == "KernelPCARKM":
        return (
            lambda: KernelPCARKM(q, **_kw("kernel", kernel), **_common(cfg)).fit(X),
            lambda m: {"transform": lambda: m.transform(probe)},
        )
    if e == "DeepRKM":
        return (
            lambda: DeepRKM(
                **_kw("kernel", kernel), solver=cfg.option or "levelwise", n_prototypes=min(30, len(X)),
                random_state=cfg.seed, max_iter=30, **_common(cfg),
            ).fit(X, y),
            lambda m: {"predict": lambda: m.predict(probe), "score": lambda: m.score(X, y)},
        )
    if e == "DeepRKMClassifier":
        return (
            lambda: DeepRKMClassifier(
                (q, q), **_kw("kernel", kernel), head=cfg.option or "lssvm", max_iter=20, random_state=cfg.seed,
                **_common(cfg),
            ).fit(X, labels),
            lambda m: {
                "predict": lambda: m.predict(probe),
                "decision_function": lambda: m.decision_function(probe),
                "latent_codes": lambda: m.latent_codes(probe),
            },
        )
    raise ValueError(f"unknown estimator {e!r}")


def _finite(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    t = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value, dtype=np.float64))
    return bool(torch.isfinite(t).all())


def _classify_message(exc: Exception) -> str:
    message = str(exc)
    if "positive semi-definite" in message and "not" in message and "float64" not in message:
        return "rejected_valid_kernel"  # (naming float64: a float32 rounding limit, told as such)
    if not message or len(message) > MAX_MESSAGE or any(re.search(p, message) for p in UNCLEAR_MESSAGES):
        return "unclear_error"
    return "clear_error"


def run(cfg: RKMConfig) -> tuple[str, str]:
    """Fit and exercise one configuration; return ``(outcome, detail)``."""
    X, _, _ = make_data(cfg)
    if not np.isfinite(X).all():
        return "clear_error", "data overflow"
    stage = "fit"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit, outputs = _fit_and_outputs(cfg)
            model = fit()
            stage = "outputs"
            bad = [name for name, fn in outputs(model).items() if not _finite(fn())]
    except (ValueError, TypeError) as exc:
        detail = f"{stage}: {type(exc).__name__}: {str(exc)[:MAX_MESSAGE]}"
        if stage == "outputs":
            return "error_after_fit", detail
        return _classify_message(exc), detail
    except Exception as exc:  # noqa: BLE001 - every other exception is a defect of the sweep's kind
        return "unclear_error", f"{stage}: {type(exc).__name__}: {str(exc)[:MAX_MESSAGE]}"
    if bad:
        return "nonfinite_output", ", ".join(bad)
    return "ok", ""


def run_pair(cfg: RKMConfig) -> list[tuple[str, str, str]]:
    """Run ``cfg`` in float64 and float32: ``[(dtype, outcome, detail), ...]``, plus
    ``("pair", "float32_fails", detail)`` when float32 gives a clear error where float64 fits
    and the message does not name float64."""
    results = []
    for dtype in ("float64", "float32"):
        outcome, detail = run(replace(cfg, dtype=dtype))
        results.append((dtype, outcome, detail))
    (_, out64, _), (_, out32, det32) = results
    if out64 == "ok" and out32 == "clear_error" and "float64" not in det32 and det32 != "data overflow":
        results.append(("pair", "float32_fails", det32))
    return results


def random_config(rng: np.random.Generator, max_n: int = 1000) -> RKMConfig:
    """A configuration from the issue's ranges; N is mostly small (the sweep's cost is in large N)."""
    estimator = str(rng.choice(ESTIMATORS))
    sizes = [n for n in (3, 5, 10, 30, 100, 300, 1000) if n <= max_n]
    weights = np.array([0.12, 0.15, 0.25, 0.25, 0.12, 0.07, 0.04])[: len(sizes)]
    option = ""
    if estimator in ("LSSVMRegressor", "LSSVMClassifier"):
        option = str(rng.choice(["", "dual", "primal"]))
    elif estimator == "DeepRKM":
        option = str(rng.choice(["", "primal"]))
    elif estimator == "DeepRKMClassifier":
        option = str(rng.choice(["", "mlp"]))
    return RKMConfig(
        estimator=estimator,
        family=str(rng.choice(KERNEL_FAMILIES)),
        bandwidth=float(10 ** rng.uniform(-3, 3)),
        n_samples=int(rng.choice(sizes, p=weights / weights.sum())),
        n_features=int(rng.integers(1, 6)),
        scale=float(10 ** rng.uniform(-6, 6)),
        offset=float(rng.choice([0.0, 10.0, 1e2, 1e3, 1e4])),
        dtype="float64",
        n_components=int(rng.integers(1, 3)),
        option=option,
        seed=int(rng.integers(2**31)),
    )


def _bad_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    nan, inf = X.copy(), X.copy()
    nan[3, 1], inf[4, 2] = np.nan, np.inf
    return {
        "nan": nan,
        "inf": inf,
        "1-d": X[:, 0],
        "3-d": X[None],
        "empty": X[:0],
        "one row": X[:1],
        "strings": np.full((20, 3), "a"),
        "complex": X + 1j,
    }


def _bad_fit(estimator: str, X: Any, y: Any) -> Callable[[], Any]:
    kernel = RBF(1.0)
    return {
        "MultiViewKPCA": lambda: MultiViewKPCA(1, kernels=[kernel, kernel]).fit([X, X]),
        # a series: the 2-D bad inputs flattened (their NaN/inf/strings kept), the others as given
        "NARForecaster": lambda: NARForecaster(3, 1, kernel_x=kernel).fit(np.ravel(X) if np.ndim(X) == 2 else X),
        "LSSVMRegressor": lambda: LSSVMRegressor(kernel).fit(X, y),
        "LSSVMClassifier": lambda: LSSVMClassifier(kernel).fit(X, y),
        "KernelPCARKM": lambda: KernelPCARKM(1, kernel=kernel).fit(X),
        "DeepRKM": lambda: DeepRKM(kernel=kernel).fit(X, y),
        "DeepRKMClassifier": lambda: DeepRKMClassifier((1, 1), kernel=kernel, max_iter=5).fit(X, y),
    }[estimator]


def bad_input_outcomes(estimator: str) -> list[tuple[str, str, str]]:
    """Fit ``estimator`` on each bad input (:func:`_bad_inputs`, wrong-length and NaN targets):
    ``[(case, outcome, detail)]`` with outcome ``"clear_error"``, ``"unclear_error"`` or
    ``"accepted"`` (the fit succeeded on input it should refuse)."""
    cases = {name: (X, np.arange(len(X)) % 2 if np.ndim(X) else None) for name, X in _bad_inputs().items()}
    if estimator == "NARForecaster":
        del cases["1-d"]  # a 1-d array is a valid series
        cases["one row"] = (np.zeros(3), None)  # as long as the lags: no window to learn from
    X = np.random.default_rng(1).normal(size=(20, 3))
    if estimator not in ("MultiViewKPCA", "NARForecaster", "KernelPCARKM"):
        cases["y too short"] = (X, np.arange(19) % 2)
        y_nan = (np.arange(20) % 2).astype(float)
        y_nan[5] = np.nan
        cases["y nan"] = (X, y_nan)
    if estimator in ("LSSVMClassifier", "DeepRKMClassifier"):
        cases["one class"] = (X, np.zeros(20, dtype=int))
    return [(case, *_attempt(_bad_fit(estimator, Xb, yb), lambda exc: True, "accepted"))
            for case, (Xb, yb) in cases.items()]


def _attempt(call: Callable[[], Any], names_it: Callable[[Exception], bool], success: str) -> tuple[str, str]:
    """Run ``call`` with warnings silenced: ``(success, "")``, ``("clear_error", message)`` for a short
    ValueError/TypeError that :func:`_classify_message` finds clear and ``names_it`` accepts, otherwise
    ``("unclear_error", message)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
    except (ValueError, TypeError) as exc:
        clear = _classify_message(exc) == "clear_error" and names_it(exc)
        return ("clear_error" if clear else "unclear_error"), str(exc)[:200]
    except Exception as exc:  # noqa: BLE001
        return "unclear_error", f"{type(exc).__name__}: {str(exc)[:200]}"
    return success, ""


def _extreme_cases() -> dict[str, Callable[[], Any]]:
    """Valid but extreme inputs (issue 26, item 9): values near the float64 limit, a view scaled by 1e300,
    far test points, a clip that is not numbers. Each must fit with finite outputs or fail clearly."""
    from kppca.rkm import DeepLSSVMClassifier, KernelPMF, SubsetEnsembleClassifier

    rng = np.random.default_rng(2)
    X = rng.normal(size=(24, 3))
    huge = np.clip(X, -1.7, 1.7) * 1e308
    y = np.arange(24) % 2

    def pmf_far():
        out = KernelPMF().fit(X).score_samples(X[:3] + 1e200)
        if not np.isfinite(out).all():
            raise RuntimeError(f"KernelPMF.score_samples of far points is not finite: {out}")

    return {
        "DeepRKM near 1e308": lambda: DeepRKM(n_passes=1).fit(huge, y.astype(float)),
        "DeepLSSVMClassifier near 1e308": lambda: DeepLSSVMClassifier(n_passes=1).fit(huge, y),
        "KernelPMF near 1e308": lambda: KernelPMF().fit(huge),
        "LSSVMClassifier near 1e308": lambda: LSSVMClassifier().fit(huge, y),
        "SubsetEnsembleClassifier near 1e308": lambda: SubsetEnsembleClassifier(
            LSSVMClassifier(), subset_size=8).fit(huge, y),
        "MultiViewKPCA view x 1e300": lambda: MultiViewKPCA(1).fit([X[:, :2] * 1e300, X[:, 2:]]),
        "KernelPMF far points": pmf_far,
        "SubsetEnsembleClassifier clip strings": lambda: SubsetEnsembleClassifier(
            LSSVMClassifier(), subset_size=8, noise=0.1, clip=("a", "b")).fit(X, y),
        "DualPPCA y with NaN": lambda: DualPPCA(2).fit(X, np.where(np.arange(24) == 3, np.nan, y)),
        "DeepLSSVMClassifier ridge 1e-300": lambda: DeepLSSVMClassifier(ridge=1e-300).fit(X, y),
        "DeepLSSVMClassifier eta_levels inf": lambda: DeepLSSVMClassifier(eta_levels=(np.inf, 1.0)).fit(X, y),
    }


#: Words an extreme case's message must contain to count as clear (it names the argument or the fix).
_EXTREME_NAMES = {"y with NaN": "y", "ridge 1e-300": "ridge", "eta_levels inf": "eta_levels",
                  "clip strings": "clip", "view x 1e300": "view"}


def extreme_input_outcomes() -> list[tuple[str, str, str]]:
    """``[(case, outcome, detail)]`` of :func:`_extreme_cases`: ``"ok"``, ``"clear_error"`` (a short
    ValueError/TypeError naming what :data:`_EXTREME_NAMES` asks) or ``"unclear_error"``."""
    def names_it(case: str) -> Callable[[Exception], bool]:
        word = next((w for k, w in _EXTREME_NAMES.items() if case.endswith(k)), "")
        return lambda exc: word in str(exc)

    return [(case, *_attempt(fit, names_it(case), "ok")) for case, fit in _extreme_cases().items()]


__all__ = [
    "extreme_input_outcomes",
    "RKMConfig",
    "ESTIMATORS",
    "KERNEL_FAMILIES",
    "OUTCOMES",
    "DEFECTS",
    "run",
    "run_pair",
    "random_config",
    "bad_input_outcomes",
]
