"""Exact ends and soundness of the bound interpreter's indexing rules and relational rules
(bayesdp/analysis/structure/bounds.py: ``gather`` and its helpers, ``scatter``, ``scatter_add``,
``dynamic_update_slice``, ``iota``, ``arg_extreme``, the norm facts through structural ops, and the relational
rules from ``_chain`` to ``related``), for mutation testing (issue 25, docs/mutation.md "### bounds").

Each rule is evaluated on boxes whose image is derived by hand: the ends are asserted exactly (``nextafter``
counts where a sum rounds, the exact sum taken with ``fractions.Fraction``).  The soundness sweeps draw random
boxes and random points in them (operand values multiples of 1/8, so that the program's float32 evaluation is
exact) and check that every value the program takes is in the rule's box.  The cases try to fool the rules:
index boxes spanning several entries, negative indices (jnp wraps them), index boxes partly out of bounds, the
clip and fill modes, duplicate scatter indices, record axes (one slot standing for ``m`` records), and programs
that nearly match a relational rule's pattern but must not be matched.

Every test runs with numpy raising on invalid operations, overflow and division by zero, like
tests/test_bounds_mutation.py.
"""

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export, lax

from bayesdp.analysis.structure import Run
from bayesdp.analysis.structure import bounds as B
from bayesdp.analysis.structure.bounds import Bound, Bounds, data_input

F32 = jnp.float32
I32 = jnp.int32
INF = np.inf


@pytest.fixture(autouse=True)
def _raise_on_fp_errors():
    with np.errstate(divide="raise", over="raise", invalid="raise"):
        yield


def dn(x, k=1):
    x = np.float64(x)
    for _ in range(k):
        x = np.nextafter(x, -INF)
    return x


def up(x, k=1):
    x = np.float64(x)
    for _ in range(k):
        x = np.nextafter(x, INF)
    return x


def floor_float(q: Fraction) -> float:
    """The largest float64 <= the rational q."""
    f = float(q)
    return f if Fraction(f) <= q else float(dn(f))


def ceil_float(q: Fraction) -> float:
    f = float(q)
    return f if Fraction(f) >= q else float(up(f))


def box(lo, hi):
    return Bound.box(np.asarray(lo, np.float64), np.asarray(hi, np.float64))


def interp(fn, ins, dtypes, shapes=None, m=1):
    shapes = shapes or [b.shape for b in ins]
    closed = jax.make_jaxpr(fn)(*[jax.ShapeDtypeStruct(s, d) for s, d in zip(shapes, dtypes)])
    return Run(Bounds(), {"m": m}).program(closed, list(ins))


def one(fn, *ins, dtypes=None, shapes=None, m=1):
    return interp(fn, ins, dtypes or [F32] * len(ins), shapes, m)[0]


def rec(fn, shapes, dtypes, ins, m):
    """``fn`` traced with the symbolic record count ``m`` in ``shapes`` (the string "m"), interpreted at ``m``."""
    (sym,) = export.symbolic_shape("m")
    structs = [jax.ShapeDtypeStruct(tuple(sym if d == "m" else d for d in s), t) for s, t in zip(shapes, dtypes)]
    closed = jax.make_jaxpr(fn)(*structs)
    return Run(Bounds(), {"m": m}).program(closed, list(ins))[0]


def eq(out, lo, hi):
    np.testing.assert_array_equal(out.lo, np.asarray(lo, np.float64))
    np.testing.assert_array_equal(out.hi, np.asarray(hi, np.float64))


def inside(out, v):
    v = np.asarray(v, np.float64)
    return bool(np.all((out.lo <= v) & (v <= out.hi)))


# ---------------------------------------------------------------------------
# scatter-add: the sums of the updates' parts are rounded outward (regressions: the float sum and the product by m
# were rounded to nearest and the result moved by ONE float, which an inexact sum of many terms can exceed)


