"""Helpers shared by solvers: threads, progress bars, timing."""
import time
from contextlib import contextmanager

import numba
from tqdm.auto import tqdm


@contextmanager
def numba_threads(n_jobs):
    """Run batched kernels on ``n_jobs`` numba threads (scikit-learn's meaning of n_jobs)."""
    previous = numba.get_num_threads()
    available = numba.config.NUMBA_NUM_THREADS
    if n_jobs is None:
        wanted = previous
    elif n_jobs < 0:
        wanted = max(1, available + 1 + n_jobs)
    else:
        wanted = n_jobs
    numba.set_num_threads(max(1, min(wanted, available)))
    try:
        yield
    finally:
        numba.set_num_threads(previous)


class Clock:
    """Wall and CPU seconds since creation."""

    def __init__(self):
        self.wall0 = time.perf_counter()
        self.cpu0 = time.process_time()

    def wall(self):
        return time.perf_counter() - self.wall0

    def cpu(self):
        return time.process_time() - self.cpu0


def progress_bar(total, verbose, desc):
    return tqdm(total=total, disable=not verbose, desc=desc, unit="pass", leave=verbose > 1)
