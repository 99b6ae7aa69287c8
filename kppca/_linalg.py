"""Symmetric eigensolvers, numerical rank, square-root factors and the spectrum of a PSD problem.

The models only need the top ``q`` eigenpairs of a PSD matrix (``K_c`` in the
dual, the scatter matrix in the primal), its trace and its rank. ``dense`` uses
a full ``torch.linalg.eigh``; ``partial`` uses Lanczos (ARPACK through
``scipy.sparse.linalg.eigsh``) with the matrix products done in torch on the
matrix's own device, so the cost is ``O(N^2 q)`` per sweep instead of ``O(N^3)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.linalg
import torch
from scipy.sparse.linalg import LinearOperator, eigsh

#: Memory of one block of kernel values (rows x training points) when ``batch_size=None``.
BLOCK_BYTES = 128 * 2**20
#: Fewest rows of a default block (small problems are done in one or a few calls).
MIN_BLOCK_ROWS = 256


def block_rows(batch_size: int | None, n_columns: int, dtype: torch.dtype) -> int:
    """Rows per block of an ``(M, n_columns)`` computation done in row blocks.

    ``batch_size`` (an int) wins; None sizes blocks to :data:`BLOCK_BYTES`, so the
    memory of a block does not grow with ``M``, and to at most ``n_columns / 8`` rows
    (but at least :data:`MIN_BLOCK_ROWS`), so that next to an ``n_columns x n_columns``
    matrix (a Gram matrix against ``N`` training points) a block and its temporaries
    stay a small fraction of it.
    """
    if batch_size is not None:
        return int(batch_size)
    itemsize = torch.tensor([], dtype=dtype).element_size()
    by_bytes = BLOCK_BYTES // max(1, n_columns * itemsize)
    return max(1, min(by_bytes, max(MIN_BLOCK_ROWS, -(-n_columns // 8))))


def map_row_blocks(fn: Callable[[torch.Tensor], torch.Tensor], X: torch.Tensor, rows: int) -> torch.Tensor:
    """``fn`` applied to row blocks of ``X`` (``rows`` at a time), results stacked along rows.

    ``fn`` maps ``(m, ...)`` to ``(m, ...)``; an empty ``X`` gives ``fn(X)`` (an empty result
    of the right width).
    """
    if X.shape[0] <= rows:
        return fn(X)
    return torch.cat([fn(X[i : i + rows]) for i in range(0, X.shape[0], rows)])


#: Error of a centered Gram entry ``K_ij - m_i - m_j + g`` in units of ``eps * max|K|``, to first
#: order: half an ulp from evaluating ``K_ij``, half an ulp from each of the three centering
#: operations, and about one ulp from each of the two means ``m_i``, ``m_j`` (sums of ``N``
#: numbers of size ``max|K|``): 1/2 + 3/2 + 2 = 4. Kernels whose own evaluation is less accurate
#: than a few ulps of ``max|K|`` are covered only up to this factor.
CENTERING_ROUNDINGS = 4.0


def rank_tolerance(eigen_max: float, size: int, dtype: torch.dtype, scale: float = 0.0) -> float:
    """Absolute threshold below which an eigenvalue of a PSD matrix counts as zero.

    Parameters
    ----------
    eigen_max : float
        Largest eigenvalue of the matrix ``G`` whose rank is counted.
    size : int
        Number of terms summed into each entry of ``G`` (its order ``N`` for a
        Gram matrix; the number of samples for a scatter matrix).
    dtype : torch dtype
        Precision ``G`` was computed in (``eps`` = 2.2e-16 in float64, 1.2e-7 in float32).
    scale : float, default 0.0
        Largest magnitude of the matrix *before centering*: ``max |K_ij|`` of the raw
        Gram matrix (its largest diagonal entry for a PSD kernel), or the largest
        squared uncentered feature norm ``max_i |phi_i|^2`` for a scatter matrix.

    Returns
    -------
    float
        ``size * eps * max(eigen_max, CENTERING_ROUNDINGS * scale)``.

    Notes
    -----
    Two error sources bound the eigenvalues that are indistinguishable from zero:

    * the eigensolver's backward error, ``~ size * eps * ||G|| = size * eps * eigen_max``;
    * the rounding error already in ``G``. A centered entry ``K_ij - m_i - m_j + g`` is a
      difference of numbers of size up to ``scale``, so its error is *absolute*, about
      ``CENTERING_ROUNDINGS * eps * scale`` (see that constant), however small the centered
      entry. The error matrix is structured (the errors of the means ``m_i`` repeat along
      rows and columns, a rank-one pattern), so its 2-norm reaches the bound
      ``||E||_2 <= N max |E_ij|`` rather than the ``sqrt(N)`` of independent errors.
      Measured on linear kernels with offsets 1e1..1e4 (D = 2..64, N = 10..200):
      ``|lam_min| <= 1.5 N eps scale``.

    Data far from the origin (an offset of 1e4 in a linear kernel) make ``scale`` many
    orders of magnitude above ``eigen_max``; a tolerance relative to ``eigen_max`` only
    then calls rounding noise "negative eigenvalues" or "rank".
    """
    return float(size * torch.finfo(dtype).eps * max(eigen_max, CENTERING_ROUNDINGS * scale, 0.0))


def scatter_rounding_scale(raw_scale: float, trace: float, size: int) -> float:
    """The ``scale`` argument of :func:`rank_tolerance` for a scatter ``Phi_c^T Phi_c`` centered *before* the product.

    Centering the features first leaves an absolute error ``Delta`` with
    ``|Delta_ik| <~ 2 eps |phi_ik|`` (the subtraction and the mean), so
    ``||Delta||_F <= 2 eps sqrt(N max_i |phi_i|^2)``; the scatter's error
    ``Phi_c^T Delta + Delta^T Phi_c`` then has 2-norm at most
    ``2 sqrt(lam_1) ||Delta||_F <= 4 eps sqrt(N lam_1 max_i |phi_i|^2)``, with
    ``lam_1 <= trace``. That is ``N eps * CENTERING_ROUNDINGS * sqrt(trace max|phi|^2 / N)``,
    far below the ``N eps max|phi|^2`` of a centered Gram matrix when the data sit far
    from the origin.

    Parameters
    ----------
    raw_scale : float
        ``max_i |phi_i|^2`` (uncentered squared feature norms).
    trace : float
        ``trace(Phi_c^T Phi_c) = sum_i |phi_i - m|^2``.
    size : int
        Number of samples ``N``.

    Returns
    -------
    float
    """
    return math.sqrt(max(trace, 0.0) * raw_scale / max(size, 1)) * (4.0 / CENTERING_ROUNDINGS)


def feature_rank(values: torch.Tensor, size: int, raw_scale: float, trace: float, max_rank: int) -> int:
    """Rank of a scatter (or centered feature Gram) matrix from its float64 eigenvalues.

    Parameters
    ----------
    values : Tensor of shape (k,)
        Eigenvalues, descending, computed in float64 from features centered *before*
        the product.
    size : int
        Number of samples ``N``.
    raw_scale : float
        ``max_i |phi_i|^2`` of the uncentered features.
    trace : float
        ``sum_i |phi_i - m|^2``.
    max_rank : int
        Structural bound, ``min(d, N - center)``.

    Returns
    -------
    int
        Eigenvalues above ``rank_tolerance(lam_1, N, float64, scatter_rounding_scale(...))``,
        capped at ``max_rank``.
    """
    if values.numel() == 0:
        return 0
    tol = rank_tolerance(float(values[0]), size, torch.float64, scatter_rounding_scale(raw_scale, trace, size))
    return min(int((values > tol).sum()), max_rank)


def centered_scatter(Phi: torch.Tensor, center: bool) -> tuple[torch.Tensor, torch.Tensor, float]:
    """float64 statistics of the rows of ``Phi`` (n >= 1, d), by row blocks of bounded memory.

    Returns
    -------
    mean : Tensor of shape (d,)
        The row mean (zeros when ``center`` is False).
    scatter : Tensor of shape (d, d)
        ``sum_i (phi_i - mean)(phi_i - mean)^T``, centered *before* the product.
    max_sq_norm : float
        ``max_i |phi_i|^2`` of the uncentered rows.

    No float64 copy of a float32 ``Phi`` is made: each block is converted on its own.
    """
    f64 = torch.float64
    n, d = Phi.shape
    mean = Phi.sum(0, dtype=f64) / n if center else Phi.new_zeros(d, dtype=f64)
    scatter = Phi.new_zeros((d, d), dtype=f64)
    max_sq = 0.0
    rows = block_rows(None, max(d, 1), f64)
    for i in range(0, n, rows):
        P = Phi[i : i + rows].to(f64)
        max_sq = max(max_sq, float((P * P).sum(1).max()))
        C = P - mean
        scatter.addmm_(C.T, C)
    return mean, scatter, max_sq


def centered_rows(Phi: torch.Tensor, center: bool) -> tuple[torch.Tensor, torch.Tensor, float]:
    """``(C, mean, max_sq_norm)``: the rows of ``Phi`` (n, d) centered in float64, for ``d > n``.

    One float64 copy the size of ``Phi`` (the ``n x n`` Gram matrix ``C C^T`` then
    carries the spectrum); ``mean`` and ``max_sq_norm`` as in :func:`centered_scatter`.
    """
    # copy=True: ``Phi`` may be the model's own inputs (the linear kernel's features are X itself),
    # and ``.to`` returns the same tensor when it is float64 already; it is centered in place below.
    P = Phi.to(torch.float64, copy=True)
    max_sq = float((P * P).sum(1).max()) if P.shape[0] else 0.0
    mean = P.mean(0) if center else P.new_zeros(P.shape[1])
    return P.sub_(mean), mean, max_sq


def matrix_scale(A: torch.Tensor) -> float:
    """``max |A_ij|`` without allocating ``|A|``; NaN (or inf) when ``A`` has a non-finite entry.

    Parameters
    ----------
    A : Tensor of any shape

    Returns
    -------
    float
    """
    if A.numel() == 0:
        return 0.0
    # amax/amin propagate NaN, so one pass each proves every entry finite (or not).
    return max(float(A.amax()), -float(A.amin()))


def check_gram_scale(scale: float, size: int, dtype: torch.dtype, *, what: str, advice: str) -> float:
    """Validate the pre-centering magnitude ``scale`` of a Gram/scatter matrix built in ``dtype``.

    The models square Gram-scale quantities summed over ``size`` terms (``lam_p^2 / N``
    in the marginal covariance of kernel vectors and its sampling factor, squared norms
    of kernel vectors, feature covariances). All are bounded by ``(size * scale)^2``,
    so requiring that to be finite makes every later step overflow-free; a model that
    fits but returns ``inf``/NaN samples is refused at fit time instead.

    Parameters
    ----------
    scale : float
        From :func:`matrix_scale` (``max |K_ij|``) or the largest squared feature norm.
    size : int
        Number of training points ``N``.
    dtype : torch dtype
    what : str
        The matrix, for the message (e.g. ``"Gram matrix of `kernel` on X"``).
    advice : str
        What the user can change (named arguments), appended to the message.

    Returns
    -------
    float
        ``scale``, unchanged.

    Raises
    ------
    ValueError
        When ``scale`` is NaN/inf or ``(size * scale)^2`` exceeds the largest ``dtype`` number.
    """
    finfo = torch.finfo(dtype)
    name = str(dtype).replace("torch.", "")
    if not math.isfinite(scale):
        raise ValueError(f"the {what} has non-finite entries (NaN, or inf beyond the {name} range). {advice}")
    if size * scale >= math.sqrt(finfo.max):
        raise ValueError(
            f"the {what} reaches {scale:.3g}: with N = {size}, squared quantities such as lam^2 / N would "
            f"overflow {name} (max {finfo.max:.3g}). {advice}"
        )
    return scale


def flip_signs(vectors: torch.Tensor) -> torch.Tensor:
    """Deterministic sign convention: the largest-magnitude entry of each column is positive.

    Parameters
    ----------
    vectors : Tensor of shape (n, k)

    Returns
    -------
    Tensor of shape (n, k), the columns multiplied by +-1.
    """
    if vectors.shape[1] == 0:
        return vectors
    idx = vectors.abs().argmax(0)
    signs = torch.sign(vectors[idx, torch.arange(vectors.shape[1], device=vectors.device)])
    signs[signs == 0] = 1
    return vectors * signs


def orthonormalize_columns(V: torch.Tensor) -> torch.Tensor:
    """The orthonormal ``Q`` of ``V = Q R`` with ``diag(R) > 0``: ``V``'s columns made exactly orthonormal.

    ``V = Phi_c^T E diag(lam)^{-1/2}`` (principal directions from the Gram matrix) is
    orthonormal in exact arithmetic, but an eigenvector error ``~ eps lam_1 / gap`` is
    amplified by ``1 / sqrt(lam_p)`` for small ``lam_p``, so those columns lose
    orthogonality (1e-3 seen). A basis used for projections and densities must be
    orthonormal; since ``R`` is triangular, column ``p`` of ``Q`` only mixes columns
    ``1..p`` of ``V``, and the accurate leading directions are unchanged to rounding.

    Parameters
    ----------
    V : Tensor of shape (d, r), ``r <= d``, full column rank

    Returns
    -------
    Tensor of shape (d, r)
    """
    Q, R = torch.linalg.qr(V)
    signs = torch.sign(R.diagonal())
    signs[signs == 0] = 1
    return Q * signs


def eigh_descending(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Full eigendecomposition of a symmetric matrix, eigenvalues in descending order.

    Returns
    -------
    values : Tensor of shape (n,)
    vectors : Tensor of shape (n, n), columns with the :func:`flip_signs` convention.
    """
    values, vectors = torch.linalg.eigh(A)
    return values.flip(0), flip_signs(vectors.flip(1))


