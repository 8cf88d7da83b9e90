"""Exact ends and soundness of the bound interpreter's indexing rules and relational rules
(bayesdp/analysis/structure/bounds.py: ``gather`` and its helpers, ``scatter``, ``scatter_add``,
``dynamic_update_slice``, ``iota``, ``arg_extreme``, the norm facts through structural ops, and the relational
rules from ``_chain`` to ``related``), for mutation testing (issue 25, docs/mutation.md "### bounds").

Each rule is evaluated on boxes whose image is derived by hand: the ends are asserted exactly (``nextafter``
counts where a sum rounds, the exact sum taken with ``fractions.Fraction``).  The soundness sweeps draw random
boxes and random points in them (values multiples of 1/8, so that every sum is exact) and check that the value of
the program, computed by numpy with JAX's indexing semantics (negative indices wrap, clip, fill, drop), is in the
rule's box.  Nothing here compiles a JAX program: mutmut runs each mutant in a process forked from one that has
run JAX, where a compilation can hang (docs/mutation.md).  The cases try to fool the rules:
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


def F(x):
    """The float32 number a float32 program holds for the Python float ``x`` (a clip's end: a weakly typed literal)."""
    return float(np.float32(x))

F32 = jnp.float32
I32 = jnp.int32
INF = np.inf


from _ulps import _raise_on_fp_errors, dn, up  # noqa: F401 (the autouse fixture applies here)


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


def wrap(i, n):
    """jnp's index normalisation: a negative index counts from the end."""
    return np.where(np.asarray(i) < 0, np.asarray(i) + n, np.asarray(i))


def _np_scatter(a, u, i, add):
    b = np.array(a, np.float64)
    j = wrap(i, b.size)
    keep = (j >= 0) & (j < b.size)
    if add:
        np.add.at(b, j[keep], np.asarray(u)[keep])
    else:
        b[j[keep]] = np.asarray(u)[keep]
    return b


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
    # the programs, and their values by numpy (jnp first wraps a negative index: i + m)
    progs = {
        "fill": (lambda x, i: x.at[i].get(mode="fill", fill_value=-0.5),
                 lambda x, i: x[wrap(i, x.size)] if 0 <= wrap(i, x.size) < x.size else -0.5),
        "clip": (lambda x, i: x.at[i].get(mode="clip"), lambda x, i: x[np.clip(wrap(i, x.size), 0, x.size - 1)]),
        "wrap": (lambda x, i: x[i], lambda x, i: x[wrap(i, x.size)]),
    }
    for name, (prog, f) in progs.items():
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
                v = float(f(x, i))
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


# ---------------------------------------------------------------------------
# gather with interval indices: exact ends on hand-built operands


A35 = np.arange(15.0).reshape(3, 5)            # a[r, c] = 5 r + c


def test_gather_columns_with_per_element_index_boxes_masks_the_batch_axis():
    # a[:, i]: the output's axis 1 is the batch axis (offset axis 0 holds the rows).  Column 0 of the output has
    # i in [0, 1] (hull of columns 0 and 1), column 1 has i = 3 exactly
    out = one(lambda a, i: a[:, i], Bound.point(A35), box([0.0, 3.0], [1.0, 3.0]), dtypes=[F32, I32])
    eq(out, [[0.0, 3.0], [5.0, 8.0], [10.0, 13.0]], [[1.0, 3.0], [6.0, 8.0], [11.0, 13.0]])
    # a box operand: the hull of the lower ends and of the upper ends separately
    lo, hi = A35 - 0.5, A35 + np.array([0.25, 0.0, 2.0, 0.0, 0.0])
    out = one(lambda a, i: a[:, i], box(lo, hi), box([1.0, 0.0], [2.0, 0.0]), dtypes=[F32, I32])
    eq(out, [[0.5, -0.5], [5.5, 4.5], [10.5, 9.5]], [[4.0, 0.25], [9.0, 5.25], [14.0, 10.25]])


def test_gather_with_a_two_component_index_needs_both_components_in_range():
    # a[i, j]: element 0 has (i, j) = (0, 4) exactly; element 1 has i in [1, 2], j in [0, 1].  The candidates
    # are the grid i in 0..2 x j in 0..4; a candidate counts for an element only when BOTH components can equal it
    out = one(lambda a, i, j: a[i, j], Bound.point(A35), box([0.0, 1.0], [0.0, 2.0]), box([4.0, 0.0], [4.0, 1.0]),
              dtypes=[F32, I32, I32])
    eq(out, [4.0, 5.0], [4.0, 11.0])


def test_gather_of_slices_of_a_3d_operand_with_a_2d_index():
    # a (4, 2, 3), i (2, 2): output (2, 2, 2, 3), batch axes 0, 1 and offset axes 2, 3
    a = np.arange(24.0).reshape(4, 2, 3)
    ilo = np.array([[0.0, 3.0], [1.0, 2.0]])
    ihi = np.array([[1.0, 3.0], [1.0, 3.0]])
    out = one(lambda op, i: op[i], Bound.point(a), box(ilo, ihi), dtypes=[F32, I32])
    want_lo = np.stack([np.stack([a[0], a[3]]), np.stack([a[1], a[2]])])
    want_hi = np.stack([np.stack([a[1], a[3]]), np.stack([a[1], a[3]])])
    eq(out, want_lo, want_hi)


def test_gather_clip_fill_and_wrapped_indices():
    op = box([0.0, 10.0, 20.0, 30.0, 40.0], [1.0, 11.0, 21.0, 31.0, 41.0])
    # clip: indices past the end read the last entry; jnp wraps a negative index first (-3..-1 are 2..4), and
    # one still negative after that (-7..-6 are -2..-1) reads the first entry
    out = one(lambda a, i: a.at[i].get(mode="clip"), op, box([6.0, -3.0, -7.0], [9.0, -1.0, -6.0]),
              dtypes=[F32, I32])
    eq(out, [40.0, 20.0, 0.0], [41.0, 41.0, 1.0])
    # fill: some of the box in bounds (entries 3, 4), the rest filled
    out = one(lambda a, i: a.at[i].get(mode="fill", fill_value=100.0), op, box([3.0, 5.0], [7.0, 6.0]),
              dtypes=[F32, I32])
    eq(out, [30.0, 100.0], [100.0, 100.0])
    # jnp wraps a negative index (select_n(i < 0, i, i + 5)): i in [-2, -1] is surely negative, so the index is
    # i + 5 in [3, 4]; i in [-1, 1] may be either: the hull of [-1, 1] and [4, 6], clamped, is every entry
    out = one(lambda a, i: a[i], op, box([-2.0, -1.0], [-1.0, 1.0]), dtypes=[F32, I32])
    eq(out, [30.0, 0.0], [41.0, 41.0])
    # a float operand filled with its default (NaN): nothing known where an index may be out of bounds
    out = one(lambda a, i: a.at[i].get(mode="fill"), op, box([0.0, 4.0], [1.0, 5.0]), dtypes=[F32, I32])
    eq(out, [0.0, -INF], [11.0, INF])
    assert out.why is not None and out.why.primitive.name == "gather"


def test_gather_keeps_the_hull_of_the_forms_each_element_can_read():
    # v[:, i] of one record (1, 3) in [-1, 1]^3: element 0 reads entry 0 exactly, element 1 entry 1 or 2; the form
    # of element 1 is the hull of e_1 and e_2 (coefficients in [0, 1] on entries 1, 2), element 0 keeps e_0
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = one(lambda v, i: v[:, i], x, box([0.0, 1.0], [0.0, 2.0]), dtypes=[F32, I32])
    lo, hi = out.lin.A["X"]
    np.testing.assert_array_equal(lo[0], [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(hi[0], [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    np.testing.assert_array_equal(out.lin.clo, [[0.0, 0.0]])
    np.testing.assert_array_equal(out.lin.chi, [[0.0, 0.0]])
    # a form and a known offset: x + c read at i, the constant parts hulled like the coefficients
    out = one(lambda v, i: (v + jnp.array([[1.0, 2.0, 3.0]], F32))[:, i], x, box([0.0, 1.0], [0.0, 2.0]),
              dtypes=[F32, I32])
    np.testing.assert_array_equal(out.lin.clo, [[1.0, 2.0]])
    np.testing.assert_array_equal(out.lin.chi, [[1.0, 3.0]])
    # out of bounds with a fill: the fill value has no form, so no form is claimed
    out = one(lambda v, i: v.at[:, i].get(mode="fill", fill_value=0.0), x, box([0.0, 2.0], [0.0, 3.0]),
              dtypes=[F32, I32])
    assert out.lin is None
    eq(out, [[-1.0, -1.0]], [[1.0, 1.0]])
    # a gather that moves the record axis (records i[0], i[1] of the m): no form
    out = rec(lambda v, i: v[i], [("m", 3), (2,)], [F32, I32], [data_input((1, 3), "X", -1.0, 1.0),
              box([0.0, 1.0], [1.0, 2.0])], 4)
    assert out.lin is None
    eq(out, [[-1.0] * 3] * 2, [[1.0] * 3] * 2)


def test_gather_norm_fact_is_the_largest_row_each_element_can_read():
    # rows of norms 5, 1 and 12; element 0 reads row 0 or 1 (norm <= 5), element 1 reads row 2 (12)
    table = np.array([[3.0, 4.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 12.0]], np.float32)
    out = one(lambda i: jnp.asarray(table)[i], box([0.0, 2.0], [1.0, 2.0]), dtypes=[I32])
    eq(out, [[1.0, 0.0, 0.0], [0.0, 0.0, 12.0]], [[3.0, 4.0, 0.0], [0.0, 0.0, 12.0]])
    n = out.nrm[1][:, 0]
    assert 5.0 <= n[0] <= 5.0 * (1 + 1e-15) and 12.0 <= n[1] <= 12.0 * (1 + 1e-15)
    # the norm along the batch axis is not a fact the table gives
    assert set(out.nrm) == {1}
    # a table that is a box, not a point: a row of element 0 may be (3, 4, -1), norm sqrt(26), above the norm 5 of
    # the lower ends' row (3, 4, 0)... no fact from one end
    out = one(lambda t, i: t[i], box(table - np.array([1.0, 1.0, 1.0], np.float32), table),
              box([0.0, 2.0], [1.0, 2.0]), dtypes=[F32, I32])
    assert not out.nrm or 1 not in out.nrm or out.nrm[1][0, 0] >= math.sqrt(26.0)
    # a possibly filled row (100, 100, 100): norm 100 sqrt(3)
    out = one(lambda i: jnp.asarray(table).at[i].get(mode="fill", fill_value=100.0), box([0.0, 2.0], [1.0, 3.0]),
              dtypes=[I32])
    assert not out.nrm or 1 not in out.nrm or out.nrm[1][1, 0] >= 100.0 * math.sqrt(3.0)


def test_norm_facts_through_transpose_squeeze_rev_and_slice():
    table = np.array([[3.0, 4.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 12.0, 0.0]], np.float32)
    row = lambda i: jnp.asarray(table)[i]                     # (k, 4), norm along axis 1
    near = lambda v, x: x <= v <= x * (1 + 1e-15)
    # transpose: the norm axis moves to 0
    out = one(lambda i: row(i).T, box([0.0, 2.0], [1.0, 2.0]), dtypes=[I32])
    assert set(out.nrm) == {0} and out.nrm[0].shape == (1, 2)
    assert near(out.nrm[0][0, 0], 5.0) and near(out.nrm[0][0, 1], 12.0)
    # reversing the batch axis reverses the facts; reversing the norm axis keeps them
    out = one(lambda i: lax.rev(row(i), (0,)), box([0.0, 2.0], [1.0, 2.0]), dtypes=[I32])
    assert near(out.nrm[1][0, 0], 12.0) and near(out.nrm[1][1, 0], 5.0)
    out = one(lambda i: lax.rev(row(i), (1,)), box([0.0, 2.0], [1.0, 2.0]), dtypes=[I32])
    assert near(out.nrm[1][0, 0], 5.0) and near(out.nrm[1][1, 0], 12.0)
    # slicing the batch axis keeps the facts of the rows kept
    out = one(lambda i: row(i)[1:], box([0.0, 2.0], [1.0, 2.0]), dtypes=[I32])
    assert out.nrm[1].shape == (1, 1) and near(out.nrm[1][0, 0], 12.0)
    # squeezing a batch axis of size 1: the norm axis renumbered
    out = one(lambda i: lax.squeeze(row(i), (0,)), box([0.0], [1.0]), dtypes=[I32])
    assert set(out.nrm) == {0} and near(float(out.nrm[0].reshape(-1)[0]), 5.0)
    # a 3-d table (2, 2, 3), rows along axis 2; squeeze axis 0 of the gathered (1, 2, 3) block
    t3 = np.zeros((2, 2, 3), np.float32)
    t3[0, 0, 0], t3[0, 1] = 2.0, [1.0, 2.0, 2.0]
    out = one(lambda i: lax.squeeze(jnp.asarray(t3)[i], (0,)), box([0.0], [0.0]), dtypes=[I32])
    assert set(out.nrm) >= {1}
    assert near(out.nrm[1][0, 0], 2.0) and near(out.nrm[1][1, 0], 3.0)


def test_index_candidates_over_two_components():
    # the grid spans each component's range over all elements: i in 0..2, j in 4..5
    c = B._index_candidates(np.array([[0.0, 5.0], [2.0, 4.0]]), np.array([[0.0, 5.0], [2.0, 4.0]]))
    assert c.tolist() == [[0.0, 4.0], [0.0, 5.0], [1.0, 4.0], [1.0, 5.0], [2.0, 4.0], [2.0, 5.0]]
    # fractional ends widen to the integers around them; a negative range counts too
    c = B._index_candidates(np.array([[-1.5]]), np.array([[0.2]]))
    assert c.tolist() == [[-2.0], [-1.0], [0.0], [1.0]]
    # the product of the counts is what is limited: 64 x 64 = 4096 enumerated, 64 x 65 not
    assert B._index_candidates(np.array([[0.0, 0.0]]), np.array([[63.0, 63.0]])).shape == (4096, 2)
    assert B._index_candidates(np.array([[0.0, 0.0]]), np.array([[63.0, 64.0]])) is None
    assert B._index_candidates(np.array([[-INF, 0.0]]), np.array([[0.0, 0.0]])) is None
    assert B._index_candidates(np.array([[0.0, -INF]]), np.array([[0.0, 0.0]])) is None
    # the limit counts the candidates, not the size of the indices: 3000..3100 is 101 candidates
    assert B._index_candidates(np.array([[3000.0]]), np.array([[3100.0]])).shape == (101, 1)
    assert B._index_candidates(np.array([[0.0, 0.0]]), np.array([[0.0, INF]])) is None


def test_gather_rule_on_random_boxes_contains_every_value():
    rng = np.random.default_rng(11)
    progs = {     # the program, and its value by numpy
        "promise": (lambda a, i: a[i], lambda a, i: a[wrap(i, 4)]),
        "clip": (lambda a, i: a.at[i].get(mode="clip"), lambda a, i: a[np.clip(wrap(i, 4), 0, 3)]),
        "fill": (lambda a, i: a.at[i].get(mode="fill", fill_value=-0.375),
                 lambda a, i: np.where(((wrap(i, 4) >= 0) & (wrap(i, 4) < 4))[:, None], a[np.clip(wrap(i, 4), 0, 3)],
                                       -0.375)),
        "cols": (lambda a, i: a[:, i % 4], lambda a, i: a[:, i % 4]),
        "pair": (lambda a, i: a[i, i + 1], lambda a, i: a[wrap(i, 4), wrap(i + 1, 4)]),
    }
    for name, (prog, f) in progs.items():
        for _ in range(10):
            alo = rng.integers(-16, 16, (4, 4)) / 8.0
            ahi = alo + rng.integers(0, 8, (4, 4)) / 8.0
            ilo = rng.integers(-6, 6, 3)
            ihi = ilo + rng.integers(0, 4, 3)
            if name in ("promise", "pair"):
                ilo, ihi = np.clip(ilo, -4, 2), np.clip(ihi, -4, 2)
            out = interp(prog, [box(alo, ahi), box(ilo.astype(float), ihi.astype(float))], [F32, I32])[0]
            for _ in range(25):
                a = (alo * 8 + rng.integers(0, 8, (4, 4)) % ((ahi - alo) * 8 + 1)) / 8.0
                i = np.array([rng.integers(lo_, hi_ + 1) for lo_, hi_ in zip(ilo, ihi)])
                v = f(a, i)
                assert inside(out, v), (name, alo, ahi, ilo, ihi, a, i, v, out.lo, out.hi)


# ---------------------------------------------------------------------------
# scatters, dynamic_update_slice, iota, argmax


def test_scatter_and_update_ends():
    op = box([0.0, 10.0, 20.0], [1.0, 11.0, 21.0])
    # set: every entry may keep its value or take any update (the hull); no update: the operand
    out = one(lambda a, u, i: a.at[i].set(u), op, box([5.0, -3.0], [6.0, 30.0]), box([0, 0], [2, 2]),
              dtypes=[F32, F32, I32])
    eq(out, [-3.0, -3.0, -3.0], [30.0, 30.0, 30.0])
    out = one(lambda a, u, i: a.at[i].set(u), op, box([5.0], [6.0]), box([0], [2]), dtypes=[F32, F32, I32])
    eq(out, [0.0, 6.0 - 1.0, 5.0], [6.0, 11.0, 21.0])
    out = one(lambda a, u, i: a.at[i].set(u), op, box(np.zeros((0,)), np.zeros((0,))), box(np.zeros((0,)),
              np.zeros((0,))), dtypes=[F32, F32, I32])
    eq(out, [0.0, 10.0, 20.0], [1.0, 11.0, 21.0])
    # dynamic_update_slice: the same hull; an empty update keeps the operand
    out = one(lambda a, u, i: lax.dynamic_update_slice(a, u, (i,)), op, box([2.0], [3.0]), box(0.0, 2.0),
              dtypes=[F32, F32, I32], shapes=[(3,), (1,), ()])
    eq(out, [0.0, 3.0 - 1.0, 2.0], [3.0, 11.0, 21.0])
    out = one(lambda a, u, i: lax.dynamic_update_slice(a, u, (i,)), op, box(np.zeros((0,)), np.zeros((0,))),
              box(0.0, 2.0), dtypes=[F32, F32, I32], shapes=[(3,), (0,), ()])
    eq(out, [0.0, 10.0, 20.0], [1.0, 11.0, 21.0])
    # a 2-d operand and a row update: every entry
    op2 = box([[0.0, 1.0], [2.0, 3.0]], [[0.5, 1.5], [2.5, 3.5]])
    out = one(lambda a, u, i: lax.dynamic_update_slice(a, u, (i, 0)), op2, box([[-1.0, 9.0]], [[-1.0, 9.0]]),
              box(0.0, 1.0), dtypes=[F32, F32, I32], shapes=[(2, 2), (1, 2), ()])
    eq(out, [[-1.0, -1.0], [-1.0, -1.0]], [[9.0, 9.0], [9.0, 9.0]])


def test_scatter_rules_on_random_boxes_contain_every_value():
    rng = np.random.default_rng(5)
    progs = {     # the program, and its value by numpy (jnp wraps negative indices; out of bounds updates are dropped;
        # with duplicate indices numpy's assignment keeps the last update, one of the outcomes XLA allows)
        "add": (lambda a, u, i: a.at[i].add(u), lambda a, u, i: _np_scatter(a, u, i, add=True)),
        "add_drop": (lambda a, u, i: a.at[i].add(u, mode="drop"), lambda a, u, i: _np_scatter(a, u, i, add=True)),
        "set": (lambda a, u, i: a.at[i].set(u), lambda a, u, i: _np_scatter(a, u, i, add=False)),
        "set_drop": (lambda a, u, i: a.at[i].set(u, mode="drop"), lambda a, u, i: _np_scatter(a, u, i, add=False)),
        "dus": (lambda a, u, i: lax.dynamic_update_slice(a, u[:2], (i[0],)),
                lambda a, u, i: np.concatenate([a[:min(max(i[0], 0), 3)], u[:2], a[min(max(i[0], 0), 3) + 2:]])),
    }
    for name, (prog, f) in progs.items():
        for _ in range(8):
            alo = rng.integers(-16, 16, 5) / 8.0
            ahi = alo + rng.integers(0, 8, 5) / 8.0
            ulo = rng.integers(-16, 16, 4) / 8.0
            uhi = ulo + rng.integers(0, 8, 4) / 8.0
            ilo = rng.integers(-1 if "drop" in name else 0, 5, 4)
            ihi = np.minimum(ilo + rng.integers(0, 3, 4), 6 if "drop" in name else 4)
            out = interp(prog, [box(alo, ahi), box(ulo, uhi), box(ilo.astype(float), ihi.astype(float))],
                         [F32, F32, I32])[0]
            for _ in range(25):
                a = alo + rng.integers(0, 8, 5) % ((ahi - alo) * 8 + 1) / 8.0
                u = ulo + rng.integers(0, 8, 4) % ((uhi - ulo) * 8 + 1) / 8.0
                i = np.array([rng.integers(lo_, hi_ + 1) for lo_, hi_ in zip(ilo, ihi)])
                if rng.random() < 0.3:
                    i[:] = i[0]                     # duplicates: every update into one entry
                v = f(a, u, i)
                assert inside(out, v), (name, a, u, i, v, out.lo, out.hi)


def test_iota_and_argmax_along_fixed_and_record_axes():
    out = one(lambda x: x + lax.broadcasted_iota(F32, (3, 2), 0), box(np.zeros((3, 2)), np.zeros((3, 2))))
    eq(out, [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]], [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    # iota along a fixed axis next to a record axis: exact positions; along the record axis: 0..m-1
    out = rec(lambda x: x + lax.broadcasted_iota(F32, x.shape, 1), [("m", 3)], [F32], [box(np.zeros((1, 3)),
              np.zeros((1, 3)))], 7)
    eq(out, [[0.0, 1.0, 2.0]], [[0.0, 1.0, 2.0]])
    out = rec(lambda x: x + lax.broadcasted_iota(F32, x.shape, 0), [("m", 3)], [F32], [box(np.zeros((1, 3)),
              np.zeros((1, 3)))], 7)
    eq(out, [[0.0] * 3], [[6.0] * 3])
    # argmax along axis 0 of (3, 4): 0..2; along the record axis: 0..m-1; the dtype does not matter
    out = one(lambda x: jnp.argmax(x, axis=0).astype(F32), box(np.zeros((3, 4)), np.ones((3, 4))))
    eq(out, [0.0] * 4, [2.0] * 4)
    out = one(lambda x: jnp.argmin(x, axis=1).astype(F32), box(np.zeros((3, 4)), np.ones((3, 4))))
    eq(out, [0.0] * 3, [3.0] * 3)
    out = rec(lambda x: jnp.argmax(x, axis=0).astype(F32), [("m", 2)], [F32], [box(np.zeros((1, 2)),
              np.ones((1, 2)))], 9)
    eq(out, [0.0, 0.0], [8.0, 8.0])
    assert out.why is None


# ---------------------------------------------------------------------------
# dynamic_slice along a record axis (regression: x[i] over the records kept the form of the record at the same
# position, so x - x[i] had the form 0 and its Jacobian norm was claimed to be 0)


def test_a_record_read_at_another_position_has_no_form():
    def prog(v, i):
        return v - v[i]
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = rec(prog, [("m", 3), ()], [F32, I32], [x, box(0.0, 3.0)], 4)
    eq(out, [[-2.0] * 3], [[2.0] * 3])
    # x_j - x_i ranges over [-2, 2]^3: its norm reaches 2 sqrt(3); a form must not claim less
    if out.lin is not None:
        assert np.any(out.lin.A["X"][0] != 0.0) or np.any(out.lin.clo != 0.0)
    from bayesdp.analysis.structure.program import operator_norm_bound
    bound, _ = operator_norm_bound([out], None)
    assert bound >= 2.0 * math.sqrt(3.0)
    # a constant index is the same: record 2 is not the record at each position
    out = rec(lambda v: v - v[2], [("m", 3)], [F32], [x], 4)
    assert out.lin is None or np.any(out.lin.A["X"][0] != 0.0) or np.any(out.lin.clo != 0.0)
    # the whole record axis (start 0, size m) keeps every position: the form is kept
    out = rec(lambda v, i: lax.dynamic_slice(v, (i, 0), (v.shape[0], 2)), [("m", 3), ()], [F32, I32],
              [x, box(0.0, 0.0)], 4)
    np.testing.assert_array_equal(out.lin.A["X"][0][0], np.eye(3)[:2])


# ---------------------------------------------------------------------------
# relational rules: exact ends where the rule applies, and programs that nearly match but must not be matched
# (a misfiring rule would claim a range that misses the value at the point given)


def sig(x):
    return 1.0 / (1.0 + math.exp(-x))


def softplus(x):
    return math.log1p(math.exp(x)) if x < 30 else x + math.log1p(math.exp(-x))


def test_logaddexp_gap_ends_and_operand_orders():
    # a - logaddexp(a, b) = -softplus(b - a), in [-softplus(b_hi - a_lo), -softplus(b_lo - a_hi)], LIBM_ULPS + 2 floats out (numpy's logaddexp: libm's exp and log1p, and an add);
    # b's range is over all its entries
    a, b = box([0.0, 0.0], [1.0, 1.0]), box([0.0, -1.0], [1.0, 0.5])
    for prog in (lambda u, v: u - jnp.logaddexp(u, v), lambda u, v: u - jnp.logaddexp(v, u)):
        out = one(prog, a, b)
        eq(out, [dn(-np.logaddexp(0.0, 1.0 - 0.0), B.LIBM_ULPS + 2)] * 2, [up(-np.logaddexp(0.0, -1.0 - 1.0), B.LIBM_ULPS + 2)] * 2)
        assert out.lo[0] <= -softplus(1.0) and out.hi[0] >= -softplus(-2.0)
    # the upper end is at most 0 (the value is): a far above b
    out = one(lambda u, v: u - jnp.logaddexp(u, v), box([1000.0], [1001.0]), box([0.0], [0.0]))
    assert out.hi[0] == 0.0 and out.lo[0] == dn(-np.logaddexp(0.0, -1000.0), B.LIBM_ULPS + 2)
    # b unbounded (it may be +inf, e.g. -log(y + 2) at y = -2, where the program's gap is a itself): no relation, the
    # box rule's result, whose upper end is not below 0 as the relation's is
    out = one(lambda u, v: u - jnp.logaddexp(u, v), box([0.0], [1.0]), box([-INF], [0.0]))
    assert out.hi[0] > 0.0
    out = one(lambda u, v: u - jnp.logaddexp(u, v), box([0.0], [1.0]), box([0.0], [INF]))
    assert out.hi[0] > 0.0
    # b = -a (log-cosh: logaddexp(r, -r), r anywhere): [-inf, 0], either operand order
    for prog in (lambda u: u - jnp.logaddexp(u, -u), lambda u: u - jnp.logaddexp(-u, u)):
        out = one(prog, box([-INF], [INF]))
        assert out.lo[0] == -INF and out.hi[0] == 0.0
    # b = -a with a bounded: the finite ends, -softplus(-2 a) over a in [0, 1]: [-softplus(0), -softplus(-2)]
    out = one(lambda u: u - jnp.logaddexp(u, -u), box([0.0], [1.0]))
    assert out.hi[0] <= 0.0 and out.lo[0] <= -np.log(2.0) and out.hi[0] >= -np.logaddexp(0.0, -2.0)


def test_logaddexp_gap_through_replace_inf_and_its_near_misses():
    # JAX's derivative of softplus: exp(r - u) t with r, u the _replace_inf of a and of logaddexp(a, 0): for a in
    # [0, 1], sigmoid(a) in [1/2, sigmoid(1)]
    fn = lambda a, t: jax.jvp(jax.nn.softplus, (a,), (t,))[1]
    out = one(fn, box([0.0], [1.0]), box([1.0], [1.0]))
    assert out.lo[0] <= 0.5 <= out.lo[0] + 1e-14 and out.hi[0] - 1e-14 <= sig(1.0) <= out.hi[0]
    # a select that replaces another value than +inf is not _replace_inf: a = 5 gives 0 - logaddexp(5, 0) = -5.007
    def near(a, b):
        u = lax.select(a == 5.0, jnp.zeros_like(a), a)
        return u - jnp.logaddexp(a, b)
    out = one(near, box([4.0], [6.0]), box([0.0], [0.0]))
    assert out.lo[0] <= -softplus(5.0)
    # another variable than the logaddexp's operands: 1 - logaddexp(-10, 0) = 0.99995
    out = one(lambda u, w, v: u - jnp.logaddexp(w, v), box([0.0], [1.0]), box([-10.0], [-9.0]), box([0.0], [0.0]))
    assert out.hi[0] >= 1.0 - np.logaddexp(-10.0, 0.0)
    # a plain function that is not JAX's logaddexp (a jit of the same name is not a custom_jvp_call)
    out = one(lambda u, v: u - jax.jit(lambda x, y: jnp.maximum(x, y))(u, v), box([0.0], [1.0]), box([2.0], [3.0]))
    assert out.lo[0] <= -3.0


def test_ratio_of_sum_exact_ends():
    # (t e) / (e + c), e in [1, 3], c in [0.5, 2] (over all its entries), t in [-1, 2]: r in [1/3, 3/3.5]
    def prog(t, e, c):
        return (t * e) / (e + c)
    out = one(prog, box([-1.0, -1.0], [2.0, 2.0]), box([1.0, 1.0], [3.0, 3.0]), box([0.5, 1.0], [1.0, 2.0]))
    rhi = up(3.0 / 3.5, 2)
    eq(out, [-rhi, -rhi], [2.0 * rhi, 2.0 * rhi])
    # the same with the factors of the numerator in the other order, and the sum's
    out = one(lambda t, e, c: (e * t) / (c + e), box([1.0], [1.0]), box([1.0], [3.0]), box([0.5], [2.0]))
    eq(out, [dn(1.0 / 3.0, 2)], [up(3.0 / 3.5, 2)])
    # e may be 0: r's lower end 0; e unbounded above: r's upper end 1
    out = one(prog, box([1.0], [1.0]), box([0.0], [1.0]), box([1.0], [1.0]))
    eq(out, [0.0], [up(0.5, 2)])
    out = one(prog, box([1.0], [1.0]), box([1.0], [INF]), box([1.0], [1.0]))
    eq(out, [dn(0.5, 2)], [1.0])
    # c may be 0 when e > 0: r in [e_lo/(e_lo + c_hi), 1]
    out = one(prog, box([1.0], [1.0]), box([1.0], [2.0]), box([0.0], [1.0]))
    eq(out, [dn(0.5, 2)], [1.0])


def test_ratio_of_sum_of_softplus_derivative_and_its_form():
    fn = lambda a, t: jax.jvp(lambda x: jnp.log1p(jnp.exp(x)), (a,), (t,))[1]
    out = one(fn, box([0.0], [1.0]), box([1.0], [1.0]))
    assert out.lo[0] <= 0.5 <= out.lo[0] + 1e-14 and out.hi[0] - 1e-14 <= sig(1.0) <= out.hi[0]
    # the tangent's form is kept, scaled by r: the coefficients of x in [r_lo, r_hi] e_j
    x = data_input((1, 2), "X", -1.0, 1.0)
    out = one(lambda t, e: (t * e) / (e + 1.0), x, box([[1.0, 1.0]], [[3.0, 3.0]]))
    lo, hi = out.lin.A["X"]
    np.testing.assert_array_equal(lo[0], np.diag([dn(0.5, 2)] * 2))
    np.testing.assert_array_equal(hi[0], np.diag([up(0.75, 2)] * 2))


def test_ratio_of_sum_near_misses():
    def prog(t, e, c):
        return (t * e) / (e + c)
    one1 = box([1.0], [1.0])
    # c may be negative: e / (e + c) reaches 1 / 0.5 = 2
    out = one(prog, one1, box([1.0], [2.0]), box([-0.5], [1.0]))
    assert out.hi[0] >= 2.0
    # e may be negative: -1 / (-1 + 2) = -1
    out = one(prog, one1, box([-1.0], [1.0]), box([2.0], [2.0]))
    assert out.lo[0] <= -1.0
    # e and c may both be 0: nothing known
    out = one(prog, one1, box([0.0], [1.0]), box([0.0], [1.0]))
    assert not out.bounded()
    # the numerator's factor is another value than the sum's: e / (w + 1) reaches 2 / 2 = 1 at e = 2, w = 1
    out = one(lambda t, e, w: (t * e) / (w + 1.0), one1, box([1.0], [2.0]), box([1.0], [2.0]))
    assert out.hi[0] >= 1.0
    # the numerator is not a product, or the denominator not a sum
    out = one(lambda t, e: jnp.exp(t) / (e + 1.0), box([0.0], [1.0]), box([0.0], [1.0]))
    assert out.hi[0] >= math.e
    out = one(lambda t, e: (t * e) / (e - 1.0), one1, box([2.0], [3.0]))
    assert out.hi[0] >= 2.0


def test_concave_product_ends():
    # u (c - u): at least its smaller end value, at most the vertex value c^2/4 when c/2 is in the box
    out = one(lambda u: u * (2.0 - u), box([0.0, 1.5], [3.0, 3.0]))
    eq(out, [-3.0, -3.0], [1.0, 0.75])
    out = one(lambda u: (1.0 - u) * u, box([0.6], [0.9]))
    eq(out, [floor_float(Fraction(0.9) * (1 - Fraction(0.9)))], [ceil_float(Fraction(0.6) * (1 - Fraction(0.6)))])
    # an unbounded end: that side's value is -inf, the vertex still bounds it above
    out = one(lambda u: u * (1.0 - u), box([-INF], [0.25]))
    eq(out, [-INF], [0.25 * 0.75])
    out = one(lambda u: u * (1.0 - u), box([-INF], [INF]))
    eq(out, [-INF], [0.25])
    # the sigmoid's derivative: s (1 - s) t in [0, 1/4] t for every real input
    fn = lambda a, t: jax.jvp(jax.nn.sigmoid, (a,), (t,))[1]
    out = one(fn, box([-INF], [INF]), box([2.0], [2.0]))
    eq(out, [0.0], [0.5])


def test_concave_product_near_misses():
    # u (c - w) with w another value: 1 (1 - 0) = 1 > 1/4
    out = one(lambda u, w: u * (1.0 - w), box([0.0], [1.0]), box([0.0], [1.0]))
    assert out.hi[0] >= 1.0
    # c not a known number: u (c - u) with c in [1, 3] reaches 1 (3 - 1) = 2 > 1/4
    out = one(lambda u, c: u * (c - u), box([0.0], [1.0]), box([1.0], [3.0]))
    assert out.hi[0] >= 2.0
    # (c + u) u is not concave: 1 (1 + 1) = 2
    out = one(lambda u: u * (1.0 + u), box([0.0], [1.0]))
    assert out.hi[0] >= 2.0
    # u (u - c): a convex parabola, reaching 0 at both ends of [0, 1] and -1/4 inside
    out = one(lambda u: u * (u - 1.0), box([0.0], [1.0]))
    assert out.lo[0] <= -0.25


def test_one_minus_square_ends_orders_and_form():
    # (t + t u)(1 - u) = t (1 - u^2): u in [-0.5, 0.25] gives 1 - u^2 in [0.75, 1]; t in [1, 2].  The square's
    # box is integer_pow's: exact here (0.5^2 = 0.25 is a float), so 0.75; an inexact square (u in [-0.3, 0.1]:
    # 0.09 is not a float) is 3 floats out, and 1 - it rounds down once more
    progs = [lambda t, u: (t + t * u) * (1.0 - u), lambda t, u: (1.0 - u) * (u * t + t),
             lambda t, u: (t * u + t) * (1.0 - u)]
    k_inexact = floor_float(1 - Fraction(up(0.3 ** 2, 3)))
    assert k_inexact < 1 - Fraction(0.3) ** 2
    for prog in progs:
        out = one(prog, box([1.0], [2.0]), box([-0.5], [0.25]))
        eq(out, [0.75], [2.0])
        out = one(prog, box([1.0], [2.0]), box([-0.3], [0.1]))
        eq(out, [k_inexact], [2.0])
    k_lo = 0.75
    # tanh's derivative over all reals: [0, 1] t
    fn = lambda a, t: jax.jvp(jnp.tanh, (a,), (t,))[1]
    out = one(fn, box([-INF], [INF]), box([3.0], [3.0]))
    eq(out, [0.0], [3.0])
    # the tangent's form is kept, scaled by [1 - max u^2, 1 - min u^2]
    x = data_input((1, 2), "X", -1.0, 1.0)
    out = one(lambda t, u: (t + t * u) * (1.0 - u), x, box([[0.5, 0.5]], [[0.5, 0.5]]))
    lo, hi = out.lin.A["X"]
    k_hi = 0.75                                     # u a point 0.5: 1 - 0.25 exactly at both ends
    np.testing.assert_array_equal(lo[0], np.diag([k_lo, k_lo]))
    np.testing.assert_array_equal(hi[0], np.diag([k_hi, k_hi]))


def test_one_minus_square_near_misses():
    t1 = box([1.0], [1.0])
    # (t + t u)(1 - w): w = -1 gives 2 (1 + u)
    out = one(lambda t, u, w: (t + t * u) * (1.0 - w), t1, box([0.0], [0.5]), box([-1.0], [-1.0]))
    assert out.hi[0] >= 3.0
    # (t + s u)(1 - u) with s another value: s = 2, u = -0.5 gives (1 - 1)(1.5) = 0, u = 0.5: 2 * 0.5 = 1 ... and
    # s = -2, u = 0.5: (1 - 1)(0.5) = 0, u = -0.5: (1 + 1)(1.5) = 3
    out = one(lambda t, s, u: (t + s * u) * (1.0 - u), t1, box([-2.0], [2.0]), box([-0.5], [0.5]))
    assert out.hi[0] >= 3.0
    # (t + t u)(2 - u): (1 + 0.5)(1.5) = 2.25 > 1
    out = one(lambda t, u: (t + t * u) * (2.0 - u), t1, box([0.0], [0.5]))
    assert out.hi[0] >= 2.25
    # (t - t u)(1 - u) = t (1 - u)^2: u = -0.5 gives 2.25
    out = one(lambda t, u: (t - t * u) * (1.0 - u), t1, box([-0.5], [0.5]))
    assert out.hi[0] >= 2.25
    # (t + t u)(1 + u) = t (1 + u)^2
    out = one(lambda t, u: (t + t * u) * (1.0 + u), t1, box([-0.5], [0.5]))
    assert out.hi[0] >= 2.25


def test_cancel_factor_ends_and_near_misses():
    # (t e) / e = t for e != 0 (JAX's derivative of xlogy(y, exp(c)))
    fn = lambda a, t: (lambda e: (t * e) / e)(jnp.exp(jnp.clip(a, -3.0, 3.0)))
    out = one(fn, box([-INF], [INF]), box([-2.0], [5.0]))
    eq(out, [-2.0], [5.0])
    # nested products, either order: (t (y d)) / d = t y
    out = one(lambda t, y, d: (t * (y * d)) / d, box([1.0], [2.0]), box([-1.0], [3.0]), box([0.5], [4.0]))
    eq(out, [-2.0], [6.0])
    out = one(lambda t, y, d: ((d * y) * t) / d, box([1.0], [2.0]), box([-1.0], [3.0]), box([-4.0], [-0.5]))
    eq(out, [-2.0], [6.0])
    # d may be 0: no relation (the box rule: unbounded)
    out = one(lambda t, d: (t * d) / d, box([1.0], [2.0]), box([-1.0], [1.0]))
    assert not out.bounded()
    out = one(lambda t, d: (t * d) / d, box([1.0], [2.0]), box([0.0], [1.0]))
    assert not out.bounded()
    # another denominator: (t e) / w reaches 1 * 2 / 1 = 2
    out = one(lambda t, e, w: (t * e) / w, box([1.0], [1.0]), box([1.0], [2.0]), box([1.0], [2.0]))
    assert out.hi[0] >= 2.0
    # the factor is a sum, not a product: (t + d) / d reaches (1 + 1) / 1 = 2
    out = one(lambda t, d: (t + d) / d, box([1.0], [1.0]), box([1.0], [2.0]))
    assert out.hi[0] >= 2.0


def relation_only(rule, fn, *ins, **kw):
    """The box that the relational rule ``rule`` itself returns for the last equation of ``fn`` it matches (the
    interpreter intersects it with the box rules' result, asserted here to lie inside it).  The ends asserted on it
    are the rule's own on every JAX version: JAX 0.11.2 writes the derivative of ``jnp.clip`` with ``select_n``
    (exactly 1 inside the clip's range) where earlier versions divide by ``select_n(eq, 2, 1)``, so the box rules
    around a relation can be tighter than the relation there, and the intersection no longer shows its ends."""
    seen = []

    def recording(run, eqn, shape):
        got = rule(run, eqn, shape)
        if got is not None:
            seen.append(got)
        return got

    saved = B.RELATIONS
    B.RELATIONS = {k: tuple(recording if r is rule else r for r in rules) for k, rules in saved.items()}
    try:
        out = one(fn, *ins, **kw)
    finally:
        B.RELATIONS = saved
    assert seen, f"{rule.__name__} did not match"
    lo, hi = (np.broadcast_to(np.asarray(x, np.float64), out.shape) for x in seen[-1][:2])
    assert np.all(out.lo >= lo) and np.all(out.hi <= hi)
    return Bound.box(lo, hi)


def test_softplus_parts_ends():
    fn = lambda a, t: jax.jvp(lambda x: jnp.clip(x, 0) + jnp.log1p(jnp.exp(-jnp.abs(x))), (a,), (t,))[1]
    # r > 0: t [sigmoid(r_lo), sigmoid(r_hi)], 4 floats out
    out = relation_only(B.softplus_parts, fn, box([0.5], [2.0]), box([1.0], [1.0]))
    assert dn(sig(0.5), 6) <= out.lo[0] <= dn(sig(0.5), 3) and up(sig(2.0), 3) <= out.hi[0] <= up(sig(2.0), 6)
    # r's box contains 0: the lower end 0
    out = relation_only(B.softplus_parts, fn, box([-3.0], [1.0]), box([1.0], [1.0]))
    assert out.lo[0] == 0.0 and up(sig(1.0), 3) <= out.hi[0] <= up(sig(1.0), 6)
    # r far below: both ends 0 (exp underflows), the upper end 4 floats above, and one more from the product with
    # t (a product below the underflow threshold is rounded outward unconditionally, _two_prod)
    out = relation_only(B.softplus_parts, fn, box([-800.0], [-750.0]), box([1.0], [1.0]))
    eq(out, [0.0], [up(0.0, 5)])
    # r unbounded below: lower end 0; t negative: the ends swap
    out = relation_only(B.softplus_parts, fn, box([-INF], [-1.0]), box([-2.0], [-2.0]))
    assert out.hi[0] == 0.0 and -2.0 * up(sig(-1.0), 6) <= out.lo[0] <= -2.0 * up(sig(-1.0), 3)
    # the tangent's form is kept
    x = data_input((1, 2), "X", -1.0, 1.0)
    out = one(lambda r, t: jax.jvp(lambda v: jnp.clip(v, 0) + jnp.log1p(jnp.exp(-jnp.abs(v))), (r,), (t,))[1],
              box([[1.0, 1.0]], [[1.0, 1.0]]), x)
    lo, hi = out.lin.A["X"]
    assert np.all(np.diag(lo[0]) <= sig(1.0)) and np.all(np.diag(hi[0]) >= sig(1.0))
    assert np.all(np.diag(hi[0]) <= sig(1.0) + 1e-14) and np.all(lo[0] - np.diag(np.diag(lo[0])) == 0.0)


def _bce(a, t, e_of=None, pred=None, clip=None, sign=-1.0, e_fn=None, den=None, num=None, neg=None, pos=None):
    """JAX's derivative of clip(a, 0) + log1p(exp(-|a|)) written out: clip'(a) t + (-select(a >= 0, t, -t)) e/(e + 1)
    with e = exp(-|a|); each argument replaces one piece by a near miss."""
    e = (e_fn or (lambda x: jnp.exp(-jnp.abs(x))))(a if e_of is None else e_of)
    c = jax.jvp(clip or (lambda x: jnp.clip(x, 0)), (a,), (t,))[1]
    s_ = lax.select(a >= 0 if pred is None else pred, (pos or (lambda v: v))(t), (neg or (lambda v: -v))(t))
    n = (num or (lambda u, v: u * v))(-s_ if sign < 0 else s_, e)
    return c + n / (den or (lambda v: v + 1.0))(e)


def test_softplus_parts_matches_the_written_out_derivative():
    out = relation_only(B.softplus_parts, lambda a, t: _bce(a, t), box([0.5], [2.0]), box([1.0], [1.0]))
    assert dn(sig(0.5), 6) <= out.lo[0] <= dn(sig(0.5), 3) and up(sig(2.0), 3) <= out.hi[0] <= up(sig(2.0), 6)


def test_softplus_parts_near_misses():
    t1 = box([1.0], [1.0])
    # e = exp(-|b|) of another value: at a = 1, b = 0 the value is 1 - 1/2, below the claim sigmoid(1) = 0.73
    out = one(lambda a, b, t: _bce(a, t, e_of=b), box([1.0], [2.0]), box([0.0], [0.0]), t1)
    assert out.lo[0] <= 0.5
    # no minus: t + t e/(1 + e) = 1 + sigmoid(-a) > 1 for a > 0
    out = one(lambda a, t: _bce(a, t, sign=1.0), box([1.0], [2.0]), t1)
    assert out.hi[0] >= 1.0 + sig(-1.0) - 1e-6
    # the select's test a > 1, not a >= 0: on [0.5, 1] it takes -t, and the value is 1 + sigmoid(-a)
    out = one(lambda a, t: _bce(a, t, pred=a > 1.0), box([0.5], [1.0]), t1)
    assert out.hi[0] >= 1.0 + sig(-1.0) - 1e-6
    # the select's test on another value: b >= 0 with b < 0 takes -t
    out = one(lambda a, b, t: _bce(a, t, pred=b >= 0), box([0.5], [1.0]), box([-2.0], [-1.0]), t1)
    assert out.hi[0] >= 1.0 + sig(-1.0) - 1e-6
    # clip(a, 1): its derivative is 0 below 1, the value -sigmoid(-a) < 0
    out = one(lambda a, t: _bce(a, t, clip=lambda x: jnp.clip(x, 1.0)), box([0.5], [0.9]), t1)
    assert out.lo[0] <= -sig(-0.9)
    # exp(-a) (no abs): for a < 0 it is exp(|a|) > 1, and the value is sigmoid(|a|), not sigmoid(a) <= 0.27
    out = one(lambda a, t: _bce(a, t, e_fn=lambda x: jnp.exp(-x)), box([-2.0], [-1.0]), t1)
    assert out.hi[0] >= sig(1.0)
    # exp(|a|) (no minus): the value 1 - sigmoid(|a|) = sigmoid(-a) <= 0.27, not sigmoid(a) >= 0.73
    out = one(lambda a, t: _bce(a, t, e_fn=lambda x: jnp.exp(jnp.abs(x))), box([1.0], [2.0]), t1)
    assert out.lo[0] <= sig(-1.0)
    # -|a| (no exp): e / (e + 1) = 3 at a = 1.5, the value 1 - 3 = -2
    out = one(lambda a, t: _bce(a, t, e_fn=lambda x: -jnp.abs(x)), box([1.0], [2.0]), t1)
    assert out.lo[0] <= -2.0
    # e / (e - 1) (a difference, not the sum e + 1): 1 - e/(e - 1) reaches 1.58 at a = 1
    out = one(lambda a, t: _bce(a, t, den=lambda v: v - 1.0), box([1.0], [2.0]), t1)
    assert out.hi[0] >= 1.0 + math.exp(-1.0) / (1.0 - math.exp(-1.0))
    # (-t + e) / (e + 1) (a sum, not the product -t e): 1 + (e - 1)/(e + 1) = 0.54 at a = 1
    out = one(lambda a, t: _bce(a, t, num=lambda u, v: u + v), box([1.0], [2.0]), t1)
    assert out.lo[0] <= 1.0 + (math.exp(-1.0) - 1.0) / (math.exp(-1.0) + 1.0) + 1e-6
    # e / (e + 2): not the sum with 1; at a = 1 the value is 1 - e/(e + 2) = 0.845 > sigmoid(1) = 0.731
    out = one(lambda a, t: _bce(a, t, den=lambda v: v + 2.0), box([1.0], [1.0]), t1)
    assert out.hi[0] >= 1.0 - math.exp(-1.0) / (math.exp(-1.0) + 2.0) - 1e-6
    # clip(a, 0, 5): ("max", "min"), not clip(a, 0); above 5 its derivative is 0 and the value -sigmoid(-a) < 0
    out = one(lambda a, t: _bce(a, t, clip=lambda x: jnp.clip(x, 0.0, 5.0)), box([6.0], [7.0]), t1)
    assert out.lo[0] <= -sig(-6.0) + 1e-9


def test_clipped_sigmoid_log_ends():
    def logp(lo, hi):
        return lambda a, t: jax.jvp(lambda x: jnp.log(jnp.clip(jax.nn.sigmoid(x), lo, hi)), (a,), (t,))[1]

    def log1mp(lo, hi):
        return lambda a, t: jax.jvp(lambda x: jnp.log1p(-jnp.clip(jax.nn.sigmoid(x), lo, hi)), (a,), (t,))[1]
    full, t1 = box([-INF], [INF]), box([1.0], [1.0])
    # d log p = t (1 - s) w in t [0, 1 - L]; d log(1 - p) = -t s w in t [-U, 0]; 2 and 3 floats out
    eq(one(logp(0.05, 0.95), full, t1), [0.0], [up(1.0 - F(0.05), 2)])
    eq(one(log1mp(0.1, 0.9), full, t1), [-up(F(0.9), 3)], [0.0])
    # s's own range counts: a in [0, 1] gives s >= 1/2 (its box's lower end), so 1 - L <= 1/2
    out = relation_only(B.clipped_sigmoid_log, logp(0.05, 0.95), box([0.0], [1.0]), t1)
    assert out.lo[0] == 0.0 and 0.5 <= out.hi[0] <= 0.5 + 1e-15
    out = relation_only(B.clipped_sigmoid_log, log1mp(0.1, 0.9), box([-INF], [0.0]), t1)
    # U = s's upper end, sigmoid(0) = 1/2 moved out by the logistic rule's LIBM_ULPS + 2 floats, then 3 more
    assert out.hi[0] == 0.0 and out.lo[0] == -up(0.5, B.LIBM_ULPS + 5)
    # the tangent t in [-2, 3]
    eq(one(logp(0.05, 0.95), full, box([-2.0], [3.0])), [-2.0 * up(1.0 - F(0.05), 2)], [3.0 * up(1.0 - F(0.05), 2)])


def test_clipped_sigmoid_log_near_misses():
    t1 = box([1.0], [1.0])
    # log of a clipped tanh (not a sigmoid): d log p = t (1 - p^2) / p with p in [0.5, 0.9] reaches 1.5 > 1 - L
    fn = lambda a, t: jax.jvp(lambda x: jnp.log(jnp.clip(jnp.tanh(x), 0.5, 0.9)), (a,), (t,))[1]
    out = one(fn, box([0.0], [2.0]), t1)
    assert out.hi[0] >= (1 - 0.5 ** 2) / 0.5
    # the derivative divided by a clip of ANOTHER sigmoid: t s (1 - s) / clip(sigmoid(b)) reaches 0.25 / F(0.05) = 5
    fn = lambda a, b, t: (jax.jvp(lambda x: jnp.clip(jax.nn.sigmoid(x), 0.05, 0.95), (a,), (t,))[1]
                          / jnp.clip(jax.nn.sigmoid(b), 0.05, 0.95))
    out = one(fn, box([0.0], [0.0]), box([-INF], [INF]), t1)
    assert out.hi[0] >= 0.25 / F(0.05)
    # log(1 + p), not log(1 - p): d = t s (1 - s) w / (1 + p) is positive, the relation's range [-U, 0] is not
    fn = lambda a, t: jax.jvp(lambda x: jnp.log1p(jnp.clip(jax.nn.sigmoid(x), 0.1, 0.9)), (a,), (t,))[1]
    out = one(fn, box([0.0], [0.0]), t1)
    assert out.hi[0] >= 0.25 / 1.5


# ---------------------------------------------------------------------------
# more cases: the plate's own index, the norm axis sliced or squeezed, the relational rules' other operand orders
# and their paths through conversions and structural ops, and the intersection with the box rule


def test_gather_at_the_plates_own_index_is_the_operand_itself():
    # X[arange(m)] (NumPyro's plate index): element i is record i, so the form of the record is kept
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = rec(lambda v: v[jnp.arange(v.shape[0])], [("m", 3)], [F32], [x], 5)
    assert out is x
    # X[arange(m) + 1] is the next record: no form
    out = rec(lambda v: v.at[jnp.arange(v.shape[0]) + 1].get(mode="clip"), [("m", 3)], [F32], [x], 5)
    assert out.lin is None
    eq(out, [[-1.0] * 3], [[1.0] * 3])


def test_norm_facts_when_the_norm_axis_is_sliced_or_squeezed():
    table = np.array([[3.0, 4.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 12.0, 0.0]], np.float32)
    row = lambda i: jnp.asarray(table)[i]
    near = lambda v, x: x <= v <= x * (1 + 1e-15)
    # a part of each row has at most the row's norm: the fact is kept along the norm axis as it was
    out = one(lambda i: row(i)[:, 1:3], box([0.0, 2.0], [1.0, 2.0]), dtypes=[I32])
    assert out.nrm[1].shape == (2, 1) and near(out.nrm[1][0, 0], 5.0) and near(out.nrm[1][1, 0], 12.0)
    out = one(lambda i: row(i)[:, ::2], box([0.0, 2.0], [1.0, 2.0]), dtypes=[I32])
    prog = str(jax.make_jaxpr(lambda i: row(i)[:, ::2])(jnp.array([0, 2], jnp.int32)))
    if "strides=(1, 2)" in prog:                  # a strided slice (JAX >= 0.8): the fact is kept as it was
        assert out.nrm[1].shape == (2, 1) and near(out.nrm[1][1, 0], 12.0)
    else:                                         # JAX 0.7 writes it as a gather with constant indices: the fact
        assert not out.nrm or 1 not in out.nrm or out.nrm[1][1, 0] >= 12.0     # may be dropped, never too small
    # the norm axis squeezed away (a one-column table): no fact along it remains
    col = np.array([[2.0], [3.0]], np.float32)
    out = one(lambda i: lax.squeeze(jnp.asarray(col)[i], (1,)), box([0.0], [1.0]), dtypes=[I32])
    assert not out.nrm or 1 not in out.nrm
    eq(out, [2.0], [3.0])


def test_relations_through_value_preserving_steps_and_their_near_misses():
    # u (1 - u) with both sides reshaped the same way: the same values at the same positions
    out = one(lambda u: u.reshape(2, 2) * (1.0 - u).reshape(2, 2), box([0.0] * 4, [1.0] * 4))
    eq(out, [[0.0, 0.0]] * 2, [[0.25, 0.25]] * 2)
    out = one(lambda u: lax.broadcast_in_dim(u, (2, 3), (1,)) * lax.broadcast_in_dim(1.0 - u, (2, 3), (1,)),
              box([0.0] * 3, [1.0] * 3))
    eq(out, [[0.0] * 3] * 2, [[0.25] * 3] * 2)
    # one side transposed: u[i, j] (1 - u[j, i]) reaches 1 (1 - 0) = 1
    out = one(lambda u: u * (1.0 - u).T, box(np.zeros((2, 2)), np.ones((2, 2))))
    assert np.all(out.hi >= 1.0)
    # one side reversed (not value-preserving position by position): reaches 1
    out = one(lambda u: u * lax.rev(1.0 - u, (0,)), box(np.zeros(2), np.ones(2)))
    assert np.all(out.hi >= 1.0)
    # a conversion to an integer is not value-preserving: floor(u) (1 - u) ... with u in [1, 2.5]: 2 (1 - 2) = -2
    out = one(lambda u: u.astype(I32).astype(F32) * (1.0 - u), box([1.0], [2.5]))
    assert out.lo[0] <= -2.0 * 1.5
    # a scalar broadcast on both sides is one value everywhere
    out = one(lambda u: jnp.broadcast_to(u, (3,)) * jnp.broadcast_to(1.0 - u, (3,)), box(0.0, 1.0))
    eq(out, [0.0] * 3, [0.25] * 3)


def test_concave_product_vertex_value_is_rounded_up():
    # u (0.2 - u), u in [0, 1]: vertex at 0.1 with value 0.1^2 (rounded up), the smaller end 1 (0.2 - 1)
    out = one(lambda u: u * (0.2 - u), box([0.0], [1.0]))
    c = Fraction(np.float32(0.2).item())                    # the literal is float32
    v = c / 2
    assert out.hi[0] == ceil_float(v * v)
    assert out.lo[0] == floor_float(c - 1)


def _x64():
    """JAX's float64 mode as a context (jax.enable_x64 from JAX 0.8; jax.experimental.enable_x64 before)."""
    ctx = getattr(jax, "enable_x64", None)
    if ctx is None:
        from jax.experimental import enable_x64 as ctx
    return ctx(True)


def test_concave_product_vertex_of_a_subnormal_c():
    # u (c - u) with c the smallest subnormal float64 (a float64 program): c / 2 rounds to 0, but the real vertex
    # c / 2 lies in [0, 2c] and its value c^2 / 4 > 0 (far below the smallest float): the upper end must be
    # above 0; with the rounded vertex it was 0 (the product 0 * 0 is exact)
    c = 5e-324
    with _x64():
        out = one(lambda u: u * (c - u), box([0.0], [2 * c]), dtypes=[jnp.float64])
    assert Fraction(out.hi[0]) >= Fraction(c) ** 2 / 4 and out.hi[0] > 0.0
    assert out.hi[0] <= 2 * c and out.lo[0] <= Fraction(2 * c) * (Fraction(c) - Fraction(2 * c))
    # the relation no longer answers: the subnormal c is read as [0, c] (XLA flushes subnormals to zero), no point
    with _x64(), pytest.raises(AssertionError, match="did not match"):
        relation_only(B.concave_product, lambda u: u * (c - u), box([0.0], [2 * c]), dtypes=[jnp.float64])


def test_concave_product_uses_the_vertex_only_when_the_box_holds_it():
    # u (1 - u): vertex 1/2, value 1/4.  u in [0, 0.375]: the vertex is outside, the maximum is the end value
    # 0.375 * 0.625 = 0.234375 (exact in binary); u in [0.375, 1]: the vertex is inside, the maximum is 1/4
    out = one(lambda u: u * (1.0 - u), box([0.0], [0.375]))
    assert out.hi[0] == 0.234375
    out = one(lambda u: u * (1.0 - u), box([0.375], [1.0]))
    assert out.hi[0] == 0.25 and out.lo[0] == 0.0


def test_relation_and_box_rule_are_intersected():
    # a point e = c = 1: the box rule gives 1/2 one float out (the reciprocal's rounding), the relation two floats
    # out: the result is the tighter of the two at each end
    out = one(lambda t, e, c: (t * e) / (e + c), box([1.0], [1.0]), box([1.0], [1.0]), box([1.0], [1.0]))
    eq(out, [dn(0.5)], [up(0.5)])
    # the relation bounds what the box rule leaves unbounded, and then names no equation
    # a - logaddexp(a, 0) for a >= 0: the box rule gives [-inf, inf], the relation [-log 2, 0]
    out = one(lambda a: a - jnp.logaddexp(a, 0.0), box([0.0], [INF]))
    assert out.why is None and out.hi[0] == 0.0 and dn(-math.log(2.0), B.LIBM_ULPS + 4) <= out.lo[0] <= -math.log(2.0)
    # still unbounded on one side: the reason is kept
    out = one(lambda u: u * (1.0 - u), box([-INF], [0.25]))
    assert out.why is not None


def test_cancel_factor_through_a_float_conversion_and_a_zero_end():
    # the numerator converted float32 -> float16 -> float32 (the same value for the analysis): t
    out = one(lambda t, d: (t * d).astype(jnp.float16).astype(F32) / d, box([1.0], [2.0]), box([0.5], [4.0]))
    eq(out, [1.0], [2.0])
    # d's box ends at 0: d may be 0, no relation
    out = one(lambda t, d: (t * d) / d, box([1.0], [2.0]), box([-1.0], [0.0]))
    assert not out.bounded()
    # the same variable as a plain factor in a sum of products is not a factor of the numerator
    out = one(lambda t, d: (t * d + d) / d, box([1.0], [1.0]), box([1.0], [2.0]))
    assert out.hi[0] >= 2.0


def test_a_function_named_logaddexp_that_is_not_jaxs_gets_no_logaddexp_rule():
    @jax.custom_jvp
    def logaddexp(a, b):             # the name, a custom derivative, another value: a + b + 10
        return a + b + 10.0

    @logaddexp.defjvp
    def _jvp(primals, tangents):
        return logaddexp(*primals), tangents[0] + tangents[1]
    out = one(lambda a, b: logaddexp(a, b), box([0.0], [1.0]), box([0.0], [1.0]))
    assert out.lo[0] <= 10.0 and out.hi[0] >= 12.0
    out = one(lambda a, b: a - logaddexp(a, b), box([0.0], [1.0]), box([0.0], [1.0]))
    assert out.lo[0] <= -11.0 and out.hi[0] >= -10.0


def test_jax_logaddexp_box_is_max_to_logaddexp_of_the_upper_ends():
    # [max(a_lo, b_lo), logaddexp(a_hi, b_hi)], LIBM_ULPS + 2 floats out, intersected with the body's box (whose NaN branch
    # joins a + b: lower end -1 here, upper 3)
    out = one(lambda a, b: jnp.logaddexp(a, b), box([0.0], [1.0]), box([-1.0], [2.0]))
    eq(out, [dn(0.0, B.LIBM_ULPS + 2)], [up(np.logaddexp(1.0, 2.0), B.LIBM_ULPS + 2)])
    out = one(lambda a, b: jnp.logaddexp(a, b), box([5.0], [6.0]), box([-1.0], [2.0]))
    assert out.lo[0] == dn(5.0, B.LIBM_ULPS + 2) and out.hi[0] == up(np.logaddexp(6.0, 2.0), B.LIBM_ULPS + 2)


def test_softplus_parts_in_other_operand_orders():
    def swapped(a, t):
        e = jnp.exp(-jnp.abs(a))
        c = jax.jvp(lambda x: jnp.clip(x, 0), (a,), (t,))[1]
        return (e * -lax.select(a >= 0, t, -t)) / (1.0 + e) + c
    out = relation_only(B.softplus_parts, swapped, box([0.5], [2.0]), box([1.0], [1.0]))
    assert dn(sig(0.5), 6) <= out.lo[0] <= dn(sig(0.5), 3) and up(sig(2.0), 3) <= out.hi[0] <= up(sig(2.0), 6)


def test_clipped_sigmoid_log_nested_clips_and_powers():
    full, t1 = box([-INF], [INF]), box([1.0], [1.0])
    nested = lambda c: jnp.clip(jnp.clip(jax.nn.sigmoid(c), 0.1, 0.9), 0.05, 0.8)
    # the tightest ends of the clips: L = 0.1, U = 0.8 (jnp.clip keeps the Python floats as weakly typed literals)
    out = one(lambda a, t: jax.jvp(lambda x: jnp.log(nested(x)), (a,), (t,))[1], full, t1)
    eq(out, [0.0], [up(1.0 - F(0.1), 2)])
    out = one(lambda a, t: jax.jvp(lambda x: jnp.log1p(-nested(x)), (a,), (t,))[1], full, t1)
    eq(out, [-up(F(0.8), 3)], [0.0])
    # p = s^k clipped to [L, U]: d log p = t k (1 - s) with s >= L^(1/k) (2 floats down); d log(1 - p) = -t k s^k /
    # (1 + ... + s^(k-1)) at s = U^(1/k) (2 floats up), 3 floats out
    lo_c, hi_c = 1e-6, 1.0 - 1e-3
    L, U = F(lo_c), F(hi_c)
    for k in (2, 3):
        out = one(lambda a, t: jax.jvp(lambda x: jnp.log(jnp.clip(jax.nn.sigmoid(x) ** k, lo_c, hi_c)), (a,), (t,))[1],
                  full, t1)
        Lk = dn(L ** (1.0 / k), 2)
        eq(out, [0.0], [up(k * (1.0 - Lk), 2)])
        out = one(lambda a, t: jax.jvp(lambda x: jnp.log1p(-jnp.clip(jax.nn.sigmoid(x) ** k, lo_c, hi_c)), (a,),
                                       (t,))[1], full, t1)
        Uk = min(1.0, up(U ** (1.0 / k), 2))
        g = k * Uk ** k / sum(Uk ** j for j in range(k))
        eq(out, [-up(g, 3)], [0.0])


def test_softplus_parts_upper_end_below_minus_700_is_not_zero():
    # regression: for r_hi <= -700 the upper end was taken as 0 (+ 4 floats = 2.5e-323), while sigmoid(-720) is
    # 2.03e-313; now e^r_hi (above sigmoid(r_hi)), 4 floats out.  Checked against 50-digit mpmath over random boxes
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    fn = lambda a, t: jax.jvp(lambda x: jnp.clip(x, 0) + jnp.log1p(jnp.exp(-jnp.abs(x))), (a,), (t,))[1]
    closed = jax.make_jaxpr(fn)(jax.ShapeDtypeStruct((1,), F32), jax.ShapeDtypeStruct((1,), F32))
    exact = lambda x: 1 / (1 + mpmath.exp(-mpmath.mpf(x)))
    out = Run(Bounds(), {"m": 1}).program(closed, [box([-730.0], [-720.0]), box([1.0], [1.0])])[0]
    # (4 floats, and one more from the product with t: a product below the underflow threshold rounds outward)
    assert mpmath.mpf(float(out.hi[0])) >= exact(-720.0) and out.hi[0] <= up(math.exp(-720.0), 5)
    assert mpmath.mpf(float(out.lo[0])) <= exact(-730.0)
    rng = np.random.default_rng(8)
    for _ in range(60):
        lo, hi = np.sort(rng.uniform(-800.0, 40.0, 2))
        out = Run(Bounds(), {"m": 1}).program(closed, [box([lo], [hi]), box([1.0], [1.0])])[0]
        assert mpmath.mpf(float(out.hi[0])) >= exact(hi), (lo, hi, out.hi)
        assert mpmath.mpf(float(out.lo[0])) <= (0 if lo <= 0.0 <= hi else exact(lo)), (lo, hi, out.lo)


def _clip_log(a, t, tv_fn=None, lo=0.05, hi=0.95, one_minus=False, clip=None):
    """JAX's derivative of log(clip(sigmoid(a), lo, hi)) (or log(1 - clip(...))) written out: the clip's value P and
    derivative T for the tangent tv = t (s (1 - s)), then T / P (or -T / (-P + 1)); each argument replaces one piece."""
    s = jax.nn.sigmoid(a)
    tv = (tv_fn or (lambda s_, t_: t_ * (s_ * (1.0 - s_))))(s, t)
    P, T = jax.jvp(lambda x: (clip or jnp.clip)(x, lo, hi), (s,), (tv,))
    return (-T) / (-P + 1.0) if one_minus else T / P


def test_clipped_sigmoid_log_written_out_and_in_other_orders():
    full, t1 = box([-INF], [INF]), box([1.0], [1.0])
    variants = [None, lambda s, t: (s * (1.0 - s)) * t, lambda s, t: t * ((1.0 - s) * s)]
    for tv_fn in variants:
        eq(one(lambda a, t: _clip_log(a, t, tv_fn), full, t1), [0.0], [up(1.0 - F(0.05), 2)])
        eq(one(lambda a, t: _clip_log(a, t, tv_fn, one_minus=True), full, t1), [-up(F(0.95), 3)], [0.0])


def test_clipped_sigmoid_log_near_misses_of_the_tangent_and_the_clip():
    t1, zero = box([1.0], [1.0]), box([0.0], [0.0])
    # the tangent t s (2 - s): T / P = t (2 - s) = 1.5 at s = 1/2
    out = one(lambda a, t: _clip_log(a, t, lambda s, t_: t_ * (s * (2.0 - s))), zero, t1)
    assert out.hi[0] >= 1.5
    # the tangent t (s 3): T / P = 3
    out = one(lambda a, t: _clip_log(a, t, lambda s, t_: t_ * (s * 3.0)), zero, t1)
    assert out.hi[0] >= 3.0
    # the tangent t (s (1 - w)) with w another sigmoid: 1 - w may be 1 where 1 - s = 1/2
    out = one(lambda a, b, t: _clip_log(a, t, lambda s, t_: t_ * (s * (1.0 - jax.nn.sigmoid(b)))), zero,
              box([-INF], [INF]), t1)
    assert out.hi[0] >= 1.0 - 1e-6

    # a function with a clip's body and arguments under another name, doubling: P = 2 clip(s); at a = -1,
    # -T / (1 - P) = -2 s (1 - s) / (1 - 2 s) = -0.85, below the claim -s_hi = -0.27
    def notclip(x, lo, hi):
        return jnp.minimum(jnp.maximum(x, lo), hi) * 2.0
    s1 = sig(-1.0)
    want = -2.0 * s1 * (1.0 - s1) / (1.0 - 2.0 * s1)
    out = one(lambda a, t: _clip_log(a, t, one_minus=True, clip=jax.jit(notclip)), box([-1.0], [-1.0]), t1)
    assert out.lo[0] <= want + 1e-6

    # a jit named clip whose body has no min: P = 2 max(s, lo)
    def clip(x, lo, hi):
        return jnp.maximum(x, lo) * 2.0 + 0.0 * hi
    out = one(lambda a, t: _clip_log(a, t, one_minus=True, clip=jax.jit(clip)), box([-1.0], [-1.0]), t1)
    assert out.lo[0] <= want + 1e-6


def test_gather_of_a_window_of_records_is_the_hull_or_unknown_when_filled():
    # a window of 2 records (slice size 2 along the record axis, which the one slot cannot hold): every entry of
    # the operand when clipped; filled with -9 (a window past the m records): the fill value too
    (sym,) = export.symbolic_shape("m", constraints=("m >= 2",))
    dn_ = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0,))
    x = box([[0.0, 0.5, 0.25]], [[1.0, 0.75, 2.0]])
    for mode, want_lo in (("clip", 0.0), ("fill", -9.0)):
        fn = lambda v, i: lax.gather(v, i[:, None], dn_, (2, 3), mode=mode,
                                     fill_value=-9.0 if mode == "fill" else None)
        closed = jax.make_jaxpr(fn)(jax.ShapeDtypeStruct((sym, 3), F32), jax.ShapeDtypeStruct((1,), I32))
        out = Run(Bounds(), {"m": 5}).program(closed, [x, box([1.0], [4.0])])[0]
        assert out.shape == (1, 2, 3)
        assert np.all(out.lo <= want_lo) and np.all(out.hi >= 2.0)
        if mode == "clip":
            eq(out, np.zeros((1, 2, 3)), np.full((1, 2, 3), 2.0))


def test_norm_facts_through_3d_transpose_rev_and_strided_slices():
    near = lambda v, x: x <= v <= x * (1 + 1e-15)
    # a (4, 2, 3) table, two blocks gathered: (2, 2, 3), rows along axis 2 with norms n[b, r]
    t = np.zeros((4, 2, 3), np.float32)
    t[0, 0, 0], t[0, 1, :2], t[3, 0, 2], t[3, 1] = 2.0, [3.0, 4.0], 7.0, [2.0, 3.0, 6.0]
    norms = {(0, 0): 2.0, (0, 1): 5.0, (3, 0): 7.0, (3, 1): 7.0}
    blocks = lambda i: jnp.asarray(t)[i]
    idx = box([0.0, 3.0], [0.0, 3.0])
    # transpose (1, 0, 2): the fact's axes move the same way (not reversed)
    # (the gather gives facts along both offset axes 1 and 2; axis 1's moves to 0)
    out = one(lambda i: jnp.transpose(blocks(i), (1, 0, 2)), idx, dtypes=[I32])
    assert set(out.nrm) == {0, 2} and out.nrm[2].shape == (2, 2, 1) and out.nrm[0].shape == (1, 2, 3)
    assert near(out.nrm[2][1, 0, 0], norms[(0, 1)]) and near(out.nrm[2][0, 1, 0], norms[(3, 0)])
    # transpose (2, 0, 1): the norm axis becomes axis 0
    out = one(lambda i: jnp.transpose(blocks(i), (2, 0, 1)), idx, dtypes=[I32])
    assert set(out.nrm) == {0, 2} and out.nrm[0].shape == (1, 2, 2) and near(out.nrm[0][0, 0, 1], norms[(0, 1)])
    assert out.nrm[2].shape == (3, 2, 1)
    # reversing axis 0 only: block order flips, row order within a block does not
    out = one(lambda i: lax.rev(blocks(i), (0,)), idx, dtypes=[I32])
    assert near(out.nrm[2][0, 0, 0], norms[(3, 0)]) and near(out.nrm[2][1, 1, 0], norms[(0, 1)])
    assert near(out.nrm[2][1, 0, 0], norms[(0, 0)])
    # a strided slice of the rows of a 3-row gather: rows 0 and 2; a slice with a limit: rows 0 and 1
    table = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 12.0]], np.float32)
    rows = lambda i: jnp.asarray(table)[i]
    i3 = box([0.0, 1.0, 2.0], [0.0, 1.0, 2.0])
    out = one(lambda i: rows(i)[::2], i3, dtypes=[I32])
    assert out.nrm[1].shape == (2, 1) and near(out.nrm[1][0, 0], 5.0) and near(out.nrm[1][1, 0], 12.0)
    out = one(lambda i: rows(i)[0:2], i3, dtypes=[I32])
    assert out.nrm[1].shape == (2, 1) and near(out.nrm[1][0, 0], 5.0) and near(out.nrm[1][1, 0], 1.0)


def test_norm_facts_of_two_axes_one_dropped_one_kept():
    # a (3, 1, 2) table gathered at one index: (1, 1, 2) with facts along axes 1 and 2
    t = np.array([[[3.0, 4.0]], [[1.0, 0.0]], [[0.0, 2.0]]], np.float32)
    g = lambda i: jnp.asarray(t)[i]
    out = one(g, box([0.0], [2.0]), dtypes=[I32])
    assert set(out.nrm) == {1, 2}
    # squeezing axis 1 drops its fact and renumbers the other
    out = one(lambda i: lax.squeeze(g(i), (1,)), box([0.0], [2.0]), dtypes=[I32])
    assert set(out.nrm) == {1} and 5.0 <= out.nrm[1][0, 0] <= 5.0 * (1 + 1e-15)
    # broadcasting axis 1 to the records drops its fact (m unknown to the op), keeps axis 2's
    (sym,) = export.symbolic_shape("m")
    closed = jax.make_jaxpr(lambda i: lax.broadcast_in_dim(g(i), (1, sym, 2), (0, 1, 2)))(
        jax.ShapeDtypeStruct((1,), I32))
    out = Run(Bounds(), {"m": 9}).program(closed, [box([0.0], [2.0])])[0]
    assert set(out.nrm) == {2} and 5.0 <= out.nrm[2].max() <= 5.0 * (1 + 1e-15)
    # broadcasting axis 1 from 1 to 2: two copies, sqrt(2) times the norm of one entry (4, 1 or 2: at most 4)
    out = one(lambda i: jnp.broadcast_to(g(i), (1, 2, 2)), box([0.0], [2.0]), dtypes=[I32])
    assert Fraction(float(out.nrm[1].max())) ** 2 >= 2 * 16 and out.nrm[1].max() <= 4 * math.sqrt(2) * (1 + 1e-14)
    assert 5.0 <= out.nrm[2].max() <= 5.0 * (1 + 1e-15)


def test_ratio_of_sum_sum_numerator_and_form_at_a_zero_end():
    # (t + e) / (e + c) is not t e / (e + c): with t = 1, c = 1 it is 1 for every e, above r_hi = 2/3 at e <= 2
    out = one(lambda t, e, c: (t + e) / (e + c), box([1.0], [1.0]), box([1.0], [2.0]), box([1.0], [1.0]))
    assert out.lo[0] <= 1.0 <= out.hi[0]
    # e may be 0: the form of t is scaled by r in [0, 1/2] exactly at its lower end (not 2 floats below 0)
    x = data_input((1, 2), "X", -1.0, 1.0)
    out = one(lambda t, e: (t * e) / (e + 1.0), x, box([[0.0, 0.0]], [[1.0, 1.0]]))
    lo, hi = out.lin.A["X"]
    np.testing.assert_array_equal(lo[0], np.zeros((2, 2)))
    np.testing.assert_array_equal(hi[0], np.diag([up(0.5, 2)] * 2))


# ---------------------------------------------------------------------------
# cases from the mutation run's survivors (docs/mutation.md, "### bounds", second pass)


def test_clipped_sigmoid_log_more_near_misses():
    t1 = box([1.0], [1.0])
    # dividing the clip's derivative by itself: 1 (where T != 0), above 1 - L = 0.95
    out = one(lambda a, t: (lambda P, T: T / T)(*jax.jvp(lambda x: jnp.clip(x, 0.05, 0.95), (jax.nn.sigmoid(a),),
                                                          (t * (jax.nn.sigmoid(a) * (1.0 - jax.nn.sigmoid(a))),))),
              box([0.0], [0.0]), t1)
    assert out.hi[0] >= 1.0
    # the tangent t + s (1 - s) (a sum): at s = 0.06, (1 + 0.0564) / 0.06 = 17.6
    a6 = math.log(0.06 / 0.94)
    out = one(lambda a, t: _clip_log(a, t, lambda s, t_: t_ + s * (1.0 - s)), box([a6], [a6]), t1)
    assert out.hi[0] >= (1.0 + 0.06 * 0.94) / 0.06 - 1e-3
    # log(1 + p) of nested clips: positive, not in [-U, 0]
    nested = lambda c: jnp.clip(jnp.clip(jax.nn.sigmoid(c), 0.1, 0.9), 0.05, 0.8)
    out = one(lambda a, t: jax.jvp(lambda x: jnp.log1p(nested(x)), (a,), (t,))[1], box([0.0], [0.0]), t1)
    assert out.hi[0] >= 0.25 / 1.5
    # a clip to one point [1/2, 1/2] at s = 1/2: both weights 1/2, so T = t s (1 - s) / 4 = 1/16 and T / P = 1/8
    out = one(lambda a, t: _clip_log(a, t, lo=0.5, hi=0.5), box([0.0], [0.0]), t1)
    assert out.hi[0] >= 0.125
    # s's range outside the clip (s >= 0.97 > 0.95): every weight 0, the derivative 0 exactly
    out = one(lambda a, t: _clip_log(a, t), box([3.5], [4.5]), t1)
    eq(out, [0.0], [0.0])
    out = one(lambda a, t: _clip_log(a, t, one_minus=True), box([3.5], [4.5]), t1)
    eq(out, [0.0], [0.0])
    # a clip whose lower end is 0: in float32 sigmoid(-200) is 0, so p = 0 and the derivative 0 / 0 is NaN; no
    # finite bound holds for the program as run (the relation needs lo > 0, and hi < 1 for log(1 - p))
    fn = lambda a, t: jax.jvp(lambda x: jnp.log(jnp.clip(jax.nn.sigmoid(x), 0.0, 0.9)), (a,), (t,))[1]
    assert not one(fn, box([-INF], [INF]), t1).bounded()
    fn = lambda a, t: jax.jvp(lambda x: jnp.log1p(-jnp.clip(jax.nn.sigmoid(x), 0.1, 1.0)), (a,), (t,))[1]
    assert not one(fn, box([-INF], [INF]), t1).bounded()


def test_clipped_sigmoid_log_of_the_fourth_power():
    full, t1 = box([-INF], [INF]), box([1.0], [1.0])
    out = one(lambda a, t: jax.jvp(lambda x: jnp.log(jnp.clip(jax.nn.sigmoid(x) ** 4, 1e-6, 1.0 - 1e-3)), (a,),
                                   (t,))[1], full, t1)
    eq(out, [0.0], [up(4 * (1.0 - dn(F(1e-6) ** 0.25, 2)), 2)])


def test_cancel_factor_needs_the_same_steps_with_the_same_parameters():
    # t x_j / x_i: the numerator's x broadcast along another axis than the denominator's, reaching 2 / 1
    def prog(t, x):
        d = lax.broadcast_in_dim(x, (2, 2), (0,))
        return (t * lax.broadcast_in_dim(x, (2, 2), (1,))) / d
    out = one(prog, box(np.ones((2, 2)), np.ones((2, 2))), box([1.0, 1.0], [2.0, 2.0]))
    assert np.all(out.hi >= 2.0) and np.all(out.lo <= 0.5)


def test_cancel_factor_does_not_look_through_an_integer_conversion():
    # trunc(t d) / d with t = 1, d = 1.5: 1 / 1.5, not 1
    out = one(lambda t, d: (t * d).astype(I32).astype(F32) / d, box([1.0], [1.0]), box([1.5], [2.5]))
    assert out.lo[0] <= 1.0 / 1.5


def test_logaddexp_box_keeps_the_bodys_form_and_names_an_unbounded_end():
    # softplus(x) = c + a x with a in [0, 1], c in [0, log 2]: the body's form is kept
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = one(lambda v: jnp.logaddexp(v, 0.0), x)
    np.testing.assert_array_equal(out.lin.A["X"][1][0], np.eye(3))
    np.testing.assert_array_equal(out.lin.A["X"][0][0], np.zeros((3, 3)))
    # a bounded result (the body's NaN branch a + b is unbounded below, the rule's max(a, b) is not): no reason
    out = one(lambda a, b: jnp.logaddexp(a, b), box([-INF], [0.0]), box([0.0], [1.0]))
    assert out.bounded() and out.why is None and out.lo[0] == dn(0.0, B.LIBM_ULPS + 2)
    # unbounded above: the reason is kept
    out = one(lambda a, b: jnp.logaddexp(a, b), box([0.0], [INF]), box([0.0], [1.0]))
    assert out.hi[0] == INF and out.why is not None and dn(0.0, B.LIBM_ULPS + 2) <= out.lo[0] <= 0.0


def test_unbounded_results_of_the_indexing_rules_name_their_equation():
    top1 = Bound(np.array([-INF]), np.array([1.0]))
    op = box([0.0, 1.0, 2.0], [0.5, 1.5, 2.5])
    for fn, ins, dts, shp, name in (
            (lambda a, u, i: a.at[i].set(u), [op, top1, box([0], [2])], [F32, F32, I32], None, "scatter"),
            (lambda a, u, i: lax.dynamic_update_slice(a, u, (i,)), [op, top1, box(0.0, 2.0)], [F32, F32, I32],
             [(3,), (1,), ()], "dynamic_update_slice"),
            (lambda a, i: lax.dynamic_slice(a, (i,), (2,)), [Bound(np.array([-INF, 0.0, 1.0]), np.ones(3) * 2.0),
                                                             box(0.0, 1.0)], [F32, I32], [(3,), ()], "dynamic_slice"),
            # an unbounded start: lax.dynamic_slice's own index normalisation (i + 3 where i < 0) is unbounded
            # first, and names itself
            (lambda a, i: lax.dynamic_slice(a, (i,), (2,)), [Bound(np.array([-INF, 0.0, 1.0]), np.ones(3) * 2.0),
                                                             Bound(np.float64(-INF), np.float64(INF))],
             [F32, I32], [(3,), ()], "add")):
        out = one(fn, *ins, dtypes=dts, shapes=shp)
        assert not out.bounded() and out.why is not None and out.why.primitive.name == name, (name, out.why)


def test_dynamic_slice_start_boxes_half_unbounded_wide_and_in_many_axes():
    op = box([0.0, 10.0, 20.0, 30.0, 40.0], [1.0, 11.0, 21.0, 31.0, 41.0])
    ds = lambda a, i: lax.dynamic_slice(a, (i,), (2,))
    # a start unbounded on one side, or wider than the enumeration limit: every entry (the hull)
    for s in (Bound(np.float64(1.0), np.float64(INF)), Bound(np.float64(-INF), np.float64(1.0)), box(0.0, 5000.0)):
        out = one(ds, op, s, dtypes=[F32, I32], shapes=[(5,), ()])
        eq(out, [0.0, 0.0], [41.0, 41.0])
    # two start axes with 70 x 70 clamped starts (more than 4096 combinations): the hull
    big = box(np.arange(70 * 70.0).reshape(70, 70), np.arange(70 * 70.0).reshape(70, 70) + 0.5)
    out = one(lambda a, i, j: lax.dynamic_slice(a, (i, j), (1, 1)), big, box(0.0, 69.0), box(0.0, 69.0),
              dtypes=[F32, I32, I32], shapes=[(70, 70), (), ()])
    eq(out, [[0.0]], [[70 * 70 - 1 + 0.5]])
    # a window of m - 1 records starting at 0 or 1 reads shifted records: no form
    (sym,) = export.symbolic_shape("m", constraints=("m >= 2",))
    closed = jax.make_jaxpr(lambda v, i: lax.dynamic_slice(v, (i, 0), (v.shape[0] - 1, 3)))(
        jax.ShapeDtypeStruct((sym, 3), F32), jax.ShapeDtypeStruct((), I32))
    out = Run(Bounds(), {"m": 4}).program(closed, [data_input((1, 3), "X", -1.0, 1.0), box(0.0, 1.0)])[0]
    assert out.lin is None
    eq(out, [[-1.0] * 3], [[1.0] * 3])


def test_chains_through_conversions_reshapes_and_broadcasts():
    # u (1 - u) with both sides converted float32 -> float32 (an exact conversion: the same value): [0, 1/4]
    out = one(lambda u: u.astype(jnp.float32) * (1.0 - u).astype(jnp.float32), box([0.0] * 2, [1.0] * 2))
    eq(out, [0.0, 0.0], [0.25, 0.25])
    # converted to float16 (it rounds: u = 0.5 + 3e-4 gives float16(u) float16(1 - u) = 0.250127 > 1/4): the
    # relation does not claim [0, 1/4]; the box rule's product of [0, 1] and [0, 1] holds
    u = np.float32(0.5 + 3e-4)
    assert float(np.float16(u)) * float(np.float16(np.float32(1.0) - u)) > 0.25
    out = one(lambda u: u.astype(jnp.float16) * (1.0 - u).astype(jnp.float16), box([0.0] * 2, [1.0] * 2))
    assert np.all(out.hi >= 0.250127) and np.all(out.lo <= 0.0)
    # k (1 - k) with k = trunc(u) on both sides: the chain stops at the integer conversion, whose result is then the
    # one value on both sides: u in [0, 3] gives the parabola's vertex 1/4 and the end 3 (1 - 3)
    out = one(lambda u: (lambda k: k * (1.0 - k))(u.astype(I32).astype(F32)), box([0.0], [3.0]))
    eq(out, [-6.0], [0.25])
    # the same with a transposing reshape (reshape with `dimensions`), where the chain stops too
    out = one(lambda u: (lambda r: r * (1.0 - r))(lax.reshape(u, (2, 2), dimensions=(1, 0))), box(np.zeros((2, 2)),
              np.ones((2, 2))))
    eq(out, np.zeros((2, 2)), np.full((2, 2), 0.25))
    # a broadcast along another axis on one side: u_i (1 - u_j) reaches 1
    out = one(lambda u: lax.broadcast_in_dim(u, (2, 2), (0,)) * lax.broadcast_in_dim(1.0 - u, (2, 2), (1,)),
              box([0.0, 0.0], [1.0, 1.0]))
    assert np.all(out.hi >= 1.0)


def test_ratio_of_sum_with_steps_on_the_sum_and_on_its_operand():
    # t q / d with e = broadcast(e0), d = reshape(e + c), q = reshape(broadcast(e0)): q's steps are e's then d's
    def prog(t, e0, c):
        e = lax.broadcast_in_dim(e0, (2, 2), (0,))
        return (t * e.reshape(4)) / (e + c).reshape(4)
    out = one(prog, box([1.0] * 4, [1.0] * 4), box([1.0, 1.0], [3.0, 3.0]), box(np.full((2, 2), 0.5),
              np.full((2, 2), 2.0)))
    eq(out, [dn(1.0 / 3.0, 2)] * 4, [up(3.0 / 3.5, 2)] * 4)


def test_softplus_parts_form_where_the_select_is_not_decided():
    # r in [-1, 1] (the select may give t or -t, the box rule's form has coefficients of both signs): the relation's
    # form t [0, sigmoid(1)]
    x = data_input((1, 2), "X", -1.0, 1.0)
    out = one(lambda r, t: jax.jvp(lambda v: jnp.clip(v, 0) + jnp.log1p(jnp.exp(-jnp.abs(v))), (r,), (t,))[1],
              box([[-1.0, -1.0]], [[1.0, 1.0]]), x)
    lo, hi = out.lin.A["X"]
    np.testing.assert_array_equal(lo[0], np.zeros((2, 2)))
    assert np.all(np.diag(hi[0]) >= sig(1.0)) and np.all(np.diag(hi[0]) <= sig(1.0) + 1e-14)
    assert hi[0][0, 1] == 0.0 and hi[0][1, 0] == 0.0


def test_concave_product_matched_in_the_second_operand_order_and_its_rounded_ends():
    # a b with b = 1 - x and a = 1 - b: (a, b) does not match (b = 1 - x, x is not a), (b, a) does: b (1 - b)
    out = one(lambda x: (lambda b: (1.0 - b) * b)(1.0 - x), box([0.0], [1.0]))
    eq(out, [0.0], [0.25])
    # b = y - x with y not a number: (a, b) fails on the constant, (b, a) matches
    out = one(lambda x, y: (lambda b: (1.0 - b) * b)(y - x), box([0.0], [1.0]), box([0.5], [1.5]))
    eq(out, [-0.75], [0.25])
    # u in [0.1, 0.3]: the smaller end value is at u = 0.1, 0.1 (1 - 0.1) with 1 - 0.1 rounded down, then the
    # product rounded down
    out = one(lambda u: u * (1.0 - u), box([0.1], [0.3]))
    assert out.lo[0] == floor_float(Fraction(0.1) * Fraction(floor_float(1 - Fraction(0.1))))
    # c is one number only if every entry holds it: c = (1, 2) gives u (2 - u) = 1 at u = 1 in entry 1
    out = one(lambda u, c: u * (c - u), box([0.0, 0.0], [1.0, 1.0]), Bound.point(np.array([1.0, 2.0])))
    assert out.hi[1] >= 1.0 and out.hi[0] >= 0.25


def test_one_minus_square_needs_a_product_in_the_sum():
    # (t + (t + u)) (1 - u) = (2 t + u)(1 - u): 2 at u = 0, not t (1 - u^2) <= 1
    out = one(lambda t, u: (t + (t + u)) * (1.0 - u), box([1.0], [1.0]), box([0.0], [0.5]))
    assert out.hi[0] >= 2.0


def test_a_chain_does_not_pass_a_value_changing_conversion():
    # u (0.5 - x) read through trunc on the sub's side: trunc(x) trunc(0.5 - x) with x in [1.2, 1.4] is
    # 1 * trunc(-0.7..-0.9) = 0, while u (0.5 - u) with u = trunc(x) = 1 would be -0.5
    out = one(lambda x: (lambda k: k(x) * k(0.5 - x))(lambda v: v.astype(I32).astype(F32)), box([1.2], [1.4]))
    assert out.lo[0] <= 0.0 <= out.hi[0]
    # the same with the integer product itself (the conversion to int32 is the last step on both sides)
    out = one(lambda x: x.astype(I32) * (0.5 - x).astype(I32), box([1.2], [1.4]))
    assert out.lo[0] <= 0.0 <= out.hi[0]


def test_softplus_parts_needs_the_clips_derivative_from_jnp_clip():
    t1 = box([1.0], [1.0])

    # a jit of another name with a clip's arguments and a max: 2 max(a, 0); its derivative 2 t, the value 2 - ...
    def notclip(x, lo):
        return jnp.maximum(x, lo) * 2.0
    out = one(lambda a, t: _bce(a, t, clip=lambda x: jax.jit(notclip)(x, 0)), box([1.0], [2.0]), t1)
    assert out.hi[0] >= 2.0 - sig(-2.0) - 1e-6

    # the clip's value instead of its derivative: max(a, 0) - t e/(1 + e) = a - sigmoid(-a) reaches 1.88 at a = 2
    def value_not_tangent(a, t):
        e = jnp.exp(-jnp.abs(a))
        c = jax.jvp(lambda x: jnp.clip(x, 0), (a,), (t,))[0]
        return c + (-lax.select(a >= 0, t, -t)) * e / (e + 1.0)
    out = one(value_not_tangent, box([1.0], [2.0]), t1)
    assert out.hi[0] >= 2.0 - sig(-2.0) - 1e-6


def test_gather_of_a_column_of_the_records_keeps_their_form_and_names_unbounded_results():
    # X[:, i] over the m records: the record axis is an offset axis, not indexed: positions are kept, and so is
    # the form (entry i of each record)
    x = data_input((1, 3), "X", -1.0, 1.0)
    out = rec(lambda v, i: v[:, i], [("m", 3), ()], [F32, I32], [x, box(1.0, 2.0)], 4)
    lo, hi = out.lin.A["X"]
    np.testing.assert_array_equal(lo[0], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(hi[0], [0.0, 1.0, 1.0])
    # an unbounded operand read at an unbounded index: unbounded, with a reason (jnp's index normalisation, which is
    # unbounded first)
    out = one(lambda a, i: a[i], Bound(np.array([-INF, 0.0]), np.array([1.0, 2.0])),
              Bound(np.array([-INF]), np.array([INF])), dtypes=[F32, I32])
    assert not out.bounded() and out.why is not None
    # a window of records: unbounded when filled, and named
    (sym,) = export.symbolic_shape("m", constraints=("m >= 2",))
    dn_ = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0,))
    for mode, op in (("fill", box([[0.0, 0.5, 0.25]], [[1.0, 0.75, 2.0]])),
                     ("clip", Bound(np.array([[-INF, 0.5, 0.25]]), np.array([[1.0, 0.75, 2.0]])))):
        fn = lambda v, i: lax.gather(v, i[:, None], dn_, (2, 3), mode=mode, fill_value=-9.0 if mode == "fill" else None)
        closed = jax.make_jaxpr(fn)(jax.ShapeDtypeStruct((sym, 3), F32), jax.ShapeDtypeStruct((1,), I32))
        out = Run(Bounds(), {"m": 5}).program(closed, [op, box([1.0], [4.0])])[0]
        assert not out.bounded() and out.why is not None and out.why.primitive.name == "gather", mode


