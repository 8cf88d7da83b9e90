"""Release utility (issue #17): Euclidean constants of the statistics, Gaussian releases and the automatic noise,
clamping and intervals, the data-independent Monte Carlo bound, sample-and-aggregate and the path release.

Independent values: the L2 constants attained on explicit perturbations and never exceeded on random ones; the
Monte Carlo bound equal to the exact standard deviation of an AR(1) chain's average (closed-form covariances);
expected squared errors recomputed from the windows; sample-and-aggregate's window checked by replacing a record;
the path temperature against Delta sqrt(beta gamma n / 2) and dp-accounting's PLD of the n Gaussian steps.
"""

import json
import math

import numpy as np
import pytest

import bayesdp
import bayesdp.publish.noise as noise_mod
from bayesdp.errors import AssumptionError
from bayesdp.publish import sensitivity as S
from bayesdp.publish.aggregate import aggregate_estimate, aggregate_route, choose_chunks, partition
from bayesdp.budget.ledger import Ledger
from bayesdp.publish.path import gdp_mu, path_inverse_temperature, path_num_steps
from bayesdp.publish.statistics import probability_at_profiles
from bayesdp.publish.noiseplan import plan_noise
from bayesdp.publish.release import release_statistic
from bayesdp.publish.spec import ChainOptions, Mean, ReleaseSpec, SampleAggregate
from bayesdp.publish.statistics import (SiteSpec, coordinate_means, coordinate_quantiles, exceedance_probabilities,
                                        function_mean)


def _sup(a, b):
    return float(np.max(np.linalg.norm(a - b, axis=1)))


# ---------------------------------------------------------------------------
# Euclidean -> Euclidean constants (docs/release.md §2.5)


def test_l2_constant_of_coordinate_means_is_one_and_attained():
    st = coordinate_means([SiteSpec("w", 3), SiteSpec("b", 1)])
    assert st.l2 == 1.0 and st.lipschitz == pytest.approx(2.0)
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 4))
    v = rng.normal(size=4)
    moved = a + v                               # every draw moved by the same v: the means move by exactly v
    assert np.linalg.norm(st.evaluate(moved) - st.evaluate(a)) == pytest.approx(np.linalg.norm(v))
    for _ in range(200):
        b = a + rng.normal(size=a.shape) * rng.uniform(0, 2)
        assert np.linalg.norm(st.evaluate(b) - st.evaluate(a)) <= st.l2 * _sup(a, b) + 1e-12


def test_l2_constant_of_constrained_means_is_the_largest_transform_constant():
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731  (1/4-Lipschitz)
    st = coordinate_means([SiteSpec("p", 2, constrained=True, transform=sig, transform_lipschitz=0.25),
                           SiteSpec("mu", 1)])
    assert st.l2 == 1.0
    st2 = coordinate_means([SiteSpec("p", 2, constrained=True, transform=sig, transform_lipschitz=0.25)])
    assert st2.l2 == 0.25
    rng = np.random.default_rng(1)
    for _ in range(200):
        a, b = rng.normal(size=(2, 5, 2)) * 3
        assert np.linalg.norm(st2.evaluate(a) - st2.evaluate(b)) <= st2.l2 * _sup(a, b) + 1e-12


def test_l2_constant_of_quantiles_is_sqrt_km_and_attained():
    st4 = coordinate_quantiles([SiteSpec("b", 1)], [0.125, 0.375, 0.625, 0.875])
    assert st4.l2 == pytest.approx(2.0)
    b = np.arange(9.0)[:, None]
    D = 0.5
    assert np.linalg.norm(st4.evaluate(b + D) - st4.evaluate(b)) == pytest.approx(st4.l2 * D)
    st = coordinate_quantiles([SiteSpec("w", 3)], [0.1, 0.9])
    assert st.l2 == pytest.approx(math.sqrt(6))
    rng = np.random.default_rng(2)
    for _ in range(300):
        a = rng.normal(size=(7, 3))
        d = rng.normal(size=(7, 3))
        a2 = a + d / np.linalg.norm(d, axis=1, keepdims=True) * rng.uniform(0, 1, size=(7, 1))
        assert np.linalg.norm(st.evaluate(a2) - st.evaluate(a)) <= st.l2 * _sup(a, a2) + 1e-12


