"""Bounded data uncertainty: ``||Sigma_i^{-1/2} dx_i||_p <= gamma_i`` [CJ20, Sec. 3].

The set of admissible perturbations of sample ``i`` is

    U_i = { A_g u : ||u||_p <= gamma_i },     g = group of sample i,

where ``A_g = Sigma_g^{1/2}`` is a square root of the group's covariance-like
matrix (``A A^T = Sigma``).  For an invertible ``A`` this is exactly
``||A^{-1} dx||_p <= gamma``; for a singular ``Sigma`` it is its closure (the
perturbation lives in the range of Sigma).  For p != 2 the set depends on which
square root is used: we use the symmetric square root unless a factor ``A`` is given
explicitly.  For p = 2 it does not (``||A^T w||_2 = sqrt(w' Sigma w)`` for every root), so
positive definite matrices are factored by Cholesky, about 5x cheaper (the symmetric root
otherwise); the factorisation that validates Sigma is the one the solvers use.

Worst case (Hoelder):  min_{dx in U_i} y <w, dx> = -gamma_i ||A_g^T w||_q with
1/p + 1/q = 1, attained at ``dx* = -y gamma_i A_g u*`` where ``u*`` is the
maximiser of ``<A^T w, u>`` over the unit p-ball (:meth:`worst_case`).

Sigma may be given as

* ``None`` -- identity (a p-norm ball of radius gamma),
* shape ``(n,)`` -- one shared diagonal,
* shape ``(n, n)`` without ``groups`` -- one shared matrix,
* shape ``(k, n)`` with ``groups`` -- a diagonal per group,
* shape ``(k, n, n)`` -- a matrix per group (``groups`` of k labels), or per sample when ``k == L``
  and ``groups`` is omitted.

``groups`` holds one label per sample; groups are the sorted unique labels, in
the order of Sigma's first axis.  ``groups="sample"`` means one group per sample.
"""

from __future__ import annotations

import numpy as np

from .._validation import (
    check_finite_array,
    check_groups_have_sigma,
    check_no_overflow,
    check_norm,
    check_positive,
    check_sample_scale,
    check_symmetric_psd,
    dual_norm,
    psd_factor,
)


def psd_sqrt(S: np.ndarray) -> np.ndarray:
    """Symmetric PSD square root of one or a stack of symmetric PSD matrices (negative eigenvalues clipped).

    Parameters
    ----------
    S : ndarray of shape (n, n) or (k, n, n)
        Symmetric matrices.

    Returns
    -------
    ndarray
        The square roots, with the shape of ``S``.
    """
    return psd_factor(S, "S", form="sqrt", on_negative="clip")


def dual_norm_values(U: np.ndarray, q: float, axis: int = -1) -> np.ndarray:
    """The q-norm of every row (or of the vectors along ``axis``) of ``U``.

    Parameters
    ----------
    U : ndarray
        The vectors.
    q : {1.0, 2.0, inf}
        The norm.
    axis : int, default -1
        The axis holding the vectors' entries.

    Returns
    -------
    ndarray
        The norms (``U``'s shape without ``axis``).
    """
    if q == 2.0:  # array methods, not numpy's function wrappers: the stochastic solvers call this per minibatch
        return np.sqrt((U * U).sum(axis=axis))
    if q == 1.0:
        return np.abs(U).sum(axis=axis)
    return np.abs(U).max(axis=axis)


def dual_norm_subgradient(U: np.ndarray, q: float) -> np.ndarray:
    """A subgradient of ``||u||_q`` at each row of ``U`` (zero rows get 0).

    It is also the maximiser u* of <U_row, u> over the unit p-ball, p dual to q.

    Parameters
    ----------
    U : ndarray of shape (m, n)
        The rows.
    q : {1.0, 2.0, inf}
        The norm.

    Returns
    -------
    ndarray of shape (m, n)
        One subgradient per row.
    """
    if q == 2.0:
        nrm = np.sqrt((U * U).sum(axis=-1, keepdims=True))
        return np.divide(U, nrm, out=np.zeros_like(U), where=nrm > 0)
    if q == 1.0:
        return np.sign(U)
    G = np.zeros_like(U)
    j = np.argmax(np.abs(U), axis=-1)
    idx = np.indices(j.shape)
    G[(*idx, j)] = np.sign(U[(*idx, j)])
    return G


