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


def test_log_of_cosh_is_refused_with_the_logaddexp_rewrite():
    """log(cosh(r)) computes cosh, which overflows in float32 for |r| > 89 (JAX's derivative sinh/cosh is then
    inf/inf, NaN): refused, and the message gives the rewrite that certifies (the test above), as code; a loss
    without cosh gets no such advice."""
    _refused(lambda r: jnp.log(jnp.cosh(r)), ["unbounded", "jnp.logaddexp(r, -r) - jnp.log(2.0)", "overflows"])
    r = np.float32(100.0)
    with np.errstate(all="ignore"):
        assert np.isnan(np.sinh(r) / np.cosh(r))          # the float32 derivative there
    rep, _ = _analyse(lambda r: r ** 4)
    assert "jnp.logaddexp(r, -r)" not in rep.unproven[0].reason and "overflows" not in rep.unproven[0].reason


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


def _F(*c):
    return tuple(Fraction(x) for x in c)


def test_enclose_root_keeps_the_sign_and_the_ends():
    """g = r / sqrt(1 + r^2) (P = r, Q = 1 + r^2 = R, e = 1): on [1, 2] it is in [1/sqrt 2, 2/sqrt 5] (increasing),
    on [-2, -1] the negatives, on [0, 2] in [0, 2/sqrt 5], on [-2, 0] in [-2/sqrt 5, 0]: the enclosure keeps the
    sign of P / Q (no symmetric hull) and both ends to 1e-3."""
    R = _F(1, 0, 1)
    lo_v, hi_v = 1 / np.sqrt(2.0), 2 / np.sqrt(5.0)
    got = _enclose_root(_F(0, 1), R, 1, R, 1.0, 2.0)
    assert lo_v * (1 - 1e-3) <= got[0] <= lo_v and hi_v <= got[1] <= hi_v * (1 + 1e-3), got
    got = _enclose_root(_F(0, -1), R, 1, R, 1.0, 2.0)
    assert -hi_v * (1 + 1e-3) <= got[0] <= -hi_v and -lo_v <= got[1] <= -lo_v * (1 - 1e-3), got
    tiny = 1e-300                # sqrt(0) rounded outward: the smallest subnormal
    got = _enclose_root(_F(0, 1), R, 1, R, 0.0, 2.0)
    assert -tiny <= got[0] <= 0.0 and hi_v <= got[1] <= hi_v * (1 + 1e-3), got
    got = _enclose_root(_F(0, 1), R, 1, R, -2.0, 0.0)
    assert 0.0 <= got[1] <= tiny and -hi_v * (1 + 1e-3) <= got[0] <= -hi_v, got


def test_enclose_root_reads_the_radicand_s_sign_inside_the_interval():
    """R must be positive on the interval, read at a point of it: R = r - 3/4 is negative on [-3, 1/2] (positive
    at 1, outside); R = 1/4 - r is negative on [1/2, 2] (positive at 0, outside); R = 1 + r^2 on (-inf, -2] is
    read at -2 (a finite end: an infinite one is no point)."""
    one = _F(1)
    assert _enclose_root(one, one, 1, _F(Fraction(-3, 4), 1), -3.0, 0.5) is None
    assert _enclose_root(one, one, 1, _F(Fraction(1, 4), -1), 0.5, 2.0) is None
    got = _enclose_root(one, one, 1, _F(1, 0, 1), -np.inf, -2.0)      # sqrt(1 + r^2) >= sqrt 5, unbounded: None
    assert got is None
    got = _enclose_root(_F(1), _F(1, 0, 1), 1, _F(1, 0, 1), -np.inf, -2.0)   # 1 / sqrt(1 + r^2) in (0, 1/sqrt 5]
    assert got is not None and -1e-300 <= got[0] <= 0.0 and 1 / np.sqrt(5.0) <= got[1] <= 1 / np.sqrt(5.0) * (1 + 1e-3)


