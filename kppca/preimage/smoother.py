"""Pre-images as weighted means of training targets (the kernel smoother, eq. 19 of the dual PPCA paper), the way
from centered kernel vectors (which sum to zero) back to raw weights, and the nearest neighbours in feature space."""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
import torch

from .._linalg import rounding_tolerance
from .._param_validation import Interval, Real, StrOptions, check_scalar
from .._validation import ArrayLike, as_tensor, is_numpy_like, to_output
from ..kernels import Kernel, KernelCenterer, as_kernel
from ._common import as_batch, batch_output, check_n_neighbors, dtype_device, format_rows, weights_and_targets

__all__ = [
    "kernel_smoother", "KernelSmoother", "uncenter_kernel_vectors", "ROW_MEAN_ESTIMATES", "ESTIMATE_CONSTRAINTS",
    "feature_space_sq_distances", "knn_preimage",
]

#: Named estimates of the unknown row mean ``s`` accepted by :func:`uncenter_kernel_vectors`.
ROW_MEAN_ESTIMATES = ("mean", "zero-min", "span")

#: What ``estimate`` may be: a named estimate, one finite row mean, or one row mean per row.
ESTIMATE_CONSTRAINTS = [StrOptions(ROW_MEAN_ESTIMATES), Interval(Real, None, None), np.ndarray, torch.Tensor, list]

# Rows whose |sum w| is this small relative to sum |w| look like centered kernel vectors.
_CENTERED_RTOL = 1e-8


