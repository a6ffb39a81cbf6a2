"""Synthetic generators and vendored public data sets (see data/PROVENANCE.md)."""

from .bhadra2010 import make_bhadra2010
from .keel import load_dataset, load_keel, train_test_split_table41
from .synthetic import make_uncertain_classification, train_test_split_arrays
from .toys import make_xor_thesis

__all__ = [
    "load_dataset",
    "load_keel",
    "make_bhadra2010",
    "make_uncertain_classification",
    "make_xor_thesis",
    "train_test_split_arrays",
    "train_test_split_table41",
]
