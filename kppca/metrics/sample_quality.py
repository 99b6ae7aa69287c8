"""How good are generated samples? Class balance, recognisability, novelty, a two-sample test and fidelity."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from .._param_validation import Integral, Interval, check_scalar
from .._validation import ArrayLike, _seed_from, as_numpy, as_tensor, check_random_state, torch_generator
from .digit_features import digit_features

__all__ = [
    "sample_quality", "SampleQuality", "effective_classes", "mmd_test",
    "frechet_distance", "frechet_feature_distance", "gaussian_statistics",
]


def effective_classes(counts: ArrayLike) -> float:
    """``exp`` of the entropy of a histogram: the number of equally frequent classes it is worth."""
    c = np.asarray(counts, dtype=float)
    if c.sum() <= 0:
        return 0.0
    p = c[c > 0] / c.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


@dataclass
class SampleQuality:
    """Result of :func:`sample_quality` (fields named as in its description)."""

    n_samples: int
    confidence: float
    class_histogram: dict[Any, int]
    effective_classes: float
    min_class_fraction: float
    nn_distance: float | None = None
    real_nn_distance: float | None = None
    real_confidence: float | None = None
    real_effective_classes: float | None = None
    target_accuracy: dict[Any, float] | None = None
    mmd2: float | None = None
    mmd_pvalue: float | None = None
    frechet: float | None = None
    real_frechet: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def novelty_ratio(self) -> float | None:
        """``nn_distance / real_nn_distance`` (0: copies of training points, 1: as far as real held-out data)."""
        if self.nn_distance is None or not self.real_nn_distance:
            return None
        return self.nn_distance / self.real_nn_distance

    def as_dict(self) -> dict[str, Any]:
        """All fields and ``novelty_ratio`` as a plain dict."""
        return asdict(self) | {"novelty_ratio": self.novelty_ratio}

    def summary(self) -> str:
        """A few lines for a terminal."""
        hist = " ".join(f"{k}:{v}" for k, v in self.class_histogram.items())
        lines = [
            f"{self.n_samples} samples: classifier confidence {self.confidence:.3f}"
            + (f" (real digits {self.real_confidence:.3f})" if self.real_confidence is not None else "")
            + f", effective classes {self.effective_classes:.2f}"
            + (f" (real {self.real_effective_classes:.2f})" if self.real_effective_classes is not None else "")
            + f", smallest class {100 * self.min_class_fraction:.1f} %",
            f"class histogram {hist}",
        ]
        if self.nn_distance is not None:
            ratio = self.novelty_ratio
            lines.append(
                f"distance to the nearest training input {self.nn_distance:.2f}"
                + (f" (real held-out {self.real_nn_distance:.2f}, ratio {ratio:.2f})" if ratio is not None else "")
            )
        if self.target_accuracy is not None:
            accs = " ".join(f"{k}:{v:.2f}" for k, v in self.target_accuracy.items())
            lines.append(f"classified as requested: {accs}")
        if self.mmd2 is not None:
            lines.append(f"MMD^2 to the reference {self.mmd2:.4g} (permutation p-value {self.mmd_pvalue:.3g})")
        if self.frechet is not None:
            lines.append(
                f"Fréchet feature distance to the reference {self.frechet:.3g}"
                + (f" (as many real training digits {self.real_frechet:.3g})" if self.real_frechet is not None else "")
                # a Gaussian fit of 64 features from fewer than ~10 x 64 rows is dominated by its bias
                + ("; few samples: compare only at the same n, or draw >= 1,000" if self.n_samples < 640 else "")
            )
        return "\n".join(lines)


def _fit_default_classifier(X: ArrayLike, y: ArrayLike) -> Any:
    """Logistic regression (``C=10``) fitted on ``(X, y)`` in float64 on one thread.

    Another thread count or float32 moves where L-BFGS stops; a second thread spin-waits on a busy machine.
    """
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):  # BLAS (process-wide) and OpenMP (this thread's)
        # C = 10: real held-out MNIST digits get a mean confidence of about 0.95.
        return LogisticRegression(C=10.0, max_iter=1000).fit(np.asarray(X, dtype=float), y)


def _nearest_distances(A: torch.Tensor, B: torch.Tensor, block_rows: int = 1024) -> torch.Tensor:
    return torch.cat([torch.cdist(A[i : i + block_rows], B).min(1).values for i in range(0, A.shape[0], block_rows)])


def mmd_test(
    X: ArrayLike, Y: ArrayLike, *, n_permutations: int = 200, bandwidth: float | None = None, random_state: Any = 0
) -> tuple[float, float, float]:
    """Biased squared MMD between the rows of ``X`` and ``Y`` (Gaussian kernel) and its permutation p-value.

    Parameters
    ----------
    X : array-like of shape (m, D)
    Y : array-like of shape (n, D)
    n_permutations : int, default 200
    bandwidth : float, optional
        Kernel ``exp(-|x - y|^2 / (2 bandwidth^2))``; default the median pairwise distance of the pooled set.
    random_state : int, Generator or None

    Returns
    -------
    mmd2, p_value, bandwidth : float
        ``p = (1 + #{perm >= observed}) / (1 + n_permutations)``.
    """
    n_permutations = int(check_scalar(n_permutations, "n_permutations", [Interval(Integral, 1, None, closed="left")]))
    Xt = as_tensor(X, "X")
    Yt = as_tensor(Y, "Y", dtype=Xt.dtype, device=Xt.device)
    if Xt.shape[1] != Yt.shape[1]:
        raise ValueError(f"X and Y must have the same number of columns, got {Xt.shape[1]} and {Yt.shape[1]}.")
    Z = torch.cat([Xt, Yt])
    m, total = Xt.shape[0], Z.shape[0]
    D2 = torch.cdist(Z, Z).square()
    if bandwidth is None:
        off = D2[~torch.eye(total, dtype=torch.bool, device=Z.device)]
        bandwidth = float(off.sqrt().median())
        if bandwidth <= 0:
            bandwidth = 1.0
    K = torch.exp(-D2 / (2 * bandwidth**2))
    sign = torch.cat([torch.full((m,), 1.0 / m), torch.full((total - m,), -1.0 / (total - m))]).to(Z)
    observed = float(sign @ K @ sign)
    gen = torch_generator(random_state, Z.device)
    perms = torch.argsort(torch.rand((n_permutations, total), generator=gen, device=Z.device, dtype=Z.dtype), dim=1)
    S = sign[perms]  # (P, total): the labels shuffled
    stats = ((S @ K) * S).sum(1)
    p = (1 + int((stats >= observed - 1e-12 * abs(observed)).sum())) / (1 + n_permutations)
    return observed, p, bandwidth


def _float64(values: Any, name: str, ndim: int) -> torch.Tensor:
    if isinstance(values, torch.Tensor):
        t = values.detach().to(device="cpu", dtype=torch.float64)
    else:
        t = torch.as_tensor(np.asarray(values, dtype=np.float64))
    if t.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}.")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or inf.")
    return t


def gaussian_statistics(features: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean (d,) and unbiased covariance (d, d) of the rows of ``features`` (n, d), in float64."""
    F = _float64(features, "features", 2)
    if F.shape[0] < 2:
        raise ValueError(f"features needs at least 2 rows for a covariance, got {F.shape[0]}.")
    mu = F.mean(0)
    C = F - mu
    return mu, (C.T @ C) / (F.shape[0] - 1)


def frechet_distance(mu1: ArrayLike, S1: ArrayLike, mu2: ArrayLike, S2: ArrayLike) -> float:
    """Fréchet (2-Wasserstein) distance ``|mu1 - mu2|^2 + Tr(S1 + S2 - 2 (S1^1/2 S2 S1^1/2)^1/2)`` of two Gaussians.

    Parameters
    ----------
    mu1, mu2 : array-like of shape (d,)
        Means.
    S1, S2 : array-like of shape (d, d)
        Symmetric positive semi-definite covariances.

    Returns
    -------
    float
        Non-negative; 0 for identical Gaussians (up to rounding: the value is clipped at 0).
    """
    m1, m2 = _float64(mu1, "mu1", 1), _float64(mu2, "mu2", 1)
    A, B = _float64(S1, "S1", 2), _float64(S2, "S2", 2)
    d = m1.shape[0]
    if m2.shape != (d,) or A.shape != (d, d) or B.shape != (d, d):
        raise ValueError(
            f"mu1, mu2 must be (d,) and S1, S2 (d, d) with one d, got {tuple(m1.shape)}, {tuple(m2.shape)}, "
            f"{tuple(A.shape)}, {tuple(B.shape)}."
        )
    # Tr((S1 S2)^1/2) of the FID papers is taken as Tr((S1^1/2 S2 S1^1/2)^1/2), the same number, with two
    # symmetric eigendecompositions in float64 (no complex sqrtm round-off).
    # Symmetrise: callers' covariances may carry rounding asymmetry, eigh reads one triangle.
    A, B = (A + A.T) / 2, (B + B.T) / 2
    w, V = torch.linalg.eigh(A)
    R = (V * w.clamp(min=0.0).sqrt()) @ V.T  # A^1/2 (negative rounding eigenvalues clipped to 0)
    M = R @ B @ R
    cross = torch.linalg.eigvalsh((M + M.T) / 2).clamp(min=0.0).sqrt().sum()
    value = float((m1 - m2).square().sum() + A.trace() + B.trace() - 2 * cross)
    return max(value, 0.0)


def frechet_feature_distance(
    samples: ArrayLike, reference: ArrayLike, extractor: Any, *, reference_statistics: Any = None
) -> float:
    """Fréchet distance between the Gaussian fits of ``extractor``'s features of two sets of inputs (FID recipe).

    Parameters
    ----------
    samples : array-like of shape (n, D)
    reference : array-like of shape (m, D)
        Real inputs (ignored when ``reference_statistics`` is given).
    extractor : callable
        Maps an (n, D) float array to features (n, d), e.g. a
        :class:`~kppca.metrics.digit_features.DigitFeatures`.
    reference_statistics : (mu, S), optional
        Precomputed :func:`gaussian_statistics` of the reference features (saves a pass).

    Returns
    -------
    float
    """
    mu1, S1 = gaussian_statistics(extractor(samples))
    mu2, S2 = reference_statistics if reference_statistics is not None else gaussian_statistics(extractor(reference))
    return frechet_distance(mu1, S1, mu2, S2)


def sample_quality(
    samples: ArrayLike,
    reference: ArrayLike,
    labels: ArrayLike,
    *,
    train: ArrayLike | None = None,
    target: ArrayLike | None = None,
    classifier: Any = None,
    mmd: bool = True,
    mmd_points: int = 500,
    n_permutations: int = 200,
    frechet: bool = True,
    feature_extractor: Any = None,
    random_state: Any = 0,
) -> SampleQuality:
    """Quality report of generated ``samples`` against held-out real data (the ``reference``).

    A classifier trained on the reference labels the samples: mean confidence (max class probability), class
    histogram, its :func:`effective_classes` and smallest class fraction. With ``train``: the mean distance from
    each sample to its nearest training input next to the same for the reference (ratio near 0: copies, near 1:
    as novel as real data), and the classifier statistics of the training inputs (``real_*``). Then a
    Gaussian-kernel :func:`mmd_test` (small p: the sets are distinguishable) and the Fréchet distance of
    :func:`digit_features` features (with ``train``, ``real_frechet`` for as many real training digits is the
    floor a perfect generator would reach: the estimate's bias depends on the number of samples).

    Parameters
    ----------
    samples : array-like of shape (n, D)
        Generated inputs (e.g. ``model.sample(1000)``).
    reference : array-like of shape (m, D)
        Real inputs the model was *not* trained on.
    labels : array-like of shape (m,)
        Their classes; the classifier is trained on ``(reference, labels)``.
    train : array-like of shape (N, D), optional
        The model's training inputs: enables the novelty distances and the real-data reference values.
    target : label or array-like of shape (n,), optional
        The class each sample was asked for (class-conditional sampling): reports the fraction
        classified as requested, per class.
    classifier : scikit-learn classifier, optional
        Unfitted (it is fitted on the reference) or fitted (has ``classes_``; used as is).
        Default: logistic regression on the inputs with ``C=10``.
    mmd : bool, default True
        Run the two-sample test (on at most ``mmd_points`` rows of each set).
    mmd_points, n_permutations : int
    frechet : bool, default True
        Report the Fréchet feature distance to the reference (needs at least 2 samples).
    feature_extractor : callable, optional
        Maps (n, D) inputs to features (n, d) for the Fréchet distance. Default: the
        hidden layer of :func:`~kppca.metrics.digit_features.digit_features` trained on
        ``(reference, labels)`` (cached per process).
    random_state : int, Generator or None
        Subsampling and permutations.

    Returns
    -------
    SampleQuality
    """
    S, R, y = as_numpy(samples, float), as_numpy(reference, float), as_numpy(labels)
    if S.ndim != 2 or R.ndim != 2 or S.shape[1] != R.shape[1]:
        raise ValueError(
            f"samples (n, D) and reference (m, D) must be 2-D with the same D, got {S.shape} and {R.shape}."
        )
    if y.shape != (R.shape[0],):
        raise ValueError(f"labels must have one entry per reference row, shape ({R.shape[0]},), got {y.shape}.")
    if S.shape[0] == 0:
        raise ValueError("samples is empty.")
    if classifier is None:
        clf = _fit_default_classifier(R, y)
    else:
        clf = classifier
        if not hasattr(clf, "classes_"):
            clf.fit(R, y)
    classes = list(clf.classes_)
    proba = clf.predict_proba(S)
    pred = np.asarray(classes, dtype=object)[proba.argmax(1)]
    counts = np.bincount(proba.argmax(1), minlength=len(classes))
    out = SampleQuality(
        n_samples=int(S.shape[0]),
        confidence=float(proba.max(1).mean()),
        class_histogram={c.item() if hasattr(c, "item") else c: int(k) for c, k in zip(classes, counts)},
        effective_classes=effective_classes(counts),
        min_class_fraction=float(counts.min() / counts.sum()),
    )
    if train is not None:
        T = as_numpy(train, float)
        St, Tt, Rt = (torch.as_tensor(a) for a in (S, T, R))
        out.nn_distance = float(_nearest_distances(St, Tt).mean())
        out.real_nn_distance = float(_nearest_distances(Rt, Tt).mean())
        p_real = clf.predict_proba(T)
        out.real_confidence = float(p_real.max(1).mean())
        out.real_effective_classes = effective_classes(np.bincount(p_real.argmax(1), minlength=len(classes)))
    if target is not None:
        t = as_numpy(target, object)
        t = np.full(S.shape[0], t[()], dtype=object) if t.ndim == 0 else t
        if t.shape != (S.shape[0],):
            raise ValueError(f"target must be one label or one per sample, shape ({S.shape[0]},), got {t.shape}.")
        out.target_accuracy = {
            (c.item() if hasattr(c, "item") else c): float((pred[t == c] == c).mean()) for c in np.unique(t)
        }
    if mmd:
        rng = np.random.default_rng(_seed_from(check_random_state(random_state)))
        k = int(check_scalar(mmd_points, "mmd_points", [Interval(Integral, 2, None, closed="left")]))
        iS = rng.choice(S.shape[0], min(k, S.shape[0]), replace=False)
        iR = rng.choice(R.shape[0], min(k, R.shape[0]), replace=False)
        seed = int(rng.integers(2**31))
        out.mmd2, out.mmd_pvalue, bw = mmd_test(S[iS], R[iR], n_permutations=n_permutations, random_state=seed)
        out.extra["mmd_bandwidth"] = bw
    if frechet and S.shape[0] >= 2:
        extractor = feature_extractor if feature_extractor is not None else digit_features(R, y)
        ref_stats = gaussian_statistics(extractor(R))
        out.frechet = frechet_feature_distance(S, R, extractor, reference_statistics=ref_stats)
        if train is not None:
            # As many real digits as samples: the plug-in distance's bias grows as n shrinks (~1/n),
            # so the floor is only comparable at the same n.
            rows = np.random.default_rng(_seed_from(check_random_state(random_state))).permutation(T.shape[0])
            T_n = T[rows[: max(2, min(S.shape[0], T.shape[0]))]]
            out.real_frechet = frechet_feature_distance(T_n, R, extractor, reference_statistics=ref_stats)
    return out
