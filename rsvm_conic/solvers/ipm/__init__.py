"""The interior point: one Nesterov-Todd engine and the robust SVM's KKT operators.

``engine`` (the cone QP main loop, its cone algebra and refinement rule), ``kkt`` (the robust SVM's reduced KKT
algebra: Gram matrices and the cones' terms, shared by both operators), ``robust_svm`` (the in-memory operator
:class:`~.robust_svm.RobustSVMCone` and the array entries ``robust_svm_ipm`` / ``solve_robust_ipm``),
``row_block_ipm`` + ``row_blocks`` (the same model on Dask row blocks), ``status`` (how a run that is not optimal
ends), ``cone_loops`` (+ their numpy twins ``cone_loops_numpy``: the compiled row loops of all of these).
"""
