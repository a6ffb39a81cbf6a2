"""Weston-Watkins multi-class SVM [ElD19, Sec. 1.3.3.4, eq. 1.9].

Primal (eq. 1.9), classes ``k = 0..C-1``, scores ``f_k(x) = <w_k, phi(x)> + b_k``::

    min_{W, b, xi}  1/2 sum_k ||w_k||^2 + zeta sum_i sum_{k != y_i} xi_ik
    s.t.            f_{y_i}(x_i) - f_k(x_i) >= 2 - xi_ik,   xi_ik >= 0.

Equivalently ``1/2 ||W||_F^2 + zeta sum_{i, k != y_i} max(0, 2 - f_{y_i}(x_i) + f_k(x_i))``;
:func:`ww_objective` evaluates this in numpy and is the objective every backend is scored on.

Kernel dual (derived here; the thesis does not print it).  With multipliers
``0 <= alpha_ik <= zeta`` (``alpha_{i, y_i} = 0``) and ``A_i = sum_k alpha_ik``, set
``beta_ik = [k = y_i] A_i - alpha_ik``; stationarity gives ``w_k = sum_i beta_ik phi(x_i)`` and
``sum_i beta_ik = 0`` (from ``b_k``), and the dual is::

    max_alpha  2 sum_ik alpha_ik - 1/2 sum_k beta_k^T K beta_k
    s.t.       0 <= alpha_ik <= zeta [k != y_i],   sum_i beta_ik = 0  (k = 0..C-1).

The biases are the multipliers of the equality constraints (sign fixed by a test against the
primal).  For ``C = 2`` the WW machine is exactly ``2 x`` the binary SVM with ``C_svm = zeta``
(``w_1 = -w_0 = v``, ``f_1 - f_0 = 2 (v . phi + c)``), so libsvm solves it exactly; this is the
``libsvm`` backend and the fastest path for the binary data sets.

C convention (MSVMpack)
-----------------------
The thesis trained this machine with MSVMpack (Lauer & Guermeur, JMLR 12, 2011), whose WW model has
margin 1, ``f_{y_i} - f_k >= 1 - xi_ik``, penalty ``C`` (default ``C = 10``).  The substitution
``(W, b, xi) = 2 (W', b', xi')`` maps eq. 1.9 with ``zeta = 2 C`` onto it exactly (same classifier, eq. 1.9's
objective is 4 times MSVMpack's): :func:`msvmpack_zeta`, :func:`msvmpack_objective`.  The formulations in
this module take eq. 1.9's ``zeta``; :class:`~rsvm_conic.estimators.WestonWatkinsSVC` takes MSVMpack's
``C`` and reports MSVMpack's scores and objective.

Backends
--------
``WWKernelDual``  (Gram matrix in): ``clarabel`` / ``scs`` (the dual QP above, vectorised, one
    ``sum_squares(L^T beta)`` with ``K = L L^T``), ``libsvm`` (binary only).
``WWFeatures`` (explicit features ``Phi`` in, e.g. random features): ``clarabel`` / ``scs`` on the
    primal QP, ``dual`` (the kernel dual with ``K = Phi Phi^T``, weights ``W = Phi^T beta``) and
    ``lbfgs``: :func:`ww_primal_lbfgs`, our numpy solver for large problems.
``WWMachine`` (the estimator's routes): ``alm`` (:func:`ww_primal_alm`, exact, the default), ``libsvm``,
    ``dual``, ``primal`` (:func:`ww_primal_lbfgs`).

The numpy primal solver (``lbfgs``)
-----------------------------------
The hinge is replaced by its Huber smoothing ``l_mu(z) = 0 (z <= 0), z^2/(2 mu) (0 < z < mu),
z - mu/2 (z >= mu)`` which lies within ``mu/2`` of ``max(0, z)``; ``F_mu`` is smooth with
gradient ``W + Phi^T dS``, ``1^T dS``.  We minimise ``F_mu`` with SciPy's L-BFGS for a decreasing
sequence ``mu = 1, 1e-1, ..., mu_min`` (continuation, each stage warm-started), and return the
iterate with the smallest *true* (non-smooth) objective.  Since ``F <= F_mu + zeta N mu / 2`` only
over the ``N`` terms inside the smoothing zone, the final excess is at most ``zeta N_zone mu_min/2``;
with the default ``mu_min = 1e-6`` it meets the 1e-4 relative agreement with the exact QP on the runner
instance.  Each iteration costs two passes ``Phi W`` / ``Phi^T dS`` (O(n D C)).
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg import cho_factor as _cho_factor
from scipy.linalg import cho_solve as _cho_solve

from .._validation import check_positive, check_symmetric, check_two_classes, check_X
from .._validation import psd_factor as _psd_factor
from ..exceptions import SolverError
from ..certify.kernel import margin_rounding
from ..certify.contract import certify, relative_gap
from ..solvers.ww_cd import SMALL_PAIRS, ww_threads
from .base import Formulation, Solution


# ----------------------------------------------------------------------------- helpers


def check_features_and_codes(Phi, codes, n_classes=None):
    """Validate a feature matrix and class codes in 0..n_classes-1; return ``(Phi, codes, n_classes)``."""
    Phi = check_X(Phi, "Phi")
    codes, n_classes = check_codes(codes, Phi.shape[0], n_classes)
    return Phi, codes, n_classes


def check_codes(codes, n: int, n_classes=None):
    """Class codes: ``n`` integers in ``0..n_classes-1`` (``n_classes >= 2``); returns ``(codes, n_classes)``.

    Non-integer values raise (``np.asarray(..., dtype=int64)`` would silently truncate 0.5 to 0)."""
    raw = np.asarray(codes)
    if raw.shape != (n,):
        raise ValueError(f"codes must have shape ({n},); got {raw.shape}.")
    if raw.dtype.kind not in "iub":
        if raw.dtype.kind != "f" or not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
            raise ValueError("codes must be integers in 0..n_classes-1 (encode labels with encode_labels(y)).")
    codes = raw.astype(np.int64)
    if n == 0:
        raise ValueError("codes is empty; at least two samples of two classes are needed.")
    n_classes = int(n_classes if n_classes is not None else codes.max() + 1)
    if codes.min() < 0 or codes.max() >= n_classes:
        raise ValueError("codes must be integers in 0..n_classes-1 with n_classes >= 2.")
    check_two_classes(codes, "codes", classes=np.arange(n_classes))  # n_classes < 2: a single class
    return codes, n_classes


def encode_labels(y, n: int | None = None):
    """Return ``(codes in 0..C-1, classes)``; at least two classes required."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array of labels; got shape {y.shape}.")
    if n is not None and y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} labels but X has {n} rows; they must match.")
    classes, codes = np.unique(y, return_inverse=True)
    check_two_classes(y, "y", classes=classes)
    return codes.astype(np.int64), classes


