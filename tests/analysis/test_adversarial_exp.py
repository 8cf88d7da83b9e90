"""Adversarial checks of the rational walk's exponentials (``exp`` of one polynomial exponent, structure/rational.py:
``_Walk._eqn``'s exp branch, ``_tail``, ``_enclose_exp``, ``_exp_iv``, ``_pieces(..., F)``), session adv18b.

Every case asserts soundness only: G is None or G >= R * sup_r |rho'(r)| (1e-6 relative), the sup computed
independently: sympy's exact derivative, evaluated in float64 on a wide grid and refined with mpmath (40 digits)
around the largest grid values. Also: data- and theta-dependent exponents, where-branches, calls, a custom_jvp, and a
unit fuzz of ``_enclose_exp`` (degree up to 30 prefactors, tiny leading exponent coefficients, shifted Gaussians near
B = 4, 8, 16, half-lines far out) against float64 values computed in log space. No case was UNSOUND (2026-11-27)."""

import sys

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import sympy as sp
from fractions import Fraction
from scipy.optimize import minimize_scalar

from bayesdp.analysis import Domain, analyze
from test_select_piecewise import DOMAIN, _analyse
from test_switch_continuity import _data

pytestmark = pytest.mark.slow

S = jnp.sqrt
rs = sp.Symbol("r", real=True)


def true_max(expr, span=60.0, n=400_001):
    e = sp.sympify(expr, locals={"r": rs})
    d = sp.diff(e, rs)
    f, fm = sp.lambdify(rs, d, "numpy"), sp.lambdify(rs, d, "mpmath")
    xs = np.linspace(-span, span, n)
    with np.errstate(all="ignore"):
        v = np.abs(f(xs)).astype(float)
    v[~np.isfinite(v)] = 0
    best, h = 0.0, 2 * span / (n - 1)
    mp.mp.dps = 40
    for i in np.argsort(v)[-5:]:
        res = minimize_scalar(lambda x: -float(abs(fm(mp.mpf(x)))), bounds=(xs[i] - h, xs[i] + h),
                              method="bounded", options={"xatol": 1e-14})
        best = max(best, -res.fun, float(abs(fm(mp.mpf(xs[i])))))
    return best


