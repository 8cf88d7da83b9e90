"""Dependence: which values depend on theta (which latent sites), on which data argument, and on
which record.

Abstract value :class:`Dep` of one array:

* ``theta``: the latent sites it may depend on; ``data``: the data arguments it may depend on;
* ``record``: for a value that depends on data, the axis ``a`` along which *element i depends on
  record i only* (the data arguments enter with their records on axis 0), or :data:`COUPLED`
  when that cannot be proven (a reduction or contraction over records, a slice that shifts them,
  a data-dependent scalar, an unknown primitive...);
* ``size``: it may depend on the number or the order of the records (``dim_as_value``, ``iota``
  along a record axis, a reduction over a record axis);
* ``random``: it may depend on a random-number primitive.

Each field over-approximates: a rule may say "depends" where the value does not, never the
reverse.  ``via_*`` name the equation where a dependence (or the coupling) entered, for messages.
The record axes are the axes whose size is the symbolic record count (see
:mod:`bayesdp.analysis.tracing`); the rules only need the positions of axes, never their sizes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .interpreter import Interpreter, Run, is_const_dim, where

__all__ = ["COUPLED", "Dep", "Dependence"]

#: the ``record`` of a value whose elements may depend on several records
COUPLED = -1


@dataclass(frozen=True)
class Dep:
    """The abstract value of one array for :class:`Dependence` (each field over-approximates).

    Args:
        theta: the latent sites it may depend on.
        data: the data arguments it may depend on.
        record: for a value that depends on data, the axis along which element i depends on record i only,
            or ``COUPLED``; None for a data-free value.
        size: it may depend on the number or the order of the records.
        random: it may depend on a random-number primitive.
        via_data: the equation where the data dependence entered (for messages).
        via_coupled: the equation that coupled records.
        via_size: the equation that made it depend on the record count.
        via_random: the random-number equation.
        via_theta: the equation where the theta dependence entered.

    Examples:
        >>> from bayesdp.analysis.structure import COUPLED, Dep
        >>> Dep(data=frozenset({"X"}), record=0).coupled, Dep(data=frozenset({"X"}), record=COUPLED).coupled
        (False, True)
    """

    theta: frozenset = frozenset()
    data: frozenset = frozenset()
    record: int | None = None
    size: bool = False
    random: bool = False
    via_data: object = field(default=None, compare=False)
    via_coupled: object = field(default=None, compare=False)
    via_size: object = field(default=None, compare=False)
    via_random: object = field(default=None, compare=False)
    via_theta: object = field(default=None, compare=False)

    @property
    def coupled(self) -> bool:
        """Whether the value depends on data with its records mixed (``record == COUPLED``)."""
        return bool(self.data) and self.record == COUPLED


NONE = Dep()


def theta_input(site: str) -> Dep:
    return Dep(theta=frozenset([site]))


def data_input(arg: str) -> Dep:
    return Dep(data=frozenset([arg]), record=0)


def _first(vals):
    return next((v for v in vals if v is not None), None)


def _flags(eqn, ins: list[Dep], record, coupled_here: bool = False, size_here: bool = False,
           random_here: bool = False) -> Dep:
    """The join of the inputs' dependences with ``record`` as the record axis."""
    theta = frozenset().union(*(d.theta for d in ins)) if ins else frozenset()
    data = frozenset().union(*(d.data for d in ins)) if ins else frozenset()
    size = any(d.size for d in ins) or size_here
    rnd = any(d.random for d in ins) or random_here
    via_data = _first(d.via_data for d in ins if d.data)
    if data and via_data is None:
        via_data = eqn
    via_theta = _first(d.via_theta for d in ins if d.theta)
    if theta and via_theta is None:
        via_theta = eqn
    via_size = _first(d.via_size for d in ins if d.size) or (eqn if size_here else None)
    via_random = _first(d.via_random for d in ins if d.random) or (eqn if random_here else None)
    via_coupled = _first(d.via_coupled for d in ins if d.coupled)
    if not data:
        record = None
    elif record is None or record == COUPLED or coupled_here:
        record = COUPLED
        if via_coupled is None:
            via_coupled = eqn
    return Dep(theta, data, record, size, rnd, via_data, via_coupled, via_size, via_random, via_theta)


