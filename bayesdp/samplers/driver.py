"""Driver: run ULA/SGLD chains exactly as certified, in one ``lax.scan`` under ``jit``.

Vocabulary follows NumPyro's ``MCMC``::

    s = Sampler(model, data={"X": X, "y": y}, sampler="sgld", step_size=1e-4, num_steps=10_000,
                batch_size=100, clip_norm=1.0, num_chains=4, release="final",
                domain=["X.norm=1.0", "y.values=0,1"], delta=1e-5)
    s.certificate            # dict, computed before anything is compiled; refuses uncovered configurations
    s.run()                  # chain keys from the OS CSPRNG; s.run(jax.random.key(0)) is reproducible
    s.get_samples(group_by_chain=True)    # only the released draws, constrained site values
    s.print_summary()
    idata = bayesdp.api.chain_inference_data(s)   # (a layer up) posterior.attrs: the certificate, the settings

Design (see docs/samplers.md):

* data-independent initialisation: zeros in the unconstrained space (default), a user-given point,
  or a prior draw with its own key (``init="prior"``); recorded in the certificate.
* one compiled program per static configuration and shapes (``_COMPILED`` cache), the data,
  step size, inverse temperature, clipping norm, keys and initial points are arguments: no
  recompilation between runs with the same shapes; compile time is reported separately.
* chains: a single chain runs without ``vmap`` (vmap over an axis of size 1 was 3-6x slower);
  several chains are vmapped; ``chain_method="parallel"`` shards the chain axis over
  ``jax.devices()`` with ``jax.sharding`` and ``shard_data=True`` shards the records (the
  full-batch gradient becomes a sharded reduction).  ``"sequential"`` runs chains one after the
  other with the single-chain program.
* divergence: the first step at which a chain's position is non-finite is carried in the scan;
  the run raises a one-line error naming that step and returns nothing.
* progress bar: tqdm on the host, driven by ``jax.debug.callback`` every ``progress_every`` steps.
"""

from __future__ import annotations

import functools
import contextlib
import json
import logging
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec as P

from ..errors import AssumptionError, positive, positive_int
from . import certify as _cert
from . import glm as _glm
from . import gradients
from .keys import REPRODUCIBLE, resolve_key, secure_key
from .kernels import langevin_update
from .potential import ModelPotential
from . import minibatch as _mb
from . import sharding
from . import sharding as _sh
from .. import _arviz
from ..resources import require_memory

__all__ = ["SAMPLERS", "RELEASES", "CHAIN_METHODS", "DivergenceError", "Placement", "RunConfig", "run_memory_bytes",
           "check_run_memory", "Sampler"]

SAMPLERS = ("ula", "sgld")
RELEASES = ("final", "path", "thinned")
CHAIN_METHODS = ("vectorized", "parallel", "sequential")


class DivergenceError(AssumptionError):
    """A chain reached a non-finite position (raised by :meth:`Sampler.run`, which then keeps no output).

    Examples:
        >>> from bayesdp.errors import AssumptionError
        >>> issubclass(DivergenceError, AssumptionError)
        True
    """


# ---------------------------------------------------------------------------
# compiled programs, cached by static configuration
# ---------------------------------------------------------------------------

_COMPILED: dict[Any, Callable] = {}
_EXECUTABLES: dict[Any, Any] = {}
#: number of times a run program was traced (compiled); tests check it does not grow on reruns.
TRACE_COUNT = {"n": 0}

_PROGRESS: dict[str, Any] = {"bar": None, "last": 0}


def _progress_update(step):
    bar = _PROGRESS["bar"]
    if bar is not None:
        step = int(step)
        bar.update(step - _PROGRESS["last"])
        _PROGRESS["last"] = step


def _hashable(value):
    if isinstance(value, (int, float, str, bool, type(None))):
        return value
    if isinstance(value, (tuple, list)):
        return tuple(_hashable(v) for v in value)
    raise TypeError


def _model_key(potential):
    """(model and hashable kwargs, data shapes): what a compiled program may be shared across."""
    shapes = tuple((k, v.shape, str(v.dtype)) for k, v in sorted(potential.data.items()))
    try:
        kw = tuple(sorted((k, _hashable(v)) for k, v in potential.model_kwargs.items()))
        model_key = (potential.model, kw)
    except TypeError:  # array-valued model kwargs: cache per potential object
        model_key = ("potential", id(potential))
    return model_key, shapes


@dataclass(frozen=True)
class Placement:
    """Where a run's arrays live (static, part of the compiled program's identity).

    ``kind`` None: one device, nothing sharded.  ``"chains"``: the chain axis split over every device of
    every process, the data replicated.  ``"records"``: the records split over the devices with padding
    (``layout``), the chains replicated.

    Attributes:
        kind: ``None``, ``"chains"`` or ``"records"``.
        num_devices: the number of devices the arrays are split over.
        layout: the :class:`~bayesdp.samplers.sharding.RecordLayout` of ``kind == "records"``.

    Examples:
        >>> Placement()
        Placement(kind=None, num_devices=1, layout=None)
        >>> Placement("chains", 4) == Placement("chains", 4)      # hashable, part of a compiled program's key
        True
    """

    kind: str | None = None
    num_devices: int = 1
    layout: Any = None          # sharding.RecordLayout for kind == "records"


def _program(potential: ModelPotential, *, sampler: str, num_steps: int, batch_size: int | None, clipped: bool,
             num_chains: int, release: str, thinning: int, progress_every: int,
             glm: tuple | None = None, placement: Placement = Placement(), key_impl: Any = None,
             stream: bool = False) -> Callable:
    """jitted ``run(keys, positions, data, step_size, beta, clip, aux) -> (released, first_bad)``.

    ``keys`` are the raw key data of the chains (``jax.random.key_data``), ``glm = (structure, form)``
    selects the batched Bernoulli-GLM gradient (:mod:`bayesdp.samplers.glm`) for full-batch unclipped
    ULA (``aux`` then holds its arrays, ``None`` otherwise); ``placement`` says how the arrays are split
    over devices (:class:`Placement`); ``stream`` keeps the data on the host (SGLD): ``data`` is then the
    int32 handle of the host arrays (:func:`_register_host_data`) and each chunk of steps' batch rows is
    gathered on the host by a callback."""
    model_key, shapes = _model_key(potential)
    dynamic = steps_are_an_argument(sampler, release, placement, stream, key_impl, progress_every)
    key = (model_key, shapes, sampler, None if dynamic else num_steps, batch_size, clipped, num_chains, release,
           thinning, progress_every, None if glm is None else glm[1], placement, str(key_impl), bool(stream))
    fn = _COMPILED.get(key)
    if fn is None:
        fn = _build_program(potential, sampler=sampler, num_steps=None if dynamic else num_steps,
                            batch_size=batch_size, clipped=clipped, num_chains=num_chains, release=release,
                            thinning=thinning, progress_every=progress_every, glm=glm, placement=placement,
                            key_impl=key_impl, stream=stream)
        _COMPILED[key] = fn
    return fn


def steps_are_an_argument(sampler: str, release: str, placement: "Placement", stream: bool, key_impl: Any,
                          progress_every: int) -> bool:
    """Whether the program takes the number of steps as an argument (one program for every number of steps)
    instead of compiling it in.

    A program is compiled for each static configuration; compiling one costs 1-3 s on a CPU, most of it in
    the kernels of the threefry generator, whatever the number of steps.  A chain that releases only its final
    draw (the last-draw release plans another number of steps for each epsilon) runs its blocks in a loop of
    dynamic length instead, the last block's steps past the end skipped by a ``lax.cond``.  Its draws are those
    of the static program: block ``b`` draws ``normal(fold_in(key, b), (length, d))``, and with JAX's
    partitionable threefry (``jax_threefry_partitionable``, the default) the first ``length`` rows of a full
    block's draw are the draw of ``length`` rows.  Only where that holds (full-batch ULA on one device, the
    threefry key, no progress bar, whose period is a fraction of the steps); everywhere else the number of steps
    is compiled in.

    Args:
        sampler: ``"ula"`` or ``"sgld"``.
        release: what the chain releases.
        placement: how the arrays are placed over devices.
        stream: SGLD's host-streamed data.
        key_impl: the chains' PRNG implementation.
        progress_every: steps between progress updates (0: no progress bar).

    Returns:
        True for a program whose last argument is the number of steps.
    """
    return (sampler == "ula" and release == "final" and placement.kind is None and not stream and not progress_every
            and prefix_consistent(key_impl))


