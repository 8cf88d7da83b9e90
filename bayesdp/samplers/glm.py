"""Batched full-batch gradient for models whose likelihood is a Bernoulli GLM with an affine predictor.

When the only likelihood site of the model is ``Bernoulli(logits=eta)`` (NumPyro's exact class
``BernoulliLogits``: no mask, no wrapper, no ``scale`` handler) over the ``m`` records and its predictor
``eta(theta, data)`` is **affine in the unconstrained position** ``theta``, then

    grad_theta sum_i l_i(theta) = J^T (sigmoid(eta(theta)) - y),    J = d eta / d theta   (m, dim),

which is exactly the derivative the general path differentiates (``potential.bernoulli_logits_log_prob``
has the custom derivative ``y - sigmoid(eta)``, including ``1/2 - y`` at ``eta = 0``).  For K chains
this is two matrix products over the data instead of a ``vmap`` of the per-chain NumPyro gradient,
and the Jacobian can be stored in the layout that is fastest for the shape (chosen by a quick
measurement, :func:`choose_form`).

Affinity is **proved structurally, never assumed**: :func:`affine_in_first_argument` runs the analyzer's
affinity interpreter (:mod:`bayesdp.analysis.structure.affinity`) on the jaxpr of ``eta(theta, data)``
(traced with the model, at the data's shapes): every operation that touches ``theta`` must be linear in
it (sums, multiplication or division by a theta-free operand, a dot product with a theta-free operand,
reshapes, broadcasts, slices and gathers with theta-free indices, selects with a theta-free predicate,
...).  Such a program is affine in ``theta`` for every value of the data, so ``J`` (computed once per
dataset by ``jacfwd`` at ``theta = 0``) and ``c = eta(0)`` give ``eta(theta) = J theta + c`` exactly (up to
float rounding).  Anything else (a transform such as ``exp`` of a positive site, a hierarchical scale
multiplying ``theta``, another observed site, a masked or scaled site) falls back to the general path.

The prior/Jacobian part ``K`` keeps NumPyro's gradient (per chain, traced with the same data as the
general path); only the likelihood part is replaced.  Used by full-batch ULA without clipping on one
device (the clipped and minibatch estimators and sharded runs keep the general path).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

class NotAffine(Exception):
    """The predictor is not (provably) affine in theta."""


def affine_in_first_argument(fn: Callable, theta, *args) -> list[bool]:
    """Prove that every output of ``fn(theta, *args)`` is affine in ``theta`` (for all values of ``args``).

    The proof is the analyzer's affinity interpreter (:mod:`bayesdp.analysis.structure.affinity`) run on
    the traced program.  Returns, per output, whether it depends on theta at all; raises
    :class:`NotAffine` (naming the operation and the line) when an output is not proven affine.
    """
    from ..analysis.structure import Affinity, Run, where
    from ..analysis.structure.affinity import A, C, CONST, OTHER

    closed = jax.make_jaxpr(fn)(theta, *args)
    n_theta = len(jax.tree_util.tree_leaves(theta))
    n_in = len(closed.jaxpr.invars)
    outs = Run(Affinity()).program(closed, [A] * n_theta + [C] * (n_in - n_theta))
    for o in outs:
        if o.kind == OTHER:
            raise NotAffine(f"`{where(o.why)}` is not linear in theta" if o.why is not None else "not affine")
    return [o.kind != CONST for o in outs]


# ---------------------------------------------------------------------------
# detection on a ModelPotential
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BernoulliGLM:
    """The structure found in a model: its single likelihood site and the functions of (theta, data)."""

    site: str
    predictor: Callable       # (theta, data) -> eta (m,)
    response: Callable        # data -> y (m,), the observed values (theta-free)
    prior_part: Callable      # (theta, data) -> log prior + log|det J| (the general path's non-likelihood part)


def detect(potential) -> tuple[BernoulliGLM | None, str]:
    """The Bernoulli GLM structure of ``potential``'s model, or ``(None, reason)``."""
    import numpyro.distributions as dist

    from .potential import _trace

    data = potential.data
    m = potential.data_size
    log_dets = {f"_{s.name}_log_det" for s in potential.sites}
    theta0 = jnp.zeros(potential.dim, jnp.float32 if not jax.config.read("jax_enable_x64") else jnp.float64)
    tr = _trace(potential.model, potential._template, potential.model_kwargs, params=potential._reparam(theta0))
    observed = [n for n, s in tr.items() if s["type"] == "sample" and s["is_observed"] and n not in log_dets]
    if len(observed) != 1:
        return None, f"{len(observed)} likelihood sites (the GLM path needs exactly one)"
    site = observed[0]
    s = tr[site]
    if type(s["fn"]) is not dist.BernoulliLogits:
        return None, f"likelihood site '{site}' is {type(s['fn']).__name__}, not BernoulliLogits"
    if s.get("scale") is not None:
        return None, f"likelihood site '{site}' is scaled"
    if tuple(s["fn"].event_shape) != ():
        return None, f"likelihood site '{site}' has event shape {s['fn'].event_shape}"

    def _site(theta, d):
        return _trace(potential.model, d, potential.model_kwargs, params=potential._reparam(theta))[site]

    def predictor(theta, d):
        fn = _site(theta, d)["fn"]
        return jnp.broadcast_to(fn.logits, fn.batch_shape)

    def response(d):
        site_ = _trace(potential.model, d, potential.model_kwargs, params=potential._reparam(
            jnp.zeros(potential.dim, theta0.dtype)))[site]
        return jnp.broadcast_to(jnp.asarray(site_["value"], site_["fn"].logits.dtype), site_["fn"].batch_shape)

    def prior_part(theta, d):
        return potential._log_parts(theta, d)[0]

    try:
        eta_shape = jax.eval_shape(predictor, theta0, data)
        if tuple(eta_shape.shape) != (m,):
            return None, f"predictor of '{site}' has shape {eta_shape.shape}, not one value per record ({m},)"
        dep_eta, dep_y = affine_in_first_argument(lambda th, d: (predictor(th, d), response(d)), theta0, data)
    except NotAffine as exc:
        return None, f"predictor of '{site}' is not provably affine in theta: {exc}"
    except Exception as exc:  # noqa: BLE001
        return None, f"predictor of '{site}' could not be analysed ({type(exc).__name__}: {exc})"
    if dep_y:
        return None, f"the observed value of '{site}' depends on theta"
    return BernoulliGLM(site, predictor, response, prior_part), "Bernoulli GLM with a predictor affine in theta"


