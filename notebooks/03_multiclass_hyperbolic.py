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
# # Multi-class SVMs: Weston-Watkins, the hyperbolic machine, the consolidation kernel [ElD19]
#
# **Weston-Watkins M-SVM (thesis eq. 1.9).** One function $h_k(x)=\langle w_k,\phi(x)\rangle+b_k$ per class;
# every wrong class must trail the right one by a margin:
#
# $$\min\ \tfrac12\sum_k\|w_k\|^2 + C\sum_i\sum_{k\ne y_i}\xi_{ik}\quad\text{s.t.}\quad
# h_{y_i}(x_i)-h_k(x_i)\ge 2-\xi_{ik},\ \xi_{ik}\ge0 ,$$
#
# a QP (dual solved by CVXPY, exactly two SVCs for two classes, or a smoothed L-BFGS primal on features).
#
# **Hyperbolic machine (chapter 3).** $h_k(x)=R_k-\|O_k-\phi(x)\|$: class $k$ is a ball of centre $O_k$ and
# radius $R_k$ in feature space; the decision picks the largest $h_k$ (a dummy category on ties). Problem 1
# (truncated hinge on the margins, $\lambda\|R\|^2$) is non-convex, but each $h_k$ is a difference of convex
# functions of $(R,O)$: a convex-concave procedure solves a sequence of SOCPs.
#
# **Consolidation kernel (chapter 4).** Split every class into subclasses (k-means); for two subclass centres
# $c_1,c_2$ of the same class, the direction $v=c_2-c_1$ should make $x$ and $x+v$ similar:
# $\kappa(x,x')=\tau_0G_0(x-x')+\sum_i\tau_i h_{d_i}(\langle u_i,x-x'\rangle)G_1(x-x')$ with a periodic
# $h_d$ of period $d_i=\|v_i\|$; $\kappa^m$ truncates its Fourier series at $m$ terms. (The printed
# frequency $\mu_{ij}=2\pi j v_i/\|v_i\|$ has the wrong period; the library uses $2\pi j v_i/\|v_i\|^2$.)

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_blobs

from rsvm_conic import problems
from rsvm_conic.problems.dakdouki2019_table4_2 import THESIS_TABLE42, THESIS_TABLE43
from rsvm_conic.datasets.toys import make_xor_thesis
from rsvm_conic.estimators.multiclass import HyperbolicSVC, WestonWatkinsSVC
from rsvm_conic.kernels.consolidation import ConsolidationKernel
from rsvm_conic.plotting import plot_decision_regions

# %% [markdown]
# ## WW vs hyperbolic decision regions in 2-D
#
# Three overlapping classes. The hyperbolic machine leaves a **dummy region** where two balls tie
# (coded -1 by `decision_rule_codes`; drawn as its own colour).

# %%
X, y = make_blobs(90, centers=3, cluster_std=1.6, random_state=2)
ww = WestonWatkinsSVC(C=10.0, kernel="rbf", sigma=1.5).fit(X, y)
hyp = HyperbolicSVC(kernel="rbf", sigma=1.5, n_starts=1, max_iter=15, max_rank=20).fit(X, y)
print(f"WW-M-SVM      training accuracy {ww.score(X, y):.3f}")
print(f"hyperbolic    training accuracy {np.mean(hyp.predict(X) == y):.3f} "
      f"(dummy answers on training points: {np.mean(hyp.decision_rule_codes(X) < 0):.3f})")

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
plot_decision_regions(axes[0], ww.predict, X, y)
axes[0].set_title("Weston-Watkins M-SVM (Gaussian kernel)")
plot_decision_regions(axes[1], hyp.decision_rule_codes, X, y)
axes[1].set_title("hyperbolic M-SVM (balls in feature space; -1 = dummy)")
for ax in axes:
    handles, _ = ax.collections[-1].legend_elements()  # the training points, one handle per class
    ax.legend(handles, [f"class {c}" for c in np.unique(y)], loc="lower left", fontsize=8, title="training points")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
fig.tight_layout()
fig.savefig("03_ww_vs_hyperbolic.png", dpi=110)
plt.show()

# %% [markdown]
# ## The consolidation kernel on XOR (Fig. 4.2)
#
# Four subclasses on the corners of $[1,9]^2$; the two classes are the two diagonals. With 2 subclasses per
# class, the same-class direction is a diagonal, and $\kappa^m$ makes points one diagonal step apart similar.
# First the kernel itself: similarity along the learned direction vs across it.

