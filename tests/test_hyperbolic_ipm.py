"""The structured interior point of one CCP step of the hyperbolic machine (``solvers.ipm.hyperbolic``): against the
step's CVXPY model (the formulation's SOCP, solved by Clarabel), against the dense KKT solve of the same cone QP, at
loose tolerances, and with the centres in the hulls of k-means anchors."""

from fractions import Fraction

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from rsvm_conic.formulations.hyperbolic import HyperbolicProblem


def _step_case(seed, weighted, anchors):
    """A CCP step of a random machine at a random point of the hulls: the machine, the first-order step's data with
    its tangent set (the exact value and bound of the step), the step's CVXPY model with the same tangent, the
    interior point's geometry, and the sample order the geometry's dual point is in.

    ``anchors``: ``"samples"`` (the class points, the geometry on the samples sorted by class, as the ``ipm`` route
    builds it), ``"unsorted"`` (the class points given as anchors, the samples in their own order) or ``"kmeans"``
    (3 k-means centroids per class, the ``anchors`` route's hulls) or ``"ragged"`` (3, 5, 7, ... class points: hulls of
    different dimensions, so that the classes' coordinates are padded)."""
    from rsvm_conic.solvers.ccp import kmeans_anchors
    from rsvm_conic.solvers.hyperbolic_step import MajoriserStep
    from rsvm_conic.solvers.ipm.hyperbolic import HyperbolicGeometry

    rng = np.random.default_rng(seed)
    C = 2 + seed % 3
    X, y = make_blobs(n_samples=24 + 4 * seed, centers=C, n_features=3 + seed % 4, cluster_std=2.0, random_state=seed)
    w = rng.uniform(0.2, 3.0, size=y.size) if weighted else None
    f = HyperbolicProblem(
        X / np.linalg.norm(X, axis=1).max(), y, C, gamma=(0.05, 0.2, 0.6)[seed % 3], lam=0.05, sample_weight=w
    )
    s = np.ones(y.size) if w is None else w
    members = [np.flatnonzero(f.codes == k) for k in range(C)]
    if anchors == "kmeans":
        A, _ = kmeans_anchors(f.Phi, f.codes, C, 3, rng, f.sample_weight)
    elif anchors == "ragged":
        A = [f.Phi[idx[: 3 + 2 * k]] for k, idx in enumerate(members)]
    else:
        A = [f.Phi[idx] for idx in members]
    Pa = np.vstack(A)
    ca = np.repeat(np.arange(C), [a.shape[0] for a in A])
    mus = [rng.dirichlet(np.ones(a.shape[0])) for a in A]
    R_t = rng.uniform(0, f.gamma, C)
    Q, e = f._tangent(np.stack([mu @ a for mu, a in zip(mus, A)]), R_t)
    step = MajoriserStep(f.Phi, f.codes, Pa, ca, s, f.gamma, f.lam)
    step.set_tangent(Q, e)
    P = f._class_socp(A)
    for k, a in enumerate(A):
        P["qs"][k].value = a @ Q[k]
    P["e"].value = e
    if anchors == "samples":
        order = np.concatenate(members)
        geo = HyperbolicGeometry(f.Phi[order], f.codes[order], s[order], f.gamma, f.lam)
    else:
        order = np.arange(y.size)
        geo = HyperbolicGeometry(f.Phi, f.codes, s, f.gamma, f.lam, anchors=Pa, anchor_class=ca)
    return f, step, P, geo, order


def _solve(f, step, geo, order, **options):
    """The interior-point step: ``(mu, R, its exact value, the certified bound, IPM result)``."""
    from rsvm_conic.solvers.hyperbolic_step import dual_summary
    from rsvm_conic.solvers.ipm.hyperbolic import solve_step_ipm

    mu, R, (pi, U), res = solve_step_ipm(geo, step.q, step.e, **options)
    bound = step.bound(dual_summary(f.Phi[order], f.codes[order], geo.weights, f.gamma, pi, U))
    return mu, R, step.value(mu, R), bound, res


