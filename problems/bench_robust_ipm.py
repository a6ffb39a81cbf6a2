"""Benchmark: structure-exploiting solvers against CVXPY + Clarabel (prints measured ratios; not a test).

Part 1 -- robust linear SVM SOCP [CJ20, eq. 4, p = 2]: the ``ipm`` backend
(:mod:`rsvm_conic.solvers.ipm.robust_svm`, Schur complement of size n + 1 built with BLAS) against
the vectorised CVXPY model ``RobustProblem(...).solve("clarabel")`` (the project's builder; time
includes building the model, as a user pays it; Clarabel's own solve time is printed too).
Grid: L in {2000, 20000, 200000}, n in {20, 50, 200}, k in {1, 2, L} (one shared ellipsoid, one
per class, one diagonal ellipsoid per sample).  The CVXPY side is skipped where L * n > 10^6
(grouped) or L * n > 10^5 (per sample): under load, L = 2000, n = 50 per sample takes about 34 s
and n = 200 more than 5 minutes, L = 20000, n = 50 grouped about 24 s; the skipped cells are larger
(the table says "skipped").  The ipm side itself is skipped for per-sample ellipsoids whose
expected peak memory exceeds what the machine has available (see :func:`_sample_ipm_fits`).
Both sides are checked to reach the same objective (relative difference printed).

Part 2 -- RSVM_SOCP [BBBB10, eq. 16] re-solved over the paper's grid C in {0.1, 1, 5, 10, 50,
100} x epsilon in {0.05, ..., 0.5} (60 points, kappa = sqrt(2 log(1/epsilon))) at n = 160 (Sec. 5.1
synthetic data: two Gaussian classes of 80 points, linear kernel, beta = (0.25 K_bar)^2): the warm-started
route :func:`rsvm_conic.solvers.rsvm_socp.rsvm_socp_grid` against the CVXPY DPP re-solve loop
(``KernelRobustSOCPProblem`` of :mod:`rsvm_conic.formulations.kernel_robust`, compiled once, ``set_params`` per point,
Clarabel), and against the same route without warm starts and the exact cone IPM alone (why the
projected Newton route was chosen).

``rsvm-conic bench robust-ipm [--quick]`` (quick: L = 2000 only, n in {20, 50});
``rsvm-conic bench robust-ipm-grid`` runs Part 2 alone.  Part 2 also prints CPU time
(``time.process_time``; everything is single-threaded here), which leaves out the time spent
waiting for the shared cores.
"""

from __future__ import annotations

import functools
import os
import time
import warnings

import numpy as np

from ._bench import available_mb, peak_mb

from rsvm_conic.formulations.robust import RobustProblem
from rsvm_conic.solvers.ipm.robust_svm import robust_svm_ipm
from rsvm_conic.uncertainty.sets import UncertaintySet

CVXPY_MAX_LN = 1_000_000  # shared or grouped ellipsoids: CVXPY + Clarabel only where L * n <= 1e6
CVXPY_MAX_LN_SAMPLE = 100_000  # per-sample ellipsoids (L cones of size n + 1): only where L * n <= 1e5
# per-sample ellipsoids hold about 30 arrays the size of X at once in the IPM (measured: the process's peak
# resident memory 9.2 GB at L = 2e5, n = 200, X 305 MB); where the available memory is unknown, the cells
# above IPM_MAX_LN_SAMPLE are skipped
SAMPLE_PEAK_PER_X = 30
IPM_MAX_LN_SAMPLE = 4_000_000


def _sample_ipm_fits(L, n):
    """``(runs, why)``: whether the interior point on L x n per-sample ellipsoids fits in 60% of the available
    memory (expected peak ``SAMPLE_PEAK_PER_X`` times the bytes of X)."""
    need = SAMPLE_PEAK_PER_X * L * n * 8 / 2**20
    avail = available_mb()
    if avail is None:
        return L * n <= IPM_MAX_LN_SAMPLE, f"L*n > {IPM_MAX_LN_SAMPLE:.0e} per sample, available memory unknown"
    return need <= 0.6 * avail, f"per sample: needs ~{need / 1024:.1f} GB, {avail / 1024:.1f} GB available"