class UncertaintySet:
    """Per-sample p-norm balls through group factors; see module docstring.

    Parameters
    ----------
    Sigma : array or None
        Covariance-like shape matrices (see module docstring for accepted shapes).
    groups : array of L labels, "sample" or None
    p : 1, 2 or inf
        The norm of the set; the robust term uses the dual norm q.
    radius : float >= 0
        A global multiplier gamma (the ``radius`` hyper-parameter).
    sample_scale : array (L,) >= 0, optional
        Per-sample multipliers: gamma_i = radius * sample_scale[i].
    factor : array, optional
        Give square-root factors A (A A^T = Sigma) directly instead of Sigma; same
        shapes as a full Sigma ((n, n) or (k, n, n)); need not be symmetric.
    sample_scale_name : str, default="sample_scale"
        The name under which the caller's users pass ``sample_scale`` (the estimators' ``sample_radius``):
        error messages about it use this name.
    """

    def __init__(
        self, Sigma=None, groups=None, p=2, radius=1.0, sample_scale=None, factor=None, sample_scale_name="sample_scale"
    ):
        self.Sigma = Sigma
        self.groups = groups
        self.p = p
        self.radius = radius
        self.sample_scale = sample_scale
        self.factor = factor
        self.sample_scale_name = sample_scale_name

    # ------------------------------------------------------------------ resolution
    def resolve(self, n_samples: int, n_features: int) -> "ResolvedUncertainty":
        """Validate against data of shape (L, n) and return the arrays solvers use."""
        L, n = int(n_samples), int(n_features)
        p = check_norm(self.p)
        radius = check_positive(self.radius, "radius", strict=False)
        if self.Sigma is not None and self.factor is not None:
            raise ValueError("give either Sigma or factor, not both.")
        check_groups_have_sigma(self.groups, self.Sigma, self.factor)

        # group index ------------------------------------------------------------
        groups = self.groups
        if isinstance(groups, str):
            if groups != "sample":
                raise ValueError(f"groups must be an array of labels, 'sample' or None; got {groups!r}.")
            group_index, n_groups = np.arange(L), L
        elif groups is None:
            group_index, n_groups = None, None
        else:
            g = np.asarray(groups)
            if g.ndim != 1 or g.shape[0] != L:
                raise ValueError(f"groups must hold one label per sample ({L}); got shape {g.shape}.")
            labels, group_index = np.unique(g, return_inverse=True)
            n_groups = labels.shape[0]

        # factors ----------------------------------------------------------------
        diagonal = False
        root = "cholesky" if p == 2.0 else "sqrt"  # for p = 2 the set is the same for every A with A A' = Sigma
        if self.factor is not None:
            A = check_finite_array(self.factor, "factor", ndim=(2, 3))
            check_no_overflow(A, "factor")
            if A.shape[-2:] != (n, n):
                raise ValueError(f"factor matrices must be {n}x{n} (n_features); got {A.shape[-2:]}.")
            factors = A[None] if A.ndim == 2 else A
        elif self.Sigma is None:
            factors = np.ones((1, n))
            diagonal = True
        else:
            S = check_finite_array(self.Sigma, "Sigma", ndim=(1, 2, 3))
            check_no_overflow(S, "Sigma", products=True, hint="with X: Sigma scales as the square of X's scale")
            if S.ndim == 1:
                factors, diagonal = self._diag_sqrt(S[None], n), True
            elif S.ndim == 2 and group_index is None:
                if S.shape != (n, n):
                    raise ValueError(
                        f"a 2-D Sigma without groups is one shared {n}x{n} matrix; got shape {S.shape}. "
                        "For one diagonal per group pass groups=; for per-sample diagonals pass groups='sample'."
                    )
                factors = check_symmetric_psd(S, "Sigma", factor=root)[None]
            elif S.ndim == 2:
                factors, diagonal = self._diag_sqrt(S, n), True
            else:
                if S.shape[1:] != (n, n):
                    raise ValueError(f"Sigma matrices must be {n}x{n} (n_features); got {S.shape[1:]}.")
                factors = check_symmetric_psd(S, "Sigma", factor=root)

        k = factors.shape[0]
        if group_index is None:
            if k == 1:
                group_index = np.zeros(L, dtype=np.intp)
            elif k == L:
                group_index = np.arange(L)
            else:
                raise ValueError(
                    f"Sigma holds {k} matrices for {L} samples; pass groups= (one label per "
                    "sample) to say which matrix each sample uses."
                )
        elif k != n_groups:
            if k == 1:
                factors = np.repeat(factors, n_groups, axis=0)
            else:
                raise ValueError(f"groups has {n_groups} distinct labels but Sigma holds {k} matrices.")

        if self.sample_scale is None:
            scale = np.ones(L)
        else:
            scale = check_sample_scale(self.sample_scale, L, self.sample_scale_name)
        return ResolvedUncertainty(
            factors=factors,
            diagonal=diagonal,
            group_index=np.asarray(group_index),
            p=p,
            q=dual_norm(p),
            radius=radius,
            scale=scale,
        )

    @staticmethod
    def _diag_sqrt(D: np.ndarray, n: int) -> np.ndarray:
        if D.shape[-1] != n:
            raise ValueError(f"diagonal Sigma must have {n} entries per row (n_features); got {D.shape[-1]}.")
        if np.any(D < 0):
            raise ValueError("diagonal Sigma has negative entries; variances must be >= 0.")
        return np.sqrt(D)


