"""Timing helpers for the benchmarks: medians of repeats, CPU beside wall seconds."""
import statistics
import time


def timed(fn, repeats=5):
    """Run ``fn`` once (compilation or cache load, reported apart), then ``repeats`` times.

    Returns ``(first_wall, median_wall, median_cpu, result)``; ``timed.last_min_cpu`` keeps the
    fastest repeat's CPU seconds (the least disturbed by other load on a shared machine).
    """
    t = time.perf_counter()
    result = fn()
    first = time.perf_counter() - t
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    timed.last_min_cpu = min(cpus)
    return first, statistics.median(walls), statistics.median(cpus), result


class Stopwatch:
    """``with Stopwatch() as t: ...`` then ``t.wall``, ``t.cpu`` (seconds)."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu
