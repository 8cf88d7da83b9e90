"""``bayesdp bench constants``: how tight are the certified per-record constants? (issue 23's target)

For every configuration the analyzer certifies, among the bundled models (:mod:`bayesdp.models`), the docs
gallery (``docs/gallery.md``, when the repository's docs are at hand) and the idioms of issue 23 (:data:`IDIOMS`),
each certified per-record constant is compared with the largest value *observed* by a search that is
independent of the analyzer:

* the per-record log-likelihood ``l(theta, x)`` is the sum of the observed sites' ``log_prob`` (masks and scales
  applied, ``numpyro.factor`` included) of the model's own NumPyro trace on a data set of ONE record ``x``, with
  the latent sites substituted from the unconstrained vector ``theta`` (``numpyro.infer.util.constrain_fn``:
  the space the samplers and the analyzer use), in float64;
* ``record_grad_bound`` is compared with ``max |grad_theta l(theta, x)|``, ``record_grad_diff`` with
  ``max |grad l(theta, x) - grad l(theta, x')|`` and ``record_smoothness`` (when claimed) with the largest
  ``|eigenvalue|`` of ``hess_theta l(theta, x)``;
* the maximum is searched by projected, normalised gradient ascent (``jax.grad``) over ``theta`` in
  ``[-BOX, BOX]^P`` and the continuous entries of the records in the declared domain (a norm ball, a box),
  from ``--starts`` random starts; entries declared by ``values`` are drawn at random per start and then swept
  over every declared value; every point evaluated is feasible, so the observed maximum is a LOWER bound on
  the true supremum.

The ratio certified / observed is >= 1 for a sound certificate; an observed value above the certified one by
more than :data:`ROUNDING` (relative) is an unsound certificate and is reported as such (``unsound`` in the
summary, ``UNSOUND`` in the table).  A ratio well above 1 means the bound is loose OR that the
supremum is approached only outside the box (e.g. as ``|theta| -> inf``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import BayesDPError

__all__ = ["NAME", "HELP", "BOX", "TARGET", "ROUNDING", "IDIOMS", "Config", "add_arguments", "configurations",
           "observed_max", "run", "format_table"]

NAME = "constants"
HELP = "certified per-record constants vs the maximum found by gradient ascent (issue 23's tightness target)"

#: radius of the box searched over theta (unconstrained coordinates)
BOX = 10.0
#: the target: certified / observed <= TARGET on at least 80% of the certified constants
TARGET = 1.1
#: an observed value above the certified one by more than this relative amount is an UNSOUND certificate; below
#: it, the two agree to float64 rounding (the search evaluates l's derivatives in float64: a certified constant
#: equal to an exactly attained supremum, e.g. n/4 at eta = 0, is observed a few units in the last place above)
ROUNDING = 1e-9
#: records in the data set handed to the analyzer
NUM_RECORDS = 24
CONSTANTS = ("record_grad_bound", "record_grad_diff", "record_smoothness")


@dataclass(frozen=True)
class Config:
    """One configuration: a model, its declared domain and the shape of one record of each data argument.

    Args:
        name: the row's name.
        source: ``models``, ``gallery`` or ``idioms``.
        model: the NumPyro model (data as keyword arguments).
        domain: the domain in the command line's words.
        shapes: the shape of one record of each data argument.
        ints: the data arguments held as integers (int dtype).
        counts: float data arguments whose entries are integers (searched over the integers of their range).
        kwargs: other keyword arguments of the model.
        fix: maps one record (a dict of arrays) to a valid one (e.g. ``hits <= at_bats``), or None.

    Examples:
        >>> Config("m", "idioms", print, ["y.values=0,1"], {"y": ()}).source
        'idioms'
    """

    name: str
    source: str
    model: Callable
    domain: list
    shapes: Mapping[str, tuple]
    ints: tuple = ()
    counts: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    fix: Callable | None = None


# ---------------------------------------------------------------- the idioms of issue 23 (written here)
def _idioms() -> list[Config]:
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    def w_prior(d):
        return numpyro.sample("w", dist.Normal(0.0, 1.0).expand([d]).to_event(1))

    def clipped_sigmoid(X, y=None):
        w = w_prior(X.shape[1])
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(probs=jnp.clip(jax.nn.sigmoid(X @ w), 0.05, 0.95)), obs=y)

    def sigmoid_squared(X, y=None):
        w = w_prior(X.shape[1])
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(probs=jnp.clip(jax.nn.sigmoid(X @ w) ** 2, 0.01, 0.99)), obs=y)

    def binomial_total_count(X, n, y=None):
        w = w_prior(X.shape[1])
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Binomial(n, logits=X @ w), obs=y)

    def negbin2_clipped(X, y=None, k=5.0):
        w = w_prior(X.shape[1])
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.NegativeBinomial2(jnp.exp(jnp.clip(X @ w, -2.0, 2.0)), k), obs=y)

    def ordinal_factor(X, y=None):
        w = w_prior(X.shape[1])
        c = jnp.array([-1.0, 0.5, 2.0])
        with numpyro.plate("data", X.shape[0]):
            numpyro.factor("ll", dist.OrderedLogistic(X @ w, c).log_prob(y))

    def zip_clipped_rate(X, y=None):
        w = w_prior(X.shape[1])
        gate = numpyro.sample("gate", dist.Beta(2.0, 2.0))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.ZeroInflatedPoisson(gate, jnp.exp(jnp.clip(X @ w, -1.0, 2.0))), obs=y)

    def student_floor(X, y=None):
        w = w_prior(X.shape[1])
        u = numpyro.sample("u", dist.Normal(0.0, 1.0))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.StudentT(3.0, X @ w, 1.0 + jax.nn.softplus(u)), obs=y)

    def normal_bounded_loc_floor(X, y=None):
        w = w_prior(X.shape[1])
        u = numpyro.sample("u", dist.Normal(0.0, 1.0))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Normal(2.0 * jnp.tanh(X @ w), 0.5 + jax.nn.softplus(u)), obs=y)

    def stacked_design(age, dose, y=None):
        X = jnp.stack([age, dose, age * dose], axis=1)
        w = w_prior(3)
        with numpyro.plate("data", age.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)

    def scaled_logistic(X, y=None):
        w = w_prior(X.shape[1])
        with numpyro.plate("data", X.shape[0]), numpyro.handlers.scale(scale=0.5):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)

    def no_plate_logistic(X, y=None):
        w = w_prior(X.shape[1])
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)

    def poisson_clip_exp(X, y=None):
        w = w_prior(X.shape[1])
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Poisson(jnp.exp(jnp.clip(X @ w, np.log(0.1), np.log(20.0)))), obs=y)

    def poisson_softplus(X, y=None):
        w = w_prior(X.shape[1])
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Poisson(jax.nn.softplus(X @ w)), obs=y)

    def loc_scale_groups(X, g, y=None):
        from numpyro.infer.reparam import LocScaleReparam

        w = w_prior(X.shape[1])
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        with numpyro.plate("groups", 3):
            with numpyro.handlers.reparam(config={"alpha": LocScaleReparam(0)}):
                alpha = numpyro.sample("alpha", dist.Normal(mu, 2.0))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w + alpha[g]), obs=y)

    def gather_2d(X, g, h, y=None):
        w = w_prior(X.shape[1])
        A = numpyro.sample("A", dist.Normal(0.0, 1.0).expand([3, 2]).to_event(2))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w + A[g, h]), obs=y)

    def binomial_fix(rec):
        return {**rec, "y": jnp.minimum(rec["y"], rec["n"])}

    xr = {"X": (2,), "y": ()}
    return [
        Config("clipped_sigmoid", "idioms", clipped_sigmoid, ["X.norm=1", "y.values=0,1"], xr),
        Config("sigmoid_squared", "idioms", sigmoid_squared, ["X.norm=1", "y.values=0,1"], xr),
        Config("binomial_total_count", "idioms", binomial_total_count, ["X.norm=1", "n.values=0..10", "y.values=0..10"],
               {"X": (2,), "n": (), "y": ()}, fix=binomial_fix),
        Config("negbin2_clipped", "idioms", negbin2_clipped, ["X.norm=1", "y.min=0", "y.max=20"], xr, counts=("y",)),
        Config("ordinal_factor", "idioms", ordinal_factor, ["X.norm=1", "y.values=0,1,2,3"], xr, ints=("y",)),
        Config("zip_clipped_rate", "idioms", zip_clipped_rate, ["X.norm=1", "y.values=0..8"], xr),
        Config("student_floor", "idioms", student_floor, ["X.norm=1", "y.min=-3", "y.max=3"], xr),
        Config("normal_bounded_loc_floor", "idioms", normal_bounded_loc_floor, ["X.norm=1", "y.min=-3", "y.max=3"], xr),
        Config("stacked_design", "idioms", stacked_design,
               ["age.min=-1", "age.max=1", "dose.min=-1", "dose.max=1", "y.values=0,1"],
               {"age": (), "dose": (), "y": ()}),
        Config("scaled_logistic", "idioms", scaled_logistic, ["X.norm=1", "y.values=0,1"], xr),
        Config("no_plate_logistic", "idioms", no_plate_logistic, ["X.norm=1", "y.values=0,1"], xr),
        Config("poisson_clip_exp", "idioms", poisson_clip_exp, ["X.norm=1", "y.values=0..5"], xr),
        Config("poisson_softplus", "idioms", poisson_softplus, ["X.norm=1", "y.values=0..5"], xr),
        Config("loc_scale_groups", "idioms", loc_scale_groups, ["X.norm=1", "g.values=0..2", "y.values=0,1"],
               {"X": (2,), "g": (), "y": ()}, ints=("g",)),
        Config("gather_2d", "idioms", gather_2d, ["X.norm=1", "g.values=0..2", "h.values=0,1", "y.values=0,1"],
               {"X": (2,), "g": (), "h": (), "y": ()}, ints=("g", "h")),
    ]


#: the names of the idioms of issue 23 written in this module
IDIOMS = ("clipped_sigmoid", "sigmoid_squared", "binomial_total_count", "negbin2_clipped", "ordinal_factor",
          "zip_clipped_rate", "student_floor", "normal_bounded_loc_floor", "stacked_design", "scaled_logistic",
          "no_plate_logistic", "poisson_clip_exp", "poisson_softplus", "loc_scale_groups", "gather_2d")


def _builtin() -> list[Config]:
    from ..analysis.loading import builtin_models

    M = builtin_models()
    xr = {"X": (2,), "y": ()}
    b01 = ["X.norm=1", "y.values=0,1"]
    return [
        Config("logistic", "models", M["logistic"], b01, xr),
        Config("softmax", "models", M["softmax"], ["X.norm=1", "y.values=0,1,2"], xr, ints=("y",),
               kwargs={"num_classes": 3}),
        Config("robust", "models", M["robust"], ["X.norm=1", "y.min=-3", "y.max=3"], xr),
        Config("sparse_logistic", "models", M["sparse_logistic"], b01, xr),
        Config("poisson", "models", M["poisson"], ["X.norm=1", "y.values=0..5"], xr),
        Config("hierarchical_logistic", "models", M["hierarchical_logistic"], b01 + ["g.values=0,1,2"],
               {"X": (2,), "g": (), "y": ()}, ints=("g",), kwargs={"num_groups": 3}),
        Config("linear", "models", M["linear"], ["X.norm=1", "y.min=-3", "y.max=3"], xr),
        Config("masked_logistic", "models", M["masked_logistic"], b01 + ["observed.values=0,1"],
               {"X": (2,), "y": (), "observed": ()}),
    ]


GALLERY = Path(__file__).resolve().parents[2] / "docs" / "gallery.md"
_GALLERY_SHAPES = {"X": (2,), "lags": (2,)}
_GALLERY_INTS = {"ordinal": ("y",)}
_GALLERY_COUNTS = {"baseball_pooled": ("at_bats", "hits"), "baseball_pooled_logit": ("at_bats", "hits"),
                   "negbin": ("y",), "negbin_latent": ("y",)}


def _hits_at_most_at_bats(rec):
    import jax.numpy as jnp

    return {**rec, "hits": jnp.minimum(rec["hits"], jnp.floor(rec["at_bats"]))}


def _gallery(path: Path | None = None) -> list[Config]:
    path = GALLERY if path is None else Path(path)
    if not path.is_file():
        return []
    ns: dict = {}
    out = []
    for block in re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S):
        exec(compile(block, str(path), "exec"), ns)
        d = re.match(r"# domain: (.*)\n", block)
        f = re.search(r"^def (\w+)\(", block, flags=re.M)
        if d and f:
            dom = d.group(1).split()
            args = sorted({e.split(".")[0] for e in dom})
            fix = _hits_at_most_at_bats if "at_bats" in args else None
            out.append(Config(f.group(1), "gallery", ns[f.group(1)], dom,
                              {a: _GALLERY_SHAPES.get(a, ()) for a in args}, ints=_GALLERY_INTS.get(f.group(1), ()),
                              counts=_GALLERY_COUNTS.get(f.group(1), ()), fix=fix))
    return out


def configurations(gallery: str | Path | None = None) -> list[Config]:
    """Every configuration the bench runs: the bundled models, the gallery's, then :data:`IDIOMS`.

    Args:
        gallery: the gallery page (``docs/gallery.md`` of a checkout); default :data:`GALLERY`, the page beside
            this package when it runs from a checkout. An installed wheel has no docs: without a path the
            gallery's configurations are left out (:func:`run` says so in its summary).

    Returns:
        The list of :class:`Config`.

    Examples:
        >>> names = [c.name for c in configurations()]
        >>> "logistic" in names and "clipped_sigmoid" in names
        True
    """
    return _builtin() + _gallery(gallery) + _idioms()


# ---------------------------------------------------------------- records in the declared domain
def _project(x, a):
    """Onto the declared set of one argument's continuous entries (box, then norm ball, then box again)."""
    import jax.numpy as jnp

    if a.lo is not None or a.hi is not None:
        x = jnp.clip(x, a.lo, a.hi)
    if a.norm is not None:
        n = jnp.linalg.norm(x)
        x = x * jnp.minimum(1.0, a.norm / jnp.maximum(n, 1e-300))
        if a.lo is not None or a.hi is not None:
            x = jnp.clip(x, a.lo, a.hi)
    return x


