"""One object for the centered training Gram matrix ``K_c = M K M`` and everything derived from it.

It holds one ``N x N`` buffer: the memory budget of a fit plus a sample admits no second one.
Threads may share one object (a fitted model's): everything built lazily is built once under the
object's re-entrant lock, and the buffer is read and overwritten only under it.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

import numpy as np
import torch

from .._linalg import (
    Spectrum,
    block_rows,
    check_gram_scale,
    cholesky_in_place,
    compute_threads,
    eigen,
    eigh_descending,
    map_row_blocks,
    pivoted_cholesky,
    rank_tolerance,
    row_top_means,
    solve_spectrum,
)
from .._cache import LazyCache
from .base import Kernel
from .gram import KernelCenterer, lower_gram_matrix, mirror_lower_
from .gram_factors import CholeskyFactor, EigenFactor, PivotedCholeskyFactor
from .rank import structural_rank

__all__ = ["CenteredGram"]

_Method = TypeVar("_Method", bound=Callable[..., Any])
_ADVICE = "Check that `kernel` is finite on X, rescale X (e.g. standardise it) or use dtype='float64'."


def _locked(method: _Method) -> _Method:
    """Run ``method`` under the object's lock (it reads or fills lazily built state)."""
    @functools.wraps(method)
    def run(self: "CenteredGram", *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)

    return run  # type: ignore[return-value]


