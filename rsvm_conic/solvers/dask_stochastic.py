"""The stochastic routes on Dask row blocks: iterative parameter mixing, certified over the blocks.

Samples in a Dask array chunked along rows (:mod:`.row_blocks`).  A *round* is one pass over the data:

1. every row block runs ``epochs`` epochs of the in-memory minibatch method (:mod:`.stochastic`: the same
   minibatch step, the same decreasing step ``eta_t = eta_0 / (1 + eta_0 lam t)`` with the step counter ``t``
   carried over from round to round, the same polynomial-decay averaging) on its own rows, starting from the
   current mixed iterate, with the same ``lam = 1 / (C L)`` of the global problem;
2. the client averages the blocks' averaged iterates, weighted by their numbers of rows (iterative parameter
   mixing [MHM10]: the global objective is that weighted average of the blocks' objectives), and the next
   round starts from the mixture.

Each block keeps, in the worker, its shuffling stream and the running fraction of visits in which each of
its samples had a positive loss (the ergodic multipliers of the subgradient method, as in memory).  Every
``certify_every`` rounds the mixed iterate gets the certificate of the in-memory routes, over the blocks:
its primal objective (one pass) and the dual value ``D(alpha, u)`` of the feasible point
``alpha = C x fraction`` projected onto ``{0 <= alpha <= C, y'alpha = 0}`` (a few passes over ``(alpha, y)``
and one over ``X``; see :meth:`~rsvm_conic.formulations._linear.LinearSVMFormulation.dual_value`).  The
best primal iterate and the best dual value are kept; the run stops when their relative gap meets ``tol``
(status ``"optimal"``), else after ``max_rounds`` with status ``"max_iter"``.  The in-memory routes refine
their dual point further (a band candidate and least-squares rounds on the margin set); over the blocks
the dual point is the activity alone, so the certified gap is looser at equal effort.

The client receives O(n) numbers per block and round (each block's averaged ``w``, ``b``); nothing of size
L is gathered.  Seeded: block ``j``'s stream is seeded from ``(seed, first row of the block)``, so a run is
reproducible for a given chunking.

[MHM10] R. McDonald, K. Hall, G. Mann, "Distributed training strategies for the structured perceptron",
NAACL 2010 (iterative parameter mixing).
"""

from __future__ import annotations

import time

import numpy as np

from ..uncertainty.sets import ResolvedUncertainty
from .contract import certify, relative_gap
from .datafits import RobustHinge
from .penalties import L2Squared
from .row_blocks import RowBlocks
from .stochastic import _Activity, _blocks, _pass, auto_batch_size, calibrate_eta0


def _local_fit(blk, plan) -> RobustHinge:
    """The robust hinge of one block's rows (its gamma, group index or per-sample factors)."""
    if plan["p"] is None:
        return RobustHinge(None)
    Lb = blk["X"].shape[0]
    if "F" in blk:
        unc = ResolvedUncertainty(blk["F"], plan["diagonal"], np.arange(Lb), plan["p"], plan["q"], 1.0, blk["gamma"])
    else:
        unc = ResolvedUncertainty(plan["factors"], plan["diagonal"], blk["gi"], plan["p"], plan["q"], 1.0, blk["gamma"])
    return RobustHinge(unc)


def _round_block(blk, state, plan):
    """One round on one block: ``plan["epochs"]`` epochs from the mixed iterate; returns the new state and
    ``{"w": L_b w_avg, "b": L_b b_avg, "n": L_b}``."""
    X, y = blk["X"], blk["y"]
    Lb = X.shape[0]
    fit = _local_fit(blk, plan).initialize(X, y)
    if state is None:
        state = {"rng": np.random.default_rng([plan["seed"], int(blk["row"][0])]), "activity": _Activity(Lb)}
    rng, activity = state["rng"], state["activity"]
    B = plan["batch_size"]
    penalty = L2Squared(plan["lam"])
    w, b, t = np.array(plan["w"], dtype=float), float(plan["b"]), plan["t"]
    avg = [w.copy(), b, 0]
    for _ in range(plan["epochs"]):
        perm = rng.permutation(Lb)
        w, b, t, avg = _pass(
            X[perm],
            y[perm],
            perm,
            fit,
            penalty,
            plan["prox"],
            w,
            b,
            plan["eta0"],
            t,
            np.arange(_blocks(Lb, B)),
            B,
            avg,
            activity,
        )
    return state, {"w": Lb * avg[0], "b": Lb * avg[1], "n": float(Lb)}


