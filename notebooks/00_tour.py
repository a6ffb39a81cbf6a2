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
# # A tour of rsvm-conic: nominal SVM -> robust SOCP -> chance constraint
#
# This notebook derives the worst-case robust linear SVM of Couellan & Jan (2020, eq. 1-4)
# in a few lines, shows the CVXPY model the library builds, solves it, draws the decision boundary
# with the uncertainty ellipsoids in 2-D, turns the robust model into a chance-constrained one,
# and checks with the shared runner that the stochastic solvers reach the conic solver's optimum.
#
# ## 1. The nominal SVM [CJ20, eq. 1]
#
# $$\min_{w,b,\xi}\ \tfrac12\|w\|_2^2 + C\sum_{i=1}^L \xi_i
# \quad\text{s.t.}\quad y_i(\langle w, x_i\rangle + b) \ge 1 - \xi_i,\ \ \xi_i \ge 0 .$$
#
# ## 2. Robust against every perturbation in an ellipsoid (eq. 3-4)
#
# Sample $i$ is only known up to $x_i + \Delta x_i$, $\Delta x_i \in U_i = \{A u : \|u\|_p \le \gamma_i\}$
# with $A A^\top = \Sigma$. Asking the margin constraint to hold for **every** $\Delta x_i\in U_i$:
#
# $$\min_{\|u\|_p\le\gamma_i} y_i\langle w, A u\rangle = -\gamma_i \|A^\top w\|_q,
# \qquad \tfrac1p + \tfrac1q = 1$$
#
# (Hölder, attained at the dual-norm maximiser). The semi-infinite constraint is thus the single
# conic constraint
#
# $$y_i(\langle w, x_i\rangle + b) - \gamma_i\|A^\top w\|_q \ge 1 - \xi_i ,$$
#
# an SOCP for $p = 2$. Samples sharing one $\Sigma$ share one cone $t \ge \|A^\top w\|_q$.
#
# ## 3. Chance constraints
#
# If instead $\Delta x_i$ is random with mean 0 and covariance $\Sigma_i$ and we only ask
# $P[y_i(\langle w, x_i+\Delta x_i\rangle + b) \ge 1 - \xi_i] \ge 1-\varepsilon$, the same SOCP appears with
# $p=2$ and $\gamma_i = \kappa(\varepsilon)$:
# $\kappa = \Phi^{-1}(1-\varepsilon)$ for Gaussian noise, and
# $\kappa = \sqrt{(1-\varepsilon)/\varepsilon}$ for any law (one-sided Chebyshev). The paper prints
# $\sqrt{\varepsilon/(1-\varepsilon)}$, the reciprocal -- the library implements (and tests) the correct one.

# %%
import matplotlib.pyplot as plt
import numpy as np

from rsvm_conic import problems
from rsvm_conic.datasets.synthetic import make_uncertain_classification
from rsvm_conic.formulations import chance_constrained_svm, nominal_svm, robust_svm
from rsvm_conic.plotting import plot_decision_boundary, plot_uncertainty_ellipses
from rsvm_conic.runner import check_instance, compare_backends, format_reports
from rsvm_conic.uncertainty import UncertaintySet, kappa

# %% [markdown]
# ## Data: two Gaussian classes seen through noise with one known covariance per class

# %%
X, y, Sigma, groups = make_uncertain_classification(60, 2, separation=3.0, noise_scale=0.35, random_state=3)
print("X:", X.shape, " classes:", np.unique(y), " Sigma per group:", Sigma.shape)

# %% [markdown]
# ## The CVXPY model
#
# `robust_svm` returns a `Formulation`; `f.problem` is the CVXPY problem itself (DPP: `C` and `radius`
# are parameters, so a grid over them compiles once).

# %%
radius = 1.0
f = robust_svm(X, y, UncertaintySet(Sigma=Sigma, groups=groups, p=2, radius=radius), C=1.0)
print(f.problem)
print("parameters:", {k: p.value for k, p in f.parameters.items()})
print("backends:", f.backends)

# %%
sol = f.solve("clarabel")
w, b = sol["w"], sol["b"]
print(f"status={sol.status}  objective={sol.objective:.6f}  w={w}  b={b:.4f}")
nominal = nominal_svm(X, y, C=1.0).solve("clarabel")
print(f"nominal objective={nominal.objective:.6f}  w={nominal['w']}")

# %% [markdown]
# ### Brute-force check of the closed form
#
# The robust term $\gamma\|A^\top w\|_2$ should equal the worst drop of $y_i\langle w,\Delta x\rangle$
# over the ellipse. Sample its boundary densely and compare.

# %%
from rsvm_conic.uncertainty import psd_sqrt

A = psd_sqrt(Sigma[0])
angles = np.linspace(0, 2 * np.pi, 20001)
U = np.column_stack([np.cos(angles), np.sin(angles)])
sampled_worst = np.max(-(U @ A.T) @ w) * radius
closed_form = radius * np.linalg.norm(A.T @ w)
print(f"worst drop by sampling: {sampled_worst:.6f}   closed form gamma*||A^T w||: {closed_form:.6f}")
assert abs(sampled_worst - closed_form) <= 1e-6 * max(1, closed_form)

