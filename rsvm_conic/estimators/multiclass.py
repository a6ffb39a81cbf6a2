"""scikit-learn estimators for the multi-class machines of [ElD19] (PhD thesis).

``WestonWatkinsSVC`` -- the WW-M-SVM (eq. 1.9) with a Gaussian, consolidation (kappa^m), linear
kernel, exact (Gram matrix) or through random features.
``HyperbolicSVC`` -- the hyperbolic kernel machine (chapter 3, Problem 1) trained by CCP.

Solver paths of ``WestonWatkinsSVC`` (``solver="auto"``; the route table and the choice are
:class:`~rsvm_conic.formulations.multiclass_ww.WestonWatkinsProblem`'s ``BACKENDS`` / ``auto_routes``):

* exact kernel, two classes -> ``libsvm`` (WW binary = 2 x SVC(C), exact; the fastest path),
* otherwise -> ``alm``: the exact numpy solver (method of multipliers, semismooth Newton-CG steps, bias
  exact, certified to a 1e-6 relative gap) on the random features (``n_components`` set) or on the
  empirical kernel map ``K = U diag(l) U^T``, ``Phi = U sqrt(l)`` (eigenvalues below ``1e-10 max``
  dropped); if it does not certify: the kernel-dual QP in CVXPY + Clarabel (``dual``) while
  ``n C <= 6000``, else the numpy L-BFGS on the smoothed primal (``primal``, certified to ``primal_tol``).

Every route is certified (``solver_stats_``: primal objective minus a feasible dual value); an
uncertified route falls back with a ``SolverWarning`` naming both routes or raises ``SolverError``.

Bandwidth: ``sigma`` is a length scale, ``k(x, y) = exp(-||x - y||^2 / (2 sigma^2))``;
``sigma="thesis"`` gives ``sqrt(5 n_features)`` (Table 4.2).  Features are not standardised
here: use a ``Pipeline`` with ``StandardScaler`` (the reproduction does).
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import (
    check_choice,
    check_finite_array,
    check_no_overflow,
    check_positive,
    validate_estimator_input,
)
from ..formulations.hyperbolic import DUMMY, HyperbolicProblem, centre_distances, decision_rule
from .._validation import encode_labels
from ..certify.contract import solver_stats
from ..formulations.multiclass_ww import WestonWatkinsProblem
from ..solvers.multiclass import msvmpack_zeta
from ..solvers.multiclass.certificate import gram_factor
from ..kernels.consolidation import ConsolidationKernel
from ..kernels.rbf import gaussian_kernel, thesis_sigma

KERNELS = ("rbf", "consolidation", "linear")


class _KernelMixin:
    """Shared kernel / random-feature handling (fitted attributes: ``sigma_``, ``kernel_obj_``, ``rff_``)."""

    def _setup_kernel(self, X, codes):
        check_choice(self.kernel, "kernel", KERNELS)
        p = X.shape[1]
        if isinstance(self.sigma, str):
            if self.sigma != "thesis":
                raise ValueError(f"sigma must be a positive number or 'thesis'; got {self.sigma!r}.")
            self.sigma_ = thesis_sigma(p)
        else:
            self.sigma_ = check_positive(self.sigma, "sigma")
        self.kernel_obj_ = None
        if self.kernel == "consolidation":
            sd = None if self.sigma_dir is None else check_positive(self.sigma_dir, "sigma_dir", allow_inf=True)
            self.kernel_obj_ = ConsolidationKernel(
                sigma=self.sigma_,
                sigma_dir=sd,
                m=self.m,
                n_subclasses=self.n_subclasses,
                exclusion_tol=getattr(self, "exclusion_tol", 0.25),
                random_state=self.random_state,
            ).fit(X, codes)
        self.rff_ = None
        if self.n_components is not None:
            nc = self.n_components
            if isinstance(nc, bool) or not isinstance(nc, numbers.Integral) or nc < 1:
                raise ValueError(f"n_components must be a positive integer or None; got {nc!r}.")
            if self.kernel == "linear":
                raise ValueError("random features are for the rbf and consolidation kernels, not 'linear'.")
            if self.kernel == "rbf":
                from sklearn.kernel_approximation import RBFSampler

                self.rff_ = RBFSampler(
                    gamma=1.0 / (2.0 * self.sigma_**2), n_components=int(nc), random_state=self.random_state
                ).fit(X)
            else:
                # ConsolidationRandomFeatures returns 2 * n_components columns (cos and sin)
                self.rff_ = self.kernel_obj_.random_features(max(1, int(nc) // 2), random_state=self.random_state)

    def _gram(self, A, B):
        if self.kernel == "rbf":
            return gaussian_kernel(A, B, self.sigma_)
        if self.kernel == "linear":
            return A @ B.T
        return self.kernel_obj_(A, B)

    def _features(self, X):
        return self.rff_.transform(X)


def _check_fit_input(estimator, X, y):
    """scikit-learn's validate_data (sets n_features_in_), our NaN message, label checks."""
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import validate_data

    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None.")
    X, y = validate_data(estimator, X, y, accept_sparse=False, dtype=np.float64, ensure_all_finite=False)
    X = check_finite_array(X, "X", ndim=2)
    check_no_overflow(X, "X")
    check_classification_targets(y)
    codes, classes = encode_labels(y, X.shape[0])  # the single-class check (check_two_classes)
    return X, codes, classes


