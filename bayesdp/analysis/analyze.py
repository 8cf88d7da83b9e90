"""Model inspection and decomposition: NumPyro model + public domain -> constants with provenance.

Potential in the unconstrained space (what the samplers run on)::

    U_D(theta) = -log prior(T(theta)) - log|det J_T(theta)| - sum_i log p(d_i | T(theta))

Only real-supported latent sites are covered by rules (T = identity, no Jacobian
term); any other support is reported as unproven with the site name.  ``U_D = K + V_D``
with K the strongly convex part of the priors and V_D everything else.

How structure is established (never assumed), see docs/analysis.md:

* sites, plates and supports come from numpyro traces on small *synthetic*
  datasets drawn from the declared domain (two sizes, so that the plate over
  records is the plate whose size follows the number of records), plus one trace
  on the real data (shapes and plate size);
* a prior is data-independent if its parameters are identical across the two
  synthetic datasets, and theta-independent (not hierarchical) if identical at
  two random thetas;
* a likelihood's predictor eta (logits / loc) is affine in theta if its Jacobian
  ``J`` in theta is identical at three random thetas, and ``J`` is affine in the
  covariates if ``J(x) = J(0) + sum_j x_j (J(e_j) - J(0))`` holds at random
  records; ``J`` must not depend on the response.  The sup of ``|J|`` over the
  declared domain then follows in closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import AssumptionError, BayesDPError, DomainError, ModelError, positive, positive_int
from .domain import Domain
from .facts import Constants, Fact, Unproven
from .rules import LIKELIHOOD_RULES, PRIOR_RULES, LikelihoodRule, _Unsupported

_TOL = 1e-4               # relative tolerance of the structural checks (float32 traces)


@dataclass
class Analysis:
    model_name: str
    latent_sites: list            # (name, shape, support)
    data_args: list               # names of per-record model arguments
    observed_sites: list          # (name, family)
    record_plate: tuple | None    # (name, size)
    clipped: bool
    clip_norm: float | None
    facts: list
    unproven: list
    constants: Constants
    domain: Domain
    deterministic_sites: list = field(default_factory=list)
    domain_clipping: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def data_size(self) -> int | None:
        return self.constants.data_size

    def first_unproven(self, *whats: str) -> str | None:
        for u in self.unproven:
            if not whats or u.what in whats:
                return u.message()
        return None

    def to_dict(self) -> dict:
        return {
            "name": self.model_name,
            "latent_sites": [{"name": n, "shape": list(s), "support": sup} for n, s, sup in self.latent_sites],
            "observed_sites": [{"name": n, "family": f} for n, f in self.observed_sites],
            "deterministic_sites": list(self.deterministic_sites),
            "record_plate": None if self.record_plate is None else
            {"name": self.record_plate[0], "size": self.record_plate[1]},
            "data_args": list(self.data_args),
            "domain": self.domain.to_dict(),
            "domain_clipping": dict(self.domain_clipping),
            "gradient_clipping": {"clipped": self.clipped, "clip_norm": self.clip_norm},
            "facts": [f.to_dict() for f in self.facts],
            "unproven": [u.to_dict() for u in self.unproven],
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------------------
# tracing helpers


def _model_name(model: Callable) -> str:
    return getattr(model, "__name__", None) or type(model).__name__


def _call_trace(model, kwargs, params=None, what="tracing"):
    """One numpyro trace of ``model(**kwargs)`` with latent sites fixed (``params`` or T(0)).

    Tried first inside one ``jax.jit`` (:func:`_jit_traces`: one XLA compilation for the whole
    model instead of one per primitive and shape), then eagerly, which also produces the error
    message if the model itself fails."""
    fast = _jit_traces(model, kwargs, [kwargs], [params])
    if fast is not None:
        return fast[0]
    return _eager_trace(model, kwargs, params, what)


def _eager_trace(model, kwargs, params=None, what="tracing"):
    from numpyro import handlers

    m = handlers.seed(model, rng_seed=0)
    m = handlers.substitute(m, substitute_fn=_default_value)   # never sample latent sites (improper priors)
    if params is not None:
        m = handlers.substitute(m, data=params)
    try:
        return handlers.trace(m).get_trace(**kwargs)
    except BayesDPError:
        raise
    except Exception as exc:  # the user's model failed: one line naming it
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise ModelError(f"model {_model_name(model)} raised {type(exc).__name__} while {what}: {first}; "
                         "check the data shapes and the model arguments") from None


# -- traces inside one jit ----------------------------------------------------------
#
# Eager JAX dispatch compiles every primitive at every new shape (~20 XLA compilations,
# 0.7-2 s, for a 3-line model).  Tracing the model inside ``jax.jit`` compiles it once; the
# distributions (numpyro pytrees) come back with concrete parameters and the static part of
# each site (type, observed flag, plates) is recorded while tracing.  The jitted callables
# are cached (model, hyperparameters, layout), with the data passed as arguments, so repeated
# analyses of one model reuse them.  Anything the jit path cannot handle (Python control
# flow on values, non-array outputs, argument validation requested) falls back to the eager
# path with its exact semantics: the jit path only ever changes how fast the same trace is
# obtained.

_JIT_CACHE: dict = {}
_JIT_CACHE_MAX = 64
_SITE_META = ("type", "name", "is_observed", "cond_indep_stack")


def _is_array(v) -> bool:
    return isinstance(v, np.ndarray) or type(v).__module__.startswith("jax")


def _static_key(static: Mapping[str, Any]):
    """A cache key for non-array model arguments, or None when they are not plain values."""
    def plain(v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return True
        return isinstance(v, tuple) and all(plain(x) for x in v)
    if not all(plain(v) for v in static.values()):
        return None
    return tuple(sorted((k, repr(v)) for k, v in static.items()))


def _signature(tree) -> tuple:
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return (treedef, tuple((tuple(np.shape(x)), str(jax.dtypes.canonicalize_dtype(
        x.dtype if hasattr(x, "dtype") else np.result_type(x)))) for x in leaves))


def _cached_jit(key, build):
    """``(jitted, meta)`` for ``build() -> (fn, meta)``, cached under ``key`` (None: not cached)."""
    import jax

    if key is not None:
        hit = _JIT_CACHE.get(key)
        if hit is not None:
            return hit
    fn, meta = build()
    out = (jax.jit(fn), meta)
    if key is not None:
        if len(_JIT_CACHE) >= _JIT_CACHE_MAX:
            _JIT_CACHE.clear()
        _JIT_CACHE[key] = out
    return out


def _transform_key(t):
    """A cache key for a parameter-free transform (identity, possibly made independent), else None."""
    if t is None:
        return "none"
    name = type(t).__name__
    if name == "IdentityTransform":
        return "id"
    if name == "IndependentTransform":
        base = _transform_key(t.base_transform)
        return None if base in (None, "none") else ("independent", int(t.reinterpreted_batch_ndims), base)
    return None


def _validation_key():
    from numpyro.distributions import Distribution

    return bool(Distribution._validate_args)


class _TracedValidation:
    """While tracing under jit, numpyro's argument validation (on by default, run when a distribution is
    built) sees tracers and skips the check; this context collects those checks as traced booleans so
    that they are verified on the concrete result instead (a failure re-runs the trace eagerly, which
    raises numpyro's own error).  Checks on concrete values are done at once, as numpyro does."""

    def __init__(self):
        self.checks: list = []

    def __enter__(self):
        import jax.numpy as jnp
        from numpyro.distributions import Distribution, constraints
        from numpyro.util import not_jax_tracer

        self._orig = Distribution.validate_args
        checks = self.checks

        def validate_args(d, strict: bool = True) -> None:
            for param, value in d.get_args().items():
                constraint = d.arg_constraints[param]
                if constraints.is_dependent(constraint):
                    continue
                is_valid = constraint(value)
                if not_jax_tracer(is_valid):
                    if not np.all(is_valid):
                        raise ValueError(f"{type(d).__name__} distribution got invalid {param} parameter.")
                else:
                    checks.append(jnp.all(is_valid))

        Distribution.validate_args = validate_args
        return self

    def __exit__(self, *exc):
        from numpyro.distributions import Distribution

        Distribution.validate_args = self._orig
        return False


def _jit_traces(model, kwargs, datasets, params_list, unflatten=None, layout_key=None):
    """Traces of ``model`` on each ``datasets[i]`` (data arguments) at ``params_list[i]`` inside one jit.

    ``kwargs``: the call's arguments; arrays among them are passed to the jitted function
    (``datasets`` supplies them per trace), the rest are hyperparameters baked into it.
    ``params_list[i]``: None (latent sites at T(0)), a dict of site values, or (with
    ``unflatten``) a flat unconstrained theta.  Returns a list of trace dicts, or None when the
    jit path does not apply (then trace eagerly)."""
    try:
        import jax
        from numpyro import handlers

        static = {k: v for k, v in kwargs.items() if not _is_array(v)}
        skey = _static_key(static)
        key = None
        if skey is not None and (unflatten is None or layout_key is not None):
            try:
                hash(model)
                key = ("trace", model, skey, layout_key, len(datasets), _validation_key())
            except TypeError:
                key = None

        def build():
            meta: dict = {}

            def fn(datas, params):
                sig = _signature((datas, params))
                metas, outs = [], []
                with _TracedValidation() as validation:
                    for data, p in zip(datas, params):
                        m = handlers.seed(model, rng_seed=0)
                        m = handlers.substitute(m, substitute_fn=_default_value)
                        if p is not None:
                            m = handlers.substitute(m, data=unflatten(p) if unflatten is not None else p)
                        tr = handlers.trace(m).get_trace(**data, **static)
                        metas.append([(n, {**{k: s[k] for k in _SITE_META if k in s},
                                               "has_scale": s.get("scale") is not None}) for n, s in tr.items()])
                        outs.append({n: (s["fn"], s["value"]) for n, s in tr.items() if s["type"] == "sample"})
                meta[sig] = metas
                return outs, validation.checks
            return fn, meta

        jitted, meta = _cached_jit(key, build)
        datas = [{k: v for k, v in d.items() if _is_array(v)} for d in datasets]
        params = list(params_list)
        outs, checks = jitted(datas, params)
        metas = meta.get(_signature((datas, params)))
        if metas is None or not all(bool(c) for c in checks):
            return None   # eager: numpyro raises its own error for the invalid argument
        traces = []
        for mt, out in zip(metas, outs):
            tr = {}
            for n, info in mt:
                site = dict(info)
                if n in out:
                    site["fn"], site["value"] = out[n]
                tr[n] = site
            traces.append(tr)
        return traces
    except Exception:
        return None


def _default_value(site):
    """A deterministic value for a latent site: T(0) with T = biject_to(support), else zeros."""
    if site.get("is_observed") or site.get("type") != "sample":
        return None
    import jax.numpy as jnp
    from numpyro.distributions.transforms import biject_to

    fn = site["fn"]
    shape = tuple(site["kwargs"].get("sample_shape", ())) + tuple(fn.batch_shape) + tuple(fn.event_shape)
    try:
        t = biject_to(fn.support)
        return t(jnp.zeros(t.inverse_shape(shape)))
    except Exception:
        return jnp.zeros(shape)


def _unwrap(fn):
    import numpyro.distributions as dist

    d = fn
    while isinstance(d, (dist.ExpandedDistribution, dist.Independent)):
        d = d.base_dist
    return d


def _support_name(fn) -> str:
    from numpyro.distributions import constraints

    s = fn.support
    while isinstance(s, constraints.independent):
        s = s.base_constraint
    return str(s).strip("<>").split(" object")[0].split(".")[-1].lstrip("_").lower() if s is not None else "none"


def _is_real_support(fn) -> bool:
    from numpyro.distributions import constraints

    s = fn.support
    while isinstance(s, constraints.independent):
        s = s.base_constraint
    return s is constraints.real


def _params_of(d) -> dict:
    out = {}
    for k in getattr(type(d), "arg_constraints", {}):
        try:
            v = getattr(d, k)
        except Exception:
            continue
        if v is None:
            continue
        out[k] = np.asarray(v, dtype=np.float64)
    return out


def _same_params(a: dict, b: dict) -> bool:
    if set(a) != set(b):
        return False
    for k in a:
        if a[k].shape != b[k].shape or not np.allclose(a[k], b[k], rtol=1e-6, atol=1e-7):
            return False
    return True


def _check_record_independence(model, kw, syn, observed, record_plate, thetas, unflatten, layout_key) -> None:
    """U_D must be a sum of per-record terms: replacing record 0 may change record 0's log-likelihood
    only.  Checked on in-domain synthetic records (``syn``) at random latent values (at theta = 0 a centred GLM hides the dependence): a model
    that, e.g., centres the features with the data's own mean couples every record to every other one
    and gets no certificate (a replaced record would move all the terms)."""
    synb, changed = {}, False
    for n, v in syn.items():
        arr = np.array(v, copy=True)
        # record 0 takes the value of another synthetic record (so it stays inside the domain)
        other = next((j for j in range(1, arr.shape[0]) if not np.array_equal(arr[j], arr[0])), None) \
            if arr.ndim else None
        if other is not None:
            arr[0] = arr[other]
            changed = True
        synb[n] = arr
    if not changed:   # every synthetic record is the same (a one-point domain): nothing can be coupled
        return
    for theta in thetas:
        t = np.asarray(theta, np.float32)
        pair = _jit_traces(model, {**syn, **kw}, [syn, synb], [t, t], unflatten=unflatten, layout_key=layout_key)
        if pair is None:
            pair = [_eager_trace(model, {**d, **kw}, unflatten(t), what="checking record independence")
                    for d in (syn, synb)]
        for on in observed:
            dim = next(p[1] for p in _plates(pair[0][on]) if p[0] == record_plate[0])
            lps = []
            for tr in pair:
                site = tr[on]
                lp = np.asarray(site["fn"].log_prob(site["value"]), dtype=np.float64)
                lps.append(np.moveaxis(lp, dim, 0) if lp.ndim >= -dim else lp)
            a, b = lps
            if a.ndim == 0 or a.shape != b.shape:
                raise ModelError(f"observed site '{on}': its log-likelihood is not one term per record of plate "
                                 f"'{record_plate[0]}'; write one observation per record")
            if not np.allclose(a[1:], b[1:], rtol=1e-5, atol=1e-6):
                j = 1 + int(np.argmax(np.max(np.abs(a[1:] - b[1:]).reshape(a.shape[0] - 1, -1), axis=1)))
                raise ModelError(f"observed site '{on}': replacing record 0 changes the likelihood of record {j} "
                                 "(records are coupled, e.g. features centred or scaled with the data's own "
                                 "statistics); each record's term must depend on its own record only: do such "
                                 "preprocessing with public constants outside the model")


def _plates(site) -> list:
    return [(f.name, f.dim, f.size) for f in site.get("cond_indep_stack", ())]


# ---------------------------------------------------------------------------
# data preparation


def _per_record_shapes(model, data, domain: Domain, dim) -> dict[str, tuple]:
    """Per-record shapes of the data arguments (from the data, or declared for --no-data)."""
    if data is not None:
        return {k: tuple(np.shape(v)[1:]) for k, v in data.items()}
    decl = getattr(model, "bayesdp_data", None)
    names = dict(decl) if decl else {n: (1 if (domain.get(n).norm is not None or n == "X") else 0)
                                     for n in domain.args}
    shapes = {}
    for n, ndim in names.items():
        if ndim == 0:
            shapes[n] = ()
        else:
            if dim is None:
                raise AssumptionError(f"dim is required: model argument {n} has one row per record and there is "
                                      "no data to read its length from; pass --dim D")
            shapes[n] = (positive_int("dim", dim),)
    return shapes


def _check_data(data: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], int]:
    arrays: dict[str, np.ndarray] = {}
    m = None
    for name, v in data.items():
        try:
            a = np.asarray(v)
        except Exception:
            raise DomainError(f"data {name} is not an array; pass a numeric array") from None
        if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
            raise DomainError(f"data {name} has dtype {a.dtype}, not numeric; pass a numeric array")
        if a.ndim == 0:
            raise DomainError(f"data {name} is a scalar; every data argument needs one entry per record "
                              "(pass hyperparameters as model_kwargs)")
        # integers and booleans are finite; floats are checked in their own dtype (no float64 copy of
        # the data), row by row only to name the first bad record
        if np.issubdtype(a.dtype, np.inexact) and not np.isfinite(a).all():
            finite = np.isfinite(a.reshape(a.shape[0], -1)).all(axis=1)
            i = int(np.argmin(finite))
            raise DomainError(f"data {name}[{i}] contains NaN or inf; remove or repair that record")
        if m is None:
            m = a.shape[0]
        elif a.shape[0] != m:
            first = next(iter(arrays))
            raise DomainError(f"data {name} has {a.shape[0]} records but {first} has {m}; every data argument "
                              "needs the same number of records (leading dimension)")
        arrays[name] = a
    if m is None or m < 1:
        raise DomainError("data has no records; pass at least one record, or use --no-data --data-size M")
    return arrays, int(m)


