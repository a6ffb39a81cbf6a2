"""Euclidean projections onto the simplex and onto p-balls (rsvm_conic.certify.projections)."""

import numpy as np

from rsvm_conic.certify.projections import project_pball, project_simplex


def test_pball_projection():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((50, 6))
    r = np.abs(rng.standard_normal(50))
    r[:5] = 0.0
    for p in (1.0, 2.0, np.inf):
        P = project_pball(Z, r, p)
        assert np.all(np.linalg.norm(P, ord=p, axis=1) <= r * (1 + 1e-12) + 1e-15)
        for i in range(5, 15):  # no feasible point is closer
            d = np.linalg.norm(Z[i] - P[i])
            U = rng.standard_normal((300, 6))
            U *= (r[i] * rng.random(300) / np.linalg.norm(U, ord=p, axis=1))[:, None]
            assert np.all(np.linalg.norm(Z[i] - U, axis=1) >= d - 1e-12)
        inside = np.linalg.norm(Z, ord=p, axis=1) <= r
        np.testing.assert_array_equal(P[inside], Z[inside])


def test_simplex_projection():
    rng = np.random.default_rng(1)
    V = 3 * rng.standard_normal((40, 7))
    r = rng.uniform(0.1, 2.0, 40)
    P = project_simplex(V, r)
    assert np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), r, rtol=1e-12)
    for i in range(10):  # no point of the simplex is closer
        d = np.linalg.norm(V[i] - P[i])
        U = r[i] * rng.dirichlet(np.ones(7), 300)
        assert np.all(np.linalg.norm(V[i] - U, axis=1) >= d - 1e-12)
    np.testing.assert_array_equal(project_simplex(V[3]), project_simplex(V[3:4])[0])  # one vector or rows
    x = np.array([0.2, 0.5, 0.3])
    np.testing.assert_allclose(project_simplex(x), x, atol=1e-15)  # a point of the simplex stays
