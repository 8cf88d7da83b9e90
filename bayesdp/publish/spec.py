"""What a release asks for: a statistic object carrying its own options and a frozen :class:`ReleaseSpec`,
checked once (:meth:`ReleaseSpec.check`) before anything is analysed, run or charged.

The command line and Python build the same spec (``bayesdp release`` turns its flags into one) and call the same
engine (:mod:`bayesdp.publish.engine`), so they cannot disagree.

Statistics (every one is a function of the CONSTRAINED samples, in Python and on the command line alike):

* :class:`Mean` (``sites``, ``coords``), :class:`Median`, :class:`Quantiles` (levels ``q``),
  :class:`Probability` (``P(theta > threshold)`` smoothed by a ramp of ``width``): constants derived;
* :class:`Function`: ``fn(samples) -> array`` over one draw's samples dict, with its declared ``lipschitz``
  (Euclidean norm of the samples -> L1 norm of the output; needed by the coupling release only).

The strings ``"mean"``, ``"median"`` are accepted for :class:`Mean` and :class:`Median`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import AssumptionError, check_finite, positive, positive_int, require
from .statistics import (SiteSpec, Statistic, check_range, coordinate_means, coordinate_quantiles,
                         exceedance_probabilities, function_mean, quantile_levels)

__all__ = ["Mean", "Median", "Quantiles", "Probability", "Function", "ReleaseSpec", "as_statistic", "check_level",
           "check_noise", "site_specs", "METHODS", "NOISES"]

#: release methods: ``auto`` (the smallest predicted error among the methods that apply to the source)
METHODS = ("auto", "coupling", "path", "final", "sample-aggregate")
NOISES = ("auto", "laplace", "gaussian")
REAL_SUPPORTS = ("real()", "real")


def check_level(level: float) -> float:
    """The interval level, in (0, 1): checked before anything is drawn.

    Args:
        level: the interval level.

    Returns:
        ``level`` as a float.

    Raises:
        AssumptionError: not a finite number in (0, 1).

    Examples:
        >>> check_level(0.9)
        0.9
        >>> check_level(95)
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: level = 95 must be in (0, 1); pass e.g. 0.95
    """
    x = check_finite("level", level)
    if not 0.0 < x < 1.0:
        raise AssumptionError(f"level = {level!r} must be in (0, 1); pass e.g. 0.95")
    return x


def check_noise(noise: str, delta: Any) -> float:
    """``noise`` in :data:`NOISES` and ``delta`` in [0, 1); Gaussian noise with ``delta = 0`` is refused.

    Args:
        noise: ``"auto"``, ``"laplace"`` or ``"gaussian"``.
        delta: the release's delta.

    Returns:
        ``delta`` as a float.

    Raises:
        AssumptionError: an unknown noise, a delta outside [0, 1), or Gaussian noise with delta 0.

    Examples:
        >>> check_noise("auto", 1e-6)
        1e-06
        >>> check_noise("gaussian", 0)
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: delta = 0 with noise = 'gaussian': Gaussian noise is not pure epsilon-DP; pass delta > 0 (e.g. --delta 1e-6) or use --noise laplace
    """
    if noise not in NOISES:
        raise AssumptionError(f"noise = {noise!r} must be one of {', '.join(NOISES)}")
    try:
        d = float(delta)
    except (TypeError, ValueError):
        raise AssumptionError(f"delta = {delta!r} must be a number in [0, 1)") from None
    if not 0.0 <= d < 1.0:
        raise AssumptionError(f"delta = {delta!r} must be in [0, 1); pass e.g. 1e-6 (Gaussian noise) or 0 (Laplace)")
    if noise == "gaussian" and d == 0.0:
        raise AssumptionError("delta = 0 with noise = 'gaussian': Gaussian noise is not pure epsilon-DP; pass "
                              "delta > 0 (e.g. --delta 1e-6) or use --noise laplace")
    return d


def site_specs(potential, analysis) -> list[SiteSpec]:
    """The latent sites of ``potential`` (its flattening order) as :class:`SiteSpec`; a site whose support (from
    the analysis) is not the real line is ``constrained``.

    Args:
        potential: anything with ``sites`` (objects with ``name`` and ``size``).
        analysis: the model's analysis (its ``latent_sites``), or None (every site real).

    Returns:
        One :class:`SiteSpec` per latent site.

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> an = NS(latent_sites=[("w", (2,), "real"), ("s", (), "positive")])
        >>> [(s.name, s.size, s.constrained) for s in site_specs(NS(sites=[NS(name="w", size=2), NS(name="s", size=1)]), an)]
        [('w', 2, False), ('s', 1, True)]
    """
    support = {} if analysis is None else {n: sup for n, _, sup in analysis.latent_sites}
    return [SiteSpec(s.name, int(s.size), constrained=support.get(s.name, "real") not in REAL_SUPPORTS)
            for s in potential.sites]


def _sites(sites) -> tuple[str, ...] | None:
    if sites is None:
        return None
    if isinstance(sites, str):
        sites = [sites]
    out = tuple(str(s) for s in sites)
    require(len(out) > 0, "sites", list(out), "must name at least one latent site", "pass e.g. sites=['w']")
    return out


@dataclass(frozen=True)
class Mean:
    """Posterior means of the coordinates of ``sites`` (default: every site), or of the named ``coords``
    (e.g. ``("w[0]", "w[3]")``).

    Args:
        sites: the latent sites (default: all).
        coords: named coordinates of real-support sites instead.

    Examples:
        >>> Mean(sites=["w"]).sites
        ('w',)
    """

    sites: Sequence[str] | None = None
    coords: Sequence[str] | None = None
    needs_lipschitz = False

    def __post_init__(self):
        object.__setattr__(self, "sites", _sites(self.sites))
        if self.coords is not None:
            object.__setattr__(self, "coords", tuple(c.strip() for c in self.coords if c.strip()))
            require(len(self.coords) > 0, "coords", list(self.coords), "must name at least one coordinate",
                    "pass e.g. coords=['w[0]']")

    def build(self, potential, analysis) -> Statistic:
        """The :class:`~bayesdp.publish.statistics.Statistic` for the model's sites."""
        from .statistics import coordinate_subset_means

        specs = site_specs(potential, analysis)
        if self.coords is not None:
            return coordinate_subset_means(specs, self.coords)
        return coordinate_means(specs, select=list(self.sites) if self.sites else None)


