import numpy as np
import pytest
from sklearn.kernel_approximation import Nystroem

from rsvm_conic.kernels.feature_maps import NystroemMap, RandomFourierFeatures
from rsvm_conic.kernels.rbf import gaussian_kernel


def test_rff_layout_seed_and_unbiasedness():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    a = RandomFourierFeatures(8, 1.5, random_state=3).fit(X)
    b = RandomFourierFeatures(8, 1.5, random_state=3).fit(X)
    assert np.array_equal(a.omega_, b.omega_)
    P = a.transform(X)
    T = X @ a.omega_
    assert np.allclose(P[:, 0::2], np.cos(T) / 2) and np.allclose(P[:, 1::2], np.sin(T) / 2)  # sqrt(2/8) = 1/2
    assert np.allclose(np.sum(P * P, axis=1), 1.0)  # cos^2 + sin^2: every point on the sphere
    K = gaussian_kernel(X, X, 1.5)
    est = np.array(
        [(lambda Q: Q @ Q.T)(RandomFourierFeatures(200, 1.5, random_state=s).fit_transform(X)) for s in range(60)]
    )
    se = est.std(0, ddof=1) / np.sqrt(60)
    assert np.all(np.abs(est.mean(0) - K) <= 3.5 * se + 1e-12)


def test_rff_input_gradient_finite_differences():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 3))
    f = RandomFourierFeatures(10, 0.7, random_state=0).fit(X)
    zeta = rng.normal(size=10)
    G = f.input_gradient(X, zeta)
    h = 1e-6
    for k in range(3):
        E = np.zeros(3)
        E[k] = h
        fd = (f.transform(X + E) @ zeta - f.transform(X - E) @ zeta) / (2 * h)
        assert np.allclose(G[:, k], fd, atol=1e-6)


def test_nystroem_matches_sklearn_and_reproduces_landmark_kernel():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 4))
    nys = NystroemMap(20, sigma=1.7, random_state=0).fit(X)
    sk = Nystroem(kernel="rbf", gamma=1 / (2 * 1.7**2), n_components=20).fit(nys.landmarks_)
    P, Q = nys.transform(X), sk.transform(X)
    assert np.allclose(P @ P.T, Q @ Q.T, atol=1e-10)
    Z = nys.transform(nys.landmarks_)
    assert np.allclose(Z @ Z.T, gaussian_kernel(nys.landmarks_, nys.landmarks_, 1.7), atol=1e-8)
    zeta = rng.normal(size=nys.rank_)
    G = nys.input_gradient(X[:3], zeta)
    h = 1e-6
    for k in range(4):
        E = np.zeros(4)
        E[k] = h
        fd = (nys.transform(X[:3] + E) @ zeta - nys.transform(X[:3] - E) @ zeta) / (2 * h)
        assert np.allclose(G[:, k], fd, atol=1e-5)


def test_feature_map_bad_inputs():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError):
        RandomFourierFeatures(7).fit(X)
    with pytest.raises(ValueError):
        RandomFourierFeatures(8, sigma=-1).fit(X)
    with pytest.raises(ValueError):
        RandomFourierFeatures(8, random_state="x").fit(X)
    with pytest.raises(ValueError):
        RandomFourierFeatures(8).transform(X)
    with pytest.raises(ValueError):
        RandomFourierFeatures(8).fit(X).transform(np.zeros((2, 3)))
    with pytest.raises(ValueError):
        NystroemMap(0).fit(X)
    with pytest.raises(ValueError):
        NystroemMap(3).fit(np.array([[np.nan, 1.0]]))
