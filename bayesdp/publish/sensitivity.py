"""Sensitivity of a Monte Carlo average by synchronous coupling, and 004 Proposition 3.10.

Two chains on neighbouring datasets D, D' (replace-one), started at the same data-independent
point and driven by the same Gaussian noise (and, for SGLD, the same minibatch indices), satisfy
``e_{k+1} <= rho e_k + gamma * drift_step_diff`` with ``e_0 = 0`` for every realisation, hence

    sup_k |X_k - X'_k| <= gamma * drift_step_diff / (1 - rho) =: coupling distance.

Routes (derivations in docs/release.md §1):

* ``coupling_strongly_convex`` — total potential U_D m-strongly convex and L-smooth
  (LITERATURE.md §7.1): ``rho = max(|1-gamma m|, |1-gamma L|)``, ``drift_step_diff = grad_diff``.
* ``coupling_strongly_convex_sgld`` — SGLD with shared batches: every minibatch potential
  ``K + (m/s) sum_{i in A} l_i`` is (mu_K + m*record_strong_convexity)-strongly convex and
  (L_K + m*record_smoothness)-smooth when each l_i is; ``drift_step_diff = (m/s) record_grad_diff``.
* ``coupling_k_plus_v`` — U_D = K + V_D, K mu_K-strongly convex and L_K-smooth, |grad V_D| <= c,
  V non-convex (004 Theorem 5.2's proof (112)-(116), with the exact factor
  ``rho_K = max(|1-gamma mu_K|, |1-gamma L_K|)``): ``drift_step_diff = 2c``, valid for gamma < 2/L_K.

An average of an L_f-Lipschitz statistic then moves by at most ``L_f * distance``, whatever the
number of steps, chains, thinning or burn-in; 004 Proposition 3.7 with ``delta~ = 0`` makes the
Laplace-noised average pure eps-DP.  004 Proposition 3.10 (user-certified concentration C,
delta~ and gamma_f) is the general route.

All distances are Euclidean, in the sampler's UNCONSTRAINED space.  Floating-point rounding of the
iterates is not covered by the coupling argument (docs/release.md §1.6).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ..certificate import Certificate
from ..curves import ApproxDP
from ..errors import AssumptionError, nonnegative, positive, positive_int, require
from ..theorems.gradient_step import contraction_factor, contraction_gap, coupling_bound
from ..exact import down, exact, mp_up, mul_up, round_up, up
from ..theorems.transfer import proposition_3_7, proposition_3_10
from ..curves import RDP
import math
import numpy as np

__all__ = ["CouplingBound", "coupling_strongly_convex", "coupling_strongly_convex_sgld", "coupling_k_plus_v",
           "best_coupling", "SensitivityRoute", "coupling_route", "concentration_route", "choose_route",
           "MonteCarloBound", "monte_carlo_bound"]

SOURCE_STRONGLY_CONVEX = "coupling (LITERATURE §7.1)"
SOURCE_SGLD = "coupling, SGLD shared batches (docs/release.md §1.3)"
SOURCE_K_PLUS_V = "coupling, K + V (004 Theorem 5.2 proof (112)-(116); docs/release.md §1.4)"


@dataclass(frozen=True)
class CouplingBound:
    """``sup_k |X_k - X'_k| <= distance`` (Euclidean, unconstrained space) for every realisation.

    Attributes:
        distance: the bound on ``sup_k |X_k - X'_k|``.
        source: the route's label (theorem and derivation).
        contraction: the per-step contraction factor rho < 1.
        step_size: gamma.
        drift_step_diff: bound on ``|Phi_D(x) - Phi_D'(x)| / step_size``.
        assumptions: the hypotheses with their values.

    Examples:
        >>> b = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> isinstance(b, CouplingBound), round(b.to_dict()["distance"], 12)      # 0.1 * 1 / (1 - 0.9)
        (True, 1.0)
    """

    distance: float
    source: str
    contraction: float        # rho
    step_size: float
    drift_step_diff: float    # bound on |Phi_D(x) - Phi_D'(x)| / step_size
    assumptions: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready form.
        """
        return {"distance": self.distance, "source": self.source, "contraction": self.contraction,
                "step_size": self.step_size, "drift_step_diff": self.drift_step_diff,
                "assumptions": dict(self.assumptions)}


