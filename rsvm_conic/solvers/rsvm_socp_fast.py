"""Fast, warm-startable solver for RSVM_SOCP (Bhadra et al. 2010, eq. 16) over a (C, epsilon) grid.

Eq. 16 with ``Q = Y K_bar Y`` and ``B'B = beta_hat`` (PSD) is, after eliminating ``t, t'``,

    (16')   minimise_{alpha, nu}  Phi(alpha, nu) = 1/2 alpha'Q alpha + kappa/2 ||B nu||_2 - e'alpha
            subject to  0 <= alpha <= C,  y'alpha = 0,  alpha_i^2 <= nu_i.

Route (chosen by measurement, see ``problems/bench_robust_ipm.py``): a projected Newton
(active-set) method on the reduced function ``F(alpha) = Phi(alpha, alpha**2)``, warm-started
from the neighbouring grid point, and certified against (16') itself:

* Certificate.  With ``nu = alpha**2``, ``u = beta_hat nu``, ``s = ||B nu||`` and
  ``lambda = kappa/2 * u / s``: if ``lambda >= 0`` then for every feasible point
  ``Phi >= 1/2 a'Qa + sum_i lambda_i a_i^2 - e'a`` (Lagrangian bound; the minimum over ``nu`` of
  ``kappa/2 ||B nu|| - lambda'nu`` is 0 because ``lambda = kappa/2 B'(B nu / s)``), a convex QP whose
  gradient at ``alpha`` equals ``grad F(alpha)`` and whose value there equals ``F(alpha)``.  Its
  Frank-Wolfe linearisation over ``S = {0 <= a <= C, y'a = 0}`` gives the certified bound
  ``F(alpha) - OPT(16') <= fw_gap(alpha) = grad F'alpha - min_{s in S} grad F's``.  So we stop when
  ``fw_gap <= tol * max(|F|, |F - fw_gap|)`` (the relative gap of :mod:`rsvm_conic.solvers.contract`)
  and ``min lambda >= 0``; the result carries it as ``solve_info`` (a :class:`SolveInfo`: primal ``F``,
  dual ``F - fw_gap``; for the cone-IPM fallback the IPM's primal and dual values).  (When ``beta_hat``
  has negative entries, the relaxation ``alpha_i^2 <= nu_i`` can be slack and ``lambda`` negative: then ``F`` is not the
  right function and we fall back, see below.)
* Newton step.  On the free set (multiplier estimate of ``y'alpha = 0`` from the free variables),
  with the exact Hessian ``Q + kappa [diag(u)/s + 2 D_a beta_hat D_a / s - 2 (a*u)(a*u)'/s^3]``,
  then an Armijo search along the projection arc ``P_S(alpha + t d)`` (exact projection onto S);
  if no Newton step decreases F a projected-gradient step is taken.
* Warm starts.  Along a grid the previous point's alpha is the start; after a change of C (and
  for a cold start) one libsvm solve with the kernel ``K_bar + 2 diag(lambda)`` (lambda from the
  previous point, or from alpha = 1) gives the start (:func:`_svm_start`): measured on the paper's
  6 x 10 grid at n = 160, median 2 iterations per point, at most 7 (without it a C jump took 34).
* Why this route (``problems/bench_robust_ipm.py``, Part 2, same run): the CVXPY DPP loop takes
  ~20-33 ms per point, the exact cone IPM below ~150-390 ms (dense (2n+1) KKT, ~20 iterations, no
  useful warm start), the projected Newton route ~1-3 ms per warm point (one Cholesky of the free
  block per iteration) and 10-20 ms cold.
* Fallback.  If the certificate is not reached in ``max_iter`` iterations (or lambda < 0), the
  exact conic form (16') is solved with the NT interior-point engine of
  :mod:`rsvm_conic.solvers.cone_ipm` (a dense (2n+1) KKT built from the cone structure: n
  three-dimensional rotated cones ``alpha_i^2 <= nu_i`` and one ``(tau, B nu)`` cone).  That
  route is exact for any PSD ``beta_hat`` and is reported in ``info["route"]``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
from scipy.linalg.lapack import dpotrf, dpotrs

from .._validation import check_two_classes, psd_factor
from .cone_ipm import ConeSpec, Scaling, cone_ipm
from .conic import SolverError
from .contract import SolveInfo, certify, relative_gap

__all__ = ["RSVMSOCPResult", "rsvm_socp_fast", "rsvm_socp_grid", "rsvm_socp_ipm", "project_S", "fw_gap",
           "lmo_value", "prepare_beta"]


# ------------------------------------------------------------------------------------ helpers
def project_S(v: np.ndarray, y: np.ndarray, C: float) -> np.ndarray:
    """Euclidean projection onto ``{0 <= a <= C, y'a = 0}`` (``y`` in {-1, 1}, both classes present).

    ``a = clip(v - lam y, 0, C)``.  Coordinate i contributes ``y_i a_i``, which decreases with slope
    -1 for ``lam`` in ``[lo_i, lo_i + C]``, ``lo_i = y_i v_i - C [y_i = 1]``, and is constant outside;
    so ``y'a = C n_+ - sum_i clip(lam - lo_i, 0, C)`` and the root is found exactly on the sorted
    breakpoints (one sort, one cumulative sum).
    """
    pos = y > 0
    lo = y * v - C * pos
    target = C * float(np.count_nonzero(pos))
    pts = np.concatenate([lo, lo + C])
    order = np.argsort(pts, kind="stable")
    pts = pts[order]
    slope = np.cumsum(np.where(order < lo.size, 1.0, -1.0))  # slope of sum clip(.) right of each point
    val = np.concatenate([[0.0], np.cumsum(slope[:-1] * np.diff(pts))])  # sum clip(.) at each point
    k = int(np.searchsorted(val, target, side="left"))
    if k == 0:
        lam = pts[0]
    elif k >= pts.size:
        lam = pts[-1]
    else:
        sl = slope[k - 1]
        lam = pts[k - 1] + (target - val[k - 1]) / sl if sl > 0 else pts[k]
    return np.clip(v - lam * y, 0.0, C)


def lmo_value(g: np.ndarray, y: np.ndarray, C: float) -> float:
    """``min_{s in S} g's`` over ``S = {0 <= s <= C, y's = 0}``: pair the smallest ``g`` of each class
    greedily (a pair ``s_i = s_j = C``, ``y_i = -y_j``, pays ``C (g_i + g_j)``; only negative sums help)."""
    gp = np.sort(g[y > 0])
    gn = np.sort(g[y < 0])
    m = min(gp.size, gn.size)
    return C * float(np.sum(np.minimum(gp[:m] + gn[:m], 0.0)))


def fw_gap(g: np.ndarray, alpha: np.ndarray, y: np.ndarray, C: float) -> float:
    """Frank-Wolfe gap ``g'alpha - min_{s in S} g's`` (:func:`lmo_value`)."""
    return float(g @ alpha) - lmo_value(g, y, C)


def prepare_beta(beta, n: int, factor: bool = False, psd_tol: float = 1e-10):
    """``(beta_hat, B)`` from a PSD ``beta_hat`` (n x n) or, with ``factor=True``, a factor ``B`` (r x n)."""
    beta = np.asarray(beta, dtype=float)
    if not np.all(np.isfinite(beta)):
        raise ValueError("beta contains NaN or inf.")
    if factor:
        if beta.ndim != 2 or beta.shape[1] != n:
            raise ValueError(f"a beta factor B must have shape (r, {n}); got {beta.shape}.")
        return beta.T @ beta, beta
    if beta.shape != (n, n):
        raise ValueError(f"beta must be an {n} x {n} PSD matrix (or pass factor=True with B); got {beta.shape}.")
    beta = 0.5 * (beta + beta.T)
    # one eigendecomposition checks (lambda_min >= -psd_tol max|lambda|) and factors (null directions dropped)
    B = psd_factor(beta, "beta", neg_tol=psd_tol, drop_tol=1e-14,
                   hint="RSVM_SOCP needs a PSD beta: use rsvm_conic.uncertainty.kernel_matrix.psd_part(beta) "
                        "(Sec. 5.1's PSD approximation)").T
    if B.shape[0] == 0:
        B = np.zeros((1, n))
    return beta, B


@dataclass
class RSVMSOCPResult:
    alpha: np.ndarray
    nu: np.ndarray
    objective: float
    status: str
    route: str
    iterations: int
    time: float
    info: dict = field(default_factory=dict)
    solve_info: SolveInfo | None = None  # certificate: primal F, feasible dual value (see rsvm_socp_fast)


# ------------------------------------------------------------------------------------ exact conic route
class _RSVMSOCPCone:
    """(16') as a cone QP: x = (alpha, nu, tau); orthant (alpha >= 0, C - alpha >= 0); n rotated
    cones (1 + nu_i, nu_i - 1, 2 alpha_i); one cone (tau, B nu); y'alpha = 0."""

    def __init__(self, Q, B, y, C, kappa):
        n = Q.shape[0]
        self.n, self.r = n, B.shape[0]
        self.Q, self.B, self.y, self.C, self.kappa = Q, B, y, C, kappa
        self.BtB = B.T @ B
        self.cones = ConeSpec(2 * n, [(n, 3), (1, self.r + 1)])
        self.q = np.concatenate([-np.ones(n), np.zeros(n), [0.5 * kappa]])
        h = np.zeros(self.cones.size)
        hl, (h3, hb) = self.cones.split(h)
        hl[n:] = C
        h3[:, 0] = 1.0
        h3[:, 1] = -1.0
        self.h = h
        self.b = np.zeros(1)

    def Px(self, x):
        out = np.zeros_like(x)
        out[:self.n] = self.Q @ x[:self.n]
        return out

    def Gx(self, x):
        n = self.n
        a, nu, tau = x[:n], x[n:2 * n], x[2 * n]
        out = np.empty(self.cones.size)
        ol, (o3, ob) = self.cones.split(out)
        ol[:n] = -a
        ol[n:] = a
        o3[:, 0] = -nu
        o3[:, 1] = -nu
        o3[:, 2] = -2.0 * a
        ob[0, 0] = -tau
        ob[0, 1:] = -(self.B @ nu)
        return out

    def GTz(self, z):
        n = self.n
        zl, (z3, zb) = self.cones.split(z)
        out = np.empty(2 * n + 1)
        out[:n] = -zl[:n] + zl[n:] - 2.0 * z3[:, 2]
        out[n:2 * n] = -z3[:, 0] - z3[:, 1] - self.B.T @ zb[0, 1:]
        out[2 * n] = -zb[0, 0]
        return out

    def Ax(self, x):
        return np.array([self.y @ x[:self.n]])

    def ATy(self, v):
        out = np.zeros(2 * self.n + 1)
        out[:self.n] = self.y * v[0]
        return out

    def kkt_factor(self, scaling: Scaling):
        n = self.n
        d = scaling.d_l
        H = np.zeros((2 * n + 1, 2 * n + 1))
        H[:n, :n] = self.Q
        ia, iv = np.arange(n), np.arange(n, 2 * n)
        # rotated cones: D_i = beta^-2 (2 J w w' J - J); G rows: (-nu, -nu, -2 alpha)
        b3, w3 = scaling.beta[0], scaling.wbar[0].copy()
        w3[:, 1:] *= -1.0
        D = (2.0 * w3[:, :, None] * w3[:, None, :] - np.diag([1.0, -1.0, -1.0])) / (b3 ** 2)[:, None, None]
        H[ia, ia] += d[:n] + d[n:] + 4.0 * D[:, 2, 2]
        H[ia, iv] += 2.0 * (D[:, 2, 0] + D[:, 2, 1])
        H[iv, ia] = H[ia, iv]
        H[iv, iv] += D[:, 0, 0] + 2.0 * D[:, 0, 1] + D[:, 1, 1]
        # big cone (tau, B nu)
        bb, wb = scaling.beta[1][0], scaling.wbar[1][0]
        w0, w1 = wb[0], wb[1:]
        Bw = self.B.T @ w1
        H[n:2 * n, n:2 * n] += (self.BtB + 2.0 * np.outer(Bw, Bw)) / bb ** 2
        col = -2.0 * w0 * Bw / bb ** 2  # B' D_10
        H[n:2 * n, 2 * n] += col
        H[2 * n, n:2 * n] += col
        H[2 * n, 2 * n] += (2.0 * w0 ** 2 - 1.0) / bb ** 2
        H[np.diag_indices_from(H)] += 1e-13 * (1.0 + np.abs(np.diag(H)).max())
        cho = sla.cho_factor(H, lower=False)
        Ay = np.zeros(2 * n + 1)
        Ay[:n] = self.y
        u2 = sla.cho_solve(cho, Ay)
        yu2 = float(Ay @ u2)

        def solve(bx, by, bz):
            wbz = scaling.apply_inv_sq(bz)
            u1 = sla.cho_solve(cho, bx + self.GTz(wbz))
            dy = (float(Ay @ u1) - by[0]) / yu2
            dx = u1 - dy * u2
            dz = scaling.apply_inv_sq(self.Gx(dx) - bz)
            return dx, np.array([dy]), dz

        return solve


def rsvm_socp_ipm(Q, B, y, C, kappa, **opts):
    """Solve (16') exactly with the cone IPM; returns ``(alpha, nu, info)``."""
    n = Q.shape[0]
    if kappa == 0:  # no robust term: drop nu, tau (they would be unbounded above); plain SVM dual
        B = np.zeros((1, n))
    prob = _RSVMSOCPCone(Q, B, y, C, kappa)
    res = cone_ipm(prob, **opts)
    alpha, nu = res.x[:n], res.x[n:2 * n]
    if kappa == 0:
        nu = alpha ** 2
    return alpha, nu, {"status": res.status, "iterations": res.iterations, "gap_rel": res.gap_rel,
                       "pres": res.pres, "dres": res.dres, "pcost": res.pcost, "dcost": res.dcost}


# ------------------------------------------------------------------------------------ projected Newton
class _Beta:
    """``beta_hat`` as an operator: through its factor ``B`` (r x n) when r is small, else dense."""

    def __init__(self, beta_hat, B):
        self.M, self.B = beta_hat, B
        self.low = B.shape[0] * 3 < B.shape[1]
        self.diag = np.diag(beta_hat).copy()
        self.absrow = float(np.abs(beta_hat).sum(axis=1).max())

    def __matmul__(self, v):
        return self.B.T @ (self.B @ v) if self.low else self.M @ v

    def rows(self, i, v):
        """``beta_hat[i, :] @ v``."""
        if self.low:
            return self.B[:, i].T @ (self.B @ v)
        return self.M[i] @ v

    def sub(self, i, j):
        if self.low:
            return self.B[:, i].T @ self.B[:, j]
        return self.M[np.ix_(i, j)]


def _objective_parts(alpha, Q, beta_hat, kappa):
    nz = np.flatnonzero(alpha)
    Qa = Q[:, nz] @ alpha[nz] if nz.size * 4 < alpha.size else Q @ alpha  # sparse alpha: support columns only
    nu = alpha * alpha
    u = beta_hat @ nu
    s = float(np.sqrt(max(float(nu @ u), 0.0)))
    F = 0.5 * float(alpha @ Qa) + 0.5 * kappa * s - float(alpha.sum())
    return F, Qa, u, s


def _grad(alpha, Qa, u, s, kappa):
    g = Qa - 1.0
    if kappa > 0 and s > 0:
        g = g + kappa * alpha * u / s
    return g


def _newton_direction(a, g, u, s, kappa, Q, beta_hat, y, bound, target):
    """Newton step: bound coordinates move to ``target``; free ones solve the Newton system with
    ``y'(alpha + d) = 0``."""
    n = a.size
    d = np.zeros(n)
    d[bound] = target[bound] - a[bound]
    idx = np.flatnonzero(~bound)
    m = idx.size
    if not m:
        return d, 0
    robust = kappa > 0 and s > 0
    H = Q[np.ix_(idx, idx)]
    af = a[idx]
    if robust:
        uf = u[idx]
        au = af * uf
        H += kappa * ((2.0 / s) * (af[:, None] * beta_hat.sub(idx, idx) * af[None, :])
                      - (2.0 / s ** 3) * np.outer(au, au))
        H.flat[:: m + 1] += kappa * np.maximum(uf, 0.0) / s  # the diagonal, in place
    H.flat[:: m + 1] += 1e-10 * (1.0 + float(np.max(np.abs(H.flat[:: m + 1]))))
    yf = y[idx]
    rhs = np.empty((m, 2))
    rhs[:, 0] = -g[idx]
    rhs[:, 1] = yf
    if m < n:  # the bound moves enter through the Hessian's (free, bound) block: H[F, :] @ d (d_F = 0)
        hd = Q[idx] @ d
        if robust:
            hd += kappa * ((2.0 / s) * af * beta_hat.rows(idx, a * d)
                           - (2.0 / s ** 3) * au * float((a * u) @ d))
        rhs[:, 0] -= hd
    c, info = dpotrf(H, lower=0, clean=0, overwrite_a=1)
    if info != 0:
        return d, m  # not positive definite: no Newton step on the free set (caller falls back)
    v, info = dpotrs(c, rhs, lower=0)
    v1, v2 = v[:, 0], v[:, 1]
    mu = (float(yf @ v1) + float(y @ d) + float(y @ a)) / float(yf @ v2)
    d[idx] = v1 - mu * v2
    # enforce y'(alpha + d) = 0 exactly (H_FF can be nearly singular, e.g. a low-rank kernel, kappa = 0)
    d[idx] -= yf * (float(y @ (a + d)) / m)
    return d, m


def _svm_start(Q, y, C, lam):
    """libsvm on the SVM dual with the fixed-multiplier kernel ``K_bar + 2 diag(lam)``.

    At the optimum of (16') with its multipliers ``lam* = kappa/2 u/s``, the Lagrangian
    ``1/2 a'(Q + 2 diag(lam*))a - e'a`` is minimised over S by the optimum itself, and ``u/s`` is
    invariant to the scale of alpha; so ``lam`` from a neighbouring grid point (or from alpha = 1 for
    a cold start) gives a start close to the new optimum at the cost of one small libsvm solve."""
    from sklearn.svm import SVC

    Kmod = y[:, None] * Q * y[None, :] + np.diag(2.0 * np.maximum(lam, 0.0))
    clf = SVC(C=C, kernel="precomputed", tol=1e-4).fit(Kmod, y)
    a = np.zeros(y.size)
    a[clf.support_] = np.abs(clf.dual_coef_[0])
    return project_S(np.minimum(a, C), y, C)


def _lam(alpha, beta_hat, kappa):
    u = beta_hat @ (alpha * alpha)
    s = float(np.sqrt(max(float((alpha * alpha) @ u), 0.0)))
    return 0.5 * kappa * u / s if (kappa > 0 and s > 0) else np.zeros_like(alpha)


def rsvm_socp_fast(K_bar, beta, y, C, kappa, warm_start=None, *, factor=False, tol=1e-9, max_iter=60,
                   fallback=True, svm_start=False, check_input=True, _prepared=None) -> RSVMSOCPResult:
    """Solve RSVM_SOCP (eq. 16) for one (C, kappa); see the module docstring.

    ``beta`` is a PSD ``beta_hat`` (n x n) or, with ``factor=True``, a factor ``B`` with ``B'B = beta_hat``.
    ``warm_start``: an ``alpha`` (e.g. the previous grid point's); it is projected onto the new
    feasible set, or with ``svm_start=True`` only its multipliers are used (one libsvm solve with
    kernel ``K_bar + 2 diag(lambda)``, :func:`_svm_start`; better after a large change of C).  Without a
    warm start the same libsvm start is used with the multipliers of ``alpha = 1``.  ``tol``: certified
    relative accuracy of the objective (``F - OPT <= fw_gap <= tol max(|F|, |F - fw_gap|)``), recorded in
    ``result.solve_info``.  ``check_input=False``: trusted arrays from a caller that validated them
    (``K_bar`` finite and symmetric, ``y`` in {-1, +1} with both classes, ``B`` finite): not checked again.
    Raises :class:`SolverError` if neither route certifies optimality.
    """
    t0 = time.perf_counter()
    if _prepared is None:
        Q, y, beta_hat, B = _prepare(K_bar, beta, y, factor, check_input)
    else:
        Q, y, beta_hat, B = _prepared
    C = float(C)
    kappa = float(kappa)
    if not (np.isfinite(C) and C > 0):
        raise ValueError(f"C must be finite and > 0; got {C}.")
    if not (np.isfinite(kappa) and kappa >= 0):
        raise ValueError(f"kappa must be finite and >= 0; got {kappa}.")
    n = y.size
    if warm_start is None:  # cold: libsvm with the multipliers of alpha = 1 (see _svm_start)
        a = _svm_start(Q, y, C, _lam(np.ones(n), beta_hat, kappa))
    elif svm_start:  # e.g. after a change of C: libsvm with the previous point's multipliers
        a = _svm_start(Q, y, C, _lam(np.asarray(warm_start, dtype=float), beta_hat, kappa))
    else:
        a = np.asarray(warm_start, dtype=float)
        if a.min() < 0 or a.max() > C or abs(float(y @ a)) > 1e-13 * C * n:
            a = project_S(np.minimum(a, C), y, C)
    eps_b = 1e-12 * C
    it, gap, lam_min, F = 0, np.inf, 0.0, np.nan
    certified = False
    n_newton = n_pg = 0
    trace = []
    parts = None  # objective pieces of the current point when the line search already computed them
    c = None
    for it in range(max_iter + 1):
        if abs(float(y @ a)) > 1e-13 * C * n:  # keep iterates exactly feasible (ray steps can drift)
            a = project_S(a, y, C)
            parts = None
        F, Qa, u, s = parts if parts is not None else _objective_parts(a, Q, beta_hat, kappa)
        parts = None
        g = _grad(a, Qa, u, s, kappa)
        gap = fw_gap(g, a, y, C)
        lam_min = float(np.min(u)) * 0.5 * kappa / s if (kappa > 0 and s > 0) else 0.0
        if relative_gap(F, F - gap) <= tol and lam_min >= -1e-12 * max(1.0, float(np.max(np.abs(u)))):
            certified = True
            break
        if it == max_iter:
            break
        # semismooth Newton on alpha = P_S(alpha - c g): the exact projection gives the multiplier of
        # y'alpha = 0 and the working set (coordinates clipped at 0 or C); free coordinates take a
        # Newton step with the bound coordinates moved onto their bounds.
        Hd = np.diag(Q).copy()
        if kappa > 0 and s > 0:
            Hd += kappa * (np.maximum(u, 0.0) / s + 2.0 * a * a * beta_hat.diag / s)
        if c is None:  # step scale for the working-set test: 1 / typical curvature (fixed per call)
            c = 1.0 / max(float(np.partition(Hd, n // 2)[n // 2]), 1e-12)
        p = project_S(a - c * g, y, C)
        bound = (p <= 0.0) | (p >= C)
        target = p.copy()
        for _inner in range(10):
            d, m = _newton_direction(a, g, u, s, kappa, Q, beta_hat, y, bound, target)
            # free coordinates sitting on a bound that the step would push outside: fix them there
            blocked = ~bound & (((a <= eps_b) & (d < 0)) | ((a >= C - eps_b) & (d > 0)))
            if not blocked.any():
                break
            bound = bound | blocked
            target[blocked] = a[blocked]
        took_newton = float(g @ d) < 0
        t = 1.0
        accepted = False
        if took_newton:
            slack = 1e-15 * max(1.0, abs(F))
            with np.errstate(divide="ignore", invalid="ignore"):
                lim = np.where(d < 0, -a / d, np.where(d > 0, (C - a) / d, np.inf))
            t_max = float(np.min(lim))
            if t_max >= 1.0:  # the full step stays feasible (y'd = 0): no projection needed
                a_new = np.clip(a + d, 0.0, C)
                parts_new = _objective_parts(a_new, Q, beta_hat, kappa)
                F_new = parts_new[0]
                accepted = F_new <= F + 1e-4 * float(g @ d) + slack
            # (i) the projection arc P_S(alpha + t d) for t = 1, 1/2, 1/4 (lets many bounds change at once)
            for _ in range(3 if not accepted else 0):
                a_new = project_S(a + t * d, y, C)
                parts_new = _objective_parts(a_new, Q, beta_hat, kappa)
                F_new = parts_new[0]
                if F_new <= F + 1e-4 * float(g @ (a_new - a)) + slack:
                    accepted = True
                    break
                t *= 0.5
            if not accepted:
                # (ii) the feasible ray alpha + t d (y'd = 0), t <= the first bound hit
                t = min(1.0, t_max)
                gd = float(g @ d)
                for _ in range(40):
                    a_new = np.clip(a + t * d, 0.0, C)
                    parts_new = _objective_parts(a_new, Q, beta_hat, kappa)
                    F_new = parts_new[0]
                    if F_new <= F + 1e-4 * t * gd + slack:
                        accepted = True
                        break
                    t *= 0.5
        trace.append((F, gap, t if accepted else -1.0, int(m)))
        if accepted:
            n_newton += 1
        else:  # projected gradient with backtracking
            Lk = float(np.abs(Q).sum(axis=1).max()) + (kappa * beta_hat.absrow * C
                                                      if kappa > 0 else 0.0) + 1e-12
            for _ in range(50):
                a_new = project_S(a - g / Lk, y, C)
                parts_new = _objective_parts(a_new, Q, beta_hat, kappa)
                F_new = parts_new[0]
                dd = a_new - a
                if F_new <= F + float(g @ dd) + 0.5 * Lk * float(dd @ dd):
                    break
                Lk *= 2.0
            n_pg += 1
        if np.array_equal(a_new, a):
            break
        a, parts = a_new, parts_new
    info = {"fw_gap": gap, "lambda_min": lam_min, "newton_steps": n_newton, "pg_steps": n_pg, "trace": trace}
    if certified:
        elapsed = time.perf_counter() - t0
        cert = certify("rsvm_socp_fast/projected-newton", F, F - gap, tol, iterations=it, time=elapsed,
                       detail={"lambda_min": lam_min})
        return RSVMSOCPResult(a, a * a, float(F), "optimal", "projected-newton", it, elapsed, info, cert)
    if not fallback:
        raise SolverError(f"projected Newton did not certify optimality after {it} iterations "
                          f"(Frank-Wolfe gap {gap:.3g}, min lambda {lam_min:.3g}).")
    alpha, nu, ipm_info = rsvm_socp_ipm(Q, B, y, C, kappa)
    info.update({"ipm": ipm_info, "newton_reason": f"gap {gap:.3g}, min lambda {lam_min:.3g} after {it} its"})
    if ipm_info["status"] != "optimal":
        raise SolverError(f"RSVM_SOCP: projected Newton uncertified and the cone IPM returned "
                          f"{ipm_info['status']!r}.")
    obj = 0.5 * float(alpha @ Q @ alpha) + 0.5 * kappa * float(np.linalg.norm(B @ nu)) - float(alpha.sum())
    elapsed = time.perf_counter() - t0
    # the cone IPM's own certificate: its primal value and the Lagrangian dual value at its dual point
    # (feasible to tol_feas = 1e-8); its status "optimal" means gap_rel <= 1e-8 (Clarabel's semantics)
    cert = certify("rsvm_socp_fast/cone-ipm", float(ipm_info["pcost"]), float(ipm_info["dcost"]), max(tol, 1e-8),
                   iterations=it + ipm_info["iterations"], time=elapsed,
                   detail={"ipm_gap_rel": ipm_info["gap_rel"], "pres": ipm_info["pres"], "dres": ipm_info["dres"]})
    return RSVMSOCPResult(alpha, nu, obj, "optimal", "cone-ipm", it + ipm_info["iterations"], elapsed, info, cert)


def _prepare(K_bar, beta, y, factor, check_input=True):
    if not check_input:  # validated at the caller's boundary (symmetric K_bar, labels, finite factor)
        y = np.asarray(y, dtype=float)
        beta_hat, B = (beta.T @ beta, beta) if factor else prepare_beta(beta, y.shape[0], factor)
        Q = y[:, None] * K_bar * y[None, :]
        return Q, y, _Beta(beta_hat, B), B
    K_bar = np.asarray(K_bar, dtype=float)
    if K_bar.ndim != 2 or K_bar.shape[0] != K_bar.shape[1] or not np.all(np.isfinite(K_bar)):
        raise ValueError("K_bar must be a finite square matrix.")
    n = K_bar.shape[0]
    y = np.asarray(y, dtype=float)
    if y.shape != (n,) or not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError(f"y must hold {n} labels in {{-1, +1}}.")
    check_two_classes(y, "y", classes=np.unique(y), reason="y'alpha = 0 then forces alpha = 0")
    K_bar = 0.5 * (K_bar + K_bar.T)
    beta_hat, B = prepare_beta(beta, n, factor)
    Q = y[:, None] * K_bar * y[None, :]
    return Q, y, _Beta(beta_hat, B), B


def rsvm_socp_grid(K_bar, beta, y, Cs, kappas, *, factor=False, tol=1e-9, max_iter=60, fallback=True):
    """Solve over the grid ``Cs x kappas`` in a serpentine order, warm-starting each point from the
    previous one; returns ``{(C, kappa): RSVMSOCPResult}``.

    For ``n <= SMALL_N`` the BLAS thread pool is limited to one thread during the grid: at these
    sizes (n x n Cholesky factorisations of the free set, matrix-vector products) thread start-up
    costs more than it saves (measured n = 160, 60 points on 2 cores: 138 ms with 2 threads, 72 ms
    with 1).  The results agree with the unlimited path to round-off (tested)."""
    n = np.asarray(y).shape[0]
    if n > SMALL_N:
        return _grid(K_bar, beta, y, Cs, kappas, factor, tol, max_iter, fallback)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return _grid(K_bar, beta, y, Cs, kappas, factor, tol, max_iter, fallback)


SMALL_N = 1000


def _grid(K_bar, beta, y, Cs, kappas, factor, tol, max_iter, fallback):
    prep = _prepare(K_bar, beta, y, factor)
    out = {}
    prev, prev_C = None, None
    for i, C in enumerate(Cs):
        ks = list(kappas) if i % 2 == 0 else list(kappas)[::-1]
        for kp in ks:
            res = rsvm_socp_fast(None, None, prep[1], C, kp, prev, tol=tol, max_iter=max_iter, fallback=fallback,
                                 svm_start=prev is not None and C != prev_C, _prepared=prep)
            out[(C, kp)] = res
            prev, prev_C = res.alpha, C
    return out
