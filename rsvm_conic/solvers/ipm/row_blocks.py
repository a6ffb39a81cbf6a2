"""Row blocks: the per-sample side of the linear SVMs when the samples are Dask arrays.

Everything the linear SVMs compute over samples is a sum (or max, or min) over rows: a weighted
Gram matrix ``X' D X``, vectors ``X' r``, hinge sums.  :class:`RowBlocks` holds the per-sample arrays
(``X`` and whatever else is aligned with its rows: labels, radii, group indices, per-sample factors,
multipliers) as one Dask task per row chunk and runs *passes*: a function of one block's arrays (and
of a per-block state kept in the workers' memory between passes) returns a small partial result;
the partial results are combined in a tree of Dask tasks and only the combined result -- O(n^2)
numbers -- reaches the client.  Nothing of size L is ever gathered.

The passes the certificate of :mod:`rsvm_conic.formulations._linear` needs are here too (the
primal objective, the projection of the multipliers onto ``{0 <= alpha <= C, y'alpha = 0}`` and
the dual value), so that a Dask fit is certified by the same dual bound as an in-memory one; the
interior point itself is :mod:`.row_block_ipm`.  ``dask`` (``pip install 'rsvm-conic[dask]'``) is
imported only when a RowBlocks is made.
"""

from __future__ import annotations

import numpy as np

from ..._validation import dask_compute
from ...certify.projections import dual_set_multiplier
from ...exceptions import SolverError
from ...uncertainty.sets import dual_norm_subgradient, dual_norm_values
from .kkt import apply_rows, sum_apply_rows, transpose_apply

__all__ = [
    "RowBlocks",
    "combine",
    "dual_terms",
    "dual_value_rows",
    "hinge_sum",
    "project_dual_set_rows",
    "resolve_uncertainty",
]

#: partial results are combined this many at a time (the depth of the tree is log_8 of the blocks)
SPLIT_EVERY = 8


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("Dask arrays need the optional extra: pip install 'rsvm-conic[dask]'") from exc
    return dask, da


def combine(*parts: dict) -> dict:
    """Combine partial results of one pass (dicts of numbers / arrays) key by key.

    Keys starting with ``max_`` / ``min_`` are combined by max / min, the key ``centred`` holds
    ``(a, s, F)`` per group -- weights ``a_g``, weighted sums ``s_g`` and the Gram matrix of the rows
    centred by their own group means ``s_g / a_g`` -- combined exactly by the parallel (Chan et al.)
    update ``F = F1 + F2 + sum_g a1 a2 / (a1 + a2) (m1 - m2)(m1 - m2)'`` (every term PSD: no
    cancellation); everything else is summed.

    Parameters
    ----------
    *parts : dict
        Partial results of one pass.

    Returns
    -------
    dict
    """
    out = dict(parts[0])
    for part in parts[1:]:
        for key, val in part.items():
            if key not in out:  # e.g. a block that stopped early reports fewer entries
                out[key] = val
            elif key.startswith("max_"):
                out[key] = np.maximum(out[key], val)
            elif key.startswith("min_"):
                out[key] = np.minimum(out[key], val)
            elif key == "centred":
                out[key] = _chan(out[key], val)
            else:
                out[key] = out[key] + val
    return out


def _chan(p1, p2):
    a1, s1, F1 = p1
    a2, s2, F2 = p2
    a = a1 + a2
    both = (a1 > 0) & (a2 > 0)
    F = F1 + F2
    if np.any(both):
        d = s1[both] / a1[both, None] - s2[both] / a2[both, None]
        wts = a1[both] * a2[both] / a[both]
        F = F + (d * wts[:, None]).T @ d
    return a, s1 + s2, F


def _nbytes(obj) -> int:
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(v) for v in obj)
    return int(getattr(obj, "nbytes", 8))


def _tree(blocks, dask):
    """The combined partial results of a pass's blocks (1-element object arrays), as a tree of tasks."""
    parts = [
        dask.delayed(_combine_blocks, pure=True)(*blocks[i : i + SPLIT_EVERY])
        for i in range(0, len(blocks), SPLIT_EVERY)
    ]
    while len(parts) > 1:
        parts = [
            dask.delayed(combine, pure=True)(*parts[i : i + SPLIT_EVERY]) for i in range(0, len(parts), SPLIT_EVERY)
        ]
    return parts[0]