def ww_losses(scores: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Hinge terms ``max(0, 2 - f_{y_i} + f_k)`` with zeros at ``k = y_i``; shape (n, C)."""
    n = scores.shape[0]
    fy = scores[np.arange(n), codes][:, None]
    z = np.maximum(0.0, 2.0 - fy + scores)
    z[np.arange(n), codes] = 0.0
    return z


def msvmpack_zeta(C: float) -> float:
    """Eq. 1.9's ``zeta`` (margin 2) equivalent to MSVMpack's ``C`` (margin 1): ``zeta = 2 C``."""
    return 2.0 * float(C)


def msvmpack_objective(sq_norm: float, scores: np.ndarray, codes: np.ndarray, C: float) -> float:
    """MSVMpack's WW objective ``1/2 ||W||^2 + C sum_{i, k != y_i} max(0, 1 - f_{y_i} + f_k)``
    (= eq. 1.9's objective of ``(2 W, 2 b)`` at ``zeta = 2 C``, divided by 4)."""
    return 0.25 * ww_objective(4.0 * sq_norm, 2.0 * np.asarray(scores), codes, msvmpack_zeta(C))


def ww_objective(sq_norm: float, scores: np.ndarray, codes: np.ndarray, zeta) -> float:
    """Primal objective of eq. 1.9 given ``sum_k ||w_k||^2`` and the training scores; ``zeta`` may hold one
    penalty ``zeta_i = zeta s_i`` per sample (sample weights ``s_i``)."""
    losses = ww_losses(scores, codes)
    if np.ndim(zeta):
        return 0.5 * float(sq_norm) + float(np.asarray(zeta) @ losses.sum(axis=1))
    return 0.5 * float(sq_norm) + float(zeta) * float(losses.sum())


def ww_dual_bound(alpha: np.ndarray, codes: np.ndarray, zeta: float, gram) -> tuple[float, np.ndarray]:
    """A lower bound on the optimum of eq. 1.9 from any multipliers ``alpha`` (n, C).

    ``alpha`` is clipped to the box ``0 <= alpha_ik <= zeta [k != y_i]`` and then made to satisfy the
    bias constraints ``sum_i beta_ik = 0``.  These say that the class-to-class flows
    ``F_mk = sum_{i: y_i = m} alpha_ik`` form a circulation (what leaves class m equals what enters
    it).  Two circulations ``0 <= G <= F`` are tried: the largest one (a linear programme on
    ``C (C - 1)`` edges, kept when balanced to 1e-9 of the total flow) and ``min(F, F^T)`` (exactly
    balanced, the largest for two classes); each sample's ``alpha_ik`` is scaled by ``G_mk / F_mk``,
    which keeps the box.  The dual objective ``D(t alpha) = 2 t sum(alpha) - t^2/2 q``
    (``q = sum_k beta_k^T K beta_k``, from ``gram(beta)``) is maximised over ``t`` in ``[0, 1]``.
    Any such point is dual feasible, so ``D`` is a certified lower bound (weak duality); it is
    tight at the optimum's multipliers.  Returns ``(D, alpha_feasible)``; ``alpha = 0`` gives 0.  ``zeta`` may
    hold one bound ``zeta_i`` per sample (the weighted box ``alpha_ik <= zeta_i``).
    """
    n, C = alpha.shape
    Y = np.zeros((n, C))
    Y[np.arange(n), codes] = 1.0
    top = np.asarray(zeta, dtype=float)[:, None] if np.ndim(zeta) else zeta
    a = np.clip(np.nan_to_num(alpha, nan=0.0), 0.0, top) * (1.0 - Y)
    F = np.zeros((C, C))
    np.add.at(F, codes, a)  # F[m, k] = sum over samples of class m of alpha_ik
    best = (0.0, np.zeros_like(a))
    for G in _circulations(F):
        ratio = np.divide(G, F, out=np.zeros_like(F), where=F > 0)
        ag = a * ratio[codes]
        beta = Y * ag.sum(axis=1, keepdims=True) - ag
        s, q = 2.0 * float(ag.sum()), float(gram(beta))
        t = 1.0 if q <= s else s / q  # argmax of t s - t^2 q / 2 over [0, 1]
        value = t * s - 0.5 * t * t * q
        if value > best[0]:
            best = (value, t * ag)
    return best


def _circulations(F: np.ndarray):
    """Circulations ``0 <= G <= F`` (``G_mm = 0``): ``F`` itself if balanced, else the largest (LP) and
    ``min(F, F^T)``."""
    total = float(F.sum())
    if total <= 0.0:
        return
    if np.max(np.abs(F.sum(axis=1) - F.sum(axis=0))) <= 1e-14 * total:
        yield F
        return
    from scipy.optimize import linprog

    C = F.shape[0]
    off = ~np.eye(C, dtype=bool)
    edges = np.argwhere(off)
    A = np.zeros((C, edges.shape[0]))
    A[edges[:, 0], np.arange(edges.shape[0])] += 1.0  # leaves m
    A[edges[:, 1], np.arange(edges.shape[0])] -= 1.0  # enters k
    cap = F[off] / F.max()  # unit scale: the LP's tolerances are absolute
    res = linprog(
        -np.ones(cap.size),
        A_eq=A,
        b_eq=np.zeros(C),
        bounds=np.stack([np.zeros_like(cap), cap], 1),
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10},
    )
    if res.status == 0:
        G = np.zeros_like(F)
        G[off] = np.clip(res.x, 0.0, cap) * F.max()
        if np.max(np.abs(G.sum(axis=1) - G.sum(axis=0))) <= 1e-9 * total:
            yield G
    yield np.minimum(F, F.T)


def ww_scaled_model(scores, sq_norm, codes, zeta, margin_err=0.0):
    """The better of the model with ``scores`` (``= Phi W + b``, ``sq_norm = ||W||^2``) and its rescaling
    ``t (W, b)`` with every margin ``t (f_{y_i} - f_k) >= 2`` beyond the margins' rounding ``margin_err``
    (when all of them are positive): ``(t, objective)``, ``t = 1`` for the first.  At a large ``zeta`` whose optimum
    separates the classes this removes the zeta-weighted rounding of the margins of the support vectors."""
    n = scores.shape[0]
    rows = np.arange(n)
    d = scores[rows, codes][:, None] - scores  # f_{y_i} - f_k
    d[rows, codes] = np.inf
    best = (1.0, ww_objective(sq_norm, scores, codes, zeta))
    dmin = float(np.min(d)) - 2.0 * margin_err
    if dmin > 0.0:
        t = 2.0 * (1.0 + 1e-12) / dmin
        slack = np.maximum(2.0 - t * d, 0.0)
        P = 0.5 * t * t * sq_norm + (float(zeta @ slack.sum(axis=1)) if np.ndim(zeta) else zeta * float(slack.sum()))
        if P < best[1]:
            best = (t, P)
    return best


def ww_certificate(
    route: str, beta: np.ndarray, b: np.ndarray, codes: np.ndarray, zeta: float, apply_K, *, tol: float = 1e-6, **kwargs
):
    """SolveInfo of a kernel-dual solution ``(beta, b)``: the primal objective of ``W = Phi^T beta`` and
    the dual bound of its multipliers ``alpha_ik = -beta_ik`` (``k != y_i``), see :func:`ww_dual_bound`.
    ``apply_K(B)`` returns ``K B`` (the Gram matrix times an (n, C) array); ``floor`` (a keyword) defaults to
    ``1e-9 zeta n`` (``1e-9 sum(zeta)`` for one ``zeta_i`` per sample)."""
    KB = apply_K(beta)
    primal = ww_objective(float(np.sum(beta * KB)), KB + b, codes, zeta)
    dual, _ = ww_dual_bound(-beta, codes, zeta, lambda B: float(np.sum(B * apply_K(B))))
    kwargs.setdefault("floor", 1e-9 * (float(np.sum(zeta)) if np.ndim(zeta) else zeta * beta.shape[0]))
    return certify(route, primal, dual, tol, **kwargs)


def gram_factor(K: np.ndarray, rtol: float = 1e-10):
    """``K = L L^T`` through ``eigh``, dropping eigenvalues below ``rtol * max``.

    Returns ``(L (n, r), U (n, r), lam (r,))``.  Negative eigenvalues below ``-1e-8 max(1, lambda_max)``
    raise (one :func:`rsvm_conic._validation.psd_factor` call).
    """
    K = 0.5 * (K + K.T)
    return _psd_factor(
        K, "the kernel matrix", neg_tol=1e-8, neg_atol=1e-8, drop_tol=rtol, return_eig=True, hint="use a PSD kernel"
    )


# ----------------------------------------------------------------------------- kernel dual
class WWKernelDual(Formulation):
    """The WW kernel dual as a vectorised CVXPY QP (small problems; ``n C`` up to a few 1000)."""

    name = "ww-kernel-dual"

    def __init__(
        self,
        K,
        codes,
        n_classes: int | None = None,
        zeta: float = 1.0,
        *,
        check_input: bool = True,
        factor=None,
        sample_weight=None,
    ):
        """``check_input=False``: ``K`` (a finite Gram matrix), ``codes`` and ``n_classes`` come validated
        from the caller (an estimator) and are not checked again; ``factor``: ``L`` with ``L L' = K``
        when the caller already has it (:func:`gram_factor`), saving the eigendecomposition; ``sample_weight``:
        positive weights ``s_i`` (the box ``alpha_ik <= zeta s_i``), trusted."""
        import cvxpy as cp

        if check_input:
            K = check_X(K, "K")
            if K.shape[0] != K.shape[1]:
                raise ValueError(f"K must be a square Gram matrix; got shape {K.shape}.")
            K = check_symmetric(K, "K", rtol=1e-8)
            self.codes, self.n_classes = check_codes(codes, K.shape[0], n_classes)
        else:
            K = 0.5 * (K + K.T)
            self.codes, self.n_classes = codes, int(n_classes)
        self.K = K
        codes = self.codes
        n, C = K.shape[0], self.n_classes
        self.Y = np.zeros((n, C))
        self.Y[np.arange(n), codes] = 1.0
        L = gram_factor(self.K)[0] if factor is None else factor
        alpha = cp.Variable((n, C), nonneg=True)
        zeta_p = cp.Parameter(nonneg=True, value=check_positive(zeta, "zeta"), name="zeta")
        A = cp.sum(alpha, axis=1, keepdims=True)  # (n, 1)
        beta = cp.multiply(self.Y, A @ np.ones((1, C))) - alpha
        self._eq = cp.sum(beta, axis=0) == 0
        top = 1.0 - self.Y if sample_weight is None else (1.0 - self.Y) * np.asarray(sample_weight)[:, None]
        cons = [alpha <= zeta_p * top, self._eq]
        obj = 0.5 * cp.sum_squares(L.T @ beta) - 2.0 * cp.sum(alpha)
        self.problem = cp.Problem(cp.Minimize(obj), cons)
        self.parameters = {"zeta": zeta_p}
        self.variables = {"alpha": alpha}
        self._beta = beta

    def _extract(self) -> dict:
        beta = np.asarray(self._beta.value)
        b = np.asarray(self._eq.dual_value).ravel()
        return {
            "beta": beta,
            "b": b - b.mean(),
            "alpha": np.asarray(self.variables["alpha"].value),
            "dual_objective": float(-self.problem.value),
        }

    def _solve_libsvm(self, tol: float = 1e-8) -> Solution:
        """Binary case only: WW = 2 x SVC(C = zeta) (see module docstring)."""
        if self.n_classes != 2:
            raise ValueError("the libsvm backend solves the binary (C = 2) WW machine only.")
        t0 = time.perf_counter()
        beta, b = ww_binary_libsvm(self.K, self.codes, self.parameters["zeta"].value, tol=tol)
        sol = Solution("libsvm", "optimal", float("nan"), time.perf_counter() - t0, {"beta": beta, "b": b})
        sol.objective = self.objective(sol)
        return sol

    def objective(self, solution: Solution) -> float:
        beta, b = solution["beta"], solution["b"]
        scores = self.K @ beta + b
        return ww_objective(float(np.sum(beta * (self.K @ beta))), scores, self.codes, self.parameters["zeta"].value)

    def decision_function(self, solution: Solution, K_test) -> np.ndarray:
        return np.asarray(K_test) @ solution["beta"] + solution["b"]

    def predict(self, solution: Solution, K_test) -> np.ndarray:
        return np.argmax(self.decision_function(solution, K_test), axis=1)


def ww_binary_libsvm(K, codes, zeta, tol: float = 1e-8):
    """Exact binary WW through libsvm: returns ``(beta (n, 2), b (2,))``; ``zeta`` may hold one bound per sample."""
    from ..certify.hinge import hinge_min
    from ..solvers.svm_dual import libsvm_dual
    from ..solvers.svm_polish import polish_svm_dual

    y_pm = np.where(codes == 1, 1.0, -1.0)
    zeta = np.asarray(zeta, dtype=float) if np.ndim(zeta) else float(zeta)
    alpha, _ = libsvm_dual(K, y_pm, zeta, tol=tol, max_iter=-1)
    # libsvm meets its KKT tolerance, not a 1e-6 objective gap: polish in double precision (one Newton
    # step on its active set, as for RSVM_QP), kept only if it certifies
    polished = polish_svm_dual(K, y_pm, zeta, alpha, 1e-7)  # a tenth of the certificate's 1e-6
    v = y_pm * (alpha if polished is None else polished[0])  # y_i alpha_i, y = +1 for class 1
    beta = np.stack([-v, v], axis=1)
    # libsvm's intercept is an average over free support vectors (accurate to its tolerance only); the
    # best offset c of the SVM f = K v + c for this v minimises sum_i max(0, 1 - y_i f_i) exactly
    c = hinge_min(1.0 - y_pm * (K @ v), y_pm, zeta if np.ndim(zeta) else None)[1]
    return beta, np.array([-c, c])


# ----------------------------------------------------------------------------- explicit features
class WWFeatures(Formulation):
    """WW on explicit features ``Phi`` (n, D): primal QP, kernel dual, or the numpy L-BFGS solver."""

    name = "ww-features"

    def __init__(self, Phi, codes, n_classes: int | None = None, zeta: float = 1.0, build_conic: bool = True):
        import cvxpy as cp

        self.Phi, self.codes, self.n_classes = check_features_and_codes(Phi, codes, n_classes)
        self.zeta = check_positive(zeta, "zeta")
        n, D = self.Phi.shape
        C = self.n_classes
        self.Y = np.zeros((n, C))
        self.Y[np.arange(n), codes] = 1.0
        zeta_p = cp.Parameter(nonneg=True, value=self.zeta, name="zeta")
        self.parameters = {"zeta": zeta_p}
        self.variables = {}
        if build_conic:
            W = cp.Variable((D, C))
            b = cp.Variable(C)
            xi = cp.Variable((n, C), nonneg=True)
            S = self.Phi @ W + np.ones((n, 1)) @ cp.reshape(b, (1, C), order="C")
            fy = cp.sum(cp.multiply(self.Y, S), axis=1, keepdims=True)
            cons = [xi >= cp.multiply(1.0 - self.Y, 2.0 + S - fy @ np.ones((1, C)))]
            self.problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W) + zeta_p * cp.sum(xi)), cons)
            self.variables = {"W": W, "b": b, "xi": xi}

    def _set_param(self, key, value):
        super()._set_param(key, value)
        if key == "zeta":
            self.zeta = float(value)

    def _extract(self) -> dict:
        b = np.asarray(self.variables["b"].value)
        return {"W": np.asarray(self.variables["W"].value), "b": b - b.mean()}

    def _solve_dual(self, solver: str = "clarabel", **options) -> Solution:
        t0 = time.perf_counter()
        dual = WWKernelDual(self.Phi @ self.Phi.T, self.codes, self.n_classes, self.zeta)
        sol = dual.solve(solver, **options)
        W = self.Phi.T @ sol["beta"]
        out = Solution(
            "dual",
            sol.status,
            float("nan"),
            time.perf_counter() - t0,
            {"W": W, "b": sol["b"], "beta": sol["beta"]},
            {"dual_objective": sol["dual_objective"], **sol.info},
        )
        out.objective = self.objective(out)
        return out

    def _solve_lbfgs(self, **options) -> Solution:
        t0 = time.perf_counter()
        W, b, info = ww_primal_lbfgs(self.Phi, self.codes, self.n_classes, self.zeta, **options)
        sol = Solution("lbfgs", info["status"], float("nan"), time.perf_counter() - t0, {"W": W, "b": b}, info)
        sol.objective = self.objective(sol)
        return sol

    def objective(self, solution: Solution) -> float:
        W, b = solution["W"], solution["b"]
        return ww_objective(float(np.sum(W * W)), self.Phi @ W + b, self.codes, self.zeta)

    def decision_function(self, solution: Solution, Phi_test) -> np.ndarray:
        return np.asarray(Phi_test) @ solution["W"] + solution["b"]

    def predict(self, solution: Solution, Phi_test) -> np.ndarray:
        return np.argmax(self.decision_function(solution, Phi_test), axis=1)


