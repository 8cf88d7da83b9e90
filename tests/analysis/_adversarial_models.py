"""Adversarial corpus for the model analyzer (issue #12): NumPyro models that look honest to a probe-based
check (a few fixed thetas, a handful of probe records, tolerance 1e-4) but break one assumption.

Each :class:`Case` carries the model, a public domain, in-domain data, the site that a refusal must name, the
JAX primitives (as ``jax.make_jaxpr`` prints them) of which a refusal caused by an operation must name one, and
either ``refuse_only=True`` (no certificate is sound: a constant is unbounded, records are coupled, the prior
depends on the data, or the samplers' drift is not the gradient of U) or a :class:`Truth` derived by hand
(comments at each case).  :class:`Witness` entries are points where the hand-derived values are attained or
approached (or where unboundedness / coupling / a hidden gradient shows); tests/analysis/test_adversarial.py
evaluates them in float64 so that every number used against the analyzer is checked independently of it.

Notation: ``z = x . w``; Bernoulli with logits eta: ``l = softplus(eta) - y eta``, ``dl/deta = sigmoid(eta) - y``;
for a GLM with features ``phi(x)`` and ``eta = phi(x) . w`` (affine in theta),
``grad l = (sigmoid(eta) - y) phi(x)``, so sup |grad l| = sup |phi| and, since eta and eta' of two records with
independent features can be driven to +inf and -inf separately, sup |grad l(x) - grad l(x')| = 2 sup |phi|
(approached with phi' -> phi, y = 0, y' = 1); the Hessian is sigmoid'(eta) phi phi^T with sup R_phi^2 / 4;
such a likelihood is convex in theta and U = |w|^2/2 + V has total strong convexity exactly 1 (the infimum of
sigmoid' is 0).  Student-t(nu, loc, s) in loc: ``psi = -(nu+1) r/(nu s^2 + r^2)``, ``r = y - loc``,
sup |psi| = (nu+1)/(2 s sqrt(nu)) (r^2 = nu s^2), d psi/d loc in [-(nu+1)/(8 nu s^2), (nu+1)/(nu s^2)].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro import handlers
from numpyro.infer.reparam import LocScaleReparam

M = 8              # records in every dataset (except the record-count case)
D = 2              # features
R = 1.5            # norm radius of the generic norm-ball domain
NORM = (f"X.norm={R}", "y.values=0,1")
BOX = ("X.min=-1", "X.max=1", "y.values=0,1")
FACTOR = jnp.array([1.0, 2.54, 0.5])

# float64 for a block: ``jax.enable_x64`` in newer JAX, ``jax.experimental.enable_x64`` in 0.7.0
# (bayesdp supports JAX 0.7.0; the experimental one is gone from later versions)
if hasattr(jax, "enable_x64"):
    enable_x64 = jax.enable_x64
else:
    from jax.experimental import enable_x64


def sigmoid(t: float) -> float:
    return 1.0 / (1.0 + math.exp(-t))


# ---------------------------------------------------------------------------
# data inside the declared domains


def _ball(m, d, radius, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True) * radius * rng.uniform(0.1, 0.99, (m, 1))


def _box(m, d, seed, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, (m, d))


Y01 = (np.arange(M) % 2).astype(np.float64)
DATA_NORM = {"X": _ball(M, D, R, 1), "y": Y01}
DATA_NORM1 = {"X": _ball(M, D, 1.0, 2), "y": Y01}
DATA_BOX = {"X": _box(M, D, 3), "y": Y01}
Y_REAL = np.random.default_rng(4).standard_normal(M) * 3.0


# ---------------------------------------------------------------------------
# shared model pieces (written the way a user would)


def _w(d=D, name="w", scale=1.0):
    return numpyro.sample(name, dist.Normal(0.0, scale).expand([d]).to_event(1))


def _bernoulli(logits, y, name="obs"):
    with numpyro.plate("data", logits.shape[0]):
        numpyro.sample(name, dist.Bernoulli(logits=logits), obs=y)


def _student(loc, y, df=4.0, scale=1.0):
    with numpyro.plate("data", loc.shape[0]):
        numpyro.sample("obs", dist.StudentT(df, loc, scale), obs=y)


# ---------------------------------------------------------------------------
# the case record


@dataclass(frozen=True)
class Truth:
    """Hand-derived sups (or, with ``exact=False``, lower bounds of them, witnessed) of the per-record
    quantities, and the structural facts that must not be claimed where they are false.

    ``record_smoothness`` None: the per-record gradient is not Lipschitz in theta (no finite claim is true).
    ``total_strong_convexity`` None: U is not strongly convex for some dataset in the domain (claim must be
    None); a number: the true infimum of lambda_min(Hess U) (a claim must not exceed it).
    ``extra``: more lower bounds, constant name -> value (a claim, where made, must be at least that)."""

    record_grad_bound: float
    record_grad_diff: float
    record_smoothness: float | None
    v_convex: bool
    total_strong_convexity: float | None
    exact: bool = True
    strong_convexity: float = 1.0   # K = |w|^2/2 (Normal(0, 1) prior): mu = L = 1
    smoothness: float = 1.0
    data_size: int = M
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Witness:
    """``bound``: |grad l(params, rec)| approaches truth.record_grad_bound; ``diff``: |grad l(rec) - grad l(rec')|
    approaches truth.record_grad_diff; ``grows``: |grad l| >= value (unbounded gradient); ``hidden``: the true
    gradient (finite differences) differs from JAX's by >= value; ``coupled``: changing record ``index`` of
    ``data`` to ``recs[0]`` changes the log-likelihood term of another record; ``prior``: the same change moves
    the prior log-density at ``params``; ``random``: the log-likelihood terms at ``params`` on ``data`` change
    with the seed of the random numbers drawn inside the model.  ``fd``: use central finite differences with step ``h`` (true
    gradient) instead of JAX's derivative rules.  ``copies``: the record is repeated (models reading the number
    of records) and the per-record gradient is the total over the copies divided by their number."""

    kind: str
    params: dict
    recs: tuple = ()
    value: float | None = None
    fd: bool = False
    h: float = 1e-6
    copies: int = 1
    data: dict | None = None
    index: int = 0


@dataclass(frozen=True)
class Case:
    id: str
    klass: str
    model: Callable
    domain: tuple
    data: dict
    sites: tuple                     # a refusal must name one of these sites, in single quotes
    prims: tuple | None              # ... and, where an operation defeats the proof, one of these primitives
    refuse_only: bool = False
    truth: Truth | None = None
    witnesses: tuple = ()
    kwargs: dict = field(default_factory=dict)
    why: str = ""


def rec(x, y, **more) -> dict:
    return {"X": np.asarray(x, np.float64), "y": np.asarray(y, np.float64), **more}


def theta_for(feats, etas) -> np.ndarray:
    """Least-norm theta with feats[i] . theta = etas[i] (feature vectors linearly independent)."""
    F = np.asarray(feats, np.float64)
    return np.linalg.lstsq(F, np.asarray(etas, np.float64), rcond=None)[0]


def rot(phi, r=1.0):
    return np.array([math.cos(phi), math.sin(phi)]) * r


def e(i, r=1.0, d=D):
    v = np.zeros(d)
    v[i] = r
    return v


PHI = 1e-3   # angle between the two records of a gradient-difference witness


def glm_witnesses(feature, x, x2, sat=40.0, y=(0.0, 1.0), eta=None, more=None, name="w") -> tuple:
    """Bound and diff witnesses of a Bernoulli GLM with features ``feature(x)``: eta = +sat at x (y = 0, score
    -> 1) and eta' = -sat at x2 (y' = 1, score -> -1), x2 close to x with independent features."""
    more = more or {}
    f1, f2 = feature(x), feature(x2)
    t = theta_for([f1, f2], [sat, -sat] if eta is None else eta)
    p = {name: t}
    return (Witness("bound", p, (rec(x, y[0], **more),)),
            Witness("diff", p, (rec(x, y[0], **more), rec(x2, y[1], **more))))


# ---------------------------------------------------------------------------
# per-record log-likelihood of a model (float64 under jax.enable_x64 in the tests)


def record_loss(model, kwargs, params, record, copies=1):
    """-sum of the observed sites' log-densities of ``model`` on ``copies`` copies of one record, / copies."""
    data = {k: jnp.repeat(jnp.asarray(v)[None], copies, axis=0) for k, v in record.items()}
    tr = handlers.trace(handlers.substitute(handlers.seed(model, 0), data=params)).get_trace(**data, **kwargs)
    tot = 0.0
    for s in tr.values():
        if s["type"] == "sample" and s["is_observed"]:
            tot = tot - jnp.sum(s["fn"].log_prob(s["value"]))
    return tot / copies


def record_terms(model, kwargs, params, data, seed=0):
    """Per-record log-likelihood terms (records on axis 0) of every observed site, summed over sites (``seed``: of
    the random numbers the model draws, if any)."""
    tr = handlers.trace(handlers.substitute(handlers.seed(model, seed), data=params)).get_trace(**data, **kwargs)
    out = 0.0
    for s in tr.values():
        if s["type"] == "sample" and s["is_observed"]:
            lp = s["fn"].log_prob(s["value"])
            out = out + lp.reshape(lp.shape[0], -1).sum(axis=1)
    return np.asarray(out)


def prior_logdensity(model, kwargs, params, data):
    tr = handlers.trace(handlers.substitute(handlers.seed(model, 0), data=params)).get_trace(**data, **kwargs)
    return float(sum(jnp.sum(s["fn"].log_prob(s["value"])) for s in tr.values()
                     if s["type"] == "sample" and not s["is_observed"]))


