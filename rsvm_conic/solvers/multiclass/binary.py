"""The binary (two-class) Weston-Watkins machine [ElD19, eq. 1.9] exactly, through libsvm.

For ``C = 2`` the WW machine is exactly ``2 x`` the binary SVM with ``C_svm = zeta``
(``w_1 = -w_0 = v``, ``f_1 - f_0 = 2 (v . phi + c)``), so libsvm solves it exactly.
"""

from __future__ import annotations

import numpy as np

from ...certify.hinge import hinge_min
from ..svm_dual import libsvm_dual
from ..svm_polish import polish_svm_dual


def ww_binary_libsvm(K, codes, zeta, tol: float = 1e-8):
    """Solve the two-class WW machine exactly through libsvm, polished in double precision.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Gram matrix (trusted: finite, symmetric PSD).
    codes : ndarray of shape (n,)
        Class codes in ``{0, 1}``.
    zeta : float or ndarray of shape (n,)
        Eq. 1.9's penalty, or one bound ``zeta_i`` per sample (sample weights).
    tol : float
        libsvm's stopping tolerance.

    Returns
    -------
    beta : ndarray of shape (n, 2)
        Kernel expansion of the two classes' weights (``w_k = sum_i beta_ik phi(x_i)``).
    b : ndarray of shape (2,)
        Biases ``(-c, c)`` with the best offset ``c`` of the SVM for this ``beta``.
    """
    y_pm = np.where(codes == 1, 1.0, -1.0)
    zeta = np.asarray(zeta, dtype=float) if np.ndim(zeta) else float(zeta)
    alpha, _ = libsvm_dual(K, y_pm, zeta, tol=tol, max_iter=-1)
    # libsvm meets its KKT tolerance, not a 1e-6 objective gap: polish in double precision (one Newton
    # step on its active set, as for RSVM_QP), kept only if it certifies
    polished = polish_svm_dual(K, y_pm, zeta, alpha, 1e-7)  # a tenth of the certificate's 1e-6
    v = y_pm * (alpha if polished is None else polished[0])  # y_i alpha_i, y = +1 for class 1
    beta = np.stack([-v, v], axis=1)
    # libsvm's intercept is an average over free support vectors (accurate to its tolerance only); the
    # best offset c of the SVM f = K v + c for this v minimises sum_i max(0, 1 - y_i f_i) exactly
    c = hinge_min(1.0 - y_pm * (K @ v), y_pm, zeta if np.ndim(zeta) else None)[1]
    return beta, np.array([-c, c])
