"""Certificates: immutable values carrying a privacy curve and where it came from.

A [`Certificate`][bayesdp.certificate.Certificate] is one *route*: one theorem applied to one set of named
constants.  Invalid routes are certificates too (``valid=False`` with a
``reason``), so that a report never silently drops a route.  A
[`BoundReport`][bayesdp.certificate.BoundReport] gathers the routes of one mechanism and picks ``best``: the
smallest valid, certified bound at the query point (the minimum of valid upper
bounds is a valid upper bound).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .curves import REPORT_ALPHAS, PrivacyCurve, _json_float
from .errors import AssumptionError, check_finite, probability_open
from .curves import GDP, ApproxDP
from .errors import BayesDPError
from .exact import mp_down

__all__ = ["Certificate", "BoundReport", "curve_dp_event"]


@dataclass(frozen=True)
class Certificate:
    """One route: a theorem applied to named constants, and the privacy curve it proves.

    Args:
        mechanism: what ran, e.g. ``"ula-final"``.
        source: the theorem, exactly as in the seed papers' list, e.g. ``"004 Theorem 5.2"``.
        curve: the proven curve (``None`` for an invalid route).
        assumptions: the hypotheses with their values (JSON-ready).
        constants: the constants the bound used.
        certified: ``False`` for estimates that are not proven bounds (shown, never chosen as best).
        valid: ``False`` when a hypothesis fails; ``reason`` then says which.
        reason: why the route is not valid.
        notes: free text for readers.

    Examples:
        >>> from bayesdp.certificate import Certificate
        >>> from bayesdp.curves import GDP
        >>> c = Certificate("gaussian", "Dong-Roth-Su Cor. 2.13", GDP(1.0), constants={"mu": 1.0})
        >>> round(c.epsilon(1e-5), 4), c.gdp_mu
        (4.3772, 1.0)
        >>> bad = Certificate.invalid("gaussian", "some theorem", "step_size = 2 must be < 1")
        >>> bad.valid, bad.epsilon(1e-5)
        (False, inf)
    """

    mechanism: str
    source: str
    curve: PrivacyCurve | None
    assumptions: Mapping[str, Any] = field(default_factory=dict)
    constants: Mapping[str, float] = field(default_factory=dict)
    certified: bool = True
    valid: bool = True
    reason: str | None = None
    notes: str = ""

    @staticmethod
    def invalid(mechanism: str, source: str, reason: str, assumptions: Mapping[str, Any] | None = None,
                certified: bool = True) -> "Certificate":
        """A route whose hypotheses fail: kept in reports with its ``reason``, never chosen as best.

        Args:
            mechanism: what ran.
            source: the theorem that does not apply.
            reason: why (one line).
            assumptions: the hypotheses with their values.
            certified: ``False`` for an estimate.

        Returns:
            a certificate with ``valid=False`` and no curve.

        Examples:
            >>> bad = Certificate.invalid("ula-final", "004 Theorem 5.2", "step_size = 0.7 must be < 0.5")
            >>> bad.valid, bad.reason, bad.epsilon(1e-5)
            (False, 'step_size = 0.7 must be < 0.5', inf)
        """
        return Certificate(mechanism=mechanism, source=source, curve=None,
                           assumptions=dict(assumptions or {}), valid=False, reason=reason,
                           certified=certified)

    # -- queries ---------------------------------------------------------
    # A query whose arithmetic leaves the float range (overflow in a conversion at extreme constants)
    # answers the trivial bound (epsilon = inf, delta = 1): always true, never a traceback.
    def epsilon(self, delta: float) -> float:
        """epsilon at ``delta`` (``math.inf`` for an invalid route).

        A query whose arithmetic leaves the float range answers the trivial bound ``math.inf``.

        Args:
            delta: in (0, 1).

        Returns:
            an upper bound of epsilon.

        Raises:
            AssumptionError: delta not in (0, 1).

        Examples:
            >>> from bayesdp.curves import GDP
            >>> cert = Certificate("gaussian", "Dong-Roth-Su Cor. 2.13", GDP(1.0))
            >>> round(cert.epsilon(1e-5), 4)
            4.3772
        """
        if not self.valid or self.curve is None:
            return math.inf
        return _guarded(self.curve.epsilon, delta, math.inf)

    def delta(self, epsilon: float) -> float:
        """delta at ``epsilon`` (1 for an invalid route).

        Args:
            epsilon: >= 0.

        Returns:
            an upper bound of delta.

        Raises:
            AssumptionError: epsilon negative or not finite.

        Examples:
            >>> from bayesdp.curves import GDP
            >>> cert = Certificate("gaussian", "Dong-Roth-Su Cor. 2.13", GDP(1.0))
            >>> round(cert.delta(1.0), 5)
            0.12694
        """
        if not self.valid or self.curve is None:
            return 1.0
        return _guarded(self.curve.delta, epsilon, 1.0)

    def rdp(self, alpha: float) -> float:
        """The Renyi-DP value at order ``alpha`` (``math.inf`` if unknown or invalid).

        Args:
            alpha: the Renyi order > 1.

        Returns:
            eps(alpha).

        Raises:
            AssumptionError: alpha <= 1.

        Examples:
            >>> from bayesdp.curves import GDP
            >>> cert = Certificate("gaussian", "Dong-Roth-Su Cor. 2.13", GDP(1.0))
            >>> cert.rdp(2.0)                                  # alpha mu^2 / 2
            1.0
        """
        if not self.valid or self.curve is None:
            return math.inf
        return _guarded(self.curve.rdp, alpha, math.inf)

    @property
    def gdp_mu(self) -> float | None:
        """mu when the curve is mu-GDP, else ``None``.

        Examples:
            >>> from bayesdp.curves import GDP
            >>> cert = Certificate("gaussian", "Dong-Roth-Su Cor. 2.13", GDP(1.0))
            >>> cert.gdp_mu, Certificate.invalid("gaussian", "x", "no").gdp_mu
            (1.0, None)
        """
        return None if self.curve is None else self.curve.gdp_mu

    def to_dp_event(self):
        """This certificate as a dp-accounting ``DpEvent``, for composing with other mechanisms there.

        A mu-GDP curve is exactly the Gaussian mechanism of sensitivity 1 and noise multiplier 1/mu
        (Dong, Roth & Su 2022, Definition 2.7): ``GaussianDpEvent(1/mu)``.  A pure epsilon-DP curve is
        dominated by binary randomised response (Kairouz, Oh & Viswanath 2015):
        ``RandomizedResponseDpEvent(2 / (1 + e^epsilon), 2)``, which dp-accounting composes under
        ``NeighboringRelation.REPLACE_ONE`` (the seeds' neighbouring relation).  Any other curve has no exact
        event and gives ``UnsupportedDpEvent``; compose it with ``bayesdp.PrivacyAccountant``.

        Raises:
            AssumptionError: the route is invalid (nothing is proven).

        Examples:
            >>> from bayesdp.curves import GDP
            >>> Certificate("gaussian", "Dong-Roth-Su Cor. 2.13", GDP(0.5)).to_dp_event()
            GaussianDpEvent(noise_multiplier=2.0)
        """
        return curve_dp_event(self.curve, what=f"certificate {self.mechanism!r} ({self.source})",
                              reason=None if self.valid else self.reason)

    def to_dict(self, *, delta: float | None = None, epsilon: float | None = None) -> dict:
        """JSON shape shared by ``bayesdp bound``, ``certify`` and the samplers.

        Args:
            delta: query the curve at this delta (fills ``epsilon``) ...
            epsilon: ... or at this epsilon (fills ``delta``); neither: no query.

        Returns:
            a dict with mechanism, source, valid, certified, epsilon, delta, rdp, gdp_mu, reason,
                constants and assumptions (non-finite numbers as ``None``).

        Raises:
            AssumptionError: the query is out of range.

        Examples:
            >>> from bayesdp.curves import GDP
            >>> cert = Certificate("gaussian", "Dong-Roth-Su Cor. 2.13", GDP(1.0))
            >>> d = cert.to_dict(delta=1e-5)
            >>> d["source"], round(d["epsilon"], 4), d["rdp"][1]
            ('Dong-Roth-Su Cor. 2.13', 4.3772, [2.0, 1.0])
        """
        out: dict[str, Any] = {
            "mechanism": self.mechanism,
            "source": self.source,
            "valid": bool(self.valid),
            "certified": bool(self.certified),
            "epsilon": None,
            "delta": None,
            "rdp": None,
            "gdp_mu": None,
            "reason": self.reason,
        }
        if self.valid and self.curve is not None:
            if delta is not None:
                out["delta"] = float(delta)
                out["epsilon"] = _json_float(self.epsilon(delta))
            elif epsilon is not None:
                out["epsilon"] = float(epsilon)
                out["delta"] = _json_float(self.delta(epsilon))
            out["rdp"] = ([[float(a), _json_float(self.rdp(a))] for a in REPORT_ALPHAS]
                          if self.curve.has_rdp else None)
            out["gdp_mu"] = self.curve.gdp_mu
            out["curve"] = self.curve.describe()
        out["constants"] = {k: _jsonable(v) for k, v in self.constants.items()}
        out["assumptions"] = {k: _jsonable(v) for k, v in self.assumptions.items()}
        if self.notes:
            out["notes"] = self.notes
        return out


def curve_dp_event(curve: PrivacyCurve | None, what: str = "curve", reason: str | None = None):
    """The dp-accounting ``DpEvent`` of a privacy curve (see
    [`Certificate.to_dp_event`][bayesdp.certificate.Certificate.to_dp_event]).

    Args:
        curve: the curve; [`GDP`][bayesdp.curves.GDP] and pure [`ApproxDP`][bayesdp.curves.ApproxDP] have
            exact events, any other curve gives ``UnsupportedDpEvent``.
        what: names the curve in the error message.
        reason: why the curve is not valid (an invalid route); ``None`` for a valid one.

    Returns:
        ``GaussianDpEvent(1/mu)``, ``RandomizedResponseDpEvent(2/(1 + e^eps), 2)`` or
            ``UnsupportedDpEvent()``.

    Raises:
        AssumptionError: ``curve`` is ``None`` or ``reason`` is given (nothing is proven).

    Examples:
        >>> from bayesdp.curves import GDP, ApproxDP
        >>> curve_dp_event(GDP(2.0))
        GaussianDpEvent(noise_multiplier=0.5)
        >>> curve_dp_event(ApproxDP(1.0))          # noise parameter 2 / (1 + e), rounded down
        RandomizedResponseDpEvent(noise_parameter=0.5378828427399902, num_buckets=2)
    """
    from dp_accounting import dp_event

    if curve is None or reason is not None:
        raise AssumptionError(f"{what} is not valid ({reason or 'no curve'}); it proves nothing to compose")
    if isinstance(curve, GDP):
        nm = 1.0 / float(curve.mu)                       # rounded down: a larger multiplier would claim more noise
        if Fraction(nm) * Fraction(float(curve.mu)) > 1:
            nm = math.nextafter(nm, 0.0)
        return dp_event.GaussianDpEvent(noise_multiplier=nm)
    if isinstance(curve, ApproxDP) and curve.delta0 == 0:
        import mpmath

        with mpmath.workdps(50):                         # 2 / (1 + e^eps), rounded down (more noise claims less)
            p = mp_down(2 / (1 + mpmath.exp(mpmath.mpf(float(curve.eps0)))))
        return dp_event.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=2)
    return dp_event.UnsupportedDpEvent()


def numerical_failure(exc: BaseException) -> str:
    """One line for an arithmetic failure (overflow, division by an underflowed constant).

    Args:
        exc: the exception a route's arithmetic raised.

    Returns:
        the reason recorded in the invalid certificate.

    Examples:
        >>> numerical_failure(OverflowError("math range error"))[:53]
        'not computable in double precision for these constant'
    """
    first = (str(exc).strip().splitlines() or [""])[0][:120]
    return (f"not computable in double precision for these constants ({type(exc).__name__}: {first}); "
            "the constants are outside the float range")


def _guarded(query, arg: float, trivial: float) -> float:
    """``query(arg)``; the trivial bound when its float arithmetic fails (BayesDPError propagates)."""

    try:
        return query(arg)
    except BayesDPError:
        raise
    except (ArithmeticError, ValueError):
        return trivial


def _jsonable(v: Any) -> Any:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return _json_float(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    try:
        return _json_float(float(v))
    except (TypeError, ValueError):
        return str(v)


def _score(cert: Certificate, delta: float | None, epsilon: float | None) -> float:
    if delta is not None:
        return cert.epsilon(delta)
    return cert.delta(epsilon)


@dataclass(frozen=True)
class BoundReport:
    """All routes considered for one mechanism, queried at one point (exactly one of ``delta`` and
    ``epsilon``); ``best`` is the smallest valid certified bound there.

    Args:
        mechanism: the mechanism's name.
        parameters: the constants it was asked about.
        certificates: every route, valid or not.
        delta: query epsilon at this delta ...
        epsilon: ... or delta at this epsilon.

    Raises:
        AssumptionError: both or neither of delta and epsilon, delta not in (0, 1) or epsilon <= 0.

    Examples:
        >>> import bayesdp
        >>> report = bayesdp.bound("ula-path", grad_diff=1.0, step_size=0.01, num_steps=1000, delta=1e-5)
        >>> report.best.source, round(report.value(), 4)
        ('GDP composition of the path (Dong-Roth-Su Cor. 3.3)', 11.48)
    """

    mechanism: str
    parameters: Mapping[str, Any]
    certificates: Sequence[Certificate]
    delta: float | None = None
    epsilon: float | None = None

    def __post_init__(self):
        if (self.delta is None) == (self.epsilon is None):
            raise AssumptionError("a bound query needs exactly one of --delta and --epsilon")
        if self.delta is not None:
            object.__setattr__(self, "delta", probability_open(
                "delta", self.delta, "pass a delta strictly between 0 and 1, e.g. 1e-5"))
        else:
            e = check_finite("epsilon", self.epsilon)
            if e <= 0:
                raise AssumptionError(f"epsilon = {e:.6g} must be > 0; pass a positive epsilon")
            object.__setattr__(self, "epsilon", e)

    @property
    def valid_certificates(self) -> list[Certificate]:
        """The routes that are valid and certified (estimates excluded).

        Examples:
            >>> import bayesdp
            >>> report = bayesdp.bound("ula-path", grad_diff=1.0, step_size=0.01, num_steps=100, delta=1e-5)
            >>> [c.source for c in report.valid_certificates]
            ['004 Theorem 5.4', 'GDP composition of the path (Dong-Roth-Su Cor. 3.3)']
        """
        return [c for c in self.certificates if c.valid and c.certified]

    @functools.cached_property
    def best(self) -> Certificate | None:
        """The valid certified route with the smallest epsilon (or delta) at the query; ``None`` if none (computed
        once: the report is immutable, and calibration asks for it several times per configuration).

        Examples:
            >>> import bayesdp
            >>> report = bayesdp.bound("ula-path", grad_diff=1.0, step_size=0.01, num_steps=100, delta=1e-5)
            >>> report.best.source, round(report.best.gdp_mu, 6)      # sqrt(100 * 0.01 / 2)
            ('GDP composition of the path (Dong-Roth-Su Cor. 3.3)', 0.707107)
        """
        cands = self.valid_certificates
        if not cands:
            return None
        return min(cands, key=lambda c: _score(c, self.delta, self.epsilon))

    def value(self) -> float:
        """The best route's epsilon at ``delta`` (or delta at ``epsilon``); inf (or 1) without one.

        Returns:
            the reported epsilon (or delta).

        Examples:
            >>> import bayesdp
            >>> report = bayesdp.bound("ula-path", grad_diff=1.0, step_size=0.01, num_steps=100, delta=1e-5)
            >>> round(report.value(), 4)
            2.9432
        """
        b = self.best
        if b is None:
            return math.inf if self.delta is not None else 1.0
        return _score(b, self.delta, self.epsilon)

    def to_dict(self) -> dict:
        """The JSON of ``bayesdp bound --json``: parameters, the query, ``best`` and every route.

        Returns:
            ``{"mechanism", "parameters", "delta", "epsilon", "best", "certificates"}``.

        Examples:
            >>> import bayesdp
            >>> report = bayesdp.bound("ula-path", grad_diff=1.0, step_size=0.01, num_steps=100, delta=1e-5)
            >>> d = report.to_dict()
            >>> d["parameters"]["num_steps"], round(d["epsilon"], 4), len(d["certificates"])
            (100, 2.9432, 2)
        """
        best = self.best
        q = {"delta": self.delta} if self.delta is not None else {"epsilon": self.epsilon}
        out = {
            "mechanism": self.mechanism,
            "parameters": {k: _jsonable(v) for k, v in self.parameters.items()},
            "delta": self.delta,
            "epsilon": self.epsilon,
            "best": None if best is None else best.to_dict(**q),
            "certificates": [c.to_dict(**q) for c in self.certificates],
        }
        if self.delta is not None:
            out["epsilon"] = _json_float(self.value())
        else:
            out["delta"] = _json_float(self.value())
        return out

    def table(self) -> str:
        """A readable table of every route, best first-marked.

        Returns:
            the table printed by ``bayesdp bound``.

        Examples:
            >>> import bayesdp
            >>> report = bayesdp.bound("ula-path", grad_diff=1.0, step_size=0.01, num_steps=100, delta=1e-5)
            >>> print(report.table().splitlines()[-1])
            best (GDP composition of the path (Dong-Roth-Su Cor. 3.3)): epsilon = 2.94323   (* marks the best route)
        """
        best = self.best
        query = f"delta = {self.delta:.3g}" if self.delta is not None else f"epsilon = {self.epsilon:.6g}"
        col = "epsilon" if self.delta is not None else "delta"
        rows = []
        for c in self.certificates:
            if c.valid:
                v = _score(c, self.delta, self.epsilon)
                val = f"{v:.6g}"
                status = "certified" if c.certified else "ESTIMATE (not certified)"
            else:
                val = "-"
                status = "not valid: " + (c.reason or "")
            mark = "*" if best is not None and c is best else " "
            mu = f"{c.gdp_mu:.6g}" if c.gdp_mu is not None else "-"
            rows.append((mark, c.source, val, mu, status))
        w_src = max([len("route (source)")] + [len(r[1]) for r in rows])
        w_val = max([len(col)] + [len(r[2]) for r in rows])
        w_mu = max([len("GDP mu")] + [len(r[3]) for r in rows])
        lines = [f"{self.mechanism}: privacy at {query}"]
        header = f"  {'route (source)':<{w_src}}  {col:>{w_val}}  {'GDP mu':>{w_mu}}  status"
        lines += [header, "  " + "-" * (len(header) - 2)]
        for mark, src, val, mu, status in rows:
            lines.append(f"{mark} {src:<{w_src}}  {val:>{w_val}}  {mu:>{w_mu}}  {status}")
        if best is None:
            lines.append("no valid certificate")
        else:
            v = self.value()
            lines.append(f"best ({best.source}): {col} = {v:.6g}   (* marks the best route)")
        return "\n".join(lines)
