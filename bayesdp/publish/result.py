"""The result of a release: the published values and everything that justifies them; prints a short table
(``print(result)``, ``_repr_html_``), converts with :meth:`ReleaseResult.to_dict` (the JSON of ``bayesdp release
--json``) and :meth:`ReleaseResult.to_dataframe` (pandas).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..certificate import Certificate, curve_dp_event
from ..curves import GDP, ApproxDP
from ..exact import exact, up
from .statistics import ReleasedValue
import html
import math as _m

__all__ = ["ReleaseResult", "INTERVAL_NOTE", "quality_lines"]


@dataclass(frozen=True)
class ReleaseResult:
    """One private release: the published values and everything that justifies them (JSON: :meth:`to_dict`).

    Attributes:
        values: the released values (after clamping to the statistic's range).
        names: one name per value.
        noise_scale: the added noise's scale per value (Laplace b, or Gaussian sigma; 0 for the path and last-draw
            releases, whose chain is the noise: see each item's ``equivalent_noise_sd``).
        noise_variance: the noise variance per value.
        sensitivity: effective L1 (Laplace) or L2 (Gaussian) sensitivity (proven window + grid rounding).
        proven_sensitivity: the route's window before rounding.
        grid: the noise grid r.
        epsilon: the charged epsilon.
        delta: the charged delta.
        source: the certificate's source.
        certificate: the release's :class:`~bayesdp.certificate.Certificate`.
        items: one :class:`~bayesdp.publish.statistics.ReleasedValue` per value: its intervals, its predicted
            error, ``error_interval``, ``equivalent_noise_sd`` (path, last draw) and, for quantile requests,
            ``credible_interval`` and ``interval_kind`` (docs/release.md §11).
        remaining_budget: the budget left after the release.
        ledger: the ledger's path (None for an in-memory accountant).
        routes: every sensitivity route considered, the chosen one marked.
        ledger_head: the journal line recording this release (docs/ledger.md).
        dp_event: what ran (:mod:`bayesdp.budget.accountant` composes it).
        noise: :meth:`NoisePlan.to_dict`.
        raw_values: the noisy values before clamping (also private).
        postprocessing: the clamping applied.
        monte_carlo: the data-independent Monte Carlo bound (docs/release.md §4.2), or None.
        extra: method-specific public facts (in :meth:`to_dict`).
        private: False when an explicit key made the privacy noise reproducible (the output is then NOT private).

    Examples:
        >>> from bayesdp.budget.accountant import PrivacyAccountant
        >>> from bayesdp.publish.release import release_statistic
        >>> from bayesdp.publish.sensitivity import coupling_strongly_convex
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> coupling = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> stat = coordinate_means([SiteSpec("mu")])
        >>> acct = PrivacyAccountant(budget=1.0)
        >>> res = release_statistic(np.full((50, 1), 0.5), stat, 1.0, acct, coupling=coupling)
        >>> res.names, res.noise_mechanism, round(res.noise_scale, 6), res.remaining_budget
        (('mu',), 'laplace', 1.0, {'epsilon': 0.0, 'delta': 0.0})
        >>> type(res.to_dp_event()).__name__
        'DiscreteLaplaceDpEvent'
        >>> print(res)                                                # doctest: +ELLIPSIS
        release: epsilon = 1, delta = 0 (...)
        ...
        >>> list(res.to_dataframe().columns)[:3]
        ['value', 'predicted_rmse', 'predicted_label']
    """

    values: np.ndarray
    names: tuple[str, ...]
    noise_scale: float
    noise_variance: float
    sensitivity: float            # effective L1 (Laplace) or L2 (Gaussian) sensitivity (proven window + grid rounding)
    proven_sensitivity: float     # the route's window before rounding
    grid: float
    epsilon: float
    delta: float
    source: str
    certificate: Certificate
    items: tuple[ReleasedValue, ...]
    remaining_budget: Mapping[str, float]
    ledger: str
    routes: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)
    ledger_head: Mapping[str, Any] | None = None   # the journal line recording this release (docs/ledger.md)
    dp_event: Mapping[str, Any] | None = None      # what ran (bayesdp.budget.accountant composes it)
    noise: Mapping[str, Any] = field(default_factory=dict)          # NoisePlan.to_dict()
    raw_values: np.ndarray | None = None           # before clamping to the range (also private)
    postprocessing: Mapping[str, Any] = field(default_factory=dict)
    monte_carlo: Mapping[str, Any] | None = None   # the data-independent Monte Carlo bound (docs/release.md §4.2)
    extra: Mapping[str, Any] = field(default_factory=dict)           # method-specific public facts (to_dict)
    private: bool = True

    def _columns(self) -> list[tuple[str, list[str]]]:
        """The table's columns (header, cells): the value, its predicted error, the error interval, the equivalent
        noise sd of a chain whose steps are the noise, a quantile request's credible interval, the label."""
        its = self.items
        fmt = lambda x: "n/a" if x is None else f"{x:.4g}"  # noqa: E731
        pair = lambda iv: "n/a" if iv is None else f"[{iv[0]:.4g}, {iv[1]:.4g}]"  # noqa: E731
        level = format(its[0].level, ".0%") if its else ""
        cols = [("value", [f"{it.value:.5g}" for it in its]),
                ("pred. rmse", [fmt(it.predicted_rmse) for it in its]),
                (f"error interval ({level})", [pair(it.error_interval) for it in its])]
        if any(it.equivalent_noise_sd is not None for it in its):
            cols.append(("equiv. noise sd", [fmt(it.equivalent_noise_sd) for it in its]))
        if any(it.credible_interval is not None for it in its):
            kind = "TEMPERED" if any(it.interval_kind == "tempered" for it in its) else "credible"
            cols.append((f"{kind} interval", [
                "n/a" if it.credible_interval is None else f"{pair(it.credible_interval)} "
                f"({it.credible_level:.0%}{', tempered' if it.interval_kind == 'tempered' else ''})" for it in its]))
        cols.append(("label", [it.predicted_label or "" for it in its]))
        return cols

    def _tempered_note(self) -> str | None:
        """One line when a quantile request came from a chain not at inverse temperature 1, else None."""
        if not any(it.interval_kind == "tempered" for it in self.items):
            return None
        s = (self.extra.get("method") or {}).get("settings", {}) if isinstance(self.extra.get("method"), Mapping) \
            else {}
        beta = s.get("inverse_temperature")
        at = f" {beta:.4g}" if isinstance(beta, (int, float)) else ""
        return (f"note: the TEMPERED intervals are quantiles of a chain at inverse temperature{at}, not 1: the "
                "spread of the tempered distribution, NOT posterior credible intervals")

    def _title(self) -> str:
        method = (self.extra.get("method") or {}) if isinstance(self.extra.get("method"), Mapping) else {}
        name = method.get("method") or self.extra.get("method") or self.noise_mechanism
        head = f"release: epsilon = {self.epsilon:g}, delta = {self.delta:g} ({name}; {self.source})"
        if not self.private:
            head += "  NOT PRIVATE: an explicit rng_key made the privacy noise reproducible"
        return head

    def __str__(self) -> str:
        cols = self._columns()
        names = [it.name for it in self.items]
        w = max([len("name")] + [len(n) for n in names])
        widths = [max([len(h)] + [len(c) for c in cells]) for h, cells in cols]
        def row(first: str, cells: list[str]) -> str:       # the numbers right-aligned, the intervals left
            return "  " + "  ".join([f"{first:<{w}}"] + [f"{c:>{wd}}" if i < 2 else f"{c:<{wd}}"
                                                         for i, (c, wd) in enumerate(zip(cells, widths))])

        lines = [self._title(), row("name", [h for h, _ in cols])]
        for r, n in enumerate(names):
            lines.append(row(n, [cells[r] for _, cells in cols]))
        note = self._tempered_note()
        if note:
            lines.append(note)
        rb = self.remaining_budget or {}
        lines.append(f"remaining budget: epsilon {rb.get('epsilon', float('nan')):.6g}, "
                     f"delta {rb.get('delta', float('nan')):.3g}")
        return "\n".join(line.rstrip() for line in lines)

    def _repr_html_(self) -> str:

        cols = self._columns()
        head = "".join(f"<th>{html.escape(h)}</th>" for h in ["name"] + [h for h, _ in cols])
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>"
                                        for c in [it.name] + [cells[r] for _, cells in cols]) + "</tr>"
                       for r, it in enumerate(self.items))
        note = self._tempered_note()
        return (f"<p>{html.escape(self._title())}</p><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>" + (f"<p>{html.escape(note)}</p>" if note else ""))

    def to_dataframe(self):
        """The released values as a pandas DataFrame, one row per value (index: the names).

        Returns:
            Columns ``value``, ``predicted_rmse``, ``predicted_label``, ``error_interval_low``,
            ``error_interval_high``, ``equivalent_noise_sd``, ``credible_interval_low``, ``credible_interval_high``,
            ``interval_kind``, ``interval_low``, ``interval_high``, ``noise_scale``, ``level``.
        """
        import pandas as pd

        its = self.items
        lo = lambda iv: None if iv is None else iv[0]  # noqa: E731
        hi = lambda iv: None if iv is None else iv[1]  # noqa: E731
        return pd.DataFrame(
            {"value": [it.value for it in its], "predicted_rmse": [it.predicted_rmse for it in its],
             "predicted_label": [it.predicted_label for it in its],
             "error_interval_low": [lo(it.error_interval) for it in its],
             "error_interval_high": [hi(it.error_interval) for it in its],
             "equivalent_noise_sd": [it.equivalent_noise_sd for it in its],
             "credible_interval_low": [lo(it.credible_interval) for it in its],
             "credible_interval_high": [hi(it.credible_interval) for it in its],
             "interval_kind": [it.interval_kind for it in its],
             "interval_low": [lo(it.interval) for it in its], "interval_high": [hi(it.interval) for it in its],
             "noise_scale": [it.noise_scale for it in its], "level": [it.level for it in its]},
            index=pd.Index([it.name for it in its], name="name"))

    @property
    def noise_mechanism(self) -> str:
        """``"laplace"`` or ``"gaussian"``."""
        return str(self.noise.get("mechanism", "laplace"))

    def to_dp_event(self):
        """The release as a dp-accounting ``DpEvent``: one Laplace coordinate is exactly a discrete Laplace mechanism
        (``DiscreteLaplaceDpEvent``: parameter grid/noise_scale, integer sensitivity floor(s/grid) + 1);
        several coordinates are pure epsilon-DP, dominated by binary randomised response
        (``RandomizedResponseDpEvent``, composed by dp-accounting under ``NeighboringRelation.REPLACE_ONE``);
        a Gaussian release is ``rho``-zCDP (``ZCDpEvent``, composed by dp-accounting's RDP accountant)."""

        from dp_accounting import dp_event

        ev = self.dp_event or {}
        if ev.get("type") == "discrete_gaussian":
            return dp_event.ZCDpEvent(rho=float(ev["rho"]))
        if ev.get("type") == "gdp":          # a path release: mu-GDP, dominated by the Gaussian mechanism 1/mu
            return curve_dp_event(GDP(float(ev["mu"])))    # the multiplier 1/mu rounded down
        if ev.get("coords") == 1 and ev.get("grid") and self.delta == 0:
            # the parameter grid/noise_scale rounded up (as budget.events does)
            return dp_event.DiscreteLaplaceDpEvent(noise_parameter=up(exact(ev["grid"]) / exact(ev["noise_scale"])),
                                                   sensitivity=int(_m.floor(float(ev["l1_sensitivity"]) /
                                                                            float(ev["grid"])) + 1))
        if self.delta == 0:                   # the parameter 2/(1 + e^eps) rounded down (certificate.curve_dp_event)
            return curve_dp_event(ApproxDP(float(self.epsilon), 0.0))
        return dp_event.UnsupportedDpEvent()

    def to_dict(self) -> dict:
        """The JSON of ``bayesdp release --json`` (only public facts: never the non-private estimate).

        Returns:
            A JSON-ready dict.
        """
        gaussian = self.noise_mechanism == "gaussian"
        return {
            "values": [float(v) for v in self.values],
            "names": list(self.names),
            "noise_mechanism": self.noise_mechanism,
            "noise_scale": self.noise_scale,
            "noise_variance": self.noise_variance,
            "sensitivity": self.sensitivity,
            "proven_sensitivity": self.proven_sensitivity,
            "sensitivity_norm": "L2" if gaussian else ("L1" if len(self.names) > 1 else "absolute value"),
            "grid": self.grid,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "source": self.source,
            "noise": dict(self.noise),
            "postprocessing": dict(self.postprocessing),
            "monte_carlo": None if self.monte_carlo is None else dict(self.monte_carlo),
            "remaining_budget": dict(self.remaining_budget),
            "ledger": self.ledger,
            "items": [it.to_dict() for it in self.items],
            "interval_note": INTERVAL_NOTE,
            "certificate": self.certificate.to_dict(epsilon=self.epsilon),
            "routes": [dict(r) for r in self.routes],
            "ledger_head": None if self.ledger_head is None else dict(self.ledger_head),
            "private": self.private,
            **{k: v for k, v in self.extra.items()},
        }


