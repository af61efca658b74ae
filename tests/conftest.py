"""Fixtures and hooks shared by the test modules."""
import pytest


def _fuzz_module(items):
    fuzz = [item for item in items if getattr(item, "originalname", None) == "test_fuzz"]
    return (fuzz[0].module, fuzz) if fuzz else (None, [])


def pytest_collection_finish(session):
    """The bounds-checked fuzz runs compile numba cold for minutes: start them as soon as they
    are selected (``test_fuzz.py``), so they use the second core while the others run."""
    module, fuzz = _fuzz_module(session.items)
    if module is not None:
        module.start_in_background(fuzz)


def pytest_sessionfinish(session):
    """Stop the fuzz runs whose tests did not run (a session stopped early)."""
    module, _ = _fuzz_module(getattr(session, "items", []))
    if module is not None:
        module.stop_unfinished()


@pytest.fixture(scope="module")
def dask_client():
    """A client of a 2-worker dask cluster in this process (threads: quick to start), the
    current one while the module's tests run; skips without ``distributed``."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, client.as_current():
        yield client
