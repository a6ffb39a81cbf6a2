"""The SVM dual over the box and hyperplane, solved by libsvm, polished and certified.

Every kernel SVM of the package meets the same problem (nominal SVM, RSVM_QP's modified kernel,
the fixed-multiplier Lagrangian of RSVM_SOCP, PkSVC's expected kernel, the binary WW machine):

.. math::

    \\min_{\\alpha\\in S} q(\\alpha) = \\tfrac12 \\alpha' Y K Y \\alpha - e'\\alpha,\\qquad
    S = \\{0 \\le \\alpha \\le C,\\ y'\\alpha = 0\\}\\quad (y \\in \\{-1, +1\\}^n,\\ K \\text{ PSD}).

Tools, one home each:

* :func:`libsvm_dual` / :func:`libsvm_alpha`: libsvm (the solve of ``SVC(kernel="precomputed")``, called
  through scikit-learn's low-level ``_libsvm.fit``) and the dense ``alpha`` read from a fitted ``SVC``
  (``dual_coef_`` holds ``y_i alpha_i`` of the support vectors);
* :func:`min_linear_box_hyperplane` (``min_{s in S} g's``, exact) and :func:`frank_wolfe_gap`
  (``g'alpha - min_{s in S} g's``: for a convex function with gradient ``g`` at ``alpha``, an upper
  bound on its value at ``alpha`` minus its minimum over ``S``);
* :func:`lagrangian_lower_bound`: a certified lower bound on ``min_S q`` from any feasible ``alpha``;
* :func:`polish_svm_dual`: libsvm caches kernel values in single precision, so its KKT conditions
  hold to ~1e-7 relative only; one exact Newton step on its active set (else projected Newton)
  polishes its ``alpha`` in double precision;
* :func:`certified_svm_dual`: polish and certify given only kernel columns (the support's).

The projection onto ``S`` is :func:`rsvm_conic.solvers.certificates.project_box_hyperplane_sorted`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .._threads import blas_threads_by

from .certificates import hinge_min, project_box_hyperplane_sorted
from .conic import SolverError
from .contract import certify, relative_gap

__all__ = [
    "libsvm_dual",
    "libsvm_alpha",
    "LibsvmFit",
    "min_linear_box_hyperplane",
    "frank_wolfe_gap",
    "lagrangian_lower_bound",
    "scaled_svm_primal",
    "margin_rounding",
    "polish_svm_dual",
    "certified_svm_dual",
]


def libsvm_alpha(svc, n: int) -> np.ndarray:
    """The dense dual ``alpha`` (``n`` entries in ``[0, C]``) of a fitted binary ``sklearn.svm.SVC`` (or of the
    :class:`LibsvmFit` of :func:`libsvm_dual`)."""
    alpha = np.zeros(n)
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    return alpha


@dataclass
class LibsvmFit:
    """What :func:`libsvm_dual` read from libsvm, with ``SVC``'s attribute names and signs (binary case):
    ``support_``, ``dual_coef_`` (``y_i alpha_i``, shape ``(1, m)``), ``intercept_`` (shape ``(1,)``),
    ``n_iter_`` (shape ``(1,)``), ``fit_status_``; ``route`` says which interface ran (``"libsvm"``: the
    low-level ``sklearn.svm._libsvm.fit``; ``"SVC"``: the estimator, used when the low-level interface
    is missing or its signature or return value is not the one checked here)."""

    support_: np.ndarray
    dual_coef_: np.ndarray
    intercept_: np.ndarray
    n_iter_: np.ndarray
    fit_status_: int
    route: str


#: the low-level ``fit`` returns these nine arrays (scikit-learn 1.6 - 1.9, checked by the tests):
#: support, support_vectors, n_class_SV, sv_coef, intercept, probA, probB, fit_status, n_iter
_LIBSVM_FIT_RETURNS = 9


def _libsvm_lowlevel():
    """``sklearn.svm._libsvm`` when its ``fit`` has the keyword arguments used here, else None."""
    try:
        from sklearn.svm import _libsvm
    except ImportError:  # pragma: no cover - a scikit-learn without the private module
        return None
    fit = getattr(_libsvm, "fit", None)
    return _libsvm if fit is not None and hasattr(_libsvm, "set_verbosity_wrap") else None


def _libsvm_fit_lowlevel(lib, K, y, C, tol, cache_size, shrinking, max_iter, weights=None):
    """libsvm's C-SVC through ``sklearn.svm._libsvm.fit`` with exactly what ``SVC.fit`` passes it (labels
    encoded 0/1 in sorted order, class weights one, no sample weights, seed 0 -- used only for probability
    estimates, which are off): the same alpha as ``SVC(kernel="precomputed")`` without the estimator's
    parameter and input validation (~4 ms per call).  None if the interface does not answer as expected."""
    y = np.asarray(y)
    pos = y == 1
    if np.all(pos | (y == -1)) and pos.any() and not pos.all():  # {-1, +1}: np.unique's codes without its sort
        y_enc = pos.astype(np.float64)
    else:
        classes, y_enc = np.unique(y, return_inverse=True)
        if classes.size != 2:
            return None  # SVC raises the right error
    K = np.ascontiguousarray(K, dtype=np.float64)
    lib.set_verbosity_wrap(0)
    try:
        out = lib.fit(
            K,
            np.asarray(y_enc, dtype=np.float64),
            svm_type=0,
            kernel="precomputed",
            tol=float(tol),
            C=float(C),
            class_weight=np.ones(2),
            sample_weight=np.empty(0) if weights is None else np.ascontiguousarray(weights, dtype=np.float64),
            shrinking=int(bool(shrinking)),
            probability=0,
            cache_size=float(cache_size),
            max_iter=int(max_iter),
            random_seed=0,
        )
    except TypeError:  # another signature: use the estimator
        return None
    if not isinstance(out, tuple) or len(out) != _LIBSVM_FIT_RETURNS:
        return None
    support, _, _, sv_coef, intercept, _, _, status, n_iter = out
    # SVC flips the signs of the binary dual coefficients and intercept (its classes_[1] is the positive class)
    return LibsvmFit(
        np.asarray(support),
        -np.asarray(sv_coef),
        -np.asarray(intercept),
        np.asarray(n_iter, dtype=np.int64),
        int(status),
        "libsvm",
    )


def libsvm_dual(
    K,
    y,
    C: float,
    *,
    tol: float = 1e-7,
    cache_size: float = 200,
    shrinking: bool = True,
    max_iter: int = -1,
    lowlevel: bool = True,
):
    """libsvm on the SVM dual with the precomputed Gram matrix ``K``: ``(alpha, LibsvmFit)``.

    The same solve as ``SVC(C=C, kernel="precomputed", tol=tol, cache_size=..., shrinking=..., max_iter=...)``
    (identical ``alpha``, tested), called through scikit-learn's low-level ``sklearn.svm._libsvm.fit`` so that
    the estimator's per-call validation is not paid (``K`` and ``y`` are trusted: ``K`` square, finite,
    ``y`` with two classes); ``lowlevel=False``, or a scikit-learn whose low-level interface differs,
    uses ``SVC`` itself.  ``alpha`` meets libsvm's KKT tolerance only; :func:`polish_svm_dual` /
    :func:`certified_svm_dual` polish and certify it.  ``C`` may hold one positive bound per sample (the weighted
    box ``0 <= alpha_i <= C_i``): libsvm's sample weights ``C_i / max C`` with ``C = max C``.
    """
    weights = None
    if np.ndim(C):
        C = np.asarray(C, dtype=float)
        C, weights = float(C.max()), C / float(C.max())
    fit = None
    lib = _libsvm_lowlevel() if lowlevel else None
    if lib is not None:
        fit = _libsvm_fit_lowlevel(lib, K, y, C, tol, cache_size, shrinking, max_iter, weights)
        if fit is not None and fit.fit_status_ == 1:
            from sklearn.exceptions import ConvergenceWarning

            warnings.warn(
                f"Solver terminated early (max_iter={int(max_iter)}).  Consider pre-processing your "
                "data with StandardScaler or MinMaxScaler.",
                ConvergenceWarning,
                stacklevel=2,
            )
    if fit is None:
        from sklearn.svm import SVC

        svc = SVC(
            C=C, kernel="precomputed", tol=tol, cache_size=cache_size, shrinking=shrinking, max_iter=max_iter
        ).fit(K, y, sample_weight=weights)
        fit = LibsvmFit(svc.support_, svc.dual_coef_, svc.intercept_, np.asarray(svc.n_iter_), svc.fit_status_, "SVC")
    return libsvm_alpha(fit, np.shape(y)[0]), fit


def min_linear_box_hyperplane(g: np.ndarray, y: np.ndarray, C: float) -> float:
    """``min_{s in S} g's`` over ``S = {0 <= s <= C, y's = 0}``: pair the smallest ``g`` of each class
    greedily (a pair ``s_i = s_j = C``, ``y_i = -y_j``, pays ``C (g_i + g_j)``; only negative sums help).
    ``C`` may hold one bound per coordinate (the weighted box): then mass is paired in the same order, the cost
    being ``min(0, g_i + g_j)`` per unit of mass moved (``O(n log n)``)."""
    if np.ndim(C):
        return _min_linear_weighted_box(np.asarray(g, dtype=float), y, np.asarray(C, dtype=float))
    gp = np.sort(g[y > 0])
    gn = np.sort(g[y < 0])
    m = min(gp.size, gn.size)
    return C * float(np.sum(np.minimum(gp[:m] + gn[:m], 0.0)))


def _min_linear_weighted_box(g, y, C) -> float:
    """:func:`min_linear_box_hyperplane` over ``{0 <= s_i <= C_i, y's = 0}``: each class's coordinates sorted by
    ``g`` hold their capacity ``C_i`` on consecutive intervals of a mass axis; the minimum is the integral over
    that axis of ``min(0, g_+(t) + g_-(t))`` (an exchange argument: the cheapest unit of each class first)."""
    pos = y > 0
    op, on = np.argsort(g[pos], kind="stable"), np.argsort(g[~pos], kind="stable")
    gp, gn = g[pos][op], g[~pos][on]
    ep, en = np.cumsum(C[pos][op]), np.cumsum(C[~pos][on])  # interval ends on the mass axis
    total = min(float(ep[-1]) if ep.size else 0.0, float(en[-1]) if en.size else 0.0)
    if total <= 0.0:
        return 0.0
    cuts = np.unique(np.concatenate([ep[ep < total], en[en < total], [total]]))
    lengths = np.diff(np.concatenate([[0.0], cuts]))
    mids = cuts - 0.5 * lengths  # inside each piece: which coordinate of each class holds it
    ip = np.minimum(np.searchsorted(ep, mids, side="right"), gp.size - 1)
    i_n = np.minimum(np.searchsorted(en, mids, side="right"), gn.size - 1)
    return float(np.sum(lengths * np.minimum(gp[ip] + gn[i_n], 0.0)))


def frank_wolfe_gap(g: np.ndarray, alpha: np.ndarray, y: np.ndarray, C: float) -> float:
    """``g'alpha - min_{s in S} g's`` (:func:`min_linear_box_hyperplane`): for a convex ``F`` with
    gradient ``g`` at the feasible ``alpha``, ``F(alpha) - min_S F <= frank_wolfe_gap``."""
    return float(g @ alpha) - min_linear_box_hyperplane(g, y, C)


def scaled_svm_primal(m, y, C: float, quad: float, margin_err: float = 0.0):
    """The SVM primal ``1/2 ||w||^2 + C sum_i max(0, 1 - y_i f(x_i))`` at the best of two models built on
    ``w = sum_i alpha_i y_i phi_i`` (margins without bias ``m_i = y_i <w, phi_i>``, ``quad = ||w||^2``):
    ``f = <w, .> + b`` with the best bias (:func:`~rsvm_conic.solvers.certificates.hinge_min`), and, when a bias
    separates the classes (``rho = max_b min_i (m_i + y_i b) > 0``), the hard-margin model
    ``f = t (<w, .> + beta)`` with the smallest ``t`` whose margins are ``>= 1`` even when each ``m_i`` is off by
    ``margin_err`` (its rounding), by a relative 1e-12 more.  Returns ``(P, t, b)``, the model being
    ``t <w, .> + b``.

    At a large C the first model pays C times the rounding of the margins of the support vectors (margins 1 up to
    ~1e-15): at C = 1e10 a relative 1e-5 of the objective, above a 1e-6 certificate.  When the optimum separates
    the data (multipliers below C) the scaled model has no hinge loss at all and costs ``t^2 - 1 ~ 1e-12``
    relative.
    """
    if np.ndim(C):  # one weight C_i per sample: sum_i C_i max(0, 1 - y_i f(x_i))
        hinge, b = hinge_min(1.0 - m, y, C)
        best = (0.5 * quad + hinge, 1.0, b)
    else:
        hinge, b = hinge_min(1.0 - m, y)
        best = (0.5 * quad + C * hinge, 1.0, b)
    pos = y > 0
    if pos.any() and (~pos).any():
        mp, mn = float(np.min(m[pos])), float(np.min(m[~pos]))
        rho = 0.5 * (mp + mn) - 2.0 * margin_err
        if rho > 0.0:
            t = (1.0 + 1e-12) / rho
            beta = 0.5 * (mn - mp)
            slack = np.maximum(1.0 - t * (m + y * beta), 0.0)  # zero by construction; summed, not assumed
            P = 0.5 * t * t * quad + (float(C @ slack) if np.ndim(C) else C * float(slack.sum()))
            if P < best[0]:
                best = (P, t, t * beta)
    return best


def margin_rounding(abs_products: np.ndarray, n_terms: int) -> float:
    """A bound on the rounding of margins computed as sums of ``n_terms`` products whose absolute values sum to
    ``abs_products`` (per sample): ``n_terms * eps * max(abs_products)`` (the classical worst-case bound)."""
    if abs_products.size == 0:
        return 0.0
    return float(max(n_terms, 1) * np.finfo(float).eps * np.max(abs_products))


def lagrangian_lower_bound(F, g, alpha, y, C, margin_err: float = 0.0):
    """A lower bound on ``min_{a in S} q(a)`` for a convex QP ``q(a) = 1/2 a'(Q + 2 diag(lam))a - e'a``
    (``Q = Y K Y`` PSD, ``lam >= 0``) from a feasible ``alpha`` with ``q(alpha) = F``, ``grad q(alpha) = g``.

    The larger of two weak-duality bounds, both exact at the optimum:

    * Frank-Wolfe: ``q(alpha) - (g'alpha - min_{s in S} g's)`` (convexity of ``q``);
    * SVM duality: ``q`` is the dual of the SVM with kernel ``K + 2 diag(lam)``; its primal at any model,
      here the better of ``w = sum_i alpha_i y_i phi_i`` with the best bias and its hard-margin rescaling
      (:func:`scaled_svm_primal`; margins ``y_i f_i = g_i + 1``, off by at most ``margin_err``), is ``P`` and
      ``min q >= -P``.  The rescaling keeps the bound tight at large C where the optimum separates the data.
    """
    a = alpha
    fw = F - frank_wolfe_gap(g, a, y, C)
    P, _, _ = scaled_svm_primal(g + 1.0, y, C, float(a @ g) + float(a.sum()), margin_err)
    return max(fw, -P)


def submatrix(A: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``A[np.ix_(rows, cols)]`` (a new array, the same values): rows first, then columns, by ``take`` when the
    columns are at least a quarter of ``A``'s (then the row copy costs little; measured 4x faster than ``np.ix_``
    at 144 of 160), else ``np.ix_`` (it reads only the block)."""
    if 4 * np.size(cols) >= A.shape[1]:
        return A.take(rows, axis=0).take(cols, axis=1)
    return A[np.ix_(rows, cols)]


def _solve_or_lstsq(A, rhs):
    """``A x = rhs`` by LU when ``A`` is well conditioned enough for a small residual, else least squares
    (an SVD, about 10x the cost); None if both fail."""
    try:
        x = np.linalg.solve(A, rhs)
        if np.all(np.isfinite(x)) and np.linalg.norm(A @ x - rhs) <= 1e-10 * (
            np.linalg.norm(rhs) + np.linalg.norm(A, 1) * np.linalg.norm(x)
        ):
            return x
    except np.linalg.LinAlgError:
        pass
    try:
        return np.linalg.lstsq(A, rhs, rcond=None)[0]
    except np.linalg.LinAlgError:
        return None


def _active_set_newton(K, y, C, alpha, tol, check_input):
    """The exact Newton step of :func:`polish_svm_dual` on the active set of ``alpha`` (in the box already):
    the certified point, or None when the step leaves the box or does not certify.  ``C``: one bound, or one per
    sample (the weighted box ``0 <= alpha_i <= C_i``)."""
    Cv = np.broadcast_to(C, alpha.shape)
    # zero and bound thresholds on the multipliers' own scale: at a large C with the optimum's multipliers far
    # below C, a threshold of 1e-9 C (0.1 at C = 1e8) would call most support vectors zero
    zero = 1e-9 * min(float(np.min(C)), float(np.max(alpha)) if alpha.size else float(np.min(C)))
    free = np.flatnonzero((alpha > zero) & (alpha < Cv - 1e-9 * Cv))
    up = np.flatnonzero(alpha >= Cv - 1e-9 * Cv)
    if not free.size:
        return None
    yF = y[free]
    A = np.empty((free.size + 1, free.size + 1))
    A[:-1, :-1] = (yF[:, None] * submatrix(K, free, free)) * yF[None, :]
    A[:-1, -1] = yF
    A[-1, :-1] = yF
    A[-1, -1] = 0.0
    rhs = np.empty(free.size + 1)
    rhs[:-1] = 1.0 - (yF * (submatrix(K, free, up) @ (y[up] * Cv[up])) if up.size else 0.0)
    rhs[-1] = -float(y[up] @ C[up]) if np.ndim(C) else -C * float(np.sum(y[up]))
    sol = _solve_or_lstsq(A, rhs)  # K may be singular (non-unique alpha)
    if sol is None or not (np.all(sol[:-1] >= 0.0) and np.all(sol[:-1] <= Cv[free])):
        return None
    a = np.zeros_like(alpha)
    a[up] = Cv[up]
    a[free] = sol[:-1]
    nz = np.flatnonzero(a)
    v = y[nz] * a[nz]  # K symmetric (trusted): its rows of the support are contiguous, its columns are not
    g = y * ((v @ K[nz]) if not check_input else (K[:, nz] @ v)) - 1.0
    F = 0.5 * float(a @ (g - 1.0))
    Kabs = (a[nz] @ np.abs(K[nz])) if not check_input else (np.abs(K[:, nz]) @ a[nz])
    return a if relative_gap(F, lagrangian_lower_bound(F, g, a, y, C, margin_rounding(Kabs, nz.size))) <= tol else None


@blas_threads_by(lambda K, y, *args, **kwargs: float(np.size(y)) ** 3)  # the free set's system
def polish_svm_dual(K, y, C, alpha, tol, check_input=True):
    """Polish an SVM dual solution (kernel ``K``) in double precision; ``(alpha, steps)`` or None.

    First one exact Newton step on libsvm's active set: with ``F`` the free and ``U`` the at-C
    coordinates, solve ``[Q_FF y_F; y_F' 0] [a_F; mu] = [e - Q_FU a_U; -y_U'a_U]`` (``O(n m + m^3)``,
    ``m = |F|``); kept if it stays in the box and certifies (:func:`lagrangian_lower_bound`).  Else
    projected Newton (:func:`~rsvm_conic.solvers.rsvm_socp.solve_rsvm_socp` with ``kappa = 0``)
    warm-started from ``alpha``.  ``check_input=False``: ``K`` (symmetric) and ``y`` come validated.  ``C`` may
    hold one bound per sample (the weighted box): :func:`_polish_weighted`.
    """
    from .rsvm_socp import solve_rsvm_socp  # the RSVM_SOCP solver builds on this module

    if np.ndim(C):
        return _polish_weighted(K, y, np.asarray(C, dtype=float), alpha, tol, check_input)
    alpha = project_box_hyperplane_sorted(np.asarray(alpha, dtype=float), y, C)
    a = _active_set_newton(K, y, C, alpha, tol, check_input)
    if a is not None:
        return a, 1
    try:
        res = solve_rsvm_socp(
            K,
            np.zeros((1, y.size)),
            y,
            C,
            0.0,
            warm_start=alpha,
            factor=True,
            tol=0.01 * tol,
            max_iter=20,
            fallback=False,
            check_input=check_input,
        )
    except (SolverError, np.linalg.LinAlgError):
        return None
    return res.alpha, res.iterations


def _polish_weighted(K, y, C, alpha, tol, check_input):
    """:func:`polish_svm_dual` for the weighted box ``0 <= alpha_i <= C_i``: the exact Newton step on the active
    set (:func:`_active_set_newton`), else the dual QP by Clarabel (through CVXPY, on a factor of ``K``);
    ``(alpha, steps)`` or None."""
    alpha = project_box_hyperplane_sorted(np.asarray(alpha, dtype=float), y, C)
    a = _active_set_newton(K, y, C, alpha, tol, check_input)
    if a is not None:
        return a, 1
    import cvxpy as cp

    from .conic import SolverError as _SolverError
    from .conic import solve_cvxpy

    vals, vecs = np.linalg.eigh(0.5 * (K + K.T))
    R = vecs * np.sqrt(np.clip(vals, 0.0, None))  # K = R R'
    a = cp.Variable(y.size)
    prob = cp.Problem(
        cp.Minimize(0.5 * cp.sum_squares(R.T @ cp.multiply(y, a)) - cp.sum(a)), [a >= 0, a <= C, y @ a == 0]
    )
    try:
        solve_cvxpy(prob, "clarabel", accept_inaccurate=True, quiet_inaccurate=True)
    except _SolverError:
        return None
    if a.value is None:
        return None
    return project_box_hyperplane_sorted(np.asarray(a.value, dtype=float), y, C), 1


@blas_threads_by(lambda columns, y, *args, **kwargs: float(np.size(y)) ** 3)
def certified_svm_dual(columns, y, C, alpha, tol, *, route="libsvm", full_kernel=None):
    """Polish and certify an SVM dual solution given only kernel columns: ``(alpha, scale, b, SolveInfo)``.

    ``columns(idx)`` returns ``K[:, idx]`` in double precision; ``alpha`` is a solver's dual (e.g.
    :func:`libsvm_alpha`).  The returned model is ``f(x) = scale * sum_i alpha_i y_i k(x_i, x) + b``: ``alpha``
    with the exact best bias, or, where that is better, its hard-margin rescaling (:func:`scaled_svm_primal`:
    at a large C whose optimum separates the data it removes the C-weighted rounding of the support vectors'
    margins).  The certificate is the duality gap of that model: ``primal`` is the SVM objective
    ``1/2 ||w||^2 + C sum_i max(0, 1 - y_i f(x_i))`` of the returned model as evaluated (its scores computed from
    the returned coefficients), ``dual`` the dual objective ``e'alpha - 1/2 alpha'Y K Y alpha`` of the feasible
    ``alpha``, a lower bound on the optimum.  Only the columns of the support are formed (``O(n m)``).  If the gap
    misses ``tol``, :func:`polish_svm_dual` (an exact Newton step on the active set, then projected Newton) runs on
    the problem restricted to the support (``m x m``; exact when no other point should enter it), then, given
    ``full_kernel()`` (the whole Gram matrix), on all of it; the best certificate is returned (``status`` says
    whether it met ``tol``).  ``C`` may hold one bound ``C_i = C s_i`` per sample (sample weights ``s_i``: the
    hinge terms weighted, the dual box ``0 <= alpha_i <= C_i``).
    """

    y = np.asarray(y, dtype=float)
    alpha = np.clip(np.asarray(alpha, dtype=float), 0.0, C)
    if abs(float(y @ alpha)) > 1e-12 * max(float(alpha.sum()), 1e-300):  # a solver's point is feasible to
        alpha = project_box_hyperplane_sorted(alpha, y, C)  # round-off; projecting it would spread the support
    sv = np.flatnonzero(alpha)
    Kc = columns(sv) if sv.size else np.zeros((y.size, 0))
    floor = 1e-9 * (float(np.sum(C)) if np.ndim(C) else C * y.size)  # the trivial objective's scale

    def evaluate(a, Kc, nz):
        """(primal of the returned model, dual value of a, scale, bias)."""
        v = y[nz] * a[nz]
        m = y * (Kc @ v)
        quad = float(a[nz] @ m[nz]) if nz.size else 0.0  # v'K v = sum_i a_i m_i over the support
        err = margin_rounding(np.abs(Kc) @ a[nz], nz.size) if nz.size else 0.0
        _, t, b = scaled_svm_primal(m, y, C, quad, err)
        scores = Kc @ (t * v) + b  # the returned model's scores, as its decision function computes them
        hinge = np.maximum(1.0 - y * scores, 0.0)
        P = 0.5 * t * t * quad + (float(C @ hinge) if np.ndim(C) else C * float(np.sum(hinge)))
        return P, float(a.sum()) - 0.5 * quad, t, b

    def gap(P, D):  # against the objective itself: polish until the gap is small on its own scale
        return relative_gap(P, D)

    best = (alpha, *evaluate(alpha, Kc, sv), 0)  # (alpha, P, D, scale, b, steps)
    if gap(*best[1:3]) > tol and sv.size > 1:  # the problem restricted to the support: m x m, O(m^3)
        Ks = Kc[sv]
        Csv = C[sv] if np.ndim(C) else C
        polished = polish_svm_dual(0.5 * (Ks + Ks.T), y[sv], Csv, best[0][sv], tol, check_input=False)
        if polished is not None:
            a = np.zeros_like(alpha)
            a[sv] = polished[0]
            nz = np.flatnonzero(a)
            cand = (a, *evaluate(a, Kc[:, np.searchsorted(sv, nz)], nz), 1 + polished[1])
            if gap(*cand[1:3]) < gap(*best[1:3]):
                best = cand
    if gap(*best[1:3]) > tol and full_kernel is not None:
        K = full_kernel()
        K = 0.5 * (K + K.T)
        polished = polish_svm_dual(K, y, C, best[0], tol, check_input=False)
        if polished is not None:
            a = polished[0]
            nz = np.flatnonzero(a)
            cand = (a, *evaluate(a, K[:, nz], nz), 1 + polished[1])
            if gap(*cand[1:3]) < gap(*best[1:3]):
                best = cand
    a, P, D, t, b, steps = best
    info = certify(route, P, D, tol, floor=floor, iterations=steps, detail={"polish_steps": steps, "scale": t})
    return a, t, b, info