CASES = [
 ("welsch c=1e-3", lambda r: 1 - jnp.exp(-(r / 1e-3) ** 2), "1-exp(-(r/0.001)**2)", 0.01),
 ("gauss c=1e-3", lambda r: 1 - jnp.exp(-(r * r) / 1e-3), "1-exp(-r**2/0.001)", 0.5),
 ("gauss c=1e3", lambda r: 1 - jnp.exp(-(r * r) / 1e3), "1-exp(-r**2/1000)", 400),
 ("gauss c=1e4", lambda r: 1 - jnp.exp(-(r * r) / 1e4), "1-exp(-r**2/10000)", 1000),
 ("shift a=1", lambda r: 1 - jnp.exp(-((r - 1) ** 2) / 2), "1-exp(-(r-1)**2/2)", 30),
 ("shift a=3.9", lambda r: 1 - jnp.exp(-((r - 3.9) ** 2) / 0.1), "1-exp(-(r-3.9)**2/0.1)", 30),
 ("shift a=4.2", lambda r: 1 - jnp.exp(-((r - 4.2) ** 2) / 0.1), "1-exp(-(r-4.2)**2/0.1)", 30),
 ("shift a=-8.5", lambda r: 1 - jnp.exp(-((r + 8.5) ** 2)), "1-exp(-(r+8.5)**2)", 30),
 ("quartic odd", lambda r: -jnp.exp(-r ** 4 + 5 * r ** 3 - 60.0), "-exp(-r**4+5*r**3-60)", 30),
 ("quartic odd 2", lambda r: -jnp.exp(-r ** 4 + 5 * r ** 3), "-exp(-r**4+5*r**3)", 30),
 ("r^31 gauss", lambda r: (r ** 31) * jnp.exp(-r * r) * 1e-8, "r**31*exp(-r**2)*1e-8", 30),
 ("r^30 gauss narrow", lambda r: (r ** 30) * jnp.exp(-0.9 * r * r) * 1e-8, "r**30*exp(-0.9*r**2)*1e-8", 30),
 ("r^k max at 8.1", lambda r: (r ** 29) * jnp.exp(-0.22 * r * r) * 1e-25, "r**29*exp(-0.22*r**2)*1e-25", 60),
 ("r^k max at 16.2", lambda r: (r ** 29) * jnp.exp(-0.055 * r * r) * 1e-40, "r**29*exp(-0.055*r**2)*1e-40", 80),
 ("1/exp(r^2)", lambda r: -0.5 / jnp.exp(r * r), "-0.5*exp(-r**2)", 20),
 ("r/exp(r^2)", lambda r: r / jnp.exp(r * r), "r*exp(-r**2)", 20),
 ("exp(r^2)**-1", lambda r: -(jnp.exp(r * r) ** -1), "-exp(-r**2)", 20),
 ("exp(-r^2/2)**2", lambda r: 1 - jnp.exp(-r * r / 2) ** 2, "1-exp(-r**2)", 20),
 ("exp*exp", lambda r: 1 - jnp.exp(-r * r / 2) * jnp.exp(-r * r / 2), "1-exp(-r**2)", 20),
 ("exp^3/exp", lambda r: 1 - jnp.exp(-r * r / 2) ** 3 / jnp.exp(-r * r / 2), "1-exp(-r**2)", 20),
 ("exp(r^2)*exp(-r^2)^2", lambda r: 1 - jnp.exp(r * r) * jnp.exp(-r * r) ** 2, "1-exp(-r**2)", 20),
 ("exp(-r^2)^-1 grows", lambda r: 1e-3 * jnp.exp(-r * r) ** -1, None, 20),
 ("exp(r^2)/exp(r^2)^2 * r", lambda r: r * jnp.exp(r * r) / jnp.exp(r * r) ** 2, "r*exp(-r**2)", 20),
 ("exp(-r^2+20)", lambda r: -jnp.exp(-r * r + 20.0), "-exp(-r**2+20)", 20),
 ("exp(-r^2+79)", lambda r: -jnp.exp(-r * r + 79.0) * 1e-30, "-exp(-r**2+79)*1e-30", 20),
 ("exp(-r^4+r^2+70)", lambda r: -jnp.exp(-r ** 4 + r * r + 70.0) * 1e-30, "-exp(-r**4+r**2+70)*1e-30", 20),
 ("sum same exp", lambda r: (r + r ** 3) * jnp.exp(-r * r) + jnp.exp(-r * r) * 2.0, "(r+r**3+2)*exp(-r**2)", 20),
 ("order1", lambda r: jnp.exp(-r * r) * r, "exp(-r**2)*r", 20),
 ("order2", lambda r: r * jnp.exp(-(r ** 2)), "exp(-r**2)*r", 20),
 ("order3", lambda r: jnp.exp(r * (-r)) * r, "exp(-r**2)*r", 20),
 ("order4", lambda r: jnp.exp(-jnp.square(r)) * r, "exp(-r**2)*r", 20),
 ("order5", lambda r: r / (1.0 / jnp.exp(-r * r)), "exp(-r**2)*r", 20),
 ("correntropy s=0.7", lambda r: 1 - jnp.exp(-r * r / (2 * 0.7 ** 2)), "1-exp(-r**2/(2*0.7**2))", 20),
 ("gauss kernel neglog", lambda r: -jnp.exp(-0.5 * r * r) / jnp.sqrt(2 * jnp.pi), "-exp(-r**2/2)/sqrt(2*pi)", 20),
 ("rational prefactor", lambda r: r * jnp.exp(-r * r) / (1 + r * r), "r*exp(-r**2)/(1+r**2)", 20),
 ("Q root beyond 4 (complex)", lambda r: jnp.exp(-0.01 * r * r) / ((r - 10) ** 2 + 0.01), "exp(-0.01*r**2)/((r-10)**2+0.01)", 60),
 ("Q real root 5", lambda r: jnp.exp(-r * r) / (r - 5.0), None, 20),
 ("deg P-Q large", lambda r: r ** 30 / (1 + r * r) * jnp.exp(-r * r) * 1e-10, "r**30/(1+r**2)*exp(-r**2)*1e-10", 30),
 ("tiny leading", lambda r: -jnp.exp(-1e-6 * r ** 4 - r * r) * r, "-exp(-1e-6*r**4-r**2)*r", 20),
 ("tiny leading grows", lambda r: -jnp.exp(-1e-6 * r ** 4 + 1e-3 * r * r), "-exp(-1e-6*r**4+1e-3*r**2)", 200),
 ("tiny leading, odd, 0.01", lambda r: -jnp.exp(-1e-2 * r ** 4 + 0.2 * r ** 3 - 0 * r), "-exp(-0.01*r**4+0.2*r**3)", 80),
 ("exp(-r^6+r^5)", lambda r: -jnp.exp(-r ** 6 + 4 * r ** 5) * 1e-20, "-exp(-r**6+4*r**5)*1e-20", 20),
 ("r^2 exp(-r^4)", lambda r: r * r * jnp.exp(-r ** 4), "r**2*exp(-r**4)", 20),
 ("1-exp(-r^8)", lambda r: 1 - jnp.exp(-r ** 8), "1-exp(-r**8)", 20),
 ("exp(-|r|^2) and sqrt", lambda r: jnp.exp(-r * r) * S(1 + r * r), "exp(-r**2)*sqrt(1+r**2)", 20),
 ("exp(-sqrt)", lambda r: jnp.exp(-S(1 + r * r)), "exp(-sqrt(1+r**2))", 60),


 ("where r<0 grows", lambda r: jnp.where(r < 0, jnp.exp(-r), 1.0 - r), None, 20),
 ("where two exps", lambda r: jnp.where(r < 0, 1 - jnp.exp(-r * r), 1 - jnp.exp(-2 * r * r)), "1-exp(-r**2)", 20),
 ("odd exp half", lambda r: jnp.where(r > 0, -jnp.exp(-r ** 3) * r, 0.0 * r), None, 20),
 ("linear exp", lambda r: jnp.exp(-r) * 1e-3, None, 20),
 ("exp of exp-like", lambda r: jnp.exp(jnp.exp(-r * r)), "exp(exp(-r**2))", 20),
 ("expanded cancellation", lambda r: -jnp.exp(-r ** 4 + 200 * r * r - 10000 + 30) * 1e-10, "-exp(-r**4+200*r**2-10000+30)*1e-10", 40),
]



