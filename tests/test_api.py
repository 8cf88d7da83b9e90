"""The public Python API (issue #15): names, plans, PrivateMCMC, release with an accountant, calibration,
the accountant against dp-accounting, and the CLI giving the same certificates as the API."""

import json
import math

import numpy as np
import pytest

import bayesdp
from bayesdp.errors import AssumptionError, BudgetError
from bayesdp.models import logistic, robust, softmax
from bayesdp.publish.spec import Function, Mean, Probability, Quantiles

DOM = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
SHAPES = {"X": (3,), "y": ()}
R1 = DOM.get("X").certified_norm       # the declared norm as certificates use it (float data at the bound)


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.001
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ np.array([1.0, -1.0, 0.5])))).astype(float)
    return X, y


def test_public_names_are_importable_from_bayesdp():
    for name in ("Domain", "norm_bound", "box", "values", "ULA", "SGLD", "Plan", "certify", "calibrate",
                 "PrivateMCMC", "release", "PrivacyAccountant", "Ledger"):
        assert callable(getattr(bayesdp, name)), name
        assert getattr(bayesdp, name).__doc__, name
    assert bayesdp.Domain(X=bayesdp.box(-1, 2)).to_dict() == {"X": {"min": -1.0, "max": 2.0}}


def test_certify_matches_the_certificate_core_with_hand_constants():
    # logistic, N(0, 1), |x| <= R1: mu = L = 1, record bound R1, grad_bound = n R1, v_smoothness n R1^2/4, V convex
    n, h, steps = 500, 1e-3, 400
    rep = bayesdp.certify(logistic, domain=DOM, shapes=bayesdp.Shapes(n, SHAPES),
                          kernel=bayesdp.ULA(step_size=h), num_steps=steps)
    core = bayesdp.bound("ula-final", strong_convexity=1.0, smoothness=1.0, grad_bound=n * R1, grad_diff=2 * R1,
                         v_smoothness=n * R1 * R1 / 4, v_convex=True, step_size=h, num_steps=steps, delta=1e-5)
    assert rep.mechanisms["ula-final"].value() == pytest.approx(core.value(), rel=1e-12)
    plan = rep.plan("ula-final")
    assert plan.epsilon == pytest.approx(core.value(), rel=1e-12) and plan.step_size == h and plan.num_steps == steps


def test_plan_round_trips_through_json(tmp_path):
    plan = bayesdp.certify(logistic, domain=DOM, shapes=bayesdp.Shapes(200, SHAPES),
                           kernel=bayesdp.ULA(step_size=1e-3), num_steps=100).plan("ula-path")
    path = tmp_path / "plan.json"
    plan.to_json(str(path))
    back = bayesdp.Plan.load(str(path))
    assert back == plan and back.callable() is logistic
    assert "ula-path" in str(back) and json.loads(path.read_text())["format"] == "bayesdp plan v1"
    with pytest.raises(AssumptionError, match="not a bayesdp plan"):
        bayesdp.Plan.load('{"model": "logistic"}')
    with pytest.raises(AssumptionError, match="not a file nor JSON"):
        bayesdp.Plan.load(str(tmp_path / "missing.json"))


