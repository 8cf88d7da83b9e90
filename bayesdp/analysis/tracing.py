"""Tracing: a NumPyro model -> its program (a jaxpr) and its sites.

The model is traced ONCE, abstractly, with a **symbolic number of records** ``m``
(``jax.export.symbolic_shape``): every data argument is an abstract array of shape
``(m, *record_shape)``, so the program is valid for every number of records, the record axes
are exactly the axes of size ``m``, and the analysis never touches the data nor grows with it.
Latent sites are program inputs in the **unconstrained space the samplers use**
(``theta_s = T_s^-1(value_s)``, ``T_s = biject_to(support)``).  The program's outputs are, for
every sample site:

* ``logp``: its log-density term (latent sites: summed, with the Jacobian ``log|det J_T|``;
  observed sites: one entry per element of the batch, not summed over records);
* ``param:NAME``: each parameter of its (unwrapped) distribution, broadcast to the site's batch
  shape (plus the parameter's own trailing axes, e.g. the classes of Categorical logits);
* ``value`` (observed sites): the observed value.

The Jacobian program ``d param / d theta`` of the predictors is traced on request
(:meth:`Program.jacobian`).  Static facts about each site (family, wrappers, plates, support,
scale, mask, shapes) are recorded while tracing (:class:`Site`).
"""

from __future__ import annotations

import builtins
import re
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import BayesDPError, ModelError
import traceback
from .structure.sites import _is_number, raise_all
from .session import memo, program_key

__all__ = ["Program", "RECORDS", "Site", "trace_program"]

#: the name of the symbolic record count
RECORDS = "m"


@dataclass(frozen=True)
class Site:
    """Static facts about one sample site of the model, recorded while tracing.

    Args:
        name: the site's name.
        observed: whether it is observed (a likelihood term) rather than latent.
        family: the class name of the unwrapped distribution.
        dist_type: the unwrapped distribution class.
        wrappers: the class names of its wrappers (Independent, ExpandedDistribution, ...).
        value_shape: its value's shape (may contain the symbolic record count).
        batch_shape: its batch shape.
        event_shape: its event shape.
        support: its support's name (:func:`support_name` style: ``real``, ``positive``, ``boolean``...).
        discrete: whether the distribution is discrete.
        plates: ``(name, dim, size)`` of the enclosing plates.
        scaled: whether a ``scale`` handler applies to it.
        masked: whether it is masked.
        params: the parameter names of the unwrapped distribution.
        unconstrained_shape: the shape of its unconstrained value (latent sites).
        transform: the name of the bijection to its support.
        constraint: the support (a NumPyro constraint).
        bound_params: ``(attribute, parameter)`` for each bound of the support that is a parameter of the
            distribution which is not one number (a Binomial's ``("upper_bound", "total_count")`` with a
            per-record ``total_count``): the support's bound is then read from that parameter's range.
        scale_value: the factor of a ``numpyro.handlers.scale`` around the site when it is one finite positive
            number fixed when the model is written (not traced: a public constant), else None.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.tracing import trace_program
        >>> model, _ = load_model("logistic")
        >>> site = trace_program(model, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32}).sites["obs"]
        >>> site.observed, site.family, [p[0] for p in site.record_plates]
        (True, 'BernoulliLogits', ['data'])
    """

    name: str
    observed: bool
    family: str                     # class name of the unwrapped distribution
    dist_type: Any                  # the unwrapped distribution class
    wrappers: tuple                 # class names of the wrappers (Independent, ExpandedDistribution, ...)
    value_shape: tuple              # may contain the symbolic record count
    batch_shape: tuple
    event_shape: tuple
    support: str
    discrete: bool
    plates: tuple                   # (name, dim, size) of the enclosing plates
    scaled: bool
    masked: bool
    params: tuple                   # parameter names of the unwrapped distribution
    unconstrained_shape: tuple = ()
    transform: str = "identity"
    constraint: Any = field(default=None, compare=False, repr=False)   # the support (numpyro constraint)
    bound_params: tuple = ()        # (support bound attribute, parameter) for bounds that ARE a parameter
    scale_value: float | None = None   # the scale handler's factor when it is one public positive number

    @property
    def record_plates(self) -> list:
        """The enclosing plates whose size is the symbolic record count, as ``(name, dim, size)``."""
        return [p for p in self.plates if not _is_const(p[2])]


def _is_const(d) -> bool:
    return isinstance(d, (int, np.integer))


def support_name(constraint) -> str:
    """``positive``, ``unit_interval``, ``real``... (the constraint's class, snake case).

    Args:
        constraint: a NumPyro constraint (``independent`` wrappers are looked through).

    Returns:
        The constraint class's name in snake case, ``"none"`` if it has none.

    Examples:
        >>> from numpyro.distributions import constraints
        >>> from bayesdp.analysis.tracing import support_name
        >>> support_name(constraints.positive), support_name(constraints.independent(constraints.unit_interval, 1))
        ('positive', 'unit_interval')
    """
    from numpyro.distributions import constraints

    c = constraint
    while isinstance(c, constraints.independent):
        c = c.base_constraint
    name = type(c).__name__.lstrip("_")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() if name else "none"


def _unwrap(fn):
    import numpyro.distributions as dist

    wrappers = []
    d = fn
    while True:
        if isinstance(d, (dist.ExpandedDistribution, dist.Independent)):
            wrappers.append(type(d).__name__)
            d = d.base_dist
        elif type(d).__name__ == "MaskedDistribution":
            wrappers.append("MaskedDistribution")
            d = d.base_dist
        else:
            return d, tuple(wrappers)