class CenteredGram:
    """The centered Gram matrix ``K_c`` of ``kernel`` on ``X`` (N, N), its spectrum, factors and centering.

    The matrix is built on first use, in row blocks into one buffer; consumed by :meth:`cholesky` or
    dropped by :meth:`release`, it is rebuilt bitwise equal when needed again.

    Parameters
    ----------
    kernel : Kernel
    X : Tensor of shape (N, D)
        Training inputs; their dtype and device are those of every result. Never modified.
    center : bool, default True
        False: ``K_c`` reads ``K`` (the uncentered model).
    batch_size : int or None, default None
        Rows per block (see :func:`kppca._linalg.block_rows`).
    centerer : KernelCenterer, optional
        Statistics fitted earlier (a model's ``centerer_``): new points are then centered without the matrix.
    rank, eigen_max : int and float, optional
        A fitted model's rank and top eigenvalue: they fix :attr:`rank` and :attr:`tolerance` without
        :meth:`spectrum`.
    what, advice : str
        How error messages name the raw matrix and what they advise.

    Examples
    --------
    >>> import torch
    >>> from kppca.kernels import RBF, CenteredGram
    >>> X = torch.randn(50, 3, dtype=torch.float64)
    >>> G = CenteredGram(RBF(1.0), X)
    >>> spectrum = G.spectrum("dense")
    >>> G.rank, bool(torch.allclose(G.matrix.sum(0), torch.zeros(50, dtype=torch.float64), atol=1e-12))
    (49, True)
    """

    def __init__(
        self,
        kernel: Kernel,
        X: torch.Tensor,
        *,
        center: bool = True,
        batch_size: int | None = None,
        centerer: KernelCenterer | None = None,
        rank: int | None = None,
        eigen_max: float | None = None,
        what: str = "Gram matrix",
        advice: str = _ADVICE,
    ):
        self.kernel = kernel
        self.X = X
        self.center = bool(center)
        self.batch_size = batch_size
        self.what = what
        self.advice = advice
        self._matrix: torch.Tensor | None = None
        self._lower_only = False  # the buffer's strict upper triangle is not written yet (set by _lower)
        self._centerer: KernelCenterer | None = centerer
        self._scale: float | None = None
        self._rank: int | None = None if rank is None else int(rank)
        self._eigen_max: float | None = None if eigen_max is None else float(eigen_max)
        self._tolerance_value: float | None = None
        self._threads: int | None = None
        self.lock = threading.RLock()
        # What is derived once and never changes (structural rank, eigenpairs, factor, the kernel's training
        # side): computed under the same lock as the buffer.
        self._derived = LazyCache(lock=self.lock)

    # A copy (deepcopy, pickle) gets a lock of its own.
    def __getstate__(self) -> dict[str, Any]:
        with self.lock:
            state = self.__dict__.copy()
        del state["lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()
        self._derived = LazyCache(dict(self._derived._values), lock=self.lock)

    @property
    def n_samples(self) -> int:
        """``N``."""
        return int(self.X.shape[0])

    @property
    def dtype(self) -> torch.dtype:
        return self.X.dtype

    @property
    def device(self) -> torch.device:
        return self.X.device

    @property
    def structural_rank(self) -> int | None:
        """Rank from the kernel's structure (:mod:`kppca.kernels.rank`), or None; computed once."""
        return self._derived.get("structural-rank", lambda: structural_rank(self.kernel, self.X, self.center))

    @property
    @_locked
    def rank(self) -> int:
        """The rank ``r`` of ``K_c``: structural, else counted by :meth:`spectrum`."""
        if self._rank is None:
            if self.structural_rank is None:
                raise RuntimeError("the numerical rank is counted by spectrum(); call it first.")
            self._rank = self.structural_rank
        return self._rank

    @property
    @_locked
    def matrix(self) -> torch.Tensor:
        """``K_c`` (N, N), built on first use: the buffer itself, to read under :attr:`lock` where threads share it."""
        K = self._lower()
        if self._lower_only:
            with compute_threads(self._threads):
                mirror_lower_(K, batch_size=self.batch_size)
            self._lower_only = False
        return K

    @_locked
    def _lower(self) -> torch.Tensor:
        """The buffer, built on first use, with at least the lower triangle of ``K_c`` (all the CPU Lanczos reads)."""
        if self._matrix is None:
            self._lower_only = eigen.supports(self.X)
            self._matrix = self._build(self._lower_only)
        return self._matrix

    @property
    @_locked
    def centerer(self) -> KernelCenterer:
        """The fitted :class:`KernelCenterer` (statistics of the raw ``K``; the one given, if any)."""
        if self._centerer is None:
            self._lower()
        return self._centerer

    @property
    @_locked
    def scale(self) -> float:
        """``max |K_ij|`` of the raw Gram matrix: the absolute rounding level of every entry of ``K_c``."""
        if self._scale is None:
            self._lower()
        return self._scale

    def _build(self, lower: bool) -> torch.Tensor:
        # A rebuild uses the first build's thread count, so the matrix is bitwise the same.
        with compute_threads(self._threads) as threads:
            self._threads = threads
            K, scale = lower_gram_matrix(self.kernel, self.X, batch_size=self.batch_size)
            if not lower:
                mirror_lower_(K, batch_size=self.batch_size)
            # The magnitude before centering sets K_c's rounding level; non-finite or overflow-prone K stop here.
            scale = check_gram_scale(scale, self.n_samples, K.dtype, what=self.what, advice=self.advice)
            centerer = KernelCenterer(self.center)
            centerer.fit_center_(K, lower=lower)
        # A rebuild (or a model's own centerer) keeps the first statistics: bitwise the same anyway.
        if self._centerer is None:
            self._centerer = centerer
        if self._scale is None:
            self._scale = scale
        return K

    def rounding_tolerance(self, eigen_max: float) -> float:
        """``rank_tolerance(eigen_max, N, dtype, scale)``: eigenvalues of ``K_c`` below it are zero."""
        return rank_tolerance(float(eigen_max), self.n_samples, self.dtype, self.scale)

    @_locked
    def spectrum(
        self, solver: str, k: int | None = None, *, random_state: np.random.Generator | None = None
    ) -> Spectrum:
        """The spectrum of ``K_c`` for a fit; fixes :attr:`rank` and :attr:`tolerance`.

        Parameters
        ----------
        solver : {"dense", "partial"}
            "dense": full ``eigh`` (kept as :meth:`eigh`); "partial": the top ``k`` by Lanczos.
        k : int, required for "partial"
        random_state : numpy Generator, optional
            The Lanczos start vector.

        Returns
        -------
        Spectrum
        """
        max_rank = self.n_samples - int(self.center)
        with compute_threads(self._threads):
            if getattr(self.kernel, "strictly_positive_definite", False):
                # Distinct rows of X, counted before the N x N buffer exists (the sort copies X).
                self.structural_rank
            # First the build (its scale check refuses non-finite data). Lanczos reads the lower triangle only
            # where eigh_top multiplies by symv; all else gets the whole matrix.
            K_c = self._lower()
            if not (solver == "partial" and isinstance(self.structural_rank, int)
                    and eigen.reads_one_triangle(K_c)):
                K_c = self.matrix
            spec = solve_spectrum(K_c, solver, k, what=f"centered {self.what}", max_rank=max_rank,
                                  rank=self.structural_rank, scale=self.scale, random_state=random_state)
        if solver == "dense":
            self._derived.set("eigh", (spec.values, spec.vectors))
        self._rank, self._tolerance_value = spec.rank, spec.tolerance
        return spec

    @property
    @_locked
    def tolerance(self) -> float:
        """The rounding level of ``K_c`` (eigenvalues below it are zero), fixed by :meth:`spectrum` or ``eigen_max``."""
        if self._tolerance_value is None:
            if self._eigen_max is None:
                raise RuntimeError("the rounding tolerance is fixed by spectrum(); call it first.")
            self._tolerance_value = self.rounding_tolerance(self._eigen_max)
        return self._tolerance_value

    @_locked
    def eigh(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Eigenpairs of ``K_c`` above :attr:`tolerance`, at most :attr:`rank`, descending; cached (``O(N^3)``).

        Returns
        -------
        values : Tensor of shape (k,)
        vectors : Tensor of shape (N, k)
        """
        def compute() -> tuple[torch.Tensor, torch.Tensor]:
            tol = self.tolerance
            with compute_threads(self._threads):
                values, vectors = eigh_descending(self.matrix)
            keep = min(int((values > tol).sum()), self.rank)
            return values[:keep].clone(), vectors[:, :keep].clone()

        return self._derived.get("eigh", compute)

    @property
    def has_eigh(self) -> bool:
        """Whether :meth:`eigh` is computed (never changes a result: for memory decisions only)."""
        return "eigh" in self._derived

    @property
    def has_cholesky(self) -> bool:
        """Whether :meth:`cholesky` is computed (for memory decisions and tests only)."""
        return "cholesky" in self._derived

    @property
    def has_matrix(self) -> bool:
        """Whether the buffer holds ``K_c`` now (else reading :attr:`matrix` costs a build)."""
        return self._matrix is not None

    def eigen_factor(self) -> EigenFactor:
        """The square root ``E diag(sqrt(lam))`` of ``K_c`` from :meth:`eigh` (``O(N^3)`` on first use)."""
        values, vectors = self.eigh()
        return EigenFactor(values, vectors)

    @_locked
    def cholesky(self) -> CholeskyFactor | PivotedCholeskyFactor:
        """A Cholesky square root of ``K_c``, computed once (``O(N^3 / 3)``).

        :class:`~kppca.kernels.gram_factors.CholeskyFactor` ``chol(K)`` (N, N) of the *raw* Gram matrix,
        computed **in the memory of** ``K_c`` (so :attr:`has_matrix` becomes False). When ``K`` is
        numerically singular, a :class:`~kppca.kernels.gram_factors.PivotedCholeskyFactor` (N, r') of
        ``K_c``, ``r' <=`` :attr:`rank`.
        """
        return self._derived.get("cholesky", self._compute_cholesky)

    def _compute_cholesky(self) -> CholeskyFactor | PivotedCholeskyFactor:
        centerer = self.centerer
        K_c = self._lower()  # the factorisation reads the lower triangle only
        self._matrix = None  # consumed: the factor takes its memory
        K = centerer.restore_(K_c, lower=True)  # K = K_c + 1 m^T + m 1^T - g, in place
        del K_c
        # A completed factorisation reproduces K to its backward error: it serves sampling and solves, not ranks.
        L = cholesky_in_place(K)
        if L is not None:
            return CholeskyFactor(L, self.center)
        del K  # numerically singular: the buffer holds a failed factorisation; rebuild K_c
        tol = self.tolerance
        K_c = self.matrix  # rebuilt whole by the fit's operations, so bitwise the fit's
        self._matrix = None  # consumed by the pivoted factorisation
        return PivotedCholeskyFactor(pivoted_cholesky(K_c, tol, overwrite=True)[:, : self.rank], self.eigen_factor)

    def centered_vectors(self, X_new: torch.Tensor) -> torch.Tensor:
        """``k_c(x) = Phi_c^T (phi(x) - m)`` of new points, (M, N) (one block; see :meth:`project`)."""
        with compute_threads(self._threads):
            return self.centerer.transform(self.raw_vectors(X_new))

    def raw_vectors(self, X_new: torch.Tensor) -> torch.Tensor:
        """``k(X_new, X)`` (M, N), the training set's share of the work done once (:meth:`Kernel.against`)."""
        return self._derived.get("to-training", lambda: self.kernel.against(self.X))(X_new)

    def project(self, X_new: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
        """``k_c(X_new) @ basis`` (M, k) in row blocks of kernel evaluations.

        Never from the buffer, even for the training inputs: the result must not depend on whether
        the buffer is alive (a call's bits would then depend on which calls ran before it).
        """
        with compute_threads(self._threads):
            rows = block_rows(self.batch_size, self.n_samples, self.dtype)
            return map_row_blocks(lambda block: self.centered_vectors(block) @ basis, X_new, rows)

    @_locked
    def times_matrix(self, alpha: torch.Tensor) -> torch.Tensor:
        """``(K_c alpha^T)^T`` (M, N) for rows ``alpha`` (M, N), reading the buffer under the lock (rebuilt if needed)."""
        with compute_threads(self._threads):
            return (self.matrix @ alpha.T).T

    @_locked
    def raw_top_means(self, k: int) -> torch.Tensor | None:
        """Each training point's mean raw kernel value ``K_ij`` over its ``k`` largest ``j != i``, (N,).

        Read from the buffer's lower triangle, without mirroring or un-centering it: ``K_ij = (K_c)_ij + c_j +
        (c_i - g)``, whose last term shifts row i's mean, not its choice. None when the buffer is not alive
        (the Cholesky factor took it, or it was released): decided under the lock, never rebuilt for this.
        """
        K_c = self._matrix
        if K_c is None:
            return None
        with compute_threads(self._threads):
            if not self.center:
                return row_top_means(K_c, K_c.new_zeros(self.n_samples), k).to(self.dtype)
            c, g = self.centerer.column_means_, self.centerer.grand_mean_
            return (row_top_means(K_c, c, k) + (c.double() - g)).to(self.dtype)

    @_locked
    def release(self) -> None:
        """Drop ``K_c`` (rebuilt bitwise on next use); statistics, rank, eigenpairs and factors stay."""
        self._matrix = None

    def __repr__(self) -> str:
        alive = "built" if self._matrix is not None else "not built"
        return f"CenteredGram(N={self.n_samples}, center={self.center}, {alive})"
