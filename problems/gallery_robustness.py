"""The gallery's comparison of the linear models under one perturbation budget (``docs/gallery/robust_comparison.md``).

On the vendored ``magic`` data (standardised; a training sample and a disjoint test sample) every model gets the
same noise covariance ``Sigma = NOISE**2 * W`` (``W`` the training data's pooled within-class covariance): the
nominal SVM ignores it, the worst-case robust SVM (``RobustSVCCV``: C and the radius of its ellipsoid
``||Sigma^{-1/2} dx||_2 <= radius`` chosen by 3-fold cross-validation along certified paths), the chance-constrained
SVM (``epsilon = 0.1``, Chebyshev: each margin holds with probability 0.9 under any noise of covariance Sigma, C
chosen by ``GridSearchCV``), and the Wasserstein SVM (``WassersteinSVCCV``: the radius of the Wasserstein ball, in
standard deviations, chosen along a path from 1 down to 1e-3).  They are scored on the test sample

* under test-time noise: ``x + t e``, ``e ~ N(0, Sigma)``, for noise multipliers ``t`` (:data:`NOISE_LEVELS`),
  averaged over :data:`DRAWS` draws;
* under a distribution shift: a sensor drift ``x -> x (1 + s g) + s h`` with fixed standard normal gain and offset
  vectors ``g``, ``h`` (in standard deviations) for drift sizes ``s`` (:data:`DRIFTS`).

:func:`compare` returns the table's rows; :func:`table` renders them as Markdown and :func:`figure` draws both
curves (title, axis labels, legend).  ``python -m rsvm_conic.problems.gallery_robustness [--quick]`` prints the
table and writes ``gallery_robustness.png``.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

#: the noise's standard deviation along any direction, as a fraction of the classes' own spread
NOISE = 0.1
#: multipliers of the test-time noise
NOISE_LEVELS = (0.0, 2.0, 4.0, 6.0, 8.0)
#: sizes of the sensor drift (in standard deviations of the standardised features)
DRIFTS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: noise draws averaged per level
DRAWS = 5
#: the values of C every model's cross-validation chooses from
CS = (0.1, 1.0, 10.0)


def split(quick: bool = False, seed: int = 0):
    """The standardised training and test samples of the comparison (``magic``, disjoint random rows).

    Parameters
    ----------
    quick : bool, default=False
        300 training and 1000 test samples (else 1500 and 5000).
    seed : int, default=0
        Seeds the choice of rows.

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarray
        Scaled by the training sample's mean and standard deviation.
    """
    from sklearn.preprocessing import StandardScaler

    from rsvm_conic.datasets.keel import load_dataset

    X, y = load_dataset("magic")
    n_train, n_test = (300, 1000) if quick else (1500, 5000)
    idx = np.random.default_rng(seed).permutation(y.size)
    train, test = idx[:n_train], idx[n_train : n_train + n_test]
    scaler = StandardScaler().fit(X[train])
    return scaler.transform(X[train]), y[train], scaler.transform(X[test]), y[test]


def _models(quick: bool, Sigma):
    """``name -> (unfitted estimator or search, fit parameters, how its parameters are reported)``."""
    from sklearn.model_selection import GridSearchCV

    from rsvm_conic import estimators

    n_radii = 5 if quick else 10
    models = {
        "nominal SVM": (GridSearchCV(estimators.NominalSVC(), {"C": list(CS)}, cv=3), {}),
        "worst-case robust SVM": (estimators.RobustSVCCV(Cs=CS, n_radii=n_radii, cv=3), {"Sigma": Sigma}),
        "chance-constrained SVM": (
            GridSearchCV(estimators.ChanceConstrainedSVC(epsilon=0.1), {"C": list(CS)}, cv=3),
            {"Sigma": Sigma},
        ),
    }
    if hasattr(estimators, "WassersteinSVCCV"):
        radii = np.geomspace(1.0, 1e-3, n_radii)
        models["Wasserstein SVM"] = (estimators.WassersteinSVCCV(radii=radii, cv=3), {})
    return models


def _chosen(model) -> tuple[str, dict]:
    """The selected parameters (text) and the refitted estimator's certificate."""
    if hasattr(model, "radius_"):
        chosen = [f"C = {model.C_:g}"] if model.C_ is not None else []
        return ", ".join([*chosen, f"radius = {model.radius_:.3g}"]), model.best_estimator_.solver_stats_
    return f"C = {model.best_params_['C']:g}", model.best_estimator_.solver_stats_