def _data(L, n, k, seed=0):
    """Two Gaussian classes plus group noise of known covariance; returns X, y and an UncertaintySet."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(L) < 0.5, -1.0, 1.0)
    direction = rng.standard_normal(n)
    direction /= np.linalg.norm(direction)
    X = rng.standard_normal((L, n)) + y[:, None] * direction  # separation 2
    if k == "L":
        var = rng.uniform(0.02, 0.2, (L, n))
        X += np.sqrt(var) * rng.standard_normal((L, n))
        unc = UncertaintySet(Sigma=var, groups="sample", radius=1.0)
    else:
        groups = (y > 0).astype(int) if k == 2 else np.zeros(L, dtype=int)
        Sig = []
        for g in range(k):
            B = rng.standard_normal((n, n)) / np.sqrt(n)
            S = 0.09 * (B @ B.T + 0.1 * np.eye(n))
            Sig.append(S)
            idx = groups == g
            X[idx] += rng.standard_normal((int(idx.sum()), n)) @ np.linalg.cholesky(S).T
        unc = (
            UncertaintySet(Sigma=np.stack(Sig), groups=groups, radius=1.0)
            if k == 2
            else UncertaintySet(Sigma=Sig[0], radius=1.0)
        )
    return X, y, unc


def _objective(X, y, C, unc_resolved, w, b):
    pen = unc_resolved.robust_penalty(w)
    return 0.5 * float(w @ w) + C * float(np.sum(np.maximum(0.0, 1.0 - y * (X @ w + b) + pen)))


def part1(Ls, ns, ks, C=1.0):
    print(f"Part 1: robust linear SVM SOCP (eq. 4, p = 2), C = 1, radius = 1 ({os.cpu_count()} cores)")
    hdr = (
        f"{'L':>7} {'n':>4} {'k':>6} | {'ipm [s]':>8} {'its':>4} {'gap_rel':>8} | {'CVXPY+Clarabel [s]':>18} "
        f"{'(Clarabel solve)':>16} | {'ratio':>7} {'ratio vs solve':>14} | {'rel. obj. diff':>14}"
    )
    print(hdr)
    print("-" * len(hdr))
    rows = []
    for L in Ls:
        for n in ns:
            for k in ks:
                kk = "L" if k == "L" else str(k)
                fits, why = _sample_ipm_fits(L, n) if k == "L" else (True, "")
                if not fits:
                    print(f"{L:>7} {n:>4} {kk:>6} | skipped ({why})", flush=True)
                    rows.append((L, n, kk, None, None, None, None))
                    continue
                X, y, unc = _data(L, n, k)
                res = unc.resolve(L, n)
                t0 = time.perf_counter()
                vals, info = robust_svm_ipm(X, y, C, res.gamma, res.factors, res.diagonal, res.group_index)
                t_ipm = time.perf_counter() - t0
                obj_ipm = _objective(X, y, C, res, vals["w"], vals["b"])
                if L * n <= (CVXPY_MAX_LN_SAMPLE if k == "L" else CVXPY_MAX_LN):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        t0 = time.perf_counter()
                        f = RobustProblem(X, y, unc, C=C)
                        sol = f.solve("clarabel")
                        t_cvx = time.perf_counter() - t0
                    t_solve = sol.info.get("solve_time") or float("nan")
                    diff = abs(sol.objective - obj_ipm) / abs(sol.objective)
                    line = (
                        f"{L:>7} {n:>4} {kk:>6} | {t_ipm:8.2f} {info['iterations']:>4} {info['gap_rel']:8.1e} | "
                        f"{t_cvx:18.2f} "
                        f"{t_solve:16.2f} | {t_cvx / t_ipm:7.1f} {t_solve / t_ipm:14.1f} | {diff:14.1e}"
                    )
                    rows.append((L, n, kk, t_ipm, t_cvx, t_solve, diff))
                else:
                    why = "(L*n > 1e5)" if k == "L" else "(L*n > 1e6)"
                    line = (
                        f"{L:>7} {n:>4} {kk:>6} | {t_ipm:8.2f} {info['iterations']:>4} {info['gap_rel']:8.1e} | "
                        f"{'skipped':>18} "
                        f"{why:>16} | {'-':>7} {'-':>14} | {'-':>14}"
                    )
                    rows.append((L, n, kk, t_ipm, None, None, None))
                print(line, flush=True)
    return rows


def _bhadra_synthetic(n=160, seed=0):
    rng = np.random.default_rng(seed)
    h = n // 2
    X = np.r_[rng.normal(1.0, 1.0, (h, 2)), rng.normal(-1.0, 1.0, (n - h, 2))]
    y = np.r_[np.ones(h), -np.ones(n - h)]
    K = X @ X.T
    beta = (0.25 * K) ** 2  # Gaussian noise with l_ij = 0.25 K_ij: sigma_ij^2 = l_ij^2 (Sec. 5.1)
    return K, y, beta


REPEATS = 3  # the grid timings (CVXPY loop and warm-started route) are the best of this many runs


def part2(n=160):
    from rsvm_conic.solvers.rsvm_socp import rsvm_socp_grid, rsvm_socp_ipm, solve_rsvm_socp
    from rsvm_conic.uncertainty.chance import kappa
    from rsvm_conic.uncertainty.kernel_matrix import psd_part

    print(
        f"\nPart 2: RSVM_SOCP (eq. 16), n = {n}, grid C x epsilon = 6 x 10 = 60 points, kappa = sqrt(2 log(1/epsilon))"
    )
    K, y, beta = _bhadra_synthetic(n)
    beta_hat, B = psd_part(beta)
    Cs = [0.1, 1.0, 5.0, 10.0, 50.0, 100.0]
    eps = np.round(np.arange(0.05, 0.51, 0.05), 2)
    kappas = [kappa(e, "finite") for e in eps]
    points = [(C, kp) for C in Cs for kp in kappas]

    # CVXPY DPP loop (one compiled problem, parameters changed per point)
    from rsvm_conic.formulations.kernel_robust import KernelRobustSOCPProblem

    f = KernelRobustSOCPProblem(K, y, beta, C=1.0, kappa=1.0)
    label = "CVXPY DPP loop (kernel_robust.KernelRobustSOCPProblem, Clarabel)"
    ref, n_inacc = {}, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f.set_params(C=Cs[0], kappa=kappas[0])
        f.solve("clarabel", accept_inaccurate=True)  # compile once (not counted: a DPP user pays it once)
    import sklearn.svm  # noqa: F401  (the route's libsvm start imports it lazily; import time is not solve time)

    t_cvx = c_cvx = t_fast = c_fast = np.inf
    for _ in range(REPEATS):  # best of REPEATS, as timeit does; the two routes alternate (same load on both)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            n_inacc = 0
            t0, c0 = time.perf_counter(), time.process_time()
            for C, kp in points:
                f.set_params(C=C, kappa=kp)
                sol = f.solve("clarabel", accept_inaccurate=True)
                n_inacc += sol.status != "optimal"
                ref[(C, kp)] = sol.objective
            t_cvx, c_cvx = min(t_cvx, time.perf_counter() - t0), min(c_cvx, time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()  # each call starts from scratch (no state is kept)
        grid = rsvm_socp_grid(K, B, y, Cs, kappas, factor=True)
        t_fast, c_fast = min(t_fast, time.perf_counter() - t0), min(c_fast, time.process_time() - c0)
    grid_peak_mb = peak_mb(lambda: rsvm_socp_grid(K, B, y, Cs, kappas, factor=True))  # one more run, not timed

    t0, c0 = time.perf_counter(), time.process_time()
    cold = {(C, kp): solve_rsvm_socp(K, B, y, C, kp, factor=True) for C, kp in points}
    t_cold, c_cold = time.perf_counter() - t0, time.process_time() - c0

    Q = y[:, None] * K * y[None, :]
    t0, c0 = time.perf_counter(), time.process_time()
    n_ipm_ok = 0
    for C, kp in points:
        n_ipm_ok += rsvm_socp_ipm(Q, B, y, C, kp)[2]["status"] == "optimal"
    t_ipm, c_ipm = time.perf_counter() - t0, time.process_time() - c0

    diffs = [abs(grid[p].objective - ref[p]) / max(1.0, abs(ref[p])) for p in points]
    diffs_cold = [abs(cold[p].objective - ref[p]) / max(1.0, abs(ref[p])) for p in points]
    routes = [grid[p].route for p in points]
    its = [grid[p].iterations for p in points]
    print(f"(CVXPY loop and warm-started route: best of {REPEATS} runs each; cold start and IPM: one run)")
    print(f"{'method':<58} {'wall [s]':>9} {'per point [ms]':>14} {'wall ratio':>10} {'CPU [s]':>8} {'CPU ratio':>9}")
    for name, tw, tc in [
        (label, t_cvx, c_cvx),
        ("projected Newton, warm-started (rsvm_socp_grid)", t_fast, c_fast),
        ("projected Newton, cold start at every point", t_cold, c_cold),
        ("exact cone IPM on (16), cold at every point", t_ipm, c_ipm),
    ]:
        print(f"{name:<58} {tw:9.3f} {tw / 60 * 1e3:14.1f} {tw / t_cvx:10.3f} {tc:8.3f} {tc / c_cvx:9.3f}")
    print(
        f"warm route: max rel. objective diff to Clarabel {max(diffs):.1e} (cold: {max(diffs_cold):.1e}); "
        f"routes: {routes.count('projected-newton')} certified projected Newton, {routes.count('cone-ipm')} "
        f"cone-IPM fallback; iterations per point: median {int(np.median(its))}, max {max(its)}; "
        f"Clarabel inaccurate (accepted) at {n_inacc} of 60 points; cone IPM optimal at {n_ipm_ok}/60."
    )
    gaps = [grid[p].solve_info.gap_rel for p in points]
    print(
        f"warm route: certified relative gaps max {max(gaps):.1e} (tolerance 1e-9), all optimal: "
        f"{all(grid[p].solve_info.status == 'optimal' for p in points)}; peak Python memory of one grid "
        f"(tracemalloc) {grid_peak_mb:.2f} MB; {os.cpu_count()} cores; target CPU ratio <= 0.1: "
        f"{'met' if c_fast / c_cvx <= 0.1 else 'NOT met'} ({c_fast / c_cvx:.3f})"
    )
    return t_fast / t_cvx


def run_part2(quick: bool = False) -> int:
    """Part 2 alone (``rsvm-conic bench robust-ipm-grid``)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        part2()
    return 0


