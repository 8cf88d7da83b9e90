"""Statistics (Lipschitz constants, intervals) and the end-to-end release_statistic."""

import json
import math

import numpy as np
import pytest

from bayesdp.errors import AssumptionError, BudgetError, ModelError
from bayesdp.publish import sensitivity as S
from bayesdp.budget.ledger import Ledger
from bayesdp.publish.release import release_statistic
from bayesdp.publish.spec import Coupling, ReleaseSpec
from bayesdp.publish.statistics import (SiteSpec, coordinate_means, coordinate_quantiles, describe_values,
                                        exceedance_probabilities, function_mean)


def test_coordinate_means_lipschitz_sqrt_k():
    st = coordinate_means([SiteSpec("beta", 3), SiteSpec("alpha", 1)])
    assert st.names == ("beta[0]", "beta[1]", "beta[2]", "alpha")
    assert st.lipschitz == pytest.approx(2.0)  # sqrt(4)
    z = np.array([[1.0, 2.0, 3.0, 4.0], [3.0, 2.0, 1.0, 0.0]])
    np.testing.assert_allclose(st.evaluate(z), [2.0, 2.0, 2.0, 2.0])
    # the constant is attained: v = (1,1,1,1)/2 has |v|_2 = 1 and |v|_1 = 2
    v = np.ones(4) / 2
    assert np.abs(v).sum() == pytest.approx(st.lipschitz * np.linalg.norm(v))
    # and never exceeded on random directions
    rng = np.random.default_rng(0)
    for _ in range(200):
        a, b = rng.normal(size=(2, 5, 4))
        assert np.abs(st.evaluate(a) - st.evaluate(b)).sum() <= st.lipschitz * np.max(np.linalg.norm(a - b, axis=1)) + 1e-12
    sub = coordinate_means([SiteSpec("beta", 3), SiteSpec("alpha", 1)], select=["alpha"])
    assert sub.lipschitz == 1.0 and sub.names == ("alpha",)
    np.testing.assert_allclose(sub.evaluate(z), [2.0])


def test_constrained_site_needs_declared_lipschitz():
    with pytest.raises(ModelError, match="sigma"):
        coordinate_means([SiteSpec("sigma", 1, constrained=True)])
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731  (logistic transform, 1/4-Lipschitz)
    st = coordinate_means([SiteSpec("p", 2, constrained=True, transform=sig, transform_lipschitz=0.25),
                           SiteSpec("mu", 1)])
    assert st.lipschitz == pytest.approx(math.sqrt(0.25 ** 2 * 2 + 1))
    np.testing.assert_allclose(st.evaluate(np.zeros((3, 3))), [0.5, 0.5, 0.0])
    with pytest.raises(ModelError, match=r"^site 'nope' is not a latent site of the model; choose from \['mu'\]"):
        coordinate_means([SiteSpec("mu", 1)], select=["nope"])


def test_function_mean_requires_lipschitz():
    with pytest.raises(AssumptionError, match="no declared Lipschitz"):
        function_mean(lambda z: z[:, 0], None, ["f"])
    st = function_mean(lambda z: np.abs(z[:, 0]), 1.0, ["abs0"])
    np.testing.assert_allclose(st.evaluate(np.array([[-1.0, 5.0], [3.0, 0.0]])), [2.0])


