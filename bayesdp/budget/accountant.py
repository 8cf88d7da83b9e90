"""Privacy accounting: an in-memory :class:`PrivacyAccountant` with the interface of the persistent
:class:`~bayesdp.budget.ledger.Ledger`, and the composition rule both use.

What is composed is a list of **DP events** (the description of what ran, as in dp-accounting's
``dp_event``): the ledger's dicts (``laplace``: the secure discrete-Laplace release of
:mod:`bayesdp.publish.noise`; ``epsilon_delta``; ``gdp``), certificates (a GDP curve is a Gaussian
event; other curves are taken at an (epsilon, delta) point) and dp-accounting events.

Rules (docs/ledger.md "Composition"):

* a **pure-epsilon budget** (delta = 0) composes by exact decimal summation of the epsilons;
* an **(epsilon, delta) budget** admits a sequence when summation fits, or when the composition of
  the events' privacy loss distributions (dp-accounting's PLD, pessimistic discretisation) has
  ``epsilon(delta - sum of the events' own deltas) <= budget epsilon``.  The own delta of an event
  (e.g. the failure probability of 004 Proposition 3.10's sensitivity) is added by the union bound.

The PLD of one event:

* a one-coordinate discrete-Laplace release ``y = r (round(x / r) + G)``, ``P(G = g) ∝ exp(-a |g|)``,
  ``a = r / noise_scale``: neighbouring grid indices differ by at most ``n = floor(s / r) + 1``
  (``s`` the L1 sensitivity), so its privacy loss takes the values ``a (|k - n| - |k|)``; the PLD is
  built exactly (geometric sums, losses rounded UP to the discretisation grid) and handed to
  dp-accounting (``create_from_rounded_probability``).  A release of several coordinates is taken as
  a generic pure ``epsilon``-DP mechanism (``from_privacy_parameters``), which dominates it;
* ``epsilon_delta``: dp-accounting's ``from_privacy_parameters`` (the generic (epsilon, delta) pair);
* ``gdp`` (mu): the Gaussian mechanism of noise multiplier ``1 / mu`` (a mu-GDP mechanism is dominated by
  it by definition of GDP);
* ``gaussian`` (sigma, l2 sensitivity): the Gaussian mechanism;
* ``laplace_continuous`` (noise multiplier b/s): the continuous Laplace mechanism (a dp-accounting
  ``LaplaceDpEvent`` run elsewhere), composed exactly as dp-accounting composes it;
* ``discrete_gaussian`` (the secure Gaussian release of :mod:`bayesdp.publish.noise`, ``rho``-zCDP by CKS20
  Theorem 14): the generic (epsilon, delta) pair it is charged at (``from_privacy_parameters``), which
  dominates it.

A third rule composes **Renyi curves** when every event has one (pure epsilon-DP: the constant curve
``epsilon``; ``discrete_gaussian``: ``alpha rho``; ``gdp`` / ``gaussian``: ``alpha mu^2 / 2``): RDP curves add
(Mironov 2017 Prop. 1) and the sum is converted at the budget's delta (CKS20 Prop. 12), as the ledger's
curve rule does.  It is what makes many Gaussian releases cheap (zCDP composes by adding ``rho``).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Iterator

from ..errors import BayesDPError, BudgetError

__all__ = ["PrivacyAccountant", "composed_epsilon", "rdp_composed_epsilon", "charge_of", "fits", "PLD_INTERVAL"]

#: value discretisation of the privacy loss distributions (dp-accounting's default)
PLD_INTERVAL = 1e-4


# ---------------------------------------------------------------------------
# events -> privacy loss distributions


def _dl_pld(a: float, n: int):
    """The PLD of the discrete Laplace mechanism P(G = g) ∝ exp(-a|g|) with integer shift n: loss
    ``a (|k - n| - |k|)`` at output k, i.e. ``a n`` for k <= 0, ``a (n - 2k)`` for 0 < k < n, ``-a n``
    for k >= n; every loss is rounded UP to a multiple of PLD_INTERVAL (pessimistic), the bucket
    boundaries computed in exact rational arithmetic, the masses as closed-form geometric sums."""
    from fractions import Fraction

    from dp_accounting.pld import privacy_loss_distribution as P

    D = Fraction(PLD_INTERVAL)
    A = Fraction(a)
    p = math.exp(-a)
    c = -math.expm1(-a) / (1 + p)                   # (1 - p)/(1 + p)
    pmf: dict[int, float] = {}

    def bucket(loss: Fraction) -> int:               # smallest j with j D >= loss
        q = loss / D
        return int(q) if q.denominator == 1 else math.floor(q) + 1

    def put(j: int, mass: float) -> None:
        if mass > 0:
            pmf[j] = pmf.get(j, 0.0) + mass
    put(bucket(A * n), 1.0 / (1 + p))                 # k <= 0
    put(bucket(-A * n), math.exp(-a * n) / (1 + p))   # k >= n
    if n > 1:
        k = 1
        while k <= n - 1:
            j = bucket(A * (n - 2 * k))
            # the largest k' with bucket(a (n - 2k')) == j: a (n - 2k') > (j - 1) D  <=>  k' < (n - (j-1) D/a)/2
            bound = (n - (j - 1) * D / A) / 2
            k1 = min(n - 1, (math.ceil(bound) - 1))
            cnt = k1 - k + 1
            # sum_{k'=k}^{k1} c p^k' = c p^k (1 - p^cnt)/(1 - p)
            put(j, c * math.exp(-a * k) * (-math.expm1(-a * cnt)) / (-math.expm1(-a)))
            k = k1 + 1
    return P.PrivacyLossDistribution.create_from_rounded_probability(pmf, 0.0, PLD_INTERVAL, pessimistic_estimate=True)


def event_pld(ev: dict):
    """(PLD, own delta) of one event dict; raises BudgetError for an event that cannot be composed."""
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as P

    t = ev.get("type")
    own = float(ev.get("delta", 0.0) or 0.0)
    if t == "laplace":
        s, g, b = float(ev["l1_sensitivity"]), float(ev["grid_rounding"]), float(ev["noise_scale"])
        k, r = ev.get("coords"), ev.get("grid")
        if k == 1 and r:
            a = float(r) / b
            n = math.floor(s / float(r)) + 1
            if n * a <= (s + g) / b * (1 + 1e-12) and n <= 10 ** 15:
                return _dl_pld(a, n), own
        eps = (s + g) / b
        return P.from_privacy_parameters(common.DifferentialPrivacyParameters(eps * (1 + 1e-12), 0.0),
                                         value_discretization_interval=PLD_INTERVAL), own
    if t == "epsilon_delta":
        e, d = float(Decimal(str(ev["epsilon"]))), float(Decimal(str(ev["delta"])))
        return P.from_privacy_parameters(common.DifferentialPrivacyParameters(e, d),
                                         value_discretization_interval=PLD_INTERVAL), 0.0
    if t == "gdp":
        mu = float(ev["mu"])
        return P.from_gaussian_mechanism(1.0 / mu, sensitivity=1.0, value_discretization_interval=PLD_INTERVAL,
                                         use_connect_dots=True), own
    if t == "laplace_continuous":      # a continuous Laplace mechanism (e.g. dp-accounting's LaplaceDpEvent)
        return P.from_laplace_mechanism(float(ev["noise_multiplier"]), sensitivity=1.0,
                                        value_discretization_interval=PLD_INTERVAL), own
    if t == "gaussian":
        return P.from_gaussian_mechanism(float(ev["sigma"]), sensitivity=float(ev["l2_sensitivity"]),
                                         value_discretization_interval=PLD_INTERVAL, use_connect_dots=True), own
    if t == "discrete_gaussian":       # the (epsilon, delta) pair it is charged at dominates it
        from ..curves import RDP

        cd = float(ev["conversion_delta"])
        e = RDP.linear(float(ev["rho"])).epsilon(cd)
        return P.from_privacy_parameters(common.DifferentialPrivacyParameters(e * (1 + 1e-12), cd),
                                         value_discretization_interval=PLD_INTERVAL), own
    raise BudgetError(f"cannot compose a DP event of type {t!r}")


def event_rdp(ev: dict) -> tuple[float, float, float] | None:
    """(kappa, pure epsilon, own delta) of an event's Renyi curve ``alpha kappa + pure`` (valid for every
    alpha > 1), or None when the event has no RDP curve.  Pure epsilon-DP mechanisms take the constant curve
    ``epsilon`` (as the ledger's curve rule); zCDP / GDP mechanisms the linear one."""
    t = ev.get("type")
    own = float(ev.get("delta", 0.0) or 0.0)
    try:
        if t == "laplace":
            return 0.0, (float(ev["l1_sensitivity"]) + float(ev["grid_rounding"])) / float(ev["noise_scale"]) \
                * (1 + 1e-12), own
        if t == "discrete_gaussian":
            return float(ev["rho"]), 0.0, own
        if t == "gdp":
            return float(ev["mu"]) ** 2 / 2 * (1 + 1e-12), 0.0, own
        if t == "gaussian":
            return (float(ev["l2_sensitivity"]) / float(ev["sigma"])) ** 2 / 2 * (1 + 1e-12), 0.0, own
        if t == "laplace_continuous":
            return 0.0, 1.0 / float(ev["noise_multiplier"]) * (1 + 1e-12), own
        if t == "epsilon_delta" and Decimal(str(ev["delta"])) == 0:
            return 0.0, float(Decimal(str(ev["epsilon"]))) * (1 + 1e-12), 0.0
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return None


def rdp_composed_epsilon(events: list[dict], delta: float) -> float:
    """Epsilon at total ``delta`` of the composition of ``events`` by their Renyi curves.

    Args:
        events: DP event dicts (the ledger's ``dp_event`` entries, see the module docstring).
        delta: the total delta of the composition (the events' own deltas included).

    Returns:
        The composed epsilon; ``inf`` when an event has no Renyi curve, or when the events' own deltas use
        up ``delta``; ``0.0`` for no events.  Pure epsilon-DP events alone compose to the sum of their
        epsilons (times ``1 + 1e-12``, rounding up).

    Examples:
        >>> pure = {"type": "epsilon_delta", "epsilon": "0.5", "delta": "0"}
        >>> round(rdp_composed_epsilon([pure, pure], 1e-6), 6)
        1.0
        >>> rdp_composed_epsilon([{"type": "epsilon_delta", "epsilon": "0.5", "delta": "1e-6"}], 1e-6)
        inf
    """
    from ..curves import RDP, ApproxDP, compose

    if not events:
        return 0.0
    kappa = pure = own = 0.0
    for ev in events:
        c = event_rdp(ev)
        if c is None:
            return math.inf
        kappa, pure, own = kappa + c[0], pure + c[1], own + c[2]
    rest = delta - own
    if rest <= 0:
        return math.inf
    parts = []
    if kappa > 0:
        parts.append(RDP.linear(kappa))
    if pure > 0:
        parts.append(ApproxDP(pure, 0.0))
    if not parts:
        return 0.0
    if len(parts) == 1 and pure > 0:
        return pure
    return float(compose(parts).epsilon(rest))


def _key(ev: dict) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in ev.items()))


