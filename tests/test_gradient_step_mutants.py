"""theorems/gradient_step.py against exact rational arithmetic and 50-digit mpmath (issue 25, docs/mutation.md).

The contraction factor of a gradient step on an m-strongly convex, L-smooth function is
``max(|1 - gamma m|, |1 - gamma L|)`` (LITERATURE.md §4); 004's factor is ``1 - gamma (mu - gamma L^2/2)``; two
chains synchronously coupled stay within ``gamma d (1 - rho^k)/(1 - rho)`` (LITERATURE §7.1).  Each is
recomputed here from the inputs' exact binary values (``fractions.Fraction``, mpmath) and must be rounded in
the direction the module promises: to the nearest float in that direction where the arithmetic is exact, and
within 1e-13 (relative) where ``(1 - rho)^k`` goes through expm1/log1p.
"""

from __future__ import annotations

import math
from fractions import Fraction as Q

import mpmath as mp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayesdp.errors import AssumptionError
from bayesdp.theorems import gradient_step as GS

mp.mp.dps = 50


def _is_up(got: float, q: Q) -> bool:
    """``got`` is the smallest float >= q."""
    return Q(got) >= q and Q(math.nextafter(got, -math.inf)) < q


def _is_down(got: float, q: Q) -> bool:
    """``got`` is the largest float <= q."""
    return Q(got) <= q and Q(math.nextafter(got, math.inf)) > q


@settings(max_examples=100, deadline=None)
@given(g=st.floats(1e-6, 10.0), m=st.floats(0.0, 100.0), extra=st.floats(1e-3, 100.0))
def test_contraction_factor_and_gap_are_exact_then_rounded(g, m, extra):
    L = m + extra
    rho = max(abs(1 - Q(g) * Q(m)), abs(1 - Q(g) * Q(L)))
    assert _is_up(GS.contraction_factor(g, m, L), rho)
    assert _is_down(GS.contraction_gap(g, m, L), 1 - rho)


@pytest.mark.parametrize("g,m,L,rho,gap", [
    (0.1, 1.0, 2.0, 0.9, 0.1),      # the strong-convexity end: 1 - gamma m
    (0.625, 1.0, 3.0, 0.875, 0.125),  # the smoothness end: |1 - gamma L| = 0.875 > |1 - gamma m| = 0.375
    (0.5, 1.0, 3.0, 0.5, 0.5),      # both ends equal
    (1.5, 1.0, 2.0, 2.0, -1.0),     # no contraction (gamma > 2/L)
    (1.0, 0.0, 1.0, 1.0, 0.0),      # m = 0: rho = 1
    (0.25, 2.0, 2.0, 0.5, 0.5),     # m = L
])
def test_contraction_factor_and_gap_by_hand(g, m, L, rho, gap):
    assert GS.contraction_factor(g, m, L) == rho
    assert GS.contraction_gap(g, m, L) == gap


def test_contraction_gap_has_no_cancellation():
    # gamma m = 1e-20: the float 1 - rho is 0, the gap is the exact product rounded down
    assert _is_down(GS.contraction_gap(1e-10, 1e-10, 1.0), Q(1e-10) * Q(1e-10))
    assert GS.contraction_factor(1e-10, 1e-10, 1.0) == 1.0


@pytest.mark.parametrize("fn", ["contraction_factor", "contraction_gap"])
@pytest.mark.parametrize("args,message", [
    ((0.0, 1.0, 2.0), "step_size = 0 must be > 0; pass a positive number"),
    ((0.1, -1.0, 2.0), "strong_convexity = -1 must be >= 0"),
    ((0.1, 1.0, 0.0), "smoothness = 0 must be > 0; pass a positive number"),
    ((0.1, 1.0, 0.5), "smoothness = 0.5 must be >= strong_convexity = 1"),
])
def test_contraction_refusals(fn, args, message):
    with pytest.raises(AssumptionError) as e:
        getattr(GS, fn)(*args)
    assert str(e.value) == message


@settings(max_examples=100, deadline=None)
@given(g=st.floats(1e-6, 10.0), m=st.floats(1e-3, 100.0), ratio=st.floats(1.0, 10.0))
def test_paper_margin_is_mu_minus_gamma_l_squared_over_two(g, m, ratio):
    # 004 (112)-(116)'s margin a = mu - gamma L^2 / 2, exactly (its contraction factor 1 - gamma a was dead code
    # and went with issue 21's deletions; the margin still gates the paper's step-size condition)
    L = m * ratio
    assert GS.paper_margin_exact(g, m, L) == Q(m) - Q(g) * Q(L) * Q(L) / 2


