"""Minibatch indices (bayesdp.samplers.minibatch): exact uniformity over subsets, by enumeration and by tests.

* enumeration: for small (m, s) every draw sequence t (t_j uniform on {0..m-s+j}) is fed to the loop-free
  Floyd; each s-subset must receive exactly prod_j (m-s+j+1) / binom(m, s) sequences (Floyd's theorem,
  checked exactly, together with the equality to the sequential loop);
* the integers t: exact uniformity of the rejection sampler (chi-square), including bounds whose
  rejection probability is about 1/4 (the while loop runs), where w mod n without rejection is biased;
* statistical tests of the whole sampler: chi-square over all subsets (small m), exact binomial tests of
  single and pair inclusion frequencies (larger m: P(i, j in A) = s(s-1)/(m(m-1)) for every pair), and
  independence of consecutive batches.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bayesdp.samplers import minibatch as mb


def floyd_sequential(t, m, s):
    """Floyd's loop in plain Python on given draws ``t`` (t[j] in {0, ..., m - s + j}): the reference mb.floyd
    is tested against.  J = m - s + j is added when t[j] was already chosen."""
    chosen, seen = [], set()
    for j, tj in enumerate(t):
        v = m - s + j if int(tj) in seen else int(tj)
        chosen.append(v)
        seen.add(v)
    return chosen


def test_floyd_sequential_reference():
    assert floyd_sequential([2, 1, 2], 5, 3) == [2, 1, 4]   # J = 2, 3, 4: 2 added, 1 added, 2 collides so J_2 = 4


def _all_draws(m, s):
    return np.array(list(itertools.product(*[range(m - s + j + 1) for j in range(s)])), dtype=np.int32)


@pytest.mark.parametrize("m, s", [(1, 1), (4, 1), (5, 2), (6, 3), (7, 4), (8, 5), (6, 6), (9, 3)])
def test_parallel_floyd_is_floyd_and_exactly_uniform_by_enumeration(m, s):
    t = _all_draws(m, s)
    out = np.asarray(jax.jit(lambda a: mb.floyd(a, m, s))(jnp.asarray(t)))
    for row, draws in zip(out[:200], t[:200]):
        assert row.tolist() == floyd_sequential(draws, m, s)
    sets = [tuple(sorted(r)) for r in out.tolist()]
    assert all(len(set(r)) == s and min(r) >= 0 and max(r) < m for r in sets)
    counts = np.bincount([{c: i for i, c in enumerate(itertools.combinations(range(m), s))}[r] for r in sets])
    assert len(counts) == math.comb(m, s)
    assert (counts == len(t) // math.comb(m, s)).all()          # every subset equally often: exactly


def test_parallel_floyd_equals_sequential_on_random_draws():
    rng = np.random.default_rng(0)
    for m, s in [(40, 7), (100, 60), (1000, 30), (50, 49), (10 ** 6, 200)]:
        t = np.stack([rng.integers(0, m - s + np.arange(s) + 1) for _ in range(64)]).astype(np.int32)
        # force collisions with the J values (t_j = m - s + k, k < j): the chains the pointer jumping follows
        t[:8, 1:] = np.minimum(m - s + rng.integers(0, np.arange(1, s)), m - s + np.arange(1, s))
        out = np.asarray(mb.floyd(jnp.asarray(t), m, s))
        for row, draws in zip(out, t):
            assert row.tolist() == floyd_sequential(draws, m, s)


def test_later_occurrence_branches_agree():
    rng = np.random.default_rng(1)
    t = jnp.asarray(rng.integers(0, 30, size=(50, 40)), jnp.int32)   # many repeats
    packed = np.asarray(mb._later_occurrence(t, 30))                  # 30 * 40 < 2^32: packed key
    ranked = np.asarray(mb._later_occurrence(t, 2 ** 31))            # 2^31 * 40 > 2^32: scatter-min branch
    expected = np.array([[v in row[:j] for j, v in enumerate(row)] for row in np.asarray(t).tolist()])
    np.testing.assert_array_equal(packed, expected)
    np.testing.assert_array_equal(ranked, expected)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10])
def test_uniform_below_small_bounds_chi_square(n):
    draws = np.asarray(mb.uniform_below(jax.random.key(n), n, (60_000,)))
    assert draws.min() >= 0 and draws.max() < n
    if n > 1:
        counts = np.bincount(draws, minlength=n)
        assert stats.chisquare(counts).pvalue > 1e-5


def test_uniform_below_with_frequent_rejections_is_unbiased():
    # n = 3 * 2^29: 2^32 = 2n + 2^30, so a word is rejected with probability 1/4 (the while loop runs), and
    # w mod n WITHOUT rejection gives the values below 2^30 probability 3/2^32 against 2/2^32: the three bins
    # [0, 2^29), [2^29, 2^30), [2^30, n) would hold 3/8, 3/8, 1/4 of the draws instead of 1/3 each
    n = 3 * 2 ** 29
    for candidates in (1, 2):
        draws = np.asarray(mb.uniform_below(jax.random.key(candidates), n, (100_000,), candidates=candidates))
        assert draws.min() >= 0 and draws.max() < n
        assert stats.chisquare(np.bincount(draws // 2 ** 29, minlength=3)).pvalue > 1e-5
    biased = np.asarray(jax.random.bits(jax.random.key(3), (100_000,), jnp.uint32)).astype(np.int64) % n
    assert stats.chisquare(np.bincount(biased // 2 ** 29, minlength=3)).pvalue < 1e-10   # the test can fail


def test_batch_indices_distinct_and_in_range():
    idx = np.asarray(jax.jit(lambda k: mb.batch_indices(k, 1_000_000, 100, 200))(jax.random.key(0)))
    assert idx.shape == (200, 100) and idx.dtype == np.int32
    assert idx.min() >= 0 and idx.max() < 1_000_000
    assert all(len(set(row)) == 100 for row in idx.tolist())
    full = np.asarray(mb.batch_indices(jax.random.key(1), 7, 7, 3))
    assert (np.sort(full, axis=1) == np.arange(7)).all()
    assert sorted(np.asarray(mb.sample_without_replacement(jax.random.key(2), 50, 10)).tolist()) == \
        sorted(set(np.asarray(mb.sample_without_replacement(jax.random.key(2), 50, 10)).tolist()))
    with pytest.raises(ValueError, match="batch_size"):
        mb.batch_indices(jax.random.key(0), 5, 6, 1)


@pytest.mark.parametrize("m, s", [(6, 3), (7, 2), (8, 5)])
def test_subsets_uniform_chi_square(m, s):
    n = 1000 * math.comb(m, s)
    idx = np.sort(np.asarray(mb.batch_indices(jax.random.key(m * 10 + s), m, s, n)), axis=1)
    assert (np.diff(idx, axis=1) > 0).all()
    codes = {c: i for i, c in enumerate(itertools.combinations(range(m), s))}
    counts = np.bincount([codes[tuple(r)] for r in idx.tolist()], minlength=len(codes))
    assert stats.chisquare(counts).pvalue > 1e-5


def test_pair_and_single_frequencies_exact_binomial():
    # m = 2000, s = 50: every index is in A with probability s/m and every pair with s(s-1)/(m(m-1)); the
    # indices tested include the tail [m-s, m) where Floyd's collision rule acts, and the head
    m, s, n = 2000, 50, 200_000
    draw = jax.jit(lambda k: mb.batch_indices(k, m, s, 20_000))
    chosen = np.concatenate([np.asarray(draw(k)) for k in jax.random.split(jax.random.key(7), n // 20_000)])
    watch = np.array([0, 1, 2, m // 2, m - s - 1, m - s, m - s + 1, m - 2, m - 1])
    member = np.stack([(chosen == w).any(axis=1) for w in watch], axis=1)           # (n, 9)
    tests = [(int(member[:, a].sum()), s / m) for a in range(len(watch))]
    tests += [(int((member[:, a] & member[:, b]).sum()), s * (s - 1) / (m * (m - 1)))
              for a, b in itertools.combinations(range(len(watch)), 2)]
    alpha = 1e-6 / len(tests)
    for k, p in tests:
        assert stats.binomtest(k, n, p).pvalue > alpha, (k, n * p)


def test_bins_at_large_m():
    # m = 10^6, s = 1000: the count in each of 10 bins (the last bin is exactly the tail [m-s, m)) has mean
    # s * size / m and the hypergeometric variance; z-tests over 400 batches
    m, s, n = 10 ** 6, 1000, 400
    idx = np.asarray(mb.batch_indices(jax.random.key(11), m, s, n))
    edges = np.array([0, 1000, 10_000, 100_000, 300_000, 500_000, 700_000, 900_000, 990_000, m - s, m])
    counts = np.stack([np.histogram(row, bins=edges)[0] for row in idx])            # (n, 10)
    sizes = np.diff(edges)
    mean = s * sizes / m
    var = s * (sizes / m) * (1 - sizes / m) * (m - s) / (m - 1)
    z = (counts.mean(axis=0) - mean) / np.sqrt(var / n)
    assert np.all(np.abs(z) < 5.0), z


def test_consecutive_batches_independent():
    # rows t and t+1 of one block (m = 4, s = 2): all 36 ordered pairs of subsets equally likely
    m, s, n = 4, 2, 36_000
    idx = np.sort(np.asarray(mb.batch_indices(jax.random.key(2), m, s, 2 * n)), axis=1).reshape(n, 2, s)
    codes = {c: i for i, c in enumerate(itertools.combinations(range(m), s))}
    pairs = np.bincount([codes[tuple(a)] * 6 + codes[tuple(b)] for a, b in idx.tolist()], minlength=36)
    assert stats.chisquare(pairs).pvalue > 1e-5