def run(quick: bool = False) -> int:
    from threadpoolctl import threadpool_limits

    print(
        "(timings on this machine, measured side by side in one run; the 2 cores are shared with other "
        "jobs, so absolute times are noisy -- compare the ratios.  BLAS is limited to 1 thread for both "
        "sides: under oversubscription 2 OpenBLAS threads made the ipm backend 2x slower)"
    )
    with threadpool_limits(limits=1, user_api="blas"):
        if quick:
            part1([2000], [20, 50], [1, 2, "L"])
        else:
            part1([2000, 20000, 200000], [20, 50, 200], [1, 2, "L"])
        part2()
    return 0


# ---------------------------------------------------------------------------- target 1: the lower bound
def _lower_bound_unit(X, reps=5) -> float:
    """Best-of-``reps`` seconds of what any interior-point iteration must do at least: one weighted Gram
    matrix [X 1]' D [X 1] (a BLAS ``dsyrk`` on the pre-scaled rows) plus one ``X w`` and one ``X' v`` pass."""
    from scipy.linalg.blas import dsyrk

    L, n = X.shape
    Xs = np.empty((L, n + 1), order="F")
    Xs[:, :n] = X * np.sqrt(np.linspace(0.5, 1.5, L))[:, None]
    Xs[:, n] = 1.0
    w, v = np.ones(n), np.ones(L)
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        dsyrk(1.0, Xs, trans=1)
        X @ w
        X.T @ v
        best = min(best, time.perf_counter() - t0)
    return best