def _rho(step_size: float, strong_convexity: float, smoothness: float, what: str) -> tuple[float, float]:
    """(rho, 1 - rho): the exact contraction factor (rounded up) and its gap (exact, rounded down)."""
    m = positive(f"{what}strong_convexity", strong_convexity,
                 "the coupling bound needs a strongly convex (part of the) potential")
    L = positive(f"{what}smoothness", smoothness)
    require(L >= m, f"{what}smoothness", L, f"must be >= {what}strong_convexity = {m:.6g}")
    g = positive("step_size", step_size)
    rho = contraction_factor(g, m, L)
    gap = contraction_gap(g, m, L)
    require(gap > 0.0, "step_size", g,
            f"must be < 2/{what}smoothness = {2.0 / L:.6g}: the gradient step does not contract "
            f"(rho = {rho:.6g}) and no coupling bound is proven", "lower the step size")
    return rho, gap


def coupling_strongly_convex(step_size: float, total_strong_convexity: float, total_smoothness: float,
                             grad_diff: float) -> CouplingBound:
    """Route A, ULA (LITERATURE.md §7.1): ``gamma * grad_diff / (1 - rho)``,
    ``rho = max(|1 - gamma m|, |1 - gamma L|)``; equals ``grad_diff / m`` when gamma <= 2/(m + L).

    ``grad_diff = sup_x |grad U_D(x) - grad U_D'(x)|`` over replace-one neighbours.

    Args:
        step_size: gamma > 0, below 2 / total_smoothness.
        total_strong_convexity: m > 0 of U_D for every D.
        total_smoothness: L >= m.
        grad_diff: the sup above, >= 0.

    Returns:
        a :class:`CouplingBound`.

    Raises:
        AssumptionError: a constant out of range, or the step does not contract (gamma >= 2/L).

    Examples:
        >>> b = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> round(b.contraction, 12), round(b.distance, 12)      # rho = 0.9; 0.1 * 1 / (1 - 0.9) = 1 / m
        (0.9, 1.0)
    """
    rho, gap = _rho(step_size, total_strong_convexity, total_smoothness, "total_")
    d = nonnegative("grad_diff", grad_diff)
    dist = coupling_bound(step_size, d, gap=gap)
    return CouplingBound(distance=dist, source=SOURCE_STRONGLY_CONVEX, contraction=rho, step_size=float(step_size),
                         drift_step_diff=d,
                         assumptions={"sampler": "ULA", "total_strong_convexity": float(total_strong_convexity),
                                      "total_smoothness": float(total_smoothness), "grad_diff": d,
                                      "coupling": "same start (data-independent), same Gaussian noise"})


def coupling_strongly_convex_sgld(step_size: float, strong_convexity: float, smoothness: float,
                                  record_strong_convexity: float | None, record_smoothness: float,
                                  record_grad_diff: float, data_size: int, batch_size: int,
                                  prior_v_smoothness: float = 0.0) -> CouplingBound:
    """Route A, SGLD with shared minibatches (docs/release.md §1.3).

    Gradient estimate ``grad K(x) + (m/s) sum_{i in A} grad l_i(x)``, ``|A| = s``.  Assumes K is
    ``strong_convexity``-strongly convex and ``smoothness``-smooth and every record term l_i is
    convex with ``record_strong_convexity >= 0`` and ``record_smoothness``-smooth; then every
    minibatch potential is ``(mu_K + m mu_rec)``-strongly convex and ``(L_K + m L_rec)``-smooth, and
    at the same point and batch the estimates differ by ``<= (m/s) record_grad_diff``.
    ``record_strong_convexity=None`` (record terms not known to be convex) is refused.
    A convex prior term outside K (not subsampled) adds ``prior_v_smoothness`` to the smoothness.

    Args:
        step_size: gamma > 0.
        strong_convexity: of K, > 0.
        smoothness: of K.
        record_strong_convexity: of every record term, >= 0 (``None`` is refused).
        record_smoothness: of every record term.
        record_grad_diff: ``sup_x |grad l(x; r) - grad l(x; r')|`` over records r, r'.
        data_size: m.
        batch_size: s <= m.
        prior_v_smoothness: smoothness of a convex prior term outside K.

    Returns:
        a :class:`CouplingBound`.

    Raises:
        AssumptionError: record terms not declared convex, a constant out of range, or the minibatch
            step does not contract.

    Examples:
        >>> b = coupling_strongly_convex_sgld(0.01, 1.0, 1.0, record_strong_convexity=0.0, record_smoothness=0.25,
        ...                                   record_grad_diff=2.0, data_size=100, batch_size=10)
        >>> round(b.contraction, 12), round(b.distance, 9)   # rho = 1 - 0.01; (100/10) * 2 * 0.01 / 0.01
        (0.99, 20.0)
    """
    if record_strong_convexity is None:
        raise AssumptionError("record_strong_convexity = None: the SGLD coupling bound needs every likelihood "
                              "term to be convex; use full-batch ULA or declare the record terms convex")
    mu_rec = nonnegative("record_strong_convexity", record_strong_convexity)
    L_rec = nonnegative("record_smoothness", record_smoothness)
    require(L_rec >= mu_rec, "record_smoothness", L_rec, f"must be >= record_strong_convexity = {mu_rec:.6g}")
    m = positive_int("data_size", data_size)
    s = positive_int("batch_size", batch_size)
    require(s <= m, "batch_size", s, f"must be <= data_size = {m}")
    # exact sums, rounded conservatively (strong convexity down, smoothness up)
    mu_batch = down(exact(positive("strong_convexity", strong_convexity)) + m * exact(mu_rec))
    L_batch = up(exact(positive("smoothness", smoothness)) + m * exact(L_rec)
                 + exact(nonnegative("prior_v_smoothness", prior_v_smoothness)))
    rho, gap = _rho(step_size, mu_batch, L_batch, "minibatch_")
    drec = nonnegative("record_grad_diff", record_grad_diff)
    per_step = round_up((m / s) * drec)
    dist = coupling_bound(step_size, per_step, gap=gap)
    return CouplingBound(distance=dist, source=SOURCE_SGLD, contraction=rho, step_size=float(step_size),
                         drift_step_diff=per_step,
                         assumptions={"sampler": "SGLD", "strong_convexity": float(strong_convexity),
                                      "smoothness": float(smoothness), "record_strong_convexity": mu_rec,
                                      "record_smoothness": L_rec, "record_grad_diff": drec, "data_size": m,
                                      "batch_size": s, "minibatch_strong_convexity": mu_batch,
                                      "minibatch_smoothness": L_batch,
                                      "coupling": "same start, same Gaussian noise, same minibatch indices"})