# ----------------------------------------------------------------------------- the estimator's routes
#: an uncertified ``alm`` or ``primal`` run falls back to the dual QP while n * classes <= DUAL_FALLBACK_MAX
DUAL_FALLBACK_MAX = 6000
#: feature solvers run on the rows' own coordinates (a thin QR factor) when n <= ROW_SPACE_RATIO * D: the
#: factorisation costs about as much as 10-20 passes over Phi and each later pass then costs n / D of one
ROW_SPACE_RATIO = 0.7


class WWMachine(Formulation):
    """The WW machine of one training set as :class:`~rsvm_conic.estimators.WestonWatkinsSVC` solves it:
    an exact Gram matrix ``K`` or explicit features ``Phi`` (random features), with the certified routes of
    :attr:`BACKENDS`.  Inputs come validated from the estimator (trusted, not checked again).

    Solutions hold ``coef`` (``beta`` (n, C) against the training points for ``K``, ``W`` (D, C) for
    ``Phi``) and ``b`` (C,); ``certificate`` is the route's
    :class:`~rsvm_conic.certify.contract.SolveInfo` (route ``"lbfgs"`` for ``primal``).
    """

    name = "ww-msvm"
    conic_backends = ()
    #: the routes; :meth:`auto_routes` picks among them by structure and size
    BACKENDS = {
        "libsvm": "exact kernel, two classes: WW = 2 x SVC(C) by libsvm, polished in double precision; "
        "certificate: dual bound of its multipliers (1e-6)",
        "alm": "numpy method of multipliers with semismooth Newton-CG steps (features, or the kernel's PSD "
        "factor), bias exact; certificate: dual bound of its multipliers (1e-6)",
        "cd": "compiled dual coordinate descent with shrinking, bias by multipliers, then alm's Newton steps "
        "(features, or the kernel's PSD factor); certificate: dual bound of its multipliers (1e-6)",
        "dual": "kernel-dual QP in CVXPY + Clarabel (rescaled retries for badly scaled instances); "
        "certificate: dual bound of its multipliers (1e-6)",
        "primal": "numpy L-BFGS on the smoothed primal (features, or the kernel's PSD factor); "
        "certificate: dual bound of the smoothed multipliers (primal tol)",
    }

    #: the routes that take sample weights (the box ``alpha_ik <= zeta s_i``)
    WEIGHTED = ("libsvm", "dual")

    def __init__(
        self,
        codes,
        n_classes: int,
        zeta: float,
        *,
        K=None,
        Phi=None,
        primal_options=None,
        sample_weight=None,
        solver: str = "auto",
    ):
        if (K is None) == (Phi is None):
            raise ValueError("give exactly one of K (exact kernel) and Phi (explicit features).")
        self.codes, self.n_classes = codes, int(n_classes)
        self.sample_weight = sample_weight  # positive weights s_i (trusted), or None
        #: the penalty: ``zeta``, or ``zeta s_i`` per sample with sample weights
        self.zeta = float(zeta) if sample_weight is None else float(zeta) * np.asarray(sample_weight, dtype=float)
        self.zeta_scalar = float(zeta)
        self.K, self.Phi = K, Phi
        self.n = (K if K is not None else Phi).shape[0]
        self.primal_options = dict(primal_options or {})
        self.parameters, self.variables = {}, {}
        self._factor = None  # gram_factor(K), computed once: the primal route and its dual fallback share it
        self._rows = None  # thin QR of Phi' (features with n <= ROW_SPACE_RATIO D), computed once
        self.solver = solver  # the route solve("auto") starts from ("auto": auto_routes' own choice)

    def _available(self, backend: str) -> bool:
        if self.sample_weight is not None and backend not in self.WEIGHTED:
            return False
        return backend != "libsvm" or (self.K is not None and self.n_classes == 2)

    def auto_routes(self) -> tuple[str, ...]:
        """libsvm (then the dual QP) for two classes on an exact kernel; otherwise, on features or an exact
        kernel, the exact ``cd`` solver (with its fallbacks, :meth:`chain`).  ``cd`` rather than ``alm``:
        measured one core, ``ww-exact`` bench and Letter with 1000 random features, ``cd`` is as fast as ``alm``
        on the easy digits, Segmentation and Letter fits (0.5-17 s) and far faster on the hard ones
        (Letter: 42 s against over 250 s with the consolidation kernel's features; 41 s against 685 s with
        the Gaussian's at sigma / 2, measured before ``cd``'s epoch became 2x faster; a 667-point Letter fold:
        2.1 s against 35 s).  Up to :data:`~rsvm_conic.solvers.ww_cd.SMALL_PAIRS` (sample, class) pairs: ``alm``,
        which needs no compiler (a first fit in a fresh process would spend seconds compiling ``cd``'s epoch)."""
        if self.solver != "auto":
            return self.chain(self.solver)
        if self.K is not None and self.n_classes == 2:
            return ("libsvm", "dual")
        if self.sample_weight is not None:  # the routes that take weights
            return ("dual",)
        if self.n * self.n_classes <= SMALL_PAIRS:  # small: numpy alm, nothing to compile
            return self.chain("alm")
        return self.chain("cd")

    def _auto_hint(self) -> str:
        return "For the primal route lower primal_mu or raise primal_max_iter; for a small problem use solver='dual'."

    def chain(self, route: str) -> tuple[str, ...]:
        """``route`` and its fallbacks: an uncertified ``cd``, ``alm`` or primal run falls back to the dual
        QP while that is of moderate size (``n C <= DUAL_FALLBACK_MAX``; the smoothed multipliers cannot
        certify optima whose multipliers are tiny, e.g. kernel entries ~1e6); beyond it ``cd`` falls back to
        ``alm`` and ``alm`` to the primal L-BFGS (certified to its own, looser tolerance).  With sample weights
        only :attr:`WEIGHTED` routes run: ``libsvm`` falls back to ``dual``."""
        if self.sample_weight is not None:
            return (route, "dual") if route == "libsvm" else (route,)
        if route in ("cd", "alm", "primal") and self.n * self.n_classes <= DUAL_FALLBACK_MAX:
            return (route, "dual")
        if route == "cd":
            return ("cd", "alm", "primal")
        if route == "alm":
            return ("alm", "primal")
        return (route,)

    def kernel_factor(self):
        if self._factor is None:
            self._factor = gram_factor(self.K)
        return self._factor

    def _apply_K(self, B):
        return self.K @ B if self.K is not None else self.Phi @ (self.Phi.T @ B)

    def _solution(self, route, coef, b, cert) -> Solution:
        """The certified solution ``(coef, b)``; its certificate's primal is recomputed from the coefficients as the
        estimator evaluates them (scores ``K coef + b`` or ``Phi coef + b``), for ``(coef, b)`` or, where better,
        its hard-margin rescaling (:func:`ww_scaled_model`), against the route's dual bound."""
        if coef is not None and np.all(np.isfinite(coef)):
            coef, b, cert = self._evaluated(route, coef, b, cert)
        sol = Solution(route, cert.status, cert.primal, cert.time, {"coef": coef, "b": b})
        sol.certificate = cert
        return sol

    def _evaluated(self, route, coef, b, cert):
        data = self.K if self.K is not None else self.Phi
        scores = data @ coef + b
        sq = float(np.sum(coef * (self.K @ coef))) if self.K is not None else float(np.sum(coef**2))
        err = margin_rounding(np.abs(data) @ np.abs(coef), data.shape[1])
        t, _ = ww_scaled_model(scores, sq, self.codes, self.zeta, err)
        if t != 1.0:
            coef, b = t * coef, t * b
            scores = data @ coef + b
            sq = float(np.sum(coef * (self.K @ coef))) if self.K is not None else float(np.sum(coef**2))
        primal = ww_objective(sq, scores, self.codes, self.zeta)
        floor = 1e-9 * float(np.sum(self.zeta) if np.ndim(self.zeta) else self.zeta * self.n)  # as the routes' own
        detail = dict(cert.detail, scale=t, solver_primal=cert.primal)
        dual = cert.dual
        new = certify(route, primal, dual, cert.tol, iterations=cert.iterations, time=cert.time, floor=floor,
                      detail=detail)  # fmt: skip
        if new.status != "optimal" and cert.status != "optimal":
            new.status = cert.status  # the route's own reason (e.g. "max_iter", "failed")
        return coef, b, new

    def _row_features(self):
        """``(F, back)``: the rows the feature solvers run on and the map from their ``W`` to ``coef``.

        Exact kernel: ``F = U sqrt(lam)`` (the PSD factor of K), ``coef = U W / sqrt(lam)`` (the kernel
        expansion).  Features with fewer samples than columns (``n <= ROW_SPACE_RATIO D``): ``F = R'`` from the
        thin QR factorisation ``Phi' = Q R``, ``coef = Q W``.  Every feature solver keeps ``W`` in the span of the
        rows and uses only inner products of rows with rows and with ``W``, which ``Q`` preserves, so the
        iterates are those on ``Phi`` up to rounding, at ``n / D`` of the cost per pass (a 667-point Letter fold
        with 1000 random features: 667 columns instead of 1000).  Otherwise ``Phi`` itself."""
        if self.K is not None:
            _, U, lam = self.kernel_factor()
            return U * np.sqrt(lam), lambda W: U @ (W / np.sqrt(lam)[:, None])
        n, D = self.Phi.shape
        if n > ROW_SPACE_RATIO * D:
            return self.Phi, lambda W: W
        if self._rows is None:  # once: a fallback route (cd -> alm -> primal) reuses it, as kernel_factor
            self._rows = np.linalg.qr(self.Phi.T)
        Q, R = self._rows
        return np.ascontiguousarray(R.T), lambda W: Q @ W

    def _feature_route(self, route, solver, **options) -> Solution:
        t0 = time.perf_counter()
        F, back = self._row_features()
        with ww_threads(F, self.n_classes):  # the solver's BLAS threads, from its sizes
            W, b, info = solver(F, self.codes, self.n_classes, self.zeta, **options)
        info["certificate"].time = time.perf_counter() - t0  # the factorisation included
        return self._solution(route, back(W), b, info["certificate"])

    def _solve_primal(self) -> Solution:
        return self._feature_route("primal", ww_primal_lbfgs, **self.primal_options)

    def _solve_alm(self) -> Solution:
        return self._feature_route("alm", ww_primal_alm)

    def _solve_cd(self) -> Solution:
        return self._feature_route("cd", ww_dual_cd)

    def _solve_libsvm(self) -> Solution:
        t0 = time.perf_counter()
        beta, b = ww_binary_libsvm(self.K, self.codes, self.zeta)
        cert = ww_certificate("libsvm", beta, b, self.codes, self.zeta, self._apply_K, tol=1e-6)
        cert.time = time.perf_counter() - t0
        return self._solution("libsvm", beta, b, cert)

    def _solve_dual(self) -> Solution:
        """The kernel-dual QP.  An 'optimal_inaccurate' Clarabel status is kept when the recomputed
        certificate meets tol (recorded in the certificate).  Badly scaled instances (huge kernel entries,
        tiny C) are retried on the normalised problem K / s, C s (same minimiser: beta = beta' / s, same b),
        then with tolerances scaled to its objective; the best certificate is kept."""
        t0 = time.perf_counter()
        codes, nC, zeta = self.codes, self.n_classes, self.zeta
        exact = self.K is not None
        Kd = self.K if exact else self.Phi @ self.Phi.T
        s_K = max(float(np.max(np.abs(Kd))), 1e-300)
        best = None
        for s_, tight in ((1.0, False), (s_K, False), (s_K, True)):
            opts = {}
            if tight and best is not None:
                opts = dict(
                    tol_gap_abs=1e-12 * max(abs(best[3].primal) * s_, 1e-300), tol_gap_rel=1e-12, tol_feas=1e-12
                )
            try:
                z, w = self.zeta_scalar, self.sample_weight
                dual = (
                    WWKernelDual(
                        Kd,
                        codes,
                        nC,
                        z,
                        check_input=False,
                        factor=self.kernel_factor()[0] if exact else None,
                        sample_weight=w,
                    )
                    if s_ == 1.0
                    else WWKernelDual(Kd / s_, codes, nC, z * s_, check_input=False, sample_weight=w)
                )
                sol = dual.solve("clarabel", accept_inaccurate=True, quiet_inaccurate=True, **opts)
            except SolverError:
                continue
            c = ww_certificate("dual", sol["beta"] / s_, sol["b"], codes, zeta, self._apply_K, tol=1e-6)
            if best is None or c.gap_rel < best[3].gap_rel:
                best = (sol["beta"] / s_, sol["b"], sol.status, c)
            if c.certified:
                break
        if best is None:
            return self._solution(
                "dual",
                None,
                None,
                certify("dual", np.inf, -np.inf, 1e-6, failed_status="failed", time=time.perf_counter() - t0),
            )
        beta, b, status, cert = best
        cert.detail["solver_status"] = status
        cert.time = time.perf_counter() - t0
        return self._solution("dual", beta if exact else self.Phi.T @ beta, b, cert)

    def objective(self, solution: Solution) -> float:
        return solution.certificate.primal

    def decision_function(self, solution: Solution, data) -> np.ndarray:
        """Class scores from kernel rows against the training points (``K``) or feature rows (``Phi``)."""
        return np.asarray(data) @ solution["coef"] + solution["b"]

    def predict(self, solution: Solution, data) -> np.ndarray:
        return np.argmax(self.decision_function(solution, data), axis=1)