# ---------------------------------------------------------------------------
# the arrays (once per dataset) and the gradient layouts
# ---------------------------------------------------------------------------


_ARRAYS_JIT: dict[Any, Callable] = {}


def arrays(glm: BernoulliGLM, data, dim: int, dtype, with_rows: bool, cache_key=None) -> dict[str, jax.Array]:
    """``JT`` (dim, m) feature-major Jacobian, ``c = eta(0)``, ``y``; and ``J`` (m, dim) if ``with_rows``.

    Computed once per sampler (the data are an argument of the compiled function, cached under
    ``cache_key`` -- the model and the data shapes -- so a new dataset does not recompile it)."""
    full_key = None if cache_key is None else (cache_key, dim, str(jnp.dtype(dtype)), with_rows)
    if full_key is not None and full_key in _ARRAYS_JIT:
        return jax.block_until_ready(_ARRAYS_JIT[full_key](data))
    theta0 = jnp.zeros(dim, dtype)

    def make(d):
        # (m, dim): eta is affine, so this is its Jacobian everywhere; computed at HIGHEST precision (a
        # TF32 product with the identity would round the features themselves on a GPU)
        with jax.default_matmul_precision("highest"):
            J = jax.jacfwd(glm.predictor)(theta0, d)
        out = {"JT": jnp.transpose(J).astype(dtype), "c": glm.predictor(theta0, d).astype(dtype),
               "y": glm.response(d).astype(dtype)}
        if with_rows:
            out["J"] = J.astype(dtype)
        return out

    f = jax.jit(make)
    if full_key is not None:
        _ARRAYS_JIT[full_key] = f
    return jax.block_until_ready(f(data))


#: every product of the GLM path runs at full float32 precision on every backend (no TF32 on GPUs):
#: the path must equal the general one (NumPyro's gradient, also traced at HIGHEST, potential.py)
HIGHEST = jax.lax.Precision.HIGHEST