def _synthetic_record(name: str, shape: tuple, domain: Domain, alt: bool, rng) -> np.ndarray:
    dom = domain.get(name)
    if dom is None:
        return np.full(shape, 1.0 if alt else 0.0)
    if dom.values is not None:
        return np.full(shape, dom.values[-1] if alt else dom.values[0])
    if dom.lo is not None:
        return np.full(shape, dom.hi if alt else dom.lo)
    # norm only
    if not alt:
        return np.zeros(shape)
    v = rng.standard_normal(shape)
    return v / max(np.linalg.norm(v), 1e-12) * dom.norm / 2


def _synthetic(shapes: dict, domain: Domain, k: int, rng, dtypes: dict) -> dict[str, np.ndarray]:
    out = {}
    for n, s in shapes.items():
        rows = [_synthetic_record(n, s, domain, alt=(i % 2 == 1), rng=rng) for i in range(k)]
        out[n] = np.stack(rows).astype(dtypes.get(n, np.float32))
    return out


def _probe_design(shapes: dict, domain: Domain, rng, dtypes: dict):
    """Probe records: every argument 0, then each unit vector of each argument, then 3 random records.

    Affinity of the predictor's Jacobian in the data is checked on these (an algebraic
    property: the probe records need not lie in the domain)."""
    sizes = {n: (int(np.prod(s)) if s else 1) for n, s in shapes.items()}
    zero = {n: np.zeros(s) for n, s in shapes.items()}
    rows = [zero]
    unit_index = []
    for n in shapes:
        for j in range(sizes[n]):
            e = np.zeros(sizes[n])
            e[j] = 1.0
            rows.append({**zero, n: e.reshape(shapes[n])})
            unit_index.append((n, j))
    n_rand = 3
    rand_x = []
    for _ in range(n_rand):
        xs = {n: rng.standard_normal(sizes[n]) for n in shapes}
        if any(dtypes.get(n) == np.int32 for n in shapes):
            xs = {n: (np.round(v) if dtypes.get(n) == np.int32 else v) for n, v in xs.items()}
        rand_x.append(xs)
        rows.append({n: xs[n].reshape(shapes[n]) for n in shapes})
    probe = {n: np.stack([r[n] for r in rows]).astype(dtypes.get(n, np.float32)) for n in shapes}
    return probe, (unit_index, rand_x, n_rand)


