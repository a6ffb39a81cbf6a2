"""Stochastic solvers for the large-scale robust SVM [CJ20, eq. 5-6], stopped by a certified gap.

Both minimise ``F(w, b) = lam/2 ||w||^2 + (1/L) sum_i l_i(w, b)``, ``lam = 1 / (C L)`` (``P / (C L)`` for the
conic models' objective ``P``): :func:`stochastic_subgradient` (minibatch subgradient steps
``eta_t = eta_0 / (1 + eta_0 lam t)``, polynomial-decay averaging) and :func:`stochastic_proximal` (the split of
[CJ20, eq. 5]: a stochastic step on the robust hinge, then the proximal step on ``lam/2 ||w||^2``).  As in skglm,
the data fit (:mod:`.datafits`, :mod:`.feature_datafits`) holds only its parameters and the penalty is
:class:`~.penalties.L2Squared`; each declares the methods it calls (:data:`DATAFIT_REQUIRED`,
:data:`PENALTY_REQUIRED`).  A run stops when the best primal value and the best feasible dual value
(:func:`rsvm_conic.certify.hinge.dual_bound`) meet ``tol``: status ``"optimal"`` then means the returned
``(w, b)`` is within ``tol`` of the optimum.  Data layout, step-size calibration and the certificate's schedule
are described in the user guide (``docs/guide/robust.md``, "The stochastic routes").
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from ..certify.contract import SolveInfo, certify, relative_gap
from .datafits import RobustHinge
from .penalties import L2Squared

#: the data-fit methods the stochastic solvers call; ``restrict`` too when ``eta0="auto"``, and ``dual_bound``
#: when present (a data fit without it is never certified)
DATAFIT_REQUIRED = ("initialize", "value", "subgradient")
#: the penalty methods each route calls (and both read ``lam``)
PENALTY_REQUIRED = {"sgd": ("value", "gradient"), "prox": ("value", "prox")}


@dataclass
class StochasticResult:
    """What the stochastic solvers return.

    Attributes
    ----------
    w : ndarray of shape (n,)
        The best evaluated iterate's weights.
    b : float
        Its bias.
    objective : float
        ``F(w, b) = P(w, b) / (C L)``, the averaged objective.
    epochs : int
        Epochs run.
    eta0 : float
        The initial step used.
    time : float
        Wall-clock seconds.
    info : SolveInfo
        Route ``"sgd"`` / ``"prox"``, status, primal ``P``, dual ``D`` (P's scale), ``iterations`` = epochs.
    history : list
        ``(epoch, F, seconds since start)`` per evaluation.
    gap_history : list
        ``(epoch, P_best, D_best, relative gap, seconds)`` per certificate.
    """

    w: np.ndarray
    b: float
    objective: float  # F(w, b) = P(w, b) / (C L), the averaged objective
    epochs: int
    eta0: float
    time: float
    info: SolveInfo  # route "sgd"/"prox", status, primal P, dual D (P's scale), tol, iterations = epochs
    history: list = field(default_factory=list)  # (epoch, F, seconds since start) triples
    gap_history: list = field(default_factory=list)  # (epoch, P_best, D_best, relative gap, seconds)

    @property
    def primal(self) -> float:
        """P(w, b) = 1/2 ||w||^2 + C sum_i l_i(w, b) (the conic models' scale)."""
        return self.info.primal

    @property
    def dual(self) -> float:
        """The best feasible dual value found: a lower bound on min P (-inf without a certificate)."""
        return self.info.dual

    @property
    def gap(self) -> float:
        """Certified relative gap ``relative_gap(primal, dual)``."""
        return self.info.gap_rel

    @property
    def status(self) -> str:
        return self.info.status

    @property
    def converged(self) -> bool:
        """True iff the certified gap met ``tol`` (status ``"optimal"``)."""
        return self.info.status == "optimal"


def _check_interface(datafit, penalty, route: str, eta0) -> None:
    """Raise a TypeError naming each method the solver needs that ``datafit`` or ``penalty`` lacks."""
    need = DATAFIT_REQUIRED + (("restrict",) if eta0 == "auto" else ())
    missing = [f"data fit {type(datafit).__name__}.{m}()" for m in need if not callable(getattr(datafit, m, None))]
    missing += [
        f"penalty {type(penalty).__name__}.{m}()"
        for m in PENALTY_REQUIRED[route]
        if not callable(getattr(penalty, m, None))
    ]
    if not hasattr(penalty, "lam"):
        missing.append(f"penalty {type(penalty).__name__}.lam")
    if missing:
        raise TypeError(f"the stochastic solver ({route}) needs " + ", ".join(missing) + "; they are missing.")


def _objective(X, y, datafit: RobustHinge, penalty: L2Squared, w, b) -> float:
    return penalty.value(w) + datafit.value(y, w, X @ w + b) / X.shape[0]


class _Activity:
    """Weighted running fraction of minibatch visits in which each sample's loss was positive.

    Visit k weighs ``(k + 3)^3``, as the polynomial-decay average weighs iterate k, so ``C * fraction``
    is the dual estimate that goes with the averaged iterate (the ergodic multipliers of the
    subgradient method: a sample on the margin is active a fraction of the time).  The sums are kept in the
    order of the shuffled copy (:meth:`reorder`), so that a step adds to a slice: O(batch) per step and no
    scattered writes into arrays of size L.
    """

    def __init__(self, L):
        self.hits = np.zeros(L)
        self.visits = np.zeros(L)
        self.perm = None  # entry j of hits / visits is sample perm[j] (None: sample j)
        self.k = 0
        self.scale = 1.0

    def reorder(self, perm):
        """Keep the sums in the order ``perm`` from now on (row j of the shuffled copy is sample ``perm[j]``)."""
        hits, visits = self._in_sample_order()
        self.hits, self.visits, self.perm = hits[perm], visits[perm], perm

    def add(self, rows, active):
        """One visit of the rows ``rows`` of the current order (a slice, or distinct indices), ``active`` their
        loss mask."""
        self.k += 1
        om = (self.k + 3.0) ** 3 * self.scale
        if om > 1e200:  # rescale everything: the sums stay finite in arbitrarily long runs
            self.hits *= 1e-200
            self.visits *= 1e-200
            self.scale *= 1e-200
            om *= 1e-200
        if isinstance(rows, slice):  # views: added in place, no write-back
            hits, visits = self.hits[rows], self.visits[rows]
            hits += om * active
            visits += om
        else:
            self.hits[rows] += om * active
            self.visits[rows] += om

    def _in_sample_order(self):
        if self.perm is None:
            return self.hits, self.visits
        hits, visits = np.empty_like(self.hits), np.empty_like(self.visits)
        hits[self.perm], visits[self.perm] = self.hits, self.visits
        return hits, visits

    def fraction(self):
        hits, visits = self._in_sample_order()
        return np.divide(hits, visits, out=np.zeros_like(hits), where=visits > 0)


def _blocks(L: int, batch_size: int) -> int:
    return -(-L // batch_size)


class _Gathered:
    """The minibatch steps of a data fit without ``blocks`` on its samples ``perm``, in that order: a step on the
    samples ``s:e`` of this order calls ``datafit.subgradient`` with the indices ``perm[s:e]``."""

    def __init__(self, datafit, perm):
        self.datafit, self.perm = datafit, perm

    def subgradient(self, X, y, w, Xw, idx):
        return self.datafit.subgradient(X, y, w, Xw, self.perm[idx])


def _in_order(datafit, perm):
    """The minibatch steps of ``datafit`` on its samples ``perm``, in that order: ``datafit.blocks(perm)`` (its
    per-sample parameters gathered once, a step reads views), else :class:`_Gathered`.  Either has
    ``subgradient(X, y, w, Xw, slice(s, e))`` for the samples ``perm[s:e]``."""
    blocks = getattr(datafit, "blocks", None)
    return blocks(perm) if callable(blocks) else _Gathered(datafit, perm)


def _pass(Xp, yp, steps, penalty, prox, w, b, eta0, t, order, batch_size, avg=None, activity=None):
    """One epoch: a minibatch step on each contiguous block ``Xp[j B:(j + 1) B]`` of the once-shuffled copy, in the
    block order ``order``.  ``steps`` is the data fit in the copy's order (:func:`_in_order`: its sample ``s`` is
    row ``s`` of ``Xp``), and so is ``activity`` (:meth:`_Activity.reorder`).  Returns (w, b, t, avg).

    No row is copied (each block is a view, and so are the data fit's per-sample parameters of the block); per
    step: one ``Xb @ w``, one ``v @ Xb``, the robust term's own products and O(B + n) vector work."""
    lam = penalty.lam
    L = Xp.shape[0]
    for j in order.tolist():
        s = j * batch_size
        e = min(s + batch_size, L)
        Xb = Xp[s:e]
        eta = eta0 / (1.0 + eta0 * lam * t)
        rows = slice(s, e)
        Xw = Xb @ w
        Xw += b
        gw, gb, active = steps.subgradient(Xb, yp[s:e], w, Xw, rows)
        if activity is not None:
            activity.add(rows, active)
        if prox:
            w = penalty.prox(w - eta * gw, eta)
        else:
            w = w - eta * (gw + penalty.gradient(w))
        b = b - eta * gb
        t += 1
        if avg is not None:  # polynomial-decay averaging [SZ13], eta = 3
            avg[2] += 1
            r = 4.0 / (avg[2] + 3.0)
            avg[0] += r * (w - avg[0])
            avg[1] += r * (b - avg[1])
    return w, b, t, avg


def calibrate_eta0(X, y, datafit, penalty, prox, batch_size, rng, n_sub=2000) -> float:
    """Pick eta_0 in 10^-3..10^3 by one pass on a subsample -- its rows of (X, y) and ``datafit.restrict(sub)``,
    the given data fit's own loss (Bottou's heuristic): the step with the lowest objective after the pass.

    Parameters
    ----------
    X, y : ndarray
        The data.
    datafit : RobustHinge
        The data fit.
    penalty : L2Squared
        The penalty.
    prox : bool
        The proximal step (else subgradient).
    batch_size : int
        The minibatch size.
    rng : numpy.random.Generator
        Draws the subsample.
    n_sub : int, default 2000
        The subsample's size (at least 16 minibatches).

    Returns
    -------
    float
    """
    L, n = X.shape
    sub = rng.choice(L, size=min(max(n_sub, 16 * batch_size), L), replace=False)
    Xs, ys = X[sub], y[sub]
    sub_fit = datafit.restrict(sub).initialize(Xs, ys)
    best, best_eta = np.inf, 1.0
    steps = _in_order(sub_fit, np.arange(sub.shape[0]))
    for eta0 in 10.0 ** np.arange(-3, 4):
        w, b, _, _ = _pass(
            Xs,
            ys,
            steps,
            penalty,
            prox,
            np.zeros(n),
            0.0,
            eta0,
            0,
            rng.permutation(_blocks(sub.shape[0], batch_size)),
            batch_size,
        )
        val = _objective(Xs, ys, sub_fit, penalty, w, b)
        if np.isfinite(val) and val < best:
            best, best_eta = val, eta0
    return float(best_eta)


#: ``batch_size="auto"`` keeps an epoch to at most this many minibatch steps (each step costs ~20-50 us of
#: Python/numpy overhead, so 1024 of them stay below one ``X @ w`` pass at L = 10^6, n = 50)
MAX_STEPS = 1024

#: ``shuffle="auto"``: a fresh shuffled copy each epoch up to this many entries of X (one gather pass an epoch:
#: cheap against the per-step overhead there), above it one shuffle, the blocks visited in a fresh order
RESHUFFLE_MAX = 2**22

#: margin band of the certificate's band candidate (:func:`rsvm_conic.certify.hinge.dual_bound`'s ``band``)
BAND = 0.1

#: nominal hinge: a refinement round that gains less than this fraction of the gap left ends the refinement
#: (the band candidate is already near the restricted optimum; the rounds cost two passes each)
MIN_GAIN_NOMINAL = 0.05

#: refinement rounds of the dual point (:func:`rsvm_conic.certify.hinge.dual_bound`, step 5) per epoch since the last
#: certificate: as many as cost about one epoch by :func:`_rounds_per_epoch`, at least ``MIN_REFINE`` and at
#: most ``MAX_REFINE`` per certificate; the last certificate of a run gets ``FINAL_REFINE`` times as many
MIN_REFINE = 5
MAX_REFINE = 100
FINAL_REFINE = 10


def _rounds_per_epoch(X, datafit, batch_size) -> float:
    """Refinement rounds that cost about one epoch, by a fixed (so: deterministic) cost model: a minibatch
    step ~50 us of Python/numpy overhead plus its flops, a round ~150 us plus two passes over the data and four
    applications of the factors."""
    L, n = X.shape
    ops = datafit.factor_ops() if hasattr(datafit, "factor_ops") else None
    fac = 0 if ops is None else ops.entries
    k = 1 if ops is None else max(ops.n_groups, 1)
    steps = math.ceil(L / batch_size)
    # a step differentiates the robust term once per distinct group in its batch
    epoch = steps * (50e-6 + min(batch_size, k) * (fac / k) * 0.5e-9) + 3 * L * n * 0.4e-9
    round_ = 150e-6 + 2 * L * n * 0.4e-9 + 4 * fac * 0.5e-9
    return epoch / round_


def _next_taus(tau):
    """Margin tolerances for the next certificate: the last winner and its neighbours by a factor 10
    (iterates sharpen as the run goes on); the first time 0.1, 0.01 and 0.001."""
    if not np.isfinite(tau):
        return (1e-1, 1e-2, 1e-3)
    return tuple(t for t in (10.0 * tau, tau, 0.1 * tau) if 1e-9 <= t <= 0.1 + 1e-12) or (1e-1,)


def auto_batch_size(L: int) -> int:
    """``batch_size="auto"``: 64, or more where an epoch would take more than :data:`MAX_STEPS` steps.

    Parameters
    ----------
    L : int
        The number of samples.

    Returns
    -------
    int
    """
    return max(64, -(-L // MAX_STEPS))


def _solve(
    X,
    y,
    datafit: RobustHinge,
    penalty: L2Squared,
    prox: bool,
    *,
    batch_size="auto",
    max_epochs=200,
    tol=1e-3,
    eval_every=1,
    certify_every="auto",
    patience=None,
    eta0="auto",
    average_from=1,
    seed=0,
    w0=None,
    b0=0.0,
    progress=False,
    time_limit=None,
    certificate_options=None,
    shuffle="auto",
) -> StochasticResult:
    if batch_size == "auto":
        batch_size = auto_batch_size(X.shape[0])
    if shuffle not in ("auto", "once", "epoch"):
        raise ValueError(f"shuffle must be 'auto', 'once' or 'epoch'; got {shuffle!r}.")
    if int(batch_size) != batch_size or batch_size < 1 or max_epochs < 1 or eval_every < 1:
        raise ValueError("batch_size, max_epochs and eval_every must be positive integers.")
    if not tol >= 0:
        raise ValueError("tol must be a nonnegative relative gap.")
    route = "prox" if prox else "sgd"
    _check_interface(datafit, penalty, route, eta0)
    datafit.initialize(X, y)
    rng = np.random.default_rng(seed)
    lam = penalty.lam
    L, n = X.shape
    C = 1.0 / (lam * L)
    auto_certify = certify_every == "auto"
    # "auto": at most one certificate per 64 minibatch steps (docs/guide/robust.md, "The stochastic routes")
    if auto_certify:
        certify_every = max(1, math.ceil(64 / (math.ceil(L / batch_size) * eval_every)))
    elif int(certify_every) < 1:
        raise ValueError("certify_every must be a positive integer or 'auto'.")
    certify_every = int(certify_every)
    bound = getattr(datafit, "dual_bound", None)
    options = dict(certificate_options or {})
    adaptive_taus = "taus" not in options
    fixed_refine = options.pop("refine", None)
    if bound is not None and isinstance(datafit, RobustHinge):  # the band candidate (nominal hinge; see dual_bound)
        options.setdefault("band", BAND)
        if datafit.factor_ops() is None:  # nominal: the band point is near the best; stop refining when it stalls
            options.setdefault("min_gain", MIN_GAIN_NOMINAL)
    per_epoch = max(MIN_REFINE, _rounds_per_epoch(X, datafit, batch_size)) if bound is not None else 0
    last_cert_epoch = 0
    t0 = time.perf_counter()
    if eta0 == "auto":
        eta0 = calibrate_eta0(X, y, datafit, penalty, prox, batch_size, rng)
    batch_size = int(batch_size)
    # shuffled into contiguous blocks: "once", each epoch visits the blocks of this copy in a fresh random order
    # (no copy per epoch); "epoch", a fresh permutation copied into the same buffer each epoch (one gather pass:
    # small data, where the few fixed blocks of "once" would slow convergence)
    if shuffle == "auto":
        shuffle = "epoch" if L * n <= RESHUFFLE_MAX else "once"
    n_blocks = _blocks(L, batch_size)
    activity = _Activity(L) if bound is not None else None  # kept in the shuffled copy's order
    if shuffle == "once":
        perm = rng.permutation(L)
        Xp, yp = np.ascontiguousarray(X[perm]), y[perm]
        steps = _in_order(datafit, perm)
        if activity is not None:
            activity.reorder(perm)
    else:
        Xp = np.empty((L, n), dtype=np.result_type(X.dtype, np.float64))
    w = np.zeros(n) if w0 is None else np.array(w0, dtype=float)
    b = float(b0)
    t = 0
    avg = None
    history, gap_history = [], []
    best = (np.inf, w.copy(), b)  # (P, w, b)
    dual, warm, tau = -np.inf, None, math.nan
    n_eval, n_cert = 0, 0
    cert_gaps = []  # the certified gap after each certificate (for patience)
    status = "max_iter"
    cert_time = 0.0
    bar = tqdm(total=max_epochs, desc=route, disable=not progress, leave=False)
    epoch = 0
    for epoch in range(1, max_epochs + 1):
        if avg is None and epoch > average_from:
            avg = [w.copy(), b, 0]
        if shuffle == "once":
            order = rng.permutation(n_blocks)
        else:
            perm = rng.permutation(L)
            np.take(X, perm, axis=0, out=Xp)
            yp, order = y[perm], np.arange(n_blocks)
            steps = _in_order(datafit, perm)
            if activity is not None:
                activity.reorder(perm)
        w, b, t, avg = _pass(Xp, yp, steps, penalty, prox, w, b, eta0, t, order, batch_size, avg, activity)
        bar.update(1)
        if epoch % eval_every == 0 or epoch == max_epochs:
            wc, bc = (avg[0], avg[1]) if avg is not None else (w, b)
            n_eval += 1
            last = epoch == max_epochs or (time_limit is not None and time.perf_counter() - t0 > time_limit)
            # "auto" certifies no iterate before the averaging starts (a raw stochastic iterate certifies poorly)
            certified_now = (
                bound is not None
                and (n_eval % certify_every == 0 or last)
                and (avg is not None or last or not auto_certify)
            )
            if certified_now:
                tc = time.perf_counter()
                if adaptive_taus:
                    options["taus"] = _next_taus(tau)
                rounds = fixed_refine
                if rounds is None:
                    rounds = min(MAX_REFINE, math.ceil(per_epoch * (epoch - last_cert_epoch)))
                if last:
                    rounds *= FINAL_REFINE
                last_cert_epoch = epoch
                cert = bound(
                    X, y, wc, bc, C, warm=warm, alpha_hint=C * activity.fraction(), refine=int(rounds), **options
                )
                cert_time += time.perf_counter() - tc
                n_cert += 1
                P, tau = cert.primal, cert.tau
                if cert.dual > dual:  # any feasible dual value bounds min P: keep the best
                    dual, warm = cert.dual, (cert.alpha, cert.Z)
            else:
                P = 0.5 * float(wc @ wc) + C * datafit.value(y, wc, X @ wc + bc)
            if P < best[0]:
                best = (P, wc.copy(), float(bc))
            gap = relative_gap(best[0], dual)
            now = time.perf_counter() - t0
            history.append((epoch, P * lam, now))
            gap_history.append((epoch, best[0], dual, gap, now))
            if gap <= tol:
                status = "optimal"
                break
            if certified_now:
                cert_gaps.append(gap)
                if patience is not None and len(cert_gaps) > patience and gap > 0.99 * cert_gaps[-1 - patience]:
                    status = "uncertified"  # the gap shrank by less than 1 % over `patience` certificates
                    break
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                break
    bar.close()
    elapsed = time.perf_counter() - t0
    stop = {"optimal": "gap", "uncertified": "stalled"}.get(status, "max_epochs/time_limit")
    info = certify(
        route,
        best[0],
        dual,
        tol,
        failed_status=status,
        iterations=epoch,
        time=elapsed,
        detail={
            "eta0": float(eta0),
            "stop": stop,
            "certificates": n_cert,
            "certificate_time": cert_time,
            "certificate": "dual_bound" if bound is not None else "none (data fit has no dual_bound)",
        },
    )
    return StochasticResult(
        w=best[1],
        b=best[2],
        objective=best[0] * lam,
        epochs=epoch,
        eta0=float(eta0),
        time=elapsed,
        info=info,
        history=history,
        gap_history=gap_history,
    )


def stochastic_subgradient(X, y, datafit: RobustHinge, penalty: L2Squared, **kwargs) -> StochasticResult:
    """Minibatch stochastic subgradient method with iterate averaging on ``penalty(w) + mean datafit loss``
    over ``(X, y)`` (labels in {-1, +1}, trusted arrays); see module docstring.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    datafit : RobustHinge
        The data fit.
    penalty : L2Squared
        The penalty.
    **kwargs
        ``batch_size``, ``max_epochs``, ``tol``, ``eval_every``, ``certify_every``, ``patience``, ``eta0``,
        ``average_from``, ``seed``, ``w0``, ``b0``, ``progress``, ``time_limit``, ``certificate_options``,
        ``shuffle``.

    Returns
    -------
    StochasticResult

    Raises
    ------
    ValueError
        For an option out of range or a data fit or penalty without a method the solver calls.
    """
    return _solve(X, y, datafit, penalty, prox=False, **kwargs)


def stochastic_proximal(X, y, datafit: RobustHinge, penalty: L2Squared, **kwargs) -> StochasticResult:
    """Stochastic proximal gradient (forward on the data fit, prox on the L2 penalty); see module docstring.

    Parameters
    ----------
    X : ndarray of shape (L, n)
        The samples.
    y : ndarray of shape (L,)
        Labels in {-1, +1}.
    datafit : RobustHinge
        The data fit.
    penalty : L2Squared
        The penalty.
    **kwargs
        ``batch_size``, ``max_epochs``, ``tol``, ``eval_every``, ``certify_every``, ``patience``, ``eta0``,
        ``average_from``, ``seed``, ``w0``, ``b0``, ``progress``, ``time_limit``, ``certificate_options``,
        ``shuffle``.

    Returns
    -------
    StochasticResult

    Raises
    ------
    ValueError
        For an option out of range or a data fit or penalty without a method the solver calls.
    """
    return _solve(X, y, datafit, penalty, prox=True, **kwargs)