def flat_grad(model, kwargs, params, record, fd=False, h=1e-6, copies=1) -> np.ndarray:
    """Gradient in the latent values of the per-record loss: JAX autodiff, or central finite differences
    (the derivative of the function itself, blind to custom_jvp rules and stop_gradient)."""
    names = sorted(params)
    sizes = [int(np.size(params[n])) for n in names]
    shapes = [np.shape(params[n]) for n in names]
    flat = np.concatenate([np.ravel(np.asarray(params[n], np.float64)) for n in names])

    def unflat(v):
        out, o = {}, 0
        for n, s, sh in zip(names, sizes, shapes):
            out[n] = jnp.reshape(v[o:o + s], sh)
            o += s
        return out

    def f(v):
        return record_loss(model, kwargs, unflat(v), record, copies)

    if not fd:
        return np.asarray(jax.grad(f)(jnp.asarray(flat)))
    g = np.zeros_like(flat)
    for i in range(flat.size):
        step = h * max(1.0, abs(flat[i]))
        up, dn = flat.copy(), flat.copy()
        up[i] += step
        dn[i] -= step
        g[i] = (float(f(jnp.asarray(up))) - float(f(jnp.asarray(dn)))) / (up[i] - dn[i])
    return g


# ===========================================================================
# A. prior parameters depending on a data argument.  The prior must be data-independent: U_D - U_D' would
#    otherwise contain the prior's change, which no record constant bounds (the issue measured delta(eps=28) = 1
#    for a certified eps ~ 1).  Only refusal is sound; the refusal names the latent site.


def prior_loc_mean(X, y=None):
    w = numpyro.sample("w", dist.Normal(jnp.mean(X), 1.0).expand([X.shape[1]]).to_event(1))
    _bernoulli(X @ w, y)


def prior_scale_max(X, y=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0 + jnp.max(jnp.abs(X))).expand([X.shape[1]]).to_event(1))
    _bernoulli(X @ w, y)


def prior_loc_first_record(X, y=None):
    # a single record sets the prior mean (record 0 of any synthetic dataset is often the zero vector)
    w = numpyro.sample("w", dist.Normal(X[0], 1.0).to_event(1))
    _bernoulli(X @ w, y)


def prior_loc_first_response(X, y=None):
    w = numpyro.sample("w", dist.Normal(0.5 * y[0], 1.0).expand([X.shape[1]]).to_event(1))
    _bernoulli(X @ w, y)


def prior_loc_product(X, y=None):
    # prod over records of the first feature: 0 whenever one record has x_0 = 0 (every probe set), not in general
    w = numpyro.sample("w", dist.Normal(jnp.prod(X[:, 0]), 1.0).expand([X.shape[1]]).to_event(1))
    _bernoulli(X @ w, y)


def prior_via_deterministic(X, y=None):
    mu = numpyro.deterministic("mu", 2.0 * X[0, 1])
    w = numpyro.sample("w", dist.Normal(mu, 1.0).expand([X.shape[1]]).to_event(1))
    _bernoulli(X @ w, y)


def prior_zero_times_data(X, y=None):
    # X[0, 0] * 0: the prior does not depend on the data's values (only syntactically): refusal or the
    # logistic constants (R, 2R, R^2/4, convex, total strong convexity 1) are both sound
    w = numpyro.sample("w", dist.Normal(X[0, 0] * 0.0, 1.0).expand([X.shape[1]]).to_event(1))
    _bernoulli(X @ w, y)


def _prior_witness(x_new, index=0, data=DATA_NORM):
    return (Witness("prior", {"w": np.array([0.3, -0.2])}, (rec(x_new, data["y"][index]),), data=data,
                    index=index),)


_PRIOR_CASES = [
    Case("prior-loc-mean", "data-dependent prior", prior_loc_mean, NORM, DATA_NORM, ("w",), None, True,
         witnesses=_prior_witness(e(0, 1.0))),
    Case("prior-scale-max", "data-dependent prior", prior_scale_max, NORM, DATA_NORM, ("w",), None, True,
         witnesses=_prior_witness(e(0, R))),
    Case("prior-loc-first-record", "data-dependent prior", prior_loc_first_record, NORM, DATA_NORM, ("w",), None,
         True, witnesses=_prior_witness(e(1, 1.0))),
    Case("prior-loc-first-response", "data-dependent prior", prior_loc_first_response, NORM, DATA_NORM, ("w",),
         None, True, witnesses=(Witness("prior", {"w": np.array([0.3, -0.2])}, (rec(DATA_NORM["X"][0], 1.0),),
                                        data=DATA_NORM, index=0),)),
    Case("prior-loc-product-over-records", "data-dependent prior", prior_loc_product, NORM, DATA_NORM, ("w",),
         None, True, witnesses=_prior_witness(np.array([1.2, 0.1]))),
    Case("prior-zero-times-data", "data-dependent prior (value-free)", prior_zero_times_data, NORM, DATA_NORM,
         ("w",), None, truth=Truth(R, 2 * R, R * R / 4, True, 1.0),
         witnesses=glm_witnesses(lambda x: x, e(0, R), rot(PHI, R))),
    Case("prior-loc-via-deterministic", "data-dependent prior (deterministic site)", prior_via_deterministic,
         NORM, DATA_NORM, ("w", "mu"), None, True, witnesses=_prior_witness(e(1, 1.0))),
]


# ===========================================================================
# B. kinks in theta.  Bernoulli, X.norm = R.


def relu_logits(X, y=None):
    w = _w()
    _bernoulli(jax.nn.relu(X @ w), y)


def relu_in_deterministic(X, y=None):
    w = _w()
    eta = numpyro.deterministic("eta", jax.nn.relu(X @ w))
    _bernoulli(eta, y)


def abs_logits(X, y=None):
    w = _w()
    _bernoulli(jnp.abs(X @ w), y)


def abs_logits_reparam(X, y=None):
    with handlers.reparam(config={"w": LocScaleReparam(0)}):
        w = _w()
    _bernoulli(jnp.abs(X @ w), y)


def leaky_where(X, y=None):
    w = _w()
    z = X @ w
    _bernoulli(jnp.where(z > 0, z, 0.5 * z), y)


def clipped_logits(X, y=None):
    w = _w()
    _bernoulli(jnp.clip(X @ w, -5.0, 5.0), y)


def maximum_floor(X, y=None):
    w = _w()
    _bernoulli(jnp.maximum(X @ w, -1.0), y)


def sign_jump(X, y=None):
    w = _w()
    z = X @ w
    _bernoulli(z + 0.5 * jnp.sign(z), y)


def tanh_logits(X, y=None):
    w = _w()
    _bernoulli(3.0 * jnp.tanh(X @ w), y)


# relu(z): grad = (sigmoid(relu z) - y) 1[z > 0] x.  The score c = sigmoid(eta) - y lies in (1/2, 1) for y = 0 and
# (-1/2, 0) for y = 1 where z > 0, and the gradient is 0 where z < 0: sup |grad| = R (z -> inf, y = 0);
# sup |grad(x) - grad(x')| = (1 + 1/2) R (z -> inf with y = 0 at x, z' -> 0+ with y' = 1 at x' -> x).
# The gradient jumps at z = 0 (from 0 to (1/2 - y) x): not Lipschitz.  y = 1: softplus(-relu z) has a concave
# kink at 0 (slope 0 then -1/2): V is not convex and U is not strongly convex.
def _relu_truth():
    return Truth(R, 1.5 * R, None, False, None)


def _relu_witnesses(name="w"):
    x, x2 = e(0, R), rot(PHI, R)
    t = theta_for([x, x2], [40.0, 1e-4])
    p = {name: t}
    return (Witness("bound", p, (rec(x, 0.0),)), Witness("diff", p, (rec(x, 0.0), rec(x2, 1.0))))


# |z|: grad = (sigmoid(|z|) - y) sign(z) x, |.| <= R (z -> inf, y = 0); two records with z -> +inf and z' -> -inf,
# both y = 0: grad - grad' -> x + x', sup 2R.  Kink at z = 0; y = 1: softplus(-|z|) concave: V not convex.
def _abs_truth():
    return Truth(R, 2 * R, None, False, None)


def _abs_witnesses(name="w"):
    x, x2 = e(0, R), rot(PHI, R)
    p = {name: theta_for([x, x2], [40.0, -40.0])}
    return (Witness("bound", p, (rec(x, 0.0),)), Witness("diff", p, (rec(x, 0.0), rec(x2, 0.0))))


# leaky where(z > 0, z, z/2): grad = (sigmoid(eta) - y) s x, s in {1, 1/2}; the score times s ranges over
# (-1/2, 1): sup R, diff (1 + 1/2) R (z -> inf, y = 0; z' -> -inf, y' = 1 gives -x'/2).  Kink at 0 (slopes 1/2, 1);
# y = 1: softplus(-leaky z) has a concave kink.
_leaky_x, _leaky_x2 = e(0, R), rot(PHI, R)
_leaky_p = {"w": theta_for([_leaky_x, _leaky_x2], [40.0, -40.0])}

# clip(z, -5, 5): grad = (sigmoid(eta) - y) 1[|z| < 5] x, |sigmoid(eta) - y| < sigmoid(5): sup sigmoid(5) R;
# diff: z -> 5- with y = 0 and z' -> -5+ with y' = 1: sigmoid(5) (x + x') -> 2 sigmoid(5) R.  The gradient jumps
# at |z| = 5; y = 0: the slope drops from sigmoid(5) to 0 at z = 5 (concave kink).
S5 = sigmoid(5.0)
_clip_x, _clip_x2 = e(0, R), rot(PHI, R)
_clip_p = {"w": theta_for([_clip_x, _clip_x2], [5.0 - 1e-7, -5.0 + 1e-7])}

# maximum(z, -1): gradient (sigmoid(eta) - y) 1[z > -1] x; score in (sigmoid(-1) - 1, 1) = (-sigmoid(1), 1) where
# z > -1: sup R; diff (1 + sigmoid(1)) R (z -> inf, y = 0; z' -> -1+, y' = 1).  Concave kink for y = 1.
S1 = sigmoid(1.0)
_max_p = {"w": theta_for([e(0, R), rot(PHI, R)], [40.0, -1.0 + 1e-7])}