def composed_epsilon(events: list[dict], delta: float) -> float:
    """Epsilon of the composition of ``events`` at total ``delta`` (dp-accounting's PLD, pessimistic).

    Args:
        events: DP event dicts (the ledger's ``dp_event`` entries, see the module docstring).
        delta: the total delta of the composition (the events' own deltas included).

    Returns:
        The composed epsilon; ``inf`` if the events' own deltas use up ``delta``; ``0.0`` for no events.

    Raises:
        BudgetError: an event of a type that cannot be composed.

    Examples:
        Two pure 0.5-DP events compose to at most 1 (summation), slightly less at delta > 0:

        >>> pure = {"type": "epsilon_delta", "epsilon": "0.5", "delta": "0"}
        >>> eps = composed_epsilon([pure, pure], 1e-6)
        >>> 0.99 < eps <= 1.0
        True
        >>> composed_epsilon([], 1e-6)
        0.0
    """
    if not events:
        return 0.0
    counts: dict[tuple, list] = {}
    for ev in events:
        counts.setdefault(_key(ev), [ev, 0])[1] += 1
    total, own = None, 0.0
    for ev, cnt in counts.values():
        pld, d = event_pld(ev)
        own += d * cnt
        pld = pld.self_compose(cnt) if cnt > 1 else pld
        total = pld if total is None else total.compose(pld)
    rest = delta - own
    if rest <= 0:
        return math.inf
    return float(total.get_epsilon_for_delta(rest))


