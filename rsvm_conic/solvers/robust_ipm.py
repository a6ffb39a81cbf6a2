"""Structure-exploiting interior-point backend for the robust linear SVM SOCP [CJ20, eq. 4].

The model (p = 2, the worst-case robust SVM and the chance-constrained SVM)::

    minimise    1/2 ||w||^2 + sum_i C_i xi_i       (C_i = C, or C s_i with per-sample weights s_i)
    subject to  y_i (<w, x_i> + b) + xi_i - gamma_i t_{g(i)} >= 1,   xi >= 0,
                t_g >= ||A_g' w||_2                                  g = 1..k

in the cone form of :mod:`rsvm_conic.solvers.cone_ipm` with ``x = (w, b, xi, t)``, the
orthant holding the L margin slacks and the L slacks of ``xi >= 0``, and one SOC
``(t_g, A_g' w)`` of dimension n + 1 per group (k = 1 or 2 for shared ellipsoids,
k = L for per-sample ellipsoids; a group whose samples all have gamma_i = 0 gets no cone).

Newton system.  With NT scaling ``D = (W'W)^{-1}`` (diagonal ``d_m, d_x`` on the two
orthant blocks, ``D_g = beta_g^{-2} (2 J wbar_g wbar_g' J - J)`` on the cones), the reduced
matrix ``P + G'DG`` has the arrow structure

* ``xi_i`` couples only with ``u = (w, b)`` and ``t_{g(i)}`` through margin row i: eliminated
  in closed form (``rho_i = d_m d_x / (d_m + d_x)``, the series combination);
* ``t_g`` couples only with ``u`` (``h_g = sum_{i in g} rho_i gamma_i^2 + (D_g)_00``): also
  eliminated in closed form, for grouped (k small) and per-sample (k = L) cones alike;

leaving one (n + 1) x (n + 1) Schur complement.  Written naively,

    S = [I 0; 0 0] + [X 1]' diag(rho) [X 1] + sum_g [A_g (D_g)_11 A_g'  0; 0 0] - V' diag(1/h) V,
    V_g = -sum_{i in g} rho_i gamma_i y_i [x_i; 1] + [A_g (D_g)_10; 0],

it cancels catastrophically near the optimum ((D_g)_00 ~ wbar_0^2 grows like 1/mu; measured:
KKT residuals of 1e-2 at gap 1e-8).  We assemble the algebraically equal, cancellation-free form

    S = [I 0; 0 0] + sum_i rho_i c_i c_i'                      c_i = y_i [x_i; 1] - gamma_i m_g(i)
        + sum_g beta_g^-2 [A_g (I - 2 w1 w1' / (2 w0^2 - 1)) A_g'  0; 0 0]
        + sum_g (a_g d_g / (a_g + d_g)) (m_g + qhat_g)(m_g + qhat_g)'

with ``a_g = sum_{i in g} rho_i gamma_i^2``, ``m_g = sum_{i in g} rho_i gamma_i y_i [x_i; 1] / a_g``,
``d_g = (D_g)_00 = (2 w0^2 - 1) / beta_g^2`` and ``qhat_g = [A_g (D_g)_10 / d_g; 0] = [-2 w0 A_g w1 /
(2 w0^2 - 1); 0]`` (``w0, w1`` the parts of ``wbar_g``): a centred Gram matrix, the t-eliminated cone
block and a series combination -- every term PSD.  (For per-sample cones ``c_i = 0``: the margin row
and the cone of a sample combine into the last term.)  The right-hand side is combined the same way.
All O(L n^2) work is weighted Gram products done with BLAS ``syrk`` on row blocks (one for grouped
cones; for per-sample cones the two L x (n + 1) products of the last two terms); nothing loops over
samples in Python.  A Cholesky factorisation of S then gives each Newton solve in O(L n), and the
engine refines the corrector step against the unreduced operators once the gap is small.

Statuses.  The model is always feasible (``w = 0``, ``xi = 1 + gamma t``, ``t`` large) and
bounded below, and its dual (``alpha = 0``) too, so "infeasible" cannot occur for valid data.
Degenerate inputs are rejected up front with a ValueError that says what to fix (NaN/inf
data, a single class, p != 2); a run that does not certify optimality raises
:class:`~rsvm_conic.exceptions.SolverError` (``"max_iter"``, ``"numerical_error"``) unless
``accept_inaccurate=True`` (then a :class:`SolverWarning` names the status).  Zero-variance
data (all rows equal) is a valid problem whose optimum has ``w = 0``; it is solved normally.
"""

from __future__ import annotations

import functools
import time
import warnings
from typing import NamedTuple

import numpy as np
import scipy.linalg as sla
from scipy.linalg.blas import dsyrk

from .._threads import blas_threads_for
from .._validation import check_two_classes, dask_compute, is_dask_array
from .cone_ipm import REFINE_STEPS, ConeSpec, Scaling, cone_ipm
from ..exceptions import SolverError, SolverWarning
from .row_kernels import (
    cone_back_rows,
    cone_gram_rows,
    cone_gx_gtz_rows,
    cone_gx_rows,
    cone_rhs_rows,
    fill_centred_rows,
    fill_centred_rows_in,
    group_row_sums,
    margin_rows_gx,
    margin_weights,
    matvec_pair_groups,
    matvec_pair,
    numpy_path_for,
    robust_solve_rows_in,
    robust_solve_rows_out,
    soc_apply_sq,
    soc_rhs_terms,
)