def prefix_consistent(key_impl: Any) -> bool:
    """Whether ``normal(key, (n, d))`` is the first ``n`` rows of ``normal(key, (N, d))`` for ``n < N``: JAX's
    threefry key with ``jax_threefry_partitionable`` on (JAX's default), whose bits are a function of each entry's
    position.

    Args:
        key_impl: the PRNG implementation.

    Returns:
        True where the draws of a shorter block are a prefix of a full block's.
    """
    return "threefry" in str(key_impl) and bool(jax.config.jax_threefry_partitionable)


#: steps per block: the per-step random numbers of a block (ULA's noise; SGLD's batches and noise) are drawn
#: at once, vectorised, instead of a fold_in + split at every step (measured 3-8 us per step at d = 10).
BLOCK_STEPS = 512
#: the random numbers of a block stay under NOISE_BLOCK_BYTES per chain: the block is shortened for a large
#: dimension or batch (the block length depends on the dimension and batch size only, so a chain's draws do
#: not depend on the number of chains, on chain_method or on sharding).
NOISE_BLOCK_BYTES = 1 << 20


def _block_length(sampler, num_steps, record_every, dim, itemsize, batch_size=None):
    per_step = dim * itemsize + (4 * int(batch_size) if sampler == "sgld" and batch_size else 0)
    cap = max(1, min(BLOCK_STEPS, NOISE_BLOCK_BYTES // max(1, per_step)))
    block = max(1, cap // record_every) * record_every
    return min(block, num_steps)


#: bytes of batch rows a streamed SGLD chain gathers on the host per callback (a chunk of the block's steps)
STREAM_CHUNK_BYTES = 1 << 24

# host arrays of streamed samplers by handle (the compiled programs take the handle, not the arrays, so that
# a program is shared by samplers whose data have the same shapes)
_HOST_DATA: dict[int, dict] = {}
_HOST_HANDLES = iter(range(1, 2 ** 31))


def _register_host_data(owner, data: dict) -> int:
    """A handle of ``data`` for the streamed programs, released when ``owner`` is garbage collected."""
    handle = next(_HOST_HANDLES)
    _HOST_DATA[handle] = data
    weakref.finalize(owner, _HOST_DATA.pop, handle, None)
    return handle


def _host_gather(handle, rows):
    """The rows ``rows`` (any shape of int32 indices) of every host array of ``handle``: ``rows.shape + record``."""
    data = _HOST_DATA[int(handle)]
    idx = np.asarray(rows)
    return {k: np.take(v, idx, axis=0) for k, v in data.items()}


def _stream_chunk(length, num_chains, batch_size, record_bytes):
    """Steps per host gather: at most STREAM_CHUNK_BYTES of rows, at least one step, at most ``length``."""
    per_step = max(1, num_chains * batch_size * record_bytes)
    return max(1, min(length, STREAM_CHUNK_BYTES // per_step))


def _build_program(potential, *, sampler, num_steps, batch_size, clipped, num_chains, release, thinning,
                   progress_every, glm=None, placement=Placement(), key_impl=None, stream=False):

    ula = sampler == "ula"
    record_every = thinning if release == "thinned" else 1
    keep_path = release != "final"
    dtype = jnp.float64 if jax.config.read("jax_enable_x64") else jnp.float32
    dim = potential.dim
    dynamic = num_steps is None        # the number of steps is the program's last argument (steps_are_an_argument)
    # the first rows of a draw of more rows are the draw of fewer rows (threefry_partitionable, default key)
    prefix_draws = prefix_consistent(key_impl)
    block = _block_length(sampler, 2 ** 31 - 1 if dynamic else num_steps, record_every, dim,
                          jnp.dtype(dtype).itemsize, batch_size)
    num_blocks, remainder = (0, 0) if dynamic else divmod(num_steps, block)
    by_records = placement.kind == "records"
    layout = placement.layout
    # chains each device runs (the chain axis is split over the devices with chain_method="parallel")
    local_chains = num_chains // placement.num_devices if placement.kind == "chains" else num_chains
    vectorised = local_chains > 1
    m = layout.data_size if by_records else potential.data_size

    def over_chains(f, in_axes):
        return jax.vmap(f, in_axes=in_axes) if vectorised else f

    # -- the gradient of one step, for all (local) chains at once -----------------------------------------
    if ula and glm is not None:
        assert not clipped, "the GLM gradient is for full-batch unclipped ULA only"
        glm_lik = _glm.likelihood_gradient(glm[0], glm[1], local_chains)
        glm_prior = _glm.prior_gradient(glm[0], local_chains)

        def gradient(x, data, clip, aux, batch_rows=None):
            if not by_records:
                return glm_prior(x, data) + glm_lik(x, data, aux)
            return glm_prior(x, data) + jax.lax.psum(glm_lik(x, data, aux, layout.local_valid()), _sh.RECORDS)
    elif ula and not by_records:
        full = gradients.build(potential, batch_size=None, clipped=clipped)
        one = over_chains(lambda x, data, clip: full(None, x, data, clip), (0, None, None))

        def gradient(x, data, clip, aux, batch_rows=None):
            return one(x, data, clip)
    elif ula:  # records over devices: per-device partial sums of the (clipped) per-record gradients, then psum
        prior = over_chains(jax.grad(potential.prior_potential), 0)
        lik = over_chains(gradients.masked_likelihood(potential, clipped), (0, None, None, None))

        def gradient(x, data, clip, aux, batch_rows=None):
            return prior(x) + jax.lax.psum(lik(x, data, layout.local_valid(), clip), _sh.RECORDS)
    else:  # SGLD: the batch's rows (taken, or fetched from the devices that own them), then the batch estimator
        on_batch = over_chains(gradients.from_indices(potential, m, batch_size, clipped), (0, 0, None))

        def gradient(x, data, clip, aux, batch_rows=None):
            if stream:      # batch_rows are the batch's rows themselves, gathered on the host
                return on_batch(x, batch_rows, clip)
            if by_records:
                batch = _sh.gather_rows(data, layout.rows(batch_rows), layout)
            else:
                # mode="clip": XLA's own gather (the indices are in [0, m) by construction); the default "fill"
                # adds a select over the gathered rows at every step
                batch = {k: jnp.take(v, batch_rows, axis=0, mode="clip") for k, v in data.items()}
            return on_batch(x, batch, clip)

    assert not stream or (not ula and placement.kind is None), "streaming is for SGLD on one device"
    host_shapes = {k: (tuple(v.shape[1:]), v.dtype) for k, v in potential.data.items()}
    record_bytes = sum(int(np.prod(sh, dtype=np.int64)) * np.dtype(dt).itemsize for sh, dt in host_shapes.values())

    def host_rows(handle, rows):
        """The batch rows of ``rows`` (int32 ``(..., s)``) gathered on the host: ``{name: rows.shape + record}``."""
        out = {k: jax.ShapeDtypeStruct(rows.shape + sh, dt) for k, (sh, dt) in host_shapes.items()}
        return jax.pure_callback(_host_gather, out, handle, rows)

    # -- random numbers of a block of steps, per chain ----------------------------------------------------
    def block_draws(key, block_index, length):
        """ULA: z (length, dim) = normal(fold_in(key, b)).  SGLD: fold_in(key, b) split into a batch key and a
        noise key: batches (length, s) = minibatch.batch_indices(batch key), z (length, dim) = normal(noise key)."""
        kb = jax.random.fold_in(key, block_index)
        if ula:
            return jax.random.normal(kb, (length, dim), dtype), None
        k_idx, k_noise = jax.random.split(kb)
        return (jax.random.normal(k_noise, (length, dim), dtype),
                _mb.batch_indices(k_idx, m, batch_size, length))

    def run(keys, positions, data, step_size, beta, clip, aux, steps=None):
        TRACE_COUNT["n"] += 1  # runs at trace time only
        keys = jax.random.wrap_key_data(keys, impl=key_impl) if key_impl is not None else keys
        if placement.kind == "chains" and not vectorised:  # one chain per device: the unvectorised program
            keys, positions = keys[0], positions[0]
        scale = jnp.sqrt(2.0 * step_size / beta).astype(positions.dtype)

        def body(carry, inputs):
            x, first_bad, t = carry
            z, rows = inputs
            x = langevin_update(x, gradient(x, data, clip, aux, rows), z, step_size, scale)
            t = t + 1
            ok = jnp.all(jnp.isfinite(x), axis=-1)
            first_bad = jnp.where((first_bad < 0) & ~ok, t, first_bad)
            if progress_every:
                lax.cond(t % progress_every == 0, lambda s: jax.debug.callback(_progress_update, s),
                         lambda s: None, t)
            return (x, first_bad, t), (x if keep_path else None)

        def until_steps(carry, inputs):
            """``body`` for the steps before ``steps``, nothing after (the last block of a dynamic program)."""
            return lax.cond(carry[2] < steps, lambda c: body(c, inputs)[0], lambda c: c, carry), None

        def run_block(carry, block_index, length, step=body):
            # ULA's last, shorter block draws a full block's noise and keeps its first `length` rows (the same draws
            # under partitionable threefry): one shape of noise in the program, one threefry kernel to compile
            # (about 1 s on a CPU each) instead of two
            drawn = block if (ula and length < block and prefix_draws) else length
            if vectorised:  # (length, chains, ...) per step
                z, rows = jax.vmap(lambda k: block_draws(k, block_index, drawn))(keys)
                z = jnp.swapaxes(z, 0, 1)
                rows = None if rows is None else jnp.swapaxes(rows, 0, 1)
            else:
                z, rows = block_draws(keys, block_index, drawn)
            if drawn != length:
                z = z[:length]
            if stream:
                carry, path = streamed_scan(carry, z, rows, length)
            else:
                carry, path = lax.scan(step, carry, (z, rows))
            if keep_path and record_every > 1:
                path = path[record_every - 1::record_every]
            return carry, path

        def streamed_scan(carry, z, rows, length):
            """The steps of a block in chunks of ``chunk`` steps, each chunk's batch rows gathered on the host by one
            callback (the same rows ``jnp.take`` gives in device memory, so the same draws)."""
            chunk = _stream_chunk(length, local_chains, batch_size, record_bytes)
            full, tail = divmod(length, chunk)

            def one_chunk(c, zr):
                zc, rc = zr
                return lax.scan(body, c, (zc, host_rows(data, rc)))

            paths = []
            if full:
                cut = full * chunk
                zs = z[:cut].reshape((full, chunk) + z.shape[1:])
                rs = rows[:cut].reshape((full, chunk) + rows.shape[1:])
                carry, path = lax.scan(one_chunk, carry, (zs, rs))
                if keep_path:
                    paths.append(path.reshape((cut,) + path.shape[2:]))
            if tail:
                carry, path = one_chunk(carry, (z[full * chunk:], rows[full * chunk:]))
                if keep_path:
                    paths.append(path)
            if not keep_path:
                return carry, None
            return carry, paths[0] if len(paths) == 1 else jnp.concatenate(paths, axis=0)

        bad0 = jnp.full(positions.shape[:-1], -1, jnp.int32)
        carry = (positions, bad0, jnp.int32(0))
        pieces = []
        if dynamic:      # the full blocks in a loop of steps // block iterations, then the last block's first steps
            full = steps // block
            carry = lax.fori_loop(0, full, lambda b, c: run_block(c, b, block)[0], carry)
            carry = lax.cond(full * block < steps, lambda c: run_block(c, full, block, until_steps)[0],
                             lambda c: c, carry)
        if num_blocks:
            carry, path = lax.scan(lambda c, b: run_block(c, b, block), carry, jnp.arange(num_blocks))
            if keep_path:
                pieces.append(path.reshape((-1,) + path.shape[2:]))
        if remainder:
            carry, path = run_block(carry, num_blocks, remainder)
            if keep_path:
                pieces.append(path)
        x, first_bad, _ = carry
        if keep_path:
            path = pieces[0] if len(pieces) == 1 else jnp.concatenate(pieces, axis=0)
            released = jnp.moveaxis(path, 0, -2)  # (chains, draws, dim) or (draws, dim)
        else:
            released = x[..., None, :]  # (chains, 1, dim) or (1, dim)
        if placement.kind == "chains" and not vectorised:
            released, first_bad = released[None], first_bad[None]
        return released, first_bad

    if placement.kind is None:
        return jax.jit(run)
    if placement.kind == "chains":
        axis = _sh.CHAINS
        fn = jax.shard_map(run, mesh=_sh.mesh(axis), in_specs=(P(axis), P(axis), P(), P(), P(), P(), P()),
                           out_specs=(P(axis), P(axis)), check_vma=False)
        return jax.jit(fn)
    axis = _sh.RECORDS

    def record_spec(tree):
        return jax.tree_util.tree_map(lambda v: P(axis, *([None] * (jnp.ndim(v) - 1))), tree)

    def sharded(keys, positions, data, step_size, beta, clip, aux):
        aux_spec = None if aux is None else {k: (P(None, axis) if k == "JT" else P(axis)) for k in aux}
        fn = jax.shard_map(run, mesh=_sh.mesh(axis),
                           in_specs=(P(), P(), record_spec(data), P(), P(), P(), aux_spec),
                           out_specs=(P(), P()), check_vma=False)
        return fn(keys, positions, data, step_size, beta, clip, aux)

    return jax.jit(sharded)


def _fits_on_device(run_bytes: float) -> bool:
    """Whether a run needing ``run_bytes`` (its records included, :func:`run_memory_bytes`) fits in the default
    device's free memory.  A CPU device is the host's memory: the records are there either way (True)."""
    dev = jax.devices()[0]
    if dev.platform == "cpu":
        return True
    stats = dev.memory_stats() or {}
    limit = stats.get("bytes_limit")
    if not limit:
        return True
    return run_bytes <= limit - stats.get("bytes_in_use", 0)


@functools.partial(jax.jit, static_argnums=1)
def _chain_keys(rng_key, num_chains):
    """``jax.random.split(rng_key, num_chains)`` in one dispatch; its single entry when num_chains == 1."""
    keys = jax.random.split(rng_key, num_chains)
    return keys[0] if num_chains == 1 else keys


# ---------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RunConfig:
    """The validated configuration of a run: what the certificate prices and the program runs.

    Attributes:
        sampler: ``"ula"`` or ``"sgld"``.
        step_size: the step size gamma.
        num_steps: the number of steps n.
        inverse_temperature: beta (the target is ``exp(-beta U_D)``).
        batch_size: SGLD's batch size s (``None`` for ULA).
        clip_norm: the per-record clipping norm of the likelihood gradients, or ``None``.
        num_chains: the number of released chains K.
        release: ``"final"``, ``"path"`` or ``"thinned"``.
        thinning: keep every ``thinning``-th draw of a thinned path.
        init: the description of the (data-independent) initialisation.
        data_size: the number of records m (over every process).
        dim: the length of the flat unconstrained position.
        chain_method: ``"vectorized"``, ``"parallel"`` or ``"sequential"``.

    Examples:
        >>> c = RunConfig("ula", 0.1, 100, 1.0, None, None, 1, "final", 1, "zeros", 3, 1, "vectorized")
        >>> c.to_dict()["num_steps"], c.release
        (100, 'final')
    """

    sampler: str
    step_size: float
    num_steps: int
    inverse_temperature: float
    batch_size: int | None
    clip_norm: float | None
    num_chains: int
    release: str
    thinning: int
    init: str
    data_size: int
    dim: int
    chain_method: str

    def to_dict(self) -> dict:
        """The configuration as a plain dict (the certificate's ``configuration``).

        Returns:
            a new dict of field name to value.
        """
        return dict(self.__dict__)


def _validate(sampler, step_size, num_steps, inverse_temperature, batch_size, clip_norm, num_chains, release,
              thinning, chain_method, data_size):
    if sampler not in SAMPLERS:
        raise AssumptionError(f"sampler = {sampler!r} is not one of {SAMPLERS}; pass 'ula' or 'sgld'")
    step_size = positive("step_size", step_size, "pass a positive step size")
    num_steps = positive_int("num_steps", num_steps)
    inverse_temperature = positive("inverse_temperature", inverse_temperature)
    if sampler == "sgld":
        if batch_size is None:
            raise AssumptionError("batch_size = None but sgld needs a batch size s with 1 <= s <= data_size; "
                                  "pass batch_size=...")
        if isinstance(batch_size, bool) or not float(batch_size).is_integer() or int(batch_size) < 1:
            raise AssumptionError(f"batch_size = {batch_size!r} must be an integer >= 1; pass 1 <= s <= {data_size}")
        batch_size = int(batch_size)
        if batch_size > data_size:
            raise AssumptionError(f"batch_size = {batch_size} exceeds data_size = {data_size}; batches are drawn "
                                  f"without replacement, pass 1 <= batch_size <= {data_size}")
    elif batch_size is not None:
        raise AssumptionError(f"batch_size = {batch_size!r} is set but sampler = 'ula' uses the full batch; "
                              f"use sampler='sgld' or drop batch_size")
    if clip_norm is not None:
        clip_norm = positive("clip_norm", clip_norm, "pass a positive clipping norm or None")
    num_chains = positive_int("num_chains", num_chains)
    if release not in RELEASES:
        raise AssumptionError(f"release = {release!r} is not one of {RELEASES}")
    thinning = positive_int("thinning", thinning)
    if release != "thinned" and thinning != 1:
        raise AssumptionError(f"thinning = {thinning} is only used with release='thinned'; set release='thinned'")
    if release == "thinned" and num_steps % thinning:
        raise AssumptionError(f"thinning = {thinning} does not divide num_steps = {num_steps}; pick num_steps a "
                              f"multiple of thinning")
    if chain_method not in CHAIN_METHODS:
        raise AssumptionError(f"chain_method = {chain_method!r} is not one of {CHAIN_METHODS}")
    return step_size, num_steps, inverse_temperature, batch_size, clip_norm, num_chains, thinning


def run_memory_bytes(*, sampler, num_steps, num_chains, release, thinning, dim, data_size, batch_size, clipped,
                     data_bytes=0, itemsize=None) -> float:
    """An estimate (from below: buffers XLA may add are not counted) of the memory one run needs: per
    chain the released draws (device buffer, host copy and constrained values: 3 copies), the position
    and gradient, the block of Gaussian noise (and of SGLD batch indices), the per-record gradients of a
    clipped estimator and the per-record intermediates of the likelihood; plus the data.

    Args:
        sampler: ``"ula"`` or ``"sgld"``.
        num_steps: the number of steps.
        num_chains: the number of chains.
        release: ``"final"``, ``"path"`` or ``"thinned"``.
        thinning: the thinning of a thinned path.
        dim: the length of the flat unconstrained position.
        data_size: the number of records.
        batch_size: SGLD's batch size (``None`` for the full batch).
        clipped: whether the likelihood gradients are clipped per record.
        data_bytes: the size of the data in bytes.
        itemsize: bytes per float (default: 8 in JAX's 64-bit mode, else 4).

    Returns:
        the estimate in bytes.

    Examples:
        One ULA chain, final draw, d = 2, m = 100, 10 steps, float32: ``(3 * 1 * 2 + 4 * 2 + 100 * 4) * 4``
        bytes per chain plus the block of noise ``10 * 2 * 4``:

        >>> run_memory_bytes(sampler="ula", num_steps=10, num_chains=1, release="final", thinning=1, dim=2,
        ...                  data_size=100, batch_size=None, clipped=False, itemsize=4)
        1736.0
    """
    if itemsize is None:
        itemsize = 8 if jax.config.read("jax_enable_x64") else 4
    draws = {"final": 1, "path": num_steps, "thinned": num_steps // max(1, thinning)}[release]
    record_every = thinning if release == "thinned" else 1
    block = _block_length(sampler, num_steps, record_every, dim, itemsize, batch_size)
    records = batch_size if (sampler == "sgld" and batch_size) else data_size
    per_chain = (3.0 * draws * dim + 4.0 * dim + records * 4.0) * itemsize
    per_chain += block * dim * itemsize   # the block's Gaussian noise
    if sampler == "sgld" and batch_size:
        per_chain += block * batch_size * 4.0 * 3   # the block's batch indices (and two sort buffers)
    if clipped:
        per_chain += records * dim * itemsize
    return float(num_chains) * per_chain + float(data_bytes)


def check_run_memory(**config) -> None:
    """Refuse, in one line and before anything is allocated or compiled, a run whose estimated memory
    (:func:`run_memory_bytes`) exceeds the available memory (:func:`bayesdp.resources.available_memory_bytes`).

    Args:
        **config: the keyword arguments of :func:`run_memory_bytes`.

    Raises:
        AssumptionError: the run needs more memory than is available.

    Examples:
        >>> config = dict(sampler="ula", num_steps=10, num_chains=1, release="final", thinning=1, dim=2,
        ...               data_size=100, batch_size=None, clipped=False)
        >>> check_run_memory(**config)
        >>> check_run_memory(**{**config, "num_steps": 10 ** 6, "num_chains": 10 ** 6, "release": "path"})
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: a run of 1000000 chain(s) (path release, 1000000 steps, dimension 2) needs ...
    """

    need = run_memory_bytes(**config)
    require_memory(need, f"a run of {config['num_chains']} chain(s) ({config['release']} release, "
                         f"{config['num_steps']} steps, dimension {config['dim']})",
                   "use fewer chains, release only the final draw or thin the path, or use a machine with more "
                   "memory")


# ---------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet_arviz():
    """"More chains than draws" is expected for release="final": ArviZ reports it through warnings and
    through its logger ("Shape validation failed"); both are silenced inside this block only."""
    import arviz

    # arviz logs through its own Logger instance (arviz._log), not one from logging.getLogger
    log = getattr(arviz, "_log", None) or logging.getLogger("arviz")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        log.setLevel(level)


class Sampler:
    """ULA / SGLD on a NumPyro model, run exactly as its certificate describes.

    Parameters mirror the certificate: ``step_size`` (gamma), ``num_steps`` (n),
    ``inverse_temperature`` (beta), ``batch_size`` (s, SGLD only), ``clip_norm`` (per-record
    clipping of the likelihood gradients), ``num_chains`` (K released chains compose),
    ``release`` ("final" | "path" | "thinned" with ``thinning``).  ``init`` is "zeros", "prior"
    (a draw from the prior with ``init_key``) or an array of shape (dim,) or (num_chains, dim)
    in the unconstrained space; it must not depend on the data.

    ``domain`` (a ``bayesdp.analysis.Domain`` or a list of "site.bound=value" strings) and
    ``delta`` are passed to ``bayesdp.analysis.certify``; with ``uncertified=True`` no
    certificate is required and every output says ``"certified": false``.  The certificate is
    computed at construction, before anything is compiled.

    Args:
        model: the NumPyro model, called as ``model(**data, **model_kwargs)``.
        data: record arrays by name, sharing their leading (record) dimension.
        sampler: ``"ula"`` (full batch) or ``"sgld"`` (minibatches without replacement).
        step_size: the step size gamma > 0.
        num_steps: the number of steps n >= 1.
        inverse_temperature: beta > 0; the target is ``exp(-beta U_D)``.
        batch_size: SGLD's batch size s in ``[1, m]`` (``None`` for ULA).
        clip_norm: clip each record's likelihood gradient to this norm (``None``: no clipping).
        num_chains: the number of chains K, all released (their certificates compose).
        chain_method: ``"vectorized"`` (vmap), ``"parallel"`` (chains over devices) or ``"sequential"``.
        release: ``"final"`` (last draw), ``"path"`` (every draw) or ``"thinned"`` (every ``thinning``-th).
        thinning: the thinning of ``release="thinned"``; must divide ``num_steps``.
        init: ``"zeros"``, ``"prior"`` or a point ``(dim,)`` / ``(num_chains, dim)`` (unconstrained, data
            independent).
        init_key: the PRNG key of ``init="prior"`` (independent of the sampling key).
        domain: public bounds on one record (``bayesdp.analysis.Domain`` or ``"site.bound=value"`` strings).
        delta: the delta at which the certificate reports epsilon.
        uncertified: run without a certificate (every output says so).
        model_kwargs: the model's other keyword arguments.
        progress_bar: show a tqdm progress bar.
        progress_every: steps between progress updates (default: 1% of the steps).
        shard_data: split the records over the devices (and processes).
        certifier: the analyzer's ``certify`` (default ``bayesdp.analysis.certify``).
        max_copy_bytes: largest feature-major copy of the data the batched GLM gradient may make on a CPU
            (default ``bayesdp.samplers.glm.MAX_COPY_BYTES``).
        stream_data: SGLD only: keep the records in host memory and gather each chunk of steps' batch rows
            there (the same draws); ``None`` (default) streams when the run would not fit in an accelerator's
            free memory (never on a CPU), ``True`` always, ``False`` never.

    Attributes:
        certificate: the JSON-ready certificate dict (see :func:`bayesdp.samplers.certify.certify_run`).
        config: the validated :class:`RunConfig`.
        potential: the model's :class:`~bayesdp.samplers.potential.ModelPotential`.
        timing: ``compile_s``, ``prepare_s``, ``run_s``, ``steps_per_s`` of the last run.

    Raises:
        AssumptionError: an invalid configuration (one line naming the parameter), malformed data, a
            configuration no certificate covers (unless ``uncertified``), or a run that does not fit in memory.
        ModelError: a model the samplers cannot run (see :class:`~bayesdp.samplers.potential.ModelPotential`).
        DomainError: invalid data, or records outside ``domain``.

    Examples:
        The mean of a Normal with unit variance and a N(0, 1) prior, records 1, 2, 3: the posterior mean is
        6/4 = 1.5 and ULA's drift is ``mu <- mu - 0.1 (4 mu - 6)``; at a very low temperature (noise scale
        ``sqrt(2 * 0.1 / 1e12)``) three steps from 0 give 0.6, 0.96, 1.176:

        >>> import numpy as np, jax
        >>> import numpyro, numpyro.distributions as dist
        >>> def normal_mean(y):
        ...     mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        ...     with numpyro.plate("records", y.shape[0]):
        ...         numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)
        >>> data = {"y": np.array([1.0, 2.0, 3.0])}
        >>> s = Sampler(normal_mean, data, step_size=0.1, num_steps=3, inverse_temperature=1e12,
        ...             release="path", uncertified=True)
        >>> [round(v, 3) for v in s.run(jax.random.key(0)).get_samples()["mu"].tolist()]
        [0.6, 0.96, 1.176]
        >>> s.certified, s.key_source
        (False, 'reproducible seed: not private')

        Several chains: the released draws per chain.

        >>> s = Sampler(normal_mean, data, step_size=0.1, num_steps=4, num_chains=2, uncertified=True)
        >>> s.run(jax.random.key(0)).get_samples(group_by_chain=True)["mu"].shape
        (2, 1)
    """

    def __init__(self, model: Callable, data: Mapping[str, Any], *, sampler: str = "ula", step_size: float,
                 num_steps: int, inverse_temperature: float = 1.0, batch_size: int | None = None,
                 clip_norm: float | None = None, num_chains: int = 1, chain_method: str = "vectorized",
                 release: str = "final", thinning: int = 1, init: Any = "zeros", init_key=None,
                 domain=None, delta: float = 1e-5, uncertified: bool = False, model_kwargs=None,
                 progress_bar: bool = False, progress_every: int | None = None, shard_data: bool = False,
                 certifier: Callable | None = None, max_copy_bytes: int | None = None,
                 stream_data: bool | None = None):

        self.shard_data = bool(shard_data)
        if stream_data not in (None, True, False):
            raise AssumptionError(f"stream_data = {stream_data!r} must be True, False or None (stream when the data "
                                  "would not fit beside the chain in the device's memory)")
        if stream_data and sampler != "sgld":
            raise AssumptionError(f"stream_data=True is for sampler='sgld' (minibatches), but sampler = {sampler!r} "
                                  "reads every record at every step; drop stream_data or use sampler='sgld'")
        if stream_data and (self.shard_data or (chain_method == "parallel" and num_chains != 1)):
            raise AssumptionError("stream_data=True keeps the records in this host's memory for one device; it "
                                  "cannot be combined with shard_data=True or chain_method='parallel': drop one")
        # sharded records stay on the host until they are split over the devices (never whole on device 0); so
        # do SGLD's records until it is known whether they are streamed from the host (_place_data)
        self.potential = ModelPotential(model, data, model_kwargs,
                                        on_device=not self.shard_data and sampler != "sgld")
        local_m = self.potential.data_size
        self._layout = sharding.record_layout(local_m) if self.shard_data else None
        m = self._layout.data_size if self._layout is not None else local_m
        if not self.shard_data:  # every process must pass the same data (checked on shapes)
            sharding.all_equal([local_m] + [s for v in self.potential.data.values() for s in v.shape],
                               "the data shapes")
        (step_size, num_steps, inverse_temperature, batch_size, clip_norm, num_chains,
         thinning) = _validate(sampler, step_size, num_steps, inverse_temperature, batch_size, clip_norm,
                               num_chains, release, thinning, chain_method, m)
        if max_copy_bytes is not None and (isinstance(max_copy_bytes, bool) or not float(max_copy_bytes) >= 0):
            raise AssumptionError(f"max_copy_bytes = {max_copy_bytes!r} must be a number of bytes >= 0 (or None for "
                                  f"the default {_glm.MAX_COPY_BYTES})")
        self.max_copy_bytes = max_copy_bytes
        if chain_method == "parallel":
            sharding.check_chains(num_chains)
        sharding.all_equal([num_chains, num_steps, batch_size or 0], "num_chains, num_steps, batch_size")
        check_run_memory(sampler=sampler, num_steps=num_steps, num_chains=num_chains, release=release,
                         thinning=thinning, dim=self.potential.dim, data_size=local_m, batch_size=batch_size,
                         clipped=clip_norm is not None, data_bytes=sum(int(v.nbytes) for v in
                                                                       self.potential.data.values()))
        self.potential.check_decomposition()
        #: whether SGLD's records stay in host memory, each chunk of steps' batch rows gathered there
        self.stream_data = self._place_data(stream_data, chain_method, dict(
            sampler=sampler, num_steps=num_steps, num_chains=num_chains, release=release, thinning=thinning,
            dim=self.potential.dim, data_size=local_m, batch_size=batch_size, clipped=clip_norm is not None))
        self._init_positions, init_label = self._initial_positions(init, init_key, num_chains)
        self.config = RunConfig(sampler, step_size, num_steps, inverse_temperature, batch_size, clip_norm,
                                num_chains, release, thinning, init_label, m, self.potential.dim, chain_method)
        self.delta = float(delta)
        self.progress_bar = bool(progress_bar)
        self.progress_every = int(progress_every or max(1, num_steps // 100)) if progress_bar else 0
        if self.shard_data and sharding.multi_process():
            # each process holds its own records: the certificate is priced for the global record count,
            # and each process checks its own records against the domain
            cert_data = None
            if not uncertified and domain is not None:
                _cert.check_local_records(model, self.potential.data, domain, model_kwargs)
        else:
            cert_data = self.potential.data
        self.certificate = _cert.certify_run(model=model, data=cert_data, domain=domain,
                                             config=self.config.to_dict(), delta=self.delta,
                                             model_kwargs=model_kwargs, uncertified=uncertified, certifier=certifier,
                                             record_shapes={k: tuple(v.shape[1:]) for k, v in
                                                            self.potential.data.items()})
        self.certificate["assumptions"] = {
            "initialisation": init_label,
            "initialisation is data independent": True,
            "minibatch indices": ("drawn inside the sampler, uniformly without replacement, independently at each "
                                  "step (Floyd's algorithm resolved in parallel, exact uniform integers by "
                                  "rejection: bayesdp.samplers.minibatch)") if sampler == "sgld" else "full batch",
            "clipping": (f"each record's likelihood gradient clipped to norm <= {clip_norm}" if clip_norm is not None
                         else "none"),
            "arithmetic": (f"{'float64' if jax.config.read('jax_enable_x64') else 'float32'}; every matrix product "
                           "at jax.lax.Precision.HIGHEST (no TF32 or bfloat16 passes on any backend)"),
        }
        if self.shard_data or chain_method == "parallel":
            self.certificate["assumptions"]["placement"] = self._placement_label()
        if self.stream_data:
            self.certificate["assumptions"]["placement"] = (
                "records in host memory; each step's batch rows gathered there from the indices drawn inside the "
                "sampler (the same indices, rows and draws as with the records in device memory)")
            self._host_handle = _register_host_data(self, self.potential.data)
        self._released = None
        self.timing: dict[str, float] = {}
        self._glm_cache: dict[int, tuple] = {}
        self._scalars = None
        self._executables: dict[int, Any] = {}
        self._init_single = self._init_positions[0] if num_chains == 1 else None
        self._init_host = None
        self._programs: dict[int, tuple] = {}
        self._placed_data = None
        #: why the batched GLM gradient is or is not used, and its layout (set at the first run)
        self.gradient_path: str | None = None
        #: where the chain keys of the last run came from (keys.SECURE or keys.REPRODUCIBLE)
        self.key_source: str | None = None

    def _place_data(self, stream_data, chain_method, config) -> bool:
        """Decide whether SGLD streams its records from host memory, and put them on the device otherwise.

        ``stream_data=None``: stream when the device is not the host's memory (an accelerator) and the data
        plus the run's own memory (:func:`run_memory_bytes`) exceed what the device has free (one device
        only: never with the chains split over devices; with several processes, process 0 decides)."""
        if self.shard_data or config["sampler"] != "sgld":
            return False
        if stream_data is None:
            if chain_method == "parallel" and config["num_chains"] > 1:
                stream_data = False
            else:
                nbytes = sum(int(v.nbytes) for v in self.potential.data.values())
                stream_data = not _fits_on_device(run_memory_bytes(**config, data_bytes=nbytes))
            if sharding.multi_process():   # every process must compile the same program
                stream_data = bool(sharding.agree(np.asarray(int(stream_data), np.int32)))
        if not stream_data:
            # device arrays; a 64-byte-aligned host array is used in place (no copy), otherwise copied once
            self.potential.data = {k: jax.device_put(v, may_alias=True) for k, v in self.potential.data.items()}
        return bool(stream_data)

    def _placement_label(self) -> str:

        n, procs = len(sharding.devices()), jax.process_count()
        where = f"{n} device(s) in {procs} process(es)"
        if self.shard_data:
            lay = self._layout
            return (f"records split over {where}: {lay.shard_size} rows per device, "
                    f"{lay.padded_size - lay.data_size} padded row(s) masked out of every sum and never in a batch; "
                    "chains replicated")
        return f"chains split over {where}; data replicated"

    @property
    def placement(self) -> Placement:
        """How this sampler's arrays are split over devices (:class:`Placement`).

        Returns:
            the placement of its runs.
        """

        if self.shard_data:
            return Placement("records", len(sharding.devices()), self._layout)
        if self.config.chain_method == "parallel" and self.config.num_chains > 1:
            return Placement("chains", len(sharding.devices()))
        return Placement()

    # -- initialisation -----------------------------------------------------
    def _initial_positions(self, init, init_key, num_chains):
        dim = self.potential.dim
        dtype = jnp.float64 if jax.config.read("jax_enable_x64") else jnp.float32
        if isinstance(init, str):
            if init == "zeros":
                return jnp.zeros((num_chains, dim), dtype), "fixed point: zeros in the unconstrained space"
            if init == "prior":
                if init_key is None:
                    raise AssumptionError("init_key = None but init='prior' needs its own PRNG key (independent "
                                          "of the sampling key); pass init_key=jax.random.key(...)")
                keys = jax.random.split(init_key, num_chains)
                pos = jax.jit(jax.vmap(self.potential.init_prior))(keys).astype(dtype)
                return pos, "draw from the prior (own key, data independent)"
            raise AssumptionError(f"init = {init!r} is not 'zeros', 'prior' or an array; pass one of these")
        arr = np.asarray(init, dtype=np.float64)
        if arr.shape == (dim,):
            arr = np.broadcast_to(arr, (num_chains, dim))
        if arr.shape != (num_chains, dim):
            raise AssumptionError(f"init has shape {arr.shape} but needs ({dim},) or ({num_chains}, {dim}) "
                                  f"(unconstrained space); pass a point of that shape")
        if not np.all(np.isfinite(arr)):
            raise AssumptionError("init has non-finite entries; pass a finite point")
        return jnp.asarray(arr, dtype), f"fixed point given by the user: {arr.tolist()}"

    # -- running ------------------------------------------------------------
    def _device_args(self, keys, positions):
        """Keys (raw key data), positions and data, placed as the sampler's :attr:`placement` says."""

        place = self.placement
        if sharding.multi_process():  # every process runs process 0's chains
            keys, positions = sharding.agree(np.asarray(keys)), sharding.agree(np.asarray(positions))
        if place.kind is None:
            if self.stream_data:
                if self._placed_data is None:
                    self._placed_data = jnp.asarray(self._host_handle, jnp.int32)
                return keys, positions, self._placed_data
            return keys, positions, self.potential.data
        if place.kind == "chains":
            if self._placed_data is None:
                self._placed_data = sharding.replicate_data(self.potential.data, sharding.CHAINS)
            return (sharding.place(keys, sharding.CHAINS, sharding.CHAINS),
                    sharding.place(positions, sharding.CHAINS, sharding.CHAINS), self._placed_data)
        if self._placed_data is None:
            self._placed_data = sharding.place_records(self.potential.data, self._layout)
        return (sharding.place(keys, None, sharding.RECORDS), sharding.place(positions, None, sharding.RECORDS),
                self._placed_data)

    def free_data(self) -> None:
        """Drop this sampler's references to the records (the draws, the certificate, the settings and the timing
        stay).  ``bayesdp sample`` calls it after the run, before it imports ArviZ and writes its outputs, so that
        their memory does not add to the data's (the command's peak memory, issue 24).  A later :meth:`run` is
        refused: build a new sampler.

        Examples:
            >>> import numpy as np
            >>> from bayesdp.models import logistic
            >>> X = np.array([[0.6, 0.8], [1.0, 0.0]], np.float32); y = np.array([1.0, 0.0], np.float32)
            >>> s = Sampler(logistic, {"X": X, "y": y}, step_size=0.01, num_steps=5, uncertified=True).run(0)
            >>> s.free_data(); s.get_samples()["w"].shape
            (1, 2)
            >>> s.run(0)
            Traceback (most recent call last):
            ...
            bayesdp.errors.AssumptionError: this sampler's records were freed (free_data()): build a new Sampler to run again
        """
        self.potential.data = None
        self._placed_data = None
        self._glm_cache = {}
        handle = getattr(self, "_host_handle", None)
        if handle is not None:
            _HOST_DATA.pop(handle, None)

    def run(self, rng_key=None) -> "Sampler":
        """Run the chains; raise :class:`DivergenceError` (no output kept) if a chain diverges.

        ``rng_key=None`` (the default) draws the key from the OS CSPRNG (:mod:`bayesdp.samplers.keys`);
        an explicit key (or int seed) makes the run reproducible and every output says
        "reproducible seed: not private".  The key itself is never written into an output.  With several
        processes every process calls ``run`` and process 0's key is used by all.

        Args:
            rng_key: ``None`` (OS CSPRNG), a JAX PRNG key, or an int seed in ``[0, 2^32 - 1]``.

        Returns:
            the sampler itself (its released draws are then available).

        Raises:
            DivergenceError: a chain reached a non-finite position.
            AssumptionError: an int seed out of range.
        """
        c = self.config
        if self.potential.data is None:
            raise AssumptionError("this sampler's records were freed (free_data()): build a new Sampler to run again")
        self._released = None
        rng_key, self.key_source = resolve_key(rng_key)
        self.certificate["chain_keys"] = self.key_source
        impl = jax.random.key_impl(rng_key)
        keys = jax.random.key_data(_chain_keys(rng_key, c.num_chains))  # split(rng_key, K); chain 0's key if K = 1
        t_prep = time.perf_counter()
        prog = self._get_program(1 if c.chain_method == "sequential" else c.num_chains, impl)
        t0 = time.perf_counter()
        prepare_s = t0 - t_prep
        if c.chain_method == "sequential" and c.num_chains > 1:
            outs, bads = [], []
            compile_s = 0.0
            for i in range(c.num_chains):
                k, p, d = self._device_args(keys[i], self._init_positions[i])
                rel, bad, cs = self._call(prog, k, p, d)
                compile_s += cs
                outs.append(rel)
                bads.append(bad)
            released = np.stack(outs)
            first_bad = np.stack(bads)
        else:
            if c.num_chains == 1:
                k, p, d = self._device_args(keys, self._init_single)
            else:
                k, p, d = self._device_args(keys, self._init_positions)
            released, first_bad, compile_s = self._call(prog, k, p, d)
            if c.num_chains == 1:
                released, first_bad = released[None], np.asarray(first_bad)[None]
        total = time.perf_counter() - t0
        self.timing = {"compile_s": compile_s, "prepare_s": prepare_s, "run_s": total - compile_s,
                       "steps_per_s": c.num_steps / max(total - compile_s, 1e-12)}
        first_bad = np.asarray(first_bad)
        if np.any(first_bad >= 0):
            chain = int(np.argmax(np.where(first_bad >= 0, -first_bad, -np.inf)))
            step = int(first_bad[chain])
            raise DivergenceError(f"chain {chain} diverged: non-finite position at step {step} of {c.num_steps} "
                                  f"(step_size = {c.step_size:.6g}); reduce step_size, no output was kept")
        released = np.asarray(released)
        if self._init_host is None:
            self._init_host = np.asarray(self._init_positions)
        init = self._init_host
        # in float64: a finite float32 position near the overflow threshold would overflow when squared
        last, init64 = released[:, -1, :].astype(np.float64), np.asarray(init, np.float64)
        moved = np.sqrt(np.mean((last - init64) ** 2))
        if not moved > 1e-6 * (1.0 + float(np.sqrt(np.mean(init64 ** 2)))):
            warnings.warn(f"the chains have not moved (RMS displacement {moved:.3g} after {c.num_steps} steps): "
                          f"step_size = {c.step_size:.6g} is too small for float precision", RuntimeWarning,
                          stacklevel=2)
        self._released = released  # (chains, draws, dim), unconstrained
        return self

    def _glm(self, num_chains):
        """``((structure, form), arrays)`` for the batched GLM gradient, or ``(None, None)`` (general path).

        Full-batch unclipped ULA (on one device or with the records sharded); the structure is proved by
        :func:`glm.detect`, the layout allowed per backend (:func:`glm.backend_forms`) and chosen among those
        by :func:`glm.choose_form`, and the arrays (the predictor's Jacobian in that layout) computed once
        per sampler.  Time spent here is reported as ``timing["prepare_s"]``."""
        if num_chains in self._glm_cache:
            return self._glm_cache[num_chains]
        cache_as = num_chains
        c = self.config
        out = (None, None)
        place = self.placement
        if c.sampler != "ula" or c.clip_norm is not None:
            self.gradient_path = "general (NumPyro gradient; the GLM path is for full-batch unclipped ULA)"
        else:
            structure, why = _glm.detect(self.potential)
            if structure is None:
                self.gradient_path = f"general (NumPyro gradient): {why}"
            else:
                dtype = self._init_positions.dtype
                backend = _glm.backend()
                if place.kind == "chains":  # each device runs its share of the chains on the whole data
                    num_chains = num_chains // place.num_devices
                rows = self._layout.shard_size if place.kind == "records" else c.data_size
                copy_bytes = c.dim * rows * jnp.dtype(dtype).itemsize
                forms, policy = _glm.backend_forms(backend, num_chains, copy_bytes, self.max_copy_bytes)
                local = self.potential.data
                if place.kind == "records":  # measure on one device's share of the rows
                    local = {k: v[:rows] for k, v in local.items()}
                form = _glm.choose_form(structure, local, c.dim, num_chains, dtype, forms=forms,
                                        cache_key=_model_key(self.potential))
                if place.kind is not None:  # every process must compile the same program: process 0's choice

                    form = forms[int(sharding.agree(np.asarray(forms.index(form), np.int32)))]
                if place.kind == "records":
                    aux = self._sharded_glm_arrays(structure, dtype, form in _glm.NEEDS_COPY)
                else:
                    aux = _glm.arrays(structure, self.potential.data, c.dim, dtype,
                                      features=form in _glm.NEEDS_COPY, cache_key=_model_key(self.potential))
                    if place.kind == "chains":  # replicated on every device

                        aux = {k: sharding.place(np.asarray(v), None, sharding.CHAINS) for k, v in aux.items()}
                out = ((structure, form), aux)
                self.gradient_path = f"batched GLM gradient, layout {form!r} ({policy}): {why}"
        self._glm_cache[cache_as] = out
        return out

    def _sharded_glm_arrays(self, structure, dtype, features):
        """The GLM arrays of every device's rows (padded rows included: they are masked in the gradient)."""

        if self._placed_data is None:
            self._placed_data = sharding.place_records(self.potential.data, self._layout)
        data = self._placed_data
        dim = self.config.dim
        axis = sharding.RECORDS
        spec = {k: P(axis, *([None] * (v.ndim - 1))) for k, v in data.items()}
        out_spec = {"y": P(axis)}
        if features:
            out_spec.update({"JT": P(None, axis), "c": P(axis)})

        fn = jax.jit(jax.shard_map(_glm.arrays_fn(structure, dim, dtype, features), mesh=sharding.mesh(axis),
                                   in_specs=(spec,), out_specs=out_spec, check_vma=False))
        return jax.block_until_ready(fn(data))

    def _get_program(self, num_chains, key_impl=None):
        if num_chains in self._programs:
            return self._programs[num_chains]
        c = self.config
        glm, aux = self._glm(num_chains)
        place = self.placement
        prog = _program(self.potential, sampler=c.sampler, num_steps=c.num_steps, batch_size=c.batch_size,
                        clipped=c.clip_norm is not None, num_chains=num_chains, release=c.release,
                        thinning=c.thinning, progress_every=self.progress_every, glm=glm, placement=place,
                        key_impl=key_impl, stream=self.stream_data)
        steps = (jnp.asarray(c.num_steps, jnp.int32),) if steps_are_an_argument(
            c.sampler, c.release, place, self.stream_data, key_impl, self.progress_every) else ()
        self._programs[num_chains] = (prog, aux, steps)
        return self._programs[num_chains]

    def compile(self) -> float:
        """Compile the chain's program for this sampler's settings and shapes without running it: the seconds it
        took.  Any sampler of the same model, keyword arguments, settings and data shapes then runs it without
        compiling (programs and their compilations are kept per process): ``bayesdp sample`` compiles SGLD on
        zeros of the data file's shapes before it reads the records, so that the compilation's memory is not
        added to theirs (issue 24).  Nothing is drawn and no record is read.

        Returns:
            the compilation's seconds (0 when it was compiled already).

        Examples:
            >>> import numpy as np
            >>> from bayesdp.models import logistic
            >>> kw = dict(sampler="sgld", step_size=1e-3, num_steps=10, batch_size=2, clip_norm=1.0, uncertified=True)
            >>> zeros = {"X": np.zeros((8, 2), np.float32), "y": np.zeros(8, np.float32)}
            >>> Sampler(logistic, zeros, **kw).compile() > 0
            True
            >>> X = np.full((8, 2), 0.5, np.float32); y = np.ones(8, np.float32)
            >>> Sampler(logistic, {"X": X, "y": y}, **kw).run(0).timing["compile_s"] < 0.01
            True
        """
        c = self.config
        key = secure_key()      # as run() draws its keys (the same implementation); only its shape is used here
        prog = self._get_program(1 if c.chain_method == "sequential" else c.num_chains, jax.random.key_impl(key))
        keys = jax.random.key_data(_chain_keys(key, c.num_chains))     # nothing runs: the keys are never used
        if c.chain_method == "sequential" and c.num_chains > 1:
            k, p, d = self._device_args(keys[0], self._init_positions[0])
        elif c.num_chains == 1:
            k, p, d = self._device_args(keys, self._init_single)
        else:
            k, p, d = self._device_args(keys, self._init_positions)
        return self._executable(prog, k, p, d)[2]

    def _executable(self, prog, keys, positions, data):
        """``(compiled program, its arguments, seconds spent compiling)``."""
        c = self.config
        prog, aux, steps = prog
        dtype = positions.dtype
        if self._scalars is None:  # device scalars made once (host-to-device transfers cost ~20 us each)
            scalars = (c.step_size, c.inverse_temperature, c.clip_norm if c.clip_norm is not None else 0.0)
            if self.placement.kind is None:
                self._scalars = tuple(jnp.asarray(v, dtype) for v in scalars)
            else:
                axis = sharding.RECORDS if self.shard_data else sharding.CHAINS
                self._scalars = tuple(sharding.place(np.asarray(v, dtype), None, axis) for v in scalars)
        args = (keys, positions, data, *self._scalars, aux, *steps)
        t0 = time.perf_counter()
        # the shapes, dtypes and shardings of the arguments are fixed for a sampler and a program
        compiled = self._executables.get(id(prog))
        if compiled is None:
            leaves = jax.tree_util.tree_leaves(args)
            sig = (id(prog), jax.tree_util.tree_structure(args),
                   tuple((x.shape, str(x.dtype), str(getattr(x, "sharding", None))) for x in leaves))
            compiled = _EXECUTABLES.get(sig)
            if compiled is None:
                compiled = prog.lower(*args).compile()
                _EXECUTABLES[sig] = compiled
            self._executables[id(prog)] = compiled
        return compiled, args, time.perf_counter() - t0

    def _call(self, prog, keys, positions, data):

        c = self.config
        compiled, args, compile_s = self._executable(prog, keys, positions, data)
        bar = None
        if self.progress_every:
            from tqdm.auto import tqdm

            bar = tqdm(total=c.num_steps, desc=f"{c.sampler} ({c.num_chains} chain(s))", leave=True)
            _PROGRESS.update(bar=bar, last=0)
        try:
            released, first_bad = compiled(*args)
            released = jax.block_until_ready(released)
        finally:
            if bar is not None:
                bar.close()
                _PROGRESS.update(bar=None, last=0)
        return sharding.to_host(released), sharding.to_host(first_bad), compile_s

    # -- outputs ------------------------------------------------------------
    @property
    def num_samples(self) -> int:
        """Released draws per chain: 1 (final), num_steps (path) or num_steps // thinning (thinned).

        Returns:
            the number of draws per chain.
        """
        c = self.config
        return {"final": 1, "path": c.num_steps, "thinned": c.num_steps // c.thinning}[c.release]

    def _require_run(self):
        if self._released is None:
            raise AssumptionError("no released samples: call run(rng_key) first (a diverged run keeps no output)")

    def get_samples(self, group_by_chain: bool = False) -> dict[str, np.ndarray]:
        """Released draws as constrained site values: (chains, draws, *shape) or (chains*draws, *shape).

        Args:
            group_by_chain: keep the chain axis.

        Returns:
            a dict of site name to NumPy array.

        Raises:
            AssumptionError: no run yet (or the last run diverged).
        """
        self._require_run()
        vals = self.potential.unflatten(jnp.asarray(self._released))
        out = {k: np.asarray(v) for k, v in vals.items()}
        if not group_by_chain:
            out = {k: v.reshape((-1,) + v.shape[2:]) for k, v in out.items()}
        return out

    def get_unconstrained_samples(self, group_by_chain: bool = True) -> np.ndarray:
        """Released draws in the sampler's unconstrained space, flattened in the potential's site order.

        Args:
            group_by_chain: keep the chain axis.

        Returns:
            ``(chains, draws, dim)``, or ``(chains * draws, dim)`` with ``group_by_chain=False``.

        Raises:
            AssumptionError: no run yet (or the last run diverged).
        """
        self._require_run()
        arr = np.asarray(self._released)
        return arr if group_by_chain else arr.reshape((-1, arr.shape[-1]))

    @property
    def certified(self) -> bool:
        """Whether the run carries a privacy certificate (``False`` with ``uncertified=True``).

        Returns:
            the certificate's ``certified`` flag.
        """
        return bool(self.certificate.get("certified"))

    def certificate_json(self) -> str:
        """The certificate as a JSON string (strict JSON: no NaN or infinity).

        Returns:
            the JSON text written into every output.
        """
        return json.dumps(self.certificate, allow_nan=False, default=str)

    def print_summary(self, prob: float = 0.9) -> str:
        """Print the ArviZ summary (mean, sd, HDI, ESS, R-hat) of the released draws, with the certificate.

        Args:
            prob: the probability mass of the HDI.

        Returns:
            the printed text.

        Raises:
            AssumptionError: no run yet (or the last run diverged).
        """

        self._require_run()
        with _quiet_arviz():
            table = _arviz.summary(_arviz.from_dict({"posterior": self.get_samples(group_by_chain=True)}), prob)
        head = (f"{self.config.sampler.upper()} {self.config.release} release, {self.config.num_chains} chain(s), "
                f"{self._released.shape[1]} draw(s) per chain; ")
        if self.certified:
            head += (f"certified: epsilon = {self.certificate['epsilon']} at delta = {self.delta:g} "
                     f"({', '.join(self.certificate['sources'])})")
        else:
            head += "NOT CERTIFIED: " + str(self.certificate.get("reason"))
        if self.key_source == REPRODUCIBLE:
            head += f"\nchain keys: {REPRODUCIBLE} (a seed was given explicitly; omit it for OS CSPRNG keys)"
        else:
            head += f"\nchain keys: {self.key_source}"
        if self._released.shape[1] < 4:
            head += "\n(ESS and R-hat need a path release with several draws per chain)"
        text = head + "\n" + table.to_string()
        print(text)
        return text