def _records(ins: list[Dep]) -> set:
    return {d.record for d in ins if d.data}


def _same_axis(eqn, ins: list[Dep]) -> Dep:
    """Element-wise: every data-dependent operand must carry its records on the same axis."""
    recs = _records(ins)
    rec = next(iter(recs)) if len(recs) == 1 else (COUPLED if recs else None)
    return _flags(eqn, ins, rec)


def elementwise(run, eqn, ins):
    out = _same_axis(eqn, ins)
    return [out] * len(eqn.outvars)


def _moved(eqn, ins, mapping) -> list[Dep]:
    """One operand (the first) moved to other axes: ``mapping(axis) -> new axis or None``."""
    d = ins[0]
    rest = ins[1:]
    if d.data and d.record not in (None, COUPLED):
        new = mapping(d.record)
        out = _flags(eqn, [d] + rest, new if new is not None else COUPLED)
    else:
        out = _flags(eqn, [d] + rest, d.record if d.data else None)
    if any(r.data for r in rest):     # e.g. data-dependent indices: scalars, so records are mixed
        out = _flags(eqn, [out] + rest, COUPLED)
    return [out] * len(eqn.outvars)


def _shape(v):
    return tuple(v.aval.shape)


# -- structural rules ---------------------------------------------------------------


def broadcast_in_dim(run, eqn, ins):
    dims = eqn.params["broadcast_dimensions"]
    return _moved(eqn, ins, lambda a: dims[a])


def transpose(run, eqn, ins):
    perm = list(eqn.params["permutation"])
    return _moved(eqn, ins, lambda a: perm.index(a))


def squeeze(run, eqn, ins):
    dims = sorted(int(x) % len(_shape(eqn.invars[0])) for x in eqn.params["dimensions"])
    return _moved(eqn, ins, lambda a: None if a in dims else a - sum(1 for x in dims if x < a))


def _prod(dims):
    p = 1
    for x in dims:
        p = p * x
    return p


def reshape(run, eqn, ins):
    if eqn.params.get("dimensions") is not None:
        return _moved(eqn, ins, lambda a: None)
    src, dst = _shape(eqn.invars[0]), _shape(eqn.outvars[0])

    def mapping(a):
        before, after = _prod(src[:a]), _prod(src[a + 1:])
        for b, dim in enumerate(dst):
            if not is_const_dim(dim) and dim == src[a] and _prod(dst[:b]) == before and _prod(dst[b + 1:]) == after:
                return b
        return None
    return _moved(eqn, ins, mapping)


def rev(run, eqn, ins):
    dims = set(eqn.params["dimensions"])
    return _moved(eqn, ins, lambda a: None if a in dims else a)


def slice_(run, eqn, ins):
    shape = _shape(eqn.invars[0])
    p = eqn.params
    strides = p.get("strides") or (1,) * len(shape)

    def mapping(a):
        full = p["start_indices"][a] == 0 and strides[a] == 1 and p["limit_indices"][a] == shape[a]
        return a if full else None
    return _moved(eqn, ins, mapping)


def dynamic_slice(run, eqn, ins):
    shape = _shape(eqn.invars[0])
    sizes = eqn.params["slice_sizes"]
    return _moved(eqn, ins, lambda a: a if sizes[a] == shape[a] else None)


def pad(run, eqn, ins):
    cfg = eqn.params["padding_config"]
    op, pv = ins
    out = _moved(eqn, [op], lambda a: a if tuple(cfg[a]) == (0, 0, 0) else None)[0]
    return [_same_axis(eqn, [out, pv]) if pv.data else _flags(eqn, [out, pv], out.record)]


def concatenate(run, eqn, ins):
    dim = eqn.params["dimension"]
    recs = _records(ins)
    rec = next(iter(recs)) if len(recs) == 1 else (COUPLED if recs else None)
    if rec == dim:
        rec = COUPLED
    return [_flags(eqn, ins, rec)]