def part_bound(Ls, ns, ks, C=1.0, print_fn=functools.partial(print, flush=True)):
    """The interior point against its own lower bound: time / (iterations x (one syrk + two matrix-vector
    passes)), goal <= 1.5; its certified relative gap (the solve raises unless it is optimal at 1e-8); peak traced
    memory against the bytes of X; Clarabel's iteration count where its CVXPY model is affordable (L n <= 10^6
    grouped)."""
    import tracemalloc

    print_fn(
        f"Target 1: interior point vs its lower bound ({os.cpu_count()} cores, 1 BLAS thread; time: best of 3 "
        "at L <= 2e4, one run above, untraced; peak: one more run traced by tracemalloc)"
    )
    hdr = (
        f"{'L':>7} {'n':>4} {'k':>3} | {'ipm [s]':>8} {'its':>4} {'gap_rel':>8} {'Clarabel its':>12} | "
        f"{'unit [ms]':>9} {'its x unit [s]':>14} {'ratio':>6} | {'peak [MB]':>9} {'X [MB]':>7} {'peak/X':>6}"
    )
    print_fn(hdr)
    print_fn("-" * len(hdr))
    rows = []
    for k in ks:  # load the compiled kernels (numba's cache) before any traced or timed run
        X, y, unc = _data(200, 5, k)
        res = unc.resolve(200, 5)
        robust_svm_ipm(X, y, C, res.gamma, res.factors, res.diagonal, res.group_index)
    for L in Ls:
        for n in ns:
            for k in ks:
                kk = "L" if k == "L" else str(k)
                fits, why = _sample_ipm_fits(L, n) if k == "L" else (True, "")
                if not fits:
                    print_fn(f"{L:>7} {n:>4} {kk:>3} | skipped ({why})")
                    continue
                X, y, unc = _data(L, n, k)
                res = unc.resolve(L, n)
                args = (X, y, C, res.gamma, res.factors, res.diagonal, res.group_index)
                tracemalloc.start()  # one traced run for the peak memory (tracing slows allocations: not timed)
                robust_svm_ipm(*args)
                peak = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
                times = []
                for _ in range(3 if L <= 20000 else 1):
                    t0 = time.perf_counter()
                    vals, info = robust_svm_ipm(*args)
                    times.append(time.perf_counter() - t0)
                t_ipm = min(times)
                its = info["iterations"]
                clar = "-"
                if k != "L" and L * n <= CVXPY_MAX_LN:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        sol = RobustProblem(X, y, unc, C=C).solve("clarabel")
                    clar = str(sol.info.get("num_iters", sol.info.get("iterations", "?")))
                unit = _lower_bound_unit(X)
                xmb = X.nbytes / 2**20
                ratio = t_ipm / (its * unit)
                print_fn(
                    f"{L:>7} {n:>4} {kk:>3} | {t_ipm:8.3f} {its:>4} {info['gap_rel']:8.1e} {clar:>12} | "
                    f"{1e3 * unit:9.2f} {its * unit:14.3f} {ratio:6.2f} | {peak:9.0f} {xmb:7.0f} {peak / xmb:6.2f}"
                )
                rows.append(
                    dict(
                        L=L,
                        n=n,
                        k=kk,
                        time=t_ipm,
                        iterations=its,
                        gap=info["gap_rel"],
                        unit=unit,
                        ratio=ratio,
                        peak_mb=peak,
                    )
                )
    return rows


