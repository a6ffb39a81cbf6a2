"""[BBBB10] Table 1 reproduction (--quick), metrics of Sec. 4 and the data generator."""

import csv
import json

import numpy as np
import pytest

from rsvm_conic.datasets.bhadra2010 import make_bhadra2010
from rsvm_conic.metrics import epsilon_effective, maj_err, nom_err, quadratic_form_samples, robust_err


def test_metrics_against_loops():
    rng = np.random.default_rng(0)
    F = rng.standard_normal((7, 11))
    F[:, 0] = np.abs(F[:, 0]) + 0.1  # always +1
    y = np.where(rng.random(11) < 0.5, 1.0, -1.0)
    y[0] = 1.0
    pred = np.where(F >= 0, 1.0, -1.0)
    ne = 100 * sum(pred[s, t] != y[t] for s in range(7) for t in range(11)) / 77
    me = 100 * sum(np.sign(pred[:, t].sum()) != y[t] for t in range(11)) / 11
    re = 100 * sum(any(pred[s, t] != y[t] for s in range(7)) for t in range(11)) / 11
    assert nom_err(F, y) == pytest.approx(ne)
    assert maj_err(F, y) == pytest.approx(me)
    assert robust_err(F, y) == pytest.approx(re)
    assert robust_err(F, y) >= nom_err(F, y) - 1e-12
    # a tie in the vote (even number of samples) counts as an error
    assert maj_err(np.array([[1.0], [-1.0]]), np.array([1.0])) == 100.0
    with pytest.raises(ValueError):
        nom_err(F, y[:-1])
    with pytest.raises(ValueError):
        robust_err(F, 2 * y)


def test_epsilon_effective_against_loop():
    rng = np.random.default_rng(1)
    Ks = rng.standard_normal((50, 6, 6))
    a, y = rng.random(6), np.where(rng.random(6) < 0.5, 1.0, -1.0)
    q = np.array([(a * y) @ K @ (a * y) for K in Ks])
    np.testing.assert_allclose(quadratic_form_samples(a, y, Ks), q)
    t = np.median(q)
    assert epsilon_effective(a, y, t, Ks) == pytest.approx(np.mean(q > t))


def test_generator_shapes_and_noise_scale():
    d = make_bhadra2010(0, "uniform", n_per_class=20, n_samples=300)
    assert d.X.shape == (40, 2) and d.K_samples.shape == (300, 40, 40)
    assert set(np.unique(d.y)) == {-1.0, 1.0} and (d.y > 0).sum() == 20
    np.testing.assert_allclose(d.K_bar, d.X @ d.X.T)
    np.testing.assert_allclose(d.l, 0.25 * np.abs(d.K_bar))
    Z = (d.K_samples - d.K_bar) / np.where(d.l > 0, d.l, 1.0)
    assert np.abs(Z).max() <= 0.5 + 1e-12  # uniform on [-0.5, 0.5] times l
    assert not np.allclose(d.K_samples[0], d.K_samples[0].T)  # entries drawn independently
    same = make_bhadra2010(0, "uniform", n_per_class=20, n_samples=300)
    np.testing.assert_array_equal(same.K_samples, d.K_samples)  # seeded
    iid = make_bhadra2010(0, "gaussian", n_per_class=20, n_samples=5, iid=True)
    assert np.unique(iid.l).size == 1
    sym = make_bhadra2010(0, "gaussian", n_per_class=5, n_samples=3, symmetric=True)
    np.testing.assert_allclose(sym.K_samples, np.swapaxes(sym.K_samples, 1, 2))