def _activity_entry(state):
    return state["activity"].fraction()


def stochastic_mixing(
    X,
    y,
    unc,
    C: float,
    objective,
    dual_value,
    *,
    prox: bool = True,
    tol: float = 1e-3,
    max_rounds: int = 50,
    epochs: int = 1,
    certify_every: int = 1,
    eta0="auto",
    batch_size="auto",
    seed: int = 0,
    time_limit=None,
):
    """Iterative parameter mixing of the stochastic routes over the row blocks of a Dask ``X`` (module docstring).

    ``y`` (labels in {-1, +1}) and the per-sample arrays of ``unc`` (a resolved uncertainty on rows, see
    :func:`.row_blocks.resolve_uncertainty`; None for the nominal hinge) are Dask arrays with X's row
    chunks: trusted.  ``objective(w, b)`` and ``dual_value(alpha, w)`` (the formulation's, over the blocks)
    give the certificate.  Returns ``((w, b), info, detail)`` with ``info`` a SolveInfo (route ``"prox"`` or
    ``"sgd"``, status ``"optimal"`` iff the certified relative gap meets ``tol``)."""
    import dask.array as da

    t0 = time.perf_counter()
    L, n = X.shape
    robust = unc is not None and unc.radius != 0
    rows_kw = {"row": da.arange(L, chunks=(X.chunks[0],))}
    if robust:
        per_sample = not isinstance(unc.factors, np.ndarray)
        rows_kw["gamma"] = unc.gamma
        rows_kw["F" if per_sample else "gi"] = unc.factors if per_sample else unc.group_index
    rows = RowBlocks(X, y=y, **rows_kw)
    B = auto_batch_size(max(rows.sizes)) if batch_size == "auto" else int(batch_size)
    lam = 1.0 / (C * L)
    plan = {
        "p": unc.p if robust else None,
        "q": unc.q if robust else None,
        "diagonal": unc.diagonal if robust else None,
        "factors": unc.factors if robust and not per_sample else None,
        "lam": lam,
        "prox": prox,
        "batch_size": B,
        "epochs": int(epochs),
        "seed": int(seed),
    }
    if eta0 == "auto":  # calibrated on the first rows (at most 2000: O(n) each, gathered once)
        m = min(L, 2000)
        sub = {"X": np.asarray(X[:m]), "y": np.asarray(y[:m])}
        for key in ("gamma", "gi", "F"):
            if key in rows_kw:
                sub[key] = np.asarray(rows.cols[key][:m])
        fit = _local_fit(sub, plan).initialize(sub["X"], sub["y"])
        eta0 = calibrate_eta0(sub["X"], sub["y"], fit, L2Squared(lam), prox, B, np.random.default_rng(seed))
    plan["eta0"] = float(eta0)
    steps = sum(_blocks(s, B) for s in rows.sizes) // rows.n_blocks  # local steps per block and epoch (mean)
    w, b = np.zeros(n), 0.0
    best = (np.inf, w, b)
    dual, states, status, rounds = -np.inf, None, "max_iter", 0
    history = []
    for rounds in range(1, int(max_rounds) + 1):
        plan.update(w=w, b=b, t=(rounds - 1) * epochs * steps)
        part, states = rows.run(_round_block, plan, states, keep=True, uses=tuple(rows.cols))
        w, b = part["w"] / part["n"], float(part["b"] / part["n"])
        last = rounds == max_rounds or (time_limit is not None and time.perf_counter() - t0 > time_limit)
        if rounds % certify_every and not last:
            continue
        P = float(objective(w, b))
        if P < best[0]:
            best = (P, w.copy(), b)
        D = float(dual_value(C * rows.vector(states, _activity_entry), w))
        dual = max(dual, D)
        gap = relative_gap(best[0], dual)
        history.append((rounds, best[0], dual, gap, time.perf_counter() - t0))
        if gap <= tol:
            status = "optimal"
            break
        if last:
            break
    route = "prox" if prox else "sgd"
    info = certify(
        route,
        best[0],
        dual,
        tol,
        failed_status=status,
        iterations=rounds,
        time=time.perf_counter() - t0,
        detail={
            "eta0": plan["eta0"],
            "rounds": rounds,
            "passes": rows.passes,
            "blocks": rows.n_blocks,
            "certificate": "dual_bound over row blocks (activity multipliers, projected)",
            "scheme": "iterative parameter mixing",
        },
    )
    return (best[1], best[2]), info, history
