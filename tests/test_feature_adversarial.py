"""Robust (10) vs nominal RBF SVM under input attacks on real data (breast_cancer, injected l2 noise)."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from rsvm_conic.estimators.feature import RobustFeatureSVC
from rsvm_conic.evaluation import rbf_svc_functions, worst_margins
from rsvm_conic.uncertainty.feature_bounds import rff_feature_bound
from rsvm_conic.uncertainty.sets import UncertaintySet


def _split(gamma=1.0, seed=0):
    X, y = load_breast_cancer(return_X_y=True)
    y = np.where(y == 1, 1.0, -1.0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(Xtr.shape)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return Xtr + gamma * u * rng.uniform(0, 1, (len(u), 1)) ** (1 / Xtr.shape[1]), ytr, Xte, yte


def test_attack_is_at_least_as_strong_as_dense_sampling():
    Xtr, ytr, Xte, yte = _split()
    svc = SVC(kernel="rbf", C=10.0, gamma=1 / (2 * 30.0)).fit(Xtr, ytr)
    est = RobustFeatureSVC("rff", 100, np.sqrt(30.0), 0.5, C=10.0, random_state=0).fit(Xtr, ytr)
    rng = np.random.default_rng(0)
    U = rng.standard_normal((3000, 30))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    for dec, grad in (rbf_svc_functions(svc), (est.decision_function, est.input_gradient)):
        m = worst_margins(dec, grad, Xte[:15], yte[:15], 1.0, 2, steps=30, restarts=1)
        sampled = np.array([np.min(yte[i] * dec(Xte[i] + U)) for i in range(15)])
        assert np.all(m <= sampled + 1e-9)


def test_attack_errors_never_hit_certified_points():
    """Sandwich on real data: certified (bound-based) error >= attack error, point by point."""
    gamma = 1.0
    Xtr, ytr, Xte, yte = _split(gamma)
    est = RobustFeatureSVC("rff", 200, 2 * np.sqrt(30.0), gamma, C=10.0, random_state=0).fit(Xtr, ytr)
    zeta = est.coef_.ravel()
    G = rff_feature_bound(est.feature_map_, Xte, UncertaintySet(p=2, radius=gamma), 2)
    margin = yte * est.decision_function(Xte)
    certified = margin - G * np.linalg.norm(zeta) > 0  # ||R zeta||_2 = ||zeta||_2
    attacked = worst_margins(est.decision_function, est.input_gradient, Xte, yte, gamma, 2, steps=30, restarts=1)
    assert not np.any(certified & (attacked < 0))
    assert np.all(attacked[certified] >= (margin - G * np.linalg.norm(zeta))[certified] - 1e-9)
    assert certified.mean() > 0.5  # the certificate is not vacuous here


@pytest.mark.long
@pytest.mark.xfail(
    strict=True,
    reason="brief/paper expectation not reproduced: with both families tuned on the "
    "same validation protocol, robust (10) on RFF is not more robust than the nominal RBF SVM "
    "(benchmark feature-robust-adversarial; numbers in the issue-4 report)",
)
def test_robust_feature_svc_beats_nominal_rbf_under_attack_at_equal_accuracy():
    from rsvm_conic.problems.feature_robust import compare_robust_nominal

    r = compare_robust_nominal("breast_cancer", 1.0, 0, quick=True)["clean"]
    a, b = r["nominal_rbf_svc"], r["robust_rff"]
    assert abs(a["test_acc"] - b["test_acc"]) <= 0.02 and b["test_adv"] < a["test_adv"]
