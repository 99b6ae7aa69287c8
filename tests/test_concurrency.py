"""Fitted models shared by threads: first calls made concurrently give bitwise the single-threaded results.

Everything a fitted model computes lazily (the Gram factors, eigendecompositions, hub scores, latent
mixtures, learned pre-image maps) is built once under a lock and never overwritten while another thread
reads it (issue 40). Every read-only public method of every estimator is called from 8 threads at once on
a freshly fitted model, each thread in its own order, and compared bit for bit with the value the same
call gives alone on its own freshly fitted model, so a result that depends on which call ran first fails too.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
from typing import Any, Callable

import numpy as np
import pytest
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca.features import Nystroem
from kppca.kernels import RBF
from kppca.rkm import (
    DeepRKMClassifier,
    KernelPCARKM,
    KernelPMF,
    LSSVMClassifier,
    LSSVMRegressor,
    MultiViewKPCA,
    SubsetEnsembleClassifier,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # short fits by design


N_THREADS = 8
rng = np.random.default_rng(0)
# The first 240 rows for most setups; all 1,100 where a cubic factorisation makes the race window wide.
X_ALL = rng.normal(size=(1100, 4))
Y_ALL = (X_ALL[:, 0] + 0.5 * X_ALL[:, 1] > 0).astype(int)
X, y = X_ALL[:240], Y_ALL[:240]
Q = np.random.default_rng(1).normal(size=(9, 4))

Call = Callable[[Any], Any]


def _ppca_calls(q: int) -> dict[str, Call]:
    h = np.random.default_rng(2).normal(size=(5, q))
    return {
        "score": lambda m: m.score(Q),
        "score_samples": lambda m: m.score_samples(Q),
        "transform": lambda m: m.transform(Q),
        "transform(X_train)": lambda m: m.transform(X),
        "novelty_score": lambda m: m.novelty_score(Q),
        "inverse_transform": lambda m: m.inverse_transform(h),
        "reconstruct": lambda m: m.reconstruct(Q),
        "sample": lambda m: m.sample(6, random_state=0),
        "sample(prior)": lambda m: m.sample(6, random_state=1, latent="prior"),
        "sample(y)": lambda m: m.sample(6, random_state=2, y=1),
        "latent_traversal": lambda m: m.latent_traversal(n_steps=3),
        "latent_posterior": lambda m: m.latent_posterior(Q).covariance_matrix,
    }


def _dual_calls() -> dict[str, Call]:
    return {
        **_ppca_calls(3),
        "sample_kernel": lambda m: m.sample_kernel(4, random_state=0),
        "centered_kernel": lambda m: m.centered_kernel(Q),
        "reconstruct_kernel": lambda m: m.reconstruct_kernel(Q),
        "kernel_preimage": lambda m: m.kernel_preimage(m.sample_kernel(2, random_state=3)),
        "kernel_conditional": lambda m: m.kernel_conditional(np.ones((2, 3))).loc,
        "marginal_scales": lambda m: m.marginal_scales(),
    }


def _predictor_calls(*names: str) -> dict[str, Call]:
    return {name: (lambda m, name=name: getattr(m, name)(Q)) for name in names}


# (id, a factory of the unfitted estimator, training rows, whether fit takes y, the calls)
SETUPS: list[tuple[str, Callable[[], Any], int, bool, dict[str, Call]]] = [
    ("DualPPCA-dense", lambda: DualPPCA(3, kernel=RBF(1.5), random_state=0), 240, True, _dual_calls()),
    ("DualPPCA-partial", lambda: DualPPCA(3, kernel=RBF(1.5), eigen_solver="partial", random_state=0), 1100, True,
     _dual_calls()),
    # The hub scores by the sampled passes (compiled where numba is installed), not from whole rows: see __main__.
    ("DualPPCA-passes", lambda: DualPPCA(3, kernel=RBF(1.5), eigen_solver="partial", random_state=0), 1100, True,
     _dual_calls()),
    ("PrimalPPCA-identity", lambda: PrimalPPCA(2, random_state=0), 240, True, _ppca_calls(2)),
    ("PrimalPPCA-nystroem", lambda: PrimalPPCA(3, feature_map=Nystroem(RBF(1.5), n_landmarks=60, random_state=0),
                                               random_state=0), 240, True, _ppca_calls(3)),
    ("LSSVMRegressor", lambda: LSSVMRegressor(kernel=RBF(1.5)), 240, True, _predictor_calls("predict")),
    ("LSSVMClassifier", lambda: LSSVMClassifier(kernel=RBF(1.5)), 240, True,
     _predictor_calls("predict", "decision_function", "predict_proba")),
    ("KernelPCARKM", lambda: KernelPCARKM(2, kernel=RBF(1.5)), 240, False, _predictor_calls("transform")),
    ("KernelPMF", lambda: KernelPMF(), 240, True, _predictor_calls("predict", "predict_proba", "score_samples")),
    ("MultiViewKPCA", lambda: MultiViewKPCA(random_state=0), 240, False, _predictor_calls("transform")),
    ("DeepRKMClassifier", lambda: DeepRKMClassifier((2,), max_iter=200, random_state=0), 240, True,
     _predictor_calls("predict", "decision_function")),
    ("SubsetEnsembleClassifier", lambda: SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=40,
                                                                  random_state=0), 240, True,
     _predictor_calls("predict", "decision_function")),
]


def _fit(make: Callable[[], Any], rows: int, with_y: bool) -> Any:
    model = make()
    return model.fit(X_ALL[:rows], Y_ALL[:rows]) if with_y else model.fit(X_ALL[:rows])


def _bits(value: Any) -> bytes:
    """The exact bits of a result (array, tensor or number), with its dtype and shape."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    arr = np.ascontiguousarray(np.asarray(value))
    return repr((arr.dtype.str, arr.shape)).encode() + arr.tobytes()


