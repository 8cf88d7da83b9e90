"""theorems/transfer.py (004 Section 3) against independently derived numbers (issue 25, docs/mutation.md).

* Proposition A.2 / 3.2 / Corollary 3.3: ``delta + b (e^eps + 1)`` in 50-digit mpmath.
* Proposition 3.4: ``(delta - delta_n)/(1 + e^eps)``.
* The Laplace routes (Propositions 3.7, 3.10): the hockey-stick divergence of two Laplace laws is integrated
  numerically here (mpmath quadrature of ``max(0, p - e^eps q)``), not taken from the closed form.
Refusals are checked word for word, and the boundaries of each interval (delta = 1 admitted or not,
zeta r = 1, delta = delta_n) on both sides.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayesdp.errors import AssumptionError
from bayesdp.theorems import transfer as T

mp.mp.dps = 50


def _close(got: float, exact, rel: float = 1e-13) -> bool:
    """``got`` is an upper bound of the real number ``exact``, within ``rel`` (relative) of it."""
    exact = mp.mpf(exact)
    return exact <= mp.mpf(got) <= exact + rel * abs(exact) + mp.mpf("1e-300")


def _close_below(got: float, exact, rel: float = 1e-13) -> bool:
    """``got`` is a lower bound of ``exact``, within ``rel`` of it."""
    exact = mp.mpf(exact)
    return exact - rel * abs(exact) <= mp.mpf(got) <= exact


def _laplace_hockey_stick(eps: float, eta: float, b: float):
    """sup_S P(S) - e^eps Q(S) for P = Laplace(0, b), Q = Laplace(eta, b), by quadrature (eta > 0)."""
    eps, eta, b = mp.mpf(eps), mp.mpf(eta), mp.mpf(b)
    with mp.workdps(30):
        def f(x):
            p = mp.exp(-abs(x) / b) / (2 * b)
            q = mp.exp(-abs(x - eta) / b) / (2 * b)
            return max(mp.mpf(0), p - mp.exp(eps) * q)
        # p/q = e^eps at x = (eta - b eps)/2 (between 0 and eta when eps < eta/b): a kink of the integrand
        kink = min(max((eta - b * eps) / 2, mp.mpf(0)), eta)
        return mp.quad(f, [-mp.inf, -20 * b, 0, kink, eta, mp.inf])


# -- Proposition A.2 / 3.2 / Corollary 3.3 ----------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(e=st.floats(0.0, 20.0), d=st.floats(0.0, 1e-2), b=st.floats(0.0, 1e-4))
def test_proposition_a_2_is_delta_plus_b_times_e_eps_plus_one(e, d, b):
    exact = mp.mpf(d) + mp.mpf(b) * (mp.exp(e) + 1)
    cert = T.proposition_a_2(e, d, b)
    if exact <= 1:
        assert _close(cert.constants["delta_out"], exact)
        assert _close(cert.curve.delta0, exact)
    else:
        # b (e^eps + 1) beyond 1: delta capped at 1 (the constant is computed with e^eps capped, >= 1 as well)
        assert cert.curve.delta0 == 1.0 and cert.constants["delta_out"] >= 1.0
    assert cert.curve.eps0 == e


def test_proposition_a_2_by_hand_and_record():
    cert = T.proposition_a_2(1.0, 1e-6, 2e-4, mechanism="m")
    assert _close(cert.curve.delta0, mp.mpf(1e-6) + mp.mpf(2e-4) * (mp.e + 1))
    assert cert.mechanism == "m" and cert.source == "004 Proposition A.2"
    assert cert.assumptions == {"epsilon_in": 1.0, "delta_in": 1e-6, "tv_bound": 2e-4}
    assert set(cert.constants) == {"delta_out"}
    assert T.proposition_a_2(1.0, 1e-6, 2e-4).mechanism == "tv-transfer"
    assert T.proposition_a_2(1.0, 1e-6, 2e-4, source="s").source == "s"
    # b = 0: nothing added; eps = 0: 2b added
    assert T.proposition_a_2(3.0, 0.25, 0.0).curve.delta0 == 0.25
    assert T.proposition_a_2(0.0, 0.25, 0.125).curve.delta0 == 0.5
    # e^eps b = e^10 / 2 > e: capped at 1, and delta = 1 and b = 1 are admitted (closed intervals)
    assert T.proposition_a_2(10.0, 0.0, 0.5).curve.delta0 == 1.0
    assert T.proposition_a_2(0.0, 1.0, 1.0).curve.delta0 == 1.0
    # the constant records the uncapped delta + b (e^eps + 1): 0 + 1 (1 + 1) = 2
    assert T.proposition_a_2(0.0, 0.0, 1.0).constants["delta_out"] == 2.0


@pytest.mark.parametrize("e,b", [(705.0, 1e-310), (702.5, 3e-306), (740.0, 5e-324), (700.0, 5e-305),
                                 # the two worst of 30,000 random cases: exp(eps + log b) is 5.7e-14 (relative)
                                 # below b e^eps, more than 2^-46 (1.4e-14): the 2^-40 push-up covers it
                                 (721.3547023670249, 9.012357047e-315), (729.899843106536, 4.5415e-320)])
def test_proposition_a_2_past_the_range_of_exp(e, b):
    # e^eps overflows a double past 709.78; b e^eps is computed as exp(eps + log b), still an upper bound
    exact = mp.mpf(b) * (mp.exp(e) + 1)
    assert exact < 1
    cert = T.proposition_a_2(e, 0.0, b)
    assert _close(cert.constants["delta_out"], exact, rel=1e-11)
    assert _close(cert.curve.delta0, exact, rel=1e-11)
    # b e^eps above e: capped at 1
    assert T.proposition_a_2(750.0, 0.0, 1e-300).curve.delta0 == 1.0


@pytest.mark.parametrize("args,message", [
    ((-1.0, 0.1, 0.1), "epsilon_in = -1 must be >= 0"),
    ((1.0, -0.1, 0.1), "delta_in = -0.1 must be in [0, 1]"),
    ((1.0, 1.5, 0.1), "delta_in = 1.5 must be in [0, 1]"),
    ((1.0, 0.1, -0.1), "tv_bound = -0.1 must be in [0, 1]"),
    ((1.0, 0.1, 1.5), "tv_bound = 1.5 must be in [0, 1]"),
    ((1.0, float("nan"), 0.1), "delta_in = nan"),
])
def test_proposition_a_2_refusals(args, message):
    with pytest.raises(AssumptionError) as e:
        T.proposition_a_2(*args)
    assert str(e.value).startswith(message)
    if "[0, 1]" in message:
        assert str(e.value) == message


@pytest.mark.parametrize("fn,source,extra", [
    ("proposition_3_2_i", "004 Proposition 3.2(i)",
     {"convergence": "Assumption 3.1 with zeta, R data-independent"}),
    ("proposition_3_2_ii", "004 Proposition 3.2(ii)", {}),
])
def test_proposition_3_2_both_directions(fn, source, extra):
    rate = "rate" if fn.endswith("_i") else "rate_limit"
    cert = getattr(T, fn)(1.0, 1e-6, 2.0, 1e-4, mechanism="m")
    exact = mp.mpf(1e-6) + mp.mpf(2.0 * 1e-4) * (mp.e + 1)
    assert _close(cert.curve.delta0, exact) and _close(cert.constants["delta_out"], exact)
    assert cert.curve.eps0 == 1.0
    assert cert.mechanism == "m" and cert.source == source
    assert getattr(T, fn)(1.0, 1e-6, 2.0, 1e-4).mechanism == "tv-transfer"
    delta_key = "delta_in"
    assert cert.assumptions == {"epsilon_in": 1.0, delta_key: 1e-6, "tv_bound": 2e-4, "zeta": 2.0, rate: 1e-4,
                                **extra}
    # zeta r = 1 is a total variation bound of 1: admitted, delta capped at 1
    assert getattr(T, fn)(0.0, 0.0, 4.0, 0.25).curve.delta0 == 1.0
    with pytest.raises(AssumptionError) as e:
        getattr(T, fn)(1.0, 1e-6, 4.0, 0.5)
    assert str(e.value) == f"zeta*{rate} = 2 must be <= 1 (it bounds a total variation distance)"
    with pytest.raises(AssumptionError) as e:
        getattr(T, fn)(1.0, 1e-6, -1.0, 0.5)
    assert str(e.value) == "zeta = -1 must be >= 0"
    with pytest.raises(AssumptionError) as e:
        getattr(T, fn)(1.0, 1e-6, 1.0, -0.5)
    assert str(e.value) == f"{rate} = -0.5 must be >= 0"


@settings(max_examples=60, deadline=None)
@given(e=st.floats(0.0, 30.0), d=st.floats(0.0, 1.0), z=st.floats(0.0, 10.0), r=st.floats(0.0, 1e-3))
def test_corollary_3_3_threshold(e, d, z, r):
    exact = mp.mpf(d) + (1 + mp.exp(e)) * mp.mpf(z) * mp.mpf(r)
    assert _close(T.corollary_3_3_threshold(e, d, z, r), exact)


@pytest.mark.parametrize("args,message", [
    ((-1.0, 0.1, 1.0, 0.1), "epsilon = -1 must be >= 0"),
    ((1.0, 1.5, 1.0, 0.1), "delta = 1.5 must be in [0, 1]"),
    ((1.0, 0.1, -1.0, 0.1), "zeta = -1 must be >= 0"),
    ((1.0, 0.1, 1.0, -0.1), "rate_limit = -0.1 must be >= 0"),
])
def test_corollary_3_3_refusals(args, message):
    with pytest.raises(AssumptionError) as e:
        T.corollary_3_3_threshold(*args)
    assert str(e.value) == message
    assert T.corollary_3_3_threshold(0.0, 1.0, 0.0, 0.0) == 1.0     # delta = 1 admitted


def test_zeta_times_rate_below_the_float_range_still_counts():
    # zeta r = 1.6e-332 underflows to 0 as a float product; the exact sum delta + 2 zeta r is above delta
    z, r = 1.3889513304638979e-294, 1.175494351e-38
    assert z * r == 0.0
    assert T.corollary_3_3_threshold(0.0, 1e-300, z, r) > 1e-300
    assert T.proposition_3_2_i(0.0, 1e-300, z, r).curve.delta0 > 1e-300
    assert T.proposition_3_2_ii(0.0, 1e-300, z, r).curve.delta0 > 1e-300
    # zeta = 3, r the float above 1/3: zeta r = 1 + 1.1e-16 exactly, 1.0 as a float product: not a total variation
    # bound, refused (its rounded-up value is shown)
    z, r = 3.0, math.nextafter(1 / 3, math.inf)
    assert z * r == 1.0
    for fn, name in [(T.proposition_3_2_i, "rate"), (T.proposition_3_2_ii, "rate_limit")]:
        with pytest.raises(AssumptionError) as e:
            fn(0.0, 0.0, z, r)
        assert str(e.value) == f"zeta*{name} = 1 must be <= 1 (it bounds a total variation distance)"


def test_corollary_3_3_threshold_near_the_end_of_the_float_range():
    # e^709 = 8.2e307 is still a double (e^709.78 is the last): 1e-300 (1 + e^709) = 8.2e7, an upper bound
    exact = mp.mpf(1e-300) * (1 + mp.exp(709))
    assert _close(T.corollary_3_3_threshold(709.0, 0.0, 1e-300, 1.0), exact)
    # past 709.78: infinite, no OverflowError
    assert T.corollary_3_3_threshold(709.9, 0.0, 1e-300, 1.0) == math.inf
    assert T.proposition_3_4(709.9, 1.0, 0.0) == 0.0


def test_corollary_3_3_threshold_past_the_float_range():
    # e^1000 overflows: the threshold is infinite when zeta r > 0 and delta itself when zeta r = 0
    assert T.corollary_3_3_threshold(1000.0, 0.25, 1.0, 1e-3) == math.inf
    assert T.corollary_3_3_threshold(1000.0, 0.25, 0.0, 1e-3) == 0.25
    assert T.corollary_3_3_threshold(1000.0, 0.25, 1.0, 0.0) == 0.25


# -- Proposition 3.4 ------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(e=st.floats(0.0, 30.0), dn=st.floats(0.0, 0.5), gap=st.floats(1e-6, 0.5))
def test_proposition_3_4_tv_lower_bound(e, dn, gap):
    d = dn + gap
    exact = (mp.mpf(d) - mp.mpf(dn)) / (1 + mp.exp(e))
    assert _close_below(T.proposition_3_4(e, d, dn), exact)


def test_proposition_3_4_boundaries_and_refusals():
    assert T.proposition_3_4(0.0, 1.0, 0.0) == 0.5           # delta = 1 admitted: TV > 1/2 (exact here)
    # e^1000 leaves the float range: 0 is the lower bound left (no OverflowError)
    assert T.proposition_3_4(1000.0, 1.0, 0.0) == 0.0
    assert 0.0 < T.proposition_3_4(700.0, 1.0, 0.0) <= float(1 / (1 + mp.exp(700)))
    with pytest.raises(AssumptionError) as e:
        T.proposition_3_4(1.0, 0.02, 0.02)                    # equal deltas: no strict gap
    assert str(e.value) == ("delta_posterior = 0.02 must be > delta_chain = 0.02 for 004 Proposition 3.4 (the chain "
                            "must be strictly more private than the posterior)")
    for args, message in [((-1.0, 0.5, 0.1), "epsilon = -1 must be >= 0"),
                          ((1.0, 1.5, 0.1), "delta_posterior = 1.5 must be in [0, 1]"),
                          ((1.0, 0.5, -0.1), "delta_chain = -0.1 must be in [0, 1]")]:
        with pytest.raises(AssumptionError) as e:
            T.proposition_3_4(*args)
        assert str(e.value) == message


# -- Laplace: hockey stick, variance, Propositions 3.7 and 3.10 -------------------------------------------------


@pytest.mark.parametrize("eps,eta,b", [(0.0, 1.0, 1.0), (0.3, 1.0, 0.5), (1.0, 2.0, 0.7), (2.5, 3.0, 1.0),
                                       (0.0, 0.2, 2.0), (1.0, 1.0, 1.0), (2.0, 1.0, 1.0)])
def test_laplace_delta_is_the_hockey_stick_divergence(eps, eta, b):
    got = T.laplace_delta(eps, eta, b)
    assert _close(got, _laplace_hockey_stick(eps, eta, b), rel=1e-12) or (got == 0.0 and eps >= eta / b)


def test_laplace_delta_at_the_ends():
    # far below eta/b: delta -> 1 (never above 1); at or past eta/b: 0; non-finite inputs: the float formula's limits
    assert T.laplace_delta(0.0, 100.0, 1.0) == 1.0
    assert T.laplace_delta(1.0, 1.0, 1.0) == 0.0 and T.laplace_delta(5.0, 1.0, 1.0) == 0.0
    assert T.laplace_delta(math.inf, 1.0, 1.0) == 0.0
    assert T.laplace_delta(0.0, math.inf, 1.0) == 1.0
    assert T.laplace_delta(0.5, 1.0, math.inf) == 0.0
    # an exponent that is not a double: (0.1 - 0.3/0.7)/2, rounded down before expm1
    assert _close(T.laplace_delta(0.1, 0.3, 0.7), 1 - mp.exp((mp.mpf(0.1) - mp.mpf(0.3) / mp.mpf(0.7)) / 2))


def test_laplace_noise_variance():
    # Var Laplace(b) = 2 b^2 (integrate x^2 e^{-|x|/b}/(2b))
    for b in (0.5, 3.0, 1.7):
        var = mp.quad(lambda x: x * x * mp.exp(-abs(x) / b) / (2 * b), [-mp.inf, 0, mp.inf])
        assert T.laplace_noise_variance(b) == pytest.approx(float(var), rel=1e-15)
    with pytest.raises(AssumptionError) as e:
        T.laplace_noise_variance(0.0)
    assert str(e.value) == "noise_scale = 0 must be > 0; pass a positive number"


def test_proposition_3_7_calibrated_and_given_scale():
    cert = T.proposition_3_7(coupling_window=0.3, coupling_delta=0.01, epsilon=0.5, mechanism="m")
    assert cert.constants == {"noise_scale": 0.3 / 0.5, "noise_variance": 2.0 * 0.6 * 0.6,
                              "laplace_epsilon": 0.5, "sensitivity": 0.3, "delta_out": 0.01}
    assert cert.assumptions == {"coupling_window": 0.3, "coupling_delta": 0.01}
    assert cert.mechanism == "m" and cert.source == "004 Proposition 3.7"
    assert T.proposition_3_7(0.3, 0.01, epsilon=0.5).mechanism == "mc-estimate"
    # the curve: Laplace's hockey stick at sensitivity 0.3, scale 0.6, plus delta~; 1 at most
    for e in (0.0, 0.1, 0.25, 0.5, 0.8):
        assert _close(cert.delta(e), _laplace_hockey_stick(e, 0.3, 0.6) + mp.mpf("0.01"), rel=1e-12)
    assert cert.curve.describe() == "Laplace(scale 0.6) at sensitivity 0.3 + 0.01"
    # a given scale: eps = eta/b
    given_ = T.proposition_3_7(coupling_window=0.3, coupling_delta=0.0, noise_scale=0.15)
    assert given_.constants["laplace_epsilon"] == 2.0 and given_.constants["noise_scale"] == 0.15
    assert given_.delta(2.0) == 0.0 and _close(given_.delta(1.0), _laplace_hockey_stick(1.0, 0.3, 0.15))
    # delta~ near 1: the curve is capped at 1
    assert T.proposition_3_7(1.0, 0.999, epsilon=1.0).delta(0.0) == 1.0


@pytest.mark.parametrize("kwargs,message", [
    (dict(coupling_window=0.0, coupling_delta=0.0, epsilon=1.0), "coupling_window = 0 must be > 0; pass a positive number"),
    (dict(coupling_window=1.0, coupling_delta=1.0, epsilon=1.0), "coupling_delta = 1 must be in [0, 1)"),
    (dict(coupling_window=1.0, coupling_delta=-0.1, epsilon=1.0), "coupling_delta = -0.1 must be in [0, 1)"),
    (dict(coupling_window=1.0, coupling_delta=0.0), "004 Proposition 3.7 needs exactly one of epsilon (to calibrate "
                                                    "the Laplace scale) and noise_scale"),
    (dict(coupling_window=1.0, coupling_delta=0.0, epsilon=1.0, noise_scale=1.0),
     "004 Proposition 3.7 needs exactly one of epsilon (to calibrate the Laplace scale) and noise_scale"),
    (dict(coupling_window=1.0, coupling_delta=0.0, epsilon=0.0),
     "epsilon = 0 must be > 0; the Laplace noise is calibrated to a positive epsilon"),
    (dict(coupling_window=1.0, coupling_delta=0.0, noise_scale=-1.0), "noise_scale = -1 must be > 0; pass a positive number"),
])
def test_proposition_3_7_refusals(kwargs, message):
    with pytest.raises(AssumptionError) as e:
        T.proposition_3_7(**kwargs)
    assert str(e.value) == message


def test_proposition_3_10_by_hand_and_record():
    # window 2C + gamma_f = 2 * 0.5 + 0.2 = 1.2, scale 1.2, delta~ = 0.01: 2 * 0.01 - 0.01^2 = 0.0199;
    # the double 0.2 is above 1/5, so the window rounded up is the float after 1.2 (issue 25)
    w = math.nextafter(1.2, 2.0)
    cert = T.proposition_3_10(0.5, 0.01, 0.2, epsilon=1.0, mechanism="m")
    assert cert.constants == {"noise_scale": w, "noise_variance": 2.0 * w * w, "laplace_epsilon": 1.0,
                              "sensitivity": w, "delta_out": 2 * 0.01 - 0.01 * 0.01}
    assert _close(cert.constants["delta_out"], mp.mpf("0.0199"), rel=1e-14)
    assert cert.assumptions == {"concentration": 0.5, "concentration_delta": 0.01, "posterior_sensitivity": 0.2,
                                "chains": "run independently on D and D'"}
    assert cert.mechanism == "m" and cert.source == "004 Proposition 3.10"
    assert T.proposition_3_10(0.5, 0.01, 0.2, epsilon=1.0).mechanism == "mc-estimate"
    for e in (0.0, 0.4, 1.0, 1.5):
        assert _close(cert.delta(e), _laplace_hockey_stick(e, 1.2, 1.2) + mp.mpf("0.0199"), rel=1e-12)
    # C = 0 or gamma_f = 0 alone is fine; a given scale gives eps = window/scale
    g = T.proposition_3_10(0.0, 0.5, 0.3, noise_scale=0.1)
    assert g.constants["laplace_epsilon"] == pytest.approx(3.0, rel=1e-15) and g.constants["delta_out"] == 0.75
    assert T.proposition_3_10(0.25, 0.0, 0.0, epsilon=1.0).constants["sensitivity"] == 0.5


@pytest.mark.parametrize("args,kwargs,message", [
    ((-1.0, 0.0, 1.0), dict(epsilon=1.0), "concentration = -1 must be >= 0; declare C of 004 Assumption 3.8"),
    ((1.0, 1.0, 1.0), dict(epsilon=1.0), "concentration_delta = 1 must be in [0, 1)"),
    ((1.0, 0.0, -1.0), dict(epsilon=1.0), "posterior_sensitivity = -1 must be >= 0; declare gamma_f of 004 "
                                          "Assumption 3.9"),
    ((0.0, 0.0, 0.0), dict(epsilon=1.0), "2*concentration + posterior_sensitivity = 0: the estimate is "
                                         "data-independent; no noise is needed (declare positive constants to "
                                         "calibrate noise)"),
    ((1.0, 0.0, 1.0), dict(), "004 Proposition 3.10 needs exactly one of epsilon (to calibrate the Laplace scale) "
                              "and noise_scale"),
])
def test_proposition_3_10_refusals(args, kwargs, message):
    with pytest.raises(AssumptionError) as e:
        T.proposition_3_10(*args, **kwargs)
    assert str(e.value) == message
