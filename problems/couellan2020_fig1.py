"""Figure 1 of [CJ20]: four noisy points (XOR), random Fourier features with D = 2, the circle.

Left: the four nominal points (XOR labels, not linearly separable) and their noisy observations
(uniform in a disc of radius ``noise``).  Right: the RFF map with D = 2, phi(x) = (cos w'x, sin w'x)
(sqrt(2/D) = 1), puts every observation on the unit circle; a linear SVM separates them.  The
paper shows one draw of w; we draw w ~ N(0, I/sigma^2) with seeds 0, 1, ... and keep the first
draw for which the mapped observations are linearly separable with a visible margin (a
hard-margin-like linear SVM, C = 1e4, reaches 100% training accuracy with geometric margin
>= 0.15) -- the seed is printed in the title.  Around each mapped
nominal point we also draw the corrected Prop. 4.1 bound (pbar = 2): the feature-space disc of
radius Gamma_i (R_i is a rotation, so the set {||R_i dphi||_2 <= Gamma_i} is a disc), which
contains all the mapped observations of that point.

``EXPERIMENT`` (``rsvm-conic reproduce couellan2020-fig1``): one cell (the draw), stored in
``OUT/results.jsonl``; the figure ``couellan2020_fig1.png`` beside it.
"""

from __future__ import annotations

import numpy as np
from sklearn.svm import SVC

from rsvm_conic.kernels.feature_maps import RandomFourierFeatures
from rsvm_conic.plotting import require_matplotlib
from rsvm_conic.runner import Flag, GridExperiment, Number, Record
from rsvm_conic.uncertainty.feature_bounds import rff_feature_bound
from rsvm_conic.uncertainty.sets import UncertaintySet

CENTERS = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
LABELS = np.array([1.0, 1.0, -1.0, -1.0])


def make_toy(n_per_point=40, noise=0.15, seed=0):
    rng = np.random.default_rng(seed)
    ang = rng.uniform(0, 2 * np.pi, (4, n_per_point))
    rad = noise * np.sqrt(rng.uniform(0, 1, (4, n_per_point)))
    X = CENTERS[:, None, :] + np.stack([rad * np.cos(ang), rad * np.sin(ang)], axis=-1)
    return X.reshape(-1, 2), np.repeat(LABELS, n_per_point), np.repeat(np.arange(4), n_per_point)


def find_separating_draw(X, y, sigma=0.3, max_seed=500, min_margin=0.15):
    for seed in range(max_seed):
        rff = RandomFourierFeatures(2, sigma, random_state=seed).fit(X)
        svc = SVC(kernel="linear", C=1e4).fit(rff.transform(X), y)
        if svc.score(rff.transform(X), y) == 1.0 and 1.0 / np.linalg.norm(svc.coef_) >= min_margin:
            return seed, rff, svc
    raise RuntimeError("no separating draw found; increase max_seed or change sigma.")


def _scene(noise, sigma, seed):
    """The toy data, the RFF draw ``seed`` and its linear SVM, the mapped points and centres, the bound
    discs, and whether every mapped observation lies in its centre's disc (Prop. 4.1, corrected)."""
    X, y, owner = make_toy(noise=noise)
    rff = RandomFourierFeatures(2, sigma, random_state=seed).fit(X)
    svc = SVC(kernel="linear", C=1e4).fit(rff.transform(X), y)
    P = rff.transform(X)
    Pc = rff.transform(CENTERS)
    Gamma = rff_feature_bound(rff, CENTERS, UncertaintySet(p=2, radius=noise), pbar=2)
    inside = bool(np.all(np.linalg.norm(P - Pc[owner], axis=1) <= Gamma[owner] + 1e-12))
    return X, y, svc, P, Pc, Gamma, inside


def figure_cell(cell: dict) -> dict:
    """The one cell: the first separating draw and whether the bound discs contain the observations."""
    X, y, _ = make_toy(noise=cell["noise"])
    seed, _, _ = find_separating_draw(X, y, cell["sigma"])
    return {"seed": seed, "inside": _scene(cell["noise"], cell["sigma"], seed)[-1]}


