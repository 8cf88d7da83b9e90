"""Structural facts about every site, proven from the dependence facts (never probed).

* a latent site's prior (its parameters and its log-density) reads no data argument and no random
  number; whether it reads other latent sites (a hierarchical prior) is reported to the rules;
* every observed site lies in the plate over records (the plate whose size is the symbolic record
  count), and its log-likelihood, predictor, parameters and value carry their records on that
  plate's axis: element i depends on record i only (per-record separability);
* sites that no rule can cover (a ``numpyro.factor`` outside the plate over records, scaled sites) are
  refused here; a factor inside the plate is an observed site like any other (its rule:
  :mod:`bayesdp.analysis.generic`).

Refusals raise :class:`~bayesdp.errors.ModelError` with one line naming the site, the operation
(primitive and line of the model) that defeats the proof, and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import ModelError
from .dependence import COUPLED
from .program import how, record_axis
from .affinity import CONST
from .program import bound_outputs

# no public names: the steps of bayesdp.analysis.analyze, which is the interface
__all__: list[str] = []


@dataclass
class SiteStructure:
    """The structural facts :func:`check_sites` proved.

    Args:
        record_plate: ``(name, dim)`` of the plate over records.
        size_dependent: sites whose terms depend on the number of records.
        hierarchical: latent site -> (the other latent sites its prior reads, the equation where it does).
        inferred: ``(observed site, batch dim)`` of each vectorised likelihood written without a plate, whose
            record axis was inferred (the batch axis of symbolic size, proven separable per record).
        summed: the ``numpyro.factor`` sites outside the plate whose log-factor is a sum over the records of
            terms proven to read their own record only.
    """

    record_plate: tuple | None                    # (name, dim) of the plate over records
    inferred: list = field(default_factory=list)         # (observed site, batch dim) whose record axis was inferred
    size_dependent: list = field(default_factory=list)   # sites whose terms depend on the number of records
    hierarchical: dict = field(default_factory=dict)     # latent site -> (other latent sites, via)
    summed: list = field(default_factory=list)           # factors outside the plate of a sum over the records


#: the name of the record "plate" of a vectorised likelihood written without one (its axis is inferred)
INFERRED = "(inferred record axis)"


def _inferred_record_axis(s):
    """The batch axis of observed site ``s`` that is the record count, for a likelihood written without a plate;
    or why there is none (a string completing "observed site 'NAME' ...")."""
    sym_batch = [i for i, d in enumerate(s.batch_shape) if not isinstance(d, (int, np.integer))]
    sym_event = [i for i, d in enumerate(s.event_shape) if not isinstance(d, (int, np.integer))]
    if sym_event:
        return ("is one multivariate term over all records (the records are an event dimension, e.g. a "
                "MultivariateNormal over the records as in a Gaussian process, or .to_event(1) over the records): "
                "the records are coupled and no record's term is its own; use an approximate basis with independent "
                "records (e.g. a Hilbert-space GP, HSGP: f(x) = phi(x) @ beta) inside numpyro.plate('data', N), or, "
                "for independent records, drop .to_event over the record axis")
    if len(sym_batch) != 1:
        return ("is not inside a plate over records and has no batch axis of the number of records (missing "
                "plate): wrap the likelihood in numpyro.plate('data', N) with N the number of records")
    return sym_batch[0]


def _args(dep) -> str:
    return ", ".join(sorted(dep.data))


def check_sites(program, facts) -> SiteStructure:
    """Prove the structure every rule assumes, or refuse naming every blocking site at once.

    Args:
        program: the traced :class:`~bayesdp.analysis.tracing.Program`.
        facts: its :class:`~bayesdp.analysis.structure.program.ProgramFacts`.

    Returns:
        The :class:`SiteStructure`.

    Raises:
        ModelError: a prior reads data or random numbers, an observed site is not separable per record, a
            factor lies outside the plate over records, a site is scaled...

    Examples:
        >>> import numpy as np
        >>> from bayesdp.analysis.loading import load_model
        >>> from bayesdp.analysis.tracing import trace_program
        >>> from bayesdp.analysis.structure.program import prove
        >>> from bayesdp.analysis.structure.sites import check_sites
        >>> model, _ = load_model("logistic")
        >>> program = trace_program(model, {"X": (2,), "y": ()}, {"X": np.float32, "y": np.float32})
        >>> check_sites(program, prove(program))
        SiteStructure(record_plate=('data', -1), inferred=[], size_dependent=[], hierarchical={}, summed=[])
    """
    sites = program.sites
    problems: list[str] = []            # every blocking site is reported at once
    observed = [n for n, s in sites.items() if s.observed]
    latent = [n for n, s in sites.items() if not s.observed]
    for n, s in sites.items():
        if s.scaled and s.observed and s.scale_value is not None:
            continue        # a public positive constant: the likelihood's constants are scaled by it (constants.py)
        if s.scaled:
            problems.append(f"site '{n}' is scaled (numpyro.handlers.scale, or a plate with subsample_size): no rule "
                             "covers a scaled log-density unless the site is observed and the scale one public positive "
                             "number, and the sampler would apply the scale; remove the scale or make it a constant "
                             "(tempering is --inverse-temperature; minibatches are drawn by SGLD)")
    if not observed:
        raise ModelError(f"model {program.model_name} has no observed site: pass the responses as a data argument "
                         "(obs=...) inside a plate over records")
    if not latent:
        raise ModelError(f"model {program.model_name} has no latent site: there is nothing to sample")
    out = SiteStructure(None)

    # -- priors: public (no data), no randomness ---------------------------------------
    for n in latent:
        s = sites[n]
        if s.family == "ImproperUniform":
            problems.append(f"latent site '{n}' has an improper prior (ImproperUniform): the posterior may not "
                            "exist; give it a proper prior such as Normal")
            continue
        for what in ["logp"] + [f"param:{k}" for k in s.params]:
            d = facts.dep[program.output(n, what)]
            label = "log-density" if what == "logp" else f"parameter {what[6:]}"
            if d.data:
                problems.append(f"latent site '{n}' has a data-dependent prior: its {label} depends on data "
                                f"argument {_args(d)} through {how(d.via_data)}; priors must be public: use "
                                "constants or model_kwargs hyperparameters")
                break
            if d.random:
                problems.append(f"latent site '{n}': its prior {label} depends on a random number drawn inside the "
                                f"model ({how(d.via_random)}); make it a constant")
                break
            others = set(d.theta) - {n}
            if others and what != "logp":
                prev = out.hierarchical.get(n, (set(), None))
                out.hierarchical[n] = (prev[0] | others, prev[1] or d.via_theta)
            if d.size:
                out.size_dependent.append((n, d.via_size))

    # -- likelihoods: in the record plate, one term per record ---------------------------
    for n in observed:
        s = sites[n]
        recs = s.record_plates
        if not recs and s.family == "Unit" and n in getattr(program, "summed", ()):
            # a factor of a sum over the records: the program's log-factor is the vector of its summands (one
            # per record, tracing._split_record_sums); that summand i reads record i only is proven below exactly
            # as for a factor inside the plate
            plate = (INFERRED, -1)
            out.summed.append(n)
        elif not recs and s.family == "Unit":
            problems.append(_factor_outside_plate(program, facts, n))
            continue
        elif not recs:
            inferred = _inferred_record_axis(s)
            if isinstance(inferred, str):
                problems.append(f"observed site '{n}' {inferred}")
                continue
            # a vectorised likelihood without a plate: its record axis is the batch axis of symbolic size; that
            # each element along it depends on its own record only is proven below exactly as for a plate
            plate = (INFERRED, inferred - len(s.batch_shape))
            out.inferred.append((n, plate[1]))
        else:
            plate = (recs[0][0], recs[0][1])
        if plate[0] == INFERRED and out.record_plate is not None:
            plate = out.record_plate
        elif out.record_plate is not None and out.record_plate[0] == INFERRED:
            out.record_plate = plate
        if out.record_plate is not None and plate[0] != out.record_plate[0]:
            problems.append(f"observed sites use different record plates ('{out.record_plate[0]}' and "
                            f"'{plate[0]}'); use one plate over records")
            continue
        out.record_plate = plate
        for what in ["logp", "value"] + [f"param:{k}" for k in s.params] + (["mask"] if s.masked else []):
            i = program.output(n, what)
            d = facts.dep[i]
            label = {"logp": "log-factor" if s.family == "Unit" else "log-likelihood", "value": "observed value",
                     "mask": "mask"}.get(what, f"parameter {what[6:]}")
            if what == "mask" and d.theta:
                problems.append(f"observed site '{n}': its mask depends on the latent site(s) "
                                f"{', '.join(sorted(d.theta))} (through {how(d.via_theta)}); a mask must be a function "
                                "of the data only")
                break
            if d.random:
                problems.append(f"observed site '{n}': its {label} depends on a random number drawn inside the model "
                                f"({how(d.via_random)}); make it a function of the data and the latent sites only")
                break
            if not d.data:
                continue
            axis = record_axis(program.jaxpr.out_avals[i].shape)
            if d.record == COUPLED or axis is None or d.record != axis:
                problems.append(coupling_message(n, label, d.via_coupled))
                break
            if d.size:
                out.size_dependent.append((n, d.via_size))
        else:
            d = facts.dep[program.output(n, "logp")]
            if not d.data and s.family == "Unit":
                problems.append(f"site '{n}' is a numpyro.factor that reads no data argument (a term of the prior, "
                                "repeated for every record): no rule covers a free-form prior term; write the prior "
                                "as numpyro.sample(name, dist.Family(...))")
            elif not d.data:
                problems.append(f"observed site '{n}': its log-likelihood does not depend on any data argument; "
                                "pass the observations as a data argument (obs=y)")
    raise_all(problems)
    return out


CALLBACKS = ("pure_callback", "io_callback", "callback", "debug_callback")


def coupling_message(n: str, label: str, eqn) -> str:
    """Why the per-record term of observed site ``n`` is not separable, by the operation that coupled records
    (``eqn``), with the standard fix for that kind of coupling.

    Args:
        n: the observed site.
        label: what of the site depends on other records ("log-likelihood", "parameter loc", ...).
        eqn: the equation that coupled records (``Dep.via_coupled``), or None.

    Returns:
        One line naming the site, the operation and one fix a user can apply.

    Examples:
        >>> from bayesdp.analysis.structure.sites import coupling_message
        >>> coupling_message("obs", "log-likelihood", None).startswith("observed site 'obs': the log-likelihood")
        True
    """
    prim = getattr(getattr(eqn, "primitive", None), "name", "")
    if prim in CALLBACKS:
        return (f"observed site '{n}': its {label} goes through an opaque callback ({how(eqn)}): code run outside "
                "JAX cannot be analysed (neither which records it reads nor its bounds); write that computation "
                "with jax.numpy")
    if prim in ("scan", "while"):
        return (f"observed site '{n}': its {label} is computed by a loop over the records ({how(eqn)}: a "
                "recursion such as an AR or state-space model), which couples every record with the ones before "
                "it; use the lagged-regression form: pass the lagged values as per-record columns (e.g. X[t] = "
                "[y[t-1], y[t-2]] built before the model), one record = one time step with its lags, and declare "
                "that unit of privacy")
    if prim in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
        return (f"observed site '{n}': its {label} goes through a running {prim[3:]} over the records ({how(eqn)}), "
                "so each record's term depends on the records before it; sum per-record terms only "
                "(jnp.sum(terms) with terms[i] computed from record i), or, for a recursion over time, use the "
                "lagged-regression form: pass the lagged values as per-record columns, one record = one time step "
                "with its lags")
    if prim in ("cholesky", "triangular_solve", "lu", "eigh", "custom_linear_solve", "qr", "svd"):
        return (f"observed site '{n}': its {label} couples the records through a matrix over all of them "
                f"({how(eqn)}: e.g. a Gaussian-process kernel matrix or a multivariate likelihood over records); "
                "use an approximate basis with independent records (e.g. a Hilbert-space GP, HSGP: "
                "f(x) = phi(x) @ beta with a fixed basis phi and beta ~ Normal) inside a plate over records")
    return (f"observed site '{n}': the {label} of a record depends on other records "
            f"({how(eqn)} mixes records, e.g. features centred or scaled with the data's own statistics); each "
            "record's term must depend on its own record only: do such preprocessing with public constants "
            "outside the model")


def _factor_outside_plate(program, facts, n: str) -> str:
    """A numpyro.factor outside the plate over records: one term for all records (e.g. summed over them), or a
    free-form prior term; only a factor with one entry per record, inside the plate, has a rule."""
    d = facts.dep[program.output(n, "logp")]
    if d.data:
        return (f"site '{n}' is a numpyro.factor outside the plate over records: its log-factor reads data argument "
                f"{_args(d)} but is neither one term per record nor jnp.sum over the records of per-record terms "
                "(added, negated or scaled by a value without a record axis), so the records' contributions cannot "
                "be separated; write it as numpyro.factor('" + n + "', jnp.sum(terms)) with terms[i] computed from "
                f"record i, or put it inside the plate over records (with numpyro.plate('data', N): "
                f"numpyro.factor('{n}', per_record_terms))")
    return (f"site '{n}' is a numpyro.factor that reads no data argument (a term of the prior): no rule covers a "
            "free-form prior term; write the prior as numpyro.sample(name, dist.Family(...))")


def raise_all(problems: list[str]) -> None:
    """One line listing every blocking site (the first problem alone when there is one).

    Args:
        problems: one message per blocking site.

    Raises:
        ModelError: if there is any problem.

    Examples:
        >>> from bayesdp.analysis.structure.sites import raise_all
        >>> raise_all([])
        >>> raise_all(["site 'a': x", "site 'b': y"])
        Traceback (most recent call last):
        ...
        bayesdp.errors.ModelError: 2 problems block the analysis: site 'a': x; site 'b': y
    """
    if len(problems) == 1:
        raise ModelError(problems[0])
    if problems:
        raise ModelError(f"{len(problems)} problems block the analysis: " + "; ".join(problems))


def support_bound_ranges(program, domain, m: int, name: str) -> dict:
    """``{attribute: (lo, hi)}``: the range over the declared domain of each support bound of observed site
    ``name`` that is a per-record parameter (``Site.bound_params``, e.g. a Binomial's ``upper_bound`` =
    ``total_count`` read from the data), by interval arithmetic on the program's output of that parameter."""

    s = program.sites[name]
    if not s.bound_params:
        return {}
    idx = [program.output(name, f"param:{k}") for _, k in s.bound_params]
    bs = bound_outputs(program, domain, m, idx)
    return {attr: (float(np.min(b.lo)), float(np.max(b.hi))) for (attr, _), b in zip(s.bound_params, bs)}


