"""A chain that releases its final draw takes its number of steps as an argument (driver.steps_are_an_argument):
one compiled program for every number of steps, the same draws as the program with the steps compiled in."""

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


def test_a_divergence_is_reported_at_its_step_in_the_last_block():
    """The step counter of the skipped steps stops at the number of steps: a divergence in the last, partial block
    names its own step, and one that would come after the end is never reached."""
    with pytest.raises(driver.DivergenceError, match=r"non-finite position at step \d+ of 530"):
        Sampler(logistic, {"X": X, "y": Y}, step_size=1e3, num_steps=530, num_chains=1, release="final",
                init="zeros", uncertified=True).run(7)
