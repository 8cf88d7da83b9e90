"""The ledger's admission rule (bayesdp/budget/accountant.py) against exact sums and independently derived
composed epsilons (issue 25, docs/mutation.md).

A charge is admitted when the exact decimal sums fit the budget, or one composed rule's epsilon at the budget's
delta is at most the budget's epsilon (compared exactly).  The composed epsilons are checked against closed forms
computed here: the mu-GDP trade-off (Dong-Roth-Su Cor. 2.13, 50-digit mpmath), the exact privacy region of two
pure eps0-DP mechanisms (randomised response composed: its loss is +-eps0 per step), and the Renyi conversion
minimised over a dense order grid.  Each must be an upper bound (an accountant below them would admit too much)
and close to it (one that ignores a delta it must subtract would come out below).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import mpmath as mp
import pytest

from bayesdp.budget import PrivacyAccountant
from bayesdp.budget import accountant as A
from bayesdp.budget.events import DiscreteLaplaceEvent, EpsilonDeltaEvent, GDPEvent, ZCDPEvent
from bayesdp.errors import BudgetError

mp.mp.dps = 50
D = Decimal


def _gdp_delta(mu, eps):
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def _gdp_eps(mu, delta):
    """The exact epsilon of mu-GDP at delta (50 digits)."""
    return mp.findroot(lambda e: _gdp_delta(mu, e) - mp.mpf(delta), (mp.mpf(0), mp.mpf(mu) * 10 + 20),
                       solver="bisect", tol=mp.mpf(10) ** -40, maxsteps=500)


def _cks_epsilon(kappa, delta):
    """min over alpha > 1 of alpha kappa + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1): the
    Canonne-Kamath-Steinke conversion of the linear Renyi curve kappa alpha, minimised numerically."""
    from scipy.optimize import minimize_scalar

    def f(a):
        return a * kappa + math.log((a - 1) / a) - (math.log(delta) + math.log(a)) / (a - 1)
    return minimize_scalar(f, bounds=(1.0001, 1000.0), method="bounded", options={"xatol": 1e-12}).fun


#: dp-accounting returns the composed epsilons rounded to the nearest double (not up): half an ulp below
#: the exact value is what its float arithmetic gives (docs/mutation.md, ledger)
ULP = 2.0 ** -52


def _two_pure_eps(eps0: float, delta):
    """Two eps0-DP mechanisms composed, optimally (their loss is +-eps0 each, as for randomised response): for
    eps in [0, 2 eps0), delta(eps) = p^2 (1 - e^(eps - 2 eps0)) + 2p(1-p)(1 - e^eps)_+ ... with p = e^eps0/(1 + e^eps0);
    solved for eps by bisection on the sum over the three loss values (no closed form assumed)."""
    p = mp.exp(eps0) / (1 + mp.exp(eps0))
    losses = [(2 * eps0, p * p), (0, 2 * p * (1 - p)), (-2 * eps0, (1 - p) ** 2)]

    def dlt(e):
        return sum(pr * max(mp.mpf(0), 1 - mp.exp(e - l)) for l, pr in losses)
    return mp.findroot(lambda e: dlt(e) - mp.mpf(delta), (mp.mpf(0), mp.mpf(2 * eps0)), solver="bisect",
                       tol=mp.mpf(10) ** -30, maxsteps=300)


def _rdp_eps(rho, delta):
    """min over a dense grid of orders alpha > 1 of the RDP -> DP conversion of Canonne-Kamath-Steinke 2020
    (rho-zCDP: RDP alpha rho): alpha rho + (log(1/delta) + (alpha-1) log(1-1/alpha) - log(alpha))/(alpha-1)."""
    best = math.inf
    a = 1.001
    while a < 1e4:
        v = a * rho + (math.log(1 / delta) + (a - 1) * math.log1p(-1 / a) - math.log(a)) / (a - 1)
        best = min(best, v)
        a *= 1.001
    return max(best, 0.0)


# -- basic composition: exact sums -------------------------------------------------------------------------------


def test_fits_basic_is_exact_on_both_sums():
    C = A.Composition
    assert C(D("0.3"), D("1e-5"), D("0.3"), D("1e-5"), count=1).fits_basic           # equal: fits
    assert not C(D("0.3" + "0" * 38 + "1"), D(0), D("0.3"), D("1e-5"), count=1).fits_basic
    assert not C(D("0.1"), D("0.00001" + "0" * 38 + "1"), D("0.3"), D("1e-5"), count=1).fits_basic
    assert C(D("0.1"), D(0), D("0.3"), D(0), count=1).fits_basic


def test_fits_when_a_composed_rule_is_within_the_budget_compared_exactly():
    C = A.Composition
    over = dict(epsilon_sum=D(2), delta_sum=D(0), budget_epsilon=D("0.5"), budget_delta=D("1e-5"), count=3)
    assert not C(**over).fits
    assert C(**over, gdp=0.5).fits and C(**over, pld=0.5).fits and C(**over, rdp=0.5).fits
    assert not C(**over, gdp=math.nextafter(0.5, 1.0)).fits
    # 0.1 as a double is 0.1000000000000000055 > the decimal budget 0.1: refused
    tenth = dict(over, budget_epsilon=D("0.1"))
    assert not C(**tenth, pld=0.1).fits and C(**tenth, pld=math.nextafter(0.1, 0.0)).fits
    # an infinite epsilon (own deltas use the whole budget) or none does not admit
    assert not C(**over, gdp=math.inf, pld=None, rdp=math.inf).fits
    # nothing charged fits whatever the sums say
    assert C(D(5), D(0), D(1), D(0), count=0).fits


def test_composed_rules_are_listed_in_order_and_only_when_finite():
    c = A.Composition(D(2), D(0), D(1), D("1e-5"), gdp=0.9, pld=math.inf, rdp=0.8, count=2)
    assert c._composed() == [("curve composition (GDP)", 0.9), ("Renyi composition (dp-accounting)", 0.8)]
    c = A.Composition(D(2), D(0), D(1), D("1e-5"), gdp=None, pld=0.7, rdp=None, count=2)
    assert c._composed() == [("PLD composition (dp-accounting)", 0.7)]


def test_admitted_by_names_the_rule_and_its_numbers():
    c = A.Composition(D("0.3"), D("0.000001"), D(1), D("0.00001"), count=2)
    assert c.admitted_by() == "basic composition: exact sums epsilon 0.3 <= 1, delta 0.000001 <= 0.00001"
    # the sums do not fit: the composed rule with the smallest epsilon
    c = A.Composition(D(2), D(0), D(1), D("0.00001"), gdp=0.9, pld=0.7, rdp=0.8, count=3)
    assert c.admitted_by() == "PLD composition (dp-accounting): epsilon 0.7 <= 1 at delta 0.00001"
    c = A.Composition(D(2), D(0), D(1), D("0.00001"), gdp=0.6, pld=0.7, rdp=None, count=3)
    assert c.admitted_by() == "curve composition (GDP): epsilon 0.6 <= 1 at delta 0.00001"


# -- compose ----------------------------------------------------------------------------------------------------------


def test_compose_sums_exactly_and_runs_the_composed_rules_only_with_a_delta():
    tenth = (D("0.1"), D("1e-7"), EpsilonDeltaEvent(D("0.1"), D("1e-7")))
    c = A.compose([tenth] * 3, D(1), D("1e-5"), composed=False)
    assert (c.epsilon_sum, c.delta_sum, c.count) == (D("0.3"), D("3e-7"), 3)
    assert (c.gdp, c.pld, c.rdp, c.budget_epsilon, c.budget_delta) == (None, None, None, D(1), D("1e-5"))
    # a pure budget: no composed rule even when asked
    pure = (D("0.1"), D(0), EpsilonDeltaEvent(D("0.1")))
    c = A.compose([pure] * 2, D(1), D(0))
    assert (c.gdp, c.pld, c.rdp) == (None, None, None) and c.epsilon_sum == D("0.2")
    # nothing charged
    c = A.compose([], D(1), D("1e-5"))
    assert (c.count, c.epsilon_sum, c.delta_sum, c.pld) == (0, D(0), D(0), None)
    assert isinstance(c.epsilon_sum, Decimal) and isinstance(c.delta_sum, Decimal)
    # GDP events with a delta: the GDP rule is run, and only it: their composition is exactly GDP, which PLD and
    # Renyi bound from above (checked below), so they are skipped
    g = (D(1), D("1e-5"), GDPEvent(0.5))
    c = A.compose([g] * 2, D(1), D("1e-5"))
    # two 0.5-GDP events compose to sqrt(0.5)-GDP: the GDP rule gives its exact epsilon, PLD and Renyi never less
    exact = _gdp_eps(mp.sqrt(0.5), "1e-5")
    assert exact <= c.gdp <= exact * (1 + mp.mpf("1e-9"))
    assert (c.pld, c.rdp) == (None, None)
    pld = A.pld_epsilon([GDPEvent(0.5)] * 2, D("1e-5"))
    rdp = A.rdp_epsilon([GDPEvent(0.5)] * 2, D("1e-5"))
    assert exact <= pld <= exact * (1 + mp.mpf("1e-6")) and c.gdp <= pld * (1 + 1e-12)
    assert _cks_epsilon(0.25, 1e-5) <= rdp <= _cks_epsilon(0.25, 1e-5) * (1 + 1e-4)    # kappa = 2 * 0.5^2 / 2
    # a GDP event beside an (epsilon, delta) pair: no GDP rule; PLD runs (the pair priced as such), Renyi has no
    # curve for the pair
    mixed = A.compose([g, (D("0.1"), D("1e-7"), EpsilonDeltaEvent(D("0.1"), D("1e-7")))], D(2), D("1e-5"))
    assert mixed.gdp is None and mixed.pld is not None and mixed.rdp is None
    assert mixed.pld >= float(_gdp_eps(mp.mpf(0.5), "9.9e-6"))   # at least the GDP event's own epsilon at the rest


def test_compose_turns_a_dp_accounting_failure_into_one_line(monkeypatch):
    def boom(events, delta):
        raise ValueError("the accountant failed\nsecond line")

    monkeypatch.setattr(A, "pld_epsilon", boom)
    with pytest.raises(BudgetError) as e:
        A.compose([(D(1), D("1e-6"), EpsilonDeltaEvent(D(1), D("1e-6")))], D(1), D("1e-5"))
    assert str(e.value) == ("dp-accounting cannot compose these events (the accountant failed); charge them as "
                            "(epsilon, delta) pairs")


# -- the composed epsilons ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mus,delta", [([0.5] * 4, "1e-6"), ([0.3, 0.4], "1e-5"), ([1.0], "0.001"),
                                       ([0.1] * 3, "1e-9")])
def test_gdp_epsilon_is_the_exact_epsilon_of_the_composed_mu(mus, delta):
    got = A.gdp_epsilon([GDPEvent(m) for m in mus], D(delta))
    mu = mp.sqrt(sum(mp.mpf(m) ** 2 for m in mus))
    exact = _gdp_eps(mu, delta)
    assert exact <= got <= exact * (1 + mp.mpf("1e-9"))


def test_gdp_epsilon_applies_only_to_gdp_events_and_a_delta():
    assert A.gdp_epsilon([], D("1e-5")) is None
    assert A.gdp_epsilon([GDPEvent(0.5), EpsilonDeltaEvent(D("0.1"))], D("1e-5")) is None
    assert A.gdp_epsilon([GDPEvent(0.5)], D(0)) is None
    exact = _gdp_eps(0.5, "1e-5")
    assert exact <= A.gdp_epsilon([GDPEvent(0.5)], D("1e-5")) <= exact * (1 + mp.mpf("1e-9"))


def test_pld_epsilon_of_pure_pairs_is_their_optimal_composition():
    # two (0.5, 0) pairs, delta 0.1: the PLD rule composes their dominating (randomised response) PLDs exactly up to
    # its pessimistic discretisation
    pair = EpsilonDeltaEvent(D("0.5"))
    got = A.pld_epsilon([pair, pair], D("0.1"))
    exact = _two_pure_eps(0.5, "0.1")
    assert exact * (1 - ULP) <= got <= exact + 1e-3
    # basic composition gives 1: the PLD rule is strictly better here
    assert got < 0.9


def test_pld_and_renyi_subtract_the_events_own_deltas():
    # two discrete-Laplace releases, eps 0.5 each, each with a sensitivity route failing with probability 0.05:
    # the composed epsilon is taken at 0.2 - 2 * 0.05 = 0.1 (the union bound), not at 0.2
    ev = DiscreteLaplaceEvent(1.0, 0.0, 2.0, delta=0.05)
    assert A._own(A._runs([ev, ev])) == 2 * Fraction(0.05)
    got = A.pld_epsilon([ev, ev], D("0.2"))
    exact = _two_pure_eps(0.5, "0.1")
    assert exact * (1 - ULP) <= got <= exact + 1e-3
    # the Renyi rule: zCDP rho = 0.5^2/2 per release, 0.25 for two, converted at 0.1
    got = A.rdp_epsilon([ev, ev], D("0.2"))
    ref = _rdp_eps(2 * Fraction(float(Fraction(1, 2)) ** 2 / 2).__float__(), 0.1)
    assert ref * (1 - 1e-9) <= got <= ref * (1 + 1e-3)
    assert got > _rdp_eps(0.25, 0.2) * (1 + 1e-3)                # taken at 0.2 it would be smaller
    # own deltas using the whole budget: no epsilon can be certified
    assert A.pld_epsilon([ev, ev], D("0.1")) == math.inf and A.rdp_epsilon([ev, ev], D("0.1")) == math.inf
    assert A.pld_epsilon([ev, ev], D("0.05")) == math.inf and A.rdp_epsilon([ev, ev], D("0.05")) == math.inf
    # exactly used up (two own deltas of 0.25, binary-exact, against 0.5): nothing is left for the curve
    half = DiscreteLaplaceEvent(1.0, 0.0, 2.0, delta=0.25)
    assert A.pld_epsilon([half, half], D("0.5")) == math.inf and A.rdp_epsilon([half, half], D("0.5")) == math.inf


def test_own_counts_each_event_once_per_occurrence():
    a = DiscreteLaplaceEvent(1.0, 0.0, 2.0, delta=0.01)
    b = DiscreteLaplaceEvent(1.0, 0.0, 4.0, delta=0.03)
    assert A._own(A._counts([a, b, a, a])) == 3 * Fraction(0.01) + Fraction(0.03)
    assert A._own(A._runs([a, b, a, a])) == 3 * Fraction(0.01) + Fraction(0.03)
    assert A._own([]) == 0
    assert [c for _, c in A._runs([a, a, b, a])] == [2, 1, 1]
    assert sorted(c for _, c in A._counts([a, a, b, a])) == [1, 3]


def test_renyi_epsilon_of_gdp_events():
    # mu-GDP is the Gaussian mechanism of noise multiplier 1/mu: RDP alpha mu^2/2; two 0.5-GDP: rho = 0.25
    got = A.rdp_epsilon([GDPEvent(0.5)] * 2, D("1e-5"))
    ref = _rdp_eps(0.25, 1e-5)
    assert ref * (1 - 1e-9) <= got <= ref * (1 + 1e-3)
    assert got >= float(_gdp_eps(mp.sqrt(0.5), "1e-5"))        # never below the exact composition


def test_pld_and_renyi_apply_only_where_they_can():
    z = ZCDPEvent(0.1)
    assert A.pld_epsilon([z], D("1e-5")) is None                 # zCDP: no PLD, no pair
    assert A.rdp_epsilon([EpsilonDeltaEvent(D("0.5"), D("1e-6"))], D("1e-5")) is None   # no Renyi curve
    for fn in (A.pld_epsilon, A.rdp_epsilon):
        assert fn([], D("1e-5")) is None and fn([GDPEvent(0.5)], D(0)) is None
    # where they apply, never below the exact value: PLD within its discretisation, Renyi at the CKS conversion of
    # the linear curve kappa = 0.5^2 / 2 (the code's order grid can only be above the continuous optimum)
    exact = _gdp_eps(0.5, "1e-5")
    assert exact <= A.pld_epsilon([GDPEvent(0.5)], D("1e-5")) <= exact * (1 + mp.mpf("1e-6"))
    cks = _cks_epsilon(0.125, 1e-5)
    assert exact <= cks <= A.rdp_epsilon([GDPEvent(0.5)], D("1e-5")) <= cks * (1 + 1e-4)


# -- the accountant's admission ----------------------------------------------------------------------------------


def test_check_admits_by_the_sums_then_by_a_composed_rule_then_refuses():
    acct = PrivacyAccountant(budget="3", budget_delta="1e-5")
    assert acct.check("0.5", 0)["admitted_by"] == ("basic composition: exact sums epsilon 0.5 <= 3, delta 0 <= "
                                                   "0.00001")
    assert acct.check("3", "1e-5")["admitted_by"].startswith("basic composition: exact sums epsilon 3 <= 3")
    acct.spend(GDPEvent(0.3), delta="5e-6")
    acct.spend(GDPEvent(0.3), delta="5e-6")
    # a third 0.3-GDP event: the sums (3 x eps(0.3-GDP at 5e-6) = 3 x 1.18) exceed 3 and delta 1.5e-5 > 1e-5, but
    # the three are sqrt(3) 0.3 = 0.52-GDP, whose epsilon at 1e-5 is 2.3: a composed rule admits it
    e1 = float(_gdp_eps(0.3, "5e-6"))
    assert 3 * e1 > 3
    text = acct.check(Decimal(repr(e1 * (1 + 1e-12))), "5e-6", event=GDPEvent(0.3))["admitted_by"]
    assert text.startswith("curve composition (GDP): epsilon ") or text.startswith("PLD composition")
    v = float(text.split("epsilon ")[1].split(" <=")[0])
    assert float(_gdp_eps(0.3 * mp.sqrt(3), "1e-5")) * (1 - ULP) <= v <= 3.0
    acct.spend(GDPEvent(0.3), delta="5e-6")
    with pytest.raises(BudgetError) as e:
        acct.check("3", 0)
    assert str(e.value).startswith("epsilon = 3, delta = 0 exceeds the budget (epsilon 3, delta 0.00001; remaining "
                                   "epsilon ")
    # what is left is reported by the composed rule (three 0.3-GDP are 0.52-GDP: 3 - 2.3), not by the sums (3 - 3.55)
    left = float(str(e.value).split("remaining epsilon ")[1].split(",")[0])
    exact_left = 3 - float(_gdp_eps(0.3 * mp.sqrt(3), "1e-5"))
    assert exact_left - 0.01 <= left <= exact_left + 1e-6
    assert str(e.value).endswith("nothing was charged and nothing was drawn: lower epsilon, or use a new budget for "
                                 "new data")


def test_over_budget_names_the_charge_the_budget_and_what_is_left():
    err = A.over_budget(D("0.6"), D(0), " of ledger x", D(1), D("1e-5"), {"epsilon": 0.5, "delta": 1e-5})
    assert str(err) == ("epsilon = 0.6, delta = 0 exceeds the budget of ledger x (epsilon 1, delta 0.00001; remaining "
                        "epsilon 0.5, delta 1e-05); nothing was charged and nothing was drawn: lower epsilon, or use a "
                        "new budget for new data")


def test_an_exhausted_accountant_refuses_every_charge():
    acct = PrivacyAccountant(budget=1)
    acct.exhaust("a seeded release")
    with pytest.raises(BudgetError) as e:
        acct.check("0.1", 0)
    assert str(e.value) == ("this accountant is exhausted: a seeded release was not private (an explicit key); use a "
                            "new accountant")


def test_the_pure_budget_admits_exactly_up_to_its_epsilon():
    acct = PrivacyAccountant(budget="0.3")
    for _ in range(3):
        acct.spend(("0.1", 0))
    assert acct.spent()["epsilon_sum"] == 0.3
    with pytest.raises(BudgetError, match=r"^epsilon = 1E-30, delta = 0 exceeds the budget \(epsilon 0\.3, "
            r"delta 0; remaining epsilon 0, delta 0\)"):
        acct.check(Decimal("1e-30"), 0)
    # spend goes through reserve, which names no ledger: the message has nothing between "budget" and the numbers
    with pytest.raises(BudgetError) as e:
        acct.spend(("0.1", 0))
    assert str(e.value).startswith("epsilon = 0.1, delta = 0 exceeds the budget (epsilon 0.3, delta 0; remaining "
                                   "epsilon 0, delta 0)")


@pytest.mark.parametrize("eps,delta,msg", [
    (0, 0, "epsilon = 0 must be > 0; pass a positive epsilon"),
    (-1, 0, "epsilon = -1 must be > 0; pass a positive epsilon"),
    ("0.1", float("nan"), "delta = nan must be in [0, 1)"),
    ("0.1", float("inf"), "delta = inf must be in [0, 1)"),
    ("0.1", 1.0, "delta = 1.0 must be in [0, 1)"),
    ("0.1", "-1e-9", "delta = '-1e-9' must be in [0, 1)"),
    ("abc", 0, "epsilon = 'abc' is not a decimal number; pass e.g. 0.1"),
    (float("nan"), 0, "epsilon = nan must be finite; pass a finite decimal number"),
    ("0.1", "abc", "delta = 'abc' is not a decimal number; pass e.g. 0.1"),
])
def test_checked_charge_refusals(eps, delta, msg):
    with pytest.raises(BudgetError) as e:
        A.checked_charge(eps, delta)
    assert str(e.value) == msg


def test_checked_charge_values():
    # a decimal as written; a double delta rounded up to a decimal >= it; delta 0 admitted
    assert A.checked_charge("0.1", "1e-5") == (D("0.1"), D("1e-5"))
    e, d = A.checked_charge(0.25, 1e-5)
    assert e == D("0.25") and Fraction(d) >= Fraction(1e-5) and d - D("1e-5") < D("1e-20")
    assert A.checked_charge("1", 0) == (D(1), D(0))
    assert A.checked_charge("1", 0.0)[1] == 0


def test_composed_epsilons_are_pushed_up_past_dp_accountings_last_rounding(monkeypatch):
    """dp-accounting returns the composed epsilon rounded to the nearest double; the admission rule takes it 4 ulps
    up, so a composition can never be admitted by half an ulp over the budget (docs/mutation.md)."""
    raw = 0.6931471805599453                     # whatever dp-accounting returned: the rule must not take it as is

    class Fake:
        _pld, _contains_non_dp_event, _rdp = None, False, 0.0     # the state the composition caches keep

        def __init__(self, *a, **k):
            pass

        def compose(self, *a, **k):
            pass

        compose_pair = compose

        def get_epsilon(self, delta):
            return raw

    monkeypatch.setattr(A, "_pld_accountant", lambda: Fake())
    monkeypatch.setattr(A, "_PLD_PREFIXES", {})          # the fake's compositions must not outlive the test
    monkeypatch.setattr(A, "_RDP_TERMS", {})
    import dp_accounting.rdp as rdp

    monkeypatch.setattr(rdp, "RdpAccountant", Fake)
    up = raw
    for _ in range(4):
        up = math.nextafter(up, math.inf)
    assert A.pld_epsilon([EpsilonDeltaEvent(D("0.5"))], D("0.1")) == up > raw
    assert A.rdp_epsilon([GDPEvent(0.5)], D("1e-5")) == up
    assert A._ulps_up(math.inf) == math.inf and A._ulps_up(0.0) == 4 * 5e-324
