"""SGLD with its records in host memory (issue 24, item 3): the batch rows of each chunk of steps are gathered on
the host from the indices the chain draws from its own key; the chain is the in-device chain, draw for draw."""

import gc

import jax
import numpy as np
import pytest

from bayesdp.errors import AssumptionError
from bayesdp.samplers import Sampler
from bayesdp.samplers import driver

from _sampler_models import logistic, logistic_data


def _gathers(monkeypatch):
    """Record every host gather's indices (the callback is looked up when a program is traced)."""
    seen = []
    real = driver._host_gather

    def counting(handle, rows):
        seen.append(np.array(rows))
        return real(handle, rows)
    monkeypatch.setattr(driver, "_host_gather", counting)
    return seen


def _pair(data, **kw):
    out = []
    for stream in (False, True):
        s = Sampler(logistic, data, sampler="sgld", uncertified=True, stream_data=stream, **kw)
        assert s.stream_data is stream
        out.append(s.run(jax.random.key(11)).get_unconstrained_samples())
    return out


def _check_streamed_single_chain(monkeypatch, m, num_steps, blocks, chunks):
    X, y = logistic_data(m, 3, seed=5)
    monkeypatch.setattr(driver, "STREAM_CHUNK_BYTES", 37 * 40 * (3 + 1) * 4)   # 37 steps per host gather
    seen = _gathers(monkeypatch)
    in_device, streamed = _pair({"X": X, "y": y}, step_size=1e-3, num_steps=num_steps, batch_size=40,
                                clip_norm=1.0, release="path")
    assert in_device.shape == (1, num_steps, 3)
    np.testing.assert_array_equal(streamed, in_device)      # bit for bit
    # (a gather depends on the key only, not on the chain: XLA may run them in any order)
    assert sorted(r.shape[0] for r in seen) == sorted(chunks)
    rows = np.concatenate(seen)
    assert rows.shape == (num_steps, 40) and rows.min() >= 0 and rows.max() < m
    assert all(len(set(r.tolist())) == 40 for r in rows)     # each step's batch: 40 distinct records
    # the host gathered exactly the batches the chain's key gives (minibatch.batch_indices of the block keys)
    key = jax.random.wrap_key_data(jax.random.key_data(driver._chain_keys(jax.random.key(11), 1)))
    expect = []
    for b, length in enumerate(blocks):
        k_idx, _ = jax.random.split(jax.random.fold_in(key, b))
        expect.append(np.asarray(jax.jit(driver._mb.batch_indices, static_argnums=(1, 2, 3))(k_idx, m, 40, length)))
    np.testing.assert_array_equal(np.unique(rows, axis=0), np.unique(np.concatenate(expect), axis=0))
    assert len(np.unique(rows, axis=0)) == num_steps


@pytest.mark.exact_codegen   # two compiled programs, equal bit for bit (tests/conftest.py)
def test_streamed_chain_gives_the_in_device_draws_and_batches_without_replacement(monkeypatch):
    # 100 steps, one block; 37 steps per host gather: 2 chunks and a tail of 26
    _check_streamed_single_chain(monkeypatch, 613, 100, [100], [37, 37, 26])


@pytest.mark.slow
@pytest.mark.exact_codegen
def test_streamed_chain_over_two_blocks_with_tails(monkeypatch):
    # 600 steps = a block of 512 + 88: 13 chunks + a tail of 31, then 2 chunks + 14
    _check_streamed_single_chain(monkeypatch, 617, 600, [512, 88], [37] * 13 + [31] + [37] * 2 + [14])


@pytest.mark.slow
@pytest.mark.exact_codegen
def test_streamed_chains_vectorised_sequential_and_thinned_match(monkeypatch):
    X, y = logistic_data(419, 4, seed=6)
    monkeypatch.setattr(driver, "STREAM_CHUNK_BYTES", 23 * 3 * 30 * (4 + 1) * 4)
    seen = _gathers(monkeypatch)
    a, b = _pair({"X": X, "y": y}, step_size=1e-3, num_steps=520, batch_size=30, num_chains=3, release="thinned",
                 thinning=13)
    assert a.shape == (3, 40, 4)
    np.testing.assert_array_equal(b, a)
    assert {r.shape[1:] for r in seen} == {(3, 30)}          # (steps, chains, s) per gather: the chains at once
    assert all(len(set(r.tolist())) == 30 for g in seen for step in g for r in step)
    a, b = _pair({"X": X, "y": y}, step_size=1e-3, num_steps=300, batch_size=419, num_chains=2,
                 chain_method="sequential")                   # s = m: every record, in order
    np.testing.assert_array_equal(b, a)


def test_stream_option_refusals_and_automatic_choice(monkeypatch):
    X, y = logistic_data(50, 2)
    data = {"X": X, "y": y}
    base = dict(step_size=1e-3, num_steps=10, uncertified=True)
    cases = [(dict(sampler="ula", stream_data=True), "stream_data=True is for sampler='sgld' (minibatches), but "
                                                       "sampler = 'ula' reads every record at every step"),
             (dict(sampler="sgld", batch_size=5, stream_data=True, shard_data=True),
              "cannot be combined with shard_data=True or chain_method='parallel'"),
             (dict(sampler="sgld", batch_size=5, stream_data="yes"), "stream_data = 'yes' must be True, False or None")]
    for kw, expected in cases:
        with pytest.raises(AssumptionError) as e:
            Sampler(logistic, data, **base, **kw)
        assert expected in str(e.value) and "\n" not in str(e.value)
    # the automatic choice: in device memory on a CPU (the host's memory), and on an accelerator when it fits ...
    s = Sampler(logistic, data, sampler="sgld", batch_size=5, **base)
    assert s.stream_data is False and "placement" not in s.certificate["assumptions"]
    assert all(isinstance(v, jax.Array) for v in s.potential.data.values())
    on_cpu = jax.devices()[0].platform == "cpu"
    # 1e30 bytes: on a CPU the records are in the host's memory either way (fits); no accelerator holds them
    assert driver._fits_on_device(1e30) is on_cpu and driver._fits_on_device(1e6) is True
    real = driver._fits_on_device
    monkeypatch.setattr(driver, "_fits_on_device", lambda run_bytes: False)
    par = Sampler(logistic, data, sampler="sgld", batch_size=5, num_chains=2, chain_method="parallel", **base)
    assert par.stream_data is False          # chains split over devices: never streamed automatically
    monkeypatch.setattr(driver, "_fits_on_device", real)

    # ... and streamed when an accelerator's free memory is short of the data plus the run
    class Device:
        platform = "gpu"

        def memory_stats(self):
            return {"bytes_limit": 3_000, "bytes_in_use": 2_000}
    monkeypatch.setattr(driver.jax, "devices", lambda *a: [Device()])
    assert driver._fits_on_device(1_000) is True and driver._fits_on_device(1_001) is False
    need = driver.run_memory_bytes(sampler="sgld", num_steps=10, num_chains=1, release="final", thinning=1, dim=2,
                                   data_size=50, batch_size=5, clipped=False, data_bytes=X.nbytes + y.nbytes)
    assert need > 1_000
    s = Sampler(logistic, data, sampler="sgld", batch_size=5, **base)
    assert s.stream_data is True and "host memory" in s.certificate["assumptions"]["placement"]
    assert all(isinstance(v, np.ndarray) for v in s.potential.data.values())
    handle = s._host_handle
    assert driver._HOST_DATA[handle] is s.potential.data
    del s
    gc.collect()
    assert handle not in driver._HOST_DATA            # released with its sampler
