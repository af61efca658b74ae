"""Fuzzing every estimator x structure with hypothesis (``_fuzz.py``), each estimator's cases in
a child process: a crash or a hang fails the test with the case that caused it, instead of
taking down the session. Every case must fit with finite results or raise a clear
ValueError/TypeError. Two estimators also run with numba's bounds checks and an empty cache
(a NaN turned into an index would write outside an array without them).

The runs compile numba for minutes (the bounds-checked ones cold), so they all start in the
background as soon as they are collected (``conftest.py``), one after another beside the rest of
the suite, which runs the fuzz tests last: the session uses a second core, and the runs without
bounds checks share the session's cache, compiling kernels the other tests then load. A fuzz
test whose run has not begun makes it itself, beside the background's. The bounds-checked runs
share a cache of their own (numba's cache does not tell checked code from unchecked)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

FUZZ = Path(__file__).with_name("_fuzz.py")
CASES = 300  # derandomized: the same cases every run; the bound-checked runs pay a cold compile
TIMEOUT = 900
#: in the order the background runs them, the longest first; their tests run in the opposite
#: order (``conftest.py``), so that a test that finds its run not begun takes one from the end
RUNS = [("bcfw-pairwise", True), ("bcfw", False), ("bcfw-pairwise", False), ("smooth", False),
        ("bmrm", False), ("pragam-structured", False), ("pragam", False), ("pragam", True)]


class _Run:
    """One fuzz run in a child process: ``result`` (return code, stdout, stderr, timed out)
    once ``finished`` is set."""

    def __init__(self, estimator, boundscheck, work):
        self.estimator, self.boundscheck, self.work = estimator, boundscheck, work
        self.finished = threading.Event()
        self.claimed = False  # by the background thread or by its test, whichever comes first
        self.process = self.result = None

    def run(self, cache):
        env = dict(os.environ)
        if self.boundscheck:
            env.update(NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=cache)
        self.process = subprocess.Popen(
            [sys.executable, str(FUZZ), self.estimator, str(CASES), str(self.work / "cases.log")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            cwd=FUZZ.parent)
        try:
            stdout, stderr = self.process.communicate(timeout=TIMEOUT)
            self.result = self.process.returncode, stdout, stderr, False
        except subprocess.TimeoutExpired:
            self.process.kill()
            stdout, stderr = self.process.communicate()
            self.result = self.process.returncode, stdout, stderr, True
        finally:
            self.finished.set()


#: the runs asked for, in order; the thread that runs them one after another while any waits
_RUNS = {}
_LOCK = threading.Lock()
_STOP = threading.Event()
_BACKGROUND = {"thread": None, "cache": None}


def _claim(run):
    """True for the first caller: the run is its to make."""
    with _LOCK:
        mine, run.claimed = not run.claimed, True
        return mine


def _run_queue():
    while not _STOP.is_set():
        with _LOCK:
            waiting = [run for run in _RUNS.values() if not run.claimed]
            if not waiting:
                _BACKGROUND["thread"] = None
                return
        if _claim(waiting[0]):
            waiting[0].run(_BACKGROUND["cache"])


def start(runs):
    """Queue the fuzz runs ``[(estimator, boundscheck)]`` not yet asked for (a run is made once
    a session), and start the background thread unless it runs; returns the runs."""
    with _LOCK:
        for key in runs:
            if key not in _RUNS:
                _RUNS[key] = _Run(*key, Path(tempfile.mkdtemp(prefix="fuzz-")))
        if _BACKGROUND["cache"] is None:
            _BACKGROUND["cache"] = tempfile.mkdtemp(prefix="fuzz-boundscheck-cache-")
        if _BACKGROUND["thread"] is None:
            _BACKGROUND["thread"] = threading.Thread(target=_run_queue, daemon=True)
            _BACKGROUND["thread"].start()
    return [_RUNS[key] for key in runs]


def start_in_background(items):
    """Queue the selected runs now (called when collection finishes), in ``RUNS``' order."""
    selected = {(item.callspec.params["estimator"], item.callspec.params["boundscheck"])
                for item in items if item.originalname == "test_fuzz"}
    start([key for key in RUNS if key in selected])


@pytest.mark.parametrize("estimator, boundscheck", RUNS)
def test_fuzz(estimator, boundscheck):
    run, = start([(estimator, boundscheck)])
    if _claim(run):  # not begun in the background yet: make it here, beside the one there
        run.run(_BACKGROUND["cache"])
    run.finished.wait()
    log = run.work / "cases.log"
    try:
        returncode, stdout, stderr, timed_out = run.result
        last = log.read_text().splitlines()[-1] if log.exists() else "(none)"
        if timed_out:
            pytest.fail(f"hang: {last}")
        if returncode != 0:
            pytest.fail(f"the fuzz process died (return code {returncode}) on: "
                        f"{last}\n{stderr[-3000:]}")
        result = json.loads(stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(run.work, ignore_errors=True)
    assert result["cases"] >= CASES
    assert result["fitted"] > CASES // 4 and result["clear error"] > CASES // 4  # both explored
    report = "\n".join(f"{f['case']}\n  {f['error']}\n{f['where']}" for f in result["failures"])
    assert not result["failures"], f"{len(result['failures'])} failures:\n{report}"


def stop_unfinished():
    """Stop the queue and kill a run nobody waited for (called when the session ends)."""
    _STOP.set()
    for run in _RUNS.values():
        if run.process is not None and run.process.poll() is None:
            run.process.kill()
        shutil.rmtree(run.work, ignore_errors=True)
    if _BACKGROUND["cache"] is not None:
        shutil.rmtree(_BACKGROUND["cache"], ignore_errors=True)