def stack(run, eqn, ins):
    """``stack(xs, axis)`` (JAX >= 0.8's primitive; older JAX writes it as a broadcast and a concatenate): output
    ``[..., k, ...][i] = xs[k][i]``, a new axis of constant size at ``axis``.  An operand's record axis ``a`` moves
    to ``a + (a >= axis)``: element i of every slice is element i of its operand, so when every data-dependent
    operand carries its records on that axis the output does too (a row of the output is the same record's rows
    of the operands); operands with their records on different axes couple them."""
    axis = int(eqn.params["axis"])
    moved = [replace(d, record=d.record + (1 if d.record >= axis else 0))
             if d.data and d.record not in (None, COUPLED) else d for d in ins]
    return [_same_axis(eqn, moved)]


def unstack(run, eqn, ins):
    """``unstack(x, axis)``: output k is ``x``'s slice k along ``axis`` (a constant-size axis): a record axis
    below it stays, above it moves down one; unstacking along the record axis itself would make each output one
    record (coupled, as a slice at a fixed position)."""
    axis = int(eqn.params["axis"])
    return _moved(eqn, ins, lambda a: None if a == axis else a - (1 if a > axis else 0))


def split(run, eqn, ins):
    axis = eqn.params["axis"]
    return _moved(eqn, ins, lambda a: None if a == axis else a)


def _reduce(axes_of):
    def rule(run, eqn, ins):
        axes = sorted(int(a) for a in axes_of(eqn))
        shape = _shape(eqn.invars[0])
        size_here = any(not is_const_dim(shape[a]) for a in axes)
        outs = _moved(eqn, ins, lambda a: None if a in axes else a - sum(1 for x in axes if x < a))
        if size_here:
            outs = [_flags(eqn, [o], o.record, size_here=True) for o in outs]
        return outs
    return rule


def cumulative(run, eqn, ins):
    axis = eqn.params["axis"]
    size_here = not is_const_dim(_shape(eqn.invars[0])[axis])
    outs = _moved(eqn, ins, lambda a: None if a == axis else a)
    return [_flags(eqn, [o], o.record, size_here=size_here) for o in outs]


def sort(run, eqn, ins):
    dim = eqn.params["dimension"]
    recs = _records(ins)
    rec = next(iter(recs)) if len(recs) == 1 else (COUPLED if recs else None)
    size_here = not is_const_dim(_shape(eqn.invars[0])[dim])
    return [_flags(eqn, ins, COUPLED if rec == dim else rec, size_here=size_here)] * len(eqn.outvars)


def top_k(run, eqn, ins):
    last = len(_shape(eqn.invars[0])) - 1
    return _moved(eqn, ins, lambda a: None if a == last else a)


def dot_general(run, eqn, ins):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lshape, rshape = _shape(eqn.invars[0]), _shape(eqn.invars[1])
    lfree = [i for i in range(len(lshape)) if i not in lc and i not in lb]
    rfree = [i for i in range(len(rshape)) if i not in rc and i not in rb]

    def pos(side, ax):
        batch, free, offset = (lb, lfree, len(lb)) if side == 0 else (rb, rfree, len(lb) + len(lfree))
        if ax in batch:
            return list(batch).index(ax)
        if ax in free:
            return offset + free.index(ax)
        return None
    recs = set()
    for side, d in enumerate(ins[:2]):
        if d.data:
            recs.add(COUPLED if d.record == COUPLED else pos(side, d.record))
    rec = next(iter(recs)) if len(recs) == 1 else (COUPLED if recs else None)
    if rec is None and recs:
        rec = COUPLED
    size_here = any(not is_const_dim(lshape[a]) for a in lc)
    return [_flags(eqn, ins, rec, size_here=size_here)]


def _lit(v, x) -> bool:
    from jax.extend import core as jcore

    return isinstance(v, jcore.Literal) and np.ndim(v.val) == 0 and float(v.val) == x


