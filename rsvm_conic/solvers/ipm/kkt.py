"""The reduced KKT algebra of the robust SVM's interior point, shared by its in-memory operator
(:class:`~.robust_svm.RobustSVMCone`) and its row-block operator (:mod:`.row_block_ipm`): weighted and centred Gram
matrices by BLAS ``syrk`` on row blocks, the factors' row products, and the cones' terms with ``t_g`` eliminated
(:class:`ConeTerms`; the derivation is in the user guide, ``docs/guide/robust.md``, "The structured interior point")."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg.blas import dsyrk
from scipy.linalg.lapack import dpotrf, dpotrs

from .cone_loops import (
    cone_back_rows,
    cone_gram_rows,
    cone_gx_rows,
    cone_rhs_rows,
    fill_centred_rows,
    fill_centred_rows_in,
    soc_apply_sq,
    soc_rhs_terms,
)

__all__ = [
    "START_SHARE",
    "START_SLACK",
    "ConeTerms",
    "GroupMeans",
    "Workspace",
    "apply_rows",
    "centred_gram",
    "cholesky_factor",
    "cholesky_solve",
    "cone_rows_gx",
    "start_cone_t",
    "sum_apply_rows",
    "transpose_apply",
    "weighted_gram",
]

_CHUNK = 8192

START_SHARE = 0.3
"""The margin rows' multipliers at the start of both operators, as a share of ``C`` (``alpha_i = 0.3 C_i``, the
``xi >= 0`` rows' ``0.7 C_i``): nearer the optimum's, where most ``alpha_i`` are 0 (samples outside the margin),
than ``C_i / 2``, whose first steps are each cut short by those multipliers.  ``tests/test_robust_ipm.py`` compares
the two over its family (390 against 409 iterations) and on the default ``RobustSVC()`` fit of breast cancer with one
covariance per class (11 against 12, with the route's early stop)."""

START_SLACK = 3.0
"""The hinge slacks at the start of both operators, less their radius term: ``xi_i = 3 + gamma_i t_{g(i)}`` (margin
slacks 2 at ``w = 0``, ``b = 0``).  Against 2, with the cones' start of :func:`start_cone_t`, the iterations of the
breast cancer fits of ``rsvm-conic bench defaults --quick``: ``RobustSVC()`` 13 against 14, ``ChanceConstrainedSVC()``
11 against 13, ``NominalSVC(solver="ipm")`` 11 against 13; 356 against 444 over the cold fits of the synthetic
40000 x 20 family of ``rsvm-conic bench paths`` (its default radii but the first, and 5.75)."""


def start_cone_t(z0, gamma_max, C_mean):
    """The cones' first entries ``t_g`` at the start of both operators (``w = 0``, so the cone slack is
    ``(t_g, 0)`` and its multiplier ``(z0_g, 0)`` with ``z0_g = sum_{i in g} gamma_i alpha_i``).

    Two scales bound it: ``1 / max_{i in g} gamma_i``, where the radius term ``gamma_i t_g`` of every margin is at
    most 1 (with ``t_g = 1`` it is the radius itself: at radius 5.75 the start's hinge sum was 360 times the
    optimum's), and ``mu_0 / z0_g``, where the cone pair's complementarity ``t_g z0_g`` equals the margin pairs' mean
    ``mu_0`` (the central path's; with one cone over L samples ``z0_g`` grows with L, and ``t_g z0_g`` was 10^4
    times ``mu_0`` at L = 40000).  Each capped at 1, ``t_g`` is their geometric mean: centring the cone alone puts
    ``t_g`` orders of magnitude below ``||A_g' w||`` at the optimum, bounding the radius term alone leaves the cone
    pair far off the central path.

    Parameters
    ----------
    z0 : ndarray of shape (k,)
        The cones' multipliers' first entries ``sum_{i in g} gamma_i alpha_i`` (> 0).
    gamma_max : ndarray of shape (k,)
        Each cone's largest radius ``gamma_i``.
    C_mean : float
        The mean hinge weight ``C_i``.

    Returns
    -------
    ndarray of shape (k,)
        ``t_g`` in (0, 1].
    """
    mu0 = C_mean * (START_SHARE * (START_SLACK - 1.0) + (1.0 - START_SHARE) * START_SLACK) / 2.0
    return np.sqrt(np.minimum(1.0, mu0 / z0) / np.maximum(1.0, gamma_max))


def cholesky_factor(S: np.ndarray) -> np.ndarray:
    """The upper Cholesky factor of the reduced KKT matrix ``S`` by LAPACK ``dpotrf`` (the bits of
    ``scipy.linalg.cho_factor(S, lower=False)``, without its wrapper's per-call checks: an interior point factors
    one small matrix per iteration).

    Parameters
    ----------
    S : ndarray of shape (m, m)
        Symmetric positive definite (its upper triangle is read).

    Returns
    -------
    ndarray of shape (m, m)
        The factor (its strict lower triangle holds ``S``'s entries).

    Raises
    ------
    ValueError
        ``S`` holds NaN or inf.
    numpy.linalg.LinAlgError
        ``S`` is not positive definite.
    """
    if not np.isfinite(S).all():
        raise ValueError("the reduced KKT matrix holds NaN or inf")
    c, info = dpotrf(S, lower=0, clean=0)
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor of the reduced KKT matrix is not positive definite")
    if info < 0:  # pragma: no cover - LAPACK argument error
        raise ValueError(f"dpotrf: illegal value in argument {-info}")
    return c


def cholesky_solve(c: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``S^{-1} b`` from the factor of :func:`cholesky_factor` by LAPACK ``dpotrs`` (the bits of
    ``scipy.linalg.cho_solve((c, False), b)``).

    Parameters
    ----------
    c : ndarray of shape (m, m)
        The upper Cholesky factor.
    b : ndarray of shape (m,)
        The right-hand side (finite; a non-finite one raises ValueError).

    Returns
    -------
    ndarray of shape (m,)
    """
    if not np.isfinite(b).all():
        raise ValueError("the reduced right-hand side holds NaN or inf")
    x, info = dpotrs(c, b, lower=0)
    if info:  # pragma: no cover - LAPACK argument error
        raise ValueError(f"dpotrs: illegal value in argument {-info}")
    return x


def _gram_acc(d: int) -> np.ndarray:
    """A zero (d, d) accumulator for :func:`_add_syrk` (Fortran-ordered, so BLAS updates it in place)."""
    return np.zeros((d, d), order="F")


def _add_syrk(C: np.ndarray, Bt: np.ndarray) -> np.ndarray:
    """``C += Bt Bt'`` in the lower triangle of the accumulator ``C`` (BLAS ``dsyrk``; ``Bt`` Fortran-ordered, the
    transpose of a C-ordered row block).  The accumulator is updated in place by OpenBLAS's lower-triangle kernel,
    the faster of its two, rather than adding each block's product with numpy."""
    return dsyrk(1.0, Bt, beta=1.0, c=C, trans=0, lower=1, overwrite_c=1)


def _symmetrise_lower(A: np.ndarray) -> np.ndarray:
    """The symmetric matrix whose lower triangle is that of ``A`` (what :func:`_add_syrk` writes; its strict upper
    triangle is zero): ``A + A'`` with ``A``'s diagonal (the same values, in a new array: two vectorised passes
    where indexing the triangles takes several times longer)."""
    out = A + A.T
    d = A.shape[0] + 1
    out.flat[::d] = A.flat[::d]
    return out


def weighted_gram(X: np.ndarray, wts: np.ndarray, chunk: int = _CHUNK) -> np.ndarray:
    """``X' diag(wts) X`` for ``wts >= 0`` with BLAS syrk on row blocks (symmetric result).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The rows.
    wts : ndarray of shape (L,)
        Nonnegative weights.
    chunk : int, default 8192
        Rows per block.

    Returns
    -------
    ndarray of shape (n, n)
    """
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
    """Rows ``A_g' w`` (k, n) of factors ``(k, n)`` (diagonal) or ``(k, n, n)``.

    Parameters
    ----------
    factors : ndarray of shape (k, n) or (k, n, n)
        Diagonal square roots or the factors ``A_g``.
    diagonal : bool
        Whether ``factors`` are diagonal.
    w : ndarray of shape (n,)
        The vector.

    Returns
    -------
    ndarray of shape (k, n)
    """
    if diagonal:
        return factors * w
    return np.einsum("kij,i->kj", factors, w)


def cone_rows_gx(factors, diagonal, w, t, Z):
    """The cone rows of ``G x``, ``Z[g] = (-t_g, -A_g'w)`` (written); diagonal factors: one compiled pass without
    (k, n) temporaries (:func:`~.cone_loops.cone_gx_rows`).

    Parameters
    ----------
    factors : ndarray of shape (k, n) or (k, n, n)
        Diagonal square roots or the factors ``A_g``.
    diagonal : bool
        Whether ``factors`` are diagonal.
    w : ndarray of shape (n,)
        The weights.
    t : ndarray of shape (k,)
        The cones' first entries.
    Z : ndarray of shape (k, n + 1)
        Receives the rows.
    """
    if diagonal:
        cone_gx_rows(factors, w, t, Z)
    else:
        Z[:, 0] = -t
        Z[:, 1:] = -transpose_apply(factors, False, w)


def apply_rows(factors, diagonal, V):
    """Rows ``A_g v_g`` (k, n) for rows ``v_g`` of V.

    Parameters
    ----------
    factors : ndarray of shape (k, n) or (k, n, n)
        Diagonal square roots or the factors ``A_g``.
    diagonal : bool
        Whether ``factors`` are diagonal.
    V : ndarray of shape (k, n)
        One row ``v_g`` per group.

    Returns
    -------
    ndarray of shape (k, n)
    """
    if diagonal:
        return factors * V
    return np.einsum("kij,kj->ki", factors, V)


def sum_apply_rows(factors, diagonal, V):
    """``sum_g A_g v_g`` (n,) without the (k, n) temporary of :func:`apply_rows`.

    Parameters
    ----------
    factors : ndarray of shape (k, n) or (k, n, n)
        Diagonal square roots or the factors ``A_g``.
    diagonal : bool
        Whether ``factors`` are diagonal.
    V : ndarray of shape (k, n)
        One row ``v_g`` per group.

    Returns
    -------
    ndarray of shape (n,)
    """
    if diagonal:
        return np.einsum("kj,kj->j", factors, V)
    return np.einsum("kij,kj->i", factors, V)


def _row_chunk(n: int) -> int:
    """Rows per block of a rank-k update: about 4 MB of ``(rows, n + 1)`` block, written and then read by
    BLAS while still in cache (smaller blocks pay BLAS's per-call overhead, larger ones leave the cache)."""
    return int(min(8192, max(256, 2**19 // (n + 1))))


def centred_gram(X, y, rho, gamma, gidx, mg, chunk=None, rows_in=None):
    """``sum_i rho_i c_i c_i'`` with ``c_i = y_i [x_i; 1] - gamma_i m_{g(i)}``: each row block of
    ``sqrt(rho_i) c_i`` is written by one compiled pass (:func:`~.cone_loops.fill_centred_rows`) into a
    cache-sized buffer and added by BLAS syrk.  ``gamma = 0`` gives ``[X 1]' diag(rho) [X 1]``.

    ``rows_in``: the arguments ``(dm, dx, bzm, bxi, bzx, c, gsum, acc)`` of the first half of a Newton solve
    (:func:`~.cone_loops.robust_solve_rows_in`, whose ``rho`` is this one), done in the same pass
    (:func:`~.cone_loops.fill_centred_rows_in`: its two returns summed into the zeroed ``acc``).

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    rho : ndarray of shape (L,)
        The weights ``rho_i``.
    gamma : ndarray of shape (L,)
        The radii.
    gidx : ndarray of shape (L,)
        Each sample's group.
    mg : GroupMeans
        The group means ``m_g``.
    chunk : int, optional
        Rows per block (default: about 4 MB of block).
    rows_in : tuple, optional
        The arguments of the Newton solve's first half, done in the same pass.

    Returns
    -------
    ndarray of shape (n + 1, n + 1)
    """
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
    use once they exceed the allocator's reuse threshold (glibc: 32 MiB), so the interior point reuses its largest
    arrays rather than paying for fresh pages every iteration."""

    def __init__(self):
        self.arrays: dict = {}

    def __call__(self, name: str, shape) -> np.ndarray:
        a = self.arrays.get(name)
        if a is None or a.shape != tuple(shape):
            a = self.arrays[name] = np.empty(shape)
        return a


class GroupMeans(NamedTuple):
    """The group means ``m_g = (scale_g M_g[:n], last_g)`` of the t-elimination (``docs/guide/robust.md``), kept
    factored so that per-sample cones need no X-sized array: there ``M = X`` and ``scale = last = c_i / a_i``
    (``c_i = rho_i gamma_i y_i``, ``a_i = rho_i gamma_i^2``); grouped cones pass their (k, n + 1) means
    (:meth:`of`).

    Attributes
    ----------
    M : ndarray
        ``X`` (per-sample cones) or the means' first n entries (grouped cones).
    scale : ndarray
        Per row of ``M``, its factor.
    last : ndarray
        Per group, the mean's last entry.
    """

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
    """The cones ``(t_g, A_g' w)`` at an NT scaling with ``t_g`` eliminated (``docs/guide/robust.md``): the
    cones' part of the Schur complement and of its right-hand side.  The one home of this algebra:
    :class:`RobustSVMCone` uses it for its k cones, the row-block interior point (:mod:`.row_block_ipm`)
    for grouped cones on the client and for the per-sample cones of each row block.

    With diagonal factors ``F`` nothing of the cones' size is formed besides the row blocks of the Schur terms:
    the compiled passes (:func:`~.cone_loops.cone_gram_rows`, :func:`~.cone_loops.cone_rhs_rows`,
    :func:`~.cone_loops.cone_back_rows`) form ``A_g w1_g = F_g o w1_g``, ``qhat_g`` and ``m_g`` entry by entry.

    Parameters
    ----------
    factors : ndarray of shape (k, n) or (k, n, n)
        Diagonal square roots or the factors ``A_g``.
    diagonal : bool
        Whether ``factors`` are diagonal.
    beta : ndarray of shape (k,)
        The NT scalings' factors ``beta_g``.
    wbar : ndarray of shape (k, n + 1)
        The NT points ``wbar_g``.
    work : Workspace, optional
        Arrays this object's row blocks may overwrite.
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
        (:func:`~.cone_loops.cone_rhs_rows`)."""
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
        (written).  Diagonal factors: one compiled pass (:func:`~.cone_loops.cone_back_rows`)."""
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
