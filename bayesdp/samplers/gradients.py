"""Gradient estimators of grad U_D and the minibatch index sampler.

Every estimator is a pure function ``grad_fn(key, theta, data, clip_norm) -> g`` (``key`` unused by the
full-batch ones), built from a :class:`~bayesdp.samplers.potential.ModelPotential`:

* :func:`build`               the estimator of a configuration: ``grad U_D(theta) = grad K + sum_i grad l_i``
                              (full batch), ``grad K + sum_i clip_G(grad l_i)`` (clipped, the likelihood part
                              per record), or the minibatch forms ``grad K + (m/s) sum_{i in A} [clip_G](grad l_i)``,
                              A uniform of size s without replacement (004 (31)).
* :func:`from_indices`        the minibatch estimators on given batch indices (the driver draws the batches
                              of a block of steps at once, :func:`bayesdp.samplers.minibatch.batch_indices`).
* :func:`masked_likelihood`   ``sum_i [valid_i] [clip_G](grad l_i)`` over a shard of records with padding
                              (records sharded over devices, :mod:`bayesdp.samplers.sharding`).

``clip_G(g) = g * min(1, G/|g|)`` (Euclidean norm over all unconstrained coordinates).  The
prior/Jacobian part ``K`` is never clipped.  004 (31) writes the SGLD step as
``(gamma/s) sum_{i in A} grad l~(theta, d_i)`` with ``l~ = K + m l_i``; this equals
``gamma * (grad K + (m/s) sum_{i in A} grad l_i)``.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from .minibatch import sample_without_replacement

__all__ = ["clip_margin", "clip_rows", "take_batch", "from_indices", "masked_likelihood", "build"]


def clip_margin(dim: int, dtype) -> float:
    """``1 - (dim + 4) u`` (u the unit roundoff of ``dtype``): the computed norm of a row of ``dim``
    entries is within a relative ``(dim + 2) u / 2`` of its exact norm (sum of squares, worst-case
    recursive summation, then sqrt), and the scaling adds one rounding per entry; a row whose computed
    norm is at most ``G * clip_margin`` therefore has exact norm <= G, and so has a row scaled to that.

    Args:
        dim: the number of entries of a row.
        dtype: the floating dtype of the rows.

    Returns:
        the factor ``max(1/2, 1 - (dim + 4) u)``.

    Examples:
        >>> import numpy as np
        >>> clip_margin(10, np.float32) == 1 - 14 * 2.0 ** -24
        True
    """
    u = float(jnp.finfo(dtype).eps) / 2.0
    return max(0.5, 1.0 - (int(dim) + 4) * u)


def clip_rows(grads: jax.Array, clip_norm) -> jax.Array:
    """Rows of ``grads`` (n, dim) scaled to Euclidean norm <= clip_norm: ``g * min(1, G'/|g|)`` with
    ``G' = G * clip_margin(dim)`` a few roundoffs below G, so that the norm of every returned row, in
    exact arithmetic on the returned values, is <= clip_norm (a plain ``G/|g|`` returned 3.0000017 for
    G = 3 in float32).  Rows already below ``G'`` are returned unchanged.

    Args:
        grads: the rows, ``(n, dim)``.
        clip_norm: the bound ``G`` on each row's Euclidean norm.

    Returns:
        the clipped rows, ``(n, dim)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> g = clip_rows(jnp.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
        >>> [[round(v, 4) for v in row] for row in g.tolist()]
        [[0.6, 0.8], [0.3, 0.4]]
        >>> bool(jnp.linalg.norm(g[0]) <= 1.0)
        True
    """
    target = clip_norm * clip_margin(grads.shape[-1], grads.dtype)
    norms = jnp.sqrt(jnp.sum(grads * grads, axis=-1, keepdims=True))
    factor = jnp.where(norms > target, target / jnp.where(norms > 0, norms, 1.0), 1.0)
    return grads * factor


def take_batch(data: dict, idx) -> dict:
    """The records ``idx`` of every data array (rows taken along the leading axis).

    Args:
        data: record arrays by name.
        idx: integer record indices.

    Returns:
        the batch: a dict of the same names.

    Examples:
        >>> import jax.numpy as jnp
        >>> take_batch({"y": jnp.array([1.0, 2.0, 3.0])}, jnp.array([2, 0]))["y"].tolist()
        [3.0, 1.0]
    """
    return {k: jnp.take(v, idx, axis=0) for k, v in data.items()}


def _record_grads(potential) -> Callable:
    """(theta, records) -> (n, dim) per-record gradients of l_i (vmap over records)."""
    g = jax.grad(potential.record_loss)
    return jax.vmap(g, in_axes=(None, 0))


def from_indices(potential, data_size: int, batch_size: int, clipped: bool) -> Callable:
    """``grad_fn(theta, batch, clip)``: grad K + (m/s) sum over the records of ``batch`` (the batch's rows of
    the data, already taken) of grad l_i, each clipped to ``clip`` when ``clipped``.

    The examples use the mean ``mu`` of a Normal with unit variance, prior N(0, 1), records y = 1, 2, 3:
    ``grad K(mu) = mu`` and ``grad l_i(mu) = mu - y_i``.

    Args:
        potential: a :class:`~bayesdp.samplers.potential.ModelPotential`.
        data_size: ``m``, the number of records.
        batch_size: ``s``, the number of records of a batch.
        clipped: clip every record's likelihood gradient.

    Returns:
        the estimator on a given batch.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> import numpyro, numpyro.distributions as dist
        >>> from bayesdp.samplers import ModelPotential
        >>> def normal_mean(y):
        ...     mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        ...     with numpyro.plate("records", y.shape[0]):
        ...         numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)
        >>> pot = ModelPotential(normal_mean, {"y": np.array([1.0, 2.0, 3.0])})
        >>> grad_fn = from_indices(pot, 3, 2, clipped=False)
        >>> batch = {"y": jnp.array([1.0, 3.0])}
        >>> round(float(grad_fn(jnp.zeros(1), batch)[0]), 4)      # (3/2) ((0-1) + (0-3))
        -6.0
    """
    scale = data_size / batch_size
    if not clipped:
        grad_u = jax.grad(lambda th, batch: potential.potential(th, batch, likelihood_scale=scale))

        def grad_fn(theta, batch, clip=None):
            del clip
            return grad_u(theta, batch)

        return grad_fn
    grad_k = jax.grad(potential.prior_potential)
    per_record = _record_grads(potential)

    def grad_fn(theta, batch, clip):
        g = clip_rows(per_record(theta, batch), clip)
        return grad_k(theta) + scale * jnp.sum(g, axis=0)

    return grad_fn


def masked_likelihood(potential, clipped: bool) -> Callable:
    """``lik_grad(theta, records, valid, clip)``: ``sum_i [valid_i] [clip](grad l_i(theta))`` over the rows
    of ``records`` (a shard with padding).  A padded row's term is an exact zero: unclipped, its loss is
    multiplied by 0 before differentiation (padded rows are copies of a valid record, so the derivative
    being multiplied is finite); clipped, its clipped gradient row is replaced by 0 before the sum.

    The examples use the mean ``mu`` of a Normal with unit variance, prior N(0, 1), records y = 1, 2, 3:
    ``grad K(mu) = mu`` and ``grad l_i(mu) = mu - y_i``.

    Args:
        potential: a :class:`~bayesdp.samplers.potential.ModelPotential`.
        clipped: clip every record's likelihood gradient to ``clip``.

    Returns:
        the likelihood part of the gradient on a shard.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> import numpyro, numpyro.distributions as dist
        >>> from bayesdp.samplers import ModelPotential
        >>> def normal_mean(y):
        ...     mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        ...     with numpyro.plate("records", y.shape[0]):
        ...         numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)
        >>> pot = ModelPotential(normal_mean, {"y": np.array([1.0, 2.0, 3.0])})
        >>> lik_grad = masked_likelihood(pot, clipped=False)
        >>> valid = jnp.array([True, True, False])           # the third row is padding
        >>> round(float(lik_grad(jnp.zeros(1), pot.data, valid)[0]), 4)    # (0-1) + (0-2)
        -3.0
    """
    if clipped:
        per_record = _record_grads(potential)

        def lik_grad(theta, records, valid, clip):
            g = clip_rows(per_record(theta, records), clip)
            return jnp.sum(jnp.where(valid[:, None], g, 0.0), axis=0)

        return lik_grad
    losses = jax.vmap(potential.record_loss, in_axes=(None, 0))

    def total(theta, records, valid):
        return jnp.sum(jnp.where(valid, losses(theta, records), 0.0))

    grad = jax.grad(total)

    def lik_grad(theta, records, valid, clip=None):
        del clip
        return grad(theta, records, valid)

    return lik_grad


def build(potential, *, batch_size: int | None, clipped: bool) -> Callable:
    """``grad_fn(key, theta, data, clip_norm)`` for a configuration (``batch_size=None``: full batch).

    The clipping norm is an argument (not baked in) so that runs differing only in the norm
    share one compiled program.

    The examples use the mean ``mu`` of a Normal with unit variance, prior N(0, 1), records y = 1, 2, 3:
    ``grad K(mu) = mu`` and ``grad l_i(mu) = mu - y_i``.

    Args:
        potential: a :class:`~bayesdp.samplers.potential.ModelPotential`.
        batch_size: ``s`` (SGLD), or ``None`` for the full batch (ULA).
        clipped: clip every record's likelihood gradient.

    Returns:
        the estimator; full-batch ones (``key`` unused) have ``needs_key = False``.

    Examples:
        >>> import numpy as np, jax, jax.numpy as jnp
        >>> import numpyro, numpyro.distributions as dist
        >>> from bayesdp.samplers import ModelPotential
        >>> def normal_mean(y):
        ...     mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        ...     with numpyro.plate("records", y.shape[0]):
        ...         numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)
        >>> pot = ModelPotential(normal_mean, {"y": np.array([1.0, 2.0, 3.0])})
        >>> round(float(build(pot, batch_size=None, clipped=False)(None, jnp.zeros(1), pot.data)[0]), 4)
        -6.0
        >>> round(float(build(pot, batch_size=None, clipped=True)(None, jnp.zeros(1), pot.data, 2.5)[0]), 4)
        -5.5
        >>> grad_fn = build(pot, batch_size=3, clipped=True)     # s = m: the batch is every record
        >>> round(float(grad_fn(jax.random.key(0), jnp.zeros(1), pot.data, 1.5)[0]), 4)   # -1 - 1.5 - 1.5
        -4.0
    """
    m = potential.data_size
    if batch_size is not None:
        on_batch = from_indices(potential, m, batch_size, clipped)

        def grad_fn(key, theta, data, clip=None):
            return on_batch(theta, take_batch(data, sample_without_replacement(key, m, batch_size)), clip)

        return grad_fn
    if clipped:
        grad_k = jax.grad(potential.prior_potential)
        per_record = _record_grads(potential)

        def grad_fn(key, theta, data, clip):
            del key
            return grad_k(theta) + jnp.sum(clip_rows(per_record(theta, data), clip), axis=0)
    else:
        grad_u = jax.grad(lambda th, data: potential.potential(th, data))

        def grad_fn(key, theta, data, clip=None):
            del key, clip
            return grad_u(theta, data)

    grad_fn.needs_key = False
    return grad_fn
