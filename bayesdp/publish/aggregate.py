"""Sample-and-aggregate release (Nissim, Raskhodnikova and Smith, STOC 2007): split the records into k disjoint
chunks by a rule that ignores their values, estimate the statistic on each chunk's posterior, clamp each estimate
to a declared range ``[a, b]`` and release the average with secure noise (docs/release.md §7).

Privacy (replace-one neighbours): the partition depends on the record indices only (and on an independent
CSPRNG permutation), so two neighbouring datasets differ in one chunk; for every realisation of the chunk
chains' randomness (data independent) the other chunks' estimates are equal and the differing one stays in
``[a, b]^d``: the average moves by at most ``(b - a)/k`` per coordinate, ``d (b - a)/k`` in L1 and
``sqrt(d) (b - a)/k`` in L2.  The release is a mixture, with data-independent weights, of Laplace (pure epsilon)
or discrete-Gaussian (rho-zCDP) mechanisms with these sensitivities, hence private with the same parameters
(docs/release.md §3.2).  No Lipschitz constant and no coupling bound is needed; the chunk draws are never
published (their keys may be seeded).

Each chunk's posterior tempers its likelihood by ``m / chunk_size`` (the full prior, the chunk's records
counted ``m / chunk_size`` times), so that every chunk estimates the full-data posterior rather than a
prior-dominated one; this affects accuracy only, not privacy.

The number of chunks ``k`` is chosen from the budget by a stated rule (:func:`choose_chunks`), or given.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import AssumptionError, positive, positive_int, require
from ..exact import exact, round_up, up
from .noise import zcdp_rho
from .sensitivity import SensitivityRoute
from .statistics import Statistic
from ..samplers.keys import resolve_key

__all__ = ["aggregate_route", "noise_multiplier", "choose_chunks", "check_chunks", "partition",
           "ula_chunk_draws", "AggregateEstimate", "aggregate_estimate", "aggregate_info"]

SOURCE = "sample-and-aggregate (Nissim, Raskhodnikova, Smith 2007; docs/release.md §7)"
#: smallest chunk the automatic rule allows: max(MIN_CHUNK, MIN_CHUNK_PER_DIM * dim) records
MIN_CHUNK = 20
MIN_CHUNK_PER_DIM = 10
PARTITIONS = ("random", "index")


def aggregate_route(num_coords: int, value_range: tuple[float, float], chunks: int) -> SensitivityRoute:
    """The windows of the average of ``chunks`` estimates clamped to ``value_range``: L1 ``d (b - a)/k``, L2
    ``sqrt(d) (b - a)/k`` (rounded up), no delta.

    Args:
        num_coords: d, the number of released coordinates.
        value_range: the public range ``(a, b)`` every chunk estimate is clamped to.
        chunks: k, the number of chunks.

    Returns:
        The sensitivity route (no coupling delta).

    Raises:
        AssumptionError: ``num_coords`` or ``chunks`` not a positive integer.

    Examples:
        >>> r = aggregate_route(4, (-1.0, 1.0), 8)
        >>> r.sensitivity, r.l2_sensitivity, r.coupling_delta     # L1 4 * 2/8 = 1, rounded up (outward)
        (1.0000000000000144, 0.5, 0.0)
    """
    d = positive_int("num_coords", num_coords)
    a, b = value_range
    k = positive_int("chunks", chunks)
    w = up((exact(b) - exact(a)) / k)   # (b - a)/k rounded up (the float difference and quotient can round below)
    l1 = d * w if d == 1 else round_up(d * w)
    l2 = w if d == 1 else (round_up(math.sqrt(d) * w) if math.isqrt(d) ** 2 != d else up(math.isqrt(d) * exact(w)))
    return SensitivityRoute(source=SOURCE, sensitivity=l1, coupling_delta=0.0, l2_sensitivity=l2,
                            assumptions={"route": "sample-and-aggregate", "chunks": k, "range": [a, b],
                                         "neighbours": "replace one record", "num_coords": d,
                                         "partition": "by record index (after an independent CSPRNG permutation), "
                                                      "never by value"})


def noise_multiplier(num_coords: int, epsilon: float, delta: float = 0.0, noise: str = "auto") -> tuple[float, str]:
    """(nu, noise): the noise standard deviation per coordinate in units of ``(b - a)/k`` for ``k`` chunks.

    From the sensitivities only: Laplace ``sqrt(2) d / epsilon``; Gaussian ``sqrt(d) / sqrt(2 rho)``
    (delta > 0); ``auto`` keeps the smaller (the release itself re-plans with the exact calibration).

    Args:
        num_coords: d, the number of released coordinates.
        epsilon: the release's epsilon.
        delta: the release's delta (0: Laplace only).
        noise: ``"auto"``, ``"laplace"`` or ``"gaussian"``.

    Returns:
        ``(nu, "laplace" or "gaussian")``.

    Raises:
        AssumptionError: ``num_coords`` not a positive integer or ``epsilon`` not positive.

    Examples:
        >>> nu, kind = noise_multiplier(1, epsilon=1.0)        # Laplace: sqrt(2) * 1 / 1
        >>> round(nu, 6), kind
        (1.414214, 'laplace')
    """
    d = positive_int("num_coords", num_coords)
    eps = positive("epsilon", epsilon)
    lap = math.sqrt(2.0) * d / eps
    if noise == "laplace" or not delta:
        return lap, "laplace"
    gau = math.sqrt(d) / math.sqrt(2.0 * zcdp_rho(eps, delta))
    if noise == "gaussian" or gau < lap:
        return gau, "gaussian"
    return lap, "laplace"


def choose_chunks(data_size: int, num_coords: int, dim: int, epsilon: float, delta: float = 0.0,
                  noise: str = "auto") -> tuple[int, str]:
    """The number of chunks by the stated rule (docs/release.md §7.2), from public quantities only.

    Per coordinate, in units of the range ``b - a``, the noise standard deviation is ``nu / k``
    (:func:`noise_multiplier`) and the error of an estimate from ``m / k`` records is taken to be of order
    ``k / m``; ``nu^2/k^2 + k^2/m^2`` is smallest at ``k = sqrt(nu m)``.  Chunks keep at least
    ``max(20, 10 * dim)`` records (``dim`` = the number of parameters).

    Args:
        data_size: m, the number of records (public).
        num_coords: d, the number of released coordinates.
        dim: the number of parameters.
        epsilon: the release's epsilon.
        delta: the release's delta.
        noise: ``"auto"``, ``"laplace"`` or ``"gaussian"``.

    Raises:
        AssumptionError: a parameter that is not a positive number.

    Returns:
        ``(k, the rule in words)``.

    Examples:
        >>> choose_chunks(50_000, 5, 5, epsilon=1.0)[0]       # sqrt(sqrt(2) * 5 * 50000) = 595
        595
        >>> choose_chunks(500, 5, 5, epsilon=1.0)[0]          # at most 500 / 50 chunks of 50 records
        10
    """
    m = positive_int("data_size", data_size)
    nu, kind = noise_multiplier(num_coords, epsilon, delta, noise)
    n_min = max(MIN_CHUNK, MIN_CHUNK_PER_DIM * positive_int("dim", dim))
    k_star = max(1, int(round(math.sqrt(nu * m))))
    k_max = max(1, m // n_min)
    k = min(k_star, k_max)
    rule = (f"k = min(round(sqrt(nu m)), floor(m / {n_min})) = min({k_star}, {k_max}) = {k}, nu = {nu:.4g} "
            f"({kind} noise per coordinate in units of (b - a)/k; chunks of at least max({MIN_CHUNK}, "
            f"{MIN_CHUNK_PER_DIM} * {dim}) records)")
    return k, rule


def check_chunks(chunks: Any, data_size: int, flag: str = "chunks") -> int:
    """``chunks`` as an int in [1, data_size], or a one-line refusal naming ``flag``.

    Args:
        chunks: the requested number of chunks.
        data_size: the number of records.
        flag: the parameter's name in the refusal (e.g. ``"--chunks"``).

    Returns:
        ``chunks`` as an int.

    Raises:
        AssumptionError: not a whole number, below 1, or above ``data_size``.

    Examples:
        >>> check_chunks(5, 100)
        5
        >>> check_chunks(200, 100)
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: chunks = 200 exceeds the 100 records: each chunk needs at least one record; pass at most 100 (better: chunks of tens of records)
    """
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)):
        raise AssumptionError(f"{flag} = {chunks!r} must be a whole number of chunks, e.g. 10")
    k = int(chunks)
    if k < 1:
        raise AssumptionError(f"{flag} = {k} must be >= 1")
    if k > data_size:
        raise AssumptionError(f"{flag} = {k} exceeds the {data_size} records: each chunk needs at least one record; "
                              f"pass at most {data_size} (better: chunks of tens of records)")
    return k


def partition(data_size: int, chunks: int, rule: str = "random") -> np.ndarray:
    """Indices ``(k, floor(m/k))`` of k disjoint chunks of equal size: consecutive indices after a uniformly random
    permutation from the OS CSPRNG (``rule="random"``) or in index order (``"index"``).  The ``m - k floor(m/k)``
    (< k) records left over are not used.  Never looks at the values.

    Args:
        data_size: m, the number of records.
        chunks: k, the number of chunks.
        rule: ``"random"`` (a CSPRNG permutation first) or ``"index"``.

    Returns:
        The ``(k, floor(m/k))`` array of record indices.

    Raises:
        AssumptionError: a bad ``data_size``, ``chunks`` (:func:`check_chunks`) or ``rule``.

    Examples:
        >>> partition(7, 3, "index").tolist()
        [[0, 1], [2, 3], [4, 5]]
        >>> sorted(partition(10, 5).ravel().tolist()) == list(range(10))
        True
    """
    m = positive_int("data_size", data_size)
    k = check_chunks(chunks, m)
    if rule not in PARTITIONS:
        raise AssumptionError(f"partition = {rule!r} must be one of {', '.join(PARTITIONS)}")
    idx = list(range(m))
    if rule == "random":
        random.SystemRandom().shuffle(idx)
    n = m // k
    return np.asarray(idx[:k * n], dtype=np.int64).reshape(k, n)


def ula_chunk_draws(potential, data: Mapping[str, np.ndarray], index: np.ndarray, *, step_size: float,
                    num_steps: int, burn_in: int, likelihood_scale: float, max_draws: int = 200, rng_key=None,
                    batch: int | None = None) -> tuple[np.ndarray, str]:
    """Kept draws ``(k, N, dim)`` (unconstrained space) of one full-batch ULA chain per chunk, all chunks at once
    (``jax.vmap`` over chunks, ``lax.scan`` over steps), on the chunk's tempered posterior
    ``K(theta) + likelihood_scale * sum_{records in chunk} l_i(theta)`` from the fixed start 0.

    Args:
        potential: a :class:`bayesdp.samplers.ModelPotential` of the model (its ``potential(theta, data,
            likelihood_scale)``).
        data: the records (host arrays, the record axis first).
        index: ``(k, n)`` record indices of the chunks (:func:`partition`).
        step_size: gamma (data independent, e.g. ``1 / total_smoothness``).
        num_steps: steps per chain.
        burn_in: steps dropped.
        likelihood_scale: ``m / n``.
        max_draws: at most this many draws kept per chunk (evenly thinned).
        rng_key: a JAX key or an int seed (the chunk draws are never published); None: OS CSPRNG.
        batch: chunks per compiled call (default: all).

    Returns:
        ``(draws, key label)``.

    Raises:
        AssumptionError: ``burn_in`` not in [0, num_steps), or a chain diverged.

    Examples:
        A Gaussian potential (any object with ``dim`` and ``potential(theta, data, likelihood_scale)``):

        >>> import jax.numpy as jnp
        >>> class Potential:
        ...     dim = 1
        ...     def potential(self, theta, data, likelihood_scale):
        ...         return 0.5 * jnp.sum(theta ** 2) + likelihood_scale * 0.5 * jnp.sum((data["x"][:, None] - theta) ** 2)
        >>> draws, label = ula_chunk_draws(Potential(), {"x": np.zeros(6)}, partition(6, 2, "index"), step_size=0.1,
        ...                                num_steps=50, burn_in=10, likelihood_scale=2.0, max_draws=20, rng_key=0)
        >>> draws.shape, label
        ((2, 20, 1), 'reproducible seed: not private')
    """
    import jax
    import jax.numpy as jnp

    k, n = index.shape
    steps = positive_int("num_steps", num_steps)
    require(0 <= burn_in < steps, "burn_in", burn_in, f"must be in [0, {steps})")
    kept = steps - burn_in
    thin = max(1, math.ceil(kept / max_draws))
    n_keep = kept // thin
    first = steps - n_keep * thin          # steps before the first kept draw (>= burn_in)
    key, label = resolve_key(rng_key)
    dim = potential.dim
    dtype = jnp.float32
    g = float(step_size)
    noise_sd = math.sqrt(2.0 * g)
    scale = float(likelihood_scale)
    grad = jax.grad(lambda th, d: potential.potential(th, data=d, likelihood_scale=scale))

    def chain(d, ck):
        def one(x, kk):
            return x - g * grad(x, d) + noise_sd * jax.random.normal(kk, x.shape, dtype), None

        x0 = jnp.zeros(dim, dtype)
        keys = jax.random.split(ck, steps)
        x, _ = jax.lax.scan(one, x0, keys[:first])

        def keep(x, ks):
            x, _ = jax.lax.scan(one, x, ks)
            return x, x

        _, out = jax.lax.scan(keep, x, keys[first:].reshape((n_keep, thin) + keys.shape[1:]))
        return out

    run = jax.jit(jax.vmap(chain))
    keys = jax.random.split(key, k)
    bs = k if batch is None else max(1, int(batch))
    outs = []
    for s in range(0, k, bs):
        sel = index[s:s + bs]
        chunk = {name: jnp.asarray(np.asarray(v)[sel]) for name, v in data.items()}
        outs.append(np.asarray(run(chunk, keys[s:s + bs])))
    draws = np.concatenate(outs, axis=0).astype(np.float64)
    if not np.all(np.isfinite(draws)):
        raise AssumptionError("a chunk chain diverged (NaN or inf); lower the step size")
    return draws, label


@dataclass
class AggregateEstimate:
    """The non-private aggregate (never publish ``value`` or ``estimates``) and how it was made.

    Attributes:
        value: the mean of the clamped chunk estimates, shape ``(d,)``.
        estimates: the ``(k, d)`` clamped chunk estimates.
        chunks: k.
        chunk_size: records per chunk.
        unused_records: records left over by the partition.
        rule: how k was chosen (``"given"`` or :func:`choose_chunks`'s rule).
        estimator: the estimator in words.
        clamped: how many chunk estimates were clamped (NOT for release).
        key_label: how the chunk chains' keys were made (ULA), else None.
        timing: seconds spent.

    Examples:
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> stat = coordinate_means([SiteSpec("mu")]).with_range((0.0, 1.0))
        >>> agg = aggregate_estimate(stat, {"x": np.linspace(0.0, 1.0, 100)}, 4,
        ...                          estimator=lambda chunk: [chunk["x"].mean()], partition_rule="index")
        >>> agg.chunks, agg.chunk_size, agg.unused_records, agg.clamped
        (4, 25, 0, 0)
    """

    value: np.ndarray                  # mean of the clamped chunk estimates
    estimates: np.ndarray              # (k, d) clamped chunk estimates
    chunks: int
    chunk_size: int
    unused_records: int
    rule: str
    estimator: str
    clamped: int                       # how many chunk estimates were clamped (NOT for release)
    key_label: str | None = None
    timing: dict = field(default_factory=dict)


def aggregate_estimate(statistic: Statistic, data: Mapping[str, np.ndarray], chunks: int, *,
                       estimator: str | Callable = "ula", potential=None, step_size: float | None = None,
                       num_steps: int = 2000, burn_in: int | None = None, partition_rule: str = "random",
                       rng_key=None, rule: str = "given", max_draws: int = 200) -> AggregateEstimate:
    """The average of the chunk estimates clamped to ``statistic.range`` (non-private: what the release noises).

    ``estimator``: ``"ula"`` (:func:`ula_chunk_draws` with ``potential`` and ``step_size``; the statistic is
    evaluated on each chunk's draws) or a callable ``chunk_data -> estimate (d,)`` (any sampler, e.g. NumPyro
    NUTS, on the chunk's records; it must not look at other records).

    Args:
        statistic: the statistic; its ``range`` is required.
        data: the records (the record axis first).
        chunks: k.
        estimator: ``"ula"`` or a callable ``chunk_data -> estimate (d,)``.
        potential: the model's potential (``"ula"``).
        step_size: the ULA step size (``"ula"``).
        num_steps: ULA steps per chunk.
        burn_in: ULA steps dropped (default: half).
        partition_rule: ``"random"`` or ``"index"`` (:func:`partition`).
        rng_key: key or seed of the chunk chains (never published; None: OS CSPRNG).
        rule: how k was chosen, recorded in the result.
        max_draws: draws kept per chunk chain.

    Returns:
        The :class:`AggregateEstimate` (non-private).

    Raises:
        AssumptionError: no range, a bad ``chunks``, an estimator that fails or returns a wrong shape or a
            non-finite value.

    Examples:
        The 100 records in 4 chunks of 25, each estimating the chunk's mean:

        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> stat = coordinate_means([SiteSpec("mu")]).with_range((0.0, 1.0))
        >>> agg = aggregate_estimate(stat, {"x": np.linspace(0.0, 1.0, 100)}, 4,
        ...                          estimator=lambda chunk: [chunk["x"].mean()])
        >>> round(float(agg.value[0]), 6)       # every record used: the mean of all of them
        0.5
    """
    t0 = time.perf_counter()
    require(statistic.range is not None, "range", None, "is required by sample-and-aggregate (each chunk's estimate "
            "is clamped to it)", "declare the public range of the released values, e.g. range=(-3, 3)")
    a, b = statistic.range
    m = int(len(next(iter(data.values()))))
    k = check_chunks(chunks, m)
    idx = partition(m, k, partition_rule)
    n = idx.shape[1]
    label = None
    if estimator == "ula":
        require(potential is not None and step_size is not None, "estimator", "ula",
                "needs the model's potential and a step size")
        steps = positive_int("num_steps", num_steps)
        bi = steps // 2 if burn_in is None else int(burn_in)
        draws, label = ula_chunk_draws(potential, data, idx, step_size=step_size, num_steps=steps, burn_in=bi,
                                       likelihood_scale=m / n, max_draws=max_draws, rng_key=rng_key)
        est = np.stack([statistic.evaluate(d) for d in draws])
        name = f"ULA per chunk ({steps} steps, burn-in {bi}, step {step_size:.4g}, likelihood x {m / n:.4g})"
    elif callable(estimator):
        est = []
        for j in range(k):
            chunk = {kk: np.asarray(v)[idx[j]] for kk, v in data.items()}
            try:
                e = np.asarray(estimator(chunk), dtype=np.float64).reshape(-1)
            except AssumptionError:
                raise
            except Exception as exc:  # noqa: BLE001 - the user's estimator, one line
                raise AssumptionError(f"estimator raised {type(exc).__name__} on chunk {j}; fix it") from None
            require(e.shape == (statistic.num_coords,), "estimator output shape", e.shape,
                    f"must be ({statistic.num_coords},)")
            est.append(e)
        est = np.stack(est)
        name = getattr(estimator, "__name__", "user estimator")
    else:
        raise AssumptionError(f"estimator = {estimator!r} must be 'ula' or a callable chunk_data -> estimate")
    if not np.all(np.isfinite(est)):
        raise AssumptionError("a chunk estimate is not finite; check the estimator")
    clamped = np.clip(est, a, b)
    return AggregateEstimate(value=clamped.mean(axis=0), estimates=clamped, chunks=k, chunk_size=n,
                             unused_records=m - k * n, rule=rule, estimator=name,
                             clamped=int(np.sum(clamped != est)), key_label=label,
                             timing={"chunks_s": time.perf_counter() - t0})


def aggregate_info(agg: AggregateEstimate) -> dict:
    """What a sample-and-aggregate release records (public: chunk count and size, rules; never the estimates).

    Args:
        agg: the aggregate.

    Returns:
        A JSON-ready dict.

    Examples:
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> stat = coordinate_means([SiteSpec("mu")]).with_range((0.0, 1.0))
        >>> agg = aggregate_estimate(stat, {"x": np.linspace(0.0, 1.0, 100)}, 4,
        ...                          estimator=lambda chunk: [chunk["x"].mean()])
        >>> info = aggregate_info(agg)
        >>> info["chunks"], info["chunk_size"], info["chunk_draws_published"]
        (4, 25, False)
    """
    return {"chunks": agg.chunks, "chunk_size": agg.chunk_size, "unused_records": agg.unused_records,
            "chunks_rule": agg.rule, "estimator": agg.estimator, "chunk_keys": agg.key_label,
            "chunk_draws_published": False,
            "likelihood_tempering": "each chunk's likelihood counted m / chunk_size times (accuracy only)",
            "partition": "records split by index after a CSPRNG permutation (values never looked at)"}