def test_private_mcmc_from_a_plan_and_from_a_kernel():
    X, y = _data()
    plan = bayesdp.certify(logistic, domain=DOM, shapes=bayesdp.Shapes(len(y), SHAPES),
                           kernel=bayesdp.ULA(step_size=2e-3), num_steps=150).plan("ula-final")
    mcmc = bayesdp.PrivateMCMC(plan).run(X=X, y=y)
    cert = mcmc.certificate
    assert cert["certified"] and cert["epsilon"] <= plan.epsilon * (1 + 1e-9)
    assert mcmc.get_samples()["w"].shape == (1, 3)
    assert cert["chain_keys"].startswith("OS CSPRNG")            # no key given: the OS CSPRNG
    again = bayesdp.PrivateMCMC(plan).run(rng_key=7, X=X, y=y)
    assert "not private" in again.certificate["chain_keys"]      # an explicit key is marked
    with pytest.raises(AssumptionError, match="certified for 300"):
        bayesdp.PrivateMCMC(plan).run(X=X[:100], y=y[:100])
    k = bayesdp.ULA(logistic, domain=DOM, step_size=2e-3)
    m2 = bayesdp.PrivateMCMC(k, num_steps=50, num_chains=2, release="path").run(X=X, y=y)
    assert m2.get_samples(group_by_chain=True)["w"].shape == (2, 50, 3)
    idata = m2.to_inference_data()                 # the released draws, with the certificate in the attributes
    np.testing.assert_array_equal(np.asarray(idata.posterior["w"]),
                                  np.asarray(m2.get_samples(group_by_chain=True)["w"]))
    assert json.loads(idata.posterior.attrs["bayesdp_certificate"]) == json.loads(json.dumps(dict(m2.certificate)))


def _release(mcmc, statistic, epsilon, acct):
    """A release of a chain that ran, of 200 records: predicted worse than the prior (docs/release.md §12), so
    released with the explicit option."""
    return bayesdp.release(mcmc, bayesdp.ReleaseSpec(statistic, epsilon=epsilon, allow_uninformative=True),
                           accountant=acct)


def test_release_charges_the_accountant_and_refuses_over_budget():
    X, y = _data()
    mcmc = bayesdp.PrivateMCMC(bayesdp.ULA(logistic, domain=DOM, step_size=2e-3), num_steps=200,
                               release="path").run(X=X, y=y)
    acct = bayesdp.PrivacyAccountant(budget=1.0)
    res = _release(mcmc, Mean(sites=["w"]), 0.6, acct)
    assert len(res.values) == 3 and res.names == ("w[0]", "w[1]", "w[2]")
    assert acct.spent()["epsilon_sum"] == pytest.approx(0.6)
    before = list(acct.entries)
    with pytest.raises(BudgetError, match=r"^epsilon = 0\.5, delta = 0 exceeds the budget \(epsilon 1, delta 0; "
            r"remaining epsilon 0\.4, delta 0\)"):
        bayesdp.release(mcmc, statistic="mean", epsilon=0.5, accountant=acct)
    assert acct.entries == before                                 # nothing charged, nothing drawn
    # a callable statistic with its declared Lipschitz constant: mean of w[0] - w[1] (|(1, -1)| = sqrt 2)
    acct2 = bayesdp.PrivacyAccountant(budget=1.0)
    res2 = _release(mcmc, Function(lambda s: s["w"][0] - s["w"][1], lipschitz=math.sqrt(2)), 1.0, acct2)
    assert len(res2.values) == 1 and res2.to_dp_event().__class__.__name__ == "DiscreteLaplaceDpEvent"


def test_release_named_statistics_quantiles_and_probabilities():
    """The window of each named statistic is its constant times the same coupling distance: mean sqrt(k),
    quantiles k m (order statistics, sup-norm), probability ramp sqrt(k)/width."""
    X, y = _data()
    mcmc = bayesdp.PrivateMCMC(bayesdp.ULA(logistic, domain=DOM, step_size=2e-3), num_steps=200,
                               release="path").run(X=X, y=y)
    acct = bayesdp.PrivacyAccountant(budget=10.0)
    mean = _release(mcmc, Mean(sites=["w"]), 1.0, acct)
    D = mean.proven_sensitivity / math.sqrt(3)                          # the coupling distance
    qs = _release(mcmc, Quantiles((0.1, 0.9), sites=["w"]), 1.0, acct)
    assert qs.names == ("w[0] q0.1", "w[0] q0.9", "w[1] q0.1", "w[1] q0.9", "w[2] q0.1", "w[2] q0.9")
    assert qs.proven_sensitivity == pytest.approx(6 * D, rel=1e-12)
    med = _release(mcmc, "median", 1.0, acct)
    assert med.proven_sensitivity == pytest.approx(3 * D, rel=1e-12)
    pr = _release(mcmc, Probability(0.0, 0.5), 1.0, acct)
    assert pr.names[0] == "P(w[0] > 0)" and pr.proven_sensitivity == pytest.approx(math.sqrt(3) / 0.5 * D, rel=1e-12)
    with pytest.raises(AssumptionError, match="Quantiles"):
        bayesdp.release(mcmc, "quantiles", epsilon=1.0, accountant=acct)
    with pytest.raises(AssumptionError, match="Probability"):
        bayesdp.release(mcmc, "probability", epsilon=1.0, accountant=acct)
    with pytest.raises(AssumptionError, match="statistic = 'mode' must be"):
        bayesdp.release(mcmc, "mode", epsilon=1.0, accountant=acct)
    assert acct.spent()["epsilon_sum"] == pytest.approx(4.0)            # refusals charged nothing