def _values(a, integer: bool):
    """The declared values of an argument's entries; for an integer argument declared by ``min``/``max``, every
    integer in between; None for a continuous argument."""
    if a.values is not None:
        return np.asarray(a.values, float)
    if integer and a.lo is not None and a.hi is not None:
        return np.arange(math.ceil(a.lo), math.floor(a.hi) + 1, dtype=float)
    return None


def _random_entries(a, shape, rng, integer=False):
    vals = _values(a, integer)
    if vals is not None:
        return rng.choice(vals, size=shape)
    if a.norm is not None:
        v = rng.standard_normal(shape)
        v = v / max(np.linalg.norm(v), 1e-12) * a.norm * rng.uniform() ** (1 / max(1, int(np.prod(shape))))
        if a.lo is not None or a.hi is not None:
            v = np.clip(v, a.lo, a.hi)
        return v
    lo = -1.0 if a.lo is None else a.lo
    hi = lo + 2.0 if a.hi is None else a.hi
    return rng.uniform(lo, hi, size=shape)


def _dataset(cfg: Config, dom, m: int, rng) -> dict:
    recs = [_one_record(cfg, dom, rng) for _ in range(m)]
    return {k: np.stack([r[k][0] for r in recs]).astype(int if k in cfg.ints else float) for k in cfg.shapes}