def _broadcast_param(fn, base, p):
    """Parameter ``p`` of ``base`` broadcast to the site's batch(+event) shape plus its own trailing axes."""
    import jax.numpy as jnp

    full = tuple(fn.batch_shape) + tuple(fn.event_shape)
    pre = full[:len(full) - len(base.event_shape)]
    k = max(0, jnp.ndim(p) - len(base.batch_shape))
    extra = tuple(jnp.shape(p)[jnp.ndim(p) - k:]) if k else ()
    return jnp.broadcast_to(p, pre + extra)


@dataclass
class Program:
    """The traced model: ``jaxpr`` (closed, symbolic record count), its inputs and named outputs.

    Built by :func:`trace_program`.  The program's inputs are the latent sites (unconstrained) then the data
    arguments, each in sorted order; its outputs are named ``(site, field)`` with field ``"logp"``,
    ``"value"`` (observed sites), ``"param:NAME"`` or ``"mask"``.

    Args:
        model: the NumPyro model.
        model_name: its name for messages.
        jaxpr: the closed jaxpr (symbolic record count).
        inputs: ``("theta", site)`` or ``("data", arg)`` per program input, in order.
        outputs: ``(site, field)`` -> output index.
        sites: name -> :class:`Site` (sample sites, in model order).
        deterministic: the names of the deterministic sites.
        data_shapes: data argument -> per-record shape.
        data_dtypes: data argument -> dtype.
        latent: the latent site names (program input order).
        record_dim: the symbolic record count.
        model_kwargs: the model's keyword arguments used while tracing.
        summed: the ``numpyro.factor`` sites outside every plate whose log-factor is a sum over the records; the
            program's log-factor output of each is the vector of its summands, one per record (what is proven of
            it then is proven as of a factor inside the plate).

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.tracing import trace_program
        >>> model, _ = load_model("logistic")
        >>> program = trace_program(model, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32})
        >>> program.inputs
        [('theta', 'w'), ('data', 'X'), ('data', 'y')]
        >>> program.latent, program.observed, program.output("obs", "logp") is not None
        (['w'], ['obs'], True)
    """

    model: Callable
    model_name: str
    jaxpr: Any
    inputs: list            # ("theta", site) or ("data", arg) per program input, in order
    outputs: dict           # (site, field) -> output index; field in {"logp", "value", "param:NAME"}
    sites: dict             # name -> Site (sample sites, in model order)
    deterministic: list
    data_shapes: dict       # arg -> per-record shape
    data_dtypes: dict
    latent: list            # latent site names (program input order)
    record_dim: Any         # the symbolic record count
    model_kwargs: dict
    summed: tuple = ()
    _jac: dict = field(default_factory=dict)

    @property
    def observed(self) -> list:
        """The names of the observed sites, in model order."""
        return [n for n, s in self.sites.items() if s.observed]

    def output(self, site: str, what: str) -> int | None:
        """The index of output ``(site, what)``.

        Args:
            site: a sample site's name.
            what: ``"logp"``, ``"value"``, ``"param:NAME"`` or ``"mask"``.

        Returns:
            The output index, or None if the program has no such output.
        """
        return self.outputs.get((site, what))

    def abstract_inputs(self) -> tuple:
        """Abstract arrays of the program's inputs (data with the symbolic record count as leading axis).

        Returns:
            ``(theta, data)``: dicts of ``jax.ShapeDtypeStruct`` by latent site and by data argument.
        """
        import jax

        theta = {n: jax.ShapeDtypeStruct(self.sites[n].unconstrained_shape, _float())
                 for n in self.latent}
        data = {a: jax.ShapeDtypeStruct((self.record_dim,) + tuple(s), self.data_dtypes[a])
                for a, s in self.data_shapes.items()}
        return theta, data

    def jacobian(self, wanted: list[tuple[str, str]]):
        """(closed jaxpr, outputs) of ``d param / d theta`` for each (site, param) in ``wanted``:
        outputs map (site, param, latent site) -> output index (shape: param's shape + latent shape)."""
        key = tuple(wanted)
        if key in self._jac:
            return self._jac[key]
        import jax

        def predictors(theta, data):
            tr = _trace_sites(self.model, theta, data, self.model_kwargs, self.latent, self.sites)
            out = {}
            for site, attr in wanted:
                fn = tr[site]["fn"]
                base, _ = _unwrap(fn)
                out[f"{site}\x00{attr}"] = _broadcast_param(fn, base, getattr(base, attr))
            return out

        theta, data = self.abstract_inputs()

        def jac(theta, data):
            return jax.jacfwd(predictors, argnums=0)(theta, data)
        try:
            closed, shape = jax.make_jaxpr(jac, return_shape=True)(theta, data)
        except BayesDPError:
            raise
        except Exception as exc:
            raise _JacobianError(_first_line(exc)) from None
        flat, tree = jax.tree_util.tree_flatten(shape)
        paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(shape)[0]]
        outputs = {}
        for i, path in enumerate(paths):
            key_pred = path[0].key
            lat = path[1].key
            site, attr = key_pred.split("\x00")
            outputs[(site, attr, lat)] = i
        del flat, tree
        self._jac[key] = (closed, outputs)
        return closed, outputs

    def logp_jacobian(self, site: str):
        """(closed jaxpr, {latent site: output index}) of the gradient in theta of the site's per-record
        log-density (:func:`record_logp`; shape: (records,) + latent shape).  Forward mode, as ``jax.jacfwd``,
        but the tangent basis (the identity over all latent coordinates, in :attr:`latent` order) is the LAST
        program input, so that an interpreter can tell derivative values (those that depend on it) from primal
        ones."""
        key = ("logp", site)
        if key in self._jac:
            return self._jac[key]
        import jax
        import jax.numpy as jnp

        sizes = [int(np.prod(self.sites[n].unconstrained_shape)) for n in self.latent]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)

        def logp(flat, data):
            theta = {n: flat[offsets[k]:offsets[k + 1]].reshape(self.sites[n].unconstrained_shape)
                     for k, n in enumerate(self.latent)}
            if site in self.summed:
                # the summands of the factor's sum over records: the program's own output (tracing the model
                # again would give the sum)
                from jax.extend import core as jcore

                vals = [theta[n] for n in self.latent] + [data[a] for a in sorted(self.data_shapes)]
                return jcore.jaxpr_as_fun(self.jaxpr)(*vals)[self.output(site, "logp")]
            tr = _trace_sites(self.model, theta, data, self.model_kwargs, self.latent, self.sites)
            return record_logp(tr[site]["fn"], tr[site]["value"])

        def jac(theta, data, basis):
            flat = jnp.concatenate([jnp.ravel(theta[n]) for n in self.latent]) if self.latent else jnp.zeros(0)
            J = jax.vmap(lambda v: jax.jvp(lambda f: logp(f, data), (flat,), (v,))[1], out_axes=-1)(basis)
            return {n: J[..., offsets[k]:offsets[k + 1]].reshape(J.shape[:-1] + self.sites[n].unconstrained_shape)
                    for k, n in enumerate(self.latent)}
        theta, data = self.abstract_inputs()
        D = int(offsets[-1])
        basis = jax.ShapeDtypeStruct((D, D), _float())
        try:
            closed, shape = jax.make_jaxpr(jac, return_shape=True)(theta, data, basis)
        except BayesDPError:
            raise
        except Exception as exc:
            raise _JacobianError(_first_line(exc)) from None
        paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(shape)[0]]
        out = (closed, {path[0].key: i for i, path in enumerate(paths)})
        self._jac[key] = out
        return out

    # -- values inside the program -------------------------------------------------
    def producer(self, var):
        """The top-level equation that produces ``var`` (None for an input, a constant or a literal)."""
        for e in self.jaxpr.jaxpr.eqns:
            if var in e.outvars:
                return e
        return None

    def with_outputs(self, extra: list):
        """The program with ``extra`` (variables of its top level) appended to its outputs."""
        from jax.extend import core as jcore

        j = self.jaxpr.jaxpr
        return jcore.ClosedJaxpr(j.replace(outvars=list(j.outvars) + list(extra)), self.jaxpr.consts)

    def var_jacobian(self, var):
        """(closed jaxpr, {latent site: output index}) of ``d var / d theta`` (shape var shape + latent shape)."""
        key = ("var", id(var))
        if key in self._jac:
            return self._jac[key]
        import jax
        from jax.extend import core as jcore

        j = self.jaxpr.jaxpr
        sub = jcore.jaxpr_as_fun(jcore.ClosedJaxpr(j.replace(outvars=[var]), self.jaxpr.consts))
        latent, args = sorted(self.latent), sorted(self.data_shapes)

        def value(theta, data):
            return sub(*([theta[n] for n in latent] + [data[a] for a in args]))[0]
        theta, data = self.abstract_inputs()
        closed, shape = jax.make_jaxpr(lambda t, d: jax.jacfwd(value)(t, d), return_shape=True)(theta, data)
        paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(shape)[0]]
        out = (closed, {path[0].key: i for i, path in enumerate(paths)})
        self._jac[key] = out
        return out


