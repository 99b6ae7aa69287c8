"""From centered kernel vectors (which sum to zero, so a smoother would divide by zero) back to raw weights."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import torch

from .._linalg import rounding_tolerance
from .._param_validation import Interval, Real, StrOptions, check_scalar
from .._validation import ArrayLike, as_tensor
from ..kernels import KernelCenterer
from ._common import as_batch, batch_output

__all__ = ["uncenter_kernel_vectors", "ROW_MEAN_ESTIMATES", "ESTIMATE_CONSTRAINTS"]

#: Named estimates of the unknown row mean ``s`` accepted by :func:`uncenter_kernel_vectors`.
ROW_MEAN_ESTIMATES = ("mean", "zero-min", "span")

#: What ``estimate`` may be: a named estimate, one finite row mean, or one row mean per row.
ESTIMATE_CONSTRAINTS = [StrOptions(ROW_MEAN_ESTIMATES), Interval(Real, None, None), np.ndarray, torch.Tensor, list]


def _span_offset(
    Kc_rows: torch.Tensor, c: torch.Tensor, gram_centered: ArrayLike | None, rcond: float | None
) -> torch.Tensor:
    """(M,) ``<m, psi - m> = c^T K_c^+ k_c`` for ``psi - m`` in ``span{phi_i - m}``."""
    if gram_centered is None:
        raise ValueError(
            "estimate='span' needs gram_centered, the centered training Gram matrix K_c (N, N)."
        )
    Kc = as_tensor(gram_centered, "gram_centered", dtype=Kc_rows.dtype, device=Kc_rows.device)
    N = c.shape[0]
    if Kc.shape != (N, N):
        raise ValueError(f"gram_centered must have shape ({N}, {N}) like the training set, got {tuple(Kc.shape)}.")
    lam, E = torch.linalg.eigh(0.5 * (Kc + Kc.T))
    if rcond is None:
        rcond = rounding_tolerance(Kc.dtype, N, 1.0)
    # Pseudo-inverse on the numerical range only: the tiny eigenvalues are rounding noise.
    keep = lam > rcond * lam.abs().max()
    E, lam = E[:, keep], lam[keep]
    beta = E @ ((E.T @ c) / lam)  # K_c^+ c, with c = Phi_c^T m
    return Kc_rows @ beta


def uncenter_kernel_vectors(
    K_c_rows: ArrayLike,
    centerer: KernelCenterer,
    estimate: str | float | ArrayLike = "mean",
    *,
    gram_centered: ArrayLike | None = None,
    rcond: float | None = None,
    return_row_means: bool = False,
) -> Any:
    """Turn centered kernel vectors into raw kernel weights for a kernel smoother.

    ``k = k_c + K 1 / N + (s - 1^T K 1 / N^2) 1``, where the row mean ``s = <m, psi>`` is lost by centering:
    a larger ``s`` pulls a smoother pre-image toward the training mean, a smaller one toward its neighbours.

    Parameters
    ----------
    K_c_rows : array-like or Tensor of shape (M, N) or (N,)
        Centered kernel vectors against the N training points (each row sums to 0).
    centerer : KernelCenterer
        Fitted on the training Gram matrix; with ``center=False`` the vectors are returned as a copy.
    estimate : {"mean", "zero-min", "span"}, float or array-like of shape (M,), default "mean"
        How ``s`` is chosen. ``"mean"``: the training grand mean (as similar to the training set as a
        typical training point; some weights may come out negative). ``"zero-min"``: the smallest
        weight of each row is zero (natural for an RBF kernel, whose far points have ``k ~ 0``).
        ``"span"``: exact for points in ``m + span{phi_i - m}``, where the dual model lives (one
        ``N x N`` eigendecomposition per call; needs ``gram_centered``). A number or one per row:
        ``s`` itself, e.g. the true row means ``K_x.mean(1)``, which make un-centering exact.
    gram_centered : array-like or Tensor of shape (N, N), optional
        Centered training Gram matrix ``K_c``; required by ``estimate="span"`` only.
    rcond : float, optional
        ``"span"`` only: relative cut-off of the eigenvalues of ``K_c`` (default ``N`` machine epsilons).
    return_row_means : bool, default False
        Also return the ``s`` used, shape (M,).

    Returns
    -------
    K_rows : ndarray or Tensor of shape (M, N) (or (N,) for 1-D input)
        Raw kernel weights, same type (numpy/torch) and device as ``K_c_rows``.
    row_means : ndarray or Tensor of shape (M,) (or scalar), only if ``return_row_means``
    """
    Kc_rows, single, numpy_out = as_batch(K_c_rows, "K_c_rows")
    if not isinstance(centerer, KernelCenterer) or not hasattr(centerer, "column_means_"):
        raise ValueError(
            "centerer must be a KernelCenterer fitted on the training Gram matrix "
            "(it needs column_means_ and grand_mean_)."
        )
    colmean = centerer.column_means_.to(dtype=Kc_rows.dtype, device=Kc_rows.device)
    N = colmean.shape[0]
    if Kc_rows.shape[1] != N:
        raise ValueError(
            f"K_c_rows has {Kc_rows.shape[1]} column(s) but the centerer was fitted on {N} training points."
        )
    M = Kc_rows.shape[0]
    gm = centerer.grand_mean_.to(dtype=Kc_rows.dtype, device=Kc_rows.device)

    if not centerer.center:
        K_rows, s = Kc_rows.clone(), Kc_rows.mean(1)
    else:
        if isinstance(estimate, (str, numbers.Real)):  # arrays are checked by as_tensor below
            check_scalar(estimate, "estimate", ESTIMATE_CONSTRAINTS)
        if isinstance(estimate, str):
            if estimate == "mean":
                s = gm.expand(M).clone()
            elif estimate == "zero-min":
                # with s = grand mean the weights are k_c + K 1/N; shift so that the smallest is 0
                s = gm - (Kc_rows + colmean[None, :]).min(1).values
            else:
                s = gm + _span_offset(Kc_rows, colmean - gm, gram_centered, rcond)
        elif isinstance(estimate, numbers.Real):
            s = torch.full((M,), float(estimate), dtype=Kc_rows.dtype, device=Kc_rows.device)
        else:
            s = as_tensor(estimate, "estimate", ndim=(0, 1), dtype=Kc_rows.dtype, device=Kc_rows.device,
                          min_samples=0)
            s = s.reshape(-1)
            if s.shape[0] != M:
                raise ValueError(
                    f"estimate given as row means must have one value per row of K_c_rows ({M}), got {s.shape[0]}."
                )
        K_rows = centerer.uncenter(Kc_rows, s)

    return batch_output(K_rows, single=single, numpy_out=numpy_out, extra=s if return_row_means else None)
