"""Fuzzing every estimator x structure with hypothesis (``_fuzz.py``), each estimator's cases in
a child process: a crash or a hang fails the test with the case that caused it, instead of
taking down the session. Every case must fit with finite results or raise a clear
ValueError/TypeError. Three estimators also run with numba's bounds checks and an empty cache
(a NaN turned into an index would write outside an array without them).

The runs compile numba for minutes (the bounds-checked ones cold): ``conftest.py`` runs these
tests first, so that with pytest-xdist's workers (the README's ``-n auto``) they overlap the
rest of the suite, and the runs without bounds checks fill the session's cache with kernels the
other tests then load. The bounds-checked runs share a cache of their own, one for the session
and its workers (numba's cache does not tell checked code from unchecked)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

FUZZ = Path(__file__).with_name("_fuzz.py")
CASES = 300  # derandomized: the same cases every run; the bound-checked runs pay a cold compile
TIMEOUT = 900
#: the longest first (``conftest.py`` keeps this order at the head of the session)
RUNS = [("bcfw-pairwise", True), ("crf", True), ("bcfw", False), ("bcfw-pairwise", False),
        ("smooth", False), ("bmrm", False), ("pragam-structured", False), ("pragam", False),
        ("pragam", True), ("crf", False)]


@pytest.fixture(scope="session")
def boundscheck_cache(tmp_path_factory):
    """numba's cache of the bounds-checked runs: empty at the start of the session, shared by
    its xdist workers (their base folders sit in the session's)."""
    root = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        root = root.parent
    cache = root / "boundscheck-cache"
    cache.mkdir(exist_ok=True)
    return cache


def _run(estimator, boundscheck, log, cache):
    """Run the cases in a child process: (return code, stdout, stderr, timed out)."""
    env = dict(os.environ)
    if boundscheck:
        env.update(NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(cache))
    process = subprocess.Popen([sys.executable, str(FUZZ), estimator, str(CASES), str(log)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, cwd=FUZZ.parent)
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT)
        return process.returncode, stdout, stderr, False
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        return process.returncode, stdout, stderr, True


@pytest.mark.parametrize("estimator, boundscheck", RUNS)
def test_fuzz(estimator, boundscheck, tmp_path, boundscheck_cache):
    log = tmp_path / "cases.log"
    returncode, stdout, stderr, timed_out = _run(estimator, boundscheck, log, boundscheck_cache)
    last = log.read_text().splitlines()[-1] if log.exists() else "(none)"
    if timed_out:
        pytest.fail(f"hang: {last}")
    if returncode != 0:
        pytest.fail(f"the fuzz process died (return code {returncode}) on: {last}\n"
                    f"{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["cases"] >= CASES
    assert result["fitted"] > CASES // 4 and result["clear error"] > CASES // 4  # both explored
    report = "\n".join(f"{f['case']}\n  {f['error']}\n{f['where']}" for f in result["failures"])
    assert not result["failures"], f"{len(result['failures'])} failures:\n{report}"