def coupling_k_plus_v(step_size: float, strong_convexity: float, smoothness: float, grad_bound: float,
                      sampler: str = "ULA") -> CouplingBound:
    """Route B: U_D = K + V_D, K ``strong_convexity``-strongly convex and ``smoothness``-smooth,
    ``sup_x |grad V_D(x)| <= grad_bound`` for every D (V may be non-convex).

    004 Theorem 5.2's proof, (112)-(116), with the exact contraction factor of the K-step:
    ``e_{k+1} <= rho_K e_k + 2 gamma c``, so ``sup_k e_k <= 2 gamma c / (1 - rho_K)`` for every
    gamma < 2/L_K (004 uses ``1 - gamma (mu - gamma L^2/2)`` >= rho_K, needing gamma < 2 mu/L^2).
    For SGLD, ``grad_bound`` must bound the minibatch estimate ``(m/s) sum_{i in A} grad v_i``
    (e.g. data_size * per-record bound); the caller passes that value.

    Args:
        step_size: gamma > 0, below 2 / smoothness.
        strong_convexity: of K, > 0.
        smoothness: of K.
        grad_bound: c, the bound on ``|grad V_D|``.
        sampler: ``"ULA"`` or ``"SGLD"`` (recorded in the assumptions).

    Returns:
        a :class:`CouplingBound`.

    Raises:
        AssumptionError: a constant out of range, or gamma >= 2 / smoothness.

    Examples:
        >>> round(coupling_k_plus_v(0.1, 1.0, 1.0, grad_bound=0.5).distance, 12)   # 2 * 0.1 * 0.5 / (1 - 0.9)
        1.0
    """
    rho, gap = _rho(step_size, strong_convexity, smoothness, "")
    c = nonnegative("grad_bound", grad_bound)
    dist = coupling_bound(step_size, 2.0 * c, gap=gap)
    return CouplingBound(distance=dist, source=SOURCE_K_PLUS_V, contraction=rho, step_size=float(step_size),
                         drift_step_diff=2.0 * c,
                         assumptions={"sampler": sampler, "strong_convexity": float(strong_convexity),
                                      "smoothness": float(smoothness), "grad_bound": c,
                                      "coupling": "same start (data-independent), same Gaussian noise"})