# 3 tanh(z): dl/dz = (sigmoid(3 tanh z) - y) 3 sech^2 z; y = 1 is y = 0 mirrored (z -> -z), so
# sup |grad| = R max_t 3 (1 - t^2) sigmoid(3 t) (t = tanh z in (-1, 1)) and diff = 2 x that (z* at x, -z* at x').
# Smooth: sup |d2l/dz2| R^2; not convex (d2l/dz2 < 0 somewhere), true total strong convexity 1 + M R^2 min d2l/dz2.
def _tanh_consts():
    t = np.linspace(-1 + 1e-9, 1 - 1e-9, 2_000_001)
    u = 3 * t
    sg = 1 / (1 + np.exp(-u))
    g0 = 3 * (1 - t * t) * sg
    i = int(np.argmax(g0))
    sech2 = 1 - t * t
    d2 = [sg * (1 - sg) * 9 * sech2 ** 2 + (sg - y) * 3 * (-2 * sech2 * t) for y in (0.0, 1.0)]
    hmax = max(float(np.max(np.abs(d))) for d in d2)
    hmin = min(float(np.min(d)) for d in d2)
    return float(g0[i]), float(np.arctanh(t[i])), hmax, hmin


TANH_G, TANH_Z, TANH_H, TANH_HMIN = _tanh_consts()
_tanh_p = {"w": theta_for([e(0, R), rot(PHI, R)], [TANH_Z, -TANH_Z])}

_KINK_CASES = [
    Case("relu-logits", "kink in theta", relu_logits, NORM, DATA_NORM, ("obs",), ("max", "custom_jvp_call"),
         truth=_relu_truth(), witnesses=_relu_witnesses()),
    Case("relu-in-deterministic", "kink in theta (deterministic site)", relu_in_deterministic, NORM, DATA_NORM,
         ("obs", "eta"), ("max", "custom_jvp_call"), truth=_relu_truth(), witnesses=_relu_witnesses()),
    Case("abs-logits", "kink in theta", abs_logits, NORM, DATA_NORM, ("obs",), ("abs",), truth=_abs_truth(),
         witnesses=_abs_witnesses()),
    Case("abs-logits-reparam", "kink in theta (LocScaleReparam prior)", abs_logits_reparam, NORM, DATA_NORM,
         ("obs",), ("abs",), truth=_abs_truth(), witnesses=_abs_witnesses("w_decentered")),
    Case("where-leaky", "kink in theta", leaky_where, NORM, DATA_NORM, ("obs",), ("select_n", "gt"),
         truth=Truth(R, 1.5 * R, None, False, None),
         witnesses=(Witness("bound", _leaky_p, (rec(_leaky_x, 0.0),)),
                    Witness("diff", _leaky_p, (rec(_leaky_x, 0.0), rec(_leaky_x2, 1.0))))),
    Case("clipped-logits", "clipped logits", clipped_logits, NORM, DATA_NORM, ("obs",), ("max", "min", "clamp"),
         truth=Truth(S5 * R, 2 * S5 * R, None, False, None),
         witnesses=(Witness("bound", _clip_p, (rec(_clip_x, 0.0),)),
                    Witness("diff", _clip_p, (rec(_clip_x, 0.0), rec(_clip_x2, 1.0))))),
    Case("maximum-floor", "kink in theta", maximum_floor, NORM, DATA_NORM, ("obs",), ("max",),
         truth=Truth(R, (1 + S1) * R, None, False, None),
         witnesses=(Witness("bound", {"w": e(0, 40.0 / R)}, (rec(e(0, R), 0.0),)),
                    Witness("diff", _max_p, (rec(e(0, R), 0.0), rec(rot(PHI, R), 1.0))))),
    # z + sign(z)/2 jumps by 1 across z = 0: l is discontinuous in theta, its Lipschitz constant is infinite
    # (JAX's a.e. derivative of sign is 0 and hides it).  Only refusal is sound.
    Case("sign-jump", "discontinuous in theta", sign_jump, NORM, DATA_NORM, ("obs",), ("sign",), True,
         witnesses=(Witness("grows", {"w": np.zeros(D)}, (rec(e(0, R), 0.0),), value=1e4, fd=True, h=1e-7),)),
    Case("tanh-logits", "smooth non-convex in theta", tanh_logits, NORM, DATA_NORM, ("obs",), ("tanh",),
         truth=Truth(TANH_G * R, 2 * TANH_G * R, TANH_H * R * R, False,
                     None if 1 + M * R * R * TANH_HMIN <= 0 else 1 + M * R * R * TANH_HMIN),
         witnesses=(Witness("bound", _tanh_p, (rec(e(0, R), 0.0),)),
                    Witness("diff", _tanh_p, (rec(e(0, R), 0.0), rec(rot(PHI, R), 1.0))))),
]


# ===========================================================================
# C. small higher-order terms in theta: the gradient is unbounded, only refusal is sound.


def cubic_tiny(X, y=None):
    w = _w()
    _bernoulli(X @ w + 1e-6 * jnp.sum(w ** 3), y)


def pow_float_tiny(X, y=None):
    w = _w()
    _bernoulli(X @ w + 1e-6 * jnp.abs(w[0]) ** 3.0, y)


def exp_tiny(X, y=None):
    w = _w()
    _bernoulli(X @ w + 1e-8 * jnp.exp(w[0]), y)


def student_quadratic_tiny(X, y=None):
    w = _w()
    _student(X @ w + 1e-6 * jnp.sum(w * w), y)


def bilinear(X, y=None):
    w = _w()
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    _bernoulli((X @ w) * b, y)


_HIGHER_CASES = [
    # x = 0, y = 0, w = (1e4, 0): eta = 1e6, d/dw0 = sigmoid(eta) 3e-6 w0^2 = 300
    Case("cubic-tiny", "tiny higher-order term", cubic_tiny, NORM, DATA_NORM, ("obs",), ("integer_pow",), True,
         witnesses=(Witness("grows", {"w": np.array([1e4, 0.0])}, (rec(np.zeros(D), 0.0),), value=100.0),)),
    Case("pow-float-tiny", "tiny higher-order term", pow_float_tiny, NORM, DATA_NORM, ("obs",),
         ("pow", "integer_pow", "abs"), True,
         witnesses=(Witness("grows", {"w": np.array([1e4, 0.0])}, (rec(np.zeros(D), 0.0),), value=100.0),)),
    # x = 0, y = 0, w0 = 30: d/dw0 = 1e-8 e^30 ~ 1.07e5
    Case("exp-tiny", "tiny higher-order term", exp_tiny, NORM, DATA_NORM, ("obs",), ("exp",), True,
         witnesses=(Witness("grows", {"w": np.array([30.0, 0.0])}, (rec(np.zeros(D), 0.0),), value=1e4),)),
    # Student-t: x = 0, w = (1e8, 0), loc = 1e10, r = y - loc = 2: |psi| = 1.25, d loc/d w0 = 2e-6 w0 = 200: 250
    Case("student-quadratic-tiny", "tiny higher-order term", student_quadratic_tiny, (f"X.norm={R}",),
         {"X": DATA_NORM["X"], "y": Y_REAL}, ("obs",), ("mul", "integer_pow", "dot_general", "reduce_sum"), True,
         witnesses=(Witness("grows", {"w": np.array([1e8, 0.0])}, (rec(np.zeros(D), 1e10 + 2.0),), value=100.0),)),
    # d/db = (sigmoid(eta) - y) z: x = R e0, w = (100, 0), b = 1, y = 0: 150
    Case("bilinear-latents", "product of latents", bilinear, NORM, DATA_NORM, ("obs",), ("mul",), True,
         witnesses=(Witness("grows", {"w": np.array([100.0, 0.0]), "b": np.asarray(1.0)}, (rec(e(0, R), 0.0),),
                            value=100.0),)),
]


# ===========================================================================
# D. feature maps not affine over the domain (affine in theta: a GLM, see the module docstring).


def square_features(X, y=None):
    w = _w()
    _bernoulli((X * X) @ w, y)


def square_pow_features(X, y=None):
    w = _w()
    _bernoulli((X ** 2) @ w, y)


def poly_features(X, y=None):
    w = _w(3 * D)
    _bernoulli(jnp.concatenate([X, X ** 2, X ** 3], axis=1) @ w, y)


def sin_features(X, y=None):
    w = _w()
    _bernoulli(jnp.sin(3.0 * X) @ w, y)


def inverse_norm_features(X, y=None):
    w = _w()
    _bernoulli((X / (jnp.sum(X * X, axis=1, keepdims=True) + 0.01)) @ w, y)


def normalized_features(X, y=None):
    w = _w()
    _bernoulli((X / jnp.sqrt(jnp.sum(X * X, axis=1, keepdims=True) + 1e-12)) @ w, y)


BUMP_C = np.array([0.3, 0.4])


def bump_features(X, y=None):
    # x times a narrow bump at c = (0.3, 0.4) (height 21, radius 0.1): 1 away from c
    w = _w()
    dist_c = jnp.sqrt(jnp.sum((X - BUMP_C) ** 2, axis=1, keepdims=True))
    _bernoulli((X * (1.0 + 200.0 * jax.nn.relu(0.1 - dist_c))) @ w, y)


def _glm_truth(sup_phi, exact=True):
    return Truth(sup_phi, 2 * sup_phi, sup_phi ** 2 / 4, True, 1.0, exact=exact)