def ww_primal_lbfgs(
    Phi,
    codes,
    n_classes: int,
    zeta: float,
    *,
    mu_min: float = 1e-6,
    mu_factor: float = 0.1,
    maxiter: int = 2000,
    gtol: float = 1e-10,
    W0=None,
    b0=None,
    tol: float = 1e-6,
    check_every: int = 50,
):
    """Numpy/SciPy primal solver for eq. 1.9 on explicit features (see module docstring).

    Certified: every ``check_every`` L-BFGS iterations the multipliers
    ``alpha_ik = zeta clip(z_ik / mu, 0, 1)`` (the smoothed hinge's derivatives) give a dual bound
    through :func:`ww_dual_bound`; the best bound so far and the best true objective form the
    certificate.  The run stops as soon as their relative gap is ``<= tol``; a stage ends (``mu`` is
    divided by ``1 / mu_factor``) once L-BFGS converged or the gap shrank by less than 1% since the
    last check (the smoothing, not the iterate, then limits it).  Returns ``(W (D, C), b (C,), info)``;
    ``info["certificate"]`` is the :class:`~rsvm_conic.certify.contract.SolveInfo` (route
    ``"lbfgs"``); ``info["status"]`` is ``"optimal"`` exactly when the gap met ``tol``, else
    ``"max_iter"`` (the smallest ``mu`` was reached first).
    """
    t_start = time.perf_counter()
    Phi = np.asarray(Phi, dtype=np.float64)
    n, D = Phi.shape
    C = int(n_classes)
    Y = np.zeros((n, C))
    Y[np.arange(n), codes] = 1.0
    mask = 1.0 - Y
    zeta = float(zeta)

    def unpack(x):
        return x[: D * C].reshape(D, C), x[D * C :]

    def fg(x, mu):
        W, b = unpack(x)
        S = Phi @ W + b
        fy = np.sum(S * Y, axis=1, keepdims=True)
        z = (2.0 - fy + S) * mask
        quad = (z > 0) & (z < mu)
        lin = z >= mu
        loss = np.sum(np.where(quad, z * z / (2 * mu), 0.0)) + np.sum(np.where(lin, z - mu / 2, 0.0))
        g = zeta * np.clip(z / mu, 0.0, 1.0) * mask
        dS = g - Y * g.sum(axis=1, keepdims=True)
        f = 0.5 * np.sum(W * W) + zeta * loss
        grad = np.concatenate([(W + Phi.T @ dS).ravel(), dS.sum(axis=0)])
        return f, grad

    def true_obj(x):
        W, b = unpack(x)
        return ww_objective(float(np.sum(W * W)), Phi @ W + b, codes, zeta)

    x = np.zeros(D * C + C)
    if W0 is not None:
        x[: D * C] = np.asarray(W0, dtype=np.float64).ravel()
    if b0 is not None:
        x[D * C :] = np.asarray(b0, dtype=np.float64)

    gram = _feature_gram(Phi)

    floor = 1e-9 * zeta * n  # a trivial objective's scale (all scores 0 cost 2 zeta n (C - 1))
    mu, nit, stages = 1.0, 0, 0
    # best true objective and iterate so far, best dual bound (alpha = 0 is dual feasible with value 0)
    state = {"d": 0.0, "f": true_obj(x), "x": x.copy(), "last": np.inf, "done": False}

    def certify_at(x, mu):
        """Update the best objective and dual bound at x; True when the stage should end."""
        W, b = unpack(x)
        S = Phi @ W + b  # one pass gives both the true objective and the multipliers
        f = ww_objective(float(np.sum(W * W)), S, codes, zeta)
        if f < state["f"]:
            state["f"], state["x"] = f, x.copy()
        z = (2.0 - np.sum(S * Y, axis=1, keepdims=True) + S) * mask
        state["d"] = max(state["d"], ww_dual_bound(zeta * np.clip(z / mu, 0.0, 1.0), codes, zeta, gram)[0])
        gap = relative_gap(state["f"], state["d"], floor)
        if gap <= tol:
            state["done"] = True
            return True
        stalled = gap > 0.99 * state["last"]  # the smoothing, not the iterate, limits the bound now
        state["last"] = gap
        return stalled

    while True:
        # one smoothing stage, certified every `check_every` L-BFGS iterations (about 1% of the work): it stops
        # as soon as the gap meets tol, and hands over to the next mu once the gap shrinks by < 1% per check
        stages += 1
        state["last"] = np.inf
        x, used, _ = lbfgs(
            lambda z: fg(z, mu),
            x,
            maxiter=maxiter,
            gtol=gtol,
            callback=lambda z: certify_at(z, mu),
            callback_every=check_every,
        )
        nit += used
        if not state["done"]:
            certify_at(x, mu)
        if state["done"]:
            break
        if mu <= mu_min * (1 + 1e-12):
            break
        mu = max(mu * mu_factor, mu_min)
    best_x, best_f, best_d = state["x"], state["f"], state["d"]
    W, b = unpack(best_x)
    cert = certify(
        "lbfgs",
        best_f,
        best_d,
        tol,
        failed_status="max_iter",
        iterations=nit,
        time=time.perf_counter() - t_start,
        floor=floor,
        detail={"mu": mu, "stages": stages},
    )
    return (
        W,
        b - b.mean(),
        {
            "status": cert.status,
            "iterations": nit,
            "objective": best_f,
            "mu": mu,
            "mu_min": mu_min,
            "certificate": cert,
        },
    )


