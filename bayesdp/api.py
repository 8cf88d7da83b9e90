"""The public Python API, in the words of NumPyro (kernels, an MCMC driver) and dp-accounting (events, an
accountant).  Everything a script needs is importable from :mod:`bayesdp` itself::

    import bayesdp
    domain = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
    report = bayesdp.certify(model, domain=domain, data_size=n, kernel=bayesdp.ULA(step_size=1e-3), num_steps=2000)
    plan = bayesdp.calibrate(model, domain=domain, data_size=n, epsilon=1.0, delta=1e-5, mechanism="ula-final")
    mcmc = bayesdp.PrivateMCMC(plan)
    mcmc.run(X=X, y=y)                     # chain keys from the OS CSPRNG unless rng_key is given explicitly
    mcmc.print_summary()
    acct = bayesdp.PrivacyAccountant(budget=3.0, budget_delta=1e-5)
    result = bayesdp.release(mcmc, statistic="mean", sites=["w"], epsilon=1.0, accountant=acct)

A :class:`Plan` is one immutable, JSON-serialisable object holding the model reference, the domain, the
sampler configuration and its certificate; :func:`certify`, :func:`calibrate`, :class:`PrivateMCMC`,
:func:`release` and the command line (``--plan plan.json``) all take it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .errors import AssumptionError, ModelError, positive

MECHANISMS = ("posterior", "ula-final", "ula-path", "sgld-final", "sgld-path")

__all__ = ["ULA", "SGLD", "Plan", "certify", "PrivateMCMC", "release", "model_reference", "resolve_model",
           "MECHANISMS"]


# ---------------------------------------------------------------------------
# kernels


@dataclass(frozen=True)
class ULA:
    """The unadjusted Langevin algorithm (full-batch gradients), NumPyro-style: the model is optional
    here and may be given to :func:`certify` / :func:`calibrate` instead.

    Args:
        model: the NumPyro model, or its reference (``"logistic"``, ``"file.py:function"``); optional.
        step_size: the step size gamma (``None``: chosen by :func:`calibrate`).
        inverse_temperature: beta of the tempered posterior ``exp(-beta U)`` (1 = Bayesian posterior).
        clip_norm: per-record gradient clipping (the chain then no longer targets the posterior).
        domain: the public domain of one record (optional, as ``model``).
        model_kwargs: the model's hyperparameters.

    Examples:
        >>> ULA(step_size=1e-3).sampler
        'ula'
    """

    model: Callable | None = None
    step_size: float | None = None
    inverse_temperature: float = 1.0
    clip_norm: float | None = None
    domain: Any = None
    model_kwargs: Mapping[str, Any] | None = None

    sampler = "ula"

    def __post_init__(self):
        if isinstance(self.model, str):                 # a built-in name, file.py:function or module:function
            object.__setattr__(self, "model", resolve_model(self.model))

    @property
    def batch_size(self) -> int | None:
        """Records per gradient (None: every record).

        Examples:
            >>> ULA(step_size=1e-3).batch_size is None
            True
        """
        return None


@dataclass(frozen=True)
class SGLD(ULA):
    """Stochastic gradient Langevin dynamics: minibatches of ``batch_size`` records drawn uniformly without
    replacement at each step (the certificates assume it).  Other arguments as :class:`ULA`.

    Examples:
        >>> SGLD(step_size=1e-4, batch_size=100).sampler
        'sgld'
    """

    batch_size: int | None = None

    sampler = "sgld"


# ---------------------------------------------------------------------------
# models by reference


def model_reference(model: Callable) -> str:
    """A name that :func:`resolve_model` turns back into ``model``: a built-in name, or ``module:qualname``
    (what a :class:`Plan` stores; a function defined in a script is ``__main__:name``).

    Args:
        model: the model function.

    Returns:
        the reference.

    Examples:
        >>> from bayesdp.models import logistic
        >>> model_reference(logistic)
        'logistic'
    """
    from .analysis.loading import builtin_models

    for name, fn in builtin_models().items():
        if fn is model:
            return name
    mod, qual = getattr(model, "__module__", None), getattr(model, "__qualname__", None)
    if mod and qual and "<" not in qual:
        return f"{mod}:{qual}"
    return getattr(model, "__name__", "model")


def resolve_model(reference: str) -> Callable:
    """The model a reference names: a built-in model, ``path/to/file.py:function`` or ``module:qualname``.

    Args:
        reference: the reference (:func:`model_reference`).

    Returns:
        the model function.

    Raises:
        ModelError: nothing importable by that name (pass the model function explicitly).

    Examples:
        >>> resolve_model("logistic").__name__
        'logistic'
        >>> resolve_model("no_such_model")
        Traceback (most recent call last):
        ...
        bayesdp.errors.ModelError: model 'no_such_model' is neither a built-in model nor path/to/file.py:function nor module:function; pass the model function explicitly (model=...)
    """
    import importlib

    from .analysis.loading import builtin_models, load_model

    if reference in builtin_models() or (":" in reference and reference.rsplit(":", 1)[0].endswith(".py")):
        return load_model(reference)[0]
    if ":" in reference:
        mod, qual = reference.split(":", 1)
        try:
            obj = importlib.import_module(mod)
            for part in qual.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            raise ModelError(f"model {reference!r} cannot be imported; pass the model function explicitly "
                             "(model=...)") from None
        if callable(obj):
            return obj
    raise ModelError(f"model {reference!r} is neither a built-in model nor path/to/file.py:function nor "
                     "module:function; pass the model function explicitly (model=...)")


def _domain(domain):
    from .analysis import Domain

    if domain is None:
        return None
    if isinstance(domain, Domain):
        return domain
    if isinstance(domain, (list, tuple, str)):
        return Domain.parse(domain)
    return Domain(dict(domain))


# ---------------------------------------------------------------------------
# the plan


@dataclass(frozen=True)
class Plan:
    """One certified configuration: model, public domain, sampler settings and the certificate that covers
    them.  Immutable; :meth:`to_json` / :meth:`load` round-trip it; ``print(plan)`` shows a table.

    Attributes:
        model: the model's reference (a built-in name, ``file.py:function`` or ``module:qualname``).
        domain: the public domain of one record (``Domain.to_dict()``).
        data_size: the number of records the certificate is for.
        record_shapes: the shape of one record of each data argument.
        mechanism: what is released: ``posterior``, ``ula-final``, ``ula-path``, ``sgld-final`` or ``sgld-path``.
        epsilon, delta: the certified (epsilon, delta) of the release (``num_chains`` chains composed).
        source: the theorem (route) that gives it.
        distance_bound: for calibrated plans, the stated bound on the distance of the released draw to the
            tempered posterior, and how it was computed.

    Examples:
        >>> import bayesdp
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> rep = bayesdp.certify("logistic", domain=dom, data_size=500, record_shapes={"X": (3,), "y": ()},
        ...                       kernel=bayesdp.ULA(step_size=1e-3), num_steps=1000)
        >>> plan = rep.plan("ula-path")
        >>> plan.mechanism, plan.step_size, plan.num_steps, plan.epsilon == rep.mechanisms["ula-path"].value()
        ('ula-path', 0.001, 1000, True)
        >>> bayesdp.Plan.load(plan.to_json()) == plan                 # JSON round trip
        True
    """

    model: str
    domain: Mapping[str, Any]
    data_size: int
    record_shapes: Mapping[str, Any]
    mechanism: str
    sampler: str | None
    step_size: float | None
    num_steps: int | None
    inverse_temperature: float
    batch_size: int | None
    clip_norm: float | None
    num_chains: int
    delta: float
    epsilon: float
    source: str
    model_kwargs: Mapping[str, Any] = field(default_factory=dict)
    gdp_mu: float | None = None
    distance_bound: Mapping[str, Any] | None = None
    notes: tuple = ()
    model_fn: Callable | None = field(default=None, compare=False, repr=False)

    # -- serialisation --------------------------------------------------------------
    def to_dict(self) -> dict:
        """Every field (the model by reference), JSON-ready, with ``"format": "bayesdp plan v1"``."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "model_fn"}
        d["notes"] = list(self.notes)
        d["record_shapes"] = {k: list(v) for k, v in self.record_shapes.items()}
        d["format"] = "bayesdp plan v1"
        return d

    def to_json(self, path: str | None = None) -> str:
        """The plan as JSON (written to ``path`` when given)."""
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False, default=float)
        if path is not None:
            with open(path, "w") as fh:
                fh.write(text + "\n")
        return text

    @classmethod
    def load(cls, source: str, model: Callable | None = None) -> "Plan":
        """A plan from a JSON file path or string; ``model`` when the reference cannot be imported."""
        import os

        text = source
        if not source.lstrip().startswith("{"):
            if not os.path.isfile(source):
                raise AssumptionError(f"plan {source!r} is not a file nor JSON; pass --plan FILE.json written by "
                                      "`bayesdp calibrate --out` or Plan.to_json")
            with open(source) as fh:
                text = fh.read()
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AssumptionError(f"plan {source!r} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if d.pop("format", None) != "bayesdp plan v1":
            raise AssumptionError(f"plan {source!r} is not a bayesdp plan (format 'bayesdp plan v1')")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise AssumptionError(f"plan {source!r} has unknown field(s) {', '.join(unknown)}")
        d["notes"] = tuple(d.get("notes", ()))
        d["record_shapes"] = {k: tuple(v) for k, v in d["record_shapes"].items()}
        return cls(**d, model_fn=model if model is not None else resolve_model(d["model"]))

    # -- use -------------------------------------------------------------------------
    @property
    def release(self) -> str:
        """``final`` (one draw per chain) or ``path`` (every draw) for the samplers."""
        return "final" if self.mechanism.endswith("final") else "path"

    def callable(self) -> Callable:
        """The model function (the one given, or the one the reference names)."""
        return self.model_fn if self.model_fn is not None else resolve_model(self.model)

    def kernel(self) -> ULA:
        """The plan's sampler as a :class:`ULA` / :class:`SGLD` kernel (model, domain and settings)."""
        cls = SGLD if self.sampler == "sgld" else ULA
        kw = dict(model=self.callable(), step_size=self.step_size, inverse_temperature=self.inverse_temperature,
                  clip_norm=self.clip_norm, domain=self.domain, model_kwargs=dict(self.model_kwargs))
        if cls is SGLD:
            kw["batch_size"] = self.batch_size
        return cls(**kw)

    def table(self) -> str:
        """The plan as a two-column table (what ``print(plan)`` shows)."""
        from .analysis import Domain

        rows = [("model", self.model), ("domain", Domain(dict(self.domain)).describe()),
                ("records", f"{self.data_size}  (one record: " + ", ".join(
                    f"{k}{list(v)}" for k, v in self.record_shapes.items()) + ")"),
                ("mechanism", self.mechanism)]
        if self.sampler:
            rows += [("sampler", self.sampler.upper()), ("step size", f"{self.step_size:.6g}"),
                     ("steps", str(self.num_steps)), ("chains", str(self.num_chains))]
            if self.batch_size:
                rows.append(("batch size", str(self.batch_size)))
        rows += [("inverse temperature", f"{self.inverse_temperature:.6g}")]
        if self.clip_norm is not None:
            rows.append(("clip norm", f"{self.clip_norm:g}"))
        rows += [("certified", f"epsilon = {self.epsilon:.6g} at delta = {self.delta:g}"), ("route", self.source)]
        if self.distance_bound:
            db = self.distance_bound
            value = db.get("value")
            rows.append(("distance bound", (f"{value:.4g} " if value is not None else "") + db.get("what", "")))
        w = max(len(k) for k, _ in rows)
        return "\n".join([f"{k:<{w}}  {v}" for k, v in rows] + [f"note: {n}" for n in self.notes])

    def __str__(self) -> str:
        return self.table()


# ---------------------------------------------------------------------------
# certify


def _shapes_from(data, record_shapes, model, domain, dim):
    if data is not None:
        return {k: tuple(np.shape(v)[1:]) for k, v in data.items()}
    if record_shapes is not None:
        return {k: tuple(v) for k, v in record_shapes.items()}
    from .analysis.inputs import declared_shapes

    return declared_shapes(model, domain, dim)


def certify(model: Callable | Plan | None = None, *, domain=None, data: Mapping[str, Any] | None = None,
            data_size: int | None = None, kernel: ULA | None = None, num_steps: int | None = None,
            num_chains: int = 1, delta: float = 1e-5, model_kwargs: Mapping[str, Any] | None = None,
            record_shapes: Mapping[str, Any] | None = None, dim: int | None = None):
    """Certify a model and a sampler configuration before (or with) the data.

    Args:
        model: the NumPyro model or its reference (``"logistic"``, ``"file.py:function"``), or a :class:`Plan`
            (then every other argument comes from it).
        domain: the public domain of one record (:class:`Domain`); or in ``kernel``.
        data: the data (optional: without it, pass ``data_size`` and ``record_shapes``/``dim``).
        data_size: the number of records (without data).
        kernel: :class:`ULA` or :class:`SGLD` (step size, temperature, clipping); None prices the posterior only.
        num_steps: the number of steps of the chain.
        num_chains: chains released together (their certificates compose).
        delta: the delta at which epsilons are reported.
        record_shapes: the shape of one record of each data argument, e.g. ``{"X": (3,), "y": ()}``.

    Returns:
        a report (``.mechanisms``, ``.table()``, ``.to_dict()``, ``.plan(mechanism)``).

    Raises:
        BayesDPError: one line naming the site or parameter when the input is invalid or nothing can be
            certified.

    Examples:
        >>> import bayesdp
        >>> from bayesdp.models import logistic
        >>> rep = bayesdp.certify(logistic, domain=bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1)),
        ...                       data_size=1000, record_shapes={"X": (3,), "y": ()},
        ...                       kernel=bayesdp.ULA(step_size=1e-3), num_steps=500)
        >>> round(rep.plan("ula-final").epsilon, 3) > 0
        True
    """
    from .analysis import certify as _certify

    if isinstance(model, Plan):
        plan = model
        return certify(plan.callable(), domain=plan.domain, data_size=plan.data_size, kernel=plan.kernel(),
                       num_steps=plan.num_steps, num_chains=plan.num_chains, delta=plan.delta,
                       model_kwargs=plan.model_kwargs, record_shapes=plan.record_shapes)
    kernel = kernel or ULA()
    model = model if model is not None else kernel.model
    if isinstance(model, str):
        model = resolve_model(model)
    if model is None:
        raise AssumptionError("model = None: pass the NumPyro model (certify(model, ...) or ULA(model, ...))")
    dom = _domain(domain if domain is not None else kernel.domain)
    if dom is None:
        raise AssumptionError("domain = None: pass the public bounds of one record, e.g. "
                              "Domain(X=norm_bound(1.0), y=values(0, 1))")
    kw = dict(model_kwargs if model_kwargs is not None else (kernel.model_kwargs or {}))
    from .analysis.inputs import counts_from_domain

    kw = counts_from_domain(model, dom, kw)
    shapes = None if data is not None else _shapes_from(None, record_shapes, model, dom, dim)
    rep = _certify(model, data=data, domain=dom, step_size=kernel.step_size, num_steps=num_steps,
                   batch_size=kernel.batch_size, inverse_temperature=kernel.inverse_temperature,
                   clip_norm=kernel.clip_norm, delta=delta, model_kwargs=kw, data_size=data_size,
                   record_shapes=shapes, sampler=kernel.sampler if kernel.step_size is not None else "none",
                   require_any=False)
    n = rep.analysis.data_size
    rshapes = _shapes_from(data, shapes, model, dom, dim)
    rep.plan = lambda mechanism=None: _plan_from_report(rep, model, dom, n, rshapes, kw, kernel, num_steps,
                                                        num_chains, delta, mechanism)
    return rep


def _compose_chains(best, num_chains: int, delta: float) -> tuple[float, float | None]:
    from .curves import compose

    curve = compose([best.curve] * num_chains) if num_chains > 1 else best.curve
    return float(curve.epsilon(delta)), curve.gdp_mu


def _plan_from_report(rep, model, dom, n, shapes, kw, kernel, num_steps, num_chains, delta, mechanism=None,
                      distance_bound=None, notes=()) -> Plan:
    from .certificate import BoundReport

    if mechanism is None:
        best = rep.best
        if best is None:
            raise AssumptionError("no mechanism is certified; see the report's table")
        mechanism = best[0]
    entry = rep.mechanisms.get(mechanism)
    if not isinstance(entry, BoundReport) or entry.best is None:
        raise AssumptionError(f"{mechanism} is not certified: {entry}")
    sampler = None if mechanism == "posterior" else mechanism.split("-")[0]
    k = 1 if mechanism == "posterior" else num_chains
    eps, mu = _compose_chains(entry.best, k, delta)
    return Plan(model=model_reference(model), domain=dom.to_dict(), data_size=int(n),
                record_shapes={a: tuple(s) for a, s in shapes.items()}, mechanism=mechanism, sampler=sampler,
                step_size=None if sampler is None else kernel.step_size,
                num_steps=None if sampler is None else num_steps,
                inverse_temperature=float(kernel.inverse_temperature),
                batch_size=kernel.batch_size if sampler == "sgld" else None, clip_norm=kernel.clip_norm,
                num_chains=k, delta=float(delta), epsilon=eps, source=entry.best.source, model_kwargs=dict(kw),
                gdp_mu=mu, distance_bound=distance_bound, notes=tuple(notes), model_fn=model)


# ---------------------------------------------------------------------------
# the MCMC driver


class PrivateMCMC:
    """Run a certified ULA/SGLD chain, NumPyro's ``MCMC`` style: ``PrivateMCMC(plan).run(X=X, y=y)``.

    Args:
        source: a :class:`Plan` (everything comes from it), or a kernel (:class:`ULA`/:class:`SGLD` with the
            model and the domain).
        num_steps: the number of steps (with a kernel).
        num_chains: the number of chains (with a kernel; default 1).
        release: ``final`` (one draw per chain, default) or ``path`` (with a kernel).
        delta: the delta of the certificate (with a kernel).
        init: the initial point: ``zeros`` (default) or an array in the unconstrained space (data independent).

    The chain keys come from the OS CSPRNG unless ``run`` is given ``rng_key`` explicitly (the outputs then say
    "reproducible seed: not private").  With a plan, the run's own certificate (computed with the data) must
    not exceed the plan's.

    Examples:
        >>> import bayesdp, numpy as np
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> y = (rng.random(200) < 0.5).astype(float)
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> mcmc = bayesdp.PrivateMCMC(bayesdp.ULA(logistic, domain=dom, step_size=1e-3), num_steps=200)
        >>> _ = mcmc.run(X=X, y=y)
        >>> mcmc.get_samples()["w"].shape, mcmc.certificate["certified"]
        ((1, 3), True)
    """

    def __init__(self, source: Plan | ULA, *, num_steps: int | None = None, num_chains: int | None = None,
                 release: str | None = None, delta: float | None = None, init: Any = "zeros",
                 progress_bar: bool = False):
        if isinstance(source, Plan):
            if source.sampler is None:
                raise AssumptionError(f"plan mechanism {source.mechanism!r} releases no chain; a PrivateMCMC needs a "
                                      "ula-* or sgld-* plan")
            self.plan = source
            self.kernel = source.kernel()
            self.num_steps = source.num_steps if num_steps is None else num_steps
            self.num_chains = source.num_chains if num_chains is None else num_chains
            self.release_kind = source.release if release is None else release
            self.delta = source.delta if delta is None else delta
        elif isinstance(source, ULA):
            self.plan = None
            self.kernel = source
            if num_steps is None:
                raise AssumptionError("num_steps = None: pass the number of steps with a kernel")
            self.num_steps, self.num_chains = num_steps, 1 if num_chains is None else num_chains
            self.release_kind = "final" if release is None else release
            self.delta = 1e-5 if delta is None else delta
        else:
            raise AssumptionError(f"PrivateMCMC needs a Plan or a kernel (ULA/SGLD), not {type(source).__name__}")
        if self.kernel.model is None or self.kernel.domain is None:
            raise AssumptionError("the kernel needs the model and the domain: ULA(model, domain=..., step_size=...)")
        if self.kernel.step_size is None:
            raise AssumptionError("step_size = None: give the kernel a step size, or use bayesdp.calibrate")
        self.init = init
        self.progress_bar = progress_bar
        self._sampler = None

    def run(self, rng_key=None, **data: Any) -> "PrivateMCMC":
        """Run on ``data`` (the model's data arguments by name); ``rng_key=None`` uses the OS CSPRNG."""
        from .analysis import Domain
        from .analysis.inputs import counts_from_domain
        from .samplers import Sampler

        if not data:
            raise AssumptionError("no data: pass the model's data arguments, e.g. mcmc.run(X=X, y=y)")
        k = self.kernel
        dom = _domain(k.domain)
        kw = counts_from_domain(k.model, dom if isinstance(dom, Domain) else None, dict(k.model_kwargs or {}))
        smp = Sampler(k.model, data, sampler=k.sampler, step_size=k.step_size, num_steps=self.num_steps,
                      inverse_temperature=k.inverse_temperature, batch_size=k.batch_size, clip_norm=k.clip_norm,
                      num_chains=self.num_chains, release=self.release_kind, init=self.init, domain=dom,
                      delta=self.delta, model_kwargs=kw, progress_bar=self.progress_bar)
        if self.plan is not None:
            eps = smp.certificate.get("epsilon")
            if smp.potential.data_size != self.plan.data_size:
                raise AssumptionError(f"the data have {smp.potential.data_size} records but the plan was certified "
                                      f"for {self.plan.data_size}; calibrate a plan for this data size")
            if eps is None or eps > self.plan.epsilon * (1 + 1e-9):
                raise AssumptionError(f"this run's certificate (epsilon = {eps}) exceeds the plan's "
                                      f"({self.plan.epsilon:.6g}); the data or the domain differ from the plan's")
        smp.run(rng_key)
        self._sampler = smp
        return self

    def _require(self):
        if self._sampler is None:
            raise AssumptionError("the chain has not run: call .run(**data) first")
        return self._sampler

    @property
    def certificate(self) -> dict:
        """The run's certificate (epsilon at delta, the route, the composition over chains)."""
        return self._require().certificate

    @property
    def sampler(self):
        """The underlying :class:`bayesdp.samplers.Sampler` (after :meth:`run`)."""
        return self._require()

    def get_samples(self, group_by_chain: bool = False) -> dict:
        """The released draws per site, in the constrained space (NumPyro's ``MCMC.get_samples``)."""
        return self._require().get_samples(group_by_chain=group_by_chain)

    def print_summary(self, prob: float = 0.9) -> str:
        """ArviZ summary of the released draws with the certificate; printed and returned."""
        return self._require().print_summary(prob)

    def to_inference_data(self):
        """ArviZ data of the released draws, the certificate in the posterior's attributes."""
        return self._require().to_inference_data()


# ---------------------------------------------------------------------------
# release


STATISTICS = ("mean", "median", "quantiles", "probability")
#: release methods: ``auto`` (by a public rule when delta > 0 and the noise is not forced, else coupling), the
#: coupling release of an unpublished chain (004 Proposition 3.7), the path release (a private chain's estimate,
#: Dong-Roth-Su), the last-draw release (a statistic of a private chain's final draw) or sample-and-aggregate
#: (Nissim-Raskhodnikova-Smith 2007)
METHODS = ("auto", "coupling", "path", "final", "sample-aggregate")


def resolve_method(method: str, source: Any, delta: float, noise: str, data: Mapping[str, Any] | None = None,
                   epsilon: float = 1.0, build: Callable | None = None) -> tuple[str, str]:
    """``(method, why)``: ``auto`` is the coupling release for a chain that already ran (its draws are what is
    released); otherwise the public rule of :func:`bayesdp.publish.path.auto_method` (the smallest predicted error of
    the path, last-draw and coupling releases when delta > 0, docs/release.md §9-10).  ``build(sampler, analysis)``
    makes the statistic."""
    if method not in METHODS:
        raise AssumptionError(f"method = {method!r} must be one of {', '.join(METHODS)}")
    if method != "auto":
        return method, "user"
    if isinstance(source, PrivateMCMC) and source._sampler is not None:
        return "coupling", "auto: a chain that already ran: its draws are released with coupling noise"
    from .publish.path import auto_method, choose_method

    if delta <= 0 or noise != "auto":
        return choose_method({}, 1, epsilon, delta, None, noise)
    from .analysis import Domain, analyze
    from .analysis.inputs import counts_from_domain
    from .analysis.records import validate_records
    from .publish.aggregate import _SitesOnly
    from .samplers import ModelPotential

    kernel, _, _, data = _chain_source(source, data, None)
    dom = _domain(kernel.domain)
    kw = counts_from_domain(kernel.model, dom if isinstance(dom, Domain) else None, dict(kernel.model_kwargs or {}))
    data, _ = validate_records(data, kernel.model, kw)
    an = analyze(kernel.model, data=data, domain=dom, model_kwargs=kw)
    pot = ModelPotential(kernel.model, data, kw)
    stat = build(_SitesOnly(pot), an)
    # a Plan or a PrivateMCMC pins the chain; the last-draw release plans its own (from a bare kernel only)
    return auto_method(an.constants.to_dict(), pot.dim, stat, epsilon, delta, noise,
                       "ula" if kernel.sampler == "ula" and kernel.clip_norm is None else "other", kernel.step_size,
                       allow_final=isinstance(source, ULA))


def _statistic(spec, sampler, analysis, sites, lipschitz, names, q=None, threshold=None, width=None,
               l2_lipschitz=None, value_range=None, need_lipschitz=True):
    """The :class:`~bayesdp.publish.statistics.Statistic` a release asks for, with a declared range if given
    (``need_lipschitz=False``: a callable may come without a Lipschitz constant; sample-and-aggregate needs none)."""
    stat = _named_statistic(spec, sampler, analysis, sites, lipschitz, names, q, threshold, width, l2_lipschitz,
                            need_lipschitz)
    return stat.with_range(value_range)


def _named_statistic(spec, sampler, analysis, sites, lipschitz, names, q=None, threshold=None, width=None,
                     l2_lipschitz=None, need_lipschitz=True):
    from .publish.pipeline import site_specs
    from .publish.statistics import (Statistic, coordinate_means, coordinate_quantiles, exceedance_probabilities,
                                     function_mean)

    select = list(sites) if sites else None
    if isinstance(spec, Statistic):
        return spec
    if spec == "mean":
        return coordinate_means(site_specs(sampler, analysis), select=select)
    if spec in ("median", "quantiles"):
        if spec == "quantiles" and q is None:
            raise AssumptionError("statistic = 'quantiles' needs its levels: pass q=(0.05, 0.5, 0.95)")
        return coordinate_quantiles(site_specs(sampler, analysis), (0.5,) if spec == "median" else q, select)
    if spec == "probability":
        if threshold is None or width is None:
            raise AssumptionError("statistic = 'probability' needs threshold=t and width=w (the ramp that "
                                  "smooths P(theta > t); see docs/release.md)")
        return exceedance_probabilities(site_specs(sampler, analysis), threshold, width, select)
    if callable(spec):
        if lipschitz is None and need_lipschitz:
            raise AssumptionError("a callable statistic needs its declared Lipschitz constant: pass lipschitz=L "
                                  "(Euclidean norm of the samples -> L1 norm of the statistic)")
        support = {n: sup for n, _, sup in analysis.latent_sites}
        used = list(sites) if sites else [s.name for s in sampler.potential.sites]
        bad = [n for n in used if support.get(n) != "real"]
        if bad:
            raise AssumptionError(f"site '{bad[0]}' has {support.get(bad[0])} support: a Lipschitz constant in the "
                                  "constrained space does not bound the change in the sampler's (unconstrained) "
                                  "coordinates; use a statistic of real-supported sites")
        pot = sampler.potential

        def one(z: np.ndarray) -> np.ndarray:
            samples = {k: np.asarray(v) for k, v in pot.unflatten(np.asarray(z, np.float32)).items()}
            return np.atleast_1d(np.asarray(spec(samples), dtype=np.float64)).ravel()

        def fn(z: np.ndarray) -> np.ndarray:        # (num_draws, dim) -> (num_draws, k), one draw at a time
            return np.stack([one(row) for row in np.atleast_2d(z)])
        probe = one(np.zeros(pot.dim))
        out_names = list(names) if names else [f"f[{i}]" for i in range(probe.size)]
        if lipschitz is None:       # sample-and-aggregate: the chunk estimates are clamped, no constant is needed
            import math

            return Statistic(names=tuple(out_names), fn=fn, lipschitz=math.inf,
                             description="posterior mean of a user statistic of the samples",
                             lipschitz_source="not declared (not needed by sample-and-aggregate)")
        return function_mean(fn, lipschitz, out_names, description="posterior mean of a user statistic of the samples",
                             l2_lipschitz=l2_lipschitz)
    raise AssumptionError(f"statistic = {spec!r} must be one of {', '.join(STATISTICS)} or a callable over the "
                          "samples dict (with lipschitz=L)")


def release(source: Any, statistic: Any = "mean", *, epsilon: float, sites: Sequence[str] | None = None,
            accountant: Any = None, ledger: str | None = None, budget: float | None = None,
            lipschitz: float | None = None, names: Sequence[str] | None = None, burn_in: int | None = None,
            level: float = 0.95, data: Mapping[str, Any] | None = None, q: Sequence[float] | None = None,
            threshold: float | None = None, width: float | None = None, noise: str = "auto", delta: float = 0.0,
            l2_lipschitz: float | None = None, range: Sequence[float] | None = None,  # noqa: A002 - the issue's name
            method: str = "auto", chunks: int | None = None, seed: int | None = None, num_steps: int | None = None):
    """Release a noisy posterior summary, charged to an accountant before the noise is drawn (004 Proposition
    3.7: the sensitivity of the chain's Monte Carlo estimate by a synchronous coupling): pure epsilon-DP with
    Laplace noise, or (epsilon, delta)-DP with Gaussian noise when ``delta > 0`` and it is the smaller error.

    Args:
        source: a run :class:`PrivateMCMC` (its draws and configuration), or a :class:`Plan` with ``data`` (an
            unpublished chain is run from the plan).
        statistic: ``"mean"`` (posterior means of ``sites``), ``"median"``, ``"quantiles"`` (levels ``q``),
            ``"probability"`` (``P(theta > threshold)`` smoothed by a ramp of ``width``), or a callable
            ``f(samples) -> array`` over the samples dict in the constrained space with ``lipschitz`` its
            declared Lipschitz constant (Euclidean norm of the samples -> L1 norm of the output).
        epsilon: the release's epsilon.
        sites: the latent sites whose means are released (default: all).
        accountant: a :class:`PrivacyAccountant`, a :class:`Ledger` or a ledger path; or ``ledger`` (path)
            with ``budget`` to create it.
        burn_in: draws discarded per chain for a path release (default: half).
        level: the level of the noise intervals.
        noise: ``"auto"`` (default: the noise with the smaller expected squared error at (epsilon, delta),
            from the sensitivities only), ``"laplace"`` (pure epsilon-DP) or ``"gaussian"`` (needs delta > 0).
        delta: the delta Gaussian noise may spend (default 0: Laplace only).
        l2_lipschitz: with a callable statistic, its declared Euclidean -> Euclidean constant (Gaussian noise;
            default: ``lipschitz``, always valid).
        range: the public range ``(a, b)`` of every released value: values are clamped to it and intervals
            clipped (post-processing; probabilities have ``(0, 1)`` already).  Required by sample-and-aggregate.
        method: ``"auto"`` (default: when ``delta > 0``, ``noise="auto"`` and the source is a kernel or a plan to
            run, the method with the smallest predicted error among path, final and coupling, docs/release.md
            §9-10; otherwise ``"coupling"``), ``"coupling"`` (the Monte Carlo estimate of an
            unpublished chain plus noise, 004 Proposition 3.7), ``"path"`` (the estimate of a chain whose whole
            path is private at the largest inverse temperature meeting (epsilon, delta): no noise added,
            docs/release.md §8), ``"final"`` (a statistic of the final draw of a chain planned by
            ``bayesdp.calibrate(mechanism="ula-final")``: no noise added, §10) or ``"sample-aggregate"`` (Nissim-Raskhodnikova-Smith 2007: the records split
            into ``chunks`` disjoint chunks, one chain per chunk, each estimate clamped to ``range``; §7).  The
            source may be a kernel (:class:`ULA`) with ``data``; path and sample-and-aggregate need no Lipschitz
            constant for a callable statistic.
        chunks: sample-and-aggregate's number of chunks (default: the rule of docs/release.md §7.2).
        seed: seed of the chains run here (path: the chain IS the privacy noise, so a seed makes the release
            reproducible and not private, and the output says so; default: OS CSPRNG keys).
        num_steps: steps of a chain run here from a kernel (default 2000).

    Returns:
        the release (``.values``, ``.names``, ``.noise_scale``, ``.certificate``, ``.to_dict()``).

    Raises:
        BayesDPError: invalid input, no coupling bound for the chain's configuration, or over budget (nothing
            drawn, nothing charged).

    Examples:
        >>> import bayesdp, numpy as np
        >>> rng = np.random.default_rng(1)
        >>> X = rng.standard_normal((300, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> y = (rng.random(300) < 0.5).astype(float)
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> mcmc = bayesdp.PrivateMCMC(bayesdp.ULA("logistic", domain=dom, step_size=1e-3), num_steps=300)
        >>> _ = mcmc.run(X=X, y=y)
        >>> acct = bayesdp.PrivacyAccountant(budget=2.0)
        >>> res = bayesdp.release(mcmc, statistic="median", sites=["w"], epsilon=1.0, accountant=acct)
        >>> res.names, acct.remaining()["epsilon"]
        (('w[0] q0.5', 'w[1] q0.5', 'w[2] q0.5'), 1.0)
    """
    from .analysis import analyze
    from .publish.pipeline import _sampler_constants, check_level, unconstrained_draws
    from .publish.release import release_statistic
    from .publish.sensitivity import best_coupling

    from .publish.release import check_noise

    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    check_level(level)
    delta = check_noise(noise, delta)
    acct = accountant if accountant is not None else ledger
    if acct is None:
        raise AssumptionError("no accountant: pass accountant=bayesdp.PrivacyAccountant(budget=...) or "
                              "ledger='ledger.json' (with budget=... to create it)")
    def build(sampler, analysis):
        return _statistic(statistic, sampler, analysis, sites, lipschitz, names, q=q, threshold=threshold,
                          width=width, l2_lipschitz=l2_lipschitz, value_range=range, need_lipschitz=False)

    method, why = resolve_method(method, source, delta, noise, data, eps, build)
    if method == "path":
        return _path_release(source, statistic, eps, delta, acct, data=data, sites=sites, lipschitz=lipschitz,
                             names=names, q=q, threshold=threshold, width=width, value_range=range, level=level,
                             burn_in=burn_in, budget=budget, seed=seed, num_steps=num_steps, chosen_by=why)
    if method == "final":
        return _final_release(source, statistic, eps, delta, acct, data=data, sites=sites, lipschitz=lipschitz,
                              names=names, q=q, threshold=threshold, width=width, value_range=range, level=level,
                              budget=budget, seed=seed, chosen_by=why)
    if method == "sample-aggregate":
        return _sample_and_aggregate(source, statistic, eps, acct, data=data, sites=sites, lipschitz=lipschitz,
                                     names=names, q=q, threshold=threshold, width=width, value_range=range,
                                     noise=noise, delta=delta, level=level, chunks=chunks, burn_in=burn_in,
                                     budget=budget, seed=seed, num_steps=num_steps)
    if chunks is not None:
        raise AssumptionError("chunks applies to method = 'sample-aggregate' only")
    if isinstance(source, ULA):
        if data is None:
            raise AssumptionError("release(kernel, ...) runs an unpublished chain: pass data={...}")
        source = PrivateMCMC(source, num_steps=2000 if num_steps is None else num_steps, release="path")
    if isinstance(source, PrivateMCMC) and source._sampler is None:
        if data is None:
            raise AssumptionError("the PrivateMCMC has not run: pass data={...} (or run it first)")
        source.release_kind = "path" if source.release_kind == "final" else source.release_kind
        source.run(rng_key=seed, **data)
    if isinstance(source, Plan):
        if data is None:
            raise AssumptionError("release(plan, ...) runs an unpublished chain: pass data={...}")
        mcmc = PrivateMCMC(source, release="path")
        mcmc.run(**data)
        source = mcmc
    if not isinstance(source, PrivateMCMC):
        raise AssumptionError(f"release needs a PrivateMCMC that has run, or a Plan with data, not "
                              f"{type(source).__name__}")
    smp = source.sampler
    k = source.kernel
    dom = _domain(k.domain)
    an = analyze(k.model, data=dict(smp.potential.data), domain=dom, model_kwargs=smp.potential.model_kwargs,
                 clip_norm=k.clip_norm)
    c = smp.config
    consts = _sampler_constants(an.constants.to_dict(), c.sampler, c.step_size, c.batch_size, c.clip_norm)
    coupling, failed = best_coupling(**{kk: v for kk, v in consts.items() if v is not None})
    if coupling is None:
        raise AssumptionError("no coupling bound is proven for this chain's configuration ("
                              + "; ".join(f"{s}: {w}" for s, w in failed) + "); use a contracting step size")
    stat = _statistic(statistic, smp, an, sites, lipschitz, names, q=q, threshold=threshold, width=width,
                      l2_lipschitz=l2_lipschitz, value_range=range)
    draws = unconstrained_draws(smp)
    b = 0
    if source.release_kind != "final":
        b = draws.shape[1] // 2 if burn_in is None else int(burn_in)
        if not 0 <= b < draws.shape[1]:
            raise AssumptionError(f"burn_in = {burn_in} must be in [0, {draws.shape[1]}) (draws per chain)")
        draws = draws[:, b:, :]
    flat = draws.reshape(-1, draws.shape[-1]).astype(np.float64)
    if isinstance(acct, str) and budget is not None:
        from .budget.ledger import Ledger

        acct = Ledger.open(acct, budget=budget)
    # the kept draws, for the data-independent Monte Carlo bound: a final release keeps step n of each chain
    design = {"inverse_temperature": c.inverse_temperature, "num_steps": c.num_steps, "burn_in": b,
              "thinning": c.thinning if source.release_kind == "thinned" else 1, "num_chains": c.num_chains}
    if source.release_kind == "final":
        design.update(thinning=c.num_steps, burn_in=0)
    return release_statistic(flat, stat, eps, acct, coupling=coupling, level=level, noise=noise, delta=delta,
                             chain=design)



def _sample_and_aggregate(source, statistic, eps, acct, *, data, sites, lipschitz, names, q, threshold, width,
                          value_range, noise, delta, level, chunks, burn_in, budget, seed, num_steps=None):
    """``release(..., method="sample-aggregate")``: the kernel's model, domain, step size and number of steps run
    one chain per chunk (bayesdp.publish.aggregate)."""
    from .publish.aggregate import sample_and_aggregate

    kernel, num_steps, _, data = _chain_source(source, data, num_steps)
    if value_range is None and not (hasattr(statistic, "range") and statistic.range is not None) \
            and statistic != "probability":
        raise AssumptionError("range = None: sample-and-aggregate clamps each chunk's estimate to the public range "
                              "of the released values; pass range=(a, b)")
    if kernel.sampler != "ula" or kernel.clip_norm is not None or kernel.inverse_temperature != 1.0:
        raise AssumptionError("sample-and-aggregate runs full-batch ULA at inverse temperature 1 per chunk; use a "
                              "ULA kernel without clipping")
    dom, kw, acct, build = _chain_release_setup(kernel, acct, budget, statistic, sites, lipschitz, names, q=q,
                                                threshold=threshold, width=width, value_range=value_range)
    res, _ = sample_and_aggregate(kernel.model, data, statistic=build, value_range=value_range, epsilon=eps,
                                  ledger=acct, domain=dom, delta=delta, noise=noise, chunks=chunks,
                                  step_size=kernel.step_size, num_steps=num_steps, burn_in=burn_in,
                                  model_kwargs=kw, level=level, seed=seed)
    return res


def _chain_release_setup(kernel, acct, budget, statistic, sites, lipschitz, names, *, q, threshold, width,
                         value_range):
    """(domain, model kwargs with the domain's counts, accountant, statistic builder) of a release that runs its
    own chains (path, sample-and-aggregate)."""
    from .analysis import Domain
    from .analysis.inputs import counts_from_domain

    dom = _domain(kernel.domain)
    kw = counts_from_domain(kernel.model, dom if isinstance(dom, Domain) else None, dict(kernel.model_kwargs or {}))
    if isinstance(acct, str) and budget is not None:
        from .budget.ledger import Ledger

        acct = Ledger.open(acct, budget=budget)

    def build(sampler, analysis):
        return _statistic(statistic, sampler, analysis, sites, lipschitz, names, q=q, threshold=threshold,
                          width=width, value_range=value_range, need_lipschitz=False)

    return dom, kw, acct, build


def _final_release(source, statistic, eps, delta, acct, *, data, sites, lipschitz, names, q, threshold, width,
                   value_range, level, budget, seed, chosen_by):
    """``release(..., method="final")``: the chain ``calibrate(mechanism="ula-final")`` plans for the kernel's model
    and domain; a statistic of its final draw is released (bayesdp.publish.final)."""
    from .publish.final import release_final_model

    kernel, _, _, data = _chain_source(source, data, None)
    if kernel.sampler != "ula" or kernel.clip_norm is not None:
        raise AssumptionError("method = 'final' runs full-batch ULA without clipping; use a ULA kernel")
    dom, kw, acct, build = _chain_release_setup(kernel, acct, budget, statistic, sites, lipschitz, names, q=q,
                                                threshold=threshold, width=width, value_range=value_range)
    return release_final_model(kernel.model, data, domain=dom, statistic=build, epsilon=eps, delta=delta, ledger=acct,
                               model_kwargs=kw, level=level, seed=seed, chosen_by=chosen_by)


def _chain_source(source, data, num_steps):
    """(kernel, num_steps, num_chains, data) of a path or sample-and-aggregate release."""
    if isinstance(source, Plan):
        kernel, n, c = source.kernel(), source.num_steps, source.num_chains
    elif isinstance(source, PrivateMCMC):
        kernel, n, c = source.kernel, source.num_steps, source.num_chains
        if data is None and source._sampler is not None:
            data = {k: np.asarray(v) for k, v in source._sampler.potential.data.items()}
    elif isinstance(source, ULA):
        kernel, n, c = source, None, 1
    else:
        raise AssumptionError(f"release needs a PrivateMCMC, a Plan or a kernel (ULA) with data, not "
                              f"{type(source).__name__}")
    n = num_steps if num_steps is not None else (n or 2000)
    if data is None:
        raise AssumptionError("this release runs its own chain(s) on the records: pass data={...}")
    return kernel, n, c, data


def _path_release(source, statistic, eps, delta, acct, *, data, sites, lipschitz, names, q, threshold, width,
                  value_range, level, burn_in, budget, seed, num_steps, chosen_by):
    """``release(..., method="path")``: a full-batch ULA chain at the largest inverse temperature whose path
    certificate meets (epsilon, delta); its Monte Carlo estimate is released (bayesdp.publish.path)."""
    from .publish.path import release_path_model

    kernel, n, c, data = _chain_source(source, data, num_steps)
    if kernel.sampler != "ula" or kernel.clip_norm is not None:
        raise AssumptionError("method = 'path' runs full-batch ULA without clipping; use a ULA kernel")
    dom, kw, acct, build = _chain_release_setup(kernel, acct, budget, statistic, sites, lipschitz, names, q=q,
                                                threshold=threshold, width=width, value_range=value_range)
    return release_path_model(kernel.model, data, domain=dom, statistic=build, epsilon=eps, delta=delta, ledger=acct,
                              step_size=kernel.step_size, num_steps=n, num_chains=c, burn_in=burn_in, model_kwargs=kw,
                              level=level, seed=seed, chosen_by=chosen_by)
