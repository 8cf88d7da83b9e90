"""The last-draw release (``method="final"``, bayesdp/publish/final.py, docs/release.md §10): the public error
predictions and the ``auto`` rule against hand-computed values, the plan's certificate and the ledger charge, the
released values equal to the planned chain's final draw, data independence of the plan, and refusals before any
charge (Python API and CLI)."""

import json
import math

import numpy as np
import pytest

import bayesdp
from bayesdp.models import logistic
from bayesdp.samplers import Sampler
from bayesdp.cli import main
from bayesdp.errors import AssumptionError
from bayesdp.publish.final import final_inverse_temperature_proxy, predicted_final_error
from bayesdp.budget.ledger import Ledger
from bayesdp.publish.path import gdp_mu
from bayesdp.publish.spec import ChainOptions, ReleaseSpec
from bayesdp.publish.statistics import SiteSpec, coordinate_means

DOMAIN = ["X.norm=1", "y.values=0,1"]
# the demo's model (bundled data: m = 569, d = 30, prior scale 0.5) and a synthetic one (m = 500, d = 5, scale 1)
WEAK = {"total_smoothness": 1 / 0.25 + 569 / 4, "total_strong_convexity": 4.0, "grad_diff": 2.0}
STRONG = {"total_smoothness": 1.0 + 500 / 4, "total_strong_convexity": 1.0, "grad_diff": 2.0}


