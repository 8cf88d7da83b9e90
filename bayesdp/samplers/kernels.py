"""ULA and SGLD kernels in the BlackJAX style: ``init`` / ``build_kernel`` on NamedTuple states.

Both perform the Langevin update of issue #4 / 004 (25) and (31):

    theta <- theta - step_size * g(theta) + sqrt(2 * step_size / inverse_temperature) * z,   z ~ N(0, I)

with ``g`` the full-batch gradient of U_D (ULA) or the minibatch estimate
``grad K + (m/s) sum_{i in A} grad l_i`` (SGLD), optionally with per-record clipping of the
likelihood gradients (see :mod:`bayesdp.samplers.gradients`).  Each SGLD step splits its key into a
batch key (minibatch indices, drawn inside the kernel) and a noise key; ULA uses its key for the noise.

Example (pure, jit-able)::

    kernel = build_kernel(gradients.build(potential, batch_size=None, clipped=False))
    state = init(jnp.zeros(potential.dim))
    state = jax.jit(kernel)(key, state, data, step_size, inverse_temperature, clip_norm)
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from . import gradients


class LangevinState(NamedTuple):
    """State of a ULA/SGLD chain: the flat unconstrained position."""

    position: jax.Array


def init(position) -> LangevinState:
    return LangevinState(jnp.asarray(position))


def langevin_update(x, grad, noise, step_size, noise_scale):
    """``x - step_size * grad + noise_scale * noise`` with ``noise_scale = sqrt(2 step_size / inverse_temperature)``
    and ``noise`` standard normal: the one update of ULA and SGLD (used by the kernels and the driver)."""
    return x - step_size * grad + noise_scale * noise


def build_kernel(grad_fn: Callable) -> Callable:
    """``kernel(key, state, data, step_size, inverse_temperature, clip_norm) -> LangevinState``."""
    needs_key = getattr(grad_fn, "needs_key", True)

    def kernel(key, state: LangevinState, data, step_size, inverse_temperature, clip_norm=None) -> LangevinState:
        if needs_key:
            key_batch, key_noise = jax.random.split(key)
        else:  # full batch: the whole key drives the noise
            key_batch, key_noise = None, key
        x = state.position
        g = grad_fn(key_batch, x, data, clip_norm)
        noise = jax.random.normal(key_noise, x.shape, x.dtype)
        scale = jnp.sqrt(2.0 * step_size / inverse_temperature).astype(x.dtype)
        return LangevinState(langevin_update(x, g, noise, step_size, scale))

    return kernel


class ula:  # noqa: N801 - BlackJAX-style namespace
    """ULA: full-batch gradient of U_D (all records clipped if ``clipped``)."""

    init = staticmethod(init)

    @staticmethod
    def build_kernel(potential, clipped: bool = False) -> Callable:
        return build_kernel(gradients.build(potential, batch_size=None, clipped=clipped))


class sgld:  # noqa: N801 - BlackJAX-style namespace
    """SGLD (004 (31)): batches of fixed size drawn uniformly without replacement inside the kernel."""

    init = staticmethod(init)

    @staticmethod
    def build_kernel(potential, batch_size: int, clipped: bool = False) -> Callable:
        return build_kernel(gradients.build(potential, batch_size=batch_size, clipped=clipped))
