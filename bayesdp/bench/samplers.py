"""``bayesdp bench samplers``: bayesdp's ULA/SGLD against hand-written JAX and BlackJAX, side by side.

Every row times bayesdp's :class:`~bayesdp.samplers.Sampler` (NumPyro logistic regression, generic
potential) and a reference on the same data in the same process, medians of ``--repeats`` runs
after compilation (compile time reported separately):

* ULA reference: hand-written ``jax.numpy`` ULA for logistic regression,
  grad = X^T (sigmoid(X theta) - y) + theta / prior_scale^2, under ``jit`` + ``lax.scan``
  (one chain: matrix-vector products; K chains: matrix-matrix products), the fastest of several layouts
  (``ULA_FORMS``: row-major data, a feature-major copy made once outside the timed call, or both;
  positions (K, d) or (d, K)) measured in the same run.
* SGLD reference: BlackJAX ``sgld`` (no clipping) driven by ``lax.scan``, its minibatches drawn
  inside the scan by the same without-replacement sampler as bayesdp (Floyd), when BlackJAX
  imports; otherwise a hand-written ``jnp`` SGLD (said in the ``reference`` field).
* Roofline rows: achieved GFLOP/s of the 8-chain full-batch ULA (4 m d K flops per step) against a
  ``jnp`` matrix multiply of the same skinny shape, and bytes of data read per step / time per step
  of the 1-chain ULA against a streaming read (``jnp.sum`` over the data).
* Memory row (``--memory``): peak resident memory of SGLD at m = 1,000,000, d = 100 (float32), in a
  subprocess, as a multiple of the data size (the data themselves included: the increase of peak RSS
  over the RSS before the data were created).  The arrays are 64-byte aligned, which lets JAX use
  them in place; an unaligned array is copied once into device memory (about 2x + runtime).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

NAME = "samplers"
HELP = "ULA/SGLD steps per second vs hand-written JAX and BlackJAX (same run)"


def add_arguments(parser) -> None:
    """Add the options of ``bayesdp bench samplers`` to the argparse sub-parser ``parser``."""
    parser.add_argument("--quick", action="store_true", help="small sizes only (m = 1,000, d = 10)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per measurement (median)")
    parser.add_argument("--memory", action="store_true", help="also measure SGLD peak memory at m = 10^6, d = 100")


def _median_time(fn, repeats):
    fn()  # warm (compile)
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def _interleaved(fns, repeats):
    """Median time of each callable, the calls interleaved (the machine's load drifts)."""
    for f in fns:
        f()  # warm (compile)
    ts = [[] for _ in fns]
    for _ in range(repeats):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            f()
            ts[i].append(time.perf_counter() - t)
    return [statistics.median(t) for t in ts]


def _data(m, d, seed=0):
    import numpy as np

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


def reference_ula(X, y, step_size, num_steps, num_chains, prior_scale=1.0, data_as_constants=False, form="r_X"):
    """Hand-written jnp ULA, jit + lax.scan; returns a zero-argument timed callable.

    ``form`` picks how grad = X^T (sigmoid(X theta) - y) + theta / prior_scale^2 is written and how the
    data and positions are laid out (see ``ULA_FORMS``): XLA on CPU materialises X^T inside the loop for
    ``X.T @ r`` but not for ``r @ X``; a feature-major copy ``XT`` of the data (made once, outside the
    timed call, like a hand-written sampler that stores its data that way) is faster still for some shapes.

    By default the data are arguments of the jitted function (the contract bayesdp keeps: no
    recompilation for a new dataset of the same shape).  ``data_as_constants=True`` closes over
    them instead, letting XLA specialise the program to this dataset (e.g. constant-fold X^T):
    reported as extra information, not as the reference.
    """
    import jax
    import jax.numpy as jnp
    import numpy as np

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

    if data_as_constants:
        f = jax.jit(lambda key: run(key, Xj, yj, XTj))
        return lambda: jax.block_until_ready(f(jax.random.key(1)))
    f = jax.jit(run)
    return lambda: jax.block_until_ready(f(jax.random.key(1), Xj, yj, XTj))


def reference_sgld(X, y, step_size, num_steps, batch_size, prior_scale=1.0):
    """BlackJAX sgld (no clipping) in lax.scan with in-scan minibatches; hand-written jnp SGLD if absent."""
    import jax
    import jax.numpy as jnp

    from ..samplers.gradients import sample_without_replacement

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
        label = f"blackjax {blackjax.__version__} sgld (no clipping), minibatches by the same in-scan sampler"

        def step(key, x, batch):
            return sgld.step(key, x, batch, step_size)
    except Exception:  # noqa: BLE001 - BlackJAX missing or API changed: hand-written reference
        g = jax.grad(logdensity_fn)
        label = "hand-written jnp SGLD (BlackJAX unavailable)"

        def step(key, x, batch):
            return x + step_size * g(x, batch) + (2 * step_size) ** 0.5 * jax.random.normal(key, x.shape)

    @jax.jit
    def run(key, Xa, ya):
        def body(x, k):
            kb, ks = jax.random.split(k)
            idx = sample_without_replacement(kb, m, batch_size)
            return step(ks, x, (Xa[idx], ya[idx])), None
        x, _ = jax.lax.scan(body, jnp.zeros(d), jax.random.split(key, num_steps))
        return x

    return (lambda: jax.block_until_ready(run(jax.random.key(1), Xj, yj))), label + ", data as jit arguments"


def _ours(X, y, **kw):
    import jax

    from ..samplers import Sampler

    s = Sampler(model(), {"X": X, "y": y}, uncertified=True, **kw)
    s.run(jax.random.key(0))
    compile_s = s.timing["compile_s"]
    _ours.last = {"prepare_s": s.timing.get("prepare_s"), "gradient_path": getattr(s, "gradient_path", "old")}

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
    work = m * d * max(1, chains // 4)
    return max(20, min(5000, int(2e8 / work)))


def run(args) -> list:
    """Run ``bayesdp bench samplers`` with the parsed options ``args``: JSON-ready
    results (medians, targets and the reference measured in the same run)."""
    import jax
    import jax.numpy as jnp

    sizes = [(1000, 10)] if args.quick else [(1000, 10), (100_000, 100)]
    rows = []
    for m, d in sizes:
        X, y = _data(m, d)
        for chains in (1, 8):
            steps = _steps_for(m, d, chains)
            step_size = 1e-4 if m > 10_000 else 1e-3
            ours, compile_s = _ours(X, y, sampler="ula", step_size=step_size, num_steps=steps, num_chains=chains)
            forms = list(ULA_FORMS[1 if chains == 1 else "K"])
            refs = [reference_ula(X, y, step_size, steps, chains, form=f) for f in forms]
            ref_const = reference_ula(X, y, step_size, steps, chains, data_as_constants=True)
            t_ours, *t_refs, t_const = _interleaved([ours, *refs, ref_const], args.repeats)
            best = min(range(len(forms)), key=lambda i: t_refs[i])
            t_ref = t_refs[best]
            extra = {**_ours.last, "reference_form": forms[best],
                     "reference_forms_steps_per_s": {f: steps / t for f, t in zip(forms, t_refs)},
                     "reference_data_as_constants_steps_per_s": steps / t_const}
            if m == 100_000:
                if chains == 8:
                    flops = 4.0 * m * d * chains
                    Xj = jnp.asarray(X)
                    W = jnp.ones((d, chains), jnp.float32)
                    mm = jax.jit(lambda a, b: a @ b)
                    t_mm = _median_time(lambda: jax.block_until_ready(mm(Xj, W)), 10)
                    extra.update({"gflops": flops / (t_ours / steps) / 1e9,
                                  "matmul_gflops": 2.0 * m * d * chains / t_mm / 1e9})
                    extra["gflops_ratio"] = extra["gflops"] / extra["matmul_gflops"]
                else:
                    Xj = jnp.asarray(X)
                    sm = jax.jit(lambda a: jnp.sum(a))
                    t_rd = _median_time(lambda: jax.block_until_ready(sm(Xj)), 10)
                    nbytes = X.nbytes
                    extra.update({"data_gb_per_s": nbytes / (t_ours / steps) / 1e9,
                                  "stream_read_gb_per_s": nbytes / t_rd / 1e9})
                    extra["bandwidth_ratio"] = extra["data_gb_per_s"] / extra["stream_read_gb_per_s"]
            rows.append(_row("ula", m, d, chains, t_ours, t_ref, steps, "fastest hand-written jnp ULA (jit + lax.scan, data as jit arguments)",
                             compile_s, **extra))
        steps = 2000
        ours, compile_s = _ours(X, y, sampler="sgld", step_size=1e-4, num_steps=steps, batch_size=100,
                                clip_norm=1.0)
        ref, label = reference_sgld(X, y, 1e-4, steps, 100)
        t_ours, t_ref = _interleaved([ours, ref], args.repeats)
        rows.append(_row("sgld-clipped (s=100)", m, d, 1, t_ours, t_ref, steps, label, compile_s))
    if args.memory:
        rows.append(memory_row())
    return rows


_MEMORY_SCRIPT = r"""
import json, sys
import numpy as np, jax
from bayesdp.bench.samplers import model
from bayesdp.samplers import Sampler
def status(key):  # /proc/self/status in bytes; VmHWM (peak RSS) is per address space, not inherited like ru_maxrss
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
base = status("VmRSS")
m, d = 1_000_000, 100
rng = np.random.default_rng(0)
def aligned_empty(shape, dtype, align=64):  # 64-byte aligned: JAX uses it in place (device_put may_alias)
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buf = np.empty(n + align, np.uint8)
    off = (-buf.ctypes.data) % align
    return buf[off:off + n].view(dtype).reshape(shape)
X = aligned_empty((m, d), np.float32)
for i in range(0, m, 100_000):
    X[i:i+100_000] = rng.standard_normal((100_000, d), dtype=np.float32) / 10
y = aligned_empty((m,), np.float32)
y[:] = rng.uniform(size=m) < 0.5
s = Sampler(model(), {"X": X, "y": y}, sampler="sgld", step_size=1e-6, num_steps=200, batch_size=100,
            clip_norm=1.0, uncertified=True)
s.run(jax.random.key(0))
peak = status("VmHWM")
nbytes = X.nbytes + y.nbytes
print(json.dumps({"sampler": "sgld-clipped (s=100) memory", "data_size": m, "dim": d, "chains": 1,
                  "data_bytes": nbytes, "peak_rss_increase_bytes": peak - base,
                  "peak_over_data": (peak - base) / nbytes, "steps_per_s": s.timing["steps_per_s"],
                  "reference": "data size (the target is peak_over_data < 2)", "reference_steps_per_s": None,
                  "ratio": None}))
"""


def memory_row() -> dict:
    """Peak memory of SGLD on the benchmark, measured in a fresh process.

    Returns:
        a result row (``{"sampler": "sgld memory", ...}``), or one with ``"error"``.
    """
    out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT], capture_output=True, text=True, timeout=1200)
    if out.returncode:
        return {"sampler": "sgld memory", "error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def format_table(rows) -> str:
    """``rows`` (what :func:`run` returned) as the readable table printed without ``--json``."""
    lines = [f"{'sampler':<24} {'m':>8} {'d':>4} {'K':>2} {'steps/s':>10} {'ref steps/s':>12} {'ratio':>6}  reference"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['sampler']}: error {r['error']}")
            continue
        rs = r.get("reference_steps_per_s")
        ratio = r.get("ratio")
        lines.append(f"{r['sampler']:<24} {r['data_size']:>8} {r['dim']:>4} {r['chains']:>2} "
                     f"{r['steps_per_s']:>10.1f} {rs if rs is None else f'{rs:.1f}':>12} "
                     f"{'-' if ratio is None else f'{ratio:.2f}':>6}  {r['reference']}")
        for k in ("gflops", "matmul_gflops", "gflops_ratio", "data_gb_per_s", "stream_read_gb_per_s",
                  "bandwidth_ratio", "peak_over_data"):
            if k in r:
                lines.append(f"    {k} = {r[k]:.3g}")
    return "\n".join(lines)
