"""Latent distributions to sample from: the model's prior, or a mixture fitted on the training codes.

Training codes cluster (digits by class), and a draw from the prior ``N(0, I_q)`` often lands between
clusters; as Gen-RKM (Pandey et al.), sample instead from a Gaussian mixture fitted on the training codes,
in torch, drawn with the caller's generator (reproducible, on the model's device).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..._param_validation import Integral, Interval, StrOptions, check_scalar

__all__ = ["LatentMixture", "fit_latent_mixture", "mixture_components", "standard_normal_codes", "LATENTS",
           "MIXTURE_COMPONENTS", "CLASS_MIXTURE_COMPONENTS", "N_INIT"]

#: Latent distributions accepted by ``sample(latent=...)`` (``"auto"``, the default, is explained there).
LATENTS: tuple[str, ...] = ("prior", "mixture", "auto")

#: Components of the mixture on all training codes: ``"auto"`` is :func:`mixture_components` of the number of
#: codes (fewer below ``5 (q + 1)`` codes per component in any case).
MIXTURE_COMPONENTS: int | str = "auto"

#: The rule of :func:`mixture_components`: one component per this many codes, within these bounds
#: (``benchmarks/mnist_data_size.py``: at N = 2,000, 10, 20 and 50 components gave the same digits; at 5,000,
#: 30 gave closer ones than 10; at 20,000 and 50,000, with the last EM iteration on all codes, 60 gave closer
#: ones than 30 for the same EM time, and more closer still at a growing cost).
CODES_PER_COMPONENT = 200
MIN_COMPONENTS, MAX_COMPONENTS = 10, 60

#: EM starts (k-means seeds) of a mixture on at most :data:`MAX_EM_CODES` codes; the one of highest training
#: log-likelihood is kept, as scikit-learn's ``n_init``: one start moved the default's Fréchet distance by +-7 %
#: between seeds. Beyond that many codes, ``N_INIT_MANY_CODES`` starts (on the subset): at 50,000 codes one gave
#: digits as close as four, at a third of the time.
N_INIT, N_INIT_MANY_CODES = 4, 1

#: Components of each class's mixture (class-conditional sampling).
CLASS_MIXTURE_COMPONENTS = 3

#: Added to every covariance's diagonal (scikit-learn's ``reg_covar``): a collapsed component stays PD.
REG_COVAR = 1e-6

#: EM stops when the mean log-likelihood per code changes by less than this (scikit-learn's default
#: 1e-3 takes twice the iterations for samples as good), or after ``MAX_EM_ITER`` iterations.
EM_TOL = 1e-2
MAX_EM_ITER = 100
#: With several starts, each runs this many EM iterations and only the most likely goes on to convergence: the
#: starts cost a fraction of full runs (4 full runs on 10,000 codes, 30 components, took 3x the fit at N = 10,000).
SHORT_EM_ITER = 10
#: The starts and the run to convergence use at most this many codes (a random subset beyond), then
#: ``REFINE_EM_ITER`` iterations run on all codes: most of the cost on the subset, the covariances from all codes
#: (at 50,000 codes, one iteration on all of them gave digits as close as five or a run to convergence).
#: E-steps work on blocks of this many codes, so EM's memory does not grow with the codes either.
MAX_EM_CODES = 10_000
REFINE_EM_ITER = 1
MAX_KMEANS_ITER = 100


@dataclass(frozen=True, eq=False)
class LatentMixture:
    """A Gaussian mixture over latent codes, ready to sample in torch.

    Attributes
    ----------
    weights : Tensor of shape (K,)
    means : Tensor of shape (K, q)
    scale_trils : Tensor of shape (K, q, q)
        Cholesky factors of the component covariances.
    """

    weights: torch.Tensor
    means: torch.Tensor
    scale_trils: torch.Tensor

    def sample(self, n: int, generator: torch.Generator | None = None, qmc: bool = False) -> torch.Tensor:
        """``n`` codes, shape (n, q), drawn with ``generator``; ``qmc``: from a scrambled Sobol sequence.

        With ``qmc`` each code is still a draw from the mixture: the sequence's first coordinate picks the
        component by inverting the weights' cumulative sum, so the components (the classes) appear in proportion
        to their weights up to a draw or two each, and the others are normal quantiles within it.
        """
        n, q = int(n), self.means.shape[1]
        if qmc:
            u = _sobol_uniforms(n, q + 1, generator, self.means.device)
            cdf = torch.cumsum(self.weights.double(), 0)
            comp = torch.searchsorted(cdf / cdf[-1], u[:, 0].contiguous(), right=True).clamp_(max=cdf.numel() - 1)
            z = torch.special.ndtri(u[:, 1:]).to(self.means.dtype)
        else:
            comp = torch.multinomial(self.weights, n, replacement=True, generator=generator)
            z = torch.randn((n, q), generator=generator, dtype=self.means.dtype, device=self.means.device)
        return self.means[comp] + (self.scale_trils[comp] @ z[:, :, None])[:, :, 0]


def standard_normal_codes(n: int, q: int, generator: torch.Generator | None, qmc: bool, dtype: torch.dtype,
                          device: torch.device) -> torch.Tensor:
    """``n`` draws of ``N(0, I_q)``, (n, q): independent, or the normal quantiles of a scrambled Sobol sequence."""
    if qmc:
        return torch.special.ndtri(_sobol_uniforms(n, q, generator, device)).to(dtype)
    return torch.randn((n, q), generator=generator, dtype=dtype, device=device)


def _sobol_uniforms(n: int, d: int, generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """The first ``n`` points of a Sobol sequence in ``d`` dimensions, scrambled with a seed from ``generator``.

    Scrambled (a random linear matrix scramble and digital shift), each point is uniform on the unit cube; together
    they fill it more evenly than independent points (quasi-Monte Carlo). Float64, (n, d), on ``device``.
    """
    if d > torch.quasirandom.SobolEngine.MAXDIM:
        raise ValueError(f"qmc=True needs a Sobol sequence of {d} dimensions (the latent ones, plus one for a "
                         f"mixture's component); torch's have at most {torch.quasirandom.SobolEngine.MAXDIM}. "
                         "Pass qmc=False for independent draws.")
    seed_device = generator.device if generator is not None else "cpu"
    seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=seed_device))
    u = torch.quasirandom.SobolEngine(d, scramble=True, seed=seed).draw(n, dtype=torch.float64)
    # A scrambled point may be exactly 0 (probability 2^-53 a coordinate), whose normal quantile is -inf.
    return u.clamp_(2.0**-53, 1.0 - 2.0**-53).to(device)


def mixture_components(n_codes: int) -> int:
    """The default number of mixture components for ``n_codes`` training codes: ``n_codes // 200`` in [10, 60]."""
    return int(min(MAX_COMPONENTS, max(MIN_COMPONENTS, n_codes // CODES_PER_COMPONENT)))


def _nearest(H: torch.Tensor, sq_norms: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
    """Index of the nearest centre of each row of ``H`` (M,): ``|h|^2 - 2 h.c + |c|^2`` by one product."""
    return torch.addmm((centers**2).sum(1)[None, :], H, centers.T, alpha=-2.0).add_(sq_norms[:, None]).argmin(1)


def _kmeans_labels(H: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
    """Labels (M,) of Lloyd's k-means from greedy k-means++ seeds (``2 + log k`` candidates, as scikit-learn)."""
    M = H.shape[0]
    sq_norms = (H**2).sum(1)
    first = int(torch.randint(M, (1,), generator=generator, device=H.device))
    centers = H[first : first + 1]
    d2 = ((H - centers) ** 2).sum(1)
    trials = 2 + int(math.log(k))
    for _ in range(1, k):
        weights = d2 if float(d2.sum()) > 0 else torch.ones_like(d2)
        picks = torch.multinomial(weights, trials, replacement=True, generator=generator)
        # squared distances to each candidate (trials, M), then the candidate that lowers the potential most
        cand = torch.minimum(d2[None, :], torch.cdist(H[picks], H).pow_(2))
        best = int(cand.sum(1).argmin())
        centers = torch.cat([centers, H[picks[best]][None, :]])
        d2 = cand[best]
    labels = _nearest(H, sq_norms, centers)
    for _ in range(MAX_KMEANS_ITER):
        counts = torch.bincount(labels, minlength=k).to(H.dtype)
        sums = H.new_zeros(k, H.shape[1]).index_add_(0, labels, H)
        keep = counts > 0  # an emptied cluster keeps its centre
        centers = torch.where(keep[:, None], sums / counts.clamp(min=1.0)[:, None], centers)
        new = _nearest(H, sq_norms, centers)
        if torch.equal(new, labels):
            break
        labels = new
    return labels


def _m_step(H: torch.Tensor, resp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Weights (K,), means (K, q) and Cholesky factors (K, q, q) maximising the expected log-likelihood."""
    nk = resp.sum(0) + 10 * torch.finfo(H.dtype).eps  # as scikit-learn: no empty component divides by 0
    means = (resp.T @ H) / nk[:, None]
    K, q = means.shape
    cov = H.new_empty(K, q, q)
    components, codes = _contributing_codes(H, resp, means)
    counts = torch.bincount(components, minlength=K).tolist()
    start, j = 0, 0
    while j < K:
        # the kept terms of components j..stop-1 at once, at most M of them (one component's worth at most):
        # no more memory than a loop over the components
        stop, size = j + 1, counts[j]
        while stop < K and size + counts[stop] <= H.shape[0]:
            size, stop = size + counts[stop], stop + 1
        rows, comps = codes[start : start + size], components[start : start + size]
        # centred codes (as scikit-learn): no cancellation for codes far from the origin
        diff = H[rows] - means[comps]
        weighted = diff * resp[rows, comps][:, None]
        offset = 0
        for i in range(j, stop):
            torch.mm(weighted[offset : offset + counts[i]].T, diff[offset : offset + counts[i]], out=cov[i])
            offset += counts[i]
        start, j = start + size, stop
    cov /= nk[:, None, None]
    cov.diagonal(dim1=1, dim2=2).add_(REG_COVAR)
    return nk / nk.sum(), means, torch.linalg.cholesky(cov)


def _contributing_codes(H: torch.Tensor, resp: torch.Tensor, means: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The pairs ``(components, codes)``, (P,) each, sorted by component, then code, whose terms the covariances need.

    Responsibilities are sparse (on MNIST codes, q = 50, 30 components: 8 % of them above 1e-30), so most terms
    ``r_ij (h_i - mu_j)(h_i - mu_j)^T`` of component j's sum are far below its rounding. A term is left out when
    ``c_ij = r_ij |h_i - mu_j|^2``, which bounds its every entry, is below ``eps / M`` of the column's sum
    ``sum_i c_ij``: all those left out then move each entry by at most ``eps sum_i c_ij = eps nk_j tr(Sigma_j)``,
    less than the backward error of the covariance's own Cholesky factor. The squared distances come from one
    product, ``|h|^2 + |mu|^2 - 2 h.mu``, raised by a bound on its rounding so that ``c`` is never underestimated.
    """
    M, q = H.shape
    eps = torch.finfo(H.dtype).eps
    sizes = (H**2).sum(1)[:, None] + (means**2).sum(1)[None, :]
    sq = torch.addmm(sizes, H, means.T, alpha=-2.0).clamp_min_(0).add_(sizes, alpha=(q + 3) * eps)
    c = resp * sq
    keep = c >= c.sum(0) * (eps / M)
    components, codes = keep.T.nonzero().unbind(1)
    return components, codes


def _log_weighted_densities(H: torch.Tensor, weights: torch.Tensor, means: torch.Tensor, trils: torch.Tensor,
                            scratch: torch.Tensor | None = None) -> torch.Tensor:
    """``log w_k + log N(h_i | mu_k, L_k L_k^T)``, shape (M, K); ``scratch``: an (M, K q) buffer to work in."""
    K, q = means.shape
    eye = torch.eye(q, dtype=H.dtype, device=H.device).expand(K, q, q)
    P = torch.linalg.solve_triangular(trils, eye, upper=False)  # L_k^{-1}
    # y_ik = L_k^{-1} (h_i - mu_k) for all k by one (M, q) x (q, K q) product, in a buffer reused between EM
    # iterations: a fresh (M, K q) array each time cost more in page faults than the product (35 ms against 20 ms
    # at M = 10,000, K = 30, q = 50)
    y = torch.mm(H, P.mT.permute(1, 0, 2).reshape(q, K * q), out=scratch).view(-1, K, q)
    y.sub_((P @ means[:, :, None])[None, :, :, 0])
    log_det = torch.log(trils.diagonal(dim1=1, dim2=2)).sum(1)  # log sqrt(det)
    return -0.5 * (q * math.log(2 * math.pi) + y.square_().sum(2)) - log_det + torch.log(weights)


def _kmeans_start(H: torch.Tensor, k: int, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    """``(weights, means, trils)`` of the k-means clusters of ``H`` (EM's start)."""
    labels = _kmeans_labels(H, k, generator)
    return _m_step(H, torch.nn.functional.one_hot(labels, k).to(H.dtype))


def _e_step(H: torch.Tensor, params: tuple[torch.Tensor, ...], scratch: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Responsibilities (M, K) and the mean log-likelihood per code, over blocks of ``len(scratch)`` codes."""
    resp = H.new_empty(H.shape[0], params[1].shape[0])
    log_norm = H.new_empty(H.shape[0], 1)
    for i in range(0, H.shape[0], scratch.shape[0]):
        rows = slice(i, i + scratch.shape[0])
        log_p = _log_weighted_densities(H[rows], *params, scratch[: len(resp[rows])])
        torch.logsumexp(log_p, dim=1, keepdim=True, out=log_norm[rows])
        torch.exp(log_p - log_norm[rows], out=resp[rows])
    return resp, float(log_norm.mean())


def _em(H: torch.Tensor, params: tuple[torch.Tensor, ...], max_iter: int) -> tuple[float, tuple, bool]:
    """At most ``max_iter`` EM iterations from ``params``: the last mean log-likelihood per code, the
    parameters ``(weights, means, trils)`` and whether it converged (a change below :data:`EM_TOL`)."""
    lower_bound = -math.inf
    scratch = H.new_empty(min(H.shape[0], MAX_EM_CODES), params[1].numel())
    for _ in range(max_iter):
        resp, mean_log_norm = _e_step(H, params, scratch)
        params = _m_step(H, resp)
        previous, lower_bound = lower_bound, mean_log_norm
        if abs(lower_bound - previous) < EM_TOL:
            return lower_bound, params, True
    return lower_bound, params, False


def fit_latent_mixture(codes: torch.Tensor, n_components: int | str, random_state: int = 0,
                       n_init: int | None = None) -> LatentMixture:
    """Fit a full-covariance Gaussian mixture to ``codes`` (M, q) by EM, in float64 on their device.

    At most ``M // (5 (q + 1))`` components (at least 1), so each covariance has enough codes. EM starts
    ``n_init`` times from k-means seeded in turn by one generator (seed ``random_state``), runs
    :data:`SHORT_EM_ITER` iterations from each, and continues the most likely to convergence (the "small EM" of
    Biernacki, Celeux and Govaert, 2003): the fit is deterministic. Beyond :data:`MAX_EM_CODES` codes, all this
    runs on a random subset of that many (drawn first), and :data:`REFINE_EM_ITER` iterations on all codes follow.

    Parameters
    ----------
    codes : Tensor of shape (M, q)
    n_components : int or "auto"
        ``"auto"``: :func:`mixture_components` of M.
    random_state : int, default 0
    n_init : int, optional
        EM starts; default :data:`N_INIT` up to :data:`MAX_EM_CODES` codes, :data:`N_INIT_MANY_CODES` beyond.

    Returns
    -------
    LatentMixture
        In the dtype and on the device of ``codes``.
    """
    subset = codes.shape[0] > MAX_EM_CODES
    n_init = int(check_scalar((N_INIT_MANY_CODES if subset else N_INIT) if n_init is None else n_init,
                              "n_init (EM starts)",
                              [Interval(Integral, 1, None, closed="left")]))
    check_scalar(n_components, "n_components", [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})])
    if n_components == "auto":
        n_components = mixture_components(codes.shape[0])
    all_codes = H = codes.detach().to(torch.float64)
    generator = torch.Generator(device=H.device).manual_seed(int(random_state))
    if subset:
        H = H[torch.randperm(H.shape[0], generator=generator, device=H.device)[:MAX_EM_CODES]]
    M, q = all_codes.shape
    k = int(max(1, min(n_components, M // (5 * (q + 1)))))
    if n_init == 1 or k == 1:  # one component needs a single start
        _, (weights, means, trils), _ = _em(H, _kmeans_start(H, k, generator), MAX_EM_ITER)
    else:
        # Short runs from every start, then only the most likely (the first of equal ones) to convergence.
        runs = [_em(H, _kmeans_start(H, k, generator), SHORT_EM_ITER) for _ in range(n_init)]
        _, params, converged = max(runs, key=lambda run: run[0])
        if not converged:
            _, params, _ = _em(H, params, MAX_EM_ITER - SHORT_EM_ITER)
        weights, means, trils = params
    if subset:
        _, (weights, means, trils), _ = _em(all_codes, (weights, means, trils), REFINE_EM_ITER)
    # Factored in float64, then rounded: a collapsed component's covariance may be too ill-conditioned for float32.
    like = dict(dtype=codes.dtype, device=codes.device)
    return LatentMixture(weights.to(**like), means.to(**like), trils.to(**like))
