"""Every estimator x structure x option cell against its golden result (``_golden.py``,
recorded before a change of structure): the same coefficients, gaps, objectives and iteration
counts on fixed data. A cell fitted then must fit to the same result; a cell refused then
(its message is recorded) may be fitted now, a capability added. The tolerance leaves room for another machine's
floating-point sums, not for another algorithm."""
import json
import math

import numpy as np
import pytest

import _golden

GOLDEN = json.loads(_golden.RESULTS.read_text())
CELLS = _golden.cells()
RTOL = 1e-7


def test_every_cell_has_a_golden_result():
    assert set(CELLS) == set(GOLDEN)


def close(now, then, name):
    now, then = np.asarray(now, dtype=float), np.asarray(then, dtype=float)
    scale = max(1.0, float(np.nanmax(np.abs(then), initial=0.0)))
    np.testing.assert_allclose(now, then, rtol=RTOL, atol=RTOL * scale, err_msg=name)


@pytest.mark.parametrize("name", sorted(k for k, v in GOLDEN.items() if "refused" not in v))
def test_cell_matches_its_golden_result(name):
    then = GOLDEN[name]
    now = _golden._to_json(CELLS[name]())
    assert "refused" not in now, f"{name} was fitted, now refused: {now.get('refused')}"
    for key, value in then.items():
        if key == "n_iter" or value is None:
            assert now[key] == value, name
        elif isinstance(value, float) and math.isnan(value):
            assert math.isnan(now[key]), name
        else:
            close(now[key], value, f"{name}: {key}")