def test_l2_constant_of_ramp_probabilities_and_range():
    st = exceedance_probabilities([SiteSpec("w", 4)], threshold=1.0, width=0.2)
    assert st.l2 == pytest.approx(5.0) and st.range == (0.0, 1.0)
    base = np.full((1, 4), 1.0)
    eps = 1e-3
    moved = base + eps / 2                     # |dz|_2 = eps; every output moves by eps / (2 width)
    assert np.linalg.norm(st.evaluate(moved) - st.evaluate(base)) == pytest.approx(st.l2 * eps)


def test_l2_constant_of_profiles_is_frobenius_over_four():
    rng = np.random.default_rng(3)
    P = rng.normal(size=(2, 5))
    st = probability_at_profiles(P, ["a", "b"])
    assert st.l2 == pytest.approx(np.linalg.norm(P) / 4, rel=1e-9) and st.range == (0.0, 1.0)
    z = rng.normal(size=(2000, 5))
    dz = rng.normal(size=(2000, 5)) * 10 ** rng.uniform(-4, 1, size=(2000, 1))
    lhs = np.linalg.norm(st.fn(z) - st.fn(z + dz), axis=1)
    assert np.all(lhs <= st.l2 * np.linalg.norm(dz, axis=1) * (1 + 1e-9))
    one = probability_at_profiles(P[:1], ["a"])
    h = 1e-6 * P[0] / np.linalg.norm(P[0])
    assert abs(one.fn(h[None])[0, 0] - one.fn(-h[None])[0, 0]) / 2e-6 == pytest.approx(one.l2, rel=1e-6)


def test_user_statistic_l2_falls_back_to_l1_and_range_intersects():
    st = function_mean(lambda z: z[:, :2], 3.0, ["a", "b"])
    assert st.l2 == 3.0                         # |v|_2 <= |v|_1: the L1 constant is valid
    assert function_mean(lambda z: z[:, :2], 3.0, ["a", "b"], l2_lipschitz=1.5).l2 == 1.5
    p = exceedance_probabilities([SiteSpec("w", 1)], 0.0, 1.0)
    assert p.with_range((-5, 0.5)).range == (0.0, 0.5)
    for bad in ((1, 0), (2, 3), (0, float("inf")), ("a", 1)):
        with pytest.raises(AssumptionError, match="range"):
            p.with_range(bad)


# ---------------------------------------------------------------------------
# Monte Carlo bound (docs/release.md §4.2)


