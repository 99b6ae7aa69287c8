"""The PPCA-specific part of the eigen-problem: the choice of ``q`` and ``sigma2`` from the spectrum.

Both models reduce to a PSD matrix with the same non-zero eigenvalues; the ML estimators need only its
trace, the top ``q`` eigenpairs and the rank ``r`` (spec, "Maximum likelihood").
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
from scipy.special import gammaln

from .._linalg import Spectrum

__all__ = ["select_components", "minka_dimension"]


def select_components(spectrum: Spectrum, n_samples: int, n_components, sigma2) -> tuple[int, float]:
    """``(q, sigma2)`` from the spectrum and the parameters (the rules of ``DualPPCA``'s ``n_components``).

    An estimated ``sigma2 = sum_{p>q} lam_p / (N (r - q))`` needs ``q < r``; a fixed one allows ``q <= r``.
    Raises ValueError when the spectrum does not allow ``q``, or ``sigma2 >= lam_q / N``.
    """
    lam = spectrum.values.detach().cpu().numpy().astype(np.float64)
    N, r = n_samples, spectrum.rank
    estimate = sigma2 is None  # the ML sigma2 needs at least one discarded direction
    if r < (2 if estimate else 1):
        raise ValueError(
            f"the centered data have rank {r}; probabilistic PCA "
            + ("with an estimated sigma2 needs rank >= 2 (q >= 1 component plus noise; with a fixed sigma2, "
               "rank >= 1 suffices). " if estimate else "needs rank >= 1. ")
            + "The rank counts variation above the rounding level of the uncentered data: for data far from the "
            "origin (or a float32 model) subtract a constant offset from X, rescale it, or use dtype='float64'."
        )
    if lam.size == 0:
        raise ValueError(
            f"no eigenvalue of the data is above the rounding level {spectrum.tolerance:.3g} of the matrix (rank "
            f"{r} by structure): the variation of X is below the precision of the computation. Rescale X (e.g. "
            "standardise it), subtract a constant offset, or use dtype='float64'."
        )
    if n_components is None and sigma2 is None:
        # A probabilistic model keeps noise directions: r - 1 would make sigma2 the smallest eigenvalue.
        n_components = min(2, r - 1)
    if n_components == "mle":
        q = minka_dimension(lam, N)
    elif n_components is None:
        q = int((lam / N > sigma2).sum())
        if q < 1:
            raise ValueError(
                f"sigma2={sigma2:.4g} is >= lambda_1/N = {lam[0] / N:.4g}: no direction has more variance than the "
                "noise. Choose a smaller sigma2."
            )
    elif isinstance(n_components, numbers.Integral):
        q = int(n_components)
    else:
        q = _fraction_components(lam, spectrum, float(n_components))
    if q > r or (estimate and q == r):
        raise ValueError(
            f"n_components = {q} must be smaller than the rank of the centered data ({r}); the model needs at "
            "least one discarded direction to estimate sigma2. Use fewer components or give sigma2 (a fixed "
            "sigma2 allows n_components up to the rank)."
            if estimate
            else f"n_components = {q} exceeds the rank of the centered data ({r}): the data span only {r} "
            "direction(s). Use at most that many components"
            + (" or a larger sigma2." if n_components is None else ".")
        )
    resolved = int((lam > spectrum.tolerance).sum())
    if q > resolved:
        # A kept component must carry variance above the rounding level (a smooth kernel's spectrum decays below).
        raise ValueError(
            f"n_components = {q}, but only {resolved} eigenvalue(s) of the data are above the rounding level "
            f"{spectrum.tolerance:.3g} of the matrix. Use fewer components; for data far from the origin (or a "
            "float32 model) subtract a constant offset from X, rescale it, or use dtype='float64'."
        )
    if sigma2 is None:
        tail = spectrum.trace - float(lam[:q].sum())
        sigma2 = tail / (N * (r - q))
        if sigma2 <= 0:
            raise ValueError(
                f"the estimated sigma2 is not positive ({sigma2:.3g}): the discarded eigenvalues are numerically "
                f"zero. Use fewer than {q} components."
            )
        # Each eigenvalue and the trace are within the rounding level tol (Weyl), so the tail, the trace less
        # q eigenvalues or the sum of r - q, is within (min(q, r - q) + 1) tol: below that it is rounding.
        floor = (min(q, r - q) + 1) * spectrum.tolerance
        if tail <= floor:
            raise ValueError(
                f"the discarded variance trace - sum of the top {q} eigenvalues = {tail:.3g} is below the rounding "
                f"level {floor:.3g} of the matrix, so sigma2 cannot be estimated (it would be rounding noise). Use "
                "dtype='float64', fewer components, or give sigma2."
            )
    if not sigma2 < lam[q - 1] / N:
        raise ValueError(
            f"sigma2 = {sigma2:.6g} must be smaller than lambda_q/N = {lam[q - 1] / N:.6g} for q = {q} "
            "(repeated eigenvalues at the cut, or sigma2 too large). Change n_components or sigma2."
        )
    return q, float(sigma2)


def _fraction_components(lam: np.ndarray, spectrum: Spectrum, fraction: float) -> int:
    """The smallest ``q`` whose cumulative explained variance ratio reaches ``fraction`` (ML ``sigma2``: ``q < r``).

    A ratio within ``2 (q + 2) eps`` below counts as reaching it, so ``n_components =
    explained_variance_ratio_[:q].sum()`` selects ``q`` whatever the order of the sums.
    """
    r = spectrum.rank
    eps = float(torch.finfo(spectrum.values.dtype).eps)
    ratios = np.cumsum(lam) / spectrum.trace
    counts = np.arange(1, ratios.size + 1)
    reached = ratios >= fraction - 2.0 * (counts + 2) * eps
    usable = min(r - 1, ratios.size)  # one discarded direction is needed for sigma2
    q = int(np.argmax(reached)) + 1 if reached.any() else ratios.size + 1
    if q > usable:
        # In full precision (repr), so that the quoted maximum is itself accepted.
        most = float(ratios[usable - 1])
        raise ValueError(
            f"n_components={fraction!r} asks for that fraction of the variance, but the most the model can "
            f"keep is {most!r}: the top {usable} of the rank-{r} spectrum"
            + (" (at least one direction must be discarded to estimate sigma2)" if usable == r - 1 else
               f" (the only eigenvalues above the rounding level {spectrum.tolerance:.3g})")
            + f". Use a fraction of at most {most!r}, or an integer n_components."
        )
    return q


def minka_dimension(eigenvalues: np.ndarray, n_samples: int, max_components: int = 1000) -> int:
    """Minka's (2000) Laplace approximation of the PCA evidence: the best ``q``.

    scikit-learn's ``PCA(n_components="mle")`` criterion on the ``r`` non-zero eigenvalues of the
    centered Gram matrix (``r`` plays the data dimension); a scaling of the spectrum does not change ``q``.

    Parameters
    ----------
    eigenvalues : ndarray of shape (r,)
        All non-zero eigenvalues, descending.
    n_samples : int
    max_components : int, default 1000
        Candidates are ``1 .. min(r - 1, max_components)`` (each costs ``O(q r)``).

    Returns
    -------
    int
    """
    spec = np.asarray(eigenvalues, dtype=np.float64) / n_samples
    d = spec.shape[0]
    best_q, best_ll = 1, -np.inf
    log_n = math.log(n_samples)
    for q in range(1, min(d - 1, max_components) + 1):
        if spec[q - 1] < 1e-15:
            break
        i = np.arange(1, q + 1)
        pu = -q * math.log(2.0) + float(np.sum(gammaln((d - i + 1) / 2.0) - math.log(math.pi) * (d - i + 1) / 2.0))
        pl = -float(np.sum(np.log(spec[:q]))) * n_samples / 2.0
        v = max(np.finfo(np.float64).eps, float(spec[q:].sum()) / (d - q))
        pv = -math.log(v) * n_samples * (d - q) / 2.0
        m = d * q - q * (q + 1.0) / 2.0
        pp = math.log(2.0 * math.pi) * (m + q) / 2.0
        # pairwise terms i < j, i <= q, with the discarded eigenvalues replaced by v
        tilde = spec.copy()
        tilde[q:] = v
        diff = spec[:q, None] - spec[None, :]
        inv = 1.0 / tilde[None, :] - 1.0 / tilde[:q, None]
        upper = np.triu(np.ones((q, d), dtype=bool), k=1)
        with np.errstate(divide="ignore"):
            pa = float(np.sum(np.log(diff[upper] * inv[upper]))) + upper.sum() * log_n
        ll = pu + pl + pv + pp - pa / 2.0 - q * log_n / 2.0
        if ll > best_ll:
            best_q, best_ll = q, ll
    return best_q
