"""Every Lipschitz constant a statistic carries is an upper bound of the exact one, not the float nearest it:
compared in exact rational arithmetic (the float nearest sqrt(3), 1.7320508075688772, is below sqrt(3), so a
coupling release of three coordinate means was calibrated to a sensitivity one ulp short)."""
from dataclasses import replace
from fractions import Fraction

import numpy as np

from bayesdp.publish.sensitivity import coupling_route, coupling_strongly_convex
from bayesdp.publish.statistics import (SiteSpec, coordinate_means, coordinate_subset_means, exceedance_probabilities,
                                        probability_at_profiles)


def _at_least_sqrt(x: float, q) -> bool:
    return Fraction(x) ** 2 >= Fraction(q) and x > 0


def test_coordinate_means_sqrt_k_rounded_up():
    st = coordinate_means([SiteSpec("w", size=3)])
    assert _at_least_sqrt(st.lipschitz, 3) and st.lipschitz == float(np.nextafter(np.sqrt(3.0), np.inf))
    # constrained sites: sqrt(sum_s L_s^2 k_s) = sqrt(0.1^2 * 3 + 1) (0.1^2 is not a float)
    st = coordinate_means([SiteSpec("s", size=3, constrained=True, transform=np.exp, transform_lipschitz=0.1),
                           SiteSpec("b")])
    assert _at_least_sqrt(st.lipschitz, Fraction(0.1) ** 2 * 3 + 1)
    assert st.lipschitz <= 1.014889156509222 * (1 + 1e-15)


def test_selected_coordinates_and_exceedances_rounded_up():
    st = coordinate_subset_means([SiteSpec("w", size=5)], ["w[0]", "w[1]", "w[2]"])
    assert _at_least_sqrt(st.lipschitz, 3)
    # sqrt(3) / 0.3: width 0.3 is not exact in binary; the constant bounds sqrt(3)/float(0.3) from above
    st = exceedance_probabilities([SiteSpec("w", size=3)], threshold=0.0, width=0.3)
    assert _at_least_sqrt(st.lipschitz, Fraction(3) / Fraction(0.3) ** 2)
    assert Fraction(st.l2) >= 1 / Fraction(0.3)


def test_profiles_sum_of_row_norms_rounded_up():
    P = np.array([[1.0, 1.0], [0.1, 0.2], [3.0, 4.0]])
    st = probability_at_profiles(P, ["a", "b", "c"])
    # sum_j |x_j| / 4 = (sqrt 2 + sqrt 0.05 + 5) / 4 with the float entries: check L >= each exact piece's sum,
    # by bounding each irrational norm from below by a rational whose square is below the exact square
    lo = Fraction(0)
    for row in P:
        q = sum(Fraction(float(v)) ** 2 for v in row)
        x = Fraction(float(np.sqrt(float(q))))
        while x * x > q:                       # step down to a rational below the exact norm
            x -= Fraction(1, 2 ** 60)
        lo += x
    assert Fraction(st.lipschitz) * 4 >= lo
    assert st.lipschitz <= float(lo / 4) * (1 + 1e-15)
    q = sum(Fraction(float(v)) ** 2 for v in P.reshape(-1))
    assert Fraction(st.l2) ** 2 * 16 >= q


def test_coupling_route_window_rounded_up():
    # the float product 3 * 0.7 rounds below the exact 3 * float(0.7)
    b = replace(coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0),
                distance=0.7)
    r = coupling_route(b, lipschitz=3.0)
    assert Fraction(r.sensitivity) >= 3 * Fraction(0.7)
    assert Fraction(r.l2_sensitivity) >= 3 * Fraction(0.7)