@pytest.mark.parametrize("burn_in,thinning,chains", [(0, 1, 1), (50, 1, 3), (10, 4, 2)])
def test_monte_carlo_bound_is_exact_for_a_gaussian_ar1_chain(burn_in, thinning, chains):
    """For U = m x^2 / 2 the ULA chain from 0 is X_k = rho X_{k-1} + s xi_k (rho = 1 - gamma m): the average F of
    the kept draws is Gaussian and the bound's Lipschitz constant is its standard deviation exactly (the
    perturbation inequality is an equality for a linear step)."""
    gamma, m, beta, n = 0.05, 2.0, 0.7, 200
    rho, s = 1 - gamma * m, math.sqrt(2 * gamma / beta)
    b = S.coupling_strongly_convex(gamma, m, m, grad_diff=1.0)
    mc = S.monte_carlo_bound(b, inverse_temperature=beta, num_steps=n, burn_in=burn_in, thinning=thinning,
                             num_chains=chains)
    kept = np.arange((burn_in + 1) * thinning, (n // thinning) * thinning + 1, thinning)
    i, j = np.meshgrid(kept, kept)
    lo = np.minimum(i, j)
    cov = s * s * rho ** np.abs(i - j) * (1 - rho ** (2 * lo)) / (1 - rho * rho)
    sd = math.sqrt(cov.sum() / kept.size ** 2 / chains)
    assert mc.lipschitz_noise == pytest.approx(sd, rel=1e-9)
    assert mc.lipschitz_noise >= sd
    assert mc.half_width(2.0, 0.05) == pytest.approx(2.0 * sd * math.sqrt(2 * math.log(40)), rel=1e-9)
    assert S.monte_carlo_bound(S.coupling_k_plus_v(0.1, 1.0, 1.0, 0.5), inverse_temperature=1.0, num_steps=10,
                               burn_in=0) is None


# ---------------------------------------------------------------------------
# Gaussian releases, the automatic noise, clamping


def _draws(rng, n=400, d=3):
    return rng.normal(size=(n, d))


def _counting(monkeypatch):
    c = {"noise": 0}
    real = noise_mod.sample_discrete_laplace

    def counted(*a, **k):
        c["noise"] += 1
        return real(*a, **k)

    monkeypatch.setattr(noise_mod, "sample_discrete_laplace", counted)
    return c


def test_gaussian_release_end_to_end(tmp_path):
    rng = np.random.default_rng(4)
    st = coordinate_means([SiteSpec("theta", 3)])
    coupling = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)          # distance 0.5
    path = tmp_path / "l.jsonl"
    Ledger.open(path, budget=3.0, budget_delta=1e-5)
    res = release_statistic(_draws(rng), st, 1.0, path, coupling=coupling,
                            spec=ReleaseSpec(noise="gaussian", delta=1e-6))
    d = res.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["noise_mechanism"] == "gaussian" and d["sensitivity_norm"] == "L2"
    assert d["proven_sensitivity"] == pytest.approx(0.5)              # L2 window: 1 x coupling distance
    assert d["delta"] == pytest.approx(1e-6) and d["epsilon"] == 1.0
    assert d["source"].endswith("CKS20 Theorem 14")
    rho = res.dp_event["rho"]
    assert (0.5 + res.dp_event["grid_rounding"]) ** 2 / (2 * d["noise_scale"] ** 2) <= rho
    assert bayesdp.RDP.linear(rho).epsilon(1e-6) <= 1.0
    assert type(res.to_dp_event()).__name__ == "ZCDpEvent"
    s = Ledger(path).verify()
    assert s["entries"][0]["status"] == "committed" and s["entries"][0]["dp_event"]["type"] == "discrete_gaussian"


@pytest.mark.parametrize("k", [1, 30])
def test_auto_noise_picks_the_smaller_expected_error(k):
    """Laplace: k 2 b^2 with b = (sqrt(k) C + k r)/eps; Gaussian: k sigma^2 with sigma^2 >= (C + sqrt(k) r)^2/(2 rho)."""
    C = 0.5
    st = coordinate_means([SiteSpec("w", k)])
    route = S.coupling_route(S.coupling_strongly_convex(0.1, 1.0, 4.0, C), st.lipschitz, st.l2)
    eps, delta = 1.0, 1e-6
    plan = plan_noise(st, route, eps, delta, "auto")
    lap = plan.expected_squared_error["laplace"]
    gau = plan.expected_squared_error["gaussian"]
    b = math.sqrt(k) * C / eps
    assert lap == pytest.approx(k * 2 * b * b, rel=1e-9)
    rho = noise_mod.zcdp_rho(eps, delta)
    assert gau == pytest.approx(k * C * C / (2 * rho), rel=1e-6) and gau >= k * C * C / (2 * rho)
    assert plan.mechanism == ("gaussian" if gau < lap else "laplace")
    assert plan.mechanism == {1: "laplace", 30: "gaussian"}[k]
    assert plan_noise(st, route, eps, 0.0, "auto").mechanism == "laplace"         # delta = 0: Laplace only


def test_gaussian_with_delta_zero_is_refused_before_anything(tmp_path, monkeypatch):
    c = _counting(monkeypatch)
    rng = np.random.default_rng(5)
    st = coordinate_means([SiteSpec("theta", 2)])
    path = tmp_path / "l.jsonl"
    Ledger.open(path, budget=1.0)
    before = path.read_bytes()
    with pytest.raises(AssumptionError) as e:
        release_statistic(_draws(rng, d=2), st, 0.5, path, coupling=S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5),
                          spec=ReleaseSpec(noise="gaussian", delta=0.0))
    assert "delta" in str(e.value) and "\n" not in str(e.value)
    assert path.read_bytes() == before and c["noise"] == 0