def best_coupling(**constants: Any) -> tuple[CouplingBound | None, list[tuple[str, str]]]:
    """Try every coupling route the given constants allow; return the smallest distance and the
    reasons of the routes that failed (route source, one-line reason).

    Keys (analyzer names): step_size, sampler ("ULA"|"SGLD"), total_strong_convexity,
    total_smoothness, grad_diff, strong_convexity, smoothness, grad_bound, record_strong_convexity,
    record_smoothness, record_grad_diff, record_grad_bound, prior_v_grad_bound, prior_v_smoothness, prior_v_convex,
    data_size, batch_size, clip_norm (any value refuses every coupling route).  ``record_strong_convexity`` (>= 0: every likelihood term convex) is not an
    analyzer constant: pass 0.0 only when per-record convexity is established, else leave it out.

    Args:
        **constants: the constants and the sampler configuration (keys above; None or missing = unknown).

    Returns:
        ``(bound or None, [(route source, reason it failed), ...])``.

    Examples:
        >>> b, failed = best_coupling(step_size=0.1, sampler="ULA", total_strong_convexity=1.0,
        ...                           total_smoothness=1.0, grad_diff=1.0)
        >>> round(b.distance, 12), b.source == SOURCE_STRONGLY_CONVEX
        (1.0, True)
    """
    sampler = str(constants.get("sampler", "ULA")).upper()
    got = lambda *ks: all(constants.get(k) is not None for k in ks)  # noqa: E731
    bounds: list[CouplingBound] = []
    failed: list[tuple[str, str]] = []

    def attempt(source: str, fn, *args):
        try:
            bounds.append(fn(*args))
        except AssumptionError as e:
            failed.append((source, str(e)))

    if constants.get("clip_norm") is not None:
        # Clipped per-record gradients are not gradients of the declared convex terms: neither the
        # contraction (routes A) nor the drift structure used here is proven for them.
        return None, [("coupling", "gradient clipping (clip_norm) is not covered by the coupling bounds; "
                                   "run without clipping or declare 004 Proposition 3.10 constants")]
    g = constants.get("step_size")
    if g is None:
        raise AssumptionError("step_size is required for a coupling bound; pass the sampler's step size")
    if sampler == "ULA":
        if got("total_strong_convexity", "total_smoothness", "grad_diff"):
            attempt(SOURCE_STRONGLY_CONVEX, coupling_strongly_convex, g, constants["total_strong_convexity"],
                    constants["total_smoothness"], constants["grad_diff"])
        else:
            failed.append((SOURCE_STRONGLY_CONVEX, "total potential not known to be strongly convex and smooth"))
    elif sampler == "SGLD":
        prior_v = constants.get("prior_v_grad_bound")
        if prior_v and (constants.get("prior_v_smoothness") is None or constants.get("prior_v_convex") is not True):
            failed.append((SOURCE_SGLD, "the prior has a term outside K (prior_v_grad_bound > 0) whose convexity "
                                        "(prior_v_convex=True) and smoothness (prior_v_smoothness) are not both "
                                        "declared; the minibatch contraction needs both"))
        elif got("strong_convexity", "smoothness", "record_smoothness", "record_grad_diff", "data_size",
                 "batch_size"):
            attempt(SOURCE_SGLD, coupling_strongly_convex_sgld, g, constants["strong_convexity"],
                    constants["smoothness"], constants.get("record_strong_convexity"),
                    constants["record_smoothness"], constants["record_grad_diff"], constants["data_size"],
                    constants["batch_size"], constants.get("prior_v_smoothness") or 0.0)
        else:
            failed.append((SOURCE_SGLD, "per-record smoothness/convexity or grad difference not known"))
    else:
        raise AssumptionError(f"sampler = {sampler!r} must be 'ULA' or 'SGLD'")
    if got("strong_convexity", "smoothness", "grad_bound"):
        c = constants["grad_bound"]
        if sampler == "SGLD":
            if not got("record_grad_bound", "data_size"):
                failed.append((SOURCE_K_PLUS_V, "SGLD needs record_grad_bound (the minibatch estimate of grad V "
                                                "is bounded by data_size * record_grad_bound, not by grad_bound)"))
                c = None
            else:
                # the minibatch estimate (m/s) sum_A grad v_i + grad V_prior is bounded by
                # data_size * record_grad_bound + prior_v_grad_bound (the analyzer's grad_bound is that sum)
                c = up(positive_int("data_size", constants["data_size"]) * exact(nonnegative(
                    "record_grad_bound", constants["record_grad_bound"])) + exact(nonnegative(
                    "prior_v_grad_bound", constants.get("prior_v_grad_bound") or 0.0)))   # rounded up
                c = max(c, nonnegative("grad_bound", constants["grad_bound"]))
        if c is not None:
            attempt(SOURCE_K_PLUS_V, coupling_k_plus_v, g, constants["strong_convexity"], constants["smoothness"], c,
                    sampler)
    else:
        failed.append((SOURCE_K_PLUS_V, "no strongly convex part K with a bounded-gradient remainder V"))
    if not bounds:
        return None, failed
    return min(bounds, key=lambda b: b.distance), failed