def dp_event_of(item: Any, delta: float | None = None) -> dict:
    """The event dict of a certificate (Certificate / BoundReport / ReleaseResult / PrivacyCurve), a
    dp-accounting ``DpEvent``, or an (epsilon, delta) pair."""
    from ..certificate import BoundReport, Certificate
    from ..curves import GDP, ApproxDP

    if isinstance(item, dict):
        return dict(item)
    if isinstance(item, tuple) and len(item) == 2:
        return {"type": "epsilon_delta", "epsilon": str(item[0]), "delta": str(item[1])}
    rel = getattr(item, "dp_event", None)
    if isinstance(rel, dict):
        return dict(rel)
    if isinstance(item, BoundReport):
        item = item.best
    if isinstance(item, Certificate):
        item = item.curve
    if isinstance(item, GDP):
        return {"type": "gdp", "mu": float(item.mu)}
    if isinstance(item, ApproxDP):
        return {"type": "epsilon_delta", "epsilon": repr(float(item.eps)), "delta": repr(float(item.delta))}
    try:
        from dp_accounting import dp_event as de
    except ImportError:  # pragma: no cover
        de = None
    if de is not None and isinstance(item, de.GaussianDpEvent):
        return {"type": "gaussian", "sigma": float(item.noise_multiplier), "l2_sensitivity": 1.0}
    if de is not None and isinstance(item, de.LaplaceDpEvent):
        return {"type": "laplace_continuous", "noise_multiplier": float(item.noise_multiplier)}
    curve = item
    if hasattr(curve, "epsilon") and delta is not None and delta > 0:
        # any other curve: its (epsilon, delta) point at the given delta
        return {"type": "epsilon_delta", "epsilon": repr(float(curve.epsilon(delta))), "delta": repr(float(delta))}
    raise BudgetError(f"cannot account for {type(item).__name__}: pass a certificate, a release, a DP event or an "
                      "(epsilon, delta) pair")


