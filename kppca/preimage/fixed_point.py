"""Fixed-point pre-image for the Gaussian (RBF) kernel (Mika et al., 1999): the input closest to
``psi = sum_i gamma_i phi(x_i)`` maximises ``rho(z) = sum_i gamma_i k(z, x_i)``, a fixed point of
``z <- sum_i gamma_i k(z, x_i) x_i / sum_i gamma_i k(z, x_i)``."""

from __future__ import annotations

import warnings
from typing import Any

import torch

from .._param_validation import Integral, Interval, Real, check_scalar
from .._validation import ArrayLike, as_tensor
from ..kernels import RBF
from ._common import as_batch, batch_output
from .smoother import _smooth

__all__ = ["fixed_point_preimage", "dual_coefficients_to_expansion", "PreimageConvergenceWarning"]


class PreimageConvergenceWarning(UserWarning):
    """An iterative pre-image did not converge for some rows (results are still finite)."""


def dual_coefficients_to_expansion(alpha: ArrayLike) -> Any:
    """Expansion coefficients ``gamma = alpha - mean(alpha) + 1/N`` of ``psi`` from centered dual coefficients
    (``psi - m = sum_i alpha_i (phi(x_i) - m)`` gives ``psi = sum_i gamma_i phi(x_i)``).

    Parameters
    ----------
    alpha : array-like or Tensor of shape (M, N) or (N,)
        E.g. ``A h`` for a latent code ``h`` of the dual model (``k_c = K_c A h``),
        or ``K_c^+ k_c`` for a centered kernel vector in the range of ``K_c``.

    Returns
    -------
    ndarray or Tensor, same shape as ``alpha``
        ``gamma``; each row sums to 1.
    """
    A, single, numpy_out = as_batch(alpha, "alpha")
    gamma = A - A.mean(-1, keepdim=True) + 1.0 / A.shape[-1]
    return batch_output(gamma, single=single, numpy_out=numpy_out)


def _objective_rounding(
    G: torch.Tensor, K: torch.Tensor, Z: torch.Tensor, X: torch.Tensor, gamma: float
) -> torch.Tensor:
    """(M,) rounding bound of ``rho(z_j) = sum_i G_ji k(z_j, x_i)`` from ``K = k(Z, X)`` (M, N): the distances,
    centered on ``c = mean(X)``, err by ``(D + 2) eps (|z - c|^2 + |x_i - c|^2)``, ``k`` by ``gamma`` times that."""
    c = X.mean(0, keepdim=True)
    nz = ((Z - c) ** 2).sum(1, keepdim=True)
    nx = ((X - c) ** 2).sum(1)[None, :]
    d2_error = (X.shape[1] + 2) * torch.finfo(G.dtype).eps * (nz + nx)
    return (G.abs() * K * (gamma * d2_error)).sum(1)