class ResolvedUncertainty:
    """Validated arrays of an :class:`UncertaintySet` for data of a given shape.

    Sample i's set is ``{A_{g(i)} u : ||u||_p <= gamma_i}`` with ``gamma_i = radius * scale[i]``.

    Parameters
    ----------
    factors : ndarray of shape (k, n) or (k, n, n)
        Diagonal square roots, or the matrices A_g.
    diagonal : bool
        Whether ``factors`` holds diagonals.
    group_index : ndarray of int, shape (L,)
        Each sample's group.
    p, q : float
        The set's norm and its dual.
    radius : float
        The common radius.
    scale : ndarray of shape (L,)
        Per-sample factors of the radius.
    """

    def __init__(self, factors, diagonal, group_index, p, q, radius, scale):
        self.factors = factors
        self.diagonal = diagonal
        self.group_index = group_index
        self.p, self.q = p, q
        self.radius = radius
        self.scale = scale

    @property
    def n_groups(self) -> int:
        return self.factors.shape[0]

    @property
    def gamma(self) -> np.ndarray:
        return self.radius * self.scale

    def group_scale(self) -> np.ndarray | None:
        """If all samples of each group share one gamma, return it per group (else None)."""
        k = self.n_groups
        ref = np.zeros(k)
        ref[self.group_index] = self.scale
        return ref if np.allclose(ref[self.group_index], self.scale) else None

    def transpose_apply(self, w: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
        """``A_g^T w`` for every group g (or the listed groups): shape (k, n)."""
        F = self.factors if groups is None else self.factors[groups]
        if self.diagonal:
            return F * w
        return np.einsum("kij,i->kj", F, w)

    def support(self, w: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
        """``||A_g^T w||_q`` per group."""
        return dual_norm_values(self.transpose_apply(w, groups), self.q)

    def robust_penalty(self, w: np.ndarray) -> np.ndarray:
        """Per-sample ``gamma_i ||A_{g(i)}^T w||_q``."""
        return self.gamma * self.support(w)[self.group_index]

    def support_grad(self, w: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """A subgradient of ``||A_g^T w||_q`` w.r.t. w for each listed group: shape (len(groups), n)."""
        U = self.transpose_apply(w, groups)
        G = dual_norm_subgradient(U, self.q)
        F = self.factors[groups]
        if self.diagonal:
            return F * G
        return np.einsum("kij,kj->ki", F, G)

    def worst_case(self, w: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The perturbations dx_i in U_i minimising y_i <w, dx_i> (closed form, shape (L, n))."""
        U = self.transpose_apply(w)  # (k, n)
        ustar = dual_norm_subgradient(U, self.q)  # maximiser over the unit p-ball
        if self.diagonal:
            D = self.factors * ustar
        else:
            D = np.einsum("kij,kj->ki", self.factors, ustar)
        return -(y * self.gamma)[:, None] * D[self.group_index]

    def sample_ball(self, i: int, size: int, rng: np.random.Generator, boundary: bool = True) -> np.ndarray:
        """Random perturbations in U_i (on its boundary if ``boundary``; see :func:`sample_pball`): shape (size, n)."""
        u = sample_pball(size, self.factors.shape[-1], self.p, rng, self.gamma[i], boundary)
        F = self.factors[self.group_index[i]]
        return u * F if self.diagonal else u @ F.T


def sample_pball(
    size: int, n: int, p: float, rng: np.random.Generator, radius: float = 1.0, boundary: bool = False
) -> np.ndarray:
    """``size`` random points of the p-ball ``{u in R^n : ||u||_p <= radius}`` (p in {1, 2, inf}).

    ``boundary=False``: uniform in the ball -- a uniform direction on the sphere (a normalised Gaussian for
    p = 2, a normalised Laplace vector for p = 1) times ``U^(1/n)``, U uniform on [0, 1]; the cube for p = inf.
    ``boundary=True``: on the sphere ``||u||_p = radius`` (p = inf: a random face, ``u_j = +-1`` for a random
    j), where the first quarter of the rows for p = inf, and up to ``2 n`` of them for p = 1, are the vertices
    (``+-1`` vectors; ``+-e_k``): many maxima of smooth functions over the ball sit there.

    Parameters
    ----------
    size : int
        Number of points.
    n : int
        Dimension.
    p : {1, 2, inf}
        The norm.
    rng : numpy.random.Generator
        The random stream.
    radius : float, default 1.0
        Radius of the ball.
    boundary : bool, default False
        Sample the sphere instead of the ball.

    Returns
    -------
    ndarray of shape (size, n)
        The points.
    """
    if p == np.inf and not boundary:
        return rng.uniform(-radius, radius, (size, n))
    if p == 2.0:
        u = rng.standard_normal((size, n))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
    elif p == np.inf:
        u = rng.uniform(-1, 1, (size, n))
        j = rng.integers(0, n, size)
        rows = np.arange(size)
        u[rows, j] = np.sign(u[rows, j]) + (u[rows, j] == 0)
        k = size // 4
        u[:k] = rng.choice([-1.0, 1.0], (k, n))
    else:
        u = rng.exponential(size=(size, n)) * rng.choice([-1.0, 1.0], size=(size, n))
        u /= np.sum(np.abs(u), axis=1, keepdims=True)
        if boundary:
            k = min(size // 4, 2 * n)
            idx = np.arange(k)
            u[:k] = 0.0
            u[idx, idx % n] = np.where(idx < n, 1.0, -1.0)
    if boundary:
        return radius * u
    return radius * u * rng.uniform(0, 1, (size, 1)) ** (1.0 / n)