def _smooth(
    W: torch.Tensor,
    T: torch.Tensor,
    n_neighbors: int | None,
    clip_negative: bool,
    epsilon: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Weighted means (M, D) of the rows of ``T`` after ``clip_negative`` then ``n_neighbors``, and ``bad`` (M,):
    rows whose denominator is not clearly positive, output zero (the caller raises or falls back)."""
    if clip_negative:
        W = W.clamp(min=0.0)  # out of place: W is the caller's
    if n_neighbors is not None and n_neighbors < W.shape[1]:
        vals, idx = torch.topk(W, n_neighbors, dim=1)
        return _smooth_selected(vals, idx, T, False, epsilon, W.shape[1])
    return _normalized(W @ T, W, epsilon, W.shape[1])


def _smooth_selected(Wk: torch.Tensor, idx: torch.Tensor, T: torch.Tensor, clip_negative: bool, epsilon: float,
                     n_terms: int) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_smooth` of weights that are zero outside ``idx``: ``Wk`` (M, k) at the columns ``idx`` (M, k).

    The weighted sums gather the k rows of ``T`` each (in blocks of rows, at most ``M D`` values at once)
    instead of a product with an (M, N) matrix of mostly zeros (at N = 60,000, 2,000 samples: 1.2 s): the
    same nonzero terms, summed in another order. ``n_terms``: N, whose sum's rounding bounds what counts as a
    zero total, as in the dense sum.
    """
    if clip_negative:
        Wk = Wk.clamp(min=0.0)
    M, k = Wk.shape
    sums = T.new_empty(M, T.shape[1])
    step = max(1, M // k)
    for i in range(0, M, step):
        sums[i : i + step] = torch.bmm(Wk[i : i + step, None, :], T[idx[i : i + step]])[:, 0]
    return _normalized(sums, Wk, epsilon, n_terms)


def _normalized(sums: torch.Tensor, W: torch.Tensor, epsilon: float, n_terms: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``sums / (W.sum(1) + epsilon)`` per row, and the rows ``bad`` whose denominator is not clearly positive."""
    denom = W.sum(1) + epsilon
    # A sum of N terms errs by at most ~N eps sum|w|: a total below that is numerically zero.
    tiny = rounding_tolerance(W.dtype, n_terms, W.abs().sum(1))
    bad = ~(denom > tiny)
    out = sums / torch.where(bad, torch.ones_like(denom), denom)[:, None]
    out = torch.where(bad[:, None], torch.zeros_like(out), out)
    return out, bad


def kernel_smoother(
    weights: ArrayLike,
    targets: ArrayLike,
    *,
    n_neighbors: int | None = None,
    clip_negative: bool = True,
    epsilon: float = 0.0,
) -> Any:
    """Weighted mean ``sum_i w_i t_i / (sum_i w_i + epsilon)`` of training targets, per row ``w`` of ``weights``.

    Parameters
    ----------
    weights : array-like or Tensor of shape (M, N) or (N,)
        Raw kernel weights ``k(x_i, x*)`` of M queries against N training points (centered kernel vectors:
        :func:`uncenter_kernel_vectors` first).
    targets : array-like or Tensor of shape (N, D) or (N,)
        What is averaged: training inputs for a pre-image, latent codes for an RKM code.
    n_neighbors : int or None, default None
        Keep only the ``n_neighbors`` largest weights of each row (after clipping); None keeps all.
    clip_negative : bool, default True
        Zero negative weights first (they come from estimation, and would extrapolate outside the hull).
    epsilon : float, default 0.0
        Non-negative constant added to each denominator: keeps rows of little weight finite, shrunk toward 0.

    Returns
    -------
    ndarray or Tensor of shape (M, D)
        ``(D,)`` for 1-D ``weights``, ``(M,)`` for 1-D ``targets``; numpy unless ``weights`` is a tensor
        (then on its device, float32 for a float32 tensor, otherwise float64).

    Raises
    ------
    ValueError
        Bad input, or rows whose total weight is (numerically) zero or negative after the options.

    Warns
    -----
    UserWarning
        Rows that sum to ~0 with signed entries, like centered kernel vectors, but have a defined mean.

    Examples
    --------
    >>> import numpy as np
    >>> kernel_smoother(np.array([1.0, 3.0]), np.array([[0.0], [4.0]]))
    array([3.])
    """
    W, T, single, vector_targets, numpy_out = weights_and_targets(weights, targets, "weights")
    n_neighbors = check_n_neighbors(n_neighbors, T.shape[0], allow_none=True)
    epsilon = float(check_scalar(epsilon, "epsilon", [Interval(Real, 0, None, closed="left")]))
    clip_negative = bool(clip_negative)

    out, bad = _smooth(W, T, n_neighbors, clip_negative, epsilon)
    # Signed entries that cancel: the signature of a centered kernel vector.
    scale = W.abs().sum(1)
    centered = (W.sum(1).abs() <= _CENTERED_RTOL * scale) & (scale > 0)
    if bool(bad.any()):
        msg = [f"the total weight of row(s) {format_rows(bad.nonzero())} of weights is zero or negative after the "
               f"options (n_neighbors={n_neighbors}, clip_negative={clip_negative}, epsilon={epsilon}), "
               "so the weighted mean is undefined."]
        if bool((centered & bad).any()):
            msg.append("These rows sum to ~0 like centered kernel vectors: un-center them first "
                       "(kppca.preimage.uncenter_kernel_vectors).")
        hints = []
        if not clip_negative:
            hints.append("clip_negative=True")
        if n_neighbors is not None:
            hints.append("a larger n_neighbors (None keeps all weights)")
        hints.append("epsilon > 0 (shrinks those rows toward 0)")
        msg.append("Options that help: " + ", ".join(hints) + ".")
        raise ValueError(" ".join(msg))
    if bool(centered.any()):
        warnings.warn(
            f"row(s) {format_rows(centered.nonzero())} of weights sum to ~0 like centered kernel vectors; "
            "the smoother expects raw kernel weights (see kppca.preimage.uncenter_kernel_vectors).",
            UserWarning,
            stacklevel=2,
        )
    return batch_output(out[:, 0] if vector_targets else out, single=single, numpy_out=numpy_out)


class KernelSmoother:
    """Kernel smoother with its kernel and training set (estimator form of :func:`kernel_smoother`).

    Parameters
    ----------
    kernel : Kernel, callable or str
        The smoothing kernel, with non-negative values (e.g. ``kppca.kernels.RBF(bandwidth)``).
    n_neighbors, clip_negative, epsilon
        As in :func:`kernel_smoother`.

    Attributes
    ----------
    X_fit_ : Tensor of shape (N, D_in)
    targets_ : Tensor of shape (N, D) or (N,)
    kernel_ : Kernel
        ``kernel`` with a data-derived width resolved on ``X_fit_``.
    """

    def __init__(
        self,
        kernel: Kernel | Any,
        *,
        n_neighbors: int | None = None,
        clip_negative: bool = True,
        epsilon: float = 0.0,
    ):
        self.kernel = as_kernel(kernel)
        self.n_neighbors = n_neighbors
        self.clip_negative = clip_negative
        self.epsilon = epsilon

    def fit(self, X: ArrayLike, targets: ArrayLike | None = None) -> "KernelSmoother":
        """Store the training inputs ``X`` (N, D_in) and targets (N, D); targets default to ``X``."""
        dtype, device = dtype_device(X, targets)
        self.X_fit_ = as_tensor(X, "X", dtype=dtype, device=device)
        src = X if targets is None else targets
        self.targets_ = as_tensor(src, "targets", ndim=(1, 2), dtype=self.X_fit_.dtype, device=self.X_fit_.device)
        if self.targets_.shape[0] != self.X_fit_.shape[0]:
            raise ValueError(
                f"X has {self.X_fit_.shape[0]} rows but targets has {self.targets_.shape[0]}; they must match."
            )
        check_n_neighbors(self.n_neighbors, self.X_fit_.shape[0], allow_none=True)
        check_scalar(self.epsilon, "epsilon", [Interval(Real, 0, None, closed="left")])
        self.kernel_ = self.kernel.resolve(self.X_fit_)  # a data-derived width (RBF()) from X, once
        return self

    def predict(self, X_new: ArrayLike) -> Any:
        """Smoothed targets of the rows of ``X_new`` (M, D_in); returns (M, D), type of ``X_new``."""
        if not hasattr(self, "X_fit_"):
            raise ValueError("this KernelSmoother is not fitted yet; call fit(X, targets) before predict.")
        numpy_out = is_numpy_like(X_new)
        Xn = as_tensor(X_new, "X_new", dtype=self.X_fit_.dtype, device=self.X_fit_.device)
        if Xn.shape[1] != self.X_fit_.shape[1]:
            raise ValueError(f"X_new has {Xn.shape[1]} features but the smoother was fitted on {self.X_fit_.shape[1]}.")
        W = self.kernel_.gram(Xn, self.X_fit_)
        out = kernel_smoother(
            W, self.targets_, n_neighbors=self.n_neighbors, clip_negative=self.clip_negative, epsilon=self.epsilon
        )
        return to_output(out, numpy_out)


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


def feature_space_sq_distances(
    K_c_rows: ArrayLike,
    gram_diag_centered: ArrayLike,
    sq_norms: ArrayLike | None = None,
) -> Any:
    """Squared feature-space distances ``|psi_j - phi(x_i)|^2 = |psi_j - m|^2 - 2 k_c[j, i] + (K_c)_ii``.

    Parameters
    ----------
    K_c_rows : array-like or Tensor of shape (M, N) or (N,)
        Centered kernel vectors ``k_c(psi_j)`` against the N training points.
    gram_diag_centered : array-like or Tensor of shape (N,)
        Diagonal of the centered training Gram matrix, ``(K_c)_ii = |phi(x_i) - m|^2``.
    sq_norms : array-like or Tensor of shape (M,) or float, optional
        ``|psi_j - m|^2`` (``alpha^T k_c`` for ``psi - m = Phi_c alpha``). Omitted, each row is shifted by
        an unknown constant: the ranking of neighbours is kept, distance weighting is not possible.

    Returns
    -------
    ndarray or Tensor of shape (M, N) (or (N,) for 1-D input)
        Same type and device as ``K_c_rows``; true distances are clipped at 0 (rounding).
    """
    Kc, single, numpy_out = as_batch(K_c_rows, "K_c_rows", gram_diag_centered)
    diag = as_tensor(gram_diag_centered, "gram_diag_centered", ndim=1, dtype=Kc.dtype, device=Kc.device)
    if diag.shape[0] != Kc.shape[1]:
        raise ValueError(
            f"gram_diag_centered has {diag.shape[0]} entries but K_c_rows has {Kc.shape[1]} columns; they must match."
        )
    D2 = diag[None, :] - 2.0 * Kc
    if sq_norms is not None:
        sn = as_tensor(sq_norms, "sq_norms", ndim=(0, 1), dtype=Kc.dtype, device=Kc.device, min_samples=0)
        sn = sn.reshape(-1)
        if sn.shape[0] not in (1, Kc.shape[0]):
            raise ValueError(f"sq_norms must have one value per row of K_c_rows ({Kc.shape[0]}), got {sn.shape[0]}.")
        if bool((sn < 0).any()):
            raise ValueError("sq_norms are squared norms and must be >= 0.")
        D2 = (D2 + sn[:, None]).clamp_(min=0.0)
    return batch_output(D2, single=single, numpy_out=numpy_out)


def knn_preimage(
    sq_distances: ArrayLike,
    targets: ArrayLike,
    *,
    n_neighbors: int = 5,
    weighting: str = "uniform",
    return_indices: bool = False,
) -> Any:
    """Pre-image as the mean of the targets of the nearest training points in feature space.

    Parameters
    ----------
    sq_distances : array-like or Tensor of shape (M, N) or (N,)
        Squared feature-space distances of M queries to N training points, up to a per-row shift if uniform.
    targets : array-like or Tensor of shape (N, D) or (N,)
        Training inputs (or latent codes) to average.
    n_neighbors : int, default 5
        Number of neighbours, ``1 <= n_neighbors <= N`` (``1``: the nearest training target itself).
    weighting : {"uniform", "distance"}, default "uniform"
        ``"distance"`` weighs neighbours by ``1 / d`` (a neighbour at distance 0 takes all the weight);
        it needs true distances (``sq_norms`` given to :func:`feature_space_sq_distances`).
    return_indices : bool, default False
        Also return the neighbour indices, shape (M, n_neighbors), nearest first.

    Returns
    -------
    preimages : ndarray or Tensor of shape (M, D)
        ``(D,)`` for 1-D ``sq_distances``, ``(M,)`` for 1-D ``targets``; type and device of ``sq_distances``.
    indices : ndarray or Tensor of shape (M, n_neighbors), only if ``return_indices``
    """
    D2, T, single, vector_targets, numpy_out = weights_and_targets(sq_distances, targets, "sq_distances")
    k = check_n_neighbors(n_neighbors, T.shape[0], allow_none=False)
    if weighting not in ("uniform", "distance"):
        raise ValueError(f"weighting={weighting!r} is unknown; use 'uniform' or 'distance'.")

    d2, idx = torch.topk(D2, k, dim=1, largest=False)  # (M, k), nearest first
    neigh = T[idx]  # (M, k, D): gathers only k rows per query
    if weighting == "uniform":
        out = neigh.mean(1)
    else:
        # Tolerate rounding below zero, refuse genuinely shifted (relative) distances.
        tol = 1e3 * torch.finfo(D2.dtype).eps * D2.abs().amax(1, keepdim=True)
        neg = (d2 < -tol).any(1)
        if bool(neg.any()):
            raise ValueError(
                f"sq_distances has negative entries in row(s) {format_rows(neg.nonzero())}: weighting='distance' "
                "needs true squared distances (pass sq_norms to feature_space_sq_distances) or use 'uniform'."
            )
        d = d2.clamp(min=0.0).sqrt()
        exact = d <= tol.sqrt()
        has_exact = exact.any(1, keepdim=True)
        # 1/d weights; a neighbour at distance 0 gets all the weight (avoids inf/inf).
        w = torch.where(has_exact, exact.to(d.dtype), 1.0 / torch.where(exact, torch.ones_like(d), d))
        out = (w[:, :, None] * neigh).sum(1) / w.sum(1, keepdim=True)
    out = out[:, 0] if vector_targets else out
    return batch_output(out, single=single, numpy_out=numpy_out, extra=idx if return_indices else None)
