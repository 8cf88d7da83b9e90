"""The release-method protocol, the chain source and the registry (docs/release.md §0).

A method is one module of :mod:`bayesdp.publish.methods` that registers one object with

* ``name`` (as :data:`bayesdp.publish.spec.METHODS` spells it) and ``auto`` (whether ``method="auto"`` may pick it);
* ``applies(source) -> None | str``: None when the method can release from this source, else why not;
* ``plan(analysed, spec) -> MethodPlan``: settings (temperature, step size, steps, burn-in, chains, noise) and a
  predicted error from public inputs only; it reads the analysis, never the data's values;
* ``prepare(plan, analysed, rng_key) -> state``: work done BEFORE the budget is reserved that publishes nothing
  (the unpublished chain of a coupling release); most methods return None;
* ``run(plan, analysed, state, rng_key, noise_epsilon) -> Drawn``: the release's randomness, drawn AFTER the
  reservation (the secure noise, or the private chain whose steps are the noise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

import numpy as np

__all__ = ["ChainSource", "Analysed", "MethodPlan", "Drawn", "ReleaseMethod", "register", "registry"]


@dataclass(frozen=True)
class ChainSource:
    """The chain a release may run, or the draws of one that ran: built by the layer above from a kernel, a plan
    or a run driver (the engine never imports it).

    Attributes:
        model: the NumPyro model.
        data: the validated records (model argument name -> array).
        domain: the public domain (a :class:`~bayesdp.analysis.Domain`).
        model_kwargs: the model's hyperparameters (with the domain's counts).
        model_name: the model's name, for messages.
        kernel: ``{"sampler", "step_size", "inverse_temperature", "batch_size", "clip_norm"}`` of the kernel.
        given: what the user passed: ``"kernel"`` (settings open), ``"plan"`` or ``"driver"`` (settings pinned:
            ``num_steps``, ``num_chains``), or ``"chain"`` (a chain that ran: ``draws`` are released as they are).
        num_steps: steps per chain pinned by a plan or driver, or None.
        num_chains: chains pinned by a plan or driver, or None.
        draws: ``(chains, draws, dim)`` unconstrained draws of a chain that ran, or None.
        run_kind: ``"path"``, ``"thinned"`` or ``"final"``: what the chain that ran kept.
        thinning: its thinning.
        plan: the user's :class:`~bayesdp.plan.Plan`, or None.
        plan_final: ``(epsilon, delta, max_steps) -> plan`` of a last-draw chain that meets the CHARGED epsilon and
            delta (``bayesdp.calibrate``, passed by the layer above, searches at the largest doubles not above
            them), or None.
        key_label: how a chain that ran was keyed.

    Examples:
        >>> ChainSource(model=None, data={}, domain=None, kernel={"sampler": "sgld"}).full_batch_ula
        False
    """

    model: Callable
    data: Mapping[str, Any]
    domain: Any
    model_kwargs: Mapping[str, Any] = field(default_factory=dict)
    model_name: str | None = None
    kernel: Mapping[str, Any] = field(default_factory=dict)
    given: str = "kernel"
    num_steps: int | None = None
    num_chains: int | None = None
    draws: np.ndarray | None = field(default=None, repr=False)
    run_kind: str = "path"
    thinning: int = 1
    plan: Any = None
    plan_final: Callable | None = None
    key_label: str | None = None

    @property
    def sampler(self) -> str:
        """``"ula"`` or ``"sgld"``."""
        return str(self.kernel.get("sampler", "ula"))

    @property
    def full_batch_ula(self) -> bool:
        """Full-batch ULA without clipping (what the path and last-draw certificates cover)."""
        return self.sampler == "ula" and self.kernel.get("clip_norm") is None


@dataclass(frozen=True)
class Analysed:
    """What the engine derives once per release, before any method plans: the analysis, the potential and the
    statistic (none reads the data's values beyond their shapes and count).

    Attributes:
        source: the :class:`ChainSource`.
        analysis: the model's analysis (:func:`bayesdp.analysis.analyze`).
        potential: the model's potential (sites, dimension, flattening).
        statistic: the :class:`~bayesdp.publish.statistics.Statistic` to release.
        constants: the analysis's constants as a dict.

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> Analysed(None, None, NS(dim=3), None, {}).dim
        3
    """

    source: ChainSource
    analysis: Any
    potential: Any
    statistic: Any
    constants: Mapping[str, Any]

    @property
    def dim(self) -> int:
        """The number of unconstrained coordinates."""
        return int(self.potential.dim)


@dataclass(frozen=True)
class MethodPlan:
    """A method's decisions, before anything is charged: the settings, the predicted error and the charge.

    Attributes:
        method: the method's name.
        settings: the public settings (step size, steps, burn-in, chains, temperature, noise, ...).
        predicted_rmse: the predicted root-mean-square error per released value (public inputs only), or None.
        predicted_label: ``"proven"`` or ``"heuristic"``.
        predicted_basis: what the prediction covers, in words.
        epsilon: the charged epsilon.
        delta: the charged delta (exact decimal or float).
        curve: the privacy curve charged.
        event: the ledger's event.
        mechanism: the ledger's mechanism label.
        source_label: the certificate's source.
        what: the ledger's one-line description.
        detail: method-private objects (routes, noise plan, coupling, certificate).

    Examples:
        >>> p = MethodPlan("path", {"num_steps": 100}, 0.5, "heuristic", "a prediction", 1.0, 1e-6, None, {}, "x",
        ...                "src", "what")
        >>> p.summary()["predicted_rmse"]
        0.5
    """

    method: str
    settings: Mapping[str, Any]
    predicted_rmse: float | None
    predicted_label: str
    predicted_basis: str
    epsilon: float
    delta: Any
    curve: Any
    event: Mapping[str, Any]
    mechanism: str
    source_label: str
    what: str
    detail: Mapping[str, Any] = field(default_factory=dict)

    def summary(self) -> dict:
        """The JSON-ready public part (what a release records about its method).

        Returns:
            ``method``, ``settings``, ``predicted_rmse``, ``predicted_label`` and ``predicted_basis``.
        """
        return {"method": self.method, "settings": dict(self.settings), "predicted_rmse": self.predicted_rmse,
                "predicted_label": self.predicted_label, "predicted_basis": self.predicted_basis}


@dataclass(frozen=True)
class Drawn:
    """What a method's ``run`` returns: the ReleaseResult fields it knows (the engine adds the budget's).

    Attributes:
        fields: keyword arguments of :class:`~bayesdp.publish.release.ReleaseResult` (values, names, items, ...).
        commit: what the ledger's commit line records.

    Examples:
        >>> Drawn(fields={"names": ("mu",)}, commit={"values": [0.5]}).commit["values"]
        [0.5]
    """

    fields: Mapping[str, Any]
    commit: Mapping[str, Any]


class ReleaseMethod(Protocol):
    """The protocol every release method implements (module docstring).

    Examples:
        >>> sorted(registry())
        ['coupling', 'final', 'path', 'sample-aggregate']
    """

    name: str
    auto: bool

    def applies(self, source: ChainSource) -> str | None:
        """None when the method can release from ``source``, else why not (one line)."""

    def plan(self, analysed: Analysed, spec) -> MethodPlan:
        """The settings and the predicted error, from public inputs only; raises when the method cannot plan."""

    def prepare(self, plan: MethodPlan, analysed: Analysed, rng_key) -> Any:
        """Work before the reservation that publishes nothing (e.g. an unpublished chain); its state."""

    def run(self, plan: MethodPlan, analysed: Analysed, state: Any, rng_key, noise_epsilon: float) -> Drawn:
        """The release's randomness, after the reservation: the released values."""


_REGISTRY: dict[str, ReleaseMethod] = {}


def register(method: ReleaseMethod) -> ReleaseMethod:
    """Register a release method under its name (a method module calls it once at import).

    Args:
        method: the method object.

    Returns:
        ``method``.

    Examples:
        >>> register(registry()["path"]).name            # registering again replaces it under its name
        'path'
    """
    _REGISTRY[method.name] = method
    return method


def registry() -> dict[str, ReleaseMethod]:
    """The registered methods by name (in registration order).

    Returns:
        A copy of the registry.

    Examples:
        >>> list(registry())
        ['coupling', 'path', 'final', 'sample-aggregate']
    """
    return dict(_REGISTRY)
