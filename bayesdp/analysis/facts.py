"""Facts with provenance and the constants derived from them.

A :class:`Fact` is one proven statement about one model site (e.g. "the prior of
``w`` contributes a quadratic K with strong convexity 1.0", "each record's
log-likelihood at ``obs`` has gradient norm <= 1.0"), with the rule that proved
it.  :class:`Constants` holds the constants the certificates need, each a number
or ``None`` (not proven), and ``provenance`` naming the rule(s) and site(s) of each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..curves import _json_float

__all__ = ["CONSTANT_NAMES", "Constants", "Fact", "Unproven"]


@dataclass(frozen=True)
class Fact:
    """One proven statement about one model site, with the rule that proved it.

    Args:
        site: the site's name.
        quantity: what was proven (e.g. ``"strong_convexity"``, ``"record_grad_bound"``).
        value: the proven value.
        rule: the rule that proved it.
        detail: how (a short derivation or the parameters used).

    Examples:
        >>> from bayesdp.analysis import Fact
        >>> Fact("w", "strong_convexity", 1.0, "Normal prior -> quadratic K").to_dict()["value"]
        1.0
    """

    site: str
    quantity: str
    value: Any
    rule: str
    detail: str = ""

    def to_dict(self) -> dict:
        """The fact as a JSON-ready dict (a non-finite float value as None).

        Returns:
            ``{"site", "quantity", "value", "rule", "detail"}``.
        """
        v = self.value
        if isinstance(v, float):
            v = _json_float(v)
        return {"site": self.site, "quantity": self.quantity, "value": v, "rule": self.rule,
                "detail": self.detail}


@dataclass(frozen=True)
class Unproven:
    """A constant the rules could not prove for one site, and why.

    Args:
        site: the site's name.
        what: the constant not proven (e.g. ``"record_grad_bound"``).
        reason: why (the failed hypothesis, the operation of the model that defeats it).

    Examples:
        >>> from bayesdp.analysis import Unproven
        >>> Unproven("obs", "record_grad_bound", "the Normal log-likelihood has an unbounded gradient").message()
        "site 'obs': record_grad_bound not proven: the Normal log-likelihood has an unbounded gradient"
    """

    site: str
    what: str
    reason: str

    def message(self) -> str:
        """One line naming the site, the constant and the reason.

        Returns:
            ``site 'NAME': WHAT not proven: REASON``.
        """
        return f"site '{self.site}': {self.what} not proven: {self.reason}"

    def to_dict(self) -> dict:
        """The entry as a JSON-ready dict.

        Returns:
            ``{"site", "what", "reason"}``.
        """
        return {"site": self.site, "what": self.what, "reason": self.reason}


@dataclass(frozen=True)
class LikelihoodFacts:
    """What one observed site's rule proved: per-record gradient bound, smoothness (None: not proven) and
    convexity in theta, with the rule and its detail."""

    site: str
    rule: str
    grad_bound: float
    smoothness: float | None
    convex: bool
    detail: str
    grad_diff: float | None = None     # replace-one difference when the rule proves one below 2 * grad_bound


CONSTANT_NAMES = (
    "strong_convexity", "smoothness", "grad_bound", "grad_diff", "grad_diff_add_remove",
    "total_strong_convexity", "total_smoothness", "record_grad_bound", "record_grad_diff",
    "record_smoothness", "v_smoothness", "v_convex", "prior_v_grad_bound", "inverse_temperature", "data_size",
)


@dataclass
class Constants:
    """The constants of ``U_D = K + V_D`` (names fixed, see docs/analysis.md).

    ``strong_convexity``/``smoothness``: mu / L of K;  ``grad_bound``: c = sup |grad V_D|
    = data_size * record_grad_bound + prior_v_grad_bound;  ``grad_diff``: Delta for
    replace-one neighbours = record_grad_diff;  ``grad_diff_add_remove`` = record_grad_bound;
    ``total_strong_convexity``/``total_smoothness`` of U_D;  ``v_smoothness`` L_V;  ``v_convex``.
    Each is a number or ``None`` (not proven).

    Args:
        strong_convexity: mu of K.
        smoothness: L of K.
        grad_bound: sup |grad V_D| = data_size * record_grad_bound + prior_v_grad_bound.
        grad_diff: sup |grad V_D - grad V_D'| for replace-one neighbours (= record_grad_diff).
        grad_diff_add_remove: the same for add/remove-one neighbours (= record_grad_bound).
        total_strong_convexity: strong convexity of U_D.
        total_smoothness: smoothness of U_D.
        record_grad_bound: sup over theta and the domain of one record's log-likelihood gradient norm.
        record_grad_diff: sup of the difference of two records' gradients.
        record_smoothness: smoothness of one record's log-likelihood.
        v_smoothness: L_V, the smoothness of V_D.
        v_convex: whether V_D is proven convex.
        prior_v_grad_bound: sup |grad| of the prior's part of V.
        inverse_temperature: beta of the sampler (1: the Bayesian posterior).
        data_size: the number of records.
        provenance: constant name -> the rule(s) and site(s) it comes from.

    Examples:
        >>> from bayesdp.analysis import Constants
        >>> c = Constants(record_grad_diff=2.0, data_size=100)
        >>> c.sgld_grad_diff, c.to_dict()["grad_bound"]
        (200.0, None)
    """

    strong_convexity: float | None = None
    smoothness: float | None = None
    grad_bound: float | None = None
    grad_diff: float | None = None
    grad_diff_add_remove: float | None = None
    total_strong_convexity: float | None = None
    total_smoothness: float | None = None
    record_grad_bound: float | None = None
    record_grad_diff: float | None = None
    record_smoothness: float | None = None
    v_smoothness: float | None = None
    v_convex: bool = False
    prior_v_grad_bound: float | None = None
    inverse_temperature: float = 1.0
    data_size: int | None = None
    provenance: dict = field(default_factory=dict)

    # SGLD uses the 004 loss l~(x, d) = K(x) + data_size * l_d(x) + V_prior(x) (004 (31), (36))
    @property
    def sgld_grad_bound(self) -> float | None:
        """c of 004 Assumption 5.5 for l~: data_size * record_grad_bound + prior_v_grad_bound."""
        return self.grad_bound

    @property
    def sgld_grad_diff(self) -> float | None:
        """c of 004 (36) for l~: data_size * record_grad_diff."""
        if self.record_grad_diff is None or self.data_size is None:
            return None
        return self.data_size * self.record_grad_diff

    def to_dict(self) -> dict:
        """The constants as a JSON-ready dict (non-finite floats as None) with their provenance.

        Returns:
            Every name of ``CONSTANT_NAMES`` and ``"provenance"``.
        """
        out: dict[str, Any] = {}
        for k in CONSTANT_NAMES:
            v = getattr(self, k)
            if isinstance(v, float):
                v = _json_float(v) if math.isfinite(v) else None
            out[k] = v
        out["provenance"] = dict(self.provenance)
        return out