@pytest.mark.parametrize("name,loss,expr,span", CASES, ids=[c[0] for c in CASES])
def test_exp_losses_are_sound(name, loss, expr, span):
    rep, R = _analyse(loss)
    G = rep.constants.record_grad_bound
    if G is None:
        assert rep.unproven and rep.unproven[0].site == "obs" and rep.unproven[0].reason
        return
    assert expr is not None, (name, G)      # the unbounded / unknown ones must be refused
    true = R * true_max(expr, span)
    assert G >= true * (1 - 1e-6), (G, true)


@jax.custom_jvp
def _half(q):
    return 1 - jnp.exp(-q * q)


@_half.defjvp
def _half_jvp(p, t):
    (q,), (tq,) = p, t
    return _half(q), tq * 2 * q * jnp.exp(-q * q) * 10.0      # a derivative 10x the primal's


def _model(f, extra):
    def model(X, y=None):
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        s = numpyro.sample("s", dist.LogNormal(0, 1)) if extra else None
        with numpyro.plate("data", X.shape[0]):
            numpyro.factor("obs", -f(y - X @ w, y, s))
    return model


K = np.sqrt(2 / np.e)      # sup |d/dr (1 - e^{-r^2})|
MIXED = [
    # (id, f(r, y, s), theta s?, true sup / R (inf: unbounded; None: only "no exception"))
    ("exp(-(r y)^2)", lambda r, y, s: 1 - jnp.exp(-(r * y) ** 2), False, 2 * K),
    ("exp(-r^2+y)", lambda r, y, s: 1 - jnp.exp(-r * r + y), False, np.e ** 2 * K),
    ("y r exp(-r^2)", lambda r, y, s: y * r * jnp.exp(-r * r), False, 2.0),
    ("exp(-r^2 y^2 - r^2)", lambda r, y, s: 1 - jnp.exp(-r * r * y * y - r * r), False, np.sqrt(5) * K),
    ("exp(-(r/s)^2)", lambda r, y, s: 1 - jnp.exp(-(r / s) ** 2), True, np.inf),
    ("exp(-(r s)^2)", lambda r, y, s: 1 - jnp.exp(-(r * s) ** 2), True, np.inf),
    ("s (1-exp(-r^2))", lambda r, y, s: (1 - jnp.exp(-r * r)) * s, True, np.inf),
    ("exp(-r^2+s)", lambda r, y, s: 1 - jnp.exp(-r * r + s), True, np.inf),
    ("exp(-r^2-s)", lambda r, y, s: 1 - jnp.exp(-r * r - s), True, None),
    ("where |r|<3", lambda r, y, s: jnp.where(jnp.abs(r) < 3, 1 - jnp.exp(-r * r), 1 - np.float32(np.exp(-9.0))),
     False, K),
    ("where r>4.5", lambda r, y, s: jnp.where(r > 4.5, 1 - jnp.exp(-(r - 5) ** 2), 1 - 0.77880078), False, K),
    ("where r>1 exp(-r^3)", lambda r, y, s: jnp.where(r > 1, jnp.exp(-r ** 3), np.float32(np.exp(-1.0)) + 0 * r),
     False, 3 * np.exp(-1.0)),
    ("checkpoint", lambda r, y, s: jax.checkpoint(lambda q: 1 - jnp.exp(-q * q))(r), False, K),
    ("jit inner", lambda r, y, s: jax.jit(lambda q: 1 - jnp.exp(-q * q))(r), False, K),
    ("custom_jvp 10x", lambda r, y, s: _half(r), False, 10 * K),
    ("exp(-r^2)+r^2/2", lambda r, y, s: jnp.exp(-r * r) + 0.5 * r * r, False, np.inf),
    ("-log(1+exp(-r^2))", lambda r, y, s: -jnp.log(1 + jnp.exp(-r * r)), False,
     float(np.max(np.abs(2 * np.linspace(0, 10, 200001) / (np.exp(np.linspace(0, 10, 200001) ** 2) + 1))))),
]


