"""Kernels, models by reference, the frozen :class:`Plan` and :func:`certify`: the layer below the public
:mod:`bayesdp.api` (which re-exports every name) and above the release engine (docs/architecture.md).

:func:`bayesdp.calibrate` (:mod:`bayesdp.calibration`) builds on these.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, field, fields
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

from .errors import AssumptionError, ModelError
from .resources import write_file
from html import escape
import importlib
import os
from .analysis import Domain
from .analysis import certify as _analysis_certify
from .curves import compose
from .certificate import BoundReport

MECHANISMS = ("posterior", "ula-final", "ula-path", "sgld-final", "sgld-path")

__all__ = ["ULA", "SGLD", "Plan", "Shapes", "certify", "CertifyResult", "model_reference", "resolve_model",
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
    if "warnings" in d and not (isinstance(d["warnings"], list) and all(isinstance(w, str) for w in d["warnings"])):
        bad("warnings", "a list of strings")
    if d.get("diagnostics") is not None and not isinstance(d["diagnostics"], dict):
        bad("diagnostics", "an object or null")


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
        diagnostics: for calibrated chains, ``{"contraction": ...}``: the proven and the heuristic e-folds of
            contraction over the planned steps and the e-folds the chain needs to forget its start
            (:func:`bayesdp.calibration.contraction_diagnostics`).
        warnings: one line each, e.g. a chain that cannot reach its target (also printed by the CLI on stderr).

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
    diagnostics: Mapping[str, Any] | None = None
    warnings: tuple = ()
    model_fn: Callable | None = field(default=None, compare=False, repr=False)

    # -- serialisation --------------------------------------------------------------
    def to_dict(self) -> dict:
        """Every field (the model by reference), JSON-ready, with ``"format": "bayesdp plan v1"``."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "model_fn"}
        d["notes"] = list(self.notes)
        d["warnings"] = list(self.warnings)
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
        d["warnings"] = tuple(d.get("warnings", ()))
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
        con = (self.diagnostics or {}).get("contraction")
        if con:
            rows += _contraction_rows(con)
        return rows

    def table(self, warnings: bool = True) -> str:
        """The plan as a two-column table (what ``print(plan)`` shows).

        Args:
            warnings: end with the warnings (``WARNING ...`` lines); the CLI prints them on stderr instead.

        Returns:
            the text, one setting a line, then the notes (and the warnings).
        """
        return _text_table(self._rows(), self.notes + (tuple(f"WARNING {w}" for w in self.warnings) if warnings
                                                       else ()))

    def to_dataframe(self):
        """The plan's settings as a pandas DataFrame (index ``setting``, column ``value``).

        Returns:
            the DataFrame (the rows of :meth:`table`).
        """
        return _frame(self._rows(), ["setting", "value"])

    def _repr_html_(self) -> str:
        return _html_table(["setting", "value"], self._rows(),
                           self.notes + tuple(f"WARNING {w}" for w in self.warnings))

    def __str__(self) -> str:
        return self.table()


def _efolds_text(x) -> str:
    return "-" if x is None else f"{x:.3g} e-folds"


def _contraction_rows(con: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The table rows of ``diagnostics["contraction"]`` (bayesdp.calibration.contraction_diagnostics)."""
    p, h, need = con["proven"], con["heuristic"], con["needed"]
    pc = p.get("constants") or {}
    rows = [("contraction (proven)", _efolds_text(p.get("efolds")) + (
        f"  (strong convexity {pc['strong_convexity']:.4g}, smoothness {pc['smoothness']:.4g})"
        if p.get("efolds") is not None else "  (" + p.get("what", "") + ")")),
            ("contraction (heuristic)", _efolds_text(h.get("efolds")) + (
                f"  (curvature {h['curvature']:.4g})" if h.get("curvature") is not None else ""))]
    np_, nh = need.get("proven"), need.get("heuristic")
    if np_ is not None or nh is not None:
        rows.append(("needs to forget its start", f"{_efolds_text(None if nh is None else nh['efolds'])} (heuristic), "
                                                  f"{_efolds_text(None if np_ is None else np_['efolds'])} (proven)"))
    return rows


def _text_table(rows, notes=()) -> str:
    w = max(len(k) for k, _ in rows)
    return "\n".join([f"{k:<{w}}  {v}" for k, v in rows] + [f"note: {n}" for n in notes])


def _frame(rows, columns):
    import pandas as pd

    return pd.DataFrame([list(r) for r in rows], columns=columns).set_index(columns[0])


def _html_table(columns, rows, notes=()) -> str:

    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    foot = "".join(f"<p>note: {escape(str(n))}</p>" for n in notes)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{foot}"


# ---------------------------------------------------------------------------
# certify


def _shapes_from(data, record_shapes, model, domain, dim):
    from .analysis.inputs import declared_shapes
    if data is not None:
        return {k: tuple(np.shape(v)[1:]) for k, v in data.items()}
    if record_shapes is not None:
        return {k: tuple(v) for k, v in record_shapes.items()}

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

        rows = []
        chains = int(self._context[7] or 1)
        for k, v in self._report.mechanisms.items():
            if isinstance(v, BoundReport) and v.best is not None:
                # the chains released together compose (as the plan certifies them); the posterior is one draw
                c = 1 if k == "posterior" else chains
                eps = v.value() if c == 1 else _compose_chains(v.best, c, self._report.delta)[0]
                rows.append((k, eps, self._report.delta, v.best.source + (f" ({c} chains composed)" if c > 1 else "")))
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

    curve = compose([best.curve] * num_chains) if num_chains > 1 else best.curve
    return float(curve.epsilon(delta)), curve.gdp_mu


def _plan_from_report(rep, model, dom, n, shapes, kw, kernel, num_steps, num_chains, delta, mechanism=None,
                      distance_bound=None, notes=(), diagnostics=None, warnings=()) -> Plan:

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
                gdp_mu=mu, distance_bound=distance_bound, notes=tuple(notes), diagnostics=diagnostics,
                warnings=tuple(warnings), model_fn=model)