def test_pure_budget_admits_exactly_ten_releases_of_a_tenth():
    acct = bayesdp.PrivacyAccountant(budget=1.0)
    for _ in range(10):
        acct.spend((0.1, 0.0))
    with pytest.raises(BudgetError, match=r"^epsilon = 0\.1, delta = 0 exceeds the budget \(epsilon 1, delta 0; "
            r"remaining epsilon 0, delta 0\)"):
        acct.spend((0.1, 0.0))


def test_hundred_laplace_releases_compose_like_dp_accounting():
    # 100 one-coordinate releases at epsilon 0.1: summation gives 10; the PLD of the discrete-Laplace
    # mechanism (dp-accounting's DiscreteLaplaceDpEvent on a grid of 2^-10: sensitivity 1025 steps) composes to
    # what dp-accounting reports for the continuous Laplace mechanism (about 4.22) up to 0.1 %.  (Grids finer
    # than 10^6 steps of the sensitivity are composed as pure pairs: docs/ledger.md.)
    from dp_accounting import dp_event, pld

    from bayesdp.budget.ledger import laplace_event

    eps = 0.1
    r = 2.0 ** -10
    ev = laplace_event(1.0, r, eps, coords=1, grid=r)
    assert type(ev.pld_event()).__name__ == "DiscreteLaplaceDpEvent" and ev.pld_event().sensitivity == 1025
    acct = bayesdp.PrivacyAccountant(budget=10.0, budget_delta=1e-5)
    for _ in range(100):
        acct.spend(ev)
    ref = pld.PLDAccountant()
    ref.compose(dp_event.LaplaceDpEvent(noise_multiplier=1 / eps), 100)
    ref_eps = ref.get_epsilon(1e-5)
    assert ref_eps == pytest.approx(4.22, abs=0.01)
    got = acct.spent()["epsilon_pld"]
    assert got <= ref_eps * 1.001 and acct.spent()["epsilon_sum"] == pytest.approx(10.0)
    # the PLD rule admits what summation would refuse: 100 more at 0.1 under a budget of 4.5
    acct2 = bayesdp.PrivacyAccountant(budget=4.5, budget_delta=1e-5)
    for _ in range(100):
        acct2.spend(ev)
    with pytest.raises(BudgetError, match=r"exceeds the budget \(epsilon 4\.5, delta 0\.00001; remaining"):
        for _ in range(40):
            acct2.spend(ev)


def test_mixed_laplace_and_gaussian_equal_dp_accounting():
    from dp_accounting import dp_event, pld

    seq = [dp_event.LaplaceDpEvent(noise_multiplier=5.0), dp_event.GaussianDpEvent(noise_multiplier=3.0),
           dp_event.LaplaceDpEvent(noise_multiplier=20.0), dp_event.GaussianDpEvent(noise_multiplier=1.5)] * 3
    acct = bayesdp.PrivacyAccountant(budget=100.0, budget_delta=1e-6)
    ref = pld.PLDAccountant()
    for ev in seq:
        acct.spend(ev)
        ref.compose(ev)
    assert acct.spent()["epsilon_pld"] == pytest.approx(ref.get_epsilon(1e-6), rel=1e-9)