def test_probabilities_are_clamped_and_intervals_clipped(tmp_path):
    rng = np.random.default_rng(6)
    st = exceedance_probabilities([SiteSpec("w", 3)], threshold=0.0, width=0.05)      # window 20 x distance
    res = release_statistic(_draws(rng, d=3), st, 0.5, tmp_path / "l.jsonl", budget=1.0,
                            coupling=S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5))
    d = res.to_dict()
    assert len(d["values"]) == 3 and all(0.0 <= v <= 1.0 for v in d["values"])    # one per coordinate of w
    assert d["postprocessing"]["clamp"] == [0.0, 1.0]
    for it in d["items"]:
        assert 0.0 <= it["interval"][0] <= it["interval"][1] <= 1.0
        assert it["value"] == min(max(it["raw_value"], 0.0), 1.0)
    rel = Ledger(tmp_path / "l.jsonl").summary()["entries"][0]["released"]
    assert rel["values"] == d["values"] and len(rel["raw_values"]) == 3


def test_total_interval_adds_the_monte_carlo_bound(tmp_path):
    rng = np.random.default_rng(7)
    st = coordinate_means([SiteSpec("theta", 2)])
    coupling = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)
    chain = {"inverse_temperature": 1.0, "num_steps": 400, "burn_in": 200, "thinning": 1, "num_chains": 2}
    res = release_statistic(_draws(rng, d=2), st, 1.0, tmp_path / "l.jsonl", coupling=coupling, budget=2.0,
                            chain=chain)
    mc = S.monte_carlo_bound(coupling, **chain)
    it = res.items[0]
    h_noise = noise_mod.laplace_interval_halfwidth(res.noise_scale, 0.975)
    assert it.total_interval[1] - it.raw_value == pytest.approx(h_noise + mc.half_width(1.0, 0.025), rel=1e-12)
    assert res.monte_carlo["lipschitz_noise"] == mc.lipschitz_noise
    res2 = release_statistic(_draws(rng, d=2), st, 1.0, tmp_path / "l.jsonl", coupling=coupling)
    assert res2.items[0].total_interval is None and res2.to_dict()["monte_carlo"] is None


# ---------------------------------------------------------------------------
# sample-and-aggregate (docs/release.md §7)


def test_aggregate_windows_and_partition():
    r = aggregate_route(9, (-2.0, 2.0), 10)
    assert r.sensitivity == pytest.approx(9 * 4 / 10) and r.l2_sensitivity == pytest.approx(3 * 4 / 10)
    idx = partition(103, 10)
    assert idx.shape == (10, 10) and len(set(idx.ravel().tolist())) == 100
    assert partition(103, 10, "index")[3].tolist() == list(range(30, 40))
    for bad in (0, 104, 2.5, True):
        with pytest.raises(AssumptionError, match="chunks"):
            partition(103, bad)
    k, rule = choose_chunks(50_000, 5, 5, 1.0)
    assert k == round(math.sqrt(math.sqrt(2) * 5 * 50_000)) and "sqrt(nu m)" in rule
    assert choose_chunks(100, 5, 5, 1.0)[0] == 2                  # chunks of >= max(20, 50) records


