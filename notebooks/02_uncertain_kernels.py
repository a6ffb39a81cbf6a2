# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # SVMs robust to uncertainty in the kernel matrix (Bhadra et al., ICML 2010)
#
# The kernel matrix itself is noisy: $K = \bar K + \Delta K$ with independent entries of known spread.
# In the SVM dual, ask the quadratic constraint to hold with probability $1-\varepsilon$:
#
# $$\min_{t,\ \alpha\in S_n}\ \tfrac12 t - e^\top\alpha\quad\text{s.t.}\quad
# P\big[\alpha^\top Y K Y\alpha \le t\big]\ge 1-\varepsilon,\qquad
# S_n=\{0\le\alpha\le C,\ y^\top\alpha=0\}.$$
#
# With $\nu=\alpha\circ\alpha$ both noise models give the deterministic problem (15)
#
# $$\alpha^\top Y\bar K Y\alpha + \kappa\sqrt{\nu^\top\beta\,\nu}\le t ,$$
#
# * **Gaussian** entries (Thm 1): $\kappa=-\Phi^{-1}(\varepsilon)$, $\beta_{ij}=\sigma_{ij}^2$ (models "(g)");
# * **finite support** $[a_{ij},b_{ij}]$ (Thm 2-3, Hoeffding-type): $\kappa=\sqrt{2\log(1/\varepsilon)}$,
#   $\beta_{ij}=l_{ij}^2\gamma_{ij}^2$ with $\gamma_{ij}$ from eq. (9).
#
# and three ways to solve it -- six robust SVMs in all:
#
# | route | what replaces $\beta$ | problem | backend |
# |---|---|---|---|
# | RSVM_QP (Thm 4-5) | rank one $\rho\rho^\top$ | SVM dual with kernel $\bar K + \kappa\,\mathrm{diag}(\rho)$ | libsvm |
# | RSVM_SOCP (eq. 16) | PSD part $B^\top B$ | SOCP | structure-exploiting IPM / Clarabel |
# | RSVM_QN (eq. 17) | $\beta$ itself | penalty function, non-convex in general | DFP quasi-Newton, multi-start |

# %%
import csv
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from rsvm_conic import problems
from rsvm_conic.datasets.bhadra2010 import make_bhadra2010
from rsvm_conic.formulations.kernel_robust import KernelRobustQNProblem, KernelRobustQPProblem, KernelRobustSOCPProblem
from rsvm_conic.metrics import epsilon_effective, kernel_robust_errors
from rsvm_conic.runner import check_instance, format_reports
from rsvm_conic.uncertainty.kernel_matrix import KernelUncertainty

# %% [markdown]
# ## The six models on one synthetic dataset (Sec. 5.1)
#
# Two Gaussian clouds in 2-D, the linear kernel $\bar K = XX^\top$, entrywise noise of scale
# $l_{ij}=0.25|\bar K_{ij}|$, and 40 noisy kernel samples. `KernelUncertainty.from_samples` estimates
# $\bar K$ and both $\beta$s from the samples of the training block.

# %%
data = make_bhadra2010(0, "uniform", n_per_class=40, n_samples=40)
n = len(data.y)
tr, te = np.arange(60), np.arange(60, n)
unc = KernelUncertainty.from_samples(data.K_samples[:, tr][:, :, tr])
ytr, yte = data.y[tr], data.y[te]
test_rows = data.K_samples[:, te][:, :, tr]  # one (n_test, n_train) block per kernel sample
eps, C = 0.1, 10.0
results = {}
for route, cls, backend in [("QP", KernelRobustQPProblem, "libsvm"), ("SOCP", KernelRobustSOCPProblem, "ipm"), ("QN", KernelRobustQNProblem, "dfp")]:
    for noise, tag in [("gaussian", "(g)"), ("finite", "")]:
        f = cls.from_uncertainty(unc, ytr, noise, eps, C=C)
        sol = f.solve(backend)
        F = np.stack([f.decision_function(sol, rows) for rows in test_rows])  # (n_samples, n_test)
        errs = kernel_robust_errors(F, yte)
        results[f"{route}{tag}"] = (f, sol)
        print(f"RSVM_{route + tag:8s} backend={sol.backend:8s} objective={sol.objective:10.4f}  "
              f"kappa={f.kappa:.3f}  NomErr={errs['NE']:5.1f}%  MajErr={errs['ME']:5.1f}%  RobustErr={errs['RE']:5.1f}%")

# %% [markdown]
# **Theorems 1/3 by Monte Carlo.** For the SOCP solution $(\alpha, t)$, the fraction of kernel samples
# with $\alpha^\top YKY\alpha > t$ ($\varepsilon_{\rm effective}$, Sec. 5.1.3) should stay below $\varepsilon$
# (400 kernel samples of the same data, drawn with the same generator; the reproduction below uses
# fresh samples for Fig. 3).