def test_softplus_parts_select_pieces_and_ends_at_zero():
    t1 = box([1.0], [1.0])
    # select(a >= 0, t, t * 1) (not -t): for a < 0 the value is -sigmoid(a) < 0
    out = one(lambda a, t: _bce(a, t, neg=lambda v: v * 1.0), box([-2.0], [-1.0]), t1)
    assert out.lo[0] <= -sig(-1.0)
    # select(a >= 0, 2 t, -t): for a > 0 the value is 1 - 2 sigmoid(-a), 0.46 at a = 1, below sigmoid(1) = 0.73
    out = one(lambda a, t: _bce(a, t, pos=lambda v: 2.0 * v), box([1.0], [2.0]), t1)
    assert out.lo[0] <= 1.0 - 2.0 * sig(-1.0) + 1e-6
    # select(a >= 1, ...) : on [0.5, 1) it takes -t, and the value is 1 + sigmoid(-a)
    out = one(lambda a, t: _bce(a, t, pred=a >= 1.0), box([0.5], [0.9]), t1)
    assert out.hi[0] >= 1.0 + sig(-0.9) - 1e-6
    # r's box with 0 at one end: JAX's derivative at r = 0 is 0, so the lower end is 0
    fn = lambda a, t: jax.jvp(lambda x: jnp.clip(x, 0) + jnp.log1p(jnp.exp(-jnp.abs(x))), (a,), (t,))[1]
    for lo, hi in ((0.0, 2.0), (-2.0, 0.0)):
        out = one(fn, box([lo], [hi]), t1)
        assert out.lo[0] == 0.0 and out.hi[0] >= sig(hi), (lo, hi, out.lo, out.hi)


