"""Scale (issue 9): the rank rule, float32 against float64, one N x N matrix of memory, the blockwise Gram matrix."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca.base import LazyCache
from kppca._linalg import cholesky_in_place
from kppca.datasets import augmented_mnist
from kppca.features import RandomFourierFeatures
from kppca.kernels import RBF, Laplacian, Linear, Polynomial
from kppca.kernels.gram import gram_matrix
from kppca.kernels.rank import count_distinct_rows, structural_rank

EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)


# ----------------------------------------------------------------------------- the rank rule
def test_structural_rank_rules(rng):
    X = rng.normal(size=(30, 3))
    Xdup = np.vstack([X, X[:5]])  # 5 repeated rows add no direction
    T = torch.as_tensor
    assert count_distinct_rows(T(Xdup)) == 30
    for kernel in (RBF(1.0), Laplacian(2.0)):
        assert structural_rank(kernel, T(Xdup), center=True) == 29
        assert structural_rank(kernel, T(Xdup), center=False) == 30
    # explicit finite maps: the rank of the centered features (3 here), in float64 whatever the dtype
    assert structural_rank(Linear(), T(Xdup), center=True) == 3
    assert structural_rank(Linear(), T(Xdup, dtype=torch.float32), center=True) == 3
    collinear = np.hstack([X[:, :1], 3 * X[:, :1], X[:, 1:]])  # 4 columns of rank 3
    assert structural_rank(Linear(), T(collinear), center=True) == 3
    fmap = RandomFourierFeatures(1.0, n_features=8, random_state=0).fit(X)
    assert structural_rank(fmap.as_kernel(), T(X), center=True) == 8
    # polynomial: counted on its exact map. 10 monomials of degree <= 2 in 3 variables, of which
    # centering removes the constant: 9; 6 of degree exactly 2 (coef0 = 0) and 5 points: 4.
    assert structural_rank(Polynomial(2, 1.0), T(X), center=True) == 9
    assert structural_rank(Polynomial(2, 1.0), T(X), center=False) == 10
    assert structural_rank(Polynomial(2, 0.0), T(X[:5]), center=True) == 4
    # points on a circle satisfy x^2 + y^2 = 1: the 5 non-constant monomials span only 4 directions
    t = rng.uniform(0, 2 * np.pi, size=40)
    circle = np.column_stack([np.cos(t), np.sin(t)])
    assert structural_rank(Polynomial(2, 1.0), T(circle), center=True) == 4
    # too many features to form (C(102, 2) > 4096): no structural rule, the model counts numerically
    assert structural_rank(Polynomial(2, 1.0), T(rng.normal(size=(5, 100))), center=True) is None
    # a callable declares nothing: the model counts numerically
    from kppca.kernels import CallableKernel

    assert structural_rank(CallableKernel(lambda A, B: A @ B.T), T(X), center=True) is None


@pytest.mark.parametrize("shape", [(25, 40), (40, 25)])  # the d > n (centered copy) and d <= n (scatter) paths
def test_feature_rank_leaves_the_features_untouched(rng, shape):
    """The linear kernel's features are X itself: counting their rank must not center X in place
    (a float64 ``.to`` returns the same tensor), neither the array given nor the model's X_fit_."""
    X = torch.as_tensor(rng.normal(size=shape) + 1.0)
    before = X.clone()
    structural_rank(Linear(), X, center=True)
    assert torch.equal(X, before)
    model = DualPPCA(2, kernel=Linear()).fit(X)
    assert torch.equal(model.X_fit_, before)


@pytest.mark.parametrize("data", ["gaussian", "circle"])
def test_dual_polynomial_kernel_equals_primal_exact_map(rng, data):
    """The polynomial kernel's rank and sigma2 equal those of its exact feature map in the primal."""
    from kppca.features import PolynomialFeatures

    if data == "circle":
        t = rng.uniform(0, 2 * np.pi, size=60)
        X = np.column_stack([np.cos(t), np.sin(t)]) * 1.5
    else:
        X = rng.normal(size=(60, 3))
    q = 2
    dual = DualPPCA(q, kernel=Polynomial(2, 1.0)).fit(X)
    primal = PrimalPPCA(q, feature_map=PolynomialFeatures(2, 1.0)).fit(X)
    assert dual.rank_ == primal.rank_ == (4 if data == "circle" else 9)
    # sigma2 = (trace - top q) / (N (r - q)): each side's eigenvalues carry ~ N eps max|K| of rounding.
    K = Polynomial(2, 1.0).gram(torch.as_tensor(X), torch.as_tensor(X))
    atol = 8 * (q + 1) * len(X) * EPS64 * float(K.abs().max()) / (len(X) * (dual.rank_ - q))
    assert abs(dual.sigma2_ - primal.sigma2_) <= atol