def _one_record(cfg: Config, dom, rng) -> dict:
    rec = {}
    for k, shp in cfg.shapes.items():
        a = dom.get(k)
        if a is None:
            raise BayesDPError(f"configuration {cfg.name!r}: no domain declared for {k!r}; declare one")
        rec[k] = _random_entries(a, (1,) + tuple(shp), rng, k in cfg.ints or k in cfg.counts)
    return {k: np.asarray(v, float) for k, v in (cfg.fix(rec) if cfg.fix else rec).items()}


# ---------------------------------------------------------------- the per-record log-likelihood (float64)
def _loglik(cfg: Config, template: dict):
    """``(loglik(u, rec), P)``: the log-likelihood of ONE record from the model's own trace, latent sites
    substituted from the unconstrained vector ``u`` of length ``P``."""
    import jax.numpy as jnp
    from numpyro import handlers
    from numpyro.distributions import biject_to
    from numpyro.infer.util import constrain_fn

    kw = dict(cfg.kwargs)
    tr = handlers.trace(handlers.seed(cfg.model, rng_seed=0)).get_trace(**template, **kw)
    latent = [(n, s) for n, s in tr.items() if s["type"] == "sample" and not s["is_observed"]]
    shapes = [jnp.shape(biject_to(s["fn"].support).inv(s["value"])) for _, s in latent]
    sizes = [int(np.prod(sh)) for sh in shapes]

    def loglik(u, rec):
        params, i = {}, 0
        for (n, _), sh, k in zip(latent, shapes, sizes):
            params[n] = u[i:i + k].reshape(sh)
            i += k
        args = {**rec, **kw}
        cons = constrain_fn(cfg.model, (), args, params)
        t = handlers.trace(handlers.substitute(handlers.seed(cfg.model, rng_seed=0), data=cons)).get_trace(**args)
        total = jnp.zeros((), jnp.float64)
        for s in t.values():
            if s["type"] == "sample" and s["is_observed"]:
                lp = s["fn"].log_prob(s["value"])
                if s.get("mask") is not None:
                    lp = jnp.where(s["mask"], lp, 0.0)
                if s.get("scale") is not None:
                    lp = lp * s["scale"]
                total = total + jnp.sum(lp)
        return total

    return loglik, sum(sizes)


