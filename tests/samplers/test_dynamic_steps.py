"""A chain that releases its final draw takes its number of steps as an argument (driver.steps_are_an_argument):
one compiled program for every number of steps, the same draws as the program with the steps compiled in."""

import re

import numpy as np
import pytest

from bayesdp.models import logistic
from bayesdp.samplers import Sampler
from bayesdp.samplers import driver
from bayesdp.samplers.driver import Placement

RNG = np.random.default_rng(0)
X = RNG.standard_normal((300, 3))
X = (X / np.maximum(1, np.linalg.norm(X, axis=1, keepdims=True))).astype(np.float32)
Y = (RNG.random(300) < 0.5).astype(np.float32)


def _run(n, chains=1, release="final", records=300, **kw):
    s = Sampler(logistic, {"X": X[:records], "y": Y[:records]}, step_size=1e-2, num_steps=n,
                inverse_temperature=0.5, num_chains=chains, release=release, init="zeros", uncertified=True, **kw)
    s.run(7)
    return np.asarray(s.get_samples(group_by_chain=True)["w"])


@pytest.mark.parametrize("chains, n", [(1, 1), (1, 512), (1, 513), (1, 2 * 512 + 9), (3, 7)])
def test_final_draw_is_the_paths_last_draw(chains, n):
    """Lengths around the block (512 steps here): one step, exactly one block, one step into the next, two blocks and
    a remainder; the path program compiles its number of steps in, the final-draw program does not."""
    assert driver._block_length("ula", 2 ** 31 - 1, 1, 3, 4) == 512
    final = _run(n, chains)[:, -1]
    last = _run(n, chains, release="path")[:, -1]
    # the same Gaussian draws; the arithmetic of a scan of one step may round differently (1 ulp)
    np.testing.assert_allclose(final, last, rtol=1e-6, atol=1e-7)
    assert not np.array_equal(final, np.zeros_like(final))


def test_one_program_for_every_number_of_steps():
    before = driver.TRACE_COUNT["n"]
    for n in (10, 600, 1500, 33):
        _run(n, records=299)           # records of a shape no other test runs: a program of its own
    assert driver.TRACE_COUNT["n"] - before == 1         # (a path program compiles its length in: one per length)


def test_the_steps_are_compiled_in_wherever_the_draws_could_differ():
    import jax

    threefry = jax.random.key_impl(jax.random.key(0))
    one = Placement()
    assert driver.steps_are_an_argument("ula", "final", one, False, threefry, 0)
    assert not driver.steps_are_an_argument("sgld", "final", one, False, threefry, 0)       # batch draws
    assert not driver.steps_are_an_argument("ula", "path", one, False, threefry, 0)        # the path's length
    assert not driver.steps_are_an_argument("ula", "thinned", one, False, threefry, 0)
    assert not driver.steps_are_an_argument("ula", "final", one, False, threefry, 10)      # progress bar
    assert not driver.steps_are_an_argument("ula", "final", Placement(kind="chains", num_devices=2), False, threefry, 0)
    assert not driver.steps_are_an_argument("ula", "final", one, False, jax.random.key_impl(
        jax.random.key(0, impl="rbg")), 0)
    with jax.threefry_partitionable(False):
        assert not driver.steps_are_an_argument("ula", "final", one, False, threefry, 0)


def _diverges_at(n, release):
    """The step the run names when it diverges (None: it ran to the end).  Step size 2.17: the prior's factor
    |1 - h| = 1.17 per step makes the chain overflow float32 after about 520 steps."""
    try:
        Sampler(logistic, {"X": X, "y": Y}, step_size=2.17, num_steps=n, num_chains=1, release=release,
                init="zeros", uncertified=True).run(7)
    except driver.DivergenceError as exc:
        got = re.search(r"non-finite position at step (\d+) of (\d+)", str(exc))
        assert got is not None and int(got.group(2)) == n, str(exc)
        return int(got.group(1))
    return None


@pytest.mark.exact_codegen   # two compiled programs, equal bit for bit (tests/conftest.py)
def test_a_divergence_in_the_last_block_is_named_and_one_past_the_end_never_reached():
    """The path program (its length compiled in) diverges at step s in the second block; the final-draw program
    names the same step when s lies in its last, partial block, and runs to the end when the end comes first (the
    steps past the end are skipped, not run and discarded)."""
    s = _diverges_at(2000, "path")
    assert s is not None and 512 < s < 1024 - 16
    assert _diverges_at(s + 8, "final") == s
    assert _diverges_at(s - 1, "final") is None
    assert _diverges_at(s - 1, "path") is None
