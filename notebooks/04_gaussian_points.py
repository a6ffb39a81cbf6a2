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
# # Gaussian points and random Fourier features ([CGT19]; [RR07])
#
# **Probabilistic kernel SVM [CGT19].** Each datum is a Gaussian point
# $(x_i,\Sigma_i)$: the true sample is $\xi_i\sim N(x_i,\Sigma_i)$. The SVM uses the expected Gaussian kernel
# $E\,k(\xi_i,\xi_j)$ over independent draws. With $d=x_i-x_j$, $S=\Sigma_i+\Sigma_j$ and
# $\xi_i-\xi_j\sim N(d,S)$, a Gaussian integral gives
#
# $$E\,k(\xi_i,\xi_j)=\big|I+S/\sigma^2\big|^{-1/2}\exp\!\big(-\tfrac12 d^\top(\sigma^2 I+S)^{-1}d\big).$$
#
# The paper (eq. 6, 8, as extracted) prints the power $+1/2$. Below: the closed form against Monte Carlo,
# why the printed power is not even a kernel, the SVM on Gaussian points (`PkSVC`), and the random
# Fourier feature error study of the lecture notes on random Fourier features.

# %%
import matplotlib.pyplot as plt
import numpy as np

from rsvm_conic import problems
from rsvm_conic.estimators import PkSVC
from rsvm_conic.kernels import GaussianPointRFF, expected_rbf_kernel, expected_rbf_kernel_mc
from rsvm_conic.plotting import plot_decision_boundary

# %% [markdown]
# ## Closed form vs Monte Carlo

# %%
rng = np.random.default_rng(0)
sigma = 1.0
print(f"{'pair':>4} {'MC mean':>9} {'+-se':>8} {'corrected':>10} {'printed':>9}")
for k in range(5):
    x1, x2 = rng.normal(size=2), rng.normal(size=2)
    B1, B2 = rng.normal(size=(2, 2)) * 0.6, rng.normal(size=(2, 2)) * 0.6
    S1, S2 = B1 @ B1.T, B2 @ B2.T
    mc, se = expected_rbf_kernel_mc(x1, S1, x2, S2, sigma=sigma, n_mc=200_000, random_state=k)
    corr = expected_rbf_kernel(x1[None], S1[None], x2[None], S2[None], sigma=sigma)[0, 0]
    prin = expected_rbf_kernel(x1[None], S1[None], x2[None], S2[None], sigma=sigma, variant="printed")[0, 0]
    print(f"{k:4d} {mc:9.5f} {se:8.5f} {corr:10.5f} {prin:9.5f}")
    assert abs(mc - corr) <= 5 * se, "corrected closed form disagrees with Monte Carlo"

# %% [markdown]
# ## The printed power does not give a positive kernel
#
# Two points with the same mean, $\Sigma_1=0$, $\Sigma_2=a\sigma^2$ ($n=1$): the printed Gram matrix is
# $\begin{pmatrix}1&\sqrt{1+a}\\ \sqrt{1+a}&\sqrt{1+2a}\end{pmatrix}$, determinant $<0$ for every $a>0$.
# With the corrected power and independent copies on the diagonal, the kernel is the inner product of
# kernel mean embeddings, hence PSD.

# %%
Xp = np.zeros((2, 1))
Sp = np.array([[[0.0]], [[1.0]]])
for variant in ["corrected", "printed"]:
    K = expected_rbf_kernel(Xp, Sp, sigma=1.0, variant=variant)
    print(f"{variant:9s} Gram = {np.round(K, 4).tolist()}  eigenvalues = {np.round(np.linalg.eigvalsh(K), 4)}")
Xr = rng.normal(size=(40, 2))
Sr = np.einsum("lij,lkj->lik", B := rng.normal(size=(40, 2, 2)) * 0.5, B)
print("smallest eigenvalue on 40 random Gaussian points:",
      {v: float(np.linalg.eigvalsh(expected_rbf_kernel(Xr, Sr, sigma=1.0, variant=v)).min())
       for v in ["corrected", "printed"]})

# %% [markdown]
# ## PkSVC: an SVM on Gaussian points
#
# Two classes; each training point comes with its own (known) covariance, some very uncertain.
# `PkSVC` (exact: libsvm on the expected-kernel Gram matrix; `random_features`: a linear SVM on
# damped RFF features $e^{-\omega^\top\Sigma\omega/2}(\cos,\sin)(\omega^\top x)$) is compared with the
# ordinary RBF SVM on the means. Test points are fresh draws $\xi\sim N(x,\Sigma)$ from new Gaussian points.

# %%
def gaussian_points(n, rng):
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    centre = np.column_stack([np.cos(np.pi * (y > 0)), np.zeros(n)]) * 1.2
    X = centre + rng.normal(size=(n, 2)) * 0.7
    scale = rng.choice([0.05, 1.2], size=n, p=[0.6, 0.4])  # 40% of the points are very uncertain
    A = rng.normal(size=(n, 2, 2)) * scale[:, None, None]
    return X, np.einsum("lij,lkj->lik", A, A), y


