"""The stochastic routes on Dask row blocks: iterative parameter mixing [MHM10], certified over the blocks.

A round is one pass over the data: every row block runs ``epochs`` epochs of the in-memory minibatch method
(:mod:`.stochastic`) on its own rows from the mixed iterate, and the client averages the blocks' averaged
iterates, weighted by their numbers of rows (:func:`dask_stochastic`).  Every ``certify_every`` rounds the mixed
iterate gets the in-memory routes' certificate over the blocks (its primal value and the dual value of the
projected activity or least-squares points, :func:`ls_dual_points`, :func:`.ipm.row_blocks.dual_value_rows`); the
run stops when the relative gap meets ``tol``.  The client receives O(n) numbers per block and round; a run is
seeded per block.  The method is described step by step in ``docs/dask.md`` ("The stochastic routes on row
blocks").

[MHM10] R. McDonald, K. Hall, G. Mann, "Distributed training strategies for the structured perceptron",
NAACL 2010 (iterative parameter mixing).
"""

from __future__ import annotations

import time

import numpy as np

from ..uncertainty.sets import ResolvedUncertainty, dual_norm_subgradient, dual_norm_values
from ..certify.contract import certify, relative_gap
from .datafits import RobustHinge
from .penalties import L2Squared
from .ipm.kkt import apply_rows, transpose_apply
from .ipm.row_blocks import _rows_for, dual_value_rows, hinge_sum
from .stochastic import _Activity, _blocks, _in_order, _pass, auto_batch_size, calibrate_eta0


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
        activity.reorder(perm)
        w, b, t, avg = _pass(
            X[perm],
            y[perm],
            _in_order(fit, perm),
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


# ------------------------------------------------------------------ least-squares dual points over the blocks
#: margin tolerances of the least-squares dual points (as in memory: :func:`rsvm_conic.certify.hinge.dual_bound`)
TAUS = (1e-1, 1e-2, 1e-3)


def _columns(blk, plan):
    """Robust margins ``m_i`` and the columns ``[y_i x_i - gamma_i A_g(i) u_g(i); y_i]`` of one block, ``u_g`` the
    maximiser of ``u'A_g'w`` (p = 2): ``w = sum_i alpha_i c_i`` and ``y'alpha = 0`` read ``sum_i alpha_i [c_i; y_i]
    = [w; 0]``."""
    X, y = blk["X"], blk["y"]
    w = plan["w"]
    n = X.shape[1]
    m = y * (X @ w + plan["b"])
    cols = np.empty((X.shape[0], n + 1))
    np.multiply(X, y[:, None], out=cols[:, :n])
    cols[:, n] = y
    if plan["p"] is not None:
        g = blk["gamma"]
        if "F" in blk:
            V = transpose_apply(blk["F"], plan["diagonal"], w)
            m -= g * dual_norm_values(V, plan["q"])
            cols[:, :n] -= g[:, None] * apply_rows(blk["F"], plan["diagonal"], dual_norm_subgradient(V, plan["q"]))
        else:
            m -= g * plan["sup"][blk["gi"]]
            cols[:, :n] -= g[:, None] * plan["Au"][blk["gi"]]
    return m, cols


def _ls_block(blk, plan):
    """Per tau: the Gram matrix of the columns on the margin (``|m_i - 1| <= tau``) and ``C x`` the sum of the
    columns at C (``m_i < 1 - tau``)."""
    m, cols = _columns(blk, plan)
    out = {}
    for j, tau in enumerate(plan["taus"]):
        on = np.abs(m - 1.0) <= tau
        out[f"G{j}"] = cols[on].T @ cols[on]
        out[f"r{j}"] = plan["C"] * cols[m < 1.0 - tau].sum(axis=0)
    return out


def _ls_alpha_block(*blocks, names, plan):
    """One block of the least-squares point: C at C, the min-norm coefficients on the margin, 0 elsewhere."""
    blk = dict(zip(names, blocks))
    m, cols = _columns(blk, plan)
    tau = plan["tau"]
    alpha = np.where(m < 1.0 - tau, plan["C"], 0.0)
    on = np.abs(m - 1.0) <= tau
    alpha[on] = cols[on] @ plan["coef"]
    return alpha


def _ls_points(rows, w, b, C, unc, plan):
    """The least-squares dual candidates of :func:`rsvm_conic.certify.hinge.dual_bound` (steps 1-4, p = 2 or the nominal
    hinge) at ``(w, b)``, over the blocks: one pass for the tau's small systems, each candidate a lazy Dask
    vector (persisted in the workers) to project and evaluate."""
    import dask.array as da

    n = rows.n
    ls = dict(plan, w=np.asarray(w, dtype=float), b=float(b), C=float(C), taus=TAUS)
    if plan["p"] is not None and plan["factors"] is not None:
        V = transpose_apply(unc.factors, unc.diagonal, ls["w"])
        ls["sup"] = dual_norm_values(V, unc.q)
        ls["Au"] = apply_rows(unc.factors, unc.diagonal, dual_norm_subgradient(V, unc.q))
    sums, _ = rows.run(_ls_block, ls)
    names = tuple(k for k in rows.cols if k != "row")
    args = []
    for name in names:
        arr = rows.cols[name]
        args += [arr, "i" + "jkl"[: arr.ndim - 1]]
    out = []
    for j, tau in enumerate(TAUS):
        rhs = np.concatenate([ls["w"], [0.0]]) - sums[f"r{j}"]
        coef = np.linalg.lstsq(sums[f"G{j}"], rhs, rcond=1e-12)[0] if np.any(sums[f"G{j}"]) else np.zeros(n + 1)
        alpha = da.blockwise(
            _ls_alpha_block,
            "i",
            *args,
            names=names,
            plan=dict(ls, tau=tau, coef=coef),
            dtype=float,
            concatenate=True,
            align_arrays=False,
        )
        out.append(alpha.persist())
    return out


def _rows_and_plan(X, y, unc):
    """RowBlocks of the arrays the blocks read (:func:`.row_blocks._rows_for`, plus the row numbers) and the
    plan entries describing the robust term (grouped factors travel in it)."""
    import dask.array as da

    rows = _rows_for(X, y, unc, row=da.arange(X.shape[0], chunks=(X.chunks[0],)))
    robust = "gamma" in rows.cols
    plan = {
        "p": unc.p if robust else None,
        "q": unc.q if robust else None,
        "diagonal": unc.diagonal if robust else None,
        "factors": None if not robust or "F" in rows.cols else unc.factors,
    }
    return rows, plan


def ls_dual_points(X, y, unc, C, w, b) -> list:
    """The least-squares dual candidates at ``(w, b)`` for samples on Dask row blocks (one per tau of
    :data:`TAUS`; p = 2 or the nominal hinge): lazy vectors persisted in the workers, to be projected and
    evaluated by :func:`.ipm.row_blocks.dual_value_rows` (the in-memory :func:`rsvm_conic.certify.hinge.dual_bound`,
    steps 1-4).

    Parameters
    ----------
    X : dask.array.Array of shape (L, n)
        The samples, chunked along rows.
    y : dask.array.Array of shape (L,)
        Labels in {-1, +1}, with X's row chunks.
    unc : object or None
        The resolved uncertainty on rows (:func:`.ipm.row_blocks.resolve_uncertainty`; None: nominal hinge).
    C : float
        The hinge's weight.
    w : ndarray of shape (n,)
        The iterate's weights.
    b : float
        The iterate's bias.

    Returns
    -------
    list of dask.array.Array
        One lazy ``alpha`` of shape (L,) per tolerance.
    """
    rows, plan = _rows_and_plan(X, y, unc)
    return _ls_points(rows, w, b, C, unc, plan)


def stochastic_mixing(
    X,
    y,
    unc,
    C: float,
    *,
    prox: bool = True,
    tol: float = 1e-3,
    max_rounds: int = 50,
    epochs: int = 1,
    certify_every: int = 5,
    eta0="auto",
    batch_size="auto",
    seed: int = 0,
    time_limit=None,
):
    """Iterative parameter mixing of the stochastic routes over the row blocks of a Dask ``X`` (module docstring).

    ``y`` (labels in {-1, +1}) and the per-sample arrays of ``unc`` (a resolved uncertainty on rows, see
    :func:`.row_blocks.resolve_uncertainty`; None for the nominal hinge) are Dask arrays with X's row
    chunks: trusted.  The certificate is the in-memory routes' over the blocks: the primal objective
    (:func:`.ipm.row_blocks.hinge_sum`) and the dual value (:func:`.ipm.row_blocks.dual_value_rows`).  Returns
    ``((w, b), info, detail)`` with ``info`` a SolveInfo (route ``"prox"`` or
    ``"sgd"``, status ``"optimal"`` iff the certified relative gap meets ``tol``).

    Parameters
    ----------
    X : dask.array.Array of shape (L, n)
        The samples, chunked along rows.
    y : dask.array.Array of shape (L,)
        Labels in {-1, +1}.
    unc : object or None
        The resolved uncertainty on rows (None: the nominal hinge).
    C : float
        The hinge's weight.
    prox : bool, default True
        The proximal route (``"prox"``); False: the subgradient route (``"sgd"``).
    tol : float, default 1e-3
        The relative gap that stops the run.
    max_rounds : int, default 50
        The most rounds.
    epochs : int, default 1
        Epochs per block and round.
    certify_every : int, default 5
        Rounds between certificates.
    eta0 : float or "auto"
        The initial step.
    batch_size : int or "auto"
        The minibatch size.
    seed : int, default 0
        Seeds every block's stream.
    time_limit : float, optional
        Seconds after which the run stops.

    Returns
    -------
    (w, b) : tuple
        The best primal iterate.
    info : SolveInfo
        Route, status and certified gap.
    history : list
        ``(round, primal, dual, gap, seconds)`` per certificate.
    """

    t0 = time.perf_counter()
    L, n = X.shape
    rows, plan = _rows_and_plan(X, y, unc)
    B = auto_batch_size(max(rows.sizes)) if batch_size == "auto" else int(batch_size)
    lam = 1.0 / (C * L)
    plan.update(lam=lam, prox=prox, batch_size=B, epochs=int(epochs), seed=int(seed))
    if eta0 == "auto":  # calibrated on the first rows (at most 2000: O(n) each, gathered once)
        m = min(L, 2000)
        sub = {"X": np.asarray(X[:m]), "y": np.asarray(y[:m])}
        for key in ("gamma", "gi", "F"):
            if key in rows.cols:
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
        P = 0.5 * float(w @ w) + C * hinge_sum(X, y, w, b, unc)[0]
        if P < best[0]:
            best = (P, w.copy(), b)
        cands = [C * rows.vector(states, _activity_entry)]
        if plan["p"] in (None, 2.0):  # the least-squares points need the unique maximiser u (p = 2)
            cands += _ls_points(rows, w, b, C, unc, plan)
        D = max(dual_value_rows(X, y, a, w, C, unc) for a in cands)
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