def _objective(kind: str, loglik):
    import jax
    import jax.numpy as jnp

    g = jax.grad(loglik)
    if kind == "record_grad_bound":
        return lambda u, r1, r2: jnp.linalg.norm(g(u, r1))
    if kind == "record_grad_diff":
        return lambda u, r1, r2: jnp.linalg.norm(g(u, r1) - g(u, r2))
    h = jax.hessian(loglik)
    return lambda u, r1, r2: jnp.max(jnp.abs(jnp.linalg.eigvalsh(h(u, r1))))


def observed_max(cfg: Config, kind: str, starts: int = 100, steps: int = 300, seed: int = 0) -> float:
    """The largest value of the per-record quantity behind ``kind`` found by projected gradient ascent
    (module docstring): a lower bound on its supremum over ``theta in [-BOX, BOX]^P`` and the domain.

    Args:
        cfg: the configuration.
        kind: ``record_grad_bound``, ``record_grad_diff`` or ``record_smoothness``.
        starts: random starts (>= 1).
        steps: ascent steps per phase (two phases around a sweep of the declared values).
        seed: seed of the random starts (the search is not a release: nothing here is private).

    Returns:
        The observed maximum (float64).

    Raises:
        BayesDPError: ``kind`` unknown, ``starts`` or ``steps`` < 1.

    Examples:
        The search itself (a few seconds: tests/test_bench_constants.py checks it reaches known suprema)::

            cfg = [c for c in configurations() if c.name == "logistic"][0]
            observed_max(cfg, "record_grad_bound", starts=4, steps=60)   # 0.99999..., sup |x| |sigmoid - y| = 1

        >>> observed_max(configurations()[0], "record_hessian")
        Traceback (most recent call last):
        ...
        bayesdp.errors.BayesDPError: kind='record_hessian' is not one of record_grad_bound, record_grad_diff, record_smoothness; pick one
    """
    if kind not in CONSTANTS:
        raise BayesDPError(f"kind={kind!r} is not one of {', '.join(CONSTANTS)}; pick one")
    if starts < 1 or steps < 1:
        raise BayesDPError(f"starts={starts}, steps={steps}: both must be >= 1; pass positive integers")
    import jax

    if hasattr(jax, "enable_x64"):
        x64 = jax.enable_x64
    else:                                    # jax < 0.8
        from jax.experimental import enable_x64 as x64
    with x64(True):
        return _search(cfg, kind, starts, steps, seed)


