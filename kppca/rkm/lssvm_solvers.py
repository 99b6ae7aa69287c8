"""The LS-SVM linear systems in RKM form (deep-RKM paper, §3.1), solved through their Schur complements.

``ridge`` (the paper's ``lambda``) multiplies the identity of the dual system: the inverse of Suykens'
``gamma`` when ``eta = 1``. Both solvers give the exact leave-one-out residuals (Cawley & Talbot, 2004).
"""

from __future__ import annotations

import torch

from .._linalg import cholesky_or_none, matrix_scale, rounding_tolerance

__all__ = ["LSSVMSolution", "solve_lssvm_dual", "solve_lssvm_primal"]


class LSSVMSolution:
    """Result of one LS-SVM solve: ``coef`` (dual: ``H`` (N, p); primal: ``W`` (d_f, p)), ``intercept`` (p,)
    and ``loo_residuals`` (N, p), ``y_i - f^{(-i)}(x_i)``.
    """

    def __init__(self, coef: torch.Tensor, intercept: torch.Tensor, loo_residuals: torch.Tensor):
        self.coef, self.intercept, self.loo_residuals = coef, intercept, loo_residuals


def solve_lssvm_dual(K: torch.Tensor, Y: torch.Tensor, ridge: float, eta: float) -> LSSVMSolution:
    """Solve the dual system ``[[K/eta + ridge I, 1], [1^T, 0]] [H; b^T] = [Y; 0]`` by its Schur complement.

    Parameters
    ----------
    K : Tensor of shape (N, N), symmetric PSD Gram matrix
    Y : Tensor of shape (N, p)
    ridge, eta : float > 0

    Returns
    -------
    LSSVMSolution
        ``coef`` is ``H`` (N, p), predicting ``y(x) = (1/eta) sum_j h_j k(x_j, x) + b``.

    Raises
    ------
    ValueError
        ``K/eta + ridge I`` is not numerically positive definite: a ridge below the rounding level of
        ``K/eta`` in its dtype, or a kernel that is not PSD (the message says which).
    """
    N = K.shape[0]
    A = K / eta
    A.diagonal().add_(ridge)
    L = cholesky_or_none(A)
    if L is None:
        # K is PSD up to its rounding errors, of size N eps max|K| / eta in A (Weyl): the ridge lifts the
        # spectrum of A above that level only if it is larger.
        level = rounding_tolerance(K.dtype, N, matrix_scale(K) / eta)
        name = str(K.dtype).replace("torch.", "")
        if ridge <= level:
            more = "use dtype='float64', " if K.dtype != torch.float64 else ""
            raise ValueError(
                f"the LS-SVM dual system K/eta + ridge I is singular to {name} precision: ridge={ridge:.3g} is "
                f"below the rounding level {level:.3g} of K/eta (N eps max|K| / eta). The problem's conditioning "
                f"is beyond {name}: {more}use a larger ridge, or rescale X (e.g. standardise it)."
            )
        raise ValueError(
            "the matrix K/eta + ridge I of the LS-SVM dual system is not numerically positive definite although "
            f"ridge={ridge:.3g} is above its rounding level {level:.3g}: the kernel is not positive "
            "semi-definite; use a valid (PSD) kernel."
        )
    ones = torch.ones(N, 1, dtype=K.dtype, device=K.device)
    rhs = torch.cat([Y, ones], dim=1)
    sol = torch.cholesky_solve(rhs, L)
    Psi, nu = sol[:, :-1], sol[:, -1:]
    s = nu.sum()
    b = Psi.sum(0) / s
    H = Psi - nu * b[None, :]
    # diag(M^{-1})[:N] = diag(A^{-1}) - nu^2 / s (block inverse of the bordered matrix).
    Linv = torch.linalg.solve_triangular(L, torch.eye(N, dtype=K.dtype, device=K.device), upper=False)
    diag = (Linv * Linv).sum(0) - nu[:, 0] ** 2 / s
    return LSSVMSolution(H, b, H / diag[:, None])


def solve_lssvm_primal(Phi: torch.Tensor, Y: torch.Tensor, ridge: float, eta: float) -> LSSVMSolution:
    """Solve the primal system ``[[Phi^T Phi + ridge eta I, Phi^T 1], [1^T Phi, N]] [W; b^T] = [Phi^T Y; 1^T Y]``.

    Eliminating ``b`` leaves a centred ridge problem, solved as least squares by QR: the normal equations
    square the condition number (singular at 1e3-scaled float32 data).

    Parameters
    ----------
    Phi : Tensor of shape (N, d_f)
    Y : Tensor of shape (N, p)
    ridge, eta : float > 0

    Returns
    -------
    LSSVMSolution
        ``coef`` is ``W`` (d_f, p), predicting ``y(x) = W^T phi(x) + b``.

    Raises
    ------
    ValueError
        When the features are not finite.
    """
    N, d = Phi.shape
    if not bool(torch.isfinite(Phi).all()):
        raise ValueError("the features of the LS-SVM primal system are not finite; check the feature map and X.")
    mu, ybar = Phi.mean(0), Y.mean(0)
    Pc, Yc = Phi - mu, Y - ybar
    root = (ridge * eta) ** 0.5
    M = torch.cat([Pc, root * torch.eye(d, dtype=Phi.dtype, device=Phi.device)], dim=0)
    Q, R = torch.linalg.qr(M)  # (N + d, d), (d, d); R is non-singular: its rows include sqrt(ridge eta) I
    W = torch.linalg.solve_triangular(R, Q[:N].T @ Yc, upper=True)
    b = ybar - mu @ W
    E = Y - Phi @ W - b
    # Phi_c G^{-1} Phi_c^T = Q_1 Q_1^T with Q_1 = Q[:N] = Phi_c R^{-1}.
    hat = 1.0 / N + (Q[:N] * Q[:N]).sum(1)
    return LSSVMSolution(W, b, E / (1.0 - hat)[:, None])