def test_scatter_add_lower_end_is_below_an_inexact_exact_sum():
    # ten terms of -1e-16 after -1 vanish from the float sum (each is under half an ulp of 1): the exact sum is
    # -1 - 1e-15 (ten float 1e-16), five floats below -1; the old rule gave -1 - 1 ulp
    terms = [-1.0] + [-1e-16] * 10
    out = one(lambda a, u, i: a.at[i].add(u), box([0.0], [0.0]), box(terms, [0.0] * 11), box([0] * 11, [0] * 11),
              dtypes=[F32, F32, I32])
    exact = sum(Fraction(t) for t in terms)
    assert Fraction(float(out.lo[0])) <= exact
    assert out.lo[0] == floor_float(exact)          # the largest float below the exact sum: no more than needed
    assert out.hi[0] == 0.0
    # the mirror image: positive parts, upper end
    out = one(lambda a, u, i: a.at[i].add(u), box([0.0], [0.0]), box([0.0] * 11, [-t for t in terms]),
              box([0] * 11, [0] * 11), dtypes=[F32, F32, I32])
    assert out.hi[0] == ceil_float(-exact) and out.lo[0] == 0.0


def test_scatter_add_of_a_cancelling_sum_is_not_claimed_above_the_value():
    # operand 2^53, updates -2^53 and -1 both at entry 0: the value is -1; the float sum -(2^53 + 1) rounds to -2^53
    # and the old rule then claimed -eta
    out = one(lambda a, u, i: a.at[i].add(u), box([2.0 ** 53], [2.0 ** 53]), box([-2.0 ** 53, -1.0], [0.0, 0.0]),
              box([0, 0], [0, 0]), dtypes=[F32, F32, I32])
    assert out.lo[0] <= -1.0 and out.lo[0] >= -2.0     # -2: the float below -(2^53 + 1) is -(2^53 + 2)
    assert out.hi[0] == 2.0 ** 53


def test_scatter_add_over_records_multiplies_the_sum_by_m_rounded_outward():
    # a histogram of m records' values into 2 bins: each bin gets any subset of the m updates in [-0.1, 0.3]
    def prog(a, u, i):
        return a.at[i].add(u)
    for m in (1, 3, 7, 1000):
        out = rec(prog, [(2,), ("m",), ("m",)], [F32, F32, I32],
                  [box([1.0, -2.0], [1.0, -2.0]), box([-0.1], [0.3]), box([0], [1])], m)
        lo_exact = [Fraction(1.0) + m * Fraction(-0.1), Fraction(-2.0) + m * Fraction(-0.1)]
        hi_exact = [Fraction(1.0) + m * Fraction(0.3), Fraction(-2.0) + m * Fraction(0.3)]
        for j in range(2):
            assert Fraction(float(out.lo[j])) <= lo_exact[j] and Fraction(float(out.hi[j])) >= hi_exact[j]
            # no looser than one float of m x and one of the result each (outward rounding of the product, then of
            # the sum: -2 + 0.3 m cancels, so the product's float counts more than the result's)
            for end, exact, mx in ((out.lo[j], lo_exact[j], m * 0.1), (out.hi[j], hi_exact[j], m * 0.3)):
                slack = math.ulp(mx) + math.ulp(float(exact))
                assert abs(Fraction(float(end)) - exact) <= Fraction(slack), (m, j, end, exact)
    # without a record axis on the updates the sum is not multiplied, whatever m
    out = interp(prog, [box([0.0, 0.0], [0.0, 0.0]), box([-1.0, -1.0], [2.0, 2.0]), box([0, 0], [1, 1])],
                 [F32, F32, I32], m=50)[0]
    eq(out, [-2.0, -2.0], [4.0, 4.0])