def _combine_blocks(*blocks):
    return combine(*[b[0][1] for b in blocks])


class RowBlocks:
    """Dask arrays aligned with the rows of ``X`` (one task per row chunk) and passes over them.

    ``arrays`` are named Dask arrays with ``X.shape[0]`` rows; they are rechunked (lazily) to X's
    row chunks and to one chunk along their other axes (X too).  A pass is one ``da.blockwise`` over
    them, so that reading a block (e.g. from a Zarr store) is fused into the task that uses it: a worker
    holds the blocks it is working on, not every block it will work on.  Per-block states live in a
    persisted object array with one element per block.  ``passes`` counts the passes that read ``X``;
    ``fetched`` is the largest combined result a pass brought to the client (bytes).
    ``RowBlocks.data_passes`` counts the passes that read an X in this process (for benchmarks).

    Parameters
    ----------
    X : dask.array.Array of shape (L, n)
        The samples, chunked along rows.
    **arrays : dask.array.Array
        Named per-sample arrays with ``L`` rows.
    """

    data_passes = 0

    def __init__(self, X, **arrays):
        X = X.rechunk({1: -1}) if X.numblocks[1] != 1 else X
        rows = X.chunks[0]
        self.sizes = tuple(int(r) for r in rows)
        self.L, self.n = X.shape
        self.passes = 0
        self.fetched = 0
        cols = {"X": X}
        for name, arr in arrays.items():
            if arr is None:
                continue
            if arr.shape[0] != self.L:
                raise ValueError(f"{name} has {arr.shape[0]} rows but X has {self.L}; they must match.")
            want = (rows,) + tuple((s,) for s in arr.shape[1:])
            cols[name] = arr if arr.chunks == want else arr.rechunk(want)
        self.cols = cols

    @property
    def n_blocks(self) -> int:
        return len(self.sizes)

    def run(self, fn, plan, states=None, *, keep: bool = False, uses=None):
        """One pass: ``fn(block, plan)`` on every row block -- ``fn(block, state, plan)`` when ``states`` (a
        previous pass's states) are given or ``keep`` -- partial results combined by :func:`combine`.
        ``keep=True``: ``fn`` returns ``(new state, partial)`` and the new states are persisted in the workers.
        ``uses`` names the arrays ``fn`` reads (default all; a pass that does not read ``X`` is not counted).
        Returns ``(result, new states)``.  On a distributed cluster that loses every worker the pass ends with
        :class:`~rsvm_conic.exceptions.WorkersLostError` after the configured wait
        (:func:`~rsvm_conic._validation.dask_compute`)."""
        dask, da = _dask()
        uses = tuple(self.cols) if uses is None else tuple(uses)
        stateful = keep or states is not None
        args = []
        for name in uses:
            arr = self.cols[name]
            args += [arr, "i" + "jkl"[: arr.ndim - 1]]
        if states is not None:
            args += [states, "i"]
        out = da.blockwise(
            _call_block,
            "i",
            *args,
            fn=fn,
            names=uses,
            stateful=stateful,
            plan=plan,
            dtype=object,
            meta=np.empty((0,), dtype=object),
            concatenate=True,
            align_arrays=False,
            adjust_chunks={"i": (1,) * self.n_blocks},
        )
        out = out.persist()
        (result,) = dask_compute(_tree(list(out.to_delayed(optimize_graph=False).ravel()), dask))
        if "X" in uses:
            self.passes += 1
            RowBlocks.data_passes += 1
        self.fetched = max(self.fetched, _nbytes(result))
        return result, (out if keep else None)

    def vector(self, states, entry, dtype=float):
        """One per-sample vector of the per-block ``states``, ``entry(state)`` (a module-level function) of
        each block, as one Dask array (n_samples,) aligned with X's rows: lazy, nothing is gathered."""
        return states.map_blocks(
            _entry_block, entry, chunks=(self.sizes,), dtype=dtype, meta=np.empty((0,), dtype=dtype)
        )


