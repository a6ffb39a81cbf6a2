"""Caches and shortcuts of the kernel-matrix hot paths give exactly what the plain computation gives."""

import numpy as np
import pytest

from rsvm_conic.formulations.kernel_robust import KernelRobustQNProblem, KernelRobustQPProblem, KernelRobustSOCPProblem
from rsvm_conic.solvers.rsvm_socp import RobustKernelObjective
from rsvm_conic.solvers.svm_dual import submatrix


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(1.0, 1.0, (n // 2, 2)), rng.normal(-1.0, 1.0, (n - n // 2, 2))]
    y = np.r_[np.ones(n // 2), -np.ones(n - n // 2)]
    K = X @ X.T
    beta = (0.25 * K) ** 2 * (1 + 0.1 * rng.random((n, n)))
    return K, y, 0.5 * (beta + beta.T)


def test_set_params_reaches_the_cvxpy_model():
    K, y, beta = _data()
    f = KernelRobustSOCPProblem(K, y, beta, C=1.0, kappa=1.0)
    f.solve("clarabel")  # builds the DPP model with C = 1, kappa = 1
    f.set_params(C=5.0, kappa=0.5)
    assert (f.C, f.kappa) == (5.0, 0.5)
    assert f.parameters["C"].value == 5.0 and f.parameters["kappa"].value == 0.5
    ref = KernelRobustSOCPProblem(K, y, beta, C=5.0, kappa=0.5).solve("clarabel")
    assert f.solve("clarabel").objective == pytest.approx(ref.objective, rel=1e-9)
    with pytest.raises(ValueError, match="no parameter"):
        f.set_params(radius=1.0)
    with pytest.raises(ValueError, match="C"):
        f.set_params(C=-1.0)


def test_qn_relaxation_model_reused_across_parameters():
    K, y, beta = _data(seed=1)
    f = KernelRobustQNProblem(K, y, beta, C=1.0, kappa=1.0, n_random=0)
    f.solve("dfp")
    for C, k in ((10.0, 0.5), (1.0, 2.0)):
        f.set_params(C=C, kappa=k)
        got = f.solve(
            "dfp"
        )  # the relaxation's KernelRobustSOCPProblem (and its eigen-solves) built once, parameters set
        assert f.relaxation_bound()[0] == KernelRobustQNProblem(K, y, beta, C=C, kappa=k).relaxation_bound()[0]
        assert got.certificate["dual"] == f.relaxation_bound()[0]


def test_qp_products_and_certificates_match_the_dense_formulas():
    K, y, beta = _data(60, seed=2)
    f = KernelRobustQPProblem(K, y, beta, C=10.0, kappa=1.0)
    sol = f.solve("libsvm")
    a = sol["alpha"]
    Q = (y[:, None] * K) * y[None, :]
    np.testing.assert_allclose(f._Qa(a), Q @ a, rtol=1e-12, atol=1e-12)
    assert f._Qa(a) is f._Qa(a.copy())  # kept for the same point
    assert sol.status == "optimal" and sol.certificate.gap_rel <= 1e-6
    assert sol["t"] == pytest.approx(float(a @ Q @ a) + f.kappa * float(f.rho @ a**2), rel=1e-12)


@pytest.mark.parametrize("frac", [0.1, 0.9])
def test_submatrix_is_ix(frac):
    rng = np.random.default_rng(3)
    A = rng.standard_normal((50, 50))
    rows = np.flatnonzero(rng.random(50) < frac)
    cols = np.flatnonzero(rng.random(50) < frac)
    np.testing.assert_array_equal(submatrix(A, rows, cols), A[np.ix_(rows, cols)])


@pytest.mark.parametrize("low_rank", [True, False])
def test_hessian_block_bitwise_as_the_expression(low_rank):
    rng = np.random.default_rng(4)
    n = 50
    A = rng.standard_normal((n, n))
    Q = A @ A.T
    B = rng.standard_normal((3 if low_rank else n, n))
    F = RobustKernelObjective(Q, B.T @ B, 1.3, B)
    a = rng.random(n)
    parts = F.evaluate(a)
    idx = np.flatnonzero(rng.random(n) < 0.7)
    _, _, u, s = parts
    af, uf = a[idx], u[idx]
    au = af * uf
    H = Q[np.ix_(idx, idx)].copy()
    H += 1.3 * ((2.0 / s) * (af[:, None] * F._M_block(idx) * af[None, :]) - (2.0 / s**3) * np.outer(au, au))
    H.flat[:: idx.size + 1] += 1.3 * np.maximum(uf, 0.0) / s
    np.testing.assert_array_equal(F.hessian(a, parts, idx), H)
