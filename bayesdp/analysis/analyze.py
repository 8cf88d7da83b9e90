"""``analyze``: a NumPyro model + public domain -> the constants of ``U_D = K + V_D`` with provenance.

The steps, each proving one thing (docs/analysis.md):

1. :mod:`.inputs`: validate the model, the data (or its size) and the public domain;
2. :mod:`.tracing`: trace the model's log-density ONCE to a program (jaxpr) with a symbolic
   number of records, latent sites in the unconstrained space the samplers use;
3. :mod:`.structure`: abstract interpretation of that program: dependence (theta / data argument /
   record), affinity in theta; then the structural facts about each site (public priors, one term
   per record) — refused with the site, the primitive and the line when they fail;
4. :mod:`.families` + :mod:`.constants`: each prior through its family rule, each likelihood
   through its rule with its predictor's Jacobian bounded over the declared domain (interval and
   linear-form arithmetic with outward rounding), combined into the constants.

No fact is decided by evaluating the model at sample points.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .constants import combine, likelihood_site, prior_site
from ..errors import AssumptionError
from .domain import Domain
from .facts import Constants
from .inputs import check_inputs
from .session import memo, program_key
from .structure import floats
from .structure.program import prove
from .structure.sites import check_parameters, check_sites
from .tracing import trace_program

__all__ = ["Analysis", "analyze"]


@dataclass
class Analysis:
    """What :func:`analyze` proved about a model: its structure, the facts per site and the constants.

    Args:
        model_name: the model's name.
        latent_sites: ``(name, shape, support)`` of each latent site.
        data_args: the names of the per-record model arguments.
        observed_sites: ``(name, family)`` of each observed site.
        record_plate: ``(name, size)`` of the plate over records.
        clipped: whether per-record gradients are clipped.
        clip_norm: the clipping norm, or None.
        facts: the proven :class:`~bayesdp.analysis.facts.Fact` of each site.
        unproven: the :class:`~bayesdp.analysis.facts.Unproven` constants, with the reason.
        constants: the :class:`~bayesdp.analysis.facts.Constants` with their provenance.
        domain: the declared :class:`~bayesdp.analysis.domain.Domain`.
        deterministic_sites: the names of the deterministic sites.
        domain_clipping: argument -> number of records clipped to the domain (when asked).
        notes: notes for the report (e.g. the data was clipped).

    Examples:
        >>> from bayesdp.analysis import Domain, analyze
        >>> from bayesdp.analysis.loading import load_model
        >>> model, _ = load_model("logistic")
        >>> an = analyze(model, domain=Domain.parse(["X.norm=1", "y.values=0,1"]), data_size=100, dim=2)
        >>> an.latent_sites, an.observed_sites, an.record_plate
        ([('w', (2,), 'real')], [('obs', 'BernoulliLogits')], ('data', 100))
        >>> an.data_size, an.first_unproven()
        (100, None)
    """

    model_name: str
    latent_sites: list            # (name, shape, support)
    data_args: list               # names of per-record model arguments
    observed_sites: list          # (name, family)
    record_plate: tuple | None    # (name, size)
    clipped: bool
    clip_norm: float | None
    facts: list
    unproven: list
    constants: Constants
    domain: Domain
    deterministic_sites: list = field(default_factory=list)
    domain_clipping: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def data_size(self) -> int | None:
        """The number of records (``constants.data_size``)."""
        return self.constants.data_size

    def first_unproven(self, *whats: str) -> str | None:
        """The message of the first constant not proven (among ``whats`` when given).

        Args:
            *whats: the constants to look at (e.g. ``"per-record gradient bound"``); none: all of them.

        Returns:
            The one-line message of :meth:`Unproven.message`, or None when everything asked was proven.
        """
        for u in self.unproven:
            if not whats or u.what in whats:
                return u.message()
        return None

    def to_dict(self) -> dict:
        """The analysis as a JSON-ready dict (the ``model`` part of a certificate report).

        Returns:
            The sites, record plate, data arguments, domain, clipping, facts, unproven constants and notes.
        """
        return {
            "name": self.model_name,
            "latent_sites": [{"name": n, "shape": list(s), "support": sup} for n, s, sup in self.latent_sites],
            "observed_sites": [{"name": n, "family": f} for n, f in self.observed_sites],
            "deterministic_sites": list(self.deterministic_sites),
            "record_plate": None if self.record_plate is None else
            {"name": self.record_plate[0], "size": self.record_plate[1]},
            "data_args": list(self.data_args),
            "domain": self.domain.to_dict(),
            "domain_clipping": dict(self.domain_clipping),
            "gradient_clipping": {"clipped": self.clipped, "clip_norm": self.clip_norm},
            "facts": [f.to_dict() for f in self.facts],
            "unproven": [u.to_dict() for u in self.unproven],
            "notes": list(self.notes),
        }


def check_arithmetic(arithmetic) -> str:
    """``arithmetic`` when it is one of ``structure.floats.ARITHMETICS`` (None: the enclosing
    ``structure.floats.arithmetic(...)``, else ``"real"``), else a one-line refusal.

    Args:
        arithmetic: the value passed.

    Returns:
        The arithmetic.

    Raises:
        AssumptionError: naming the value and the choices.
    """
    if arithmetic is None:
        return "float" if floats.modelled() else "real"
    if arithmetic not in floats.ARITHMETICS:
        raise AssumptionError(f"arithmetic={arithmetic!r}: not one of {', '.join(map(repr, floats.ARITHMETICS))}; "
                              "use 'real' (constants of the real-arithmetic program) or 'float' (its float rounding "
                              "modelled)")
    return arithmetic


def analyze(model: Callable, data: Mapping[str, Any] | None = None, domain: Domain | None = None,
            model_kwargs: Mapping[str, Any] | None = None, clip_norm: float | None = None,
            data_size: int | None = None, dim: int | None = None, clip_to_domain: bool = False,
            model_name: str | None = None, record_shapes: Mapping[str, Any] | None = None,
            arithmetic: str | None = None) -> Analysis:
    """Prove the structure of ``model`` from its program and derive every constant with its provenance.

    ``data``: per-record model arguments (each array's leading axis is the record); ``data=None``
    with ``data_size`` (and ``dim`` or ``record_shapes`` where shapes are needed: the shape of one record of
    each data argument) certifies before sampling.  ``domain``:
    public bounds on one record (required; never read off the data).  ``clip_norm``: per-record
    gradient clipping at this norm (the sampler then no longer targets the exact posterior).
    Raises a one-line :class:`~bayesdp.errors.BayesDPError` on invalid input or a structural
    refusal; constants the rules cannot prove are ``None`` and listed in ``unproven``.

    Args:
        model: a NumPyro model taking the data arguments as keyword arguments.
        data: per-record model arguments (each array's leading axis is the record), or None to certify
            before sampling (then ``data_size`` is required).
        domain: the public bounds on one record (a :class:`~bayesdp.analysis.domain.Domain`, its spec mapping,
            or the command line's words); required unless ``clip_norm`` is given.
        model_kwargs: the model's other keyword arguments (hyperparameters).
        clip_norm: per-record gradient clipping at this norm (the sampler then no longer targets the exact
            posterior).
        data_size: the number of records, without data (or checked against the data).
        dim: the length of a record's row, without data, for an argument with one row per record.
        clip_to_domain: clip the data into the declared domain (recorded in ``domain_clipping``) rather than
            refuse data outside it.
        model_name: the name to report (default: the function's name).
        record_shapes: without data, the shape of one record of each data argument (e.g. ``{"X": (3,), "y":
            ()}``), instead of ``dim``.
        arithmetic: ``"real"`` (the default, unless inside ``structure.floats.arithmetic("float")``: every
            constant bounds the program in real arithmetic) or ``"float"``
            (the program's own float rounding modelled: XLA's rounding of each operation, its regrouping of sums,
            its functions' errors; docs/analysis.md, "Float rounding"). Float arithmetic refuses programs whose
            float32 value may be undefined or far from the real one (``log((1 - sigmoid(r)) + 1e-9)``) and its
            constants exceed the real ones by the rounding (about 1e-6 relative).

    Returns:
        The :class:`Analysis`.

    Raises:
        DomainError: if no domain is declared, the data lies outside it, or the data is invalid.
        AssumptionError: if ``data_size`` (without data), ``dim`` or ``record_shapes`` is missing or invalid,
            or ``clip_norm`` is not positive.
        ModelError: if the model is not callable, cannot be traced, or its structure is refused (naming the
            site and the operation of the model).

    Examples:
        Bayesian logistic regression with a Normal(0, 1) prior and rows of norm <= 1: K = |w|^2/2 (mu = L = 1),
        each record's gradient norm <= |x| sup|sigmoid - y| = 1 (the norm inflated by 1 + 8 * 2^-24 for
        float data, see :mod:`bayesdp.analysis.domain`):

        >>> from bayesdp.analysis import Domain, analyze
        >>> from bayesdp.analysis.loading import load_model
        >>> model, _ = load_model("logistic")
        >>> an = analyze(model, domain=Domain.parse(["X.norm=1", "y.values=0,1"]), data_size=100, dim=2)
        >>> c = an.constants
        >>> c.strong_convexity, c.smoothness, round(c.record_grad_bound, 6), round(c.grad_diff, 6)
        (1.0, 1.0, 1.0, 2.000001)
        >>> analyze(model, data_size=100, dim=2)
        Traceback (most recent call last):
        ...
        bayesdp.errors.DomainError: no data domain declared; ...
    """
    arithmetic = check_arithmetic(arithmetic)
    inp = check_inputs(model, data, domain, model_kwargs, clip_norm, data_size, dim, clip_to_domain, model_name,
                       record_shapes)
    with floats.arithmetic(arithmetic):
        return _analyze(inp, arithmetic)


def _analyze(inp, arithmetic: str) -> Analysis:
    # the program (symbolic record count) and its proven structure: the same for every record count, domain and
    # data, traced and proven once per public call (bayesdp.analysis.session)
    key, keep = program_key(inp.model, inp.shapes, inp.dtypes, inp.kwargs, inp.name)
    program = trace_program(inp.model, inp.shapes, inp.dtypes, inp.kwargs, inp.name)
    facts = memo("facts", key + (arithmetic,), lambda: prove(program), keep)
    structure = check_sites(program, facts)
    check_parameters(program, facts, inp.domain, inp.m)
    for n, dim in structure.inferred:
        inp.notes.append(f"site '{n}' has no plate over records: its record axis was inferred as batch dimension "
                         f"{dim} (the axis of size the number of records; each of its terms proven to depend on its "
                         f"own record only); unit of privacy: one record = entry i along axis 0 of every data "
                         f"argument ({', '.join(sorted(inp.shapes))}); if one person contributes several rows, "
                         "group them into one record (one row per person) before certifying")
    for n in structure.summed:
        inp.notes.append(f"site '{n}' is a numpyro.factor of a sum over the records: its summands, one per record, "
                         "were proven to read their own record only, and it is certified as the same factor inside a "
                         f"plate over records; unit of privacy: one record = entry i along axis 0 of every data "
                         f"argument ({', '.join(sorted(inp.shapes))}); if one person contributes several rows, "
                         "group them into one record (one row per person) before certifying")
    if arithmetic == "float":
        inp.notes.append("arithmetic: float (the program's own float rounding modelled: each operation's rounding, "
                         "XLA's regrouping of sums and the error of its functions; docs/analysis.md, 'Float "
                         "rounding')")
    latent = [n for n, s in program.sites.items() if not s.observed]
    observed = [n for n, s in program.sites.items() if s.observed]
    priors = {n: prior_site(program, facts, structure, n, inp.m) for n in latent}
    liks = [] if inp.clip_norm is not None else [
        likelihood_site(program, facts, n, inp.domain, inp.m, inp.arrays) for n in observed]
    constants, site_facts, unproven = combine(program, priors, liks, inp.clip_norm, observed, inp.m, inp.arrays is not None,
                                              structure.size_dependent, inp.notes)
    if arithmetic == "float":                   # each constant's source says in which arithmetic it holds
        for k, v in constants.provenance.items():
            constants.provenance[k] = f"{v}; in float arithmetic (docs/analysis.md, 'Float rounding')"
    return Analysis(
        model_name=inp.name,
        latent_sites=[(n, program.sites[n].value_shape, program.sites[n].support) for n in latent],
        data_args=list(inp.shapes), observed_sites=[(n, program.sites[n].family) for n in observed],
        record_plate=(structure.record_plate[0], inp.m), clipped=inp.clip_norm is not None,
        clip_norm=inp.clip_norm, facts=site_facts, unproven=unproven, constants=constants, domain=inp.domain,
        deterministic_sites=list(program.deterministic), domain_clipping=inp.domain_clipping, notes=inp.notes)