def test_clipped_sigmoid_log_with_a_weight_in_the_numerator():
    # y T / P and y (-T) / (1 - P): the weight's box multiplies the range (NumPyro's observation weights)
    full, t1, y = box([-INF], [INF]), box([1.0], [1.0]), box([2.0], [3.0])

    def weighted(a, t, w, one_minus=False):
        s = jax.nn.sigmoid(a)
        P, T = jax.jvp(lambda x: jnp.clip(x, 0.05, 0.95), (s,), (t * (s * (1.0 - s)),))
        return (w * -T) / (-P + 1.0) if one_minus else (w * T) / P
    fhi = up(1.0 - F(0.05), 2)
    eq(one(weighted, full, t1, y), [0.0], [ceil_float(3 * Fraction(fhi))])
    g = up(F(0.95), 3)
    eq(one(lambda a, t, w: weighted(a, t, w, True), full, t1, y), [floor_float(-3 * Fraction(g))], [0.0])


# ---------------------------------------------------------------------------
# the last survivors of the second pass (docs/mutation.md, "### bounds": gather's plate-index fast path and its
# window of records, the power tangent's operand orders and factor checks, the tangent's form through
# clipped_sigmoid_log)


def test_gather_at_the_plates_index_of_a_table_or_a_part_of_the_records_is_not_the_operand():
    # t[arange(m)] for a constant (1, 3) table t in fill mode: row 0 is t[0], rows 1 .. m-1 are the fill value -9
    # (the index is the plate's own, the operand is not the records: the fast path X[arange(m)] must not apply)
    tbl = box([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]])
    x = data_input((1, 3), "X", -1.0, 1.0)
    prog = lambda v, t: t.at[jnp.arange(v.shape[0])].get(mode="fill", fill_value=-9.0)
    out = rec(prog, [("m", 3), (1, 3)], [F32, F32], [x, tbl], 5)
    eq(out, [[-9.0, -9.0, -9.0]], [[1.0, 2.0, 3.0]])
    # at m = 1 only row 0 is read
    eq(rec(prog, [("m", 3), (1, 3)], [F32, F32], [x, tbl], 1), [[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]])
    # X[arange(m), :2] (a slice of each record, slice sizes (1, 2)): the first two columns of record i, shape (1, 2)
    xb = data_input((1, 3), "X", [-1.0, -2.0, -3.0], [1.0, 2.0, 3.0])
    dn_ = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    prog = lambda v: lax.gather(v, jnp.arange(v.shape[0])[:, None], dn_, (1, 2), mode="clip")
    out = rec(prog, [("m", 3)], [F32], [xb], 5)
    assert out.shape == (1, 2)
    eq(out, [[-1.0, -2.0]], [[1.0, 2.0]])
    # each record read whole but not collapsed (offset axes (1, 2), output (m, 1, 3)): the record, one axis more
    dn_ = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0,))
    prog = lambda v: lax.gather(v, jnp.arange(v.shape[0])[:, None], dn_, (1, 3), mode="clip")
    out = rec(prog, [("m", 3)], [F32], [xb], 5)
    assert out.shape == (1, 1, 3)
    eq(out, [[[-1.0, -2.0, -3.0]]], [[[1.0, 2.0, 3.0]]])