#: What figure_cell returns.
RESULT_FIELDS = Record({"seed": Number(0, integer=True), "inside": Flag()})


def cells(quick: bool) -> list[dict]:
    return [{"noise": 0.15, "sigma": 0.3}]  # one figure; --quick changes nothing


def report(run) -> tuple[str, bool]:
    """``couellan2020_fig1.png`` from the cell's draw; ok when every mapped observation lies in its disc."""
    # pyplot-free figures: no global backend switch (that would stop a notebook from showing its figures)
    require_matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle

    (cell,), (res,) = run.cells, run.results
    noise, sigma, seed, inside = cell["noise"], cell["sigma"], res["seed"], res["inside"]
    X, y, svc, P, Pc, Gamma, _ = _scene(noise, sigma, seed)

    fig = Figure(figsize=(9, 4.2))
    (a, b) = fig.subplots(1, 2)
    for cls, col in ((1, "tab:red"), (-1, "tab:blue")):
        a.scatter(X[y == cls, 0], X[y == cls, 1], s=6, c=col, alpha=0.5, label=f"observations, y = {cls:+d}")
        a.scatter(
            CENTERS[LABELS == cls, 0],
            CENTERS[LABELS == cls, 1],
            s=80,
            c=col,
            edgecolor="k",
            marker="o",
            label=f"nominal points, y = {cls:+d}",
        )
    a.set_title("input space: 4 nominal points + noisy observations")
    a.set(xlabel="$x_1$", ylabel="$x_2$")
    a.set_aspect("equal")
    a.legend(fontsize=7, loc="best")
    t = np.linspace(0, 2 * np.pi, 400)
    b.plot(np.cos(t), np.sin(t), color="0.7", lw=1, label="unit circle (RFF image, D = 2)")
    for cls, col in ((1, "tab:red"), (-1, "tab:blue")):
        b.scatter(P[y == cls, 0], P[y == cls, 1], s=6, c=col, alpha=0.5, label=f"mapped observations, y = {cls:+d}")
    for k in range(4):
        b.add_patch(
            Circle(Pc[k], Gamma[k], fill=False, ls="--", color="0.3", label="bound disc Gamma_i" if k == 0 else None)
        )
    w, c0 = svc.coef_.ravel(), svc.intercept_[0]
    u = np.linspace(-1.5, 1.5, 2)
    if abs(w[1]) > abs(w[0]):
        b.plot(u, -(w[0] * u + c0) / w[1], "k-", label="linear SVM boundary")
    else:
        b.plot(-(w[1] * u + c0) / w[0], u, "k-", label="linear SVM boundary")
    b.set_xlim(-1.5, 1.5)
    b.set_ylim(-1.5, 1.5)
    b.set(xlabel="RFF feature $z_1(x)$", ylabel="RFF feature $z_2(x)$")
    b.set_aspect("equal")
    b.legend(fontsize=6, loc="lower left")
    b.set_title(
        f"RFF, D = 2 (sigma={sigma}, seed={seed}): linear separation;\n"
        f"dashed: feature-space bound Gamma_i (Prop. 4.1, corrected)",
        fontsize=8,
    )
    fig.suptitle("[CJ20] Fig. 1: noisy XOR points and their random-Fourier-feature images")
    fig.tight_layout()
    fig.savefig(run.out / "couellan2020_fig1.png", dpi=120)
    return (
        f"wrote {run.out / 'couellan2020_fig1.png'}; seed {seed}; observations inside their bound discs: {inside}"
    ), inside


EXPERIMENT = GridExperiment(
    "couellan2020-fig1",
    "Figure 1 of [CJ20]: four noisy XOR points mapped onto the circle by RFF with D = 2",
    cells,
    figure_cell,
    report,
    version="1",
    result_fields=RESULT_FIELDS,
)
REPRODUCTIONS = {"couellan2020-fig1": EXPERIMENT}
