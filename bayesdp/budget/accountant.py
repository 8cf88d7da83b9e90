"""Privacy accounting: the :class:`Accountant` protocol, the composition rules, and the in-memory
:class:`PrivacyAccountant` (the persistent :class:`~bayesdp.budget.ledger.Ledger` shares them).

A charge is an exact decimal pair (epsilon, delta) with the DP event that justifies it
(:mod:`bayesdp.budget.events`).  A sequence of charges fits a budget (E, D) when one of these rules says so
(docs/ledger.md "Composition"); each is a proven upper bound, so taking the smallest is sound:

* **basic composition**: the exact decimal sums of the charges are at most (E, D) (Dwork-Roth Thm. 3.16);
* **GDP composition** (every event mu-GDP): ``sqrt(sum mu^2)``-GDP (Dong-Roth-Su Cor. 3.3), its epsilon at D;
* **PLD composition**: dp-accounting's ``PLDAccountant`` (pessimistic discretisation) of the events it prices
  exactly (Laplace, discrete Laplace, Gaussian / GDP) and of the (epsilon, delta) pairs of the others (the PLD
  of the Kairouz-Oh-Viswanath mechanism, which dominates every (epsilon, delta)-DP mechanism), its epsilon at
  ``D - own deltas`` (a sensitivity route's failure probability, by the union bound);
* **Renyi composition**: dp-accounting's ``RdpAccountant`` (RDP curves add, Mironov 2017 Prop. 1), its epsilon at
  ``D - sum of own deltas``.

The rules that need D > 0 are consulted only for (epsilon, delta) budgets.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction
from typing import Any, Iterator, Protocol, runtime_checkable

from ..errors import BayesDPError, BudgetError
from .events import (DiscreteGaussianEvent, DiscreteLaplaceEvent, EpsilonDeltaEvent, Event, GDPEvent, LaplaceEvent,
                     as_event, curve_event, event_from_json)
from .numbers import decimal_at_least, exact, float_at_least, float_at_most, noise_epsilon, show, to_decimal
from ..certificate import BoundReport, Certificate
from ..curves import GDP
import numpy as np

__all__ = ["Accountant", "PrivacyAccountant", "Entry", "Composition", "compose", "charge_of", "consistency_problem",
           "PLD_INTERVAL"]

#: value discretisation of the privacy loss distributions (dp-accounting's default)
PLD_INTERVAL = 1e-4


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@runtime_checkable
class Accountant(Protocol):
    """What :func:`bayesdp.release` and the release methods charge: :class:`PrivacyAccountant` (memory) and
    :class:`~bayesdp.budget.ledger.Ledger` (a file) implement it.

    Examples:
        >>> isinstance(PrivacyAccountant(budget=1.0), Accountant)
        True
    """

    def reserve(self, epsilon: Any, delta: Any, mechanism: str, source: str, curve=None, what: str = "",
                event=None):
        """Context manager: charge before the noise is drawn (see :meth:`PrivacyAccountant.reserve`)."""

    def check(self, epsilon: Any, delta: Any = 0, curve=None, event=None) -> dict:
        """Raise BudgetError if the charge would not fit."""

    def spend(self, item: Any, *, epsilon: Any = None, delta: Any = None, what: str = "") -> dict:
        """Charge a certificate, chain, release or (epsilon, delta) pair."""

    def spent(self) -> dict:
        """The spent budget."""

    def remaining(self) -> dict:
        """The budget left."""

    def summary(self) -> dict:
        """Budget, spent, remaining and the entries."""

    @property
    def entries(self) -> list:
        """The charges (one :class:`Entry` each)."""


# ---------------------------------------------------------------------------
# entries


@dataclass(frozen=True)
class Entry:
    """One charge: its exact (epsilon, delta), its event, what it released and the rule that admitted it.

    Examples:
        >>> Entry(1, Decimal("0.5"), Decimal(0), EpsilonDeltaEvent(Decimal("0.5"))).as_dict()["epsilon_exact"]
        '0.5'
    """

    id: int
    epsilon: Decimal
    delta: Decimal
    event: Event
    mechanism: str = ""
    source: str = ""
    what: str = ""
    status: str = "pending"
    time: str | None = None
    admitted_by: str = ""
    released: dict | None = None
    note: str = ""

    def as_dict(self) -> dict:
        """The entry as JSON-ready dict (floats for reading, exact decimals as strings).

        Returns:
            The dict.
        """
        return {"id": self.id, "status": self.status, "time": self.time, "epsilon": float(self.epsilon),
                "delta": float(self.delta), "epsilon_exact": show(self.epsilon), "delta_exact": show(self.delta),
                "mechanism": self.mechanism, "source": self.source, "what": self.what,
                "dp_event": self.event.to_json(), "admitted_by": self.admitted_by, "released": self.released,
                **({"note": self.note} if self.note else {})}


# ---------------------------------------------------------------------------
# composition


def _rdp_orders():
    from dp_accounting.rdp import rdp_privacy_accountant as R

    return sorted(set(R.DEFAULT_RDP_ORDERS if hasattr(R, "DEFAULT_RDP_ORDERS") else [])
                  | set(float(a) for a in 1.0 + np.geomspace(1e-4, 1e5, 3000)))


def _counts(events: list[Event]) -> list[tuple[Event, int]]:
    out: dict = {}
    for ev in events:
        k = tuple(sorted((a, str(b)) for a, b in ev.to_json().items()))
        out.setdefault(k, [ev, 0])[1] += 1
    return [(e, c) for e, c in out.values()]


def _own(parts: list[tuple[Event, int]]) -> Fraction:
    return sum((Fraction(float(ev.own_delta)) * c for ev, c in parts), Fraction(0))


def gdp_epsilon(events: list[Event], delta: Decimal) -> float | None:
    """Epsilon at ``delta`` of GDP events composed exactly (Dong-Roth-Su Cor. 3.3), None if another event."""

    if not events or not all(isinstance(e, GDPEvent) for e in events) or delta <= 0:
        return None
    mu2 = sum((Fraction(e.mu) ** 2 for e in events), Fraction(0))
    mu = math.sqrt(float_at_least(mu2))
    while Fraction(mu) ** 2 < mu2:
        mu = math.nextafter(mu, math.inf)
    return float(GDP(mu).epsilon(float_at_most(delta)))


def _runs(events: list[Event]) -> list[tuple[Event, int]]:
    """Consecutive identical events grouped (composed by ``self_compose``), in their order."""
    out: list[list] = []
    for ev in events:
        if out and out[-1][0] == ev:
            out[-1][1] += 1
        else:
            out.append([ev, 1])
    return [(e, c) for e, c in out]


def _pld_accountant():
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import PLDAccountant
    from dp_accounting.pld import common, privacy_loss_distribution

    class PairPLDAccountant(PLDAccountant):
        """dp-accounting's PLD accountant, also composing generic (epsilon, delta) pairs: the PLD of the
        Kairouz-Oh-Viswanath mechanism that dominates every (epsilon, delta)-DP mechanism
        (``privacy_loss_distribution.from_privacy_parameters``)."""

        def compose_pair(self, epsilon: float, delta: float, count: int) -> None:
            p = privacy_loss_distribution.from_privacy_parameters(
                common.DifferentialPrivacyParameters(epsilon, delta),
                value_discretization_interval=self._value_discretization_interval)
            self._pld = self._pld.compose(p.self_compose(count) if count > 1 else p)

    # the mechanisms are priced at their proven sensitivities (shift PLDs; nothing is subsampled)
    return PairPLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=PLD_INTERVAL)


def _ulps_up(x: float, ulps: int = 4) -> float:
    """``x`` pushed up by a few units in the last place: dp-accounting returns its composed epsilon rounded to the
    nearest double (its own arithmetic is pessimistic, its last rounding is not), so without this a composition could
    be admitted up to half an ulp over the budget (docs/mutation.md, the ledger's admission)."""
    for _ in range(ulps):
        if not math.isfinite(x):
            break
        x = math.nextafter(x, math.inf)
    return x


def pld_epsilon(events: list[Event], delta: Decimal) -> float | None:
    """Epsilon at ``delta`` by dp-accounting's PLD accountant (events it prices exactly, and the (epsilon, delta)
    pairs of the others); None when an event has neither (a zCDP event)."""
    runs = _runs(events)
    if not runs or delta <= 0:
        return None
    plan = []
    for ev, c in runs:
        p = ev.pld_event()
        pair = None if p is not None else ev.pld_pair()
        if p is None and pair is None:
            return None
        plan.append((p, pair, c))
    rest = Fraction(delta) - _own(runs)
    if rest <= 0:
        return math.inf
    acct = _pld_accountant()
    # The composed PLDs of the last few run sequences are kept: a charge added to a ledger composes one more run
    # onto the PLD of the charges before it (the longest kept sequence that begins the runs), instead of all of
    # them again (each spend consults the charges before and after it).  The computation for a prefix is the same
    # sequence of dp-accounting calls whether it comes from the cache or not, so the epsilon does not depend on it.
    key = tuple((ev, c) for ev, c in runs)
    start = 0
    with _CACHE_LOCK:
        for kept, state in _PLD_PREFIXES.items():       # at most _PLD_PREFIXES_KEPT comparisons of prefixes
            if start < len(kept) <= len(key) and key[:len(kept)] == kept:
                start = len(kept)
                acct._pld, acct._contains_non_dp_event = state
    for k in range(start, len(runs)):
        p, pair, c = plan[k]
        if p is not None:
            acct.compose(p, c)
        else:
            acct.compose_pair(float_at_least(pair[0]), float_at_least(pair[1]), c)
    if len(runs) > start:
        with _CACHE_LOCK:
            _PLD_PREFIXES[key] = (acct._pld, acct._contains_non_dp_event)
            while len(_PLD_PREFIXES) > _PLD_PREFIXES_KEPT:
                del _PLD_PREFIXES[next(iter(_PLD_PREFIXES))]
    return _ulps_up(float(acct.get_epsilon(float_at_most(rest))))


#: composed PLDs of recent charge sequences (pld_epsilon), oldest first; dp-accounting's PLD objects are immutable
#: (``compose`` returns a new one)
_PLD_PREFIXES: dict = {}
_PLD_PREFIXES_KEPT = 8
#: the caches are shared by the threads of a process (a ledger may be spent from several)
_CACHE_LOCK = threading.Lock()


def rdp_epsilon(events: list[Event], delta: Decimal) -> float | None:
    """Epsilon at ``delta`` by dp-accounting's RDP accountant; None when an event has no Renyi curve."""
    from dp_accounting.rdp import RdpAccountant

    parts = _counts(events)
    if not parts or delta <= 0:
        return None
    dpe = [(e.rdp_event(), c) for e, c in parts]
    if any(p is None for p, _ in dpe):
        return None
    rest = Fraction(delta) - _own(parts)
    if rest <= 0:
        return math.inf
    acct = RdpAccountant(orders=_rdp_orders())
    # dp-accounting adds ``count * curve`` per event (``self._rdp += ...``); each part's term is computed once per
    # process (3,000 orders of a Laplace curve take 35 ms) and added in the same order, giving the same sum
    for (ev, c), (p, _) in zip(parts, dpe):
        acct._rdp = acct._rdp + _rdp_term(ev, p, c)
    return _ulps_up(float(acct.get_epsilon(float_at_most(rest))))


def _rdp_term(ev: Event, p, count: int):
    key = (ev, count)
    with _CACHE_LOCK:
        term = _RDP_TERMS.get(key)
    if term is None:
        from dp_accounting.rdp import RdpAccountant

        one = RdpAccountant(orders=_rdp_orders())
        one.compose(p, count)
        term = one._rdp
        with _CACHE_LOCK:
            _RDP_TERMS[key] = term
            while len(_RDP_TERMS) > 256:
                del _RDP_TERMS[next(iter(_RDP_TERMS))]
    return term


#: ``count * curve`` of recent (event, count) parts (rdp_epsilon)
_RDP_TERMS: dict = {}


@dataclass(frozen=True)
class Composition:
    """The spent budget of a list of charges under every rule (floats: composed epsilons at the budget's delta).

    Examples:
        >>> c = compose([(Decimal("0.5"), Decimal(0), EpsilonDeltaEvent(Decimal("0.5")))] * 2, Decimal(1), Decimal(0))
        >>> c.fits, c.rule, c.epsilon
        (True, 'basic composition', 1.0)
    """

    epsilon_sum: Decimal
    delta_sum: Decimal
    budget_epsilon: Decimal
    budget_delta: Decimal
    gdp: float | None = None
    pld: float | None = None
    rdp: float | None = None
    count: int = 0

    @property
    @exact
    def fits_basic(self) -> bool:
        """Whether the exact sums fit the budget."""
        return self.epsilon_sum <= self.budget_epsilon and self.delta_sum <= self.budget_delta

    def _composed(self) -> list[tuple[str, float]]:
        out = []
        for name, v in (("curve composition (GDP)", self.gdp), ("PLD composition (dp-accounting)", self.pld),
                        ("Renyi composition (dp-accounting)", self.rdp)):
            if v is not None and math.isfinite(v):
                out.append((name, v))
        return out

    @property
    def fits(self) -> bool:
        """Whether some rule admits the charges."""
        return self.count == 0 or self.fits_basic or any(
            Fraction(v) <= Fraction(self.budget_epsilon) for _, v in self._composed())

    @exact
    def admitted_by(self) -> str:
        """The rule that admits the charges, with its numbers (recorded with each entry)."""
        if self.fits_basic:
            return (f"basic composition: exact sums epsilon {show(self.epsilon_sum)} <= {show(self.budget_epsilon)}, "
                    f"delta {show(self.delta_sum)} <= {show(self.budget_delta)}")
        name, v = min(self._composed(), key=lambda x: x[1])
        return f"{name}: epsilon {v!r} <= {show(self.budget_epsilon)} at delta {show(self.budget_delta)}"

    @property
    def rule(self) -> str:
        """The rule that spends least (a composed rule only when it improves on the sums materially)."""
        return self._best()[0]

    @property
    def epsilon(self) -> float:
        """The spent epsilon by :attr:`rule`."""
        return self._best()[1]

    @exact
    def _best(self) -> tuple[str, float, float]:
        D = self.budget_delta
        basic = ("basic composition", float(self.epsilon_sum), float(max(D - self.delta_sum, Decimal(0))))
        best = basic if self.delta_sum <= D else None
        for name, v in self._composed():
            # reported only when it improves on basic composition materially (it uses the whole budget delta)
            if best is None or v < float(self.epsilon_sum) * 0.999:
                if best is None or v < best[1]:
                    best = (name, v, 0.0)
        return best or basic

    @exact
    def remaining(self) -> dict:
        """The budget left by :attr:`rule` (a composed rule uses the whole budget delta)."""
        rule, eps, dleft = self._best()
        if rule == "basic composition":
            left = self.budget_epsilon - self.epsilon_sum
            return {"epsilon": max(0.0, float(left)), "delta": dleft}
        return {"epsilon": max(0.0, float(Fraction(self.budget_epsilon) - Fraction(eps))), "delta": dleft}


@exact
def compose(charges: list[tuple[Decimal, Decimal, Event]], budget_epsilon: Decimal, budget_delta: Decimal,
            composed: bool = True) -> Composition:
    """The :class:`Composition` of charges (exact sums; the composed rules when ``composed`` and delta > 0).

    Args:
        charges: (epsilon, delta, event) triples.
        budget_epsilon: the budget's epsilon.
        budget_delta: the budget's delta.
        composed: also run the GDP, PLD and Renyi rules (else sums only).

    Returns:
        The composition.

    Raises:
        BudgetError: dp-accounting refuses an event (one line).

    Examples:
        >>> half = (Decimal("0.5"), Decimal(0), EpsilonDeltaEvent(Decimal("0.5")))
        >>> compose([half] * 3, Decimal(1), Decimal(0)).fits
        False
    """
    se = sum((c[0] for c in charges), Decimal(0))
    sd = sum((c[1] for c in charges), Decimal(0))
    c = Composition(se, sd, budget_epsilon, budget_delta, count=len(charges))
    if composed and budget_delta > 0 and charges:
        evs = [x[2] for x in charges]
        try:
            g = gdp_epsilon(evs, budget_delta)
            if g is not None:
                # every event Gaussian-DP: their composition is exactly GDP(sqrt(sum mu^2)) (Dong-Roth-Su Cor. 3.3),
                # whose epsilon, rounded outward, no other rule can undercut (PLD and Renyi bound the same curve from
                # above); skipping them only skips dp-accounting's import (0.5 s) and arithmetic
                c = replace(c, gdp=g)
            else:
                c = replace(c, pld=pld_epsilon(evs, budget_delta), rdp=rdp_epsilon(evs, budget_delta))
        except (ValueError, OverflowError, ArithmeticError) as e:
            raise BudgetError(f"dp-accounting cannot compose these events ({str(e).splitlines()[0]}); "
                              "charge them as (epsilon, delta) pairs") from None
    return c


# ---------------------------------------------------------------------------
# what a charge is


def charge_of(item: Any, budget_delta: Decimal, *, epsilon: Any = None, delta: Any = None
              ) -> tuple[Decimal, Decimal, Event]:
    """(epsilon, delta, event) to charge for ``item`` (see :meth:`PrivacyAccountant.spend`).

    Args:
        item: a certificate (Certificate, BoundReport, PrivacyCurve), a chain (``certificate`` attribute or
            ``to_dp_event()``), a release result (``dp_event`` / ``to_dp_event()``), a DP event (ours, its JSON
            form, or dp-accounting's Gaussian / Laplace / zCDP event), or an (epsilon, delta) pair.
        budget_delta: the budget's delta (the default point at which a curve is charged).
        epsilon: an epsilon to charge instead, when it is larger than the item's.
        delta: the delta at which a curve is charged (default: ``budget_delta``).

    Returns:
        (epsilon, delta, event) as charged.

    Raises:
        BudgetError: an item that cannot be accounted for, or a malformed one (one line).

    Examples:
        >>> charge_of((0.5, 1e-6), Decimal("1e-5"))[:2]
        (Decimal('0.5'), Decimal('0.000001'))
        >>> charge_of((0.1, -0.1), Decimal(0))
        Traceback (most recent call last):
        ...
        bayesdp.errors.BudgetError: epsilon = Decimal('0.1'), delta = Decimal('-0.1'): need epsilon >= 0 and delta in [0, 1)
    """

    at = to_decimal(delta, "delta") if delta is not None else budget_delta
    if isinstance(item, tuple):
        if len(item) != 2:
            raise BudgetError(f"spend({item!r}): a tuple must be an (epsilon, delta) pair")
        ev: Event = EpsilonDeltaEvent(to_decimal(item[0], "epsilon"), to_decimal(item[1], "delta"))
    else:
        rel = None if isinstance(item, Mapping) else getattr(item, "dp_event", None)
        if isinstance(rel, Mapping) and rel:              # a release result: the event that ran
            item = rel
        elif not isinstance(item, (Certificate, BoundReport, Mapping)) and getattr(item, "certificate", None) is not None:
            item = item.certificate                       # a chain
        if isinstance(item, BoundReport):
            item = item.best
        if isinstance(item, Certificate):
            if not item.valid or item.curve is None:
                raise BudgetError(f"certificate {item.mechanism!r} is not valid ({item.reason}); it proves nothing "
                                  "to charge")
            item = item.curve
        if hasattr(item, "to_dp_event"):             # a chain's certificate, a release: the event that ran
            ev = as_event(item.to_dp_event(), at)
        elif isinstance(item, Mapping):
            ev = event_from_json(item)
        else:
            ev = as_event(item, at)
    e, d = ev.minimal_charge(at)
    if epsilon is not None:
        e = max(e, to_decimal(epsilon, "epsilon"))
    if not e > 0 and not isinstance(ev, EpsilonDeltaEvent):
        raise BudgetError(f"{ev.type} event charges epsilon {show(e)}; it must be > 0")
    return e, d, ev


def _loose_ok(need: Decimal, have: Decimal) -> bool:
    """need <= have, allowing 1e-9 relative for numerically converted curves."""
    return Fraction(need) <= Fraction(have) * (1 + Fraction(1, 10 ** 9))


def consistency_problem(eps: Decimal, delta: Decimal, curve, event, released: dict | None = None) -> str | None:
    """Why a charge (eps, delta) is below what its event, its curve or its released noise scale costs (None if
    consistent).  Exact comparisons for Laplace events and pairs; curve conversions within 1e-9 relative.

    Args:
        eps: the charged epsilon.
        delta: the charged delta.
        curve: the certificate's curve, or None.
        event: the event (or its JSON form), or None.
        released: the committed values (``noise_scale`` checked against the event).

    Returns:
        The reason in words, or None.

    Examples:
        >>> consistency_problem(Decimal("0.4"), Decimal(0), None, {"type": "laplace", "l1_sensitivity": 1.0,
        ...                     "grid_rounding": 0.0, "noise_scale": 2.0, "delta": 0.0})
        'its noise gives epsilon 0.5 (sensitivity / noise scale) but it is charged 0.4'
    """
    if curve is not None:
        try:
            ce = curve_event(curve, delta if delta > 0 else None)
            e0, d0 = ce.minimal_charge(delta)
        except BudgetError:
            return "its curve has no epsilon at the charged delta"
        except BayesDPError:
            return "its curve is malformed"
        if not _loose_ok(e0, eps) or d0 > delta:
            return f"its curve gives ({show(e0)}, {show(d0)}) but it is charged ({show(eps)}, {show(delta)})"
    try:
        ev = None if event is None else event_from_json(event)
    except BudgetError as e:
        return f"its dp_event is malformed ({e})"
    if ev is not None:
        try:
            e0, d0 = ev.minimal_charge(delta)
        except BudgetError as e:
            return str(e)
        exact = isinstance(ev, (DiscreteLaplaceEvent, EpsilonDeltaEvent, LaplaceEvent))
        if (e0 > eps) if exact else not _loose_ok(e0, eps):
            what = "its noise gives epsilon" if isinstance(ev, DiscreteLaplaceEvent) else "its dp_event gives epsilon"
            extra = " (sensitivity / noise scale)" if isinstance(ev, DiscreteLaplaceEvent) else ""
            return f"{what} {show(e0)}{extra} but it is charged {show(eps)}"
        if d0 > delta:
            return f"its dp_event needs delta {show(d0)} but it is charged {show(delta)}"
        if released and "noise_scale" in released:
            b = released["noise_scale"]
            ok = isinstance(b, (int, float)) and math.isfinite(b) and b > 0
            if isinstance(ev, DiscreteLaplaceEvent) and (not ok or Fraction(b) < Fraction(ev.noise_scale)):
                return f"its released noise scale {b!r} is below its dp_event's noise scale {ev.noise_scale!r}"
            if isinstance(ev, DiscreteGaussianEvent) and (not ok or Fraction(b) < Fraction(ev.sigma)):
                return f"its released noise scale {b!r} is below its dp_event's sigma {ev.sigma!r}"
    return None


@exact
def checked_charge(epsilon: Any, delta: Any) -> tuple[Decimal, Decimal]:
    """(epsilon, delta) of a reservation as exact decimals: epsilon > 0, a double delta rounded up."""
    e = to_decimal(epsilon, "epsilon")
    if not e > 0:
        raise BudgetError(f"epsilon = {epsilon!r} must be > 0; pass a positive epsilon")
    noise_epsilon(e)                   # refuses an epsilon above the largest double: no noise can be drawn for it
    if isinstance(delta, float):
        if not math.isfinite(delta):
            raise BudgetError(f"delta = {delta!r} must be in [0, 1)")
        d = decimal_at_least(delta)
    else:
        d = to_decimal(delta, "delta")
    if not 0 <= d < 1:
        raise BudgetError(f"delta = {delta!r} must be in [0, 1)")
    return e, d


def reserved_event(e: Decimal, d: Decimal, curve, event) -> Event:
    """The event a reservation records: ``event``, else the curve's, else the pair; refused if it costs more."""
    if event is not None:
        ev = event_from_json(event)
    elif curve is not None:
        try:
            ev = curve_event(curve, d if d > 0 else None)
        except BudgetError:
            ev = EpsilonDeltaEvent(e, d)
    else:
        ev = EpsilonDeltaEvent(e, d)
    why = consistency_problem(e, d, curve, ev)
    if why:
        raise BudgetError(f"release of epsilon = {show(e)}, delta = {show(d)} refused: {why}; nothing was drawn: "
                          "charge at least what the mechanism costs")
    return ev


def over_budget(e: Decimal, d: Decimal, where: str, E: Decimal, D: Decimal, left: dict) -> BudgetError:
    return BudgetError(f"epsilon = {show(e)}, delta = {show(d)} exceeds the budget{where} (epsilon {show(E)}, "
                       f"delta {show(D)}; remaining epsilon {left['epsilon']:.6g}, delta {left['delta']:.3g}); "
                       "nothing was charged and nothing was drawn: lower epsilon, or use a new budget for new data")


# ---------------------------------------------------------------------------
# shared behaviour of the accountant and the ledger


class _Budgeted:
    """spend / spent / remaining / check over ``_charged()`` and the budget; subclasses implement ``reserve``."""

    budget_epsilon: Decimal
    budget_delta: Decimal
    #: a persistent accountant (a ledger file) refuses whatever an explicit key made reproducible (not private)
    persistent = False
    _exhausted: str | None = None

    def _charged(self) -> list[Entry]:
        raise NotImplementedError

    def exhaust(self, why: str) -> None:
        """Refuse every later charge (an in-memory accountant after a release that is not private: its noise was
        reproducible, so what it protects is spent whatever its epsilon).

        Args:
            why: what exhausted it (in the refusal of every later charge).

        Raises:
            BudgetError: on a persistent ledger, which never takes a non-private release.

        Examples:
            >>> acct = PrivacyAccountant(budget=1.0)
            >>> acct.exhaust("a seeded path release")
            >>> acct.remaining()
            {'epsilon': 0.0, 'delta': 0.0}
        """
        if self.persistent:
            raise BudgetError(f"{why}: a persistent ledger never takes a release that is not private; run it "
                              "without an explicit key (rng_key / --seed)")
        self._exhausted = why

    def refuse_not_private(self, item: Any, what: str) -> None:
        """Raise BudgetError when ``item`` is not private (an explicit key) and this accountant is persistent.

        Args:
            item: a chain, certificate or release with a ``private`` attribute (None: a release about to run).
            what: the thing in words.

        Raises:
            BudgetError: a persistent ledger and a non-private item.

        Examples:
            >>> PrivacyAccountant(budget=1.0).refuse_not_private(None, "a seeded path release")
        """
        if self.persistent and getattr(item, "private", False) is not True:
            raise BudgetError(f"{what} used an explicit key (reproducible: not private); ledger {self._where()} is "
                              "persistent and refuses it; run it without rng_key / --seed, or charge an in-memory "
                              "bayesdp.PrivacyAccountant")

    def _composition(self, extra: list | None = None, composed: bool = True) -> Composition:
        ch = [(en.epsilon, en.delta, en.event) for en in self._charged()] + list(extra or [])
        return compose(ch, self.budget_epsilon, self.budget_delta, composed)

    def _admit(self, charged: list[Entry], e: Decimal, d: Decimal, ev: Event, where: str = "") -> str:
        """The admission text, or raise BudgetError (the composed rules only when the sums do not fit)."""
        if self._exhausted:
            raise BudgetError(f"this accountant is exhausted: {self._exhausted} was not private (an explicit key); "
                              "use a new accountant")
        ch = [(en.epsilon, en.delta, en.event) for en in charged]
        fast = compose(ch + [(e, d, ev)], self.budget_epsilon, self.budget_delta, composed=False)
        c = fast if fast.fits_basic else compose(ch + [(e, d, ev)], self.budget_epsilon, self.budget_delta)
        if not c.fits:
            before = compose(ch, self.budget_epsilon, self.budget_delta, composed=not fast.fits_basic)
            raise over_budget(e, d, where, self.budget_epsilon, self.budget_delta, before.remaining())
        return c.admitted_by()

    def check(self, epsilon: Any, delta: Any = 0.0, curve=None, event=None) -> dict:
        """Whether a charge of (epsilon, delta) (described by ``event`` or ``curve``) would fit; charges nothing.

        Args:
            epsilon: the charge's epsilon.
            delta: its delta.
            curve: its privacy curve.
            event: its DP event (default: the curve's, else the (epsilon, delta) pair).

        Returns:
            ``{"admitted_by": rule}``.

        Raises:
            BudgetError: it does not fit, or costs more than the charge.
        """
        e, d = checked_charge(epsilon, delta)
        ev = reserved_event(e, d, curve, event)
        return {"admitted_by": self._admit(self._charged(), e, d, ev, self._where())}

    def _where(self) -> str:
        return ""

    def spend(self, item: Any, *, epsilon: Any = None, delta: Any = None, what: str = "") -> dict:
        """Charge ``item``: a certificate (its curve), a chain, a release result, a DP event, or an (epsilon,
        delta) pair.  ``delta`` chooses the point at which a curve is charged (default: the budget's delta);
        ``epsilon`` overrides the charged epsilon (it must be at least the item's).

        Args:
            item: what to charge.
            epsilon: an epsilon to charge instead (at least the item's).
            delta: the delta at which a curve is charged.
            what: what was released, in words (recorded).

        Returns:
            :meth:`summary` after the charge.

        Raises:
            BudgetError: over budget (nothing charged), or an item that cannot be accounted for (one line).
        """
        not_private = getattr(item, "private", True) is False
        if not_private:
            self.refuse_not_private(item, f"{type(item).__name__}")
        e, d, ev = charge_of(item, self.budget_delta, epsilon=epsilon, delta=delta)
        with self.reserve(e, d, ev.type, type(item).__name__, what=what, event=ev) as res:
            res.mark_drawn()
            res.commit({"spent": what or type(item).__name__})
        if not_private:
            self.exhaust(f"{type(item).__name__} (an explicit key)")
        return self.summary()

    def spent(self) -> dict:
        """Spent budget: ``epsilon`` (by the rule that spends least), the exact sums (as floats), and the
        composed epsilons at the budget's delta (None where a rule does not apply).

        Returns:
            ``epsilon``, ``rule``, ``epsilon_sum``, ``delta_sum``, ``epsilon_gdp``, ``epsilon_pld``, ``epsilon_rdp``.
        """
        c = self._composition()
        return {"epsilon": c.epsilon, "rule": c.rule, "epsilon_sum": float(c.epsilon_sum),
                "delta_sum": float(c.delta_sum), "epsilon_gdp": c.gdp, "epsilon_pld": c.pld, "epsilon_rdp": c.rdp}

    def remaining(self) -> dict:
        """What is left: ``{"epsilon": ..., "delta": ...}`` (by the rule that spends least; a composed rule uses
        the whole budget delta).

        Returns:
            The remaining epsilon and delta.
        """
        if self._exhausted:
            return {"epsilon": 0.0, "delta": 0.0}
        return self._composition().remaining()

    @exact
    def _summary(self, entries: list[Entry], c: Composition) -> dict:
        E, D = self.budget_epsilon, self.budget_delta
        return {
            "budget": {"epsilon": float(E), "delta": float(D)},
            "spent": {"epsilon": c.epsilon, "rule": c.rule,
                      "basic": {"epsilon": float(c.epsilon_sum), "delta": float(c.delta_sum)},
                      "curve_epsilon_at_budget_delta": c.gdp, "pld_epsilon_at_budget_delta": c.pld,
                      "rdp_epsilon_at_budget_delta": c.rdp},
            "remaining_budget": c.remaining(),
            "exact": {"budget": {"epsilon": show(E), "delta": show(D)},
                      "spent_basic": {"epsilon": show(c.epsilon_sum), "delta": show(c.delta_sum)},
                      "remaining_basic": {"epsilon": show(E - c.epsilon_sum), "delta": show(D - c.delta_sum)}},
            "within_budget": c.fits,
            "num_releases": c.count,
            "entries": [en.as_dict() for en in entries],
            "pending": [en.id for en in entries if en.status == "pending"],
        }


def _budget(budget: Any, budget_delta: Any) -> tuple[Decimal, Decimal]:
    E = to_decimal(budget, "budget")
    if not E > 0:
        raise BudgetError(f"budget = {budget!r} must be a positive finite epsilon")
    D = to_decimal(0 if budget_delta is None else budget_delta, "budget_delta")
    if not 0 <= D < 1:
        raise BudgetError(f"budget_delta = {budget_delta!r} must be in [0, 1)")
    return E, D


@dataclass
class Reservation:
    """A charge in progress (see :meth:`PrivacyAccountant.reserve` and :meth:`bayesdp.Ledger.reserve`).

    Attributes:
        entry_id: the entry's id.
        epsilon: the charge (exact decimal).
        delta: the charged delta.
        noise_epsilon: the epsilon to calibrate noise to: the largest double not above the charge.
        drawn: whether noise may have been drawn (the entry then stays charged).
        released: what was released (set by :meth:`commit`).
        summary: the summary once the reservation is closed.
        head: the ledger's head once closed (None in memory).

    Examples:
        >>> acct = PrivacyAccountant(budget=1.0)
        >>> with acct.reserve(0.1, 0, "laplace", "an example") as res:
        ...     res.mark_drawn()                 # immediately before drawing noise at res.noise_epsilon
        ...     res.commit({"value": 1.5})
        >>> res.noise_epsilon, res.summary["remaining_budget"]["epsilon"]
        (0.09999999999999999, 0.9)
    """

    entry_id: int
    epsilon: Decimal
    delta: Decimal
    noise_epsilon: float
    drawn: bool = False
    released: dict | None = None
    summary: dict | None = None
    head: dict | None = None

    def mark_drawn(self) -> None:
        """Call immediately BEFORE drawing any privacy noise: from then on the entry stays charged."""
        self.drawn = True

    def commit(self, released: dict) -> None:
        """Record what was released (written when the reservation closes).

        Args:
            released: the released values (JSON-ready).
        """
        self.drawn = True
        self.released = dict(released)


class PrivacyAccountant(_Budgeted):
    """A privacy budget in memory: the :class:`Accountant` protocol, as :class:`bayesdp.Ledger` without a file.

    ``PrivacyAccountant(budget=3.0, budget_delta=1e-5)``: releases and certificates are charged with
    :meth:`spend` (or by :func:`bayesdp.release`, which reserves before drawing noise); a charge that would
    exceed the budget raises :class:`~bayesdp.errors.BudgetError` and changes nothing.

    Args:
        budget: the budget's epsilon (a decimal; a float at its shortest decimal).
        budget_delta: the budget's delta (default 0).

    Raises:
        BudgetError: a budget that is not positive and finite, or a delta outside [0, 1).

    Examples:
        >>> acct = PrivacyAccountant(budget=1.0)
        >>> for _ in range(10):
        ...     _ = acct.spend((0.1, 0.0), what="a count")
        >>> acct.remaining()["epsilon"]
        0.0
        >>> acct.spend((0.1, 0.0))
        Traceback (most recent call last):
        ...
        bayesdp.errors.BudgetError: epsilon = 0.1, delta = 0 exceeds the budget (epsilon 1, delta 0; remaining epsilon 0, delta 0); nothing was charged and nothing was drawn: lower epsilon, or use a new budget for new data
    """

    def __init__(self, budget: Any, budget_delta: Any = 0.0):
        self.budget_epsilon, self.budget_delta = _budget(budget, budget_delta)
        self._entries: list[Entry] = []
        self.path = None

    def __repr__(self) -> str:
        return f"PrivacyAccountant(budget={show(self.budget_epsilon)}, budget_delta={show(self.budget_delta)})"

    @property
    def entries(self) -> list[Entry]:
        """Every charge (an entry cancelled before any draw is removed)."""
        return list(self._entries)

    def _charged(self) -> list[Entry]:
        return list(self._entries)

    @contextlib.contextmanager
    def reserve(self, epsilon: Any, delta: Any, mechanism: str, source: str, curve=None, what: str = "",
                event=None) -> Iterator[Reservation]:
        """Charge before the noise is drawn; refunded only if the block ends before ``mark_drawn``.

        Args:
            epsilon: the charge's epsilon.
            delta: its delta.
            mechanism: the mechanism's label.
            source: the certificate's source.
            curve: its privacy curve.
            what: what is released, in words.
            event: the DP event (default: the curve's, else the (epsilon, delta) pair).

        Returns:
            A context manager yielding the :class:`Reservation`.

        Raises:
            BudgetError: the charge does not fit or costs more than charged (nothing charged).
        """
        e, d = checked_charge(epsilon, delta)
        ev = reserved_event(e, d, curve, event)
        rule = self._admit(self._charged(), e, d, ev)
        i = len(self._entries) + 1
        entry = Entry(i, e, d, ev, str(mechanism), str(source), str(what), "pending", now(), rule)
        self._entries.append(entry)
        res = Reservation(i, e, d, noise_epsilon(e))

        def settle(status: str | None, **kw):
            k = next(j for j, x in enumerate(self._entries) if x.id == i)
            if status is None:
                del self._entries[k]
            else:
                self._entries[k] = replace(self._entries[k], status=status, **kw)
        try:
            yield res
        except BaseException:
            settle("aborted" if res.drawn else None)
            raise
        if res.released is not None:
            why = consistency_problem(e, d, None, ev, res.released)
            if why:
                settle("aborted", note=f"inconsistent: {why}")
                raise BudgetError(f"release {i} not returned: {why}; it stays charged as aborted (a bug: report it)")
            settle("committed", released=res.released)
        else:
            settle("aborted" if res.drawn else None)
        res.summary = self.summary()

    def summary(self) -> dict:
        """Budget, spent, remaining and the entries (the shape of :meth:`bayesdp.Ledger.summary`).

        Returns:
            ``budget``, ``spent``, ``remaining_budget``, ``exact``, ``entries``, ``pending``, ``path`` (None).
        """
        s = self._summary(self._entries, self._composition())
        s["path"] = None
        return s
