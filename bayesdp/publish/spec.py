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
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import AssumptionError, check_finite, positive, positive_int, require
from .statistics import (SiteSpec, Statistic, check_range, coordinate_means, coordinate_quantiles,
                         exceedance_probabilities, function_mean, quantile_levels)
from .statistics import coordinate_subset_means

__all__ = ["Mean", "Median", "Quantiles", "Probability", "Function", "ReleaseSpec", "ChainOptions", "Coupling",
           "SampleAggregate", "as_statistic", "build_statistic", "check_level", "check_noise", "site_specs", "METHODS",
           "NOISES"]

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


def _range(value_range) -> tuple[float, float] | None:
    """A declared range of the released values, checked (None: none)."""
    return None if value_range is None else check_range(value_range, "range")


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
        range: the public range ``(a, b)`` of every released value (post-processing clamp; sample-and-aggregate
            needs it).

    Examples:
        >>> Mean(sites=["w"]).sites
        ('w',)
    """

    sites: Sequence[str] | None = None
    coords: Sequence[str] | None = None
    range: tuple[float, float] | None = None
    needs_lipschitz = False

    def __post_init__(self):
        object.__setattr__(self, "sites", _sites(self.sites))
        object.__setattr__(self, "range", _range(self.range))
        if self.coords is not None:
            object.__setattr__(self, "coords", tuple(c.strip() for c in self.coords if c.strip()))
            require(len(self.coords) > 0, "coords", list(self.coords), "must name at least one coordinate",
                    "pass e.g. coords=['w[0]']")

    def build(self, potential, analysis) -> Statistic:
        """The :class:`~bayesdp.publish.statistics.Statistic` for the model's sites."""

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
        range: the public range ``(a, b)`` of every released value (post-processing clamp).

    Raises:
        AssumptionError: a level outside (0, 1) or repeated.

    Examples:
        >>> Quantiles((0.05, 0.95)).q
        (0.05, 0.95)
    """

    q: Sequence[float]
    sites: Sequence[str] | None = None
    range: tuple[float, float] | None = None
    needs_lipschitz = False

    def __post_init__(self):
        object.__setattr__(self, "q", tuple(quantile_levels(list(self.q))))
        object.__setattr__(self, "sites", _sites(self.sites))
        object.__setattr__(self, "range", _range(self.range))

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
    range: tuple[float, float] | None = None


@dataclass(frozen=True)
class Probability:
    """Smoothed posterior probabilities ``P(theta_j > threshold)`` (a ramp of ``width``) of the coordinates of
    the real-support ``sites``; range (0, 1).

    Args:
        threshold: t, finite.
        width: w > 0 (the noise grows like 1/w).
        sites: the latent sites (default: all real-support sites).
        range: a narrower public range of the released values than (0, 1), or None.

    Raises:
        AssumptionError: a non-finite threshold or a width not > 0.

    Examples:
        >>> Probability(0.0, 0.5).width
        0.5
    """

    threshold: float
    width: float
    sites: Sequence[str] | None = None
    range: tuple[float, float] | None = None
    needs_lipschitz = False

    def __post_init__(self):
        object.__setattr__(self, "threshold", check_finite("threshold", self.threshold))
        object.__setattr__(self, "width", positive("width", self.width, "pass a positive ramp width, e.g. 0.1"))
        object.__setattr__(self, "sites", _sites(self.sites))
        object.__setattr__(self, "range", _range(self.range))

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
        range: the public range ``(a, b)`` of every released value (post-processing clamp; sample-and-aggregate
            needs it).

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
    range: tuple[float, float] | None = None

    def __post_init__(self):
        object.__setattr__(self, "range", _range(self.range))
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
        Mean(sites=None, coords=None, range=None)
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
class ChainOptions:
    """The settings of the chains a release runs here; None leaves a setting to the method's rule (the same rule in
    Python and on the command line), or to the plan or driver the user passed.

    Args:
        num_steps: steps per chain (coupling and sample-and-aggregate: 2000; path: docs/release.md §8.2).
        num_chains: chains (default 1).
        burn_in: kept draws dropped per chain (default: half).
        thinning: keep every ``thinning``-th draw (coupling).
        max_steps: the largest number of steps a last-draw plan may use.

    Raises:
        AssumptionError: a count that is not a positive integer, a negative burn-in, or a burn-in that keeps no
            draw.

    Examples:
        >>> ChainOptions(num_steps=400, burn_in=100).burn_in
        100
        >>> ChainOptions(num_steps=400, burn_in=400)
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: burn_in = 400 must be < the 400 draws kept per chain (num_steps / thinning); lower burn_in
    """

    num_steps: int | None = None
    num_chains: int | None = None
    burn_in: int | None = None
    thinning: int = 1
    max_steps: int = 10_000

    def __post_init__(self):
        n = None if self.num_steps is None else positive_int("num_steps", self.num_steps)
        c = None if self.num_chains is None else positive_int("num_chains", self.num_chains)
        thin = positive_int("thinning", self.thinning)
        b = self.burn_in
        if b is not None:
            if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 0:
                raise AssumptionError(f"burn_in = {b!r} must be an integer >= 0")
            b = int(b)
            if n is not None and b >= n // thin:
                raise AssumptionError(f"burn_in = {b} must be < the {n // thin} draws kept per chain (num_steps / "
                                      "thinning); lower burn_in")
        if n is not None and thin > 1 and n % thin:
            raise AssumptionError(f"thinning = {thin} does not divide num_steps = {n}; pick num_steps a multiple of "
                                  "thinning")
        for name, v in (("num_steps", n), ("num_chains", c), ("burn_in", b), ("thinning", thin),
                        ("max_steps", positive_int("max_steps", self.max_steps))):
            object.__setattr__(self, name, v)


@dataclass(frozen=True)
class Coupling:
    """``method=Coupling(...)``: the coupling release with its route options (``method="coupling"`` is
    ``Coupling()``).

    Args:
        max_delta: refuse sensitivity routes with a larger delta.
        concentration: user-certified 004 Proposition 3.10 constants ``{"concentration", "concentration_delta",
            "posterior_sensitivity"}`` for the released statistic.

    Raises:
        AssumptionError: a max_delta outside [0, 1) or malformed constants.

    Examples:
        >>> Coupling(max_delta=0.0).name
        'coupling'
    """

    max_delta: float | None = None
    concentration: Any = None
    name = "coupling"

    def __post_init__(self):
        if self.max_delta is not None:
            md = check_finite("max_delta", self.max_delta)
            require(0.0 <= md < 1.0, "max_delta", md, "must be in [0, 1)")
            object.__setattr__(self, "max_delta", md)
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
            object.__setattr__(self, "concentration", conc)


@dataclass(frozen=True)
class SampleAggregate:
    """``method=SampleAggregate(...)``: sample-and-aggregate with its options (``method="sample-aggregate"`` is
    ``SampleAggregate()``).

    Args:
        chunks: the number of chunks (default: docs/release.md §7.2).
        partition: ``"random"`` (a CSPRNG permutation, then by index) or ``"index"``.

    Raises:
        AssumptionError: a count that is not a positive integer or an unknown partition.

    Examples:
        >>> SampleAggregate(chunks=8).name
        'sample-aggregate'
    """

    chunks: int | None = None
    partition: str = "random"
    name = "sample-aggregate"

    def __post_init__(self):
        if self.chunks is not None:
            object.__setattr__(self, "chunks", positive_int("chunks", self.chunks))
        if self.partition not in ("random", "index"):
            raise AssumptionError(f"partition = {self.partition!r} must be 'random' or 'index'")


@dataclass(frozen=True)
class ReleaseSpec:
    """Everything a release asks for, checked once by :meth:`check` before anything is analysed or charged.

    Attributes:
        statistic: a statistic object, ``"mean"`` / ``"median"`` or a callable (see :func:`as_statistic`).
        epsilon: the release's epsilon (> 0).
        delta: its delta (0: pure epsilon-DP, Laplace noise and the coupling release only).
        noise: ``"auto"``, ``"laplace"`` or ``"gaussian"`` (coupling and sample-and-aggregate).
        method: one of :data:`METHODS`, or :class:`Coupling` / :class:`SampleAggregate` with their options.
        level: the level of the intervals.
        chain: :class:`ChainOptions` of the chains run here (default: every setting by the method's rule).
        allow_uninformative: release even when the predicted error is no better than the prior's own spread, or
            when a chain, plan or driver given as is would be 10x worse than a fresh release (docs/release.md §12;
            the result then carries a warning); default False: such a release is refused before anything is
            charged (:class:`~bayesdp.publish.prior.UninformativeError`).

    The public range of the released values belongs to the statistic (``Mean(range=(a, b))``, ...):
    :attr:`range` reads it.

    Examples:
        >>> spec = ReleaseSpec("mean", epsilon=1.0, delta=1e-6).check()
        >>> spec.statistic, spec.method_name, spec.level, spec.num_steps
        (Mean(sites=None, coords=None, range=None), 'auto', 0.95, None)
        >>> ReleaseSpec("mean", epsilon=1.0, method="path").check()
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: delta = 0.0 with method = 'path': the chain's Gaussian steps are not pure epsilon-DP; pass delta in (0, 1), e.g. 1e-6, or use method 'coupling'
    """

    statistic: Any = "mean"
    epsilon: float = 1.0
    delta: float = 0.0
    noise: str = "auto"
    method: Any = "auto"
    level: float = 0.95
    chain: ChainOptions | None = None
    allow_uninformative: bool = False

    # -- the options, wherever they are held --------------------------------------------------
    @property
    def method_name(self) -> str:
        """The method's name (:data:`METHODS`)."""
        return self.method if isinstance(self.method, str) else self.method.name

    @property
    def range(self) -> tuple[float, float] | None:
        """The statistic's declared public range ``(a, b)`` of every released value, or None."""
        return getattr(self.statistic, "range", None)

    @property
    def checked(self) -> bool:
        """Whether this spec is the result of :meth:`check`."""
        return bool(self.__dict__.get("_checked", False))

    @property
    def num_steps(self) -> int | None:
        """:attr:`ChainOptions.num_steps`."""
        return None if self.chain is None else self.chain.num_steps

    @property
    def num_chains(self) -> int | None:
        """:attr:`ChainOptions.num_chains`."""
        return None if self.chain is None else self.chain.num_chains

    @property
    def burn_in(self) -> int | None:
        """:attr:`ChainOptions.burn_in`."""
        return None if self.chain is None else self.chain.burn_in

    @property
    def thinning(self) -> int:
        """:attr:`ChainOptions.thinning`."""
        return 1 if self.chain is None else self.chain.thinning

    @property
    def max_steps(self) -> int:
        """:attr:`ChainOptions.max_steps`."""
        return 10_000 if self.chain is None else self.chain.max_steps

    @property
    def max_delta(self) -> float | None:
        """:attr:`Coupling.max_delta` (None for another method)."""
        return self.method.max_delta if isinstance(self.method, Coupling) else None

    @property
    def concentration(self):
        """:attr:`Coupling.concentration` (None for another method)."""
        return self.method.concentration if isinstance(self.method, Coupling) else None

    @property
    def chunks(self) -> int | None:
        """:attr:`SampleAggregate.chunks` (None for another method)."""
        return self.method.chunks if isinstance(self.method, SampleAggregate) else None

    @property
    def partition(self) -> str:
        """:attr:`SampleAggregate.partition` (``"random"`` for another method)."""
        return self.method.partition if isinstance(self.method, SampleAggregate) else "random"

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
        method = self.method
        if isinstance(method, str):
            if method not in METHODS:
                raise AssumptionError(f"method = {method!r} must be one of {', '.join(METHODS)}")
            method = {"coupling": Coupling(), "sample-aggregate": SampleAggregate()}.get(method, method)
        elif not isinstance(method, (Coupling, SampleAggregate)):
            raise AssumptionError(f"method = {method!r} must be one of {', '.join(METHODS)}, Coupling(...) or "
                                  "SampleAggregate(...)")
        name = method if isinstance(method, str) else method.name
        chain = self.chain if self.chain is not None else ChainOptions()
        if not isinstance(chain, ChainOptions):
            raise AssumptionError(f"chain = {chain!r} must be a ChainOptions(...)")
        delta = check_noise(self.noise, self.delta)
        stat = as_statistic(self.statistic)
        level = check_level(self.level)
        rng = getattr(stat, "range", None)
        if not isinstance(self.allow_uninformative, bool):
            raise AssumptionError(f"allow_uninformative = {self.allow_uninformative!r} must be True or False")
        if name in ("path", "final") and delta == 0.0:
            why = ("the chain's Gaussian steps are" if name == "path" else "a chain's last draw is")
            raise AssumptionError(f"delta = {self.delta!r} with method = {name!r}: {why} not pure epsilon-DP; "
                                  "pass delta in (0, 1), e.g. 1e-6, or use method 'coupling'")
        if name in ("path", "final") and self.noise != "auto":
            raise AssumptionError(f"noise = {self.noise!r} does not apply to method = {name!r} (no noise is "
                                  "added: the chain's steps are the noise); drop it")
        if name == "sample-aggregate" and rng is None and not isinstance(stat, Probability):
            raise AssumptionError("range = None: sample-and-aggregate clamps each chunk's estimate to the public "
                                  "range of the released values; pass the statistic's range, e.g. "
                                  "Mean(range=(a, b))")
        if isinstance(stat, Function) and stat.lipschitz is None and name == "coupling":
            raise AssumptionError("a callable statistic needs its declared Lipschitz constant for method = "
                                  "'coupling': pass Function(fn, lipschitz=L) (Euclidean norm of the samples -> "
                                  "L1 norm of the statistic)")
        out = replace(self, statistic=stat, epsilon=eps, delta=delta, level=level, method=method, chain=chain)
        object.__setattr__(out, "_checked", True)
        return out