def record_logp(fn, value):
    """The log-density of ``value`` under ``fn`` summed over every axis of constant size: one term per record
    (the record axes, of symbolic size, are kept; the per-record gradient is the gradient of that term)."""
    import jax.numpy as jnp

    lp = fn.log_prob(value)
    axes = tuple(i for i, d in enumerate(jnp.shape(lp)) if _is_const(d))
    return jnp.sum(lp, axis=axes) if axes else lp


class _JacobianError(Exception):
    pass


def _float():
    import jax.numpy as jnp

    return jnp.float32


def _first_line(exc) -> str:
    return f"{type(exc).__name__}: " + ((str(exc).strip().splitlines() or [""])[0][:240])


def _default(site):
    """A latent site's placeholder value for the discovery trace (T(0); integers for discrete sites)."""
    import jax.numpy as jnp
    from numpyro.distributions.transforms import biject_to

    fn = site["fn"]
    shape = tuple(site["kwargs"].get("sample_shape", ())) + tuple(fn.batch_shape) + tuple(fn.event_shape)
    if getattr(fn, "is_discrete", False) or (fn.support is not None and fn.support.is_discrete):
        return jnp.zeros(shape, dtype=jnp.int32)
    try:
        t = biject_to(fn.support)
        return t(jnp.zeros(t.inverse_shape(shape)))
    except Exception:
        return jnp.zeros(shape)


def _trace_sites(model, theta: Mapping | None, data, kw, latent, sites):
    """The numpyro trace of ``model`` with latent sites set to T(theta) (or placeholders)."""
    from numpyro import handlers
    from numpyro.distributions.transforms import biject_to

    m = handlers.seed(model, rng_seed=0)
    if theta is None:
        def sub(site):
            if site.get("is_observed") or site.get("type") != "sample":
                return None
            return _default(site)
        m = handlers.substitute(m, substitute_fn=sub)
    else:
        values = {}
        for n in latent:
            values[n] = biject_to(sites[n].constraint)(theta[n])
        m = handlers.substitute(m, data=values)
    return handlers.trace(m).get_trace(**data, **kw)


