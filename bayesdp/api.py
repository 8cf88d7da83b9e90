"""The public Python API, in the words of NumPyro (kernels, an MCMC driver) and dp-accounting (events, an
accountant).  Everything a script needs is importable from :mod:`bayesdp` itself::

    import bayesdp
    domain = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
    report = bayesdp.certify(model, domain=domain, shapes=bayesdp.Shapes(n, {"X": (3,), "y": ()}),
                             kernel=bayesdp.ULA(step_size=1e-3), num_steps=2000)
    print(report)                          # a short table; report.table(full=True) for every constant
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
from dataclasses import MISSING, dataclass, field, fields
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

from .errors import AssumptionError, ModelError
from .publish.engine import execute, open_accountant
from .publish.methods.base import ChainSource
from .publish.spec import ReleaseSpec

MECHANISMS = ("posterior", "ula-final", "ula-path", "sgld-final", "sgld-path")

__all__ = ["ULA", "SGLD", "Plan", "Shapes", "certify", "CertifyResult", "PrivateMCMC", "ChainCertificate", "release",
           "chain_settings", "chain_inference_data",
           "model_reference", "resolve_model", "MECHANISMS"]


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


def _check_plan_fields(d: dict, name: str) -> None:
    """Types of a loaded plan's fields: one line naming the first bad field."""
    def bad(field_name, want):
        raise AssumptionError(f"plan {name!r}: field {field_name} = {d[field_name]!r} is not {want}; write the plan "
                              "again with `bayesdp calibrate --out` or Plan.to_json")

    def number(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    for k in ("model", "mechanism", "source"):
        if not isinstance(d[k], str):
            bad(k, "a string")
    for k in ("domain", "record_shapes"):
        if not isinstance(d[k], dict):
            bad(k, "an object")
    if not all(isinstance(v, list) and all(isinstance(x, int) for x in v) for v in d["record_shapes"].values()):
        bad("record_shapes", "an object of integer lists")
    for k in ("data_size", "num_chains"):
        if not isinstance(d[k], int) or isinstance(d[k], bool) or d[k] < 1:
            bad(k, "a positive integer")
    for k in ("delta", "epsilon", "inverse_temperature"):
        if not number(d[k]):
            bad(k, "a number")
    for k in ("step_size", "clip_norm", "gdp_mu"):
        if d.get(k) is not None and not number(d[k]):
            bad(k, "a number or null")
    for k in ("num_steps", "batch_size"):
        if d.get(k) is not None and (not isinstance(d[k], int) or isinstance(d[k], bool)):
            bad(k, "an integer or null")
    if d["sampler"] not in (None, "ula", "sgld"):
        bad("sampler", "'ula', 'sgld' or null")
    if "model_kwargs" in d and not isinstance(d["model_kwargs"], dict):
        bad("model_kwargs", "an object")
    if "notes" in d and not isinstance(d["notes"], list):
        bad("notes", "a list")


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
        >>> rep = bayesdp.certify("logistic", domain=dom, shapes=bayesdp.Shapes(500, {"X": (3,), "y": ()}),
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

    def to_json(self, path: str | None = None, overwrite: bool = False) -> str:
        """The plan as JSON; with ``path``, also written there through a temporary file, fsync and rename
        (:func:`bayesdp.resources.write_file`: an existing file only with ``overwrite``, never a ledger).

        Args:
            path: the file to write (optional).
            overwrite: replace an existing ``path``.

        Returns:
            the JSON text.

        Raises:
            AssumptionError: ``path`` exists without ``overwrite``, is a ledger, or cannot be written.
        """
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False, default=float)
        if path is not None:
            from .resources import write_file

            write_file(path, text + "\n", option="path", overwrite=overwrite, overwrite_flag="overwrite=True")
        return text

    @classmethod
    def load(cls, source: str, model: Callable | None = None) -> "Plan":
        """A plan from a JSON file path or string.

        Args:
            source: the path of a plan file, or its JSON text.
            model: the model function, when the plan's reference cannot be imported.

        Returns:
            the plan.

        Raises:
            AssumptionError: not a file nor JSON, not a bayesdp plan, or a field missing, unknown or of the
                wrong type (one line naming it).
        """
        import os

        text = source
        if not source.lstrip().startswith(("{", "[")):
            if not os.path.isfile(source):
                raise AssumptionError(f"plan {source!r} is not a file nor JSON; pass --plan FILE.json written by "
                                      "`bayesdp calibrate --out` or Plan.to_json")
            try:
                with open(source) as fh:
                    text = fh.read()
            except (OSError, UnicodeDecodeError) as exc:
                raise AssumptionError(f"plan {source!r} cannot be read ({type(exc).__name__}); check the file") \
                    from None
        name = source if len(source) < 80 else source[:77] + "..."
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AssumptionError(f"plan {name!r} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(d, dict) or d.pop("format", None) != "bayesdp plan v1":
            raise AssumptionError(f"plan {name!r} is not a bayesdp plan (format 'bayesdp plan v1')")
        known = {f.name for f in fields(cls)} - {"model_fn"}
        unknown = sorted(set(d) - known)
        if unknown:
            raise AssumptionError(f"plan {name!r} has unknown field(s) {', '.join(unknown)}")
        required = [f.name for f in fields(cls) if f.name != "model_fn" and f.default is MISSING
                    and f.default_factory is MISSING]
        missing = [f for f in required if f not in d]
        if missing:
            raise AssumptionError(f"plan {name!r} lacks the field(s) {', '.join(missing)}; write it again with "
                                  "`bayesdp calibrate --out` or Plan.to_json")
        _check_plan_fields(d, name)
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

    def _rows(self) -> list[tuple[str, str]]:
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
        return rows

    def table(self) -> str:
        """The plan as a two-column table (what ``print(plan)`` shows).

        Returns:
            the text, one setting a line, then the notes.
        """
        return _text_table(self._rows(), self.notes)

    def to_dataframe(self):
        """The plan's settings as a pandas DataFrame (index ``setting``, column ``value``).

        Returns:
            the DataFrame (the rows of :meth:`table`).
        """
        return _frame(self._rows(), ["setting", "value"])

    def _repr_html_(self) -> str:
        return _html_table(["setting", "value"], self._rows(), self.notes)

    def __str__(self) -> str:
        return self.table()


def _text_table(rows, notes=()) -> str:
    w = max(len(k) for k, _ in rows)
    return "\n".join([f"{k:<{w}}  {v}" for k, v in rows] + [f"note: {n}" for n in notes])


def _frame(rows, columns):
    import pandas as pd

    return pd.DataFrame([list(r) for r in rows], columns=columns).set_index(columns[0])


def _html_table(columns, rows, notes=()) -> str:
    from html import escape

    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    foot = "".join(f"<p>note: {escape(str(n))}</p>" for n in notes)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{foot}"


# ---------------------------------------------------------------------------
# certify


def _shapes_from(data, record_shapes, model, domain, dim):
    if data is not None:
        return {k: tuple(np.shape(v)[1:]) for k, v in data.items()}
    if record_shapes is not None:
        return {k: tuple(v) for k, v in record_shapes.items()}
    from .analysis.inputs import declared_shapes

    return declared_shapes(model, domain, dim)


@dataclass(frozen=True)
class Shapes:
    """The size and shapes of the data, for certifying before the data exist (public: no record is read).

    Args:
        data_size: the number of records.
        record_shapes: the shape of one record of each data argument, e.g. ``{"X": (3,), "y": ()}``
            (optional for the built-in models with ``dim``, or when the domain declares them).
        dim: features per record, for the built-in models.

    Raises:
        AssumptionError: a data size that is not a positive integer.

    Examples:
        >>> Shapes(1000, {"X": (3,), "y": ()}).data_size
        1000
    """

    data_size: int
    record_shapes: Mapping[str, Any] | None = None
    dim: int | None = None

    def __post_init__(self):
        n = self.data_size
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise AssumptionError(f"Shapes: data_size = {n!r} must be a positive integer (the number of records)")
        if self.record_shapes is not None:
            object.__setattr__(self, "record_shapes", {k: tuple(int(x) for x in v)
                                                       for k, v in dict(self.record_shapes).items()})


def certify(model: Callable | str | Plan | None = None, *, domain=None, data: Mapping[str, Any] | None = None,
            shapes: Shapes | None = None, kernel: ULA | None = None, num_steps: int | None = None,
            num_chains: int = 1, delta: float = 1e-5) -> "CertifyResult":
    """Certify a model and a sampler configuration before (or with) the data.

    Args:
        model: the NumPyro model or its reference (``"logistic"``, ``"file.py:function"``), or a :class:`Plan`
            (then every other argument comes from it); or in ``kernel``.
        domain: the public domain of one record (:class:`Domain`); or in ``kernel``.
        data: the data (optional: without it, pass ``shapes``).
        shapes: :class:`Shapes` (the number of records and the shape of one record) when certifying without data.
        kernel: :class:`ULA` or :class:`SGLD` (step size, temperature, clipping, the model's hyperparameters
            ``model_kwargs``); None prices the posterior only.
        num_steps: the number of steps of the chain.
        num_chains: chains released together (their certificates compose).
        delta: the delta at which epsilons are reported.

    Returns:
        a :class:`CertifyResult`: ``print(result)`` is a short table, ``.table(full=True)`` the constants with
        their provenance, ``.mechanisms``, ``.to_dict()``, ``.to_dataframe()``, ``.plan(mechanism)``.

    Raises:
        BayesDPError: one line naming the site or parameter when the input is invalid or nothing can be
            certified.

    Examples:
        >>> import bayesdp
        >>> from bayesdp.models import logistic
        >>> rep = bayesdp.certify(logistic, domain=bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1)),
        ...                       shapes=bayesdp.Shapes(1000, {"X": (3,), "y": ()}),
        ...                       kernel=bayesdp.ULA(step_size=1e-3), num_steps=500)
        >>> round(rep.plan("ula-final").epsilon, 3) > 0
        True
        >>> print(rep)                                  # doctest: +ELLIPSIS
        certify logistic: 1000 records, delta = 1e-05
        mechanism  epsilon ...
    """
    if isinstance(model, Plan):
        plan = model
        return _certify(plan.callable(), plan.domain, None, plan.data_size, plan.kernel(), plan.num_steps,
                        plan.num_chains, plan.delta, plan.model_kwargs, plan.record_shapes, None)
    if shapes is not None and not isinstance(shapes, Shapes):
        raise AssumptionError(f"shapes = {shapes!r} must be bayesdp.Shapes(data_size, record_shapes), e.g. "
                              "Shapes(1000, {'X': (3,), 'y': ()})")
    if shapes is not None and data is not None:
        raise AssumptionError("pass data or shapes, not both: shapes describe the data before they exist")
    n, rshapes, dim = (shapes.data_size, shapes.record_shapes, shapes.dim) if shapes is not None else (None,) * 3
    return _certify(model, domain, data, n, kernel, num_steps, num_chains, delta, None, rshapes, dim)


def _certify(model, domain, data, data_size, kernel, num_steps, num_chains, delta, model_kwargs, record_shapes,
             dim) -> "CertifyResult":
    """:func:`certify` with the shapes spelled out (what :func:`bayesdp.calibrate` calls)."""
    from .analysis import certify as _analysis_certify
    from .analysis.inputs import counts_from_domain

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
    kw = counts_from_domain(model, dom, kw)
    shapes = None if data is not None else _shapes_from(None, record_shapes, model, dom, dim)
    rep = _analysis_certify(model, data=data, domain=dom, step_size=kernel.step_size, num_steps=num_steps,
                            batch_size=kernel.batch_size, inverse_temperature=kernel.inverse_temperature,
                            clip_norm=kernel.clip_norm, delta=delta, model_kwargs=kw, data_size=data_size,
                            record_shapes=shapes, sampler=kernel.sampler if kernel.step_size is not None else "none",
                            require_any=False)
    n = rep.analysis.data_size
    rshapes = _shapes_from(data, shapes, model, dom, dim)
    return CertifyResult(rep, (model, dom, n, rshapes, kw, kernel, num_steps, num_chains, delta))


class CertifyResult:
    """What :func:`certify` returns: the analysis's report (every attribute of
    :class:`bayesdp.analysis.certify.CertifyReport`: ``mechanisms``, ``analysis``, ``best``, ``to_dict()``)
    with a short ``print``, a DataFrame and the plan of a mechanism.

    Args:
        report: the analysis's report.
        context: what :meth:`plan` needs (model, domain, records, shapes, hyperparameters, kernel, steps,
            chains, delta).

    Examples:
        >>> import bayesdp
        >>> rep = bayesdp.certify("logistic", domain=bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1)),
        ...                       shapes=bayesdp.Shapes(100, {"X": (2,), "y": ()}))
        >>> list(rep.to_dataframe().index)[:1], len(str(rep)) < 1000
        (['posterior'], True)
    """

    def __init__(self, report, context):
        self._report = report
        self._context = context

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._report, name)

    def plan(self, mechanism: str | None = None) -> Plan:
        """The :class:`Plan` of one certified mechanism (default: the sampler mechanism with the smallest epsilon).

        Args:
            mechanism: ``posterior``, ``ula-final``, ``ula-path``, ``sgld-final`` or ``sgld-path``.

        Returns:
            the plan.

        Raises:
            AssumptionError: the mechanism is not certified.
        """
        return _plan_from_report(self._report, *self._context, mechanism)

    def _rows(self) -> list[tuple]:
        from .certificate import BoundReport

        rows = []
        for k, v in self._report.mechanisms.items():
            if isinstance(v, BoundReport) and v.best is not None:
                rows.append((k, v.value(), self._report.delta, v.best.source))
            else:
                why = str(v)
                rows.append((k, None, None, "not certified: " + (why if len(why) <= 90 else why[:87] + "...")))
        return rows

    def table(self, full: bool = False) -> str:
        """The short table (what ``print`` shows): one line per mechanism, its epsilon and route; ``full=True``:
        the analysis's whole report (every constant with its provenance, every note).

        Args:
            full: the long form.

        Returns:
            the text.
        """
        if full:
            return self._report.table()
        an = self._report.analysis
        rows = [("mechanism", "epsilon", "route")] + [(m, "-" if e is None else f"{e:.6g}", r)
                                                     for m, e, _, r in self._rows()]
        w0, w1 = (max(len(r[i]) for r in rows) for i in (0, 1))
        lines = [f"certify {an.model_name}: {an.data_size} records, delta = {self._report.delta:g}"]
        lines += [f"{m:<{w0}}  {e:<{w1}}  {r}" for m, e, r in rows]
        lines.append("(.table(full=True): the constants with their provenance and the notes)")
        return "\n".join(lines)

    def to_dataframe(self):
        """One row per mechanism: ``epsilon`` (NaN when not certified), ``delta``, ``route``.

        Returns:
            a pandas DataFrame indexed by mechanism.
        """
        import pandas as pd

        rows = [(m, float("nan") if e is None else e, self._report.delta, r) for m, e, _, r in self._rows()]
        return pd.DataFrame(rows, columns=["mechanism", "epsilon", "delta", "route"]).set_index("mechanism")

    def _repr_html_(self) -> str:
        return _html_table(["mechanism", "epsilon", "delta", "route"],
                           [(m, "-" if e is None else f"{e:.6g}", "-" if d is None else f"{d:g}", r)
                            for m, e, d, r in self._rows()])

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"<CertifyResult {self._report.analysis.model_name}: {', '.join(self._report.certified())}>"


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
    "reproducible seed: not private", ``mcmc.private`` is False).  ``print(mcmc)`` shows the certificate and
    the summary table, ``to_dataframe()`` returns it.  With a plan, the run's own certificate (computed with the
    data) must not exceed the plan's.

    Examples:
        >>> import bayesdp, numpy as np
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> y = (rng.random(200) < 0.5).astype(float)
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> mcmc = bayesdp.PrivateMCMC(bayesdp.ULA(logistic, domain=dom, step_size=1e-3), num_steps=200)
        >>> _ = mcmc.run(None, X, y)                  # NumPyro's run(rng_key, *args): keys from the OS CSPRNG
        >>> mcmc.get_samples()["w"].shape, mcmc.certificate["certified"], mcmc.private
        ((1, 3), True, True)
        >>> acct = bayesdp.PrivacyAccountant(budget=10.0, budget_delta=1e-5)
        >>> _ = acct.spend(mcmc.certificate)          # charged through the certificate's to_dp_event()
        >>> idata = mcmc.to_inference_data()          # instead of az.from_numpyro: the draws and the settings
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

    def run(self, rng_key=None, *args: Any, clip_to_domain: bool = False, **kwargs: Any) -> "PrivateMCMC":
        """Run on the data, NumPyro's ``MCMC.run(rng_key, *args, **kwargs)``: positional arguments are the
        model's arguments in order (``mcmc.run(None, X, y)``), keywords by name (``mcmc.run(X=X, y=y)``).

        Args:
            rng_key: ``None`` (default: chain keys from the OS CSPRNG, the run is private), or a JAX PRNG key
                or int seed: the draws are then reproducible by anyone who knows it, the run is marked not
                private (``mcmc.private`` is False; a persistent ledger refuses to charge it).
            *args: the model's data arguments, in the order of its signature.
            clip_to_domain: clip the records into the domain first (:meth:`Domain.clip`) instead of refusing
                records outside it.
            **kwargs: the model's data arguments by name.

        Returns:
            the driver itself (``get_samples()``, ``certificate``, ``print(mcmc)``).

        Raises:
            AssumptionError: no data, an argument given twice or not the model's, records outside the
                domain (without ``clip_to_domain``), or a run certified above the plan's epsilon.
        """
        from .analysis import Domain
        from .analysis.inputs import counts_from_domain
        from .errors import clip_advice
        from .samplers import Sampler

        k = self.kernel
        data = self._data_arguments(args, kwargs)
        dom = _domain(k.domain)
        if clip_to_domain:
            data = dom.clip({n: np.asarray(v) for n, v in data.items()})
        kw = counts_from_domain(k.model, dom if isinstance(dom, Domain) else None, dict(k.model_kwargs or {}))
        with clip_advice(", or clip to the domain: mcmc.run(..., clip_to_domain=True) or Domain.clip(data)"):
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

    def _data_arguments(self, args: tuple, kwargs: dict) -> dict:
        """``{name: array}`` from NumPyro-style positional and keyword data arguments."""
        import inspect

        model = self.kernel.model
        data = dict(kwargs)
        if args:
            fixed = set(self.kernel.model_kwargs or {})
            try:
                params = [p.name for p in inspect.signature(model).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in fixed]
            except (TypeError, ValueError):
                params = []
            if len(args) > len(params):
                raise AssumptionError(f"run got {len(args)} positional data argument(s) but the model takes "
                                      f"{len(params)} ({', '.join(params) or 'none by position'}); pass them by "
                                      "name, e.g. mcmc.run(X=X, y=y)")
            for name, value in zip(params, args):
                if name in data:
                    raise AssumptionError(f"run got the model argument {name!r} twice (by position and by name); "
                                          "pass it once")
                data[name] = value
        if not data:
            raise AssumptionError("no data: pass the model's data arguments, e.g. mcmc.run(None, X, y) or "
                                  "mcmc.run(X=X, y=y)")
        return data

    def _require(self):
        if self._sampler is None:
            raise AssumptionError("the chain has not run: call .run(rng_key, *data) first")
        return self._sampler

    @property
    def certificate(self) -> "ChainCertificate":
        """The run's certificate (epsilon at delta, the route, the composition over chains): a read-only
        mapping that an accountant charges (``accountant.spend(mcmc.certificate)``)."""
        smp = self._require()
        return ChainCertificate(smp.certificate, private=self.private)

    @property
    def private(self) -> bool:
        """Whether the released draws are private: the chain keys came from the OS CSPRNG (False after
        ``run`` with an explicit ``rng_key``: anyone who knows the key can reproduce the draws)."""
        from .samplers.keys import REPRODUCIBLE

        return self._require().key_source != REPRODUCIBLE

    def to_dp_event(self):
        """The privacy cost of publishing the draws, for an accountant (see :meth:`ChainCertificate.to_dp_event`).

        Returns:
            a dp-accounting ``GaussianDpEvent`` (GDP certificate) or a :class:`bayesdp.ApproxDP`.

        Raises:
            BudgetError: the run is not certified.
        """
        return self.certificate.to_dp_event()

    @property
    def dp_event(self) -> dict:
        """The certificate's event as the accountant's dict (:attr:`ChainCertificate.dp_event`):
        ``accountant.spend(mcmc)`` charges the published draws."""
        return self.certificate.dp_event

    @property
    def sampler(self):
        """The underlying :class:`bayesdp.samplers.Sampler` (after :meth:`run`)."""
        return self._require()

    def get_samples(self, group_by_chain: bool = False) -> dict:
        """The released draws per site, in the constrained space (NumPyro's ``MCMC.get_samples``).

        Args:
            group_by_chain: keep the chain axis.

        Returns:
            ``{site: array}``.
        """
        return self._require().get_samples(group_by_chain=group_by_chain)

    def print_summary(self, prob: float = 0.9) -> str:
        """ArviZ summary of the released draws with the certificate; printed and returned.

        Args:
            prob: the probability mass of the HDI.

        Returns:
            the printed text.
        """
        return self._require().print_summary(prob)

    def settings(self) -> dict:
        """The chain's public settings: sampler, step size, steps, chains, inverse temperature, batch size,
        clipping, release, the number of records the certificate is for, and the certificate's epsilon and delta.

        Returns:
            a JSON-ready dict.
        """
        return chain_settings(self._require())

    def to_inference_data(self):
        """ArviZ data of what the certificate covers: the released draws (group ``posterior``), with the
        settings and the certificate in its attributes; never the data, per-record log-likelihoods or
        potential energies.  The one-line conversion (``az.from_numpyro`` does not apply: this is not a
        NumPyro ``MCMC``)::

            idata = mcmc.to_inference_data()

        Returns:
            ``InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x); ``posterior.attrs`` holds
            ``bayesdp_certificate`` (JSON), ``bayesdp_settings`` (JSON) and ``bayesdp_private``.
        """
        return chain_inference_data(self._require())

    def to_dataframe(self, prob: float = 0.9):
        """The ArviZ summary of the released draws (mean, sd, HDI, ESS, R-hat) as a pandas DataFrame.

        Args:
            prob: the probability mass of the HDI.

        Returns:
            the DataFrame, one row per coordinate.
        """
        import warnings

        from . import _arviz

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")    # ESS and R-hat of a single draw per chain
            return _arviz.summary(self.to_inference_data(), prob)

    def _head(self) -> str:
        k = self.kernel
        head = (f"PrivateMCMC: {k.sampler.upper()} {self.release_kind} release, {self.num_chains} chain(s) x "
                f"{self.num_steps} steps, step size {k.step_size:g}")
        if self._sampler is None:
            return head + " (not run: call .run(rng_key, *data))"
        cert = self._sampler.certificate
        if cert.get("certified"):
            head += (f"\ncertified: epsilon = {cert['epsilon']:.6g} at delta = {cert['delta']:g} "
                     f"({', '.join(cert['sources'])})")
        else:
            head += "\nNOT CERTIFIED: " + str(cert.get("reason"))
        if not self.private:
            head += "\nchain keys: reproducible seed: not private (omit rng_key for OS CSPRNG keys)"
        return head

    def __str__(self) -> str:
        if self._sampler is None:
            return self._head()
        return self._head() + "\n" + self.to_dataframe().to_string()

    def _repr_html_(self) -> str:
        from html import escape

        head = "".join(f"<p>{escape(line)}</p>" for line in self._head().splitlines())
        return head + ("" if self._sampler is None else self.to_dataframe().to_html())