def _violation(constraint, lo: float, hi: float, ranges: dict | None = None) -> str | None:
    """The condition a box [lo, hi] may violate for a NumPyro constraint (None: proven satisfied).

    A bound that is a per-record parameter (``ranges[attribute] = (lo, hi)`` over the domain) enters by the end
    that every record's own condition implies: ``y <= n`` for every record gives ``y <= sup n`` (the record-wise
    condition itself is checked on the data by :func:`bayesdp.analysis.records.validate_records`).  A bound
    that is neither one number nor a known parameter is a violation (nothing proves it)."""
    name = type(constraint).__name__.lstrip("_")
    ranges = ranges or {}
    lb = getattr(constraint, "lower_bound", None)
    ub = getattr(constraint, "upper_bound", None)
    for attr in ("lower_bound", "upper_bound"):
        b = getattr(constraint, attr, None)
        if b is None:
            continue

        if _is_number(b):
            continue
        if attr not in ranges or not all(np.isfinite(ranges[attr])):
            return f"must lie within a bound ({attr}) that varies per record and is unbounded over the domain"
        if attr == "lower_bound":
            lb = ranges[attr][0]
        else:
            ub = ranges[attr][1]
    if name in ("IntegerGreaterThan", "IntegerNonnegative", "IntegerPositive") and lb is not None and not lo >= lb:
        return f"must be >= {float(lb):g}"
    if name == "IntegerInterval" and lb is not None and not (lo >= lb and hi <= ub):
        return f"must lie in [{float(lb):g}, {float(ub):g}]"
    if name == "Boolean" and not (lo >= 0 and hi <= 1):
        return "must lie in [0, 1]"
    if name in ("GreaterThan", "Positive") and lb is not None and not lo > lb:
        return f"must be > {float(lb):g}"
    if name in ("GreaterThanEq", "Nonnegative") and lb is not None and not lo >= lb:
        return f"must be >= {float(lb):g}"
    if name in ("Interval", "UnitInterval") and lb is not None and not (lo >= lb and hi <= ub):
        return f"must lie in [{float(lb):g}, {float(ub):g}]"
    if name == "OpenInterval" and lb is not None and not (lo > lb and hi < ub):
        return f"must lie in ({float(lb):g}, {float(ub):g})"
    if name == "LessThan" and ub is not None and not hi < ub:
        return f"must be < {float(ub):g}"
    return None


