"""The certificate of a run: the analyzer's per-chain bound, composed over the released chains.

``certify_run`` calls ``bayesdp.analysis.certify`` with exactly the configuration that will run
and returns the JSON-ready dict attached to every output (``bayesdp_certificate``).  K chains
run on the same data and released together are K mechanisms on the same dataset, so their
curves compose (``bayesdp.curves.compose``: GDP mu in quadrature, RDP curves add).  A thinned
path is a function of the path, so it carries the path certificate (data processing).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from ..curves import _json_float, compose
from ..analysis.records import validate_records
from ..errors import AssumptionError

__all__ = ["UNCERTIFIED_REASON", "mechanism_name", "check_local_records", "certify_run"]

UNCERTIFIED_REASON = "uncertified run requested explicitly (uncertified=True): no privacy guarantee"


def mechanism_name(sampler: str, release: str) -> str:
    """The analyzer's name of the mechanism that releases ``release`` of a ``sampler`` chain.

    Args:
        sampler: ``"ula"`` or ``"sgld"``.
        release: ``"final"``, ``"path"`` or ``"thinned"`` (a thinned path carries the path certificate).

    Returns:
        ``"<sampler>-final"`` or ``"<sampler>-path"``.

    Examples:
        >>> mechanism_name("sgld", "final"), mechanism_name("ula", "thinned")
        ('sgld-final', 'ula-path')
    """
    return f"{sampler}-{'final' if release == 'final' else 'path'}"


def _parse_domain(domain):
    if domain is None or not isinstance(domain, (list, tuple, str)):
        return domain
    from ..analysis import Domain  # type: ignore[attr-defined]

    return Domain.parse([domain] if isinstance(domain, str) else list(domain))


def _record_dim(record_shapes: Mapping[str, tuple] | None) -> int | None:
    """The per-record vector length the analyzer needs without data (``dim``), or a one-line refusal."""
    dims = {s[0] for s in (record_shapes or {}).values() if len(s) == 1}
    if any(len(s) > 1 for s in (record_shapes or {}).values()) or len(dims) > 1:
        raise AssumptionError(f"records of shapes {dict(record_shapes or {})}: a certificate for records split over "
                              "several processes is computed from the record count and one vector length; pass "
                              "records whose arrays are scalars or vectors of one length, or run in one process")
    return dims.pop() if dims else None


def check_local_records(model, data, domain, model_kwargs=None) -> None:
    """Check this process's records against the domain and the model's supports.

    These are the checks the analyzer makes on the data when it sees all of it; used when each process
    holds only its own records.

    Args:
        model: the NumPyro model.
        data: this process's record arrays.
        domain: a ``bayesdp.analysis.Domain`` or a list of ``"site.bound=value"`` strings.
        model_kwargs: the model's other keyword arguments.

    Raises:
        DomainError: a record outside the domain, or a label outside a discrete site's support.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.models import logistic
        >>> check_local_records(logistic, {"X": np.array([[0.6, 0.8]]), "y": np.array([1.0])},
        ...                     ["X.norm=1", "y.values=0,1"])
        >>> check_local_records(logistic, {"X": np.array([[3.0, 4.0]]), "y": np.array([1.0])},
        ...                     ["X.norm=1", "y.values=0,1"])
        Traceback (most recent call last):
        ...
        bayesdp.errors.DomainError: data X[0] has norm 5 > declared X.norm = 1 ...
    """
    dom = _parse_domain(domain) if isinstance(domain, (list, tuple, str)) else domain
    checked, _ = dom.check(data, clip=False)
    validate_records(checked, model, dict(model_kwargs or {}))


def require_32bit_mode(what: str, uncertified_option: bool = True) -> None:
    """Refuse a private chain in JAX's 64-bit mode.  The analyzer proves the model's constants for the program it
    traces, with float32 parameters and data (bayesdp.analysis.inputs, tracing); in 64-bit mode the samplers run
    the model on float64 arrays, where its Python float literals keep more digits (``u * 1.00000017 - u`` is
    ``1.19e-7 u`` in float32 and ``1.7e-7 u`` in float64): another program, which no certificate covers.

    Args:
        what: the chain, in words (the message's first words).
        uncertified_option: name ``uncertified=True`` (a sampler's option) as the other fix.

    Raises:
        AssumptionError: ``jax_enable_x64`` is on.

    Examples:
        >>> require_32bit_mode("a certified ULA chain")          # the default mode: nothing to say
    """
    import jax

    if jax.config.read("jax_enable_x64"):
        raise AssumptionError(
            f"{what}: JAX's 64-bit mode is on (jax_enable_x64 = True), but the certificate covers the model "
            "traced with float32 parameters and data; in 64-bit mode the chain computes another program (the "
            "model's float literals keep more digits); turn it off for a private chain "
            "(jax.config.update('jax_enable_x64', False), or unset JAX_ENABLE_X64)"
            + (", or pass uncertified=True (--uncertified) for draws that are not published" if uncertified_option
               else ""))


def certify_run(*, model, data, domain, config: Mapping[str, Any], delta: float, model_kwargs=None,
                uncertified: bool = False, certifier: Callable | None = None,
                record_shapes: Mapping[str, tuple] | None = None) -> dict:
    """Certificate dict of a run with configuration ``config`` (see :class:`~bayesdp.samplers.driver.Sampler`).

    The analyzer's best certificate of one chain, composed over the ``config["num_chains"]`` released
    chains.  With ``uncertified=True`` the analyzer is not consulted and the dict says
    ``"certified": false``.  ``data=None`` (records split over processes: each process holds its own)
    prices the run from ``config["data_size"]`` and the per-record shapes ``record_shapes``; the records
    themselves are checked by each process (:func:`check_local_records`).

    Args:
        model: the NumPyro model.
        data: the record arrays, or ``None`` (records split over processes).
        domain: a ``bayesdp.analysis.Domain`` or a list of ``"site.bound=value"`` strings (public bounds on
            one record); ``None`` only with ``uncertified=True``.
        config: the run's configuration (``RunConfig.to_dict()``: sampler, step_size, num_steps,
            inverse_temperature, batch_size, clip_norm, num_chains, release, ...).
        delta: the delta at which epsilon is reported.
        model_kwargs: the model's other keyword arguments.
        uncertified: skip the analyzer; the dict then says why there is no guarantee.
        certifier: the analyzer's ``certify`` (default ``bayesdp.analysis.certify``); ``domain`` is passed
            to a given one unparsed.
        record_shapes: per-record shapes of the data arrays (with ``data=None``).

    Returns:
        a JSON-ready dict: ``certified``, ``mechanism``, ``configuration``, ``delta``, ``epsilon``,
        ``gdp_mu``, ``sources``, ``per_chain``, ``composition``, ``reason`` (and ``analysis_constants``).

    Raises:
        AssumptionError: no domain, no certificate covering the configuration, or records split over
            processes with arrays of several shapes (and ``uncertified`` false).

    Examples:
        Two released chains compose: GDP mu grows by ``sqrt(2)``.

        >>> import numpy as np
        >>> from bayesdp.models import logistic
        >>> config = dict(sampler="ula", step_size=0.1, num_steps=100, inverse_temperature=1.0,
        ...               batch_size=None, clip_norm=None, num_chains=2, release="final")
        >>> data = {"X": np.array([[0.6, 0.8], [0.0, 1.0]]), "y": np.array([1.0, 0.0])}
        >>> cert = certify_run(model=logistic, data=data, domain=["X.norm=1", "y.values=0,1"], config=config,
        ...                    delta=1e-5)
        >>> cert["certified"], cert["mechanism"], round(cert["gdp_mu"] / cert["per_chain"]["gdp_mu"], 6)
        (True, 'ula-final', 1.414214)
        >>> certify_run(model=logistic, data=data, domain=None, config=config, delta=1e-5,
        ...             uncertified=True)["certified"]
        False
    """
    mech = mechanism_name(config["sampler"], config["release"])
    out: dict[str, Any] = {
        "certified": False,
        "mechanism": mech,
        "configuration": dict(config),
        "delta": float(delta),
        "epsilon": None,
        "gdp_mu": None,
        "sources": [],
        "per_chain": None,
        "composition": None,
        "reason": None,
    }
    if uncertified:
        out["reason"] = UNCERTIFIED_REASON
        return out
    require_32bit_mode(mech)
    if domain is None:
        raise AssumptionError("domain = None: a certificate needs public bounds on one record (e.g. "
                              "['X.norm=1.0', 'y.values=0,1']); pass domain=..., or uncertified=True to run without one")
    if certifier is None:
        from ..analysis import certify
    else:
        certify = certifier
    size = {} if data is not None else {"data_size": config["data_size"], "dim": _record_dim(record_shapes)}
    rep = certify(model, data=data, domain=_parse_domain(domain) if certifier is None else domain,
                  step_size=config["step_size"], num_steps=config["num_steps"], batch_size=config["batch_size"],
                  inverse_temperature=config["inverse_temperature"], clip_norm=config["clip_norm"],
                  delta=delta, model_kwargs=model_kwargs, sampler=config["sampler"], **size)
    entry = rep.mechanisms.get(mech) if hasattr(rep.mechanisms, "get") else rep.mechanisms[mech]
    if entry is None or isinstance(entry, str):
        why = entry or f"the analyzer returned no '{mech}' mechanism"
        raise AssumptionError(f"{mech}: no certificate covers this configuration ({why}); change the "
                              f"configuration, or pass uncertified=True (--uncertified) to run without a guarantee")
    best = entry.best
    if best is None or best.curve is None:
        reasons = "; ".join(f"{c.source}: {c.reason}" for c in entry.certificates if not c.valid) or "no valid route"
        raise AssumptionError(f"{mech}: no valid certified route for this configuration ({reasons}); change the "
                              f"configuration, or pass uncertified=True (--uncertified) to run without a guarantee")
    k = int(config["num_chains"])
    composed = compose([best.curve] * k)
    eps = composed.epsilon(delta)
    out.update({
        "certified": True,
        "epsilon": _json_float(eps) if math.isfinite(eps) else None,
        "gdp_mu": composed.gdp_mu,
        "sources": [best.source],
        "per_chain": best.to_dict(delta=delta),
        "composition": (f"{k} released chain(s) on the same data composed with bayesdp.curves.compose "
                        f"(GDP mu in quadrature, RDP curves add): {composed.describe()}"),
    })
    if config["release"] == "thinned":
        out["composition"] += "; thinned path = post-processing of the path (path certificate)"
    consts = getattr(getattr(rep, "analysis", None), "constants", None)
    if consts is not None:
        items = consts.to_dict() if hasattr(consts, "to_dict") else dict(consts)
        out["analysis_constants"] = {kk: (_json_float(float(v)) if isinstance(v, (int, float)) and not
                                          isinstance(v, bool) else v)
                                     for kk, v in items.items() if isinstance(v, (int, float, bool, type(None)))}
    return out
