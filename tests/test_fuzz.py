"""Fuzzing every estimator x structure with hypothesis (``_fuzz.py``), each estimator's cases in
a child process: a crash or a hang fails the test with the case that caused it, instead of
taking down the session. Every case must fit with finite results or raise a clear
ValueError/TypeError. Two estimators also run with numba's bounds checks and an empty cache
(a NaN turned into an index would write outside an array without them)."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

FUZZ = Path(__file__).with_name("_fuzz.py")
CASES = 300  # derandomized: the same cases every run; the bound-checked runs pay a cold compile


@pytest.mark.parametrize("estimator, boundscheck", [
    ("bcfw", False), ("bcfw-pairwise", False), ("smooth", False), ("bmrm", False),
    ("pragam", False), ("pragam-structured", False), ("bcfw-pairwise", True), ("pragam", True)])
def test_fuzz(estimator, boundscheck, tmp_path):
    env = dict(os.environ)
    if boundscheck:
        env.update(NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=tempfile.mkdtemp(dir=tmp_path))
    log = tmp_path / "cases.log"
    try:
        run = subprocess.run([sys.executable, str(FUZZ), estimator, str(CASES), str(log)],
                             capture_output=True, text=True, timeout=900, env=env,
                             cwd=FUZZ.parent)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hang: {log.read_text().splitlines()[-1]}")
    if run.returncode != 0:
        last = log.read_text().splitlines()[-1] if log.exists() else "(none)"
        pytest.fail(f"the fuzz process died (return code {run.returncode}) on: {last}\n"
                    f"{run.stderr[-3000:]}")
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["cases"] >= CASES
    assert result["fitted"] > CASES // 4 and result["clear error"] > CASES // 4  # both explored
    report = "\n".join(f"{f['case']}\n  {f['error']}\n{f['where']}" for f in result["failures"])
    assert not result["failures"], f"{len(result['failures'])} failures:\n{report}"