def test_scatter_add_exact_and_infinite_ends():
    # duplicate indices: all three updates may land in one entry; the exact sums stay exact
    out = one(lambda a, u, i: a.at[i].add(u), box([0.5, 1.0], [0.5, 2.0]), box([-1.0, -2.0, 3.0], [1.0, 4.0, 3.0]),
              box([1, 1, 1], [1, 1, 1]), dtypes=[F32, F32, I32])
    eq(out, [0.5 - 3.0, 1.0 - 3.0], [0.5 + 8.0, 2.0 + 8.0])
    # an unbounded update makes every entry unbounded on that side only, and names the equation
    out = one(lambda a, u, i: a.at[i].add(u), box([0.0, 0.0], [1.0, 1.0]), Bound(np.array([-1.0, -INF]),
              np.array([2.0, 3.0])), box([0, 0], [0, 0]), dtypes=[F32, F32, I32])
    eq(out, [-INF, -INF], [6.0, 6.0])
    assert out.why is not None and out.why.primitive.name == "scatter-add"
    # no updates at all: the operand
    out = one(lambda a, u, i: a.at[i].add(u), box([0.25, 1.0], [0.5, 2.0]), box(np.zeros((0,)), np.zeros((0,))),
              box(np.zeros((0,)), np.zeros((0,))), dtypes=[F32, F32, I32])
    eq(out, [0.25, 1.0], [0.5, 2.0])


def test_sum_dn_and_up_are_the_floats_around_the_exact_sum():
    rng = np.random.default_rng(0)
    for _ in range(200):
        x = rng.standard_normal(rng.integers(1, 30)) * 10.0 ** rng.integers(-20, 20)
        exact = sum(Fraction(float(t)) for t in x)
        assert B._sum_dn(x) == floor_float(exact)
        assert B._sum_up(x) == ceil_float(exact)
    assert B._sum_dn(np.array([1.0, 2.0])) == 3.0 and B._sum_up(np.array([1.0, 2.0])) == 3.0
    assert B._sum_dn(np.array([-1e308, -1e308])) == -INF and B._sum_up(np.array([1e308, 1e308])) == INF
    assert B._sum_dn(np.array([-INF, 1.0])) == -INF and B._sum_up(np.array([INF, -1.0])) == INF


# ---------------------------------------------------------------------------
# gather along a record axis (regression: the index was checked against the ONE slot, so an in-bounds record
# index >= 1 counted as out of bounds and, in fill mode, the value was claimed to be the fill value)


def test_gather_of_a_record_in_fill_mode_is_the_record_not_the_fill_value():
    def prog(x):
        return x.at[2].get(mode="fill", fill_value=0.0)
    for m, want in ((5, (3.0, 4.0)), (3, (3.0, 4.0)), (2, (0.0, 0.0)), (1, (0.0, 0.0))):
        out = rec(prog, [("m",)], [F32], [box([3.0], [4.0])], m)
        assert (float(out.lo), float(out.hi)) == want, (m, out.lo, out.hi)
    # an integer record: JAX's default fill is the int32 minimum
    out = rec(lambda x: x.at[2].get(mode="fill"), [("m",)], [I32], [box([3.0], [4.0])], 5)
    assert (float(out.lo), float(out.hi)) == (3.0, 4.0)
    out = rec(lambda x: x.at[2].get(mode="fill"), [("m",)], [I32], [box([3.0], [4.0])], 2)
    assert (float(out.lo), float(out.hi)) == (-2.0 ** 31, -2.0 ** 31)
    # the default float fill is NaN: out of bounds for some m, nothing is known
    out = rec(lambda x: x.at[2].get(mode="fill"), [("m",)], [F32], [box([3.0], [4.0])], 2)
    assert out.lo == -INF and out.hi == INF


def test_gather_of_records_with_an_interval_index_and_each_mode():
    # index in [1, 3] with m = 3: records 1 and 2 are in bounds, 3 is not (fill: the fill value joins)
    def fill(x, i):
        return x.at[i].get(mode="fill", fill_value=-7.0)

    def clip(x, i):
        return x.at[i].get(mode="clip")
    out = rec(fill, [("m",), ()], [F32, I32], [box([3.0], [4.0]), box(1.0, 3.0)], 3)
    assert (float(out.lo), float(out.hi)) == (-7.0, 4.0)
    out = rec(fill, [("m",), ()], [F32, I32], [box([3.0], [4.0]), box(1.0, 3.0)], 4)
    assert (float(out.lo), float(out.hi)) == (3.0, 4.0)
    out = rec(fill, [("m",), ()], [F32, I32], [box([3.0], [4.0]), box(5.0, 9.0)], 4)
    assert (float(out.lo), float(out.hi)) == (-7.0, -7.0)
    # clip: every index reaches a record
    out = rec(clip, [("m",), ()], [F32, I32], [box([3.0], [4.0]), box(5.0, 9.0)], 4)
    assert (float(out.lo), float(out.hi)) == (3.0, 4.0)
    # a record's row of a (m, 3) operand, fill mode, the column index fixed: each record's entry
    out = rec(lambda x, i: x.at[i, 1].get(mode="fill", fill_value=0.5), [("m", 3), ()], [F32, I32],
              [box([[1.0, 2.0, 3.0]], [[1.5, 2.5, 3.5]]), box(0.0, 1.0)], 2)
    assert (float(out.lo), float(out.hi)) == (2.0, 2.5)
    out = rec(lambda x, i: x.at[i, 1].get(mode="fill", fill_value=0.5), [("m", 3), ()], [F32, I32],
              [box([[1.0, 2.0, 3.0]], [[1.5, 2.5, 3.5]]), box(0.0, 2.0)], 2)
    assert (float(out.lo), float(out.hi)) == (0.5, 2.5)