_A = 1.0 - 1e-4
_SQ_X, _SQ_X2 = np.array([1.0, math.sqrt(_A)]), np.array([math.sqrt(_A), 1.0])
_P_X, _P_X2 = np.ones(D), np.array([1.0, 1.0 - 1e-4])
_S_X, _S_X2 = np.full(D, math.pi / 6), np.array([math.pi / 6, math.pi / 6 - 1e-4])
R2 = 2.0   # norm radius for x * x on a ball: sup |x o x| = sup sqrt(sum x_i^4) = R^2 (at R e_0), here 4 > R

_FEATURE_CASES = [
    # box [-1, 1]^2: x o x in [0, 1]^2, sup |x o x| = sqrt(2) at the corners
    Case("square-features-box", "feature map non-affine over the domain", square_features, BOX, DATA_BOX,
         ("obs",), ("mul",), truth=_glm_truth(math.sqrt(D)),
         witnesses=glm_witnesses(lambda x: x * x, _SQ_X, _SQ_X2)),
    Case("square-features-ball", "feature map non-affine over the domain", square_pow_features,
         (f"X.norm={R2}", "y.values=0,1"), {"X": _ball(M, D, R2, 5), "y": Y01}, ("obs",), ("integer_pow",),
         truth=_glm_truth(R2 * R2), witnesses=glm_witnesses(lambda x: x ** 2, e(0, R2), rot(PHI, R2))),
    # [x, x^2, x^3] on the box: |phi|^2 = sum x_i^2 + x_i^4 + x_i^6 <= 3 d, sup sqrt(6) at the corners
    Case("polynomial-features-box", "feature map non-affine over the domain", poly_features, BOX, DATA_BOX,
         ("obs",), ("integer_pow", "concatenate"), truth=_glm_truth(math.sqrt(3 * D)),
         witnesses=glm_witnesses(lambda x: np.concatenate([x, x ** 2, x ** 3]), _P_X, _P_X2)),
    # sin(3x) on the box: |sin| <= 1, attained at x_i = pi/6 in [-1, 1]: sup sqrt(2)
    Case("sin-features-box", "feature map non-affine over the domain", sin_features, BOX, DATA_BOX, ("obs",),
         ("sin",), truth=_glm_truth(math.sqrt(D)), witnesses=glm_witnesses(lambda x: np.sin(3 * x), _S_X, _S_X2)),
    # x / (|x|^2 + 0.01) on |x| <= 1: r / (r^2 + 0.01) is largest at r = 0.1: 5 (5x the radius)
    Case("inverse-norm-features", "feature map non-affine over the domain", inverse_norm_features,
         ("X.norm=1", "y.values=0,1"), DATA_NORM1, ("obs",), ("div", "integer_pow", "mul", "reduce_sum"),
         truth=_glm_truth(5.0), witnesses=glm_witnesses(lambda x: x / (x @ x + 0.01), e(0, 0.1), rot(PHI, 0.1))),
    # x / |x| (smoothed) on |x| <= 0.5: norm ~1 for every x != 0, twice the radius
    Case("normalized-features", "feature map non-affine over the domain", normalized_features,
         ("X.norm=0.5", "y.values=0,1"), {"X": _ball(M, D, 0.5, 6), "y": Y01}, ("obs",),
         ("sqrt", "rsqrt", "div", "mul"), truth=_glm_truth(1.0),
         witnesses=glm_witnesses(lambda x: x / math.sqrt(x @ x + 1e-12), e(0, 0.5), rot(PHI, 0.5))),
    # |x| (1 + 200 relu(0.1 - |x - c|)): inside the bump |x| <= |c| + rho, factor 21 - 200 rho, product
    # <= 10.5 - 79 rho - 200 rho^2; outside <= 1: sup 21 |c| = 10.5 at x = c (no probe record comes near c)
    Case("bump-features", "feature map non-affine over the domain", bump_features, ("X.norm=1", "y.values=0,1"),
         DATA_NORM1, ("obs",), ("max", "custom_jvp_call", "sqrt", "integer_pow", "mul"), truth=_glm_truth(21 * 0.5),
         witnesses=glm_witnesses(
             lambda x: x * (1 + 200 * max(0.0, 0.1 - float(np.linalg.norm(x - BUMP_C)))), BUMP_C,
             BUMP_C + 1e-6 * np.array([-0.8, 0.6]))),
]


# ===========================================================================
# E. likelihood scale, df or total_count computed from x.


def student_scale_from_x(X, y=None):
    w = _w()
    _student(X @ w, y, df=4.0, scale=0.1 + jnp.abs(X[:, 0]))


def student_df_from_x(X, y=None):
    w = _w()
    _student(X @ w, y, df=0.5 + X[:, 0] ** 2, scale=1.0)


def binomial_count_from_data(X, n, y=None):
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Binomial(total_count=n, logits=X @ w), obs=y)


def poisson_clipped(X, y=None):
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Poisson(jnp.exp(jnp.clip(X @ w, -5.0, 5.0))), obs=y)


# Student-t(4, x.w, s = 0.1 + |x_0|), |x| <= 1: |grad| = |psi| |x| <= 5/(4 s) |x|, largest at x = e_1 (s = 0.1):
# 12.5; psi takes both signs for one x (y free): diff 25; Hessian (nu+1)/(nu s^2) |x|^2 <= 125; the negative
# curvature -(nu+1)/(8 nu s^2) = -15.6 per record at x = e_1 makes U non-convex for M = 8 records.
_T_NU = 4.0


def _t_score(nu, s):
    return (nu + 1) / (2 * s * math.sqrt(nu))


# df = 0.5 + x_0^2 on the box (scale 1): |grad| <= g(u) = sqrt(1 + u) (nu+1)/(2 sqrt nu), nu = 0.5 + u, u = x_0^2,
# increasing on [0, 1] (checked on a grid in the test): sup at x = (1, 1), nu = 1.5; Hessian (nu+1)/nu (1 + u),
# max 10/3 at u = 1; min curvature -(nu+1)/(8 nu) (1 + u) <= -5/12 per record: U non-convex for M = 8.
T_DF_G = math.sqrt(2) * _t_score(1.5, 1.0)

# Binomial(n, logits = x.w), n in {1, 5, 10}, y in [0, n]: psi = n sigmoid(eta) - y in (-n, n): sup 10 R, diff
# 20 R (n = 10, y = 0, eta -> inf; y' = 10, eta' -> -inf), Hessian n sigmoid' |x|^2 <= 10 R^2 / 4; convex.
_N = np.array([1, 5, 10, 10, 5, 1, 10, 5])
_BIN_DATA = {"X": DATA_NORM["X"], "n": _N, "y": np.minimum(np.arange(M) % 7, _N).astype(np.float64)}
_bin_p = {"w": theta_for([e(0, R), rot(PHI, R)], [40.0, -40.0])}

# Poisson(exp(clip(z, -5, 5))), y in [0, 10], |x| <= 1: grad = (e^eta - y) 1[|z| < 5] x: sup e^5 (y = 0, z -> 5-);
# diff (e^5 + 10 - e^-5) (y' = 10, z' -> -5+); gradient jumps at |z| = 5 (concave kink at z = 5).
E5 = math.exp(5.0)
_pois_p = {"w": theta_for([e(0, 1.0), rot(PHI, 1.0)], [5.0 - 1e-9, -5.0 + 1e-9])}

_SCALE_CASES = [
    Case("student-scale-from-x", "likelihood scale computed from x", student_scale_from_x, ("X.norm=1",),
         {"X": DATA_NORM1["X"], "y": Y_REAL}, ("obs",), None,
         truth=Truth(_t_score(_T_NU, 0.1), 2 * _t_score(_T_NU, 0.1), (_T_NU + 1) / (_T_NU * 0.01), False, None),
         witnesses=(Witness("bound", {"w": np.zeros(D)}, (rec(e(1), 0.2),)),
                    Witness("diff", {"w": np.zeros(D)}, (rec(e(1), 0.2), rec(e(1), -0.2))))),
    Case("student-df-from-x", "likelihood df computed from x", student_df_from_x, ("X.min=-1", "X.max=1"),
         {"X": DATA_BOX["X"], "y": Y_REAL}, ("obs",), None,
         truth=Truth(T_DF_G, 2 * T_DF_G, 2.5 / 1.5 * 2, False, None),
         witnesses=(Witness("bound", {"w": np.zeros(D)}, (rec(np.ones(D), math.sqrt(1.5)),)),
                    Witness("diff", {"w": np.zeros(D)}, (rec(np.ones(D), math.sqrt(1.5)),
                                                         rec(np.ones(D), -math.sqrt(1.5)))))),
    Case("binomial-count-from-data", "total_count computed from data", binomial_count_from_data,
         (f"X.norm={R}", "n.values=1,5,10", "y.min=0", "y.max=10"), _BIN_DATA, ("obs",), None,
         truth=Truth(10 * R, 20 * R, 10 * R * R / 4, True, 1.0),
         witnesses=(Witness("bound", _bin_p, (rec(e(0, R), 0.0, n=10.0),)),
                    Witness("diff", _bin_p, (rec(e(0, R), 0.0, n=10.0), rec(rot(PHI, R), 10.0, n=10.0))))),
    Case("poisson-clipped-rate", "clipped logits (log link)", poisson_clipped, ("X.norm=1", "y.min=0", "y.max=10"),
         {"X": DATA_NORM1["X"], "y": (np.arange(M) % 11).astype(np.float64)}, ("obs",), None,
         truth=Truth(E5, E5 + 10 - 1 / E5, None, False, None),
         witnesses=(Witness("bound", _pois_p, (rec(e(0), 0.0),)),
                    Witness("diff", _pois_p, (rec(e(0), 0.0), rec(rot(PHI), 10.0))))),
]


# ===========================================================================
# F. features scaled by a public table indexed by an integer data argument (the issue's FACTOR[g]).


def factor_table(X, g, y=None):
    w = _w()
    _bernoulli(FACTOR[g] * (X @ w), y)


def factor_table_swapped(g, X, y=None):
    w = _w()
    _bernoulli(FACTOR[g] * (X @ w), y)


