"""The analysis' inputs: model, data (or only its size), public domain, options — validated.

Nothing is read off the private data except its shapes, dtypes and (for the domain check, which
is the data owner's own verification) whether every record lies in the declared domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import AssumptionError, DomainError, ModelError, positive, positive_int
from .domain import Domain
from .records import validate_records

__all__ = ["counts_from_domain", "declared_shapes", "model_name"]


@dataclass
class Inputs:
    model: Callable
    name: str
    domain: Domain
    kwargs: dict
    arrays: dict | None             # validated data (None: certify before sampling)
    m: int                          # number of records
    shapes: dict                    # per-record shape of each data argument
    dtypes: dict                    # dtype each data argument is traced with
    clip_norm: float | None
    domain_clipping: dict
    notes: list


def model_name(model: Callable) -> str:
    """The name a model is reported under: its ``__name__``, else its class name.

    Args:
        model: a model function (or callable object).

    Returns:
        The name.

    Examples:
        >>> from bayesdp.analysis.inputs import model_name
        >>> def my_model(X, y=None):
        ...     pass
        >>> model_name(my_model)
        'my_model'
    """
    return getattr(model, "__name__", None) or type(model).__name__


def check_inputs(model, data, domain, model_kwargs, clip_norm, data_size, dim, clip_to_domain,
                 name: str | None, record_shapes: Mapping[str, Any] | None = None) -> Inputs:
    import jax.numpy as jnp

    if not callable(model):
        raise ModelError(f"model {model!r} is not callable; pass a NumPyro model function")
    name = name or model_name(model)
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
    clipping: dict = {}
    notes: list[str] = []
    if data is not None:

        arrays, m = validate_records(data)                # shapes, numeric and finite values
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
        checked, clipping = domain.check(arrays, clip=clip_to_domain)
        if clipping:
            domain.check(checked, clip=False)  # clipping must land inside every declared bound
            notes.append("data clipped to the declared domain (records changed per argument: "
                         + ", ".join(f"{k}: {v}" for k, v in clipping.items()) + ")")
        arrays = {k: (v if k not in clipping else v.astype(arrays[k].dtype if
                      np.issubdtype(arrays[k].dtype, np.floating) else np.float64)) for k, v in checked.items()}
        arrays, m = validate_records(arrays, model, kw)   # labels within the model's supports (after the domain)
        shapes = {k: tuple(np.shape(v)[1:]) for k, v in arrays.items()}
        dtypes = {k: (jnp.bool_ if v.dtype == bool else jnp.int32 if np.issubdtype(v.dtype, np.integer) else
                      jnp.float32) for k, v in arrays.items()}
    else:
        if data_size is None:
            raise AssumptionError("data_size is required without data; pass --data-size M (the number of records)")
        m = positive_int("data_size", data_size)
        arrays = None
        shapes = _record_shapes(record_shapes) if record_shapes is not None else declared_shapes(model, domain, dim)
        dtypes = {}
        for n in shapes:
            dom = domain.get(n)
            ints = dom is not None and dom.values is not None and all(float(v).is_integer() for v in dom.values)
            dtypes[n] = jnp.int32 if ints else jnp.float32
    return Inputs(model, name, domain, kw, arrays, m, shapes, dtypes, G, clipping, notes)


def _record_shapes(record_shapes: Mapping[str, Any]) -> dict[str, tuple]:
    """Per-record shapes given explicitly, e.g. ``{"X": (3,), "y": ()}``, checked."""
    out = {}
    for name, shp in dict(record_shapes).items():
        try:
            t = tuple(int(d) for d in (shp if isinstance(shp, (list, tuple)) else (shp,)))
        except (TypeError, ValueError):
            raise AssumptionError(f"record_shapes[{name!r}] = {shp!r} is not a shape; pass a tuple of positive "
                                  "integers, () for one number per record") from None
        if any(d < 1 for d in t):
            raise AssumptionError(f"record_shapes[{name!r}] = {shp!r} must have positive dimensions")
        out[str(name)] = t
    if not out:
        raise AssumptionError("record_shapes is empty; give the shape of one record of every data argument")
    return out


def declared_shapes(model, domain: Domain, dim) -> dict[str, tuple]:
    """Per-record shapes when there is no data: from the model's ``bayesdp_data`` declaration
    (number of per-record axes of each argument) or, failing that, from the domain (an argument with a
    declared norm, or named ``X``, has one row of ``dim`` entries per record; the others one number).

    Args:
        model: the model (its ``bayesdp_data`` attribute, when set, maps argument -> 0 or 1 per-record axes).
        domain: the declared :class:`~bayesdp.analysis.domain.Domain`.
        dim: the length of a row (required when an argument has one).

    Returns:
        Argument -> the shape of one record.

    Raises:
        AssumptionError: if ``dim`` is needed and missing, or not a positive integer.

    Examples:
        >>> from bayesdp.analysis.domain import Domain
        >>> from bayesdp.analysis.inputs import declared_shapes
        >>> from bayesdp.analysis.loading import load_model
        >>> model, _ = load_model("logistic")
        >>> declared_shapes(model, Domain.parse(["X.norm=1", "y.values=0,1"]), dim=3)
        {'X': (3,), 'y': ()}
    """
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


def counts_from_domain(model, domain: Domain, model_kwargs: Mapping[str, Any] | None) -> dict:
    """Model hyperparameters that count the values of a data argument (the model's ``bayesdp_counts``, e.g.
    ``num_classes`` from ``y.values``, ``num_groups`` from ``g.values``), filled from the PUBLIC domain when
    not given: max(values) + 1.  Returns the completed model_kwargs.

    Args:
        model: the model (its ``bayesdp_counts`` attribute maps hyperparameter -> data argument).
        domain: the declared :class:`~bayesdp.analysis.domain.Domain` (or None).
        model_kwargs: the keyword arguments given (never overwritten).

    Returns:
        The model's keyword arguments with the counts filled in where the domain lists nonnegative integers.

    Examples:
        >>> from bayesdp.analysis.domain import Domain
        >>> from bayesdp.analysis.inputs import counts_from_domain
        >>> from bayesdp.analysis.loading import load_model
        >>> model, _ = load_model("softmax")
        >>> counts_from_domain(model, Domain.parse(["X.norm=1", "y.values=0,1,2"]), None)
        {'num_classes': 3}
        >>> counts_from_domain(model, Domain.parse(["y.values=0,1,2"]), {"num_classes": 5})
        {'num_classes': 5}
    """
    kw = dict(model_kwargs or {})
    for name, arg in (getattr(model, "bayesdp_counts", None) or {}).items():
        if name in kw:
            continue
        dom = domain.get(arg) if domain is not None else None
        if dom is not None and dom.values is not None and all(float(v).is_integer() and v >= 0 for v in dom.values):
            kw[name] = int(max(dom.values)) + 1
    return kw
