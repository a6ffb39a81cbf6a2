"""Solvers of the Weston-Watkins multi-class machine [ElD19, eq. 1.9]: arrays in, arrays and a certificate out.

One sub-package for the model's solvers because they share its objective, its dual bound (their stopping test)
and their iterates (coordinate descent hands its point and multipliers to the Newton method):

- :mod:`.objective`: :func:`.ww_objective` (the primal every route is scored on), :func:`.ww_dual_bound` (a
  feasible dual point from any multipliers), :func:`.ww_scaled_model` (the hard-margin rescaling of a
  solution);
- :mod:`.cd`: dual coordinate descent with shrinking, its compiled epoch beside its driver :func:`.ww_dual_cd`;
- :mod:`.alm`: the method of multipliers with semismooth Newton-CG steps, :func:`.ww_primal_alm`;
- :mod:`.lbfgs`: L-BFGS on the smoothed primal, :func:`.ww_primal_lbfgs`;
- :mod:`.binary`: two classes exactly through libsvm, :func:`.ww_binary_libsvm`.
- :mod:`.certificate`: the certified end of every route (:func:`.certificate.ww_certificate`,
  :func:`.certificate.ww_evaluated`, the dual QP's rescaled retries), :func:`.certificate.gram_factor`,
  :func:`.certificate.gram_rows` (pivoted Cholesky rows of an exact kernel);
- :mod:`.features`: :class:`.features.FeatureRows`, the rows the feature solvers run on (the kernel's
  :func:`.certificate.gram_rows`, or the thin QR factor of features with fewer samples than columns) and the map
  back to the coefficients.

The feature solvers take ``(Phi (n, D), codes (n,) in 0..C-1, n_classes, zeta)`` as trusted arrays and return
``(W (D, C), b (C,), info)``, ``info["certificate"]`` a :class:`~rsvm_conic.certify.contract.SolveInfo`.
"""

from .alm import ww_primal_alm
from .binary import ww_binary_libsvm
from .cd import ww_cd_epoch, ww_dual_cd, ww_threads
from .lbfgs import lbfgs, ww_primal_lbfgs
from .objective import msvmpack_objective, msvmpack_zeta, ww_dual_bound, ww_losses, ww_objective, ww_scaled_model

__all__ = [
    "lbfgs",
    "msvmpack_objective",
    "msvmpack_zeta",
    "ww_binary_libsvm",
    "ww_cd_epoch",
    "ww_dual_bound",
    "ww_dual_cd",
    "ww_losses",
    "ww_objective",
    "ww_primal_alm",
    "ww_primal_lbfgs",
    "ww_scaled_model",
    "ww_threads",
]