# ---------------------------------------------------------------------------
# Certificates for the noisy average
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SensitivityRoute:
    """One way to calibrate the Laplace noise: a window (L1 sensitivity) and the extra delta.

    Attributes:
        source: the certificate label, e.g. ``"004 Proposition 3.7 + ..."``.
        sensitivity: the L1 window eta (before grid rounding).
        coupling_delta: the delta the route adds (0 for the coupling route).
        assumptions: the hypotheses with their values.

    Examples:
        >>> route = coupling_route(coupling_k_plus_v(0.1, 1.0, 1.0, grad_bound=0.5), lipschitz=2.0)
        >>> round(route.sensitivity, 12), route.coupling_delta
        (2.0, 0.0)
    """

    source: str                 # certificate label, e.g. "004 Proposition 3.7 + coupling (LITERATURE §7.1)"
    sensitivity: float          # L1 window eta (before grid rounding)
    coupling_delta: float       # delta added by the route (0 for the coupling route)
    assumptions: Mapping[str, Any] = field(default_factory=dict)
    l2_sensitivity: float | None = None   # L2 window (Gaussian noise; coupling route only)

    def certificate(self, epsilon: float, noise_scale: float, num_coords: int, mechanism: str = "mc-estimate"
                    ) -> Certificate:
        """Certificate of ``average + Laplace(noise_scale)`` per coordinate at the route's window
        (``noise_scale`` must already include the grid rounding; see noise.laplace_release).

        Args:
            epsilon: the release's epsilon.
            noise_scale: the Laplace scale used (grid rounding included).
            num_coords: released coordinates.
            mechanism: the certificate's mechanism name.

        Returns:
            a :class:`~bayesdp.certificate.Certificate` with curve ``ApproxDP(epsilon, coupling_delta)``.

        Raises:
            AssumptionError: epsilon not > 0, or noise_scale too small for epsilon at this window.
        """
        eps = positive("epsilon", epsilon)
        base = proposition_3_7(self.sensitivity, self.coupling_delta, noise_scale=noise_scale, mechanism=mechanism)
        eps_noise = base.constants["laplace_epsilon"]
        require(eps_noise <= eps, "noise_scale", noise_scale,
                f"is too small for epsilon = {eps:.6g} at sensitivity {self.sensitivity:.6g}")
        # The released noise is a discretised Laplace (noise.laplace_release): only the (eps, delta~) point
        # is claimed (pure eps-DP when delta~ = 0); smaller eps use the region of that point (curves.ApproxDP).
        own = self.assumptions.get("route") == "sample-and-aggregate"    # no coupling: its own window only
        return replace(base, source=self.source, curve=ApproxDP(eps, self.coupling_delta),
                       assumptions={**({} if own else base.assumptions), **self.assumptions, "num_coords": num_coords},
                       constants={**base.constants, "epsilon": eps},
                       notes=("L1 sensitivity; discretised Laplace noise per coordinate (grid rounding charged "
                              "to the sensitivity)"))

    def gaussian_certificate(self, epsilon: float, delta: float, rho: float, sigma: float, l2_window: float,
                             num_coords: int, mechanism: str = "mc-estimate") -> Certificate:
        """Certificate of ``average + discrete Gaussian(sigma)`` per coordinate on a grid (noise.gaussian_release):
        ``rho``-zCDP (CKS20 Theorem 14 for every realisation of the coupled chains; the release is a mixture of
        such mechanisms with data-independent weights, docs/release.md §3.2), converted to ``(epsilon, delta)``.
        Only the coupling route (``coupling_delta = 0``) is supported.

        Args:
            epsilon: the release's epsilon.
            delta: the conversion delta.
            rho: the zCDP parameter of the noise.
            sigma: the noise scale.
            l2_window: the L2 sensitivity (grid rounding included).
            num_coords: released coordinates.
            mechanism: the certificate's mechanism name.

        Returns:
            a :class:`~bayesdp.certificate.Certificate` with curve ``RDP.linear(rho)``.

        Raises:
            AssumptionError: a route with a positive delta (004 Proposition 3.10), or ``rho`` too large for
                ``epsilon`` at ``delta``.
        """

        if self.coupling_delta != 0.0:
            raise AssumptionError(f"Gaussian noise needs the coupling route (004 Proposition 3.7 with delta~ = 0); "
                                  f"route {self.source!r} adds delta {self.coupling_delta:.3g}: use Laplace noise")
        eps = positive("epsilon", epsilon)
        curve = RDP.linear(positive("rho", rho))
        require(curve.epsilon(delta) <= eps, "noise_scale", sigma,
                f"is too small for epsilon = {eps:.6g} at delta = {delta:.3g} (rho = {rho:.6g})")
        return Certificate(mechanism=mechanism, source=f"{self.source} + CKS20 Theorem 14", curve=curve,
                           assumptions={**self.assumptions, "num_coords": num_coords, "l2_window": l2_window,
                                        "coupling_delta": 0.0},
                           constants={"noise_scale": sigma, "noise_variance": sigma * sigma, "rho": rho,
                                      "sensitivity": l2_window, "epsilon": eps, "delta": float(delta)},
                           notes=("L2 sensitivity; discretised Gaussian noise per coordinate (grid rounding sqrt(k) r "
                                  "charged to the sensitivity); rho-zCDP, converted by CKS20 Proposition 12"))

    def delta_at(self) -> float:
        """The delta this route adds to the release (``coupling_delta``).
        """
        return self.coupling_delta