@dataclass(frozen=True)
class Quantiles:
    """Posterior quantiles at levels ``q`` of every coordinate of the real-support ``sites``.

    Args:
        q: levels in (0, 1).
        sites: the latent sites (default: all real-support sites).

    Raises:
        AssumptionError: a level outside (0, 1) or repeated.

    Examples:
        >>> Quantiles((0.05, 0.95)).q
        (0.05, 0.95)
    """

    q: Sequence[float]
    sites: Sequence[str] | None = None
    needs_lipschitz = False

    def __post_init__(self):
        object.__setattr__(self, "q", tuple(quantile_levels(list(self.q))))
        object.__setattr__(self, "sites", _sites(self.sites))

    def build(self, potential, analysis) -> Statistic:
        """The :class:`~bayesdp.publish.statistics.Statistic` for the model's sites."""
        return coordinate_quantiles(site_specs(potential, analysis), self.q,
                                    list(self.sites) if self.sites else None)


@dataclass(frozen=True)
class Median(Quantiles):
    """Posterior medians of every coordinate of the real-support ``sites``.

    Examples:
        >>> Median().q
        (0.5,)
    """

    q: Sequence[float] = (0.5,)
    sites: Sequence[str] | None = None


@dataclass(frozen=True)
class Probability:
    """Smoothed posterior probabilities ``P(theta_j > threshold)`` (a ramp of ``width``) of the coordinates of
    the real-support ``sites``; range (0, 1).

    Args:
        threshold: t, finite.
        width: w > 0 (the noise grows like 1/w).
        sites: the latent sites (default: all real-support sites).

    Raises:
        AssumptionError: a non-finite threshold or a width not > 0.

    Examples:
        >>> Probability(0.0, 0.5).width
        0.5
    """

    threshold: float
    width: float
    sites: Sequence[str] | None = None
    needs_lipschitz = False

    def __post_init__(self):
        object.__setattr__(self, "threshold", check_finite("threshold", self.threshold))
        object.__setattr__(self, "width", positive("width", self.width, "pass a positive ramp width, e.g. 0.1"))
        object.__setattr__(self, "sites", _sites(self.sites))

    def build(self, potential, analysis) -> Statistic:
        """The :class:`~bayesdp.publish.statistics.Statistic` for the model's sites."""
        return exceedance_probabilities(site_specs(potential, analysis), self.threshold, self.width,
                                        list(self.sites) if self.sites else None)