def _call_block(*blocks, fn, names, stateful, plan):
    """A pass's task on one row block: ``fn``'s result as ``(state, partial)`` in a 1-element object array
    (the plan, O(n + k n) numbers, travels in the task)."""
    k = len(names)
    blk = dict(zip(names, blocks[:k]))
    if stateful:
        state = blocks[k][0][0] if len(blocks) > k else None
        out = fn(blk, state, plan)
    else:
        out = (None, fn(blk, plan))
    res = np.empty(1, dtype=object)
    res[0] = out if isinstance(out, tuple) else (state, out)
    return res


def _entry_block(block, entry):
    return entry(block[0][0])


# ------------------------------------------------------------------------------- certificate passes
def _hinge_block(blk, plan):
    X, y = blk["X"], blk["y"]
    w, b = plan["w"], plan["b"]
    score = X @ w
    m = 1.0 - y * (score + b)
    if plan["support"] is not None:
        m = m + blk["gamma"] * plan["support"][blk["gi"]]
    elif "F" in blk:
        m = m + blk["gamma"] * dual_norm_values(transpose_apply(blk["F"], plan["diagonal"], w), plan["q"])
    return {"hinge": float(np.sum(np.maximum(0.0, m))), "max_score": float(np.max(np.abs(score), initial=0.0))}


def _rows_for(X, y, unc, **more):
    """RowBlocks with the arrays a robust term reads: gamma and the group index (factors on the client),
    or gamma and per-sample factors (a Dask array of factors)."""
    if unc is None or unc.radius == 0:
        return RowBlocks(X, y=y, **more)
    if _is_dask(unc.factors):
        return RowBlocks(X, y=y, gamma=unc.gamma, F=unc.factors, **more)
    return RowBlocks(X, y=y, gamma=unc.gamma, gi=unc.group_index, **more)


def _is_dask(A) -> bool:
    from ..._validation import is_dask_array

    return is_dask_array(A)


def hinge_sum(X, y, w, b, unc) -> tuple[float, float]:
    """``(sum_i max{0, 1 - y_i(<w, x_i> + b) + gamma_i ||A_g(i)' w||_q}, max_i |<w, x_i>|)``, one pass.

    Parameters
    ----------
    X : dask.array.Array of shape (L, n)
        The samples.
    y : dask.array.Array of shape (L,)
        Labels in {-1, +1}.
    w : ndarray of shape (n,)
        The weights.
    b : float
        The bias.
    unc : object or None
        The resolved uncertainty on rows (:func:`resolve_uncertainty`; None: the nominal hinge).

    Returns
    -------
    hinge : float
    max_score : float
    """
    rows = _rows_for(X, y, unc)
    support = None
    if unc is not None and unc.radius != 0 and not _is_dask(unc.factors):
        support = unc.support(w)
    plan = {
        "w": np.asarray(w, dtype=float),
        "b": float(b),
        "support": support,
        "diagonal": None if unc is None else unc.diagonal,
        "q": None if unc is None else unc.q,
    }
    res, _ = rows.run(_hinge_block, plan)
    return res["hinge"], res["max_score"]


def _phi_block(blk, plan):
    v, y = blk["v"], blk["y"]
    lam, C = plan["lam"], plan["C"]
    if lam is None:  # the bracket: min / max of y v, class counts
        yv = y * v
        return {
            "min_yv": float(np.min(yv)),
            "max_yv": float(np.max(yv)),
            "pos": float(np.count_nonzero(y > 0)),
            "neg": float(np.count_nonzero(y < 0)),
        }
    a = np.clip(v - lam * y, 0.0, C)
    return {"phi": float(y @ a), "nfree": float(np.count_nonzero((a > 0.0) & (a < C)))}


