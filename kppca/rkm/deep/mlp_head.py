"""The MLP head of the deep RKM classifier: one hidden ReLU layer, cross-entropy, trained with Adam.

Training alternates one projected-gradient step on the levels' ``H`` (MLP frozen) with
five Adam steps on the MLP (``H`` frozen), both through :func:`kppca.optim.minimize`;
Adam's moments carry over between rounds (its ``state``).
"""

from __future__ import annotations

import math

import torch

from ...optim import minimize
from .binary_model import BinaryDeepModel

__all__ = ["fit_mlp_model", "mlp_scores"]

#: Adam steps on the MLP per round.
ADAM_STEPS = 5


def mlp_scores(Z: torch.Tensor, params: list[torch.Tensor], scale: float) -> torch.Tensor:
    """Logits (M, p) of codes ``Z`` (M, s_L); the codes are multiplied by ``scale = sqrt(N)`` first."""
    return torch.relu(scale * Z @ params[0] + params[1]) @ params[2] + params[3]


def fit_mlp_model(kpca, codes: torch.Tensor, H0: torch.Tensor, gen: torch.Generator, *, n_classes: int,
                  hidden: int, ridge: float, max_iter: int, train_levels: bool):
    """Train the levels and the MLP head; returns ``(BinaryDeepModel, mlp params, input scale)``.

    ``kpca`` is the classifier's KPCA objective (``terms(H)``, ``sizes``). The weights start
    from a He initialisation drawn with ``gen`` (deterministic for a seed).
    """
    s_L = kpca.sizes[-1]
    kw = {"dtype": H0.dtype, "device": H0.device}
    params = [
        torch.randn(s_L, hidden, generator=gen, **kw) * math.sqrt(2.0 / s_L),
        torch.zeros(hidden, **kw),
        torch.randn(hidden, n_classes, generator=gen, **kw) * math.sqrt(2.0 / hidden),
        torch.zeros(n_classes, **kw),
    ]
    # Codes have entries ~ 1/sqrt(N): feed the MLP sqrt(N) h so its scale does not depend on N.
    scale = math.sqrt(codes.shape[0])

    def head(Z: torch.Tensor, P: list) -> torch.Tensor:
        return 0.5 / ridge * torch.nn.functional.cross_entropy(mlp_scores(Z, P, scale), codes, reduction="sum")

    H, hist, state = H0, [], None
    for _ in range(max_iter):
        if train_levels:
            frozen = [q.detach() for q in params]
            H = minimize(lambda Hh, P=frozen: kpca.terms(Hh) + head(Hh[:, -s_L:], P), H, method="pgd",
                         manifold="stiefel", max_iter=1, warn=False).x
        res = minimize(lambda *P, Z=H[:, -s_L:]: head(Z, list(P)), params, method="adam", manifold=None,
                       max_iter=ADAM_STEPS, lr=1e-2, state=state, warn=False)
        params, state = res.x, res.state
        with torch.no_grad():
            hist.append(float(kpca.terms(H) + head(H[:, -s_L:], params)))
    return BinaryDeepModel(H, None, None, hist, max_iter, False), [q.detach() for q in params], scale