# phi = FACTOR[g] x, g in {0, 1, 2}: sup |phi| = max |FACTOR| R = 2.54 R (g = 1): a GLM.
_G = np.array([0, 1, 2, 0, 1, 2, 0, 1])
_FACT_DATA = {"X": DATA_NORM["X"], "g": _G, "y": Y01}
_FACT_DOM = (f"X.norm={R}", "g.values=0,1,2", "y.values=0,1")
_fact_w = glm_witnesses(lambda x: 2.54 * x, e(0, R), rot(PHI, R), more={"g": 1})
_FACTOR_CASES = [
    Case("factor-table", "public table indexed by an integer data argument", factor_table, _FACT_DOM, _FACT_DATA,
         ("obs",), ("gather", "dynamic_slice", "select_n"), truth=_glm_truth(2.54 * R), witnesses=_fact_w),
    Case("factor-table-swapped-args", "public table indexed by an integer data argument", factor_table_swapped,
         _FACT_DOM, _FACT_DATA, ("obs",), ("gather", "dynamic_slice", "select_n"), truth=_glm_truth(2.54 * R),
         witnesses=_fact_w),
]


# ===========================================================================
# G. records coupled: some record's term depends on another record, so replacing one record moves several
#    terms and no per-record constant bounds U_D - U_D'.  Only refusal is sound.


def coupled_centering(X, y=None):
    w = _w()
    _bernoulli((X - jnp.mean(X, axis=0)) @ w, y)


def coupled_reverse(X, y=None):
    w = _w()
    _bernoulli(X[::-1] @ w, y)


def coupled_roll(X, y=None):
    w = _w()
    _bernoulli(jnp.roll(X, 1, axis=0) @ w, y)


def coupled_running_mean(X, y=None):
    w = _w()
    n = jnp.arange(1, X.shape[0] + 1)[:, None]
    _bernoulli((jnp.cumsum(X, axis=0) / n) @ w, y)


def coupled_sort(X, y=None):
    w = _w()
    _bernoulli(jnp.sort(X, axis=0) @ w, y)


def coupled_last_record(X, y=None):
    w = _w()
    _bernoulli(X @ w + 0.5 * (X[-1] @ w), y)


def coupled_product(X, y=None):
    w = _w()
    _bernoulli(X @ w + jnp.prod(X[:, 0]) * w[0], y)


def coupled_response_mean(X, y=None):
    w = _w()
    _bernoulli(X @ w + 2.0 * jnp.mean(y), y)


def _coupled(index=1, x_new=(0.9, -0.6), data=DATA_NORM):
    return (Witness("coupled", {"w": np.array([0.7, -0.4])}, (rec(np.array(x_new), 1.0 - data["y"][index]),),
                    data=data, index=index),)


_COUPLED_CASES = [
    Case("coupled-centering", "records coupled", coupled_centering, NORM, DATA_NORM, ("obs",),
         ("reduce_sum", "dot_general", "sub", "div"), True, witnesses=_coupled()),
    # with a symbolic number of records, X[::-1] is traced as a gather (with a concrete one, as rev)
    Case("coupled-reverse", "records coupled", coupled_reverse, NORM, DATA_NORM, ("obs",), ("rev", "gather"), True,
         witnesses=_coupled()),
    Case("coupled-roll", "records coupled", coupled_roll, NORM, DATA_NORM, ("obs",),
         ("slice", "concatenate", "gather", "dynamic_slice"), True, witnesses=_coupled()),
    Case("coupled-running-mean", "records coupled", coupled_running_mean, NORM, DATA_NORM, ("obs",),
         ("cumsum", "reduce_window_sum", "dot_general"), True, witnesses=_coupled()),
    Case("coupled-sort", "records coupled", coupled_sort, NORM, DATA_NORM, ("obs",), ("sort",), True,
         witnesses=_coupled()),
    Case("coupled-last-record", "records coupled", coupled_last_record, NORM, DATA_NORM, ("obs",),
         ("slice", "squeeze", "gather", "dynamic_slice"), True,
         witnesses=_coupled(index=M - 1)),
    Case("coupled-product", "records coupled", coupled_product, NORM, DATA_NORM, ("obs",), ("reduce_prod",), True,
         witnesses=_coupled()),
    Case("coupled-response-mean", "records coupled", coupled_response_mean, NORM, DATA_NORM, ("obs",),
         ("reduce_sum", "div"), True, witnesses=_coupled()),
]


# ===========================================================================
# H. the likelihood depends on the number of records.


def record_count_scaled(X, y=None):
    w = _w()
    _bernoulli((X.shape[0] / 10.0) * (X @ w), y)


# with m = 50 records phi = (m/10) x = 5 x: a GLM with sup |phi| = 5 R for replace-one neighbours.  Add/remove
# changes every term: all records x = R e0, y = 1, theta = -t e0/R, t -> inf: each gradient -> -(m/10) x, the
# added record contributes -((m+1)/10) x and the m others change by -(1/10) x each: |difference| -> (2m+1) R/10.
M50 = 50
_RC_DATA = {"X": _ball(M50, D, R, 7), "y": (np.arange(M50) % 2).astype(np.float64)}
_rc_p = {"w": theta_for([5 * e(0, R), 5 * rot(PHI, R)], [40.0, -40.0])}
_RECORD_COUNT_CASES = [
    Case("record-count-scaled", "likelihood depends on the number of records", record_count_scaled, NORM, _RC_DATA,
         ("obs",), None,
         truth=Truth(5 * R, 10 * R, 25 * R * R / 4, True, 1.0, data_size=M50,
                     extra={"grad_diff_add_remove": (2 * M50 + 1) * R / 10}),
         witnesses=(Witness("bound", _rc_p, (rec(e(0, R), 0.0),), copies=M50),
                    Witness("diff", _rc_p, (rec(e(0, R), 0.0), rec(rot(PHI, R), 1.0)), copies=M50))),
]


# ===========================================================================
# I. a latent value leaking into a "fixed" parameter; stop_gradient and custom_jvp that hide derivatives.


def latent_scale_far(X, y=None):
    # the Student-t scale is 1 wherever w_0 < 10 (every probe theta), and grows with w_0 beyond
    w = _w()
    _student(X @ w, y, scale=1.0 + jax.nn.relu(w[0] - 10.0))


def stopgrad_scale(X, y=None):
    w = _w()
    _student(X @ w, y, scale=1.0 + jax.lax.stop_gradient(w[0] ** 2))


def stopgrad_cubic(X, y=None):
    w = _w()
    _bernoulli(X @ w + jax.lax.stop_gradient(1e-6 * w[0] ** 3), y)


@jax.custom_jvp
def _scaled(z):
    return 2.54 * z


@_scaled.defjvp
def _scaled_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    return _scaled(z), dz          # wrong: claims derivative 1


@jax.custom_jvp
def _cubic(z):
    return z + 1e-4 * z ** 3


@_cubic.defjvp
def _cubic_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    return _cubic(z), dz           # wrong: claims derivative 1


def custom_jvp_scaled(X, y=None):
    w = _w()
    _bernoulli(_scaled(X @ w), y)


def custom_jvp_cubic(X, y=None):
    w = _w()
    _bernoulli(_cubic(X @ w), y)


# latent_scale_far, X.norm = 1, nu = 4: for w_0 -> 10+ (s -> 1) and x = e_1 (x_0 = 0), dl/dw_0 = dl/ds =
# 1/s - (nu+1) r^2/(s (nu s^2 + r^2)) -> -nu = -4 as r -> inf: |grad| >= 4 (the exact sup is larger, x_0 != 0
# adds psi x_0); dl/ds = 1 at r = 0: diff >= 1 + 4 = 5.  The gradient in w_0 jumps at w_0 = 10: not Lipschitz.
_far_p = {"w": np.array([10.0 + 1e-6, 0.0])}
_LEAK_CASES = [
    Case("latent-scale-beyond-probes", "latent value in a fixed parameter", latent_scale_far, ("X.norm=1",),
         {"X": DATA_NORM1["X"], "y": Y_REAL}, ("obs",), ("max", "custom_jvp_call"),
         truth=Truth(4.0, 5.0, None, False, None, exact=False),
         witnesses=(Witness("bound", _far_p, (rec(e(1), 1e4),)),
                    Witness("diff", _far_p, (rec(e(1), 1e4), rec(e(1), 0.0))))),
    # the scale follows w_0 but JAX's derivative does not: the samplers' drift is not grad U, so no constant
    # of U describes the chain (w_0 = 1, r -> inf: true dl/dw_0 = -nu/s * 2 w_0 = -4, JAX: 0).  Refusal only.
    Case("stop-gradient-scale", "stop_gradient on a latent value", stopgrad_scale, ("X.norm=1",),
         {"X": DATA_NORM1["X"], "y": Y_REAL}, ("obs",), ("stop_gradient",), True,
         witnesses=(Witness("hidden", {"w": np.array([1.0, 0.0])}, (rec(e(1), 1e4),), value=3.0, fd=True),)),
    # true gradient 3e-6 w_0^2 sigmoid(eta) -> unbounded, JAX's is bounded by R
    Case("stop-gradient-cubic", "stop_gradient on a latent value", stopgrad_cubic, NORM, DATA_NORM, ("obs",),
         ("stop_gradient",), True,
         witnesses=(Witness("grows", {"w": np.array([1e4, 0.0])}, (rec(np.zeros(D), 0.0),), value=100.0, fd=True),
                    Witness("hidden", {"w": np.array([1e4, 0.0])}, (rec(np.zeros(D), 0.0),), value=100.0,
                            fd=True))),
    # the function is 2.54 z (its custom derivative says 1): true grad (sigmoid - y) 2.54 x, a GLM with 2.54 R
    Case("custom-jvp-wrong-slope", "custom_jvp with a wrong derivative", custom_jvp_scaled, NORM, DATA_NORM,
         ("obs",), ("custom_jvp_call",), truth=_glm_truth(2.54 * R),
         witnesses=tuple(Witness(w.kind, w.params, w.recs, fd=True, h=1e-7)
                         for w in glm_witnesses(lambda x: 2.54 * x, e(0, R), rot(PHI, R)))),
    # z + 1e-4 z^3 with derivative claimed 1: true grad (sigmoid - y)(1 + 3e-4 z^2) x, unbounded (z = 1e3: 301 R)
    Case("custom-jvp-hidden-cubic", "custom_jvp with a wrong derivative", custom_jvp_cubic, NORM, DATA_NORM,
         ("obs",), ("custom_jvp_call", "integer_pow"), True,
         witnesses=(Witness("grows", {"w": e(0, 1e3 / R)}, (rec(e(0, R), 0.0),), value=100.0, fd=True),
                    Witness("hidden", {"w": e(0, 1e3 / R)}, (rec(e(0, R), 0.0),), value=100.0, fd=True))),
]