def project_dual_set_rows(X, v, y, C, max_iter: int = 60):
    """The Euclidean projection of the Dask vector ``v`` onto ``{0 <= a <= C, y'a = 0}``, lazily:
    ``clip(v - lam y, 0, C)`` with ``lam`` found by :func:`~rsvm_conic.certify.projections.dual_set_multiplier`
    (one pass over (v, y) per step; a few steps).  Returns ``(a, passes)``.

    Parameters
    ----------
    X : dask.array.Array of shape (L, n)
        The samples (their row chunks align the vectors).
    v : dask.array.Array of shape (L,)
        The vector to project.
    y : dask.array.Array of shape (L,)
        Labels in {-1, +1}.
    C : float
        The box's bound.
    max_iter : int, default 60
        The most steps of the multiplier's search.

    Returns
    -------
    a : dask.array.Array of shape (L,)
        The projection (lazy).
    passes : int
        Passes over ``(v, y)`` taken.
    """
    _, da = _dask()
    rows = RowBlocks(X, v=v, y=y)
    C = float(C)
    br, _ = rows.run(_phi_block, {"lam": None, "C": C}, uses=("v", "y"))

    def evaluate(lam):
        res, _ = rows.run(_phi_block, {"lam": lam, "C": C}, uses=("v", "y"))
        return res["phi"], res["nfree"]

    bracket = (br["min_yv"], br["max_yv"], br["pos"], br["neg"])
    lam, passes = dual_set_multiplier(evaluate, bracket, C, 4 * np.finfo(float).eps * C * rows.L, max_iter)
    if lam is None:  # pragma: no cover - the bracketed iteration converges in a few steps
        raise SolverError(f"projection onto the dual set did not converge in {max_iter} passes")
    return da.clip(v - lam * y, 0.0, C), passes + 1


def _dual_block(blk, plan):
    X, y, a = blk["X"], blk["y"], blk["a"]
    out = {"sum_a": float(np.sum(a)), "v": X.T @ (a * y)}
    if "gi" in blk:
        out["s"] = np.bincount(blk["gi"], weights=a * blk["gamma"], minlength=plan["k"])
    elif "F" in blk:  # sum_i s_i A_i u_i, u_i the maximiser of u'A_i'w over the unit p-ball
        U = dual_norm_subgradient(transpose_apply(blk["F"], plan["diagonal"], plan["w"]), plan["q"])
        out["robust"] = sum_apply_rows(blk["F"], plan["diagonal"], (a * blk["gamma"])[:, None] * U)
    return out


def dual_terms(X, y, a, w, unc) -> dict:
    """One pass for the dual value at a feasible ``a`` (Dask): ``sum_a``, ``v = sum_i a_i y_i x_i`` and
    the robust term's data -- ``s_g = sum_{i in g} a_i gamma_i`` per group, or for per-sample factors
    ``robust = sum_i a_i gamma_i A_i u_i`` with ``u_i`` the maximiser at ``w``.

    Parameters
    ----------
    X : dask.array.Array of shape (L, n)
        The samples.
    y : dask.array.Array of shape (L,)
        Labels in {-1, +1}.
    a : dask.array.Array of shape (L,)
        A feasible dual point.
    w : ndarray of shape (n,)
        The weights at which ``u`` maximises.
    unc : object or None
        The resolved uncertainty on rows (None: the nominal hinge).

    Returns
    -------
    dict
        ``sum_a``, ``v`` and the robust term's data.
    """
    rows = _rows_for(X, y, unc, a=a)
    plan = {
        "w": np.asarray(w, dtype=float),
        "k": 0 if unc is None else unc.n_groups,
        "diagonal": None if unc is None else unc.diagonal,
        "q": None if unc is None else unc.q,
    }
    res, _ = rows.run(_dual_block, plan)
    return res