def _search(cfg, kind, starts, steps, seed):
    import jax
    import jax.numpy as jnp

    from ..analysis import Domain

    dom = Domain.parse(cfg.domain)
    rng = np.random.default_rng(seed)
    template = {k: jnp.asarray(v) for k, v in _dataset(cfg, dom, 1, rng).items()}
    loglik, P = _loglik(cfg, template)
    f = _objective(kind, loglik)
    cont = [k for k in cfg.shapes if dom.get(k).values is None and k not in cfg.ints and k not in cfg.counts]
    disc = [k for k in cfg.shapes if k not in cont]

    def pair(z):
        u, c1, c2, d1, d2 = z
        r1 = {**{k: c1[k] for k in cont}, **{k: d1[k] for k in disc}}
        r2 = {**{k: c2[k] for k in cont}, **{k: d2[k] for k in disc}}
        return u, _cast(fixrec(r1)), _cast(fixrec(r2))

    def _cast(r):
        return {k: (v.astype(jnp.int64) if k in cfg.ints else v) for k, v in r.items()}

    def fixrec(r):
        return cfg.fix(r) if cfg.fix else r

    def value(z):
        u, r1, r2 = pair(z)
        v = f(u, r1, r2)
        return jnp.where(jnp.isfinite(v), v, -jnp.inf)

    def safe(gr):
        gr = jnp.nan_to_num(gr, nan=0.0, posinf=0.0, neginf=0.0)
        return gr / jnp.maximum(jnp.linalg.norm(gr), 1e-300)

    def proj_c(c):
        return {k: _project(c[k].ravel(), dom.get(k)).reshape(c[k].shape) for k in c}

    def move(z, lr, cur, block):
        # one block (theta, record 1 or record 2) moves; the move is kept only where it does not lower the
        # value (then that block's step grows by 1.5, else it halves): cliffs such as a clip's flat side
        # cannot throw a start off its best point, and the other blocks can follow a ridge
        u, c1, c2, d1, d2 = z
        g = jax.grad(lambda u, c1, c2: value((u, c1, c2, d1, d2)), argnums=(0, 1, 2))(u, c1, c2)
        if block == 0:
            nz = (jnp.clip(u + lr[0] * BOX * safe(g[0]), -BOX, BOX), c1, c2, d1, d2)
        else:
            c = (c1, c2)[block - 1]
            nc = proj_c({k: c[k] + lr[block] * _scale(dom.get(k)) * safe(g[block][k]) for k in c})
            nz = (u, nc, c2, d1, d2) if block == 1 else (u, c1, nc, d1, d2)
        new = value(nz)
        ok = new >= cur
        z = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), nz, z)
        lr = lr.at[block].set(jnp.clip(jnp.where(ok, lr[block] * 1.5, lr[block] * 0.5), 1e-9, 0.2))
        return z, lr, jnp.where(ok, new, cur)

    blocks = [0] + ([1] if cont else []) + ([2] if cont and kind == "record_grad_diff" else [])

    def step(carry, _):
        z, lr, cur = carry
        for blk in blocks:
            z, lr, cur = move(z, lr, cur, blk)
        return (z, lr, cur), None

    def ascend(z, lr0):
        (z, _, cur), _ = jax.lax.scan(step, (z, jnp.full(3, lr0), value(z)), None, length=steps)
        return z, cur

    ascend_v = jax.jit(jax.vmap(ascend, in_axes=(0, None)))
    value_v = jax.jit(jax.vmap(value))

    def draw(k, a):
        integer = k in cfg.ints or k in cfg.counts
        return np.stack([_random_entries(a, (1,) + tuple(cfg.shapes[k]), rng, integer) for _ in range(starts)])

    # theta at every scale: a start's radius is log-uniform in [BOX/1000, BOX]
    u0 = rng.uniform(-1, 1, (starts, P)) * BOX * 10 ** rng.uniform(-3, 0, (starts, 1))
    z = (jnp.asarray(u0),
         {k: jnp.asarray(draw(k, dom.get(k))) for k in cont}, {k: jnp.asarray(draw(k, dom.get(k))) for k in cont},
         {k: jnp.asarray(draw(k, dom.get(k))) for k in disc}, {k: jnp.asarray(draw(k, dom.get(k))) for k in disc})
    best = float(jnp.max(value_v(z)))
    z, v = ascend_v(z, 0.05)
    best = max(best, float(jnp.max(v)))
    # sweep every declared value of every discrete entry (each start keeps its best), then ascend again
    for side in (3, 4):
        for k in disc:
            vals = _values(dom.get(k), True)
            flat = np.asarray(z[side][k]).reshape(starts, -1).copy()
            for j in range(flat.shape[1]):
                scores = []
                for v_ in vals:
                    trial = flat.copy()
                    trial[:, j] = v_
                    zz = list(z)
                    zz[side] = {**z[side], k: jnp.asarray(trial.reshape(z[side][k].shape))}
                    scores.append(np.asarray(value_v(tuple(zz))))
                scores = np.stack(scores)              # (values, starts)
                best = max(best, float(np.max(scores)))
                flat[:, j] = vals[np.argmax(scores, axis=0)]
            zl = list(z)
            zl[side] = {**z[side], k: jnp.asarray(flat.reshape(z[side][k].shape))}
            z = tuple(zl)
    z, v = ascend_v(z, 0.01)
    return max(best, float(jnp.max(v)))


