"""Dual coordinate descent for the Weston-Watkins machine on explicit features (compiled with numba).

The dual of eq. 1.9 [ElD19] with features ``phi_i`` (rows of ``Phi``) maximises
``2 sum alpha_ik - 1/2 sum_k ||w_k||^2`` over the box ``0 <= alpha_ik <= zeta`` (``k != y_i``), with
``w_k = sum_i beta_ik phi_i``, ``beta_ik = [k = y_i] sum_l alpha_il - [k != y_i] alpha_ik``, subject to the
bias constraints ``r_k = sum_i beta_ik = 0``.  The bias constraints are handled by the method of
multipliers: for a multiplier ``nu`` and a penalty ``rho`` the epoch below maximises
``2 sum alpha - 1/2 ||W||^2 - nu' r - rho/2 ||r||^2`` by exact coordinate steps (as the dual coordinate
descent of LIBLINEAR [Hsieh et al., ICML 2008] and the sequential dual method for multi-class machines
[Keerthi et al., KDD 2008]), with the bias ``b = nu + rho r`` in every margin; the caller updates ``nu`` and
judges progress by a certificate.  The partial derivative along ``alpha_ik`` is the margin
``z_ik = 2 - f_{y_i}(x_i) + f_k(x_i)`` and its curvature ``2 (||phi_i||^2 + rho)``, so a step costs one
score vector ``W' phi_i`` per sample (``D C`` multiply-adds) and ``D`` per changed class.

*Shrinking*: a sample whose every multiplier sits at a bound with its margin beyond ``thr`` on the side
that keeps it there is dropped from later epochs (the caller restores all samples when the remaining ones
are solved to its tolerance), as LIBLINEAR does.

The kernel takes trusted, C-contiguous float64 arrays and int64 codes (validated by the caller).
"""

from __future__ import annotations

import numpy as np

from .._jit import jit
from .._threads import blas_threads_for
from .ipm.row_kernels import row_dot

#: Weston-Watkins fits with at most this many (sample, class) pairs go to the numpy ``alm`` route rather than the
#: compiled ``cd`` epoch (:meth:`~rsvm_conic.formulations.multiclass_ww.WWMachine.auto_routes`): nothing is compiled
#: for them (``rsvm-conic bench first-hour``: the user guide's 90 points and 3 classes, ``cd`` 4.7 s at its first
#: fit on a loaded machine for 0.6 s at its second, ``alm`` 0.2-0.5 s).
SMALL_PAIRS = 1000


def ww_threads(F, n_classes: int):
    """The BLAS thread context of a Weston-Watkins solve on features ``F`` (n x D) with ``n_classes`` classes: its
    largest BLAS calls are the (n x D)(D x C) score products and D x D factorisations
    (:func:`rsvm_conic._threads.blas_threads_for`)."""
    n, D = F.shape
    return blas_threads_for(max(float(n) * D * n_classes, float(D) ** 3))


@jit()
def ww_cd_epoch(Phi, codes, alpha, WT, nu, r, rho, zeta, sqn, active, n_active, thr):
    """One pass over ``active[:n_active]`` (in that order), updating ``alpha`` (n, C), ``WT`` (C, D) and
    the bias residuals ``r`` (C,) in place.  Returns ``(n_kept, max_violation)``: the kept samples are
    moved to the front of ``active``; the violation is the largest projected-gradient entry seen (the
    optimality measure of the box problem at fixed ``nu``)."""
    C, D = WT.shape
    dbeta = np.zeros(C)
    s = np.empty(C)
    maxviol = 0.0
    keep = 0
    for ii in range(n_active):
        i = active[ii]
        y = codes[i]
        phi = Phi[i]
        for c in range(C):  # the scores W' phi_i: C vectorised dot products (no BLAS call, no allocation)
            s[c] = row_dot(WT, c, phi) + nu[c] + rho * r[c]
            dbeta[c] = 0.0
        q = sqn[i] + rho
        safe = True
        changed = False
        for k in range(C):
            if k == y:
                continue
            g = 2.0 - s[y] + s[k]
            a = alpha[i, k]
            if a <= 0.0:
                v = max(g, 0.0)
                if g >= -thr:
                    safe = False
            elif a >= zeta:
                v = max(-g, 0.0)
                if g <= thr:
                    safe = False
            else:
                v = abs(g)
                safe = False
            if v > maxviol:
                maxviol = v
            new = min(max(a + g / (2.0 * q), 0.0), zeta)
            d = new - a
            if d != 0.0:
                changed = True
                alpha[i, k] = new
                dbeta[y] += d
                dbeta[k] -= d
                s[y] += d * q  # the scores move with w_y += d phi_i, w_k -= d phi_i and with b = nu + rho r
                s[k] -= d * q
                r[y] += d
                r[k] -= d
        if changed:
            for c in range(C):
                dc = dbeta[c]
                if dc != 0.0:
                    for j in range(D):
                        WT[c, j] += dc * phi[j]
        if changed or not safe:
            active[keep] = i
            keep += 1
    return keep, maxviol