# ---------------------------------------------------------------------------
# the analysis


def analyze(model: Callable, data: Mapping[str, Any] | None = None, domain: Domain | None = None,
            model_kwargs: Mapping[str, Any] | None = None, clip_norm: float | None = None,
            data_size: int | None = None, dim: int | None = None, clip_to_domain: bool = False,
            model_name: str | None = None) -> Analysis:
    """Trace ``model``, apply the rules, and derive every constant with its provenance.

    ``data``: per-record model arguments (each array's leading axis is the record);
    ``data=None`` with ``data_size`` (and ``dim`` where shapes are needed) certifies
    before sampling.  ``domain``: public bounds on one record (required; never read off
    the data).  ``clip_norm``: per-record gradient clipping at this norm (the sampler
    then no longer targets the exact posterior).  Raises a one-line
    :class:`~bayesdp.errors.BayesDPError` on invalid input; constants that the rules
    cannot prove are ``None`` and listed in ``unproven``.
    """
    import jax

    name = model_name or _model_name(model)
    if not callable(model):
        raise ModelError(f"model {model!r} is not callable; pass a NumPyro model function")
    if domain is None:
        domain = Domain({})
    if isinstance(domain, (list, tuple, str)):
        domain = Domain.parse(domain)
    if not isinstance(domain, Domain):
        domain = Domain(domain)
    kw = dict(model_kwargs or {})
    G = None
    if clip_norm is not None:
        G = positive("clip_norm", clip_norm, "declare a positive per-record gradient clipping norm")
    if not domain and G is None:
        raise DomainError("no data domain declared; declare public bounds on one record, e.g. --domain X.norm=1.0 "
                          "--domain y.values=0,1 (the analyzer never reads bounds off the data)")

    domain_clipping: dict = {}
    notes: list[str] = []
    if data is not None:
        arrays, m = _check_data(data)
        if data_size is not None and positive_int("data_size", data_size) != m:
            raise DomainError(f"data_size = {data_size} but the data has {m} records; omit data_size or pass "
                              "matching data")
        for n in arrays:
            if n in kw:
                raise ModelError(f"model argument {n} is given both as data and in model_kwargs; pass it once")
        undeclared = [n for n in domain.args if n not in arrays]
        if undeclared:
            raise DomainError(f"domain names argument {undeclared[0]} but the data has no array {undeclared[0]} "
                              f"(data arrays: {', '.join(sorted(arrays))}); fix the name")
        for n, a in arrays.items():
            dn = domain.get(n)
            if dn is not None and dn.norm is not None and a.ndim != 2:
                raise DomainError(f"data {n} has shape {a.shape}: {n}.norm needs one row per record "
                                  "(a 2-D array records x features)")
        checked, domain_clipping = domain.check(arrays, clip=clip_to_domain)
        if domain_clipping:
            domain.check(checked, clip=False)  # clipping must land inside every declared bound
            notes.append("data clipped to the declared domain (records changed per argument: "
                         + ", ".join(f"{k}: {v}" for k, v in domain_clipping.items()) + ")")
        arrays = {k: (v if k not in domain_clipping else v.astype(arrays[k].dtype if
                      np.issubdtype(arrays[k].dtype, np.floating) else np.float64)) for k, v in checked.items()}
    else:
        if data_size is None:
            raise AssumptionError("data_size is required without data; pass --data-size M (the number of records)")
        m = positive_int("data_size", data_size)
        arrays = None

    shapes = _per_record_shapes(model, arrays, domain, dim)
    dtypes = {}
    for n in shapes:
        if arrays is not None:
            dtypes[n] = np.int32 if np.issubdtype(arrays[n].dtype, np.integer) else np.float32
        else:
            dom = domain.get(n)
            ints = dom is not None and dom.values is not None and all(float(v).is_integer() for v in dom.values)
            dtypes[n] = np.int32 if ints else np.float32
    rng = np.random.default_rng(0)
    syn1, design = _probe_design(shapes, domain, rng, dtypes)
    k1 = next(iter(syn1.values())).shape[0]
    k2 = k1 + 2
    syn2 = _synthetic(shapes, domain, k2, rng, dtypes)
    both = _jit_traces(model, {**syn1, **kw}, [syn1, syn2], [None, None])
    if both is not None:
        tr1, tr2 = both
    else:
        tr1 = _eager_trace(model, {**syn1, **kw}, what="tracing on synthetic records")
        tr2 = _eager_trace(model, {**syn2, **kw}, what="tracing on synthetic records")

    facts: list[Fact] = []
    unproven: list[Unproven] = []

    # -- sites -------------------------------------------------------------------
    latent, observed, determ = [], [], []
    for sname, site in tr1.items():
        if site["type"] == "deterministic":
            determ.append(sname)
        if site["type"] != "sample":
            continue
        (observed if site.get("is_observed") else latent).append(sname)
    for sname, site in tr1.items():
        if site["type"] == "sample" and (site.get("has_scale") or site.get("scale") is not None):
            raise ModelError(f"site '{sname}' is scaled (numpyro.handlers.scale, or a plate with subsample_size): "
                             "no rule covers a scaled log-density, and the sampler would apply the scale; remove "
                             "the scale (tempering is --inverse-temperature; minibatches are drawn by SGLD)")
    lat2 = [n for n, s in tr2.items() if s["type"] == "sample" and not s.get("is_observed")]
    if sorted(lat2) != sorted(latent):
        diff = sorted(set(lat2) ^ set(latent))
        raise ModelError(f"latent site '{diff[0]}' exists for some datasets and not others (data-dependent model "
                         "structure); make the set of latent sites independent of the data")
    if not observed:
        raise ModelError(f"model {name} has no observed site: pass the responses as a data argument "
                         "(obs=...) inside a plate over records")
    if not latent:
        raise ModelError(f"model {name} has no latent site: there is nothing to sample")

    # record plate: the plate whose size follows the number of records
    record_plate = None
    for on in observed:
        s1, s2 = tr1[on], tr2[on]
        if s1["fn"].__class__.__name__ == "Unit" or type(_unwrap(s1["fn"])).__name__ == "Unit":
            raise ModelError(f"site '{on}' is a numpyro.factor: no rule covers a free-form log-density term; "
                             "write the likelihood as numpyro.sample(..., obs=...)")
        p1 = [p for p in _plates(s1) if p[2] == k1]
        p2 = {p[0] for p in _plates(s2) if p[2] == k2}
        rec = [p for p in p1 if p[0] in p2]
        if not rec:
            raise ModelError(f"observed site '{on}' is not inside a plate over records (missing plate): wrap the "
                             "likelihood in numpyro.plate('data', N) with N the number of records")
        if record_plate is not None and rec[0][0] != record_plate[0]:
            raise ModelError(f"observed sites use different record plates ('{record_plate[0]}' and "
                             f"'{rec[0][0]}'); use one plate over records")
        record_plate = (rec[0][0], rec[0][1])

    latent_info = []
    layout = []   # (name, shape, offset)
    offset = 0
    for ln in latent:
        s1 = tr1[ln]
        fn = s1["fn"]
        if any(p[0] == record_plate[0] for p in _plates(s1)):
            raise ModelError(f"latent site '{ln}' is inside the record plate '{record_plate[0]}' (one latent per "
                             "record): per-record latent variables are not covered; make it global")
        if getattr(fn, "is_discrete", False) or (fn.support is not None and fn.support.is_discrete):
            raise ModelError(f"latent site '{ln}' is discrete ({type(_unwrap(fn)).__name__}): Langevin samplers "
                             "need continuous latent sites; marginalise it out or make it continuous")
        if type(_unwrap(fn)).__name__ == "ImproperUniform":
            raise ModelError(f"latent site '{ln}' has an improper prior (ImproperUniform): the posterior may not "
                             "exist; give it a proper prior such as Normal")
        shape = tuple(np.shape(s1["value"]))
        if tuple(np.shape(tr2[ln]["value"])) != shape:
            raise ModelError(f"latent site '{ln}' has shape {shape} on one dataset and "
                             f"{tuple(np.shape(tr2[ln]['value']))} on another (data-dependent prior); make its "
                             "shape independent of the data")
        if not _same_params(_params_of(_unwrap(fn)), _params_of(_unwrap(tr2[ln]["fn"]))):
            raise ModelError(f"latent site '{ln}' has a data-dependent prior (its parameters change with the data); "
                             "priors must be public: use constants or model_kwargs hyperparameters")
        latent_info.append((ln, shape, _support_name(fn)))
        size = int(np.prod(shape)) if shape else 1
        layout.append((ln, shape, offset))
        offset += size
    dim_theta = offset

    from numpyro.distributions.transforms import biject_to

    transforms = {}
    for ln, s_, _ in layout:
        try:
            t = biject_to(tr1[ln]["fn"].support)
            transforms[ln] = t if tuple(t.inverse_shape(s_)) == tuple(s_) else None
        except Exception:
            transforms[ln] = None

    def unflatten(theta):
        out = {}
        for ln, s_, o in layout:
            u = theta[o:o + (int(np.prod(s_)) if s_ else 1)].reshape(s_)
            t = transforms[ln]
            out[ln] = t(u) if t is not None else u   # theta is the unconstrained value T^-1(site)
        return out

    thetas = [rng.standard_normal(dim_theta) for _ in range(3)]
    # the jitted callables depend on the layout and on the transforms (cached only when all are identities)
    tkeys = {ln: _transform_key(t) for ln, t in transforms.items()}
    layout_key = (tuple((ln, s_, o, tkeys[ln]) for ln, s_, o in layout)
                  if all(k is not None for k in tkeys.values()) else None)
    trs_theta = _jit_traces(model, {**syn1, **kw}, [syn1, syn1], [np.asarray(t, np.float32) for t in thetas[:2]],
                            unflatten=unflatten, layout_key=layout_key)
    if trs_theta is None:
        trs_theta = [_eager_trace(model, {**syn1, **kw}, unflatten(np.asarray(t, np.float32)),
                                  what="tracing at a random latent value") for t in thetas[:2]]

    # -- priors ------------------------------------------------------------------
    k_mu, k_L = [], []
    v_grads, v_smooth, v_convex_prior = [], [], True
    prior_unproven = False
    no_k_sites = []
    for ln, shape, sup in latent_info:
        fn = tr1[ln]["fn"]
        base = _unwrap(fn)
        size = int(np.prod(shape)) if shape else 1
        pa, pb = (_params_of(_unwrap(t[ln]["fn"])) for t in trs_theta)
        if not _same_params(pa, pb):
            unproven.append(Unproven(ln, "prior decomposition", "its prior parameters depend on other latent "
                                     "sites (hierarchical prior); no rule covers it"))
            prior_unproven = True
            continue
        if not _is_real_support(fn):
            unproven.append(Unproven(ln, "prior decomposition", f"support is {sup}: the unconstrained potential "
                                     "includes the Jacobian term -log|det J_T|, which no rule covers; use a "
                                     "real-supported prior or fix the parameter as a hyperparameter"))
            prior_unproven = True
            continue
        rule = PRIOR_RULES.get(type(base))
        if rule is None:
            unproven.append(Unproven(ln, "prior decomposition", f"no rule for a {type(base).__name__} prior"))
            prior_unproven = True
            continue
        try:
            pf = rule(base, size)
        except _Unsupported as exc:
            unproven.append(Unproven(ln, "prior decomposition", str(exc)))
            prior_unproven = True
            continue
        if pf.k_strong_convexity is not None:
            k_mu.append((pf.k_strong_convexity, ln, pf.rule))
            k_L.append((pf.k_smoothness, ln, pf.rule))
            facts.append(Fact(ln, "K strong_convexity", pf.k_strong_convexity, pf.rule, pf.detail))
            facts.append(Fact(ln, "K smoothness", pf.k_smoothness, pf.rule, pf.detail))
        else:
            no_k_sites.append((ln, type(base).__name__))
        if pf.v_grad_bound > 0 or pf.v_smoothness != 0.0:
            v_grads.append((pf.v_grad_bound, ln, pf.rule))
            v_smooth.append((pf.v_smoothness, ln, pf.rule))
            v_convex_prior = v_convex_prior and pf.v_convex
            facts.append(Fact(ln, "prior V grad bound", pf.v_grad_bound, pf.rule, pf.detail))
            facts.append(Fact(ln, "prior V smoothness", pf.v_smoothness, pf.rule, pf.detail))
            facts.append(Fact(ln, "prior V convex", pf.v_convex, pf.rule))

    # -- records are independent terms ------------------------------------------------
    _check_record_independence(model, kw, syn2, observed, record_plate, thetas[:2], unflatten, layout_key)

    # -- likelihoods ---------------------------------------------------------------
    obs_info = []
    lik_bound, lik_smooth, lik_convex = 0.0, 0.0, True
    lik_terms: list[str] = []
    lik_unproven = False
    for on in observed:
        base = _unwrap(tr1[on]["fn"])
        fam = type(base).__name__
        obs_info.append((on, fam))
        if G is not None:
            continue
        rule = LIKELIHOOD_RULES.get(type(base))
        if rule is None:
            unproven.append(Unproven(on, "per-record gradient bound", f"no rule for a {fam} likelihood; pass "
                                     "--clip-norm G to clip per-record gradients"))
            lik_unproven = True
            continue
        if rule.refuse:
            unproven.append(Unproven(on, "per-record gradient bound", f"{rule.refuse}; pass --clip-norm G to clip "
                                     "per-record gradients (the sampler then no longer targets the exact "
                                     "posterior)"))
            lik_unproven = True
            continue
        try:
            res = _likelihood_site(model, kw, on, rule, tr1, shapes, dtypes, domain, syn1, design, unflatten,
                                   layout_key, dim_theta, thetas, record_plate, arrays, jax)
        except _Unsupported as exc:
            unproven.append(Unproven(on, "per-record gradient bound", str(exc)))
            lik_unproven = True
            continue
        b, h, cvx, detail = res
        facts.append(Fact(on, "record grad bound", b, rule.rule, detail))
        facts.append(Fact(on, "record smoothness", h, rule.rule, detail))
        facts.append(Fact(on, "convex in theta", cvx, rule.rule))
        lik_bound += b
        lik_smooth += h
        lik_convex = lik_convex and cvx
        lik_terms.append(f"{rule.rule} @ {on}")

    # the record plate follows the number of records (sizes k1 and k2 above), so on the data its
    # size is m: the analysis never evaluates the model on the full data (O(1) in the records).
    plate = (record_plate[0], m)

    # -- combine -----------------------------------------------------------------
    prov: dict[str, str] = {}
    c = Constants(data_size=m)
    if prior_unproven:
        u = next(x for x in unproven if x.what == "prior decomposition")
        mu = L = None
        prov["strong_convexity"] = prov["smoothness"] = "unproven: " + u.message()
    elif not k_mu:
        mu = L = None
        prov["strong_convexity"] = prov["smoothness"] = (
            f"unproven: no latent site has a strongly convex prior part (site '{no_k_sites[0][0]}' has a "
            f"{no_k_sites[0][1]} prior)")
    else:
        L = max(x[0] for x in k_L)
        lsite = max(k_L, key=lambda x: x[0])
        prov["smoothness"] = f"{lsite[2]} @ {lsite[1]} (max over blocks)"
        if no_k_sites:
            mu = None
            prov["strong_convexity"] = (f"unproven: site '{no_k_sites[0][0]}' ({no_k_sites[0][1]} prior) has no "
                                        "strongly convex part, so K is not strongly convex in its coordinates")
        else:
            mu = min(x[0] for x in k_mu)
            msite = min(k_mu, key=lambda x: x[0])
            prov["strong_convexity"] = f"{msite[2]} @ {msite[1]} (min over blocks)"
    c.strong_convexity, c.smoothness = mu, L

    if prior_unproven:
        pvg, pvs = None, None
        prov["prior_v_grad_bound"] = prov["strong_convexity"]
    else:
        pvg = math.sqrt(sum(g * g for g, _, _ in v_grads))
        pvs = 0.0 if all(s is not None for s, _, _ in v_smooth) else None
        if pvs is not None and v_smooth:
            pvs = max(s for s, _, _ in v_smooth)
        prov["prior_v_grad_bound"] = (" + ".join(f"{r} @ {s}" for _, s, r in v_grads) + " (root sum of squares "
                                      "over blocks)") if v_grads else "no prior term in V"
    c.prior_v_grad_bound = pvg

    if G is not None:
        c.record_grad_bound, c.record_grad_diff, c.record_smoothness = G, 2.0 * G, None
        lik_convex = False
        src = f"per-record gradient clipping at clip_norm = {G:g} @ " + ", ".join(o for o, _ in obs_info)
        prov["record_grad_bound"] = src
        prov["record_grad_diff"] = src + " (2 * clip_norm)"
        prov["record_smoothness"] = "unproven: clipped gradients are not known to be Lipschitz"
        notes.append(f"per-record likelihood gradients are clipped at norm {G:g}: the certificates hold for the "
                     "clipped sampler, which no longer targets the exact posterior")
    elif lik_unproven:
        u = next(x for x in unproven if x.what == "per-record gradient bound")
        msg = "unproven: " + u.message()
        prov["record_grad_bound"] = prov["record_grad_diff"] = prov["record_smoothness"] = msg
        lik_convex = False
    else:
        c.record_grad_bound = lik_bound
        c.record_grad_diff = 2.0 * lik_bound
        c.record_smoothness = lik_smooth
        src = " + ".join(lik_terms)
        prov["record_grad_bound"] = src
        prov["record_grad_diff"] = src + " (2 * record_grad_bound: sup over two records)"
        prov["record_smoothness"] = src

    rgb, rgd = c.record_grad_bound, c.record_grad_diff
    if rgb is not None and pvg is not None:
        c.grad_bound = m * rgb + pvg
        prov["grad_bound"] = (f"data_size * record_grad_bound + prior_v_grad_bound = {m} * {rgb:.6g} + {pvg:.6g} "
                              f"[{prov['record_grad_bound']}; {prov['prior_v_grad_bound']}]")
    else:
        prov["grad_bound"] = prov["record_grad_bound"] if rgb is None else prov["prior_v_grad_bound"]
    c.grad_diff = rgd
    prov["grad_diff"] = ("record_grad_diff (replace-one; the prior is data-independent) "
                         f"[{prov['record_grad_diff']}]") if rgd is not None else prov["record_grad_diff"]
    c.grad_diff_add_remove = rgb
    prov["grad_diff_add_remove"] = ("record_grad_bound (add/remove one record) "
                                    f"[{prov['record_grad_bound']}]") if rgb is not None else prov["record_grad_bound"]

    if c.record_smoothness is not None and pvs is not None:
        c.v_smoothness = m * c.record_smoothness + pvs
        prov["v_smoothness"] = f"data_size * record_smoothness + prior V smoothness = {m} * " \
                               f"{c.record_smoothness:.6g} + {pvs:.6g}"
    elif c.record_smoothness is None:
        prov["v_smoothness"] = "unproven: " + prov["record_smoothness"].removeprefix("unproven: ")
    elif prior_unproven:
        prov["v_smoothness"] = prov["prior_v_grad_bound"]
    else:
        rough = ", ".join(f"'{s_}'" for sm, s_, _ in v_smooth if sm is None)
        prov["v_smoothness"] = f"unproven: the prior part of V is not smooth at site {rough}"

    c.v_convex = bool(lik_convex and v_convex_prior and not prior_unproven and
                      (G is None and not lik_unproven))
    prov["v_convex"] = ("every likelihood and prior-V term is convex" if c.v_convex else
                        "not proven convex: " + ("gradients are clipped" if G is not None else
                                                 "a likelihood or prior-V term is non-convex or unproven"))

    if mu is None:
        c.total_strong_convexity = None
        prov["total_strong_convexity"] = "unproven: " + prov["strong_convexity"].removeprefix("unproven: ")
    elif c.v_convex:
        c.total_strong_convexity = mu
        prov["total_strong_convexity"] = "strong_convexity of K + 0 (V convex)"
    elif c.v_smoothness is not None and mu - c.v_smoothness > 0:
        c.total_strong_convexity = mu - c.v_smoothness
        prov["total_strong_convexity"] = "strong_convexity of K - v_smoothness (V only smooth)"
    else:
        c.total_strong_convexity = None
        prov["total_strong_convexity"] = ("unproven: V is not convex and strong_convexity - v_smoothness = "
                                          f"{mu - c.v_smoothness:.6g} <= 0" if c.v_smoothness is not None else
                                          "unproven: V is neither proven convex nor smooth")
    if L is not None and c.v_smoothness is not None:
        c.total_smoothness = L + c.v_smoothness
        prov["total_smoothness"] = "smoothness of K + v_smoothness"
    else:
        prov["total_smoothness"] = "unproven: " + (prov["v_smoothness"].removeprefix("unproven: ")
                                                   if c.v_smoothness is None else "K has no smooth part")
    prov["inverse_temperature"] = "sampler configuration (1 = Bayesian posterior)"
    prov["data_size"] = "number of records in the data" if arrays is not None else "declared data_size"
    c.provenance = prov

    data_args = [n for n in shapes]
    return Analysis(model_name=name, latent_sites=latent_info, data_args=data_args, observed_sites=obs_info,
                    record_plate=plate, clipped=G is not None, clip_norm=G, facts=facts, unproven=unproven,
                    constants=c, domain=domain, deterministic_sites=determ, domain_clipping=domain_clipping,
                    notes=notes)


