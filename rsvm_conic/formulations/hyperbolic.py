"""The hyperbolic kernel machine of [ElD19] (PhD thesis), chapter 3 (Defs. 3.1-3.7, Problem 1 / Problem 2).

Model (Def. 3.1): one component per class, ``h_k(x) = R_k - ||O_k - phi(x)||`` with ``R_k >= 0``
and ``O_k`` in the convex hull of the class-k feature vectors (Problem 1's constraint), written
``O_k = sum_{i: y_i = k} lambda_i phi(x_i)`` with ``lambda`` on the class simplex.
Decision rule (Def. 3.2): the argmax class, the dummy category (``-1`` here) on ties.
Margin (Def. 3.3): ``rho_h(x, k) = (h_k(x) - max_{l != k} h_l(x)) / 2``.
Loss (Def. 3.4): the truncated hinge ``phi_{2,gamma}(t) = 1 (t <= 0), 1 - t/gamma (0 < t <= gamma),
0 (t > gamma)``; squashing (Def. 3.5) ``pi_gamma(t) = min(max(t, 0), gamma)``.
Training (Problem 1 = Problem 2 after eliminating the slacks)::

    min  sum_i phi_{2,gamma}(rho_h(x_i, y_i)) + lam ||R||^2   s.t.  O_k in conv{phi(x_i): y_i = k}.

Convex-concave procedure (CCP)
------------------------------
Every distance ``n_ik = ||O_k - phi(x_i)||`` is convex in ``O``.  With ``y = y_i``::

    -rho_i = a_i - b_i,  a_i = (max_{l != y} [R_l + sum_{j not in {y, l}} n_ij] + n_iy - R_y) / 2,
                         b_i = sum_{j != y} n_ij / 2,

both convex (sums/maxima of convex functions with non-negative coefficients), and
``phi_{2,gamma}(rho_i) = (G_i - H_i) / gamma`` with ``G_i = max(gamma + a_i, b_i)`` and
``H_i = max(a_i, b_i)`` (check the three cases ``rho <= 0``, ``0 < rho < gamma``, ``rho >= gamma``).
So the objective is a difference of convex functions.  CCP replaces ``H_i`` by its tangent at the
current iterate (a global under-estimator, so the result is a *majoriser* touching the objective
there) and minimises the majoriser; this convex problem is an SOCP::

    min  lam ||R||^2 + (1/gamma) (sum_i s_i - <Q, O> - <e, R>)
    s.t. ||O_k - phi(x_i)|| <= nu_ik (n C second-order cones, vectorised per class),
         t_i >= R_l + sum_{j not in {y_i, l}} nu_ij (l != y_i),  s_i >= gamma + a_i(t, nu, R),  s_i >= b_i(nu),
         O = (Y o lambda)^T Phi, lambda >= 0, Y^T lambda = 1, R >= 0,

where ``Q`` (C x D) and ``e`` (C) collect the tangent of ``sum_i H_i`` (CVXPY parameters: the model
is compiled once, DPP, and re-solved with new tangents).  Replacing ``n_ij`` by epigraph variables
``nu_ij`` is exact because ``G_i`` is non-decreasing in every ``n_ij``.  The builder
(:meth:`HyperbolicProblem._class_socp`) writes each cone in the coordinates of class k's own points
(the span of ``phi_i - mean``, plus the distance off that span): the same SOCP, with cones of
dimension ``rank + 2 <= min(n_k, D) + 1`` instead of ``D + 1`` (tested against this feature-coordinate
form, solved independently).
Monotone decrease: ``f(theta+) <= M(theta+ | theta) <= M(theta | theta) = f(theta)``.  The solver
is inexact, so an iterate that increases ``f`` by more than ``1e-9 (1 + |f|)`` is rejected and the
procedure stops there (reported in ``info``); every accepted step is a decrease.  An SOCP that
Clarabel reports as ``optimal_inaccurate`` yields only a *candidate*, subject to the same exact
numpy acceptance test (counted in ``info["inaccurate_solves"]``); a failed solve stops the run
at the current iterate (``info["stops"]``).
Boosted steps (``boost``; by default on the ``ccp`` and ``ipm`` routes; the boosted DCA of [AFV18],
:mod:`rsvm_conic.solvers.ccp`): after each accepted CCP step from ``theta_t`` to ``theta'``, a line search along
``d = theta' - theta_t`` keeps ``theta' + s d`` (projected back onto the simplices and ``R >= 0``) for the first ``s``
of ``boost, boost / 2, ...`` whose exact objective passes Armijo's test against ``f(theta')``; ``info["boosts"]``
records the ``s`` taken per step (0: none).  The objective still never increases.  Measured
(``HyperbolicSVC(solver="ipm")``, ``tol = 1e-6``, 200 steps at most): iris converges in 27 / 30 / 24 steps per start
instead of 65 / 76 / 63, 300 digits in 49 / 57 / 54 instead of 147 / 200 (``max_iter``) / 168, each to a lower
objective (28.5241 against 28.5247; 51.7278 against 51.7284).  ``boost=0`` is the plain CCP.

Multiple starts: start 0 is the class means with ``R = 0`` (equal radii: the nearest-centre
rule, linear boundaries); the others draw ``lambda`` from flat Dirichlet laws and ``R`` uniformly
in ``[0, gamma]``; the best final objective wins.

Sample weights ``s_i`` multiply the loss terms, ``sum_i s_i phi_{2,gamma}(rho_i)``, and hence every
majoriser (the tangent of ``sum_i s_i H_i`` and the epigraph sum ``sum_i s_i G_i``); start 0 and
``gamma="auto"`` use the weighted class means.  For integer weights each of these is the repeated rows'
own, so start 0's CCP is that of the repeated rows (the random starts draw over the distinct rows).

Large-scale version (backend ``anchors``): ``O_k`` is restricted to the convex hull of ``p`` anchors per class, the
centroids of k-means clusters of that class's feature vectors (each a mean of class points, hence inside the class hull:
Problem 1's constraint still holds).  Start 0 weights the anchors by their cluster sizes, which gives the class means
exactly (the same start as ``ccp``: the nearest-class-mean rule).  Each CCP majoriser is the same SOCP written in the
anchors' coordinates (cones of dimension ``rank(A_k) + 2 <= p + 1``, independent of the feature dimension), solved by
the structured interior point of ``ipm`` over the anchors' hulls (``step="ipm"``, the default; each step's certified gap
in ``info["step_gaps"]``) or exactly by the same CVXPY builder as ``ccp`` (``step="socp"``), and checked like the
``ccp`` steps, so the objective never increases and training never ends worse than the nearest-class-mean rule. With
``step="ipm"`` the steps are the ``ipm`` route's inexact steps with screened starts (below), and each step's interior
point is warm-started from the previous step's point of the same start (``warm=True``; ``eta=0, screen=None,
warm=False``: exact cold steps, every start to ``tol``, ``HyperbolicSVC(step_accuracy="exact")``). Measured on the full
digits (``HyperbolicSVC()``, 1797 x 64 / 16, three starts of at most 30 steps, ``tol=1e-4``; ``rsvm-conic bench
hyperbolic`` without ``--quick``, rows ``anchors-exact`` and ``auto``): 2001 interior-point iterations (22.2 per CCP
step, every start at ``max_iter``) with exact cold steps against 933 (11.1 per step; start 0 ``screened``) by default,
74.5 s against 46.9 s (0.63x, one run, 2 cores loaded by other sessions), objective 388.2414 against 388.2417, training
accuracy 0.9210 against 0.9215 (the nearest class mean: 0.9048).  (Version 1 ran projected-subgradient steps from equal
anchor weights and stopped at majoriser values far above their minimum.)  The size of each step is ``n C`` cones, as for
``ccp``: the route saves the feature dimension, not ``n``.

Interior-point steps (backend ``ipm``): the same CCP from the same starts, with the same exact acceptance test,
each step's SOCP solved by :func:`~rsvm_conic.solvers.hyperbolic_step.ipm_ccp` (the structured interior point of
:mod:`rsvm_conic.solvers.ipm.hyperbolic`, the class coordinates computed once for every step and start); each step's
gap is certified by weak duality and recorded in ``info["step_gaps"]``.  The steps are inexact by default: each
stops at an absolute gap of ``eta = 0.1`` times the previous step's majoriser drop (at least ``0.1 tol (1 + |f|)``),
and a step ends its start ``converged`` only when its decrease and its majoriser drop plus certified gap are both at
most ``tol (1 + |f|)``.  Every start runs to ``screen tol`` (``screen = 10``) first; the best goes on to ``tol``, and
each other while its objective less twice the best start's later decrease is below the best objective (the rest stop
``screened``).  Measured on 300 digits at ``tol = 1e-4`` (``rsvm-conic bench hyperbolic --quick``): 50 CCP steps of
13.4 interior-point iterations against 76 of 17.4 with exact steps and every start to ``tol``, objective 51.7750
against 51.7910.  ``eta=0, screen=None`` (``HyperbolicSVC(step_accuracy="exact")``): exact steps, every start to
``tol``; ``warm=True``: each step's interior
point warm-started from the previous step's point (off by default, measured in ``docs/guide/hyperbolic.md``).

First-order steps (backend ``fista``): the same CCP from the same starts, with the same exact acceptance test,
each majoriser minimised by :func:`~rsvm_conic.solvers.hyperbolic_step.solve_majoriser` (accelerated projected
gradient on its smoothing, compiled, warm-started from the current point and the previous step's step size,
smoothing and dual point) to a certified gap at most ``eta`` times the largest decrease still possible, or
``step_iter`` gradient steps; the gaps are in ``info["step_gaps"]``.  A step is then inexact, so a small decrease is
no sign of convergence: only a step certifying that no point lowers the majoriser by more than ``tol (1 + |f|)``
ends the run (``stationary``).  Measured against ``ccp`` by ``rsvm-conic bench hyperbolic``.

Stop reasons (``info["stops"]``): ``converged`` (a step lowers ``f`` by at most ``tol (1 + |f|)``: the point then
minimises its own majoriser to within that amount, a critical point of the DC program to that accuracy),
``fixed_point`` (the majoriser's minimiser does not lower ``f``: the current point is a fixed point of the CCP to the
solver's accuracy; the step is not taken), ``max_iter``, ``solver_failed: ...``, ``screened`` (``ipm``, ``anchors``:
converged to ``screen tol``, then left above the best start).
``info["majorizer_drops"]``: ``f(theta_t) - M(theta_{t+1} | theta_t)`` per step, non-negative up
to the solver's accuracy (each majoriser minimised no worse than its start).

Geometry (Appendix .1): for ``R_k = R_l`` the boundary ``h_k = h_l`` is the mediator hyperplane
of ``[O_k, O_l]``; otherwise it is the branch of the hyperbola(oid) ``||x - O_l|| - ||x - O_k||
= R_l - R_k`` with foci ``O_k, O_l``, ``a = |R_l - R_k| / 2``, ``c = ||O_l - O_k|| / 2`` and
eccentricity ``e = c / a`` (tested in ``tests/test_multiclass_hyperbolic.py``).
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_positive
from ..kernels.rbf import squared_distances
from ..solvers.ccp import BOOST, CLARABEL_CCP, best_run, ccp_starts, kmeans_anchors, socp_ccp, tangent_coefficients
from ..solvers.hyperbolic_step import SCREEN, STEP_ETA, first_order_ccp, ipm_ccp, simplex_extrapolation
from .base import Formulation, Solution
from .multiclass_ww import check_features_and_codes

DUMMY = -1  #: the dummy category of Def. 3.2
#: ``auto_routes``: the CCP with interior-point steps (``ipm``) up to CCP_MAX samples, the anchors route beyond
CCP_MAX = 1000


# ----------------------------------------------------------------------------- model pieces
def hyperbolic_scores(R, dist) -> np.ndarray:
    """``h_k(x_i) = R_k - ||O_k - phi(x_i)||`` (Def. 3.1).

    Parameters
    ----------
    R : array-like of shape (C,)
        The radii.
    dist : array-like of shape (n, C)
        The distances ``||O_k - phi(x_i)||``.

    Returns
    -------
    ndarray of shape (n, C)
        The scores.
    """
    return np.asarray(R)[None, :] - np.asarray(dist)


def decision_rule(H, tol: float = 0.0) -> np.ndarray:
    """Def. 3.2: the argmax class if it is unique (within ``tol``), else the dummy category ``-1``.

    Parameters
    ----------
    H : array-like of shape (n, C)
        The scores.
    tol : float, default=0.0
        Scores within ``tol`` of the top one tie with it.

    Returns
    -------
    ndarray of shape (n,)
        Class codes, ``-1`` on ties.
    """
    H = np.asarray(H, dtype=np.float64)
    top = H.max(axis=1, keepdims=True)
    n_top = np.sum(H >= top - tol, axis=1)
    return np.where(n_top == 1, np.argmax(H, axis=1), DUMMY)


def margins(H, codes) -> np.ndarray:
    """Def. 3.3: ``rho_h(x_i, y_i) = (h_{y_i} - max_{l != y_i} h_l) / 2``.

    Parameters
    ----------
    H : array-like of shape (n, C)
        The scores.
    codes : ndarray of shape (n,)
        The class codes ``y_i``.

    Returns
    -------
    ndarray of shape (n,)
        The margins.
    """
    H = np.asarray(H, dtype=np.float64)
    n = H.shape[0]
    hy = H[np.arange(n), codes]
    other = H.copy()
    other[np.arange(n), codes] = -np.inf
    return 0.5 * (hy - other.max(axis=1))


def truncated_hinge(t, gamma: float) -> np.ndarray:
    """Def. 3.4: ``phi_{2,gamma}(t) = 1{t <= 0} + (1 - t/gamma) 1{0 < t <= gamma}``.

    Parameters
    ----------
    t : array-like
        The margins.
    gamma : float
        The margin parameter.

    Returns
    -------
    ndarray
        The losses, shaped like ``t``.
    """
    t = np.asarray(t, dtype=np.float64)
    return np.where(t <= 0, 1.0, np.where(t <= gamma, 1.0 - t / gamma, 0.0))


def squash(t, gamma: float) -> np.ndarray:
    """Def. 3.5: ``pi_gamma(t) = t 1{0 < t <= gamma} + gamma 1{t > gamma}``.

    Parameters
    ----------
    t : array-like
        The margins.
    gamma : float
        The margin parameter.

    Returns
    -------
    ndarray
        The squashed margins, shaped like ``t``.
    """
    t = np.asarray(t, dtype=np.float64)
    return np.where(t <= 0, 0.0, np.minimum(t, gamma))


def problem1_objective(H, codes, R, gamma: float, lam: float, sample_weight=None) -> float:
    """``sum_i s_i phi_{2,gamma}(rho_i) + lam ||R||^2`` (Problem 1 / Problem 2).

    Parameters
    ----------
    H : array-like of shape (n, C)
        The scores.
    codes : ndarray of shape (n,)
        The class codes.
    R : array-like of shape (C,)
        The radii.
    gamma : float
        The margin parameter.
    lam : float
        The weight of ``||R||^2``.
    sample_weight : ndarray of shape (n,) or None, default=None
        The weights ``s_i`` (ones when None).

    Returns
    -------
    float
        The objective.
    """
    loss = truncated_hinge(margins(H, codes), gamma)
    total = loss.sum() if sample_weight is None else np.asarray(sample_weight) @ loss
    return float(total + lam * np.sum(np.asarray(R) ** 2))


def centre_distances(O, Phi) -> np.ndarray:
    """The distances ``||O_k - phi_i||``.

    Parameters
    ----------
    O : array-like of shape (C, D)
        The centres.
    Phi : array-like of shape (n, D)
        The feature vectors.

    Returns
    -------
    ndarray of shape (n, C)
        The distances.
    """
    return np.sqrt(squared_distances(np.asarray(Phi, dtype=np.float64), np.asarray(O, dtype=np.float64)))


def weighted_median(values, weights) -> float:
    """The median of ``values`` with each value counted ``weights[i]`` times: for integer weights, ``np.median`` of
    the repeated values (the mean of the two middle ones when the total weight is even).

    Parameters
    ----------
    values : array-like of shape (n,)
        The values.
    weights : array-like of shape (n,)
        Their positive weights.

    Returns
    -------
    float
        The weighted median.
    """
    order = np.argsort(values, kind="stable")
    v, cum = np.asarray(values, dtype=np.float64)[order], np.cumsum(np.asarray(weights, dtype=np.float64)[order])
    half = 0.5 * cum[-1]
    lower = v[min(int(np.searchsorted(cum, half, side="left")), v.size - 1)]
    upper = v[min(int(np.searchsorted(cum, half, side="right")), v.size - 1)]
    return float(0.5 * (lower + upper))


def auto_gamma(Phi, codes, n_classes: int, sample_weight=None) -> float:
    """``gamma="auto"``: the median of ``|rho|`` at the initial point (class means, equal radii), clipped to
    [1e-3, 1]; with ``sample_weight``, the weighted class means and the weighted median (those of the repeated rows
    for integer weights).

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        The feature vectors.
    codes : ndarray of shape (n,)
        The class codes.
    n_classes : int
        The number of classes.
    sample_weight : ndarray of shape (n,) or None, default=None
        The weights ``s_i`` (ones when None).

    Returns
    -------
    float
        The margin parameter.
    """
    n = Phi.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    Y = np.zeros((n, n_classes))
    Y[np.arange(n), codes] = w
    O0 = (Y / Y.sum(axis=0)).T @ Phi
    rho = margins(-centre_distances(O0, Phi), codes)
    if sample_weight is None:
        return float(np.clip(np.median(np.abs(rho)), 1e-3, 1.0))
    return float(np.clip(weighted_median(np.abs(rho), w), 1e-3, 1.0))


class HyperbolicProblem(Formulation):
    """Problem 1 on explicit features ``Phi`` (rows ``phi(x_i)``; for a kernel, a factor of K).

    Backends (:attr:`BACKENDS`): ``ccp`` (sequence of SOCPs, Clarabel by default) and ``anchors``
    (the same over anchor hulls); :meth:`auto_routes` picks by size.  ``gamma`` is a number in (0, 1] or
    ``"auto"`` (:func:`auto_gamma`).  Solutions hold ``O`` (C, D), ``R`` (C,), and ``lam`` (simplex
    weights, n) or ``mu`` (anchors); they carry no certificate (a local optimum of a non-convex problem).

    Parameters
    ----------
    Phi : ndarray of shape (n, D)
        Feature vectors ``phi(x_i)``.
    codes : ndarray of shape (n,)
        Integer class codes ``0..n_classes-1``.
    n_classes : int or None, default=None
        Number of classes (``codes.max() + 1`` when None).
    gamma : float or "auto", default=0.1
        Margin parameter of the truncated hinge, in (0, 1].
    lam : float, default=1e-2
        Weight of ``||R||^2``.
    sample_weight : ndarray of shape (n,) or None, default=None
        Positive weights ``s_i`` of the samples' loss terms, trusted (the estimator validates them and drops the
        samples of weight 0): the objective is ``sum_i s_i phi_{2,gamma}(rho_i) + lam ||R||^2``, which for integer
        weights is that of the repeated rows.  They also weight the class means of start 0 and of
        ``gamma="auto"``, and the k-means anchors of the ``anchors`` route.
    """

    name = "hyperbolic-msvm"
    conic_backends = ()
    BACKENDS = {
        "fista": "convex-concave procedure, each step by accelerated projected gradient to a certified gap; never "
        "increases the objective",
        "ccp": "convex-concave procedure, one SOCP (CVXPY + Clarabel) per step; never increases the objective",
        "ipm": "convex-concave procedure, each step's SOCP by the structured interior point with a certified gap; "
        "never increases the objective",
        "anchors": "CCP over anchor hulls (k-means centroids), each step's SOCP in the anchors' coordinates by the "
        "structured interior point with a certified gap",
    }

    def __init__(
        self,
        Phi,
        codes,
        n_classes: int | None = None,
        gamma: float | str = 0.1,
        lam: float = 1e-2,
        sample_weight=None,
    ):
        c = np.asarray(codes)
        integral = c.dtype.kind in "iub" or (
            c.dtype.kind == "f" and np.all(np.isfinite(c)) and np.all(c == np.round(c))
        )
        if not integral:
            raise ValueError(
                "codes must be integer class codes 0..n_classes-1 (got non-integer values); "
                "encode labels with np.unique(y, return_inverse=True)."
            )
        self.Phi, self.codes, self.n_classes = check_features_and_codes(Phi, codes, n_classes)
        if np.any(np.bincount(self.codes, minlength=self.n_classes) == 0):
            raise ValueError("every class 0..n_classes-1 needs at least one training point (O_k lies in its hull).")
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        self._weights = np.ones(self.Phi.shape[0]) if sample_weight is None else self.sample_weight
        if isinstance(gamma, str):
            if gamma != "auto":
                raise ValueError(f"gamma must be in (0, 1] or 'auto'; got {gamma!r}.")
            gamma = auto_gamma(self.Phi, self.codes, self.n_classes, self.sample_weight)
        self.gamma = check_positive(gamma, "gamma")
        if self.gamma > 1.0:
            raise ValueError(f"gamma must lie in (0, 1] (Def. 3.4); got {self.gamma}.")
        self.lam = check_positive(lam, "lam")
        n, C = self.Phi.shape[0], self.n_classes
        self.Y = np.zeros((n, C))
        self.Y[np.arange(n), codes] = 1.0
        self.parameters = {}
        self.variables = {}
        self._socp = None

    def auto_routes(self) -> tuple[str, ...]:
        """``ipm`` up to ``CCP_MAX`` samples, else ``anchors`` (one route: there is no certificate to fall back on)."""
        return ("ipm",) if self.Phi.shape[0] <= CCP_MAX else ("anchors",)

    # -- objective & scores -------------------------------------------------------------------
    def scores(self, O, R, Phi=None) -> np.ndarray:
        return hyperbolic_scores(R, centre_distances(O, self.Phi if Phi is None else Phi))

    def f(self, O, R) -> float:
        return problem1_objective(self.scores(O, R), self.codes, R, self.gamma, self.lam, self.sample_weight)

    def objective(self, solution: Solution) -> float:
        return self.f(solution["O"], solution["R"])

    def decision_function(self, solution: Solution, Phi_test) -> np.ndarray:
        return self.scores(solution["O"], solution["R"], np.asarray(Phi_test, dtype=np.float64))

    def predict(self, solution: Solution, Phi_test) -> np.ndarray:
        return decision_rule(self.decision_function(solution, Phi_test))

    def majorizer(self, O, R, O_t, R_t) -> float:
        """``M(theta | theta_t)`` evaluated in numpy (for tests: ``M >= f`` and ``M(theta_t|theta_t) = f``)."""
        dist_t = centre_distances(O_t, self.Phi)
        c, e, Ht = tangent_coefficients(dist_t, R_t, self.codes, sample_weight=self.sample_weight)
        dist = centre_distances(O, self.Phi)
        lin = self._tangent_value(c, e, dist_t, O_t, O, R)
        a, b = self._ab(dist, R)
        G = np.maximum(self.gamma + a, b)
        G = G.sum() if self.sample_weight is None else self.sample_weight @ G
        return float(self.lam * np.sum(R**2) + (G - lin) / self.gamma)

    def _ab(self, dist, R):
        n = dist.shape[0]
        rows = np.arange(n)
        Yb = self.Y.astype(bool)
        noff = np.where(Yb, 0.0, dist).sum(axis=1)
        branch = np.where(Yb, -np.inf, R[None, :] + noff[:, None] - dist)
        a = 0.5 * (branch.max(axis=1) + dist[rows, self.codes] - R[self.codes])
        return a, 0.5 * noff

    def _tangent_value(self, c, e, dist_t, O_t, O, R):
        """``sum_ij c_ij [g_ij . (O_j - phi_i)] + sum_il e_il R_l`` with ``g_ij = (O_j^t - phi_i)/n_ij^t``."""
        Q, w = self._tangent_Q(c, dist_t, O_t)
        const = float(np.sum(w * (self.Phi @ O_t.T - np.einsum("ij,ij->i", self.Phi, self.Phi)[:, None])))
        return float(np.sum(Q * O) - const + np.sum(e.sum(axis=0) * R))

    def _tangent_Q(self, c, dist_t, O_t):
        """The tangent's gradient in O, ``Q_j = sum_i w_ij (O_j^t - phi_i)`` with ``w_ij = c_ij / n_ij^t``, and
        the weights ``w``; :meth:`_tangent_value` adds the constant ``sum_ij w_ij (O_j^t - phi_i) . phi_i``, which
        the CCP loop does not need."""
        w = np.where(dist_t > 1e-12, c / np.maximum(dist_t, 1e-300), 0.0)  # (n, C)
        Q = w.sum(axis=0)[:, None] * O_t - w.T @ self.Phi
        return Q, w

    # -- the SOCP majoriser, compiled once -----------------------------------------------------
    def _hinge_constraints(self, Y, nu, R, t, s):
        """The truncated-hinge epigraph shared by the exact and the anchors majorisers: ``s_i`` bounds both
        branches given the cone distances ``nu`` (n, C), radii ``R`` and the own-class slack ``t``."""
        import cvxpy as cp

        n, C = nu.shape
        # the off-class distance sums as variables: each of the n C hinge rows then touches 4 variables
        # instead of C + 2, which keeps the interior point's KKT factor sparse
        noff = cp.Variable(n, name="noff")
        branch = (
            cp.reshape(noff, (n, 1), order="C") @ np.ones((1, C))
            - nu
            + np.ones((n, 1)) @ cp.reshape(R, (1, C), order="C")
        )
        a = 0.5 * (t + cp.sum(cp.multiply(Y, nu), axis=1) - Y @ R)
        return [
            noff == cp.sum(cp.multiply(1.0 - Y, nu), axis=1),
            cp.multiply(1.0 - Y, branch - cp.reshape(t, (n, 1), order="C") @ np.ones((1, C))) <= 0,
            s >= self.gamma + a,
            s >= 0.5 * noff,
        ]

    def _O_from_lambda(self, lam_w):
        return (self.Y * lam_w[:, None]).T @ self.Phi

    def _exact_starts(self, n_starts, random_state, init):
        """The class members and the starts ``(mus, R)`` of the exact routes (``init = (lam, R)``: that point alone)."""
        members = [np.flatnonzero(self.codes == k) for k in range(self.n_classes)]
        if init is not None:
            lam_w, R = np.asarray(init[0], float), np.asarray(init[1], float)
            return members, [([lam_w[idx] for idx in members], R)]
        w = self._weights
        return members, ccp_starts(
            [w[idx] for idx in members], n_starts, self.gamma, np.random.default_rng(random_state)
        )

    def _exact_solution(self, route, members, runs, t0, **info) -> Solution:
        best = best_run(runs, "hyperbolic CCP")
        lam_w = np.zeros(self.Phi.shape[0])
        for idx, mu in zip(members, runs[best]["mus"]):
            lam_w[idx] = mu
        return self._ccp_solution(
            route, runs, best, t0, {"lam": lam_w, "R": runs[best]["R"], "O": runs[best]["O"]}, **info
        )

    def _solve_ccp(
        self,
        solver: str = "clarabel",
        max_iter: int = 30,
        tol: float = 1e-6,
        n_starts: int = 3,
        random_state=0,
        init=None,
        boost: float = BOOST,
        **options,
    ) -> Solution:
        """CCP with exact SOCP majorisers (every class point an anchor); returns the best of ``n_starts`` runs.
        ``init = (lam, R)`` replaces the starts by one given point (``lam``: simplex weights per class); ``boost``:
        the boosted line search's first step after each CCP step (module docstring; 0: none)."""
        t0 = time.perf_counter()
        members, starts = self._exact_starts(n_starts, random_state, init)
        anchors = [self.Phi[idx] for idx in members]
        weights = [self._weights[idx] for idx in members]
        runs = self._ccp_runs(anchors, weights, starts, solver, max_iter, tol, boost, options, cache=True)
        return self._exact_solution("ccp", members, runs, t0)

    def _solve_fista(
        self,
        max_iter: int = 30,
        tol: float = 1e-6,
        n_starts: int = 3,
        random_state=0,
        init=None,
        eta: float = 0.05,
        step_iter: int = 300,
        boost: float = 0.0,
    ) -> Solution:
        """The CCP of :meth:`_solve_ccp` (same starts, same exact acceptance test), each step solved by
        :func:`~rsvm_conic.solvers.hyperbolic_step.solve_majoriser` from the current point to a certified gap
        at most ``eta`` times the largest decrease still possible, or ``step_iter`` gradient steps; a step that
        certifies that no step can lower the majoriser by more than ``tol (1 + |f|)`` ends the run
        (``stationary``).  The step size, the smoothing and the last dual point carry over between steps and
        starts.  ``info["step_gaps"]``: per start, each step's certified gap in units of the objective.  Not boosted
        by default: a step is inexact, so ``d`` is not the CCP's direction; measured on the pinned cases of
        ``tests/test_multiclass_hyperbolic.py``, with ``boost=8`` it ends above the plain SOCP CCP on (0, 3) and
        (2, 3) (28.066 against 28.046 on (2, 3)), without it below on every pinned case."""
        options = dict(max_iter=max_iter, tol=tol, eta=eta, step_iter=step_iter, boost=boost)
        return self._stepped_ccp("fista", first_order_ccp, n_starts, random_state, init, **options)

    def _solve_ipm(
        self,
        max_iter: int = 30,
        tol: float = 1e-6,
        n_starts: int = 3,
        random_state=0,
        init=None,
        boost: float = BOOST,
        eta: float = STEP_ETA,
        screen: float | None = SCREEN,
        warm: bool = False,
    ) -> Solution:
        """The CCP of :meth:`_solve_ccp` (same starts, same exact acceptance test), each step's SOCP solved by
        :func:`~rsvm_conic.solvers.hyperbolic_step.ipm_ccp` (the structured interior point; the class coordinates
        computed once for all steps and starts) to an absolute gap of ``eta`` times the previous step's majoriser
        drop (0: to the interior point's tight tolerance), every start first to ``screen tol`` and only those that
        can still win on to ``tol`` (None: every start to ``tol``), each interior point warm-started from the last
        step's point when ``warm``.  ``info["step_gaps"]``: per start, each step's
        certified gap in units of the objective; ``info["step_iterations"]``: the interior point's iterations."""
        options = dict(max_iter=max_iter, tol=tol, boost=boost, eta=eta, screen=screen, warm=warm)
        return self._stepped_ccp("ipm", ipm_ccp, n_starts, random_state, init, **options)

    def _stepped_ccp(self, route, driver, n_starts, random_state, init, **options) -> Solution:
        """The CCP from :meth:`_exact_starts` by ``driver`` (:func:`~rsvm_conic.solvers.hyperbolic_step.
        first_order_ccp` or :func:`~rsvm_conic.solvers.hyperbolic_step.ipm_ccp`), each step's certified gap and
        iterations in ``info``."""
        t0 = time.perf_counter()
        members, starts = self._exact_starts(n_starts, random_state, init)
        runs, info = self._driver_runs(
            driver, members, [(mus, R, self._O_of(mus, members)) for mus, R in starts], **options
        )
        return self._exact_solution(route, members, runs, t0, **info)

    def _driver_runs(self, driver, members, starts, **options):
        """``driver``'s runs from ``starts`` (points ``(mus, R, O)``) on this machine, and the per-start step gaps and
        iterations they record, for ``info``."""
        runs = driver(
            self.Phi,
            self.codes,
            members,
            self.sample_weight,
            self.gamma,
            self.lam,
            starts,
            lambda point: self.f(point[2], point[1]),
            self._tangent,
            **options,
        )
        return runs, {key: [run.pop(key) for run in runs] for key in ("step_gaps", "step_iterations")}

    def _O_of(self, mus, members):
        return np.stack([mu @ self.Phi[idx] for mu, idx in zip(mus, members)])

    def _ccp_runs(self, anchors, weights, starts, solver, max_iter, tol, boost, options, cache=False) -> list[dict]:
        """The CCP with SOCP steps (:func:`~rsvm_conic.solvers.ccp.socp_ccp`) from each start ``(mus, R)`` over the
        hulls of ``anchors``; the majoriser (:meth:`_class_socp`) is built at the first step (none with
        ``max_iter = 0``), and kept on the machine for later solves when ``cache``."""

        def build():
            if cache and self._socp is not None:
                return self._socp
            P = self._class_socp(anchors)
            if cache:
                self._socp = P
            return P

        return socp_ccp(
            build,
            anchors,
            starts,
            lambda point: self.f(point[2], point[1]),
            self._tangent,
            self.majorizer,
            solver=solver,
            options={**CLARABEL_CCP, **options} if solver == "clarabel" else options,
            max_iter=max_iter,
            tol=tol,
            boost=boost,
            extrapolate=simplex_extrapolation(lambda mus: np.stack([mu @ A for mu, A in zip(mus, anchors)]), weights),
        )

    def _tangent(self, O, R):
        """The tangent of the concave part at ``(O, R)``: its gradient in the centres (C, D) and in ``R`` (C,)."""
        dist = centre_distances(O, self.Phi)
        c, e, _ = tangent_coefficients(dist, R, self.codes, sample_weight=self.sample_weight)
        return self._tangent_Q(c, dist, O)[0], e.sum(axis=0)

    @staticmethod
    def _ccp_solution(route, runs, best, t0, values, **info) -> Solution:
        r = runs[best]
        status = "local_optimum" if r["stop"] in ("converged", "fixed_point", "stationary") else r["stop"]
        return Solution(
            route,
            status,
            r["f"],
            time.perf_counter() - t0,
            values,
            {
                "histories": [x["history"] for x in runs],
                "stops": [x["stop"] for x in runs],
                "best_start": best,
                "starts_objectives": [x["f"] for x in runs],
                "inaccurate_solves": [x["inaccurate"] for x in runs],
                "retries": [x["retries"] for x in runs],
                "majorizer_drops": [x["majorizer_drops"] for x in runs],
                "boosts": [x["boosts"] for x in runs],
                **info,
            },
        )

    # -- the majoriser SOCP in the anchors' coordinates ----------------------------------------------
    def _class_socp(self, anchors):
        """The CCP majoriser with ``O_k = mu_k^T A_k`` (``mu_k`` on the simplex; ``A_k`` the class-k points
        for the exact route, k-means centroids for ``anchors``), compiled once (DPP: the tangent enters as
        parameters ``q_k``, ``e``).  The cones live in the anchors' own coordinates: with ``c_k`` the mean of
        ``A_k`` and ``B_k`` an orthonormal basis of ``span(A_k - c_k)`` (rank ``r_k``),
        ``||O_k - phi_i||^2 = ||mu_k^T (A_k - c_k) B_k^T - z_ik||^2 + p_ik^2`` with ``z_ik = B_k (phi_i - c_k)``
        and ``p_ik`` the distance of ``phi_i - c_k`` to that span (exact, since ``sum mu_k = 1``; ``p = 0``
        and dropped when ``r_k = D``).  Each cone has dimension ``r_k + 2 <= min(p_k, D) + 1``: a class with
        fewer points than features gets smaller cones than the feature coordinates would give, and the
        interior point's dense coupling block shrinks from ``C D`` to ``sum_k r_k`` (measured on 300 Letter
        points, 26 classes, D = 20: 5.6 s -> 1.3 s per step; 5x on the 100-point folds)."""
        import cvxpy as cp

        n, D = self.Phi.shape
        C = self.n_classes
        Y = self.Y
        mus = [cp.Variable(A.shape[0], nonneg=True, name=f"mu{k}") for k, A in enumerate(anchors)]
        qs = [cp.Parameter(A.shape[0], name=f"q{k}") for k, A in enumerate(anchors)]
        R = cp.Variable(C, nonneg=True, name="R")
        nu = cp.Variable((n, C), name="nu")
        t = cp.Variable(n, name="t")
        s = cp.Variable(n, name="s")
        e = cp.Parameter(C, name="e")
        cons = [cp.sum(mu) == 1.0 for mu in mus]
        ones_n = np.ones((n, 1))
        by_width: dict = {}  # cone rows of equal width, one SOC constraint per width
        for k, A in enumerate(anchors):
            ck = A.mean(axis=0)
            Ac = A - ck
            _, S, Vt = np.linalg.svd(Ac, full_matrices=False)
            r = int(np.sum(S > 1e-12 * max(S[0], 1e-300))) if S.size else 0
            Bk = Vt[:r]
            Pc = self.Phi - ck
            Z = Pc @ Bk.T  # (n, r)
            cols = [-Z]
            if r < D:  # the part of phi_i - c_k off the span, as a residual (no cancellation)
                cols.append(-np.linalg.norm(Pc - Z @ Bk, axis=1)[:, None])
            if r > 0:
                v = cp.Variable(r, name=f"v{k}")  # the centre's coordinates: each cone row touches one entry
                cons.append(v == (Ac @ Bk.T).T @ mus[k])
                diff = cp.hstack([ones_n @ cp.reshape(v, (1, r), order="C") + cols[0]] + cols[1:])
            else:  # one anchor: the centre is fixed
                diff = cp.Constant(np.hstack(cols[1:]))
            by_width.setdefault(diff.shape[1], []).append((k, diff))
        # one SOC constraint per cone width rather than per class: the same cones, and CVXPY's DPP compilation
        # interleaves each SOC constraint's rows over the whole parameter tensor, so 26 constraints took 1.6 s
        # to compile on 300 Letter points and 2 take 0.1 s
        for group in by_width.values():
            cones_t = cp.hstack([nu[:, k] for k, _ in group])
            cones_x = group[0][1] if len(group) == 1 else cp.vstack([diff for _, diff in group])
            cons.append(cp.SOC(cones_t, cones_x, axis=1))
        cons += self._hinge_constraints(Y, nu, R, t, s)
        loss = cp.sum(s) if self.sample_weight is None else self.sample_weight @ s
        obj = self.gamma * self.lam * cp.sum_squares(R) + loss - sum(q @ mu for q, mu in zip(qs, mus)) - e @ R
        self.variables = {"R": R, "nu": nu, **{f"mu{k}": mu for k, mu in enumerate(mus)}}
        self.parameters = {"e": e, **{f"q{k}": q for k, q in enumerate(qs)}}
        return dict(problem=cp.Problem(cp.Minimize(obj), cons), mus=mus, qs=qs, R=R, e=e)

    # -- large-scale version: the CCP over anchor hulls -------------------------------------------
    def _solve_anchors(
        self,
        n_anchors: int = 20,
        max_iter: int = 30,
        tol: float = 1e-6,
        n_starts: int = 2,
        random_state=0,
        solver: str = "clarabel",
        step: str = "ipm",
        boost: float = 0.0,
        eta: float = STEP_ETA,
        screen: float | None = SCREEN,
        warm: bool = True,
        **options,
    ) -> Solution:
        """CCP over anchor hulls (see module docstring): ``step="ipm"`` by the structured interior point
        (:func:`~rsvm_conic.solvers.hyperbolic_step.ipm_ccp`, each step's gap certified and recorded in
        ``info["step_gaps"]``) with the ``ipm`` route's inexact steps and screened starts (``eta``, ``screen``,
        ``warm`` as for :meth:`_solve_ipm`; ``eta=0, screen=None``: every step to the interior point's tight
        tolerance and every start to ``tol``), ``step="socp"`` as an SOCP by CVXPY and ``solver`` (``options``: that
        solver's settings).  Not boosted by default: on the Segmentation subset of
        ``tests/test_multiclass_hyperbolic.py`` (210 points, 200 random features, 20 anchors per class, 6 steps) the
        boosted CCP's test accuracy is 81.4% (exact steps) and 81.6% (inexact) against 82.7% for the plain CCP (either
        step) and 82.9% for the nearest class mean."""
        t0 = time.perf_counter()
        rng = np.random.default_rng(random_state)
        anchors, sizes = kmeans_anchors(self.Phi, self.codes, self.n_classes, n_anchors, rng, self.sample_weight)
        starts = ccp_starts(sizes, n_starts, self.gamma, rng)
        info = {}
        if step not in ("ipm", "socp"):
            raise ValueError(f"step must be 'ipm' or 'socp'; got {step!r}.")
        if step == "ipm" and options:
            raise ValueError(
                f"the solver options {sorted(options)} apply to step='socp' only; step='ipm' takes eta, screen, warm."
            )
        if step == "socp":
            runs = self._ccp_runs(anchors, sizes, starts, solver, max_iter, tol, boost, options)
        else:
            runs, info = self._driver_runs(
                ipm_ccp,
                None,
                [(mus, R, np.stack([mu @ A for mu, A in zip(mus, anchors)])) for mus, R in starts],
                max_iter=max_iter,
                tol=tol,
                boost=boost,
                anchors=anchors,
                anchor_weights=sizes,
                eta=eta,
                screen=screen,
                warm=warm,
            )
        best = best_run(runs, "hyperbolic anchors CCP")
        r = runs[best]
        return self._ccp_solution(
            "anchors",
            runs,
            best,
            t0,
            {"mu": r["mus"], "R": r["R"], "O": r["O"], "anchors": anchors},
            anchor_sizes=sizes,
            **info,
        )
