"""004's constants *as printed*, kept for regression tests and the tightness benchmark only.

Never used to certify anything: SEEDS.md §6 rows 1–7 show that the proofs do not
support them (they understate epsilon).  See :mod:`bayesdp.theorems.girsanov`.
"""

from __future__ import annotations

import math


def _a(mu: float, L: float, gamma: float) -> float:
    return mu - gamma * L * L / 2.0


def C3_as_printed(c: float, L: float, mu: float, gamma: float) -> float:
    """004 Theorem 5.2: ``c^2 (2(L+1)/a + 1)^2``."""
    return c * c * (2.0 * (L + 1.0) / _a(mu, L, gamma) + 1.0) ** 2


def C6_as_printed(c: float, L: float, mu: float, gamma: float, beta: float) -> float:
    """004 Theorem 5.6: ``c^2 beta (2(L+1)/a + 1)^2``."""
    return beta * C3_as_printed(c, L, mu, gamma)


def C7_as_printed(c: float, L: float, mu: float, gamma: float, beta: float, s: int) -> float:
    """004 Theorem 5.7: ``(c^2 beta / s^2)(2(L+1)/a + 1)^2``."""
    return C6_as_printed(c, L, mu, gamma, beta) / (s * s)


def eps_delta_C4_form(C: float, delta: float) -> float:
    """``C/4 + sqrt(C log(1/delta))`` (Theorems 5.2, 5.4, 5.6)."""
    return C / 4.0 + math.sqrt(C * math.log(1.0 / delta))


def eps_delta_C_form(C: float, delta: float) -> float:
    """``C + sqrt(C log(1/delta))`` as printed in Theorems 5.7 and 5.8."""
    return C + math.sqrt(C * math.log(1.0 / delta))


def C4_as_printed(c: float, L: float, mu: float) -> float:
    """004 after Theorem 5.2: ``c (2(L+1)/mu + 1)`` (not squared: SEEDS §4.16(e))."""
    return c * (2.0 * (L + 1.0) / mu + 1.0)