def charge_of(item: Any, budget_delta: Decimal, *, epsilon: Any = None, delta: Any = None
              ) -> tuple[Decimal, Decimal, dict]:
    """(epsilon, delta, event) to charge for ``item`` (see :meth:`PrivacyAccountant.spend`).

    The event's own (epsilon, delta) for Laplace and (epsilon, delta) events; a GDP or Gaussian event at
    ``delta`` (default: the budget's delta) for the summation rule, the PLD rule composing its exact curve.

    Args:
        item: a certificate (Certificate, BoundReport, PrivacyCurve), a release result, a DP event dict, a
            dp-accounting ``GaussianDpEvent`` / ``LaplaceDpEvent``, or an (epsilon, delta) pair.
        budget_delta: the budget's delta (the default point at which a curve is charged).
        epsilon: an epsilon to charge instead, when it is larger than the item's.
        delta: the delta at which a curve is charged (default: ``budget_delta``).

    Returns:
        (epsilon, delta, event dict) as charged.

    Raises:
        BudgetError: an item that cannot be accounted for.

    Examples:
        >>> from decimal import Decimal
        >>> charge_of((0.5, 1e-6), Decimal("1e-5"))
        (Decimal('0.5'), Decimal('0.000001'), {'type': 'epsilon_delta', 'epsilon': '0.5', 'delta': '1e-06'})
    """
    ev = dp_event_of(item, float(delta) if delta is not None else float(budget_delta) or None)
    if ev.get("type") == "epsilon_delta":
        e, d = Decimal(ev["epsilon"]), Decimal(ev["delta"])
    elif ev.get("type") == "laplace":
        e = Decimal(repr((float(ev["l1_sensitivity"]) + float(ev["grid_rounding"])) / float(ev["noise_scale"])))
        d = Decimal(repr(float(ev.get("delta", 0.0))))
    elif ev.get("type") == "laplace_continuous":
        e, d = Decimal(repr(1.0 / float(ev["noise_multiplier"]))), Decimal(0)
    elif ev.get("type") == "discrete_gaussian":
        from ..curves import RDP
        from .ledger import decimal_at_least

        cd = float(ev["conversion_delta"])
        e = decimal_at_least(RDP.linear(float(ev["rho"])).epsilon(cd))
        d = Decimal(cd) + Decimal(float(ev.get("delta", 0.0)))
    else:       # gdp / gaussian: charge their (epsilon, delta) at the budget's delta for summation
        from ..curves import GDP

        mu = float(ev["mu"]) if ev["type"] == "gdp" else float(ev["l2_sensitivity"]) / float(ev["sigma"])
        dd = float(delta) if delta is not None else (float(budget_delta) or 1e-9)
        e, d = Decimal(repr(float(GDP(mu).epsilon(dd)))), Decimal(repr(dd))
    if epsilon is not None:
        e = max(e, _dec(epsilon, "epsilon"))
    return e, d, ev