@dataclass(frozen=True)
class Function:
    """The posterior mean of ``fn(samples)``: ``samples`` is ONE draw's dict of latent sites in the constrained
    space (as :meth:`PrivateMCMC.get_samples` shows them), the output a vector.

    Args:
        fn: the function.
        lipschitz: its declared constant, Euclidean norm of the samples -> L1 norm of the output (needed by the
            coupling release only; path, last-draw and sample-and-aggregate releases need none).
        names: one name per output value (default ``f[0]``, ...).
        l2_lipschitz: its declared Euclidean -> Euclidean constant (Gaussian noise; default ``lipschitz``).
        description: one line for reports.

    Raises:
        AssumptionError: ``fn`` not callable, or a constant not > 0.

    Examples:
        >>> Function(lambda s: s["w"][:1], lipschitz=1.0, names=["w0"]).names
        ('w0',)
    """

    fn: Callable
    lipschitz: float | None = None
    names: Sequence[str] | None = None
    l2_lipschitz: float | None = None
    description: str = "posterior mean of a user statistic of the samples"

    def __post_init__(self):
        if not callable(self.fn):
            raise AssumptionError(f"Function(fn = {self.fn!r}): fn must be callable samples -> array")
        if self.lipschitz is not None:
            object.__setattr__(self, "lipschitz", positive("lipschitz", self.lipschitz,
                                                           "declare a positive Lipschitz constant"))
        if self.l2_lipschitz is not None:
            object.__setattr__(self, "l2_lipschitz", positive("l2_lipschitz", self.l2_lipschitz,
                                                              "declare a positive Lipschitz constant"))
        if self.names is not None:
            object.__setattr__(self, "names", tuple(str(n) for n in self.names))

    @property
    def needs_lipschitz(self) -> bool:
        """Always False here: whether a constant is needed depends on the method (coupling needs one)."""
        return False

    def build(self, potential, analysis) -> Statistic:
        """The :class:`~bayesdp.publish.statistics.Statistic` of the unconstrained draws (one draw at a time).

        Raises:
            AssumptionError: a site without real support (a constant of the constrained samples would not bound
                the change of the sampler's unconstrained coordinates), or a function that fails on a draw.
        """
        specs = site_specs(potential, analysis)
        if self.lipschitz is not None:
            bad = [s.name for s in specs if s.constrained]
            if bad:
                raise AssumptionError(f"site '{bad[0]}' has constrained support: a Lipschitz constant in the "
                                      "constrained space does not bound the change in the sampler's (unconstrained) "
                                      "coordinates; use a statistic of real-supported sites")
        fn, pot = self.fn, potential

        def one(z: np.ndarray) -> np.ndarray:
            samples = {k: np.asarray(v) for k, v in pot.unflatten(np.asarray(z, np.float32)).items()}
            return np.atleast_1d(np.asarray(fn(samples), dtype=np.float64)).ravel()

        def many(z: np.ndarray) -> np.ndarray:     # (num_draws, dim) -> (num_draws, k)
            return np.stack([one(row) for row in np.atleast_2d(z)])

        try:
            probe = one(np.zeros(pot.dim))
        except AssumptionError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's function, reported in one line
            raise AssumptionError(f"statistic {self.description!r} failed on a draw ({type(exc).__name__}: {exc}); "
                                  "fix the function") from None
        names = self.names or tuple(f"f[{i}]" for i in range(probe.size))
        if self.lipschitz is None:
            return Statistic(names=tuple(names), fn=many, lipschitz=math.inf, description=self.description,
                             lipschitz_source="not declared (path, last-draw and sample-and-aggregate need none)")
        return function_mean(many, self.lipschitz, names, description=self.description,
                             l2_lipschitz=self.l2_lipschitz)


STATISTIC_NAMES = ("mean", "median")


