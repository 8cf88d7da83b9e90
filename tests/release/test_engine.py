"""The release engine (bayesdp/publish/engine.py, issue 21 item 2, issue 22 item 1): the CLI and Python build the
same spec and get the same method and settings; a plan's settings and a chain that ran are used as given; every
check of a spec runs before anything is analysed or charged; ``sites=["b"]`` works without a step size."""

import json
import math

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import bayesdp
from bayesdp.budget.ledger import Ledger
from bayesdp.cli import main
from bayesdp.errors import AssumptionError
from bayesdp.models import logistic
from bayesdp.publish import engine
from bayesdp.publish.methods import registry
from bayesdp.budget.ledger import noise_delta, noise_epsilon
from bayesdp.publish.path import path_error_terms, tune_path
from bayesdp.publish.spec import ChainOptions, Coupling, Mean, ReleaseSpec, SampleAggregate

DOMAIN = ["X.norm=1", "y.values=0,1"]


def _data(m=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.05
    y = (X[:, 0] + 0.3 * rng.normal(size=m) > 0).astype(float)
    return {"X": X, "y": y}


def _settings(method_record):
    """The settings that must agree (the chain's key label is not a setting)."""
    return {k: v for k, v in method_record["settings"].items() if k != "chain_keys"}


@pytest.mark.parametrize("extra,spec_kw", [
    (["--delta", "1e-6"], dict(delta=1e-6)),                                   # auto: path, its own step rule
    (["--method", "coupling", "--num-steps", "200"], dict(method="coupling", chain=ChainOptions(num_steps=200))),
])
def test_cli_and_python_choose_the_same_method_and_settings(tmp_path, capsys, extra, spec_kw):
    data = _data()
    path = tmp_path / "d.npz"
    np.savez(path, **data)
    rc = main(["release", "logistic", "--data", str(path), "--domain", *DOMAIN, "--epsilon", "1", "--ledger",
               str(tmp_path / "l.jsonl"), "--budget", "4", "--budget-delta", "1e-5", *extra, "--json",
               "--allow-uninformative"])       # 120 records: predicted worse than the prior (docs/release.md §12)
    out, err = capsys.readouterr()
    assert rc == 0, err
    cli = json.loads(out)
    acct = bayesdp.PrivacyAccountant(budget=4.0, budget_delta=1e-5)
    res = bayesdp.release(bayesdp.ULA(logistic, domain=DOMAIN), ReleaseSpec("mean", epsilon=1.0, allow_uninformative=True, **spec_kw),
                          data=data, accountant=acct)
    py = res.to_dict()
    assert cli["method"]["method"] == py["method"]["method"]
    assert _settings(cli["method"]) == _settings(py["method"])
    assert cli["method"]["predicted_rmse"] == py["method"]["predicted_rmse"]
    if "delta" in spec_kw:
        # the rule of docs/release.md §8.4 (the settings minimising the predicted error), not a fixed 2000 steps,
        # from both
        assert py["method"]["method"] == "path"
        an = engine.analyse(bayesdp.api._chain_source(bayesdp.ULA(logistic, domain=DOMAIN), data),
                            ReleaseSpec(epsilon=1.0).check())
        tuned = tune_path(an.constants, 3, noise_epsilon(1.0), float(noise_delta(1e-6)), ["BernoulliLogits"])
        s = py["method"]["settings"]
        assert (s["num_steps"], s["burn_in"], s["step_size"], s["num_chains"]) == (
            tuned["num_steps"], tuned["burn_in"], tuned["step_size"], tuned["num_chains"])
    # every item carries the method's prediction, labelled, in the JSON and in the Python result; a path release
    # whose burn-in was read off the path predicts at the burn-in it used (docs/release.md §8.4)
    def expected(out):
        return (out.get("path") or {}).get("predicted_rmse") or out["method"]["predicted_rmse"]

    assert len(cli["items"]) == len(cli["values"]) >= 1
    assert all(it["predicted_rmse"] == expected(cli) and it["predicted_label"] == "heuristic"
               for it in cli["items"])
    assert res.items[0].predicted_rmse == expected(py)


def test_a_plans_settings_are_used_as_given():
    data = _data(m=100)
    plan = bayesdp.calibrate("logistic", domain=bayesdp.Domain.parse(DOMAIN), epsilon=1.0, delta=1e-6,
                             mechanism="ula-path", data=bayesdp.Shapes(100, {"X": (3,), "y": ()}),
                             options=bayesdp.CalibrationOptions(max_steps=300))
    acct = bayesdp.PrivacyAccountant(budget=3.0, budget_delta=1e-5)
    res = bayesdp.release(plan, ReleaseSpec("mean", epsilon=1.0, delta=1e-6, method="path", allow_uninformative=True),
                          data=data,
                          accountant=acct)
    s = res.extra["method"]["settings"]
    assert (s["step_size"], s["num_steps"], s["num_chains"], s["inverse_temperature"]) == (
        plan.step_size, plan.num_steps, plan.num_chains, plan.inverse_temperature)
    assert res.certificate.epsilon(1e-6) <= 1.0
    # the burn-in, which the plan leaves open, minimises the predicted error at the plan's own temperature (§8.4):
    # no other burn-in has a smaller prediction (every b checked)
    an = engine.analyse(bayesdp.api._chain_source(bayesdp.ULA(logistic, domain=DOMAIN), data),
                        ReleaseSpec(epsilon=1.0).check())
    errs = [path_error_terms(an.constants, 3, s["inverse_temperature"], s["step_size"], s["num_steps"], b,
                             s["num_chains"], ["BernoulliLogits"], 3, 1.0)["mse_per_direction"]
            for b in range(s["num_steps"])]
    assert errs[s["burn_in"]] <= min(errs) * (1 + 1e-9)
    res = bayesdp.release(plan, ReleaseSpec("mean", epsilon=1.0, method="coupling", allow_uninformative=True), data=data,
                          accountant=acct)
    s = res.extra["method"]["settings"]
    assert (s["step_size"], s["num_steps"], s["num_chains"], s["inverse_temperature"]) == (
        plan.step_size, plan.num_steps, plan.num_chains, plan.inverse_temperature)
    # a plan made for another record count is refused before anything is charged
    with pytest.raises(AssumptionError, match="records"):
        bayesdp.release(plan, "mean", epsilon=1.0, data=_data(m=90), accountant=acct)
    assert acct.spent()["epsilon_sum"] == pytest.approx(2.0)


def test_a_chain_that_ran_is_released_as_given(monkeypatch):
    data = _data()
    mcmc = bayesdp.PrivateMCMC(bayesdp.ULA(logistic, domain=DOMAIN, step_size=2e-3), num_steps=120, release="path")
    mcmc.run(**data)
    draws = np.asarray(mcmc.sampler.get_unconstrained_samples(group_by_chain=True))
    coupling = type(registry()["coupling"])
    seen = {}
    real = coupling.prepare

    def spy(self, plan, an, rng_key):
        seen["state"] = real(self, plan, an, rng_key)
        return seen["state"]

    monkeypatch.setattr(coupling, "prepare", spy)
    acct = bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5)
    res = bayesdp.release(mcmc, ReleaseSpec("mean", epsilon=1.0, delta=1e-6, allow_uninformative=True),
                          accountant=acct)       # auto, delta > 0
    m = res.extra["method"]
    assert m["method"] == "coupling"                        # the only method that releases this chain
    assert {c["method"] for c in m["considered"] if "not_applicable" in c} == {"path", "final", "sample-aggregate"}
    assert m["settings"]["num_steps"] == 120 and m["settings"]["step_size"] == 2e-3
    # the non-private estimate is exactly the mean of the chain's own draws after the default burn-in (half)
    np.testing.assert_allclose(seen["state"][0], draws[:, 60:, :].reshape(-1, 3).astype(np.float64).mean(axis=0), rtol=1e-12)
    assert acct.spent()["epsilon_sum"] == pytest.approx(1.0)