def _site_record(name, s) -> Site:
    from numpyro.distributions.transforms import biject_to

    fn = s["fn"]
    base, wrappers = _unwrap(fn)
    discrete = bool(getattr(fn, "is_discrete", False) or (fn.support is not None and fn.support.is_discrete))
    value_shape = tuple(np.shape(s["value"])) if not hasattr(s["value"], "shape") else tuple(s["value"].shape)
    un_shape, tname = value_shape, "identity"
    if not s.get("is_observed") and not discrete:
        try:
            t = biject_to(fn.support)
            un_shape = tuple(t.inverse_shape(value_shape))
            while type(t).__name__ == "IndependentTransform":
                t = t.base_transform
            tname = type(t).__name__
        except Exception:
            tname = "none"
    params = tuple(k for k in type(base).arg_constraints if _has_attr(base, k))
    import numpyro.distributions as dist

    if isinstance(base, dist.GammaPoisson) and "rate" not in params and _has_attr(base, "rate"):
        params += ("rate",)      # NegativeBinomial2 stores its mean as GammaPoisson's rate = concentration / mean
    if "rate" not in params and zero_inflated_poisson(base) is not None:
        params += ("rate",)      # ZeroInflatedDistribution(Poisson(rate), gate=... or gate_logits=...): the base's rate
    bound_params = ()
    sup = getattr(fn, "support", None)
    for attr in ("lower_bound", "upper_bound"):
        b = getattr(sup, attr, None)
        if b is None or _is_number(b):
            continue
        for k in params:
            if getattr(base, k, None) is b:
                bound_params += ((attr, k),)
                break
    rec = Site(name=name, observed=bool(s.get("is_observed")), family=type(base).__name__, dist_type=type(base),
               wrappers=wrappers, value_shape=value_shape, batch_shape=tuple(fn.batch_shape),
               event_shape=tuple(fn.event_shape), support=support_name(fn.support) if fn.support is not None else
               "none", discrete=discrete,
               plates=tuple((f.name, f.dim, f.size) for f in s.get("cond_indep_stack", ())),
               scaled=s.get("scale") is not None, masked="MaskedDistribution" in wrappers or s.get("mask") is not None,
               params=params, unconstrained_shape=un_shape, transform=tname, constraint=fn.support,
               bound_params=bound_params, scale_value=_public_scale(s.get("scale")))
    return rec


def _public_scale(c) -> float | None:
    """The scale handler's factor if it is one concrete finite positive number (a Python or NumPy number, or a
    concrete array of size 1: a constant of the model, never a traced value), else None."""
    import jax

    if c is None or isinstance(c, jax.core.Tracer):
        return None
    try:
        a = np.asarray(c, dtype=np.float64)
    except Exception:  # noqa: BLE001 - not a number
        return None
    if a.size != 1:
        return None
    v = float(a.reshape(()))
    return v if np.isfinite(v) and v > 0 else None


def zero_inflated_poisson(base):
    """The Poisson inside ``ZeroInflatedDistribution(Poisson(rate), gate=...)`` or ``(..., gate_logits=...)``
    (NumPyro's ``ZeroInflatedProbs`` / ``ZeroInflatedLogits``, the base expanded to the batch shape), or None
    (another distribution, or another base: only an exact ``Poisson`` qualifies)."""
    import numpyro.distributions as dist
    from numpyro.distributions.discrete import ZeroInflatedProbs

    if not isinstance(base, ZeroInflatedProbs) or isinstance(base, dist.ZeroInflatedPoisson):
        return None
    inner, wrappers = _unwrap(getattr(base, "base_dist", None))
    if type(inner) is not dist.Poisson or [w for w in wrappers if w != "ExpandedDistribution"]:
        return None
    return inner


def _param(base, k):
    """Parameter ``k`` of the unwrapped distribution (a zero-inflated Poisson's ``rate``: its base's)."""
    if k == "rate" and not _has_attr(base, "rate"):
        inner = zero_inflated_poisson(base)
        if inner is not None:
            return inner.rate
    return getattr(base, k)


def _has_attr(d, k) -> bool:
    try:
        return getattr(d, k) is not None
    except Exception:
        return False


def _model_name(model) -> str:
    return getattr(model, "__name__", None) or type(model).__name__


def trace_program(model: Callable, data_shapes: Mapping[str, tuple], data_dtypes: Mapping[str, Any],
                  model_kwargs: Mapping[str, Any] | None = None, model_name: str | None = None) -> Program:
    """Trace ``model`` with abstract data (``data_shapes``: per-record shapes) and a symbolic record count.

    The model is never run on numbers: every data argument is an abstract array of shape
    ``(m, *data_shapes[arg])`` for a symbolic ``m``, latent sites are abstract in their unconstrained space.

    Args:
        model: a NumPyro model taking the data arguments as keyword arguments.
        data_shapes: data argument -> the shape of one record.
        data_dtypes: data argument -> dtype.
        model_kwargs: other keyword arguments of the model (fixed while tracing).
        model_name: the model's name for messages (default: the function's name).

    Returns:
        The :class:`Program`.

    Raises:
        ModelError: if the model cannot be traced with a symbolic number of records (message names the site
            or the line), or a latent site cannot be analysed.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.tracing import trace_program
        >>> model, _ = load_model("logistic")
        >>> program = trace_program(model, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32})
        >>> sorted(program.sites), program.data_shapes
        (['obs', 'w'], {'X': (2,), 'y': ()})
    """
    # the same for every record count, domain and data: traced once inside one public call (analysis/session.py)
    model_name = model_name or _model_name(model)
    key, keep = program_key(model, data_shapes, data_dtypes, model_kwargs or {}, model_name)
    return memo("program", key, lambda: _trace_program(model, data_shapes, data_dtypes, model_kwargs, model_name),
                keep)


