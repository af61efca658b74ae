"""Fixtures and hooks shared by the test modules."""
import time

import pytest
from numba.core import event


class _CompileClock(event.Listener):
    """Adds up the CPU seconds numba spends compiling in this process (outermost compilations:
    a kernel's compilation includes its callees'), for the session's summary."""

    def __init__(self):
        self.depth, self.seconds, self.count = 0, 0.0, 0

    def on_start(self, event):
        if self.depth == 0:
            self.started = time.process_time()
        self.depth += 1
        self.count += 1

    def on_end(self, event):
        self.depth -= 1
        if self.depth == 0:
            self.seconds += time.process_time() - self.started


_CLOCK = _CompileClock()


def pytest_configure(config):
    event.register("numba:compile", _CLOCK)


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(
        f"numba compiled {_CLOCK.count} specialisations in this process, "
        f"{_CLOCK.seconds:.0f} s of CPU (the others were loaded from its cache)")


def _fuzz_module(items):
    fuzz = [item for item in items if getattr(item, "originalname", None) == "test_fuzz"]
    return (fuzz[0].module, fuzz) if fuzz else (None, [])


def pytest_collection_modifyitems(session, config, items):
    """The fuzz tests last, in the opposite order of their runs in the background (below)."""
    fuzz = [item for item in items if getattr(item, "originalname", None) == "test_fuzz"]
    items[:] = [item for item in items if item not in fuzz] + fuzz[::-1]


def pytest_collection_finish(session):
    """The fuzz runs compile numba for minutes: start them as soon as they are selected
    (``test_fuzz.py``), one after another, so they use the second core while the others run."""
    module, fuzz = _fuzz_module(session.items)
    if module is not None and not session.config.option.collectonly:
        module.start_in_background(fuzz)


def pytest_sessionfinish(session):
    """Stop the fuzz runs whose tests did not run (a session stopped early), and the queue."""
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