def test_sigma2_below_the_rounding_level_is_an_error(rng):
    """A very smooth kernel on 2-d data: the discarded variance (~1e-5) is resolved in float64 but
    below float32's rounding level of the matrix (~4e-3), where sigma2 would be noise (90 % off)."""
    X = rng.normal(size=(1500, 2))
    assert DualPPCA(5, kernel=RBF(30.0), dtype="float64").fit(X).sigma2_ > 0
    with pytest.raises(ValueError, match="below the rounding level.*dtype='float64'"):
        DualPPCA(5, kernel=RBF(30.0), dtype="float32").fit(X)


def test_dual_linear_rank_equals_primal_rank_in_both_dtypes(rng):
    """Digits have constant pixels: the rank (61 < 64) is decided on the features, identically for
    the dual linear kernel and the primal, in float32 and float64."""
    from sklearn.datasets import load_digits

    X = load_digits().data[:400]
    ranks = {
        (cls.__name__, dtype): cls(3, dtype=dtype).fit(X).rank_
        for cls in (DualPPCA, PrimalPPCA)
        for dtype in ("float64", "float32")
    }
    assert len(set(ranks.values())) == 1 and next(iter(ranks.values())) < 64


# ----------------------------------------------------------------------------- float32 vs float64
@pytest.fixture(scope="module")
def digits3000() -> np.ndarray:
    X, _ = augmented_mnist(3000, random_state=0, dtype="float32")
    return X


@pytest.mark.parametrize("solver", ["dense", "partial"])
def test_float32_agrees_with_float64(digits3000, solver):
    """Same data (float32 inputs, exactly representable in float64), two precisions of arithmetic.

    The float32 centered Gram matrix differs from the float64 one by at most ``4 eps32 max|K|`` per
    entry, so (Weyl) every eigenvalue moves by at most ``tol = N eps32 max(lam_1, 4 max|K|)``
    (``max|K| = 1`` for the RBF kernel); sigma2 combines the float64 trace and ``q`` eigenvalues:
    ``|d sigma2| <= (q + 1) tol / (N (r - q))``. The rank is structural: equal.
    """
    N, q = digits3000.shape[0], 10
    X32, X64 = digits3000, digits3000.astype(np.float64)
    m64 = DualPPCA(q, kernel=RBF(5.0), eigen_solver=solver, random_state=0).fit(X64)
    m32 = DualPPCA(q, kernel=RBF(5.0), eigen_solver=solver, random_state=0).fit(X32)
    assert m32.eigenvalues_.dtype == torch.float32 and m64.eigenvalues_.dtype == torch.float64
    assert m32.rank_ == m64.rank_ == N - 1
    lam64 = m64.eigenvalues_.numpy()
    tol = N * EPS32 * max(float(lam64[0]), 4.0)
    assert np.all(np.abs(m32.eigenvalues_.numpy().astype(np.float64) - lam64) <= tol)
    assert abs(m32.sigma2_ - m64.sigma2_) <= (q + 1) * tol / (N * (N - 1 - q))
    # the bound is not vacuous: it is below 1 % of what it bounds
    assert tol < 0.01 * lam64[-1] and (q + 1) * tol / (N * (N - 1 - q)) < 0.01 * m64.sigma2_


