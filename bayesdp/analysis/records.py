"""One validation of the data records, shared by the commands, the samplers, the release and the analyzer.

:func:`validate_records` is the single entry point.  Contract::

    arrays, m = validate_records(data, model=None, model_kwargs=None)

* ``data``: a non-empty mapping of record arrays sharing their leading (record) dimension ``m >= 1``.
  Refused in one line (:class:`~bayesdp.errors.AssumptionError` for the structure,
  :class:`~bayesdp.errors.DomainError` for the values) naming the array and, for values, the first
  offending record: not a mapping / empty, a non-numeric or complex dtype, a 0-d array, mismatched
  leading dimensions, NaN or inf.
* ``model`` (optional, with ``model_kwargs``): the model is traced once on the first record
  (NumPyro's ``seed``/``trace`` handlers, Python only, nothing compiled).  Every *observed* site whose
  value is one of the data arrays (passed directly as ``obs=``) and whose distribution has a discrete
  support (Categorical, Bernoulli, Poisson, Binomial, ...) is checked on ALL records:

  - any non-integer value is refused, naming the array, the record, the value and the site; for a
    distribution that indexes by the value (Categorical and its subclasses) a floating array whose values
    are all integers is converted to ``int32`` (labels read from a CSV or saved with ``np.savez`` of
    floats), other arrays keep their dtype (a Bernoulli's 0./1. stay floats);
  - values outside the support (e.g. a class label ``>= num_classes`` of a Categorical, a negative
    count, a Bernoulli outcome not in {0, 1}) are refused likewise, with the support's bounds.

  A model that fails when traced on one record is left to the caller's own error (the samplers and the
  analyzer report it with their context); a support whose bounds vary per record (a Binomial's
  ``total_count`` read from the data) is checked record by record: the model is traced once on all records
  and the support's own check is applied (``y <= n`` for every record).
* Returns ``(arrays, m)``: NumPy arrays (converted labels as int32, everything else as given) and the
  number of records.  Nothing is clipped or rounded: a value is either accepted exactly or refused.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import AssumptionError, DomainError, ModelError
from .session import memo, program_key

__all__ = ["traced_abstractly", "validate_records"]

#: rows checked per chunk for NaN/inf (no temporary of the data's size)
_CHUNK_ELEMENTS = 1 << 22


def _check_structure(data: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], int]:
    if not isinstance(data, Mapping) or not data:
        raise AssumptionError(f"data = {type(data).__name__} must be a non-empty dict of record arrays "
                              f"(e.g. {{'X': X, 'y': y}}); pass the model's data keyword arguments")
    out: dict[str, np.ndarray] = {}
    m = None
    for name, value in data.items():
        try:
            arr = np.asarray(value)
        except Exception:  # noqa: BLE001 - ragged lists and the like
            raise AssumptionError(f"data['{name}'] is not an array (ragged or mixed values); pass a numeric "
                                  "array with one row per record") from None
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise AssumptionError(f"data['{name}'] has dtype {arr.dtype} which is not numeric; "
                                  f"pass a float, integer or boolean array")
        if np.issubdtype(arr.dtype, np.complexfloating):
            raise AssumptionError(f"data['{name}'] has complex dtype {arr.dtype}; pass a real array")
        if arr.ndim == 0:
            raise AssumptionError(f"data['{name}'] has shape () but needs a leading record axis; "
                                  f"pass an array of shape (m, ...) or move it to model_kwargs")
        if m is None:
            m = arr.shape[0]
        elif arr.shape[0] != m:
            raise AssumptionError(f"data['{name}'] has {arr.shape[0]} records (shape {arr.shape}) but the "
                                  f"other data arrays have {m}; every data array needs the same leading dimension")
        if np.issubdtype(arr.dtype, np.floating):
            step = max(1, _CHUNK_ELEMENTS // max(1, int(np.prod(arr.shape[1:], dtype=np.int64))))
            for start in range(0, arr.shape[0], step):
                chunk = arr[start:start + step]
                if not np.isfinite(chunk).all():
                    idx = np.argwhere(~np.isfinite(chunk))[0]
                    bad = chunk[tuple(idx)]
                    idx = (int(idx[0]) + start,) + tuple(int(i) for i in idx[1:])
                    raise DomainError(f"data['{name}'] has a non-finite value {bad} at index {idx}; "
                                      f"remove or impute records with NaN/inf")
        out[str(name)] = arr
    if m is None or m < 1:
        raise AssumptionError(f"data has {m} records; pass at least one record")
    return out, int(m)


def _scalar(x) -> float | None:
    """A Python float of a scalar bound, None for an array bound (varies per record) or no bound."""
    if x is None:
        return None
    a = np.asarray(x)
    if a.size != 1:
        return None
    return float(a.reshape(()))


def _support_bounds(support) -> tuple[float | None, float | None, bool]:
    """(lower, upper, known) of a discrete NumPyro constraint; ``known`` is False when the bounds
    cannot be read as scalars (checked for integrality only)."""
    from numpyro.distributions import constraints as C

    if support is C.boolean:
        return 0.0, 1.0, True
    if isinstance(support, C._IntegerInterval):
        lo, hi = _scalar(support.lower_bound), _scalar(support.upper_bound)
        return lo, hi, lo is not None and hi is not None
    if isinstance(support, C._IntegerGreaterThan):
        lo = _scalar(support.lower_bound)
        return lo, None, lo is not None
    if support is C.nonnegative_integer:
        return 0.0, None, True
    if support is C.positive_integer:
        return 1.0, None, True
    return None, None, False


def _observed_discrete_sites(model: Callable, one: Mapping[str, np.ndarray], model_kwargs: Mapping[str, Any]):
    """[(site name, data argument, support)] for observed sites with a discrete support whose value is a
    data array (identity); [] when the model cannot be traced on one record."""
    import jax
    from numpyro import handlers

    kwargs = dict(model_kwargs or {})

    def sites(arrays):
        # seeded: only the sites' structure is read here, never a draw (nothing of this trace is published)
        tr = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace(**arrays, **kwargs)
        by_id = {id(v): k for k, v in arrays.items()}
        out = []
        for name, site in tr.items():
            if site.get("type") != "sample" or not site.get("is_observed"):
                continue
            arg = by_id.get(id(site.get("value")))
            if arg is None:
                continue
            support = getattr(site["fn"], "support", None)
            if support is None or not getattr(support, "is_discrete", False):
                continue
            out.append((name, arg, support, type(site["fn"]).__name__, _indexes_by_value(site["fn"])))
        return out

    # traced abstractly first (nothing compiled: run eagerly, each operation of the model is a small program to
    # lower, 13 of them for a logistic regression); a support whose bounds were computed in the program (a
    # Binomial's total_count) holds abstract values then, and the model is run on the record itself
    # the abstract result reads only the model, its kwargs and the record's shapes and dtypes: made once inside one
    # public call (bayesdp.analysis.session)
    key, keep = program_key(model, {k: np.shape(v) for k, v in one.items()},
                            {k: np.asarray(v).dtype for k, v in one.items()}, kwargs, None)
    with contextlib.suppress(Exception):          # a model that needs concrete values: run on the record below
        got = memo("observed-discrete-sites", key, lambda: traced_abstractly(sites, one), keep)
        if not any(_holds_tracer(support, jax.core.Tracer) for _, _, support, _, _ in got):
            return got
    try:
        return sites(one)
    except Exception:  # noqa: BLE001 - the caller reports a model that fails, with its own context
        return []


def traced_abstractly(fn: Callable, arrays: Mapping[str, Any]):
    """``fn(arrays)`` run once under ``jax.make_jaxpr``: nothing is evaluated or compiled, the arrays it sees are
    abstract (their shapes and dtypes), and its Python result is returned as it is (arrays in it are abstract).
    The model traces that need only shapes and distributions use it (run on concrete arrays, each operation is a
    small program to lower and fetch from the compilation cache, about 10 ms in a fresh process).

    Args:
        fn: a function of one dict of arrays.
        arrays: the dict (its values' shapes and dtypes are what ``fn`` sees).

    Returns:
        ``fn``'s result.

    Raises:
        Exception: whatever ``fn`` raises on abstract values (e.g. JAX's concretization error for Python control
        flow on a value): the callers then run ``fn`` on the arrays themselves.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.records import traced_abstractly
        >>> traced_abstractly(lambda a: (a["X"] @ a["X"].T).shape, {"X": np.ones((3, 2), np.float32)})
        (3, 3)
    """
    import jax

    got: list = []
    jax.make_jaxpr(lambda a: got.append(fn(a)) or 0)(dict(arrays))
    return got[0]


def _holds_tracer(obj, tracer_type, depth: int = 0) -> bool:
    """Whether a constraint (or one it wraps, e.g. ``independent``'s base) holds an abstract value."""
    if isinstance(obj, tracer_type):
        return True
    if depth > 4 or not hasattr(obj, "__dict__"):
        return False
    return any(_holds_tracer(v, tracer_type, depth + 1) for v in vars(obj).values())


def _indexes_by_value(fn) -> bool:
    """True for distributions whose log-density indexes an array by the observed value (Categorical and
    its subclasses, e.g. OrderedLogistic): they need an integer dtype, floats fail inside JAX."""
    import numpyro.distributions as dist

    base = getattr(fn, "base_dist", fn)
    return isinstance(base, (dist.CategoricalProbs, dist.CategoricalLogits))


def _check_labels(arr: np.ndarray, name: str, site: str, support, family: str, to_int: bool) -> np.ndarray:
    flat = arr.reshape(arr.shape[0], -1) if arr.ndim > 1 else arr.reshape(-1, 1)
    if np.issubdtype(arr.dtype, np.floating):
        frac = flat != np.floor(flat)
        if frac.any():
            i, j = (int(t) for t in np.argwhere(frac)[0])
            where = f"{name}[{i}]" if arr.ndim == 1 else f"{name}[{i}, {j}]"
            raise DomainError(f"data {where} = {flat[i, j]:g} is not an integer, but observed site '{site}' "
                              f"({family}) takes integer values; pass integer labels/counts (integers stored "
                              "as floats are accepted)")
    lo, hi, known = _support_bounds(support) if support is not None else (None, None, False)
    if known:
        bad = np.zeros(flat.shape, dtype=bool)
        if lo is not None:
            bad |= flat < lo
        if hi is not None:
            bad |= flat > hi
        if bad.any():
            i, j = (int(t) for t in np.argwhere(bad)[0])
            where = f"{name}[{i}]" if arr.ndim == 1 else f"{name}[{i}, {j}]"
            rng = f"{lo:g}..{hi:g}" if hi is not None else f">= {lo:g}"
            extra = (" (class labels 0..num_classes-1; set the number of classes of the model to cover them)"
                     if family.startswith("Categorical") else "")
            raise DomainError(f"data {where} = {flat[i, j]:g} is outside the support {rng} of observed site "
                              f"'{site}' ({family}){extra}; fix the data or the model")
    if to_int and (np.issubdtype(arr.dtype, np.floating) or arr.dtype == np.bool_):
        lo_v, hi_v = (float(flat.min()), float(flat.max())) if flat.size else (0.0, 0.0)
        if lo_v < np.iinfo(np.int32).min or hi_v > np.iinfo(np.int32).max:
            raise DomainError(f"data {name} has integer values up to {max(abs(lo_v), abs(hi_v)):g}, beyond "
                              f"int32, for observed site '{site}' ({family}); rescale the data")
        return arr.astype(np.int32)
    return arr


def validate_records(data: Mapping[str, Any], model: Callable | None = None,
                     model_kwargs: Mapping[str, Any] | None = None) -> tuple[dict[str, np.ndarray], int]:
    """Check the record arrays (and, given a model, its discrete observed values); see the module
    docstring for the contract.  Returns ``(arrays, m)``.

    Args:
        data: argument name -> array with one entry per record on its leading axis.
        model: the NumPyro model whose discrete observed sites' values are checked on every record (optional).
        model_kwargs: the model's other keyword arguments.

    Returns:
        ``(arrays, m)``: the arrays as NumPy arrays (labels of a Categorical-like site as int32) and the
        number of records.

    Raises:
        AssumptionError: if ``data`` is not a non-empty mapping of arrays with one common leading dimension.
        DomainError: if a value is NaN or inf, or a discrete observed value is not an integer in its support
            (naming the array, the record and the site).

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.records import validate_records
        >>> model, _ = load_model("softmax")
        >>> arrays, m = validate_records({"X": np.zeros((3, 2)), "y": np.array([0.0, 2.0, 1.0])}, model,
        ...                              {"num_classes": 3})
        >>> m, arrays["y"].tolist(), arrays["y"].dtype.name
        (3, [0, 2, 1], 'int32')
        >>> validate_records({"X": np.zeros((3, 2)), "y": np.array([0.0, 3.0, 1.0])}, model, {"num_classes": 3})
        Traceback (most recent call last):
        ...
        bayesdp.errors.DomainError: data y[1] = 3 is outside the support 0..2 of observed site 'obs' ...
    """
    arrays, m = _check_structure(data)
    if model is not None:
        one = {k: v[:1] for k, v in arrays.items()}
        per_record = []
        for site, arg, support, family, to_int in _observed_discrete_sites(model, one, model_kwargs or {}):
            # a bound with a record axis (traced on one record: shape (1, ...)) varies per record: checked on every
            # record below, never against the first record's bound
            varies = any(np.ndim(getattr(support, k, None)) >= 1 for k in ("lower_bound", "upper_bound")
                         if getattr(support, k, None) is not None)
            arrays[arg] = _check_labels(arrays[arg], arg, site, None if varies else support, family, to_int)
            if varies or not _support_bounds(support)[2]:
                per_record.append((site, arg, family))
        if per_record:
            _check_per_record_support(model, arrays, model_kwargs or {}, per_record)
    return arrays, m


def _check_per_record_support(model: Callable, arrays: Mapping[str, np.ndarray], model_kwargs: Mapping[str, Any],
                              sites: list) -> None:
    """A support whose bounds are per-record parameters (a Binomial's ``total_count`` read from the data: ``y <=
    n`` for EVERY record): the model is traced once on all records (NumPyro's handlers, nothing compiled) and the
    support's own check is applied to every observed value; the first record outside it is refused by name."""
    from numpyro import handlers

    try:
        tr = handlers.trace(handlers.seed(model, rng_seed=0)).get_trace(**arrays, **dict(model_kwargs))
    except Exception as exc:  # noqa: BLE001 - without this check the per-record support is unproven: refuse
        names = ", ".join(f"'{site}'" for site, _, _ in sites)
        raise ModelError(f"observed site(s) {names}: the support's per-record bounds (e.g. y <= total_count) could "
                         f"not be checked on the data, because the model fails on all records at once "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); make the model "
                         "run on the whole data set") from None
    for site, arg, family in sites:
        s = tr.get(site)
        if s is None:
            continue
        ok = np.asarray(s["fn"].support.check(s["value"]))
        ok = ok.reshape(ok.shape[0], -1).all(axis=1) if ok.ndim > 1 else ok.reshape(-1)
        if ok.size and not ok.all():
            i = int(np.argmin(ok))
            y = np.asarray(arrays[arg]).reshape(ok.shape[0], -1)[i]
            raise DomainError(f"data {arg}[{i}] = {float(y[0]):g} is outside the support of observed site '{site}' "
                              f"({family}) for record {i}, whose bounds are per-record parameters (e.g. a Binomial "
                              "count above that record's total_count); fix the data")