def test_option_errors_are_raised_when_the_options_are_built():
    with pytest.raises(AssumptionError, match="burn_in = 400 must be <"):
        ChainOptions(num_steps=400, burn_in=400)
    with pytest.raises(AssumptionError, match="chunks"):
        SampleAggregate(chunks=0)
    with pytest.raises(AssumptionError, match="max_delta"):
        Coupling(max_delta=1.5)
    with pytest.raises(AssumptionError, match="range"):       # the range belongs to the statistic
        Mean(range=(1.0, 0.0))


@pytest.mark.parametrize("bad,needle", [
    (dict(level=1.5), "level"), (dict(epsilon=0.0), "epsilon"), (dict(method="path"), "delta"),
    (dict(noise="gaussian"), "delta"), (dict(method="sample-aggregate"), "range"),
    (dict(method="mode"), "method"),
])
def test_a_spec_error_is_raised_before_anything_is_analysed_or_charged(tmp_path, monkeypatch, bad, needle):
    def no_analysis(*a, **k):
        raise AssertionError("the model was analysed before the spec was checked")

    monkeypatch.setattr(engine, "analyse", no_analysis)
    acct = bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5)
    ledger = tmp_path / "l.jsonl"
    Ledger.open(ledger, budget=2.0)
    before = ledger.read_bytes()
    kw = {"statistic": "mean", "epsilon": 1.0, **bad}
    for target in (acct, str(ledger)):
        with pytest.raises(AssumptionError, match=needle) as e:
            bayesdp.release(bayesdp.ULA(logistic, domain=DOMAIN), ReleaseSpec(**kw), data=_data(), accountant=target)
        assert "\n" not in str(e.value)
    assert acct.entries == [] and ledger.read_bytes() == before


def _logistic_with_intercept(X, y=None, prior_scale=1.0):
    d = X.shape[1]
    w = numpyro.sample("w", dist.Normal(0.0, prior_scale).expand([d]).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, prior_scale))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w + b), obs=y)


def test_sites_b_without_a_step_size():
    acct = bayesdp.PrivacyAccountant(budget=1.0)
    spec = ReleaseSpec(Mean(sites=["b"]), epsilon=1.0, chain=ChainOptions(num_steps=200), allow_uninformative=True)
    res = bayesdp.release(bayesdp.ULA(_logistic_with_intercept, domain=DOMAIN), spec, data=_data(), accountant=acct)
    assert res.names == ("b",) and math.isfinite(res.values[0])
    assert res.extra["method"]["settings"]["step_size_rule"].startswith("1 / total_smoothness")


def test_release_result_prints_a_table_and_converts_to_pandas():
    acct = bayesdp.PrivacyAccountant(budget=1.0)
    spec = ReleaseSpec("mean", epsilon=1.0, chain=ChainOptions(num_steps=100), allow_uninformative=True)
    res = bayesdp.release(bayesdp.ULA(logistic, domain=DOMAIN), spec, data=_data(), accountant=acct)
    text = str(res)
    assert len(text.splitlines()) == 2 + 3 + 1 and "w[2]" in text and "pred. rmse" in text
    df = res.to_dataframe()
    assert list(df.index) == ["w[0]", "w[1]", "w[2]"] and df["value"].tolist() == [float(v) for v in res.values]
    assert "<table>" in res._repr_html_()
    # the prediction of a coupling release is the noise's exact standard deviation (Laplace: sqrt(2) b)
    assert res.items[0].predicted_rmse == pytest.approx(math.sqrt(2.0) * res.noise_scale, rel=1e-12)