# ---------------------------------------------------------------------------
# admission


def _show(d: Decimal) -> str:
    """A decimal as written by a person: ``1.0 -> 1``, ``0.10 -> 0.1``, ``1E-5 -> 0.00001``."""
    return format(d.normalize(), "f") if d.is_finite() else str(d)


def _dec(x: Any, name: str) -> Decimal:
    from .ledger import to_decimal

    return to_decimal(x, name)


def fits(entries: list[dict], budget_epsilon: Decimal, budget_delta: Decimal) -> tuple[bool, dict]:
    """Whether charged ``entries`` fit the budget: summation, or (for delta budgets) the PLD or Renyi composition.

    Args:
        entries: dicts with decimal ``epsilon`` and ``delta`` and (optionally) a ``dp_event``.
        budget_epsilon: the budget's epsilon.
        budget_delta: the budget's delta.

    Returns:
        (fits, spent): ``spent`` holds ``epsilon_sum``, ``delta_sum`` and the composed ``epsilon_pld`` /
        ``epsilon_rdp`` (None when summation already fits or the budget is pure).

    Examples:
        >>> from decimal import Decimal
        >>> half = {"epsilon": Decimal("0.5"), "delta": Decimal(0)}
        >>> fits([half, half], Decimal(1), Decimal(0))[0]
        True
        >>> fits([half, half, half], Decimal(1), Decimal(0))
        (False, {'epsilon_sum': Decimal('1.5'), 'delta_sum': Decimal('0'), 'epsilon_pld': None, 'epsilon_rdp': None})
    """
    se = sum((Decimal(e["epsilon"]) for e in entries), Decimal(0))
    sd = sum((Decimal(e["delta"]) for e in entries), Decimal(0))
    spent = {"epsilon_sum": se, "delta_sum": sd, "epsilon_pld": None, "epsilon_rdp": None}
    if se <= budget_epsilon and sd <= budget_delta:
        return True, spent
    if budget_delta > 0:
        evs = [e.get("dp_event") or {"type": "epsilon_delta", "epsilon": str(e["epsilon"]), "delta": str(e["delta"])}
               for e in entries]
        from .ledger import float_at_most

        try:
            ep = composed_epsilon(evs, float_at_most(budget_delta))
        except BudgetError:
            ep = math.inf
        spent["epsilon_pld"] = ep
        if math.isfinite(ep) and Decimal(repr(ep)) <= budget_epsilon:
            return True, spent
        try:
            er = rdp_composed_epsilon(evs, float_at_most(budget_delta))
        except BayesDPError:
            er = math.inf
        spent["epsilon_rdp"] = er
        if math.isfinite(er) and Decimal(repr(er)) <= budget_epsilon:
            return True, spent
    return False, spent


# ---------------------------------------------------------------------------
# the in-memory accountant


@dataclass
class _Reservation:
    epsilon: Decimal
    delta: Decimal
    noise_epsilon: float
    drawn: bool = False
    released: dict | None = None
    summary: dict | None = None
    head: str | None = None

    def mark_drawn(self) -> None:
        self.drawn = True

    def commit(self, released: dict) -> None:
        self.released = dict(released)


