"""Helpers shared by the interval-arithmetic tests (tests/test_bounds_mutation*.py): steps of one float and numpy
raising on floating-point errors (a mutant of an ``np.errstate`` guard then fails)."""

import numpy as np
import pytest

INF = np.inf


@pytest.fixture(autouse=True)
def _raise_on_fp_errors():
    with np.errstate(divide="raise", over="raise", invalid="raise"):
        yield


def dn(x, k=1):
    """``x`` moved ``k`` floats down (float64)."""
    x = np.float64(x)
    for _ in range(k):
        x = np.nextafter(x, -INF)
    return x


def up(x, k=1):
    """``x`` moved ``k`` floats up (float64)."""
    x = np.float64(x)
    for _ in range(k):
        x = np.nextafter(x, INF)
    return x