def _trace_program(model: Callable, data_shapes: Mapping[str, tuple], data_dtypes: Mapping[str, Any],
                   model_kwargs: Mapping[str, Any] | None, model_name: str | None) -> Program:
    import jax
    import numpyro.distributions as dist
    from jax import export

    name = model_name or _model_name(model)
    model = _with_symbolic_len(model)
    kw = dict(model_kwargs or {})
    (M,) = export.symbolic_shape(RECORDS)
    data = {a: jax.ShapeDtypeStruct((M,) + tuple(s), data_dtypes[a]) for a, s in data_shapes.items()}

    # 1. discovery: sites, shapes, plates (latent sites at placeholder values)
    found: dict = {}

    def discover(data):
        tr = _trace_sites(model, None, data, kw, [], {})
        found["trace"] = tr
        return [s["value"] for s in tr.values() if s["type"] in ("sample", "deterministic")
                and hasattr(s["value"], "shape")]
    try:
        _guard(lambda: jax.make_jaxpr(discover)(data), name, "tracing the model with a symbolic number of records")
    except ModelError as exc:
        _diagnose(model, data_shapes, data_dtypes, kw, exc)
        raise
    tr = found["trace"]
    sites: dict[str, Site] = {}
    determ = []
    for sname, s in tr.items():
        if s["type"] == "deterministic":
            determ.append(sname)
        if s["type"] == "sample":
            sites[sname] = _site_record(sname, s)
    latent = [n for n, s in sites.items() if not s.observed]

    # 2. the program: theta (unconstrained) and data -> logp, parameters, values

    raise_all(_check_latents(sites, latent))
    outputs: dict = {}

    def program(theta, data):
        from numpyro.distributions.transforms import biject_to

        tr = _trace_sites(model, theta, data, kw, latent, sites)
        outs = []

        def put(key, v):
            outputs[key] = len(outs)
            outs.append(v)
        for sname, rec in sites.items():
            s = tr[sname]
            fn = s["fn"]
            base, _ = _unwrap(fn)
            if rec.observed:
                put((sname, "logp"), fn.log_prob(s["value"]))
                put((sname, "value"), s["value"])
            else:
                t = biject_to(fn.support)
                lp = fn.log_prob(s["value"]).sum() + t.log_abs_det_jacobian(theta[sname], s["value"]).sum()
                put((sname, "logp"), lp)
            for k in rec.params:
                put((sname, f"param:{k}"), _broadcast_param(fn, base, _param(base, k)))
            if rec.masked:
                put((sname, "mask"), _mask_of(fn))
        return outs

    theta = {n: jax.ShapeDtypeStruct(sites[n].unconstrained_shape, _float()) for n in latent}
    try:
        closed = _guard(lambda: jax.make_jaxpr(program)(theta, data), name, "tracing its log-density")
    except ModelError as exc:
        by_value = [n for n, r in sites.items() if r.observed and issubclass(
            r.dist_type, (dist.CategoricalLogits, dist.CategoricalProbs))]
        if by_value and "indexes by its observed value" in str(exc):
            raise ModelError(str(exc).replace("indexes by its observed value", "indexes by its observed value (site "
                                              + ", ".join(f"'{n}'" for n in by_value) + ")", 1)) from None
        raise
    # a numpyro.factor outside every plate whose log-factor is a sum over the records (jnp.sum of per-record
    # terms): the program keeps the summands, one per record, as that site's log-factor
    sums = [n for n, r in sites.items() if r.observed and r.family == "Unit" and not r.record_plates]
    summed: tuple = ()
    if sums:
        wanted = [outputs[(n, k)] for n in sums for k in ("logp", "param:log_factor") if (n, k) in outputs]
        args = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]
        try:
            new, done = _split_record_sums(closed, wanted, args)
        except Exception:  # noqa: BLE001 - not split: the site is refused as a factor outside the plate
            new, done = closed, []
        summed = tuple(n for n in sums if outputs[(n, "logp")] in done)
        if summed:
            closed = new
    # the jaxpr's inputs follow the pytree order of (theta dict, data dict): sorted keys
    inputs = [("theta", n) for n in sorted(latent)] + [("data", a) for a in sorted(data_shapes)]
    return Program(model=model, model_name=name, jaxpr=closed, inputs=inputs, outputs=outputs, sites=sites,
                   deterministic=determ, data_shapes={a: tuple(s) for a, s in data_shapes.items()},
                   data_dtypes=dict(data_dtypes), latent=sorted(latent), record_dim=M, model_kwargs=kw,
                   summed=summed)


def _symbolic_len(obj):
    """``len(obj)``, but the length of an array (a JAX tracer) is its leading dimension as JAX holds it, the
    symbolic number of records included: ``len(X) == X.shape[0]`` for every array, by definition, so a model
    tracing with this ``len`` computes exactly what it computes with Python's at every number of records."""
    import jax

    if isinstance(obj, (jax.core.Tracer, jax.ShapeDtypeStruct)):
        if not obj.shape:
            raise TypeError("len() of unsized object")
        return obj.shape[0]
    return builtins.len(obj)


