"""Fuzzing every estimator x structure with hypothesis (``_fuzz.py``), each estimator's cases in
a child process: a crash or a hang fails the test with the case that caused it, instead of
taking down the session. Every case must fit with finite results or raise a clear
ValueError/TypeError. Two estimators also run with numba's bounds checks and an empty cache
(a NaN turned into an index would write outside an array without them); their cold
compilation takes minutes, so they start in the background as soon as they are collected
(``conftest.py``) and use the second core while the rest of the suite runs."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

FUZZ = Path(__file__).with_name("_fuzz.py")
CASES = 300  # derandomized: the same cases every run; the bound-checked runs pay a cold compile
TIMEOUT = 900
RUNS = [("bcfw", False), ("bcfw-pairwise", False), ("smooth", False), ("bmrm", False),
        ("pragam", False), ("pragam-structured", False), ("bcfw-pairwise", True),
        ("pragam", True)]

#: runs started before their test: (estimator, boundscheck) -> (process, work dir, start time)
_STARTED = {}


def start(estimator, boundscheck):
    """Start one fuzz run in a child process (once); returns it, its work dir and start."""
    if (estimator, boundscheck) not in _STARTED:
        work = Path(tempfile.mkdtemp(prefix="fuzz-"))
        env = dict(os.environ)
        if boundscheck:
            env.update(NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(work / "numba-cache"))
        process = subprocess.Popen(
            [sys.executable, str(FUZZ), estimator, str(CASES), str(work / "cases.log")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            cwd=FUZZ.parent)
        _STARTED[estimator, boundscheck] = process, work, time.monotonic()
    return _STARTED[estimator, boundscheck]


def start_in_background(items):
    """Start the selected bounds-checked runs now (called when collection finishes)."""
    for item in items:
        if item.originalname == "test_fuzz" and item.callspec.params["boundscheck"]:
            start(item.callspec.params["estimator"], True)


@pytest.mark.parametrize("estimator, boundscheck", RUNS)
def test_fuzz(estimator, boundscheck):
    process, work, started = start(estimator, boundscheck)
    log = work / "cases.log"
    try:
        stdout, stderr = process.communicate(
            timeout=max(1.0, TIMEOUT - (time.monotonic() - started)))
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"hang: {log.read_text().splitlines()[-1]}")
    try:
        if process.returncode != 0:
            last = log.read_text().splitlines()[-1] if log.exists() else "(none)"
            pytest.fail(f"the fuzz process died (return code {process.returncode}) on: "
                        f"{last}\n{stderr[-3000:]}")
        result = json.loads(stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert result["cases"] >= CASES
    assert result["fitted"] > CASES // 4 and result["clear error"] > CASES // 4  # both explored
    report = "\n".join(f"{f['case']}\n  {f['error']}\n{f['where']}" for f in result["failures"])
    assert not result["failures"], f"{len(result['failures'])} failures:\n{report}"


def stop_unfinished():
    """Kill the started runs nobody waited for (called when the session ends)."""
    for process, work, _ in _STARTED.values():
        if process.poll() is None:
            process.kill()
            process.communicate()
        shutil.rmtree(work, ignore_errors=True)
