"""Runner instances for the linear SVM family [CJ20, eq. 1, 4, 5]."""

from __future__ import annotations

import numpy as np

from rsvm_conic.datasets.synthetic import make_uncertain_classification, train_test_split_arrays
from rsvm_conic.formulations import (
    ChanceConstrainedProblem,
    NominalProblem,
    RobustProblem,
    chance_constrained_svm,
    nominal_svm,
    robust_svm,
)
from rsvm_conic.runner import ProblemInstance
from rsvm_conic.uncertainty import UncertaintySet

#: every backend of each family (``rsvm-conic check NAME`` runs them all; ``--backends`` takes a subset)
ROBUST, NOMINAL, CHANCE = (tuple(cls.BACKENDS) for cls in (RobustProblem, NominalProblem, ChanceConstrainedProblem))
BOX = tuple(b for b in ROBUST if b != "ipm")  # the interior point's cones are for p = 2 only
STOCHASTIC_OPTS = {"max_epochs": 2000, "tol": 1e-7, "batch_size": 32, "patience": 20, "seed": 0}


def _robust(L, n, C, radius, p=2, seed=0):
    def build():
        X, y, Sigma, groups = make_uncertain_classification(L, n, separation=2.0, noise_scale=0.3, random_state=seed)
        (Xtr, ytr, gtr), (Xte, yte, _) = train_test_split_arrays([X, y, groups], 0.2, random_state=seed)
        unc = UncertaintySet(Sigma=Sigma, groups=gtr, p=p, radius=radius)
        return robust_svm(Xtr, ytr, unc, C=C), Xte, yte

    return build


def _nominal_breast_cancer():
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    y = np.where(y == 1, 1.0, -1.0)
    (Xtr, ytr), (Xte, yte) = train_test_split_arrays([X, y], 0.25, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    return nominal_svm(scaler.transform(Xtr), ytr, C=0.1), scaler.transform(Xte), yte


def _chance_small():
    X, y, Sigma, groups = make_uncertain_classification(500, 5, separation=3.0, noise_scale=0.3, random_state=1)
    (Xtr, ytr, gtr), (Xte, yte, _) = train_test_split_arrays([X, y, groups], 0.2, random_state=1)
    return chance_constrained_svm(Xtr, ytr, Sigma, gtr, C=0.2, epsilon=0.1, distribution="gaussian"), Xte, yte


INSTANCES = {
    "robust-small": ProblemInstance(
        "robust-small",
        "grouped-ellipsoid robust SVM SOCP (eq. 4), L=400 train, n=5, k=2 groups, C=0.25",
        _robust(500, 5, C=0.25, radius=1.0),
        ROBUST,
        {"sgd": STOCHASTIC_OPTS, "prox": STOCHASTIC_OPTS},
        rtol=1e-3,
    ),
    "robust-small-inf": ProblemInstance(
        "robust-small-inf",
        "box (p = inf) robust SVM, L=400 train, n=5, k=2 groups, C=0.25",
        _robust(500, 5, C=0.25, radius=0.5, p=np.inf),
        BOX,
        {"sgd": STOCHASTIC_OPTS, "prox": STOCHASTIC_OPTS},
        rtol=1e-3,
    ),
    "robust-large": ProblemInstance(
        "robust-large",
        "grouped-ellipsoid robust SVM SOCP, L=20000 train, n=50, k=2 groups, C=0.05 (lam=1e-3)",
        _robust(25000, 50, C=0.05, radius=1.0),
        ROBUST,
        {"sgd": {"tol": 1e-5, "seed": 0}, "prox": {"tol": 1e-5, "seed": 0}},
        rtol=1e-3,
    ),
    "nominal-breast-cancer": ProblemInstance(
        "nominal-breast-cancer",
        "nominal linear SVM (eq. 1) on scikit-learn's breast cancer data, C=0.1",
        _nominal_breast_cancer,
        NOMINAL,
        {"sgd": STOCHASTIC_OPTS, "prox": STOCHASTIC_OPTS},
        rtol=1e-3,
    ),
    "chance-gaussian-small": ProblemInstance(
        "chance-gaussian-small",
        "Gaussian chance-constrained SVM, epsilon=0.1, L=400 train, n=5, k=2",
        _chance_small,
        CHANCE,
        {"sgd": STOCHASTIC_OPTS, "prox": STOCHASTIC_OPTS},
        rtol=1e-3,
    ),
}