def _clarabel(step, P):
    """The step's CVXPY model by Clarabel at 1e-10: its optimal value and the step's exact value at its point."""
    P["problem"].solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    mu = np.concatenate([np.clip(m.value, 0, None) / np.clip(m.value, 0, None).sum() for m in P["mus"]])
    return P["problem"].value, step.value(mu, np.clip(P["R"].value, 0, None))


@pytest.mark.parametrize("anchors", ["samples", "unsorted", "kmeans", "ragged"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("seed", range(6))
def test_step_equals_the_cvxpy_step_within_its_certified_gap(seed, weighted, anchors, request):
    """The interior-point step against the step's SOCP through CVXPY + Clarabel at 1e-10, with the class points or
    k-means centroids as anchors: the certified bound (the IPM's dual point scaled into the dual's feasible set) lies
    below the step's exact value at Clarabel's point, the two optima agree within the certified gap (plus
    Clarabel's own accuracy), and the gap is closed to 1e-6 of the objective."""
    if (seed, weighted, anchors) == (2, False, "ragged"):
        # hulls of 3, 5, 7, 8 points in 5 dimensions: the reduced KKT solve loses its digits in the last iterations
        # and the run ends at numerical_error (relative gap 1.3e-10, above 1e-10)
        request.applymarker(pytest.mark.xfail(strict=True, reason="known: numerical_error near the optimum"))
    if (seed, weighted, anchors) == (3, True, "ragged"):
        # with numpy 1.26 / scipy 1.11 (the declared floors) the run ends at numerical_error after 24 iterations: its
        # primal value equals Clarabel's to 6e-13 relative, but the dual point certifies only a gap of 0.071 of the
        # objective (optimal in 15 iterations, gap 2.7e-9, with the newest releases)
        request.applymarker(pytest.mark.xfail(strict=False, reason="known: numerical_error on ragged hulls (floors)"))
    f, step, P, geo, order = _step_case(seed, weighted, anchors)
    ref, ref_point = _clarabel(step, P)
    scale = 1.0 + abs(ref)
    mu, R, primal, bound, res = _solve(f, step, geo, order)
    assert res.status == "optimal"
    assert np.all(mu >= 0) and np.all(R >= 0)
    for k in range(f.n_classes):
        assert mu[step.agrp == k].sum() == pytest.approx(1.0, abs=1e-12)
    assert bound <= ref_point  # a valid lower bound: Clarabel's point is feasible, so at least the optimum
    assert bound <= primal
    assert abs(primal - ref) <= (primal - bound) + 1e-7 * scale  # the same optimum within the gap (+ Clarabel's)
    assert primal - bound <= 1e-6 * scale  # the certified gap closes


@pytest.mark.parametrize("seed", range(4))
def test_class_points_as_anchors_are_the_sorted_samples_step(seed):
    """The class points given as anchors, the samples in their own order, make the same step as the geometry on the
    samples sorted by class (the special case): the same optimum, to the interior point's accuracy."""
    f, step, _, geo_u, order_u = _step_case(seed, seed % 2 == 1, "unsorted")
    _, step_s, _, geo_s, order_s = _step_case(seed, seed % 2 == 1, "samples")
    _, _, p_u, b_u, _ = _solve(f, step, geo_u, order_u)
    _, _, p_s, b_s, _ = _solve(f, step_s, geo_s, order_s)
    scale = 1.0 + abs(p_s)
    assert p_u == pytest.approx(p_s, abs=1e-8 * scale)
    assert max(b_u, b_s) <= min(p_u, p_s) + 1e-12 * scale  # each bound below both points' values


@pytest.mark.parametrize("tol", [1e-3, 1e-5])
@pytest.mark.parametrize("anchors", ["samples", "kmeans"])
@pytest.mark.parametrize("seed", range(4))
def test_loose_step_tolerance_gap_is_certified_and_below_it(seed, anchors, tol):
    """A step stopped at a loose relative gap ``tol`` (what a CCP step needs): its gap is still certified (the
    bound is below the step's optimum, Clarabel's at 1e-10) and below ``tol`` in units of the step's value, and it
    takes no more iterations than the tight step (the same path, stopped earlier)."""
    f, step, P, geo, order = _step_case(seed, seed % 2 == 0, anchors)
    ref, ref_point = _clarabel(step, P)
    scale = max(1.0, abs(ref))
    *_, tight = _solve(f, step, geo, order)
    mu, R, primal, bound, res = _solve(f, step, geo, order, tol_gap=tol)
    assert res.status == "optimal"
    assert bound <= ref_point and primal >= ref - 1e-7 * scale  # a valid bound and a feasible point
    assert 0.0 <= primal - bound <= tol * scale
    assert res.iterations <= tight.iterations


@pytest.mark.parametrize("anchors", ["samples", "kmeans", "ragged"])
@pytest.mark.parametrize("seed", range(3))
def test_reduced_kkt_solve_equals_the_dense_kkt_solve(seed, anchors):
    """The closed-form KKT solve of ``HyperbolicStepCone`` against ``DenseConeQP``'s dense solve of the same cone QP
    (its matrices assembled from the problem's own products), at a random interior scaling and at a scaling of the
    last iterates (the cone rows' weights spread over many orders of magnitude)."""
    from rsvm_conic.solvers.ipm.engine import DenseConeQP, Scaling, cone_ipm, shift_into_cone
    from rsvm_conic.solvers.ipm.hyperbolic import HyperbolicStepCone

    f, step, _, geo, _ = _step_case(seed, seed % 2 == 1, anchors)
    prob = HyperbolicStepCone(geo, step.q, step.e)
    N, m = prob.N, prob.cones.size
    eye = np.eye(N)
    G = np.column_stack([prob.Gx(eye[:, j]) for j in range(N)])
    A = np.column_stack([prob.Ax(eye[:, j]) for j in range(N)])
    Pm = np.column_stack([prob.Px(eye[:, j]) for j in range(N)])
    rng = np.random.default_rng(seed)
    assert np.allclose(G.T @ (z := rng.normal(size=m)), prob.GTz(z))  # GTz is G's transpose
    assert np.allclose(A.T @ (y := rng.normal(size=A.shape[0])), prob.ATy(y))
    dense = DenseConeQP(Pm, prob.q, G, prob.h, prob.cones, A, prob.b)
    late = cone_ipm(prob, max_iter=8)
    scalings = [
        Scaling(
            prob.cones, shift_into_cone(prob.cones, rng.normal(size=m)), shift_into_cone(prob.cones, rng.normal(size=m))
        ),
        Scaling(prob.cones, late.s, late.z),
    ]
    for scaling in scalings:
        bx, by, bz = rng.normal(size=N), rng.normal(size=A.shape[0]), rng.normal(size=m)
        got, want = prob.kkt_factor(scaling)(bx, by, bz), dense.kkt_factor(scaling)(bx, by, bz)
        for g, w in zip(got, want):
            assert np.allclose(g, w, rtol=1e-6, atol=1e-6 * np.abs(w).max())


@pytest.mark.parametrize("seed, C", [(0, 2), (1, 3), (2, 2), (3, 3)])
def test_anchors_route_with_interior_point_steps_ends_no_worse_than_with_socp_steps(seed, C):
    """The ``anchors`` route (k-means anchors, 4 per class) with each step by the structured interior point, exact
    (``eta=0``) and every start run to ``tol`` (``screen=None``), against the same route with each step's SOCP by
    CVXPY + Clarabel, from the same anchors and starts: its
    objective is no larger (up to the CCP's tolerance), it never increases along a run, and every step's certified
    gap is recorded and below 1e-5 of the objective."""
    X, y = make_blobs(n_samples=40 + 8 * seed, centers=C, n_features=3 + seed, cluster_std=1.5, random_state=seed)
    f = HyperbolicProblem(X / np.linalg.norm(X, axis=1).max(), y, C, gamma=(0.1, 0.3, 1.0, 0.2)[seed], lam=0.05)
    opts = dict(n_anchors=4, n_starts=2, max_iter=30, random_state=seed)
    ref = f.solve("anchors", step="socp", **opts)
    sol = f.solve("anchors", eta=0.0, screen=None, warm=False, **opts)
    for a, b in zip(sol["anchors"], ref["anchors"]):
        assert np.array_equal(a, b)
    assert sol.objective <= ref.objective + 1e-6 * (1 + abs(ref.objective))
    assert sol.objective == pytest.approx(f.objective(sol))
    for h, gaps in zip(sol.info["histories"], sol.info["step_gaps"]):
        assert np.all(np.diff(h) <= 1e-9 * (1 + abs(h[0])))
        assert len(gaps) >= len(h) - 1 and all(0 <= g <= 1e-5 * (1 + abs(h[0])) for g in gaps)
    assert all(s in ("converged", "fixed_point", "max_iter") for s in sol.info["stops"])


def test_anchors_route_rejects_an_unknown_step():
    f = HyperbolicProblem(np.eye(4), np.array([0, 0, 1, 1]), 2, gamma=0.3, lam=0.05)
    with pytest.raises(ValueError, match="step must be 'ipm' or 'socp'"):
        f.solve("anchors", step="newton")


def _exact_inverse(K):
    """The inverse of a small nonsingular matrix of Fractions, by Gauss-Jordan elimination in exact arithmetic."""
    p = len(K)
    A = [list(row) + [Fraction(int(i == j)) for j in range(p)] for i, row in enumerate(K)]
    for c in range(p):
        piv = next(i for i in range(c, p) if A[i][c] != 0)
        A[c], A[piv] = A[piv], A[c]
        A[c] = [v / A[c][c] for v in A[c]]
        for i in range(p):
            if i != c and A[i][c] != 0:
                A[i] = [v - A[i][c] * w for v, w in zip(A[i], A[c])]
    return [row[p:] for row in A]


@pytest.mark.parametrize("seed", range(3))
def test_local_block_inverses_equal_exact_inverses(seed):
    """The closed-form inverses of the samples' local blocks (``_local_inverses``) against the exact inverses (rational
    arithmetic) of the blocks assembled from the pieces' rows, on weights and cone diagonals that span many orders
    of magnitude (as the interior point's last iterates give them): every entry to 1e-12 of itself (every entry of
    the inverse is a sum of terms of one sign); and their ``(nu, nu)`` part is ``diag(1 / delta) + rho rho' / sig``
    as returned."""
    from rsvm_conic.solvers.ipm.hyperbolic import _local_inverses

    rng = np.random.default_rng(seed)
    n, C = 6, 2 + 2 * seed
    d_h = 10.0 ** rng.uniform(-8, 8, size=(n, C))
    a_nu = 10.0 ** rng.uniform(-6, 6, size=(n, C))
    Kinv, rho, sig, delta = _local_inverses(d_h, a_nu, 1.0 - np.eye(C))
    # the pieces' local rows: nu_ij has (1 - [j = l]) / 2, g_i has -1
    rows = [[Fraction(1, 2) * (j != l) for j in range(C)] + [Fraction(-1)] for l in range(C)]
    for i in range(n):
        K = [
            [sum(Fraction(d_h[i, l]) * rows[l][a] * rows[l][b] for l in range(C)) for b in range(C + 1)]
            for a in range(C + 1)
        ]
        for a in range(C):
            K[a][a] += Fraction(a_nu[i, a])
        want = np.array([[float(v) for v in row] for row in _exact_inverse(K)])
        assert np.all(want > 0)
        assert np.allclose(Kinv[i], want, rtol=1e-12, atol=0.0)
    nn = rho[:, :, None] * rho[:, None, :] / sig[:, None, None]
    nn[:, np.arange(C), np.arange(C)] += 1.0 / delta
    assert np.allclose(nn, Kinv[:, :C, :C], rtol=1e-14, atol=0.0)