def as_statistic(statistic: Any):
    """A statistic object from what a user passes: one of the classes above, a prebuilt
    :class:`~bayesdp.publish.statistics.Statistic`, ``"mean"`` or ``"median"``, or a callable (a
    :class:`Function` without a declared constant).

    Args:
        statistic: what the user passed.

    Returns:
        The statistic object.

    Raises:
        AssumptionError: an unknown name (``"quantiles"`` and ``"probability"`` need their options: pass
            :class:`Quantiles` or :class:`Probability`).

    Examples:
        >>> as_statistic("mean")
        Mean(sites=None, coords=None)
        >>> as_statistic("quantiles")
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: statistic = 'quantiles' needs its options: pass bayesdp.Quantiles(q=(0.05, 0.5, 0.95)) or bayesdp.Probability(threshold, width)
    """
    if isinstance(statistic, (Mean, Quantiles, Probability, Function, Statistic)):
        return statistic
    if isinstance(statistic, str):
        if statistic == "mean":
            return Mean()
        if statistic == "median":
            return Median()
        if statistic in ("quantiles", "probability"):
            raise AssumptionError(f"statistic = {statistic!r} needs its options: pass bayesdp.Quantiles(q=(0.05, "
                                  "0.5, 0.95)) or bayesdp.Probability(threshold, width)")
        raise AssumptionError(f"statistic = {statistic!r} must be 'mean', 'median', a statistic object (Mean, "
                              "Quantiles, Probability, Function) or a callable over the samples dict")
    if callable(statistic):
        return Function(statistic)
    raise AssumptionError(f"statistic = {statistic!r} must be 'mean', 'median', a statistic object (Mean, Quantiles, "
                          "Probability, Function) or a callable over the samples dict")


def build_statistic(statistic, potential, analysis, value_range=None) -> Statistic:
    """The :class:`~bayesdp.publish.statistics.Statistic` of a statistic object for the model's sites, with a
    declared range intersected.

    Args:
        statistic: a statistic object (:func:`as_statistic`).
        potential: the model's potential (its ``sites``, ``dim`` and ``unflatten``).
        analysis: the model's analysis.
        value_range: a declared range, or None.

    Returns:
        The statistic, checked on a zero draw.

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> pot = NS(sites=[NS(name="w", size=2)], dim=2)
        >>> build_statistic(Mean(), pot, None, (-1, 1)).range
        (-1.0, 1.0)
    """
    stat = statistic if isinstance(statistic, Statistic) else statistic.build(potential, analysis)
    stat = stat.with_range(value_range)
    stat.check(potential.dim)
    return stat


