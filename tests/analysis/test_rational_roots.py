"""Issue 23: robust losses with a square root (pseudo-Huber, ``sqrt(c + r^2)``) and log-cosh certify with the
true maximum gradient; what only looks like them is refused or bounded soundly.

The derivative of ``sqrt(1 + r^2)`` is ``r / sqrt(1 + r^2)`` (JAX writes ``(2 r t) * (0.5 / sqrt(1 + r^2))``):
a rational function of ``r`` times ``sqrt(R(r))^e``, bounded over the reals although ``r`` is not
(``structure/rational.py``: ``_enclose_root``; derivation in docs/analysis.md, "A tangent times a rational
function"). The models, records and the independent true maximum (central differences in float64 NumPy) are those
of test_select_piecewise.py; ``_enclose_root`` itself is checked against dense float64 evaluations."""

from fractions import Fraction

import jax.numpy as jnp
import numpy as np
import pytest

from bayesdp.analysis.structure.rational import _enclose_root
from test_select_piecewise import _analyse, _certifies_tightly, _refused


@pytest.mark.parametrize("d", [1.0, 0.5, 2.0])
def test_pseudo_huber_certifies_at_its_maximum(d):
    """rho(r) = d^2 (sqrt(1 + (r/d)^2) - 1): rho' = r / sqrt(1 + (r/d)^2), |rho'| < d, approached as |r| -> inf
    (the grid's end, |r| = 60, is within 0.02% of d at d = 1; the analyzer's bound is d itself, up to rounding).
    Refused before (the interval bound of r times that of 1 / sqrt(...) was infinite)."""
    G, true = _certifies_tightly(lambda r: d * d * (jnp.sqrt(1.0 + (r / d) ** 2) - 1.0),
                                 lambda r: d * d * (np.sqrt(1.0 + (r / d) ** 2) - 1.0), span=2000.0)
    _, R = _analyse(lambda r: r)
    assert G <= d * R * (1 + 1e-6) and true <= d * R


@pytest.mark.parametrize("c, slack", [(1.0, 1e-6), (0.01, 1e-2)])
def test_square_root_of_c_plus_r_squared(c, slack):
    """rho(r) = sqrt(c + r^2) (the smooth absolute value): rho' = r / sqrt(c + r^2), |rho'| < 1 for every c > 0.
    At c = 0.01 the derivative rises from -1 to 1 within |r| < 0.1, about 25 of the 2048 pieces on |r| <= 4, so the
    enclosure of g^2 = r^2 / (c + r^2) is looser there (0.3% measured; within 1% asserted)."""
    G, _ = _certifies_tightly(lambda r: jnp.sqrt(c + r * r), lambda r: np.sqrt(c + r * r), span=2000.0)
    _, R = _analyse(lambda r: r)
    assert G <= R * (1 + slack)


def test_rsqrt_written_loss():
    """rho(r) = -rsqrt(1 + r^2) (a bounded 'inverse multiquadric'): rho' = r / (1 + r^2)^(3/2), largest at
    r = 1/sqrt(2): 2 / 3^(3/2)."""
    import jax.lax as lax
    G, true = _certifies_tightly(lambda r: -lax.rsqrt(1.0 + r * r), lambda r: -1.0 / np.sqrt(1.0 + r * r))
    assert true == pytest.approx(2 / 3 ** 1.5, rel=1e-6)


def test_log_cosh_certifies_at_its_maximum():
    """rho(r) = logaddexp(r, -r) = log(2 cosh r): rho' = tanh r, |rho'| < 1; JAX's derivative is
    exp(r - l) - exp(-r - l), each exponent <= 0 for every r (the gap rule, b unbounded)."""
    G, true = _certifies_tightly(lambda r: jnp.logaddexp(r, -r), lambda r: np.logaddexp(r, -r), span=40.0)
    _, R = _analyse(lambda r: r)
    assert G <= R * (1 + 1e-6)


@pytest.mark.parametrize("loss", [
    lambda r: jnp.sqrt(1.0 + r ** 4),             # rho' = 2 r^3 / sqrt(1 + r^4): grows like 2 r
    lambda r: r * jnp.sqrt(1.0 + r * r),          # rho' = sqrt(1 + r^2) + r^2 / sqrt(1 + r^2): grows like 2 r
    lambda r: jnp.sqrt(1.0 + r * r) + 0.001 * r ** 2,   # a bounded root plus a growing square
], ids=["quartic-radicand", "r-times-root", "root-plus-square"])
def test_unbounded_roots_are_refused(loss):
    _refused(loss, ["unbounded"])