def _data(m=150, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.1
    y = (rng.random(m) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(float)
    return {"X": X, "y": y}


def test_predictions_by_hand():
    mu = gdp_mu(1.0, 1e-5)
    # beta = mu^2 m_K / grad_diff^2
    assert final_inverse_temperature_proxy(WEAK, 1.0, 1e-5) == pytest.approx(mu * mu * 4.0 / 4.0, rel=1e-12)
    assert final_inverse_temperature_proxy(STRONG, 1.0, 1e-5) == pytest.approx(mu * mu / 4.0, rel=1e-12)
    assert final_inverse_temperature_proxy({"grad_diff": 2.0}, 1.0, 1e-5) is None
    lam_weak = 4.0 + (WEAK["total_smoothness"] - 4.0) / (4 * 30)          # 5.1854...
    assert predicted_final_error(WEAK, 30, 1.0, 1e-5, 30, 1.0) == pytest.approx(30 / (mu * mu * lam_weak), rel=1e-12)
    # against the half-burnt-in path's long-run variance 2 k grad_diff^2 / (mu^2 lambda_p^2): lambda_p / (2 m_K)
    path = lambda c, lam, eps, delta, k: k * 2 * c["grad_diff"] ** 2 / (gdp_mu(eps, delta) ** 2 * lam ** 2)
    ratio = predicted_final_error(WEAK, 30, 1.0, 1e-5, 30, 1.0) / path(WEAK, lam_weak, 1.0, 1e-5, 30)
    assert ratio == pytest.approx(lam_weak / 8.0, rel=1e-12)
    lam_strong = 1.0 + 125.0 / 20
    ratio = predicted_final_error(STRONG, 5, 2.0, 1e-6, 5, 1.0) / path(STRONG, lam_strong, 2.0, 1e-6, 5)
    assert ratio == pytest.approx(lam_strong / 2.0, rel=1e-12)


def lambda_h(m, d, beta, m_k=1.0, c=0.25):
    """The public heuristic curvature of logistic regression (|x| <= 1, prior N(0, I / m_K)) at inverse temperature
    beta, the mode at the prior's spread (docs/release.md §8.4), by its own fixed-point iteration:
    lam = m_K + m c / (d + 2) / sqrt(1 + pi (4 c d / (d + 2)) (1 / (beta lam) + 1 / m_K) / 8)."""
    records, r2, lam = m * c / (d + 2), 4 * c * d / (d + 2), m_k + m * c / (d + 2)
    for _ in range(500):
        lam = m_k + records / math.sqrt(1 + math.pi * r2 * (1 / (beta * lam) + 1 / m_k) / 8)
    return lam


def skew_bias(m, d, lam, beta, gamma, m_k=1.0, c=0.25):
    """a |1 / (beta (1 - gamma lam / 2)) - 1| with a = m 2 c^2 / (2 (d + 4) lam^2 sqrt(m_K)) (§8.4)."""
    a = m * 2 * c * c / (2 * (d + 4) * lam * lam * math.sqrt(m_k))
    return a * abs(1 / (beta * (1 - gamma * lam / 2)) - 1)


class _FinalChosen(Exception):
    pass


def _auto(constants, dim, statistic, epsilon, delta, given="kernel"):
    """The engine's automatic choice from the constants alone (the last draw's planner raises once it is chosen)."""
    from types import SimpleNamespace

    from bayesdp.publish.engine import choose
    from bayesdp.publish.methods.base import Analysed, ChainSource

    def planner(*args):
        raise _FinalChosen

    src = ChainSource(model=None, data={}, domain=None, kernel={"sampler": "ula"}, given=given, plan_final=planner)
    an = Analysed(src, None, SimpleNamespace(dim=dim, data_size=1000), statistic, constants)
    try:
        return choose(an, ReleaseSpec(statistic, epsilon=epsilon, delta=delta).check())[0].method
    except _FinalChosen:
        return "final"


def test_auto_rule_prefers_the_tuned_path_to_the_last_draw():
    """docs/release.md §10.1: the tuned path's long-run variance G^2 / (mu^2 lambda^2) per direction is m_K / lambda
    <= 1 times the last draw's G^2 / (mu^2 m_K lambda), and the tuning loses no burn-in; so auto takes the path
    whenever it may (the last draw is kept for a ula-final plan given as is, or asked for by name)."""
    from bayesdp.publish.path import tune_path
    st30, st5 = coordinate_means([SiteSpec("w", 30)]), coordinate_means([SiteSpec("w", 5)])
    for eps in (0.25, 1.0, 4.0):
        assert _auto(WEAK, 30, st30, eps, 1e-5) == "path"
        assert _auto(STRONG, 5, st5, eps, 1e-5) == "path"
        for consts, d in ((WEAK, 30), (STRONG, 5)):
            path = tune_path(consts, d, eps, 1e-5, (), d, 1.0)["terms"]["rmse"]
            assert path ** 2 <= predicted_final_error(consts, d, eps, 1e-5, d, 1.0) / d
        assert _auto(WEAK, 30, st30, eps, 1e-5, given="plan") != "final"
        assert _auto(WEAK, 30, st30, eps, 0.0) == "coupling"        # pure epsilon: no last draw


def test_release_is_the_planned_chains_final_draw():
    data = _data()
    acct = bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5)
    res = bayesdp.release(bayesdp.ULA(logistic, domain=DOMAIN), ReleaseSpec(
        "mean", epsilon=1.0, delta=1e-6, method="final", chain=ChainOptions(max_steps=2000), allow_uninformative=True),
        data=data, accountant=acct, rng_key=7)
    f = res.extra["final"]
    assert res.private is False and res.to_dict()["private"] is False       # the chain's noise was seeded
    # the certificate is GDP(mu) and meets the charge; the ledger was charged exactly (1, 1e-6) with that event
    assert res.certificate.epsilon(1e-6) <= 1.0 and res.dp_event == {"type": "gdp", "mu": f["gdp_mu"]}
    assert type(res.to_dp_event()).__name__ == "GaussianDpEvent"
    assert acct.spent()["epsilon_sum"] == pytest.approx(1.0) and res.noise_scale == 0.0
    assert f["run_epsilon"] <= f["plan_epsilon"] * (1 + 1e-9) and f["plan_epsilon"] <= 1.0
    assert f["chain_keys"] != "" and "not private" in f["chain_keys"]          # a seed was given: said so
    # the plan is bayesdp.calibrate's, from public quantities only
    plan = bayesdp.calibrate(logistic, domain=DOMAIN, epsilon=1.0 * (1 - 1e-9), delta=1e-6,
                             mechanism="ula-final", data=bayesdp.Shapes(150, {"X": (2,), "y": ()}),
                             options=bayesdp.CalibrationOptions(max_steps=2000))
    assert (f["step_size"], f["num_steps"]) == (plan.step_size, plan.num_steps)
    assert f["inverse_temperature"] == pytest.approx(plan.inverse_temperature, rel=1e-6)
    # the released values are the final draw of that chain with the same key
    smp = Sampler(logistic, data, step_size=f["step_size"],
                                   num_steps=f["num_steps"], inverse_temperature=f["inverse_temperature"],
                                   num_chains=1, release="final", init="zeros", uncertified=True)
    smp.run(7)
    np.testing.assert_allclose(res.values, np.asarray(smp.get_samples()["w"])[-1], rtol=1e-6, atol=1e-7)


def test_plan_does_not_depend_on_the_values():
    a = bayesdp.PrivacyAccountant(budget=5.0, budget_delta=1e-5)
    spec = ReleaseSpec("mean", epsilon=1.0, delta=1e-6, method="final", chain=ChainOptions(max_steps=1000),
                       allow_uninformative=True)      # 100 records: predicted worse than the prior (release.md §12)
    r1 = bayesdp.release(bayesdp.ULA(logistic, domain=DOMAIN), spec, data=_data(seed=1), accountant=a)
    r2 = bayesdp.release(bayesdp.ULA(logistic, domain=DOMAIN), spec, data=_data(seed=2), accountant=a)
    k = ("inverse_temperature", "step_size", "num_steps", "gdp_mu")
    assert [r1.extra["final"][x] for x in k] == [r2.extra["final"][x] for x in k]
    assert r1.extra["final"]["chain_keys"].startswith("OS CSPRNG")


def test_refusals_charge_nothing():
    data = _data()
    acct = bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5)
    kern0 = bayesdp.ULA(logistic, domain=DOMAIN)
    for delta in (0.0, 1.0, -1e-6):
        with pytest.raises(AssumptionError, match="delta"):
            bayesdp.release(kern0, "mean", epsilon=1.0, delta=delta, method="final", data=data, accountant=acct)
    with pytest.raises(AssumptionError, match="epsilon"):
        bayesdp.release(kern0, "mean", epsilon=0.0, delta=1e-6, method="final", data=data, accountant=acct)
    kern = bayesdp.ULA("logistic", domain=bayesdp.Domain.parse(DOMAIN), step_size=0.01, clip_norm=1.0)
    with pytest.raises(AssumptionError, match="final"):
        bayesdp.release(kern, "mean", epsilon=1.0, delta=1e-6, data=data, accountant=acct, method="final")
    assert acct.spent()["epsilon_sum"] == 0


