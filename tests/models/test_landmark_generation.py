"""Landmark models generate: PrimalPPCA with a Nystroem map and no training inputs (partial_fit, Dask)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca._linalg import compute_threads
from kppca.features import Nystroem
from kppca.kernels import RBF


@pytest.fixture
def data():
    rng = np.random.default_rng(4)
    return rng.normal(size=(60, 4)) + np.repeat(rng.normal(size=(3, 4)) * 3, 20, axis=0)


def _signs(A, B):
    return np.sign((np.asarray(A) * np.asarray(B)).sum(0))


def test_every_point_a_landmark_equals_the_dual_model(data):
    # RBF(2) on 60 points: K is well conditioned (cond(K) ~ 1e3 here), so the Nystroem map
    # reproduces K to ~cond * eps and the primal spectrum (float64, d x d) equals the dual one
    # to that rounding: 1e-8 relative leaves five orders of magnitude.
    k = RBF(2.0)
    assert np.linalg.cond(k(data, data)) < 1e5
    dual = DualPPCA(3, kernel=k).fit(data)
    model = PrimalPPCA(3, feature_map=Nystroem(k, n_landmarks=len(data), random_state=0)).partial_fit(data)
    assert not hasattr(model, "X_fit_") and model.rank_ == dual.rank_
    assert abs(model.sigma2_ - dual.sigma2_) <= 1e-8 * dual.sigma2_
    Hd, Hp = np.asarray(dual.transform(data)), np.asarray(model.transform(data))
    s = _signs(Hd, Hp)
    np.testing.assert_allclose(Hp * s, Hd, rtol=0, atol=1e-8 * np.abs(Hd).max())
    # The pre-images over the landmarks (a permutation of the training points) are the dual
    # model's: the same latent codes (signs aligned) give the same inputs for every strategy.
    h = np.random.default_rng(1).normal(size=(7, 3))
    for method, options in [("smoother", {"n_neighbors": 5}), ("smoother", {"n_neighbors": 5, "selection": "centered"}),
                            ("knn", {"n_neighbors": 4}), ("learned", {}), ("smoother", {"n_neighbors": None})]:
        A = dual.inverse_transform(h, preimage=method, **options)
        B = model.inverse_transform(h * s, preimage=method, **options)
        np.testing.assert_allclose(B, A, rtol=0, atol=1e-8 * np.abs(data).max(), err_msg=f"{method} {options}")
    # reconstruct and a traversal go through the same path
    np.testing.assert_allclose(model.reconstruct(data[:5], preimage="knn"), dual.reconstruct(data[:5], preimage="knn"),
                               atol=1e-8 * np.abs(data).max())


def test_landmark_context_distances_are_exact(data):
    # |psi - phi(l_j)|^2 from the context against the explicit feature vectors.
    model = PrimalPPCA(3, feature_map=Nystroem(RBF(2.0), n_landmarks=15, random_state=0)).partial_fit(data)
    psi = torch.as_tensor(np.asarray(model.sample_features(6, random_state=0)))
    context = model.preimage_context()
    Phi_c, C = model._landmark_features()  # of the kept rows: the 15 landmarks, then the batch's other 45
    assert Phi_c.shape[0] == 60
    beta = psi @ C.T  # psi = phi(L)^T beta: coefficients of the landmarks, 0 for the other kept rows
    k_c, beta = (psi - model.mean_) @ Phi_c.T, torch.cat([beta, beta.new_zeros(6, 45)], 1)
    phi_L = Phi_c + model.mean_
    scale = float((psi**2).sum(1).max() + (phi_L**2).sum(1).max())
    np.testing.assert_allclose(context.sq_distances(k_c, beta), torch.cdist(psi, phi_L) ** 2, atol=1e-10 * scale)
    np.testing.assert_allclose(context.raw_weights(k_c, beta), psi @ phi_L.T, atol=1e-10 * scale)


@pytest.mark.parametrize("how", ["partial_fit", "dask"])
def test_landmark_model_generates_after_fits_without_inputs(how, data):
    y = np.repeat(np.arange(3), 20)
    fmap = Nystroem(RBF(2.0), n_landmarks=24, random_state=0)
    if how == "partial_fit":
        model = PrimalPPCA(3, feature_map=fmap).partial_fit(data[::2], y[::2]).partial_fit(data[1::2])
    else:
        da = pytest.importorskip("dask.array")
        model = PrimalPPCA(3, feature_map=fmap).fit(da.from_array(data, chunks=(20, 4)), da.from_array(y, chunks=20))
    assert not hasattr(model, "X_fit_")
    L = model.feature_map_.landmarks_.numpy()
    # the latent mixture's codes: the landmarks and the other rows of the sample the map was fitted on
    n_sample = 30 if how == "partial_fit" else 60
    assert model._latent_extra.shape == (n_sample - 24, 4) and model._training_coordinates().shape == (n_sample, 3)
    S = model.sample(8, random_state=0)
    assert S.shape == (8, 4) and np.isfinite(S).all()
    # the default latent is the mixture on the landmarks' codes (not the prior)
    np.testing.assert_array_equal(S, model.sample(8, random_state=0, latent="mixture"))
    assert not np.array_equal(S, model.sample(8, random_state=0, latent="prior"))
    assert model.inverse_transform(np.zeros((2, 3))).shape == (2, 4)
    assert model.latent_traversal(n_steps=3).shape == (3, 3, 4)
    # class-conditional: built from the kept rows (landmarks and extra rows) of that class only
    np.testing.assert_array_equal(model.sample_classes_, [0, 1, 2])
    kept = np.concatenate([L, model._latent_extra.numpy()])
    labels = y[np.argmin(((kept[:, None] - data[None]) ** 2).sum(-1), 1)]
    S1 = model.sample(5, random_state=1, y=1, preimage="knn", n_neighbors=1)
    nearest = ((S1[:, None] - kept[None]) ** 2).sum(-1).argmin(1)
    assert set(labels[nearest]) == {1}


def test_dask_landmarks_come_from_all_blocks(data):
    da = pytest.importorskip("dask.array")
    y = np.repeat(np.arange(3), 20)  # sorted by class: the first block holds one class only
    model = PrimalPPCA(3, feature_map=Nystroem(RBF(2.0), n_landmarks=30, random_state=0)).fit(
        da.from_array(data, chunks=(20, 4)), y
    )
    assert set(model.sample_classes_[model._label_index.numpy()[:len(model.feature_map_.landmarks_)]]) == {0, 1, 2}
    # the map is the one fitted on the reservoir of the rows (exactly uniform, see tests/features)
    from kppca.features.landmarks import reservoir
    from kppca.models._streaming import LATENT_SAMPLE

    rows, _, _ = reservoir(da.from_array(data, chunks=(20, 4)), LATENT_SAMPLE, random_state=0)
    ref = Nystroem(RBF(2.0), n_landmarks=30, random_state=0).fit(rows)
    np.testing.assert_array_equal(model.feature_map_.landmarks_.numpy(), ref.landmarks_.numpy())
    # more landmarks than the first block has rows: fine now
    big = PrimalPPCA(3, feature_map=Nystroem(RBF(2.0), n_landmarks=45, random_state=0)).fit(da.from_array(data, chunks=(20, 4)))
    assert big.feature_map_.landmarks_.shape == (45, 4)


def test_landmark_model_round_trips(tmp_path, data):
    import kppca

    y = np.repeat(np.arange(3), 20)
    model = PrimalPPCA(3, feature_map=Nystroem(RBF(2.0), n_landmarks=24, random_state=0)).partial_fit(data, y)
    model.save(tmp_path / "m.kppca")
    loaded = kppca.load(tmp_path / "m.kppca")
    np.testing.assert_array_equal(loaded.sample(5, random_state=2, y=2), model.sample(5, random_state=2, y=2))
    np.testing.assert_array_equal(loaded.inverse_transform(np.ones((2, 3))), model.inverse_transform(np.ones((2, 3))))


def test_local_cluster_fit_on_class_sorted_digits_covers_every_class():
    # The bundled digits are sorted by class: the first block of 60 holds only zeros. The
    # landmarks, drawn from all blocks on the cluster's workers, cover every class; the model
    # equals the one fitted on the local threaded scheduler (same seed, same reservoir keys,
    # same reduction tree: the statistics are summed in the same order).
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("dask.distributed")
    from kppca.datasets import load_mnist

    X, y = load_mnist(n_samples=600, random_state=0)
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    Xd, yd = da.from_array(X, chunks=(60, 784)), da.from_array(y, chunks=60)
    assert set(y[:60]) == {0}

    def make():
        return PrimalPPCA(10, feature_map=Nystroem(RBF(5.0), n_landmarks=100, random_state=0))

    # One thread count for every fit (kppca otherwise takes it from the cores free at the time; the
    # in-process workers' sections share the process's setting), so LAPACK's rounding is the same.
    with compute_threads(torch.get_num_threads()):
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster, distributed.Client(cluster):
            model = make().fit(Xd, yd)
            S = model.sample(20, random_state=0)
        local = make().fit(Xd, yd)
        S_local = local.sample(20, random_state=0)
    assert set(model.sample_classes_[model._label_index.numpy()[:len(model.feature_map_.landmarks_)]]) == set(range(10))
    np.testing.assert_array_equal(model.feature_map_.landmarks_.numpy(), local.feature_map_.landmarks_.numpy())
    assert abs(model.sigma2_ - local.sigma2_) <= 1e-12 * local.sigma2_
    assert S.shape == (20, 784) and np.isfinite(S).all()
    # The same block statistics summed in the same tree, but not bitwise: MKL's products round
    # according to the memory alignment of their operands, which differs between two fits (this
    # failed now and then in the full suite, samples 2e-15 apart). A pixel of a sample is a convex
    # combination of training pixels in [0, 1], with weights from the fitted operators, which agree
    # to rounding as sigma2 does above (1e-12 relative): 1e-12 absolute per pixel.
    np.testing.assert_allclose(S, S_local, rtol=0, atol=1e-12)


def _count_maps(fmap):
    """Record the inputs of every call of ``fmap.map`` (an instance attribute shadowing the method)."""
    calls, inner = [], fmap.map

    def counting(X):
        calls.append(X.clone())
        return inner(X)

    fmap.map = counting
    return calls


def test_landmarks_are_mapped_once_per_fit(data):
    # The first sample maps the kept rows (the landmarks, then the extra rows) once, for the codes, the context
    # and the pre-images; a second sample maps nothing.
    model = PrimalPPCA(3, feature_map=Nystroem(RBF(2.0), n_landmarks=24, random_state=0)).partial_fit(data[:40])
    L, extra = model.feature_map_.landmarks_, model._latent_extra
    calls = _count_maps(model.feature_map_)
    model.sample(8, random_state=0)
    assert sum(torch.equal(X, torch.cat([L, extra])) for X in calls) == 1
    assert sum(len(X) for X in calls) == len(L) + len(extra)
    n_calls = len(calls)
    model.sample(8, random_state=1)
    assert len(calls) == n_calls


def test_landmark_codes_and_samples_equal_those_of_one_map_of_all_rows(data):
    # The codes were (phi([L; extra]) - m) V_q, one map of all rows; now the landmarks' rows come from the
    # cached phi(L). The Nystroem map and the products work row by row, so codes and samples are the same bits.
    model = PrimalPPCA(3, feature_map=Nystroem(RBF(2.0), n_landmarks=24, random_state=0)).partial_fit(data[:40])
    rows = torch.cat([model.feature_map_.landmarks_, model._latent_extra])
    old_codes = (model.feature_map_.map(rows) - model.mean_) @ model.components_.T
    assert torch.equal(model._training_coordinates(), old_codes)
    fresh = PrimalPPCA(3, feature_map=Nystroem(RBF(2.0), n_landmarks=24, random_state=0)).partial_fit(data[:40])
    fresh._training_coordinates = lambda: old_codes  # the previous code path, on a fresh cache
    np.testing.assert_array_equal(model.sample(8, random_state=0), fresh.sample(8, random_state=0))


def test_progress_names_the_slow_first_steps_of_a_landmark_model(data, capsys):
    def make(progress):
        fmap = Nystroem(RBF(2.0), n_landmarks=24, random_state=0)
        return PrimalPPCA(3, feature_map=fmap, progress=progress).partial_fit(data[:40])

    quiet, shown = make(False), make(True)
    S = quiet.sample(8, random_state=0)
    assert capsys.readouterr().err == ""
    np.testing.assert_array_equal(shown.sample(8, random_state=0), S)  # the same steps, only named
    err = capsys.readouterr().err
    for step in ("mapping 40 kept rows (landmarks first)", "latent mixture", "the kept rows' context"):
        assert f"PrimalPPCA: {step}" in err, step
    shown.sample(8, random_state=1)  # done once per fit
    assert capsys.readouterr().err == ""


def test_a_model_with_training_inputs_maps_them_once_for_codes_and_preimages(data):
    # sample maps X_fit_ once for phi(X) - m (the latent codes, the context and the pre-images), then for
    # the hub scores of the default pre-image X's share of the Gram rows once and each row block (here one
    # block of all rows) once: 3 N rows (before: 4 N, and N more per extra block). Codes as transform's.
    model = PrimalPPCA(3, feature_map=Nystroem(RBF(2.0), n_landmarks=24, random_state=0)).fit(data)
    X = model.X_fit_
    calls = _count_maps(model.feature_map_)
    model.sample(8, random_state=0)
    assert len(calls) == 3 and all(torch.equal(Z, X) for Z in calls)
    assert torch.equal(model._training_coordinates(), model._principal_coordinates(X))