def test_gather_of_the_whole_record_axis_at_a_nonzero_start_is_filled():
    # a window of m records (slice size m along the record axis) starting at 2: it does not fit in the m records,
    # so fill mode fills the whole window with -9; at start 0 it is the records themselves
    dn_ = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0,))
    x = box([[0.0, 0.5, 0.25]], [[1.0, 0.75, 2.0]])
    fn = lambda v, i: lax.gather(v, i[:, None], dn_, (v.shape[0], 3), mode="fill", fill_value=-9.0)
    for m in (3, 5):
        out = rec(fn, [("m", 3), (1,)], [F32, I32], [x, box([2.0], [2.0])], m)
        eq(out, np.full((1, 1, 3), -9.0), np.full((1, 1, 3), -9.0))
        out = rec(fn, [("m", 3), (1,)], [F32, I32], [x, box([0.0], [0.0])], m)
        eq(out, [[[0.0, 0.5, 0.25]]], [[[1.0, 0.75, 2.0]]])


def _power_clip_log(a, t, k, fac, lo=1e-6, hi=1.0 - 1e-3):
    """d log(clip(s^k, lo, hi)) written out with the power's tangent ``fac(s, tv_s)`` (JAX writes
    tv_s * (k * s^(k-1)))."""
    s = jax.nn.sigmoid(a)
    tv_s = t * (s * (1.0 - s))
    P, T = jax.jvp(lambda x: jnp.clip(x, lo, hi), (s ** k,), (fac(s, tv_s),))
    return T / P