def multiclass_weights(codes, classes, sample_weight, class_weight):
    """The weights ``s_i`` of the samples' loss terms: ``sample_weight`` times the class weights.

    The class weights come from the unweighted labels, as in scikit-learn.  Validated here (the public boundary).

    Parameters
    ----------
    codes : ndarray of int, shape (L,)
        Each sample's class index in ``0..len(classes)-1``.
    classes : ndarray
        The class labels.
    sample_weight : array-like of shape (L,) or None
        Per-sample weights (>= 0).
    class_weight : None, "balanced" or dict
        ``{label: weight}``, or "balanced" for weights inversely proportional to the class frequencies.

    Returns
    -------
    ndarray of shape (L,) or None
        The weights, or None when both ``sample_weight`` and ``class_weight`` are None.

    Raises
    ------
    ValueError
        If ``sample_weight`` is invalid, or a class has no sample of positive weight.
    """
    if sample_weight is None and class_weight is None:
        return None
    from sklearn.utils.class_weight import compute_class_weight

    from .._validation import check_sample_weight

    weights = np.ones(codes.size) if sample_weight is None else check_sample_weight(sample_weight, codes.size)
    if class_weight is not None:
        weights = weights * compute_class_weight(class_weight, classes=classes, y=classes[codes])[codes]
    missing = np.setdiff1d(np.arange(classes.size), codes[weights > 0])
    if missing.size:
        raise ValueError(
            f"no sample of class {classes[missing[0]].item()!r} has positive weight: every class needs a sample with "
            "positive sample_weight (times class_weight)."
        )
    return weights


def _binary_scores(scores):
    """scikit-learn's convention: with two classes, one score per sample, positive for classes_[1]."""
    return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores


