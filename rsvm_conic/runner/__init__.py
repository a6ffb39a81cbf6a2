"""The shared runner: solve one problem with several backends, and run grids of cells."""

from .compare import BackendReport, ProblemInstance, check_instance, compare_backends, format_reports, relative_gap
from .grid import GridExperiment, ResultsStore, cell_key, run_grid, seed_from_cell

__all__ = [
    "BackendReport", "GridExperiment", "ProblemInstance", "ResultsStore", "cell_key", "check_instance", "compare_backends",
    "format_reports", "relative_gap", "run_grid", "seed_from_cell",
]
