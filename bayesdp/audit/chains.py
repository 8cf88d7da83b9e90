"""Vmapped chains of the linear–quadratic benchmark (one XLA program for all runs).

ULA:  x <- x - gamma (mu x - b) + sqrt(2 gamma / beta) z, from x0 = 0.
SGLD: x <- x - gamma (mu x - (m/s) sum_{i in A} d_i) + sqrt(2 gamma / beta) z with A a uniform batch of
      size s without replacement; only record 0 is non-zero, so the drift depends on A only through
      the event {0 in A}, which has probability s/m: it is drawn as that Bernoulli (same law).
Posterior: the exact draw N(b/mu, I/(beta mu)).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def lq_chain_scores(mechanism, cfg, record, runs: int, key):
    mu, beta = cfg.strong_convexity, cfg.inverse_temperature
    dim = record.shape[0]
    if mechanism == "posterior":
        z = jax.random.normal(key, (runs, dim))
        return (record / mu + z / jnp.sqrt(beta * mu))[:, 0]
    g, n = cfg.step_size, cfg.num_steps
    sd = jnp.sqrt(2.0 * g / beta)
    rho = 1.0 - g * mu
    sgld = mechanism.startswith("sgld")
    scale = (cfg.data_size / cfg.batch_size) if sgld else 1.0
    p_in = (cfg.batch_size / cfg.data_size) if sgld else 1.0

    def one_run(k):
        def step(carry, kk):
            x, path_score = carry
            kz, kb = jax.random.split(kk)
            z = jax.random.normal(kz, (dim,))
            if sgld:
                in_batch = jax.random.bernoulli(kb, p_in)
                b = jnp.where(in_batch, scale * record, 0.0)
            else:
                b = record
            x_new = x - g * (mu * x - b) + sd * z
            innov = x_new - rho * x
            return (x_new, path_score + innov[0]), None

        (x, ps), _ = jax.lax.scan(step, (jnp.zeros(dim), 0.0), jax.random.split(k, n))
        return ps if mechanism.endswith("path") else x[0]

    return jax.jit(jax.vmap(one_run))(jax.random.split(key, runs))