class WestonWatkinsSVC(_KernelMixin, ClassifierMixin, BaseEstimator):
    """Weston-Watkins multi-class SVM [ElD19, eq. 1.9] in MSVMpack's convention: margin 1, penalty ``C``.

    ``min 1/2 sum_k ||w_k||^2 + C sum_{i, k != y_i} max(0, 1 - f_{y_i}(x_i) + f_k(x_i))``, the model of
    MSVMpack (the package the thesis used; its default is ``C = 10``).  Eq. 1.9 writes margin 2 with
    penalty ``zeta``; the two are the same classifier for ``zeta = 2 C`` (scores and weights doubled,
    objective times 4, :func:`~rsvm_conic.solvers.multiclass.msvmpack_zeta`).

    Parameters
    ----------
    C : MSVMpack's penalty on the slacks (margin 1; > 0).
    kernel : ``"rbf"`` (Gaussian), ``"consolidation"`` (kappa^m, Def. 4.2) or ``"linear"``.
    sigma : length scale, or ``"thesis"`` for ``sqrt(5 n_features)``.
    m, n_subclasses : consolidation-kernel settings (Fourier terms, k-means subclasses per class).
    sigma_dir : length scale of the Gaussian envelope of the consolidation kernel's periodic
        terms (``None``: the same as ``sigma``; ``np.inf``: no envelope, purely periodic terms).
    exclusion_tol : the consolidation kernel's exclusion tolerance (>= 0, default 0.25): a direction
        ``c_1 - c_2`` is dropped when it moves a subclass centre within ``exclusion_tol`` times its length of a
        centre of another class (:func:`~rsvm_conic.kernels.consolidation.consolidation_directions`).
    n_components : ``None`` for the exact kernel, else the number of random features.
    solver : ``"auto"``, ``"cd"`` (exact: compiled dual coordinate descent with a Newton endgame, certified
        to a 1e-6 relative gap; the default except for two classes on an exact kernel), ``"alm"`` (exact
        numpy solver: method of multipliers with semismooth Newton-CG steps, 1e-6; ``cd``'s fallback),
        ``"libsvm"`` (binary), ``"dual"`` (CVXPY QP) or ``"primal"`` (numpy L-BFGS).
    primal_tol, primal_mu, primal_max_iter : the ``primal`` path is certified: after every smoothing
        stage a dual bound is built from its multipliers
        (:func:`~rsvm_conic.solvers.multiclass.ww_dual_bound`) and it stops once the
        relative gap is ``<= primal_tol`` (default 1e-3, as the stochastic solvers); ``primal_mu`` is
        the smallest smoothing tried, ``primal_max_iter`` the L-BFGS iterations per stage.  If the
        gap is not met, ``auto`` falls back to the dual QP with a ``SolverWarning`` (moderate
        sizes) or raises ``SolverError``.  The exact routes (``libsvm`` with a double-precision
        polish, ``dual``) certify a 1e-6 relative gap.
    random_state : seed for k-means and random features.
    class_weight : dict, "balanced" or None, default=None
        Weight of each class's hinge terms (penalty ``C * class_weight[y_i] * sample_weight[i]``), as in
        scikit-learn's ``SVC``; ``"balanced"``: ``L / (n_classes * count(y_i))``.  Weighted fits run the routes that
        take weights (``libsvm``, ``dual``); any other explicit ``solver`` raises a ValueError naming them.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    solver_ : str
        The route that returned the model (``"cd"``, ``"alm"``, ``"libsvm"``, ``"dual"`` or ``"primal"``).
    solver_stats_ : dict
        Route, status, primal and dual objective (MSVMpack's, margin 1), certified gap, ``fallback_from`` (the routes
        tried before, ``"route: why"``)
        (``solver_info_`` is the same dict).
    dual_coef_ : ndarray of shape (n_train, n_classes)
        Kernel expansion coefficients (exact kernel); ``X_fit_`` holds the training inputs.
    coef_ : ndarray of shape (n_features_map, n_classes)
        Weights on the random features (``n_components`` given).
    intercept_ : ndarray of shape (n_classes,)
        Class offsets.
    sigma_ : float
        The length scale used (``"thesis"`` resolved).
    kernel_obj_, rff_ : ConsolidationKernel or None, feature map or None
        The fitted consolidation kernel and random-feature map, when used.
    """

    def __init__(
        self,
        C=1.0,
        kernel="rbf",
        sigma="thesis",
        m=41,
        n_subclasses=5,
        n_components=None,
        solver="auto",
        primal_mu=1e-6,
        primal_max_iter=2000,
        primal_tol=1e-3,
        random_state=0,
        sigma_dir=None,
        exclusion_tol=0.25,
        class_weight=None,
    ):
        self.C = C
        self.class_weight = class_weight
        self.sigma_dir = sigma_dir
        self.exclusion_tol = exclusion_tol
        self.primal_mu = primal_mu
        self.primal_max_iter = primal_max_iter
        self.primal_tol = primal_tol
        self.kernel = kernel
        self.sigma = sigma
        self.m = m
        self.n_subclasses = n_subclasses
        self.n_components = n_components
        self.solver = solver
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        """Fit the Weston-Watkins machine.

        Parameters
        ----------
        X : array-like of shape (L, n)
            Training samples.
        y : array-like of shape (L,)
            Class labels (two or more classes).
        sample_weight : array-like of shape (L,) or None, default=None
            Nonnegative weight ``s_i`` of each sample's hinge terms (penalty ``C s_i``, times the class weight; the
            dual box ``alpha_ik <= 2 C s_i``): an integer weight is the same as repeating the sample, 0 drops it.
            Weighted fits run the routes that take weights, ``libsvm`` (two classes, exact kernel) and ``dual``.
            ``kernel="consolidation"`` fits its subclasses (k-means) on the samples of positive weight, unweighted:
            there the equivalence with repeated samples holds for the machine given the kernel only.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, codes, classes = _check_fit_input(self, X, y)
        zeta = msvmpack_zeta(check_positive(self.C, "C"))  # eq. 1.9 (margin 2) solves MSVMpack's C at zeta = 2 C
        check_choice(self.solver, "solver", ("auto", "cd", "alm", "libsvm", "dual", "primal"))
        weights = multiclass_weights(codes, classes, sample_weight, self.class_weight)
        if weights is not None:
            if self.solver not in ("auto",) + WestonWatkinsProblem.WEIGHTED:
                raise ValueError(
                    f"solver={self.solver!r} does not take sample weights (sample_weight or class_weight); the routes "
                    f"that do: {', '.join(WestonWatkinsProblem.WEIGHTED)} (or 'auto')."
                )
            keep = weights > 0
            if not np.all(keep):  # a sample of weight 0 takes no part in the fit
                X, codes, weights = X[keep], codes[keep], weights[keep]
        primal_tol = check_positive(self.primal_tol, "primal_tol")
        self.classes_ = classes
        nC = classes.size
        self._setup_kernel(X, codes)
        primal_kw = dict(
            mu_min=check_positive(self.primal_mu, "primal_mu"), maxiter=int(self.primal_max_iter), tol=primal_tol
        )
        if self.rff_ is not None:
            if self.solver == "libsvm":
                raise ValueError("solver='libsvm' needs the exact kernel (n_components=None).")
            machine = WestonWatkinsProblem(
                codes,
                nC,
                zeta,
                Phi=self._features(X),
                primal_options=primal_kw,
                sample_weight=weights,
                solver=self.solver,
            )
        else:
            if self.solver == "libsvm" and nC != 2:
                raise ValueError("solver='libsvm' is exact only for two classes; use 'dual' or 'primal'.")
            machine = WestonWatkinsProblem(
                codes, nC, zeta, K=self._gram(X, X), primal_options=primal_kw, sample_weight=weights, solver=self.solver
            )
        sol = machine.solve("auto")
        coef, b = 0.5 * sol["coef"], 0.5 * sol["b"]  # eq. 1.9's (W, b) = 2 x MSVMpack's
        self.solver_ = sol.backend
        self.solver_info_ = self.solver_stats_ = solver_stats(sol, objective_scale=0.25)  # eq. 1.9's = 4 x MSVMpack's
        if self.rff_ is not None:
            self.coef_, self.intercept_ = coef, b
            return self
        self.X_fit_ = X
        self.dual_coef_ = coef
        self.intercept_ = b
        return self

    def class_scores(self, X):
        """Scores f_k(x) of every class, shape (n_samples, n_classes)."""
        check_is_fitted(self, "intercept_")
        X = validate_estimator_input(self, X, reset=False)
        if self.rff_ is not None:
            return self._features(X) @ self.coef_ + self.intercept_
        return self._gram(X, self.X_fit_) @ self.dual_coef_ + self.intercept_

    def decision_function(self, X):
        """``class_scores`` for 3+ classes; for two, ``f_1 - f_0`` (scikit-learn's convention)."""
        return _binary_scores(self.class_scores(X))

    def predict(self, X):
        scores = self.class_scores(X)  # checks fitted first
        return self.classes_[np.argmax(scores, axis=1)]


class HyperbolicSVC(_KernelMixin, ClassifierMixin, BaseEstimator):
    """The hyperbolic kernel machine [ElD19, chapter 3], trained by the CCP of
    :mod:`rsvm_conic.formulations.hyperbolic`.

    Parameters
    ----------
    lam : weight of ``||R||^2`` (lambda of Problem 1).
    gamma : margin parameter of the truncated hinge in (0, 1], or ``"auto"``: the median of
        ``|rho|`` at the initial point (class means, equal radii), clipped to [1e-3, 1]
        (:func:`~rsvm_conic.formulations.hyperbolic.auto_gamma`).
    kernel, sigma, m, n_subclasses, sigma_dir, n_components : as in :class:`WestonWatkinsSVC`.
    max_rank : with the exact kernel the machine works on the top ``max_rank`` eigen-features of
        the Gram matrix (Nystrom extension for new points); the SOCP has ``n C`` cones of that
        dimension, so this bounds its size.  ``None`` keeps every eigenvalue above ``1e-10 max``.
    solver : ``"ipm"`` (the CCP, each step's SOCP by the structured interior point
        :mod:`rsvm_conic.solvers.ipm.hyperbolic` to the accuracy the CCP needs, its certified gap recorded, every
        start screened at ten times ``tol`` (:mod:`rsvm_conic.formulations.hyperbolic`); it reaches ``ccp``'s
        objective on the pinned test cases), ``"ccp"`` (the same CCP, each step's SOCP by CVXPY + Clarabel at
        its default accuracy; on heavily class-weighted data its steps stall at ``fixed_point`` well above a converged
        CCP's objective, ``rsvm-conic bench hyperbolic-class-weight``), ``"fista"`` (the same CCP,
        each step by a compiled accelerated projected gradient warm-started from the previous step, at most 300
        gradient steps, its certified gap recorded: :mod:`rsvm_conic.solvers.hyperbolic_step`;
        ``rsvm-conic bench hyperbolic`` measures it against ``ipm``), ``"anchors"`` (the centres restricted to the
        hulls of ``n_anchors`` k-means centroids per class; each CCP step an SOCP whose cones have the
        anchors' dimension, solved by the same structured interior point as ``"ipm"``, inexact steps and screened
        starts included), ``"auto"`` (``ipm`` for
        ``n <= 1000``, else ``anchors``: the machine's ``auto_routes``).
        Both start from the class means with equal radii (the nearest-class-mean rule) and never end
        with a larger objective.  ``lam``, ``gamma`` and ``sigma`` are plain parameters:
        ``GridSearchCV`` tunes them (the thesis's ``sigma = sqrt(5 d)`` suits the WW machine, not
        necessarily this one).
    n_starts, max_iter, n_anchors : CCP starts, CCP iterations at most per start, anchors per class (``anchors``).
    step_accuracy : {"ccp", "exact"}, default="ccp"
        With ``"ipm"`` and ``"anchors"``: ``"ccp"`` solves each step to the accuracy the CCP needs (an absolute gap of
        a tenth of the previous step's decrease; with ``"anchors"`` each step's interior point warm-started from the
        previous step's point) and screens the starts at ten times ``tol``; ``"exact"`` solves every step to the
        interior point's tight tolerance from its own start and runs every start to ``tol`` (then integer sample
        weights give the repeated rows' fit to 1e-8; inexact steps follow a path that depends on the rows' repetition).
    boost : float or None, default=None
        The first extrapolation ``s`` of the line search that follows each CCP step ([AFV18];
        :mod:`rsvm_conic.formulations.hyperbolic`), which never increases the objective; 0: the plain CCP; None: the
        route's default (8 for ``ccp`` and ``ipm``; 0 for ``fista``, whose steps are inexact, and for ``anchors``, see
        :mod:`rsvm_conic.formulations.hyperbolic`).
    tol : float, default=1e-4
        A CCP step lowering the objective by at most ``tol (1 + |objective|)`` (with ``"ipm"``, its majoriser drop plus
        certified gap too) ends the start (``"converged"``): the point then minimises its own majoriser to within that
        amount.  Measured with ``solver="ipm"`` on 300 digits
        (``rsvm-conic bench hyperbolic``): the test accuracy stays within 0.784-0.790 from the 7th step on, while the
        objective creeps down by about ``1e-4`` of itself per step until the 26th and needs about 50 steps to reach
        ``1e-6``.
    random_state : seed for k-means, random features and the CCP starts.
    class_weight : dict, "balanced" or None, default=None
        Weight of each class's loss terms (``class_weight[y_i] * sample_weight[i]`` multiplies
        ``phi_{2,gamma}(rho_i)``), as in scikit-learn's ``SVC``; ``"balanced"``: ``L / (n_classes * count(y_i))``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    centres_ : ndarray of shape (n_classes, n_feature_dims)
        Centres O_k in the feature space.
    radii_ : ndarray of shape (n_classes,)
        Radii R_k.
    gamma_ : float
        The margin parameter used (``"auto"`` resolved).
    objective_ : float
        Objective of Problem 1 at the returned machine (the CCP is a local method: no optimality certificate).
    histories_ : list of lists
        Objective per CCP iteration, one list per start; ``n_iter_`` is the longest.
    stops_ : list of str
        Why each start stopped: ``"converged"`` (decrease below ``tol``), ``"fixed_point"`` (the majoriser's minimiser
        does not lower the objective: a fixed point of the CCP to the SOCP solver's accuracy), ``"stationary"``
        (``"fista"``: the step certified that no point lowers the majoriser by more than ``tol``), ``"screened"``
        (``"ipm"``, ``"anchors"``: converged to ten times ``tol``, then left above the best start,
        :func:`~rsvm_conic.solvers.ccp.screened_runs`), ``"max_iter"``, or ``"solver_failed: ..."``.
    solver_ : str
        The route used (``"ccp"``, ``"ipm"``, ``"fista"`` or ``"anchors"``).
    solver_stats_ : dict
        The record of the fit (:func:`~rsvm_conic.certify.contract.solver_stats`): ``route``, ``status``
        (``local_optimum`` when the best start converged or stopped at a fixed point, else its stopping reason),
        ``time``, every start's stopping reason (``stops``), objective history and boosted steps (``boosts``: the
        line search's ``s`` per CCP step, 0 where it found none); with ``"ipm"`` and ``"fista"`` also each convex step's
        certified gap (``step_gaps``, per start, in units of the objective) and iterations (``step_iterations``).
    sigma_ : float
        The length scale used.
    nystrom_ : ndarray or None
        Nystrom extension of the top eigen-features (exact kernel).
    kernel_obj_, rff_ : ConsolidationKernel or None, feature map or None
        The fitted consolidation kernel and random-feature map, when used.

    ``predict`` returns the dummy category ``"*"`` (object array) for points with tied top scores
    (Def. 3.2); ``decision_rule_codes`` gives the codes with ``-1`` for the dummy.
    """

    def __init__(
        self,
        lam=1e-2,
        gamma="auto",
        kernel="rbf",
        sigma="thesis",
        m=41,
        n_subclasses=5,
        n_components=None,
        max_rank=30,
        solver="auto",
        n_starts=3,
        max_iter=30,
        tol=1e-4,
        boost=None,
        n_anchors=20,
        step_accuracy="ccp",
        random_state=0,
        sigma_dir=None,
        class_weight=None,
    ):
        self.lam = lam
        self.class_weight = class_weight
        self.sigma_dir = sigma_dir
        self.gamma = gamma
        self.kernel = kernel
        self.sigma = sigma
        self.m = m
        self.n_subclasses = n_subclasses
        self.n_components = n_components
        self.max_rank = max_rank
        self.solver = solver
        self.n_starts = n_starts
        self.max_iter = max_iter
        self.tol = tol
        self.boost = boost
        self.n_anchors = n_anchors
        self.step_accuracy = step_accuracy
        self.random_state = random_state

    def _train_features(self, X, weights=None):
        """The training features: random features, or the top eigen-features of the Gram matrix ``K``.  With
        weights ``s`` (positive), those of ``S^(1/2) K S^(1/2)``: ``phi(x) = k(x, X) S^(1/2) V / sqrt(l)`` for its
        eigenpairs ``(l, V)``, which for integer weights are the repeated rows' eigen-features (the repeated Gram
        matrix ``E K E'``, ``E' E = S``, has the same nonzero eigenvalues, eigenvectors ``E S^(-1/2) V``)."""
        if self.rff_ is not None:
            return self._features(X)
        K = self._gram(X, X)
        root = None if weights is None else np.sqrt(weights)
        _, U, lam = gram_factor(K if root is None else root[:, None] * K * root[None, :])
        if self.max_rank is not None:
            r = int(self.max_rank)
            if r < 1:
                raise ValueError(f"max_rank must be a positive integer or None; got {self.max_rank!r}.")
            U, lam = U[:, -r:], lam[-r:]
        self.X_fit_ = X
        if root is None:
            self.nystrom_ = U / np.sqrt(lam)  # phi(x) = k(x, X) U / sqrt(lam)
            return U * np.sqrt(lam)
        self.nystrom_ = root[:, None] * U / np.sqrt(lam)
        return K @ self.nystrom_  # = S^(-1/2) V sqrt(l), without dividing by small weights

    def _map(self, X):
        if self.rff_ is not None:
            return self._features(X)
        return self._gram(X, self.X_fit_) @ self.nystrom_

    def fit(self, X, y, sample_weight=None):
        """Fit the hyperbolic kernel machine by the CCP.

        Parameters
        ----------
        X : array-like of shape (L, n)
            Training samples.
        y : array-like of shape (L,)
            Class labels (two or more classes).
        sample_weight : array-like of shape (L,) or None, default=None
            Nonnegative weight ``s_i`` of each sample's loss term ``phi_{2,gamma}(rho_i)`` (times the class weight),
            used by every CCP step and the objective; also by the class means of start 0 and of ``gamma="auto"``,
            the eigen-features of the exact kernel and the k-means anchors.  From start 0 an integer weight is the
            same as repeating the sample (the random starts ``n_starts > 1`` draw over the distinct samples), and 0
            drops it.  ``kernel="consolidation"`` fits its subclasses (k-means) on the samples of positive weight,
            unweighted.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, codes, classes = _check_fit_input(self, X, y)
        lam = check_positive(self.lam, "lam")
        check_choice(self.solver, "solver", ("auto", "ipm", "fista", "ccp", "anchors"))
        weights = multiclass_weights(codes, classes, sample_weight, self.class_weight)
        if weights is not None:
            keep = weights > 0
            if not np.all(keep):  # a sample of weight 0 takes no part in the fit
                X, codes, weights = X[keep], codes[keep], weights[keep]
        self.classes_ = classes
        self._setup_kernel(X, codes)
        Phi = self._train_features(X, weights)
        gamma = self.gamma if isinstance(self.gamma, str) else float(self.gamma)  # "auto": resolved by the machine
        machine = HyperbolicProblem(Phi, codes, classes.size, gamma=gamma, lam=lam, sample_weight=weights)
        self.gamma_ = machine.gamma
        tol = check_positive(self.tol, "tol")
        common = dict(n_starts=self.n_starts, max_iter=self.max_iter, tol=tol, random_state=self.random_state)
        if self.boost is not None:
            common["boost"] = check_positive(self.boost, "boost", strict=False)
        check_choice(self.step_accuracy, "step_accuracy", ("ccp", "exact"))
        exact = dict(eta=0.0, screen=None, warm=False) if self.step_accuracy == "exact" else {}
        options = {
            "ipm": dict(common, **exact),
            "fista": common,
            "ccp": common,
            "anchors": dict(common, n_anchors=self.n_anchors, **exact),
        }
        solver = machine.auto_routes()[0] if self.solver == "auto" else self.solver
        sol = machine.solve(solver, **options[solver])
        self.solver_ = solver
        self.centres_ = sol["O"]
        self.radii_ = sol["R"]
        self.objective_ = sol.objective
        self.histories_ = sol.info["histories"]
        self.stops_ = sol.info["stops"]
        self.n_iter_ = max(len(h) for h in self.histories_)  # CCP iterations of the longest start
        self.solver_stats_ = solver_stats(sol)
        return self

    def class_scores(self, X):
        """h_k(x) = R_k - ||O_k - phi(x)|| for every class, shape (n_samples, n_classes)."""
        check_is_fitted(self, "radii_")
        X = validate_estimator_input(self, X, reset=False)
        return self.radii_[None, :] - centre_distances(self.centres_, self._map(X))

    def decision_function(self, X):
        """``class_scores`` for 3+ classes; for two, ``h_1 - h_0`` (scikit-learn's convention)."""
        return _binary_scores(self.class_scores(X))

    def decision_rule_codes(self, X):
        return decision_rule(self.class_scores(X))

    def predict(self, X):
        codes = self.decision_rule_codes(X)
        if np.all(codes != DUMMY):
            return self.classes_[codes]
        out = self.classes_[np.maximum(codes, 0)].astype(object)
        out[codes == DUMMY] = "*"
        return out