rng = np.random.default_rng(1)
Xtr, Str, ytr = gaussian_points(150, rng)
Xte, Ste, yte = gaussian_points(400, rng)
draws = Xte + np.einsum("lij,lj->li", np.linalg.cholesky(Ste + 1e-12 * np.eye(2)), rng.normal(size=(400, 2)))

pk = PkSVC(C=1.0, sigma=1.0).fit(Xtr, ytr, Sigma=Str)
pk_rf = PkSVC(C=1.0, sigma=1.0, method="random_features", n_components=400, random_state=0).fit(Xtr, ytr, Sigma=Str)
plain = PkSVC(C=1.0, sigma=1.0).fit(Xtr, ytr)  # Sigma = None: the ordinary RBF SVM on the means
for name, m, kw in [("PkSVC exact", pk, {"Sigma": Ste}), ("PkSVC random features", pk_rf, {"Sigma": Ste}),
                    ("RBF SVM on means", plain, {})]:
    print(f"{name:22s} accuracy on test Gaussian points = {m.score(Xte, yte, **kw):.3f}   "
          f"on their random draws = {m.score(draws, yte):.3f}")
agree = np.mean(pk.predict(Xte, Sigma=Ste) == pk_rf.predict(Xte, Sigma=Ste))
print(f"exact vs random-feature PkSVC agree on {agree:.3f} of the test points")

# %% [markdown]
# One seed, 150 training points: differences of a few test points between the models are within noise here;
# the point of the cell is the API and that the exact and random-feature routes agree.

# %%
fig, ax = plt.subplots(figsize=(6, 5))
plot_decision_boundary(ax, pk.decision_function, Xtr, ytr, levels=(0.0,), color="k", label="PkSVC (Sigma = 0 query)")
plot_decision_boundary(ax, plain.decision_function, Xtr, levels=(0.0,), color="tab:green", label="RBF SVM on means",
                       scatter=False)
big = np.trace(Str, axis1=1, axis2=2) > 0.5
ax.scatter(Xtr[big, 0], Xtr[big, 1], s=80, facecolors="none", edgecolors="0.4", label="very uncertain points")
ax.set_xlabel("$x_1$")
ax.set_ylabel("$x_2$")
ax.legend(loc="lower left", fontsize=8)
ax.set_title("SVM on Gaussian points [CGT19, corrected kernel]")
fig.savefig("04_pksvc.png", dpi=110, bbox_inches="tight")
plt.show()

# %% [markdown]
# ## Random Fourier features: uniform error vs D [RR07]
#
# For $D$ frequencies, the lecture's lemma (Rahimi-Recht) bounds
# $\sup_{x,x'\in B(0,R)}|\langle\psi(x),\psi(x')\rangle-k(x,x')|$ with probability $1-\delta$. The
# reproduction `rff-error` bounds the sup from below (dense sampling + local refinement over a few seeds) and
# from above (a certified branch and bound on cubes, from Lipschitz and second-order bounds of the error) and
# plots both beside the bound; `quick=True` uses D up to 300 and 3 seeds. The error never exceeds 2, so a bound
# of 2 or more (D = 10 here) says nothing: the report marks it vacuous.
# (The notes write the feature normalisation as $1/D$; it must be $1/\sqrt D$.)

# %%
# ok: the certified upper bound of the sup is below the bound at every D (trivially where the bound is vacuous)
assert problems.get("REPRODUCTIONS", "rff-error").run(".", quick=True, progress=False).ok

# %% [markdown]
# The measured error falls roughly like $D^{-1/2}$, as the lemma predicts; the bound stays valid but loose
# (covering-number constants). The ratio bound / certified sup, from the reproduction's JSON:

# %%
import json

for row in json.loads(open("rff_error.json").read()):
    vacuous = " (vacuous: >= 2)" if row["vacuous"] else ""
    print(f"D = {row['D']:5d}: bound / certified sup = {row['bound_delta_0.05'] / row['max_upper']:.1f}{vacuous}")

# %% [markdown]
# The damped features of `GaussianPointRFF` approximate the expected kernel the same way:

# %%
for D in [50, 500, 5000]:
    f = GaussianPointRFF(D, sigma=1.0, random_state=0).fit(Xtr)
    Phi = f.transform(Xtr[:50], Str[:50])
    err = np.abs(Phi @ Phi.T - expected_rbf_kernel(Xtr[:50], Str[:50], sigma=1.0))
    off = ~np.eye(50, dtype=bool)
    print(f"D = {D:5d}: max |<psi_i, psi_j> - E k| over off-diagonal pairs = {err[off].max():.4f}")