__all__ = [
    "ConeTerms",
    "GroupMeans",
    "RobustSVMCone",
    "apply_rows",
    "centred_gram",
    "cone_rows_gx",
    "robust_svm_ipm",
    "solve_robust_ipm",
    "sum_apply_rows",
    "transpose_apply",
    "weighted_gram",
]

_CHUNK = 8192


@functools.lru_cache(maxsize=16)
def _triu(n: int):
    return np.triu_indices(n, 1)


def _gram_acc(d: int) -> np.ndarray:
    """A zero (d, d) accumulator for :func:`_add_syrk` (Fortran-ordered, so BLAS updates it in place)."""
    return np.zeros((d, d), order="F")


def _add_syrk(C: np.ndarray, Bt: np.ndarray) -> np.ndarray:
    """``C += Bt Bt'`` in the lower triangle of the accumulator ``C`` (BLAS ``dsyrk``; ``Bt`` Fortran-ordered, the
    transpose of a C-ordered row block).  OpenBLAS's lower-triangle kernel is the faster one here: a 2e5 x 51 Gram
    matrix in 8192-row blocks 21.5-21.9 ms (upper, each block's product added by numpy) -> 16.0-16.4 ms, 2e4 x 51
    1.58 -> 1.27 ms, 2e4 x 201 11.7-12.1 -> 10.7-10.8 ms (measured, one thread)."""
    return dsyrk(1.0, Bt, beta=1.0, c=C, trans=0, lower=1, overwrite_c=1)


def _symmetrise_lower(A: np.ndarray) -> np.ndarray:
    """Copy the lower triangle of ``A`` (what :func:`_add_syrk` writes) into its upper one."""
    iu = _triu(A.shape[0])
    A[iu] = A[iu[1], iu[0]]
    return A


def weighted_gram(X: np.ndarray, wts: np.ndarray, chunk: int = _CHUNK) -> np.ndarray:
    """``X' diag(wts) X`` for ``wts >= 0`` with BLAS syrk on row blocks (symmetric result)."""
    m, n = X.shape
    out = _gram_acc(n)
    if m == 0 or n == 0:
        return out
    sw = np.sqrt(wts)
    for i in range(0, m, chunk):
        B = X[i : i + chunk] * sw[i : i + chunk, None]  # C-ordered, so B.T is Fortran-ordered (no copy)
        out = _add_syrk(out, B.T)
    return _symmetrise_lower(out)


def transpose_apply(factors, diagonal, w):
    """Rows ``A_g' w`` (k, n) of factors ``(k, n)`` (diagonal) or ``(k, n, n)``."""
    if diagonal:
        return factors * w
    return np.einsum("kij,i->kj", factors, w)


def cone_rows_gx(factors, diagonal, w, t, Z):
    """The cone rows of ``G x``, ``Z[g] = (-t_g, -A_g'w)`` (written); diagonal factors: one compiled pass without
    (k, n) temporaries (:func:`~.row_kernels.cone_gx_rows`)."""
    if diagonal:
        cone_gx_rows(factors, w, t, Z)
    else:
        Z[:, 0] = -t
        Z[:, 1:] = -transpose_apply(factors, False, w)


def apply_rows(factors, diagonal, V):
    """Rows ``A_g v_g`` (k, n) for rows ``v_g`` of V."""
    if diagonal:
        return factors * V
    return np.einsum("kij,kj->ki", factors, V)


def sum_apply_rows(factors, diagonal, V):
    """``sum_g A_g v_g`` (n,) without the (k, n) temporary of :func:`apply_rows`."""
    if diagonal:
        return np.einsum("kj,kj->j", factors, V)
    return np.einsum("kij,kj->i", factors, V)


