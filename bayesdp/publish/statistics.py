"""Released statistics: Monte Carlo averages of Lipschitz functions of the draws.

A :class:`Statistic` maps the sampler's draws, in its UNCONSTRAINED space (shape ``(n, d)``,
chains and draws flattened), to ``k`` numbers per draw; the released value is their average.
It carries ``lipschitz``: a constant L with ``|f(z) - f(z')|_1 <= L |z - z'|_2`` (Euclidean in,
L1 out, because vector releases use Laplace noise calibrated to the L1 sensitivity), so that the
average moves by at most ``L * coupling distance`` (docs/release.md §2), and ``l2_lipschitz``, the
Euclidean -> Euclidean constant Gaussian noise is calibrated to (docs/release.md §2.5; when not
declared the L1 constant is used, which is always valid since ``|v|_2 <= |v|_1``):

* k coordinate means of real-support sites (identity transform): ``L = sqrt(k)``
  (``|v|_1 <= sqrt(k) |v|_2``, attained by v = (1, ..., 1)).
* constrained sites: a coordinate-wise transform with a DECLARED Lipschitz constant ``L_s`` per
  site; the total is ``sqrt(sum_s L_s^2 k_s)`` (Cauchy–Schwarz).  A constrained site without a
  declared constant is refused.
* a user function with a declared constant.

Every released value is returned with its noise scale, noise variance (``2 scale^2``, SEEDS §6
row 10, not 004's ``eta/eps``) and an interval that covers the NON-PRIVATE Monte Carlo estimate
with the stated probability (noise only), and, when a data-independent bound on the Monte Carlo
fluctuation is proven, an interval that also covers the chain's expected estimate
(docs/release.md §4).  A statistic with a known ``range`` (probabilities: [0, 1]) is clamped to it
after the noise (post-processing, docs/release.md §4.3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from statistics import NormalDist            # the standard library's (absolute import), not this module
from typing import Callable, Sequence

import numpy as np

from ..errors import AssumptionError, ModelError, positive, positive_int, require
from ..exact import exact as _q, sqrt_exact_up as _sqrt_up, up as _up
from .noise import laplace_interval_halfwidth

__all__ = ["coordinate_subset_means", "probability_at_profiles",
           "Statistic", "SiteSpec", "coordinate_means", "coordinate_quantiles", "exceedance_probabilities",
           "function_mean", "check_range", "quantile_levels", "ReleasedValue", "describe_values",
           "two_sided_normal_quantile", "with_error_intervals", "with_credible_intervals", "min_draws_for_quantiles"]


@dataclass(frozen=True)
class SiteSpec:
    """One latent site of the model as the sampler sees it (``size`` flattened coordinates).

    ``constrained``: the site's support is not all of R^size, so the sampler works on
    ``z = T^{-1}(theta)``.  ``transform`` maps unconstrained values to constrained ones
    coordinate-wise; ``transform_lipschitz`` is its declared Lipschitz constant per coordinate.

    Examples:
        >>> SiteSpec("w", size=3).constrained
        False
    """

    name: str
    size: int = 1
    constrained: bool = False
    transform: Callable[[np.ndarray], np.ndarray] | None = None
    transform_lipschitz: float | None = None


@dataclass(frozen=True)
class Statistic:
    """A statistic of the draws to release: ``fn`` maps draws (num_draws, dim) to values
    (num_draws, k); its mean over the draws is released with Laplace noise calibrated by ``lipschitz``
    (Euclidean in, L1 out: ``|f(z) - f(z')|_1 <= lipschitz * |z - z'|_2``).

    Attributes:
        names: one name per output coordinate.
        fn: the function of the unconstrained draws.
        lipschitz: its Lipschitz constant (Euclidean -> L1).
        description: one line for reports.
        lipschitz_source: where the constant comes from.

    Examples:
        >>> import numpy as np
        >>> stat = coordinate_means([SiteSpec("w", size=2)])
        >>> stat.names, round(stat.lipschitz, 6), stat.evaluate(np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
        (('w[0]', 'w[1]'), 1.414214, [2.0, 3.0])
    """
    names: tuple[str, ...]
    fn: Callable[[np.ndarray], np.ndarray]
    lipschitz: float
    description: str
    lipschitz_source: str = ""
    #: how the per-draw values become the released numbers: ``None`` is the average over draws (a Monte
    #: Carlo mean); a function (num_draws, k') -> (num_coords,) otherwise.  ``lipschitz`` always bounds
    #: ``|S(X) - S(X')|_1 <= lipschitz * sup_t |X_t - X'_t|_2`` for the whole estimator S, which for a mean is
    #: implied by the per-draw constant (docs/release.md §2).
    reduce: Callable[[np.ndarray], np.ndarray] | None = None
    #: Euclidean -> Euclidean constant: ``|S(X) - S(X')|_2 <= l2_lipschitz * sup_t |X_t - X'_t|_2`` (Gaussian
    #: noise); ``None``: not declared, :attr:`l2` falls back to ``lipschitz`` (valid: ``|v|_2 <= |v|_1``).
    l2_lipschitz: float | None = None
    l2_lipschitz_source: str = ""
    #: known range ``(a, b)`` of every released coordinate (probabilities: ``(0, 1)``); ``None``: unknown.
    #: The released values are clamped to it and the intervals clipped (post-processing).
    range: tuple[float, float] | None = None
    #: quantile statistics: the levels, each coordinate's values in this order (coordinate-major); else None
    quantile_levels: tuple[float, ...] | None = None

    @property
    def l2(self) -> float:
        """The Euclidean -> Euclidean constant used for Gaussian noise: :attr:`l2_lipschitz`, or the L1
        constant when none is declared (``|v|_2 <= |v|_1``, so an L1 bound is an L2 bound)."""
        if self.l2_lipschitz is None:
            return float(self.lipschitz)
        return float(min(self.l2_lipschitz, self.lipschitz))

    def with_range(self, value_range: Sequence[float] | None) -> "Statistic":
        """This statistic with a declared range ``(a, b)`` of every released coordinate (``None``: unchanged),
        intersected with the range it has by construction (probabilities: [0, 1]).

        Args:
            value_range: ``(a, b)`` or None.

        Returns:
            The statistic with its range.

        Raises:
            AssumptionError: not two finite numbers with a < b, or no overlap with the statistic's own range.
        """
        if value_range is None:
            return self
        a, b = check_range(value_range)
        if self.range is not None:
            a, b = max(a, self.range[0]), min(b, self.range[1])
            if not a < b:
                raise AssumptionError(f"range = ({value_range[0]:g}, {value_range[1]:g}) does not overlap the range "
                                      f"{tuple(self.range)} of {self.description!r}; declare a range inside it")
        return replace(self, range=(a, b))

    @property
    def kind(self) -> str:
        """``"mean"`` (an average over draws: every sensitivity route applies) or ``"other"`` (only the
        coupling route of 004 Proposition 3.7 with the estimator's own constant)."""
        return "mean" if self.reduce is None else "other"

    @property
    def num_coords(self) -> int:
        """Number of released coordinates (``len(names)``).
        """
        return len(self.names)

    def _apply(self, z: np.ndarray) -> np.ndarray:
        """``fn(z)`` as float64; any exception of the function becomes one line naming the statistic."""
        try:
            return np.asarray(self.fn(z), dtype=np.float64)
        except AssumptionError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's function, reported in one line
            first = (str(exc).strip().splitlines() or [""])[0][:160]
            raise AssumptionError(f"statistic {self.description!r} raised {type(exc).__name__}: {first} (on draws "
                                  f"of shape {tuple(z.shape)}); fix the function") from None

    def check(self, dim: int) -> None:
        """Run the statistic on a public test input (zeros and a fixed pseudo-random point, shape (2, dim))
        and check it returns finite values of shape (2, k) or (2,) for k = 1: refuses, before any chain
        runs, a function that raises, has the wrong number of outputs or is not finite.

        Args:
            dim: the dimension of the unconstrained draws.

        Raises:
            AssumptionError: the function raises, has the wrong shape or is not finite.
        """
        z = np.stack([np.zeros(dim), np.random.default_rng(0).standard_normal(dim)])
        vals = self._apply(z)
        if vals.ndim == 1:
            vals = vals[:, None]
        if self.reduce is not None and vals.ndim == 2 and vals.shape[0] == 2:
            vals = np.stack([np.asarray(self.reduce(vals), dtype=np.float64)] * 2)
        if vals.shape != (2, self.num_coords):
            raise AssumptionError(f"statistic {self.description!r} returns shape {tuple(vals.shape)} on test draws "
                                  f"of shape (2, {dim}); it must return (n, {self.num_coords}) for its "
                                  f"{self.num_coords} name(s) {', '.join(self.names[:4])}"
                                  f"{' ...' if self.num_coords > 4 else ''}")
        if not np.all(np.isfinite(vals)):
            raise AssumptionError(f"statistic {self.description!r} is not finite on test draws of shape (2, {dim}); "
                                  "it must be finite everywhere")

    def evaluate(self, draws: np.ndarray) -> np.ndarray:
        """Average of ``fn`` over all draws (the non-private Monte Carlo estimate; never publish it).

        Args:
            draws: (num_draws, dim) unconstrained draws (a 1-D array is one coordinate).

        Returns:
            the k means.

        Raises:
            AssumptionError: draws empty or not finite, ``fn`` returns the wrong shape, or a non-finite mean.
        """
        z = np.asarray(draws, dtype=np.float64)
        if z.ndim == 1:
            z = z[:, None]
        require(z.ndim == 2 and z.shape[0] >= 1, "draws.shape", z.shape, "must be (num_draws, dim) with num_draws >= 1")
        if not np.all(np.isfinite(z)):
            raise AssumptionError("draws contain NaN or inf; the chain diverged (lower the step size)")
        vals = self._apply(z)
        if vals.ndim == 1:
            vals = vals[:, None]
        if self.reduce is not None:
            require(vals.ndim == 2 and vals.shape[0] == z.shape[0], "statistic output shape", vals.shape,
                    f"must be (num_draws, k) with num_draws = {z.shape[0]}")
            out = np.asarray(self.reduce(vals), dtype=np.float64)
            require(out.shape == (self.num_coords,), "statistic output shape", out.shape,
                    f"must be ({self.num_coords},)")
        else:
            require(vals.shape == (z.shape[0], self.num_coords), "statistic output shape", vals.shape,
                    f"must be (num_draws, {self.num_coords}) = ({z.shape[0]}, {self.num_coords})")
            out = vals.mean(axis=0)
        if not np.all(np.isfinite(out)):
            raise AssumptionError(f"statistic {self.description!r} is not finite on the draws")
        return out


def check_range(value_range: Sequence[float], name: str = "range") -> tuple[float, float]:
    """A declared range ``(a, b)``: two finite numbers with ``a < b``, or a one-line refusal naming ``name``.

    Args:
        value_range: ``(a, b)``.
        name: the parameter's name in a refusal.

    Returns:
        ``(a, b)`` as floats.

    Raises:
        AssumptionError: not two finite numbers with a < b.

    Examples:
        >>> check_range((0, 1))
        (0.0, 1.0)
    """
    try:
        a, b = (float(v) for v in value_range)
    except (TypeError, ValueError):
        raise AssumptionError(f"{name} = {value_range!r} must be two numbers (a, b) with a < b, e.g. (-3, 3)") from None
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise AssumptionError(f"{name} = ({a:g}, {b:g}) must be finite with a < b; declare the public range of "
                              "the released values, e.g. (-3, 3)")
    return a, b


def coordinate_means(sites: Sequence[SiteSpec], select: Sequence[str] | None = None) -> Statistic:
    """Posterior mean of every coordinate of the selected sites (all sites by default).

    Draws are the concatenation of the sites' unconstrained coordinates, in ``sites`` order.
    Lipschitz constant (Euclidean -> L1): ``sqrt(sum_s L_s^2 k_s)`` with ``L_s = 1`` for real-support
    sites and the declared ``transform_lipschitz`` for constrained ones (docs/release.md §2.1);
    Euclidean -> Euclidean: ``max_s L_s`` (1 for real-support sites; docs/release.md §2.5).

    Args:
        sites: the model's latent sites, in the order of the draws' coordinates.
        select: names of the sites to release (default: all).

    Returns:
        a :class:`Statistic` with one coordinate per selected scalar.

    Raises:
        ModelError: no sites, a site listed twice, an unknown site selected, or a constrained site
            without a declared transform Lipschitz constant.

    Examples:
        sqrt(3), rounded up (the float nearest sqrt(3) is below it):

        >>> from fractions import Fraction
        >>> stat = coordinate_means([SiteSpec("w", size=3), SiteSpec("b")], select=["w"])
        >>> stat.names, Fraction(stat.lipschitz) ** 2 >= 3, stat.lipschitz
        (('w[0]', 'w[1]', 'w[2]'), True, 1.7320508075688774)
    """
    offsets, total = _offsets(sites)
    chosen = [s.name for s in sites] if select is None else list(select)
    pieces = []
    names: list[str] = []
    sq = Fraction(0)             # sum_s L_s^2 k_s, exactly (the constant is rounded up once)
    l2 = 0.0
    for name in chosen:
        start, s = _site(offsets, name)
        if s.constrained:
            if s.transform is None or s.transform_lipschitz is None:
                raise ModelError(f"site {name!r} is constrained: its posterior mean needs the transform's Lipschitz "
                                 "constant; declare transform_lipschitz (or release the unconstrained value "
                                 "through a user statistic with a declared Lipschitz constant)")
            Ls = positive(f"site {name!r} transform_lipschitz", s.transform_lipschitz)
            tr = s.transform
        else:
            Ls, tr = 1.0, None
        sq += Fraction(float(Ls)) ** 2 * s.size
        l2 = max(l2, Ls)
        pieces.append((start, s.size, tr))
        names += _coordinate_names(s)

    def fn(z: np.ndarray) -> np.ndarray:
        require(z.shape[1] == total, "draws dimension", z.shape[1], f"must equal the sites' total size {total}")
        cols = []
        for start, size, tr in pieces:
            block = z[:, start:start + size]
            cols.append(block if tr is None else np.asarray(tr(block), dtype=np.float64).reshape(block.shape))
        return np.concatenate(cols, axis=1)

    identity = all(p[2] is None for p in pieces)
    src = ("sqrt(k): identity on real-support sites" if identity
           else "sqrt(sum_s L_s^2 k_s): declared transform constants")
    src2 = "1: identity on real-support sites" if identity else "max_s L_s: declared transform constants"
    return Statistic(names=tuple(names), fn=fn, lipschitz=_sqrt_up(sq),
                     description=f"posterior mean of {', '.join(chosen)}", lipschitz_source=src,
                     l2_lipschitz=l2, l2_lipschitz_source=src2)


def _offsets(sites: Sequence[SiteSpec]) -> tuple[dict[str, tuple[int, SiteSpec]], int]:
    """``{name: (first column, site)}`` of the sites in the draws' order, and the total number of columns."""
    if not sites:
        raise ModelError("sites is empty: the model has no latent site to release")
    offsets, pos = {}, 0
    for s in sites:
        if s.name in offsets:
            raise ModelError(f"site {s.name!r} listed twice")
        offsets[s.name] = (pos, s)
        pos += positive_int(f"site {s.name!r} size", s.size)
    return offsets, pos


def _site(offsets: dict, name: str) -> tuple[int, SiteSpec]:
    if name not in offsets:
        raise ModelError(f"site {name!r} is not a latent site of the model; choose from {sorted(offsets)}")
    return offsets[name]


def _coordinate_names(s: SiteSpec) -> list[str]:
    return [s.name] if s.size == 1 else [f"{s.name}[{i}]" for i in range(s.size)]


def _real_columns(sites: Sequence[SiteSpec], select: Sequence[str] | None, what: str
                  ) -> tuple[np.ndarray, list[str]]:
    """Columns and coordinate names of the selected real-support sites (constrained ones refused)."""
    offsets, _ = _offsets(sites)
    chosen = [s.name for s in sites if not s.constrained] if select is None else list(select)
    cols: list[int] = []
    names: list[str] = []
    for name in chosen:
        start, s = _site(offsets, name)
        if s.constrained:
            raise ModelError(f"site {name!r} is constrained: {what} are released for real-support sites only "
                             "(pass sites=[...] naming real-support sites)")
        cols += list(range(start, start + s.size))
        names += _coordinate_names(s)
    if not cols:
        raise ModelError(f"no real-support latent site to release {what} of; pass sites=[...]")
    return np.array(cols), names


def quantile_levels(q: Sequence[float]) -> list[float]:
    """``q`` as a list of distinct levels in (0, 1), or a one-line refusal naming the bad level.

    Args:
        q: the quantile levels.

    Returns:
        The levels as floats.

    Raises:
        AssumptionError: not numbers, empty, a level outside (0, 1), or a level repeated.

    Examples:
        >>> quantile_levels((0.5, 0.9))
        [0.5, 0.9]
        >>> quantile_levels([0.5, 1.0])
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: quantile level = 1.0 must be in (0, 1); pass e.g. q=(0.05, 0.5, 0.95)
    """
    try:
        levels = [float(x) for x in q]
    except (TypeError, ValueError):
        raise AssumptionError(f"q = {q!r} must be numbers in (0, 1), e.g. q=(0.05, 0.5, 0.95)") from None
    if not levels:
        raise AssumptionError("q is empty; pass quantile levels, e.g. q=(0.05, 0.5, 0.95)")
    for x in levels:
        if not (math.isfinite(x) and 0.0 < x < 1.0):
            raise AssumptionError(f"quantile level = {x!r} must be in (0, 1); pass e.g. q=(0.05, 0.5, 0.95)")
    if len(set(levels)) != len(levels):
        raise AssumptionError(f"q = {levels} repeats a level; list each once")
    return levels


def coordinate_quantiles(sites: Sequence[SiteSpec], q: Sequence[float], select: Sequence[str] | None = None
                         ) -> Statistic:
    """Posterior quantiles (levels ``q``) of every coordinate of the selected real-support sites.

    Sensitivity (docs/release.md §2.3): an empirical quantile (``numpy.quantile``, linear interpolation: a
    fixed convex combination of two order statistics) is 1-Lipschitz for the sup-norm of a perturbation of
    the sample, and ``|X_t,j - X'_t,j| <= |X_t - X'_t|_2``; so each of the ``k m`` released numbers (k
    coordinates, m levels) moves by at most ``sup_t |X_t - X'_t|_2`` and ``lipschitz = k m`` (L1 over the
    numbers), ``l2_lipschitz = sqrt(k m)`` (Euclidean).  It is not a mean: only the coupling route applies.

    Args:
        sites: the latent sites in the draws' order.
        q: quantile levels in (0, 1), distinct.
        select: the sites (default: every real-support site).

    Returns:
        a :class:`Statistic` with names ``"w[0] q0.5"``.

    Raises:
        AssumptionError: a level outside (0, 1) or repeated; ModelError: a constrained or unknown site.

    Examples:
        >>> import numpy as np
        >>> stat = coordinate_quantiles([SiteSpec("w", size=2)], [0.5])
        >>> stat.names, stat.lipschitz, stat.evaluate(np.array([[0., 5.], [1., 6.], [9., 7.]])).tolist()
        (('w[0] q0.5', 'w[1] q0.5'), 2.0, [1.0, 6.0])
    """
    levels = quantile_levels(q)
    cols, names = _real_columns(sites, select, "quantiles")
    qs = np.array(levels)

    def fn(z: np.ndarray) -> np.ndarray:
        return np.asarray(z, dtype=np.float64)[:, cols]

    def reduce(v: np.ndarray) -> np.ndarray:            # coordinate-major: w[0] at every level, then w[1] ...
        return np.quantile(v, qs, axis=0).T.reshape(-1)

    out_names = tuple(f"{n} q{x:g}" for n in names for x in levels)
    return Statistic(names=out_names, fn=fn, lipschitz=float(len(out_names)),
                     description=f"posterior quantiles {', '.join(f'{x:g}' for x in levels)} of "
                                 f"{len(names)} coordinate{'s' if len(names) > 1 else ''}",
                     lipschitz_source="k m: order statistics are 1-Lipschitz in sup-norm (docs/release.md §2.3)",
                     reduce=reduce, l2_lipschitz=_sqrt_up(len(out_names)), quantile_levels=tuple(levels),
                     l2_lipschitz_source="sqrt(k m): each number moves by at most the coupling distance (docs/release.md "
                                         "§2.5)")


def exceedance_probabilities(sites: Sequence[SiteSpec], threshold: float, width: float,
                             select: Sequence[str] | None = None) -> Statistic:
    """Smoothed posterior probabilities ``P(theta_j > threshold)`` of every coordinate of the selected
    real-support sites: the posterior mean of the ramp ``clip((theta_j - threshold)/width + 1/2, 0, 1)``,
    which differs from the indicator only within ``width/2`` of the threshold.

    An indicator is not Lipschitz (one record can move a draw across the threshold), so no bounded-noise
    release of the raw fraction exists from the coupling; the ramp is ``1/width``-Lipschitz per coordinate,
    ``sqrt(k)/width`` from Euclidean to L1 for k coordinates (docs/release.md §2.4) and ``1/width`` from
    Euclidean to Euclidean (§2.5).  Its range is [0, 1]: released values are clamped to it.

    Args:
        sites: the latent sites in the draws' order.
        threshold: the threshold (finite).
        width: the ramp's width, > 0 (smaller: closer to the raw probability, more noise).
        select: the sites (default: every real-support site).

    Returns:
        a :class:`Statistic` with names ``"P(w[0] > 0)"``.

    Examples:
        >>> import numpy as np
        >>> stat = exceedance_probabilities([SiteSpec("b")], threshold=0.0, width=0.5)
        >>> stat.names, stat.lipschitz, stat.evaluate(np.array([[-1.0], [0.1], [2.0]])).round(4).tolist()
        (('P(b > 0)',), 2.0, [0.5667])
    """
    t = float(threshold)
    if not math.isfinite(t):
        raise AssumptionError(f"threshold = {threshold!r} must be finite")
    w = positive("width", width, "pass the ramp's width, e.g. width=0.1")
    cols, names = _real_columns(sites, select, "probabilities")

    def fn(z: np.ndarray) -> np.ndarray:
        return np.clip((np.asarray(z, dtype=np.float64)[:, cols] - t) / w + 0.5, 0.0, 1.0)

    return Statistic(names=tuple(f"P({n} > {t:g})" for n in names), fn=fn,
                     lipschitz=_sqrt_up(Fraction(len(names)) / _q(w) ** 2),
                     description=f"posterior probability above {t:g} (ramp of width {w:g}) of {len(names)} "
                                 f"coordinate{'s' if len(names) > 1 else ''}",
                     lipschitz_source="sqrt(k)/width: a ramp of slope 1/width (docs/release.md §2.4)",
                     l2_lipschitz=_up(1 / _q(w)), l2_lipschitz_source="1/width: a ramp of slope 1/width per coordinate "
                                                                "(docs/release.md §2.5)", range=(0.0, 1.0))


def function_mean(fn: Callable[[np.ndarray], np.ndarray], lipschitz: float | None, names: Sequence[str],
                  description: str = "user function", l2_lipschitz: float | None = None,
                  value_range: Sequence[float] | None = None) -> Statistic:
    """Posterior mean of a user function of the unconstrained draws with a DECLARED Lipschitz constant
    (Euclidean in, L1 out).  ``lipschitz=None`` is refused: the noise cannot be calibrated.

    Args:
        fn: draws (num_draws, dim) -> values (num_draws, k).
        lipschitz: the declared constant L with ``|f(z) - f(z')|_1 <= L |z - z'|_2``.
        names: one name per output coordinate.
        description: one line for reports.
        l2_lipschitz: optionally, the declared ``L2`` with ``|f(z) - f(z')|_2 <= L2 |z - z'|_2`` (Gaussian
            noise); without it the L1 constant is used for Gaussian noise too (valid, possibly larger).
        value_range: optionally, the public range ``(a, b)`` of every output (values are clamped to it).

    Returns:
        a :class:`Statistic`.

    Raises:
        AssumptionError: no Lipschitz constant or not > 0, or no names.

    Examples:
        >>> import numpy as np
        >>> stat = function_mean(lambda z: np.tanh(z[:, :1]), 1.0, ["tanh(w0)"])
        >>> stat.lipschitz, stat.num_coords
        (1.0, 1)
    """
    if lipschitz is None:
        raise AssumptionError(f"statistic {description!r} has no declared Lipschitz constant; declare one "
                              "(|f(z) - f(z')|_1 <= L |z - z'|_2 on the unconstrained space)")
    L = positive(f"lipschitz of statistic {description!r}", lipschitz)
    L2 = None if l2_lipschitz is None else positive(f"l2_lipschitz of statistic {description!r}", l2_lipschitz)
    names = tuple(names)
    if not names:
        raise AssumptionError("names is empty; name each output coordinate of the statistic")
    return Statistic(names=names, fn=fn, lipschitz=L, description=description, lipschitz_source="declared by user",
                     l2_lipschitz=L2, l2_lipschitz_source="declared by user" if L2 is not None else
                     "not declared: the L1 constant (|v|_2 <= |v|_1)",
                     range=None if value_range is None else check_range(value_range))


@dataclass(frozen=True)
class ReleasedValue:
    """One released coordinate: the published value (clamped to the statistic's range, if any), its noise scale
    and variance, the interval that holds the non-private estimate with probability >= ``level`` (noise only),
    and, when a data-independent Monte Carlo bound is proven, the interval that holds the chain's expected
    estimate with probability >= ``level`` (noise and Monte Carlo fluctuation); both clipped to the range
    (from :func:`describe_values`).

    Attributes:
        name: the coordinate's name.
        value: the published value.
        noise_scale: the noise scale.
        noise_variance: the noise variance.
        interval: the interval of the non-private estimate (noise only), or None.
        level: its coverage.
        raw_value: the noisy value before clamping (also private).
        total_interval: the interval of the chain's expected estimate (noise and Monte Carlo), or None.
        predicted_rmse: the method's predicted root-mean-square error (public inputs only), or None.
        predicted_label: ``"proven"`` or ``"heuristic"``: how far the prediction is a bound.
        error_interval: a predicted interval, at ``level``, for the non-private posterior quantity (release noise,
            Monte Carlo error and, where bounded, bias; docs/release.md §11), or None.
        error_interval_basis: what ``error_interval`` includes, in words.
        equivalent_noise_sd: for a release whose randomness is the chain (path, final), the standard deviation of
            the Gaussian noise that randomness amounts to for this value (public inputs only, §11), or None.
        credible_interval: for a quantile request, the lowest and highest requested quantiles of this
            coordinate, estimated from many draws, or None.
        credible_level: the nominal mass of ``credible_interval``.
        interval_kind: ``"posterior"`` (a chain at inverse temperature 1) or ``"tempered"`` (a chain at another
            temperature: its spread is the tempered distribution's, NOT a posterior credible interval).

    Examples:
        >>> item = describe_values(["mu"], [0.5], noise_scale=1.0, noise_variance=2.0, level=0.95, half_width=3.0)[0]
        >>> item.interval, item.to_dict()["interval"]                  # 0.5 -/+ 3
        ((-2.5, 3.5), [-2.5, 3.5])
    """
    name: str
    value: float
    noise_scale: float
    noise_variance: float
    interval: tuple[float, float] | None
    level: float
    raw_value: float | None = None
    total_interval: tuple[float, float] | None = None
    #: the method's predicted root-mean-square error of this value (public inputs only), or None
    predicted_rmse: float | None = None
    #: ``"proven"`` or ``"heuristic"`` (with what the prediction covers), or None
    predicted_label: str | None = None
    #: a predicted interval, at ``level``, for the NON-PRIVATE posterior quantity (docs/release.md §11), or None
    error_interval: tuple[float, float] | None = None
    #: what ``error_interval`` includes (release noise, Monte Carlo error, bias), in words
    error_interval_basis: str | None = None
    #: methods whose randomness is the chain (path, final): the sd of the Gaussian noise it amounts to (§11)
    equivalent_noise_sd: float | None = None
    #: quantile requests: ``(lowest, highest)`` requested quantile of this coordinate, from many draws, or None
    credible_interval: tuple[float, float] | None = None
    #: the nominal mass of ``credible_interval`` (highest minus lowest level), or None
    credible_level: float | None = None
    #: ``"posterior"`` (a chain at inverse temperature 1) or ``"tempered"`` (any other: NOT a posterior
    #: credible interval) for quantile requests, or None
    interval_kind: str | None = None

    def to_dict(self) -> dict:
        """JSON-ready form (the intervals as lists).
        """
        as_list = lambda iv: None if iv is None else [float(iv[0]), float(iv[1])]  # noqa: E731
        return {"predicted_rmse": self.predicted_rmse, "predicted_label": self.predicted_label, "name": self.name,
                "value": self.value, "noise_scale": self.noise_scale, "noise_variance": self.noise_variance,
                "interval": as_list(self.interval), "level": self.level,
                "raw_value": self.value if self.raw_value is None else self.raw_value,
                "total_interval": as_list(self.total_interval), "error_interval": as_list(self.error_interval),
                "error_interval_basis": self.error_interval_basis, "equivalent_noise_sd": self.equivalent_noise_sd,
                "credible_interval": as_list(self.credible_interval), "credible_level": self.credible_level,
                "interval_kind": self.interval_kind}


def _clip_interval(v: float, h: float, value_range: tuple[float, float] | None) -> tuple[float, float]:
    """``[v - h, v + h]`` intersected with the range; the whole range when they do not meet (the estimate lies in
    the range, so either is a valid interval; an empty intersection says only that the noise was large)."""
    lo, hi = v - h, v + h
    if value_range is not None:
        a, b = value_range
        lo, hi = max(lo, a), min(hi, b)
        if lo > hi:
            lo, hi = a, b
    return float(lo), float(hi)


def two_sided_normal_quantile(level: float) -> float:
    """``z`` with ``P(|N(0, 1)| > z) = 1 - level``: the half-width of a ``level`` interval of a unit Gaussian.

    Args:
        level: in (0, 1).

    Returns:
        z.

    Raises:
        AssumptionError: level not in (0, 1).

    Examples:
        >>> round(two_sided_normal_quantile(0.95), 6), round(two_sided_normal_quantile(0.9), 6)
        (1.959964, 1.644854)
    """
    if not (isinstance(level, (int, float)) and 0.0 < float(level) < 1.0):
        raise AssumptionError(f"level = {level!r} must be in (0, 1); pass e.g. 0.95")
    return float(NormalDist().inv_cdf(0.5 + float(level) / 2.0))


def with_error_intervals(items: Sequence[ReleasedValue], half_width: float | None, basis: str,
                         value_range: tuple[float, float] | None = None,
                         equivalent_noise_sd: float | None = None) -> tuple[ReleasedValue, ...]:
    """The items with ``error_interval = raw value +- half_width`` (clipped to the range, as the other intervals),
    its basis and, for a chain whose steps are the noise, ``equivalent_noise_sd`` (docs/release.md §11).

    Args:
        items: the released values.
        half_width: the half-width, or None (no error interval: ``basis`` says why).
        basis: what the interval includes, in words.
        value_range: the statistic's range, or None.
        equivalent_noise_sd: the equivalent Gaussian noise sd, or None.

    Returns:
        The new items.

    Examples:
        >>> it = describe_values(["mu"], [0.5], noise_scale=1.0, noise_variance=2.0)
        >>> with_error_intervals(it, 2.0, "noise")[0].error_interval
        (-1.5, 2.5)
    """
    out = []
    for it in items:
        v = it.value if it.raw_value is None else it.raw_value
        iv = None if half_width is None or not math.isfinite(half_width) else \
            _clip_interval(float(v), float(half_width), value_range)
        out.append(replace(it, error_interval=iv, error_interval_basis=basis,
                           equivalent_noise_sd=None if equivalent_noise_sd is None else float(equivalent_noise_sd)))
    return tuple(out)


def with_credible_intervals(items: Sequence[ReleasedValue], statistic: Statistic, inverse_temperature: float
                            ) -> tuple[ReleasedValue, ...]:
    """For a quantile statistic (:func:`coordinate_quantiles`) with at least two levels: each coordinate's items
    carry ``credible_interval = (its lowest-level value, its highest-level value)`` (released values, so as
    private as they are), ``credible_level`` = highest - lowest level and ``interval_kind``: ``"posterior"`` for a
    chain at inverse temperature 1, else ``"tempered"`` (the spread of ``exp(-beta U)``, not of the posterior:
    wider by about ``1/sqrt(beta)`` for ``beta < 1``).  Other statistics: the items unchanged.

    Args:
        items: the released values, in the statistic's order.
        statistic: the statistic.
        inverse_temperature: the chain's inverse temperature beta.

    Returns:
        The new items.

    Examples:
        >>> st = coordinate_quantiles([SiteSpec("w", 1)], [0.05, 0.95])
        >>> it = describe_values(st.names, [-1.0, 2.0], noise_scale=1.0, noise_variance=2.0)
        >>> [(x.credible_interval, x.interval_kind) for x in with_credible_intervals(it, st, 0.5)][0]
        ((-1.0, 2.0), 'tempered')
    """
    levels = statistic.quantile_levels
    if not levels:
        return tuple(items)
    kind = "posterior" if float(inverse_temperature) == 1.0 else "tempered"
    if len(levels) < 2:
        return tuple(replace(it, interval_kind=kind) for it in items)
    m = len(levels)
    lo_i, hi_i = int(np.argmin(levels)), int(np.argmax(levels))
    out = list(items)
    for start in range(0, len(out), m):
        block = out[start:start + m]
        lo, hi = block[lo_i].value, block[hi_i].value
        ci = (float(min(lo, hi)), float(max(lo, hi)))
        for j in range(m):
            out[start + j] = replace(block[j], credible_interval=ci, interval_kind=kind,
                                     credible_level=round(float(levels[hi_i] - levels[lo_i]), 12))
    return tuple(out)


def min_draws_for_quantiles(levels: Sequence[float]) -> int:
    """The fewest draws a quantile release accepts: ``ceil(2 / min(q, 1 - q))`` over the levels, so that at least
    two draws are expected beyond each requested quantile (a quantile is never estimated from a single draw, nor
    read off the sample's extreme; docs/release.md §11).

    Args:
        levels: the quantile levels.

    Returns:
        The minimum number of draws.

    Examples:
        >>> min_draws_for_quantiles([0.05, 0.5, 0.95])          # 2 / 0.05
        40
    """
    return int(math.ceil(2.0 / min(min(q, 1.0 - q) for q in levels) - 1e-9))


def describe_values(names: Sequence[str], values: np.ndarray, noise_scale: float, noise_variance: float,
                    level: float = 0.95, *, half_width: float | None = None,
                    value_range: tuple[float, float] | None = None,
                    total_half_width: float | None = None) -> list[ReleasedValue]:
    """Per-coordinate report: value, scale, variance and the interval ``value ± h`` that contains the
    non-private estimate with probability >= level (noise only, per coordinate; Laplace by default:
    ``h = b log(1/(1-level)) + r``), clipped to ``value_range`` (where the estimate lies anyway), and the value
    itself clamped to the range (post-processing).  ``total_half_width`` adds the interval around the chain's
    expected estimate (noise and Monte Carlo, docs/release.md §4).

    Args:
        names: one per value.
        values: the released values (before clamping).
        noise_scale: the noise scale (Laplace b or Gaussian sigma).
        noise_variance: the noise variance per coordinate.
        level: coverage of the interval, in (0, 1).
        half_width: the noise interval's half-width (default: the Laplace one for ``noise_scale``).
        value_range: the statistic's known range ``(a, b)``, or None.
        total_half_width: the half-width of the noise + Monte Carlo interval, or None (not available).

    Returns:
        one :class:`ReleasedValue` per coordinate.

    Raises:
        AssumptionError: noise_scale not > 0 or level not in (0, 1).

    Examples:
        >>> v = describe_values(["w"], [0.5], noise_scale=1.0, noise_variance=2.0)[0]
        >>> round(v.interval[1] - v.value, 6)                  # log(1 / 0.05) + one grid step
        2.995732
        >>> p = describe_values(["p"], [1.2], noise_scale=0.1, noise_variance=0.02, value_range=(0.0, 1.0))[0]
        >>> p.value, p.raw_value, p.interval[1]                # clamped; the interval clipped to [0, 1]
        (1.0, 1.2, 1.0)
    """
    h = laplace_interval_halfwidth(noise_scale, level) if half_width is None else float(half_width)
    out = []
    for n, v in zip(names, values):
        v = float(v)
        shown = v if value_range is None else min(max(v, value_range[0]), value_range[1])
        out.append(ReleasedValue(name=n, value=shown, noise_scale=float(noise_scale),
                                 noise_variance=float(noise_variance), interval=_clip_interval(v, h, value_range),
                                 level=float(level), raw_value=v,
                                 total_interval=None if total_half_width is None else
                                 _clip_interval(v, total_half_width, value_range)))
    return out


def coordinate_subset_means(sites: Sequence[SiteSpec], coords: Sequence[str]) -> Statistic:
    """Posterior means of the named coordinates (names as :func:`coordinate_means` prints them:
    ``w[3]`` for vector sites, ``sigma`` for scalar ones) of real-support sites.

    Lipschitz constant (Euclidean -> L1) ``sqrt(k)`` for k selected coordinates: ``|P v|_1 <=
    sqrt(k) |P v|_2 <= sqrt(k) |v|_2`` (docs/release.md §2.1, the same bound as all coordinate means).

    Args:
        sites: the model's latent sites (:func:`site_specs`).
        coords: the coordinates' names.

    Returns:
        The :class:`Statistic`.

    Raises:
        ModelError: no real-support site, or a name that is not a coordinate of one.
        AssumptionError: no coordinate, or one listed twice.

    Examples:
        >>> stat = coordinate_subset_means([SiteSpec("w", 3)], ["w[0]", "w[2]"])
        >>> stat.names, round(stat.lipschitz, 6), stat.evaluate(np.array([[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]])).tolist()
        (('w[0]', 'w[2]'), 1.414214, [2.0, 4.0])
    """
    # columns are global (the draws hold every site, constrained ones included); only real-support
    # coordinates can be chosen
    all_cols, names = _real_columns(sites, None, "coordinate means")
    index = dict(zip(names, all_cols.tolist()))
    chosen = [c.strip() for c in coords if c.strip()]
    if not chosen:
        raise AssumptionError("--coords is empty; name the coordinates, e.g. --coords w[0],w[3]")
    if len(set(chosen)) != len(chosen):
        raise AssumptionError(f"--coords {','.join(chosen)} lists a coordinate twice; list each once")
    for c in chosen:
        if c not in index:
            raise ModelError(f"coordinate {c!r} is not a coordinate of a real-support latent site; choose from "
                             f"{', '.join(names[:8])}{' ...' if len(names) > 8 else ''}")
    cols = np.array([index[c] for c in chosen])

    def fn(z: np.ndarray) -> np.ndarray:
        return np.asarray(z, dtype=np.float64)[:, cols]   # the identity on the chosen real-support coordinates

    k = len(chosen)
    return Statistic(names=tuple(chosen), fn=fn, lipschitz=_sqrt_up(k),
                     description=f"posterior mean of {', '.join(chosen)}",
                     lipschitz_source="sqrt(k): selection of k coordinates (docs/release.md §2.1)",
                     l2_lipschitz=1.0, l2_lipschitz_source="1: a selection of coordinates (docs/release.md §2.5)")


def probability_at_profiles(profiles: np.ndarray, names: Sequence[str], site_offset: int = 0) -> Statistic:
    """Posterior mean of ``sigmoid(x_j . w)`` at public reference records ``x_j`` (rows of ``profiles``),
    ``w`` the coordinates ``site_offset : site_offset + d`` of the unconstrained draws.

    Lipschitz constant (Euclidean -> L1): ``sum_j |x_j|_2 / 4``, since ``sigmoid' <= 1/4`` gives
    ``|sigmoid(x.w) - sigmoid(x.w')| <= |x.(w - w')|/4 <= |x|_2 |w - w'|_2 / 4`` (docs/demo.md §3).
    Euclidean -> Euclidean: ``sqrt(sum_j |x_j|_2^2) / 4`` (the same per-coordinate bound, summed in squares:
    ``|P (w - w')|_2 <= |P|_F |w - w'|_2``).  Range [0, 1].

    Args:
        profiles: the public reference records, ``(num_profiles, num_features)``.
        names: one name per profile.
        site_offset: the first coordinate of ``w`` in the draws.

    Returns:
        The :class:`Statistic` (range (0, 1)).

    Raises:
        AssumptionError: a wrong shape, a non-finite profile, or a wrong number of names.

    Examples:
        >>> stat = probability_at_profiles(np.array([[0.0, 0.0], [3.0, 4.0]]), ["origin", "x"])
        >>> stat.lipschitz, stat.range                      # (0 + 5) / 4
        (1.25, (0.0, 1.0))
        >>> stat.evaluate(np.zeros((2, 2))).tolist()        # sigmoid(0)
        [0.5, 0.5]
    """
    P = np.asarray(profiles, dtype=np.float64)
    require(P.ndim == 2 and P.shape[0] >= 1, "profiles.shape", P.shape, "must be (num_profiles, num_features)")
    if not np.all(np.isfinite(P)):
        raise AssumptionError("profiles contain NaN or inf; pass finite public reference records")
    d = P.shape[1]
    names = tuple(names)
    require(len(names) == P.shape[0], "len(names)", len(names), f"must equal the number of profiles {P.shape[0]}")
    L = _up(sum((_q(_sqrt_up(sum(_q(float(v)) ** 2 for v in row))) for row in P), Fraction(0)) / 4)  # rounded up
    L2 = _up(_q(_sqrt_up(sum(_q(float(v)) ** 2 for v in P.reshape(-1)))) / 4)            # Frobenius, rounded up

    def fn(z: np.ndarray) -> np.ndarray:
        require(z.shape[1] >= site_offset + d, "draws dimension", z.shape[1], f"must be >= {site_offset + d}")
        logits = z[:, site_offset:site_offset + d] @ P.T
        return 0.5 * (1.0 + np.tanh(0.5 * logits))  # sigmoid, overflow-free

    return Statistic(names=names, fn=fn, lipschitz=L,
                     description="posterior mean of the predicted probability at public reference records",
                     lipschitz_source="sum_j |x_j|_2 / 4 (sigmoid' <= 1/4; docs/demo.md §3)",
                     l2_lipschitz=L2, l2_lipschitz_source="|P|_F / 4 (sigmoid' <= 1/4; docs/release.md §2.5)",
                     range=(0.0, 1.0))