def test_powers_of_the_root_reduce_exactly():
    """t r sqrt(1 + r^2)^3 / (1 + r^2)^2 = t r / sqrt(1 + r^2) (S^3 = R S) and t r sqrt(1 + r^2) sqrt(1 + r^2) /
    (1 + r^2)^2 = t r / (1 + r^2) (S^2 = R), t in [1/2, 1], every real r."""
    import jax
    from bayesdp.analysis.structure import Run
    from bayesdp.analysis.structure.bounds import Bound, Bounds

    def one(fn, r=(1.0, 2.0), t=(0.5, 1.0)):          # t not a point: a point is a constant, not a tangent
        closed = jax.make_jaxpr(fn)(jnp.zeros(1, jnp.float32), jnp.zeros(1, jnp.float32))
        box = lambda a: Bound.box(np.asarray([a[0]]), np.asarray([a[1]]))
        out = Run(Bounds(), {"m": 1}).program(closed, [box(r), box(t)])[0]
        return float(out.lo[0]), float(out.hi[0])

    # over all real r (the rule is tried where the boxes fail): r / sqrt(1 + r^2) has sup 1 (at infinity), r / (1 +
    # r^2) has sup 1/2 (at r = 1); a wrong reduction gives r / (1 + r^2) (1/2) or r / (1 + r^2)^2 (3 sqrt 3 / 16)
    lo, hi = one(lambda r, t: t * r * jnp.sqrt(1.0 + r * r) ** 3 / (1.0 + r * r) ** 2, r=(-np.inf, np.inf))
    assert -1.0 - 1e-3 <= lo <= -1.0 and 1.0 <= hi <= 1.0 + 1e-3, (lo, hi)
    lo, hi = one(lambda r, t: t * r * jnp.sqrt(1.0 + r * r) * jnp.sqrt(1.0 + r * r) / (1.0 + r * r) ** 2,
                 r=(-np.inf, np.inf))
    assert -0.5 - 1e-3 <= lo <= -0.5 and 0.5 <= hi <= 0.5 + 1e-3, (lo, hi)
    # unbounded r: 1 / sqrt(1 + r^2) in (0, 1], 1 / (1 + r^2) in (0, 1]
    lo, hi = one(lambda r, t: t * jnp.sqrt(1.0 + r * r) ** 3 / (1.0 + r * r) ** 2, r=(-np.inf, np.inf))
    assert -1e-12 <= lo <= 0.0 and 1.0 <= hi <= 1.0 + 1e-3


# ---------------------------------------------------------------------------
# exp of one polynomial: Welsch / correntropy losses


@pytest.mark.parametrize("c", [1.0, 0.5, 2.0])
def test_welsch_certifies_at_its_maximum(c):
    """rho(r) = 1 - exp(-(r/c)^2): rho' = (2 r / c^2) exp(-(r/c)^2), largest at r = c / sqrt 2: sqrt(2/e) / c.
    Refused before (r times exp(-r^2): the boxes multiply an unbounded and a bounded factor)."""
    G, true = _certifies_tightly(lambda r: 1.0 - jnp.exp(-((r / c) ** 2)), lambda r: 1.0 - np.exp(-((r / c) ** 2)))
    assert true == pytest.approx(np.sqrt(2 / np.e) / c, rel=1e-6)
    assert G <= true * (1 + 1e-3)


def test_a_polynomial_times_a_gaussian_and_a_quartic_exponent():
    """rho(r) = -r^3 exp(-r^2): rho' = -(3 r^2 - 2 r^4) exp(-r^2); rho(r) = 1 - exp(-r^4 + r^2) (exponent with a
    lower-degree term of the other sign: e^{1/4} at r^2 = 1/2)."""
    _certifies_tightly(lambda r: -(r ** 3) * jnp.exp(-(r * r)), lambda r: -(r ** 3) * np.exp(-(r * r)), span=20.0)
    _certifies_tightly(lambda r: 1.0 - jnp.exp(-(r ** 4) + r * r), lambda r: 1.0 - np.exp(-(r ** 4) + r * r),
                       span=20.0)


@pytest.mark.parametrize("loss", [
    lambda r: jnp.exp(r * r) * 1e-3,              # rho' = 2 r e^{r^2} 1e-3: grows
    lambda r: jnp.exp(-r),                        # rho' = -e^{-r}: grows as r -> -inf
    lambda r: r * r * jnp.exp(-(r ** 3)),         # odd exponent: e^{-r^3} grows as r -> -inf
    lambda r: jnp.exp(-(r * r)) + 0.001 * r * r,  # a bounded term plus a growing square
], ids=["growing-exponent", "one-sided", "odd-exponent", "plus-square"])
def test_unbounded_exponentials_are_refused(loss):
    _refused(loss, ["unbounded"])


def test_two_exponents_are_not_claimed():
    """exp(-r^2) + exp(-2 r^2): bounded, two exponents: no claim by this rule (sound whatever else bounds it)."""
    rep, R = _analyse(lambda r: 1.0 - jnp.exp(-(r * r)) - jnp.exp(-2.0 * r * r))
    G = rep.constants.record_grad_bound
    true = R * np.max(np.abs(np.gradient(1 - np.exp(-np.linspace(-8, 8, 400001) ** 2)
                                         - np.exp(-2 * np.linspace(-8, 8, 400001) ** 2), np.linspace(-8, 8, 400001))))
    assert G is None or G >= true * (1 - 1e-3)