def run_bound(quick: bool = False) -> int:
    """Target 1 alone (``rsvm-conic bench robust-ipm-bound``; quick: L = 2e4, n = 50)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        if quick:
            part_bound([20000], [50], [1, 2, "L"])
        else:
            part_bound([20000, 200000], [50, 200], [1, 2, "L"])
    return 0


# ---------------------------------------------------------------------------- refinement
def _two_groups(L, n, seed):
    """Two-group robust SVMs: X standard normal, ``y = sign(X w0 + 0.3 noise)``, one ellipsoid per class (``0.05 I``,
    ``0.1 I``), radius 0.5, C = 1: ``(X, y, groups, Sigma)``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((L, n))
    w0 = rng.standard_normal(n)
    y = np.sign(X @ w0 + 0.3 * rng.standard_normal(L))
    return X, y, (y > 0).astype(int), np.stack([0.05 * np.eye(n), 0.1 * np.eye(n)])


def _refined_solve(X, y, g, Sigma, refine, chunks=None):
    """``(status, iterations, seconds, passes, log)`` of the interior point with at most ``refine`` corrections per
    refined corrector solve; ``chunks``: on Dask row blocks of these rows (threaded scheduler)."""

    if chunks is not None:
        import dask.array as da

        X, y, g = (da.from_array(a, chunks=(chunks,) + a.shape[1:]) for a in (X, y, g))
    f = RobustProblem(X, y, UncertaintySet(Sigma=Sigma, groups=g, radius=0.5), C=1.0)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sol = f.ipm_solution(refine=refine, accept_inaccurate=True)
    return sol.info["status"], sol.info["iterations"], time.perf_counter() - t0, sol.info.get("passes"), sol.info["log"]