def check_setup(name: str) -> None:
    """Raise AssertionError unless concurrent first calls on the setup ``name`` give the single-threaded bits."""
    make, rows, with_y, calls = next(setup[1:] for setup in SETUPS if setup[0] == name)
    # Each call alone, on its own freshly fitted model: the reference (no call can depend on another).
    reference = {key: _bits(call(_fit(make, rows, with_y))) for key, call in calls.items()}
    keys = list(calls)
    # One round per method: on a fresh model all threads make that first call at the same instant (the
    # race on a lazily built part), then two more calls each, in an order of their own (order dependence).
    for first in keys:
        model = _fit(make, rows, with_y)
        barrier = threading.Barrier(N_THREADS)
        results: list[tuple[str, bytes]] = []
        errors: list[BaseException] = []

        def worker(seed: int) -> None:
            order = [first, *random.Random(seed).choices(keys, k=2)]
            try:
                barrier.wait()
                for key in order:
                    results.append((key, _bits(calls[key](model))))
            except BaseException as exc:  # reported below, in the checking thread
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(N_THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, f"{name}, first call {first}: {errors[0]!r}"
        wrong = sorted({key for key, bits in results if bits != reference[key]})
        assert not wrong, f"{name}, first call {first}: {wrong} differ from the single-threaded results"
        assert len(results) == 3 * N_THREADS


@pytest.mark.parametrize("name", [s[0] for s in SETUPS])
def test_first_calls_from_many_threads_are_bitwise_the_single_threaded_ones(name):
    """Run in a fresh process with one OpenMP/MKL thread fixed before torch loads. Bitwise equality needs the
    same thread count in every Python thread: ``torch.set_num_threads`` in the test would set the calling
    thread's OpenMP count only (new threads start from OMP_NUM_THREADS), and MKL lowers its own count when
    several threads call it at once (MKL_DYNAMIC) — both move rounding, not values."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


if __name__ == "__main__":
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    warnings.simplefilter("ignore", ConvergenceWarning)  # short fits by design
    if sys.argv[1].endswith("-passes"):
        from kppca._linalg import row_selection

        row_selection.DIRECT_MAX, row_selection.N_SAMPLE = 0, 256  # at 1,100 rows the passes would not run
    check_setup(sys.argv[1])
