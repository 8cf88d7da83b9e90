"""Vmapped chains of the linear–quadratic benchmark, run with bayesdp's own Langevin kernel
(``bayesdp.samplers.kernels.build_kernel``) and its minibatch sampler
(``bayesdp.samplers.minibatch.sample_without_replacement``), one XLA program for all runs.

ULA:  grad U_D(x) = mu x - b.
SGLD: records d_0..d_{m-1} with d_0 = b and the others 0; the gradient estimate is
      mu x - (m/s) sum_{i in A} d_i with A drawn inside the kernel, uniformly without replacement.
Posterior: the exact draw N(b/mu, I/(beta mu)).
Release: the ULA average of x[0] over the steps after burn-in (the noise is added by the caller).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..samplers.minibatch import sample_without_replacement
from ..samplers.kernels import LangevinState, build_kernel


__all__ = ["lq_chain_scores"]


def _lq_grad(mu: float, data_size: int | None, batch_size: int | None):
    if batch_size is None:
        def grad(key, x, record, clip_norm):
            return mu * x - record
        grad.needs_key = False
        return grad

    m, s = int(data_size), int(batch_size)

    def grad(key, x, record, clip_norm):
        idx = sample_without_replacement(key, m, s)
        in_batch = jnp.any(idx == 0)              # only record 0 is non-zero
        return mu * x - jnp.where(in_batch, (m / s) * record, 0.0)

    grad.needs_key = True
    return grad


def lq_chain_scores(mechanism, cfg, record, runs: int, key):
    """Scores of ``runs`` independent outputs of ``mechanism`` on the linear-quadratic benchmark
    with differing record ``record`` (one jitted, vmapped program).

    The score is the output's first coordinate for final draws, the sufficient statistic of the
    Gaussian path for paths, the Monte Carlo average for ``release``.

    Args:
        mechanism: one of [`bayesdp.audit.lq.MECHANISMS`][bayesdp.audit.lq.MECHANISMS].
        cfg: a validated [`LQConfig`][bayesdp.audit.lq.LQConfig].
        record: the differing record (dim,).
        runs: number of runs.
        key: JAX PRNG key.

    Returns:
        a JAX array of ``runs`` scores.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from bayesdp.audit.lq import LQConfig
        >>> cfg = LQConfig(strong_convexity=1.0, grad_bound=0.5)
        >>> lq_chain_scores("posterior", cfg, jnp.array([0.5]), runs=4, key=jax.random.PRNGKey(0)).shape
        (4,)
    """
    mu, beta = cfg.strong_convexity, cfg.inverse_temperature
    dim = record.shape[0]
    if mechanism == "posterior":
        z = jax.random.normal(key, (runs, dim))
        return (record / mu + z / jnp.sqrt(beta * mu))[:, 0]
    g, n = cfg.step_size, cfg.num_steps
    rho = 1.0 - g * mu
    sgld = mechanism.startswith("sgld")
    kernel = build_kernel(_lq_grad(mu, cfg.data_size if sgld else None, cfg.batch_size if sgld else None))

    burn_in = int(getattr(cfg, "burn_in", 0) or 0)

    def one_run(k):
        def step(carry, inp):
            state, path_score, total = carry
            kk, t = inp
            new = kernel(kk, state, record, g, beta)
            innov = new.position - rho * state.position   # sufficient statistic of the Gaussian path
            total = total + jnp.where(t >= burn_in, new.position[0], 0.0)
            return (new, path_score + innov[0], total), None

        init = (LangevinState(jnp.zeros(dim)), 0.0, 0.0)
        (state, ps, total), _ = jax.lax.scan(step, init, (jax.random.split(k, n), jnp.arange(n)))
        if mechanism == "release":            # Monte Carlo average of x[0] after burn-in (not released raw)
            return total / (n - burn_in)
        return ps if mechanism.endswith("path") else state.position[0]

    return jax.jit(jax.vmap(one_run))(jax.random.split(key, runs))