def eigh_top(
    A: torch.Tensor, k: int, *, random_state: np.random.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top ``k`` eigenpairs of a symmetric PSD matrix by Lanczos iteration (ARPACK).

    Parameters
    ----------
    A : Tensor of shape (n, n)
    k : int, ``1 <= k < n``
    random_state : numpy Generator, optional
        Draws the starting vector, so results are reproducible.

    Returns
    -------
    values : Tensor of shape (k,), descending
    vectors : Tensor of shape (n, k), with the :func:`flip_signs` convention.
    """
    n = A.shape[0]
    rng = np.random.default_rng(0) if random_state is None else random_state
    v0 = rng.uniform(-1.0, 1.0, n)
    np_dtype = np.float64 if A.dtype == torch.float64 else np.float32
    if A.device.type == "cpu":
        op = A.numpy()  # shares memory; ARPACK only reads it
    else:
        def matvec(x: np.ndarray) -> np.ndarray:
            xt = torch.as_tensor(np.asarray(x, dtype=np_dtype), device=A.device)
            return (A @ xt).cpu().numpy()

        op = LinearOperator((n, n), matvec=matvec, matmat=matvec, dtype=np_dtype)
    values, vectors = eigsh(op, k=k, which="LA", v0=v0.astype(np_dtype), tol=0)
    order = np.argsort(values)[::-1]
    values = torch.as_tensor(values[order].copy(), dtype=A.dtype, device=A.device)
    vectors = torch.as_tensor(vectors[:, order].copy(), dtype=A.dtype, device=A.device)
    return values, flip_signs(vectors)


def pivoted_cholesky(A: torch.Tensor, atol: float | None = None, *, overwrite: bool = False) -> torch.Tensor:
    """Factor ``L`` (n, r) with ``L L^T = A`` for a PSD matrix of numerical rank ``r``.

    Uses LAPACK's pivoted Cholesky (``?pstrf``), which stops at the numerical
    rank instead of failing on singular matrices, so it works for the
    always-singular centered Gram matrix. Runs on the CPU.

    Parameters
    ----------
    A : Tensor of shape (n, n), symmetric PSD
    atol : float, optional
        Stop when every remaining pivot is below ``atol`` (default
        ``n * eps * max(diag(A))``). Pass :func:`rank_tolerance` of the largest
        eigenvalue to count against the same threshold as an eigendecomposition.
    overwrite : bool, default False
        Factor a contiguous CPU ``A`` in its own memory (``A`` is then consumed): the
        peak is ``A`` plus the ``n x r`` result, instead of three ``n x n`` arrays.

    Returns
    -------
    Tensor of shape (n, r) on ``A``'s device.
    """
    n = A.shape[0]
    np_dtype = np.float64 if A.dtype == torch.float64 else np.float32
    in_place = overwrite and A.device.type == "cpu" and A.is_contiguous() and A.dtype in (torch.float32, torch.float64)
    # A row-major symmetric matrix is its own column-major transpose: "upper" on that view leaves
    # the factor L (lower, rows pivoted) in the lower triangle of the row-major array.
    if in_place:
        arr = A.detach().numpy()
    else:  # one host copy: ``.cpu()`` of a device tensor is one already
        arr = A.detach().cpu().numpy().astype(np_dtype, copy=A.device.type == "cpu")
    if atol is None:
        atol = n * np.finfo(arr.dtype).eps * float(np.max(np.diag(arr), initial=0.0))
    pstrf = scipy.linalg.get_lapack_funcs("pstrf", (arr,))
    _, piv, rank, info = pstrf(arr.T, tol=atol, lower=0, overwrite_a=1)
    if info < 0:  # pragma: no cover - argument error inside LAPACK
        raise RuntimeError(f"LAPACK pstrf failed with info={info}")
    L = np.empty((n, rank), dtype=arr.dtype)
    rows = max(1, (1 << 20) // max(1, rank))
    for i in range(0, n, rows):
        block = np.tril(arr[i : i + rows, :rank], k=i)  # entries right of the diagonal are not the factor's
        L[piv[i : i + rows] - 1] = block  # undo the symmetric pivoting: A = P L L^T P^T
    return torch.as_tensor(L, dtype=A.dtype, device=A.device)


def cholesky_in_place(A: torch.Tensor) -> torch.Tensor | None:
    """Lower Cholesky factor of a symmetric PD matrix, written over ``A``; None when it is not PD.

    LAPACK and cuSOLVER work on column-major matrices: a row-major symmetric ``A`` is
    its own column-major transpose ``A.mT``, so factoring ``A.mT`` as ``U^T U`` with
    ``out=`` that same view runs in ``A``'s memory (no second ``n x n`` matrix) and
    leaves ``L = U^T`` in the lower triangle of ``A``. ``A`` is consumed either way.
    Pivots are not checked against a tolerance: a factorisation that completes
    reproduces ``A`` to its backward error.

    Parameters
    ----------
    A : Tensor of shape (n, n), contiguous, symmetric

    Returns
    -------
    Tensor of shape (n, n) or None
        ``L`` (lower triangular, ``L L^T = A``), normally sharing ``A``'s memory.
    """
    view = A.mT
    info = torch.empty((), dtype=torch.int32, device=A.device)
    U, info = torch.linalg.cholesky_ex(view, upper=True, out=(view, info))
    if int(info) != 0:
        return None
    return U.mT.tril_()


def cholesky_solve(L: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``A^{-1} B`` from the lower Cholesky factor ``L`` of ``A`` (n, n), ``B`` (n, k).

    Two triangular solves: unlike ``torch.cholesky_solve``, which copies a row-major
    factor into LAPACK's layout, they read ``L`` where it is (no second ``n x n`` matrix).
    """
    return torch.linalg.solve_triangular(L.mT, torch.linalg.solve_triangular(L, B, upper=False), upper=True)


def cholesky_or_none(A: torch.Tensor, atol: float | None = None) -> torch.Tensor | None:
    """Lower Cholesky factor of ``A`` when it is numerically positive definite, else None.

    A factorisation can succeed with pivots ``L_ii^2`` at rounding level, which
    hides a numerically singular matrix: pivots must exceed ``atol`` (default
    ``n * eps * max pivot``). Fails fast (``O(n k^2)`` for a failure at step ``k``).
    """
    L, info = torch.linalg.cholesky_ex(A)
    if int(info) != 0:
        return None
    pivots = L.diagonal() ** 2
    if atol is None:
        atol = rank_tolerance(float(pivots.max()), A.shape[0], A.dtype)
    return L if bool(pivots.min() > atol) else None


def numerical_rank_by_cholesky(A: torch.Tensor, max_rank: int, atol: float | None = None) -> int:
    """Numerical rank of a PSD matrix without an eigendecomposition (capped at ``max_rank``).

    A plain Cholesky (``n^3/3``) certifies full rank; otherwise the pivoted
    Cholesky stops at the numerical rank (``O(n r^2)``). ``atol`` as in :func:`pivoted_cholesky`.
    """
    if A.shape[0] <= max_rank and cholesky_or_none(A, atol) is not None:
        return A.shape[0]
    return min(pivoted_cholesky(A, atol).shape[1], max_rank)


@dataclass
class Spectrum:
    """Eigen-information of the PSD matrix ``G`` (n, n).

    Attributes
    ----------
    values : Tensor of shape (k,)
        Top eigenvalues, descending (all ``r`` non-zero ones when ``complete``).
    vectors : Tensor of shape (n, k)
        Matching orthonormal eigenvectors.
    trace : float
        Accumulated in float64 whatever the dtype of ``G``.
    rank : int
        The rank ``r`` the model uses: a structural value when one was given, else
        the numerical count. ``values`` may hold fewer than ``rank`` entries when
        some of the ``r`` eigenvalues are below the rounding level.
    complete : bool
        True when ``values`` holds every eigenvalue above the rounding level.
    tolerance : float
        The rounding level ``tol`` of :func:`rank_tolerance` for ``G``.
    """

    values: torch.Tensor
    vectors: torch.Tensor
    trace: float
    rank: int
    complete: bool
    tolerance: float = 0.0


def float64_trace(G: torch.Tensor) -> float:
    """``trace(G)`` summed in float64 (the diagonal of a float32 matrix loses nothing more)."""
    return float(G.diagonal().sum(dtype=torch.float64))


def full_spectrum(
    G: torch.Tensor,
    *,
    what: str,
    max_rank: int | None = None,
    scale: float = 0.0,
    size: int | None = None,
    rank: int | None = None,
) -> Spectrum:
    """Dense eigendecomposition, numerical rank and PSD check of ``G``.

    Parameters
    ----------
    G : Tensor of shape (n, n), symmetric
    what : str
        Name of ``G`` in error messages.
    max_rank : int, optional
        A structural bound on the rank (``N - 1`` for a centered Gram matrix, whose
        null vector ``1`` is known exactly).
    scale : float, default 0.0
        Magnitude of the matrix before centering (``max |K_ij|`` of the raw Gram
        matrix, or ``max_i |phi_i|^2``): centering leaves an absolute rounding error
        of that size in every entry (see :func:`~kppca._linalg.rank_tolerance`).
    size : int, optional
        Number of terms summed into each entry (default ``n``; ``N`` for a scatter matrix).
    rank : int, optional
        The rank decided by structure (:mod:`kppca.kernels.rank`). Without it the rank
        counts eigenvalues above ``tol = size * eps * max(lam_1, scale)``. Either way
        ``values`` keeps only eigenvalues above ``tol`` (at most ``rank`` of them).

    ``G`` is refused as not PSD only when an eigenvalue is below ``-tol``.

    Raises
    ------
    ValueError
        If ``G`` has an eigenvalue below ``-tol`` (not positive semi-definite).
    """
    values, vectors = eigh_descending(G)
    tol = rank_tolerance(float(values[0]), size or G.shape[0], G.dtype, scale)
    if float(values[-1]) < -tol:
        raise ValueError(
            f"the {what} is not positive semi-definite (smallest eigenvalue {float(values[-1]):.3g}, "
            f"largest {float(values[0]):.3g}, rounding level {tol:.3g}); check that the kernel is a valid (PSD) kernel."
        )
    resolved = int((values > tol).sum())
    if max_rank is not None:
        resolved = min(resolved, max_rank)
    if rank is None:
        rank = resolved
    resolved = min(resolved, rank)
    return Spectrum(values[:resolved], vectors[:, :resolved], float64_trace(G), rank, True, tol)


def partial_spectrum(
    G: torch.Tensor,
    k: int,
    *,
    rank: int | Callable[[float], int],
    random_state: np.random.Generator,
    what: str,
    scale: float = 0.0,
    size: int | None = None,
) -> Spectrum:
    """Top-``k`` eigenpairs by Lanczos, the float64 trace, and the rank.

    ``rank`` is the structural rank (an int), or a callable ``rank(tol)`` that counts it
    against the eigenvalue tolerance ``tol`` (the numerical fallback).

    ``scale`` and ``size`` as in :func:`full_spectrum`; ``tol = size * eps * max(lam_1, scale)``.

    Raises
    ------
    ValueError
        When ``G`` is numerically zero (rank 0), or not PSD.
    """
    trace = float64_trace(G)
    n_terms = size or G.shape[0]
    # G is PSD, so trace(G) bounds every eigenvalue: a trace at rounding level means rank 0.
    # Checked before Lanczos, which fails obscurely on a zero operator ("starting vector is zero").
    zero_tol = rank_tolerance(0.0, n_terms, G.dtype, scale)
    if trace < -zero_tol:
        raise ValueError(
            f"the {what} is not positive semi-definite (negative trace {trace:.3g}); check that the kernel is "
            "a valid (PSD) kernel."
        )
    if trace <= zero_tol:
        raise ValueError(
            f"the {what} is numerically zero (trace {trace:.3g}): the centered data have rank 0, so "
            "probabilistic PCA needs rank >= 2 (q >= 1 component plus noise). Check X for constant or "
            "duplicated rows."
        )
    values, vectors = eigh_top(G, k, random_state=random_state)
    if float(values[0]) <= 0:
        raise ValueError(f"the {what} has no positive eigenvalue; the data (or kernel) are degenerate.")
    tol = rank_tolerance(float(values[0]), n_terms, G.dtype, scale)
    if trace < float(values.sum()) - tol:
        raise ValueError(
            f"the {what} is not positive semi-definite (its trace is below the sum of its top eigenvalues); "
            "check that the kernel is a valid (PSD) kernel."
        )
    r = rank(tol) if callable(rank) else int(rank)
    return Spectrum(values, vectors, trace, r, False, tol)
