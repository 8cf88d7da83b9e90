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

__all__ = ["LangevinState", "init", "langevin_update", "build_kernel", "ula", "sgld"]


class LangevinState(NamedTuple):
    """State of a ULA/SGLD chain: the flat unconstrained position.

    Attributes:
        position: the flat unconstrained position ``(dim,)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> LangevinState(jnp.zeros(3)).position.shape
        (3,)
    """

    position: jax.Array


def init(position) -> LangevinState:
    """The state of a chain started at ``position``.

    Args:
        position: a flat unconstrained position (array-like).

    Returns:
        a :class:`LangevinState` holding ``position`` as a JAX array.

    Examples:
        >>> init([1.0, 2.0]).position.tolist()
        [1.0, 2.0]
    """
    return LangevinState(jnp.asarray(position))


def langevin_update(x, grad, noise, step_size, noise_scale):
    """``x - step_size * grad + noise_scale * noise``: the one update of ULA and SGLD (kernels and driver).

    Args:
        x: the position.
        grad: the gradient (estimate) at ``x``.
        noise: a standard normal draw of the shape of ``x``.
        step_size: the step size gamma.
        noise_scale: ``sqrt(2 step_size / inverse_temperature)``.

    Returns:
        the next position.

    Examples:
        >>> import jax.numpy as jnp
        >>> x = langevin_update(jnp.array([1.0]), jnp.array([2.0]), jnp.array([0.5]), 0.1, 2.0)
        >>> round(float(x[0]), 6)                        # 1 - 0.1 * 2 + 2 * 0.5
        1.8
    """
    return x - step_size * grad + noise_scale * noise


def build_kernel(grad_fn: Callable) -> Callable:
    """``kernel(key, state, data, step_size, inverse_temperature, clip_norm) -> LangevinState`` from an estimator.

    A ``grad_fn`` with ``needs_key = False`` (full batch) gets no key and the whole key drives the noise;
    otherwise each step splits its key into a batch key (passed to ``grad_fn``) and a noise key.

    Args:
        grad_fn: ``grad_fn(key, theta, data, clip_norm) -> g`` (see :mod:`bayesdp.samplers.gradients`).

    Returns:
        the pure, jit-able kernel.

    Examples:
        One ULA step on ``U(x) = x^2 / 2`` (gradient ``x``) at a very low temperature (noise scale
        ``sqrt(2 * 0.1 / 1e12)``, below float32 resolution at 1): the drift ``(1 - 0.1) x``.

        >>> import jax, jax.numpy as jnp
        >>> def grad_fn(key, x, data, clip=None):
        ...     return x
        >>> grad_fn.needs_key = False
        >>> kernel = build_kernel(grad_fn)
        >>> state = kernel(jax.random.key(0), init(jnp.array([1.0, -2.0])), None, 0.1, 1e12)
        >>> [round(v, 4) for v in state.position.tolist()]
        [0.9, -1.8]
    """
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
    """ULA: full-batch gradient of U_D (all records clipped if ``clipped``).

    Examples:
        Gradient descent on the potential of a Normal mean (prior N(0, 1), three records with unit
        variance): ``grad U(mu) = 4 mu - 6`` at y = 1, 2, 3, so one step of 0.1 from 0 goes to 0.6
        (noise scale ``sqrt(2 * 0.1 / 1e12)``):

        >>> import numpy as np, jax, jax.numpy as jnp
        >>> import numpyro, numpyro.distributions as dist
        >>> from bayesdp.samplers import ModelPotential
        >>> def normal_mean(y):
        ...     mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        ...     with numpyro.plate("records", y.shape[0]):
        ...         numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)
        >>> pot = ModelPotential(normal_mean, {"y": np.array([1.0, 2.0, 3.0])})
        >>> kernel = ula.build_kernel(pot)
        >>> state = kernel(jax.random.key(0), ula.init(jnp.zeros(1)), pot.data, 0.1, 1e12)
        >>> round(float(state.position[0]), 4)
        0.6
    """

    init = staticmethod(init)

    @staticmethod
    def build_kernel(potential, clipped: bool = False) -> Callable:
        """The ULA kernel of ``potential``.

        Args:
            potential: a :class:`~bayesdp.samplers.potential.ModelPotential`.
            clipped: clip every record's likelihood gradient to the ``clip_norm`` passed to the kernel.

        Returns:
            ``kernel(key, state, data, step_size, inverse_temperature, clip_norm)`` (see :func:`build_kernel`).
        """
        return build_kernel(gradients.build(potential, batch_size=None, clipped=clipped))


class sgld:  # noqa: N801 - BlackJAX-style namespace
    """SGLD (004 (31)): batches of fixed size drawn uniformly without replacement inside the kernel.

    Examples:
        The potential of a Normal mean (prior N(0, 1), unit variance) with the records 2, 2, 2: every
        batch of 2 gives ``grad K + (3/2) sum_batch grad l_i = mu + 3 (mu - 2)``, so one step of 0.1 from 0
        goes to 0.6 whichever batch is drawn (noise scale ``sqrt(2 * 0.1 / 1e12)``):

        >>> import numpy as np, jax, jax.numpy as jnp
        >>> import numpyro, numpyro.distributions as dist
        >>> from bayesdp.samplers import ModelPotential
        >>> def normal_mean(y):
        ...     mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        ...     with numpyro.plate("records", y.shape[0]):
        ...         numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)
        >>> pot = ModelPotential(normal_mean, {"y": np.array([2.0, 2.0, 2.0])})
        >>> kernel = sgld.build_kernel(pot, batch_size=2)
        >>> state = kernel(jax.random.key(0), sgld.init(jnp.zeros(1)), pot.data, 0.1, 1e12)
        >>> round(float(state.position[0]), 4)
        0.6
    """

    init = staticmethod(init)

    @staticmethod
    def build_kernel(potential, batch_size: int, clipped: bool = False) -> Callable:
        """The SGLD kernel of ``potential`` with batches of ``batch_size`` records.

        Args:
            potential: a :class:`~bayesdp.samplers.potential.ModelPotential`.
            batch_size: ``s``, records per step, in ``[1, potential.data_size]``.
            clipped: clip every record's likelihood gradient to the ``clip_norm`` passed to the kernel.

        Returns:
            ``kernel(key, state, data, step_size, inverse_temperature, clip_norm)`` (see :func:`build_kernel`).
        """
        return build_kernel(gradients.build(potential, batch_size=batch_size, clipped=clipped))