def compare(quick: bool = False, seed: int = 0) -> dict:
    """Fit every model on the training sample and score it under test-time noise and drift.

    Parameters
    ----------
    quick : bool, default=False
        300 training and 1000 test samples, 5 radii (else 1500 and 5000, 10 radii).
    seed : int, default=0
        Seeds the split, the noise draws and the drift.

    Returns
    -------
    dict
        ``rows``: one dict per model (``model``, ``chosen``, ``gap_rel``, ``noise`` and ``drift``: accuracies per
        level); ``noise_levels``, ``drifts``, the sizes ``n_train``, ``n_test``, ``n_features``.
    """
    from rsvm_conic.estimators.linear import default_noise_covariance

    Xtr, ytr, Xte, yte = split(quick, seed)
    pm = np.where(ytr == np.unique(ytr)[1], 1.0, -1.0)
    Sigma = (NOISE / 0.02) ** 2 * default_noise_covariance(Xtr, pm)  # NOISE**2 times the within-class covariance
    root = np.linalg.cholesky(Sigma)
    rng = np.random.default_rng(seed + 1)
    draws = rng.standard_normal((DRAWS, *Xte.shape)) @ root.T
    gain, offset = rng.standard_normal(Xte.shape[1]), rng.standard_normal(Xte.shape[1])
    rows = []
    for name, (model, params) in _models(quick, Sigma).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant fits at the largest radii of the paths, by design
            model.fit(Xtr, ytr, **params)
        chosen, stats = _chosen(model)
        noise = [float(np.mean([model.score(Xte + t * e, yte) for e in draws])) for t in NOISE_LEVELS]
        drift = [float(model.score(Xte * (1.0 + s * gain) + s * offset, yte)) for s in DRIFTS]
        rows.append(dict(model=name, chosen=chosen, gap_rel=float(stats["gap_rel"]), noise=noise, drift=drift))
    return dict(
        rows=rows,
        noise_levels=NOISE_LEVELS,
        drifts=DRIFTS,
        n_train=Xtr.shape[0],
        n_test=Xte.shape[0],
        n_features=Xtr.shape[1],
    )


def table(result: dict) -> str:
    """The comparison as a Markdown table.

    Parameters
    ----------
    result : dict
        From :func:`compare`.

    Returns
    -------
    str
    """
    t, s = result["noise_levels"], result["drifts"]
    head = ["model", "chosen by CV", "certified gap"]
    head += [f"noise x{v:g}" for v in t[1:]] + [f"drift {v:g}" for v in s[1:]]
    lines = ["| " + " | ".join(["model", "chosen by CV", "certified gap", "clean", *head[3:]]) + " |"]
    lines.append("|" + "---|" * (len(head) + 1))
    for r in result["rows"]:
        cells = [r["model"], r["chosen"], f"{r['gap_rel']:.0e}", f"{r['noise'][0]:.3f}"]
        cells += [f"{a:.3f}" for a in r["noise"][1:]] + [f"{a:.3f}" for a in r["drift"][1:]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figure(result: dict, path=None):
    """Test accuracy against the test-time noise and against the drift, one line per model.

    Parameters
    ----------
    result : dict
        From :func:`compare`.
    path : str or path-like or None, default=None
        Where to save the figure (PNG); None: not saved.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for r in result["rows"]:
        axes[0].plot(result["noise_levels"], r["noise"], marker="o", label=r["model"])
        axes[1].plot(result["drifts"], r["drift"], marker="o", label=r["model"])
    axes[0].set(
        title="Test-time noise x + t e, e ~ N(0, Sigma)",
        xlabel="noise multiplier t",
        ylabel="test accuracy",
    )
    axes[1].set(title="Sensor drift x (1 + s g) + s h", xlabel="drift size s (standard deviations)")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[1].legend(loc="lower left")
    fig.suptitle(
        f"magic: {result['n_train']} training / {result['n_test']} test samples, noise budget Sigma = "
        f"{NOISE:g}^2 W (within-class covariance)"
    )
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def main(argv=None) -> int:
    """Print the table and write ``gallery_robustness.png`` (``--quick``: the quick size)."""
    quick = "--quick" in (sys.argv[1:] if argv is None else argv)
    result = compare(quick=quick)
    print(table(result))
    figure(result, "gallery_robustness.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
