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
# # Model selection with uncertain data: `GridSearchCV`, `Pipeline`, `sample_weight`
#
# The uncertainty of the samples is data, so it goes to `fit`: `Sigma` (noise covariances), `sigma_index` (the
# position of each sample's covariance along Sigma's first axis), `sample_radius`, `sample_weight`.
# scikit-learn's model selection passes them on without metadata routing: it slices every fit parameter whose
# first axis has the length of X with each fold's training rows and passes the others as they are.  So
#
# * per-sample arrays (`sigma_index`, `sample_radius`, `sample_weight`, a Sigma of one matrix per sample) follow
#   the samples into every fold;
# * a shared Sigma is passed as it is -- and when its first axis could equal the number of samples (as many
#   features as samples), with a leading axis of length 1 (`Sigma[None]`), which is never sliced;
# * `groups=` belongs to the splitter (`GroupKFold`): the estimators refuse it and name `sigma_index`.
#
# Below: a grid search over C and the radius of `Pipeline(StandardScaler(), RobustSVC())`, with Sigma in the
# scaled units; a Monte Carlo check of that unit change; the pipeline against the fit on pre-scaled data; and
# sample weights against repeated rows.

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from rsvm_conic.datasets.synthetic import make_uncertain_classification
from rsvm_conic.estimators import RobustSVC
from rsvm_conic.uncertainty import scale_covariance

X0, y, Sigma0, groups = make_uncertain_classification(300, 4, separation=2.0, noise_scale=0.5, random_state=0)
units = np.array([1.0, 100.0, 0.01, 10.0])  # the features come in very different units
X = X0 * units
Sigma = Sigma0 * np.outer(units, units)  # the noise covariance of each class, in the units of X
print("X's column standard deviations:", np.round(X.std(axis=0), 3))

# %% [markdown]
# ## The covariance after a scaler
#
# A covariance is in the units of X squared.  `StandardScaler` maps $x \mapsto D^{-1}(x - \mu)$ with
# $D = \mathrm{diag}(\text{scale\_})$, so a perturbation $\delta x$ of covariance $\Sigma$ becomes
# $D^{-1}\delta x$, of covariance $D^{-1}\Sigma D^{-1}$: `scale_covariance(Sigma, scaler)`.  Checked by
# Monte Carlo: noisy copies of one sample, scaled, against the transformed covariance.

# %%
scaler = StandardScaler().fit(X)
Sigma_scaled = scale_covariance(Sigma, scaler)
rng = np.random.default_rng(0)
m = 100_000
noisy = X[0] + rng.multivariate_normal(np.zeros(4), Sigma[groups[0]], size=m)
emp = np.cov(scaler.transform(noisy), rowvar=False)
T = Sigma_scaled[groups[0]]
se = np.sqrt((np.outer(np.diag(T), np.diag(T)) + T**2) / m)  # standard error of each entry
print(f"largest |empirical - transformed| in standard errors: {np.max(np.abs(emp - T) / se):.2f}")
assert np.all(np.abs(emp - T) <= 5 * se)

# %% [markdown]
# ## The pipeline is the fit on scaled data with the scaled covariance
#
# `Pipeline` passes `robustsvc__Sigma` to the classifier untouched, so the covariance handed to it must be in the
# scaled units.  With the scaler fitted on the same rows, the pipeline's fit is exactly the robust SVM on the
# scaled data with the transformed covariance (certified gaps below).

# %%
pipe = make_pipeline(StandardScaler(), RobustSVC(C=1.0, radius=0.5))
pipe.fit(X, y, robustsvc__Sigma=Sigma_scaled, robustsvc__sigma_index=groups)
direct = RobustSVC(C=1.0, radius=0.5).fit(scaler.transform(X), y, Sigma=Sigma_scaled, sigma_index=groups)
gaps = pipe[-1].solver_stats_["gap_abs"] + direct.solver_stats_["gap_abs"]
print(f"objectives {pipe[-1].objective_:.8f} and {direct.objective_:.8f}; certified gaps sum to {gaps:.1e}")
assert abs(pipe[-1].objective_ - direct.objective_) <= gaps + 1e-12 * abs(direct.objective_)

# %% [markdown]
# ## Grid search over C and the radius
#
# Inside `GridSearchCV` the scaler is refitted on each fold's training rows, so its `scale_` differs from the
# full-data scaler's by the sampling error of the standard deviations; the covariance above was transformed with
# the full-data scaler.  The difference is printed: it is the error of that approximation in each fold.

# %%
cv = KFold(5, shuffle=True, random_state=0)
fold_scales = np.array([StandardScaler().fit(X[tr]).scale_ for tr, _ in cv.split(X)])
print(f"fold scalers' scale_ within {np.max(np.abs(fold_scales / scaler.scale_ - 1)):.1%} of the full-data scaler's")
grid = {"robustsvc__C": [0.1, 1.0, 10.0], "robustsvc__radius": [0.0, 0.25, 0.5, 1.0]}
search = GridSearchCV(make_pipeline(StandardScaler(), RobustSVC()), grid, cv=cv, error_score="raise")
search.fit(X, y, robustsvc__Sigma=Sigma_scaled, robustsvc__sigma_index=groups)
scores = search.cv_results_["mean_test_score"].reshape(3, 4)
print("best:", search.best_params_, f"accuracy {search.best_score_:.3f}")
assert np.all(np.isfinite(scores))  # every fit of every fold ran

fig, ax = plt.subplots(figsize=(5, 3))
im = ax.imshow(scores, cmap="viridis")
ax.set_xticks(range(4), grid["robustsvc__radius"])
ax.set_yticks(range(3), grid["robustsvc__C"])
ax.set_xlabel("radius")
ax.set_ylabel("C")
for (i, j), s in np.ndenumerate(scores):
    ax.text(j, i, f"{s:.3f}", ha="center", va="center", color="w")
best_i, best_j = np.unravel_index(np.argmax(scores), scores.shape)
ax.plot(best_j, best_i, "s", ms=22, mfc="none", mec="r", mew=2, label="best (C, radius)")
ax.set_title("GridSearchCV: mean accuracy over the folds")
ax.legend(loc="upper left", bbox_to_anchor=(1.3, 1.0), fontsize="small")
fig.colorbar(im, ax=ax, label="mean CV accuracy")
fig.savefig("05_grid_search.png", dpi=110, bbox_inches="tight")

# %% [markdown]
# ## Sample weights
#
# `sample_weight` multiplies each sample's loss term ($C_i = C s_i$; `class_weight="balanced"` multiplies
# further, as scikit-learn's `SVC` does).  An integer weight is a repeated sample, 0 a dropped one: the two fits
# below reach the same certified optimum.

# %%
s = rng.integers(0, 3, X.shape[0])
Xs = scaler.transform(X)
weighted = RobustSVC(radius=0.5).fit(Xs, y, Sigma=Sigma_scaled, sigma_index=groups, sample_weight=s)
repeated = RobustSVC(radius=0.5).fit(
    np.repeat(Xs, s, axis=0), np.repeat(y, s), Sigma=Sigma_scaled, sigma_index=np.repeat(groups, s)
)
gaps = weighted.solver_stats_["gap_abs"] + repeated.solver_stats_["gap_abs"]
print(f"weighted {weighted.objective_:.8f}, repeated rows {repeated.objective_:.8f} (certified gaps {gaps:.1e})")
assert abs(weighted.objective_ - repeated.objective_) <= gaps + 1e-12 * abs(weighted.objective_)
