"""Issue 24: the GDP and linear-RDP conversions are memoised (calibration and method choice convert the same
curves again); a memoised answer is the computed one, and a bad argument is refused before the memo."""

import numpy as np
import pytest

from bayesdp import curves
from bayesdp.curves import GDP, RDP
from bayesdp.errors import AssumptionError


def test_memoised_conversions_equal_the_computation_and_are_reused():
    rng = np.random.default_rng(24)
    for mu, delta in zip(rng.uniform(0.01, 20.0, 12), 10.0 ** rng.uniform(-12, -1, 12)):
        mu, delta = float(mu), float(delta)
        assert GDP(mu).epsilon(delta) == curves._gdp_epsilon.__wrapped__(mu, delta) == GDP(mu)._epsilon(delta)
        assert GDP(mu).delta(1.0) == min(1.0, curves._gdp_delta_mp.__wrapped__(mu, 1.0))
        for method in ("cks", "mironov"):
            kappa = mu * mu / 2.0
            assert RDP.linear(kappa).epsilon(delta, method) == RDP(kappa=kappa)._linear_epsilon(delta, method)
    hits = curves._gdp_epsilon.cache_info().hits
    GDP(1.25).epsilon(1e-6)
    GDP(1.25).epsilon(1e-6)
    assert curves._gdp_epsilon.cache_info().hits >= hits + 1
    assert GDP(1.25).delta(GDP(1.25).epsilon(1e-6)) <= 1e-6        # still an upper bound


def test_bad_arguments_are_refused_before_the_memo():
    for bad in (0.0, 1.0, float("nan")):
        with pytest.raises(AssumptionError):
            GDP(1.0).epsilon(bad)
        with pytest.raises(AssumptionError):
            RDP.linear(0.5).epsilon(bad)
    with pytest.raises(AssumptionError, match="method"):
        RDP.linear(0.5).epsilon(1e-5, method="other")