def test_clipped_sigmoid_log_of_a_power_with_its_tangent_written_in_other_orders():
    # d log p = t k (1 - s) w with s >= L^(1/k) (2 floats down), 2 floats up: as JAX's own power tangent
    full, t1 = box([-INF], [INF]), box([1.0], [1.0])
    for k in (2, 3):
        want = up(k * (1.0 - dn(F(1e-6) ** (1.0 / k), 2)), 2)
        orders = [lambda s, tv: (k * s ** (k - 1)) * tv,       # the factor before the tangent
                  lambda s, tv: tv * (s ** (k - 1) * k),       # the constant after the power
                  lambda s, tv: (s ** (k - 1) * k) * tv]       # both
        for fac in orders:
            eq(one(lambda a, t: _power_clip_log(a, t, k, fac), full, t1), [0.0], [want])


def test_clipped_sigmoid_log_of_a_power_whose_tangent_factor_is_not_the_powers_derivative():
    # at a = 0 (s = 1/2, exact) and t = 1, b = 2, the program's value is exact in float32; the rule must not claim
    # the power's range t k (1 - s) <= k for these tangents, which are not k s^(k-1) tv_s
    zero, t1, b2 = box([0.0], [0.0]), box([1.0], [1.0]), box([2.0], [2.0])
    cases = [
        # k = 2 with 2 b for 2 s: T / P = (1/4)(2 * 2) / (1/4) = 4
        (2, lambda s, tv, b: tv * (2.0 * b), 4.0),
        # k = 3 with 3 b^2 (the right power of another variable): (1/4)(3 * 4) / (1/8) = 24
        (3, lambda s, tv, b: tv * (3.0 * b ** 2), 24.0),
        # k = 3 with 3 s^3 (a power of s, the wrong one): (1/4)(3/8) / (1/8) = 3/4, and with 3 (b b): 24
        (3, lambda s, tv, b: tv * (3.0 * (b * b)), 24.0),
    ]
    for k, fac, value in cases:
        out = one(lambda a, t, b: _power_clip_log(a, t, k, lambda s, tv: fac(s, tv, b)), zero, t1, b2)
        assert out.lo[0] <= value <= out.hi[0], (k, value, out.lo, out.hi)


