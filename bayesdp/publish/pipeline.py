"""certify -> sample -> release: the glue shared by ``bayesdp release``, ``bayesdp demo`` and ``bayesdp bench release``.

Order of operations (every refusal happens before the chain runs and before any noise is drawn;
the ledger is not touched by a refusal):

1. validate epsilon; analyse the model (:func:`bayesdp.analysis.analyze`) with the public domain;
2. pick the step size (default ``1 / total_smoothness``, a data-independent choice from the domain's
   constants; it satisfies ``gamma <= 2/(m + L)``, so the ULA coupling distance is ``grad_diff / m``);
3. build the :class:`~bayesdp.samplers.Sampler` (validates the configuration; nothing runs yet) and
   the statistic (its Lipschitz constant must be declared or derived);
4. the sensitivity routes: synchronous coupling (004 Proposition 3.7 with delta~ = 0, docs/release.md
   §1) from the analyzer's constants, and/or 004 Proposition 3.10 with user-certified constants; a
   configuration with no proven route (non-contracting step size, clipping, ...) is refused;
5. the ledger check (:meth:`bayesdp.budget.ledger.Ledger.check`) for (epsilon, route delta);
6. run the chain (``release="path"`` kept in memory only), drop a data-independent burn-in;
7. :func:`bayesdp.publish.release.release_statistic` (reserves the budget under the ledger's lock,
   draws the secure noise, commits).

The chain itself is never published: only the noisy statistic is.  The sampler therefore runs with
``uncertified=True`` (its own certificate — what publishing the draws would cost — is irrelevant to
the release; the analyzer's table still reports it for information).  The privacy of the release
comes from the coupling sensitivity, not from the chain's certificate.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import AssumptionError, ModelError, nonnegative, positive, positive_int, require
from .statistics import SiteSpec, Statistic, coordinate_means, function_mean

__all__ = ["run", "prepare", "run_chain", "release_draws", "Prepared", "PipelineResult", "site_specs",
           "coordinate_subset_means", "probability_at_profiles", "load_user_statistic", "check_level",
           "unconstrained_draws", "resolve_statistic"]

REAL_SUPPORTS = ("real()", "real")


# ---------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------


def site_specs(sampler, analysis) -> list[SiteSpec]:
    """The sampler's latent sites, in its flattening order, as :class:`SiteSpec` (unconstrained sizes).

    A site whose support (from the analyzer) is not the real line is ``constrained`` without a
    declared transform, so coordinate means of it are refused by :func:`coordinate_means`.

    Args:
        sampler: a :class:`~bayesdp.samplers.Sampler` (its ``potential.sites``).
        analysis: the model's analysis (its ``latent_sites`` and their supports).

    Returns:
        One :class:`SiteSpec` per latent site.

    Examples:
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> data = {"X": X, "y": (rng.random(200) < 0.5).astype(float)}
        >>> prep = prepare(logistic, data, domain=["X.norm=1", "y.values=0,1"], epsilon=1.0, ledger="ledger1.json",
        ...                budget_epsilon=2.0, num_steps=200)
        >>> site_specs(prep.sampler, prep.analysis)
        [SiteSpec(name='w', size=3, constrained=False, transform=None, transform_lipschitz=None)]
    """
    support = {n: sup for n, _, sup in analysis.latent_sites}
    specs = []
    for s in sampler.potential.sites:
        sup = support.get(s.name)
        specs.append(SiteSpec(s.name, int(s.size), constrained=sup not in REAL_SUPPORTS))
    return specs


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
    if not any(not s.constrained for s in sites):
        raise ModelError("no real-support latent site: coordinate means need a site with support on the real line")
    # columns are global (the draws hold every site, constrained ones included); only real-support
    # coordinates can be chosen
    index, names, offset = {}, [], 0
    for site in sites:
        site_names = coordinate_means([SiteSpec(site.name, site.size, constrained=False)]).names
        if not site.constrained:
            for j, n in enumerate(site_names):
                index[n] = offset + j
            names += list(site_names)
        offset += int(site.size)
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
    return Statistic(names=tuple(chosen), fn=fn, lipschitz=math.sqrt(k),
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
    L = float(np.sum(np.linalg.norm(P, axis=1))) / 4.0
    L2 = float(np.linalg.norm(P)) / 4.0 * (1.0 + 1e-12)      # Frobenius norm, rounded up

    def fn(z: np.ndarray) -> np.ndarray:
        require(z.shape[1] >= site_offset + d, "draws dimension", z.shape[1], f"must be >= {site_offset + d}")
        logits = z[:, site_offset:site_offset + d] @ P.T
        return 0.5 * (1.0 + np.tanh(0.5 * logits))  # sigmoid, overflow-free

    return Statistic(names=names, fn=fn, lipschitz=L,
                     description="posterior mean of the predicted probability at public reference records",
                     lipschitz_source="sum_j |x_j|_2 / 4 (sigmoid' <= 1/4; docs/demo.md §3)",
                     l2_lipschitz=L2, l2_lipschitz_source="|P|_F / 4 (sigmoid' <= 1/4; docs/release.md §2.5)",
                     range=(0.0, 1.0))


def load_user_statistic(spec: str, lipschitz: float | None, names: Sequence[str] | None,
                        l2_lipschitz: float | None = None, require_lipschitz: bool = True) -> Statistic:
    """``path/to/file.py:function`` mapping the unconstrained draws (n, dim) to (n,) or (n, k);
    ``lipschitz`` must be declared (``|f(z) - f(z')|_1 <= L |z - z'|_2``), else refused; ``l2_lipschitz``
    optionally (``|f(z) - f(z')|_2 <= L2 |z - z'|_2``, Gaussian noise).

    Args:
        spec: ``path/to/file.py:function``.
        lipschitz: the declared Euclidean -> L1 constant.
        names: one name per output value (default: the function's name).
        l2_lipschitz: the declared Euclidean -> Euclidean constant.
        require_lipschitz: refuse a statistic without ``lipschitz`` (sample-and-aggregate needs none).

    Returns:
        The :class:`Statistic`.

    Raises:
        AssumptionError: a malformed spec, a missing file or function, a file that fails to import, or no
            declared constant.

    Examples:
        >>> with open("stat.py", "w") as f:
        ...     _ = f.write("def first(z): return z[:, 0]")
        >>> stat = load_user_statistic("stat.py:first", lipschitz=1.0, names=None)
        >>> stat.names, stat.evaluate(np.array([[1.0, 5.0], [3.0, 7.0]])).tolist()
        (('first',), [2.0])
        >>> load_user_statistic("stat.py:first", lipschitz=None, names=None)
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: --stat stat.py:first: statistic has no declared Lipschitz constant; pass --lipschitz L (|f(z) - f(z')|_1 <= L |z - z'|_2 on the unconstrained space)
    """
    import importlib.util
    import os

    if ":" not in spec or not spec.rsplit(":", 1)[0].endswith(".py"):
        raise AssumptionError(f"--stat {spec!r} is not 'mean' nor path/to/file.py:function")
    if lipschitz is None and require_lipschitz:
        raise AssumptionError(f"--stat {spec}: statistic has no declared Lipschitz constant; pass --lipschitz L "
                              "(|f(z) - f(z')|_1 <= L |z - z'|_2 on the unconstrained space)")
    path, func = spec.rsplit(":", 1)
    if not os.path.isfile(path):
        raise AssumptionError(f"--stat {spec}: file {path} does not exist; pass path/to/file.py:function")
    try:
        s = importlib.util.spec_from_file_location("bayesdp_user_statistic_" + str(abs(hash(os.path.abspath(path)))),
                                                   path)
        mod = importlib.util.module_from_spec(s)
        s.loader.exec_module(mod)
    except Exception as exc:  # noqa: BLE001 - the user's file, reported in one line
        raise AssumptionError(f"--stat {spec}: the file failed to import ({type(exc).__name__}); fix it") from None
    fn = getattr(mod, func, None)
    if not callable(fn):
        raise AssumptionError(f"--stat {spec}: no function {func!r} in {path}")
    names = tuple(names) if names else (func,)
    if lipschitz is None:        # sample-and-aggregate clamps the chunk estimates: no constant is needed
        return Statistic(names=names, fn=lambda z: np.asarray(fn(z), dtype=np.float64), lipschitz=math.inf,
                         description=func, lipschitz_source="not declared (not needed by sample-and-aggregate)")
    return function_mean(lambda z: np.asarray(fn(z), dtype=np.float64), lipschitz, names, description=func,
                         l2_lipschitz=l2_lipschitz)


# ---------------------------------------------------------------------------
# the pipeline
# ---------------------------------------------------------------------------


@dataclass
class Prepared:
    """Everything decided before the chain runs (see the module docstring); made by :func:`prepare`.

    Attributes:
        model: the NumPyro model.
        model_name: its name.
        data: the validated records.
        analysis: the model's analysis.
        report: the analyzer's certificate table (a CertifyReport).
        constants: the constants the coupling bounds read.
        sampler: the :class:`~bayesdp.samplers.Sampler` (not run yet).
        statistic: the statistic to release.
        epsilon: the release's epsilon.
        ledger: the ledger's path.
        budget_epsilon: the budget when the ledger is created.
        budget_delta: its delta.
        dataset: the dataset name.
        burn_in: kept draws dropped per chain.
        concentration: user-certified 004 Proposition 3.10 constants, or None.
        route: the sensitivity route that will be used.
        routes: every proven route.
        coupling: the coupling bound, or None.
        coupling_failed: the coupling bounds that do not apply, with the reason.
        step_size_rule: how the step size was chosen.
        max_delta: the largest route delta accepted.
        level: the coverage of the intervals.
        noise: ``"auto"``, ``"laplace"`` or ``"gaussian"``.
        noise_delta: the delta Gaussian noise may use (0: Laplace only).
        noise_plan: the :class:`~bayesdp.publish.release.NoisePlan`.

    Examples:
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> data = {"X": X, "y": (rng.random(200) < 0.5).astype(float)}
        >>> prep = prepare(logistic, data, domain=["X.norm=1", "y.values=0,1"], epsilon=1.0, ledger="ledger2.json",
        ...                budget_epsilon=2.0, num_steps=200)
        >>> prep.statistic.names, prep.burn_in
        (('w[0]', 'w[1]', 'w[2]'), 100)
    """

    model: Callable
    model_name: str
    data: Mapping[str, np.ndarray]
    analysis: Any
    report: Any                      # CertifyReport (the analyzer's certificate table)
    constants: dict
    sampler: Any                     # bayesdp.samplers.Sampler (not run yet)
    statistic: Statistic
    epsilon: float
    ledger: str
    budget_epsilon: float | None
    budget_delta: float | None
    dataset: str | None
    burn_in: int
    concentration: Mapping[str, float] | None
    route: Any                       # the SensitivityRoute that will be used
    routes: list
    coupling: Any
    coupling_failed: list
    step_size_rule: str
    max_delta: float | None = None
    level: float = 0.95
    noise: str = "auto"              # "auto" | "laplace" | "gaussian"
    noise_delta: float = 0.0         # the delta Gaussian noise may use (0: Laplace only)
    noise_plan: Any = None           # bayesdp.publish.release.NoisePlan, decided from the sensitivities

    def chain_design(self) -> dict:
        """What the data-independent Monte Carlo bound needs about the kept draws (docs/release.md §4.2).

        Returns:
            ``inverse_temperature``, ``num_steps``, ``burn_in``, ``thinning`` and ``num_chains``.
        """
        c = self.sampler.config
        return {"inverse_temperature": c.inverse_temperature, "num_steps": c.num_steps, "burn_in": self.burn_in,
                "thinning": c.thinning, "num_chains": c.num_chains}


@dataclass
class PipelineResult:
    """What :func:`run` returns: the release and, NOT FOR RELEASE, the non-private estimate.

    Attributes:
        result: the :class:`~bayesdp.publish.release.ReleaseResult` (what may be published).
        nonprivate: the non-private Monte Carlo estimate: NEVER publish.
        prepared: the :class:`Prepared` decisions.
        timing: seconds spent, by stage.
        chain_keys: where the chain keys came from (a label only: no key or seed is ever recorded).

    Examples:
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> data = {"X": X, "y": (rng.random(200) < 0.5).astype(float)}
        >>> res = run(logistic, data, domain=["X.norm=1", "y.values=0,1"], epsilon=1.0, ledger="ledger3.json",
        ...           budget_epsilon=2.0, num_steps=200)
        >>> res.result.remaining_budget, res.chain_info()["published"]
        ({'epsilon': 1.0, 'delta': 0.0}, False)
        >>> "nonprivate" in str(res.to_dict())
        False
    """

    result: Any                      # ReleaseResult (what may be published)
    nonprivate: np.ndarray           # the non-private Monte Carlo estimate: NEVER publish
    prepared: Prepared
    timing: dict = field(default_factory=dict)
    #: where the chain keys came from (a label only: no key or seed is ever recorded)
    chain_keys: str | None = None

    def chain_info(self) -> dict:
        """The (unpublished) chain's configuration, as ``bayesdp release`` reports it.

        Returns:
            A JSON-ready dict (``published`` is always False; the keys' label, never a key).
        """
        s = self.prepared.sampler
        c = s.config
        return {"published": False, "sampler": c.sampler.upper(), "step_size": c.step_size,
                "step_size_rule": self.prepared.step_size_rule, "num_steps": c.num_steps,
                "burn_in": self.prepared.burn_in, "num_chains": c.num_chains, "batch_size": c.batch_size,
                "inverse_temperature": c.inverse_temperature, "thinning": c.thinning, "init": c.init,
                "chain_keys": _keys_note(self.chain_keys),
                "note": ("the chain is not published; it runs with uncertified=True and the release's privacy "
                         "comes from the coupling sensitivity (004 Proposition 3.7), not from the chain's "
                         "own certificate")}

    def to_dict(self) -> dict:
        """JSON of ``bayesdp release --json`` (never contains the non-private estimate)."""
        out = self.result.to_dict()
        out["chain"] = self.chain_info()
        out["coupling"] = None if self.prepared.coupling is None else self.prepared.coupling.to_dict()
        out["statistic"] = {"description": self.prepared.statistic.description,
                            "lipschitz": self.prepared.statistic.lipschitz,
                            "lipschitz_source": self.prepared.statistic.lipschitz_source}
        out["timing"] = dict(self.timing)
        return out


def _sampler_constants(constants: Mapping[str, Any], sampler: str, step_size: float, batch_size: int | None,
                       clip_norm: float | None) -> dict:
    c = {k: v for k, v in constants.items() if k != "provenance"}
    c.update(step_size=step_size, sampler=sampler.upper(), batch_size=batch_size, clip_norm=clip_norm)
    # v_convex (analyzer): "every likelihood and prior-V term is convex" -- for every record of the domain,
    # which is exactly the per-record convexity (record_strong_convexity >= 0) the SGLD coupling needs.
    if constants.get("v_convex") is True:
        c["record_strong_convexity"] = 0.0
    return c


def prepare(model: Callable, data: Mapping[str, Any], *, domain, statistic: Statistic | Callable | str = "mean",
            epsilon: float, ledger: str, budget_epsilon: float | None = None, budget_delta: float | None = None,
            dataset: str | None = None, sampler: str = "ula", step_size: float | None = None,
            num_steps: int = 2000, burn_in: int | None = None, batch_size: int | None = None,
            inverse_temperature: float = 1.0, clip_norm: float | None = None, num_chains: int = 1,
            thinning: int = 1, model_kwargs: Mapping[str, Any] | None = None, model_name: str | None = None,
            concentration: Mapping[str, float] | None = None, max_delta: float | None = None,
            level: float = 0.95, delta: float = 1e-5, noise: str = "auto", noise_delta: float = 0.0,
            value_range: Sequence[float] | None = None) -> Prepared:
    """Steps 1-5 of the module docstring; raises a one-line error (nothing run, nothing drawn,
    ledger untouched) on any refusal.  ``statistic``: a :class:`Statistic`, ``"mean"`` (all
    coordinate means) or a callable ``(sampler, analysis) -> Statistic``.  ``delta`` is the delta of the
    analyzer's certificate table; ``noise_delta`` the delta Gaussian noise may use (``noise``: auto, laplace,
    gaussian; docs/release.md §3); ``value_range`` a declared range of the statistic (clamping).

    Args:
        model: the NumPyro model.
        data: the records.
        domain: the public domain (a :class:`~bayesdp.analysis.Domain` or its strings).
        statistic: a :class:`Statistic`, ``"mean"`` or a builder ``(sampler, analysis) -> Statistic``.
        epsilon: > 0.
        ledger: the ledger's path.
        budget_epsilon: the budget when the ledger is created.
        budget_delta: its delta.
        dataset: the dataset name (checked against the ledger's).
        sampler: ``"ula"`` or ``"sgld"``.
        step_size: gamma (default ``1 / total_smoothness``).
        num_steps: steps per chain.
        burn_in: kept draws dropped per chain (default: half).
        batch_size: SGLD's batch size.
        inverse_temperature: beta of the chain.
        clip_norm: a gradient clipping norm.
        num_chains: independent chains.
        thinning: keep every ``thinning``-th draw.
        model_kwargs: keyword arguments of the model.
        model_name: the model's name in the analysis.
        concentration: user-certified 004 Proposition 3.10 constants.
        max_delta: the largest route delta accepted.
        level: the coverage of the intervals.
        delta: the delta of the analyzer's certificate table.
        noise: ``"auto"``, ``"laplace"`` or ``"gaussian"``.
        noise_delta: the delta Gaussian noise may use.
        value_range: a declared range of the statistic.

    Returns:
        The :class:`Prepared` decisions.

    Raises:
        AssumptionError: a bad parameter, no proven coupling bound, no step size.
        ModelError: a statistic the model cannot support.
        BudgetError: the release would not fit the ledger's budget (the ledger is untouched).

    Examples:
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> data = {"X": X, "y": (rng.random(200) < 0.5).astype(float)}
        >>> prep = prepare(logistic, data, domain=["X.norm=1", "y.values=0,1"], epsilon=1.0, ledger="ledger4.json",
        ...                budget_epsilon=2.0, num_steps=200)
        >>> prep.step_size_rule
        "1 / total_smoothness (data independent: from the domain's constants)"
        >>> prep.chain_design()["burn_in"]
        100
    """
    from ..analysis import Domain, analyze, certify
    from ..budget.ledger import Ledger
    from ..samplers import Sampler
    from .release import sensitivity_routes
    from .sensitivity import best_coupling, choose_route

    from ..analysis.records import validate_records
    from ..resources import check_state_file

    from .release import check_noise, plan_noise

    eps = positive("epsilon", epsilon, "pass a positive epsilon")
    noise_delta = check_noise(noise, noise_delta)
    if sampler not in ("ula", "sgld"):
        raise AssumptionError(f"sampler = {sampler!r} must be 'ula' or 'sgld'")
    num_steps = positive_int("num_steps", num_steps)
    thinning = positive_int("thinning", thinning)
    level = check_level(level)
    check_state_file(ledger, "ledger")
    data, _ = validate_records(data, model, model_kwargs)    # shapes, finiteness, labels: before any work
    dom = Domain.parse(list(domain)) if isinstance(domain, (list, tuple)) else domain
    an = analyze(model, data=data, domain=dom, model_kwargs=model_kwargs, clip_norm=clip_norm, model_name=model_name)
    consts = an.constants.to_dict()
    if step_size is None:
        L = consts.get("total_smoothness")
        if L is None:
            raise AssumptionError("step_size not given and total_smoothness is not proven for this model; pass "
                                  "--step-size (it must be data independent)")
        step_size = 1.0 / float(L)
        rule = "1 / total_smoothness (data independent: from the domain's constants)"
    else:
        step_size = positive("step_size", step_size, "pass a positive step size")
        rule = "given"
    num_kept_steps = num_steps // thinning
    if burn_in is None:
        burn_in = num_kept_steps // 2
    burn_in = int(nonnegative("burn_in", burn_in))
    require(burn_in < num_kept_steps, "burn_in", burn_in,
            f"must be < the number of kept draws per chain ({num_kept_steps})", "lower --burn-in")
    rep = certify(model, data=data, domain=dom, step_size=step_size, num_steps=num_steps, batch_size=batch_size,
                  inverse_temperature=inverse_temperature, clip_norm=clip_norm, delta=delta,
                  model_kwargs=model_kwargs, sampler=sampler, analysis=an, model_name=model_name, require_any=False)
    smp = Sampler(model, data, sampler=sampler, step_size=step_size, num_steps=num_steps,
                  inverse_temperature=inverse_temperature, batch_size=batch_size, clip_norm=clip_norm,
                  num_chains=num_chains, release="thinned" if thinning > 1 else "path", thinning=thinning,
                  init="zeros", uncertified=True, model_kwargs=model_kwargs)
    stat = resolve_statistic(statistic, smp, an, value_range)
    stat.check(smp.potential.dim)   # a statistic that raises or has the wrong shape: refused before the chain
    constants = _sampler_constants(consts, sampler, step_size, batch_size, clip_norm)
    coupling, failed = best_coupling(**{k: v for k, v in constants.items() if v is not None})
    if coupling is None and concentration is None:
        reasons = "; ".join(f"{src}: {why}" for src, why in failed)
        raise AssumptionError(f"no coupling bound is proven for this sampler configuration ({reasons}); use a "
                              "contracting step size or declare 004 Proposition 3.10 constants")
    routes = sensitivity_routes(stat, coupling, concentration)
    route = choose_route(routes, max_delta)
    plan = plan_noise(stat, route, eps, noise_delta, noise)
    Ledger.open(ledger, budget=budget_epsilon, budget_delta=budget_delta, dataset=dataset).check(
        eps, plan.charged_delta, curve=plan.curve, event=dict(plan.event))
    return Prepared(model=model, model_name=model_name or getattr(model, "__name__", "model"), data=data,
                    analysis=an, report=rep, constants=constants, sampler=smp, statistic=stat, epsilon=eps,
                    ledger=str(ledger), budget_epsilon=budget_epsilon, budget_delta=budget_delta, dataset=dataset,
                    burn_in=burn_in, concentration=concentration, route=route, routes=routes, coupling=coupling,
                    coupling_failed=failed, step_size_rule=rule, max_delta=max_delta, level=level, noise=noise,
                    noise_delta=noise_delta, noise_plan=plan)


def check_level(level: float) -> float:
    """The interval level, in (0, 1): checked before anything is drawn (a bad level used to be refused
    after the noise, leaving the epsilon charged).

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
    from ..errors import check_finite

    x = check_finite("level", level)
    if not 0.0 < x < 1.0:
        raise AssumptionError(f"level = {level!r} must be in (0, 1); pass e.g. 0.95")
    return x


def resolve_statistic(statistic, sampler, analysis, value_range=None) -> Statistic:
    """The :class:`~bayesdp.publish.statistics.Statistic` a release asks for: ``statistic`` itself, ``"mean"``
    (the means of every latent coordinate) or a builder ``statistic(sampler, analysis)``; ``value_range``
    intersected with its own range.

    Args:
        statistic: a ``Statistic``, ``"mean"`` or a builder.
        sampler: what the builder reads the sites from (a sampler, or its sites only).
        analysis: the model's analysis.
        value_range: a declared public range ``(a, b)`` of every value, or None.

    Returns:
        the statistic.

    Raises:
        AssumptionError: ``statistic`` is none of these.

    Examples:
        >>> from bayesdp.publish.statistics import SiteSpec, coordinate_means
        >>> st = resolve_statistic(coordinate_means([SiteSpec("w", 2)]), None, None, (-1.0, 1.0))
        >>> st.num_coords, st.range
        (2, (-1.0, 1.0))
    """
    if isinstance(statistic, Statistic):
        stat = statistic
    elif isinstance(statistic, str) and statistic == "mean":
        stat = coordinate_means(site_specs(sampler, analysis))
    elif callable(statistic):
        stat = statistic(sampler, analysis)
    else:
        raise AssumptionError(f"statistic = {statistic!r} must be 'mean', a Statistic or a builder")
    return stat.with_range(value_range)


def unconstrained_draws(sampler) -> np.ndarray:
    """(chains, draws, dim) draws of a run sampler in its UNCONSTRAINED space (site order).

    Args:
        sampler: a :class:`~bayesdp.samplers.Sampler` that has run.

    Returns:
        The ``(chains, draws, dim)`` array.

    Raises:
        AssumptionError: draws of an unexpected shape.

    Examples:
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> data = {"X": X, "y": (rng.random(200) < 0.5).astype(float)}
        >>> prep = prepare(logistic, data, domain=["X.norm=1", "y.values=0,1"], epsilon=1.0, ledger="ledger5.json",
        ...                budget_epsilon=2.0, num_steps=200)
        >>> _ = run_chain(prep)
        >>> unconstrained_draws(prep.sampler).shape
        (1, 200, 3)
    """
    arr = np.asarray(sampler.get_unconstrained_samples(group_by_chain=True))
    require(arr.ndim == 3 and arr.shape[-1] == sampler.potential.dim, "draws.shape", arr.shape,
            f"must be (chains, draws, {sampler.potential.dim})")
    return arr


def _keys_note(label: str | None) -> str | None:
    from ..samplers.keys import REPRODUCIBLE

    if label == REPRODUCIBLE:
        return (f"{REPRODUCIBLE} for the chain (a seed was given explicitly); the release stays eps-DP: the "
                "coupling bound holds for every realisation of the chain and the noise comes from the OS CSPRNG")
    return label


def run_chain(prep: Prepared, seed: int | None = None) -> tuple[np.ndarray, str, dict]:
    """Run the (unpublished) chain; return the kept draws after burn-in as (n, dim), the label of its
    keys (:mod:`bayesdp.samplers.keys`: OS CSPRNG without ``seed``) and the timing.  The seed itself is
    never returned nor recorded.

    Args:
        prep: the decisions of :func:`prepare`.
        seed: a seed of the chain (None: OS CSPRNG keys).

    Returns:
        ``(draws (n, dim), key label, timing)``.

    Examples:
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> data = {"X": X, "y": (rng.random(200) < 0.5).astype(float)}
        >>> prep = prepare(logistic, data, domain=["X.norm=1", "y.values=0,1"], epsilon=1.0, ledger="ledger6.json",
        ...                budget_epsilon=2.0, num_steps=200)
        >>> draws, keys, _ = run_chain(prep)
        >>> draws.shape, keys                      # 200 steps, burn-in 100
        ((100, 3), 'OS CSPRNG (secrets): not reproducible')
    """
    t0 = time.perf_counter()
    prep.sampler.run(seed)
    draws = unconstrained_draws(prep.sampler)[:, prep.burn_in:, :]
    timing = {"chain_s": time.perf_counter() - t0, **{f"chain_{k}": v for k, v in prep.sampler.timing.items()}}
    return draws.reshape(-1, draws.shape[-1]).astype(np.float64), prep.sampler.key_source, timing


def release_draws(prep: Prepared, draws: np.ndarray, *, ledger: str | None = None, epsilon: float | None = None):
    """Step 7: reserve, draw the secure noise, commit (``release_statistic``).

    Args:
        prep: the decisions of :func:`prepare`.
        draws: the kept draws ``(n, dim)`` (:func:`run_chain`).
        ledger: another ledger to charge (default: ``prep.ledger``).
        epsilon: another epsilon (default: ``prep.epsilon``).

    Returns:
        The :class:`~bayesdp.publish.release.ReleaseResult`.

    Raises:
        BudgetError: over budget (nothing drawn).

    Examples:
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> data = {"X": X, "y": (rng.random(200) < 0.5).astype(float)}
        >>> prep = prepare(logistic, data, domain=["X.norm=1", "y.values=0,1"], epsilon=1.0, ledger="ledger7.json",
        ...                budget_epsilon=2.0, num_steps=200)
        >>> draws, _, _ = run_chain(prep)
        >>> res = release_draws(prep, draws)
        >>> res.names, res.remaining_budget
        (('w[0]', 'w[1]', 'w[2]'), {'epsilon': 1.0, 'delta': 0.0})
    """
    from .release import release_statistic

    return release_statistic(draws, prep.statistic, prep.epsilon if epsilon is None else epsilon,
                             prep.ledger if ledger is None else ledger, coupling=prep.coupling,
                             concentration=prep.concentration, budget_epsilon=prep.budget_epsilon,
                             budget_delta=prep.budget_delta, dataset=prep.dataset, max_delta=prep.max_delta,
                             level=prep.level, noise=prep.noise, delta=prep.noise_delta, chain=prep.chain_design())


def run(model: Callable, data: Mapping[str, Any], *, seed: int | None = None, **kwargs: Any) -> PipelineResult:
    """prepare -> run the chain -> release.  Keyword arguments: those of :func:`prepare`.

    Args:
        model: the NumPyro model.
        data: the records.
        seed: a seed of the (unpublished) chain (None: OS CSPRNG keys).
        **kwargs: the keyword arguments of :func:`prepare`.

    Returns:
        The :class:`PipelineResult`.

    Raises:
        BayesDPError: a refusal of :func:`prepare` (nothing run, nothing drawn) or over budget.

    Examples:
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> data = {"X": X, "y": (rng.random(200) < 0.5).astype(float)}
        >>> res = run(logistic, data, domain=["X.norm=1", "y.values=0,1"], epsilon=1.0, ledger="ledger8.json",
        ...           budget_epsilon=2.0, num_steps=200)
        >>> res.result.names, res.result.epsilon
        (('w[0]', 'w[1]', 'w[2]'), 1.0)
    """
    t0 = time.perf_counter()
    prep = prepare(model, data, **kwargs)
    t1 = time.perf_counter()
    draws, keys, timing = run_chain(prep, seed)
    nonprivate = prep.statistic.evaluate(draws)
    t2 = time.perf_counter()
    result = release_draws(prep, draws)
    timing.update(analyze_s=t1 - t0, release_s=time.perf_counter() - t2, total_s=time.perf_counter() - t0)
    return PipelineResult(result=result, nonprivate=nonprivate, prepared=prep, timing=timing, chain_keys=keys)