# %%
Xx, yx, _ = make_xor_thesis(20, seed=0)
kern = ConsolidationKernel(sigma=np.sqrt(10), m=41, n_subclasses=2).fit(Xx, yx)
print("directions kept (c2 - c1):", np.round(kern.directions_, 2).tolist())
x0 = np.array([[3.0, 3.0]])
for name, x1 in [("same class, one diagonal step", [[7.0, 7.0]]), ("other class, one side step", [[7.0, 3.0]])]:
    print(f"{name:32s} kappa^m = {kern(x0, np.array(x1))[0, 0]:.4f}   "
          f"Gaussian = {np.exp(-np.sum((x0 - x1) ** 2) / (2 * 10.0)):.4f}")

# %% [markdown]
# $\kappa^m$ ranks the same-class point (one diagonal step away) above the other-class point (one side step
# away); the Gaussian kernel, which only sees distance, ranks them the other way.
#
# The reproduction draws Fig. 4.2 (WW with both kernels on a 300 x 300 grid of $[-3,13]^2$) as part of the
# Table 4.2 run below, and reports grid accuracy against the XOR pattern inside the training square and its
# periodic extension outside.

# %% [markdown]
# ## Table 4.2 subset next to the thesis
#
# `dakdouki2019-table4-2` with `quick=True`: Wine and Liver (bupa) from the vendored KEEL files with the
# thesis's train/test sizes (our seeded split: the thesis does not publish its own), WW with the Gaussian
# kernel and with $\kappa^m$, and the hyperbolic machine; $\sigma=\sqrt{5d}$ (thesis) and cross-validated.
# The rows "thesis (paper)" are typed from [ElD19]; every "ours" row is computed now.

# %%
out = Path("dakdouki2019-table4-2")
assert problems.get("REPRODUCTIONS", "dakdouki2019-table4-2").run(out, quick=True, progress=False).ok

# %%
summary = json.loads((out / "table4_2.json").read_text())
print(f"{'data/sigma':14s} {'Gauss recog':>11s} {'k^m recog':>10s} {'hyperbolic':>10s} {'T':>7s} {'p':>7s}")
for key, s in summary["summary"].items():
    hyp_rec = f"{s['hyperbolic']['recognition']:.2f}" if s["hyperbolic"] else "-"
    print(f"{key:14s} {s['gauss']['recognition']:11.2f} {s['km']['recognition']:10.2f} {hyp_rec:>10s} "
          f"{s['T']:7.3f} {s['p']:7.3g}")
for name in ["wine", "bupa"]:
    th = THESIS_TABLE42[name]  # typed from the thesis: (G train err, G recog, k^m train err, k^m recog)
    ours = summary["summary"][f"{name}/thesis"]
    print(f"{name:5s} recognition %  thesis: G {th[1]:6.2f}  k^m {th[3]:6.2f}   |   ours (sigma = sqrt(5d)): "
          f"G {ours['gauss']['recognition']:6.2f}  k^m {ours['km']['recognition']:6.2f}")
print("XOR grid accuracy:", {k: {a: round(v, 3) for a, v in d.items()} for k, d in summary["xor"].items()})

# %% [markdown]
# Reading it honestly: on Liver the thesis reports $\kappa^m$ ahead of the Gaussian kernel (75.4 vs 69.6%).
# The statistic $T$ is Table 4.3's two-proportion test ($|T|<1.96$: no significant difference at 5%). Our split
# is our choice and $C=10$ is MSVMpack's default (the thesis gives neither), so the direction may differ; the
# report's tables give every cell over five draws with a verdict:

# %%
bupa = summary["summary"]["bupa/thesis"]
better = "k^m" if bupa["km"]["recognition"] > bupa["gauss"]["recognition"] else "Gaussian"
print(f"Liver, this run: {better} kernel ahead, T = {bupa['T']:.3f}, p = {bupa['p']:.3g} "
      f"({'significant' if abs(bupa['T']) >= 1.96 else 'not significant'} at 5%); thesis: k^m ahead, "
      f"|T| = {abs(THESIS_TABLE43['bupa'][0]):.3f}")

# %%
fig, ax = plt.subplots(figsize=(13, 4.2))
ax.imshow(plt.imread(out / "fig4_2_xor.png"))
ax.set_axis_off()
fig.savefig("03_fig4_2_xor.png", dpi=100, bbox_inches="tight")
plt.show()