def coupling_route(coupling: CouplingBound, lipschitz: float, l2_lipschitz: float | None = None) -> SensitivityRoute:
    """004 Proposition 3.7 with ``delta~ = 0``: the window is ``lipschitz * coupling.distance``.

    ``lipschitz`` is the Lipschitz constant of the statistic from (R^d, Euclidean) to (R^k, L1) in
    the sampler's unconstrained space (sqrt(k) for k coordinate means; docs/release.md §2);
    ``l2_lipschitz`` (Euclidean -> Euclidean, default: ``lipschitz``) gives the L2 window of Gaussian noise.

    Args:
        coupling: a proven :class:`CouplingBound`.
        lipschitz: of the statistic, > 0.
        l2_lipschitz: its Euclidean -> Euclidean constant, > 0 (default: ``lipschitz``).

    Returns:
        a :class:`SensitivityRoute` with delta 0.

    Raises:
        AssumptionError: lipschitz not > 0.

    Examples:
        >>> b = coupling_strongly_convex(0.1, total_strong_convexity=1.0, total_smoothness=1.0, grad_diff=1.0)
        >>> route = coupling_route(b, lipschitz=2.0, l2_lipschitz=1.0)
        >>> round(route.sensitivity, 12), round(route.l2_sensitivity, 12), route.coupling_delta     # 2 * 1, 1 * 1
        (2.0, 1.0, 0.0)
    """
    Lf = positive("lipschitz", lipschitz, "declare the statistic's Lipschitz constant")
    L2 = Lf if l2_lipschitz is None else positive("l2_lipschitz", l2_lipschitz)
    # exact products rounded up: round_up of the float product kept 0.0 where it underflowed (1e-323 * 0.03)
    eta = mul_up(Lf, coupling.distance)
    return SensitivityRoute(source=f"004 Proposition 3.7 + {coupling.source}", sensitivity=eta,
                            coupling_delta=0.0,
                            assumptions={"lipschitz": Lf, "l2_lipschitz": L2, "coupling_distance": coupling.distance,
                                         **{f"coupling_{k}": v for k, v in coupling.assumptions.items()}},
                            l2_sensitivity=mul_up(L2, coupling.distance))


def concentration_route(concentration: float, concentration_delta: float, posterior_sensitivity: float
                        ) -> SensitivityRoute:
    """004 Proposition 3.10: window ``2C + gamma_f``, delta ``2 delta~ - delta~^2``.

    The caller certifies Assumption 3.8 (``P(|avg_D - pi_D(f)| <= C) >= 1 - delta~`` for every D,
    in the L1 norm for vectors) and Assumption 3.9 (``|pi_D(f) - pi_D'(f)| <= gamma_f``); the
    vector form is the same proof with the L1 norm (docs/release.md §2.6).  Chains on D and D'
    need not be coupled.

    Args:
        concentration: C of Assumption 3.8.
        concentration_delta: delta~ of Assumption 3.8, in [0, 1).
        posterior_sensitivity: gamma_f of Assumption 3.9.

    Returns:
        a :class:`SensitivityRoute`.

    Raises:
        AssumptionError: a constant out of range.

    Examples:
        >>> r = concentration_route(0.1, 1e-6, 0.05)
        >>> round(r.sensitivity, 12), r.coupling_delta == 2e-6 - 1e-12        # 2 C + gamma_f
        (0.25, True)
    """
    probe = proposition_3_10(concentration, concentration_delta, posterior_sensitivity, epsilon=1.0)
    return SensitivityRoute(source="004 Proposition 3.10", sensitivity=probe.constants["sensitivity"],
                            coupling_delta=probe.constants["delta_out"],
                            assumptions=dict(probe.assumptions))


