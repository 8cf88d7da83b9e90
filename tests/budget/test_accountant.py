"""The Accountant protocol: what spend accepts, frozen events, the admission rule recorded with each entry."""

import dataclasses
import math
from decimal import Decimal
from fractions import Fraction

import pytest
from dp_accounting import dp_event

from bayesdp.budget import Accountant, Ledger, PrivacyAccountant, as_accountant
from bayesdp.budget.events import EpsilonDeltaEvent, GDPEvent, laplace_event
from bayesdp.certificate import Certificate
from bayesdp.curves import GDP
from bayesdp.errors import BayesDPError, BudgetError


class Chain:
    """Anything with a ``certificate`` attribute (a chain)."""

    def __init__(self, certificate):
        self.certificate = certificate


class Exported:
    """Anything with ``to_dp_event()``."""

    def to_dp_event(self):
        return dp_event.GaussianDpEvent(noise_multiplier=2.0)


class Released:
    """A release result: its ``dp_event`` is what ran."""

    certificate = Certificate("x", "y", GDP(100.0))       # not what is charged
    dp_event = dict(laplace_event(1.0, 0.0, 0.5))


@pytest.fixture(params=["memory", "ledger"])
def acct(request, tmp_path):
    if request.param == "memory":
        return PrivacyAccountant(budget=10, budget_delta="1e-5")
    return Ledger.open(tmp_path / "l.db", budget=10, budget_delta="1e-5")


def test_both_implement_the_protocol_and_as_accountant(tmp_path):
    mem = PrivacyAccountant(budget=1)
    assert isinstance(mem, Accountant) and as_accountant(mem) is mem
    led = as_accountant(tmp_path / "l.db", budget=1)
    assert isinstance(led, Ledger) and isinstance(led, Accountant)
    assert as_accountant(str(tmp_path / "l.db")).path == led.path
    with pytest.raises(BudgetError, match="neither a ledger path nor an accountant"):
        as_accountant(3)


def test_spend_accepts_chains_exports_releases_and_pairs(acct):
    acct.spend(Chain(Certificate("ula", "a proof", GDP(0.5))))
    acct.spend(Exported())                                    # GaussianDpEvent(2): 0.5-GDP
    acct.spend(Released())
    acct.spend((Decimal("0.1"), 0))
    entries = [e.as_dict() for e in acct.entries]
    # a mu-GDP curve is charged at the budget's delta: GDP(0.5).epsilon(1e-5), rounded up to a decimal
    e_gdp = Fraction(Decimal(entries[0]["epsilon_exact"]))
    assert Fraction(GDP(0.5).epsilon(1e-5)) <= e_gdp < Fraction(GDP(0.5).epsilon(1e-5)) * (1 + Fraction(1, 10 ** 15))
    assert entries[0]["dp_event"] == {"type": "gdp", "mu": 0.5} and entries[1]["dp_event"] == {"type": "gdp", "mu": 0.5}
    # the release: its Laplace event (scale 2 on sensitivity 1) costs exactly 1/2, not its certificate's curve
    assert entries[2]["epsilon_exact"] == "0.5" and entries[2]["dp_event"]["type"] == "laplace"
    assert entries[3]["epsilon_exact"] == "0.1"
    # every entry records the rule that admitted it: the first by the exact sums; the second's deltas sum to
    # 2e-5 > 1e-5, so a composed rule (GDP: two 0.5-GDP are 0.5 sqrt(2)-GDP) admitted it
    assert entries[0]["admitted_by"] == ("basic composition: exact sums epsilon " + entries[0]["epsilon_exact"]
                                         + " <= 10, delta 0.00001 <= 0.00001")
    assert entries[1]["admitted_by"].startswith("curve composition (GDP): epsilon ")
    assert all(e["admitted_by"] for e in entries)


def test_bad_input_is_one_line_budget_error(acct):
    for bad, match in [((0.1, -0.1), "delta"), ((0.1, 1), "delta"), ({"type": "gdp"}, "mu"),
                       ({"type": "nope"}, "unknown"), (dp_event.GaussianDpEvent(noise_multiplier=-1.0), "must be"),
                       (dp_event.LaplaceDpEvent(noise_multiplier=0.0), "must be"),
                       (dp_event.PoissonSampledDpEvent(0.5, dp_event.GaussianDpEvent(1.0)), "cannot account"),
                       (Certificate("x", "y", None, valid=False, reason="no bound"), "not valid")]:
        with pytest.raises(BayesDPError, match=match) as e:
            acct.spend(bad)
        assert isinstance(e.value, BudgetError) and "\n" not in str(e.value)
    assert acct.spent()["epsilon_sum"] == 0.0