def test_replacing_one_record_moves_the_aggregate_by_at_most_the_window():
    """With a fixed partition and a deterministic estimator, replacing any record moves the average of the clamped
    chunk estimates by at most (b - a)/k per coordinate (the window the noise is calibrated to)."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 2))
    st = function_mean(lambda z: z, 1.0, ["a", "b"]).with_range((-1.0, 1.0))
    est = lambda chunk: chunk["X"].mean(axis=0) * 5          # noqa: E731  (a crude, often clamped estimator)
    k = 6
    base = aggregate_estimate(st, {"X": X}, k, estimator=est, partition_rule="index").value
    for i in range(0, 60, 7):
        Xp = X.copy()
        Xp[i] = rng.normal(size=2) * 100
        moved = aggregate_estimate(st, {"X": Xp}, k, estimator=est, partition_rule="index").value
        assert np.max(np.abs(moved - base)) <= 2.0 / k + 1e-12


def test_sample_and_aggregate_release_and_refusals(tmp_path, monkeypatch):
    c = _counting(monkeypatch)
    rng = np.random.default_rng(9)
    X = rng.normal(size=(400, 3)) / 2
    X /= np.maximum(1, np.linalg.norm(X, axis=1, keepdims=True))
    y = (rng.random(400) < 1 / (1 + np.exp(-X @ np.array([2.0, -1.0, 0.5])))).astype(float)
    dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
    kern = bayesdp.ULA("logistic", domain=dom, step_size=1 / 101.0)
    path = tmp_path / "l.jsonl"
    Ledger.open(path, budget=2.0)
    before = path.read_bytes()
    ranged = Mean(range=(-3, 3))                                  # the public range belongs to the statistic
    for kwargs, needle in ((dict(), "range"), (dict(statistic=ranged, method=SampleAggregate(chunks=401)), "chunks"),
                           (dict(statistic=ranged, noise="gaussian"), "delta")):
        with pytest.raises(AssumptionError, match=needle):
            bayesdp.release(kern, ReleaseSpec(**{"statistic": "mean", "epsilon": 1.0, "method": "sample-aggregate",
                                                 "chain": ChainOptions(num_steps=200), **kwargs}),
                            data={"X": X, "y": y}, accountant=str(path))
    assert path.read_bytes() == before and c["noise"] == 0
    res = bayesdp.release(kern, ReleaseSpec(ranged, epsilon=1.0, method=SampleAggregate(chunks=8), allow_uninformative=True,
                                            chain=ChainOptions(num_steps=200)), data={"X": X, "y": y}, accountant=str(path), rng_key=1)
    d = res.to_dict()
    assert d["sample_and_aggregate"]["chunks"] == 8 and d["sample_and_aggregate"]["chunk_size"] == 50
    assert d["proven_sensitivity"] == pytest.approx(3 * 6 / 8)     # L1: d (b - a) / k
    assert d["noise_scale"] == pytest.approx(d["sensitivity"] / 1.0)
    assert len(d["values"]) == 3 and all(-3 <= v <= 3 for v in d["values"])
    assert d["source"].startswith("sample-and-aggregate") and c["noise"] > 0
    assert "coupling_window" not in d["certificate"]["assumptions"]


# ---------------------------------------------------------------------------
# the path release (docs/release.md §8) and the automatic method (§9)


def test_path_temperature_and_certificate():
    gd, g, n = 2.0, 0.01, 300
    for eps, delta in ((0.25, 1e-5), (1.0, 1e-6), (4.0, 1e-5)):
        beta, cert = path_inverse_temperature(eps, delta, gd, g, n)
        mu = gdp_mu(eps, delta)
        assert cert.curve.mu == pytest.approx(gd * math.sqrt(beta * g * n / 2), rel=1e-12)
        assert cert.curve.mu <= mu and cert.curve.mu == pytest.approx(mu, rel=1e-8)
        assert cert.epsilon(delta) <= eps
        # dp-accounting: n Gaussian steps of noise multiplier sqrt(2 / (gamma beta)) / grad_diff
        from dp_accounting import NeighboringRelation, dp_event
        from dp_accounting.pld import pld_privacy_accountant

        acc = pld_privacy_accountant.PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE)
        acc.compose(dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(math.sqrt(2 / (g * beta)) / gd), n))
        assert acc.get_epsilon(delta) == pytest.approx(eps, rel=2e-3)
    _, c3 = path_inverse_temperature(1.0, 1e-5, gd, g, n, num_chains=3)
    assert c3.curve.mu <= gdp_mu(1.0, 1e-5) and c3.constants["gdp_mu_per_chain"] * math.sqrt(3) == pytest.approx(
        c3.curve.mu, rel=1e-9)


def test_path_steps_and_auto_rule():
    consts = {"total_smoothness": 126.0, "total_strong_convexity": 1.0, "grad_diff": 2.0}
    lam = 1.0 + 125.0 / 20                                          # m_K + (L - m_K) / (4 d)
    assert path_num_steps(consts, 5) == math.ceil(10 * 126.0 / lam)
    st = coordinate_means([SiteSpec("w", 5)])
    m, why = _auto(consts, 5, st, ReleaseSpec(st, epsilon=1.0, delta=1e-5))
    assert m == "path" and "predicted" in why
    assert _auto(consts, 5, st, ReleaseSpec(st, epsilon=1.0))[0] == "coupling"
    assert _auto(consts, 5, st, ReleaseSpec(st, epsilon=1.0, delta=1e-5, noise="gaussian"))[0] == "coupling"
    weak = {"total_smoothness": 146.25, "total_strong_convexity": 4.0, "grad_diff": 2.0}   # the demo's model
    st30 = coordinate_means([SiteSpec("w", 30)])
    # the tuned path (no burn-in lost, docs/release.md §8.4) is predicted below the last draw: §10.1
    assert _auto(weak, 30, st30, ReleaseSpec(st30, epsilon=1.0, delta=1e-5))[0] == "path"
    # a plan pins the chain: the last draw (which plans its own chain) is not among the choices
    # (between the other two, the tuned path's prediction is below the coupling release's noise)
    assert _auto(weak, 30, st30, ReleaseSpec(st30, epsilon=1.0, delta=1e-5), given="driver")[0] == "path"


class _FinalChosen(Exception):
    pass


def _auto(constants, dim, statistic, spec, given="kernel"):
    """The engine's automatic choice from the constants alone (no model, no data: the choice reads neither).
    The last draw's chain is planned only once it is chosen: its planner raises to say so."""
    from types import SimpleNamespace

    from bayesdp.publish.engine import choose
    from bayesdp.publish.methods.base import Analysed, ChainSource

    def planner(*args):
        raise _FinalChosen

    src = ChainSource(model=None, data={}, domain=None, kernel={"sampler": "ula"}, given=given, plan_final=planner)
    an = Analysed(src, None, SimpleNamespace(dim=dim, data_size=1000), statistic, constants)
    try:
        plan, why, _ = choose(an, spec.check())
    except _FinalChosen:
        return "final", "predicted"
    return plan.method, why