def test_gather_of_records_is_sound_against_concrete_records():
    rng = np.random.default_rng(3)
    progs = {
        "fill": lambda x, i: x.at[i].get(mode="fill", fill_value=-0.5),
        "clip": lambda x, i: x.at[i].get(mode="clip"),
        "wrap": lambda x, i: x[i],
    }
    for name, prog in progs.items():
        f = jax.jit(prog)
        for _ in range(16):
            m = int(rng.integers(1, 7))
            lo, hi = np.sort(rng.integers(-16, 16, 2)) / 8.0
            ilo, ihi = np.sort(rng.integers(-3, 9, 2))
            if name == "wrap":
                ilo, ihi = max(ilo, -m), min(ihi, m - 1)     # jnp's promise: in bounds after wrapping
                if ilo > ihi:
                    continue
            out = rec(prog, [("m",), ()], [F32, I32], [box([lo], [hi]), box(float(ilo), float(ihi))], m)
            for _ in range(20):
                x = rng.integers(int(lo * 8), int(hi * 8) + 1, m) / 8.0
                i = int(rng.integers(ilo, ihi + 1))
                v = float(f(jnp.asarray(x, F32), jnp.int32(i)))
                assert out.lo <= v <= out.hi, (name, m, lo, hi, ilo, ihi, x, i, v, out.lo, out.hi)


# ---------------------------------------------------------------------------
# norm facts through a broadcast (regression: an axis of size 1 broadcast to n kept its norm, n equal entries
# have sqrt(n) times it)


def test_norm_fact_of_a_size_one_axis_broadcast_grows_by_sqrt_n():
    table = np.array([[1.0], [0.0], [0.0]], np.float32)

    def prog(i):
        return jnp.broadcast_to(jnp.asarray(table)[i], (1, 5))
    out = one(prog, box([0.0], [2.0]), dtypes=[I32])
    eq(out, [[0.0] * 5], [[1.0] * 5])
    n = float(out.nrm[1][0, 0])
    # the row gathered at 0 becomes (1, 1, 1, 1, 1): norm sqrt(5)
    assert Fraction(n) ** 2 >= 5 and n <= math.sqrt(5.0) * (1 + 1e-14)
    # broadcasting the other (batch) axis copies whole rows: each keeps its norm
    out = one(lambda i: jnp.broadcast_to(jnp.eye(3, dtype=F32)[i], (4, 1, 3)), box([0.0], [2.0]), dtypes=[I32])
    assert set(out.nrm) == {2} and out.nrm[2].shape == (4, 1, 1) and 1.0 <= out.nrm[2].max() <= 1.0 + 1e-15
    # a size-1 axis made a record axis (m copies, m unknown to the op): the fact is dropped
    (sym,) = export.symbolic_shape("m")
    closed = jax.make_jaxpr(lambda i: lax.broadcast_in_dim(jnp.asarray(table)[i], (1, sym), (0, 1)))(
        jax.ShapeDtypeStruct((1,), I32))
    out = Run(Bounds(), {"m": 9}).program(closed, [box([0.0], [2.0])])[0]
    assert not out.nrm or 1 not in out.nrm