# ===========================================================================
# J. switches on data values (jnp.where / lax.cond on x): affine in theta, features piecewise in x.


def where_shell(X, y=None):
    z = X @ _w()
    r = jnp.sqrt(jnp.sum(X * X, axis=1))
    _bernoulli(jnp.where((r > 0.6) & (r < 0.8), 5.0 * z, z), y)


def cond_region(X, y=None):
    w = _w()

    def one(x):
        return jax.lax.cond((x[0] > 0.7) & (x[1] < -0.5), lambda: 3.0 * (x @ w), lambda: x @ w)

    _bernoulli(jax.vmap(one)(X), y)


# shell 0.6 < |x| < 0.8 (no probe record has its norm there): phi = 5 x, sup 5 * 0.8 = 4 (approached), else <= 1
_SH = 0.8 * (1 - 1e-9)
# region x_0 > 0.7, x_1 < -0.5 inside |x| <= 1 (e.g. (0.75, -0.66)): phi = 3 x, sup 3
_CR_X = np.array([0.75, -math.sqrt(1 - 0.75 ** 2)])
_SWITCH_CASES = [
    Case("where-on-data-shell", "jnp.where on data values", where_shell, ("X.norm=1", "y.values=0,1"), DATA_NORM1,
         ("obs",), ("select_n", "gt", "lt", "sqrt"), truth=_glm_truth(4.0),
         witnesses=glm_witnesses(lambda x: 5 * x, e(0, _SH), rot(PHI, _SH))),
    Case("lax-cond-on-data-region", "lax.cond on data values", cond_region, ("X.norm=1", "y.values=0,1"),
         DATA_NORM1, ("obs",), ("cond", "select_n", "gt", "lt", "stop_gradient"), truth=_glm_truth(3.0),
         witnesses=glm_witnesses(lambda x: 3 * x, _CR_X,
                                 np.array([[math.cos(PHI), -math.sin(PHI)], [math.sin(PHI), math.cos(PHI)]]) @ _CR_X)),
]


# ===========================================================================
# K. reparameterisation handlers that hide a data-dependent prior (the decentred prior is N(0, 1), but the
#    likelihood then reads a data statistic in every record's term): records coupled, refusal only.


def reparam_loc_last_record(X, y=None):
    with handlers.reparam(config={"w": LocScaleReparam(0)}):
        w = numpyro.sample("w", dist.Normal(X[-1], 1.0).to_event(1))
    _bernoulli(X @ w, y)


def reparam_scale_from_data(X, y=None):
    with handlers.reparam(config={"w": LocScaleReparam(0)}):
        w = numpyro.sample("w", dist.Normal(0.0, 1.0 + jnp.mean(X ** 2)).expand([X.shape[1]]).to_event(1))
    _bernoulli(X @ w, y)


_REPARAM_CASES = [
    Case("reparam-loc-last-record", "reparam hides a data-dependent prior", reparam_loc_last_record, NORM,
         DATA_NORM, ("w", "obs", "w_decentered"), None, True,
         witnesses=(Witness("coupled", {"w_decentered": np.array([0.7, -0.4])}, (rec(np.array([0.9, -0.6]), 1.0),),
                            data=DATA_NORM, index=M - 1),)),
    Case("reparam-scale-from-data", "reparam hides a data-dependent prior", reparam_scale_from_data, NORM,
         DATA_NORM, ("w", "obs", "w_decentered"), None, True,
         witnesses=(Witness("coupled", {"w_decentered": np.array([0.7, -0.4])}, (rec(np.array([1.2, -0.6]), 1.0),),
                            data=DATA_NORM, index=1),)),
]

# ===========================================================================
# L. others: the response inside the predictor, a likelihood mask that depends on theta.


def response_in_predictor(X, y=None):
    w = _w()
    _bernoulli((1.0 + y) * (X @ w), y)


def mask_on_theta(X, y=None):
    w = _w()
    z = X @ w
    with numpyro.plate("data", X.shape[0]), handlers.mask(mask=z > 0):
        numpyro.sample("obs", dist.Bernoulli(logits=z), obs=y)


# (1 + y) x.w, y in {0, 1}: grad = (sigmoid(eta) - y)(1 + y) x; the factor (sigmoid - y)(1 + y) is in (0, 1) for
# y = 0 and (-2, 0) for y = 1: sup 2R (y = 1, eta -> -inf), diff (1 + 2) R; Hessian sigmoid' (1+y)^2 |x|^2 <= R^2;
# convex in theta for each record.
_resp_p = {"w": theta_for([e(0, R), 2 * rot(PHI, R)], [40.0, -40.0])}
_OTHER_CASES = [
    Case("response-in-predictor", "response inside the predictor", response_in_predictor, NORM, DATA_NORM,
         ("obs",), ("mul", "add"), truth=Truth(2 * R, 3 * R, R * R, True, 1.0),
         witnesses=(Witness("bound", {"w": e(0, -20.0 / R)}, (rec(e(0, R), 1.0),)),
                    Witness("diff", _resp_p, (rec(e(0, R), 0.0), rec(rot(PHI, R), 1.0))))),
    # the record's term is 1[z > 0] l(z): it jumps by log 2 across z = 0 (y = 0), so l is discontinuous in theta
    Case("mask-on-theta", "likelihood mask depending on theta", mask_on_theta, NORM, DATA_NORM, ("obs",),
         None, True,
         witnesses=(Witness("grows", {"w": np.zeros(D)}, (rec(e(0, R), 0.0),), value=1e4, fd=True, h=1e-7),)),
]


# ===========================================================================
# M. per-record terms without a family rule (issue #14: the generic rule bounds the gradient of the per-record
#    log-density over the domain and all theta; no convexity or smoothness is claimed).  Factors written with
#    JAX's softplus / log_sigmoid / log1p(exp) (whose derivatives defeat plain interval arithmetic), likelihoods of
#    families without a rule, and the generic rule's refusals.

Y_PM = 2.0 * Y01 - 1.0                   # labels in {-1, 1}
PM = (f"X.norm={R}", "y.values=-1,1")
DATA_PM = {"X": DATA_NORM["X"], "y": Y_PM}
Y_BOX = np.linspace(-2.0, 2.0, M)        # responses in [-2, 2]
DATA_Y2 = {"X": DATA_NORM["X"], "y": Y_BOX}
Y2 = (f"X.norm={R}", "y.min=-2", "y.max=2")
LAP_B, LOGIS_S = 0.5, 0.5


def _plate_factor(X, term, name="f"):
    with numpyro.plate("data", X.shape[0]):
        numpyro.factor(name, term)


def factor_log_sigmoid(X, y=None):
    _plate_factor(X, jax.nn.log_sigmoid(y * (X @ _w())))


def factor_log1p_exp(X, y=None):
    _plate_factor(X, -jnp.log1p(jnp.exp(-y * (X @ _w()))))


def factor_logcosh(X, y=None):
    # a smoothed absolute loss -|x.w - y|: softplus(r) + softplus(-r) = |r| + 2 log(1 + e^-|r|)
    r = X @ _w() - y
    _plate_factor(X, -(jax.nn.softplus(r) + jax.nn.softplus(-r)))


def laplace_likelihood(X, y=None):
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Laplace(X @ w, LAP_B), obs=y)


def logistic_likelihood(X, y=None):
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Logistic(X @ w, LOGIS_S), obs=y)


def contaminated_bernoulli(X, y=None):
    # a robust ("contaminated") logistic regression: probs = 0.1 + 0.8 sigmoid(x.w), not a sigmoid of a predictor
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(probs=0.1 + 0.8 * jax.nn.sigmoid(X @ w)), obs=y)


def normal_tanh_loc(X, y=None):
    # the Normal family has no bounded rule in general; a bounded mean 3 tanh(x.w) with bounded responses does
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Normal(3.0 * jnp.tanh(X @ w), 1.0), obs=y)


def factor_scalar_sum(X, y=None):
    numpyro.factor("f", jnp.sum(jax.nn.log_sigmoid(y * (X @ _w()))))


def factor_quadratic(X, y=None):
    _plate_factor(X, -(X @ _w() - y) ** 2)


def gamma_log_link(X, y=None):
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Gamma(2.0, jnp.exp(X @ w)), obs=y)


def factor_other_record(X, y=None):
    _plate_factor(X, jax.nn.log_sigmoid(y * (X[::-1] @ _w())))


def factor_data_mean(X, y=None):
    _plate_factor(X, jax.nn.log_sigmoid(y * ((X - jnp.mean(X, axis=0)) @ _w())))


def factor_random_draw(X, y=None):
    w = _w()
    noise = jax.random.normal(numpyro.prng_key(), (X.shape[0],))
    _plate_factor(X, jax.nn.log_sigmoid(y * (X @ w) + 0.5 * noise))