def test_path_release_through_the_api(tmp_path, monkeypatch):
    c = _counting(monkeypatch)
    rng = np.random.default_rng(10)
    X = rng.normal(size=(500, 3)) / 2
    X /= np.maximum(1, np.linalg.norm(X, axis=1, keepdims=True))
    y = (rng.random(500) < 1 / (1 + np.exp(-X @ np.array([2.0, -1.0, 0.5])))).astype(float)
    dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
    kern = bayesdp.ULA("logistic", domain=dom, step_size=1 / 126.0)
    acct = bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5)
    with pytest.raises(AssumptionError, match="delta"):
        bayesdp.release(kern, "mean", epsilon=1.0, method="path", data={"X": X, "y": y}, accountant=acct)
    assert acct.spent()["epsilon_sum"] == 0
    res = bayesdp.release(kern, ReleaseSpec("mean", epsilon=1.0, delta=1e-6, chain=ChainOptions(num_steps=300),
                                            allow_uninformative=True), data={"X": X, "y": y}, accountant=acct)
    d = res.to_dict()
    assert d["method"]["method"] == "path" and d["method"]["chosen_by"].startswith("auto")
    assert d["noise_scale"] == 0.0 and c["noise"] == 0                 # no noise added: the chain is the noise
    assert d["path"]["chain_keys"].startswith("OS CSPRNG")
    mu = d["certificate"]["constants"]["gdp_mu"]
    assert bayesdp.GDP(mu).epsilon(1e-6) <= 1.0 and type(res.to_dp_event()).__name__ == "GaussianDpEvent"
    assert acct.spent()["epsilon_sum"] == pytest.approx(1.0)
    assert len(d["items"]) == len(d["values"]) >= 1
    assert all(it["interval"][0] <= it["value"] <= it["interval"][1] for it in d["items"])