@pytest.mark.parametrize("seed", range(8))
def test_enclose_exp_contains_every_value(seed):
    """Random g = P / Q exp(F) (Q > 0; F of even degree 2 or 4 with a negative leading coefficient, or of odd degree
    on a half line where it decreases) on random intervals: the enclosure holds every value on a dense float64 grid
    (infinite ends cut at |r| = 60, past which every g here is below 1e-300)."""
    from bayesdp.analysis.structure.rational import _enclose_exp
    rng = np.random.default_rng(100 + seed)
    for _ in range(10):
        P = _poly(rng.integers(-3, 4, size=int(rng.integers(1, 5))))
        Q = _poly([rng.uniform(0.5, 2.0), 0.0, rng.uniform(0.5, 2.0)])
        deg = int(rng.choice([2, 4]))
        F = [rng.uniform(-1, 1) for _ in range(deg)] + [-rng.uniform(0.2, 2.0)]
        F = _poly(F)
        kind = int(rng.integers(3))
        lo, hi = sorted(rng.uniform(-6, 6, size=2))
        lo, hi = [(lo, hi), (lo, np.inf), (-np.inf, np.inf)][kind]
        got = _enclose_exp(P, Q, F, lo, hi)
        xs = np.linspace(max(lo, -60.0), min(hi, 60.0), 400_001)
        ev = lambda p, x: sum(float(k) * x ** i for i, k in enumerate(p))
        with np.errstate(all="ignore"):
            g = ev(P, xs) / ev(Q, xs) * np.exp(ev(F, xs))
        if got is None:
            assert np.max(ev(F, xs)) > 70, (P, Q, F, lo, hi)   # only an exponent near overflow is refused
            continue
        tol = 1e-9 * max(1.0, float(np.max(np.abs(g))))
        assert got[0] - tol <= np.min(g) and np.max(g) <= got[1] + tol, (P, Q, F, lo, hi, got)


@pytest.mark.parametrize("b", [lambda y: -jnp.log(y + 2.0), lambda y: 1.0 / (y + 2.0)], ids=["-log(y+2)", "1/(y+2)"])
def test_logaddexp_with_an_operand_reaching_plus_inf_is_not_certified_below_its_gradient(b):
    """-logaddexp(r, b(y)) with b = +inf at y = -2 (inside the domain): l = +inf, JAX's _replace_inf(l) = 0, and the
    program's gap r - 0 is not <= 0: at x = e_1, y = -2, w = (-30, 0, 0) (r = 28) JAX's gradient is x e^28 = 1.4e12.
    Found by an adversarial model (it was certified at 1 with the gap rule's unbounded b): refused now (an unbounded
    b is taken only when it is -a)."""
    import jax
    import numpyro
    import numpyro.distributions as dist
    from bayesdp.analysis import Domain, analyze
    from test_switch_continuity import _data

    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.factor("obs", -jnp.logaddexp(y - X @ w, b(y)))

    G = analyze(model, _data(), Domain.parse(["X.norm=1", "y.min=-2", "y.max=2"])).constants.record_grad_bound
    x, w = jnp.asarray([1.0, 0.0, 0.0], jnp.float32), jnp.asarray([-30.0, 0.0, 0.0], jnp.float32)
    g = float(jnp.linalg.norm(jax.grad(lambda w: -jnp.logaddexp(jnp.float32(-2.0) - x @ w, b(jnp.float32(-2.0))))(w)))
    assert g == pytest.approx(float(np.exp(np.float32(28.0))), rel=1e-5)
    assert G is None or G >= g, (G, g)


def test_enclose_exp_finds_a_maximum_just_past_the_first_tail_start():
    """g = r^33 exp(-1.01 r^2) on [0, inf): its maximum is at r = sqrt(33 / 2.02) = 4.042, just past the tails'
    first start B = 4, and 0.36% above g(4). The majorant r^33 e^{-c r^2} decreases only from its own maximum on,
    so B must be raised past it (else the tail's bound at 4 is below the maximum): the enclosure holds the maximum
    and is within 0.1% of it. (A tail that drops P's leading coefficient bounds |P/Q| by 0 there.)"""
    from bayesdp.analysis.structure.rational import _enclose_exp
    r = np.sqrt(33 / 2.02)
    true = r ** 33 * np.exp(-1.01 * r * r)
    assert true / (4.0 ** 33 * np.exp(-1.01 * 16)) > 1.003
    got = _enclose_exp(_F(*([0] * 33 + [1])), _F(1), _F(0, 0, Fraction(-101, 100)), 0.0, np.inf)
    assert got is not None and got[0] <= 0.0 and true <= got[1] <= true * (1 + 1e-3), (got, true)