def factor_sign_jump(X, y=None):
    z = X @ _w()
    _plate_factor(X, jax.nn.log_sigmoid(y * (z + 0.5 * jnp.sign(z))))


def factor_stop_gradient(X, y=None):
    w = _w()
    _plate_factor(X, jax.nn.log_sigmoid(y * (X @ w)) + jax.lax.stop_gradient(1e-6 * jnp.sum(w ** 3)))


# -log_sigmoid(y x.w) = softplus(-y x.w): grad = -sigmoid(-y x.w) y x, |.| < R (y x.w -> -inf); two records with
# y x.w -> -inf (y = 1) and y' x'.w -> -inf (y' = -1, x'.w -> +inf), x' -> x: grad - grad' -> -(x + x'), 2R.
# Hessian sigmoid' |x|^2 <= R^2/4; convex in theta.  log1p(exp(-y x.w)) is the same function.
_LOGSIG_W = glm_witnesses(lambda x: x, e(0, R), rot(PHI, R), y=(1.0, -1.0), eta=[-40.0, 40.0])
# logcosh: l = softplus(r) + softplus(-r), r = x.w - y: grad = (sigmoid(r) - sigmoid(-r)) x = tanh(r/2) x: sup R
# (r -> inf), diff 2R (r -> inf at x, r' -> -inf at x' -> x); l'' = sech^2(r/2)/2 <= 1/2: R^2/2; convex.
_LOGCOSH_W = glm_witnesses(lambda x: x, e(0, R), rot(PHI, R), y=(0.0, 0.0), eta=[40.0, -40.0])
# Laplace(x.w, b): l = |y - x.w|/b: grad = -sign(y - x.w) x/b: sup R/b at any y != x.w, diff 2R/b (same x, y above
# and below x.w); not differentiable at y = x.w (not smooth); convex.
_LAP_W = (Witness("bound", {"w": np.zeros(D)}, (rec(e(0, R), 1.0),)),
          Witness("diff", {"w": np.zeros(D)}, (rec(e(0, R), 1.0), rec(e(0, R), -1.0))))
# Logistic(x.w, s): l = z + 2 softplus(-z) + log s, z = (y - x.w)/s: dl/dloc = -tanh(z/2)/s: sup R/s (|z| -> inf),
# diff 2R/s (z -> inf and z' -> -inf at the same x); d2l/dloc2 = sech^2(z/2)/(2 s^2) <= 1/(2 s^2); convex.
_LOGIS_W = (Witness("bound", {"w": np.zeros(D)}, (rec(e(0, R), 40.0 * LOGIS_S),)),
            Witness("diff", {"w": np.zeros(D)}, (rec(e(0, R), 40.0 * LOGIS_S), rec(e(0, R), -40.0 * LOGIS_S))))


def _contaminated_consts(a=0.1, b=0.8):
    """y = 1: l = -log(a + b s), dl/deta = -b s (1-s)/(a + b s); y = 0: l = -log(1 - a - b s), dl/deta =
    b s (1-s)/(1 - a - b s) (s = sigmoid(eta)); a = 1 - a - b, so the two are mirror images (s -> 1 - s).  Sups on
    a fine grid of eta (with its argmax), the second derivative by differences, and its minimum (non-convex)."""
    eta = np.linspace(-30, 30, 2_400_001)
    sg = 1 / (1 + np.exp(-eta))
    g1 = b * sg * (1 - sg) / (a + b * sg)
    i = int(np.argmax(g1))
    h1 = np.gradient(-g1, eta)                       # d2l/deta2 for y = 1 (y = 0 mirrored)
    return float(g1[i]), float(eta[i]), float(np.max(np.abs(h1))), float(np.min(h1))


CONT_G, CONT_ETA, CONT_H, CONT_HMIN = _contaminated_consts()
# grad = (dl/deta) x: sup CONT_G R (y = 1 at eta*); diff: y = 1 at eta* (score -CONT_G) and y' = 0 at -eta* (score
# +CONT_G), x' -> x: 2 CONT_G R.
_cont_p = {"w": theta_for([e(0, R), rot(PHI, R)], [CONT_ETA, -CONT_ETA])}


def _normal_tanh_consts():
    """l = (y - 3t)^2/2, t = tanh z: dl/dz = -3 (y - 3t)(1 - t^2), largest for y = -2 (t > 0) or y = 2 (mirror):
    f(t) = 3 (2 + 3t)(1 - t^2), f' = 0 at 9t^2 + 4t - 3 = 0: t* = (sqrt(124) - 4)/18.  d2l/dz2 = 9 (1-t^2)^2 +
    6 t (y - 3t)(1 - t^2) on a grid (t, y = +-2: linear in y)."""
    ts = (math.sqrt(124.0) - 4.0) / 18.0
    f = 3.0 * (2.0 + 3.0 * ts) * (1.0 - ts * ts)
    t = np.linspace(-1, 1, 400_001)
    h = [9 * (1 - t * t) ** 2 + 6 * t * (yv - 3 * t) * (1 - t * t) for yv in (-2.0, 2.0)]
    return f, float(np.arctanh(ts)), max(float(np.max(np.abs(x))) for x in h), min(float(np.min(x)) for x in h)


NT_G, NT_Z, NT_H, NT_HMIN = _normal_tanh_consts()
_nt_p = {"w": theta_for([e(0, R), rot(PHI, R)], [NT_Z, -NT_Z])}


def _tsc(hmin):
    """True total strong convexity of |w|^2/2 + sum of M terms with curvature >= hmin R^2 (None if <= 0)."""
    v = 1 + M * R * R * hmin
    return None if v <= 0 else v


_GENERIC_CASES = [
    Case("factor-log-sigmoid", "numpyro.factor without a family rule", factor_log_sigmoid, PM, DATA_PM, ("f",),
         ("mul", "exp", "custom_jvp_call"), truth=Truth(R, 2 * R, R * R / 4, True, 1.0), witnesses=_LOGSIG_W),
    Case("factor-log1p-exp", "numpyro.factor without a family rule", factor_log1p_exp, PM, DATA_PM, ("f",),
         ("mul", "exp", "div"), truth=Truth(R, 2 * R, R * R / 4, True, 1.0), witnesses=_LOGSIG_W),
    Case("factor-smoothed-abs", "numpyro.factor without a family rule", factor_logcosh, Y2, DATA_Y2, ("f",),
         ("mul", "exp", "custom_jvp_call"), truth=Truth(R, 2 * R, R * R / 2, True, 1.0), witnesses=_LOGCOSH_W),
    Case("laplace-likelihood", "likelihood family without a rule", laplace_likelihood, (f"X.norm={R}",),
         {"X": DATA_NORM["X"], "y": Y_REAL}, ("obs",), ("sign", "select_n", "abs"),
         truth=Truth(R / LAP_B, 2 * R / LAP_B, None, True, 1.0), witnesses=_LAP_W),
    Case("logistic-likelihood", "likelihood family without a rule", logistic_likelihood, (f"X.norm={R}",),
         {"X": DATA_NORM["X"], "y": Y_REAL}, ("obs",), ("mul", "exp", "custom_jvp_call"),
         truth=Truth(R / LOGIS_S, 2 * R / LOGIS_S, R * R / (2 * LOGIS_S ** 2), True, 1.0), witnesses=_LOGIS_W),
    Case("contaminated-bernoulli-probs", "probs not a sigmoid of a predictor", contaminated_bernoulli, NORM,
         DATA_NORM, ("obs",), ("div", "log", "mul"),
         truth=Truth(CONT_G * R, 2 * CONT_G * R, CONT_H * R * R, False, _tsc(CONT_HMIN)),
         witnesses=(Witness("bound", _cont_p, (rec(e(0, R), 1.0),)),
                    Witness("diff", _cont_p, (rec(e(0, R), 1.0), rec(rot(PHI, R), 0.0))))),
    Case("normal-bounded-mean", "family refused in general, bounded here", normal_tanh_loc, Y2, DATA_Y2, ("obs",),
         ("mul", "tanh"), truth=Truth(NT_G * R, 2 * NT_G * R, NT_H * R * R, False, _tsc(NT_HMIN)),
         witnesses=(Witness("bound", _nt_p, (rec(e(0, R), -2.0),)),
                    Witness("diff", _nt_p, (rec(e(0, R), -2.0), rec(rot(PHI, R), 2.0))))),
    # one factor for all records (the sum of the per-record terms): the same function as factor-log-sigmoid, refused
    # (the records' terms cannot be told apart) or certified as that
    Case("factor-scalar-sum", "numpyro.factor summed over records", factor_scalar_sum, PM, DATA_PM, ("f",), None,
         truth=Truth(R, 2 * R, R * R / 4, True, 1.0), witnesses=_LOGSIG_W),
    # -(x.w - y)^2: gradient -2 (x.w - y) x, unbounded (x = R e0, y = 0, w = 1e3 e0: 2 * 1500 * 1.5 = 4500)
    Case("factor-quadratic", "numpyro.factor with unbounded gradient", factor_quadratic, Y2, DATA_Y2, ("f",),
         ("mul", "integer_pow"), True,
         witnesses=(Witness("grows", {"w": e(0, 1e3)}, (rec(e(0, R), 0.0),), value=1e3),)),
    # Gamma(2, rate = e^{x.w}): dl/dz = y e^z - 2, unbounded (y = 0.5, z = 15: 1.6e6 * R)
    Case("gamma-log-link", "likelihood family without a rule, unbounded gradient", gamma_log_link,
         (f"X.norm={R}", "y.min=0.5", "y.max=2"), {"X": DATA_NORM["X"], "y": np.linspace(0.5, 2.0, M)}, ("obs",),
         ("mul", "exp"), True, witnesses=(Witness("grows", {"w": e(0, 10.0)}, (rec(e(0, R), 0.5),), value=1e3),)),
    Case("factor-other-record", "records coupled (numpyro.factor)", factor_other_record, PM, DATA_PM, ("f",),
         ("rev", "gather"), True, witnesses=_coupled(data=DATA_PM)),
    Case("factor-data-mean", "records coupled (numpyro.factor)", factor_data_mean, PM, DATA_PM, ("f",),
         ("reduce_sum", "div"), True, witnesses=_coupled(data=DATA_PM)),
    # the factor reads a random draw: the target is not a function of (theta, data); only refusal is sound
    Case("factor-random-draw", "numpyro.factor reads a random number", factor_random_draw, PM, DATA_PM, ("f",),
         ("random_bits", "random_split", "random_wrap", "random_unwrap", "random_fold_in", "threefry2x32"), True,
         witnesses=(Witness("random", {"w": np.array([0.7, -0.4])}, data=DATA_PM),)),
    # a jump of log_sigmoid(+-R * 0.5) across x.w = 0: discontinuous in theta (JAX's derivative of sign is 0)
    Case("factor-sign-jump", "discontinuous in theta (numpyro.factor)", factor_sign_jump, PM, DATA_PM, ("f",),
         ("sign",), True,
         witnesses=(Witness("grows", {"w": np.zeros(D)}, (rec(e(0, R), 1.0),), value=1e4, fd=True, h=1e-7),)),
    # true gradient includes 3e-6 w_0^2 (unbounded), JAX's does not
    Case("factor-stop-gradient", "stop_gradient on a latent value (numpyro.factor)", factor_stop_gradient, PM,
         DATA_PM, ("f",), ("stop_gradient",), True,
         witnesses=(Witness("grows", {"w": e(0, 1e4)}, (rec(np.zeros(D), 1.0),), value=100.0, fd=True),
                    Witness("hidden", {"w": e(0, 1e4)}, (rec(np.zeros(D), 1.0),), value=100.0, fd=True))),
]