def choose_route(routes: list[SensitivityRoute], max_delta: float | None = None) -> SensitivityRoute:
    """The route with the smallest window (hence the smallest noise at any epsilon); ties by delta.

    Routes whose delta exceeds ``max_delta`` are skipped (``None``: no limit).

    Args:
        routes: candidate routes.
        max_delta: the largest delta a route may add.

    Returns:
        the chosen :class:`SensitivityRoute`.

    Raises:
        AssumptionError: no route, or none within ``max_delta``.

    Examples:
        >>> a, b = concentration_route(0.1, 1e-6, 0.05), coupling_route(coupling_k_plus_v(0.1, 1.0, 1.0, 0.5), 1.0)
        >>> choose_route([a, b]).source == b.source, choose_route([a, b], max_delta=0.0).coupling_delta
        (False, 0.0)
    """
    ok = [r for r in routes if max_delta is None or r.coupling_delta <= max_delta]
    if not ok:
        if routes:
            raise AssumptionError(f"max_delta = {max_delta!r} is below the delta of every sensitivity route "
                                  f"({', '.join(f'{r.source}: {r.coupling_delta:.3g}' for r in routes)}); "
                                  "raise the delta budget or provide a coupling bound")
        raise AssumptionError("no sensitivity route: the sampler configuration has no proven coupling bound and "
                              "no concentration constants (004 Proposition 3.10) were given")
    return min(ok, key=lambda r: (r.sensitivity, r.coupling_delta))


# ---------------------------------------------------------------------------
# Monte Carlo fluctuation of the average, from the same contraction (data independent)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MonteCarloBound:
    """``P(|F - E F| >= t) <= 2 exp(-t^2 / (2 (L lipschitz_noise)^2))`` for the average F of an L-Lipschitz
    function of the kept draws (docs/release.md §4.2).

    Attributes:
        lipschitz_noise: the Lipschitz constant of the average of a 1-Lipschitz function of the draws with
            respect to the Euclidean norm of the chains' standard Gaussian innovations.
        source: the derivation.
        assumptions: the chain's design and the contraction it uses.

    Examples:
        >>> mc = MonteCarloBound(0.1, "an example")
        >>> round(mc.half_width(2.0, 0.05), 6)               # 2 * 0.1 * sqrt(2 log(2 / 0.05))
        0.543241
    """

    lipschitz_noise: float
    source: str
    assumptions: Mapping[str, Any] = field(default_factory=dict)

    def half_width(self, lipschitz: float, alpha: float) -> float:
        """``t`` with ``2 exp(-t^2 / (2 (lipschitz * lipschitz_noise)^2)) = alpha``, rounded up.

        Args:
            lipschitz: the statistic's Euclidean constant.
            alpha: the tail probability, in (0, 1).

        Returns:
            The half-width t.

        Raises:
            AssumptionError: alpha not in (0, 1).

        Examples:
            >>> round(MonteCarloBound(0.1, "x").half_width(1.0, 0.05), 6)       # 0.1 sqrt(2 log 40)
            0.27162
        """

        a = float(alpha)
        require(0.0 < a < 1.0, "alpha", a, "must be in (0, 1)")
        t = lipschitz * self.lipschitz_noise * math.sqrt(2.0 * math.log(2.0 / a)) * (1 + 1e-12)
        if lipschitz > 0 and self.lipschitz_noise > 0 and not 1e-290 < t < 1e290:
            import mpmath                    # the float product under- or overflowed (0.0 at 1e-200 * 1e-200)

            with mpmath.workdps(40):
                return mp_up(mpmath.mpf(lipschitz) * mpmath.mpf(self.lipschitz_noise)
                             * mpmath.sqrt(2 * mpmath.log(2 / mpmath.mpf(a))))
        return round_up(t)

    def to_dict(self) -> dict:
        """JSON-ready form (``monte_carlo`` of a release)."""
        return {"lipschitz_noise": self.lipschitz_noise, "source": self.source, "assumptions": dict(self.assumptions)}


MC_SOURCE = ("Gaussian concentration of a Lipschitz function of the chain's Gaussian innovations (Tsirelson-"
             "Ibragimov-Sudakov; docs/release.md §4.2), with the contraction of LITERATURE §7.1")


