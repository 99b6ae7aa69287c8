"""What the shallow RKMs share: the fitted kernel, the one kernel PCA solve and its rank messages, and the
refusal of a kernel that is not PSD."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from .._linalg import Spectrum, prefer_partial, rounding_tolerance, solve_spectrum
from .._validation import precision_advice
from ..kernels import CenteredGram, Kernel
from ..kernels.standard import as_kernel

__all__ = ["check_psd_kernel", "check_rank", "resolve_kernel", "top_spectrum"]


def resolve_kernel(kernel: Any, X: torch.Tensor) -> Kernel:
    """A copy of ``kernel``, its data-derived widths resolved on ``X`` (N, D); the parameter is untouched."""
    return copy.deepcopy(as_kernel(kernel).resolve(X))


def check_psd_kernel(G: CenteredGram) -> None:
    """Refuse (``ValueError``) a kernel whose raw training Gram matrix is not PSD, which centering can hide
    (``-||x - y||``): the raw entries are checked by row blocks for ``K_ii >= 0`` and ``K_ij^2 <= K_ii K_jj``.
    """
    Kc, N = G.matrix, G.n_samples
    cm = G.centerer.column_means_ if G.center else Kc.new_zeros(N)
    g = G.centerer.grand_mean_ if G.center else Kc.new_zeros(())
    tol = rounding_tolerance(Kc.dtype, N, G.scale)
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
    """Refuse ``s`` components when fewer than ``s`` of ``values`` exceed ``tolerance``; ``found_by`` names an
    iterative solver."""
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


def top_spectrum(
    A: torch.Tensor | CenteredGram,
    s: int,
    *,
    what: str = "",
    scale: float = 0.0,
    size: int | None = None,
    max_rank: int | None = None,
    random_state: np.random.Generator | None = None,
) -> Spectrum:
    """The top ``s`` eigenpairs of a ``CenteredGram`` or a symmetric PSD matrix ``A`` (m, m), refusing ``s``
    above the numerical rank; for a matrix, ``what``, ``scale`` (magnitude before centering), ``size`` (terms
    per entry) and ``max_rank`` set the messages and the rounding tolerance.
    """
    m = A.n_samples if isinstance(A, CenteredGram) else A.shape[0]
    solver = "partial" if prefer_partial(m, s) else "dense"
    if isinstance(A, CenteredGram):
        spec, what = A.spectrum(solver, s, random_state=random_state), f"centered {A.what}"
    else:
        # Only whether s components exist is asked: the count among the top s is enough (rank=s for Lanczos).
        spec = solve_spectrum(A, solver, s, what=what, max_rank=max_rank, rank=lambda tol: s, scale=scale,
                              size=size or m, random_state=random_state)
    check_rank(spec.values, spec.tolerance, s, what)
    return Spectrum(spec.values[:s].clone(), spec.vectors[:, :s].clone(), spec.trace, spec.rank,
                    spec.complete, spec.tolerance)
