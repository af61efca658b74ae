"""Threads for the batched kernels: ``nogil`` kernels over chunks of examples, on a thread pool.

The batched passes (every example's oracle at fixed weights) are written as serial kernels over
a range ``[lo, hi)`` of examples and run here over contiguous chunks. Python threads rather than
numba's ``parallel=True``: the parfor lowering cost a third of a first fit's compilation, and
the thread count then follows scikit-learn's ``n_jobs`` (set by ``use_threads``) without numba's
threading layer.
"""
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

#: at most this many chunks per thread: enough to balance uneven example lengths
CHUNKS_PER_THREAD = 8

_n_threads = ContextVar("sklearn_ssvm_kernel_threads", default=1)


def n_threads():
    """The number of threads batched kernels use in this context (1 unless ``use_threads``)."""
    return _n_threads.get()


@contextmanager
def use_threads(n):
    """Run batched kernels on ``n >= 1`` threads inside the ``with`` block."""
    token = _n_threads.set(max(1, int(n)))
    try:
        yield
    finally:
        _n_threads.reset(token)


def run_chunks(kernel, n, *args):
    """Call ``kernel(*args, lo, hi)`` over contiguous chunks covering ``range(n)``.

    One call on one thread; otherwise ``CHUNKS_PER_THREAD`` chunks per thread, as ``kernel``
    must be compiled with ``nogil=True`` and write only the rows of its own examples. An
    exception of any chunk is raised here.
    """
    threads = min(n_threads(), n)
    if threads <= 1:
        kernel(*args, 0, n)
        return
    n_chunks = min(n, threads * CHUNKS_PER_THREAD)
    bounds = [c * n // n_chunks for c in range(n_chunks + 1)]
    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(kernel, *args, lo, hi) for lo, hi in zip(bounds, bounds[1:])]
        for future in futures:
            future.result()


def run_sums(kernel, n, threads, outputs, *args):
    """Call ``kernel(*args, *outputs, lo, hi)``, which adds terms of the examples ``lo..hi-1``
    into its outputs, over ``range(n)`` on ``threads`` threads.

    One contiguous chunk per thread; the first adds into ``outputs``, the others into zeroed
    copies, added into ``outputs`` in chunk order at the end: the same sums on every call with
    ``threads`` threads, but not to the bit those of one thread (the additions' order differs).
    """
    threads = min(threads, n)
    if threads <= 1:
        kernel(*args, *outputs, 0, n)
        return
    bounds = [c * n // threads for c in range(threads + 1)]
    parts = [tuple(outputs)] + [tuple(np.zeros_like(a) for a in outputs)
                                for _ in range(threads - 1)]
    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(kernel, *args, *part, lo, hi)
                   for part, lo, hi in zip(parts, bounds, bounds[1:])]
        for future in futures:
            future.result()
    for part in parts[1:]:
        for out, term in zip(outputs, part):
            out += term


def thread_map(function, n):
    """``[function(i) for i in range(n)]``, on the threads of ``use_threads`` when there are
    several (for per-example Python oracles that release the GIL in their solvers: max-flow,
    HiGHS, numba kernels)."""
    threads = min(n_threads(), n)
    if threads <= 1:
        return [function(i) for i in range(n)]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(function, range(n)))
