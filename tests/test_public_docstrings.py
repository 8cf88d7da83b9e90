"""Every public name of the API reference is documented with an example (issue #16, item 4).

For each module listed below, every public name (``docs/hooks.py`` ``public_names``: the module's
``__all__`` when it declares one) that is a function or a class has a docstring with an ``Examples:``
section holding a ``>>>`` example (tests/test_docs_examples.py runs them), and every public method or
property defined by a public class has a docstring of its own (the reference renders it; a docstring
inherited from a base class is not shown there).
"""

import importlib
import inspect
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PART1 = [
    "bayesdp.audit", "bayesdp.audit.chains", "bayesdp.audit.lq", "bayesdp.audit.models", "bayesdp.audit.report", "bayesdp.audit.stats",
    "bayesdp.bench", "bayesdp.bench.audit", "bayesdp.bench.certify", "bayesdp.bench.load", "bayesdp.bench.peers", "bayesdp.bench.release",
    "bayesdp.bench.tightness", "bayesdp.bench.constants",
    "bayesdp.certificate", "bayesdp.cli", "bayesdp.curves", "bayesdp.datasets", "bayesdp.errors", "bayesdp.exact",
    "bayesdp.jax_cache",
    "bayesdp.mechanisms", "bayesdp.mechanisms.langevin", "bayesdp.mechanisms.registry",
    "bayesdp.mechanisms.seed_systems",
    "bayesdp.models", "bayesdp.resources",
    "bayesdp.theorems", "bayesdp.theorems.girsanov", "bayesdp.theorems.gradient_step",
    "bayesdp.theorems.hockey_stick", "bayesdp.theorems.mixing", "bayesdp.theorems.pabi",
    "bayesdp.theorems.paper_constants", "bayesdp.theorems.tight", "bayesdp.theorems.transfer",
]
# part 2: each list is completed by whoever documents that package (see tests below: every reference module
# must be in one of them)
ANALYSIS: list[str] = [
    "bayesdp.analysis", "bayesdp.analysis.analyze", "bayesdp.analysis.certify", "bayesdp.analysis.constants",
    "bayesdp.analysis.advice", "bayesdp.analysis.domain", "bayesdp.analysis.facts", "bayesdp.analysis.families", "bayesdp.analysis.generic",
    "bayesdp.analysis.inputs", "bayesdp.analysis.loading", "bayesdp.analysis.records", "bayesdp.analysis.rounding",
    "bayesdp.analysis.session", "bayesdp.analysis.spectrum",
    "bayesdp.analysis.structure", "bayesdp.analysis.structure.affinity", "bayesdp.analysis.structure.bounds",
    "bayesdp.analysis.structure.dependence", "bayesdp.analysis.structure.evaluate",
    "bayesdp.analysis.structure.floats",
    "bayesdp.analysis.structure.interpreter", "bayesdp.analysis.structure.program",
    "bayesdp.analysis.structure.rational",
    "bayesdp.analysis.structure.sites", "bayesdp.analysis.structure.switch", "bayesdp.analysis.tracing",
]
RELEASE: list[str] = [
    "bayesdp.publish", "bayesdp.publish.data", "bayesdp.budget",
    "bayesdp.budget.accountant", "bayesdp.publish.aggregate", "bayesdp.publish.demo", "bayesdp.publish.final",
    "bayesdp.budget.ledger", "bayesdp.budget.events", "bayesdp.budget.numbers", "bayesdp.budget.journal_import",
    "bayesdp.publish.noise",
    "bayesdp.publish.path", "bayesdp.publish.engine", "bayesdp.publish.spec", "bayesdp.publish.result",
    "bayesdp.publish.noiseplan", "bayesdp.publish.methods", "bayesdp.publish.methods.base",
    "bayesdp.publish.methods.coupling", "bayesdp.publish.methods.path", "bayesdp.publish.methods.final",
    "bayesdp.publish.methods.aggregate",
    "bayesdp.publish.release", "bayesdp.publish.sensitivity",
    "bayesdp.publish.statistics", "bayesdp.publish.prior",
]
SAMPLERS: list[str] = [
    "bayesdp.samplers", "bayesdp.samplers.certify", "bayesdp.samplers.driver", "bayesdp.samplers.glm",
    "bayesdp.samplers.gradients", "bayesdp.samplers.kernels", "bayesdp.samplers.keys", "bayesdp.samplers.minibatch",
    "bayesdp.samplers.potential", "bayesdp.samplers.sharding",
    "bayesdp.bench.samplers", "bayesdp.bench.utility",
]
TOP: list[str] = ["bayesdp", "bayesdp.api", "bayesdp.plan", "bayesdp.calibration"]
MODULES = PART1 + ANALYSIS + RELEASE + SAMPLERS + TOP


def _hooks():
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    try:
        import hooks
    finally:
        sys.path.pop(0)
    return hooks


def _public_methods(cls):
    """(name, docstring) of the methods and properties ``cls`` itself defines without a leading ``_``."""
    for name, attr in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(attr, property):
            yield name, attr.fget.__doc__
        elif isinstance(attr, (staticmethod, classmethod)):
            yield name, attr.__func__.__doc__
        elif inspect.isfunction(attr):
            yield name, attr.__doc__


def test_the_list_covers_reference_modules():
    """Every module listed is a page of the API reference (a renamed module must be renamed here too)."""
    pages = set(_hooks().public_modules())
    assert set(MODULES) <= pages, sorted(set(MODULES) - pages)
    # and every reference page is checked: a new module must be added to one of the lists above
    assert pages <= set(MODULES), sorted(pages - set(MODULES))


@pytest.mark.parametrize("name", MODULES)
def test_public_names_have_examples(name):
    mod = importlib.import_module(name)
    assert mod.__doc__ and mod.__doc__.strip(), f"{name} has no module docstring"
    problems = []
    for public in _hooks().public_names(name):
        assert hasattr(mod, public), f"{name}.__all__ lists {public!r}, which the module does not define"
        obj = getattr(mod, public)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        doc = obj.__doc__ or ""
        if not doc.strip():
            problems.append(f"{public}: no docstring")
        elif "Examples:" not in doc or ">>>" not in doc:
            problems.append(f"{public}: no Examples section with a >>> example")
        if inspect.isclass(obj):
            problems += [f"{public}.{m}: no docstring" for m, d in _public_methods(obj) if not (d or "").strip()]
    assert not problems, f"{name}: " + "; ".join(problems)


def test_a_missing_example_is_reported():
    """The check above fails on an undocumented name (it is not vacuous)."""
    def undocumented():
        pass

    class Documented:
        """A class.

        Examples:
            >>> Documented().method()
        """

        def method(self):
            pass

    assert "Examples:" not in (undocumented.__doc__ or "")
    assert [m for m, d in _public_methods(Documented) if not d] == ["method"]