def test_api_auto_picks_the_tuned_path_even_for_a_prior_dominated_model():
    data = _data(m=60, d=8, seed=3)            # lambda_p = 4 + (4 + 15 - 4)/32 < 8 with prior scale 0.5
    kern = bayesdp.ULA("logistic", domain=bayesdp.Domain.parse(DOMAIN), step_size=0.01,
                       model_kwargs={"prior_scale": 0.5})
    acct = bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5)
    spec = ReleaseSpec("mean", epsilon=1.0, delta=1e-6, allow_uninformative=True)   # 60 records (release.md §12)
    res = bayesdp.release(kern, spec, data=data, accountant=acct)
    # §10.1: the tuned path's prediction is at most the last draw's (m_K / lambda <= 1, no burn-in lost)
    assert res.extra["method"]["method"] == "path" and res.extra["method"]["chosen_by"].startswith("auto")
    # a Plan pins the chain: auto never swaps it for the last-draw release's own
    plan = bayesdp.calibrate("logistic", domain=bayesdp.Domain.parse(DOMAIN), epsilon=1.0, delta=1e-6,
                             mechanism="ula-path", data=bayesdp.Shapes(60, {"X": (8,), "y": ()}),
                             kernel=bayesdp.ULA(model_kwargs={"prior_scale": 0.5}),
                             options=bayesdp.CalibrationOptions(max_steps=500))
    res = bayesdp.release(plan, spec, data=data, accountant=acct)
    assert res.extra["method"]["method"] != "final"


