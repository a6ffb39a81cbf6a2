"""Eq. 1.9 [ElD19] on explicit features by the method of multipliers with semismooth Newton-CG steps."""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import cho_factor as _cho_factor
from scipy.linalg import cho_solve as _cho_solve

from ...certify.contract import relative_gap
from .objective import certified_result, feature_gram, ww_dual_bound, ww_objective


def ww_primal_alm(
    Phi,
    codes,
    n_classes: int,
    zeta: float,
    *,
    tol: float = 1e-6,
    mu0: float = 0.1,
    mu_factor: float = 0.2,
    mu_min: float = 1e-2,
    max_outer: int = 60,
    max_newton: int = 50,
    max_cg: int = 200,
    direct_max: int = 2500,
    polish: bool = True,
    max_active_set: int = 6,
    inner_rtol: float = 1e-9,
    inner_decay: float = 0.1,
    W0=None,
    b0=None,
    lam0=None,
):
    """Solve eq. 1.9 exactly on explicit features by the method of multipliers with semismooth Newton-CG steps.

    The method of multipliers on the hinge terms with a semismooth Newton-CG inner solver (as SSNAL
    [Li, Sun, Toh] for SVMs), the bias an ordinary variable.

    Write the margins ``z_ik(W, b) = 2 - f_{y_i}(x_i) + f_k(x_i)`` (``k != y_i``).  For multipliers
    ``lam`` in the box ``[0, zeta]`` and a penalty ``sigma = zeta / mu``, the augmented Lagrangian minimised
    over the slack is ``phi(W, b) = 1/2 ||W||^2 + zeta sum_ik l_mu(z_ik + mu lam_ik / zeta)``: the Huber
    smoothing ``l_mu`` of the primal solver (:func:`.ww_primal_lbfgs`) with the margins *shifted* by the
    multipliers.  Each outer step minimises ``phi`` by semismooth Newton (generalized Hessian
    ``H = I + A' diag(d) A``, ``d = zeta / mu`` on the ``m`` margins in the quadratic zone ``0 < z + shift
    < mu``, unit curvature on the bias) and sets ``lam = zeta clip((z + shift) / mu, 0, 1)``:

    * the Newton system is solved exactly through Woodbury, ``H^{-1} r = r - A' (diag(1/d) + A A')^{-1} A r``,
      one ``m x m`` Cholesky factorisation while ``m <= direct_max``, else by CG whose products touch
      only the rows of samples with a margin in the zone;
    * the step length is exact: ``phi`` along the step is piecewise quadratic, its monotone derivative
      is zeroed by safeguarded Newton on the margins (no pass over ``Phi``).

    Unlike the smoothing continuation the iterates converge to the exact optimum for a fixed ``mu`` (the
    multipliers absorb the smoothing); ``mu`` still shrinks by ``mu_factor`` per step down to ``mu_min``.
    A smaller ``mu`` speeds the multipliers up but narrows the zone, and below ``~1e-2`` (margins are ~2)
    the Newton steps stall on the kinks (exact line-search steps of 1e-2 to 1e-4 of the full step, every
    inner solve at ``max_newton``), hence the floor ``mu_min = 1e-2``.
    After each outer step from the second on, an *active-set step* guesses the optimum's partition (free
    multipliers = margins in the zone, ``zeta`` beyond it, 0 elsewhere) and solves eq. 1.9's optimality
    conditions for it exactly (:func:`partition_solve`), moving violators and repeating up to
    ``max_active_set`` times while the multipliers stay near the box; once the partition is right this
    closes the gap to rounding.  Every candidate is judged only by the certificate: the true objective of
    the best ``(W, b)`` against the best :func:`.ww_dual_bound` of the multipliers seen (feasible after its
    repair: box and the bias constraints ``sum_i beta_ik = 0``); the run stops when the relative gap is
    ``<= tol``, else ends with status ``"max_iter"``.

    Every step is a matrix product over all samples (no loop over samples).

    Parameters
    ----------
    Phi, codes, n_classes, zeta
        The problem, as for :func:`.ww_dual_cd`: feature rows (n, D), class codes in ``0..n_classes-1`` (both
        trusted), the number of classes and eq. 1.9's penalty.
    tol : float
        Relative certified gap at which the run stops.
    mu0, mu_factor, mu_min : float
        The smoothing: first value, factor per outer step, floor.
    max_outer, max_newton, max_cg : int
        Budgets of outer steps, Newton steps per outer step and CG iterations per Newton step.
    direct_max : int
        The largest number of margins in the zone for a direct (Cholesky) Newton step and for an
        active-set step.
    polish : bool
        Whether to take the active-set steps.
    max_active_set : int
        Active-set steps per outer step.
    inner_rtol, inner_decay : float
        An inner solve stops once the gradient norm is below ``max(inner_rtol, inner_decay**outer)`` times
        its first value.
    W0 : ndarray of shape (D, C), optional
        Warm start of the weights (:func:`.ww_dual_cd` hands over its point this way).
    b0 : ndarray of shape (C,), optional
        Warm start of the biases.
    lam0 : ndarray of shape (n, C), optional
        Warm start of the multipliers (clipped to the box).

    Returns
    -------
    W : ndarray of shape (D, C)
        Weights of the best certified iterate.
    b : ndarray of shape (C,)
        Biases, centred (``sum(b) = 0``).
    info : dict
        ``status`` (``"optimal"`` when the gap met ``tol``, else ``"max_iter"``), ``iterations`` (Newton
        steps), ``objective``, ``certificate`` (the :class:`~rsvm_conic.certify.contract.SolveInfo`, route
        ``"alm"``, its ``detail`` counting outer, Newton, CG, direct and active-set steps) and ``multipliers``.
    """
    t_start = time.perf_counter()
    Phi = np.asarray(Phi, dtype=np.float64)
    n, D = Phi.shape
    C = int(n_classes)
    rows = np.arange(n)
    Y = np.zeros((n, C))
    Y[rows, codes] = 1.0
    mask = 1.0 - Y
    zeta = float(zeta)
    W = np.zeros((D, C)) if W0 is None else np.array(W0, dtype=np.float64).reshape(D, C)
    b = np.zeros(C) if b0 is None else np.array(b0, dtype=np.float64).ravel()
    lam = np.zeros((n, C)) if lam0 is None else np.clip(np.array(lam0, dtype=np.float64), 0.0, zeta) * (1.0 - Y)
    floor = 1e-9 * zeta * n

    def margins(S):
        return (2.0 - S[rows, codes][:, None] + S) * mask

    def back(G):  # A' G: (Phi' dS, 1' dS) with dS = G - Y G 1
        dS = G - Y * G.sum(axis=1, keepdims=True)
        return Phi.T @ dS, dS.sum(axis=0)

    gram = feature_gram(Phi)

    best = {"f": np.inf, "W": W, "b": b, "d": 0.0}
    mu, nit_newton, nit_cg, nit_direct, nit_polish, outer, gap = float(mu0), 0, 0, 0, 0, 0, np.inf
    S = Phi @ W + b
    for outer in range(1, max_outer + 1):
        shift = (mu / zeta) * lam
        # ---- inner: minimise phi(W, b) by semismooth Newton-CG
        zs = margins(S) + shift
        g0 = None
        for _ in range(max_newton):
            G = zeta * np.clip(zs / mu, 0.0, 1.0) * mask
            gW, gb = back(G)
            gW += W
            gnorm = np.sqrt(float(np.sum(gW * gW) + gb @ gb))
            g0 = gnorm if g0 is None else g0
            if (
                gnorm <= 1e-10 * max(1.0, np.sqrt(float(np.sum(W * W))))
                or gnorm <= max(inner_rtol, inner_decay**outer) * g0
            ):
                break
            dmat = (zeta / mu) * ((zs > 0.0) & (zs < mu)) * mask
            reg = 1.0  # the bias block is singular when no margin is in the quadratic zone: curvature as W's

            # only samples with a margin in the quadratic zone enter the Hessian: products on their rows only
            act = np.flatnonzero(dmat.any(axis=1))
            PJ, dJ, YJ, cJ = Phi[act], dmat[act], Y[act], codes[act]
            rJ = np.arange(act.size)

            def hvp(V, c):
                SJ = PJ @ V + c
                E = dJ * (SJ - SJ[rJ, cJ][:, None])
                dSJ = E - YJ * E.sum(axis=1, keepdims=True)
                return PJ.T @ dSJ + V, dSJ.sum(axis=0) + reg * c

            ai, ak = np.nonzero(dJ)  # the m margins in the quadratic zone
            if 0 < ai.size <= direct_max:
                # Woodbury: H = I + A' diag(d) A (reg = 1), A's row (i, k) = (phi_i (e_k - e_yi), e_k - e_yi), so
                # H^{-1} r = r - A' (diag(1/d) + A A')^{-1} A r with (A A')_(ik),(jl) = (phi_i phi_j + 1) c,
                # c = (e_k - e_yi).(e_l - e_yj): one m x m Cholesky factorisation gives the exact Newton step
                ay = cJ[ai]
                M = (PJ @ PJ.T + 1.0)[np.ix_(ai, ai)]
                M *= (ak[:, None] == ak) * 1.0 - (ak[:, None] == ay) - (ay[:, None] == ak) + (ay[:, None] == ay)
                M[np.diag_indices_from(M)] += 1.0 / dJ[ai, ak]
                SJ = PJ @ gW + gb
                u = _cho_solve(_cho_factor(M, check_finite=False), SJ[ai, ak] - SJ[ai, ay], check_finite=False)
                E = np.zeros_like(dJ)
                E[ai, ak] = u
                dSJ = E - YJ * E.sum(axis=1, keepdims=True)
                xW, xb = -(gW - PJ.T @ dSJ), -(gb - dSJ.sum(axis=0))
                nit_direct += 1
            else:
                # CG on H [dW; db] = -g, forcing term min(0.1, sqrt(|g| / |g0|))
                rW, rb = -gW, -gb
                pW, pb = rW.copy(), rb.copy()
                xW, xb = np.zeros_like(W), np.zeros_like(b)
                rr = float(np.sum(rW * rW) + rb @ rb)
                stop = (min(0.1, np.sqrt(gnorm / g0)) * gnorm) ** 2
                for _cg in range(max_cg):
                    hW, hb = hvp(pW, pb)
                    pHp = float(np.sum(pW * hW) + pb @ hb)
                    if pHp <= 0.0:
                        break
                    a = rr / pHp
                    xW += a * pW
                    xb += a * pb
                    rW -= a * hW
                    rb -= a * hb
                    rr_new = float(np.sum(rW * rW) + rb @ rb)
                    nit_cg += 1
                    if rr_new <= stop:
                        break
                    pW = rW + (rr_new / rr) * pW
                    pb = rb + (rr_new / rr) * pb
                    rr = rr_new
            # exact line search: phi along the step is piecewise quadratic; its derivative
            # Wd + t dd + zeta sum clip((zs + t dz) / mu, 0, 1) dz is monotone, found by safeguarded Newton
            dS_dir = Phi @ xW + xb
            dz_dir = margins(dS_dir) - 2.0 * mask
            Wd, dd = float(np.sum(W * xW)), float(np.sum(xW * xW))

            def dphi(t):
                zt = zs + t * dz_dir
                inz = (zt > 0.0) & (zt < mu)
                return (
                    Wd + t * dd + zeta * float(np.sum(np.clip(zt / mu, 0.0, 1.0) * dz_dir)),
                    dd + (zeta / mu) * float(np.sum(dz_dir[inz] ** 2)),
                )

            lo, hi, t = 0.0, np.inf, 1.0
            for _ls in range(60):
                d1, d2 = dphi(t)
                if d1 > 0.0:
                    hi = t
                else:
                    lo = t
                    if d1 == 0.0:
                        break
                tn = t - d1 / d2 if d2 > 0.0 else 2.0 * t
                if not (lo < tn < hi):
                    tn = 2.0 * t if hi == np.inf else 0.5 * (lo + hi)
                if abs(tn - t) <= 1e-12 * max(t, 1e-300):
                    break
                t = tn
            t = lo if hi == np.inf else (t if lo <= t <= hi else lo)
            if t <= 1e-12:  # no progress along the step (rounding): the inner solve has stalled
                break
            W = W + t * xW
            b = b + t * xb
            S = S + t * dS_dir
            zs = zs + t * dz_dir
            nit_newton += 1
        # ---- multiplier step and certificate
        lam = zeta * np.clip(zs / mu, 0.0, 1.0) * mask
        f_true = ww_objective(float(np.sum(W * W)), S, codes, zeta)
        if f_true < best["f"]:
            best.update(f=f_true, W=W.copy(), b=b.copy())
        best["d"] = max(best["d"], ww_dual_bound(lam, codes, zeta, gram)[0])
        gap = relative_gap(best["f"], best["d"], floor)
        if gap <= tol:
            break
        if polish and outer >= 2:
            # active-set step: take the margins in the quadratic zone as the free multipliers, those beyond
            # it at zeta, the rest at 0, and solve the optimality conditions of eq. 1.9 for that partition
            # exactly (margins of the free set = 0, bias constraints), one (m + C) linear system; kept only
            # through the certificate (primal objective of its (W, b), dual bound of its multipliers)
            free, upper = (zs > 0.0) & (zs < mu) & (mask > 0), (zs >= mu) & (mask > 0)
            for _as in range(max_active_set):
                if not 0 < free.sum() <= direct_max:
                    break
                out = partition_solve(Phi, codes, Y, free, upper, zeta)
                if out is None:
                    break
                nit_polish += 1
                Wp, bp, ap = out
                Sp = Phi @ Wp + bp
                fp = ww_objective(float(np.sum(Wp * Wp)), Sp, codes, zeta)
                if fp < best["f"]:
                    best.update(f=fp, W=Wp, b=bp)
                best["d"] = max(best["d"], ww_dual_bound(ap, codes, zeta, gram)[0])
                gap = relative_gap(best["f"], best["d"], floor)
                if gap <= tol or not np.all(np.abs(ap[free] - 0.5 * zeta) <= 1.5 * zeta):
                    break  # certified, or far out of the box: the partition is not close to the optimum's
                # move the violators: free multipliers out of the box, zero / bound ones on the wrong side
                zp = margins(Sp)
                new_free = (
                    (free & (ap > 0.0) & (ap < zeta))
                    | (~free & ~upper & (zp > 0.0) & (mask > 0))
                    | (upper & (zp < 0.0))
                )
                new_upper = (free & (ap >= zeta)) | (upper & (zp >= 0.0))
                if np.array_equal(new_free, free) and np.array_equal(new_upper, upper):
                    break
                free, upper = new_free, new_upper
            if gap <= tol:
                break
        mu = max(mu * mu_factor, mu_min)
    detail = {
        "outer": outer,
        "newton": nit_newton,
        "cg": nit_cg,
        "direct": nit_direct,
        "active_set": nit_polish,
        "mu": mu,
    }
    return certified_result("alm", best, tol, floor, t_start, nit_newton, detail, lam)


