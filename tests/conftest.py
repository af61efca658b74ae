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


def pytest_sessionfinish(session):
    """An xdist worker sends its compile clock to the controller, which prints the total."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["numba_compile"] = (_CLOCK.count, _CLOCK.seconds)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    count, seconds = getattr(node, "workeroutput", {}).get("numba_compile", (0, 0.0))
    _CLOCK.count += count
    _CLOCK.seconds += seconds


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(
        f"numba compiled {_CLOCK.count} specialisations in the session's pytest processes, "
        f"{_CLOCK.seconds:.0f} s of CPU (the others were loaded from its cache)")


def pytest_collection_modifyitems(session, config, items):
    """The fuzz tests first, the longest first (``test_fuzz.RUNS``): each takes minutes in a
    child process, and with xdist's workers the rest of the suite runs beside them."""
    fuzz = [item for item in items if getattr(item, "originalname", None) == "test_fuzz"]
    items[:] = fuzz + [item for item in items if item not in fuzz]


@pytest.fixture(scope="module")
def dask_client():
    """A client of a 2-worker dask cluster in this process (threads: quick to start), the
    current one while the module's tests run; skips without ``distributed``."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, client.as_current():
        yield client