def run_refine(quick: bool = False) -> int:
    """``rsvm-conic bench robust-ipm-refine``: the interior point's iterative refinement
    (:class:`~rsvm_conic.solvers.ipm.engine.Refinement`) on two-group robust SVMs (:func:`_two_groups`, n = 20;
    L = 3000 and 10000 with 20 seeds each, quick: 3000 with 8), with one correction per refined corrector solve
    against the default (at most ``REFINE_STEPS``), side by side per instance: runs that do not end optimal, the
    median time ratio over instances where both are optimal, the relative KKT residuals of the refined solves, and on
    Dask row blocks (chunks of L / 4 rows, 4 seeds) the passes over the data."""
    from rsvm_conic.solvers.ipm.engine import REFINE_STEPS

    sizes, seeds = ([3000], range(8)) if quick else ([3000, 10000], range(20))
    print(f"two-group robust SVMs, n = 20: one correction per refined solve (1) against at most {REFINE_STEPS}")
    print(f"{'L':>6} {'runs':>5} {'not optimal (1)':>16} {'not optimal':>12} {'time ratio':>11} {'>1 correction':>14}")
    worst = []
    _refined_solve(*_two_groups(500, 20, 0), 1)  # compile the cone loops outside the timings
    for L in sizes:
        bad1 = bad = 0
        ratios, multi = [], 0
        for seed in seeds:
            data = _two_groups(L, 20, seed)
            if seed % 2:  # alternate which goes first
                full = _refined_solve(*data, REFINE_STEPS)
                one = _refined_solve(*data, 1)
            else:
                one = _refined_solve(*data, 1)
                full = _refined_solve(*data, REFINE_STEPS)
            bad1 += one[0] != "optimal"
            bad += full[0] != "optimal"
            if one[0] == full[0] == "optimal":
                ratios.append(full[2] / one[2])
            hist = [e["refine"] for e in full[4] if e.get("refine")]
            multi += sum(len(h) > 2 for h in hist)
            worst += [h for h in hist if len(h) > 2]
        med = float(np.median(ratios)) if ratios else float("nan")
        print(f"{L:>6} {len(seeds):>5} {bad1:>16} {bad:>12} {med:>11.3f} {multi:>14}")
    print("relative KKT residuals of the solves that took more than one correction (before, after each):")
    for h in sorted(worst, key=lambda h: -h[0])[:6]:
        print("   " + " -> ".join(f"{v:.1e}" for v in h))
    print(f"Dask row blocks (L = 3000, chunks of 750 rows): passes over the data, 1 against {REFINE_STEPS} corrections")
    for seed in range(4):
        data = _two_groups(3000, 20, seed)
        one, full = _refined_solve(*data, 1, chunks=750), _refined_solve(*data, REFINE_STEPS, chunks=750)
        print(f"   seed {seed}: {one[0]} {one[1]} iterations, {one[3]} passes;", end=" ")
        print(f"{full[0]} {full[1]} iterations, {full[3]} passes")
    return 0