def test_events_are_immutable_and_compare_by_value():
    ev = GDPEvent(0.5)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'mu'"):
        ev.mu = 1.0
    assert ev == GDPEvent(0.5) and hash(ev) == hash(GDPEvent(0.5)) and ev != GDPEvent(0.25)
    pair = EpsilonDeltaEvent("0.10", "0")
    assert pair.epsilon == Decimal("0.1") and dict(pair) == {"type": "epsilon_delta", "epsilon": "0.1", "delta": "0"}


def test_gdp_events_compose_exactly_and_pure_pairs_by_summation_under_a_pure_budget():
    acct = PrivacyAccountant(budget=6, budget_delta=1e-6)
    assert 4 * GDP(0.5).epsilon(1e-7) > 6 > GDP(1.0).epsilon(1e-6)       # the sums refuse the fourth; GDP composition admits it
    for _ in range(4):
        acct.spend(GDPEvent(0.5), delta=1e-7)
    # four 0.5-GDP events are 1-GDP (Dong-Roth-Su Cor. 3.3): its epsilon at the budget's delta
    assert acct.spent()["epsilon_gdp"] == pytest.approx(GDP(1.0).epsilon(1e-6), rel=1e-12)
    pure = PrivacyAccountant(budget="0.3")
    for _ in range(3):
        pure.spend(("0.1", 0))
    with pytest.raises(BudgetError, match="exceeds the budget"):
        pure.spend((math.ulp(0.0), 0))


def test_cached_compositions_equal_composing_from_scratch():
    """pld_epsilon keeps the composed PLD of recent charge sequences and rdp_epsilon each part's term: a growing
    ledger (new events, repeats of the last one, a repeat of an early one) gets exactly the epsilons that a cold
    cache and dp-accounting's own accountants give."""
    from dp_accounting.pld import PLDAccountant
    from dp_accounting.rdp import RdpAccountant

    from bayesdp.budget import accountant as A
    from bayesdp.budget.events import as_event

    seq = [dp_event.GaussianDpEvent(noise_multiplier=3.0), dp_event.LaplaceDpEvent(noise_multiplier=5.0),
           dp_event.LaplaceDpEvent(noise_multiplier=5.0), dp_event.GaussianDpEvent(noise_multiplier=1.5),
           dp_event.GaussianDpEvent(noise_multiplier=3.0)]
    delta = Decimal("1e-6")
    for k in range(1, len(seq) + 1):
        evs = [as_event(e) for e in seq[:k]]
        warm = (A.pld_epsilon(evs, delta), A.rdp_epsilon(evs, delta))
        if k not in (3, 5):     # checked after a repeat of the last event (3) and of an earlier one (5)
            continue
        A._PLD_PREFIXES.clear()
        A._RDP_TERMS.clear()
        cold = (A.pld_epsilon(evs, delta), A.rdp_epsilon(evs, delta))
        assert warm == cold
        pld, rdp = PLDAccountant(value_discretization_interval=A.PLD_INTERVAL), RdpAccountant(orders=A._rdp_orders())
        g3, l5, g15 = (as_event(e) for e in (seq[0], seq[1], seq[3]))
        # by hand: consecutive repeats are one self-composition (PLD); equal events are summed in the order they
        # first appear (Renyi)
        runs = [(g3, 1), (l5, 2)] + ([(g15, 1), (g3, 1)] if k == 5 else [])
        counts = [(g3, 1), (l5, 2)] if k == 3 else [(g3, 2), (l5, 2), (g15, 1)]
        for e, c in runs:
            pld.compose(e.pld_event(), c)
        for e, c in counts:
            rdp.compose(e.rdp_event(), c)
        # dp-accounting's epsilons at the largest double <= 1e-6, pushed up 4 ulps as bayesdp reports them
        d = A.float_at_most(Fraction(delta))
        assert warm == (A._ulps_up(pld.get_epsilon(d)), A._ulps_up(rdp.get_epsilon(d)))
