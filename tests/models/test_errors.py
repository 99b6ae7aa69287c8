"""Input validation: every error names the offending argument; user data is never modified."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError

from kppca import DualPPCA, PrimalPPCA
from kppca.features import PolynomialFeatures, RandomFourierFeatures
from kppca.kernels import RBF

BOTH = [PrimalPPCA, DualPPCA]


@pytest.fixture
def X(structured_data):
    return structured_data  # (40, 6), rank 6 after centering


# ----------------------------------------------------------------------------- the data


@pytest.mark.parametrize("model_cls", BOTH)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_X(model_cls, X, bad):
    Xb = X.copy()
    Xb[3, 2] = bad
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        model_cls(2).fit(Xb)
    model = model_cls(2).fit(X)
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        model.transform(Xb)
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        model.score_samples(torch.tensor(Xb))


@pytest.mark.parametrize("model_cls", BOTH)
def test_wrong_number_of_dimensions(model_cls, X):
    with pytest.raises(ValueError, match=r"X must have 2 dimension\(s\), got shape \(6,\).*reshape\(1, -1\)"):
        model_cls(2).fit(X[0])
    with pytest.raises(ValueError, match=r"X must have 2 dimension\(s\), got shape \(2, 20, 6\)"):
        model_cls(2).fit(X.reshape(2, 20, 6))
    model = model_cls(2).fit(X)
    with pytest.raises(ValueError, match="X must have 2 dimension"):
        model.transform(X[0])


@pytest.mark.parametrize("model_cls", BOTH)
def test_feature_count_mismatch(model_cls, X):
    model = model_cls(2).fit(X)
    with pytest.raises(ValueError, match=f"X has 4 features, but {model_cls.__name__} is expecting 6 features as input"):
        model.transform(X[:, :4])
    with pytest.raises(ValueError, match="X has 7 features"):
        model.score_samples(np.hstack([X, X[:, :1]]))


@pytest.mark.parametrize("model_cls", BOTH)
def test_too_few_samples(model_cls, X):
    with pytest.raises(ValueError, match=r"X has 1 sample\(s\) \(shape=\(1, 6\)\) while a minimum of 2 is required"):
        model_cls(1).fit(X[:1])
    with pytest.raises(ValueError, match=r"X has 0 sample"):
        model_cls(1).fit(X[:0])


@pytest.mark.parametrize("model_cls", BOTH)
def test_complex_and_string_input(model_cls, X):
    with pytest.raises(ValueError, match="Complex data not supported: X is complex"):
        model_cls(2).fit(X + 1j)
    with pytest.raises(ValueError, match="Complex data not supported: X is complex"):
        model_cls(2).fit(torch.tensor(X, dtype=torch.complex128))
    with pytest.raises(TypeError, match="X has dtype <U"):
        model_cls(2).fit(X.astype(str))
    with pytest.raises(TypeError, match="X has dtype object and could not be converted to numbers"):
        model_cls(2).fit(np.array([[1.0, "a"], [None, 2.0]], dtype=object))
    # object arrays holding numbers are numbers (scikit-learn's check_dtype_object)
    assert model_cls(2).fit(X.astype(object)).n_components_ == 2


# ----------------------------------------------------------------------------- n_components and sigma2


@pytest.mark.parametrize("model_cls", BOTH)
@pytest.mark.parametrize("q", [6, 7, 100])
def test_n_components_not_below_rank(model_cls, X, q):
    msg = rf"n_components = {q} must be smaller than the rank of the centered data \(6\)"
    with pytest.raises(ValueError, match=msg):
        model_cls(q).fit(X)


def test_n_components_not_below_rank_low_rank_kernel(X):
    # linear kernel, uncentered, on 3 columns: rank 3 although N = 40
    with pytest.raises(ValueError, match="n_components = 3 must be smaller than the rank"):
        DualPPCA(3, center=False).fit(X[:, :3])


@pytest.mark.parametrize("model_cls", BOTH)
@pytest.mark.parametrize("q", [0, -2])
def test_n_components_below_one(model_cls, X, q):
    with pytest.raises(ValueError, match=rf"'n_components' parameter of {model_cls.__name__} must be an int in the range \[1, inf\), .* Got {q} instead"):
        model_cls(q).fit(X)


@pytest.mark.parametrize("model_cls", BOTH)
@pytest.mark.parametrize("q", [0.0, 1.0, 1.5, -0.3, float("nan"), 2.0])
def test_bad_float_n_components(model_cls, X, q):
    with pytest.raises(ValueError, match=r"'n_components' parameter .* a float in the range \(0, 1\).*Got .* instead"):
        model_cls(q).fit(X)


@pytest.mark.parametrize("q", ["two", [2], True])
def test_n_components_wrong_type(X, q):
    with pytest.raises(TypeError, match=r"'n_components' parameter of DualPPCA must be an int in the range \[1, inf\), a float in"):
        DualPPCA(q).fit(X)


@pytest.mark.parametrize("model_cls", BOTH)
@pytest.mark.parametrize("s2", [0.0, -1.0])
def test_sigma2_not_positive(model_cls, X, s2):
    msg = r"'sigma2' parameter .* must be a float in the range \(0, inf\) or None.*kernel PCA limit"
    with pytest.raises(ValueError, match=msg):
        model_cls(2, sigma2=s2).fit(X)
    with pytest.raises(ValueError, match=msg):
        model_cls(sigma2=s2).fit(X)


@pytest.mark.parametrize("s2", [float("nan"), float("inf"), "0.1", True])
def test_sigma2_wrong_type(X, s2):
    with pytest.raises(TypeError, match=r"'sigma2' parameter of DualPPCA must be a float in the range \(0, inf\) or None"):
        DualPPCA(2, sigma2=s2).fit(X)


@pytest.mark.parametrize("model_cls", BOTH)
def test_sigma2_too_large_with_q(model_cls, X):
    N = X.shape[0]
    Xc = X - X.mean(0)
    lam = np.linalg.eigvalsh(Xc.T @ Xc)[::-1]
    lam2 = float(model_cls(2).fit(X).eigenvalues_[1])  # the model's own lambda_2 (no rounding mismatch)
    with pytest.raises(ValueError, match=r"sigma2 = .* must be smaller than lambda_q/N"):
        model_cls(2, sigma2=lam2 / N).fit(X)  # equality is not allowed (strict)
    with pytest.raises(ValueError, match=r"sigma2 = .* must be smaller than lambda_q/N"):
        model_cls(3, sigma2=1.01 * lam[2] / N).fit(X)
    assert model_cls(2, sigma2=0.99 * lam[1] / N).fit(X).n_components_ == 2


@pytest.mark.parametrize("model_cls", BOTH)
def test_sigma2_alone_too_large(model_cls, X):
    N = X.shape[0]
    Xc = X - X.mean(0)
    lam1 = np.linalg.eigvalsh(Xc.T @ Xc)[-1]
    # At the boundary itself: numpy's lambda_1 and the model's are each within a few d eps lambda_1 of the exact
    # one, in either direction (other CPUs, other kernels), so the test steps over it by twice a bound, 32 d eps.
    at_boundary = lam1 / N * (1 + 64 * X.shape[1] * np.finfo(float).eps)
    with pytest.raises(ValueError, match=r"sigma2=.* is >= lambda_1/N"):
        model_cls(sigma2=at_boundary).fit(X)
    with pytest.raises(ValueError, match=r"sigma2=.* is >= lambda_1/N"):
        model_cls(sigma2=10 * lam1 / N).fit(X)


def test_sigma2_alone_keeping_every_direction(X):
    N = X.shape[0]
    Xc = X - X.mean(0)
    lam_min = np.linalg.eigvalsh(Xc.T @ Xc)[0]
    # q = r = 6 with a fixed sigma2: defined (no direction is needed to estimate the noise), issue 27;
    # the estimated-sigma2 model still refuses it (test_n_components_not_below_rank).
    model = DualPPCA(sigma2=0.5 * lam_min / N).fit(X)
    assert model.n_components_ == model.rank_ == 6


def test_incompatible_mode_combinations(X):
    with pytest.raises(ValueError, match="n_components='mle' chooses q and sigma2 itself"):
        DualPPCA("mle", sigma2=0.1).fit(X)
    with pytest.raises(ValueError, match="pass either a fractional n_components or sigma2"):
        PrimalPPCA(0.5, sigma2=0.1).fit(X)
    # eigen_solver='partial' where Lanczos cannot serve the request falls back to the dense solver (issue 27)
    assert DualPPCA(0.9, eigen_solver="partial").fit(X).eigen_solver_ == "dense"
    assert DualPPCA(5, sigma2=1e-6, eigen_solver="partial").fit(X).eigen_solver_ == "partial"  # 5 <= 40 - 2


# ----------------------------------------------------------------------------- other parameters


@pytest.mark.parametrize("model_cls", BOTH)
def test_other_bad_parameters(model_cls, X):
    name = model_cls.__name__
    with pytest.raises(ValueError, match=rf"'eigen_solver' parameter of {name} must be one of .*'dense'.*Got 'arpack'"):
        model_cls(2, eigen_solver="arpack").fit(X)
    with pytest.raises(TypeError, match=rf"'center' parameter of {name} must be True or False. Got 1 instead"):
        model_cls(2, center=1).fit(X)
    with pytest.raises(TypeError, match=r"'dtype' parameter .* must be None, 'float64' or 'float32'.*Got torch.float16"):
        model_cls(2, dtype=torch.float16).fit(X)
    with pytest.raises(TypeError, match=r"'dtype' parameter .*Got 'double64' instead"):
        model_cls(2, dtype="double64").fit(X)
    with pytest.raises(ValueError, match=r"random_state must be None, an int in the range \[0, 2\*\*64 - 1\]"):
        model_cls(2).fit(X).sample_kernel(2, random_state=-1) if model_cls is DualPPCA else model_cls(2).fit(
            X
        ).sample_features(2, random_state=-1)


def test_primal_feature_map_errors(X):
    with pytest.raises(TypeError, match=r"'feature_map' parameter of PrimalPPCA must be an instance of kppca.FeatureMap or None"):
        PrimalPPCA(2, feature_map=RBF()).fit(X)
    fitted = PolynomialFeatures(2).fit(X[:, :3])
    with pytest.raises(ValueError, match="feature_map was fitted on 3 features but X has 6"):
        PrimalPPCA(2, feature_map=fitted).fit(X)


def test_dual_unknown_kernel_name(X):
    with pytest.raises(ValueError, match="kernel='gaussian' is unknown"):
        DualPPCA(2, kernel="gaussian").fit(X)


# ----------------------------------------------------------------------------- invalid kernels


@pytest.mark.parametrize("solver", ["dense", "partial"])
def test_negative_definite_kernel(X, solver):
    with pytest.raises(ValueError, match="kernel"):
        DualPPCA(2, kernel=lambda A, B: -A @ B.T, eigen_solver=solver).fit(X)


@pytest.mark.parametrize("solver", ["dense", "partial"])
def test_indefinite_kernel(X, solver):
    signs = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"not positive semi-definite.*valid \(PSD\) kernel"):
        DualPPCA(1, kernel=lambda A, B: (A * signs) @ B.T, eigen_solver=solver).fit(X)


def test_non_symmetric_kernel(X):
    with pytest.raises(ValueError, match=r"kernel's Gram matrix is not symmetric.*k\(x, y\) = k\(y, x\)"):
        DualPPCA(2, kernel=lambda A, B: A @ B.T + A[:, :1] * 0.1).fit(X)


def test_kernel_returning_wrong_shape(X):
    with pytest.raises(ValueError, match="the kernel function returned shape"):
        DualPPCA(2, kernel=lambda A, B: A @ A.T).fit(X[:10]).transform(X[:3])


# ----------------------------------------------------------------------------- latent codes


def test_latent_codes_of_wrong_width(X):
    dual = DualPPCA(2).fit(X)
    primal = PrimalPPCA(2).fit(X)
    for method in (dual.kernel_conditional, primal.feature_conditional):
        with pytest.raises(ValueError, match=r"h has width 3, but the model has n_components_ = 2"):
            method(np.ones(3))
        with pytest.raises(ValueError, match="h has width 1"):
            method(np.ones((4, 1)))
        with pytest.raises(ValueError, match=r"h must have 1 or 2 dimension"):
            method(np.ones((2, 2, 2)))
        with pytest.raises(ValueError, match="h contains NaN"):
            method(np.array([np.nan, 1.0]))


# ----------------------------------------------------------------------------- before fit


DUAL_METHODS = [
    ("transform", "X"),
    ("latent_posterior", "X"),
    ("score_samples", "X"),
    ("score", "X"),
    ("centered_kernel", "X"),
    ("reconstruct_kernel", "X"),
    ("kernel_conditional", "h"),
    ("kernel_marginal", None),
    ("sampling_factor", None),
    ("marginal_scales", None),
    ("sample_kernel", 3),
    ("get_covariance", None),
    ("latent_prior", None),
    ("save", "path"),
]
PRIMAL_METHODS = [
    ("transform", "X"),
    ("latent_posterior", "X"),
    ("score_samples", "X"),
    ("score", "X"),
    ("features", "X"),
    ("reconstruct_features", "X"),
    ("feature_conditional", "h"),
    ("feature_marginal", None),
    ("sample_features", 3),
    ("get_covariance", None),
    ("latent_prior", None),
    ("save", "path"),
]


def _call(model, name, arg, X, tmp_path):
    method = getattr(model, name)
    if arg == "X":
        return method(X)
    if arg == "h":
        return method(np.zeros(2))
    if arg == "path":
        return method(tmp_path / "m.pt")
    if arg is None:
        return method()
    return method(arg)


@pytest.mark.parametrize("name, arg", DUAL_METHODS)
def test_dual_methods_before_fit(name, arg, X, tmp_path):
    with pytest.raises(NotFittedError, match=f"DualPPCA instance is not fitted yet; call fit\\(X\\) before {name}"):
        _call(DualPPCA(2), name, arg, X, tmp_path)


@pytest.mark.parametrize("name, arg", PRIMAL_METHODS)
def test_primal_methods_before_fit(name, arg, X, tmp_path):
    with pytest.raises(NotFittedError, match=f"PrimalPPCA instance is not fitted yet; call fit\\(X\\) before {name}"):
        _call(PrimalPPCA(2), name, arg, X, tmp_path)


def test_latent_covariance_before_fit():
    with pytest.raises(NotFittedError, match="not fitted yet"):
        DualPPCA(2).latent_covariance_


# ----------------------------------------------------------------------------- user data untouched


def _exercise(model, X):
    model.fit(X)
    model.transform(X)
    model.score_samples(X)
    model.score(X)
    model.latent_posterior(X)
    if isinstance(model, DualPPCA):
        model.centered_kernel(X)
        model.reconstruct_kernel(X)
    else:
        model.reconstruct_features(X)


@pytest.mark.parametrize(
    "make",
    [
        lambda: PrimalPPCA(2),
        lambda: PrimalPPCA(2, feature_map=RandomFourierFeatures(2.0, n_features=20, random_state=0)),
        lambda: DualPPCA(2),
        lambda: DualPPCA(2, kernel=RBF(2.0), center=False),
    ],
    ids=["primal", "primal-rff", "dual-linear", "dual-rbf-uncentered"],
)
def test_user_arrays_unchanged(make, X):
    Xn = X.copy()
    _exercise(make(), Xn)
    np.testing.assert_array_equal(Xn, X)
    for dtype in (torch.float64, torch.float32):
        Xt = torch.tensor(X, dtype=dtype)
        before = Xt.clone()
        model = make().set_params(dtype=dtype)
        _exercise(model, Xt)
        assert torch.equal(Xt, before)
        # the model does not alias the user's tensor: modifying it afterwards changes nothing
        H = model.transform(before)
        Xt.add_(1.0)
        assert torch.equal(model.transform(before), H)