# ----------------------------------------------------------------------------- memory
_PEAK_SCRIPT = textwrap.dedent(
    """
    import resource, sys
    import numpy as np
    from kppca import DualPPCA
    from kppca.kernels import RBF

    N = int(sys.argv[1])
    X = np.random.default_rng(0).normal(size=(N, 20))
    # warm-up on a small problem, so that library code and workspaces are already resident
    DualPPCA(5, kernel=RBF(6.0), eigen_solver="partial", random_state=0).fit(X[:300]).sample_kernel(2)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model = DualPPCA(5, kernel=RBF(6.0), eigen_solver="partial", random_state=0).fit(X)
    fit = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model.sample_kernel(64, random_state=0)  # the lazy Cholesky factor, in place of K_c
    sample = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print((fit - base) * 1024, (sample - base) * 1024)
    """
)


#: The peak-memory probes run in a fresh process with glibc's mmap threshold fixed at 128 KiB: every
#: buffer larger than that is mapped on allocation and unmapped on free, so the peak is what the code
#: holds at once. With glibc's default (a threshold that rises after each large free), freed row
#: blocks stay in the heap and the same run peaked anywhere between 0.58 and 0.67 N^2 x 8 bytes in
#: float32 (the target is 0.65): a measurement of the allocator's history, not of kppca.
_MEASURE_ENV = {"OMP_NUM_THREADS": "1", "PATH": "", "MALLOC_MMAP_THRESHOLD_": "131072"}


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux only")
def test_partial_fit_and_sampling_keep_one_n_by_n_matrix():
    """Peak RSS of a partial fit, then of sampling, in a fresh process: one N x N float64 matrix
    (the centered Gram matrix, then the Cholesky factor written over it), plus O(N) vectors and
    fixed-size blocks (8 MiB of float64 column sums)."""
    N = 4000
    out = subprocess.run(
        [sys.executable, "-c", _PEAK_SCRIPT, str(N)], capture_output=True, text=True, check=True,
        env=_MEASURE_ENV,
    )
    fit_bytes, sample_bytes = map(float, out.stdout.split())
    budget = 1.3 * N * N * 8 + 64 * N * 8
    assert fit_bytes <= budget, f"fit peaked at {fit_bytes / (N * N * 8):.2f} x N^2 x 8 bytes"
    assert sample_bytes <= budget, f"sampling peaked at {sample_bytes / (N * N * 8):.2f} x N^2 x 8 bytes"


_TARGET_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from kppca import DualPPCA
    from kppca.kernels import RBF

    def status(field):
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(field + ":"))

    N, dtype = int(sys.argv[1]), sys.argv[2]
    X = np.random.default_rng(0).normal(size=(N, 20)).astype(dtype)
    # warm-up on a small problem, so that library code and workspaces are already resident
    small = DualPPCA(10, kernel=RBF(5.0), random_state=0).fit(X[:1100])
    small.transform(X[:5]); small.sample_kernel(2, random_state=0); small.sample(2, random_state=0)
    del small
    base = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # VmHWM := VmRSS
    model = DualPPCA(10, kernel=RBF(5.0), random_state=0).fit(X)
    fit = status("VmHWM")
    model.transform(X)
    model.sample_kernel(64, random_state=0)
    model.sample(64, random_state=0)  # the default (latent "auto": the mixture on the training codes)
    print(fit - base, status("VmHWM") - base)
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/self/status and clear_refs are Linux only")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_dual_fit_memory_targets(dtype):
    """Issue 20: peak RSS of ``DualPPCA(10, kernel=RBF(5)).fit(X)`` at N = 4,000 was 1.57 N^2 x 8 bytes
    and 1.9-2.0 after transform, sample_kernel and sample. Targets: 1.2 and 1.3 (float64), about half
    in float32. The budget is the N x N buffer (K_c, then its Cholesky factor in place) plus row blocks
    of at most N / 32 rows and their two or three temporaries."""
    N = 4000
    out = subprocess.run(
        [sys.executable, "-c", _TARGET_SCRIPT, str(N), dtype], capture_output=True, text=True, check=True,
        env=_MEASURE_ENV,
    )
    fit_bytes, all_bytes = map(float, out.stdout.split())
    unit = N * N * 8
    fit_target, all_target = (1.2, 1.3) if dtype == "float64" else (0.6, 0.65)
    assert fit_bytes <= fit_target * unit, f"fit peaked at {fit_bytes / unit:.3f} x N^2 x 8 bytes"
    assert all_bytes <= all_target * unit, f"fit + transform + sampling peaked at {all_bytes / unit:.3f} x N^2 x 8"