def _with_symbolic_len(model):
    """``model`` with ``len`` resolved to :func:`_symbolic_len` (a copy of the function with a copy of its
    globals, so nothing is changed for anyone else), when it is a plain function that calls the built-in
    ``len``: ``numpyro.plate("data", len(X))`` is then ``numpyro.plate("data", X.shape[0])``, which the
    analysis holds for every number of records.  Functions the model calls keep their own ``len`` (a ``len`` of
    the number of records there is refused with the rewrite: ``X.shape[0]``)."""
    if not isinstance(model, types.FunctionType) or "len" in model.__globals__:
        return model
    code = model.__code__
    names = set(code.co_names)
    stack = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    while stack:        # functions and lambdas defined inside the model look up globals in the same dict
        c = stack.pop()
        names |= set(c.co_names)
        stack += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    b = model.__globals__.get("__builtins__")
    if "len" not in names or (b.get("len") if isinstance(b, dict) else getattr(b, "len", None)) is not builtins.len:
        return model
    g = dict(model.__globals__)
    g["len"] = _symbolic_len
    f = types.FunctionType(code, g, model.__name__, model.__defaults__, model.__closure__)
    f.__kwdefaults__ = model.__kwdefaults__
    f.__dict__.update(model.__dict__)
    f.__qualname__, f.__module__, f.__doc__ = model.__qualname__, model.__module__, model.__doc__
    f.__wrapped__ = model
    return f


def _symbolic(shape) -> list[int]:
    return [i for i, d in enumerate(shape) if not _is_const(d)]


def _sum_inner(jaxpr) -> bool:
    """Whether a (nested) jit body sums over an axis of the number of records."""
    for e in jaxpr.eqns:
        if e.primitive.name == "reduce_sum" and set(_symbolic(e.invars[0].aval.shape)) & set(e.params["axes"]):
            return True
        if e.primitive.name in ("jit", "pjit") and _sum_inner(e.params["jaxpr"].jaxpr):
            return True
    return False


def _split_record_sums(closed, wanted: list[int], args) -> tuple:
    """The program ``closed`` re-traced with each output in ``wanted`` that is a SUM OVER THE RECORDS replaced by
    its summands, one per record: ``(closed jaxpr, [wanted outputs split])``.

    An output ``v`` is split when the program computes it as ``v = sum_i P_i`` through a ``reduce_sum`` over the
    axis of the number of records followed by operations linear in that sum (``neg``, a sum or difference of two
    such sums, a product or quotient by a value without a record axis, dtype conversion, reshape, broadcast,
    squeeze, further sums, ``jit`` calls, inlined), and ``P`` (shape ``(m,) + v.shape``) is computed alongside by
    the same operations applied to each summand.  ``sum_i P_i = v`` is then an identity of the program, exact for
    every input: nothing is claimed about ``P`` (that term ``i`` reads record ``i`` only is proven afterwards by
    the dependence analysis, as for a plate).  Every other operation is bound as it is (custom derivatives
    included), so the rest of the program is unchanged."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax._src import source_info_util
    from jax.extend import core as jcore

    split: dict = {}

    def read(env, v):
        return v.val if isinstance(v, jcore.Literal) else env[v]

    def run(jaxpr, consts, vals, decs):
        env: dict = {}
        dec: dict = {}
        for v, c in zip(jaxpr.constvars, consts):
            env[v] = c
        for v, a, p in zip(jaxpr.invars, vals, decs):
            env[v] = a
            if p is not None:
                dec[v] = p
        for e in jaxpr.eqns:
            name = e.primitive.name
            ins = [read(env, v) for v in e.invars]
            pins = [None if isinstance(v, jcore.Literal) else dec.get(v) for v in e.invars]
            ns = source_info_util.current_name_stack() + e.source_info.name_stack
            with source_info_util.user_context(e.source_info.traceback, name_stack=ns), e.ctx.manager:
                if name in ("jit", "pjit") and (any(p is not None for p in pins) or _sum_inner(e.params["jaxpr"].jaxpr)):
                    inner = e.params["jaxpr"]
                    outs, pouts = run(inner.jaxpr, inner.consts, ins, pins)
                else:
                    bp = e.primitive.get_bind_params(e.params)
                    subfuns, bp = bp if isinstance(bp, tuple) else ((), bp)   # jax < 0.8: (subfuns, params)
                    ans = e.primitive.bind(*subfuns, *ins, **bp)
                    outs = list(ans) if e.primitive.multiple_results else [ans]
                    pouts = [None] * len(outs)
                    if not e.primitive.multiple_results:
                        pouts = [_linear_split(name, e.params, e.invars, ins, pins, outs[0], jnp, lax)]
            for v, o, p in zip(e.outvars, outs, pouts):
                env[v] = o
                if p is not None:
                    dec[v] = p
        return ([read(env, v) for v in jaxpr.outvars],
                [None if isinstance(v, jcore.Literal) else dec.get(v) for v in jaxpr.outvars])

    def program(*vals):
        outs, pouts = run(closed.jaxpr, closed.consts, list(vals), [None] * len(vals))
        res = list(outs)
        for i in wanted:
            p = pouts[i]
            if p is not None and not _symbolic(jnp.shape(outs[i])) and jnp.ndim(outs[i]) == 0:
                res[i] = p
                split[i] = True
        return res
    new = jax.make_jaxpr(program)(*args)
    return new, sorted(split)


def _linear_split(name, params, invars, ins, pins, out, jnp, lax):
    """The summands ``P`` (shape ``(m,) + out.shape``) of ``out`` when ``out`` is a sum over the records
    (:func:`_split_record_sums`), from the summands ``pins`` of the operands ``ins``; None when it is not (known)."""
    shapes = [tuple(v.aval.shape) for v in invars]
    if name == "reduce_sum":
        axes = tuple(params["axes"])
        if pins[0] is not None:
            return jnp.sum(pins[0], axis=tuple(a + 1 for a in axes)) if axes else pins[0]
        sym = _symbolic(shapes[0])
        if len(sym) == 1 and sym[0] in axes:
            r = sym[0]
            x = jnp.moveaxis(ins[0], r, 0)
            rest = tuple(1 + a - (a > r) for a in axes if a != r)
            return jnp.sum(x, axis=rest) if rest else x
        return None
    if all(p is None for p in pins) or _symbolic(jnp.shape(out)):
        return None
    if name in ("neg", "copy", "copy_p"):
        return -pins[0] if name == "neg" else pins[0]
    if name == "convert_element_type":
        return lax.convert_element_type(pins[0], params["new_dtype"])
    shape = tuple(jnp.shape(out))

    def full(p):        # summands of an operand of shape () broadcast to the result's shape
        return p if p.ndim - 1 == len(shape) else lax.broadcast_in_dim(p, (p.shape[0],) + shape, (0,))
    if name in ("add", "sub"):
        if pins[0] is None or pins[1] is None:
            return None
        return full(pins[0]) + full(pins[1]) if name == "add" else full(pins[0]) - full(pins[1])
    if name in ("mul", "div"):
        k = 0 if pins[0] is not None else 1
        if pins[1 - k] is not None or _symbolic(shapes[1 - k]) or (name == "div" and k == 1):
            return None
        other = jnp.broadcast_to(ins[1 - k], shape)[None]
        return full(pins[k]) * other if name == "mul" else full(pins[k]) / other
    if name == "reshape" and params.get("dimensions") is None:
        return jnp.reshape(pins[0], (pins[0].shape[0],) + tuple(jnp.shape(out)))
    if name == "broadcast_in_dim":
        return lax.broadcast_in_dim(pins[0], (pins[0].shape[0],) + tuple(jnp.shape(out)),
                                    (0,) + tuple(d + 1 for d in params["broadcast_dimensions"]))
    if name == "squeeze":
        return jnp.squeeze(pins[0], axis=tuple(d + 1 for d in params["dimensions"]))
    return None


def _mask_of(fn):
    """The mask of a (possibly nested) MaskedDistribution, broadcast to the site's batch shape, as 0/1 floats."""
    import jax.numpy as jnp

    mask = True
    d = fn
    while True:
        if type(d).__name__ == "MaskedDistribution":
            mask = jnp.logical_and(mask, d._mask)
        if not hasattr(d, "base_dist"):
            break
        d = d.base_dist
    return jnp.broadcast_to(jnp.asarray(mask, dtype=jnp.float32), tuple(fn.batch_shape))


