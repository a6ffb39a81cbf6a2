"""Solvers of the Weston-Watkins multi-class machine [ElD19, eq. 1.9]."""