def test_clipped_sigmoid_log_keeps_the_tangents_form_scaled_by_the_factor():
    # t with the identity form (a data input): d log p = t (1 - s) w = t f, f in [0, 1 - L] (2 floats up), so the
    # form is t times [0, fhi]: coefficient [0, fhi], constant 0, and the box t [0, fhi] for t in [-1, 2]
    full = box([-INF], [INF])
    fhi = up(1.0 - F(0.05), 2)
    t = data_input((1,), "T", -1.0, 2.0)
    fn = lambda a, t_: jax.jvp(lambda x: jnp.log(jnp.clip(jax.nn.sigmoid(x), 0.05, 0.95)), (a,), (t_,))[1]
    out = one(fn, full, t)
    eq(out, [-fhi], [2.0 * fhi])
    assert out.lin is not None and set(out.lin.A) == {"T"}
    lo, hi = out.lin.A["T"]
    np.testing.assert_array_equal(lo, [[0.0]])
    np.testing.assert_array_equal(hi, [[fhi]])
    np.testing.assert_array_equal(out.lin.clo, [0.0])
    np.testing.assert_array_equal(out.lin.chi, [0.0])
    # log(1 - p): -t s w = t f, f in [-U, 0] (3 floats out)
    fn = lambda a, t_: jax.jvp(lambda x: jnp.log1p(-jnp.clip(jax.nn.sigmoid(x), 0.05, 0.95)), (a,), (t_,))[1]
    out = one(fn, full, t)
    g = up(F(0.95), 3)
    lo, hi = out.lin.A["T"]
    np.testing.assert_array_equal(lo, [[-g]])
    np.testing.assert_array_equal(hi, [[0.0]])
    # a weight w in [2, 3]: the form is t times w f in [2, 3] [0, fhi]
    def weighted(a, t_, w):
        s = jax.nn.sigmoid(a)
        P, T = jax.jvp(lambda x: jnp.clip(x, 0.05, 0.95), (s,), (t_ * (s * (1.0 - s)),))
        return (w * T) / P
    out = one(weighted, full, t, box([2.0], [3.0]))
    lo, hi = out.lin.A["T"]
    np.testing.assert_array_equal(lo, [[0.0]])
    np.testing.assert_array_equal(hi, [[ceil_float(3 * Fraction(fhi))]])


def test_norm_fact_of_the_constant_part_is_dropped_with_the_form():
    # v = X + T[i] (i of shape (1,)): the form of the records X and a constant part T[i], a row of T = [[3, 4, 0, 0], ...] with norm
    # <= 5 (a fact about the constant part only).  Reversing the record axis drops the form (record i is no longer
    # at position i); the value is then the whole X + T[i], whose norm reaches |(1, 1, 1, 1) + (3, 4, 0, 0)| =
    # sqrt(43) > 5 at X = (1, 1, 1, 1), i = 0: a fact of 5 about the value would be wrong
    table = np.array([[3.0, 4.0, 0.0, 0.0], [0.0, 0.0, 5.0, 0.0]], np.float32)
    x = data_input((1, 4), "X", -1.0, 1.0)
    prog = lambda v, i: lax.rev(v + jnp.asarray(table)[i], (0,))
    out = rec(prog, [("m", 4), (1,)], [F32, I32], [x, box([0.0], [1.0])], 3)
    assert out.lin is None
    assert not out.nrm or 1 not in out.nrm or float(np.max(out.nrm[1])) >= math.sqrt(43.0)
    # without the reversal the form is kept, and so is the fact about its constant part (at most 5, rounded up)
    out = rec(lambda v, i: v + jnp.asarray(table)[i], [("m", 4), (1,)], [F32, I32], [x, box([0.0], [1.0])], 3)
    assert out.lin is not None and 5.0 <= float(np.max(out.nrm[1])) <= 5.0 * (1 + 1e-14)


# ---------------------------------------------------------------------------
# the norm rule for sums, row by row (docs/mutation.md, "bounds: the norm rule for sums": survivors 83, 86, 87 of
# ``_sum_norm_over``, the re-counted part summed over every axis or without keepdims)


def test_sum_norm_over_recounts_each_row_on_its_own():
    # c_a = [[3, 0], [0, 1]] (norms 3 and 1, exact), c_b = [[-3, 0], [0, 0]]: c_a + c_b = [[0, 0], [0, 1]], whose
    # row norms are 0 and 1.  Row 0 re-counts its coordinate 0 (9 dropped, 0 added); row 1 has no support of b
    # and keeps its norm 1.  Summing the dropped squares over both rows would take 9 from row 1: norm 0 < 1
    a = Bound.box([[3.0, 0.0], [0.0, 1.0]], [[3.0, 0.0], [0.0, 1.0]])
    b = Bound.box([[-3.0, 0.0], [0.0, 0.0]], [[-3.0, 0.0], [0.0, 0.0]])
    got = B._sum_norm_over(a, np.array([[3.0], [1.0]]), b, 1, (2, 2))
    assert got.shape == (2, 1)
    assert 0.0 <= got[0, 0] <= 1e-6                 # sqrt of a few roundings of 9: exact 0
    assert got[1, 0] >= 1.0 and got[1, 0] == pytest.approx(1.0, rel=1e-15)
    # along axis 0 (columns): column 0 of c_a + c_b is 0, column 1 is (0, 1)
    got = B._sum_norm_over(a, np.array([[3.0, 1.0]]), b, 0, (2, 2))
    assert got.shape == (1, 2)
    assert 0.0 <= got[0, 0] <= 1e-6 and got[0, 1] >= 1.0 and got[0, 1] == pytest.approx(1.0, rel=1e-15)