def record_iota(run, v, depth: int = 0) -> bool:
    """Whether ``v`` is PROVEN to equal ``arange(m)`` along its axis 0, ``m`` the symbolic number of records (the
    plate's own index ``idx`` of ``numpyro.plate('data', N) as idx``, as NumPyro writes it: ``iota``, times the
    literal 1, plus the literal 0, the negative-index normalisation ``select_n(j < 0, j, j + N)`` whose predicate
    is false for ``j = iota >= 0``, conversions and a broadcast to ``(m, 1)`` index vectors)."""
    e = run.producer(v)
    if e is None or depth > 16:
        return False
    name = e.primitive.name
    if name == "iota":
        shape = _shape(e.outvars[0])
        return len(shape) == 1 and e.params["dimension"] == 0 and not is_const_dim(shape[0])
    if name == "convert_element_type":
        return np.issubdtype(e.outvars[0].aval.dtype, np.integer) and record_iota(run, e.invars[0], depth + 1)
    if name == "broadcast_in_dim":
        return (len(_shape(e.invars[0])) == 1 and tuple(e.params["broadcast_dimensions"]) == (0,)
                and all(d == 1 for d in _shape(e.outvars[0])[1:]) and record_iota(run, e.invars[0], depth + 1))
    if name in ("mul", "add"):
        a, b = e.invars
        unit = 1 if name == "mul" else 0
        return (_lit(a, unit) and record_iota(run, b, depth + 1)) or (_lit(b, unit) and record_iota(run, a, depth + 1))
    if name == "select_n" and len(e.invars) == 3:
        pred, first = e.invars[0], e.invars[1]
        pe = run.producer(pred)
        # select_n(p, a, b) is a where p is false; p = (x < 0) with x = iota >= 0 is false everywhere
        return (pe is not None and pe.primitive.name == "lt" and _lit(pe.invars[1], 0)
                and record_iota(run, pe.invars[0], depth + 1) and record_iota(run, first, depth + 1))
    return False


def gather(run, eqn, ins):
    """``operand[indices]``: output = indices' batch axes (in order) with the operand's offset axes
    at ``offset_dims``.  A record axis of the indices moves to its batch position; a record axis of
    the operand survives only as an offset axis that is sliced whole and not indexed, or when it is
    indexed by the plate's own index (:func:`record_iota`: element i reads record i)."""
    op, idx = ins
    dn = eqn.params["dimension_numbers"]
    sizes = eqn.params["slice_sizes"]
    oshape, ishape = _shape(eqn.invars[0]), _shape(eqn.invars[1])
    if (op.data and op.record not in (None, COUPLED) and not idx.data and tuple(dn.start_index_map) == (op.record,)
            and op.record in dn.collapsed_slice_dims and not dn.operand_batching_dims and sizes[op.record] == 1
            and len(ishape) == 2 and not is_const_dim(ishape[0]) and record_iota(run, eqn.invars[1])):
        # X[idx] with idx = arange(m): the identity on the records; its record axis is the index's batch axis
        out_rank = len(_shape(eqn.outvars[0]))
        batch_out = [i for i in range(out_rank) if i not in dn.offset_dims]
        return [_flags(eqn, [op], batch_out[0])]
    out_rank = len(_shape(eqn.outvars[0]))
    offset_dims = list(dn.offset_dims)
    batch_out = [i for i in range(out_rank) if i not in offset_dims]
    idx_batch = [i for i in range(len(ishape) - 1)]          # the index vector is the last axis
    kept = [i for i in range(len(oshape)) if i not in dn.collapsed_slice_dims and i not in dn.operand_batching_dims]
    recs = set()
    if op.data:
        a = op.record
        if a == COUPLED:
            recs.add(COUPLED)
        elif a in dn.operand_batching_dims:
            j = dn.start_indices_batching_dims[list(dn.operand_batching_dims).index(a)]
            recs.add(batch_out[idx_batch.index(j)] if idx.data and idx.record == j else COUPLED)
        elif a in kept and a not in dn.start_index_map and sizes[a] == oshape[a]:
            recs.add(offset_dims[kept.index(a)])
        else:
            recs.add(COUPLED)
    if idx.data:
        r = idx.record
        recs.add(COUPLED if r == COUPLED or r >= len(ishape) - 1 else batch_out[idx_batch.index(r)])
    rec = next(iter(recs)) if len(recs) == 1 else (COUPLED if recs else None)
    return [_flags(eqn, ins, rec)]