def _scale(a) -> float:
    if a.norm is not None:
        return float(a.norm)
    if a.lo is not None and a.hi is not None:
        return float(a.hi - a.lo) / 2
    return 1.0


# ---------------------------------------------------------------- the bench
def add_arguments(p) -> None:
    """Add the options of ``bayesdp bench constants`` to the argparse sub-parser ``p``.

    Args:
        p: the sub-parser.

    Examples:
        >>> import argparse
        >>> p = argparse.ArgumentParser(prog="bayesdp bench constants")
        >>> add_arguments(p)
        >>> vars(p.parse_args([]))
        {'starts': 100, 'steps': 300, 'seed': 0, 'only': None, 'constants': None, 'gallery': None}
    """
    p.add_argument("--starts", type=int, default=100, help="random starts of the ascent (default 100)")
    p.add_argument("--steps", type=int, default=300, help="ascent steps per phase (default 300)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random starts")
    p.add_argument("--only", default=None, help="comma-separated configuration names (default: all)")
    p.add_argument("--constants", default=None,
                   help=f"comma-separated constants to compare (default: all of {', '.join(CONSTANTS)})")
    p.add_argument("--gallery", default=None, metavar="PATH",
                   help="the docs gallery page to include (default: docs/gallery.md of the checkout this package "
                        "runs from; an installed wheel has none)")