# ---------------------------------------------------------------------------
# one likelihood site: affine predictor in theta, affine Jacobian in the covariates


def _likelihood_site(model, kw, site, rule: LikelihoodRule, tr1, shapes, dtypes, domain: Domain, probe, design,
                     unflatten, layout_key,
                     dim_theta, thetas, record_plate, arrays, jax):
    import jax.numpy as jnp

    from numpyro import handlers

    base = _unwrap(tr1[site]["fn"])
    value = np.asarray(tr1[site]["value"])
    plate_name = record_plate[0]
    frame = [p for p in _plates(tr1[site]) if p[0] == plate_name][0]
    # response argument: the data argument equal to the observed value
    response = None
    for n, a in probe.items():
        if a.shape == value.shape and np.array_equal(np.asarray(a, np.float64), value.astype(np.float64)):
            response = n

    # response range over the declared domain, within the family's support
    resp_range = None
    if rule.support is not None:
        lo, hi, integer = rule.support(base)
        if response is None:
            raise _Unsupported("its observed value is not one of the model's data arguments, so its range is "
                               "unknown; pass the responses directly as obs=")
        dom = domain.get(response)
        rr = dom.value_range() if dom is not None else None
        if rr is None:
            rr = (lo, hi)
        elif rr[0] < lo or rr[1] > hi:
            raise DomainError(f"domain of {response} = [{rr[0]:g}, {rr[1]:g}] exceeds the {rule.family} support "
                              f"[{lo:g}, {hi:g}] of site '{site}'; declare {response} within the support")
        resp_range = rr
        if arrays is not None:
            y = np.asarray(arrays[response], dtype=np.float64)
            bad = (y < lo) | (y > hi) | ((np.floor(y) != y) if integer else False)
            if np.any(bad):
                i = int(np.argmax(bad.reshape(bad.shape[0], -1).any(axis=1)))
                raise DomainError(f"data {response}[{i}] is outside the {rule.family} support [{lo:g}, {hi:g}] of "
                                  f"site '{site}'; fix the data")

    covariates = list(shapes)   # the response is probed too: J must not depend on it
    unit_index, rand_x, n_rand = design
    cov_sizes = {n: (int(np.prod(shapes[n])) if shapes[n] else 1) for n in covariates}

    axis_from_end = -frame[1]  # plate dim counts from the right of the batch shape

    def extract(tr, attr, event_ndim):
        fn = tr[site]["fn"]
        d = _unwrap(fn)
        p = jnp.asarray(getattr(d, attr))
        batch = tuple(fn.batch_shape)
        ev = tuple(p.shape[p.ndim - event_ndim:]) if event_ndim else ()
        p = jnp.broadcast_to(p, batch + ev)
        ax = len(batch) - axis_from_end
        p = jnp.moveaxis(p, ax, 0)
        return p.reshape(p.shape[0], -1)

    def param_fn(attr, event_ndim):
        def f(theta):
            tr = handlers.trace(handlers.substitute(handlers.seed(model, rng_seed=0), data=unflatten(theta))
                                ).get_trace(**probe, **kw)
            return extract(tr, attr, event_ndim)
        return f

    Js = fixed_vals = None
    fast = _jit_jacobians(model, kw, site, rule, probe, thetas, unflatten, layout_key, extract, axis_from_end)
    if fast is not None:
        Js, fixed_J, fixed_vals = fast
        for attr in rule.fixed:
            if np.any(fixed_J[attr] != 0):
                raise _Unsupported(f"its {attr} depends on the latent sites; {rule.family} needs a fixed {attr}")
    else:   # the same computation with the data baked in (and its one-line diagnosis on failure)
        try:
            f = param_fn(rule.predictor, rule.event_ndim)
            jac = jax.jit(jax.jacfwd(f))
            Js = [np.asarray(jac(jnp.asarray(t, jnp.float32)), dtype=np.float64) for t in thetas]
            fixed_vals = {}
            for attr in rule.fixed:
                fa = param_fn(attr, 0)
                Jf = np.asarray(jax.jacfwd(fa)(jnp.asarray(thetas[0], jnp.float32)))
                if np.any(Jf != 0):
                    raise _Unsupported(f"its {attr} depends on the latent sites; {rule.family} needs a fixed {attr}")
                fixed_vals[attr] = np.asarray(fa(jnp.asarray(thetas[0], jnp.float32)))
        except BayesDPError:
            raise
        except _Unsupported:
            raise
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            raise _Unsupported(f"its {rule.predictor} could not be differentiated in theta ({type(exc).__name__}: "
                               f"{first})") from None
    for attr, v in fixed_vals.items():
        if v.size and not np.allclose(v, v.reshape(-1)[0]):
            raise _Unsupported(f"its {attr} varies across records; {rule.family} needs the same {attr} for every "
                               "record")
    J = Js[0]                                    # (k, P, D)
    scale = 1.0 + np.max(np.abs(J))
    for Jo in Js[1:]:
        if np.max(np.abs(Jo - J)) > _TOL * scale:
            raise _Unsupported(f"its {rule.predictor} is not affine in the latent sites (the Jacobian changes with "
                               "theta)")
    J0 = J[0]
    E = J[1:1 + len(unit_index)]                 # (p_total, P, D): J(e_j) - J(0)
    E = E - J0[None]
    for r, xs in enumerate(rand_x):
        xv = np.concatenate([xs[n] for n in covariates]) if covariates else np.zeros(0)
        pred = J0 + np.tensordot(xv, E, axes=(0, 0)) if len(xv) else J0
        if np.max(np.abs(J[1 + len(unit_index) + r] - pred)) > _TOL * (1.0 + np.max(np.abs(pred))):
            raise _Unsupported(f"the Jacobian of its {rule.predictor} in theta is not affine in the data argument(s) "
                               f"{', '.join(covariates)}")

    # sup over the domain of the norm of each row of J(x) = J0 + sum_a E_a x_a
    P = J0.shape[0]
    row_bounds = []
    supports = []
    detail_args = []
    for c_ in range(P):
        j0 = J0[c_]
        S = 0.0
        orth = True
        sup_c = np.abs(j0) > 0
        start = 0
        for n in covariates:
            p_a = cov_sizes[n]
            Ea = E[start:start + p_a, c_, :].T    # (D, p_a)
            start += p_a
            if np.max(np.abs(Ea)) == 0:
                continue
            if n == response:
                raise _Unsupported(f"the Jacobian of its {rule.predictor} in theta depends on the response {n}")
            dom = domain.get(n)
            R = dom.row_norm_bound(p_a) if dom is not None else None
            if R is None:
                raise DomainError(f"argument {n} enters the predictor of site '{site}' but has no bounded domain; "
                                  f"declare e.g. --domain {n}.norm=R or --domain {n}.min=A --domain {n}.max=B")
            S += float(np.linalg.norm(Ea, 2)) * R
            detail_args.append(n)
            if np.max(np.abs(Ea.T @ j0)) > _TOL * (1.0 + np.max(np.abs(j0))):
                orth = False
            sup_c = sup_c | (np.abs(Ea) > 0).any(axis=1)
        n0 = float(np.linalg.norm(j0))
        row_bounds.append(math.sqrt(n0 * n0 + S * S) if orth else n0 + S)
        supports.append(sup_c)
    disjoint = True
    if P > 1:
        cnt = np.sum(np.stack(supports), axis=0)
        disjoint = bool(np.all(cnt <= 1))
    Jop = max(row_bounds) if disjoint else math.sqrt(sum(b * b for b in row_bounds))
    n_units = P // (int(np.prod(np.shape(getattr(base, rule.predictor))[-rule.event_ndim:]))
                    if rule.event_ndim else 1)
    n_units = max(1, n_units)
    unit_score = float(rule.score_bound(base, resp_range))
    unit_hess = float(rule.hessian_bound(base))
    b = Jop * math.sqrt(n_units) * unit_score
    h = Jop * Jop * unit_hess
    detail = (f"grad = J^T psi, sup|J| = {Jop:.6g} over the domain of {', '.join(sorted(set(detail_args))) or '-'} "
              f"({'rows with disjoint supports' if disjoint else 'Frobenius'}), sup|psi| = "
              f"{math.sqrt(n_units) * unit_score:.6g}, sup|d psi/d eta| = {unit_hess:.6g}; checked: Jacobian "
              f"constant at 3 random thetas, affine in the covariates at {n_rand} random records")
    return b, h, rule.convex, detail