def test_two_radicands_are_not_claimed():
    """r / sqrt(1 + r^2) + r / sqrt(2 + r^2) is bounded (by 2) but has two radicands: the rule claims nothing;
    whatever else bounds it must be sound."""
    rep, R = _analyse(lambda r: jnp.sqrt(1.0 + r * r) + jnp.sqrt(2.0 + r * r))
    G = rep.constants.record_grad_bound
    assert G is None or G >= 2.0 * R * (1 - 1e-3)


def test_a_radicand_that_vanishes_or_is_negative_is_refused():
    """sqrt(r^2 - 1) is NaN for |r| < 1 and its derivative r / sqrt(r^2 - 1) unbounded at |r| = 1: no claim
    (R has zeros on the interval); sqrt(-1 - r^2) is NaN everywhere (R < 0 throughout)."""
    P, Q = (Fraction(0), Fraction(1)), (Fraction(1),)
    assert _enclose_root(P, (Fraction(-1), Fraction(0), Fraction(1)), 1, (Fraction(-1), Fraction(0), Fraction(1)),
                         -np.inf, np.inf) is None
    assert _enclose_root(P, Q, 1, (Fraction(-1), Fraction(0), Fraction(-1)), -np.inf, np.inf) is None
    # on [2, inf), r^2 - 1 > 0: r / sqrt(r^2 - 1) decreases from 2 / sqrt(3) to 1
    got = _enclose_root(P, (Fraction(-1), Fraction(0), Fraction(1)), 1, (Fraction(-1), Fraction(0), Fraction(1)),
                        2.0, np.inf)
    assert got is not None and got[0] <= 1.0 and 2 / np.sqrt(3) <= got[1] <= 2 / np.sqrt(3) * (1 + 1e-3)


def _poly(c):
    return tuple(Fraction(float(x)) for x in c)


@pytest.mark.parametrize("seed", range(8))
def test_enclose_root_contains_every_value(seed):
    """Random g = P / Q * sqrt(R)^e over random intervals (bounded, half-bounded, the whole line), R > 0 by
    construction (a square plus a positive constant): the enclosure holds every value of g on a dense float64 grid
    of the interval (the ends of infinite ones at +-1e6); and the same with R's constant made negative enough to
    give R a zero is refused or still holds every value where R > 0."""
    rng = np.random.default_rng(seed)
    for _ in range(12):
        a, b, c0 = rng.uniform(0.1, 3.0), rng.uniform(-2, 2), rng.uniform(0.05, 2.0)
        R = _poly([a * b * b + c0, -2 * a * b, a])                # a (r - b)^2 + c0 > 0
        e = int(rng.integers(2))
        P = _poly(rng.integers(-3, 4, size=int(rng.integers(1, 3))))
        Q = _poly([rng.uniform(0.5, 2.0), 0.0, rng.uniform(0.5, 2.0)])   # q0 + q2 r^2 > 0
        kind = int(rng.integers(3))
        lo, hi = sorted(rng.uniform(-5, 5, size=2))
        lo, hi = [(lo, hi), (lo, np.inf), (-np.inf, np.inf)][kind]
        got = _enclose_root(P, Q, e, R, lo, hi)
        xs = np.linspace(max(lo, -1e6), min(hi, 1e6), 200_001)
        xs = np.concatenate([xs, np.geomspace(1, 1e6, 2001) * (1 if hi == np.inf else 0)])
        xs = xs[(xs >= lo) & (xs <= hi)]
        ev = lambda p, x: sum(float(k) * x ** i for i, k in enumerate(p))
        g = ev(P, xs) / ev(Q, xs) * (np.sqrt(ev(R, xs)) if e else 1.0)
        deg_ok = (2 * (len(P) - 1) + e * 2 <= 2 * (len(Q) - 1)) or np.isfinite(hi) and np.isfinite(lo)
        if got is None:
            assert not deg_ok, (P, Q, e, R, lo, hi)          # bounded there: the rule must answer
            continue
        tol = 1e-9 * max(1.0, float(np.max(np.abs(g))))
        assert got[0] - tol <= np.min(g) and np.max(g) <= got[1] + tol, (P, Q, e, R, lo, hi, got)
