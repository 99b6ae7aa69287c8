"""What the shallow RKMs share to resolve kernels and diagonalise training kernel matrices.

* :func:`resolve_kernel`: the fitted kernel of an estimator: data-derived widths
  (``RBF()``, i.e. ``bandwidth="scale"``, and the default string ``"rbf"``) are
  resolved on the training data by :meth:`kppca.kernels.Kernel.resolve`, as
  scikit-learn resolves ``gamma="scale"``; always a private copy;
* :func:`gram_top_spectrum` / :func:`top_spectrum`: top eigenpairs of a
  :class:`~kppca.kernels.CenteredGram` or of an assembled PSD matrix through
  :mod:`kppca._linalg` (one dense-or-Lanczos policy, :func:`kppca._linalg.prefer_partial`),
  with the RKMs' "n_components exceeds the rank" rule and a rank-0 message that does
  not advise ``n_components <= 0``.

Every training Gram matrix of these estimators is a :class:`~kppca.kernels.CenteredGram`
(blocked build, scale check, centering statistics).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from .._linalg import Spectrum, full_spectrum, partial_spectrum, prefer_partial
from .._validation import precision_advice
from ..kernels import CenteredGram, Kernel
from ..kernels.registry import as_kernel

__all__ = ["check_psd_kernel", "check_rank", "resolve_kernel", "gram_top_spectrum", "top_spectrum"]


def resolve_kernel(kernel: Any, X: torch.Tensor) -> Kernel:
    """The kernel to fit with: ``kernel`` with its data-derived widths resolved on ``X``, as a new object.

    The string ``"rbf"`` (the default of the RKMs) is ``RBF()``, whose bandwidth rule
    ``"scale"`` becomes ``sqrt(D Var(X) / 2)`` (scikit-learn's ``gamma="scale"``); a
    numeric width is kept. The estimator's parameter is never modified.

    Parameters
    ----------
    kernel : Kernel, str, callable or None
    X : Tensor of shape (N, D), the training inputs

    Returns
    -------
    Kernel
    """
    resolved = as_kernel(kernel).resolve(X)
    return copy.deepcopy(resolved)


def check_psd_kernel(G: CenteredGram) -> None:
    """Refuse a kernel whose raw Gram matrix on the training inputs is not positive semi-definite.

    Centering can hide it: ``-||x - y||`` is conditionally positive definite, so its centred
    matrix is PSD while the kernel is not. The raw entries ``K_ij = K_c,ij + m_i + m_j - g`` are
    recovered from ``K_c`` and the centering statistics by row blocks (O(N^2), no second N x N
    matrix) and checked against the necessary conditions ``K_ii >= 0`` and ``K_ij^2 <= K_ii K_jj``,
    up to the rounding level ``N eps max|K|`` of the recovered entries.

    Raises
    ------
    ValueError
        Naming the kernel and the fix (a valid, PSD kernel).
    """
    Kc, N = G.matrix, G.n_samples
    cm = G.centerer.column_means_ if G.center else Kc.new_zeros(N)
    g = G.centerer.grand_mean_ if G.center else Kc.new_zeros(())
    tol = N * torch.finfo(Kc.dtype).eps * G.scale
    d = torch.diagonal(Kc) + 2 * cm - g
    bad = bool((d < -tol).any())
    root = d.clamp_min(0).sqrt()
    rows = max(1, (1 << 17) // max(1, N))
    for i in range(0, N, rows):
        if bad:
            break
        K = Kc[i : i + rows] + cm[i : i + rows, None] + cm[None, :] - g
        bad = bool((K.abs() > root[i : i + rows, None] * root[None, :] + tol).any())
    if bad:
        raise ValueError(
            f"the kernel {G.kernel!r} is not positive semi-definite on X (its {G.what} has "
            "|K_ij| > sqrt(K_ii K_jj) or a negative diagonal): kernel methods need a valid (PSD) kernel; "
            "use one of kppca.kernels or a callable that returns a PSD matrix."
        )


def check_rank(values: torch.Tensor, tolerance: float, s: int, what: str, found_by: str = "") -> None:
    """Refuse ``s`` components when fewer than ``s`` of the eigenvalues ``values`` exceed ``tolerance``.

    The one place of the RKMs' "rank 0" message (which does not advise ``n_components <= 0``) and
    "n_components exceeds the numerical rank" message; ``found_by`` names an iterative solver.
    """
    available = int((values > tolerance).sum())
    if available == 0:
        raise ValueError(
            f"the {what} is numerically zero (rank 0): the data carry no variation under this kernel "
            "(constant or duplicated rows, or a kernel constant on them). Check the data, or use a kernel "
            "(or bandwidth) that separates the points."
            + precision_advice(values.dtype)
        )
    if s > available:
        raise ValueError(
            f"n_components={s} exceeds the numerical rank {available} of the {what}{found_by}: only {available} "
            f"directions carry variance. Use n_components <= {available}." + precision_advice(values.dtype)
        )


def _checked(spec: Spectrum, s: int, what: str) -> Spectrum:
    """The top ``s`` resolved eigenpairs of ``spec``; a clear error when fewer than ``s`` exist."""
    check_rank(spec.values, spec.tolerance, s, what)
    return Spectrum(spec.values[:s].clone(), spec.vectors[:, :s].clone(), spec.trace, spec.rank,
                    spec.complete, spec.tolerance)


def gram_top_spectrum(G: CenteredGram, s: int, *, random_state: np.random.Generator | None = None) -> Spectrum:
    """The top ``s`` eigenpairs of the centered Gram matrix ``G`` (dense or Lanczos by the package policy).

    Raises
    ------
    ValueError
        Not PSD, rank 0, or ``s`` above the numerical rank.
    """
    solver = "partial" if prefer_partial(G.n_samples, s) else "dense"
    spec = G.spectrum(solver, s, random_state=random_state)
    return _checked(spec, s, f"centered {G.what}")


def top_spectrum(
    A: torch.Tensor,
    s: int,
    *,
    what: str,
    scale: float = 0.0,
    size: int | None = None,
    max_rank: int | None = None,
    random_state: np.random.Generator | None = None,
) -> Spectrum:
    """The top ``s`` eigenpairs of an assembled symmetric PSD matrix ``A`` (m, m), refusing ``s`` above its rank.

    ``scale`` (magnitude before centering) and ``size`` (terms per entry) set the rounding
    tolerance, see :func:`kppca._linalg.rank_tolerance`.

    Raises
    ------
    ValueError
        ``A`` is not PSD, numerically zero (rank 0), or ``s`` exceeds its numerical rank.
    """
    m = A.shape[0]
    n_terms = size or m
    if not prefer_partial(m, s):
        spec = full_spectrum(A, what=what, max_rank=max_rank, scale=scale, size=n_terms)
    else:
        rng = np.random.default_rng(0) if random_state is None else random_state
        # Only whether s components exist is asked: the count among the top s is enough.
        spec = partial_spectrum(A, s, rank=lambda tol: s, random_state=rng, what=what, scale=scale, size=n_terms)
    return _checked(spec, s, what)
