"""Deep feed-forward networks trained within the deep RKM objective (paper §5.3, eqs. 5.5-5.6).

``DeepRKM(solver="feedforward")`` replaces each level's kernel by one hidden ``tanh`` layer of ``n_l`` units,
``e_l = W_l^T tanh(U_l Lam_{l-1}^{-1} e_{l-1} + beta_l)`` (``e_0 = x``; the output level adds ``B``), and
minimises the stabilised objective over all ``N`` training points by L-BFGS, the targets standardised as in
the reduced-set solver. ``toeplitz=True`` (model 2,B,T) makes ``U_l`` Toeplitz in every level but the last.
With ``c_stab = 1`` (the default) the stabilisation holds the scores small; ``c_stab = 0.01`` fits better.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..._param_validation import Integral, Interval, check_sequence
from ...optim import minimize
from .levels import Level, combine_terms, stabilize
from .reduced_set import standardize_targets
from .solvers import DeepFit, register_solver

__all__ = ["check_feedforward", "feedforward_objective", "fit_feedforward", "network_forward",
           "predict_feedforward", "toeplitz"]


def toeplitz(t: torch.Tensor, n_rows: int, n_cols: int) -> torch.Tensor:
    """The ``n_rows x n_cols`` Toeplitz matrix ``U[i, j] = t[i - j + n_cols - 1]`` from ``t`` (n_rows + n_cols - 1,)."""
    idx = torch.arange(n_rows, device=t.device)[:, None] - torch.arange(n_cols, device=t.device)[None, :] + n_cols - 1
    return t[idx]


#: Hidden units per level when ``hidden_units`` is None.
DEFAULT_HIDDEN_UNITS = 20


def _units(levels: Sequence[Level], hidden_units) -> list[int]:
    L = len(levels)
    hidden_units = DEFAULT_HIDDEN_UNITS if hidden_units is None else hidden_units
    units = check_sequence(hidden_units, "hidden_units", [Interval(Integral, 1, None, closed="left")], length=L,
                           repeat=L, what=f"(one per level, {L} levels)")
    return [int(n) for n in units]


def check_feedforward(levels: list[Level], params: dict) -> None:
    """ValueError unless the levels are KPCA levels followed by one output level, and ``hidden_units`` fits them."""
    if not levels[-1].is_output or any(lev.is_output for lev in levels[:-1]):
        raise ValueError("solver='feedforward' needs KPCA levels followed by the regression level (paper §5.3): "
                         "levels=[KPCALevel(s1, eta1), KPCALevel(s2, eta2), LSSVMLevel(ridge=..., eta=...)].")
    _units(levels, params.get("hidden_units"))
    if float(params["c_stab"]) <= 0 and params.get("objective", "stabilized") == "stabilized":
        raise ValueError("solver='feedforward' needs c_stab > 0: without the stabilisation terms the KPCA "
                         "terms are unbounded below.")


def _layout(levels: Sequence[Level], n_in: int, p: int, units: list[int], use_toeplitz: bool) -> list[dict]:
    """Per level: input width, units, output width, Toeplitz or not."""
    out, width = [], n_in
    for l, lev in enumerate(levels):
        s = p if lev.is_output else int(lev.n_components)
        out.append(dict(n_in=width, n=units[l], s=s, toeplitz=use_toeplitz and not lev.is_output))
        width = s
    return out


def _weights(flat: Sequence[torch.Tensor], layout: list[dict]) -> tuple[list, torch.Tensor]:
    """``[(U, beta, W, log_lam or None)]`` per level and ``B`` from the flat unknowns."""
    it, per = iter(flat), []
    for spec in layout:
        u, beta, W = next(it), next(it), next(it)
        U = toeplitz(u, spec["n"], spec["n_in"]) if spec["toeplitz"] else u
        per.append((U, beta, W, None))
    B = next(it)
    per = [(U, beta, W, next(it) if l + 1 < len(layout) else None) for l, (U, beta, W, _) in enumerate(per)]
    return per, B


def network_forward(weights: list, B: torch.Tensor, X: torch.Tensor) -> tuple[list, torch.Tensor]:
    """The network of eq. 5.6 on the rows of ``X``: the KPCA scores ``e_l`` (N, s_l) and ``yhat`` (N, p)."""
    z, es = X, []
    for U, beta, W, log_lam in weights:
        e = torch.tanh(z @ U.T + beta) @ W
        if log_lam is None:  # the output level
            return es, e + B
        es.append(e)
        z = e * torch.exp(-log_lam)
    raise ValueError("the network has no output level")  # pragma: no cover - checked by check_feedforward


def feedforward_objective(levels: Sequence[Level], layout: list[dict], X: torch.Tensor, Y: torch.Tensor,
                          c_stab: float, objective: str = "stabilized", c0: float = 1.0):
    """``J_deep,Pstab(*flat)`` as a closure over the data; ``flat`` as :func:`_weights` reads it.

    ``J = sum_{KPCA l} (J_l + c_stab/2 J_l^2) + 1/(2 ridge) ||Y - yhat||^2 + eta_L/2 ||W_L||^2`` with
    ``J_l = -1/2 sum_i e_l,i^T Lam_l^{-1} e_l,i + eta_l/2 ||W_l||^2``; ``objective`` / ``c0`` select the
    Table 1 variant (:func:`~kppca.rkm.deep.levels.combine_terms`).
    """
    outs = [lev.is_output for lev in levels]

    def J(*flat: torch.Tensor) -> torch.Tensor:
        weights, B = _weights(flat, layout)
        es, yhat = network_forward(weights, B, X)
        out = levels[-1]
        W_out = weights[-1][2]
        terms = []
        for l, e in enumerate(es):
            W, log_lam = weights[l][2], weights[l][3]
            Jl = -0.5 * (e ** 2 * torch.exp(-log_lam)[None, :]).sum() + 0.5 * float(levels[l].eta) * (W ** 2).sum()
            terms.append(stabilize(Jl, c_stab))
        terms.append(((Y - yhat) ** 2).sum() / (2 * float(out.ridge)) + 0.5 * float(out.eta) * (W_out ** 2).sum())
        return combine_terms(outs, terms, list(es) + [None], objective=objective, c0=c0)

    return J


def _initial(layout: list[dict], X: torch.Tensor, gen: torch.Generator, *, centred: bool = True) -> list:
    """Initial unknowns: ``U``, ``W`` entries N(0, 1/fan_in), ``Lam = I``, ``B = 0``, and ``beta_k = -U_k z_i``
    at a random training point ``z_i``, so that each ``tanh`` bends where the data are (``centred=False``: 0)."""
    dtype, device = X.dtype, X.device

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, dtype=dtype, device=gen.device).to(device)

    flat, z = [], X
    for spec in layout:
        n, n_in, s = spec["n"], spec["n_in"], spec["s"]
        u = randn(n + n_in - 1) if spec["toeplitz"] else randn(n, n_in)
        u = u / np.sqrt(n_in)
        U = toeplitz(u, n, n_in) if spec["toeplitz"] else u
        beta = torch.zeros(n, dtype=dtype, device=device)
        if centred:
            rows = torch.randint(z.shape[0], (n,), generator=gen, device=gen.device).to(device)
            beta = -(z[rows] * U).sum(1)
        W = randn(n, s) / np.sqrt(n)
        flat += [u, beta, W]
        z = torch.tanh(z @ U.T + beta) @ W  # the next layer's input at the start (Lam = I)
    logs = [torch.zeros(spec["s"], dtype=dtype, device=device) for spec in layout[:-1]]
    return flat + [torch.zeros(layout[-1]["s"], dtype=dtype, device=device)] + logs


def fit_feedforward(levels: list[Level], X: torch.Tensor, Y: torch.Tensor, *, params: dict,
                    generator: torch.Generator) -> DeepFit:
    """Minimise ``J_deep,Pstab`` over all network weights by L-BFGS (module docstring)."""
    check_feedforward(levels, params)
    units = _units(levels, params.get("hidden_units"))
    layout = _layout(levels, X.shape[1], Y.shape[1], units, bool(params.get("toeplitz", False)))
    Ys, y_mean, y_scale = standardize_targets(Y)
    J = feedforward_objective(levels, layout, X, Ys, float(params["c_stab"]), params.get("objective", "stabilized"),
                              float(params.get("c0", 1.0)))
    # The unbounded variance model (2,A) overflows Lam within a few dozen steps from centred units: beta = 0.
    x0 = _initial(layout, X, generator, centred=params.get("objective", "stabilized") != "variance")
    res = minimize(J, x0, method="lbfgs", manifold=None, max_iter=int(params["max_iter"]), tol=float(params["tol"]),
                   progress=bool(params.get("progress", False)), desc="deep RKM (feed-forward)",
                   warn=False)  # the estimator warns (with res.message), once
    flat = list(res.x)
    # the output layer in the units of y: yhat = (tanh(.) W + B) * scale + mean
    k_W, k_B = 3 * (len(layout) - 1) + 2, 3 * len(layout)
    flat[k_W], flat[k_B] = flat[k_W] * y_scale[None, :], flat[k_B] * y_scale + y_mean
    weights, B = _weights(flat, layout)
    with torch.no_grad():
        es, yhat = network_forward(weights, B, X)
    scales = [None if log_lam is None else torch.exp(log_lam) for (_, _, _, log_lam) in weights]
    hidden = [e / lam[None, :] for e, lam in zip(es, scales)] + [(Y - yhat) / float(levels[-1].ridge)]
    state = {"U": [w[0] for w in weights], "beta": [w[1] for w in weights], "W": [w[2] for w in weights],
             "toeplitz": [spec["toeplitz"] for spec in layout]}
    history = [(f"iter {k}", v) for k, v in enumerate(res.history)]
    empty = torch.zeros(0, dtype=torch.long, device=X.device)
    return DeepFit(hidden, B, scales, X[:0], empty, history, [res.grad_history], res.n_iter,
                   res.converged or int(params["max_iter"]) == 0, extra=state, message=res.message)


def predict_feedforward(levels: list[Level], state: dict, scales: list, intercept: torch.Tensor,
                        X: torch.Tensor) -> torch.Tensor:
    """Predictions (M, p) of a fitted network (``state`` = ``solver_state_``, ``scales`` = ``scales_``)."""
    weights = [(U, beta, W, None if lam is None else torch.log(lam))
               for U, beta, W, lam in zip(state["U"], state["beta"], state["W"], scales)]
    return network_forward(weights, intercept, X)[1]


#: L-BFGS iterations when ``DeepRKM(max_iter=None)``: more than the reduced-set solver's, from a random start.
DEFAULT_MAX_ITER = 600

register_solver("feedforward", fit_feedforward, check=check_feedforward, predict=predict_feedforward,
                output_last=True, max_iter=DEFAULT_MAX_ITER)
