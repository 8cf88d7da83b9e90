"""Audits of a NumPyro model with the real samplers (issue #8).

* Neighbours: given by the user (checked by [`bayesdp.audit.check_neighbours`][bayesdp.audit.check_neighbours]) or,
  by default, a replacement of record 0 by two extreme records of the declared domain: the first bounded argument
  takes opposite extremes (for a norm bound R the rows ``+R e_1`` and ``-R e_1``; for a box the corners ``max`` and
  ``min``; for a finite set its largest and smallest value) and every other bounded argument its largest value on
  both sides.  (Any pair of neighbours gives a valid lower bound; extreme records make it larger.)
* Runs: ``runs`` independent chains of ``bayesdp.samplers.Sampler`` on each dataset, from the
  same data-independent start, vectorised (one XLA program per dataset).  The chains are not
  published; the certificate compared against is the one of a single run, from
  ``bayesdp.analysis.certify`` with the same configuration.
* Score: a user statistic of the released output, or by default a linear projection
  ``<w, output>`` with ``w`` the difference of the mean outputs on D and D' estimated on a separate
  pilot split of the runs (so that the threshold test on the remaining runs is still valid).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from ..errors import AssumptionError, positive_int
from .report import AuditReport, check_neighbours
from .stats import audit_scores
from ..analysis import Domain
from ..analysis import certify
from ..resources import require_memory
from ..samplers import Sampler

__all__ = ["MODEL_MECHANISMS", "worst_case_neighbours", "audit_model"]

#: the mechanisms :func:`audit_model` audits with the real samplers
MODEL_MECHANISMS = ("ula-final", "ula-path", "sgld-final", "sgld-path")
PILOT_FRACTION = 0.2


def worst_case_neighbours(data: Mapping[str, Any], domain, record: int = 0) -> tuple[dict, dict]:
    """Two datasets that differ in record ``record`` only, set to extreme records of the domain.

    Only the first argument bounded by the domain takes opposite extremes (``+-norm e_1`` or the
    range's ends); other bounded arguments take the same extreme on both sides.

    Args:
        data: ``{argument: array}``, records along axis 0.
        domain: a ``Domain`` or its strings (``["X.norm=1", "y.values=0,1"]``).
        record: the index of the record to replace.

    Returns:
        ``(D, D')``: copies of ``data``.

    Raises:
        AssumptionError: record out of range, or the domain bounds no per-record argument.

    Examples:
        >>> import numpy as np
        >>> d1, d0 = worst_case_neighbours({"X": np.zeros((3, 2))}, ["X.norm=1"])
        >>> d1["X"][0].tolist(), d0["X"][0].tolist(), d1["X"][1:].tolist() == d0["X"][1:].tolist()
        ([1.0, 0.0], [-1.0, -0.0], True)
    """

    dom = domain if isinstance(domain, Domain) else Domain.parse(list(domain))
    d1 = {k: np.array(v, copy=True) for k, v in data.items()}
    d0 = {k: np.array(v, copy=True) for k, v in data.items()}
    changed = False
    for name, arr in d1.items():
        spec = dom.get(name)
        if spec is None or arr.ndim == 0:
            continue
        if not 0 <= record < arr.shape[0]:
            raise AssumptionError(f"record = {record} is out of range for {name} with {arr.shape[0]} records")
        row_shape = arr.shape[1:]
        size = int(np.prod(row_shape)) if row_shape else 1
        if spec.norm is not None:
            hi = np.zeros(size)
            hi[0] = spec.norm
            lo = -hi
        elif spec.value_range() is not None:
            a, b = spec.value_range()
            hi, lo = np.full(size, b), np.full(size, a)
        else:
            continue
        d1[name][record] = hi.reshape(row_shape).astype(arr.dtype)
        # only the first bounded argument takes opposite extremes; the others take the same extreme on
        # both sides (flipping every argument can cancel: for logistic regression (x, y=1) and (-x, y=0)
        # have the same likelihood)
        d0[name][record] = (hi if changed else lo).reshape(row_shape).astype(arr.dtype)
        changed = True
    if not changed:
        raise AssumptionError("the domain bounds no per-record argument of the data, so no extreme replacement "
                              "can be built; pass the neighbouring dataset explicitly")
    return d1, d0


def _outputs(model, data, *, mechanism, runs, seed, domain, **cfg) -> np.ndarray:
    import jax

    sampler = "sgld" if mechanism.startswith("sgld") else "ula"
    release = "path" if mechanism.endswith("path") else "final"
    s = Sampler(model, data, sampler=sampler, num_chains=runs, release=release, uncertified=True, domain=domain,
                **cfg)
    s.run(jax.random.PRNGKey(seed))   # an internal experiment: the audit's chains are never released
    return s.get_unconstrained_samples(group_by_chain=True)  # (runs, draws, dim)


def audit_model(mechanism: str, model: Callable, data: Mapping[str, Any], *, domain, runs: int, step_size: float,
                num_steps: int, data_prime: Mapping[str, Any] | None = None, batch_size: int | None = None,
                inverse_temperature: float = 1.0, clip_norm: float | None = None,
                model_kwargs: Mapping[str, Any] | None = None, statistic: Callable | None = None,
                delta: float = 1e-5, confidence: float = 0.95, seed: int = 0, model_name: str | None = None):
    """Audit `mechanism` of `model` on neighbouring datasets; returns an [`AuditReport`][bayesdp.audit.AuditReport].

    The real samplers (``bayesdp.samplers.Sampler``, ``uncertified=True``) run ``runs`` chains on
    each dataset; the score is a linear statistic of the output chosen on a pilot split (or
    ``statistic``); the lower bounds are compared with the analyzer's certificate.

    Args:
        mechanism: ``ula-final``, ``ula-path``, ``sgld-final`` or ``sgld-path``.
        model: the NumPyro model function.
        data: the dataset D.
        domain: the public bounds (as for [`worst_case_neighbours`][bayesdp.audit.models.worst_case_neighbours]).
        runs: chains per dataset.
        step_size: gamma.
        num_steps: chain length.
        data_prime: D' (default: [`worst_case_neighbours`][bayesdp.audit.models.worst_case_neighbours]).
        batch_size: SGLD batch size.
        inverse_temperature: beta.
        clip_norm: SGLD gradient clipping.
        model_kwargs: keyword arguments of the model.
        statistic: maps outputs (runs, ...) to scores; larger must point towards D.
        delta: of the comparison.
        confidence: of the lower bounds.
        seed: of the chains (audits publish nothing).
        model_name: shown in the report.

    Returns:
        an [`AuditReport`][bayesdp.audit.AuditReport].

    Raises:
        AssumptionError: mechanism not auditable on a model, invalid constants or neighbours, or no
            certificate for the configuration.
        ModelError: the analyzer refuses the model.

    Examples:
        A run compiles the sampler (a few seconds; docs/audit.md shows one); neighbours that are not
        neighbours are refused before anything runs:

        >>> import numpy as np
        >>> from bayesdp.models import logistic
        >>> X = np.zeros((3, 2)); y = np.zeros(3)
        >>> audit_model("ula-final", logistic, {"X": X, "y": y}, data_prime={"X": X + 0.1, "y": y},
        ...             domain=["X.norm=1", "y.values=0,1"], runs=100, step_size=0.1, num_steps=20)
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: the datasets differ in 3 records; replace-one neighbours differ in exactly one
    """

    if mechanism not in MODEL_MECHANISMS:
        raise AssumptionError(f"mechanism {mechanism!r} cannot be audited on a model; choose one of "
                              f"{', '.join(MODEL_MECHANISMS)} (posterior and release: built-in benchmark)")
    runs = positive_int("runs", runs)

    # a lower bound of the sampler's memory (2 scores of 8 bytes per run and per kept draw), before the
    # analysis runs; the sampler refines the check once the dimension is known
    kept = positive_int("num_steps", num_steps) if mechanism.endswith("path") else 1
    require_memory(16.0 * runs * kept, f"--runs {runs}", "use fewer runs")
    if data_prime is None:
        d1, d0 = worst_case_neighbours(data, domain)
        neighbours = "record 0 replaced by extreme records of the domain"
    else:
        d1, d0 = dict(data), dict(data_prime)
        neighbours = "given"
    check_neighbours(d1, d0, "replace-one")
    cfg = dict(step_size=step_size, num_steps=num_steps, batch_size=batch_size, inverse_temperature=inverse_temperature,
               clip_norm=clip_norm, model_kwargs=model_kwargs)
    rep = certify(model, data=d1, domain=domain, step_size=step_size, num_steps=num_steps, batch_size=batch_size,
                  inverse_temperature=inverse_temperature, clip_norm=clip_norm, delta=delta, model_kwargs=model_kwargs,
                  sampler="sgld" if mechanism.startswith("sgld") else "ula", model_name=model_name)
    br = rep.mechanisms.get(mechanism)
    if br is None or isinstance(br, str):
        raise AssumptionError(f"{mechanism} is not certified for this configuration: {br}")
    pilot = max(1, int(runs * PILOT_FRACTION))
    if runs - pilot < 2:
        raise AssumptionError(f"runs = {runs} is too few (a pilot split of {pilot} runs chooses the score)")
    out1 = _outputs(model, d1, mechanism=mechanism, runs=runs, seed=seed, domain=domain, **cfg)
    out0 = _outputs(model, d0, mechanism=mechanism, runs=runs, seed=seed + 1, domain=domain, **cfg)
    if statistic is None:
        f1, f0 = out1.sum(axis=1), out0.sum(axis=1)    # (runs, dim): final draw, or sum over the path
        w = f1[:pilot].mean(axis=0) - f0[:pilot].mean(axis=0)
        if not np.any(w):
            w = np.ones_like(w)
        s1, s0 = f1[pilot:] @ w, f0[pilot:] @ w
        score = "projection on the pilot mean difference"
    else:
        s1, s0 = np.asarray(statistic(out1), float), np.asarray(statistic(out0), float)
        score = "user statistic"
    bounds = audit_scores(s1, s0, delta, confidence)
    best = br.best
    params = {"model": model_name or getattr(model, "__name__", "model"), "neighbours": neighbours, "score": score,
              **{k: v for k, v in cfg.items() if v is not None and k != "model_kwargs"}}
    return AuditReport(mechanism=mechanism, bounds=bounds, delta=delta, certified_epsilon=br.value(),
                       certified_mu=best.gdp_mu, source=best.source, exact_mu=None, parameters=params,
                       benchmark=f"model {params['model']}")