@settings(max_examples=100, deadline=None)
@given(g=st.floats(1e-6, 10.0), d=st.floats(0.0, 100.0), gap=st.floats(1e-12, 1.0),
       k=st.one_of(st.none(), st.integers(1, 10**6)))
def test_coupling_bound_is_the_geometric_sum(g, d, gap, k):
    gm, dm, gapm = mp.mpf(g), mp.mpf(d), mp.mpf(gap)
    frac = 1 if k is None else 1 - (1 - gapm) ** k
    exact = gm * dm * frac / gapm
    got = GS.coupling_bound(g, d, num_steps=k, gap=gap)
    assert mp.mpf(got) >= exact
    assert mp.mpf(got) <= exact * (1 + mp.mpf("1e-13")) + mp.mpf("1e-320")   # subnormals: a few of their ulps
    if k is None:
        # the uniform bound: exact quotient rounded up, then pushed out by round_up's 2^-46 at most
        assert Q(got) >= Q(g) * Q(d) / Q(gap)


@settings(max_examples=60, deadline=None)
@given(g=st.floats(1e-6, 10.0), d=st.floats(1e-6, 100.0), rho=st.floats(0.0, 0.999999))
def test_coupling_bound_from_rho_equals_from_its_gap(g, d, rho):
    exact = mp.mpf(g) * mp.mpf(d) / (1 - mp.mpf(rho))
    got = GS.coupling_bound(g, d, rho=rho)
    assert exact <= mp.mpf(got) <= exact * (1 + mp.mpf("1e-13")) + mp.mpf("1e-320")


def test_coupling_bound_by_hand():
    assert 2.0 <= GS.coupling_bound(0.1, 2.0, rho=0.9) <= 2.0 * (1 + 1e-13)
    assert 0.2 <= GS.coupling_bound(0.1, 2.0, rho=0.9, num_steps=1) <= 0.2 * (1 + 1e-13)   # one step
    # two steps at rho = 0.5: gamma d (1 + 0.5) = 0.25 * 4 * 1.5 = 1.5
    assert 1.5 <= GS.coupling_bound(0.25, 4.0, rho=0.5, num_steps=2) <= 1.5 * (1 + 1e-13)
    assert 1.5 <= GS.coupling_bound(0.25, 4.0, gap=0.5, num_steps=2) <= 1.5 * (1 + 1e-13)
    # rho = 0: gap 1, the bound is one step's gamma d at every k
    assert 1.0 <= GS.coupling_bound(0.25, 4.0, rho=0.0) <= 1.0 * (1 + 1e-13)
    # the gap wins over rho when both are given; a gap above 1 counts as 1 (rho >= 0)
    assert 2.0 <= GS.coupling_bound(0.1, 2.0, rho=0.5, gap=0.1) <= 2.0 * (1 + 1e-13)
    assert 0.2 <= GS.coupling_bound(0.1, 2.0, gap=1.5) <= 0.2 * (1 + 1e-13)
    # no drift difference: the chains coincide
    assert GS.coupling_bound(0.1, 0.0, rho=0.9) == 0.0
    # no underflow of a tiny product: 1e-200 * 1e-200 / 0.5
    assert GS.coupling_bound(1e-200, 1e-200, rho=0.5) > 0.0


@pytest.mark.parametrize("args,kwargs,message", [
    ((0.0, 1.0), dict(rho=0.5), "step_size = 0 must be > 0; pass a positive number"),
    ((0.1, -1.0), dict(rho=0.5), "drift_diff = -1 must be >= 0"),
    ((0.1, 1.0), dict(rho=-0.5), "rho (contraction factor) = -0.5 must be >= 0"),
    ((0.1, 1.0), dict(rho=1.0), "rho (contraction factor) = 1 must be < 1: the gradient step does not contract; use "
                                "a step size below 2/L, or a strongly convex potential"),
    ((0.1, 1.0), dict(gap=0.0), "1 - rho (contraction gap) = 0 must be > 0: the gradient step does not contract; "
                                "use a step size below 2/L, or a strongly convex potential"),
    ((1e300, 1e300), dict(rho=0.5), "coupling bound gamma * drift_diff / (1 - rho) = 1e+300 * 1e+300 / 0.5 "
                                    "overflows; the constants are outside the float range"),
])
def test_coupling_bound_refusals(args, kwargs, message):
    with pytest.raises(AssumptionError) as e:
        GS.coupling_bound(*args, **kwargs)
    assert str(e.value) == message


def test_coupling_bound_needs_rho_or_gap():
    with pytest.raises(TypeError, match="^coupling_bound needs rho or gap$"):
        GS.coupling_bound(0.1, 1.0)