def test_sum_norm_over_rows_of_boxes_hold_the_bruteforce_sup():
    # three rows, c_a in boxes (norm bound na per row), c_b a box on part of each row: every row's bound holds
    # the sup of |c_a + c_b| over a grid of the boxes (with |c_a| <= na), and is the closed form
    # sqrt(na^2 - sum_S min c_a^2 + sum_S max (c_a + c_b)^2) of that row
    alo = np.array([[1.0, -1.0, 0.0], [0.5, 0.0, 0.0], [-2.0, 0.0, 1.0]])
    ahi = np.array([[2.0, 1.0, 0.0], [1.0, 0.0, 0.0], [-1.0, 0.0, 1.0]])
    blo = np.array([[0.5, 0.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])
    bhi = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0], [1.5, 0.0, 0.0]])
    na = np.array([[math.sqrt(5.0)], [1.0], [math.sqrt(5.0)]])      # the boxes' own norms (corners)
    got = B._sum_norm_over(Bound.box(alo, ahi), na, Bound.box(blo, bhi), 1, (3, 3))
    assert got.shape == (3, 1)
    S = ~((blo == 0) & (bhi == 0))
    amin = np.where((alo <= 0) & (ahi >= 0), 0.0, np.minimum(alo ** 2, ahi ** 2))
    smax = np.maximum((alo + blo) ** 2, (ahi + bhi) ** 2)
    want = np.sqrt(na[:, 0] ** 2 - np.where(S, amin, 0).sum(1) + np.where(S, smax, 0).sum(1))
    # by hand: row 0 5 - 1 + 9 = 13, row 1 1 - 0 + 4 = 5, row 2 5 - 1 + (-2 + 1)^2 = 5
    np.testing.assert_allclose(want ** 2, [13.0, 5.0, 5.0], rtol=1e-15)
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-14)
    assert np.all(got[:, 0] >= want)
    g = np.linspace(0.0, 1.0, 6)
    for i in range(3):
        pts = [alo[i, j] + g * (ahi[i, j] - alo[i, j]) for j in range(3)] + \
              [blo[i, j] + g * (bhi[i, j] - blo[i, j]) for j in range(3)]
        grid = np.stack(np.meshgrid(*pts, indexing="ij"), -1).reshape(-1, 6)
        ca, cb = grid[:, :3], grid[:, 3:]
        ok = np.linalg.norm(ca, axis=1) <= na[i, 0]
        assert np.max(np.linalg.norm(ca + cb, axis=1)[ok]) <= got[i, 0]


# ---------------------------------------------------------------------------
# a select's case computed again from the narrowed compared value (``_reevaluated``) through moves (``_moved``):
# position j of the case must read the compared value at the position the predicate reads it


def _select_bound(f, lo, hi):
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    closed = jax.make_jaxpr(f)(jax.ShapeDtypeStruct(lo.shape, F32))
    return Run(Bounds()).program(closed, [Bound.box(lo, hi)])[0]


def _np_grid_range(f, lo, hi, n=5):
    """min and max, entry by entry, of f over a grid of every entry's box (numpy, float64)."""
    axes = [np.linspace(a, b, n) for a, b in zip(np.ravel(lo), np.ravel(hi))]
    pts = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, *np.shape(lo))
    vals = np.stack([f(p) for p in pts])
    return vals.min(0), vals.max(0)


def test_a_transposed_case_is_not_narrowed_at_the_transposed_positions():
    # y (2, 2), each entry its own box; jnp.where(y >= 0, y.T, 0): at (0, 1) the predicate reads y[0, 1] (either
    # sign) and the case y[1, 0] in [-3, -2]: [-3, 0] (hull with 0), not narrowed by y[0, 1] >= 0; at (1, 0)
    # y[1, 0] < 0 always: 0.  The diagonal reads the same entry, but the transpose as a whole is not lined up
    # with the predicate, so nothing is narrowed: [-1, 1] at (0, 0), [0.5, 2] at (1, 1) (always chosen)
    lo, hi = [[-1.0, -1.0], [-3.0, 0.5]], [[1.0, 1.0], [-2.0, 2.0]]
    out = _select_bound(lambda y: jnp.where(y >= 0, y.T, 0.0), lo, hi)
    eq(out, [[-1.0, -3.0], [0.0, 0.5]], [[1.0, 0.0], [0.0, 2.0]])
    vlo, vhi = _np_grid_range(lambda y: np.where(y >= 0, y.T, 0.0), lo, hi)
    assert np.all(out.lo <= vlo) and np.all(vhi <= out.hi)
    np.testing.assert_array_equal(vlo[0, 1], -3.0)          # attained: y[0, 1] = 1, y[1, 0] = -3


def test_a_case_transposed_twice_is_narrowed_at_its_own_positions():
    # (2 y.T).T is 2 y, position by position: chosen where y >= 0, 2 y in [0, 2 hi]; (1, 0) never chosen: 0;
    # (1, 1) always chosen: [1, 4].  A 2 x 3 operand (its transpose 3 x 2) likewise
    lo, hi = [[-1.0, -1.0], [-3.0, 0.5]], [[1.0, 0.25], [-2.0, 2.0]]
    out = _select_bound(lambda y: jnp.where(y >= 0, (y.T * 2.0).T, 0.0), lo, hi)
    eq(out, [[0.0, 0.0], [0.0, 1.0]], [[2.0, 0.5], [0.0, 4.0]])
    lo, hi = [[-1.0, -1.0, 0.5], [-3.0, 0.5, -0.5]], [[1.0, 0.25, 1.0], [-2.0, 2.0, 0.5]]
    out = _select_bound(lambda y: jnp.where(y >= 0, (y.T * 2.0).T, 0.0), lo, hi)
    eq(out, [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]], [[2.0, 0.5, 2.0], [0.0, 4.0, 1.0]])
    vlo, vhi = _np_grid_range(lambda y: np.where(y >= 0, 2.0 * y, 0.0), lo, hi, n=3)
    assert np.all(out.lo <= vlo) and np.all(vhi <= out.hi)


def test_a_case_broadcast_along_a_new_axis_is_narrowed_row_by_row():
    # y (2, 1) broadcast to (2, 3) on both sides of the select: position (i, j) reads y[i, 0] in the predicate and
    # in the case (the broadcast axis reads no axis of y).  Row 0 (y in [-1, 1]): 2 y where y >= 0, else 0:
    # [0, 2]; row 1 (y in [0.5, 2], always chosen): [1, 4]
    lo, hi = [[-1.0], [0.5]], [[1.0], [2.0]]
    out = _select_bound(lambda y: jnp.where(jnp.broadcast_to(y >= 0, (2, 3)), jnp.broadcast_to(y, (2, 3)) * 2.0,
                                            0.0), lo, hi)
    eq(out, [[0.0] * 3, [1.0] * 3], [[2.0] * 3, [4.0] * 3])


def test_a_case_reading_the_value_at_two_positions_is_not_narrowed():
    # y.T + y reads y at (i, j) and at (j, i): y[0, 1] >= 0 says nothing of y[1, 0], so at (0, 1) the case is
    # y[1, 0] + y[0, 1] in [-4, -1], hull with 0: [-4, 0] (where y[1, 0] were narrowed too it would claim [0, 0]).
    # The diagonal reads one entry twice but is not narrowed either (the whole case is refused): (0, 0) [-2, 2].
    # y + y reads y at its own position twice: narrowed, 2 y where y >= 0
    lo, hi = [[-1.0, -1.0], [-3.0, 0.5]], [[1.0, 1.0], [-2.0, 2.0]]
    for f in (lambda y: jnp.where(y >= 0, y.T + y, 0.0), lambda y: jnp.where(y >= 0, y + y.T, 0.0)):
        out = _select_bound(f, lo, hi)
        eq(out, [[-2.0, -4.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, 4.0]])
    vlo, vhi = _np_grid_range(lambda y: np.where(y >= 0, y.T + y, 0.0), lo, hi)
    # the true range at (0, 1) is [-3, 0] (chosen only where y[0, 1] >= 0): the rule's -4 is sound, not tight
    assert np.all(out.lo <= vlo) and np.all(vhi <= out.hi) and vlo[0, 1] == -3.0
    out = _select_bound(lambda y: jnp.where(y >= 0, y + y, 0.0), lo, hi)
    eq(out, [[0.0, 0.0], [0.0, 1.0]], [[2.0, 2.0], [0.0, 4.0]])


# ---------------------------------------------------------------------------
# norm facts through a product with a known matrix (``_dot_norm``): ||M x|| <= || |M| ||_2 ||x||, the operator
# norm taken of |M| entrywise (rounding.spectral_up), a row of x M^T or a column of M x at a time


def test_dot_norm_scales_each_row_or_column_norm_by_the_operator_norm():
    M = np.array([[3.0, -1.0], [0.5, 2.0], [0.0, 1.0]])              # 3 x 2
    op = float(np.linalg.norm(np.abs(M), 2))                        # 3.3386... (numpy's SVD, float64)
    n = np.array([1.0, 2.0, 0.5, 3.0])
    # x (4, 2) with row norms n, times M^T: out (4, 3), row i = M x_i, norm <= op n_i (along axis 1)
    x = Bound(np.full((4, 2), -3.0), np.full((4, 2), 3.0), nrm={1: n[:, None]})
    got = B._dot_norm(x, Bound.point(M), (((1,), (1,)), ((), ())), (4, 3))
    assert set(got) == {1} and got[1].shape == (4, 1)
    assert np.all(got[1][:, 0] >= op * n) and np.allclose(got[1][:, 0], op * n, rtol=1e-12)
    # M (3, 2) times x (2, 4) with column norms n: out (3, 4), column j = M x[:, j], norm along axis 0
    xt = Bound(np.full((2, 4), -3.0), np.full((2, 4), 3.0), nrm={0: n[None, :]})
    got = B._dot_norm(Bound.point(M), xt, (((1,), (0,)), ((), ())), (3, 4))
    assert set(got) == {0} and got[0].shape == (1, 4)
    assert np.all(got[0][0] >= op * n) and np.allclose(got[0][0], op * n, rtol=1e-12)
    # a sampled check: rows of norm n_i times M^T never exceed the bound
    rng = np.random.default_rng(0)
    v = rng.standard_normal((1000, 2))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    assert np.max(np.linalg.norm(v @ M.T, axis=1)) <= op <= float(np.linalg.norm(M, 2)) * 1.2
    # a diagonal (scaled permutation) matrix: its largest entry exactly, the product rounded up by one float
    got = B._dot_norm(x, Bound.point(np.diag([2.0, -5.0])), (((1,), (1,)), ((), ())), (4, 2))
    np.testing.assert_array_equal(got[1][:, 0], up(5.0 * n))


def test_dot_norm_claims_nothing_outside_its_pattern():
    M = Bound.point(np.array([[1.0, 2.0], [0.0, 1.0]]))
    n = np.array([[1.0], [2.0]])
    x = Bound(np.full((2, 2), -2.0), np.full((2, 2), 2.0), nrm={1: n})
    mm = (((1,), (1,)), ((), ()))
    assert B._dot_norm(x, M, mm, (2, 2)) is not None
    assert B._dot_norm(x, M, (((1,), (1,)), ((0,), (0,))), (2,)) is None           # a batch axis
    assert B._dot_norm(x, M, (((0, 1), (0, 1)), ((), ())), ()) is None             # two contracted axes
    assert B._dot_norm(x, M, mm, (2, 2, 1)) is None                                # not a 2-D output
    x3 = Bound(np.zeros((2, 2, 1)), np.zeros((2, 2, 1)), nrm={1: np.ones((2, 1, 1))})
    assert B._dot_norm(x3, M, mm, (2, 2)) is None                                  # a 3-D operand
    M3 = Bound.point(np.zeros((2, 2, 1)))
    assert B._dot_norm(x, M3, mm, (2, 2)) is None
    assert B._dot_norm(Bound(x.lo, x.hi), M, mm, (2, 2)) is None                   # no norm fact
    assert B._dot_norm(Bound(x.lo, x.hi, nrm={0: n.T}), M, mm, (2, 2)) is None     # a fact along another axis
    Mbox = Bound(M.lo, M.hi + 0.5)
    assert B._dot_norm(x, Mbox, mm, (2, 2)) is None                                # M not a point
    Mlin = Bound(M.lo, M.hi, B.Lin(M.lo, M.hi, {"X": (np.zeros((2, 2, 1)), np.ones((2, 2, 1)))}))
    assert B._dot_norm(x, Mlin, mm, (2, 2)) is None                                # M has a linear form
    Minf = Bound.point(np.array([[np.inf, 0.0], [0.0, 1.0]]))
    assert B._dot_norm(x, Minf, mm, (2, 2)) is None                                # M not finite
    # both operands with facts: the first (x M^T) is used, its rows' norms
    y = Bound.point(np.eye(2))
    y.nrm = {1: np.array([[7.0], [7.0]])}
    got = B._dot_norm(x, y, mm, (2, 2))
    assert set(got) == {1}
    np.testing.assert_array_equal(got[1], up(n))


# ---------------------------------------------------------------------------
# the norm fact of a concatenation of cos(z) and sin(z) (``_concat_norm``): cos^2 + sin^2 = 1 entry by entry, so
# the pair counts n (z's size along the axis) in the squared norm, every other operand its own norm or its box's


def _concat_nrm(f, *ins, dim):
    closed = jax.make_jaxpr(f)(*[jax.ShapeDtypeStruct(np.shape(b.lo), F32) for b in ins])
    out = Run(Bounds()).program(closed, list(ins))[0]
    return None if out.nrm is None else out.nrm.get(dim)


def _near(got, want):
    """``got`` is an upper bound of ``want`` (exact), within a few roundings of it."""
    want = np.asarray(want, np.float64)
    return got.shape == want.shape and bool(np.all(got >= want)) and bool(np.allclose(got, want, rtol=1e-14, atol=0))


def test_concat_norm_of_cos_and_sin_pairs():
    z = Bound.box(np.full((2, 3), -5.0), np.full((2, 3), 5.0))
    w = Bound.box(np.full((2, 2), -5.0), np.full((2, 2), 5.0))
    q = Bound.box([[-1.0, 0.5], [-2.0, 0.0]], [[0.5, 1.0], [1.0, 3.0]])
    cat = jnp.concatenate
    r3 = np.sqrt(3.0)
    # the pair, in either order: each row has norm sqrt(3) (3 columns of z)
    assert _near(_concat_nrm(lambda z: cat([jnp.cos(z), jnp.sin(z)], 1), z, dim=1), [[r3], [r3]])
    assert _near(_concat_nrm(lambda z: cat([jnp.sin(z), jnp.cos(z)], 1), z, dim=1), [[r3], [r3]])
    # along axis 0: each column has norm sqrt(2) (2 rows of z)
    assert _near(_concat_nrm(lambda z: cat([jnp.cos(z), jnp.sin(z)], 0), z, dim=0), [[np.sqrt(2.0)] * 3])
    # two pairs: 3 + 2
    assert _near(_concat_nrm(lambda z, w: cat([jnp.cos(z), jnp.sin(z), jnp.cos(w), jnp.sin(w)], 1), z, w, dim=1),
                 [[np.sqrt(5.0)]] * 2)
    # the pair with a box between: its |entries| at most [1, 1] and [2, 3]: 3 + 2 and 3 + 13
    assert _near(_concat_nrm(lambda z, q: cat([jnp.cos(z), q, jnp.sin(z)], 1), z, q, dim=1),
                 [[np.sqrt(5.0)], [4.0]])
    # a third cos or sin is not paired again: its box, 3 more
    for f in (lambda z: cat([jnp.cos(z), jnp.sin(z), jnp.sin(z)], 1), lambda z: cat([jnp.cos(z), jnp.cos(z),
                                                                                      jnp.sin(z)], 1)):
        assert _near(_concat_nrm(f, z, dim=1), [[np.sqrt(6.0)]] * 2)
    # not a pair: sin(2 z); cos and sin computed in float16 (each rounded: their squares may sum above 1); the
    # pair beside an operand with an unbounded box (log of [0, ...]): no fact
    assert _concat_nrm(lambda z: cat([jnp.cos(z), jnp.sin(2 * z)], 1), z, dim=1) is None
    assert _concat_nrm(lambda z: cat([jnp.cos(z.astype(jnp.float16)), jnp.sin(z.astype(jnp.float16))], 1).astype(
        F32), z, dim=1) is None
    p = Bound.box(np.zeros((2, 2)), [[0.5, 1.0], [2.0, 3.0]])            # log(p): lower ends -inf, upper finite
    assert _concat_nrm(lambda z, p: cat([jnp.cos(z), jnp.sin(z), jnp.log(p)], 1), z, p, dim=1) is None
    # a brute-force check of the pair with the box: rows of [cos z, q, sin z] over a grid of z and q's corners
    g = np.linspace(-5.0, 5.0, 41)
    for i, want in enumerate((np.sqrt(5.0), 4.0)):
        corners = np.stack(np.meshgrid(*[[q.lo[i, j], q.hi[i, j]] for j in range(2)], indexing="ij"), -1).reshape(-1, 2)
        best = max(np.sqrt(3.0 + np.sum(c ** 2)) for c in corners)        # cos^2 + sin^2 = 1 for each of 3 z's
        vals = [np.linalg.norm(np.r_[np.cos(t) * np.ones(3), c, np.sin(t) * np.ones(3)]) for t in g for c in corners]
        assert max(vals) == pytest.approx(best, rel=1e-15) and best == pytest.approx(want, rel=1e-15)