# %%
fresh = make_bhadra2010(0, "uniform", n_per_class=40, n_samples=400).K_samples[:, tr][:, :, tr]
for name in ["SOCP(g)", "SOCP"]:
    f, sol = results[name]
    alpha = sol["alpha"]
    eff = epsilon_effective(alpha, ytr, f.t_value(alpha), fresh)
    print(f"RSVM_{name:8s} epsilon = {eps}   epsilon_effective on 400 samples = {eff:.4f}")

# %% [markdown]
# ## Backends agree (shared runner)
#
# RSVM_QP is the SVM dual with a modified kernel: libsvm, Clarabel and SCS must give the same optimum;
# RSVM_SOCP: the structure-exploiting interior point against Clarabel and SCS.

# %%
for name in ["rsvm-qp-small", "rsvm-socp-small"]:
    inst = problems.get("INSTANCES", name)
    reports, ok = check_instance(inst)
    print(format_reports(reports, inst.description))
    print("agree within rtol", inst.rtol, ":", ok, "\n")
    assert ok

# %% [markdown]
# ## Table 1, quick version, next to the paper
#
# `bhadra2010-table1` with `quick=True`: 2 datasets of 60 points per noise law (paper: 20 of 200), 40 kernel
# samples (paper: 100), $C\in\{1,10\}$, $\varepsilon\in\{0.1,0.5\}$ (paper: 6 x 10 grid), 5-fold CV; best grid
# point per classifier and metric, in two readings of the unstated data scale (`default`, `paper`). Every "ours"
# number below is computed in this run, as mean ± sd over its 2 data sets; the paper's numbers are the reference
# column typed from its Table 1. Accuracy = 100 - error (%). With 2 data sets the spread of a mean is not known,
# so every verdict of the quick run is "inconclusive"; the full run's verdicts are on the documentation's
# reproductions page.

# %%
out = Path("bhadra2010-table1")
assert problems.get("REPRODUCTIONS", "bhadra2010-table1").run(out, quick=True, progress=False).ok

# %%
rows = list(csv.DictReader(open(out / "table1.csv")))
print(f"{'block':8s} {'law':9s} {'metric':6s} {'method':8s} {'ours':>15s} {'paper':>7s} verdict")
for r in rows:
    sd = f" ± {float(r['ours_sd']):5.2f}" if r["ours_sd"] else ""
    print(f"{r['block']:8s} {r['law']:9s} {r['metric']:6s} {r['method']:8s} {float(r['ours_mean']):7.2f}{sd:>8s} "
          f"{float(r['paper']):7.2f} {r['verdict']}")

# %% [markdown]
# What to read in it (quick settings, so only coarse statements hold):
#
# * the nominal SVM has the lowest RobustErr accuracy in every law and reading (ties allowed), as in the
#   paper -- checked below;
# * the ordering between routes (SOCP/QN vs QP) and the paper's very high RobustErr accuracies for SOCP/QN
#   (~93%) are **not** reproduced by these small runs; the full run (`rsvm-conic reproduce bhadra2010-table1`)
#   is needed before comparing cell by cell.

# %%
by = {(r["block"], r["law"], r["metric"], r["method"]): float(r["ours_mean"]) for r in rows}
robust = ["QP(g)", "SOCP(g)", "QN(g)", "QP", "SOCP", "QN"]
for block in ["default", "paper"]:
    for law in ["uniform", "gaussian", "beta"]:
        svm_re = by[(block, law, "RE", "SVM")]
        best_robust = max(by[(block, law, "RE", m)] for m in robust)
        worst_robust = min(by[(block, law, "RE", m)] for m in robust)
        print(f"{block:8s} {law:9s} RobustErr accuracy: nominal SVM {svm_re:6.2f}   robust models "
              f"{worst_robust:6.2f} .. {best_robust:6.2f}")
        assert svm_re <= worst_robust

# %% [markdown]
# ## Figures 1-3
#
# Fig. 1: RobustErr as the test noise is scaled ($C=10$, $\varepsilon=0.1$); Fig. 2: the same with i.i.d.
# noise (RSVM_QP vs SVM); Fig. 3: $\varepsilon_{\rm effective}$ against $\varepsilon$ for RSVM_SOCP and
# RSVM_SOCP(g) (should stay below the diagonal when the noise model is right).

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
for ax, name in zip(axes, ["fig1.png", "fig2.png", "fig3.png"]):
    ax.imshow(plt.imread(out / name))
    ax.set_axis_off()
    ax.set_title(name)
fig.tight_layout()
fig.savefig("02_figures_1_3.png", dpi=100)
plt.show()
