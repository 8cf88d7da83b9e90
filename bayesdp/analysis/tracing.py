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

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import BayesDPError, ModelError
import traceback
from .structure.sites import _is_number, raise_all

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

    def input_index(self) -> dict:
        """The position of each program input.

        Returns:
            ``("theta", site)`` or ``("data", arg)`` -> input index.
        """
        return {k: i for i, k in enumerate(self.inputs)}

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
    import jax
    import numpyro.distributions as dist
    from jax import export

    name = model_name or _model_name(model)
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
                put((sname, f"param:{k}"), _broadcast_param(fn, base, getattr(base, k)))
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
    # the jaxpr's inputs follow the pytree order of (theta dict, data dict): sorted keys
    inputs = [("theta", n) for n in sorted(latent)] + [("data", a) for a in sorted(data_shapes)]
    return Program(model=model, model_name=name, jaxpr=closed, inputs=inputs, outputs=outputs, sites=sites,
                   deterministic=determ, data_shapes={a: tuple(s) for a, s in data_shapes.items()},
                   data_dtypes=dict(data_dtypes), latent=sorted(latent), record_dim=M, model_kwargs=kw)


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


def _user_line(exc) -> str:
    """``file.py:LINE (function)`` of the innermost frame of the model's own code in ``exc``'s traceback ("" if
    none): the frames of JAX, NumPyro and bayesdp are skipped."""

    return _user_frame(exc)[0]


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
