"""Safety factors turning a chance constraint into a second-order cone constraint.

For a perturbation ``dx`` with mean 0 and covariance ``Sigma`` the linear constraint
``y (<w, x + dx> + b) + xi >= 1`` holds with probability at least ``1 - epsilon`` if

    y (<w, x> + b) + xi - 1 >= kappa(epsilon) * ||Sigma^{1/2} w||_2 .

* ``gaussian``: dx ~ N(0, Sigma) exactly: ``kappa = Phi^{-1}(1 - epsilon)``; the
  constraint is then also necessary.  Convex only for ``epsilon <= 1/2`` (kappa >= 0).
* ``chebyshev``: any distribution with that mean and covariance (one-sided
  multivariate Chebyshev / Cantelli bound ``P[Z >= t] <= s^2 / (s^2 + t^2)``):
  ``kappa = sqrt((1 - epsilon) / epsilon)``.  Tight: a two-point law along the
  direction ``Sigma^{1/2} w`` attains it (see tests).

Correction of [CJ20] (Sec. 3, "Chance constrained approach"): the text states
gamma_i = sqrt(epsilon_i / (1 - epsilon_i)); that is the reciprocal of the correct
factor.  With it, epsilon = 0.1 would give kappa = 0.33 and a violation
probability up to 1 / (1 + 0.33^2) = 0.9 under Chebyshev's worst case.  The test
``test_chance_constraint_holds`` measures both.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_choice, check_integer, check_probability

DISTRIBUTIONS = ("chebyshev", "gaussian")  # the linear chance-constrained SVM's choices
#: every model kappa(epsilon) knows: the two above and [BBBB10]'s finite-support noise
MODELS = ("chebyshev", "gaussian", "finite")


def kappa(epsilon: float, model: str = "chebyshev", *, allow_negative: bool = False) -> float:
    """The safety factor kappa(epsilon) for ``P[constraint holds] >= 1 - epsilon`` -- the one home of it.

    * ``"chebyshev"``: ``sqrt((1 - epsilon) / epsilon)`` (any law with the given mean and covariance);
    * ``"gaussian"``: ``Phi^{-1}(1 - epsilon)`` (Gaussian perturbations; [BBBB10], Thm 1 for
      the kernel matrix).  Negative for ``epsilon > 1/2``, where the constraint is non-convex;
    * ``"finite"``: ``sqrt(2 log(1 / epsilon))`` (finite-support kernel noise, [BBBB10], Thm 3).

    Parameters
    ----------
    epsilon : float
        The allowed violation probability, in (0, 1).
    model : {"chebyshev", "gaussian", "finite"}, default "chebyshev"
        The noise model.
    allow_negative : bool, default False
        Return the negative Gaussian factor for ``epsilon > 1/2`` instead of raising (the Table 1 reproduction
        clips such values at 0 itself).

    Returns
    -------
    float
        The factor kappa.

    Raises
    ------
    ValueError
        If ``epsilon`` is not in (0, 1), ``model`` is unknown, or the Gaussian factor would be negative.
    """
    check_choice(model, "model", MODELS)
    eps = check_probability(epsilon, "epsilon")
    if model == "gaussian":
        if eps > 0.5 and not allow_negative:
            raise ValueError(
                f"epsilon = {eps} > 0.5 makes the Gaussian chance constraint non-convex "
                "(kappa < 0); use epsilon in (0, 0.5]."
            )
        from scipy.special import ndtri

        return float(-ndtri(eps))  # scipy.stats.norm.isf(eps) (its definition), without its argument handling
    if model == "finite":
        return float(np.sqrt(2.0 * np.log(1.0 / eps)))
    return float(np.sqrt((1.0 - eps) / eps))


#: the noise models of [BBBB10] whose moments :func:`kappa_estimated` corrects
ESTIMATED_MODELS = ("gaussian", "finite")


def kappa_estimated(
    epsilon: float, model: str, n_samples: int, *, confidence: float = 0.95, mean_known: bool = False
) -> float:
    """The factor ``kappa`` of [BBBB10, eq. 15] when the noise moments are estimated from ``n_samples`` draws.

    Formulation (15) guarantees ``P(alpha'Y K Y alpha > t) <= epsilon`` when ``K_bar`` and ``beta`` are the
    true mean and noise parameters.  Estimated from ``S = n_samples`` kernel samples, ``alpha'Y K_hat Y alpha``
    errs by ``v'Z_bar v`` (``v = y * alpha``, ``Z_bar`` the mean of the samples' noise), whose standard
    deviation is ``s / sqrt(S)`` with ``s = sqrt(nu'beta nu)`` the robust term's own scale; the paper's factor
    ignores it.  This factor makes ``alpha'Y K_hat Y alpha + kappa_S s_hat <= t`` imply the true constraint
    ``alpha'Y K_bar Y alpha + kappa s <= t`` with probability at least ``confidence`` over the samples, for
    a fixed ``alpha``:

    * ``"gaussian"`` (Thm 1), mean estimated: the one-sided normal tolerance factor [KM09, Sec. 2.2]
      ``kappa_S = t'_{S-1}(confidence; sqrt(S) kappa) / sqrt(S)`` (``t'`` the noncentral t quantile).
      Exact when ``s_hat^2 / s^2`` is a chi-square with ``S - 1`` degrees of freedom over ``S - 1`` (the
      sample variance of one entry); ``s_hat^2 = nu'beta_hat nu`` is a weighted average of such independent
      entry variances, which is more concentrated, and the factor then holds with at least ``confidence``
      (checked by Monte Carlo over random weightings, ``tests/test_kernel_uncertainty.py``);
    * ``"gaussian"``, mean known (``mean_known=True``): only ``s`` is estimated, ``kappa_S = kappa
      sqrt((S - 1) / chi2_{S-1}(1 - confidence))``;
    * ``"finite"`` (Thm 2-3), mean estimated: ``v'Z_bar v`` averages ``S`` independent terms of
      sub-Gaussian proxy ``s^2``, so ``P(-v'Z_bar v >= u) <= exp(-S u^2 / (2 s^2))`` and
      ``kappa_S = kappa + sqrt(2 log(1 / (1 - confidence)) / S)``, given the noise support; with
      ``mean_known=True`` it is ``kappa``.  (The support itself is estimated by the samples' range, which no
      finite sample bounds without a further assumption.)

    The guarantee is pointwise: ``alpha`` chosen from the same samples may exploit their error; the Monte
    Carlo check ``rsvm-conic run kernel-chance-mc`` measures the fitted estimator on fresh draws.

    Parameters
    ----------
    epsilon : float
        Allowed violation probability in (0, 1); the Gaussian model needs ``epsilon <= 0.5``.
    model : {"gaussian", "finite"}
        The noise model of [BBBB10] (see :func:`kappa`).
    n_samples : int
        Number ``S >= 2`` of kernel samples the moments were estimated from.
    confidence : float, default 0.95
        Probability in (0, 1), over the draw of the samples, that the guarantee holds.
    mean_known : bool, default False
        True when the mean kernel is given exactly and only the noise parameters are estimated.

    Returns
    -------
    float
        ``kappa_S >= kappa(epsilon, model)``; it decreases to ``kappa`` as ``S`` grows.
    """
    check_choice(model, "model", ESTIMATED_MODELS)
    k = kappa(epsilon, model)
    S = check_integer(n_samples, "n_samples", minimum=2)
    delta = 1.0 - check_probability(confidence, "confidence")
    if model == "gaussian":
        # the quantiles by the special functions behind scipy.stats' chi2.ppf, nct.ppf and norm.isf (the same values,
        # without the distributions' argument handling, a tenth of a millisecond per call); older scipy releases
        # (1.11) compute nct.ppf by Boost instead of nctdtrit, which agrees to about 1e-7 relative
        from scipy.special import gammaincinv, nctdtrit, ndtri

        if mean_known:
            return float(k * np.sqrt((S - 1) / (2.0 * gammaincinv((S - 1) / 2.0, delta))))
        k_s = float(nctdtrit(S - 1, k * np.sqrt(S), 1.0 - delta) / np.sqrt(S))
        if not np.isfinite(k_s):  # scipy's noncentral t fails beyond ~1e8 samples: the normal approximation [KM09]
            z = -ndtri(delta)
            a = 1.0 - z * z / (2.0 * (S - 1))
            k_s = float((k + np.sqrt(k * k - a * (k * k - z * z / S))) / a)
        return k_s
    if mean_known:
        return k
    return float(k + np.sqrt(2.0 * np.log(1.0 / delta) / S))


def epsilon_from_kappa(k: float, model: str = "chebyshev") -> float:
    """Inverse of :func:`kappa` (for ``k >= 0``).

    Parameters
    ----------
    k : float
        The safety factor (>= 0).
    model : {"chebyshev", "gaussian", "finite"}, default "chebyshev"
        The noise model.

    Returns
    -------
    float
        The violation probability epsilon that gives ``k``.
    """
    check_choice(model, "model", MODELS)
    if k < 0:
        raise ValueError(f"kappa must be >= 0; got {k}.")
    if model == "gaussian":
        from scipy.stats import norm

        return float(norm.sf(k))
    if model == "finite":
        return float(np.exp(-0.5 * k * k))
    return float(1.0 / (1.0 + k * k))
