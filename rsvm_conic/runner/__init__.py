"""The shared runner: solve one problem with several backends, and run grids of cells."""

from .fields import Flag, ListOf, MapOf, Maybe, Number, OneOf, Record, Text
from .compare import BackendReport, ProblemInstance, check_instance, compare_backends, format_reports, distance_to_best
from .grid import (
    GridExperiment,
    GridRun,
    ResultsStore,
    cell_key,
    connect_scheduler,
    default_n_jobs,
    environment,
    run_grid,
    seed_from_cell,
)
from ..exceptions import SchedulerError, StoreError, StoreLockedError, StoreWarning

__all__ = [
    "BackendReport",
    "Flag",
    "GridExperiment",
    "GridRun",
    "ListOf",
    "MapOf",
    "Maybe",
    "Number",
    "OneOf",
    "ProblemInstance",
    "Record",
    "ResultsStore",
    "SchedulerError",
    "StoreError",
    "StoreLockedError",
    "StoreWarning",
    "Text",
    "cell_key",
    "check_instance",
    "compare_backends",
    "distance_to_best",
    "connect_scheduler",
    "default_n_jobs",
    "environment",
    "format_reports",
    "run_grid",
    "seed_from_cell",
]
