"""`Domain.check` without clipping reads the records a block at a time (issue 24: a float64 copy of a float32 data
set made `bayesdp sample` peak at 3.2 times the data): no copy of the whole array, and the same verdicts and the
same first offending record as a check of the whole array at once."""

import math
import tracemalloc

import numpy as np
import pytest

from bayesdp.analysis import Domain
from bayesdp.analysis import domain as domain_module
from bayesdp.errors import DomainError

DOM = Domain.parse(["X.norm=1", "y.values=0,1", "Z.min=-2", "Z.max=3"])


def _data(m, rng):
    X = rng.standard_normal((m, 4)).astype(np.float32)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32) * np.float32(1.0001)
    return {"X": X, "y": (rng.random(m) < 0.5).astype(np.float32),
            "Z": rng.uniform(-2, 3, size=(m, 2, 3)).astype(np.float32)}


def test_the_check_makes_no_copy_of_the_whole_array():
    rng = np.random.default_rng(0)
    m = 200_000
    X = rng.standard_normal((m, 25)).astype(np.float32)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32) * np.float32(1.0001)
    data = {"X": X, "y": np.ones(m, np.float32)}
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out, clipped = Domain.parse(["X.norm=1", "y.values=0,1"]).check(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out["X"] is X and clipped == {}
    # the data is 20 MB of float32 (a float64 copy: 40 MB); one block of CHECK_ROWS rows in float64, with its
    # temporaries, is under 4 MB
    block = domain_module.CHECK_ROWS * 25 * 8
    assert peak < 3 * block < X.nbytes / 4, (peak, block)


@pytest.mark.parametrize("where", [0, 1, domain_module.CHECK_ROWS - 1, domain_module.CHECK_ROWS,
                                   2 * domain_module.CHECK_ROWS + 5, "last"])
@pytest.mark.parametrize("what", ["norm", "values", "box"])
def test_the_first_offending_record_is_named_in_any_block(where, what):
    rng = np.random.default_rng(1)
    m = 3 * domain_module.CHECK_ROWS + 17
    data = _data(m, rng)
    i = m - 1 if where == "last" else where
    later = min(m - 1, i + domain_module.CHECK_ROWS + 3)     # a second offender later: the first one is named
    for j in (later, i):
        if what == "norm":
            data["X"][j] = np.float32(0.8)                  # |x| = 0.8 * 2 = 1.6
        elif what == "values":
            data["y"][j] = 2.0
        else:
            data["Z"][j, 1, 2] = 3.5
    with pytest.raises(DomainError) as exc:
        DOM.check(data)
    msg = str(exc.value)
    arg = {"norm": "X", "values": "y", "box": "Z"}[what]
    assert f"data {arg}[{i}] " in msg, msg
    if what == "norm":
        # |x| = 2 * float32(0.8) = 1.6000000238..., to 9 digits
        assert f"has norm {2 * float(np.float32(0.8)):.9g} >" in msg and "1.60000002" in msg
    # the whole-array check (clip=False through the clipping code path's arithmetic) agrees on the verdict
    if what != "values":
        _, clipped = DOM.check(data, clip=True)
        assert clipped[arg] == (1 if later == i else 2)


def test_in_domain_data_passes_and_clipping_is_unchanged():
    rng = np.random.default_rng(2)
    data = _data(2 * domain_module.CHECK_ROWS + 3, rng)
    out, clipped = DOM.check(data)
    assert clipped == {} and all(out[k] is data[k] for k in data)
    data["X"][5] = np.float32(3.0)       # |x| = 6: clipped to norm 1 exactly (up to the shrink loop)
    out, clipped = DOM.check(data, clip=True)
    assert clipped == {"X": 1}
    assert math.isclose(float(np.linalg.norm(out["X"][5].astype(np.float64))), 1.0, rel_tol=1e-14)
    assert float(np.linalg.norm(out["X"][5].astype(np.float64))) <= 1.0
    np.testing.assert_array_equal(out["X"][6:], data["X"][6:].astype(np.float64))