def test_certificates_export_dp_events():
    rep = bayesdp.bound("ula-path", grad_diff=1.0, step_size=0.01, num_steps=100, delta=1e-5)
    ev = rep.best.to_dp_event()
    assert type(ev).__name__ == "GaussianDpEvent" and ev.noise_multiplier == pytest.approx(1 / rep.best.gdp_mu)
    acct = bayesdp.PrivacyAccountant(budget=5.0, budget_delta=1e-5)
    acct.spend(rep)                                   # a GDP certificate composes as a Gaussian
    # all charges Gaussian-DP: the exact GDP rule, and PLD and Renyi (which bound the same curve from above) are
    # skipped; dp-accounting's PLD of the exported event agrees with it
    sp = acct.spent()
    assert sp["epsilon_gdp"] == pytest.approx(rep.value(), rel=1e-9) and (sp["epsilon_pld"], sp["epsilon_rdp"]) == (
        None, None) and sp["epsilon"] == min(sp["epsilon_gdp"], sp["epsilon_sum"])
    from dp_accounting import pld
    ref = pld.PLDAccountant()
    ref.compose(ev)
    assert sp["epsilon_gdp"] <= ref.get_epsilon(1e-5) <= sp["epsilon_gdp"] * (1 + 1e-3)


def test_ledger_has_the_accountants_interface(tmp_path):
    """Ledger (persistent) and PrivacyAccountant (memory) charge, report and refuse the same way."""
    led = bayesdp.Ledger.open(tmp_path / "l.json", budget=5.0, budget_delta=1e-5)
    acct = bayesdp.PrivacyAccountant(budget=5.0, budget_delta=1e-5)
    rep = bayesdp.bound("ula-path", grad_diff=1.0, step_size=0.01, num_steps=100, delta=1e-5)
    for a in (led, acct):
        a.spend(rep)
        a.spend((0.5, 0.0), what="a count")
    assert led.spent() == pytest.approx(acct.spent()) and led.remaining() == pytest.approx(acct.remaining())
    # GDP(mu) composed with a pure 0.5: the PLD epsilon is below the sum rep.value() + 0.5
    assert acct.spent()["epsilon_pld"] < rep.value() + 0.5 and acct.spent()["epsilon_sum"] == pytest.approx(
        rep.value() + 0.5)
    for a in (led, acct):
        with pytest.raises(BudgetError, match="exceeds the budget"):
            a.spend((4.0, 0.0))
    assert led.spent() == pytest.approx(acct.spent())                  # nothing charged by the refusals
    assert len(bayesdp.Ledger(tmp_path / "l.json").summary()["entries"]) == 2