def check_parameters(program, facts, domain, m: int) -> None:
    """Every theta-free parameter of an observed site satisfies its distribution's constraint for EVERY
    record of the declared domain (interval arithmetic), so no record can make the model invalid.

    Args:
        program: the traced :class:`~bayesdp.analysis.tracing.Program`.
        facts: its :class:`~bayesdp.analysis.structure.program.ProgramFacts`.
        domain: the declared :class:`~bayesdp.analysis.domain.Domain`.
        m: the number of records.

    Raises:
        ModelError: naming the site, the parameter and its range over the domain when a constraint can fail.
    """

    wanted = []
    for n, s in program.sites.items():
        if not s.observed:
            continue
        for k in s.params:
            i = program.output(n, f"param:{k}")
            if facts.aff[i].kind == CONST and facts.dep[i].data:
                c = s.dist_type.arg_constraints.get(k)
                if c is not None:
                    wanted.append((n, k, i, c))
    if not wanted:
        return
    bounds = bound_outputs(program, domain, m, [i for _, _, i, _ in wanted])
    for (n, k, _, c), b in zip(wanted, bounds):
        lo, hi = float(b.lo.min()), float(b.hi.max())
        bad = _violation(c, lo, hi)
        if bad is not None:
            raise ModelError(f"observed site '{n}': its {k} can be {lo if 'must be >' in bad else hi:g} over the "
                             f"declared domain of {_args(facts.dep[program.output(n, 'param:' + k)])} ({k} lies in "
                             f"[{lo:g}, {hi:g}]) but {bad}; compute it so that it is valid for every record of the "
                             "domain, or narrow the domain")


def _is_number(b) -> bool:
    """Whether a support bound is one concrete number (not a traced or per-record array)."""
    import jax

    if isinstance(b, jax.core.Tracer):
        return False
    try:
        return np.size(b) == 1
    except Exception:
        return False