def partition_solve(Phi, codes, Y, free, upper, zeta):
    """The exact solution of eq. 1.9 for one partition of the multipliers (see :func:`ww_primal_alm`):
    ``alpha`` free on ``free``, ``= zeta`` on ``upper``, 0 elsewhere.  With ``w_k = sum_i beta_ik phi_i`` the
    free margins are linear in ``alpha_F`` and ``b``: ``Q_FF alpha_F + E_F' b = 2 - (the part of U)``,
    ``Q = (Phi Phi')_ij c_(ik),(jl)``, ``c = (e_k - e_yi).(e_l - e_yj)``, and the bias constraints read
    ``E_F alpha_F = -(column sums of beta_U)`` (``E[k, (jl)] = [k = y_j] - [k = l]``).  One dense
    ``(m + C - 1)`` system (``b_0 = 0``).  Returns ``(W, b, alpha)`` (``alpha`` not clipped) or None
    (a singular system).

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        Feature rows.
    codes : ndarray of shape (n,)
        Class codes in ``0..n_classes-1``.
    Y : ndarray of shape (n, n_classes)
        The codes one-hot.
    free, upper : ndarray of bool, shape (n, n_classes)
        The free multipliers and those at their bound.
    zeta : float
        Eq. 1.9's penalty, the multipliers' bound.

    Returns
    -------
    tuple (W, b, alpha) or None
        The partition's weights, biases and multipliers (not clipped); None for a singular system.
    """
    n, C = Y.shape
    ai, ak = np.nonzero(free)
    m = ai.size
    alpha = zeta * upper.astype(float)
    beta_u = Y * alpha.sum(axis=1, keepdims=True) - alpha
    W_u = Phi.T @ beta_u
    if m == 0:
        return None
    ay = codes[ai]
    rows, inv = np.unique(ai, return_inverse=True)
    PF = Phi[rows]
    Q = (PF @ PF.T)[np.ix_(inv, inv)]
    Q *= (ak[:, None] == ak) * 1.0 - (ak[:, None] == ay) - (ay[:, None] == ak) + (ay[:, None] == ay)
    SU = PF @ W_u
    rhs = 2.0 - (SU[inv, ay] - SU[inv, ak])
    E = np.zeros((C, m))
    E[ay, np.arange(m)] += 1.0
    E[ak, np.arange(m)] -= 1.0
    kkt = np.zeros((m + C - 1, m + C - 1))
    kkt[:m, :m] = Q
    kkt[:m, m:] = E[1:].T
    kkt[m:, :m] = E[1:]
    try:
        sol = np.linalg.solve(kkt, np.concatenate([rhs, -beta_u.sum(axis=0)[1:]]))
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(sol)):
        return None
    alpha[ai, ak] = sol[:m]
    beta = Y * alpha.sum(axis=1, keepdims=True) - alpha
    return Phi.T @ beta, np.concatenate([[0.0], sol[m:]]), alpha