def _jit_jacobians(model, kw, site, rule, probe, thetas, unflatten, layout_key, extract, axis_from_end):
    """Jacobian of the predictor of ``site`` in theta at each theta, and the fixed parameters' Jacobian
    and values at ``thetas[0]``, from one cached jitted function with the probe data as arguments.
    None when that does not apply (then the caller computes the same with the data baked in)."""
    try:
        import jax
        from numpyro import handlers

        skey = _static_key(kw)
        key = None
        if skey is not None and layout_key is not None:
            try:
                hash(model)
                key = ("jac", model, skey, layout_key, site, axis_from_end, rule.predictor, rule.event_ndim,
                       tuple(rule.fixed),
                       _validation_key())
            except TypeError:
                key = None

        def build():
            def param(theta, data, attr, event_ndim):
                tr = handlers.trace(handlers.substitute(handlers.seed(model, rng_seed=0), data=unflatten(theta))
                                    ).get_trace(**data, **kw)
                return extract(tr, attr, event_ndim)

            def fn(theta, data):
                J = jax.jacfwd(lambda t: param(t, data, rule.predictor, rule.event_ndim))(theta)
                fixed = {a: (jax.jacfwd(lambda t, a=a: param(t, data, a, 0))(theta), param(theta, data, a, 0))
                         for a in rule.fixed}
                return J, fixed
            return fn, None

        jitted, _ = _cached_jit(key, build)
        data = {k: v for k, v in probe.items()}
        outs = [jitted(np.asarray(t, np.float32), data) for t in thetas]
        Js = [np.asarray(J, dtype=np.float64) for J, _ in outs]
        fixed = outs[0][1]
        return Js, {a: np.asarray(v[0]) for a, v in fixed.items()}, {a: np.asarray(v[1]) for a, v in fixed.items()}
    except Exception:
        return None