def quality_lines(out: Mapping[str, Any]) -> list[str]:
    """How good each released value is, as text lines for ``bayesdp release`` (from the JSON of
    :meth:`ReleaseResult.to_dict`): the predicted error and its label, the error interval, the chain's equivalent
    noise sd (path, last draw) and a quantile request's credible interval, marked TEMPERED with one line of
    explanation when the chain was not at inverse temperature 1 (docs/release.md §11).

    Args:
        out: the release's JSON.

    Returns:
        The lines (a header, one per value, and the tempered note when it applies).

    Examples:
        >>> it = {"name": "w", "predicted_rmse": 0.5, "predicted_label": "heuristic", "level": 0.9,
        ...       "error_interval": [0.1, 1.7], "equivalent_noise_sd": 0.5}
        >>> print("\\n".join(quality_lines({"items": [it]})))
          name  pred. rmse  error interval (90%)  equiv. noise sd  label
          w            0.5  [0.1, 1.7]            0.5              heuristic
    """
    its = list(out.get("items") or [])
    if not its:
        return []
    fmt = lambda x: "n/a" if x is None else f"{x:.4g}"  # noqa: E731
    pair = lambda iv: "n/a" if iv is None else f"[{iv[0]:.4g}, {iv[1]:.4g}]"  # noqa: E731
    tempered = any(it.get("interval_kind") == "tempered" for it in its)
    cols = [("pred. rmse", [fmt(it.get("predicted_rmse")) for it in its], ">"),
            (f"error interval ({its[0].get('level', 0.95):.0%})", [pair(it.get("error_interval")) for it in its], "<")]
    if any(it.get("equivalent_noise_sd") is not None for it in its):
        cols.append(("equiv. noise sd", [fmt(it.get("equivalent_noise_sd")) for it in its], "<"))
    if any(it.get("credible_interval") is not None for it in its):
        cols.append(("TEMPERED interval" if tempered else "credible interval",
                     [pair(it.get("credible_interval")) for it in its], "<"))
    cols.append(("label", [it.get("predicted_label") or "" for it in its], "<"))
    w = max([len("name")] + [len(it["name"]) for it in its])
    widths = [max([len(h)] + [len(c) for c in cells]) for h, cells, _ in cols]
    lines = ["  " + "  ".join([f"{'name':<{w}}"] + [f"{h:{a}{wd}}" for (h, _, a), wd in zip(cols, widths)])]
    for r, it in enumerate(its):
        lines.append("  " + "  ".join([f"{it['name']:<{w}}"] + [f"{cells[r]:{a}{wd}}"
                                                              for (_, cells, a), wd in zip(cols, widths)]))
    if tempered:
        settings = (out.get("method") or {}).get("settings") or {}
        beta = settings.get("inverse_temperature")
        at = f" {beta:.4g}" if isinstance(beta, (int, float)) else ""
        lines.append(f"note: the TEMPERED intervals are quantiles of a chain at inverse temperature{at}, not 1: the "
                     "spread of the tempered distribution, NOT posterior credible intervals")
    return [line.rstrip() for line in lines]


INTERVAL_NOTE = ("'interval' contains the non-private Monte Carlo estimate with the stated probability (noise only); "
                 "'total_interval' contains the chain's expected estimate with the stated probability (noise and a "
                 "data-independent bound on the Monte Carlo fluctuation, docs/release.md §4.2; null when no such "
                 "bound is proven); neither covers the sampler's bias relative to the exact posterior. Both are "
                 "clipped to the statistic's range. The Monte Carlo error estimated from the draws themselves is "
                 "not published: it is computed from the private chain. 'error_interval' is a predicted interval "
                 "for the non-private posterior quantity at the stated level (release noise, Monte Carlo error and, "
                 "where bounded, bias; 'error_interval_basis' says what it includes, docs/release.md §11); "
                 "'equivalent_noise_sd' (path, last draw) is the sd of the Gaussian noise the chain's randomness "
                 "amounts to; 'credible_interval' (quantile requests) is estimated from many draws, and "
                 "'interval_kind': 'tempered' marks a chain not at inverse temperature 1: NOT a posterior credible "
                 "interval")
