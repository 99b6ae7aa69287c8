"""The subset ensemble's combiner: ridge by closed-form leave-one-out, or the members' mean (issue 26, item 5)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.linear_model import Ridge

from kppca.datasets import load_mnist
from kppca.rkm import LSSVMClassifier, SubsetEnsembleClassifier
from kppca.rkm.ridge_combiner import RIDGE_GRID, loo_ridge
from kppca.rkm.ridge_combiner import errors as count_errors


def test_closed_form_leave_one_out_matches_refitting(rng):
    """Every grid ridge's leave-one-out errors, refitted point by point (scikit-learn's Ridge), give the same choice."""
    Z = np.tanh(rng.normal(size=(40, 12)))
    codes = rng.integers(0, 3, size=40)
    T = np.where(codes[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    Zc = Z - Z.mean(0)
    ridge, errors = loo_ridge(Zc, T, codes)
    top = np.linalg.svd(Zc, compute_uv=False)[0] ** 2
    counts = []
    for lam in top * RIDGE_GRID[::8]:
        wrong = 0
        for i in range(len(Z)):
            keep = np.arange(len(Z)) != i
            model = Ridge(alpha=lam, solver="svd").fit(Z[keep], T[keep])
            wrong += count_errors(model.predict(Z[i : i + 1]), codes[i : i + 1])
        counts.append(wrong)
    # the chosen ridge errs no more often than any grid value checked by refitting
    assert errors <= min(counts)
    index = int(np.argmin(np.abs(np.log(top * RIDGE_GRID / ridge))))
    assert np.isclose(ridge, top * RIDGE_GRID[index])
    if index % 8 == 0:
        assert errors == counts[index // 8]


def test_binary_leave_one_out_counts_signs(rng):
    Z = np.tanh(rng.normal(size=(30, 5)))
    codes = (Z[:, 0] + 0.3 * rng.normal(size=30) > 0).astype(int)
    T = np.where(codes[:, None] == 1, 1.0, -1.0)
    ridge, errors = loo_ridge(Z - Z.mean(0), T, codes)
    model = Ridge(alpha=ridge, solver="svd")
    wrong = sum(count_errors(model.fit(np.delete(Z, i, 0), np.delete(T, i, 0)).predict(Z[i : i + 1]).reshape(1, 1),
                        codes[i : i + 1])
                for i in range(30))
    assert wrong == errors


@pytest.mark.parametrize("n", [500, 1500])
def test_ensemble_is_never_worse_than_its_median_member_on_unseen_digits(n):
    """Before: ridge 1e-3 misclassified 31-37 % of unseen digits, more than its median member."""
    X, y = load_mnist(n_samples=n + 600, random_state=1)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:n], order[n:]
    model = SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=50, random_state=0).fit(X[train], y[train])
    members = [1 - e.score(X[test], y[test]) for e in model.estimators_]
    assert 1 - model.score(X[test], y[test]) <= np.median(members)


def test_mean_combiner_is_the_members_soft_vote(rng):
    X, y = load_mnist(n_samples=300, random_state=0)
    model = SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=50, random_state=0).fit(X, y)
    if model.ridge_ is not None:
        pytest.skip("the ridge combiner was chosen")
    votes = np.mean([np.tanh(e.decision_function(X[:20])) for e in model.estimators_], axis=0)
    np.testing.assert_allclose(model.decision_function(X[:20]), votes, atol=1e-12)


@pytest.mark.parametrize("clip", [("a", "b"), (0.0,), (1, None)])
def test_clip_that_is_not_two_numbers_is_a_clear_type_error(clip):
    X, y = load_mnist(n_samples=100, random_state=0)
    with pytest.raises(TypeError, match=r"clip.* a list of 2 items \(low, high\)"):
        SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=20, noise=0.1, clip=clip).fit(X, y)


def test_moments_over_blocks_solve_the_ridge_regression(rng):
    """The normal-equation combiner: moments added block by block, some rows taken out again, then solved."""
    from kppca._linalg import rounding_tolerance
    from kppca.rkm.ridge_combiner import Moments
    Z = np.tanh(rng.normal(size=(90, 15)) + 0.5)
    codes = rng.integers(0, 3, size=90)
    T = np.where(codes[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    every = Moments(15, 3)
    for a in range(0, 90, 40):
        every.add(Z[a:a + 40], T[a:a + 40])
    rest = every.without(Z[:20], T[:20])
    coef, intercept = rest.solve(0.7)
    ref = Ridge(alpha=0.7, solver="cholesky").fit(Z[20:], T[20:])
    # Both solve (Zc^T Zc + 0.7 I) w = Zc^T Tc, Zc centred rows with |entries| <= 2: condition at most
    # (70 * 15 * 4 + 0.7) / 0.7, and the moments' subtraction adds rounding of the order of the full sums.
    condition = (70 * 15 * 4 + 0.7) / 0.7
    tol = 90 * 15 * np.finfo(float).eps * condition * np.abs(ref.coef_).max()
    np.testing.assert_allclose(coef, ref.coef_.T, rtol=0, atol=tol)
    np.testing.assert_allclose(intercept, ref.intercept_, rtol=0, atol=tol * 15)
    centred = Z[20:] - Z[20:].mean(0)
    assert rest.trace() == pytest.approx((centred**2).sum(), rel=1e-12)  # sums of 70 * 15 terms below 4
    # Some features only: the same as moments of those columns alone. The same sums, but BLAS may block a
    # product of 15 columns otherwise than one of 5 (other CPUs, other kernels): each entry adds 90 products of
    # |z|, |t| <= 1 and takes 20 away again, in any order within 110 eps of the sum of their magnitudes, <= 110.
    columns = np.array([0, 2, 3, 7, 14])
    part = Moments(5, 3)
    for a in range(0, 90, 40):
        part.add(Z[a:a + 40, columns], T[a:a + 40])
    alone = part.without(Z[:20, columns], T[:20])
    sub = every.without(Z[:20, columns], T[:20], columns)
    sums = 2 * rounding_tolerance(torch.float64, 110, 110.0)  # both sides' rounding
    for name in ("z", "t", "ZT"):
        np.testing.assert_allclose(getattr(sub, name), getattr(alone, name), rtol=0, atol=sums)
    # the lower triangle: all a factor reads
    np.testing.assert_allclose(sub.G.tril(), alone.G.tril(), rtol=0, atol=sums)


def test_all_rows_combiner_is_the_ridge_solution_on_every_row():
    """validation_fraction=None: the combiner fits all training rows, the submodels' own (the paper's way)."""
    X, y = load_mnist(n_samples=700, random_state=2)
    model = SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=50, validation_fraction=None, ridge=0.3,
                                     batch_size=64, random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.holdout_indices_, np.arange(700))
    assert len(model.estimators_) == 14
    Z = np.concatenate([np.tanh(e.decision_function(X)) for e in model.estimators_], axis=1)
    T = np.where(y[:, None] == model.classes_[None, :], 1.0, -1.0)
    ref = Ridge(alpha=0.3, solver="cholesky").fit(Z, T)
    # tanh features in [-1, 1]: the centred Gram matrix's eigenvalues are at most 4 m q, so the system's
    # condition is at most (4 m q + 0.3) / 0.3; both solves are backward stable.
    m, q = Z.shape
    tol = m * q * np.finfo(float).eps * (4 * m * q + 0.3) / 0.3 * np.abs(ref.coef_).max()
    np.testing.assert_allclose(model.coef_.numpy(), ref.coef_.T, rtol=0, atol=tol)
    assert model.ridge_ == 0.3


def test_the_ridge_is_chosen_on_rows_no_member_saw():
    """The fold: the clean rows of a tenth of the submodels, left out of the members with them; none falls back."""
    X, y = load_mnist(n_samples=1000, random_state=3)
    model = SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=50, validation_fraction=None, noise=0.2,
                                     random_state=0).fit(X, y)
    assert len(model.estimators_) == 40  # 1,000 digits and their noisy copies in subsets of 50
    fold, members = model._ridge_fold(np.searchsorted(model.classes_, y), np.random.default_rng(5))
    assert (~members).sum() == 4 and fold.sum() > 0
    seen = np.concatenate([s for s, kept in zip(model.subsets_, members) if kept])
    assert not np.isin(np.flatnonzero(fold), seen).any()  # no member trained on a fold row (copies: other rows)
    left = np.concatenate([s for s, kept in zip(model.subsets_, members) if not kept])
    np.testing.assert_array_equal(np.flatnonzero(fold), np.sort(left[left < 1000]))  # all their clean rows
    one = SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=600, validation_fraction=None,
                                   random_state=0).fit(X[:600], y[:600])
    fold, members = one._ridge_fold(np.searchsorted(one.classes_, y[:600]), np.random.default_rng(5))
    assert len(one.estimators_) == 1 and members.all() and 0 < fold.sum() < 600  # a stratified tenth


def test_all_rows_combiner_chooses_its_ridge_on_left_out_rows():
    X, y = load_mnist(n_samples=1300, random_state=3)
    order = np.random.default_rng(0).permutation(len(y))  # the bundled digits are sorted by class
    X, y = X[order], y[order]
    model = SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=50, validation_fraction=None,
                                     random_state=0).fit(X[:1000], y[:1000])
    assert model.ridge_ is not None  # with 1,000 rows for 200 features the fitted combiner beats the vote
    members = [1 - e.score(X[1000:], y[1000:]) for e in model.estimators_]
    assert 1 - model.score(X[1000:], y[1000:]) < min(members)