def test_quantiles_constant_k_m_is_sound_and_attained():
    """|q(X) - q(X')|_1 <= k m sup_t |X_t - X'_t|_2, and the constant k m (not sqrt(k m)) is needed: each
    released number is an order statistic of a different draw, moved by D along its own coordinate."""
    st = coordinate_quantiles([SiteSpec("w", 2), SiteSpec("s", 1, constrained=True)], [0.25, 0.75], select=["w"])
    assert st.names == ("w[0] q0.25", "w[0] q0.75", "w[1] q0.25", "w[1] q0.75")
    assert st.lipschitz == 4.0 and st.kind == "other"
    # 5 draws: numpy's linear quantile at 0.25 / 0.75 of 5 values is exactly the 2nd / 4th order statistic
    x = np.array([[0.0, 0.0, 9.0], [1.0, 10.0, 9.0], [2.0, 20.0, 9.0], [3.0, 30.0, 9.0], [4.0, 40.0, 9.0]])
    np.testing.assert_allclose(st.evaluate(x), [1.0, 3.0, 10.0, 30.0])
    D = 0.5
    xp = x.copy()
    xp[1, 0] += D          # w[0] q0.25 is draw 1
    xp[3, 0] += D          # w[0] q0.75 is draw 3
    xq = x.copy()
    xq[1, 1] += D          # w[1] q0.25 is draw 1: a third direction on draw 1 is not possible with |.|_2 <= D,
    # so move draw 1 along (1, 1)/sqrt 2 and draw 3 along (1, 1)/sqrt 2: each of the 4 numbers moves by D/sqrt 2
    xr = x.copy()
    xr[1, :2] += D / math.sqrt(2)
    xr[3, :2] += D / math.sqrt(2)
    for other in (xp, xq, xr):
        sup = np.max(np.linalg.norm(other - x, axis=1))
        assert sup <= D + 1e-12
        assert np.abs(st.evaluate(other) - st.evaluate(x)).sum() <= st.lipschitz * sup + 1e-12
    assert np.abs(st.evaluate(xp) - st.evaluate(x)).sum() == pytest.approx(2 * D)   # m D on one coordinate
    # k m D attained: 4 quantile levels of one coordinate, each on its own draw, all moved by D
    st4 = coordinate_quantiles([SiteSpec("b", 1)], [0.125, 0.375, 0.625, 0.875])
    b = np.arange(9.0)[:, None]                     # levels land on draws 1, 3, 5, 7 exactly
    np.testing.assert_allclose(st4.evaluate(b), [1.0, 3.0, 5.0, 7.0])
    assert np.abs(st4.evaluate(b + D) - st4.evaluate(b)).sum() == pytest.approx(st4.lipschitz * D)
    rng = np.random.default_rng(3)
    for _ in range(300):
        a = rng.normal(size=(7, 3))
        dirs = rng.normal(size=(7, 3))
        a2 = a + dirs / np.linalg.norm(dirs, axis=1, keepdims=True) * rng.uniform(0, 1, size=(7, 1))
        sup = np.max(np.linalg.norm(a2 - a, axis=1))
        assert np.abs(st.evaluate(a2) - st.evaluate(a)).sum() <= st.lipschitz * sup + 1e-12


def test_quantiles_and_probabilities_refuse_bad_input():
    sites = [SiteSpec("w", 2), SiteSpec("sigma", 1, constrained=True)]
    for q, why in (([], r"q is empty"), ([0.0], r"quantile level = 0\.0 must be in \(0, 1\)"),
                   ([1.0], r"quantile level = 1\.0 must be in \(0, 1\)"),
                   ([0.5, 0.5], r"q = \[0\.5, 0\.5\] repeats a level"),
                   ([float("nan")], r"quantile level = nan must be in \(0, 1\)")):
        with pytest.raises(AssumptionError, match="^" + why):
            coordinate_quantiles(sites, q)
    with pytest.raises(ModelError, match="sigma"):
        coordinate_quantiles(sites, [0.5], select=["sigma"])
    with pytest.raises(ModelError, match="sigma"):
        exceedance_probabilities(sites, 0.0, 0.1, select=["sigma"])
    with pytest.raises(AssumptionError, match="width"):
        exceedance_probabilities(sites, 0.0, 0.0)
    assert coordinate_quantiles(sites, [0.5]).names == ("w[0] q0.5", "w[1] q0.5")   # default: real sites


def test_exceedance_probability_ramp_constant():
    st = exceedance_probabilities([SiteSpec("w", 4)], threshold=1.0, width=0.2)
    assert st.lipschitz == pytest.approx(2 / 0.2) and st.kind == "mean"
    z = np.array([[0.0, 0.95, 1.05, 3.0]])
    np.testing.assert_allclose(st.evaluate(z), [0.0, 0.25, 0.75, 1.0])
    # attained inside the ramp: all 4 coordinates at the threshold, moved by (1,1,1,1) eps / 2
    base = np.full((1, 4), 1.0)
    eps = 1e-3
    moved = base + eps / 2
    assert np.abs(st.evaluate(moved) - st.evaluate(base)).sum() == pytest.approx(st.lipschitz * eps)
    with pytest.raises(AssumptionError, match="Proposition 3.10"):
        from bayesdp.publish.noiseplan import sensitivity_routes
        sensitivity_routes(coordinate_quantiles([SiteSpec("w", 1)], [0.5]), None,
                           {"concentration": 0.1, "concentration_delta": 1e-6, "posterior_sensitivity": 0.1})


def test_describe_values_interval():
    items = describe_values(["a"], np.array([1.0]), noise_scale=2.0, noise_variance=8.0, level=0.9)
    lo, hi = items[0].interval
    half = 2.0 * math.log(10)
    assert hi - 1.0 >= half and hi - 1.0 - half < 1e-9
    assert items[0].noise_variance == 8.0


def _draws(rng, n=500, d=3):
    return rng.normal(size=(n, d))