def chain_settings(sampler) -> dict:
    """The public settings of a run :class:`bayesdp.samplers.Sampler` (what :meth:`PrivateMCMC.settings` and
    ``bayesdp sample --out`` record): sampler, step size, steps, chains, inverse temperature, batch size,
    clipping, release, the number of records, the certificate's mechanism, epsilon and delta, and whether the
    chain keys were private.

    Args:
        sampler: a sampler that has run.

    Returns:
        a JSON-ready dict.

    Examples:
        >>> import bayesdp, numpy as np
        >>> X = np.eye(3)[[0, 1, 2, 0]] * 0.9; y = np.array([1.0, 0.0, 1.0, 0.0])
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> mcmc = bayesdp.PrivateMCMC(bayesdp.ULA("logistic", domain=dom, step_size=1e-3), num_steps=20).run(0, X, y)
        >>> s = chain_settings(mcmc.sampler); s["num_steps"], s["data_size"], s["private"]
        (20, 4, False)
    """
    from .samplers.keys import REPRODUCIBLE

    c = sampler.config
    cert = sampler.certificate
    return {"sampler": c.sampler, "step_size": c.step_size, "num_steps": c.num_steps, "num_chains": c.num_chains,
            "inverse_temperature": c.inverse_temperature, "batch_size": c.batch_size, "clip_norm": c.clip_norm,
            "release": c.release, "thinning": c.thinning, "data_size": c.data_size,
            "mechanism": cert.get("mechanism"), "epsilon": cert.get("epsilon"), "delta": cert.get("delta"),
            "private": sampler.key_source != REPRODUCIBLE}