@dataclass(frozen=True)
class ReleaseSpec:
    """Everything a release asks for, checked once by :meth:`check` before anything is charged.

    Attributes:
        statistic: a statistic object, ``"mean"`` / ``"median"`` or a callable (see :func:`as_statistic`).
        epsilon: the release's epsilon (> 0).
        delta: its delta (0: pure epsilon-DP, Laplace noise and the coupling release only).
        noise: ``"auto"``, ``"laplace"`` or ``"gaussian"`` (coupling and sample-and-aggregate).
        method: one of :data:`METHODS`.
        range: the public range ``(a, b)`` of every released value (post-processing clamp; sample-and-aggregate
            needs it).
        level: the level of the intervals.
        burn_in: draws dropped per chain (default: half of the kept draws).
        num_steps: steps per chain of a chain run here (default: the method's rule, the same for CLI and Python).
        num_chains: chains run here (default 1).
        thinning: keep every ``thinning``-th draw (coupling).
        chunks: sample-and-aggregate's number of chunks (default: docs/release.md §7.2).
        partition: sample-and-aggregate's chunks, ``"random"`` (CSPRNG permutation) or ``"index"``.
        max_delta: refuse sensitivity routes with a larger delta (coupling).
        concentration: user-certified 004 Proposition 3.10 constants ``{"concentration", "concentration_delta",
            "posterior_sensitivity"}`` (coupling).
        max_steps: the largest number of steps a last-draw plan may use.

    Examples:
        >>> spec = ReleaseSpec("mean", epsilon=1.0, delta=1e-6).check()
        >>> spec.statistic, spec.method, spec.level
        (Mean(sites=None, coords=None), 'auto', 0.95)
        >>> ReleaseSpec("mean", epsilon=1.0, method="path").check()
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: delta = 0.0 with method = 'path': the chain's Gaussian steps are not pure epsilon-DP; pass delta in (0, 1), e.g. 1e-6, or use method 'coupling'
    """

    statistic: Any = "mean"
    epsilon: float = 1.0
    delta: float = 0.0
    noise: str = "auto"
    method: str = "auto"
    range: tuple[float, float] | None = None
    level: float = 0.95
    burn_in: int | None = None
    num_steps: int | None = None
    num_chains: int | None = None
    thinning: int = 1
    chunks: int | None = None
    partition: str = "random"
    max_delta: float | None = None
    concentration: Any = None
    max_steps: int = 10_000
    checked: bool = field(default=False, compare=False, repr=False)

    def check(self) -> "ReleaseSpec":
        """Every check of the release's parameters (none reads the data): the checked copy.

        Returns:
            The spec with normalised values.

        Raises:
            AssumptionError: one line naming the parameter, its value, the condition and the fix.
        """
        eps = positive("epsilon", self.epsilon, "pass a positive epsilon")
        if eps > 1e6:
            raise AssumptionError(f"epsilon = {self.epsilon!r} must be <= 1e6; a larger epsilon protects nothing")
        if self.method not in METHODS:
            raise AssumptionError(f"method = {self.method!r} must be one of {', '.join(METHODS)}")
        delta = check_noise(self.noise, self.delta)
        stat = as_statistic(self.statistic)
        level = check_level(self.level)
        rng = None if self.range is None else check_range(self.range, "range")
        if self.method in ("path", "final") and delta == 0.0:
            why = ("the chain's Gaussian steps are" if self.method == "path" else "a chain's last draw is")
            raise AssumptionError(f"delta = {self.delta!r} with method = {self.method!r}: {why} not pure epsilon-DP; "
                                  "pass delta in (0, 1), e.g. 1e-6, or use method 'coupling'")
        if self.method in ("path", "final") and self.noise != "auto":
            raise AssumptionError(f"noise = {self.noise!r} does not apply to method = {self.method!r} (no noise is "
                                  "added: the chain's steps are the noise); drop it")
        if self.method == "sample-aggregate" and rng is None and not isinstance(stat, Probability):
            raise AssumptionError("range = None: sample-and-aggregate clamps each chunk's estimate to the public "
                                  "range of the released values; pass range=(a, b)")
        if self.chunks is not None and self.method != "sample-aggregate":
            raise AssumptionError("chunks applies to method = 'sample-aggregate' only")
        if self.partition not in ("random", "index"):
            raise AssumptionError(f"partition = {self.partition!r} must be 'random' or 'index'")
        if self.partition != "random" and self.method != "sample-aggregate":
            raise AssumptionError("partition applies to method = 'sample-aggregate' only")
        num_steps = None if self.num_steps is None else positive_int("num_steps", self.num_steps)
        num_chains = None if self.num_chains is None else positive_int("num_chains", self.num_chains)
        thinning = positive_int("thinning", self.thinning)
        chunks = None if self.chunks is None else positive_int("chunks", self.chunks)
        burn_in = self.burn_in
        if burn_in is not None:
            if isinstance(burn_in, bool) or not isinstance(burn_in, (int, np.integer)) or burn_in < 0:
                raise AssumptionError(f"burn_in = {burn_in!r} must be an integer >= 0")
            burn_in = int(burn_in)
            if num_steps is not None and burn_in >= num_steps // thinning:
                raise AssumptionError(f"burn_in = {burn_in} must be < the {num_steps // thinning} draws kept per "
                                      "chain (num_steps / thinning); lower burn_in")
        if num_steps is not None and thinning > 1 and num_steps % thinning:
            raise AssumptionError(f"thinning = {thinning} does not divide num_steps = {num_steps}; pick num_steps a "
                                  "multiple of thinning")
        max_delta = self.max_delta
        if max_delta is not None:
            max_delta = check_finite("max_delta", max_delta)
            require(0.0 <= max_delta < 1.0, "max_delta", max_delta, "must be in [0, 1)")
        conc = self.concentration
        if conc is not None:
            keys = ("concentration", "concentration_delta", "posterior_sensitivity")
            if not isinstance(conc, dict) or set(conc) != set(keys):
                raise AssumptionError(f"concentration = {conc!r} must be a dict with exactly the keys "
                                      f"{', '.join(keys)} (004 Proposition 3.10)")
            conc = {"concentration": positive("concentration", conc["concentration"]),
                    "concentration_delta": check_finite("concentration_delta", conc["concentration_delta"]),
                    "posterior_sensitivity": positive("posterior_sensitivity", conc["posterior_sensitivity"])}
            require(0.0 < conc["concentration_delta"] < 1.0, "concentration_delta", conc["concentration_delta"],
                    "must be in (0, 1)")
        max_steps = positive_int("max_steps", self.max_steps)
        if isinstance(stat, Function) and stat.lipschitz is None and self.method == "coupling":
            raise AssumptionError("a callable statistic needs its declared Lipschitz constant for method = "
                                  "'coupling': pass Function(fn, lipschitz=L) (Euclidean norm of the samples -> "
                                  "L1 norm of the statistic)")
        return replace(self, statistic=stat, epsilon=eps, delta=delta, level=level, range=rng, num_steps=num_steps,
                       num_chains=num_chains, thinning=thinning, chunks=chunks, burn_in=burn_in,
                       max_delta=max_delta, concentration=conc, max_steps=max_steps, checked=True)