@dataclass
class PrivacyAccountant:
    """A privacy budget in memory, with the interface of :class:`~bayesdp.budget.ledger.Ledger`.

    ``PrivacyAccountant(epsilon=3.0, delta=1e-5)``: releases and certificates are charged with
    :meth:`spend` (or by :func:`bayesdp.release`, which reserves before drawing noise); a charge that
    would exceed the budget raises :class:`~bayesdp.errors.BudgetError` and changes nothing.
    Pure-epsilon budgets (``delta=0``) compose by exact summation; (epsilon, delta) budgets also by the
    privacy loss distributions of the events (dp-accounting's PLD accountant).

    Examples:
        >>> acct = PrivacyAccountant(epsilon=1.0)
        >>> for _ in range(10):
        ...     _ = acct.spend((0.1, 0.0), what="a count")
        >>> acct.remaining()["epsilon"]
        0.0
        >>> acct.spend((0.1, 0.0))
        Traceback (most recent call last):
        ...
        bayesdp.errors.BudgetError: epsilon = 0.1, delta = 0 exceeds the budget (epsilon 1, delta 0; spent epsilon 1); nothing was charged
    """

    epsilon: Any
    delta: Any = 0.0
    entries: list = field(default_factory=list)

    def __post_init__(self):
        self.budget_epsilon = _dec(self.epsilon, "budget epsilon")
        self.budget_delta = _dec(self.delta, "budget delta")
        if not self.budget_epsilon > 0:
            raise BudgetError(f"epsilon = {self.epsilon!r} must be a positive budget")
        if not 0 <= self.budget_delta < 1:
            raise BudgetError(f"delta = {self.delta!r} must be in [0, 1)")
        self.path = None

    # -- the ledger's interface -------------------------------------------------
    def check(self, epsilon: Any, delta: Any = 0.0, curve=None, event: dict | None = None) -> dict:
        """Whether a charge of (epsilon, delta) (described by ``event``) would fit; charges nothing.

        Args:
            epsilon: the charge's epsilon.
            delta: its delta.
            curve: its privacy curve (unused here: the ledger's interface).
            event: the DP event (default: the (epsilon, delta) pair).

        Returns:
            the spent budget the charge would leave.

        Raises:
            BudgetError: it does not fit.
        """
        e, d = _dec(epsilon, "epsilon"), _dec(delta, "delta")
        entry = {"epsilon": e, "delta": d, "dp_event": event or {"type": "epsilon_delta", "epsilon": str(e),
                                                                  "delta": str(d)}}
        ok, spent = fits(self._charged() + [entry], self.budget_epsilon, self.budget_delta)
        if not ok:
            raise BudgetError(f"epsilon = {_show(e)}, delta = {_show(d)} exceeds the budget (epsilon "
                              f"{_show(self.budget_epsilon)}, delta {_show(self.budget_delta)}; spent epsilon "
                              f"{_show(Decimal(str(self.spent()['epsilon'])))}); nothing was charged")
        return spent

    @contextlib.contextmanager
    def reserve(self, epsilon: Any, delta: Any, mechanism: str, source: str, curve=None, what: str = "",
                event: dict | None = None) -> Iterator[_Reservation]:
        """Charge before the noise is drawn; refunded only if the block fails before ``mark_drawn``.

        A context manager, as :meth:`bayesdp.budget.ledger.Ledger.reserve`.

        Args:
            epsilon: the charge's epsilon.
            delta: its delta.
            mechanism: the mechanism's label.
            source: the certificate's source.
            curve: its privacy curve.
            what: what is released, in words.
            event: the DP event (default: the (epsilon, delta) pair).

        Returns:
            The reservation (``mark_drawn()``, ``noise_epsilon``, ``commit(released)``).

        Raises:
            BudgetError: the charge does not fit (nothing charged).
        """
        from .ledger import noise_epsilon

        self.check(epsilon, delta, curve, event)
        e, d = _dec(epsilon, "epsilon"), _dec(delta, "delta")
        entry = {"id": len(self.entries) + 1, "epsilon": e, "delta": d, "mechanism": mechanism, "source": source,
                 "what": what, "status": "pending", "dp_event": event or {"type": "epsilon_delta", "epsilon": str(e),
                                                                          "delta": str(d)}}
        self.entries.append(entry)
        res = _Reservation(e, d, noise_epsilon(e))
        try:
            yield res
        except BaseException:
            if res.drawn:
                entry["status"] = "aborted"
            else:
                self.entries.remove(entry)
            raise
        if res.released is not None:
            entry["status"], entry["released"] = "committed", res.released
        elif res.drawn:
            entry["status"] = "aborted"
        else:
            self.entries.remove(entry)
        res.summary = self.summary()

    def summary(self) -> dict:
        """Budget, spent, remaining and the entries, in the shape of :meth:`Ledger.summary`.

        Returns:
            ``budget``, ``spent``, ``remaining_budget``, ``entries`` and ``path`` (None).
        """
        rem = self.remaining()
        return {"budget": {"epsilon": float(self.budget_epsilon), "delta": float(self.budget_delta)},
                "spent": self.spent(), "remaining_budget": rem, "entries": [dict(e) for e in self.entries],
                "path": None}

    # -- the accountant's own interface ------------------------------------------------
    def _charged(self) -> list[dict]:
        return [e for e in self.entries if e["status"] != "cancelled"]

    def spend(self, item: Any, *, epsilon: Any = None, delta: Any = None, what: str = "") -> dict:
        """Charge ``item``: a certificate (its curve), a release result, a DP event, or an (epsilon, delta)
        pair.  For a certificate, ``delta`` chooses the point at which a non-GDP curve is charged (default:
        the budget's delta); ``epsilon`` overrides the charged epsilon (it must be at least the item's).

        Args:
            item: what to charge.
            epsilon: an epsilon to charge instead (at least the item's).
            delta: the delta at which a curve is charged.
            what: what was released, in words (recorded).

        Returns:
            :meth:`summary` after the charge.

        Raises:
            BudgetError: over budget (nothing charged), or an item that cannot be accounted for.
        """
        e, d, ev = charge_of(item, self.budget_delta, epsilon=epsilon, delta=delta)
        self.check(e, d, event=ev)
        entry = {"id": len(self.entries) + 1, "epsilon": e, "delta": d, "mechanism": ev.get("type", ""),
                 "source": type(item).__name__, "what": what, "status": "committed", "dp_event": ev}
        self.entries.append(entry)
        return self.summary()

    def spent(self) -> dict:
        """Spent budget: the sums, and the epsilon at the budget's delta of the PLD composition and of the Renyi
        composition (``epsilon``: the smallest of the rules).

        Returns:
            ``epsilon``, ``epsilon_sum``, ``delta_sum``, ``epsilon_pld`` and ``epsilon_rdp``.
        """
        from .ledger import float_at_most

        charged = self._charged()
        se = sum((Decimal(e["epsilon"]) for e in charged), Decimal(0))
        sd = sum((Decimal(e["delta"]) for e in charged), Decimal(0))
        ep = er = None
        if self.budget_delta > 0 and charged:
            evs = [e["dp_event"] for e in charged]
            try:
                ep = composed_epsilon(evs, float_at_most(self.budget_delta))
            except BudgetError:
                ep = None
            try:
                er = rdp_composed_epsilon(evs, float_at_most(self.budget_delta))
            except BayesDPError:
                er = None
            er = er if er is not None and math.isfinite(er) else None
        composed = min((x for x in (ep, er) if x is not None and math.isfinite(x)), default=None)
        best = float(se) if composed is None or not (se > self.budget_epsilon or sd > self.budget_delta) else composed
        if composed is not None and composed < float(se) * 0.999:   # as the ledger reports it
            best = composed
        return {"epsilon": best, "epsilon_sum": float(se), "delta_sum": float(sd), "epsilon_pld": ep,
                "epsilon_rdp": er}

    def remaining(self) -> dict:
        """What is left: ``{"epsilon": ..., "delta": ...}`` (by the rule that spends least).

        Returns:
            The remaining epsilon and delta.
        """
        s = self.spent()
        pld = s["epsilon"] in (s["epsilon_pld"], s["epsilon_rdp"]) and s["epsilon"] < s["epsilon_sum"]
        # the PLD rule prices the whole sequence at the budget's delta: no delta is left to spend separately
        return {"epsilon": max(0.0, float(self.budget_epsilon) - s["epsilon"]),
                "delta": 0.0 if pld else max(0.0, float(self.budget_delta) - s["delta_sum"])}