def scatter(run, eqn, ins):
    recs = _records(ins)
    return [_flags(eqn, ins, COUPLED if recs else None)]


def dynamic_update_slice(run, eqn, ins):
    op, upd, idx = ins[0], ins[1], ins[2:]
    oshape, ushape = _shape(eqn.invars[0]), _shape(eqn.invars[1])
    recs = _records([op, upd])
    rec = next(iter(recs)) if len(recs) == 1 else (COUPLED if recs else None)
    if rec not in (None, COUPLED) and ushape[rec] != oshape[rec]:
        rec = COUPLED
    if any(i.data for i in idx):
        rec = COUPLED
    return [_flags(eqn, ins, rec)]


def iota(run, eqn, ins):
    shape = _shape(eqn.outvars[0])
    size_here = not is_const_dim(shape[eqn.params["dimension"]])
    return [_flags(eqn, ins, None, size_here=size_here)]


def dim_as_value(run, eqn, ins):
    return [_flags(eqn, ins, None, size_here=True)]


def random(run, eqn, ins):
    out = _flags(eqn, ins, COUPLED if _records(ins) else None, random_here=True)
    if out.via_random is not eqn and " at " in where(eqn, user_only=True):
        out = replace(out, via_random=eqn)     # name the model's own (latest) draw, not the seed handler's key
    return [out] * len(eqn.outvars)


def identity(run, eqn, ins):
    """Multi-operand identities (``optimization_barrier``): output k is input k."""
    return list(ins[:len(eqn.outvars)])


ELEMENTWISE = (
    "neg sign floor ceil round is_finite exp exp2 log log1p expm1 tanh logistic sin cos tan asin acos atan sinh "
    "cosh asinh acosh atanh sqrt rsqrt cbrt abs lgamma digamma igamma igammac igamma_grad_a "
    "bessel_i0e bessel_i1e erf erfc erf_inv integer_pow pow square one_minus_square add sub mul div rem max min atan2 nextafter eq "
    "ne lt le gt ge and or not xor shift_left shift_right_arithmetic shift_right_logical population_count clz "
    "select_n clamp convert_element_type add_any copy reduce_precision real imag conj complex polygamma "
    "zeta regularized_incomplete_beta sharding_constraint mesh_cast reshard stop_gradient"
).split()

RULES = {name: elementwise for name in ELEMENTWISE}
RULES.update({
    "broadcast_in_dim": broadcast_in_dim, "transpose": transpose, "squeeze": squeeze, "reshape": reshape,
    "rev": rev, "slice": slice_, "dynamic_slice": dynamic_slice, "pad": pad, "concatenate": concatenate,
    "stack": stack, "unstack": unstack, "split": split, "dot_general": dot_general, "gather": gather, "scatter": scatter, "scatter-add": scatter,
    "scatter-mul": scatter, "scatter-min": scatter, "scatter-max": scatter,
    "dynamic_update_slice": dynamic_update_slice, "iota": iota, "dim_as_value": dim_as_value,
    "reduce_sum": _reduce(lambda e: e.params["axes"]), "reduce_max": _reduce(lambda e: e.params["axes"]),
    "reduce_min": _reduce(lambda e: e.params["axes"]), "reduce_prod": _reduce(lambda e: e.params["axes"]),
    "reduce_and": _reduce(lambda e: e.params["axes"]), "reduce_or": _reduce(lambda e: e.params["axes"]),
    "reduce_xor": _reduce(lambda e: e.params["axes"]), "argmax": _reduce(lambda e: e.params["axes"]),
    "argmin": _reduce(lambda e: e.params["axes"]), "cumsum": cumulative, "cumprod": cumulative,
    "cummax": cumulative, "cummin": cumulative, "cumlogsumexp": cumulative, "sort": sort, "top_k": top_k,
    "optimization_barrier": identity,
    "device_put": identity,          # jax < 0.8: jnp.asarray of a constant (a copy, values unchanged)
    **{name: random for name in ("random_seed", "random_bits", "random_split", "random_fold_in", "random_wrap",
                                 "random_unwrap", "threefry2x32", "rng_uniform", "rng_bit_generator")},
})


