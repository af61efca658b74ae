"""Fixtures shared by the test modules."""
import numba
import pytest


@pytest.fixture(scope="module")
def one_numba_thread():
    """Tiny problems: one numba thread avoids OpenMP barriers on a loaded machine (a module
    opts in with ``pytestmark = pytest.mark.usefixtures("one_numba_thread")``)."""
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(previous)
