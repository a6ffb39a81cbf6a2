"""The shared runner: solve one problem with several backends, and run grids of cells."""

from .compare import BackendReport, ProblemInstance, check_instance, compare_backends, format_reports, relative_gap
from .grid import (
    GridExperiment,
    GridRun,
    ResultsStore,
    SchedulerError,
    StoreLockedError,
    StoreWarning,
    cell_key,
    connect_scheduler,
    default_n_jobs,
    environment,
    run_grid,
    seed_from_cell,
)

__all__ = [
    "BackendReport",
    "GridExperiment",
    "GridRun",
    "ProblemInstance",
    "ResultsStore",
    "SchedulerError",
    "StoreLockedError",
    "StoreWarning",
    "cell_key",
    "check_instance",
    "compare_backends",
    "connect_scheduler",
    "default_n_jobs",
    "environment",
    "format_reports",
    "relative_gap",
    "run_grid",
    "seed_from_cell",
]