CASES: list[Case] = (_PRIOR_CASES + _KINK_CASES + _HIGHER_CASES + _FEATURE_CASES + _SCALE_CASES + _FACTOR_CASES
                     + _COUPLED_CASES + _RECORD_COUNT_CASES + _LEAK_CASES + _SWITCH_CASES + _REPARAM_CASES
                     + _OTHER_CASES + _GENERIC_CASES)


# ===========================================================================
# honest controls: certified, with exactly these constants (tests/analysis/test_analysis_models.py derivations)


@dataclass(frozen=True)
class Control:
    id: str
    model: Callable
    domain: tuple
    data: dict
    expect: dict
    kwargs: dict = field(default_factory=dict)


def intercept(X, y=None):
    w = _w()
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    _bernoulli(X @ w + b, y)


def two_sites(X, Z, y=None, u=None):
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs_x", dist.Bernoulli(logits=X @ w), obs=y)
        numpyro.sample("obs_z", dist.Bernoulli(logits=Z @ w), obs=u)


def deterministic_site(X, y=None):
    w = _w()
    eta = numpyro.deterministic("eta", X @ w)
    _bernoulli(eta, y)


def reparam_prior(X, y=None):
    with handlers.reparam(config={"w": LocScaleReparam(0)}):
        w = numpyro.sample("w", dist.Normal(0.0, 2.0).expand([X.shape[1]]).to_event(1))
    _bernoulli(X @ w, y)


MVN_C = np.array([[2.0, 0.5], [0.5, 1.0]])


def mvn_intercept(X, y=None):
    w = numpyro.sample("w", dist.MultivariateNormal(jnp.zeros(2), covariance_matrix=jnp.asarray(MVN_C)))
    b = numpyro.sample("b", dist.Normal(0.0, 2.0))
    lin = numpyro.deterministic("lin", X @ w + b)
    _bernoulli(lin, y)


def affine_public(X, y=None):
    w = _w()
    _bernoulli(-3.0 * (X @ w) + 0.7, y)


def binomial_public(X, y=None):
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Binomial(total_count=5, logits=X @ w), obs=y)


def _builtin(name):
    from bayesdp.analysis.loading import builtin_models
    return builtin_models()[name]


def controls() -> list[Control]:
    R3 = 3.0
    X3 = _ball(M, D, R3, 8)
    Z = _ball(M, D, 2.0, 9)
    mvn_mu = min(2 / (3 + math.sqrt(2)), 0.25)   # precision eigenvalues 2/(3 -+ sqrt 2); Normal(0, 2): 1/4
    return [
        # U = |w|^2/(2 s^2) + sum l_i, s = 0.5: mu = L = 4; |grad l| <= R = 2, diff 2R, Hessian R^2/4, convex
        Control("logistic", _builtin("logistic"), ("X.norm=2", "y.values=0,1"), {"X": _ball(M, 3, 2.0, 10), "y": Y01},
                {"record_grad_bound": 2.0, "record_grad_diff": 4.0, "record_smoothness": 1.0, "strong_convexity": 4.0,
                 "smoothness": 4.0, "v_convex": True, "total_strong_convexity": 4.0}, {"prior_scale": 0.5}),
        # J = [x, 1], x orthogonal to the intercept column: sqrt(R^2 + 1); diff 2 sqrt(R^2 + 1)
        Control("intercept", intercept, (f"X.norm={R3}", "y.values=0,1"), {"X": X3, "y": Y01},
                {"record_grad_bound": math.sqrt(R3 ** 2 + 1), "record_grad_diff": 2 * math.sqrt(R3 ** 2 + 1),
                 "record_smoothness": (R3 ** 2 + 1) / 4, "strong_convexity": 1.0, "v_convex": True}),
        # softmax: |p - e_y| <= sqrt 2, Hessian <= 1/2: sqrt(2) R, R^2/2 (R = 1.5, prior scale 2: mu = 1/4)
        Control("softmax", _builtin("softmax"), ("X.norm=1.5", "y.values=0,1,2"),
                {"X": _ball(M, 4, 1.5, 11), "y": np.arange(M) % 3},
                {"record_grad_bound": math.sqrt(2) * 1.5, "record_grad_diff": 2 * math.sqrt(2) * 1.5,
                 "record_smoothness": 1.5 ** 2 / 2, "strong_convexity": 0.25, "v_convex": True},
                {"prior_scale": 2.0, "num_classes": 3}),
        # Student-t(4, x.w, 0.5): (nu+1)/(2 s sqrt nu) R = 2.5 R, Hessian (nu+1)/(nu s^2) R^2 = 5 R^2, non-convex
        Control("robust", _builtin("robust"), ("X.norm=1",), {"X": DATA_NORM1["X"], "y": Y_REAL},
                {"record_grad_bound": 2.5, "record_grad_diff": 5.0, "record_smoothness": 5.0, "v_convex": False},
                {"df": 4.0, "noise_scale": 0.5}),
        # two Bernoulli sites: grad = c1 x + c2 z, sup R_X + R_Z = 3 (x, z parallel), Hessian (R_X^2 + R_Z^2)/4
        Control("two-observed-sites", two_sites, ("X.norm=1", "Z.norm=2", "y.values=0,1", "u.values=0,1"),
                {"X": DATA_NORM1["X"], "Z": Z, "y": Y01, "u": 1.0 - Y01},
                {"record_grad_bound": 3.0, "record_grad_diff": 6.0, "record_smoothness": 1.25, "v_convex": True}),
        Control("deterministic-site", deterministic_site, NORM, DATA_NORM,
                {"record_grad_bound": R, "record_grad_diff": 2 * R, "record_smoothness": R * R / 4,
                 "strong_convexity": 1.0, "v_convex": True}),
        # w = 2 w_dec, w_dec ~ N(0, 1): theta = w_dec, eta = 2 x.theta: sup 2R, Hessian (2R)^2/4; mu = L = 1
        Control("loc-scale-reparam-prior", reparam_prior, NORM, DATA_NORM,
                {"record_grad_bound": 2 * R, "record_grad_diff": 4 * R, "record_smoothness": R * R,
                 "strong_convexity": 1.0, "smoothness": 1.0, "v_convex": True}),
        Control("mvn-prior-intercept", mvn_intercept, (f"X.norm={R3}", "y.values=0,1"), {"X": X3, "y": np.ones(M)},
                {"record_grad_bound": math.sqrt(R3 ** 2 + 1), "strong_convexity": mvn_mu,
                 "smoothness": 2 / (3 - math.sqrt(2))}),
        # eta = -3 x.w + 0.7: |grad| <= 3R, diff 6R, Hessian 9R^2/4
        Control("public-affine", affine_public, NORM, DATA_NORM,
                {"record_grad_bound": 3 * R, "record_grad_diff": 6 * R, "record_smoothness": 9 * R * R / 4,
                 "v_convex": True}),
        # Binomial(5, x.w), y in {0..5}: psi = 5 sigmoid - y in (-5, 5): 5R, diff 10R, Hessian 5R^2/4
        Control("binomial-public-count", binomial_public, (f"X.norm={R}", "y.values=0,1,2,3,4,5"),
                {"X": DATA_NORM["X"], "y": (np.arange(M) % 6).astype(np.float64)},
                {"record_grad_bound": 5 * R, "record_grad_diff": 10 * R, "record_smoothness": 5 * R * R / 4,
                 "v_convex": True}),
        # Laplace(0, b = 0.5) on 4 weights: prior V gradient sqrt(d)/b = 4
        Control("laplace-prior", _builtin("sparse_logistic"), ("X.norm=1", "y.values=0,1"),
                {"X": _ball(M, 4, 1.0, 12), "y": Y01},
                {"record_grad_bound": 1.0, "prior_v_grad_bound": 4.0, "v_convex": True}, {"prior_scale": 0.5}),
    ]


def domain_data_ok(case) -> Any:
    """The case's data lie in its declared domain (bayesdp's own check; raises DomainError otherwise)."""
    from bayesdp.analysis import Domain
    return Domain.parse(list(case.domain)).check(case.data)