def test_quick_reproduction_runs_and_resumes(tmp_path):
    from rsvm_conic import problems
    from rsvm_conic.problems.bhadra2010_table1 import METHODS, PAPER_TABLE1, TOL

    experiment = problems.get("REPRODUCTIONS", "bhadra2010-table1")
    assert experiment.run(tmp_path, quick=True, progress=False).ok
    md = (tmp_path / "table1.md").read_text()
    assert "SOCP(g)" in md and "Uniform Distribution" in md
    assert "## default: " in md and "## paper: " in md  # both readings of the data scale, one experiment
    with open(tmp_path / "table1.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 9 * len(METHODS)  # two regimes (was 9 * 7 before issue 15)
    for r in rows:
        assert 0.0 <= float(r["ours"]) <= 100.0
        # the verdict follows the stated rule from the measured numbers; a reason only when not reproduced
        close = abs(float(r["ours"]) - float(r["paper"])) <= TOL
        assert r["verdict"] == ("reproduced" if close else "not reproduced")
        assert (r["reason"] == "") == close
    # the paper column is the paper's Table 1
    first = [r for r in rows if r["law"] == "uniform" and r["metric"] == "ME" and r["regime"] == "default"]
    assert [float(r["paper"]) for r in first] == list(PAPER_TABLE1[("uniform", "ME")])
    for name in ("fig1.png", "fig2.png", "fig3.png"):
        assert (tmp_path / name).stat().st_size > 1000
    summary = json.loads((tmp_path / "summary.json").read_text())
    # deliberately changed with the paper regime (issue 15): its large effective C makes projected Newton
    # fall back to Clarabel (or certify nowhere) at a few grid points; the default reading stays warning-free
    assert summary["cells_with_warnings"]["default"] == 0
    assert summary["socp_grid_points_uncertified_left_out"]["default"] == 0
    # Theorem 1 in the pipeline: RSVM_SOCP^(g) on Gaussian noise keeps epsilon_effective near epsilon
    for regime in ("default", "paper"):
        eff = summary["epsilon_effective"][f"{regime}/gaussian/socp_g"]
        assert all(v <= float(e) + 0.1 for e, v in eff.items())
    # Figs. 1-2 in the paper's construction (training kappa = test noise scale): at kappa = 0 every RSVM is
    # the SVM and the test kernels are clean, so all curves start at the SVM's RobustErr
    for key, curves in summary["figure_curves"].items():
        if "/paper/" in key.split("/", 2)[2] or key.split("/")[2] == "paper":
            start = {m: v[0] for m, v in curves.items()}
            assert max(start.values()) - min(start.values()) < 1e-9, (key, start)
    # the negative-eigenvalue mass of the estimated beta is measured for every regime / law / noise model
    mass = summary["beta_negative_eigenvalue_mass"]
    assert len(mass) == 2 * 3 * 2 and all(0.0 < v["mean"] < 0.5 for v in mass.values())
    # resume: every cell is already stored, so a second run recomputes nothing and gives the same table
    n_lines = len((tmp_path / "results.jsonl").read_text().splitlines())
    assert experiment.run(tmp_path, quick=True, progress=False).ok
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == n_lines
    assert (tmp_path / "table1.md").read_text() == md
    from rsvm_conic.problems.bhadra2010_table1 import partial_table

    part = partial_table(tmp_path, quick=True)  # complete run: the partial table is the whole table
    assert "PARTIAL: 2 of 2 datasets" in part and part.split("\n", 2)[2].startswith(md.split("\n", 2)[2][:200])


def test_runner_instances_agree():
    from rsvm_conic import problems
    from rsvm_conic.runner import check_instance

    for name in ("rsvm-qp-small", "rsvm-socp-small"):
        inst = problems.get("INSTANCES", name)
        backends = tuple(b for b in inst.backends if b != "scs")  # SCS at 1e-8 is slow; checked by the CLI
        reports, ok = check_instance(inst, backends)
        assert ok, [(r.backend, r.gap, r.error) for r in reports]


def test_data_scale_is_exactly_a_factor_on_C():
    """Points x s with C / s^2 is the problem at scale 1 with C: same predictions, objective x 1/s^2.

    Checked by solving both (the nominal SVM, RSVM_QP by libsvm, RSVM_SOCP by projected Newton and by the
    cone interior point).
    """
    from rsvm_conic.formulations.kernel_robust import RSVMQP, RSVMSOCP
    from rsvm_conic.problems.bhadra2010_table1 import _nominal
    from rsvm_conic.uncertainty.chance import kappa
    from rsvm_conic.uncertainty.kernel_matrix import KernelUncertainty

    s, C = 3.0, 10.0
    tr, te = np.arange(40), np.arange(40, 60)
    fits = []
    for scale in (1.0, s):
        d = make_bhadra2010(5, "uniform", n_per_class=30, n_samples=60, center=(1.0, 1.0), data_scale=scale)
        U = KernelUncertainty.from_samples(d.K_samples, d.K_bar).subset(tr)
        y, Ct = d.y[tr], C / scale**2
        rows = d.K_bar[np.ix_(te, tr)]
        out = {}
        a, b = _nominal(U.K_bar, y, Ct)
        out["svm"] = (rows @ (y * a) + b, None)
        for name, f, route in (
            ("qp", RSVMQP(U.K_bar, y, U.beta("finite", rule="paper"), C=Ct, kappa=kappa(0.1, "finite")), "libsvm"),
            (
                "socp",
                RSVMSOCP(U.K_bar, y, U.beta("gaussian", rule="paper"), C=Ct, kappa=kappa(0.1, "gaussian")),
                "newton",
            ),
            ("socp_ipm", RSVMSOCP(U.K_bar, y, U.beta("finite", rule="paper"), C=Ct, kappa=1.0), "ipm"),
        ):
            sol = f.solve(route)
            out[name] = (rows @ (y * sol["alpha"]) + sol["b"], sol.objective)
        fits.append((d, out))
    (d1, o1), (ds, os_) = fits
    np.testing.assert_allclose(ds.X, s * d1.X, rtol=1e-12)  # same draws, scaled
    np.testing.assert_allclose(ds.K_samples, s**2 * d1.K_samples, rtol=1e-10)
    for name in o1:
        f1, fs = o1[name][0], os_[name][0]
        np.testing.assert_allclose(fs, f1, rtol=1e-4, atol=1e-4 * np.abs(f1).max(), err_msg=name)
        assert np.array_equal(np.sign(fs), np.sign(f1)), name
        if o1[name][1] is not None:
            assert os_[name][1] * s**2 == pytest.approx(o1[name][1], rel=1e-5), name
    with pytest.raises(ValueError, match="data_scale"):
        make_bhadra2010(0, "uniform", n_per_class=3, n_samples=2, data_scale=0.0)


def test_negative_eigenvalue_mass_against_a_known_spectrum():
    from rsvm_conic.problems.bhadra2010_table1 import negative_eigenvalue_mass

    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    ev = np.array([-2.0, -1.0, 0.5, 1.5, 3.0, 4.0])
    assert negative_eigenvalue_mass(Q @ np.diag(ev) @ Q.T) == pytest.approx(3.0 / 12.0)
    assert negative_eigenvalue_mass(np.eye(4)) == 0.0 and negative_eigenvalue_mass(np.zeros((3, 3))) == 0.0


def test_verdict_rule_and_reasons_follow_the_measured_numbers():
    from rsvm_conic.problems.bhadra2010_table1 import LAWS, METHODS, METRICS, PAPER_TABLE1, TOL, verdict

    paper = {
        ("r", law, k, m): (PAPER_TABLE1[(law, k)][i], {})
        for law in LAWS
        for k in METRICS
        for i, m in enumerate(METHODS)
    }
    for key in paper:
        assert verdict(paper, *key) == (True, "")
    t = dict(paper)
    p = PAPER_TABLE1[("uniform", "RE")][METHODS.index("socp_g")]
    t[("r", "uniform", "RE", "socp_g")] = (p - TOL + 0.01, {})
    assert verdict(t, "r", "uniform", "RE", "socp_g") == (True, "")  # inside the tolerance: no reason
    t[("r", "uniform", "RE", "socp_g")] = (p - 30.0, {})
    ok, why = verdict(t, "r", "uniform", "RE", "socp_g")
    assert not ok and "-30.00 points" in why and "cause (a)" in why
    t[("r", "uniform", "RE", "socp_g")] = (p + 6.0, {})  # above the paper: not the known cause (a)
    ok, why = verdict(t, "r", "uniform", "RE", "socp_g")
    assert not ok and "cause" not in why
    # (b) only when the measured Gaussian-noise ranking flips; (c) for the nominal RE
    t[("r", "gaussian", "RE", "socp")] = (50.0, {})
    t[("r", "gaussian", "RE", "socp_g")] = (93.7, {})
    assert "cause" not in verdict(t, "r", "gaussian", "RE", "socp")[1]
    t[("r", "gaussian", "RE", "socp_g")] = (40.0, {})
    assert "cause (b): SOCP(g) 40.00 vs SOCP 50.00" in verdict(t, "r", "gaussian", "RE", "socp")[1]
    t[("r", "beta", "RE", "svm")] = (60.0, {})
    assert "cause (c)" in verdict(t, "r", "beta", "RE", "svm")[1]


def test_theorem2_proof_minimiser_has_the_squared_norm():
    """[BBBB10] proof of Thm 2: argmin_s -s u + s^2 F^2 / 2 is u / F^2 (printed: u / F); the bound (8) holds."""
    from scipy.optimize import minimize_scalar

    rng = np.random.default_rng(0)
    beta_p, V, u = rng.random((5, 5)), rng.standard_normal((5, 5)), 0.7
    F = np.linalg.norm(beta_p * V)  # ||beta' o V||_F
    res = minimize_scalar(
        lambda s: -s * u + s**2 * F**2 / 2, bounds=(0, 100), method="bounded", options={"xatol": 1e-12}
    )
    assert res.x == pytest.approx(u / F**2, rel=1e-6) and abs(res.x - u / F) > 1e-2
    assert res.fun == pytest.approx(-0.5 * u**2 / F**2, rel=1e-9)