# ----------------------------------------------------------------------------- blockwise Gram matrix
@pytest.mark.parametrize("kernel", [RBF(1.3), Laplacian(2.0), Linear(), Polynomial(3, 1.0)], ids=repr)
def test_gram_matrix_in_blocks_equals_one_shot(rng, kernel):
    X = torch.as_tensor(rng.normal(size=(53, 4)))
    K = gram_matrix(kernel, X, batch_size=7)
    ref = kernel.gram(X, X)
    assert torch.equal(K, K.T)  # mirrored blocks: exactly symmetric
    torch.testing.assert_close(K.diagonal(), kernel.diag(X), rtol=0, atol=0)
    # Each entry is one kernel evaluation of O(1)-sized numbers: (D + 3) eps relative to the
    # largest input of that evaluation (|x| |y| for the products, 1 for the stationary kernels).
    norms = X.norm(dim=1)
    size = torch.outer(norms, norms) if isinstance(kernel, (Linear, Polynomial)) else torch.ones_like(K)
    if isinstance(kernel, Polynomial):
        size = (size + 1.0) ** 3 * 3
    assert bool(((K - ref).abs() <= 7 * torch.finfo(K.dtype).eps * size.clamp(min=1.0)).all())


def test_gram_matrix_rejects_an_asymmetric_callable(rng):
    from kppca.kernels import CallableKernel

    X = torch.as_tensor(rng.normal(size=(20, 3)))
    with pytest.raises(ValueError, match="not symmetric"):
        gram_matrix(CallableKernel(lambda A, B: A @ B.T + A[:, :1]), X, batch_size=6)


def test_a_callable_returning_its_own_matrix_is_not_modified(rng):
    """fit centers its Gram matrix in place: a precomputed matrix handed out by the kernel function
    (here a view of the user's array) must be copied first."""
    X = rng.normal(size=(30, 3))
    G = X @ X.T + 1.0
    before = G.copy()
    DualPPCA(2, kernel=lambda A, B: G[: len(A), : len(B)]).fit(X)
    np.testing.assert_array_equal(G, before)


def test_cholesky_in_place(rng):
    A = rng.normal(size=(40, 5))
    K = torch.as_tensor(A @ A.T + np.eye(40))
    ref = torch.linalg.cholesky(K)
    L = cholesky_in_place(K.clone())
    # both are LAPACK potrf on the same matrix
    torch.testing.assert_close(L, ref, rtol=0, atol=40 * torch.finfo(K.dtype).eps * float(ref.abs().max()) ** 2)
    assert cholesky_in_place(torch.as_tensor(-np.eye(3))) is None


def test_lazy_cache_is_pickled_empty_and_deep_copied_whole():
    import copy
    import pickle

    cache = LazyCache()
    assert cache.get("a", lambda: [1]) == [1] and cache.get("a", lambda: [2]) == [1]
    assert len(pickle.loads(pickle.dumps(cache))) == 0
    copied = copy.deepcopy(cache)
    assert copied.peek("a") == [1] and copied.peek("a") is not cache.peek("a")


def test_structural_rank_of_kernel_expressions(rng):
    """Sums and products keep the rule: a strictly PD summand makes the sum strictly PD, products of
    strictly PD kernels are strictly PD (Schur), explicit maps concatenate (sums) or multiply (products)."""
    from kppca.kernels.base import ColumnKernel

    X = torch.as_tensor(rng.normal(size=(30, 3)))
    assert structural_rank(RBF(1.0) + Linear(), X, center=True) == 29
    assert structural_rank(RBF(1.0) * Laplacian(1.0), X, center=True) == 29
    assert structural_rank(Linear() + Linear(), X, center=True) == 3  # k + k has the features of k
    assert structural_rank(Linear() * Linear(), X, center=True) == 6  # symmetric products x_i x_j
    assert structural_rank(ColumnKernel(Linear(), [0, 1]), X, center=True) == 2
    assert structural_rank(RBF(1.0) * Linear(), X, center=True) is None  # counted numerically
