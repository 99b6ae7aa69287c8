"""Level-wise solving of a deep RKM (paper §5.1): forward and backward passes of per-level stationarity solves.

With linear kernels after the first level, each level's stationarity conditions (eqs. 4.11, 4.18) are solved in
its fused matrix ``M_l = K_l/eta_l + H_{l+1} H_{l+1}^T / eta_{l+1}``, the other levels fixed. It is a saddle-point
iteration (the LS-SVM solve maximises the objective, the eigen steps minimise it), so the recorded objective need
not be monotone and strongly coupled passes may cycle; ``residual_history`` shows whether a fixed point was reached.
"""

from __future__ import annotations

import torch

from .levels import Level, run_chain
from .solvers import DeepFit, register_solver

__all__ = ["check_levelwise", "fit_levelwise"]

# The output level's features scale like y / ridge and enter the next level's kernel squared, so the
# level-wise passes are not equivariant to the scale of y and can leave the floating-point range.
_RANGE_ADVICE = ("the level-wise passes left the floating-point range at the scale of y (max |y| = {y:.3g}): "
                 "standardise y (e.g. (y - mean) / std), or use solver='primal', which standardises y itself.")


def check_levelwise(levels: list[Level], params: dict) -> None:
    """Linear kernels after the first level, and a last KPCA level no wider than its input's rank."""
    nonlin = [i for i, lev in enumerate(levels) if lev.levelwise_ready(i) is not None]
    if nonlin:
        raise ValueError(f"solver='levelwise' needs linear kernels in every level after the first (paper "
                         f"§5.1); levels {nonlin} are not linear. Use solver='primal' for other kernels.")
    last, prev = levels[-1], levels[-2]
    if not last.is_output and not prev.is_output and last.width(0) > prev.width(0):
        raise ValueError(f"n_components: the last KPCA level's {last.width(0)} components exceed the "
                         f"rank {prev.width(0)} of its linear kernel on the previous level (need "
                         f"s_last <= s_previous, e.g. n_components=(s2, s3) with s3 <= s2).")


class _Passes:
    """The state of the level-wise iteration: levels, first-level Gram, targets."""

    def __init__(self, levels: list[Level], K0: torch.Tensor, Y: torch.Tensor):
        self.levels, self.K0, self.Y = levels, K0, Y

    def own(self, l: int, H: list) -> torch.Tensor:
        return self.K0 if l == 0 else H[l - 1] @ H[l - 1].T  # linear kernel on the previous level

    def fused(self, l: int, H: list, couple: bool = True) -> torch.Tensor:
        M = self.own(l, H) / float(self.levels[l].eta)
        if couple and l + 1 < len(H):
            M = M + H[l + 1] @ H[l + 1].T / float(self.levels[l + 1].eta)
        if not bool(torch.isfinite(M).all()):
            raise ValueError(_RANGE_ADVICE.format(y=float(self.Y.abs().max())))
        return M

    def solve(self, l: int, H: list, b: torch.Tensor, couple: bool = True):
        return self.levels[l].levelwise_solve(self.fused(l, H, couple), self.Y, b)

    def objective(self, H: list) -> float:
        return sum(lev.levelwise_objective(H[l], self.own(l, H), self.Y) for l, lev in enumerate(self.levels))

    def residuals(self, H: list, b: torch.Tensor) -> list[float]:
        return [lev.levelwise_residual(self.fused(l, H), H[l], b, self.Y) for l, lev in enumerate(self.levels)]


def fit_levelwise(levels: list[Level], X: torch.Tensor, Y: torch.Tensor, *, params: dict,
                  generator: torch.Generator) -> DeepFit:
    """Initialise the output level (uncoupled unless passes follow), then ``n_passes`` forward-backward passes;
    the KPCA levels start at random Stiefel points, and ``Lam_l`` of the chain are calibrated level by level after."""
    N, L, p = X.shape[0], len(levels), Y.shape[1]
    n_passes = int(params["n_passes"])
    state = _Passes(levels, levels[0].gram(X), Y)
    H = [lev.levelwise_start(N, p, generator, X.dtype, X.device) for lev in levels]
    b = torch.zeros(p, dtype=X.dtype, device=X.device)
    j = next(l for l, lev in enumerate(levels) if lev.is_output)
    H[j], b = state.solve(j, H, b, couple=bool(n_passes) or j == L - 1)
    history = [("init", state.objective(H))]
    residuals = [state.residuals(H, b)]
    for k in range(1, n_passes + 1):
        for l in range(L):
            H[l], b = state.solve(l, H, b)
        history.append((f"forward {k}", state.objective(H)))
        for l in range(L - 2, -1, -1):
            H[l], b = state.solve(l, H, b)
        history.append((f"backward {k}", state.objective(H)))
        residuals.append(state.residuals(H, b))
    advice = _RANGE_ADVICE.format(y=float(Y.abs().max()))
    if not all(bool(torch.isfinite(t).all()) for t in H + [b]):
        raise ValueError(advice)
    scales: list = [None] * L
    for l, lev in enumerate(levels):  # calibrate Lam_l level by level along the chain
        if not lev.is_output:
            try:
                _, es = run_chain(levels, X, X, H[: l + 1], b, scales[: l + 1], Y)
            except ValueError as exc:  # a level kernel overflowed on the chain: the same range problem
                raise ValueError(advice) from exc
            scales[l] = lev.calibrate_scale(es[l], H[l])
            if not bool(torch.isfinite(scales[l]).all()):
                raise ValueError(advice)
    return DeepFit(H, b, scales, X, torch.arange(N, device=X.device), history, residuals, n_passes)


register_solver("levelwise", fit_levelwise, check=check_levelwise)