def test_release_statistic_end_to_end(tmp_path):
    rng = np.random.default_rng(1)
    draws = _draws(rng)
    st = coordinate_means([SiteSpec("theta", 3)])
    coupling = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)  # distance 0.5
    path = tmp_path / "l.json"
    res = release_statistic(draws, st, 1.0, path, coupling=coupling, budget=2.0)
    d = res.to_dict()
    json.dumps(d, allow_nan=False)
    for key in ("values", "noise_scale", "sensitivity", "epsilon", "delta", "source", "remaining_budget"):
        assert key in d
    # window sqrt(3) * 0.5, grid r = 2^ceil(log2(window/eps)) / 2^40, 3 coordinates charged
    window = math.sqrt(3) * 0.5
    r = 2.0 ** (math.ceil(math.log2(window)) - 40)
    assert d["proven_sensitivity"] == pytest.approx(window)
    assert d["sensitivity"] == pytest.approx(window + 3 * r, rel=1e-15)
    assert d["noise_scale"] == pytest.approx((window + 3 * r) / 1.0, rel=1e-15)
    assert d["delta"] == 0.0 and d["epsilon"] == 1.0
    assert d["source"] == "004 Proposition 3.7 + coupling (LITERATURE §7.1)"
    assert d["remaining_budget"]["epsilon"] == pytest.approx(1.0)
    assert len(d["values"]) == 3
    s = Ledger(path).summary()
    assert s["entries"][0]["status"] == "committed"
    assert s["entries"][0]["released"]["values"] == d["values"]
    # two releases of the same draws differ (noise not seeded)
    res2 = release_statistic(draws, st, 1.0, path, coupling=coupling)
    assert not np.array_equal(res.values, res2.values)
    # no budget left: refused, ledger unchanged
    before = path.read_bytes()
    with pytest.raises(BudgetError, match=r"^epsilon = 0\.5, delta = 0 exceeds the budget of ledger .*remaining "
            r"epsilon 0, delta 0\)"):
        release_statistic(draws, st, 0.5, path, coupling=coupling)
    assert path.read_bytes() == before


def test_release_picks_prop_3_10_when_tighter(tmp_path):
    rng = np.random.default_rng(2)
    st = function_mean(lambda z: z[:, 0], 1.0, ["theta0"])
    coupling = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)  # window 0.5
    conc = {"concentration": 0.05, "concentration_delta": 1e-7, "posterior_sensitivity": 0.1}  # window 0.2
    Ledger.open(tmp_path / "l.json", budget=5.0, budget_delta=1e-6)
    res = release_statistic(_draws(rng), st, 1.0, tmp_path / "l.json", coupling=coupling,
                            spec=ReleaseSpec(method=Coupling(concentration=conc)))
    assert res.source == "004 Proposition 3.10"
    assert res.proven_sensitivity == pytest.approx(0.2)
    assert res.delta == pytest.approx(2e-7 - 1e-14)
    res = release_statistic(_draws(rng), st, 1.0, tmp_path / "l.json", coupling=coupling,
                            spec=ReleaseSpec(method=Coupling(max_delta=0.0, concentration=conc)))
    assert res.source.startswith("004 Proposition 3.7") and res.delta == 0.0


@pytest.mark.parametrize("bad", [
    dict(epsilon=0.0), dict(epsilon=-1.0), dict(coupling=None),
])
def test_release_bad_input_nothing_written(tmp_path, bad):
    rng = np.random.default_rng(3)
    st = coordinate_means([SiteSpec("theta", 3)])
    path = tmp_path / "l.json"
    Ledger.open(path, budget=1.0)
    before = path.read_bytes()
    kwargs = dict(epsilon=0.5, coupling=S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5))
    kwargs.update(bad)
    with pytest.raises(AssumptionError) as e:
        release_statistic(_draws(rng), st, kwargs.pop("epsilon"), path, **kwargs)
    assert "\n" not in str(e.value)
    assert path.read_bytes() == before


def test_non_contracting_step_has_no_coupling_bound_and_is_refused(tmp_path):
    rng = np.random.default_rng(4)
    st = coordinate_means([SiteSpec("theta", 2)])
    path = tmp_path / "l.json"
    consts = dict(sampler="ULA", step_size=0.6, total_strong_convexity=1.0, total_smoothness=4.0, grad_diff=0.5)
    coupling, failed = S.best_coupling(**consts)
    assert coupling is None and any("step_size" in why for _, why in failed)
    with pytest.raises(AssumptionError) as e:
        release_statistic(_draws(rng, d=2), st, 1.0, path, coupling=coupling, budget=1.0)
    assert "\n" not in str(e.value) and "no sensitivity route" in str(e.value)
    assert not path.exists()
    consts["step_size"] = 0.2  # rho = max(0.8, 0.2) = 0.8 -> C = 0.2*0.5/0.2 = 0.5 ; window sqrt(2)*0.5
    res = release_statistic(_draws(rng, d=2), st, 1.0, path, coupling=S.best_coupling(**consts)[0],
                            budget=1.0)
    assert res.proven_sensitivity == pytest.approx(math.sqrt(2) * 0.5)
