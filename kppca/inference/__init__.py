"""Uncertainty and inference for the PPCA models: Pyro models, ArviZ data, summaries, model selection."""

from .arviz_adapter import arviz_major_version, arviz_summary, from_groups, from_pyro_mcmc, to_inference_data
from .kpca_limit import default_sigma2_grid, kpca_limit_model, kpca_limit_sweep
from .nuts import run_nuts
from .pyro_models import (
    bayesian_model,
    bayesian_ppca_model,
    dual_latent_model,
    latent_model,
    primal_latent_model,
    subspace_coordinates,
)
from .selection import HeldoutSelection, select_by_heldout_likelihood
from .summaries import draws_summary, latent_summary, normal_hdi, sample_hdi

__all__ = [
    "latent_model",
    "primal_latent_model",
    "dual_latent_model",
    "bayesian_model",
    "bayesian_ppca_model",
    "subspace_coordinates",
    "run_nuts",
    "to_inference_data",
    "from_pyro_mcmc",
    "from_groups",
    "arviz_major_version",
    "arviz_summary",
    "latent_summary",
    "draws_summary",
    "normal_hdi",
    "sample_hdi",
    "kpca_limit_model",
    "kpca_limit_sweep",
    "default_sigma2_grid",
    "select_by_heldout_likelihood",
    "HeldoutSelection",
]