def lbfgs(
    fg,
    x0,
    *,
    maxiter: int = 1000,
    gtol: float = 1e-10,
    ftol: float = 1e-15,
    memory: int = 20,
    callback=None,
    callback_every: int = 50,
):
    """Unconstrained L-BFGS (two-loop recursion, Armijo backtracking from the unit step).

    ``fg(x) -> (f, grad)``.  Returns ``(x, iterations, converged)``; converged means
    ``||grad||_inf <= gtol`` or a relative decrease below ``ftol``.  Written here because SciPy's
    L-BFGS-B spent most of its time in its bound-handling ``setulb`` routine on these
    10^4-10^5-variable problems (profiled: 70% of a Segmentation fit), which need no bounds.
    Pairs with ``s^T y <= 0`` are skipped, so the inverse-Hessian model stays positive definite.
    ``callback(x)``, called every ``callback_every`` iterations, stops the run (reported as converged)
    when it returns True; the curvature pairs are kept between calls.
    """
    x = np.array(x0, dtype=np.float64)
    f, g = fg(x)
    S: list = []
    Yl: list = []
    rho: list = []
    for it in range(maxiter):
        if np.max(np.abs(g)) <= gtol:
            return x, it, True
        q = g.copy()
        a = []
        for s_, y_, r_ in zip(reversed(S), reversed(Yl), reversed(rho)):
            ai = r_ * float(s_ @ q)
            q -= ai * y_
            a.append(ai)
        if S:
            q *= float(S[-1] @ Yl[-1]) / float(Yl[-1] @ Yl[-1])
            for (s_, y_, r_), ai in zip(zip(S, Yl, rho), reversed(a)):
                q += (ai - r_ * float(y_ @ q)) * s_
            step = 1.0
        else:
            step = min(1.0, 1.0 / max(float(np.linalg.norm(g)), 1e-300))
        d = -q
        slope = float(g @ d)
        if slope >= 0.0:  # not a descent direction: restart from steepest descent
            S.clear(), Yl.clear(), rho.clear()
            d = -g
            slope = -float(g @ g)
            step = min(1.0, 1.0 / max(float(np.linalg.norm(g)), 1e-300))
        for _ in range(60):
            x_new = x + step * d
            f_new, g_new = fg(x_new)
            if f_new <= f + 1e-4 * step * slope:
                break
            step *= 0.5
        else:
            return x, it, True  # no decrease possible at machine precision
        s_vec, y_vec = x_new - x, g_new - g
        sy = float(s_vec @ y_vec)
        if sy > 1e-12 * float(y_vec @ y_vec):
            S.append(s_vec), Yl.append(y_vec), rho.append(1.0 / sy)
            if len(S) > memory:
                S.pop(0), Yl.pop(0), rho.pop(0)
        decrease = f - f_new
        x, f, g = x_new, f_new, g_new
        if decrease <= ftol * max(abs(f), 1.0):
            return x, it + 1, True
        if callback is not None and (it + 1) % callback_every == 0 and callback(x):
            return x, it + 1, True
    return x, maxiter, False


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
    """Exact solver for eq. 1.9 on explicit features: the method of multipliers on the hinge terms with a
    semismooth Newton-CG inner solver (as SSNAL [Li, Sun, Toh] for SVMs), bias an ordinary variable.

    Write the margins ``z_ik(W, b) = 2 - f_{y_i}(x_i) + f_k(x_i)`` (``k != y_i``).  For multipliers
    ``lam`` in the box ``[0, zeta]`` and a penalty ``sigma = zeta / mu``, the augmented Lagrangian minimised
    over the slack is ``phi(W, b) = 1/2 ||W||^2 + zeta sum_ik l_mu(z_ik + mu lam_ik / zeta)``: the Huber
    smoothing ``l_mu`` of the primal solver (:func:`ww_primal_lbfgs`) with the margins *shifted* by the
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
    inner solve at ``max_newton``): measured on Letter with 1000 consolidation-kernel features, 667
    points, ``mu_min = 1e-4`` took 266 s and ``1e-2`` 47 s, both certified.
    After each outer step from the second on, an *active-set step* guesses the optimum's partition (free
    multipliers = margins in the zone, ``zeta`` beyond it, 0 elsewhere) and solves eq. 1.9's optimality
    conditions for it exactly (:func:`_ww_partition_solve`), moving violators and repeating up to
    ``max_active_set`` times while the multipliers stay near the box; once the partition is right this
    closes the gap to rounding.  Every candidate is judged only by the certificate: the true objective of
    the best ``(W, b)`` against the best :func:`ww_dual_bound` of the multipliers seen (feasible after its
    repair: box and the bias constraints ``sum_i beta_ik = 0``); the run stops when the relative gap is
    ``<= tol``, else ends with status ``"max_iter"``.

    ``W0``, ``b0``, ``lam0`` warm-start the iterate and the multipliers (:func:`ww_dual_cd` hands over its
    point this way).  Returns ``(W (D, C), b (C,), info)`` as :func:`ww_primal_lbfgs` (route ``"alm"``);
    every step is a matrix product over all samples (no loop over samples).
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

    gram = _feature_gram(Phi)

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
                out = _ww_partition_solve(Phi, codes, Y, free, upper, zeta)
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
    return _certified_result("alm", best, tol, floor, t_start, nit_newton, detail, lam)


def ww_dual_cd(
    Phi,
    codes,
    n_classes: int,
    zeta: float,
    *,
    tol: float = 1e-6,
    rho: float = 0.1,
    inner: int = 5,
    handoff: float = 1e-3,
    direct_max: int = 5000,
    max_epochs: int = 20000,
    eps: float = 1e-3,
    seed: int = 0,
):
    """Exact solver for eq. 1.9 on explicit features: dual coordinate descent with shrinking
    (:func:`~rsvm_conic.solvers.ww_cd.ww_cd_epoch`, compiled), the bias constraints by the method of
    multipliers (``nu += rho r`` every ``inner`` epochs, ``rho`` times the mean ``||phi_i||^2``; 0.1 rather
    than 0.3 saves 11-20% of the epochs on digits, Segmentation and three Letter fits, e.g. the kappa^m one
    2383 -> 1983 epochs, 49 -> 40 s, and 1.0 or 3.0 cost 1.6x and 3.3x), and a
    Newton endgame.  Shrunk samples return at every certificate check, as the multiplier steps move the
    bias that shrinking assumed fixed.

    Coordinate descent finds the optimum's partition of the multipliers (0, free, ``zeta``) at a cost of
    one score vector per active sample and epoch, but its last digits come slowly when many margins sit
    at the kink or ``zeta`` is large; the semismooth Newton steps of :func:`ww_primal_alm` are the
    reverse.  Measured on Letter (16 000 points, 1000 random features, 26 classes, one core): with the
    consolidation kernel's features ``alm`` alone was at a relative gap of 0.7 after 250 s, this route
    certifies 8e-7 in 74 s; with the Gaussian's at sigma / 2, ``alm`` 685 s, this route 41 s.  So once
    the certified gap is ``<= handoff`` (or has not halved over ten checks) and at most ``direct_max``
    multipliers are free (the Newton systems are then one Cholesky factorisation), ``ww_primal_alm``
    continues from the point and the multipliers (``W0``, ``b0``, ``lam0``) at its zone floor; if it
    does not certify, coordinate descent goes on (``handoff = 0``: coordinate descent alone).  Every
    iterate is judged only by the certificate: the true objective of the best ``(W, b)``
    (``b = nu + rho r``) against the best :func:`ww_dual_bound` of the multipliers, checked every 10-50
    epochs.  Seeded (the sample order of each epoch); the same input gives the same result.  Returns
    ``(W (D, C), b (C,), info)`` as :func:`ww_primal_alm` (route ``"cd"``).
    """
    from ..solvers.ww_cd import ww_cd_epoch

    t_start = time.perf_counter()
    Phi = np.ascontiguousarray(Phi, dtype=np.float64)
    n, D = Phi.shape
    C = int(n_classes)
    zeta = float(zeta)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    alpha, WT, nu, r = np.zeros((n, C)), np.zeros((C, D)), np.zeros(C), np.zeros(C)
    sqn = np.einsum("ij,ij->i", Phi, Phi)
    rho = float(rho) * max(float(sqn.mean()), 1e-300)  # the bias's penalty on the features' scale
    rng = np.random.default_rng(seed)
    floor = 1e-9 * zeta * n

    gram = _feature_gram(Phi)

    best = {"f": np.inf, "W": np.zeros((D, C)), "b": np.zeros(C), "d": 0.0}
    active, n_active, thr = np.arange(n, dtype=np.int64), n, np.inf
    gap, epoch, next_check, handed, alm_info, history = np.inf, 0, 10, False, None, []
    while epoch < max_epochs:
        epoch += 1
        rng.shuffle(active[:n_active])
        n_active, viol = ww_cd_epoch(Phi, codes, alpha, WT, nu, r, rho, zeta, sqn, active, n_active, thr)
        thr = viol
        if viol <= eps and n_active < n:  # the shrunk problem is solved: restore every sample, tighten
            active, n_active, thr, eps = np.arange(n, dtype=np.int64), n, np.inf, max(0.1 * eps, 1e-12)
        if epoch % inner == 0:
            nu += rho * r
        if epoch < next_check:
            continue
        next_check = epoch + min(50, max(10, epoch // 4))
        # shrinking assumed a fixed bias, which the multiplier steps move: every sample is back after a check
        active, n_active, thr = np.arange(n, dtype=np.int64), n, np.inf
        W, b = WT.T.copy(), nu + rho * r
        f = ww_objective(float(np.sum(W * W)), Phi @ W + b, codes, zeta)
        if f < best["f"]:
            best.update(f=f, W=W, b=b)
        best["d"] = max(best["d"], ww_dual_bound(alpha, codes, zeta, gram)[0])
        gap = relative_gap(best["f"], best["d"], floor)
        if gap <= tol:
            break
        history.append(gap)
        stalled = len(history) > 10 and gap > 0.5 * history[-11]  # not halved over the last ten checks
        if (
            not handed
            and handoff > 0.0
            and (gap <= handoff or stalled)
            and np.count_nonzero((alpha > 0.0) & (alpha < zeta)) <= direct_max  # free multipliers
        ):
            handed = True
            Wa, ba, alm_info = ww_primal_alm(
                Phi, codes, C, zeta, tol=tol, mu0=1e-2, direct_max=direct_max, W0=W, b0=b, lam0=alpha
            )
            cert_a = alm_info["certificate"]
            if cert_a.primal < best["f"]:
                best.update(f=cert_a.primal, W=Wa, b=ba)
            best["d"] = max(best["d"], cert_a.dual)
            gap = relative_gap(best["f"], best["d"], floor)
            if gap <= tol:
                break
    endgame = None if alm_info is None else alm_info["certificate"].detail
    detail = {"epochs": epoch, "rho": rho, "newton_endgame": endgame}
    return _certified_result("cd", best, tol, floor, t_start, epoch, detail, alpha)


def _feature_gram(Phi):
    """``B -> sum_k beta_k' Phi Phi' beta_k`` (the quadratic term of :func:`ww_dual_bound`) on features."""

    def gram(B):
        V = Phi.T @ B
        return float(np.sum(V * V))

    return gram


def _certified_result(route, best, tol, floor, t_start, iterations, detail, multipliers):
    """The exact feature solvers' return value from their best iterate ``best`` (keys ``f``, ``d``, ``W``,
    ``b``): ``(W, b - mean(b), info)`` with the certificate of ``f`` against ``d``."""
    cert = certify(
        route,
        best["f"],
        best["d"],
        tol,
        failed_status="max_iter",
        iterations=iterations,
        time=time.perf_counter() - t_start,
        floor=floor,
        detail=detail,
    )
    info = {
        "status": cert.status,
        "iterations": iterations,
        "objective": best["f"],
        "certificate": cert,
        "multipliers": multipliers,
    }
    return best["W"], best["b"] - best["b"].mean(), info


def _ww_partition_solve(Phi, codes, Y, free, upper, zeta):
    """The exact solution of eq. 1.9 for one partition of the multipliers (see :func:`ww_primal_alm`):
    ``alpha`` free on ``free``, ``= zeta`` on ``upper``, 0 elsewhere.  With ``w_k = sum_i beta_ik phi_i`` the
    free margins are linear in ``alpha_F`` and ``b``: ``Q_FF alpha_F + E_F' b = 2 - (the part of U)``,
    ``Q = (Phi Phi')_ij c_(ik),(jl)``, ``c = (e_k - e_yi).(e_l - e_yj)``, and the bias constraints read
    ``E_F alpha_F = -(column sums of beta_U)`` (``E[k, (jl)] = [k = y_j] - [k = l]``).  One dense
    ``(m + C - 1)`` system (``b_0 = 0``).  Returns ``(W, b, alpha)`` (``alpha`` not clipped) or None
    (a singular system)."""
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