def _cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_final_release_and_bad_input(tmp_path, capsys):
    d = _data()
    path = tmp_path / "d.npz"
    np.savez(path, **d)
    base = ["release", "logistic", "--data", str(path), "--domain", *DOMAIN, "--epsilon", "1",
            "--ledger", str(tmp_path / "l.jsonl"), "--budget", "2", "--budget-delta", "1e-5",
            "--allow-uninformative"]          # small data: predicted worse than the prior (docs/release.md §12)
    for extra, flag in ((["--method", "final"], "--delta"),
                        (["--method", "final", "--delta", "1e-6", "--step-size", "0.01"], "--step-size"),
                        (["--method", "final", "--delta", "1e-6", "--num-steps", "100"], "--num-steps"),
                        (["--method", "final", "--delta", "1e-6", "--num-chains", "2"], "--num-chains"),
                        (["--method", "final", "--delta", "1e-6", "--noise", "laplace"], "--noise")):
        rc, out, err = _cli(capsys, *base, *extra)
        assert rc == 2 and flag in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert not (tmp_path / "l.jsonl").exists()                       # nothing charged, no ledger made
    rc, out, err = _cli(capsys, *base, "--method", "final", "--delta", "1e-6", "--json")
    assert rc == 0, err
    o = json.loads(out)
    assert o["method"]["method"] == "final" and o["noise_scale"] == 0.0
    assert bayesdp.GDP(o["final"]["gdp_mu"]).epsilon(1e-6) <= 1.0
    led = Ledger(tmp_path / "l.jsonl").verify()
    assert led["entries"][0]["dp_event"] == {"type": "gdp", "mu": o["final"]["gdp_mu"]}
    rc, out, err = _cli(capsys, *base, "--method", "final", "--delta", "1e-6")
    assert rc == 0 and "method: final (user)" in out and "no noise added" in out
    assert math.isfinite(float(out.split("\n")[4].split()[-1]))         # the first released value


@pytest.mark.slow
def test_last_draw_release_carries_the_plans_warning_and_the_start_transient():
    """A last-draw plan capped at 20 steps cannot forget its start: calibrate's one-line warning reaches the release's
    warnings, and the prediction adds the start's bias (1 - gamma lambda)^n / sqrt(m_K) per direction and the chain's
    bias at the public heuristic curvature lambda (docs/release.md §8.4, §11.4)."""
    import math

    import bayesdp
    from bayesdp.models import logistic
    from bayesdp.publish.spec import ReleaseSpec

    rng = np.random.default_rng(5)
    m, d = 400, 3
    X = rng.standard_normal((m, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.001
    data = {"X": X, "y": (rng.random(m) < 0.5).astype(float)}
    dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
    plan = bayesdp.calibrate(logistic, domain=dom, data=bayesdp.Shapes(m, {"X": (d,), "y": ()}), epsilon=2.0,
                             delta=1e-6, mechanism="ula-final", options=bayesdp.CalibrationOptions(max_steps=20))
    assert plan.warnings and plan.num_steps <= 20
    res = bayesdp.release(plan, ReleaseSpec("mean", epsilon=2.0, delta=1e-6, method="final",
                                            allow_uninformative=True),
                          data=data, accountant=bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-6))
    assert any(w.startswith("the last-draw plan: ") and plan.warnings[0] in w for w in res.extra["warnings"])
    s = res.extra["method"]["settings"]
    m_k = 1.0                                                     # prior N(0, 1); |x| <= 1: 1/4 per record
    lam = lambda_h(m, d, s["inverse_temperature"])
    start = abs(1.0 - s["step_size"] * lam) ** s["num_steps"] / math.sqrt(m_k)
    assert s["start_transient"] == pytest.approx(start, rel=1e-5)
    bias = skew_bias(m, d, lam, s["inverse_temperature"], s["step_size"])
    assert s["predicted_bias"] == pytest.approx(bias, rel=1e-5)
    assert res.items[0].predicted_rmse == pytest.approx(
        math.sqrt(s["equivalent_noise_sd"] ** 2 + start ** 2 + bias ** 2), rel=1e-5)


def test_a_release_inside_float_arithmetic_analyses_in_it(monkeypatch):
    # every analysis a release makes inherits bayesdp.analysis.arithmetic("float") (docs/analysis.md, "CLI"): the
    # release's analyses are recorded at their single entry, analyze's _analyze
    import importlib

    from bayesdp.analysis import arithmetic

    an_mod = importlib.import_module("bayesdp.analysis.analyze")     # the module (the package exports the function)

    seen, inner = [], an_mod._analyze
    monkeypatch.setattr(an_mod, "_analyze", lambda inp, a: seen.append(a) or inner(inp, a))
    spec = ReleaseSpec("mean", epsilon=1.0, delta=1e-6, method="final", chain=ChainOptions(max_steps=500),
                       allow_uninformative=True)
    with arithmetic("float"):
        res = bayesdp.release(bayesdp.ULA(logistic, domain=DOMAIN), spec, data=_data(),
                              accountant=bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5))
    assert seen and set(seen) == {"float"}
    assert res.certificate.epsilon(1e-6) <= 1.0
    seen.clear()
    bayesdp.release(bayesdp.ULA(logistic, domain=DOMAIN), spec, data=_data(),
                    accountant=bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5))
    assert seen and set(seen) == {"real"}
