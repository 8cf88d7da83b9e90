"""The result of an audit and the neighbour check shared by the built-in benchmark and the model audits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..errors import AssumptionError
from .stats import AuditBounds

__all__ = ["AuditReport", "check_neighbours"]


@dataclass(frozen=True)
class AuditReport:
    """Result of [`audit`][bayesdp.audit.audit] or [`audit_model`][bayesdp.audit.audit_model]: empirical lower
    bounds next to the certificate.

    Attributes:
        mechanism: what was audited.
        bounds: the lower bounds ([`AuditBounds`][bayesdp.audit.stats.AuditBounds]).
        delta: the delta of the comparison.
        certified_epsilon: the certificate's epsilon at ``delta``.
        certified_mu: the certificate's GDP mu, if it is GDP.
        source: the certificate's source.
        exact_mu: the benchmark's exact mu where known.
        parameters: the configuration.
        benchmark: what ran (the linear-quadratic benchmark or the model).

    Examples:
        >>> from bayesdp.audit import audit
        >>> rep = audit("posterior", strong_convexity=1.0, grad_bound=0.5, runs=5_000)
        >>> rep.passed, rep.violations, rep.source
        (True, [], 'Gopi-Lee-Liu 2022 (posterior GDP)')
        >>> rep.bounds.mu_lower_bound <= rep.exact_mu <= rep.certified_mu     # lower bound <= exact <= certified
        True
        >>> print(rep.table().splitlines()[-1])
          PASSED: lower bounds stay below the certificate
    """
    mechanism: str
    bounds: AuditBounds
    delta: float
    certified_epsilon: float
    certified_mu: float | None
    source: str
    exact_mu: float | None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    benchmark: str = "linear-quadratic benchmark"

    @property
    def violations(self) -> list[str]:
        """Lower bounds that exceed the certificate (each one a bug in the math or the sampler).

        Examples:
            >>> from bayesdp.audit import audit
            >>> rep = audit("posterior", strong_convexity=1.0, grad_bound=0.5, runs=5_000)
            >>> rep.violations
            []
        """
        out = []
        if self.bounds.epsilon_lower_bound > self.certified_epsilon * (1 + 1e-9):
            out.append(f"Clopper-Pearson epsilon lower bound {self.bounds.epsilon_lower_bound:.6g} exceeds the "
                       f"certified epsilon {self.certified_epsilon:.6g}")
        if self.certified_mu is not None and self.bounds.mu_lower_bound > self.certified_mu * (1 + 1e-9):
            out.append(f"GDP lower bound mu_LB = {self.bounds.mu_lower_bound:.6g} exceeds the certified "
                       f"mu = {self.certified_mu:.6g}")
        return out

    @property
    def passed(self) -> bool:
        """``True`` when no lower bound exceeds the certificate.

        Examples:
            >>> from bayesdp.audit import audit
            >>> rep = audit("posterior", strong_convexity=1.0, grad_bound=0.5, runs=5_000)
            >>> rep.passed
            True
        """
        return not self.violations

    def to_dict(self) -> dict:
        """JSON form of ``bayesdp audit --json``.

        Returns:
            the configuration, the certificate, the lower bounds, ``passed`` and ``violations``.

        Examples:
            >>> from bayesdp.audit import audit
            >>> rep = audit("posterior", strong_convexity=1.0, grad_bound=0.5, runs=5_000)
            >>> d = rep.to_dict()
            >>> d["certificate_source"], d["passed"], d["runs"]
            ('Gopi-Lee-Liu 2022 (posterior GDP)', True, 5000)
        """
        b = self.bounds
        return {
            "mechanism": self.mechanism, "benchmark": self.benchmark, "parameters": dict(self.parameters),
            "delta": self.delta, "runs": b.runs, "confidence": b.confidence,
            "certified_epsilon": self.certified_epsilon, "certified_mu": self.certified_mu,
            "certificate_source": self.source,
            "epsilon_lower_bound": b.epsilon_lower_bound, "mu_lower_bound": b.mu_lower_bound,
            "epsilon_from_mu_lower_bound": b.epsilon_from_mu, "exact_mu": self.exact_mu,
            "threshold": b.threshold, "fpr_upper": b.fpr_upper, "fnr_upper": b.fnr_upper,
            "thresholds_scanned": b.thresholds_scanned, "passed": self.passed, "violations": self.violations,
        }

    def table(self) -> str:
        """The readable report of ``bayesdp audit``.

        Returns:
            the report, one line per bound.

        Examples:
            >>> from bayesdp.audit import audit
            >>> rep = audit("posterior", strong_convexity=1.0, grad_bound=0.5, runs=5_000)
            >>> print(rep.table().splitlines()[0])
            audit of posterior on the linear-quadratic benchmark (5000 runs per dataset, confidence 0.95)
        """
        b = self.bounds
        lines = [
            f"audit of {self.mechanism} on the {self.benchmark} ({b.runs} runs per dataset, "
            f"confidence {b.confidence:g})",
            f"  certified epsilon at delta={self.delta:g}: {self.certified_epsilon:.6g}   ({self.source})",
            f"  Clopper-Pearson epsilon lower bound:      {b.epsilon_lower_bound:.6g}",
            f"  GDP lower bound mu_LB:                    {b.mu_lower_bound:.6g}"
            + (f"   (certified mu {self.certified_mu:.6g})" if self.certified_mu is not None else ""),
        ]
        if self.mechanism != "release":  # a Laplace release's trade-off curve is not Gaussian
            lines.append(f"  epsilon of mu_LB at delta:                {b.epsilon_from_mu:.6g}  (if the trade-off is "
                         "Gaussian)")
        if self.exact_mu is not None:
            lines.append(f"  exact mu of this benchmark:               {self.exact_mu:.6g}")
        if "exact_epsilon" in self.parameters:
            lines.append(f"  exact epsilon of this benchmark:          {self.parameters['exact_epsilon']:.6g}")
        lines.append("  PASSED: lower bounds stay below the certificate" if self.passed
                     else "  FAILED: " + "; ".join(self.violations))
        return "\n".join(lines)


def check_neighbours(data: Mapping[str, Any], data_prime: Mapping[str, Any], relation: str = "replace-one") -> int:
    """Validate that two datasets are neighbours; returns the index of the differing record
    (replace-one) or of the removed record (add-remove, `data_prime` is the smaller).

    Args:
        data: the dataset D, ``{argument: array}`` with records along axis 0.
        data_prime: the dataset D'.
        relation: ``"replace-one"`` or ``"add-remove"``.

    Returns:
        the index of the differing (or removed) record.

    Raises:
        AssumptionError: the datasets are not neighbours under ``relation`` (the message says how).

    Examples:
        >>> import numpy as np
        >>> X = np.zeros((3, 2)); Xp = X.copy(); Xp[1, 0] = 1.0
        >>> check_neighbours({"X": X}, {"X": Xp})
        1
    """
    if set(data) != set(data_prime):
        raise AssumptionError(f"the datasets have different arguments: {sorted(data)} vs {sorted(data_prime)}")
    if relation not in ("replace-one", "add-remove"):
        raise AssumptionError(f"relation = {relation!r} must be 'replace-one' or 'add-remove'")
    arrays = {k: (np.asarray(data[k]), np.asarray(data_prime[k])) for k in data}
    sizes = {k: (a.shape[0] if a.ndim else None, b.shape[0] if b.ndim else None) for k, (a, b) in arrays.items()}
    n = {s[0] for s in sizes.values()}
    n_p = {s[1] for s in sizes.values()}
    if len(n) != 1 or len(n_p) != 1:
        raise AssumptionError(f"per-record arguments disagree on the number of records: {sizes}")
    n, n_p = n.pop(), n_p.pop()
    if relation == "replace-one":
        if n != n_p:
            raise AssumptionError(f"replace-one neighbours must have the same size; got {n} and {n_p} records")
        diff = np.zeros(n, dtype=bool)
        for a, b in arrays.values():
            if a.shape != b.shape:
                raise AssumptionError(f"record shapes differ: {a.shape} vs {b.shape}")
            diff |= (a != b).reshape(n, -1).any(axis=1)
        k = int(diff.sum())
        if k > 1:
            raise AssumptionError(f"the datasets differ in {k} records; replace-one neighbours differ in exactly one")
        if k == 0:
            raise AssumptionError("the datasets are identical; neighbours must differ in one record")
        return int(np.flatnonzero(diff)[0])
    if n != n_p + 1:
        raise AssumptionError(f"add-remove neighbours differ by one record; got {n} and {n_p} records")
    for i in range(n):
        if all(np.array_equal(np.delete(a, i, axis=0), b) for a, b in arrays.values()):
            return i
    raise AssumptionError("removing any single record of the first dataset does not give the second")