@pytest.mark.parametrize("a", [3.9, 4.2, -8.5])
def test_a_gaussian_centred_past_the_tail_start_certifies(a):
    """1 - exp(-(r - a)^2): the same maximum sqrt(2/e) as at a = 0. Centred past 4 the exponent's reversed form is
    not negative on all of [0, 1/4] (F~(u) = -1 + 2 a u - a^2 u^2 reaches 0 at u = 1/a), so the tail starts further out
    (B doubled) instead of refusing (found by an adversarial model: refused, though bounded)."""
    G, true = _certifies_tightly(lambda r: 1.0 - jnp.exp(-((r - a) ** 2)), lambda r: 1.0 - np.exp(-((r - a) ** 2)))
    assert true == pytest.approx(np.sqrt(2 / np.e), rel=1e-6) and G <= true * (1 + 1e-3)


@pytest.mark.parametrize("sign, side", [(1, 1), (-1, 1), (1, -1)], ids=["bump", "negative-bump", "left-bump"])
def test_enclose_exp_holds_a_bump_in_the_tail(sign, side):
    """g = s r^3 / ((r - 14 side)^2 + 4) exp(-r^2/100) on the half line towards the bump: the majorant r^3 e^{-r^2/100}
    decreases past sqrt(50) (so the tail starts at B = 9), but g peaks near |r| = 13.9, inside the tail: only the tail
    bound T = M B^d e^{-c B^n} (M the sup of |P~/Q~| over [0, 1/9], here where Q~ is smallest) holds it, not the
    middle (g <= 11.2 on |r| <= 9). The enclosure must contain the peak (97.0, by a dense float64 grid) with the
    right sign, on the right side of 0."""
    from bayesdp.analysis.structure.rational import _enclose_exp
    P = _F(0, 0, 0, sign)
    Q = _F(14 * 14 + 4, -28 * side, 1)
    lo, hi = (0.0, np.inf) if side == 1 else (-np.inf, 0.0)
    xs = np.linspace(0.0, 80.0, 2_000_001) * side
    g = sign * xs ** 3 / ((xs - 14 * side) ** 2 + 4) * np.exp(-xs ** 2 / 100)
    got = _enclose_exp(P, Q, _F(0, 0, Fraction(-1, 100)), lo, hi)
    assert np.max(np.abs(g)) > 96 and np.max(np.abs(g[np.abs(xs) <= 9])) < 12
    assert got is not None and got[0] <= np.min(g) and np.max(g) <= got[1], (got, np.min(g), np.max(g))


def test_enclose_exp_covers_the_whole_left_half_line():
    """g = r^3 / ((r + 6)^2 + 1) exp(-r^2/100) on (-inf, 0]: its extreme, near r = -6 (about -150), lies between the
    middle's start and twice it: the left tail must start where the middle ends (r = -s for s >= B), not further out
    (a tail in r = -2s would leave (-2B, -B) to nobody)."""
    from bayesdp.analysis.structure.rational import _enclose_exp
    xs = np.linspace(-80.0, 0.0, 2_000_001)
    g = xs ** 3 / ((xs + 6) ** 2 + 1) * np.exp(-xs ** 2 / 100)
    got = _enclose_exp(_F(0, 0, 0, 1), _F(37, 12, 1), _F(0, 0, Fraction(-1, 100)), -np.inf, 0.0)
    assert np.min(g) < -140
    assert got is not None and got[0] <= np.min(g) and np.max(g) <= got[1], (got, np.min(g))


def test_welsch_with_its_maximum_past_the_tail_start():
    """c = 10: rho' = (2 r / 100) exp(-r^2 / 100) peaks at r = c / sqrt 2 = 7.07 (sqrt(2/e)/10), past B = 4: the tail
    starts further out only because r e^{-c r^2} is not yet decreasing at 4 (d = 1 > 4^2 (1/100) 2)."""
    G, true = _certifies_tightly(lambda r: 1.0 - jnp.exp(-((r / 10.0) ** 2)), lambda r: 1.0 - np.exp(-((r / 10.0) ** 2)),
                                 span=200.0)
    assert true == pytest.approx(np.sqrt(2 / np.e) / 10, rel=1e-6) and G <= true * (1 + 1e-3)
