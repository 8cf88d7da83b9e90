"""Minibatch indices: uniform subsets of fixed size, drawn without replacement in O(s log s) work.

SGLD's certificates (004 (31) and the subsampling results they rest on) assume that the batch ``A`` of
each step is a uniformly random subset of size ``s`` of the ``m`` records, independent across steps.
This module draws exactly that, with work that does not depend on ``m`` and no loop over the batch:

1. **Exact uniform integers** (:func:`uniform_below`).  ``t`` uniform on ``{0, ..., n-1}`` from 32-bit
   words ``w`` (threefry, JAX's PRF) by rejection: accept ``w < 2^32 - (2^32 mod n)`` (a multiple of
   ``n``), return ``w mod n``.  ``jax.random.randint`` is *not* exactly uniform (it reduces 64 random
   bits modulo the span: a relative bias up to ``n / 2^64``), which is why it is not used.  Each value
   gets ``candidates`` words at once and a ``lax.while_loop`` redraws the (rare) entries whose words
   were all rejected: rejection probability per word is ``< n / 2^32`` (``2.3e-4`` at ``n = 10^6``).
2. **Robert Floyd's algorithm resolved in parallel** (:func:`floyd`).  Floyd (Bentley & Floyd,
   "Programming pearls: a sample of brilliance", CACM 30(9), 1987): for ``j = 0..s-1`` with
   ``J_j = m - s + j`` draw ``t_j`` uniform on ``{0..J_j}``; add ``t_j`` to the set ``S`` unless it is
   already there, else add ``J_j``.  Every s-subset has probability ``1/binom(m, s)``.  The sequential
   loop is replaced by an equivalent loop-free computation: whether ``t_j`` collides is decided by a
   sort (is ``t_j`` an earlier ``t``?) and pointer jumping along ``j -> t_j - (m - s)`` (is ``t_j`` an
   earlier ``J``, and was that ``J`` added?).  The result is, for every input ``t``, the set Floyd's
   loop returns (tested against the sequential loop), so it has Floyd's law.  Derivation:
   ``docs/samplers.md`` ("Minibatches").

A block of ``num`` batches (:func:`batch_indices`) is drawn in one vectorised call: the driver draws the
batches of a block of steps at once (one sort of shape ``(num, s)``), so no per-step loop runs on the
device.  The returned order within a batch is not uniform; only the set is used (sums over the batch).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["CANDIDATES", "uniform_below", "floyd", "batch_indices", "sample_without_replacement"]

#: 32-bit words drawn per integer before the while loop takes over (rejections are rare)
CANDIDATES = 2


def uniform_below(key, bounds, shape, candidates: int = CANDIDATES) -> jax.Array:
    """Integers uniform on ``{0, ..., bounds - 1}`` (exactly, elementwise, independent), int32, of ``shape``.

    Rejection sampling on 32-bit words (see the module docstring): round i of a while loop draws
    ``candidates`` words per entry from ``fold_in(key, i)``; an entry takes its first accepted word; the
    loop stops once every entry has one (after round 0 except with probability
    ``< (bounds / 2^32)^candidates`` per entry).  Traceable (no Python-side checks of ``bounds``).

    Args:
        key: a JAX PRNG key.
        bounds: the exclusive upper bounds, broadcast to ``shape``; each in ``[1, 2^31]``.
        shape: the shape of the result.
        candidates: 32-bit words drawn per entry and round.

    Returns:
        an int32 array of ``shape``, entry k uniform on ``{0, ..., bounds[k] - 1}``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> v = uniform_below(jax.random.key(0), jnp.array([1, 2, 1000]), (3,))
        >>> v.dtype, int(v[0]), bool(jnp.all((v >= 0) & (v < jnp.array([1, 2, 1000]))))
        (dtype('int32'), 0, True)
    """
    shape = tuple(shape)
    n = jnp.broadcast_to(jnp.asarray(bounds, jnp.uint32), shape)
    zero = jnp.uint32(0)
    r = (zero - n) % n              # 2^32 mod n (uint32 arithmetic wraps modulo 2^32)
    limit = zero - r                # 2^32 - r, a multiple of n; 0 stands for 2^32 (r = 0: accept every word)

    def draw(k):
        w = jax.random.bits(k, (candidates,) + shape, jnp.uint32)
        ok = (r == 0) | (w < limit)
        first = jnp.argmax(ok, axis=0)                          # first accepted candidate
        value = jnp.take_along_axis(w, first[None], axis=0)[0] % n
        return value, jnp.any(ok, axis=0)

    def cond(carry):
        return ~jnp.all(carry[1])

    def body(carry):  # round i draws from fold_in(key, i); entries accepted in an earlier round keep their value
        value, ok, i = carry
        v2, ok2 = draw(jax.random.fold_in(key, i))
        return jnp.where(ok, value, v2), ok | ok2, i + 1

    # the first round runs inside the loop too: one copy of the generator in the compiled program (XLA:CPU
    # spends about 20 MB of compile memory per copy of threefry)
    start = (jnp.zeros(shape, jnp.uint32), jnp.zeros(shape, bool), jnp.uint32(0))
    value, ok, _ = lax.while_loop(cond, body, start)
    return value.astype(jnp.int32)


def _later_occurrence(t, data_size: int):
    """``dup[..., j]``: whether ``t[..., j]`` (in ``[0, data_size)``) equals an earlier ``t[..., j']``, j' < j.

    One sort of the last axis.  When ``data_size * s <= 2^32`` the value and its position are packed into
    one uint32 key ``t * s + j`` (a plain sort, about 5x faster on XLA:CPU than sorting with a payload);
    otherwise the first position of each value is found by a scatter-min over the ranks in the sorted
    values.  Both return the same array (tested)."""
    s = t.shape[-1]
    lead = t.shape[:-1]
    j = jnp.arange(s, dtype=jnp.int32)
    flat = t.reshape((-1, s))
    if int(data_size) * s <= 2 ** 32:
        key = flat.astype(jnp.uint32) * jnp.uint32(s) + j.astype(jnp.uint32)
        ks = jnp.sort(key, axis=-1)
        tv, jv = ks // jnp.uint32(s), (ks % jnp.uint32(s)).astype(jnp.int32)
        later = jnp.concatenate([jnp.zeros((flat.shape[0], 1), bool), tv[:, 1:] == tv[:, :-1]], axis=-1)
        dup = jax.vmap(lambda pos, v: jnp.zeros(s, bool).at[pos].set(v, unique_indices=True))(jv, later)
    else:
        srt = jnp.sort(flat, axis=-1)
        rank = jax.vmap(lambda a, v: jnp.searchsorted(a, v, side="left"))(srt, flat)
        first = jax.vmap(lambda r: jnp.full(s, s, jnp.int32).at[r].min(j))(rank)
        dup = jnp.take_along_axis(first, rank, axis=-1) != j
    return dup.reshape(lead + (s,))


def floyd(t, data_size: int, batch_size: int) -> jax.Array:
    """The set Floyd's algorithm returns for the draws ``t[..., j]`` in ``{0..m-s+j}``, computed without a loop.

    With ``J_j = m - s + j``: step j adds ``J_j`` if ``t_j`` is already in the set (a *collision*
    ``c_j``), else ``t_j``.  ``t_j`` is in the set before step j iff it equals an earlier ``t`` (``dup_j``)
    or it equals an earlier ``J_k`` (``k = t_j - (m - s) < j``) that step k added: ``a_k``, where
    ``a_k = (t_k == J_k) or c_k``.  So ``a_j = (t_j == J_j) or dup_j or a_{link_j}`` along the strictly
    decreasing links ``link_j = t_j - (m - s)`` (when ``m - s <= t_j < J_j``), an OR along a chain of at
    most s links: at most ``ceil(log2(s))`` rounds of pointer jumping (a while loop that stops when no
    link is left: usually after 0-2 rounds, since links need ``t_j >= m - s``).

    Args:
        t: draws of shape ``(..., s)``, ``t[..., j]`` in ``{0, ..., m - s + j}``.
        data_size: ``m``, the number of records.
        batch_size: ``s``, the size of the subset.

    Returns:
        int32 of the shape of ``t``: the elements Floyd's loop adds, in the order it adds them.

    Examples:
        ``m = 5, s = 3``: 0 is added, then 0 collides (``J_1 = 3`` is added), then 0 collides again (``J_2 = 4``):

        >>> import jax.numpy as jnp
        >>> floyd(jnp.array([0, 0, 0]), 5, 3).tolist()
        [0, 3, 4]
    """
    m, s = int(data_size), int(batch_size)
    t = jnp.asarray(t, jnp.int32)
    j = jnp.arange(s, dtype=jnp.int32)
    big_j = (m - s) + j                                   # J_j
    dup = _later_occurrence(t, m)
    linked = (t >= m - s) & (t < big_j)
    link = jnp.where(linked, t - (m - s), -1)             # k with J_k = t_j, k < j
    added = (t == big_j) | dup                            # a_j before following the links
    def jump(carry):  # one round of pointer jumping: OR over twice as many links, successor of the successor
        val, nxt = carry
        has = nxt >= 0
        safe = jnp.where(has, nxt, 0)
        val = val | (has & jnp.take_along_axis(val, safe, axis=-1))
        return val, jnp.where(has, jnp.take_along_axis(nxt, safe, axis=-1), -1)

    # at most ceil(log2(s)) rounds; links are rare when m >> s^2, so the loop usually stops after 0-2 rounds
    val, _ = lax.while_loop(lambda c: jnp.any(c[1] >= 0), jump, (added, link))
    has = link >= 0
    collision = dup | (has & jnp.take_along_axis(val, jnp.where(has, link, 0), axis=-1))
    return jnp.where(collision, big_j, t)


def batch_indices(key, data_size: int, batch_size: int, num: int) -> jax.Array:
    """``num`` independent uniform subsets of size ``batch_size`` of ``{0..data_size-1}``: int32 ``(num, s)``.

    Work ``O(num * s log s)`` and memory ``O(num * s)``, independent of ``data_size``.

    Args:
        key: a JAX PRNG key.
        data_size: ``m``, the number of records.
        batch_size: ``s``, the size of each subset.
        num: the number of subsets.

    Returns:
        int32 ``(num, s)``: row k holds the ``s`` distinct indices of subset k (their order is not uniform).

    Raises:
        ValueError: ``batch_size`` outside ``[1, data_size]``, or ``data_size`` beyond int32 indices.

    Examples:
        >>> import jax
        >>> idx = batch_indices(jax.random.key(0), 10, 4, 3)
        >>> idx.shape, [len(set(row)) for row in idx.tolist()], bool(((idx >= 0) & (idx < 10)).all())
        ((3, 4), [4, 4, 4], True)
        >>> batch_indices(jax.random.key(0), 3, 3, 2).tolist()         # s = m: every record
        [[0, 1, 2], [0, 1, 2]]
    """
    m, s, num = int(data_size), int(batch_size), int(num)
    if not 1 <= s <= m:
        raise ValueError(f"batch_size = {s} must be in [1, data_size = {m}]")
    if m > 2 ** 31 - 1:
        raise ValueError(f"data_size = {m} exceeds the int32 indices of the samplers (2^31 - 1)")
    if s == m:
        return jnp.broadcast_to(jnp.arange(m, dtype=jnp.int32), (num, m))
    bounds = (m - s + 1) + jnp.arange(s, dtype=jnp.uint32)  # t_j uniform on {0..m-s+j}
    t = uniform_below(key, bounds, (num, s))
    return floyd(t, m, s)


def sample_without_replacement(key, data_size: int, batch_size: int) -> jax.Array:
    """``batch_size`` distinct indices forming a uniform subset of ``{0..data_size-1}`` (int32, order not uniform).

    Args:
        key: a JAX PRNG key.
        data_size: ``m``, the number of records.
        batch_size: ``s``, the size of the subset.

    Returns:
        int32 ``(s,)``: one row of :func:`batch_indices`.

    Raises:
        ValueError: ``batch_size`` outside ``[1, data_size]``.

    Examples:
        >>> import jax
        >>> idx = sample_without_replacement(jax.random.key(1), 100, 5)
        >>> idx.shape, len(set(idx.tolist()))
        ((5,), 5)
    """
    return batch_indices(key, data_size, batch_size, 1)[0]