def dual_value_rows(X, y, alpha, w, C: float, unc, improve_u=None) -> float:
    """The dual value ``D(alpha, u) = sum_i a_i - 1/2 ||sum_i a_i y_i x_i - sum_g s_g A_g u_g||^2`` of the linear
    SVMs' certificate at ``a``, the projection of the Dask vector ``alpha`` onto ``{0 <= a <= C, y'a = 0}``
    (:func:`project_dual_set_rows`, a few passes over ``(alpha, y)``; then one pass over ``X``).

    ``u_g`` is the maximiser of ``u'A_g'w`` over the unit p-ball; for grouped factors (on the client)
    ``improve_u(v, s, unc, U)`` may return a better one (``v = sum_i a_i y_i x_i``, ``s_g = sum_{i in g} a_i
    gamma_i``); per-sample factors keep the maximiser at ``w`` (optimal at the optimum for p = 2, ``w != 0``).

    Parameters
    ----------
    X : dask.array.Array of shape (L, n)
        The samples.
    y : dask.array.Array of shape (L,)
        Labels in {-1, +1}.
    alpha : dask.array.Array of shape (L,)
        The dual estimate, projected here.
    w : ndarray of shape (n,)
        The weights at which ``u`` maximises.
    C : float
        The box's bound.
    unc : object or None
        The resolved uncertainty on rows (None: the nominal hinge).
    improve_u : callable, optional
        Returns better rows ``u_g`` for grouped factors.

    Returns
    -------
    float
    """
    w = np.asarray(w, dtype=float)
    a, _ = project_dual_set_rows(X, alpha, y, C)
    robust = unc is not None and unc.radius != 0
    t = dual_terms(X, y, a, w, unc if robust else None)
    v = t["v"]
    if robust and "robust" in t:
        v = v - t["robust"]
    elif robust:
        U = dual_norm_subgradient(transpose_apply(unc.factors, unc.diagonal, w), unc.q)
        if improve_u is not None:
            U = improve_u(t["v"], t["s"], unc, U)
        v = v - t["s"] @ apply_rows(unc.factors, unc.diagonal, U)
    return float(t["sum_a"] - 0.5 * v @ v)


# ------------------------------------------------------------------------------- uncertainty on rows
#: groups given as labels are resolved on the client (their factors and cones live there): at most this many
MAX_LABELS = 100_000


def _labels_block(*blocks):
    return np.unique(np.concatenate([np.ravel(b) for b in blocks]))[: MAX_LABELS + 1]


def _group_index_block(g, labels):
    return np.searchsorted(labels, g).astype(np.intp)


def _factor_block(S, p, as_factor):
    from ...uncertainty.sets import UncertaintySet

    m, n = S.shape[0], S.shape[-1]
    if as_factor:
        return UncertaintySet(factor=S, p=p).resolve(m, n).factors
    return UncertaintySet(Sigma=S, groups="sample" if S.ndim == 2 else None, p=p).resolve(m, n).factors