def test_softplus_ratio_needs_each_entry_divided_by_its_own_softplus():
    # T = x * exp(a - c).T over c = logaddexp(a, 0): entry (i, j) is x_ij sigmoid(a_ji) / softplus(a_ij), which is
    # not in [0, 1] x_ij: at a_10 = 20, a_01 = -20 it is x_01 sigmoid(20) / softplus(-20) = 4.85e8 x_01.  The
    # exp moved by a transpose that the divisor is not moved by: no relation; the box rules' bound holds the value
    def f(a, x):
        c = jnp.logaddexp(a, 0.0)
        return x * jnp.exp(a - c).T / c

    a, x = box(np.full((2, 2), -20.0), np.full((2, 2), 20.0)), box(np.full((2, 2), 1.0), np.full((2, 2), 1.0))
    out = one(f, a, x)
    pt = np.array([[20.0, -20.0], [20.0, 20.0]])
    c = np.logaddexp(pt, 0.0)
    v = np.exp(pt - c).T / c
    assert v[0, 1] == pytest.approx(1.0 / (1.0 + math.exp(-20.0)) / math.log1p(math.exp(-20.0)), rel=1e-12)  # 4.85e8
    assert np.all(out.hi >= v) and out.hi[0, 1] >= 4.8e8
    # the same without the transpose is the relation: x [0, 1] (x = 1: [0, 1])
    eq(relation_only(B.softplus_ratio, lambda a, x: (lambda c: x * jnp.exp(a - c) / c)(jnp.logaddexp(a, 0.0)), a, x),
       np.zeros((2, 2)), np.ones((2, 2)))


def test_narrowing_through_a_negation_keeps_both_ends():
    # -y <= 0.5 is y >= -0.5; -y == 0.25 is y == -0.25; -y > -0.5 is y < 0.5 (y in [-1, 1]; the other case 0).
    # Each range by hand, and the values of a grid of y (numpy) inside it
    cases = [(lambda y: jnp.where(-y <= 0.5, y, 0.0), lambda y: np.where(-y <= 0.5, y, 0.0), (-0.5, 1.0)),
             (lambda y: jnp.where(-y == 0.25, y, 0.0), lambda y: np.where(-y == 0.25, y, 0.0), (-0.25, 0.0)),
             (lambda y: jnp.where(-y > -0.5, y, 0.0), lambda y: np.where(-y > -0.5, y, 0.0), (-1.0, 0.5)),
             (lambda y: jnp.where(-(-y) >= 0.75, y, 1.0), lambda y: np.where(y >= 0.75, y, 1.0), (0.75, 1.0))]
    ys = np.linspace(-1.0, 1.0, 401)
    for f, g, want in cases:
        out = _select_bound(f, [-1.0], [1.0])
        assert (out.lo[0], out.hi[0]) == want
        v = g(ys)
        assert out.lo[0] <= v.min() and v.max() <= out.hi[0]
        assert v.min() == pytest.approx(want[0], abs=0.006) and v.max() == pytest.approx(want[1], abs=0.006)   # the grid's step


def test_softplus_ratio_moves_must_be_the_same_moves():
    # exp(a - c) and c broadcast to (2, 2) along different axes: entry (i, j) is x_ij sigmoid(a_j) / softplus(a_i),
    # up to 4.85e8 x_ij for a_j = 20, a_i = -20.  Same primitive, same output shape, other parameters: no relation
    def f(a, x):
        c = jnp.logaddexp(a, 0.0)
        return x * lax.broadcast_in_dim(jnp.exp(a - c), (2, 2), (1,)) / lax.broadcast_in_dim(c, (2, 2), (0,))

    a, x = box([-20.0, -20.0], [20.0, 20.0]), box(np.ones((2, 2)), np.ones((2, 2)))
    out = one(f, a, x)
    pt = np.array([-20.0, 20.0])
    c = np.logaddexp(pt, 0.0)
    v = np.exp(pt - c)[None, :] / c[:, None]
    assert v[0, 1] == pytest.approx(1.0 / (1.0 + math.exp(-20.0)) / math.log1p(math.exp(-20.0)), rel=1e-12)
    assert np.all(out.hi >= v)
    # the same moves on both sides: the relation, x [0, 1]
    g = lambda a, x: (lambda c: x * lax.broadcast_in_dim(jnp.exp(a - c), (2, 2), (1,))
                      / lax.broadcast_in_dim(c, (2, 2), (1,)))(jnp.logaddexp(a, 0.0))
    eq(relation_only(B.softplus_ratio, g, a, x), np.zeros((2, 2)), np.ones((2, 2)))


def test_softplus_ratio_times_other_factors_takes_their_whole_box():
    # (T f) / c with f in [-2, 1] (T = x exp(a - c), x = 1): sigmoid(a) / softplus(a) in (0, 1] times f: [-2, 1]
    fn = lambda a, x, f: (lambda c: (x * jnp.exp(a - c)) * f / c)(jnp.logaddexp(a, 0.0))
    out = relation_only(B.softplus_ratio, fn, box([-3.0], [3.0]), box([1.0], [1.0]), box([-2.0], [1.0]))
    eq(out, [-2.0], [1.0])
    # the value at a = -3, f = -2 is -2 sigmoid(-3) / softplus(-3) = -1.952..., near the lower end
    v = -2.0 / (1.0 + math.exp(3.0)) / math.log1p(math.exp(-3.0))
    assert -2.0 <= v <= -1.95


def _select_bound2(f, *boxes):
    """The bound of f's output over per-entry boxes ``(lo, hi)`` of float32 inputs."""
    ins = [Bound.box(np.asarray(lo, np.float64), np.asarray(hi, np.float64)) for lo, hi in boxes]
    closed = jax.make_jaxpr(f)(*[jax.ShapeDtypeStruct(b.lo.shape, F32) for b in ins])
    return Run(Bounds()).program(closed, ins)[0]


def test_a_nested_select_is_narrowed_by_the_enclosing_predicate_of_the_same_value():
    # y in [-3, 3]: where y >= 1, 1, else (where y >= -1, y * y, 1): the inner case sees y in [-1, 1] (the inner
    # predicate and the enclosing one's false side), y * y in [0, 1]; every other choice is 1: [0, 1] (the inner
    # predicate alone gives y in [-1, 3], y * y up to 9)
    f = lambda y: jnp.where(y >= 1.0, 1.0, jnp.where(y >= -1.0, y * y, 1.0))
    out = _select_bound2(f, ([-3.0], [3.0]))
    eq(out, [0.0], [1.0])
    ys = np.linspace(-3.0, 3.0, 601)
    v = np.where(ys >= 1.0, 1.0, np.where(ys >= -1.0, ys * ys, 1.0))
    assert v.min() == 0.0 and v.max() == 1.0


def test_a_nested_select_on_another_value_keeps_its_own_bound():
    # y in [-3, 3], z in [-2, 1]: where z >= 0, 0, else (where y <= 1, y + z, 0): z in [-2, 0] and y in [-3, 1]
    # there, so y + z reaches -5 (y = -3, z = -2); the enclosing narrowing of z says nothing of y.  (The upper
    # end is 2, not the sup 1: the inner recomputation starts again from z's own box.)
    f = lambda y, z: jnp.where(z >= 0.0, 0.0, jnp.where(y <= 1.0, y + z, 0.0))
    out = _select_bound2(f, ([-3.0], [3.0]), ([-2.0], [1.0]))
    assert out.lo[0] == -5.0 and 1.0 <= out.hi[0] <= 2.0
    g = np.linspace(-3.0, 3.0, 61)
    Y, Z = np.meshgrid(g, g[(g >= -2.0) & (g <= 1.0)])
    v = np.where(Z >= 0.0, 0.0, np.where(Y <= 1.0, Y + Z, 0.0))
    assert v.min() == -5.0 and 0.9 <= v.max() < 1.0          # z < 0 strictly: the sup 1 is not attained


def test_the_other_operand_order_is_tried_after_an_absolute_value_above():
    # |y| >= z says nothing of y (two half-lines) but z <= |y| <= 1: where chosen, z in [-5, 1]
    f = lambda y, z: jnp.where(jnp.abs(y) >= z, z, 0.0)
    out = _select_bound2(f, ([-1.0], [1.0]), ([-5.0], [5.0]))
    eq(out, [-5.0], [1.0])


# ---------------------------------------------------------------------------
# min_weight: f * w with w JAX's derivative weight of min(c, y) in c, written out with lax primitives (the jaxpr
# of jax.jvp(lambda a: jnp.minimum(a ** 2, 1.0), ...)): w = select(c == min(c, y), 0, 1) / select(y == min(c, y),
# 1, 2), 0 unless c <= y.  f = 2 a t is then taken where a^2 <= 1 (up to float32 rounding): |f| <= 2 s t,
# s = sqrt(1 / (1 - 2^-24))

_S_MW = 2.0 * math.sqrt(1.0 / (1.0 - 2.0 ** -24))


def _min_weight_program(order="fw", div=True, case0=None):
    def fn(a, t, *extra):
        c = lax.integer_pow(a, 2)
        f = t * (2.0 * a)
        m = lax.min(c, jnp.ones_like(c))
        one, zero = jnp.ones_like(c), (extra[0] if case0 == "input" else jnp.full_like(c, case0 or 0.0))
        w = lax.select_n(lax.eq(c, m), zero, one)
        if div:
            w = w / lax.select_n(lax.eq(jnp.ones_like(c), m), one, 2.0 * one)
        return f * w if order == "fw" else w * f
    return fn


def test_min_weight_in_either_operand_order_and_without_the_tie_division():
    a, t = box([-3.0], [3.0]), box([1.0], [1.0])
    for order in ("fw", "wf"):
        for div in (True, False):
            out = relation_only(B.min_weight, _min_weight_program(order, div), a, t)
            assert out.lo[0] == pytest.approx(-_S_MW, abs=1e-12) and out.hi[0] == pytest.approx(_S_MW, abs=1e-12)
            assert out.lo[0] <= -_S_MW and out.hi[0] >= _S_MW
            full = one(_min_weight_program(order, div), a, t)
            assert full.hi[0] <= out.hi[0] and full.lo[0] >= out.lo[0]      # the relation's box is kept
    # the values: 2 a w over a grid of a in [-3, 3], in float32 as the program computes them
    g = np.linspace(-3.0, 3.0, 6001).astype(np.float32)
    c = g * g
    w = np.where(c <= 1.0, 1.0, 0.0) / np.where(c == 1.0, 2.0, 1.0)
    v = 2.0 * g.astype(np.float64) * w
    assert v.max() <= _S_MW and v.max() >= 1.99


def test_min_weight_refuses_a_weight_that_is_not_zero_where_the_min_is_the_other_operand():
    # case 0 (chosen where c > 1) is 0.5, or an input in [0, 0.5]: there the weight is not 0 and f = 2 a t reaches
    # 6 t * 0.5 = 3 at a = 3: no relation, the boxes' bound holds 3
    a, t = box([-3.0], [3.0]), box([1.0], [1.0])
    out = one(_min_weight_program("fw", True, 0.5), a, t)
    assert out.hi[0] >= 3.0 and out.lo[0] <= -3.0
    out = one(_min_weight_program("fw", True, "input"), a, t, box([0.0], [0.5]))
    assert out.hi[0] >= 3.0 and out.lo[0] <= -3.0
    assert 2.0 * 3.0 * 0.5 == 3.0


def test_concat_norm_uses_an_operands_own_norm_fact():
    # a row of the identity gathered at an index in [0, 3]: its box is [0, 1]^4 (norm up to 2) but its norm fact
    # is 1, so the pair (3) and the row (1) give sqrt(4) = 2, not sqrt(3 + 4)
    E = np.eye(4, dtype=np.float32)
    fn = lambda z, i: jnp.concatenate([jnp.cos(z), jnp.sin(z), jnp.asarray(E)[i]], 1)
    closed = jax.make_jaxpr(fn)(jax.ShapeDtypeStruct((2, 3), F32), jax.ShapeDtypeStruct((2,), I32))
    out = Run(Bounds()).program(closed, [box(np.full((2, 3), -5.0), np.full((2, 3), 5.0)),
                                         box([0.0, 0.0], [3.0, 3.0])])[0]
    assert _near(out.nrm[1], [[2.0], [2.0]])
    # the sup over z and i: every row has norm exactly 2
    t = np.linspace(-5.0, 5.0, 101)[:, None, None]
    rows = np.concatenate([np.broadcast_to(np.cos(t), (101, 4, 3)), np.broadcast_to(np.sin(t), (101, 4, 3)),
                           np.broadcast_to(E, (101, 4, 4))], -1)
    assert np.linalg.norm(rows, axis=-1).max() == pytest.approx(2.0, rel=1e-15)


def _max_weight_program(op=lax.max, y=0.5):
    # the weight of max(a, 1/2) in a: nonzero only where a >= 1/2 (of min(a, y): where a <= y); f = 2 a t
    def fn(a, t):
        m = op(a, jnp.full_like(a, y))
        one = jnp.ones_like(a)
        w = lax.select_n(lax.eq(a, m), jnp.zeros_like(a), one) / lax.select_n(lax.eq(jnp.full_like(a, y), m), one,
                                                                               2.0 * one)
        return (t * (2.0 * a)) * w
    return fn


def test_max_weight_narrows_to_the_upper_side():
    # a in [-3, 3], t = 1: 2 a where a >= 1/2 (halved at a tie), else 0: [0, 6]; the lower side would claim
    # [-6, 1], below the value 6 at a = 3
    a, t = box([-3.0], [3.0]), box([1.0], [1.0])
    out = relation_only(B.min_weight, _max_weight_program(), a, t)
    assert out.lo[0] == 0.0 and 6.0 <= out.hi[0] <= up(6.0, 2)            # the product rounded outward
    g = np.linspace(-3.0, 3.0, 601)
    v = 2.0 * g * np.where(g >= 0.5, 1.0, 0.0) / np.where(g == 0.5, 2.0, 1.0)
    assert v.min() == 0.0 and v.max() == 6.0
    # min(a, -1/2): 2 a where a <= -1/2, else 0: [-6, 0] (the product's ends are [-6, -1], joined with the 0)
    out = relation_only(B.min_weight, _max_weight_program(lax.min, -0.5), a, t)
    assert dn(-6.0, 2) <= out.lo[0] <= -6.0 and out.hi[0] == 0.0


def test_min_weight_under_vmap_over_a_tangent_basis():
    # the gradient of sum(min(a^2, 1)) as the analyzer traces it: jvp vmapped over the basis e_k; the weight reaches
    # the product broadcast along the basis axis (read from no axis of a): each entry 2 a_j t_kj w_j in
    # [-2 s, 2 s] for t in [0, 1] (a in [-3, 3]; the boxes give [-6, 6])
    f = lambda a: jnp.minimum(a ** 2, 1.0)
    fn = lambda a, T: jax.vmap(lambda t: jax.jvp(f, (a,), (t,))[1])(T)
    out = one(fn, box([-3.0] * 3, [3.0] * 3), box(np.zeros((3, 3)), np.ones((3, 3))))
    assert out.shape == (3, 3)
    assert np.all(out.hi >= _S_MW) and np.all(out.hi <= _S_MW + 1e-12)
    assert np.all(out.lo <= -_S_MW) and np.all(out.lo >= -_S_MW - 1e-12)


def test_min_weight_in_other_spellings_of_its_comparison():
    # eq(min(c, 1), c) and min(1, c): the same weight, the same relation; ne(c, min(c, 1)) is 1 where c > 1 (there
    # f = 2 a reaches 6 at a = 3): no relation, and the boxes' bound holds 6
    def prog(eq_swapped=False, min_swapped=False, cmp=lax.eq):
        def fn(a, t):
            c = lax.integer_pow(a, 2)
            one = jnp.ones_like(c)
            m = lax.min(one, c) if min_swapped else lax.min(c, one)
            w = lax.select_n(cmp(m, c) if eq_swapped else cmp(c, m), jnp.zeros_like(c), one)
            return (t * (2.0 * a)) * w
        return fn

    a, t = box([-3.0], [3.0]), box([1.0], [1.0])
    for kw in ({"eq_swapped": True}, {"min_swapped": True}, {"eq_swapped": True, "min_swapped": True}):
        out = relation_only(B.min_weight, prog(**kw), a, t)
        assert out.lo[0] == pytest.approx(-_S_MW, abs=1e-12) and out.hi[0] == pytest.approx(_S_MW, abs=1e-12)
        assert out.lo[0] <= -_S_MW and out.hi[0] >= _S_MW
    out = one(prog(cmp=lax.ne), a, t)
    g = np.linspace(-3.0, 3.0, 601)
    v = 2.0 * g * np.where(g * g != np.minimum(g * g, 1.0), 1.0, 0.0)
    assert v.max() == 6.0 and v.min() == -6.0
    assert out.hi[0] >= 6.0 and out.lo[0] <= -6.0


def test_a_select_of_three_cases_computed_again_keeps_every_case():
    # where y >= 0 (y in [-1, 1]), select_n(i, y, 2 y, -5 y) with i in [0, 2] is computed again from y in [0, 1]:
    # the hull of [0, 1], [0, 2] and [-5, 0] (the third case at i = 2), and 0 elsewhere: [-5, 2]
    f = lambda y, i: jnp.where(y >= 0, lax.select_n(i, y, 2.0 * y, -5.0 * y), 0.0)
    closed = jax.make_jaxpr(f)(jax.ShapeDtypeStruct((1,), F32), jax.ShapeDtypeStruct((1,), I32))
    out = Run(Bounds()).program(closed, [box([-1.0], [1.0]), box([0.0], [2.0])])[0]
    eq(out, [-5.0], [2.0])
    v = [np.where(y >= 0, [y, 2.0 * y, -5.0 * y][i], 0.0) for y in np.linspace(-1.0, 1.0, 21) for i in range(3)]
    assert min(v) == -5.0 and max(v) == 2.0


def test_a_divisor_whose_own_denominator_vanishes_is_a_removable_point():
    """t (r / (1 + r^2)) / (1 / (r + 3)) is t r (r + 3) / (1 + r^2) for every r: at r = -3 the divisor is
    1 / 0 = inf and the program computes 0 / inf = 0, the value of r (r + 3) / (1 + r^2) there (bayesdp/analysis/
    structure/rational.py). sup |r (r + 3) / (1 + r^2)| = (1 + sqrt 10) / 2 at r = (1 + sqrt 10) / 3 (the roots
    of -3 r^2 + 2 r + 3); over t in [-1, 1] and r in R the bound is that, outward."""
    def prog(t, r):
        return t * (r / (1 + r * r)) / (1 / (r + 3.0))
    out = one(prog, box([-1.0], [1.0]), box([-INF], [INF]))
    sup = (1 + math.sqrt(10)) / 2
    assert sup <= float(out.hi[0]) <= sup * (1 + 1e-3) and float(out.lo[0]) == -float(out.hi[0])
    with np.errstate(divide="ignore"):
        assert float(prog(np.float32(1.0), np.float32(-3.0))) == 0.0
