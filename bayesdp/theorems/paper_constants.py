"""004's constants *as printed*, kept for regression tests and the tightness benchmark only.

Never used to certify anything: SEEDS.md §6 rows 1–7 show that the proofs do not
support them (they understate epsilon).  See [`bayesdp.theorems.girsanov`][bayesdp.theorems.girsanov].
"""

from __future__ import annotations

import math

__all__ = ["C3_as_printed", "C4_as_printed", "C6_as_printed", "C7_as_printed", "eps_delta_C4_form",
           "eps_delta_C_form"]


def _a(mu: float, L: float, gamma: float) -> float:
    return mu - gamma * L * L / 2.0


def C3_as_printed(c: float, L: float, mu: float, gamma: float) -> float:
    """004 Theorem 5.2 as printed: ``c^2 (2(L+1)/a + 1)^2``, ``a = mu - gamma L^2/2`` (NOT supported, SEEDS §6 row 1).

    Args:
        c: the gradient bound of V.
        L: the smoothness of K.
        mu: the strong convexity of K.
        gamma: the step size.

    Returns:
        the printed constant (no validation: regression use only).

    Examples:
        SEEDS §4.11 (c = 1, L = 2, mu = 1, gamma = 0.1): printed C3 = 72.25 (supported C3* = 90.25).

        >>> C3_as_printed(1.0, 2.0, 1.0, 0.1)
        72.25
    """
    return c * c * (2.0 * (L + 1.0) / _a(mu, L, gamma) + 1.0) ** 2


def C6_as_printed(c: float, L: float, mu: float, gamma: float, beta: float) -> float:
    """004 Theorem 5.6 as printed: ``c^2 beta (2(L+1)/a + 1)^2`` (NOT supported, SEEDS §6 row 2).

    Args:
        c: the gradient bound of v.
        L: the smoothness of k.
        mu: the strong convexity of k.
        gamma: the step size.
        beta: the inverse temperature.

    Returns:
        the printed constant.

    Examples:
        >>> C6_as_printed(1.0, 2.0, 1.0, 0.1, beta=2.0)   # 2 * 72.25
        144.5
    """
    return beta * C3_as_printed(c, L, mu, gamma)


def C7_as_printed(c: float, L: float, mu: float, gamma: float, beta: float, s: int) -> float:
    """004 Theorem 5.7 as printed: ``(c^2 beta / s^2)(2(L+1)/a + 1)^2`` (NOT supported, SEEDS §6 row 4).

    Args:
        c: the gradient bound of v.
        L: the smoothness of k.
        mu: the strong convexity of k.
        gamma: the step size.
        beta: the inverse temperature.
        s: the batch size.

    Returns:
        the printed constant.

    Examples:
        SEEDS §4.14 (c = 1, beta = 1, s = 100, L = mu = 1, gamma = 1e-3, delta = 1e-5): the printed
        eps_delta 0.172223 understates the supported 0.204553.

        >>> C7 = C7_as_printed(1.0, 1.0, 1.0, 1e-3, beta=1.0, s=100)
        >>> round(eps_delta_C_form(C7, 1e-5), 6), round(eps_delta_C4_form(C7, 1e-5), 6)
        (0.172223, 0.170347)
    """
    return C6_as_printed(c, L, mu, gamma, beta) / (s * s)


def eps_delta_C4_form(C: float, delta: float) -> float:
    """``C/4 + sqrt(C log(1/delta))`` (Theorems 5.2, 5.4, 5.6; Mironov's conversion of ``alpha C/4``).

    Args:
        C: the constant.
        delta: in (0, 1).

    Returns:
        epsilon.

    Examples:
        >>> round(eps_delta_C4_form(72.25, 1e-5), 4)     # SEEDS §4.11, printed C3
        46.9036
    """
    return C / 4.0 + math.sqrt(C * math.log(1.0 / delta))


def eps_delta_C_form(C: float, delta: float) -> float:
    """``C + sqrt(C log(1/delta))`` as printed in Theorems 5.7 and 5.8 (inconsistent with their RDP curves).

    Args:
        C: the constant.
        delta: in (0, 1).

    Returns:
        epsilon.

    Examples:
        >>> round(eps_delta_C_form(0.1, 1e-5), 6)         # SEEDS §4.15: C8 = 0.1
        1.172983
    """
    return C + math.sqrt(C * math.log(1.0 / delta))


def C4_as_printed(c: float, L: float, mu: float) -> float:
    """004 after Theorem 5.2: ``c (2(L+1)/mu + 1)`` (not squared: SEEDS §4.16(e)).

    Args:
        c: the gradient bound of V.
        L: the smoothness of K.
        mu: the strong convexity of K.

    Returns:
        the printed constant.

    Examples:
        >>> C4_as_printed(0.5, 1.0, 1.0)                  # SEEDS §4.16(e); the squared, 2c form gives 9.0
        2.5
    """
    return c * (2.0 * (L + 1.0) / mu + 1.0)