def fixed_point_preimage(
    gamma: ArrayLike,
    X_train: ArrayLike,
    kernel: RBF | float,
    *,
    init: str | ArrayLike = "best",
    max_iter: int = 100,
    tol: float = 1e-8,
    denom_rtol: float = 1e-10,
    return_info: bool = False,
) -> Any:
    """Pre-images of ``psi_j = sum_i gamma[j, i] phi(x_i)`` by the Mika et al. fixed point (RBF only).

    All M points are iterated together; converged rows are frozen. The result is never NaN: a row whose
    denominator vanishes restarts once from the best training point (then stops), and a row ending with
    a lower ``rho(z)`` than the best training point is replaced by it (``fell_back``).

    Parameters
    ----------
    gamma : array-like or Tensor of shape (M, N) or (N,)
        Expansion coefficients on the training images (:func:`dual_coefficients_to_expansion`).
    X_train : array-like or Tensor of shape (N, D)
        Training inputs ``x_i``.
    kernel : RBF or float
        The RBF kernel of the model, or its bandwidth.
    init : {"best", "smoother"} or array-like of shape (M, D), default "best"
        Start: ``"best"``, the training point whose image is closest to ``psi``; ``"smoother"``, the
        kernel smoother with the raw weights ``K gamma`` (``"best"`` where it is undefined).
    max_iter : int, default 100
    tol : float, default 1e-8
        A row has converged when ``|z_new - z| <= tol * (1 + |z|)``.
    denom_rtol : float, default 1e-10
        The denominator ``sum_i gamma_i k(z, x_i)`` has vanished below ``denom_rtol * sum_i |gamma_i k(z, x_i)|``.
    return_info : bool, default False
        Also return a dict of per-row diagnostics.

    Returns
    -------
    Z : ndarray or Tensor of shape (M, D) (or (D,) for 1-D ``gamma``)
        Pre-images, always finite; type of ``gamma``, on the device of the first tensor argument.
    info : dict, only if ``return_info``
        ``converged`` (M,) bool, ``n_iter`` (M,) int, ``restarted`` (M,) bool,
        ``fell_back`` (M,) bool, ``objective`` (M,) final ``rho(z)``.

    Warns
    -----
    PreimageConvergenceWarning
        When some rows did not converge within ``max_iter``.
    """
    G, single, numpy_out = as_batch(gamma, "gamma", X_train)
    X = as_tensor(X_train, "X_train", dtype=G.dtype, device=G.device)
    if G.shape[1] != X.shape[0]:
        raise ValueError(
            f"gamma has {G.shape[1]} column(s) but X_train has {X.shape[0]} training points; they must match."
        )
    kernel = check_scalar(kernel, "kernel (an RBF kernel or its bandwidth: the fixed-point iteration is derived for "
                                  "the Gaussian kernel only)", [RBF, Interval(Real, 0, None, closed="neither")])
    kern = RBF(kernel.bandwidth if isinstance(kernel, RBF) else float(kernel))
    max_iter = int(check_scalar(max_iter, "max_iter", [Interval(Integral, 1, None, closed="left")]))
    tol = float(check_scalar(tol, "tol", [Interval(Real, 0, None, closed="left")]))
    denom_rtol = float(check_scalar(denom_rtol, "denom_rtol", [Interval(Real, 0, None, closed="left")]))
    M = G.shape[0]

    # rho at every training point: <psi, phi(x_i)> = (gamma K)_i.
    K_train = kern.gram(X, X)
    rho_train = G @ K_train
    best_rho, best_idx = rho_train.max(1)
    Z_best = X[best_idx]

    if isinstance(init, str):
        if init == "best":
            Z = Z_best.clone()
        elif init == "smoother":
            Z, bad = _smooth(rho_train, X, None, True, 0.0)
            Z = torch.where(bad[:, None], Z_best, Z)
        else:
            raise ValueError(f"init={init!r} is unknown; use 'best', 'smoother' or an (M, D) array.")
    else:
        Z = as_tensor(init, "init", dtype=G.dtype, device=G.device)
        if Z.shape != (M, X.shape[1]):
            raise ValueError(f"init must have shape ({M}, {X.shape[1]}), got {tuple(Z.shape)}.")

    active = torch.ones(M, dtype=torch.bool, device=G.device)
    converged = torch.zeros_like(active)
    restarted = torch.zeros_like(active)
    n_iter = torch.zeros(M, dtype=torch.long, device=G.device)
    for _ in range(max_iter):
        idx = active.nonzero().squeeze(1)
        if idx.numel() == 0:
            break
        Za = Z[idx]
        Wt = G[idx] * kern.gram(Za, X)  # (m, N) terms gamma_i k(z, x_i)
        denom = Wt.sum(1)
        ok = denom > denom_rtol * Wt.abs().sum(1)
        Znew = (Wt @ X) / torch.where(ok, denom, torch.ones_like(denom))[:, None]
        # Vanished denominator: restart once from the best training point, else stop the row.
        first = ~ok & ~restarted[idx]
        dead = ~ok & restarted[idx]
        Znew = torch.where(first[:, None], Z_best[idx], Znew)
        Znew = torch.where(dead[:, None], Za, Znew)
        step = torch.linalg.vector_norm(Znew - Za, dim=1)
        conv = ok & (step <= tol * (1.0 + torch.linalg.vector_norm(Za, dim=1)))
        Z[idx] = Znew
        n_iter[idx] += 1
        restarted[idx] = restarted[idx] | first
        converged[idx] = conv
        active[idx] = ~(conv | dead)

    K_z = kern.gram(Z, X)
    rho = (G * K_z).sum(1)
    # Never worse than the best training point, up to the rounding of the two objectives.
    margin = 64 * torch.finfo(G.dtype).eps * G.abs().sum(1) + _objective_rounding(
        G, K_z, Z, X, kern.gamma
    ) + _objective_rounding(G, K_train[best_idx], X[best_idx], X, kern.gamma)
    fell_back = rho < best_rho - margin
    Z = torch.where(fell_back[:, None], Z_best, Z)
    rho = torch.where(fell_back, best_rho, rho)

    n_bad = int((~converged).sum())
    if n_bad:
        warnings.warn(
            f"fixed_point_preimage: {n_bad} of {M} row(s) did not converge within max_iter={max_iter} "
            f"(tol={tol}); their result is the last iterate or the best training point. "
            "Increase max_iter, loosen tol, or try init='smoother'.",
            PreimageConvergenceWarning,
            stacklevel=2,
        )
    Z = batch_output(Z, single=single, numpy_out=numpy_out)
    if not return_info:
        return Z
    info = {"converged": converged, "n_iter": n_iter, "restarted": restarted, "fell_back": fell_back, "objective": rho}
    return Z, {k: batch_output(v, single=single, numpy_out=numpy_out) for k, v in info.items()}