def chain_inference_data(sampler):
    """ArviZ data of a run sampler: the released draws only (group ``posterior``), the certificate and the
    settings (:func:`chain_settings`) in ``posterior.attrs``; what ``PrivateMCMC.to_inference_data()`` and
    ``bayesdp sample --out`` write.

    Args:
        sampler: a sampler that has run.

    Returns:
        ``InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x).

    Examples:
        >>> import bayesdp, json, numpy as np
        >>> X = np.eye(3)[[0, 1, 2, 0]] * 0.9; y = np.array([1.0, 0.0, 1.0, 0.0])
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> mcmc = bayesdp.PrivateMCMC(bayesdp.ULA("logistic", domain=dom, step_size=1e-3), num_steps=20)
        >>> idata = chain_inference_data(mcmc.run(None, X, y).sampler)
        >>> json.loads(idata["posterior"].attrs["bayesdp_settings"])["step_size"]
        0.001
    """
    import warnings

    from . import _arviz

    settings = chain_settings(sampler)
    attrs = {"bayesdp_certificate": sampler.certificate_json(), "bayesdp_certified": int(sampler.certified),
             "bayesdp_release": sampler.config.release, "bayesdp_sampler": sampler.config.sampler,
             "bayesdp_chain_keys": sampler.key_source, "bayesdp_private": int(settings["private"]),
             "bayesdp_settings": json.dumps(settings, allow_nan=False, default=str)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _arviz.from_dict({"posterior": sampler.get_samples(group_by_chain=True)}, attrs={"posterior": attrs})


class ChainCertificate(Mapping):
    """A run's certificate: the read-only mapping of :class:`bayesdp.samplers.Sampler`'s certificate
    (``certified``, ``epsilon``, ``delta``, ``gdp_mu``, ``sources``, ...) that accountants charge
    through :meth:`to_dp_event`; ``private`` says whether the chain keys came from the OS CSPRNG.

    Args:
        certificate: the certificate dict.
        private: False when the run had an explicit key.

    Examples:
        >>> cert = ChainCertificate({"certified": True, "epsilon": 1.2, "delta": 1e-5, "gdp_mu": 0.25},
        ...                         private=True)
        >>> cert["epsilon"], type(cert.to_dp_event()).__name__, cert.to_dp_event().noise_multiplier
        (1.2, 'GaussianDpEvent', 4.0)
    """

    def __init__(self, certificate: Mapping[str, Any], private: bool = True):
        self._cert = dict(certificate)
        self.private = bool(private)

    def __getitem__(self, key):
        return self._cert[key]

    def __iter__(self):
        return iter(self._cert)

    def __len__(self) -> int:
        return len(self._cert)

    def __repr__(self) -> str:
        return f"ChainCertificate({self._cert!r}, private={self.private})"

    def to_dict(self) -> dict:
        """The certificate as a JSON-ready dict (a copy).

        Returns:
            the dict.
        """
        return dict(self._cert)

    def to_dp_event(self):
        """The event an accountant charges: a GDP certificate (``gdp_mu``) is dp-accounting's
        ``GaussianDpEvent(noise_multiplier = 1 / mu)`` (the mu-GDP trade-off curve is that of the Gaussian
        mechanism of sensitivity 1 and noise 1/mu: Dong-Roth-Su 2022, Def. 2.6), priced exactly by its PLD;
        otherwise the (epsilon, delta) pair the certificate states, :class:`bayesdp.ApproxDP`.

        Returns:
            the event.

        Raises:
            BudgetError: the run is not certified (nothing can be charged for it).
        """
        from .errors import BudgetError

        if not self._cert.get("certified") or self._cert.get("epsilon") is None:
            raise BudgetError("the run is not certified (" + str(self._cert.get("reason") or "no epsilon") + "); an "
                              "accountant cannot charge it: run a certified configuration")
        mu = self._cert.get("gdp_mu")
        if mu is not None and mu > 0:
            from dp_accounting import dp_event

            return dp_event.GaussianDpEvent(noise_multiplier=1.0 / float(mu))
        from .curves import ApproxDP

        return ApproxDP(float(self._cert["epsilon"]), float(self._cert["delta"]))

    @property
    def dp_event(self) -> dict:
        """The event as the accountant's dict (``{"type": "gdp", "mu": ...}`` or ``{"type": "epsilon_delta",
        ...}``), for accountants that read ``dp_event``."""
        ev = self.to_dp_event()
        if hasattr(ev, "noise_multiplier"):
            return {"type": "gdp", "mu": float(self._cert["gdp_mu"])}
        return {"type": "epsilon_delta", "epsilon": repr(float(ev.eps0)), "delta": repr(float(ev.delta0))}


# ---------------------------------------------------------------------------
# release


def _chain_source(source: Any, data: Mapping[str, Any] | None):
    """The engine's :class:`~bayesdp.publish.methods.base.ChainSource` from what the user passed: a kernel, a
    plan, a driver that has not run (their settings honoured), or a driver that ran (its draws as they are)."""
    from .analysis import Domain
    from .analysis.inputs import counts_from_domain
    from .analysis.records import validate_records
    from .calibration import calibrate

    ran = isinstance(source, PrivateMCMC) and getattr(source, "_sampler", None) is not None
    if ran:
        smp = source._sampler
        c = smp.config
        kernel = source.kernel
        kern = {"sampler": c.sampler, "step_size": c.step_size, "inverse_temperature": c.inverse_temperature,
                "batch_size": c.batch_size, "clip_norm": c.clip_norm}
        dom = _domain(kernel.domain)
        draws = np.asarray(smp.get_unconstrained_samples(group_by_chain=True))
        return ChainSource(model=kernel.model, data={k: np.asarray(v) for k, v in smp.potential.data.items()},
                           domain=dom, model_kwargs=dict(smp.potential.model_kwargs or {}), kernel=kern, given="chain",
                           num_steps=c.num_steps, num_chains=c.num_chains, draws=draws,
                           run_kind=source.release_kind, thinning=c.thinning, key_label=smp.key_source)
    if isinstance(source, Plan):
        kernel, given, n, nc, plan = source.kernel(), "plan", source.num_steps, source.num_chains, source
    elif isinstance(source, PrivateMCMC):
        kernel, given, n, nc, plan = source.kernel, "driver", source.num_steps, source.num_chains, source.plan
    elif isinstance(source, ULA):
        kernel, given, n, nc, plan = source, "kernel", None, None, None
    else:
        raise AssumptionError(f"release needs a kernel (ULA/SGLD with the model and the domain), a Plan or a "
                              f"PrivateMCMC, not {type(source).__name__}")
    if kernel.model is None or kernel.domain is None:
        raise AssumptionError("the kernel needs the model and the domain: ULA(model, domain=..., step_size=...)")
    if data is None:
        raise AssumptionError(f"release({type(source).__name__}, ...) runs its chain(s) on the records: pass "
                              "data={...} (the model's data arguments by name)")
    dom = _domain(kernel.domain)
    kw = counts_from_domain(kernel.model, dom if isinstance(dom, Domain) else None, dict(kernel.model_kwargs or {}))
    data, m = validate_records(data, kernel.model, kw)
    if isinstance(source, Plan) and m != source.data_size:
        raise AssumptionError(f"the data have {m} records but the plan was made for {source.data_size}; calibrate a "
                              "plan for this data size")
    kern = {"sampler": kernel.sampler, "step_size": kernel.step_size,
            "inverse_temperature": kernel.inverse_temperature, "batch_size": kernel.batch_size,
            "clip_norm": kernel.clip_norm}

    def plan_final(epsilon: float, delta: float, max_steps: int):
        # public quantities only: the record count and shapes, the domain (never the data's values)
        return calibrate(kernel.model, domain=dom, epsilon=epsilon, delta=delta, mechanism="ula-final", data=data,
                         max_steps=max_steps, model_kwargs=kw)

    return ChainSource(model=kernel.model, data=data, domain=dom, model_kwargs=kw, kernel=kern, given=given,
                       num_steps=n, num_chains=nc, plan=plan, plan_final=plan_final)


def release_spec(statistic: Any = "mean", *, epsilon: float | None = None, delta: float = 0.0,
                 method: str = "auto"):
    """The :class:`~bayesdp.publish.spec.ReleaseSpec` :func:`release` builds: ``statistic`` itself when it is a
    spec (then ``epsilon``, ``delta`` and ``method`` must be left to it), else a spec of these.

    Args:
        statistic: a statistic (:func:`~bayesdp.publish.spec.as_statistic`) or a ``ReleaseSpec``.
        epsilon: the release's epsilon (required unless ``statistic`` is a spec).
        delta: its delta.
        method: the method.

    Returns:
        The checked spec.

    Raises:
        AssumptionError: a bad parameter (one line), or options given twice.

    Examples:
        >>> release_spec("mean", epsilon=1.0, delta=1e-6).method
        'auto'
    """
    if isinstance(statistic, ReleaseSpec):
        if epsilon is not None or delta != 0.0 or method != "auto":
            raise AssumptionError("epsilon, delta and method are given by the ReleaseSpec: pass them there only")
        return statistic.check()
    if epsilon is None:
        raise AssumptionError("epsilon = None: pass the release's epsilon, e.g. epsilon=1.0")
    return ReleaseSpec(statistic, epsilon=epsilon, delta=delta, method=method).check()


def release(source: Any, statistic: Any = "mean", *, epsilon: float | None = None, delta: float = 0.0,
            data: Mapping[str, Any] | None = None, accountant: Any = None, method: str = "auto", rng_key=None):
    """Release a private posterior summary, charged to an accountant before its randomness is drawn.

    One engine (:mod:`bayesdp.publish.engine`) serves this function and ``bayesdp release``: the spec is checked
    first (nothing is charged on a bad parameter), the model analysed once, the method chosen by its predicted
    error from public inputs only, the budget reserved, the values drawn, the spend committed.

    Args:
        source: a kernel (:class:`ULA` with the model and the domain: the chains are run here with ``data``), a
            :class:`Plan` or a :class:`PrivateMCMC` that has not run (with ``data``; their settings are used as
            given), or a :class:`PrivateMCMC` that ran (its draws are released as they are, by the coupling
            method).
        statistic: ``"mean"``, ``"median"``, a statistic object (``Mean(sites=...)``, ``Quantiles(q, sites=...)``,
            ``Probability(threshold, width)``, ``Function(fn, lipschitz=...)``: each carries its options), a
            callable over one draw's samples dict, or a :class:`~bayesdp.publish.spec.ReleaseSpec` with every other
            option (noise, range, level, burn-in, steps, chains, chunks).
        epsilon: the release's epsilon.
        delta: its delta (0: pure epsilon-DP with Laplace noise; > 0 allows Gaussian noise and the path and
            last-draw releases).
        data: the records (the model's data arguments by name), for a source whose chains run here.
        accountant: a :class:`PrivacyAccountant`, a :class:`Ledger` or the path of an existing ledger.
        method: ``"auto"`` (the smallest predicted error among the methods that apply to the source),
            ``"coupling"`` (an unpublished chain's estimate plus noise, 004 Proposition 3.7), ``"path"`` (a chain
            whose whole path is private, docs/release.md §8), ``"final"`` (a statistic of a private chain's final
            draw, §10) or ``"sample-aggregate"`` (§7; needs a range).
        rng_key: an explicit seed of the chains run here: reproducible; a path or last-draw release is then NOT
            private (its chain's steps are the noise) and says so (``result.private``); added noise always comes
            from the OS CSPRNG.  Default: OS CSPRNG keys.

    Returns:
        the :class:`~bayesdp.publish.result.ReleaseResult` (``print(result)``, ``result.to_dataframe()``,
        ``result.to_dict()``; each value with its predicted error).

    Raises:
        BayesDPError: invalid input, no method applies, or over budget (nothing drawn, nothing charged).

    Examples:
        >>> import bayesdp, numpy as np
        >>> from bayesdp.publish.spec import Mean, Median
        >>> rng = np.random.default_rng(1)
        >>> X = rng.standard_normal((300, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> y = (rng.random(300) < 0.5).astype(float)
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> mcmc = bayesdp.PrivateMCMC(bayesdp.ULA("logistic", domain=dom, step_size=1e-3), num_steps=300)
        >>> _ = mcmc.run(X=X, y=y)
        >>> acct = bayesdp.PrivacyAccountant(budget=2.0)
        >>> res = bayesdp.release(mcmc, Median(sites=["w"]), epsilon=1.0, accountant=acct)
        >>> res.names, acct.remaining()["epsilon"], res.extra["method"]["method"]
        (('w[0] q0.5', 'w[1] q0.5', 'w[2] q0.5'), 1.0, 'coupling')
    """
    spec = release_spec(statistic, epsilon=epsilon, delta=delta, method=method)
    acct = open_accountant(accountant)
    return execute(_chain_source(source, data), spec, acct, rng_key)