def _check_latents(sites, latent) -> list[str]:
    """Latent sites no certificate covers: discrete, per-record, imputed by obs_mask (every one of them)."""
    problems = []
    for n in latent:
        s = sites[n]
        base = n[:-len("_unobserved")] if n.endswith("_unobserved") else None
        if base is not None and "MaskedDistribution" in s.wrappers and sites.get(base + "_observed") is not None:
            problems.append(f"observed site '{base}' uses obs_mask=: NumPyro then imputes the masked records with a "
                            f"per-record latent site '{n}', which no certificate covers; drop the masked records "
                            "with numpyro.handlers.mask(mask=...) around the likelihood instead (masked records "
                            "contribute nothing and nothing is imputed)")
        elif s.discrete:
            problems.append(f"discrete latent site '{n}': Langevin samplers need continuous latent sites and '{n}' is "
                            f"discrete ({s.family}); enumerate it out or marginalise it")
        elif s.record_plates or any(not _is_const(d) for d in s.value_shape):
            problems.append(f"latent site '{n}' is inside the record plate (one latent value per record): "
                            "per-record latent variables are not covered; make it global or marginalise it")
    return problems


def _user_frame(exc) -> tuple[str, str]:
    """(``file.py:LINE (function)``, the source line) of the innermost frame of the model's own code."""

    skip = ("/jax/", "/jaxlib/", "/numpyro/", "/bayesdp/", "/numpy/", "<frozen")
    best = ("", "")
    for fr in traceback.extract_tb(exc.__traceback__):
        f = fr.filename.replace("\\", "/")
        if not any(k in f for k in skip):
            best = (f"{f.rsplit('/', 1)[-1]}:{fr.lineno} ({fr.name})", (fr.line or "").strip())
    return best


def _source_hint(src: str, at: str) -> str | None:
    """A rewrite read off the model's own line, for the idioms whose fix is exact."""
    if "unique(" in src:
        return (f"the model counts groups with np.unique{at} (`{src}`): the number of groups would be read off the "
                "private data; pass it as a model argument instead: add a parameter num_groups to the model, use it "
                "in place of that expression, pass --model-arg num_groups=G (model_kwargs={'num_groups': G}), and "
                "declare the labels' domain (--domain g.values=0,...,G-1)")
    if re.search(r"\bint\(\s*[\w.]+\.shape\[\s*0\s*\]\s*\)|\bint\(\s*len\(\s*[\w.]+\s*\)\s*\)", src):
        return (f"the model converts the number of records to a Python int{at} (`{src}`): the analysis holds for "
                "every number of records and cannot fix one; use X.shape[0] as it is, without int() (e.g. "
                "numpyro.plate('data', X.shape[0])), and pass other counts as model arguments (--model-arg)")
    if re.search(r"\blen\(", src):
        return (f"the model takes len() of a data argument{at} (`{src}`): len() must return a Python number, but "
                "the analysis holds for every number of records; write X.shape[0] instead of len(X) (e.g. "
                "numpyro.plate('data', X.shape[0]))")
    return None


