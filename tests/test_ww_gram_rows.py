"""The Weston-Watkins feature routes on an exact kernel run on pivoted Cholesky rows (``gram_rows``), not on an
eigendecomposition: same rows' inner products, same optimum within the certified gap."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from rsvm_conic.estimators.multiclass import WestonWatkinsSVC
from rsvm_conic.kernels.rbf import gaussian_kernel
from rsvm_conic.solvers.multiclass import certificate
from rsvm_conic.solvers.multiclass.certificate import gram_factor, gram_rows


def _kernels():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(70, 3)) * 4.0
    yield "rbf, full rank", gaussian_kernel(X, X, 1.0)
    yield "rbf, wide (nearly singular)", gaussian_kernel(X, X, 8.0)
    yield "linear, rank 3", X @ X.T
    Xd = np.vstack([X[:30], X[:30]])  # every row twice: rank-deficient rbf
    yield "rbf, duplicated rows", 1e3 * gaussian_kernel(Xd, Xd, 2.0)


@pytest.mark.parametrize("name,K", list(_kernels()), ids=[k for k, _ in _kernels()])
def test_gram_rows_factor_and_back_map(name, K):
    F, back = gram_rows(K)
    scale = float(np.max(np.diag(K)))
    assert np.linalg.norm(F @ F.T - K) <= 1e-8 * scale * K.shape[0]
    W = np.random.default_rng(1).normal(size=(F.shape[1], 4))
    coef = back(W)
    # scores as the estimator evaluates them (K coef) equal the feature solver's (F W)
    assert np.allclose(K @ coef, F @ W, atol=1e-6 * scale * np.abs(W).max() * np.sqrt(K.shape[0]))


def test_gram_rows_rejects_an_indefinite_kernel_like_gram_factor():
    K = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match="PSD kernel"):
        gram_factor(K)
    with pytest.raises(ValueError, match="PSD kernel"):
        gram_rows(K)


@pytest.mark.parametrize("solver", ["cd", "alm"])
def test_default_feature_routes_need_no_eigendecomposition(monkeypatch, solver):
    """The exact-kernel feature routes factor K by pivoted Cholesky: eigh is not called for a PSD kernel."""
    X, y = make_blobs(120, centers=4, cluster_std=2.0, random_state=3)

    def no_eigh(*args, **kwargs):
        raise AssertionError("eigh called")

    monkeypatch.setattr(np.linalg, "eigh", no_eigh)
    clf = WestonWatkinsSVC(C=5.0, sigma=1.5, solver=solver).fit(X, y)
    assert clf.solver_stats_["route"] == solver and clf.solver_stats_["status"] == "optimal"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cholesky_rows_reach_the_eigh_rows_optimum(monkeypatch, seed):
    """The route on gram_rows against the same route on the eigendecomposition's rows: same optimum within the
    certified gaps."""
    X, y = make_blobs(150, centers=3, cluster_std=2.5, random_state=seed)
    new = WestonWatkinsSVC(C=10.0, sigma=1.5, solver="cd").fit(X, y)

    def eigh_rows(K, rtol=1e-10):
        _, U, lam = gram_factor(K, rtol)
        return U * np.sqrt(lam), lambda W: U @ (W / np.sqrt(lam)[:, None])

    from rsvm_conic.solvers.multiclass import features

    monkeypatch.setattr(features, "gram_rows", eigh_rows)
    monkeypatch.setattr(certificate, "gram_rows", eigh_rows)
    old = WestonWatkinsSVC(C=10.0, sigma=1.5, solver="cd").fit(X, y)
    for clf in (new, old):
        assert clf.solver_stats_["status"] == "optimal"
    gap = new.solver_stats_["gap_abs"] + old.solver_stats_["gap_abs"]
    p_new, p_old = new.solver_stats_["primal"], old.solver_stats_["primal"]
    assert abs(p_new - p_old) <= gap + 1e-9 * abs(p_old)
