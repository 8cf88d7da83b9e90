"""``bayesdp bench samplers``: bayesdp's ULA/SGLD against hand-written JAX and BlackJAX, side by side.

One JSON object per run (``--json``): ``device`` (platform, device kind and count, processor, JAX version),
``bandwidth`` (the memory bandwidth of this device, measured in the same run), ``rows`` (speed) and
``memory`` (peak memory over the data size).  Every speed row times bayesdp's
:class:`~bayesdp.samplers.Sampler` (NumPyro logistic regression, generic potential) and a reference on the
same data in the same process, medians of ``--repeats`` interleaved runs after compilation (compile time
reported separately):

* ULA reference: hand-written ``jax.numpy`` ULA for logistic regression,
  grad = X^T (sigmoid(X theta) - y) + theta / prior_scale^2, under ``jit`` + ``lax.scan``
  (one chain: matrix-vector products; K chains: matrix-matrix products), the fastest of several layouts
  (``ULA_FORMS``: row-major data, a feature-major copy made once outside the timed call, or both;
  positions (K, d) or (d, K)) measured in the same run.
* SGLD reference: BlackJAX ``sgld`` (no clipping) driven by ``lax.scan``, its minibatches drawn
  by the same exact without-replacement sampler as bayesdp (:func:`bayesdp.samplers.minibatch.batch_indices`,
  the batches of all steps drawn at once before the scan, as bayesdp draws those of a block), when BlackJAX
  imports (``pip install blackjax``, the ``bench`` extra); otherwise a hand-written ``jnp`` SGLD (said
  in the ``reference`` field).
* Roofline (ULA rows): ``bandwidth`` is measured with a copy kernel on an array of the data's size
  (``x <- x + 1`` repeated in one ``lax.scan``: read and write, 2 x size bytes per pass; the median of
  several timings); a full-batch step reads the design twice (X theta, then X^T r), so the roofline is
  ``bandwidth / (2 x design bytes)`` steps per second and ``roofline_fraction`` is the measured steps per
  second over it (for bayesdp and for the reference).  Several chains share the reads.  A layout that
  reads the data once per step (``row_blocks``) can exceed 1, and so can any layout on a machine where
  writes cost more than reads (write-allocate caches count a copy's bytes at least 1.5x).  SGLD reads s
  rows per step: no roofline.
* Memory (``memory``; skipped with ``--no-memory``): peak resident memory of ULA (GLM path, one chain)
  and clipped SGLD (s = 100) at ``--memory-size`` records (default 2,000,000; 200,000 with ``--quick``),
  d = 100, float32, each in a fresh subprocess.  ``peak_over_data`` = (peak RSS - RSS after a warm-up
  run of the same configuration on 1,000 records) / data bytes: the memory that grows with the data
  (the data themselves included).  ``peak_over_data_cold`` counts from before the warm-up (the JAX
  runtime's fixed cost, ``fixed_overhead_bytes``, included).  The arrays are allocated 64-byte aligned
  (:func:`bayesdp.samplers.aligned_empty`), which lets JAX use them in place on a CPU; ``numpy_default``
  repeats the measurement with ordinary NumPy arrays (16 bytes mod 64: JAX copies them once).  The file rows
  measure the command line's path, from reading a file (:func:`bayesdp.analysis.loading.load_data`) to the end
  of the run: an NPZ file of float32 members, one of float64 members (cast block by block while reading) and
  a Parquet file of float64 columns (cast column by column); ``data_bytes`` is the float32 data the chain
  reads.  The ``bayesdp sample`` rows (:func:`cli_memory_row`) run the command itself on an NPZ file in a fresh
  process, from after its imports and JAX's first operation to its end (the domain check, the certification
  and the NetCDF output included); a command has no warm-up, so their ``peak_over_data`` is the cold figure.
  On a GPU the device's ``peak_bytes_in_use`` over the data size is reported as well.
* Speed rows carry their A/B pairs: ``pair_ratios`` (per interleaved round, the reference's time over
  bayesdp's) and ``ratio_median_of_pairs``, besides ``ratio`` (the ratio of the two medians).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import numpy as np
import platform

__all__ = ["NAME", "HELP", "ULA_FORMS", "add_arguments", "model", "reference_ula", "reference_sgld", "device_info",
           "copy_bandwidth", "run", "memory_row", "cli_memory_row", "format_table"]

NAME = "samplers"
HELP = "ULA/SGLD steps per second vs hand-written JAX and BlackJAX (same run)"


def add_arguments(parser) -> None:
    """Add the options of ``bayesdp bench samplers`` to the argparse sub-parser ``parser``.

    Args:
        parser: the sub-parser.

    Examples:
        >>> import argparse
        >>> p = argparse.ArgumentParser(prog="bayesdp bench samplers")
        >>> add_arguments(p)
        >>> vars(p.parse_args([]))
        {'quick': False, 'targets_only': False, 'repeats': 5, 'no_memory': False, 'memory_size': None}
    """
    parser.add_argument("--quick", action="store_true", help="small sizes only (m = 1,000, d = 10)")
    parser.add_argument("--targets-only", action="store_true",
                        help="only the rows the targets name: ULA at m = 100,000, d = 100 and SGLD at m = 10^6 "
                             "(on a GPU the small rows time kernel launches, and take most of the time)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per measurement (median)")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory measurements")
    parser.add_argument("--memory-size", type=int, default=None,
                        help="records of the memory measurements (default 2,000,000; 200,000 with --quick)")


def _median_time(fn, repeats):
    fn()  # warm (compile)
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def _interleaved(fns, repeats):
    """Median time of each callable, the calls interleaved (the machine's load drifts); the times of every
    round are kept in ``_interleaved.last`` (round r of each callable ran side by side: an A/B pair)."""
    for f in fns:
        f()  # warm (compile)
    ts = [[] for _ in fns]
    for _ in range(repeats):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            f()
            ts[i].append(time.perf_counter() - t)
    _interleaved.last = ts
    return [statistics.median(t) for t in ts]


def _pair_ratios(t_ours, t_ref) -> dict:
    """The A/B pairs of one row: per round, the reference's time over bayesdp's (> 1: bayesdp faster)."""
    ratios = [b / a for a, b in zip(t_ours, t_ref)]
    return {"pairs": len(ratios), "pair_ratios": [round(r, 4) for r in ratios],
            "ratio_median_of_pairs": statistics.median(ratios)}


def _data(m, d, seed=0):

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)).astype(np.float32)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True)) * 1.001
    y = (rng.uniform(size=m) < 0.5).astype(np.float32)
    return X, y


def _model():
    import numpyro
    import numpyro.distributions as dist

    def logistic(X, y=None, prior_scale=1.0):
        theta = numpyro.sample("theta", dist.Normal(0.0, prior_scale).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("records", X.shape[0]):
            numpyro.sample("y", dist.Bernoulli(logits=X @ theta), obs=y)

    return logistic


_MODEL = None


def model():
    """The benchmark's NumPyro logistic model (built once, cached).

    ``logistic(X, y=None, prior_scale=1.0)``: ``theta ~ N(0, prior_scale^2 I)``, ``y_i ~ Bernoulli(logits =
    x_i . theta)`` in a plate over the records.

    Returns:
        the model function (the same object on every call).

    Examples:
        >>> model().__name__, model() is model()
        ('logistic', True)
    """
    global _MODEL
    if _MODEL is None:
        _MODEL = _model()
    return _MODEL


def _ula_forms():
    """name -> (likelihood gradient (th, X, y, XT) -> grad, position layout): ``X`` is the row-major data
    (m, d), ``XT`` a feature-major copy (d, m) made once per dataset outside the timed call (a hand-written
    sampler may store its data either way, or both).  Layout "Kd": positions (K, d); "dK": (d, K)."""
    import jax
    import jax.numpy as jnp

    sig = jax.nn.sigmoid
    return {
        1: {"XT_r": (lambda th, X, y, XT: X.T @ (sig(X @ th) - y), "Kd"),          # XLA copies X^T inside the loop
            "r_X": (lambda th, X, y, XT: (sig(X @ th) - y) @ X, "Kd"),
            "fm:XT_r": (lambda th, X, y, XT: XT @ (sig(th @ XT) - y), "Kd"),      # feature-major storage only
            "fm:r_X": (lambda th, X, y, XT: (sig(th @ XT) - y) @ X, "Kd"),        # both layouts stored
            "both:XT_r": (lambda th, X, y, XT: XT @ (sig(X @ th) - y), "Kd")},
        "K": {"r_X": (lambda th, X, y, XT: (sig(th @ X.T) - y[None, :]) @ X, "Kd"),
              "rT_X": (lambda th, X, y, XT: (sig(X @ th.T) - y[:, None]).T @ X, "Kd"),
              "XT_r": (lambda th, X, y, XT: (X.T @ (sig(X @ th.T) - y[:, None])).T, "Kd"),
              "fm:r_XT": (lambda th, X, y, XT: jnp.einsum("km,dm->kd", sig(th @ XT) - y, XT), "Kd"),
              "fm:r_X": (lambda th, X, y, XT: (sig(th @ XT) - y) @ X, "Kd"),
              "both:XT_R": (lambda th, X, y, XT: XT @ (sig(X @ th) - y[:, None]), "dK"),
              "fm:XT_R": (lambda th, X, y, XT: XT @ (sig(jnp.einsum("dm,dk->mk", XT, th)) - y[:, None]), "dK")},
    }


class _Forms(dict):
    def __missing__(self, key):
        self.update(_ula_forms())
        return dict.__getitem__(self, key)


#: hand-written likelihood gradients of logistic regression, several layouts (the bench keeps the fastest)
ULA_FORMS = _Forms()


def reference_ula(X, y, step_size, num_steps, num_chains, prior_scale=1.0, data_as_constants=False, form="r_X",
                  precision=None):
    """Hand-written jnp ULA, jit + lax.scan; returns a zero-argument timed callable.

    ``form`` picks how grad = X^T (sigmoid(X theta) - y) + theta / prior_scale^2 is written and how the
    data and positions are laid out (see ``ULA_FORMS``): XLA on CPU materialises X^T inside the loop for
    ``X.T @ r`` but not for ``r @ X``; a feature-major copy ``XT`` of the data (made once, outside the
    timed call, like a hand-written sampler that stores its data that way) is faster still for some shapes.

    By default the data are arguments of the jitted function (the contract bayesdp keeps: no
    recompilation for a new dataset of the same shape).  ``data_as_constants=True`` closes over
    them instead, letting XLA specialise the program to this dataset (e.g. constant-fold X^T):
    reported as extra information, not as the reference.

    Args:
        X: the features ``(m, d)``.
        y: the 0/1 labels ``(m,)``.
        step_size: the step size.
        num_steps: the number of steps.
        num_chains: the number of chains.
        prior_scale: the prior's standard deviation.
        data_as_constants: close over the data instead of passing them as arguments.
        form: the layout of the gradient (a key of ``ULA_FORMS[1]`` or ``ULA_FORMS["K"]``).
        precision: ``None`` (JAX's default: TF32 products on NVIDIA GPUs) or a matmul precision
            (``"highest"``: full float32, as bayesdp's products on every backend).

    Returns:
        a callable running the chain(s) once and returning the final position(s).

    Examples:
        >>> import numpy as np
        >>> X, y = np.eye(4, 2, dtype=np.float32), np.array([1.0, 0.0, 1.0, 0.0], np.float32)
        >>> reference_ula(X, y, step_size=0.1, num_steps=3, num_chains=1)().shape
        (2,)
    """
    import jax
    import jax.numpy as jnp

    Xj, yj = jnp.asarray(X), jnp.asarray(y)
    d = X.shape[1]
    inv_var = 1.0 / prior_scale ** 2
    noise = (2.0 * step_size) ** 0.5

    grads = ULA_FORMS[1 if num_chains == 1 else "K"]
    grad0, layout = grads[form]
    XTj = jnp.asarray(np.ascontiguousarray(X.T))  # unused (and free) in the row-major forms
    shape = (d,) if num_chains == 1 else ((num_chains, d) if layout == "Kd" else (d, num_chains))

    def grad(th, X, y, XT):
        return grad0(th, X, y, XT) + inv_var * th

    def run(key, X, y, XT):
        def body(x, k):
            return x - step_size * grad(x, X, y, XT) + noise * jax.random.normal(k, shape), None
        x, _ = jax.lax.scan(body, jnp.zeros(shape), jax.random.split(key, num_steps))
        return x

    def under_precision(call):
        if precision is None:
            return call

        def called():
            with jax.default_matmul_precision(precision):   # part of jit's cache key: traced at that precision
                return call()
        return called

    if data_as_constants:
        f = jax.jit(lambda key: run(key, Xj, yj, XTj))
        return under_precision(lambda: jax.block_until_ready(f(jax.random.key(1))))
    f = jax.jit(run)
    return under_precision(lambda: jax.block_until_ready(f(jax.random.key(1), Xj, yj, XTj)))


def reference_sgld(X, y, step_size, num_steps, batch_size, prior_scale=1.0):
    """BlackJAX sgld (no clipping) in lax.scan, the batches of all steps drawn at once by bayesdp's exact sampler;
    hand-written jnp SGLD if BlackJAX is absent.

    Args:
        X: the features ``(m, d)``.
        y: the 0/1 labels ``(m,)``.
        step_size: the step size.
        num_steps: the number of steps.
        batch_size: the batch size s.
        prior_scale: the prior's standard deviation.

    Returns:
        ``(run, label)``: a callable running the chain once (returning the final position) and what it is.

    Examples:
        >>> import numpy as np
        >>> X, y = np.eye(4, 2, dtype=np.float32), np.array([1.0, 0.0, 1.0, 0.0], np.float32)
        >>> go, label = reference_sgld(X, y, step_size=0.1, num_steps=3, batch_size=2)
        >>> label.endswith("data as jit arguments")
        True
    """
    import jax
    import jax.numpy as jnp

    from ..samplers.minibatch import batch_indices

    Xj, yj = jnp.asarray(X), jnp.asarray(y)
    m, d = X.shape
    scale = m / batch_size

    def logdensity_fn(th, batch):  # BlackJAX-style: log prior + (m/s) log lik of the batch
        xb, yb = batch
        z = xb @ th
        loglik = jnp.sum(yb * z - jnp.logaddexp(0.0, z))
        return -0.5 * jnp.sum(th ** 2) / prior_scale ** 2 + scale * loglik

    try:
        import blackjax

        grad_estimator = blackjax.sgmcmc.gradients.grad_estimator(
            lambda th: -0.5 * jnp.sum(th ** 2) / prior_scale ** 2,
            lambda th, b: b[1] * jnp.dot(b[0], th) - jnp.logaddexp(0.0, jnp.dot(b[0], th)),
            m)
        sgld = blackjax.sgld(grad_estimator)
        label = (f"blackjax {blackjax.__version__} sgld (no clipping), minibatches by the same exact sampler "
                 "(all steps' batches drawn at once)")

        def step(key, x, batch):
            return sgld.step(key, x, batch, step_size)
    except Exception:  # noqa: BLE001 - BlackJAX missing or API changed: hand-written reference
        g = jax.grad(logdensity_fn)
        label = "hand-written jnp SGLD (BlackJAX unavailable)"

        def step(key, x, batch):
            return x + step_size * g(x, batch) + (2 * step_size) ** 0.5 * jax.random.normal(key, x.shape)

    @jax.jit
    def run(key, Xa, ya):
        # the batches of all steps drawn at once, vectorised, by the same exact sampler as bayesdp's (a
        # per-step call would add its fixed cost to every step); the noise keys split at once likewise
        k_batch, k_noise = jax.random.split(key)
        batches = batch_indices(k_batch, m, batch_size, num_steps)

        def body(x, inputs):
            k, idx = inputs
            return step(k, x, (Xa[idx], ya[idx])), None
        x, _ = jax.lax.scan(body, jnp.zeros(d), (jax.random.split(k_noise, num_steps), batches))
        return x

    return (lambda: jax.block_until_ready(run(jax.random.key(1), Xj, yj))), label + ", data as jit arguments"


def _ours(X, y, **kw):
    import jax

    from ..samplers import Sampler, glm

    glm.LAST_TIMINGS.clear()
    s = Sampler(model(), {"X": X, "y": y}, uncertified=True, **kw)
    s.run(jax.random.key(0))
    compile_s = s.timing["compile_s"]
    _ours.last = {"prepare_s": s.timing.get("prepare_s"), "gradient_path": getattr(s, "gradient_path", "old"),
                  # seconds per likelihood gradient of each candidate layout ({}: one candidate, or a saved choice)
                  "layout_gradient_s": dict(glm.LAST_TIMINGS)}

    def go():
        s.run(jax.random.key(1))
    return go, compile_s


def _row(sampler, m, d, chains, t_ours, t_ref, steps, ref_label, compile_s, **extra):
    row = {"sampler": sampler, "data_size": m, "dim": d, "chains": chains, "num_steps": steps,
           "steps_per_s": steps / t_ours, "reference": ref_label, "reference_steps_per_s": steps / t_ref,
           "ratio": (steps / t_ours) / (steps / t_ref), "compile_s": compile_s}
    row.update(extra)
    return row


def _steps_for(m, d, chains):
    """Steps per timed run: about 2e8 multiply-adds on a CPU (a second or less); 100 times that on an
    accelerator, where a step at m = 1e5, d = 100 takes microseconds and 20 steps would time the launch."""
    import jax

    budget = 2e8 if jax.devices()[0].platform == "cpu" else 2e10
    work = m * d * max(1, chains // 4)
    return max(20, min(5000, int(budget / work)))


def device_info() -> dict:
    """The device the bench ran on: JAX's platform, device kind and count, the processor and JAX's version.

    Returns:
        a JSON-ready dict (``platform``, ``device_kind``, ``device_count``, ``process_count``, ``jax``,
        ``processor`` and, on Linux, ``cpu_cores``).

    Examples:
        >>> import jax
        >>> info = device_info()
        >>> info["jax"] == jax.__version__, info["platform"] == jax.devices()[0].platform
        (True, True)
    """

    import jax

    dev = jax.devices()[0]
    info = {"platform": dev.platform, "device_kind": dev.device_kind, "device_count": jax.device_count(),
            "process_count": jax.process_count(), "jax": jax.__version__, "processor": platform.processor() or None}
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        info["processor"] = names[0] if names else info["processor"]
        info["cpu_cores"] = len(names) or None
    except OSError:
        pass
    return info


def copy_bandwidth(nbytes: int, repeats: int = 9) -> dict:
    """Memory bandwidth in bytes per second from a copy kernel on a float32 array of ``nbytes``: ``x <- x + 1``
    repeated ``passes`` times in one ``lax.scan`` (each pass reads and writes the array: 2 x nbytes), the
    median of ``repeats`` timings after compilation.  Small arrays measure the cache they fit in, which is
    the roofline of a problem of that size.

    Args:
        nbytes: the size of the array (at least 64 bytes are used).
        repeats: the number of timings.

    Returns:
        ``bytes_per_s``, ``array_bytes``, ``passes`` and ``method``.

    Examples:
        >>> r = copy_bandwidth(4096, repeats=1)
        >>> r["array_bytes"], r["passes"], r["bytes_per_s"] > 0
        (4096, 1000, True)
    """
    import jax
    import jax.numpy as jnp

    n = max(16, int(nbytes) // 4)
    passes = int(max(2, min(1000, 2e9 // max(1, 2 * 4 * n))))
    x = jnp.zeros(n, jnp.float32)
    f = jax.jit(lambda a: jax.lax.scan(lambda c, _: (c + 1.0, None), a, None, length=passes)[0])
    t = _median_time(lambda: jax.block_until_ready(f(x)), repeats)
    return {"bytes_per_s": 2.0 * 4 * n * passes / t, "array_bytes": 4 * n, "passes": passes,
            "method": "copy kernel: x <- x + 1 on a float32 array of the data's size, repeated in one lax.scan "
                      "(read + write per pass: 2 x size bytes), median of timings in this run"}


def _roofline(steps_per_s, design_bytes, bandwidth):
    """Full-batch ULA reads the design twice per step: roofline = bandwidth / (2 x design bytes) steps/s."""
    roof = bandwidth / (2.0 * design_bytes)
    return roof, steps_per_s / roof


def run(args) -> dict:
    """Run ``bayesdp bench samplers`` with the parsed options ``args``: one JSON-ready dict (device, bandwidth,
    speed rows with the reference measured in the same run, memory).

    ``--quick`` takes about a minute (the memory rows run in fresh processes); the full bench much longer.

    Args:
        args: the namespace of [`add_arguments`][bayesdp.bench.samplers.add_arguments]' options.

    Returns:
        a dict with ``device``, ``bandwidth``, ``rows``, ``targets`` and (unless ``--no-memory``) ``memory``.

    Examples:
        Not run here (it takes minutes):

        >>> import argparse
        >>> p = argparse.ArgumentParser()
        >>> add_arguments(p)
        >>> args = p.parse_args(["--quick", "--no-memory", "--repeats", "1"])
        >>> res = run(args)                                     # doctest: +SKIP
        >>> [row["sampler"] for row in res["rows"]]             # doctest: +SKIP
        ['ula', 'ula', 'sgld-clipped (s=100)']
    """
    sizes = [(1000, 10)] if args.quick else [(100_000, 100)] if args.targets_only else [(1000, 10), (100_000, 100)]
    rows, bandwidth = [], []
    for m, d in sizes:
        X, y = _data(m, d)
        bw = copy_bandwidth(X.nbytes)
        bandwidth.append({"data_size": m, "dim": d, **bw})
        for chains in (1, 8):
            steps = _steps_for(m, d, chains)
            step_size = 1e-4 if m > 10_000 else 1e-3
            ours, compile_s = _ours(X, y, sampler="ula", step_size=step_size, num_steps=steps, num_chains=chains)
            forms = list(ULA_FORMS[1 if chains == 1 else "K"])
            refs = [reference_ula(X, y, step_size, steps, chains, form=f) for f in forms]
            ref_const = reference_ula(X, y, step_size, steps, chains, data_as_constants=True)
            # on an accelerator JAX's default float32 products may be TF32: the reference's forms once more at
            # full float32, as bayesdp computes them (reported beside the reference, not instead of it)
            highest = ([reference_ula(X, y, step_size, steps, chains, form=f, precision="highest") for f in forms]
                       if device_info()["platform"] != "cpu" else [])
            t_ours, *t_refs = _interleaved([ours, *refs, ref_const, *highest], args.repeats)
            t_refs, t_const, t_high = t_refs[:len(forms)], t_refs[len(forms)], t_refs[len(forms) + 1:]
            best = min(range(len(forms)), key=lambda i: t_refs[i])
            t_ref = t_refs[best]
            pairs = _pair_ratios(_interleaved.last[0], _interleaved.last[1 + best])
            roof, frac = _roofline(steps / t_ours, X.nbytes, bw["bytes_per_s"])
            extra = {**_ours.last, **pairs, "reference_form": forms[best],
                     "reference_forms_steps_per_s": {f: steps / t for f, t in zip(forms, t_refs)},
                     "reference_data_as_constants_steps_per_s": steps / t_const,
                     "reference_forms_highest_steps_per_s": {f: steps / t for f, t in zip(forms, t_high)},
                     "roofline_steps_per_s": roof, "roofline_fraction": frac,
                     "reference_roofline_fraction": _roofline(steps / t_ref, X.nbytes, bw["bytes_per_s"])[1]}
            rows.append(_row("ula", m, d, chains, t_ours, t_ref, steps,
                             "fastest hand-written jnp ULA (jit + lax.scan, data as jit arguments)", compile_s, **extra))
            _progress(rows[-1])
        if not args.targets_only:
            rows.append(_sgld_row(X, y, m, d, args.repeats))
            _progress(rows[-1])
    if not args.quick:
        X, y = _data(1_000_000, 100)
        rows.append(_sgld_row(X, y, 1_000_000, 100, args.repeats))
        _progress(rows[-1])
        del X, y
    out = {"bench": "samplers", "device": device_info(), "bandwidth": bandwidth, "rows": rows,
           "targets": {"cpu": "ULA and SGLD rows: no regression against the previous code (ratios to the same-run "
                              "reference); SGLD m = 10^6: ratio >= 0.8 (BlackJAX sgld, same minibatch scheme); "
                              "memory at m = 2e6, d = 100: ULA peak_over_data <= 2, SGLD <= 1.2",
                       "gpu": "ULA m = 10^5, d = 100: ratio >= 1.0 and roofline_fraction >= 0.5; clipped SGLD "
                              "m = 10^6, d = 100, s = 100: >= 50,000 steps/s"}}
    if not args.no_memory:
        size = args.memory_size or (200_000 if args.quick else 2_000_000)
        out["memory"] = [memory_row(kind, size, aligned) for kind in ("ula", "sgld") for aligned in (True, False)]
        out["memory"] += [memory_row(kind, size, source=src) for src in ("npz", "npz64", "parquet")
                          for kind in ("ula", "sgld")]
        out["memory"] += [cli_memory_row(kind, size) for kind in ("ula", "sgld")]
    return out


def _progress(row) -> None:
    """One line on stderr per finished row (the JSON comes at the end; a run stopped early still shows these)."""
    print(f"bench samplers: {row['sampler']} m={row['data_size']} d={row['dim']} chains={row['chains']}: "
          f"{row['steps_per_s']:.1f} steps/s, reference {row['reference_steps_per_s']:.1f}, ratio {row['ratio']:.3f}",
          file=sys.stderr, flush=True)


def _sgld_row(X, y, m, d, repeats):
    steps = 2000
    ours, compile_s = _ours(X, y, sampler="sgld", step_size=1e-4, num_steps=steps, batch_size=100, clip_norm=1.0)
    ref, label = reference_sgld(X, y, 1e-4, steps, 100)
    t_ours, t_ref = _interleaved([ours, ref], repeats)
    pairs = _pair_ratios(*_interleaved.last)
    return _row("sgld-clipped (s=100)", m, d, 1, t_ours, t_ref, steps, label, compile_s, **pairs,
                roofline_fraction=None, roofline="none: a step reads s = 100 rows (latency, not bandwidth)")


_MEMORY_SCRIPT = r"""
import json, sys
kind, m, source = sys.argv[1], int(sys.argv[2]), sys.argv[3]
aligned = source != "0"
def status(key):  # /proc/self/status in bytes; VmHWM (peak RSS) is per address space, not inherited like ru_maxrss
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
def reset_peak():  # VmHWM := VmRSS (Linux >= 4.0); otherwise the peak includes what came before
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
import numpy as np, jax, jax.numpy as jnp, numpyro
from bayesdp.bench.samplers import model
from bayesdp.samplers import Sampler, aligned_empty
jnp.zeros(1).block_until_ready()
cold = status("VmRSS")
d = 100
kw = (dict(sampler="ula", step_size=1e-6, num_steps=20) if kind == "ula" else
      dict(sampler="sgld", step_size=1e-6, num_steps=200, batch_size=100, clip_norm=1.0))
def make(m, aligned):
    rng = np.random.default_rng(0)
    X = aligned_empty((m, d), np.float32) if aligned else np.empty((m, d), np.float32)
    for i in range(0, m, 100_000):
        k = min(100_000, m - i)
        X[i:i + k] = rng.standard_normal((k, d), dtype=np.float32) / 10
    y = aligned_empty((m,), np.float32) if aligned else np.empty(m, np.float32)
    y[:] = rng.uniform(size=m) < 0.5
    return X, y
X, y = make(1000, aligned)   # warm-up: imports, JAX's compilation caches, the runtime's fixed cost
Sampler(model(), {"X": X, "y": y}, uncertified=True, **kw).run(jax.random.key(0))
del X, y
dev = jax.devices()[0]
stats0 = dev.memory_stats() or {}
base = status("VmRSS")
if source in ("npz", "npz64", "parquet"):   # the command line's data path: a file read by bayesdp's loader
    import os, tempfile
    from bayesdp.analysis.loading import load_data
    path = os.path.join(tempfile.mkdtemp(), "data." + source.rstrip("64"))
    X, y = make(m, True)
    if source == "parquet":  # float64 columns (as pandas writes them), one row group per 100,000 records
        import pyarrow as pa, pyarrow.parquet as pq
        writer = None
        for i in range(0, m, 100_000):
            t = pa.table({**{f"x{j}": X[i:i + 100_000, j].astype(np.float64) for j in range(d)},
                          "y": y[i:i + 100_000].astype(np.float64)})
            writer = writer or pq.ParquetWriter(path, t.schema)
            writer.write_table(t)
        writer.close()
        load_kw = {"x_columns": ",".join(f"x{j}" for j in range(d)), "y_column": "y"}
    else:   # npz: float32 members; npz64: float64 members (cast block by block to float32 while reading)
        np.savez(path, **({"X": X, "y": y} if source == "npz" else {"X": X.astype(np.float64), "y": y.astype(np.float64)}))
        load_kw = {}
    del X, y
    base = status("VmRSS")
    reset_peak()
    data = load_data(path, **load_kw)
    os.remove(path)
    X, y = data.pop("X"), data.pop("y")
else:
    reset_peak()
    X, y = make(m, aligned)
s = Sampler(model(), {"X": X, "y": y}, uncertified=True, **kw)
s.run(jax.random.key(0))
peak = status("VmHWM")
nbytes = X.nbytes + y.nbytes
stats = dev.memory_stats() or {}
row = {"sampler": kind, "data_size": m, "dim": d, "chains": 1, "aligned": aligned, "data_bytes": nbytes,
       "source": {"npz": "npz file", "npz64": "npz file (float64)", "parquet": "parquet file (float64)"}.get(
           source, "in memory"),
       "peak_over_data": (peak - base) / nbytes, "peak_over_data_cold": (peak - cold) / nbytes,
       "fixed_overhead_bytes": base - cold, "gradient_path": s.gradient_path, "steps_per_s": s.timing["steps_per_s"]}
if "peak_bytes_in_use" in stats:
    row["device_peak_over_data"] = stats["peak_bytes_in_use"] / nbytes
print(json.dumps(row))
"""


# ``bayesdp sample`` itself, in a fresh process, on an NPZ file written by the parent: the command line's memory
_CLI_MEMORY_SCRIPT = r"""
import json, os, sys, contextlib, io
kind, path, out, nbytes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
import bayesdp.cli, jax, jax.numpy as jnp, numpyro
jnp.zeros(1).block_until_ready()   # the baseline of the other rows' cold figure: imports and JAX's first operation
base = status("VmRSS")
argv = ["sample", "logistic", "--data", path, "--domain", "X.norm=1", "y.values=0,1", "--seed", "0", "--json",
        "--out", out] + (["--sampler", "ula", "--step-size", "1e-6", "--num-steps", "20"] if kind == "ula" else
                         ["--sampler", "sgld", "--step-size", "1e-6", "--num-steps", "200", "--batch-size", "100",
                          "--clip-norm", "1"])
with contextlib.redirect_stdout(io.StringIO()) as got:
    rc = bayesdp.cli.main(argv)
peak = status("VmHWM")
res = json.loads(got.getvalue()) if rc == 0 else {}
print(json.dumps({"sampler": kind, "data_size": None, "dim": 100, "chains": 1, "aligned": True, "rc": rc,
                  "data_bytes": nbytes, "source": "bayesdp sample (npz file)", "peak_over_data": (peak - base) / nbytes,
                  "peak_over_data_cold": (peak - base) / nbytes, "fixed_overhead_bytes": 0,
                  "steps_per_s": (res.get("timing") or {}).get("steps_per_s")}))
"""


def cli_memory_row(kind: str = "sgld", data_size: int = 1_000_000) -> dict:
    """Peak memory of ``bayesdp sample`` itself (``kind`` "ula" or "sgld", as :func:`memory_row`) on an NPZ file of
    ``data_size`` records, d = 100, float32, in a fresh process: from after its imports and JAX's first operation
    to the end of the command (loading, the domain check, certification, the run and the NetCDF output).  The
    file is written by this process, so none of its making is counted.

    Args:
        kind: ``"ula"`` or ``"sgld"``.
        data_size: the number of records.

    Returns:
        a result row (``peak_over_data``, the same as ``peak_over_data_cold``: a command has no warm-up), or one
        with ``"error"``.

    Examples:
        Not run here (writes the file, then a fresh process loads it and compiles: several seconds):

        >>> cli_memory_row("sgld", 200_000)["peak_over_data"] <= 1.5      # doctest: +SKIP
        True
    """
    with tempfile.TemporaryDirectory(prefix="bayesdp-bench-memory-") as tmp:
        X, y = _data(int(data_size), 100)          # |x| < 1, y in {0, 1}: the domain the command declares
        path = os.path.join(tmp, "data.npz")
        np.savez(path, X=X, y=y)
        nbytes = X.nbytes + y.nbytes
        del X, y
        out = subprocess.run([sys.executable, "-c", _CLI_MEMORY_SCRIPT, kind, path, os.path.join(tmp, "out.nc"),
                              str(nbytes)], capture_output=True, text=True, timeout=1200)
    if out.returncode or not out.stdout.strip():
        return {"sampler": kind, "data_size": data_size, "source": "bayesdp sample (npz file)",
                "error": (out.stderr.strip().splitlines() or ["no output"])[-1]}
    row = json.loads(out.stdout.strip().splitlines()[-1])
    if row.pop("rc"):
        return {"sampler": kind, "data_size": data_size, "source": "bayesdp sample (npz file)",
                "error": (out.stderr.strip().splitlines() or ["the command failed"])[-1]}
    row["data_size"] = int(data_size)
    row["target"] = "<= 2 (ULA), <= 1.2 (SGLD): the command line at m = 1e6, d = 100"
    return row


def memory_row(kind: str = "sgld", data_size: int = 2_000_000, aligned: bool = True, npz: bool = False,
               source: str | None = None) -> dict:
    """Peak memory of one run (``kind`` "ula" or "sgld") on ``data_size`` records, d = 100, in a fresh process.

    Args:
        kind: ``"ula"`` (GLM path, one chain) or ``"sgld"`` (clipped, s = 100).
        data_size: the number of records.
        aligned: allocate the data 64-byte aligned (:func:`bayesdp.samplers.aligned_empty`).
        npz: write the data to an uncompressed NPZ file first and measure from reading it
            (:func:`bayesdp.analysis.loading.load_data`, the command line's path) to the end of the run.
        source: a file to measure from, as ``npz``: ``"npz"`` (float32 members), ``"npz64"`` (float64 members)
            or ``"parquet"`` (float64 columns); the loader casts float64 to the samplers' float32 while reading.

    Returns:
        a result row (``peak_over_data`` and the rest, see the module docstring), or one with ``"error"``.

    Examples:
        Not run here (a fresh process compiles two runs: several seconds):

        >>> row = memory_row("ula", 200_000)                    # doctest: +SKIP
        >>> row["peak_over_data"] <= 2                          # doctest: +SKIP
        True
    """
    if source is None:
        source = "npz" if npz else "1" if aligned else "0"
    elif source not in ("npz", "npz64", "parquet"):
        raise ValueError(f"source = {source!r} is not 'npz', 'npz64' or 'parquet'")
    out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, kind, str(int(data_size)), source],
                         capture_output=True, text=True, timeout=1200)
    if out.returncode:
        return {"sampler": kind, "data_size": data_size, "aligned": aligned,
                "error": (out.stderr.strip().splitlines() or ["no output"])[-1]}
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["target"] = ("<= 2 (ULA), <= 1.2 (SGLD) from a file" if source in ("npz", "npz64", "parquet") else
                     "<= 2 (ULA), <= 1.2 (SGLD) with aligned arrays" if aligned else
                     "informative: an unaligned NumPy array is copied once into JAX's memory")
    return row


def format_table(result) -> str:
    """``result`` (what :func:`run` returned) as the readable table printed without ``--json``.

    Args:
        result: the dict :func:`run` returned.

    Returns:
        the table's text.

    Examples:
        >>> res = {"device": {"platform": "cpu", "device_kind": "cpu", "device_count": 1, "processor": "x86_64",
        ...                   "jax": "0.10.0"},
        ...        "bandwidth": [{"array_bytes": 2 ** 20, "bytes_per_s": 2e10}],
        ...        "rows": [{"sampler": "ula", "data_size": 1000, "dim": 10, "chains": 1, "steps_per_s": 2000.0,
        ...                  "reference_steps_per_s": 1000.0, "ratio": 2.0, "roofline_fraction": 0.5,
        ...                  "reference": "hand-written jnp ULA"}]}
        >>> print(format_table(res))
        device: cpu (cpu, 1 device(s)), x86_64, jax 0.10.0
        bandwidth (copy kernel, 1.0 MiB): 20.0 GB/s
        sampler                         m    d  K    steps/s  ref steps/s  ratio roofline  reference
        ula                          1000   10  1     2000.0       1000.0   2.00     0.50  hand-written jnp ULA
    """
    dev = result["device"]
    lines = [f"device: {dev['platform']} ({dev['device_kind']}, {dev['device_count']} device(s)), "
             f"{dev.get('processor')}, jax {dev['jax']}"]
    for b in result["bandwidth"]:
        lines.append(f"bandwidth (copy kernel, {b['array_bytes'] / 2**20:.1f} MiB): {b['bytes_per_s'] / 1e9:.1f} GB/s")
    lines.append(f"{'sampler':<24} {'m':>8} {'d':>4} {'K':>2} {'steps/s':>10} {'ref steps/s':>12} {'ratio':>6} "
                 f"{'roofline':>8}  reference")
    for r in result["rows"]:
        if "error" in r:
            lines.append(f"{r['sampler']}: error {r['error']}")
            continue
        frac = r.get("roofline_fraction")
        lines.append(f"{r['sampler']:<24} {r['data_size']:>8} {r['dim']:>4} {r['chains']:>2} "
                     f"{r['steps_per_s']:>10.1f} {r['reference_steps_per_s']:>12.1f} {r['ratio']:>6.2f} "
                     f"{'-' if frac is None else f'{frac:.2f}':>8}  {r['reference']}"
                     + (f" [median of {r['pairs']} A/B pairs: {r['ratio_median_of_pairs']:.2f}]" if "pairs" in r else ""))
    for r in result.get("memory", []):
        if "error" in r:
            lines.append(f"memory {r['sampler']} (aligned={r['aligned']}): error {r['error']}")
            continue
        lines.append(f"memory {r['sampler']:<5} m={r['data_size']} {r.get('source', 'in memory')}, aligned={r['aligned']}: "
                     f"peak/data "
                     f"{r['peak_over_data']:.3f} (cold {r['peak_over_data_cold']:.3f}; fixed overhead "
                     f"{r['fixed_overhead_bytes'] / 2**20:.0f} MiB)")
    return "\n".join(lines)