def run_scale(quick: bool = False) -> int:
    """``rsvm-conic bench robust-ipm-scale``: which column scales the interior point certifies (what
    :data:`~rsvm_conic.solvers.ipm.status.WELL_SCALED` rests on).  Two-group robust SVMs (:func:`_two_groups`, 3000 x
    20, 3 seeds; quick: 1) with column j scaled by ``overall * spread^(j / (n - 1) - 1/2)`` and the ellipsoids scaled
    with it (the same problem in other units): per (spread, overall) the iterations, or FAIL where the route did not
    certify, with the columns' root mean squares."""
    from rsvm_conic.exceptions import SolverError
    from rsvm_conic.solvers.ipm.status import column_rms

    seeds = range(1) if quick else range(3)
    print("two-group robust SVMs, 3000 x 20, columns rescaled: iterations per seed (FAIL: not certified)")
    print(f"{'spread':>8} {'overall':>8} {'column rms':>20}  runs")
    for spread in (1.0, 1e2, 1e4, 1e6):
        for overall in (1e-4, 1e-2, 1.0, 1e2, 1e4):
            d = overall * np.logspace(0, np.log10(spread), 20) / np.sqrt(spread)
            runs, rms = [], None
            for seed in seeds:
                X, y, g, Sigma = _two_groups(3000, 20, 100 + seed)
                X = X * d
                rms = column_rms(X)
                f = RobustProblem(X, y, UncertaintySet(Sigma=Sigma * np.outer(d, d), groups=g, radius=0.5), C=1.0)
                try:
                    runs.append(str(f.solve("ipm").info["iterations"]))
                except SolverError:
                    runs.append("FAIL")
            print(f"{spread:>8.0e} {overall:>8.0e} {rms.min():>9.1e}-{rms.max():<9.1e}  {' '.join(runs)}", flush=True)
    return 0


# ---------------------------------------------------------------------------- runner cross-checks
def _with_ipm(cls):
    """``cls`` plus the ``ipm`` backend (what ``RobustProblem._solve_ipm`` will do once the lead adds it)."""

    return type(cls.__name__ + "IPM", (cls,), {"_solve_ipm": lambda self, **opts: self.ipm_solution(**opts)})


def _instance(k, chance=False):
    def build():
        X, y, unc = _data(1500, 10, k, seed=3)
        Xt, yt, _ = _data(500, 10, k, seed=4)
        if chance:
            from rsvm_conic.formulations.chance import ChanceConstrainedProblem

            groups = (y > 0).astype(int)
            S = np.stack([np.diag(np.full(10, 0.05)), np.diag(np.linspace(0.01, 0.1, 10))])
            return _with_ipm(ChanceConstrainedProblem)(X, y, Sigma=S, groups=groups, C=1.0, epsilon=0.1), Xt, yt
        return _with_ipm(RobustProblem)(X, y, unc, C=1.0), Xt, yt

    return build


def _instances():
    from rsvm_conic.runner.compare import ProblemInstance

    desc = "robust SVM (eq. 4), L = 1500, n = 10: structured IPM vs CVXPY + Clarabel/SCS"
    return {
        "robust-ipm-shared": ProblemInstance(
            "robust-ipm-shared",
            desc + ", one shared ellipsoid",
            _instance(1),
            backends=("clarabel", "ipm", "scs"),
            rtol=1e-4,
        ),
        "robust-ipm-class": ProblemInstance(
            "robust-ipm-class",
            desc + ", one ellipsoid per class",
            _instance(2),
            backends=("clarabel", "ipm", "scs"),
            rtol=1e-4,
        ),
        "robust-ipm-sample": ProblemInstance(
            "robust-ipm-sample",
            desc + ", one ellipsoid per sample",
            _instance("L"),
            backends=("clarabel", "ipm"),
            rtol=1e-6,
        ),
        "chance-ipm-class": ProblemInstance(
            "chance-ipm-class",
            "chance-constrained SVM (Chebyshev, eps = 0.1), per-class covariances: IPM vs Clarabel",
            _instance(2, chance=True),
            backends=("clarabel", "ipm"),
            rtol=1e-6,
        ),
    }


INSTANCES = _instances()
BENCHMARKS = {
    "robust-ipm": run,
    "robust-ipm-grid": run_part2,
    "robust-ipm-bound": run_bound,
    "robust-ipm-refine": run_refine,
    "robust-ipm-scale": run_scale,
}

if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(run(quick="--quick" in sys.argv))
