"""The optimisers and brackets behind the curves' conversions (issue 25, docs/mutation.md "curves").

Every value the conversions return is the bound at some Renyi order (or a bisection end whose exact delta is within
the budget), so a worse search gives a looser bound, never an unsound one.  These tests hold the searches to the
optimum: each number is compared with the infimum or the root worked out here in 50-60-digit mpmath, to 1e-12
(relative) or closer, on curves where the default starting point, window or bracket matters.
"""

from __future__ import annotations

import math

import mpmath
import pytest

from bayesdp.curves import GDP


@pytest.mark.parametrize("mu", [1e-45, 1e-58, 1e-62, 1e-200, 1e-290])
def test_gdp_delta_of_a_tiny_mu_is_not_lost_to_cancellation(mu):
    # delta(0) = 2 Phi(mu/2) - 1 = erf(mu/(2 sqrt 2)) (no cancellation in this form); at 60 digits the difference of
    # the two terms near 1/2 came out 0.0 for mu = 1e-62 and 7e-4 (relative) below the exact value for mu = 1e-58
    with mpmath.workdps(400):
        m = mpmath.mpf(mu)
        exact0 = mpmath.erf(m / (2 * mpmath.sqrt(2)))
        d0 = GDP(mu).delta(0.0)
        assert exact0 <= d0 <= exact0 * (1 + mpmath.mpf(2) ** -45)
        # and at eps = mu (the terms still cancel to ~log10(1/mu) digits)
        e = mpmath.mpf(mu)
        exact = mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
        d = GDP(mu).delta(mu)
        assert exact <= d <= exact * (1 + mpmath.mpf(2) ** -45)


def test_gdp_epsilon_of_a_tiny_mu_below_delta_at_zero_is_positive_and_meets_the_budget():
    # delta(0) = 4e-63 > 1e-300: epsilon must be positive (it was 0.0: the 60-digit delta(0) was 0) and its exact
    # delta, in 400 digits, within the budget
    eps = GDP(1e-62).epsilon(1e-300)
    assert eps > 0.0
    with mpmath.workdps(400):
        m, e = mpmath.mpf(1e-62), mpmath.mpf(eps)
        assert mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2) <= mpmath.mpf(1e-300)