def run(args) -> dict:
    """Certify every configuration and compare each certified per-record constant with the observed maximum.

    Args:
        args: the parsed options (``starts``, ``steps``, ``seed``, ``only``, ``constants``).

    Returns:
        ``{"rows": [...], "refused": [...], "summary": {...}}``; a row has ``model``, ``source``, ``constant``,
        ``certified``, ``observed`` and ``ratio`` (certified / observed); the summary has the fraction within
        :data:`TARGET`, the worst ratios and the ``unsound`` rows (ratio < 1).

    Raises:
        BayesDPError: ``--starts`` or ``--steps`` < 1, or an unknown name in ``--only`` or ``--constants``.

    Examples:
        A full run takes minutes (``bayesdp bench constants``); a typo in ``--only`` is refused at once:

        >>> import argparse
        >>> run(argparse.Namespace(starts=4, steps=40, seed=0, only="logistc"))
        Traceback (most recent call last):
        ...
        bayesdp.errors.BayesDPError: --only=logistc: unknown configuration(s) logistc; pick from ...
    """
    from ..analysis import Domain, analyze

    if args.starts < 1 or args.steps < 1:
        raise BayesDPError(f"--starts={args.starts} --steps={args.steps}: both must be >= 1; pass positive integers")
    gallery = getattr(args, "gallery", None)
    if gallery is not None and not Path(gallery).is_file():
        raise BayesDPError(f"--gallery={gallery}: no such file; pass the path of docs/gallery.md in a checkout")
    gallery_path = Path(gallery) if gallery is not None else GALLERY
    cfgs = configurations(gallery_path)
    if args.only:
        want = [s.strip() for s in args.only.split(",") if s.strip()]
        unknown = sorted(set(want) - {c.name for c in cfgs})
        if unknown:
            raise BayesDPError(f"--only={args.only}: unknown configuration(s) {', '.join(unknown)}; "
                               f"pick from {', '.join(c.name for c in cfgs)}")
        cfgs = [c for c in cfgs if c.name in want]
    kinds = CONSTANTS
    if getattr(args, "constants", None):
        kinds = tuple(k.strip() for k in args.constants.split(",") if k.strip())
        bad = sorted(set(kinds) - set(CONSTANTS))
        if bad:
            raise BayesDPError(f"--constants={args.constants}: unknown constant(s) {', '.join(bad)}; "
                               f"pick from {', '.join(CONSTANTS)}")
    rows, refused, errors = [], [], []
    for cfg in cfgs:
        rng = np.random.default_rng(args.seed)
        dom = Domain.parse(cfg.domain)
        try:
            an = analyze(cfg.model, _dataset(cfg, dom, NUM_RECORDS, rng), dom, model_kwargs=dict(cfg.kwargs))
        except BayesDPError as exc:
            refused.append({"model": cfg.name, "source": cfg.source, "reason": str(exc).splitlines()[0][:200]})
            continue
        c = an.constants
        if c.record_grad_bound is None:
            why = an.first_unproven("per-record gradient bound", "record_grad_bound") or "record_grad_bound not proven"
            refused.append({"model": cfg.name, "source": cfg.source, "reason": why.splitlines()[0][:200]})
            continue
        for kind in kinds:
            cert = getattr(c, kind)
            if cert is None:
                continue
            try:
                obs = observed_max(cfg, kind, args.starts, args.steps, args.seed)
            except Exception as exc:                      # the search's own failure: reported, never hidden
                errors.append({"model": cfg.name, "constant": kind, "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            ratio = cert / obs if obs > 0 else (1.0 if cert == 0 else math.inf)
            rows.append({"model": cfg.name, "source": cfg.source, "constant": kind, "certified": float(cert),
                         "observed": obs, "ratio": ratio})
    within = [r for r in rows if r["ratio"] <= TARGET and not _unsound(r)]
    models = list(dict.fromkeys(r["model"] for r in rows))
    ok = {id(r) for r in within}

    def frac_models(pred):
        return (sum(1 for m in models if all(id(r) in ok for r in rows if r["model"] == m and pred(r))) / len(models)
                if models else None)

    summary = {
        "certified_constants": len(rows),
        "certified_configurations": len(models),
        "fraction_within_target": (len(within) / len(rows)) if rows else None,
        # issue 23's measure: configurations whose gradient bound is within TARGET; and those whose every
        # certified constant is
        "configurations_grad_bound_within_target": frac_models(lambda r: r["constant"] == "record_grad_bound"),
        "configurations_all_within_target": frac_models(lambda r: True),
        "target": TARGET,
        "worst": sorted(rows, key=lambda r: -r["ratio"])[:5],
        "unsound": [r for r in rows if _unsound(r)],
        "starts": args.starts, "steps": args.steps, "box": BOX,
        # None when the page was not found (an installed wheel): its configurations were not run
        "gallery": str(gallery_path) if gallery_path.is_file() else None,
    }
    summary["search_errors"] = errors
    return {"rows": rows, "refused": refused, "summary": summary}


def _unsound(r: dict) -> bool:
    return r["observed"] > r["certified"] * (1 + ROUNDING)


def format_table(result: dict) -> str:
    """The rows as a text table, with the summary (and any UNSOUND row) underneath.

    Args:
        result: what :func:`run` returns.

    Returns:
        The table.

    Examples:
        >>> print(format_table({"rows": [{"model": "m", "source": "idioms", "constant": "record_grad_bound",
        ...     "certified": 1.0, "observed": 1.0, "ratio": 1.0}], "refused": [],
        ...     "summary": {"fraction_within_target": 1.0, "target": 1.1, "unsound": [],
        ...                 "certified_configurations": 1, "certified_constants": 1}}))   # doctest: +NORMALIZE_WHITESPACE
        model  source  constant           certified   observed   ratio
        m      idioms  record_grad_bound  1          1           1.000
        1 configurations, 1 constants: 100% of the constants within 1.1x
    """
    head = ("model", "source", "constant", "certified", "observed", "ratio")
    body = [(r["model"], r["source"], r["constant"], f"{r['certified']:.6g}", f"{r['observed']:.6g}",
             (f"{r['ratio']:.3f}" if r["ratio"] < 1e4 else f"{r['ratio']:.3g}") + ("  UNSOUND" if _unsound(r) else ""))
            for r in result["rows"]]
    widths = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    lines = ["  ".join(str(x[i]).ljust(widths[i]) for i in range(len(head))).rstrip() for x in [head] + body]
    s = result["summary"]
    frac = s["fraction_within_target"]
    lines.append(f"{s['certified_configurations']} configurations, {s['certified_constants']} constants: "
                 f"{'n/a' if frac is None else f'{100 * frac:.0f}%'} of the constants within {s['target']}x")
    if s.get("configurations_grad_bound_within_target") is not None:
        lines.append(f"configurations within {s['target']}x: "
                     f"{100 * s['configurations_grad_bound_within_target']:.0f}% on record_grad_bound, "
                     f"{100 * s['configurations_all_within_target']:.0f}% on every certified constant")
    for r in s["unsound"]:
        lines.append(f"UNSOUND: {r['model']} {r['constant']}: certified {r['certified']:.6g} < observed "
                     f"{r['observed']:.6g}")
    for r in s.get("search_errors", []):
        lines.append(f"SEARCH FAILED: {r['model']} {r['constant']}: {r['error']}")
    for r in result["refused"]:
        lines.append(f"refused: {r['model']}: {r['reason']}")
    if "gallery" in s and s["gallery"] is None:
        lines.append("gallery: docs/gallery.md not found (an installed copy): its configurations were not run; "
                     "pass --gallery PATH")
    return "\n".join(lines)