# %% [markdown]
# ## The picture: boundary, margins and the uncertainty ellipsoids

# %%
fig, ax = plt.subplots(figsize=(6, 5))
colors = np.where(y > 0, "tab:red", "tab:blue")
plot_uncertainty_ellipses(ax, X, Sigma, groups=groups, radius=radius, colors=colors)
plot_decision_boundary(ax, lambda P: f.decision_function(sol, P), X, y, color="k", label="robust (radius 1)")
plot_decision_boundary(ax, lambda P: P @ nominal["w"] + nominal["b"], X, levels=(0.0,), color="tab:green",
                       label="nominal", scatter=False)
ax.set_aspect("equal")
ax.legend(loc="upper left")
ax.set_title("Robust SVM: every point of every ellipse is classified with margin (or pays slack)")
fig.savefig("00_tour_boundary.png", dpi=110, bbox_inches="tight")
plt.show()

# %% [markdown]
# ## Growing the radius re-uses the compiled problem
#
# `set_params` changes the CVXPY parameter value; the solve skips CVXPY's compilation.

# %%
for r in [0.0, 0.5, 1.0, 2.0]:
    s = f.set_params(radius=r).solve("clarabel")
    print(f"radius={r:3.1f}  objective={s.objective:9.4f}  ||w||={np.linalg.norm(s['w']):.4f}  "
          f"train acc={np.mean(f.predict(s, X) == y):.3f}")
f.set_params(radius=radius)

# %% [markdown]
# ## The chance-constrained SVM is the same SOCP with radius kappa(epsilon)

# %%
eps = 0.1
for dist in ["gaussian", "chebyshev"]:
    cc = chance_constrained_svm(X, y, Sigma, groups, C=1.0, epsilon=eps, distribution=dist)
    s_cc = cc.solve("clarabel")
    same = robust_svm(X, y, UncertaintySet(Sigma=Sigma, groups=groups, p=2, radius=kappa(eps, dist)), C=1.0)
    s_same = same.solve("clarabel")
    print(f"{dist:9s} kappa({eps})={kappa(eps, dist):.4f}  chance objective={s_cc.objective:.6f}  "
          f"robust(radius=kappa) objective={s_same.objective:.6f}")

# %% [markdown]
# Monte Carlo check of the Gaussian chance constraint on the active samples:
# draw $\Delta x\sim N(0,\Sigma_g)$ and count how often the margin constraint is violated.

# %%
cc = chance_constrained_svm(X, y, Sigma, groups, C=1.0, epsilon=eps, distribution="gaussian")
s_cc = cc.solve("clarabel")
rng = np.random.default_rng(0)
chol = np.linalg.cholesky(Sigma)
k_g = kappa(eps, "gaussian")
spread = np.sqrt(np.einsum("i,gij,j->g", s_cc["w"], Sigma, s_cc["w"]))[groups]  # ||Sigma_g^{1/2} w||
margin = y * (X @ s_cc["w"] + s_cc["b"]) - k_g * spread
xi = np.maximum(0.0, 1.0 - margin)
active = np.flatnonzero(margin <= 1 + 1e-6)  # constraint holds with equality at the optimum
n_draws = 20000
viol = []
for i in active[:5]:
    dx = rng.standard_normal((n_draws, 2)) @ chol[groups[i]].T
    viol.append(np.mean(y[i] * ((X[i] + dx) @ s_cc["w"] + s_cc["b"]) + xi[i] < 1))
print(f"active constraints: {len(active)}; violation frequency (target {eps}):", np.round(viol, 4))

# %% [markdown]
# ## Stochastic solvers reach the same optimum (shared runner)
#
# `compare_backends` solves one formulation with every backend and reports the objective, the gap to
# the best, accuracy and agreement of predictions. The stochastic subgradient (`sgd`) and proximal
# (`prox`) solvers minimise the unconstrained form
# $\tfrac12\|w\|^2 + C\sum_i\max\{0, 1 - y_i(\langle w,x_i\rangle+b) + \gamma_i\|A^\top w\|_q\}$.
# Their stopping rule (relative change below `tol` for `patience` epochs) gives gaps of order
# 1e-4 to 1e-3 -- read the `above best` column, not the digits of the objective.

# %%
# 60 samples: one minibatch is the whole set; stochastic methods earn their keep at large L (below).
opts = {"max_epochs": 5000, "tol": 1e-9, "batch_size": 60, "patience": 50, "seed": 0}
reports, sols = compare_backends(f, X, y, backends=("clarabel", "scs", "sgd", "prox"),
                                 backend_options={"sgd": opts, "prox": opts})
print(format_reports(reports, "2-D toy (train = test here)"))

# %% [markdown]
# The registered instance `robust-small` (L = 400, n = 5) runs the same check; `rsvm-conic check robust-small`
# on the command line does exactly this.

# %%
instance = problems.get("INSTANCES", "robust-small")
reports, ok = check_instance(instance)
print(format_reports(reports, instance.description))
print("all backends within rtol =", instance.rtol, ":", ok)