def test_pure_dp_certificates_export_randomised_response():
    """A pure eps-DP curve exports binary randomised response: dp-accounting's PLD of that event must give
    delta(eps') = (e^eps - e^eps') / (1 + e^eps) (Kairouz-Oh-Viswanath), the curve's own extreme point."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import pld_privacy_accountant as pld

    from bayesdp.certificate import Certificate
    from bayesdp.curves import ApproxDP

    eps = 1.3
    ev = Certificate("x", "test", ApproxDP(eps)).to_dp_event()
    acct = pld.PLDAccountant(NeighboringRelation.REPLACE_ONE)
    acct.compose(ev)
    assert acct.get_delta(0.4) == pytest.approx((math.exp(eps) - math.exp(0.4)) / (1 + math.exp(eps)), rel=1e-6)
    with pytest.raises(AssumptionError, match="not valid"):
        Certificate.invalid("x", "test", "step too large").to_dp_event()


@pytest.mark.parametrize("model,shapes,dom,kw", [
    (logistic, SHAPES, DOM, {}),
    (softmax, SHAPES, bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1, 2)), {}),
    (robust, SHAPES, bayesdp.Domain(X=bayesdp.norm_bound(1.0)), {"df": 4.0}),
], ids=["logistic", "softmax", "robust"])
@pytest.mark.parametrize("target", [0.5, 2.0])
def test_calibration_meets_the_target_tightly(model, shapes, dom, kw, target):
    for mech in ("posterior", "ula-path"):
        try:
            plan = bayesdp.calibrate(model, domain=dom, data=bayesdp.Shapes(500, shapes),
                                     kernel=bayesdp.ULA(model_kwargs=kw), epsilon=target, mechanism=mech,
                                     options=bayesdp.CalibrationOptions(max_steps=400))
        except AssumptionError as exc:        # the posterior needs strong convexity (robust: not proven)
            assert mech == "posterior" and "strongly convex" in str(exc)
            continue
        assert plan.epsilon <= target * (1 + 1e-9)
        again = bayesdp.certify(plan).mechanisms[mech].value()        # re-verified independently
        assert again == pytest.approx(plan.epsilon, rel=1e-9)
        if plan.inverse_temperature < 1.0:                            # tempering active: continuous search
            assert plan.epsilon >= 0.99 * target


def test_calibration_minimises_the_stated_wasserstein_bound():
    """logistic, N(0, 1), |x| <= R, n records: mu = 1, L = 1 + n R^2/4, G = n R.  The sampler's chain is ULA on
    beta U with step gamma = h / beta, so Dalalyan-Karagulyan reads (1 - mu h)^n (G/mu + sqrt(d/(beta mu)))
    + 1.65 (L/mu) sqrt(h d / beta), valid for h <= 2/(mu + L) whatever beta."""
    n, d = 100, 3
    plan = bayesdp.calibrate(logistic, domain=DOM, data=bayesdp.Shapes(n, SHAPES), epsilon=2.0,
                             mechanism="ula-path", options=bayesdp.CalibrationOptions(max_steps=400))
    mu, L, G = 1.0, 1.0 + n * R1 * R1 / 4, n * R1
    b, h, k = plan.inverse_temperature, plan.step_size, plan.num_steps
    assert h <= 2 / (mu + L)
    w = (1 - mu * h) ** k * (G / mu + math.sqrt(d / (b * mu))) + 1.65 * (L / mu) * math.sqrt(h * d / b)
    assert plan.distance_bound["rule"] == "w2" and plan.distance_bound["value"] == pytest.approx(w, rel=1e-9)
    assert w <= 0.5 * (G / mu + math.sqrt(d / (b * mu)))                # informative: at least halves W0
    assert 0.99 * 2.0 <= plan.epsilon <= 2.0 or b == 1.0


def test_calibration_falls_back_to_mixing_when_the_bound_says_nothing():
    """Ill-conditioned (n R^2/4 / mu = 142 with d = 30): the W2 bound cannot halve W0, so the plan states the
    mixing heuristic: mu h n >= 5 e-folds with h <= 1/L, the largest beta, the certificate within 1%."""
    shapes = {"X": (30,), "y": ()}
    plan = bayesdp.calibrate(logistic, domain=DOM, data=bayesdp.Shapes(569, shapes), epsilon=1.0,
                             mechanism="ula-final", options=bayesdp.CalibrationOptions(num_chains=4, max_steps=2000))
    L = 1.0 + 569 * R1 * R1 / 4
    db = plan.distance_bound
    assert db["rule"] == "mixing" and "heuristic" in db["what"]
    assert plan.step_size <= 1 / L and db["efolds"] == pytest.approx(plan.step_size * plan.num_steps, rel=1e-12)
    assert db["efolds"] >= 5
    assert 0.99 <= plan.epsilon <= 1.0 and plan.inverse_temperature < 1
    assert bayesdp.certify(plan).mechanisms["ula-final"].value() <= 1.0      # one chain; 4 compose to plan.epsilon


def test_calibration_never_depends_on_the_data_values():
    """A plan made with the data equals the plan made from the size and shapes alone (a data-dependent
    configuration would itself leak): two different data sets of the same size give the same plan."""
    X, y = _data(n=200, seed=1)
    X2, y2 = _data(n=200, seed=2)
    kw = dict(domain=DOM, epsilon=1.0, mechanism="ula-path", options=bayesdp.CalibrationOptions(max_steps=200))
    a = bayesdp.calibrate(logistic, data={"X": X, "y": y}, **kw)
    b = bayesdp.calibrate(logistic, data={"X": X2, "y": y2}, **kw)
    c = bayesdp.calibrate(logistic, data=bayesdp.Shapes(200, SHAPES), **kw)
    assert a == b == c


def test_unreachable_target_is_refused_with_the_smallest_epsilon():
    with pytest.raises(AssumptionError, match=r"posterior at inverse temperature 1 is [0-9.]+-DP.*allow tempering"):
        bayesdp.calibrate(logistic, domain=DOM, data=bayesdp.Shapes(500, SHAPES), epsilon=0.01,
                          mechanism="posterior", options=bayesdp.CalibrationOptions(temper=False))
    with pytest.raises(AssumptionError, match=r"cannot be reached \(the smallest certified epsilon found is"):
        bayesdp.calibrate(logistic, domain=DOM, data=bayesdp.Shapes(500, SHAPES), epsilon=1e-6,
                          mechanism="ula-path", options=bayesdp.CalibrationOptions(temper=False, max_steps=50))


def test_cli_and_api_give_identical_certificates(tmp_path, capsys):
    from bayesdp.cli import main

    out = tmp_path / "plan.json"
    assert main(["calibrate", "logistic", "--no-data", "--data-size", "400", "--dim", "3", "--domain", "X.norm=1",
                 "y.values=0,1", "--epsilon", "1", "--mechanism", "ula-final", "--max-steps", "300", "--out",
                 str(out), "--json"]) == 0
    cli_plan = json.loads(capsys.readouterr().out)
    plan = bayesdp.Plan.load(str(out))
    api_plan = bayesdp.calibrate(logistic, domain=DOM, data=bayesdp.Shapes(400, SHAPES), epsilon=1.0,
                                 mechanism="ula-final", options=bayesdp.CalibrationOptions(max_steps=300))
    assert api_plan.epsilon == cli_plan["epsilon"] == plan.epsilon and api_plan.step_size == plan.step_size
    assert main(["certify", "--plan", str(out), "--json"]) == 0
    cli_rep = json.loads(capsys.readouterr().out)
    api_rep = bayesdp.certify(plan).to_dict()
    for mech in ("posterior", "ula-final", "ula-path"):
        assert cli_rep["mechanisms"][mech]["epsilon"] == api_rep["mechanisms"][mech]["epsilon"]


def test_certify_table_composes_the_chains_it_was_asked_for():
    """certify(..., num_chains=4) shows the epsilon of the four chains composed, as its plan certifies them
    (it showed one chain's): for a GDP route, 4 chains of mu-GDP are exactly 2 mu-GDP (Dong-Roth-Su Cor. 3.3)."""
    from bayesdp.curves import GDP

    dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
    sh = bayesdp.Shapes(1000, {"X": (3,), "y": ()})
    kw = dict(domain=dom, shapes=sh, kernel=bayesdp.ULA(step_size=1e-3), num_steps=500, delta=1e-5)
    one = bayesdp.certify("logistic", num_chains=1, **kw)
    four = bayesdp.certify("logistic", num_chains=4, **kw)
    mu = one.mechanisms["ula-final"].best.curve.gdp_mu
    want = GDP(2 * mu).epsilon(1e-5)
    rows = {k: e for k, e, _, _ in four._rows()}
    assert rows["ula-final"] == pytest.approx(want, rel=1e-9) and rows["ula-final"] > 2 * one.mechanisms["ula-final"].value()
    assert four.plan("ula-final").epsilon == pytest.approx(want, rel=1e-9)
    assert rows["posterior"] == pytest.approx(one.mechanisms["posterior"].value(), rel=1e-12)   # one draw
    assert f"{want:.6g}" in str(four) and "4 chains composed" in str(four)
