import matplotlib
import pytest

matplotlib.use("Agg")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the item (``item.rep_call``): the fuzz modules' per-test outcome
    check (tests/_fuzzutil.py) runs only after a passing call, so a failure is reported once."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