def resolve_uncertainty(unc_set, X):
    """:meth:`~rsvm_conic.uncertainty.sets.UncertaintySet.resolve` for samples in a Dask array ``X``.

    The per-sample arrays stay Dask arrays with X's row chunks: the group index, the sample scales, and
    per-sample factors (``groups="sample"``, a per-sample Sigma or factor, given as numpy or Dask arrays).
    Shared and grouped factors (k <= MAX_LABELS groups) are resolved on the client by ``resolve`` itself,
    so the checks and messages are the in-memory ones.  Value checks of Dask inputs (sample scales >= 0,
    the distinct group labels) take one pass over those arrays; a Dask Sigma is factored block by block
    when a pass reads it (its checks raise then).

    Parameters
    ----------
    unc_set : UncertaintySet
        The uncertainty set.
    X : dask.array.Array of shape (L, n)
        The samples.

    Returns
    -------
    ResolvedUncertainty
        With per-sample arrays as Dask arrays on X's row chunks.
    """
    from ..._validation import check_groups_have_sigma, check_sample_scale, dask_rows, is_dask_array
    from ...uncertainty.sets import ResolvedUncertainty, UncertaintySet

    dask, da = _dask()
    L, n = X.shape
    rows = X.chunks[0]
    groups, p, radius = unc_set.groups, unc_set.p, unc_set.radius
    S, as_factor = (unc_set.factor, True) if unc_set.factor is not None else (unc_set.Sigma, False)
    if unc_set.Sigma is not None and unc_set.factor is not None:
        raise ValueError("give either Sigma or factor, not both.")
    check_groups_have_sigma(groups, unc_set.Sigma, unc_set.factor)
    scale_name = getattr(unc_set, "sample_scale_name", "sample_scale")
    lazy = {}
    per_sample = isinstance(groups, str) and groups == "sample"
    if isinstance(groups, str) and not per_sample:
        raise ValueError(f"groups must be an array of labels, 'sample' or None; got {groups!r}.")
    g = None
    if groups is not None and not per_sample:
        g = dask_rows(groups, X, "groups")
        parts = [dask.delayed(_labels_block)(b) for b in g.to_delayed().ravel()]
        while len(parts) > 1:
            parts = [
                dask.delayed(_labels_block)(*parts[i : i + SPLIT_EVERY]) for i in range(0, len(parts), SPLIT_EVERY)
            ]
        lazy["labels"] = parts[0]
    scale = unc_set.sample_scale
    if scale is not None and is_dask_array(scale):
        scale = dask_rows(scale, X, scale_name)
        lazy["bad_scale"] = (~(da.isfinite(scale) & (scale >= 0))).sum()
    elif scale is not None:
        scale = da.from_array(check_sample_scale(scale, L, scale_name), chunks=(rows,))
    (got,) = dask_compute(lazy)
    if got.get("bad_scale", 0):
        raise ValueError(f"{scale_name} must hold {L} nonnegative numbers ({int(got['bad_scale'])} are not).")
    scale = da.ones(L, chunks=(rows,)) if scale is None else scale

    if S is not None and is_dask_array(S):  # per-sample matrices (or diagonals), factored where a pass reads them
        if (
            S.shape[0] != L
            or S.ndim not in (2, 3)
            or S.shape[-1] != n
            or (S.ndim == 2 and not per_sample)
            or (S.ndim == 3 and (S.shape[1] != n or g is not None))
        ):
            raise ValueError(
                f"a Dask Sigma or factor holds one matrix per sample: shape ({L}, {n}, {n}), or "
                f"({L}, {n}) diagonals with groups='sample'; got shape {S.shape}."
            )
        S = S.rechunk((rows,) + tuple((d,) for d in S.shape[1:]))
        factors = S.map_blocks(_factor_block, p, as_factor, dtype=float)
        unc = UncertaintySet(p=p, radius=radius).resolve(1, n)  # p, q, radius checked as in memory
        return ResolvedUncertainty(factors, S.ndim == 2, da.arange(L, chunks=(rows,)), unc.p, unc.q, unc.radius, scale)
    k = 0 if S is None else (np.shape(S)[0] if np.ndim(S) == 3 else 1)
    if per_sample or (groups is None and k == L and L > 1):  # one cone per sample, factors resolved as in memory
        small = UncertaintySet(unc_set.Sigma, None, p, radius, factor=unc_set.factor)
        if k == L or (per_sample and S is not None and np.ndim(S) == 2 and np.shape(S)[0] == L and not as_factor):
            small.groups = "sample" if per_sample else None
            unc = small.resolve(L, n)
            factors = da.from_array(unc.factors, chunks=(rows,) + unc.factors.shape[1:])
        else:  # one shared matrix for every sample's cone
            unc = small.resolve(1, n)
            factors = da.broadcast_to(
                unc.factors[0], (L,) + unc.factors.shape[1:], chunks=(rows,) + unc.factors.shape[1:]
            )
        return ResolvedUncertainty(factors, unc.diagonal, da.arange(L, chunks=(rows,)), unc.p, unc.q, unc.radius, scale)
    if g is None:  # one shared matrix
        if k not in (0, 1):
            unc = UncertaintySet(unc_set.Sigma, None, p, radius, factor=unc_set.factor).resolve(L, n)  # raises
        unc = UncertaintySet(unc_set.Sigma, None, p, radius, factor=unc_set.factor).resolve(1, n)
        return ResolvedUncertainty(
            unc.factors, unc.diagonal, da.zeros(L, dtype=np.intp, chunks=(rows,)), unc.p, unc.q, unc.radius, scale
        )
    labels = got["labels"]
    if labels.shape[0] > MAX_LABELS:
        raise ValueError(
            f"groups holds more than {MAX_LABELS} distinct labels; grouped uncertainty lives on the "
            "client: for one ellipsoid per sample pass groups='sample'."
        )
    unc = UncertaintySet(unc_set.Sigma, labels, p, radius, factor=unc_set.factor).resolve(labels.shape[0], n)
    gi = g.map_blocks(_group_index_block, labels, dtype=np.intp)
    return ResolvedUncertainty(unc.factors, unc.diagonal, gi, unc.p, unc.q, unc.radius, scale)