def _hint(low: str, at: str) -> str | None:
    """The cause and fix of a tracing failure from its (lower-cased) message, or None when unknown."""
    if "dim_as_value" in low:
        return (f"the model uses the number of records as a value{at} (e.g. jnp.eye(X.shape[0]), jnp.arange(N), "
                "a kernel or covariance matrix over all records, as in a Gaussian process): a matrix over the "
                "records couples them, so no record's term is its own; use an approximate basis with independent "
                "records (e.g. a Hilbert-space GP, HSGP: f(x) = phi(x) @ beta with a fixed basis phi) inside "
                "numpyro.plate('data', X.shape[0]), and use the number of records only as a shape")
    if "symbolic dimension" in low and "inconclusive" in low and re.search(r"'m ?[-+] ?\d+'|'\d+ ?[-+] ?m'|max\(", low):
        return (f"the model shifts the records by position{at} (y[2:], y[:-2], a shape such as N - 2): lags "
                "couple each record with the ones before it; use the lagged-regression form: pass the lagged "
                "values as per-record columns (e.g. X[t] = [y[t-1], y[t-2]] built before the model, one record = "
                "one time step with its lags) and declare that unit of privacy")
    fixed = re.search(r"incompatible shapes.*\((\d+),?\).*\(m,?\)|incompatible shapes.*\(m,?\).*\((\d+),?\)", low)
    if fixed:
        n = fixed.group(1) or fixed.group(2)
        return (f"a plate or array of fixed size {n} meets the records{at} (the data's leading axis, analysed for "
                "every number of records m): a count of records written as a number, or passed as a model argument "
                "(N=len(X) outside the model), is not tied to the data, and a model defined for exactly "
                f"{n} records fails on a neighbouring dataset with one record more or fewer (docs/models.md); take it "
                "from the data inside the model: numpyro.plate('data', X.shape[0]) (or len(X)), with X a data "
                "argument")
    if "indices must be of integer type" in low:
        return (f"a distribution indexes by its observed value{at} (Categorical, OrderedLogistic: the value is a "
                "class label) but the labels are traced as real numbers because their domain is a range; declare "
                "them as integer labels, e.g. --domain y.values=0,1,2 (Domain.parse(['y.values=0,1,2']))")
    if "tracerarrayconversion" in low or "numpy.ndarray conversion" in low:
        return (f"the model converts a traced value to NumPy{at} (np.asarray, np.unique, float(), .item()): the "
                "analysis cannot follow the data or the latent sites through NumPy; use jax.numpy (a count such "
                "as the number of groups from np.unique(g): pass it as a model argument, --model-arg "
                "num_groups=G)")
    if "concretization" in low or "bool(" in low or "tracerbool" in low:
        return (f"the model uses Python control flow (if/while) on a traced value{at}; use jnp.where or "
                "jax.lax.cond so that the analysis can follow both branches")
    if "_dimexpr" in low or "symbolic" in low or "inconclusive" in low:
        return (f"the model uses the number of records as a Python number{at}; use it only as a shape (e.g. "
                "numpyro.plate('data', X.shape[0]))")
    return None


def _guard(fn, name, what):
    try:
        return fn()
    except BayesDPError:
        raise
    except Exception as exc:
        text = _first_line(exc)
        line, src = _user_frame(exc)
        at = f" at {line}" if line else ""
        hint = _source_hint(src, at) or _hint(text.lower(), at)
        # a known cause is said in the model's terms (no raw JAX text); an unknown one quotes the exception
        err = ModelError(f"model {name} cannot be analysed ({what}): {hint}" if hint else
                         f"model {name} raised {text} while {what}; check the data shapes and the model "
                         f"arguments{at}")
        err.user_line = line
        raise err from None


def _diagnose(model, data_shapes, data_dtypes, kw, exc) -> None:
    """The symbolic trace failed: trace once at a concrete number of records, ONLY to name a clearer
    cause (a scaled or subsampled site); nothing is analysed from this trace."""
    import jax

    data = {a: jax.ShapeDtypeStruct((1009,) + tuple(s), data_dtypes[a]) for a, s in data_shapes.items()}
    found: dict = {}

    def discover(data):
        found["trace"] = _trace_sites(model, None, data, kw, [], {})
        return []
    try:
        jax.make_jaxpr(discover)(data)
    except Exception:
        return
    low = str(exc).lower()
    if "python control flow" in low:
        # the model traces with a concrete number of records but not with a symbolic one: the value Python needed
        # concretely is computed from the number of records (int(0.9 * X.shape[0]), range(N))
        line = getattr(exc, "user_line", "")
        at = f" at {line}" if line else ""
        raise ModelError(f"model {_model_name(model)} uses the number of records as a Python number{at} (e.g. "
                         "int(0.9 * X.shape[0]), range(X.shape[0])): the analysis holds for every number of "
                         "records and cannot fix one; use the number of records only as a shape (numpyro.plate('data', "
                         "X.shape[0])) and pass other counts as model arguments (--model-arg)") from None
    for sname, s in found["trace"].items():
        if s["type"] == "sample" and s.get("scale") is not None:
            raise ModelError(f"site '{sname}' is scaled (numpyro.handlers.scale, or a plate with subsample_size): no "
                             "rule covers a scaled log-density, and the sampler would apply the scale; remove the "
                             "scale (tempering is --inverse-temperature; minibatches are drawn by SGLD)") from None