def _row_chunk(n: int) -> int:
    """Rows per block of a rank-k update: about 4 MB of ``(rows, n + 1)`` block, written and then read by
    BLAS while still in cache (measured, one thread, the centred Gram matrix at L = 2e5: at n = 50 15.5 ms with
    8192-row blocks against 18.3 ms with 1024 and 15.2-15.3 ms with 12000-32768; at n = 200 108-110 ms from 2048
    to 8192 rows, against 114 ms with 1024 and 182 ms with 16384)."""
    return int(min(8192, max(256, 2**19 // (n + 1))))


def centred_gram(X, y, rho, gamma, gidx, mg, chunk=None, rows_in=None):
    """``sum_i rho_i c_i c_i'`` with ``c_i = y_i [x_i; 1] - gamma_i m_{g(i)}``: each row block of
    ``sqrt(rho_i) c_i`` is written by one compiled pass (:func:`~.row_kernels.fill_centred_rows`) into a
    cache-sized buffer and added by BLAS syrk.  ``gamma = 0`` gives ``[X 1]' diag(rho) [X 1]``.

    ``rows_in``: the arguments ``(dm, dx, bzm, bxi, bzx, c, gsum, acc)`` of the first half of a Newton solve
    (:func:`~.row_kernels.robust_solve_rows_in`, whose ``rho`` is this one), done in the same pass
    (:func:`~.row_kernels.fill_centred_rows_in`: its two returns summed into the zeroed ``acc``)."""
    L, n = X.shape
    out = _gram_acc(n + 1)
    chunk = _row_chunk(n) if chunk is None else chunk
    sr = np.sqrt(rho)
    buf = np.empty((min(chunk, L), n + 1))
    for i in range(0, L, chunk):
        B = buf[: min(chunk, L - i)]
        if rows_in is None:
            fill_centred_rows(X, y, sr, gamma, gidx, mg, i, B)
        else:
            fill_centred_rows_in(X, y, sr, gamma, gidx, mg, i, B, rho, *rows_in)
        out = _add_syrk(out, B.T)  # B C-ordered: B.T is Fortran-ordered (no copy)
    return _symmetrise_lower(out)


class Workspace:
    """Named arrays reused from one interior-point iteration to the next: ``work(name, shape)`` returns the same
    array while the shape is unchanged.  Fresh arrays of per-sample cone size are zeroed by the kernel on every
    use once they exceed the allocator's reuse threshold (glibc: 32 MiB).  Measured at 2e5 x 50 per sample: the
    solve took 10.5 s instead of 15.5 s with glibc told to keep such arrays (``MALLOC_MMAP_THRESHOLD_`` and
    ``MALLOC_TRIM_THRESHOLD_`` raised); reusing the interior point's largest arrays: median 17.3 s -> 15.2 s."""

    def __init__(self):
        self.arrays: dict = {}

    def __call__(self, name: str, shape) -> np.ndarray:
        a = self.arrays.get(name)
        if a is None or a.shape != tuple(shape):
            a = self.arrays[name] = np.empty(shape)
        return a


class GroupMeans(NamedTuple):
    """The group means ``m_g = (scale_g M_g[:n], last_g)`` of the t-elimination (module docstring), kept
    factored so that per-sample cones need no X-sized array: there ``M = X`` and ``scale = last = c_i / a_i``
    (``c_i = rho_i gamma_i y_i``, ``a_i = rho_i gamma_i^2``); grouped cones pass their (k, n + 1) means
    (:meth:`of`)."""

    M: np.ndarray
    scale: np.ndarray
    last: np.ndarray

    @classmethod
    def of(cls, mg: np.ndarray) -> "GroupMeans":
        """Means held as a (k, n + 1) array (``scale = 1``: the same values)."""
        return cls(mg, np.ones(mg.shape[0]), np.ascontiguousarray(mg[:, -1]))

    def dense(self, n: int) -> np.ndarray:
        """The (k, n + 1) array of the means."""
        out = np.empty((self.scale.shape[0], n + 1))
        np.multiply(self.scale[:, None], self.M[:, :n], out=out[:, :n])
        out[:, n] = self.last
        return out


class ConeTerms:
    """The cones ``(t_g, A_g' w)`` at an NT scaling with ``t_g`` eliminated (module docstring): the
    cones' part of the Schur complement and of its right-hand side.  The one home of this algebra:
    :class:`RobustSVMCone` uses it for its k cones, the row-block interior point (:mod:`.dask_ipm`)
    for grouped cones on the client and for the per-sample cones of each row block.

    With diagonal factors ``F`` nothing of the cones' size is formed besides the row blocks of the Schur terms:
    the compiled passes (:func:`~.row_kernels.cone_gram_rows`, :func:`~.row_kernels.cone_rhs_rows`,
    :func:`~.row_kernels.cone_back_rows`) form ``A_g w1_g = F_g o w1_g``, ``qhat_g`` and ``m_g`` entry by entry.
    """

    def __init__(self, factors, diagonal, beta, wbar, work=None):
        """``work``: a :class:`Workspace` whose arrays this object's row blocks may overwrite (an interior point
        builds one ConeTerms per iteration)."""
        self.factors, self.diagonal = factors, diagonal
        self.work = Workspace() if work is None else work
        self.wbar, self.beta = wbar, beta
        self.w0, self.w1 = wbar[:, 0], wbar[:, 1:]
        self.den = 2.0 * self.w0**2 - 1.0
        self.ib2 = 1.0 / beta**2
        self.D00 = self.den * self.ib2  # (D_g)_00
        self.qc = -2.0 * self.w0 / self.den  # qhat_g = [A_g (D_g)_10 / (D_g)_00; 0] = qc_g [A_g w1_g; 0]
        self._dense = (None, None)  # full factors: (means, their (k, n + 1) array), formed once per means
        if not diagonal:
            k, n = factors.shape[0], factors.shape[-1]
            self.Aw1 = apply_rows(factors, diagonal, self.w1)
            self.qhat = np.zeros((k, n + 1))
            np.multiply(self.qc[:, None], self.Aw1, out=self.qhat[:, :n])

    def _dense_means(self, means: GroupMeans) -> np.ndarray:
        """``means.dense(n)`` for the numpy path of full factors, formed once for the Schur terms and every solve
        that uses the same means."""
        if self._dense[0] is not means:
            self._dense = (means, means.dense(self.factors.shape[-1]))
        return self._dense[1]

    def add_schur(self, S, means: GroupMeans, wts, AAt=None):
        """Add the cones' terms with t_g eliminated to ``S`` (n + 1, n + 1): ``S[:n, :n] += sum_g beta_g^-2 A_g
        (I - 2 w1 w1' / (2 w0^2 - 1)) A_g'`` and the series term ``S += sum_g wts_g (m_g + qhat_g)(m_g + qhat_g)'``
        (``wts = a_g d_g / (a_g + d_g)``; ``AAt``: the products ``A_g A_g'`` of full factors).  Diagonal factors:
        each row block of both rank-k updates is written by one compiled pass and added by BLAS syrk."""
        n = self.factors.shape[-1]
        if not self.diagonal:
            S[:n, :n] += np.tensordot(self.ib2, AAt, axes=1)
            S[:n, :n] -= weighted_gram(self.Aw1, 2.0 * self.ib2 / self.den)
            S += weighted_gram(self._dense_means(means) + self.qhat, wts)
            return
        k = self.factors.shape[0]
        sw1, sw2 = np.sqrt(2.0 * self.ib2 / self.den), np.sqrt(wts)
        G1, G2, dg = _gram_acc(n), _gram_acc(n + 1), np.zeros(n)  # dg: sum_g ib2_g F_g^2
        rows = min(_CHUNK, k)
        B1, B2 = self.work("gram_cone", (rows, n)), self.work("gram_series", (rows, n + 1))
        for i in range(0, k, _CHUNK):
            b1, b2 = B1[: min(_CHUNK, k - i)], B2[: min(_CHUNK, k - i)]
            cone_gram_rows(
                self.wbar, self.factors, means.M, means.scale, means.last, self.qc, self.ib2, sw1, sw2, i, b1, b2, dg
            )
            G1 = _add_syrk(G1, b1.T)  # C-ordered rows: the transposes are Fortran-ordered
            G2 = _add_syrk(G2, b2.T)
        S[np.arange(n), np.arange(n)] += dg
        S[:n, :n] -= _symmetrise_lower(G1)
        S += _symmetrise_lower(G2)

    def rhs_terms(self, BZ):
        """``(r0, T)`` of the cone rows ``BZ`` of a right-hand side: ``r0 = (D_g bz_g)_0`` and the rows
        ``T_g`` whose ``sum_g A_g T_g`` enters the reduced right-hand side.  ``D_g bz_g`` is large when
        the cone pair nears its boundary; these combinations avoid subtracting large numbers."""
        k, d = BZ.shape
        r0, T = np.empty(k), np.empty((k, d - 1))
        soc_rhs_terms(self.wbar, self.den, self.ib2, BZ, r0, T)
        return r0, T

    def reduced_rhs(self, BZ, psi0, ag, hg, means: GroupMeans, rhs):
        """Add the cones' part of the reduced right-hand side to ``rhs`` (n + 1,) in place and return ``r0``:
        ``rhs -= [sum_g A_g T_g; 0]`` and ``rhs += sum_g m_g c1_g - qhat_g c2_g`` with ``c1 = a_g (psi0_g - r0_g)
        / h_g``, ``c2 = (a_g r0_g + (D_g)_00 psi0_g) / h_g`` (``psi0``: the t rows of the right-hand side less
        their margin part).  Diagonal factors: one compiled pass over the cone rows
        (:func:`~.row_kernels.cone_rhs_rows`)."""
        if self.diagonal:
            r0 = np.empty(BZ.shape[0])
            cone_rhs_rows(
                self.wbar, self.den, self.ib2, self.D00, self.factors, means.M, means.scale, means.last, self.qc,
                BZ, psi0, ag, hg, r0, rhs,
            )  # fmt: skip
            return r0
        r0, T = self.rhs_terms(BZ)
        mg = self._dense_means(means)
        rhs[:-1] -= sum_apply_rows(self.factors, False, T)
        rhs += mg.T @ (ag / hg * (psi0 - r0)) - self.qhat.T @ ((ag * r0 + self.D00 * psi0) / hg)
        return r0

    def back(self, BZ, psi0, r0, ag, hg, means: GroupMeans, du, Z):
        """After the Schur solve ``du = (dw, db)``: the cones' ``dt_g = (psi0_g - r0_g) / h_g + (a_g m_g'du -
        (D_g)_00 qhat_g'du) / h_g`` (returned) and their rows of ``dz``, ``Z = W^{-2} ((-dt_g, -A_g'dw) - bz_g)``
        (written).  Diagonal factors: one compiled pass (:func:`~.row_kernels.cone_back_rows`)."""
        k = BZ.shape[0]
        if self.diagonal:
            dt = np.empty(k)
            cone_back_rows(
                self.wbar, self.beta, self.D00, self.factors, means.M, means.scale, means.last, self.qc,
                BZ, psi0, r0, ag, hg, du, dt, Z,
            )  # fmt: skip
            return dt
        mg = self._dense_means(means)
        dt = (psi0 - r0) / hg + (ag * (mg @ du) - self.D00 * (self.qhat @ du)) / hg
        Gd = np.empty(BZ.shape)
        Gd[:, 0] = -dt
        Gd[:, 1:] = -transpose_apply(self.factors, False, du[:-1])
        Gd -= BZ
        soc_apply_sq(self.wbar, self.beta, Gd, True, Z)
        return dt


class RobustSVMCone:
    """The robust SVM SOCP as a cone QP with the structured KKT solve (module docstring)."""

    def __init__(self, X, y, C, gamma, factors, diagonal, group_index):  # noqa: C901
        X = np.ascontiguousarray(X, dtype=float)
        self.X, self.y = X, np.asarray(y, dtype=float)
        self.L, self.n = X.shape
        L, n = self.L, self.n
        self.C = C if np.ndim(C) else float(C)  # a number, or one weight C_i = C s_i per sample
        gamma = np.asarray(gamma, dtype=float)
        group_index = np.asarray(group_index)
        # keep the groups that carry uncertainty (some gamma_i > 0)
        k_all = factors.shape[0]
        active = np.zeros(k_all, dtype=bool)
        active[group_index[gamma > 0]] = True  # (repeated indices: the same True)
        self.active = active  # which of the given groups are the problem's k cones
        remap = np.cumsum(active) - 1
        self.k = int(active.sum())
        self.factors = np.ascontiguousarray(factors[active])
        self.diagonal = bool(diagonal)
        self.gamma = np.where(active[group_index], gamma, 0.0)
        self.gidx = (
            np.where(active[group_index], remap[group_index], 0).astype(np.intp)
            if self.k
            else np.zeros(L, dtype=np.intp)
        )
        k = self.k
        if self.k and not self.diagonal:
            self.AAt = np.einsum("kij,klj->kil", self.factors, self.factors)
        self.per_sample = self.k == L and bool(np.all(self.gidx == np.arange(L)))
        self.cones = ConeSpec(2 * L, [(k, n + 1)] if k else [])
        self.work = Workspace()
        self._derived: dict = {}  # what was derived from one scaling at one version (:meth:`_derived_for`)
        self.nx = n + 1 + L + k
        self.q = np.concatenate([np.zeros(n + 1), np.broadcast_to(self.C, (L,)), np.zeros(k)])
        self.h = np.concatenate([-np.ones(L), np.zeros(L), np.zeros(k * (n + 1))])
        self.b = np.zeros(0)

    def initial_point(self):
        """w = 0, b = 0, margin slacks 1, alpha = C/2 (so the xi rows of the dual residual vanish),
        cone pairs (t_g, 0) = (1, 0) and (z0_g, 0) with z0_g = sum_{i in g} gamma_i alpha_i (so the t rows
        vanish too).  Measured: 13-16 iterations where CVXOPT's shifted least-squares start took 16-21."""
        k, C = self.k, self.C
        x = np.zeros(self.nx)
        z = np.empty(self.cones.size)
        zm, zx, Z = self.split_z(z)
        zm[:] = 0.5 * C
        zx[:] = 0.5 * C
        w, b, xi, t = self.split_x(x)
        if k:
            z0 = self.segsum(self.gamma * zm)
            Z[:] = 0.0
            Z[:, 0] = z0
            t[:] = 1.0
            xi[:] = 2.0 + self.gamma * t[self.gidx]
        else:
            xi[:] = 2.0
        s = self.h - self.Gx(x)
        return x, np.zeros(0), z, s

    # ------------------------------------------------------------------ pieces of x, z
    def split_x(self, x):
        n, L = self.n, self.L
        return x[:n], x[n], x[n + 1 : n + 1 + L], x[n + 1 + L :]

    def split_z(self, z):
        L, k, n = self.L, self.k, self.n
        return z[:L], z[L : 2 * L], z[2 * L :].reshape(k, n + 1)

    def cone_multipliers(self, z, k_all):
        """Rows ``z_g`` (shape (k_all, n); 0 for groups without a cone) of the certificate's dual point
        ``w = sum_i alpha_i y_i x_i - sum_g A_g z_g``: minus the vector parts of the cones' multipliers."""
        out = np.zeros((k_all, self.n))
        if self.k:
            out[self.active] = -self.split_z(z)[2][:, 1:]
        return out

    def segsum(self, v):
        if self.k == 1:
            return np.array([v.sum()])
        return np.bincount(self.gidx, weights=v, minlength=self.k)

    # ------------------------------------------------------------------ operators
    def Px(self, x):
        out = np.zeros_like(x)
        out[: self.n] = x[: self.n]
        return out

    def Gx(self, x, Xw=None, out=None, cone_rows=True):
        """``G x`` (into ``out``); ``Xw``: ``X w`` if known; ``cone_rows=False``: the cones' rows are written
        already."""
        w, b, xi, t = self.split_x(x)
        out = np.empty(self.cones.size) if out is None else out
        zm, zx, Z = self.split_z(out)
        margin_rows_gx(self.X @ w if Xw is None else Xw, self.y, b, xi, self.gamma, t, self.gidx, zm, zx)
        if self.k and cone_rows:
            cone_rows_gx(self.factors, self.diagonal, w, t, Z)
        return out

    def GTz(self, z, XTyz=None, AZ=None):
        """``G' z``; ``XTyz``: ``X' (y z_m)`` if known; ``AZ``: the cones' ``sum_g A_g z_g1`` if known."""
        zm, zx, Z = self.split_z(z)
        out = np.empty(self.nx)
        w, _, xi, t = self.split_x(out)
        yz = self.y * zm
        w[:] = -(self.X.T @ yz if XTyz is None else XTyz)
        if self.k:
            w -= sum_apply_rows(self.factors, self.diagonal, Z[:, 1:]) if AZ is None else AZ
            t[:] = self.segsum(self.gamma * zm) - Z[:, 0]
        out[self.n] = -yz.sum()
        xi[:] = -zm - zx
        return out

    def Gx_GTz(self, x, z, out=None, scaling=None):
        """``(G x, G' z)`` with the two products by ``X`` done in one pass over its rows (``G x`` into ``out``), and
        with diagonal factors the cones' parts of both in one pass over the factors
        (:func:`~.row_kernels.cone_gx_gtz_rows`).  ``scaling``: the iteration's NT scaling; with grouped cones the
        same pass then sums the rows of ``X`` that :meth:`kkt_factor` needs for the group means (kept for it while
        ``scaling`` is not updated again: :attr:`Scaling.version`)."""
        if scaling is not None and self.k and not self.per_sample:
            cg = self._mean_weights(scaling)[3]
            Xw, XTyz, sums = matvec_pair_groups(self.X, x[: self.n], self.y * z[: self.L], cg, self.gidx, self.k)
            self._derived_for(scaling)["group_sums"] = sums  # for kkt_factor(scaling)
        else:
            Xw, XTyz = matvec_pair(self.X, x[: self.n], self.y * z[: self.L])
        if not (self.k and self.diagonal):
            return self.Gx(x, Xw, out), self.GTz(z, XTyz)
        out = np.empty(self.cones.size) if out is None else out
        w, _, _, t = self.split_x(x)
        AZ = cone_gx_gtz_rows(self.factors, w, t, self.split_z(z)[2], self.split_z(out)[2])
        return self.Gx(x, Xw, out, cone_rows=False), self.GTz(z, XTyz, AZ)

    def Ax(self, x):
        return np.zeros(0)

    def ATy(self, y):
        return np.zeros(self.nx)

    # ------------------------------------------------------------------ KKT solve
    def _derived_for(self, scaling: Scaling) -> dict:
        """The quantities derived from ``scaling`` ("weights": :meth:`_mean_weights`' values; "group_sums": the row
        sums of the residual's pass, for :meth:`kkt_factor`), emptied when it is another scaling or was updated since
        (:attr:`Scaling.version`)."""
        kept = self._derived
        if kept.get("scaling") is not scaling or kept.get("version") != scaling.version:
            kept = self._derived = {"scaling": scaling, "version": scaling.version}
        return kept

    def _mean_weights(self, scaling: Scaling):
        """``(dm, dx, rho, c)`` of the margin rows: ``rho = dm dx / (dm + dx)`` and ``c = rho gamma y``, the weights
        of the group means' row sums; computed once per update of ``scaling`` (the residual's pass and the
        factorisation both need them)."""
        kept = self._derived_for(scaling)
        if "weights" not in kept:
            d, rho, c = margin_weights(scaling.w_l, self.gamma, self.y)  # d = scaling.d_l, in the same pass
            kept["weights"] = d[: self.L], d[self.L :], rho, c
        return kept["weights"]

    def kkt_factor(self, scaling: Scaling):
        return self._factor(scaling)[0]

    def kkt_factor_first(self, scaling: Scaling, bx, by, bz, dz_out=None):
        """``(solve, (dx, dy, dz))``: :meth:`kkt_factor` and its solve of ``(bx, by, bz)`` (``dz`` into ``dz_out``),
        whose first half shares the centred Gram matrix's pass over ``X`` (grouped or no cones; the same sums as
        the separate solve)."""
        return self._factor(scaling, (bx, by, bz, dz_out))

    def _factor(self, scaling: Scaling, first=None):
        L, n, k, X, y, gam = self.L, self.n, self.k, self.X, self.y, self.gamma
        dm, dx, rho, cg = self._mean_weights(scaling)
        kd = max(k, 1)  # the group sums below have one slot even without cones (gamma = 0 there)

        def rows_in_args(bx, bz):  # the first half's arrays: (dm, dx, bzm, bxi, bzx, c, gsum)
            bzm, bzx, _ = self.split_z(bz)
            return (dm, dx, bzm, self.split_x(bx)[2], bzx, np.empty(L), np.zeros(kd))

        pre = None  # the first right-hand side's first half, when the Gram matrix's pass does it
        if first is not None and not self.per_sample:
            pre = rows_in_args(first[0], first[2]) + (np.zeros(n + 1),)
        S = np.zeros((n + 1, n + 1))
        if k:
            cones = ConeTerms(self.factors, self.diagonal, scaling.beta[0], scaling.wbar[0], self.work)
            D00 = cones.D00
            ag = self.segsum(rho * gam**2)  # sum_{i in g} rho_i gamma_i^2 (> 0 for active groups)
            if self.per_sample:  # m_i = (c_i / a_i) [x_i; 1], never formed
                scale = cg / ag
                means = GroupMeans(X, scale, scale)
            else:  # m_g = sum_{i in g} rho_i gamma_i y_i [x_i; 1] / a_g
                mg = np.empty((k, n + 1))
                sums = self._derived_for(scaling).pop("group_sums", None)  # from the residual's pass, if it ran
                if sums is None:
                    sums = group_row_sums(X, cg, self.gidx, k)
                mg[:, :n] = sums / ag[:, None]
                mg[:, n] = self.segsum(cg) / ag
                means = GroupMeans.of(mg)
                # margin rows, centred by the group means: sum_i rho_i (a_i - gamma_i m_g)(a_i - gamma_i m_g)'
                # (= X'rho X - sum_g a_g m_g m_g', without the cancellation; zero for per-sample groups)
                S += centred_gram(X, y, rho, gam, self.gidx, mg, rows_in=pre)
            hg = ag + D00
            # the cones' terms and the coupling through t_g: a series combination of a_g and (D_g)_00 on m_g + qhat_g
            cones.add_schur(S, means, ag * D00 / hg, None if self.diagonal else self.AAt)
        else:  # [X 1]' diag(rho) [X 1] (y_i^2 = 1)
            S += centred_gram(X, y, rho, np.zeros(L), self.gidx, np.zeros((1, n + 1)), rows_in=pre)
        S[np.arange(n), np.arange(n)] += 1.0
        cho = sla.cho_factor(S, lower=False, check_finite=True)
        dt0 = np.zeros(1)

        def solve(bx, by, bz, dz_out=None, halves=None):
            # halves: (dm, dx, bzm, bxi, bzx, c, sgc, acc) of this right-hand side's first half, done already
            bw, bb, bxi, bt = self.split_x(bx)
            BZ = self.split_z(bz)[2]
            if halves is None:
                _, _, bzm, _, bzx, c, sgc = args = rows_in_args(bx, bz)  # sgc = segsum(gamma c)
                xtyc, syc = robust_solve_rows_in(X, y, gam, self.gidx, rho, *args)
            else:
                _, _, bzm, _, bzx, c, sgc, acc = halves
                xtyc, syc = acc[:n], acc[n]
            phi = np.empty(n + 1)
            phi[:n] = bw + xtyc
            phi[n] = bb + syc
            dz = np.empty(self.cones.size) if dz_out is None else dz_out
            zm, zx, Z = self.split_z(dz)
            if k:
                psi0 = bt - sgc
                r0 = cones.reduced_rhs(BZ, psi0, ag, hg, means, phi)
                du = sla.cho_solve(cho, phi)
                dt = cones.back(BZ, psi0, r0, ag, hg, means, du, Z)
            else:
                du = sla.cho_solve(cho, phi)
                dt = np.zeros(0)
            dw, db = du[:n], float(du[n])
            out_x = np.empty(self.nx)
            w_, _, dxi, t_ = self.split_x(out_x)
            w_[:] = dw
            out_x[n] = db
            t_[:] = dt
            robust_solve_rows_out(
                X, y, gam, self.gidx, rho, dm, dx, bzm, bxi, bzx, c, dw, db, dt if k else dt0, dxi, zm, zx
            )
            return out_x, np.zeros(0), dz

        if first is None:
            return solve, None
        return solve, solve(*first, halves=pre)


def _check_labels(y):
    y = np.asarray(y, dtype=float)
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("y must hold labels in {-1, +1}.")
    check_two_classes(
        y, "y", reason="the robust SVM then has optimum w = 0 with a non-unique, unbounded set of intercepts b"
    )
    return y


def robust_svm_ipm(
    X,
    y,
    C,
    gamma,
    factors,
    diagonal,
    group_index,
    *,
    max_iter=100,
    tol_gap_abs=1e-8,
    tol_gap_rel=1e-8,
    tol_feas=1e-8,
    verbose=False,
    accept_inaccurate=False,
    print_fn=print,
    refine=REFINE_STEPS,
):
    """Solve the robust SVM SOCP; returns ``(values, info)`` with ``values = {w, b, xi, t}``.

    ``C`` is a number or one positive weight ``C_i`` per sample (in-memory samples), ``factors`` is ``(k, n)``
    (diagonal square roots) or ``(k, n, n)`` (A_g), ``group_index`` maps samples to groups, ``gamma`` holds
    gamma_i = radius * scale_i (>= 0); ``refine``: the most refinement steps per corrector solve
    (:class:`~.cone_ipm.Refinement`).  A Dask array ``X`` (with ``y``, ``gamma``, ``group_index`` -- and
    per-sample factors -- chunked along its rows) is solved on its row blocks by
    :func:`~.dask_ipm.robust_svm_ipm_dask`, nothing gathered.
    """
    if is_dask_array(X):
        from .dask_ipm import robust_svm_ipm_dask

        return robust_svm_ipm_dask(
            X,
            y,
            C,
            gamma,
            factors,
            diagonal,
            group_index,
            max_iter=max_iter,
            tol_gap_abs=tol_gap_abs,
            tol_gap_rel=tol_gap_rel,
            tol_feas=tol_feas,
            verbose=verbose,
            accept_inaccurate=accept_inaccurate,
            print_fn=print_fn,
            refine=refine,
        )
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValueError("X must be a finite 2-D array (impute or drop NaN/inf entries).")
    y = _check_labels(y)
    gamma = np.asarray(gamma, dtype=float)
    if gamma.shape != (X.shape[0],) or not np.all(np.isfinite(gamma)) or np.any(gamma < 0):
        raise ValueError("gamma must hold one finite, nonnegative number per sample.")
    if not np.all(np.isfinite(factors)):
        raise ValueError("the uncertainty factors contain NaN or inf.")
    C = np.asarray(C, dtype=float) if np.ndim(C) else float(C)
    if np.shape(C) not in ((), (X.shape[0],)) or not (np.all(np.isfinite(C)) and np.all(C > 0)):
        raise ValueError(f"C must be finite and > 0 (a number, or one per sample: C_i = C s_i); got {C}.")
    factors = np.asarray(factors, dtype=float)
    # small data: the row kernels' numpy twins (nothing compiled) and one BLAS thread (the Schur matrix's rank-k
    # updates, L (n + 1)^2 flops per iteration, are too small to share)
    with numpy_path_for(max(X.size, factors.size)), blas_threads_for(X.shape[0] * (X.shape[1] + 1) ** 2):
        prob = RobustSVMCone(X, y, C, gamma, factors, diagonal, group_index)
        res = cone_ipm(
            prob,
            max_iter=max_iter,
            tol_gap_abs=tol_gap_abs,
            tol_gap_rel=tol_gap_rel,
            tol_feas=tol_feas,
            verbose=verbose,
            print_fn=print_fn,
            refine=refine,
        )
    w, b, xi, t_act = prob.split_x(res.x)
    t = np.zeros(factors.shape[0])
    if prob.k:
        t[prob.active] = t_act
    info = {
        "status": res.status,
        "iterations": res.iterations,
        "pcost": res.pcost,
        "dcost": res.dcost,
        "gap_abs": res.gap_abs,
        "gap_rel": res.gap_rel,
        "pres": res.pres,
        "dres": res.dres,
        "solve_time": res.time,
        "log": res.log,
        "n_cones": prob.k,
        "alpha": prob.split_z(res.z)[0].copy(),
        "cone_multipliers": prob.cone_multipliers(res.z, factors.shape[0]),
    }
    finish_status(info, accept_inaccurate, lambda: column_rms(X))
    return {"w": np.array(w), "b": float(b), "xi": np.array(xi), "t": t}, info


#: X counts as badly scaled when the root mean square of one of its nonzero columns lies outside this range, far
#: from standardised data's 1 (``rsvm-conic bench robust-ipm-scale``: the interior point certified two-group robust
#: SVMs whose columns' root mean squares lay anywhere from 1e-7 to 1e5, and failed in 5 of the 6 runs with a column
#: at 1e6 or above).
WELL_SCALED = (1e-3, 1e3)


def column_rms(X) -> np.ndarray:
    """The root mean square of each column of ``X`` (numpy, or Dask: one pass)."""
    if is_dask_array(X):
        (ms,) = dask_compute((X * X).mean(axis=0))
        return np.sqrt(np.asarray(ms, dtype=float))
    return np.sqrt(np.einsum("ij,ij->j", X, X) / max(X.shape[0], 1))


def scale_advice(rms, alternative: str) -> str:
    """What to do after a numerical error, from the root mean squares ``rms`` of X's columns: standardise X only
    when a nonzero column lies outside :data:`WELL_SCALED`; else ``alternative`` (another route)."""
    rms = np.asarray(rms, dtype=float)
    live = rms[rms > 0]
    if not live.size:
        return alternative
    lo, hi = float(live.min()), float(live.max())
    span = f"X's nonzero columns have root mean squares from {lo:.1e} to {hi:.1e}"
    if lo < WELL_SCALED[0] or hi > WELL_SCALED[1]:
        return f"{span}: standardise X (e.g. sklearn's StandardScaler), or {alternative}"
    return f"{span}, so rescaling X will not help: {alternative}"


def finish_status(info, accept_inaccurate, rms=None, alternative="use solver='clarabel'"):
    """A run that did not reach "optimal": SolverError saying what to do, or with ``accept_inaccurate`` a
    SolverWarning naming the status (in memory and on Dask row blocks alike).  ``rms``: a callable returning the
    root mean squares of X's columns, called for a numerical error only (:func:`scale_advice`); ``alternative``:
    the advice naming another route."""
    if info["status"] == "optimal":
        return
    msg = (
        f"robust IPM stopped with status {info['status']!r} after {info['iterations']} iterations "
        f"(gap_rel {info['gap_rel']:.2e}, pres {info['pres']:.2e}, dres {info['dres']:.2e})"
    )
    if not accept_inaccurate:
        if info["status"] == "max_iter":
            hint = "raise max_iter or loosen the tolerances"
        else:
            hint = scale_advice(rms() if rms is not None else [], alternative)
        raise SolverError(f"{msg}: {hint}.")
    warnings.warn(
        msg + "; accepted on request (accept_inaccurate=True), not certified optimal.", SolverWarning, stacklevel=3
    )


def solve_robust_ipm(formulation, **opts):
    """Backend ``"ipm"`` for :class:`~rsvm_conic.formulations.robust.RobustSVM` (and the chance SVM).

    Uses the formulation's data, ``C`` and current radius/kappa; options go to
    :func:`robust_svm_ipm` (``max_iter``, ``tol_gap_abs``, ``tol_gap_rel``, ``tol_feas``,
    ``verbose``, ``accept_inaccurate``, ``refine``).  Returns a :class:`~rsvm_conic.certify.contract.Solution`
    whose ``objective`` is the formulation's own numpy objective.
    """
    from ..certify.contract import Solution

    unc = formulation.current_uncertainty()
    X = formulation.X
    L, n = X.shape
    dask = is_dask_array(X)
    if unc is None:  # nominal SVM: no cone
        if dask:
            import dask.array as da

            gidx, gamma = da.zeros(L, dtype=np.intp, chunks=X.chunks[0]), da.zeros(L, chunks=X.chunks[0])
        else:
            gidx, gamma = np.zeros(L, dtype=np.intp), np.zeros(L)
        factors, diagonal = np.zeros((1, n)), True
    else:
        if unc.q != 2.0:
            raise ValueError(
                f"the 'ipm' backend handles p = 2 (ellipsoidal) uncertainty; this model has "
                f"p = {unc.p:g}. Use solver='clarabel' for p = 1 or inf."
            )
        factors, diagonal, gidx, gamma = unc.factors, unc.diagonal, unc.group_index, unc.gamma
    t0 = time.perf_counter()
    if dask:  # validated when the formulation was built
        from .dask_ipm import robust_svm_ipm_dask

        values, info = robust_svm_ipm_dask(
            X, formulation.y, formulation.C, gamma, factors, diagonal, gidx, check_input=False, **opts
        )
    else:
        values, info = robust_svm_ipm(X, formulation.y, formulation.C_box, gamma, factors, diagonal, gidx, **opts)
    sol = Solution(backend="ipm", status=info["status"], objective=float("nan"), time=0.0, values=values, info=info)
    sol.time = time.perf_counter() - t0
    sol.objective = float(formulation.objective(sol))
    return sol
