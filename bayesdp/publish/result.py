"""The result of a release: the published values and everything that justifies them; prints a short table
(``print(result)``, ``_repr_html_``), converts with :meth:`ReleaseResult.to_dict` (the JSON of ``bayesdp release
--json``) and :meth:`ReleaseResult.to_dataframe` (pandas).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..certificate import Certificate
from .statistics import ReleasedValue
import html
import math as _m

__all__ = ["ReleaseResult", "INTERVAL_NOTE"]


@dataclass(frozen=True)
class ReleaseResult:
    """One private release: the published values and everything that justifies them (JSON: :meth:`to_dict`).

    Attributes:
        values: the released values (after clamping to the statistic's range).
        names: one name per value.
        noise_scale: the noise scale per value (Laplace b, or Gaussian sigma).
        noise_variance: the noise variance per value.
        sensitivity: effective L1 (Laplace) or L2 (Gaussian) sensitivity (proven window + grid rounding).
        proven_sensitivity: the route's window before rounding.
        grid: the noise grid r.
        epsilon: the charged epsilon.
        delta: the charged delta.
        source: the certificate's source.
        certificate: the release's :class:`~bayesdp.certificate.Certificate`.
        items: one :class:`~bayesdp.publish.statistics.ReleasedValue` per value (with intervals).
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

    def _rows(self) -> list[tuple]:
        return [(it.name, it.value, it.predicted_rmse, it.predicted_label or "",
                 None if it.interval is None else it.interval[0], None if it.interval is None else it.interval[1])
                for it in self.items]

    def _title(self) -> str:
        method = (self.extra.get("method") or {}) if isinstance(self.extra.get("method"), Mapping) else {}
        name = method.get("method") or self.extra.get("method") or self.noise_mechanism
        head = f"release: epsilon = {self.epsilon:g}, delta = {self.delta:g} ({name}; {self.source})"
        if not self.private:
            head += "  NOT PRIVATE: an explicit rng_key made the privacy noise reproducible"
        return head

    def __str__(self) -> str:
        rows = self._rows()
        w = max([len("name")] + [len(r[0]) for r in rows])
        fmt = lambda x: "n/a" if x is None else f"{x:.4g}"  # noqa: E731
        lines = [self._title(),
                 f"  {'name':<{w}}  {'value':>11}  {'pred. rmse':>10}  {'interval (' + format(self.items[0].level, '.0%') + ')' if self.items else 'interval'}"]
        for n, v, p, lab, lo, hi in rows:
            iv = "n/a" if lo is None else f"[{lo:.4g}, {hi:.4g}]"
            lines.append(f"  {n:<{w}}  {v:>11.5g}  {fmt(p):>10}  {iv}  {lab}")
        rb = self.remaining_budget or {}
        lines.append(f"remaining budget: epsilon {rb.get('epsilon', float('nan')):.6g}, "
                     f"delta {rb.get('delta', float('nan')):.3g}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:

        head = "".join(f"<th>{h}</th>" for h in ("name", "value", "predicted rmse", "label", "interval"))
        body = "".join(
            f"<tr><td>{html.escape(n)}</td><td>{v:.5g}</td><td>{'' if p is None else format(p, '.4g')}</td>"
            f"<td>{html.escape(lab)}</td><td>{'' if lo is None else f'[{lo:.4g}, {hi:.4g}]'}</td></tr>"
            for n, v, p, lab, lo, hi in self._rows())
        return (f"<p>{html.escape(self._title())}</p><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>")

    def to_dataframe(self):
        """The released values as a pandas DataFrame, one row per value (index: the names).

        Returns:
            Columns ``value``, ``predicted_rmse``, ``predicted_label``, ``interval_low``, ``interval_high``,
            ``noise_scale``, ``level``.
        """
        import pandas as pd

        return pd.DataFrame(
            {"value": [it.value for it in self.items], "predicted_rmse": [it.predicted_rmse for it in self.items],
             "predicted_label": [it.predicted_label for it in self.items],
             "interval_low": [None if it.interval is None else it.interval[0] for it in self.items],
             "interval_high": [None if it.interval is None else it.interval[1] for it in self.items],
             "noise_scale": [it.noise_scale for it in self.items], "level": [it.level for it in self.items]},
            index=pd.Index([it.name for it in self.items], name="name"))

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
            return dp_event.GaussianDpEvent(noise_multiplier=1.0 / float(ev["mu"]))
        if ev.get("coords") == 1 and ev.get("grid") and self.delta == 0:
            return dp_event.DiscreteLaplaceDpEvent(noise_parameter=float(ev["grid"]) / float(ev["noise_scale"]),
                                                   sensitivity=int(_m.floor(float(ev["l1_sensitivity"]) /
                                                                            float(ev["grid"])) + 1))
        if self.delta == 0:
            return dp_event.RandomizedResponseDpEvent(noise_parameter=2.0 / (1.0 + _m.exp(float(self.epsilon))),
                                                      num_buckets=2)
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


INTERVAL_NOTE = ("'interval' contains the non-private Monte Carlo estimate with the stated probability (noise only); "
                 "'total_interval' contains the chain's expected estimate with the stated probability (noise and a "
                 "data-independent bound on the Monte Carlo fluctuation, docs/release.md §4.2; null when no such "
                 "bound is proven); neither covers the sampler's bias relative to the exact posterior. Both are "
                 "clipped to the statistic's range. The Monte Carlo error estimated from the draws themselves is "
                 "not published: it is computed from the private chain")