def _mm(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


def _lik_grad_single(form):
    sig = jax.nn.sigmoid
    if form == "JT":
        return lambda th, a: _mm(a["JT"], sig(_mm(th, a["JT"]) + a["c"]) - a["y"])
    if form == "J":
        return lambda th, a: _mm(sig(_mm(a["J"], th) + a["c"]) - a["y"], a["J"])
    if form == "J_JT":
        return lambda th, a: _mm(a["JT"], sig(_mm(a["J"], th) + a["c"]) - a["y"])
    raise ValueError(form)


def _lik_grad_chains(form):
    """(K, dim) positions -> (K, dim) likelihood gradients."""
    sig = jax.nn.sigmoid
    if form == "JT":  # chain-major: (K, m) residuals, both products against the feature-major JT
        return lambda th, a: jnp.einsum("km,dm->kd", sig(_mm(th, a["JT"]) + a["c"]) - a["y"], a["JT"],
                                        precision=HIGHEST)
    if form == "JT_J":
        return lambda th, a: _mm(sig(_mm(th, a["JT"]) + a["c"]) - a["y"], a["J"])
    if form == "J_JT":  # feature-major: (m, K) residuals, X Theta then X^T R
        def j_jt(th, a):
            g = _mm(a["JT"], sig(_mm(a["J"], th.T) + a["c"][:, None]) - a["y"][:, None])  # (dim, K)
            # the barrier keeps X^T R a plain (dim, m) x (m, K) product: without it XLA folds the
            # transpose into the dot (R^T X, contracting dimension 0 of R), which XLA:CPU leaves to
            # its slower generic dot instead of the YNNPACK fusion (measured 88 vs 131 steps/s)
            return jnp.transpose(jax.lax.optimization_barrier(g))
        return j_jt
    if form == "J":
        return lambda th, a: _mm(sig(_mm(th, a["J"].T) + a["c"]) - a["y"], a["J"])
    raise ValueError(form)


def likelihood_gradient(form: str, num_chains: int) -> Callable:
    """``(theta, arrays) -> sum_i grad l_i(theta)``; theta of shape (dim,) or (num_chains, dim)."""
    return _lik_grad_single(form) if num_chains == 1 else _lik_grad_chains(form)


FORMS_SINGLE = ("JT", "J", "J_JT")
FORMS_CHAINS = ("JT", "JT_J", "J_JT", "J")
NEEDS_ROWS = {"J", "J_JT", "JT_J"}

#: measured layout per (m, dim, chains, dtype): the measurement runs once per process and shape
_CHOICE: dict[Any, str] = {}


def choose_form(m: int, dim: int, num_chains: int, dtype, steps: int = 64, repeats: int = 7) -> str:
    """The fastest layout for this shape, by a quick measurement on random data of the same shape
    (a ``lax.scan`` of up to ``steps`` gradient evaluations per layout, about 10 ms each; the minimum of
    ``repeats`` interleaved timings, the statistic least affected by other load on the machine).
    The choice only affects speed: every layout computes the same J^T (sigmoid(J theta + c) - y)."""
    key = (m, dim, num_chains, str(jnp.dtype(dtype)))
    if key in _CHOICE:
        return _CHOICE[key]
    forms = FORMS_SINGLE if num_chains == 1 else FORMS_CHAINS
    rng = np.random.default_rng(0)
    J = (rng.standard_normal((m, dim)) / np.sqrt(dim)).astype(dtype)
    a = {"J": jnp.asarray(J), "JT": jnp.asarray(np.ascontiguousarray(J.T)),
         "c": jnp.zeros(m, dtype), "y": jnp.asarray((rng.uniform(size=m) < 0.5).astype(dtype))}
    shape = (dim,) if num_chains == 1 else (num_chains, dim)
    # scale the step count so that one measurement is short at every size
    steps = max(2, min(steps, int(1e7 / max(1, m * dim * max(1, num_chains // 4)))))
    fns = []
    for form in forms:
        g = likelihood_gradient(form, num_chains)

        def run(x0, a, g=g):
            return jax.lax.scan(lambda x, _: (x - 1e-4 * g(x, a), None), x0, None, length=steps)[0]

        f = jax.jit(run)
        x0 = jnp.zeros(shape, dtype)
        jax.block_until_ready(f(x0, a))
        fns.append(lambda f=f, x0=x0: jax.block_until_ready(f(x0, a)))
    ts = [[] for _ in fns]
    for _ in range(repeats):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            f()
            ts[i].append(time.perf_counter() - t)
    best = forms[int(np.argmin([min(t) for t in ts]))]
    _CHOICE[key] = best
    return best


def build_gradient(structure: BernoulliGLM, form: str, num_chains: int) -> Callable:
    """``grad_fn(theta, data, arrays) -> grad U_D(theta)`` for all chains at once (theta (dim,) or (K, dim)):
    NumPyro's gradient of the prior/Jacobian part ``K`` (per chain) plus J^T (sigmoid(J theta + c) - y)."""
    lik = likelihood_gradient(form, num_chains)
    grad_k = jax.grad(lambda th, d: -structure.prior_part(th, d))
    if num_chains > 1:
        grad_k = jax.vmap(grad_k, in_axes=(0, None))

    def grad_fn(theta, data, a):
        return grad_k(theta, data) + lik(theta, a)

    return grad_fn