class Dependence(Interpreter):
    """The dependence interpreter: what each value depends on (theta, data, which record), one table ``RULES``.

    Examples:
        A product with a record's row keeps the record on axis 0; summing over the records couples them:

        >>> import jax, jax.numpy as jnp
        >>> from bayesdp.analysis.structure import Dep, Dependence, Run
        >>> closed = jax.make_jaxpr(lambda w, X: (X @ w, jnp.sum(X @ w)))(jnp.zeros(2), jnp.zeros((3, 2)))
        >>> theta, data = Dep(theta=frozenset({"w"})), Dep(data=frozenset({"X"}), record=0)
        >>> per_record, total = Run(Dependence()).program(closed, [theta, data])
        >>> sorted(per_record.theta), per_record.record, per_record.coupled, total.coupled
        (['w'], 0, False, True)
    """

    name = "dependence"
    rules = RULES

    def literal(self, value, aval):
        """A literal depends on nothing.

        Args:
            value: the literal.
            aval: its abstract array.

        Returns:
            The empty :class:`Dep`.
        """
        return NONE

    def unknown(self, run: Run, eqn, ins):
        """A primitive with no rule: each output depends on every input, records coupled.

        Args:
            run: the interpretation in progress.
            eqn: the equation.
            ins: the :class:`Dep` of its inputs.

        Returns:
            One :class:`Dep` per output.
        """
        # a primitive without a rule: everything it reads may reach everything it writes, and
        # records may be mixed
        out = _flags(eqn, ins, COUPLED if _records(ins) else None)
        return [out] * len(eqn.outvars)

    def join(self, a: Dep, b: Dep) -> Dep:
        """The union of two dependences (records coupled when their record axes differ).

        Args:
            a: a dependence.
            b: a dependence.

        Returns:
            The joined :class:`Dep`.
        """
        if a == b:
            return a
        recs = {d.record for d in (a, b) if d.data}
        rec = next(iter(recs)) if len(recs) == 1 else COUPLED
        return Dep(a.theta | b.theta, a.data | b.data, rec if (a.data or b.data) else None, a.size or b.size,
                   a.random or b.random, a.via_data or b.via_data,
                   a.via_coupled or b.via_coupled or (None if len(recs) <= 1 else "join"),
                   a.via_size or b.via_size, a.via_random or b.via_random, a.via_theta or b.via_theta)

    def control(self, run, eqn, outs, decider: Dep):
        """Outputs of a branch or loop: what its index or predicate depends on reaches every output.

        Args:
            run: the interpretation in progress.
            eqn: the ``cond`` or ``while`` equation.
            outs: the joined outputs.
            decider: the :class:`Dep` of the index or predicate.

        Returns:
            The outputs (records coupled when the decider depends on data).
        """
        if decider == NONE:
            return outs
        # the path depends on a scalar: what the scalar depends on reaches every output, and a
        # data-dependent scalar mixes records
        return [_flags(eqn, [o, decider], COUPLED if (decider.data or o.coupled) else o.record if o.data else None)
                for o in outs]

    def scan_slice(self, run, value: Dep, aval_full, aval_slice):
        """One slice of a scanned input: its record axis moves down one (coupled if it was the scanned axis).

        Args:
            run: the interpretation in progress.
            value: the dependence of the whole input.
            aval_full: its abstract array.
            aval_slice: the abstract array of one slice.

        Returns:
            The slice's :class:`Dep`.
        """
        if not value.data or value.record == COUPLED:
            return value
        return replace(value, record=COUPLED if value.record == 0 else value.record - 1)

    def scan_stack(self, run, value: Dep, aval_slice, aval_full):
        """A scan's stacked output: its record axis moves up one; stacked over a record-count loop, size-dependent.

        Args:
            run: the interpretation in progress.
            value: the dependence of one slice.
            aval_slice: the abstract array of one slice.
            aval_full: the abstract array of the stacked output.

        Returns:
            The stacked output's :class:`Dep`.
        """
        size = value.size or not is_const_dim(aval_full.shape[0])
        rec = value.record
        if value.data and rec != COUPLED:
            rec = rec + 1
        return replace(value, record=rec, size=size)