@pytest.mark.parametrize("name,f,extra,sup", MIXED, ids=[c[0] for c in MIXED])
def test_mixed_exponents_are_sound(name, f, extra, sup):
    dom = Domain.parse(DOMAIN)
    rep = analyze(_model(f, extra), _data(), dom)            # no exception escapes
    G = rep.constants.record_grad_bound
    if sup is None:
        return
    if np.isinf(sup):
        assert G is None
    elif G is not None:
        assert G >= dom.get("X").certified_norm * sup * (1 - 1e-6), (G, sup)


def _fz(*c):
    return tuple(Fraction(x) for x in c)


@pytest.mark.parametrize("seed", range(4))
def test_enclose_exp_adversarial_fuzz(seed):
    from bayesdp.analysis.structure.rational import _enclose_exp
    rng = np.random.default_rng(1800 + seed)
    for it in range(60):
        kind = it % 6
        dp = int(rng.integers(0, 31))
        P = _fz(*(list(rng.integers(-3, 4, size=dp)) + [1]))
        Q = _fz(1)
        if kind == 1:                      # complex roots beyond 4
            a0 = rng.uniform(4, 30)
            Q = _fz(a0 * a0 + 0.01, -2 * a0, 1)
        n = int(rng.choice([1, 2, 3, 4, 6]))
        lead = -10 ** rng.uniform(-4, 1)
        F = _fz(*([float(rng.uniform(-3, 3)) for _ in range(n)] + [float(lead)]))
        if kind == 2:                      # a Gaussian centred near a tail start
            a = float(rng.choice([3.99, 4.01, 8.5, 16.5, -4.01]))
            F = _fz(lead * a * a, -2 * lead * a, lead)
        lo, hi = [(-np.inf, np.inf), (0.0, np.inf), (-np.inf, 0.0), tuple(sorted(rng.uniform(-40, 40, 2))),
                  (float(rng.uniform(3, 20)), np.inf), (-np.inf, float(rng.uniform(-20, -3)))][int(rng.integers(6))]
        got = _enclose_exp(P, Q, F, lo, hi)
        if got is None:
            continue
        a, b = max(lo, -1e3), min(hi, 1e3)
        xs = np.concatenate([np.linspace(a, b, 100001)]
                            + ([np.geomspace(max(a, 1e-3), b, 100001)] if b > 1e-3 else [])
                            + ([-np.geomspace(max(-b, 1e-3), -a, 100001)] if a < -1e-3 else []))
        xs = xs[(xs >= lo) & (xs <= hi)]
        ev = lambda p: np.polyval([float(c) for c in reversed(p)], xs)
        with np.errstate(all="ignore"):
            p, q, f = ev(P), ev(Q), ev(F)
            g = np.sign(p) * np.sign(q) * np.exp(f + np.log(np.abs(p)) - np.log(np.abs(q)))
        g = np.where(np.isnan(g), 0, g)
        assert got[0] - 1e-12 * abs(got[0]) <= g.min() and g.max() <= got[1] + 1e-12 * abs(got[1]), (P, Q, F, lo, hi)


def test_enclose_exp_maxima_just_past_raised_tail_starts():
    """r^d exp(-c r^2) with its maximum sqrt(d / 2c) just past 4, 8, 16, 24: mpmath values at the maximum."""
    from bayesdp.analysis.structure.rational import _enclose_exp
    for d, top in [(3, 4.02), (9, 8.03), (25, 16.01), (31, 24.2), (1, 100.5)]:
        c = Fraction(d) / (2 * Fraction(top) ** 2)
        got = _enclose_exp(_fz(*([0] * d + [1])), _fz(1), (Fraction(0), Fraction(0), -c), -np.inf, np.inf)
        mp.mp.dps = 50
        true = mp.mpf(top) ** d * mp.exp(-mp.mpf(c.numerator) / c.denominator * mp.mpf(top) ** 2)
        assert got is not None and got[1] >= float(true) * (1 - 1e-12) and got[0] <= -float(true) * (1 - 1e-12)
