"""Kernel PCA and the matrix SVD as RKMs (deep-RKM paper, §3.2-3.3), and what the shallow RKMs share: the fitted
kernel, the one kernel PCA solve with its rank messages, and the refusal of a kernel that is not PSD."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch
from sklearn.base import ClassNamePrefixFeaturesOutMixin

from .._linalg.threads import compute_section
from .._linalg import Spectrum, eigh_descending, prefer_partial, rank_tolerance, rounding_tolerance, solve_spectrum
from .._param_validation import Integral, Interval, Real, check_scalar, fit_context
from .._validation import ArrayLike, as_tensor, is_numpy_like, precision_advice, resolve_dtype
from ..base import DEVICE_CONSTRAINTS, KernelEstimator, KernelTransformerMixin
from ..io import register
from ..kernels import CenteredGram, Kernel, as_kernel
from ._state import KernelPCARKMState

__all__ = [
    "KernelPCARKM", "SVDResult", "matrix_svd_rkm", "check_psd_kernel", "check_rank", "resolve_kernel", "top_spectrum",
]


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
    per entry) and ``max_rank`` set the messages and the rounding tolerance."""
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


@register(name="kppca.KernelPCARKM")
class KernelPCARKM(ClassNamePrefixFeaturesOutMixin, KernelTransformerMixin, KernelEstimator):
    """Kernel PCA in RKM form: ``(1/eta) K_c H = H Lam``, ``H^T H = I``.

    Parameters
    ----------
    n_components : int >= 1, default 2
        Number of hidden features ``s`` (at most the rank of the centred Gram matrix).
    kernel : Kernel, str, callable or None, default "rbf"
        The default ``"rbf"`` takes its bandwidth from the data (see :mod:`kppca.kernels.bandwidth`).
    eta : float > 0, default 1.0
        Scale of the eigenvalues: ``lambda_k = (eigenvalue k of K_c) / eta``.
    center : bool, default True
        Centre the Gram matrix in feature space (new points with the training means).
    dtype, device

    Attributes
    ----------
    hidden_features_ : Tensor of shape (N, s)
        ``H``, orthonormal columns.
    eigenvalues_ : Tensor of shape (s,)
        ``lambda_k``, descending.
    X_fit_ : Tensor of shape (N, D)
    kernel_ : Kernel
    centerer_ : KernelCenterer
    """

    _state_type = KernelPCARKMState

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "kernel": [Kernel, str, callable, None],
        "eta": [Interval(Real, 0, None, closed="neither")],
        "center": ["boolean"],
        **DEVICE_CONSTRAINTS,
    }

    def __init__(
        self,
        n_components: int = 2,
        *,
        kernel: Kernel | Callable | str | None = "rbf",
        eta: float = 1.0,
        center: bool = True,
        dtype: Any = None,
        device: Any = None,
    ):
        self._store_params(locals())

    @fit_context
    @compute_section
    def fit(self, X: ArrayLike, y: Any = None) -> KernelPCARKM:
        """Solve the KPCA eigenvalue problem on ``X`` (N, D); ``y`` is ignored. Returns ``self``."""
        Xt, _ = self._validate_fit_input(X)
        self.kernel_ = resolve_kernel(self.kernel, Xt)
        G = CenteredGram(self.kernel_, Xt, center=self.center, what="Gram matrix of `kernel` on X")
        s = int(self.n_components)
        spec = top_spectrum(G, s)
        self.centerer_ = G.centerer
        G.release()  # transform needs the centering statistics and H only
        self.hidden_features_ = spec.vectors
        self.eigenvalues_ = spec.values / float(self.eta)
        self.X_fit_ = Xt
        return self

    @property
    def _n_features_out(self) -> int:
        return self.n_components_

    def transform(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Dual scores ``e = (1/eta) sum_j h_j k_c(x_j, x)`` (M, s) of new points (``H Lam`` on the training points)."""
        Xt = self._validate_new_input(X, method="transform")
        Kx = self.centerer_.transform(self.kernel_.gram(Xt, self.X_fit_))
        return self._to_output(Kx @ self.hidden_features_ / float(self.eta), X)


class SVDResult(NamedTuple):
    """Singular triplets: ``values`` (k,) descending and positive; ``left`` (m, k), ``right`` (n, k) orthonormal."""

    values: torch.Tensor
    left: torch.Tensor
    right: torch.Tensor


def matrix_svd_rkm(A: ArrayLike, n_components: int | None = None, *, dtype: Any = None) -> SVDResult:
    """Top singular triplets of ``A`` (m, n) from the RKM system ``[[0, A], [A^T, 0]] v = lambda v``.

    The column signs follow the package convention on the eigenvector ``[u_k; v_k] / sqrt 2``.

    Parameters
    ----------
    A : array-like or Tensor of shape (m, n)
    n_components : int or None
        Number of triplets ``k`` (default ``min(m, n)``); fewer when fewer singular values exceed rounding.
    dtype : optional, float64 by default

    Returns
    -------
    SVDResult
        numpy arrays for non-tensor input.
    """
    At = as_tensor(A, "A", dtype=resolve_dtype(dtype, like=A), device=A.device if isinstance(A, torch.Tensor) else None)
    m, n = At.shape
    k = min(m, n) if n_components is None else int(check_scalar(n_components, "n_components", [Interval(Integral, 1, None, closed="left")]))
    if k > min(m, n):
        raise ValueError(f"n_components={k} exceeds min(m, n) = {min(m, n)} for A of shape {(m, n)}.")
    B = At.new_zeros(m + n, m + n)
    B[:m, m:] = At
    B[m:, :m] = At.T
    values, vectors = eigh_descending(B)
    tol = rank_tolerance(float(values[0]), m + n, At.dtype)
    k = min(k, int((values > tol).sum()))
    V = vectors[:, :k] * (2.0 ** 0.5)
    out = SVDResult(values[:k], V[:m], V[m:])
    if is_numpy_like(A):
        return SVDResult(*(t.cpu().numpy() for t in out))
    return out