def monte_carlo_bound(coupling: CouplingBound | None, *, inverse_temperature: float, num_steps: int, burn_in: int,
                      thinning: int = 1, num_chains: int = 1) -> MonteCarloBound | None:
    """A data-independent bound on the Monte Carlo fluctuation of the average of the kept draws of a full-batch
    ULA chain whose gradient step contracts by ``rho`` for every dataset (the coupling route of LITERATURE §7.1);
    None for any other route (SGLD: the minibatches are a second source of randomness; K + V: the step does not
    contract).

    Derivation (docs/release.md §4.2): the chains start at a fixed point and ``X_j = Phi(X_{j-1}) + s xi_j``,
    ``s = sqrt(2 gamma / beta)``.  Changing the innovations by ``delta_j`` moves ``X_k`` by at most
    ``s sum_{j <= k} rho^(k-j) |delta_j|``, so the average over the kept draws of an L-Lipschitz f moves by at
    most ``(L s / (c N)) sum_j w_j |delta_j| <= (L s / (c N)) sqrt(c sum_j w_j^2) |delta|_2`` with
    ``w_j = sum_{kept k >= j} rho^(k-j)`` (c chains, N kept draws each).  The Gaussian concentration inequality
    for Lipschitz functions of a standard Gaussian vector then gives the tail bound of :class:`MonteCarloBound`.

    Args:
        coupling: the release's coupling bound (its ``contraction`` and ``step_size``).
        inverse_temperature: beta of the chain.
        num_steps: steps per chain n.
        burn_in: kept draws dropped per chain.
        thinning: every ``thinning``-th step is kept.
        num_chains: chains averaged together.

    Returns:
        a :class:`MonteCarloBound`, or None when the route has no such bound.

    Examples:
        >>> b = coupling_strongly_convex(0.5, 1.0, 1.0, grad_diff=1.0)          # rho = 1/2, s = 1
        >>> mc = monte_carlo_bound(b, inverse_temperature=1.0, num_steps=1, burn_in=0)
        >>> round(mc.lipschitz_noise, 6)                     # one draw X_1 = s xi_1: L = s = 1 (rounded up)
        1.0
    """


    if coupling is None or coupling.source != SOURCE_STRONGLY_CONVEX:
        return None
    beta = positive("inverse_temperature", inverse_temperature)
    n = positive_int("num_steps", num_steps)
    t = positive_int("thinning", thinning)
    c = positive_int("num_chains", num_chains)
    b = int(nonnegative("burn_in", burn_in))
    kept = np.arange((b + 1) * t, (n // t) * t + 1, t)          # kept steps X_t, X_2t, ... after the burn-in
    require(kept.size >= 1, "burn_in", b, f"must leave at least one kept draw of the {n // t} per chain")
    rho = float(coupling.contraction)
    N = int(kept.size)
    # w_j = 1[j kept] + rho w_{j+1} (j = 1..last kept step), solved in closed form: at the i-th kept step
    # W_i = sum_{l=0}^{N-i} rho^(t l); at u steps before it, rho^u W_i (u < t, or u < k_1 before the first)
    W = np.cumsum(rho ** (t * np.arange(N, dtype=float)))[::-1]
    g = np.cumsum(rho ** (2.0 * np.arange(int(kept[0]), dtype=float)))    # g[K - 1] = sum_{u<K} rho^(2u)
    sum_w2 = float(W[0] ** 2 * g[-1] + np.sum(W[1:] ** 2) * g[t - 1])
    # relative error of the float sums above: each pow within 8 ulps, sequential sums of N and kept[0] nonnegative
    # terms within (N - 1) and (kept[0] - 1) ulps, squares and products (2.3e-16 is two ulps); the fixed 1e-12 alone
    # was beaten by the cumulative sum at N = 1e7 kept draws (1.1e-12 below the exact value)
    rel = 1e-12 + 2.3e-16 * (N + int(kept[0]) + 20)
    gamma = float(coupling.step_size)
    a = math.sqrt(c * sum_w2) / (c * N)                      # in [1/(sqrt(c) N), ~N sqrt(kept[0])]: a normal float
    s2 = 2.0 * gamma / beta
    lip = s2 and math.sqrt(s2) * a * (1 + rel)
    if not 1e-290 < lip < 1e290 or not s2 >= 2.2250738585072014e-308:
        # 2 gamma / beta or the product under- or overflows (a subnormal step or beta = 1e308 lost digits;
        # 0.0 was returned for a positive bound): the same product in 40 digits
        import mpmath

        with mpmath.workdps(40):
            lip = mp_up(mpmath.sqrt(2 * mpmath.mpf(gamma) / mpmath.mpf(beta)) * mpmath.mpf(a) * (1 + rel))
    else:
        lip = round_up(lip)
    return MonteCarloBound(lipschitz_noise=lip, source=MC_SOURCE,
                           assumptions={"contraction": rho, "step_size": float(coupling.step_size),
                                        "inverse_temperature": beta, "num_steps": n, "burn_in": b, "thinning": t,
                                        "num_chains": c, "kept_draws_per_chain": N,
                                        "start": "a data-independent fixed point (the same for every chain)"})
