"""A chain, plan or driver given as is (issue 22 item 1; docs/release.md §12.3): released by the methods that release
it, and refused before anything is charged when its predicted squared error is 10x a fresh release's, with both
predictions and the call that gets the better answer; the CLI's refusal is one line, exit 2, ledger unchanged."""


import numpy as np
import pytest

import bayesdp
from bayesdp.cli import main
from bayesdp.models import logistic
from bayesdp.publish import engine
from bayesdp.publish.methods.base import ChainSource
from bayesdp.publish.prior import UninformativeError
from bayesdp.publish.spec import ReleaseSpec

DOM = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
DOMAIN = ["X.norm=1", "y.values=0,1"]


def _data(m, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.001
    return {"X": X, "y": (rng.random(m) < 0.5).astype(float)}


@pytest.mark.slow
def test_a_run_chain_predicted_ten_times_worse_than_a_fresh_release_is_refused():
    data = _data(500)
    mcmc = bayesdp.PrivateMCMC(bayesdp.ULA(logistic, domain=DOM, step_size=1e-3), num_steps=50).run(None, **data)
    acct = bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5)
    spec = ReleaseSpec("mean", epsilon=1.0, delta=1e-6)
    with pytest.raises(UninformativeError) as exc:
        bayesdp.release(mcmc, spec, accountant=acct)
    msg = str(exc.value)
    # both predictions, independently: the chain's only method (coupling) and a fresh kernel's best (path here)
    src = bayesdp.api._chain_source(mcmc, None)
    an, given, _, _ = engine.plan_release(src, spec.check())
    fresh_src = ChainSource(logistic, src.data, src.domain, model_kwargs=src.model_kwargs)
    _, fresh, _, considered = engine.plan_release(fresh_src, spec.check())
    assert given.method == "coupling" and fresh.method in ("path", "final")
    best = min(c["predicted_rmse"] for c in considered if c.get("predicted_rmse") is not None)
    ratio = (given.predicted_rmse / best) ** 2
    assert ratio >= engine.GIVEN_RATIO
    assert f"{3 * given.predicted_rmse ** 2:.3g}" in msg and f"{3 * best ** 2:.3g}" in msg
    assert f"{ratio:.3g}x worse" in msg and "\n" not in msg
    assert "bayesdp.release(bayesdp.ULA(model, domain=domain), 'mean'" in msg and "epsilon=1, delta=1e-06" in msg
    assert acct.remaining()["epsilon"] == 2.0 and not acct.entries


def test_a_given_chain_released_anyway_carries_the_warning():
    data = _data(500)
    mcmc = bayesdp.PrivateMCMC(bayesdp.ULA(logistic, domain=DOM, step_size=1e-3), num_steps=50).run(None, **data)
    acct = bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5)
    res = bayesdp.release(mcmc, ReleaseSpec("mean", epsilon=1.0, delta=1e-6, allow_uninformative=True),
                          accountant=acct)
    assert res.extra["method"]["method"] == "coupling" and acct.remaining()["epsilon"] == 1.0
    assert any("given as is" in w and "released as given" in w for w in res.extra["warnings"])
    assert res.extra["informative"]["given"]["ratio"] >= engine.GIVEN_RATIO


def test_a_driver_with_a_fresh_releases_own_settings_is_not_refused():
    # a driver pinned to exactly the settings a fresh release would choose predicts exactly the fresh error
    data, dom = _data(500), bayesdp.Domain.parse(DOMAIN)
    spec = ReleaseSpec("mean", epsilon=4.0, delta=1e-6).check()
    _, fresh, _, _ = engine.plan_release(ChainSource(logistic, data, dom), spec)
    assert fresh.method == "path"
    src = ChainSource(logistic, data, dom, given="driver", num_steps=fresh.settings["num_steps"], num_chains=1,
                      kernel={"sampler": "ula", "step_size": fresh.settings["step_size"]})
    an, plan, _, _ = engine.plan_release(src, spec)
    out = engine.check_given(an, plan, spec)
    assert plan.method == "path" and out["ratio"] == pytest.approx(1.0, rel=1e-12) and out["warnings"] == []


def test_a_driver_too_short_to_forget_its_start_carries_the_start_transient():
    """100 steps at step 1e-3 move the chain a fraction of one relaxation time from its start at 0: the path
    prediction adds the start's bias, f / sqrt(m_K) per direction with f = mean_{t=b+1}^{100} (1 - gamma lambda)^t
    (b the tuned burn-in) and lambda the public heuristic curvature at the chain's temperature (docs/release.md
    §8.4, §11.4; its fixed point iterated here), summed here term by term."""
    import math

    data, d, gamma, n = _data(500), 3, 1e-3, 100
    src = ChainSource(logistic, data, bayesdp.Domain.parse(DOMAIN), given="driver", num_steps=n, num_chains=1,
                      kernel={"sampler": "ula", "step_size": gamma})
    spec = ReleaseSpec("mean", epsilon=4.0, delta=1e-6).check()
    an, plan, _, _ = engine.plan_release(src, spec)
    m_k, L = an.constants["total_strong_convexity"], an.constants["total_smoothness"]
    assert m_k == pytest.approx(1.0) and L == pytest.approx(1.0 + 500 / 4.0, rel=1e-6)   # prior N(0, 1), |x| <= 1
    beta, b = plan.settings["inverse_temperature"], plan.settings["burn_in"]
    c = an.constants["record_smoothness"]                           # 1/4 (float32 records: to 1e-6)
    records, r2, lam = 500 * c / (d + 2), c * 4 * d / (d + 2), m_k + 500 * c / (d + 2)
    for _ in range(500):
        lam = m_k + records / math.sqrt(1 + math.pi * r2 * (1 / (beta * lam) + 1 / m_k) / 8)
    f = sum((1.0 - gamma * lam) ** t for t in range(b + 1, 101)) / (100 - b)
    assert plan.settings["start_transient"] == pytest.approx(f / math.sqrt(m_k), rel=1e-9)
    sd, bias = plan.settings["equivalent_noise_sd"], plan.settings["predicted_bias"]
    assert f > 0.05                       # a visible share of the start stays even after the tuned burn-in
    assert plan.predicted_rmse == pytest.approx(math.sqrt(sd * sd + (f / math.sqrt(m_k)) ** 2 + bias * bias),
                                                rel=1e-9)
    out = engine.check_given(an, plan, spec)
    assert out["ratio"] > 1.0                                        # worse than the fresh release's own settings


def test_a_kernel_is_not_compared_with_itself():
    src = ChainSource(logistic, _data(200), bayesdp.Domain.parse(DOMAIN))
    spec = ReleaseSpec("mean", epsilon=50.0).check()
    an, plan, _, _ = engine.plan_release(src, spec)
    assert engine.check_given(an, plan, spec) is None


# -- the command line ---------------------------------------------------------------------------------------

def _cli(tmp_path, *extra):
    path = tmp_path / "d.npz"
    if not path.exists():
        np.savez(path, **_data(200))
    return ["release", "logistic", "--data", str(path), "--domain", *DOMAIN, "--epsilon", "0.5", "--ledger",
            str(tmp_path / "l.sqlite"), "--budget", "1", "--num-steps", "50", *extra]


def test_cli_refuses_in_one_line_with_exit_2_and_charges_nothing(tmp_path, capsys):
    led = tmp_path / "l.sqlite"
    bayesdp.Ledger.open(str(led), budget=1.0)
    before = led.read_bytes()
    rc = main(_cli(tmp_path, "--json"))
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err and "worse than knowing nothing" in err
    assert "--allow-uninformative" in err
    assert led.read_bytes() == before and not bayesdp.Ledger.open(str(led)).entries


@pytest.mark.slow
def test_cli_allow_uninformative_releases_and_warns_on_stderr(tmp_path, capsys):
    rc = main(_cli(tmp_path, "--allow-uninformative", "--json"))
    out, err = capsys.readouterr()
    assert rc == 0 and err.startswith("warning: ") and "worse than knowing nothing" in err
    assert len(bayesdp.Ledger.open(str(tmp_path / "l.sqlite")).entries) == 1
    assert '"warnings"' in out


def test_cli_refusal_leaves_no_new_ledger_behind(tmp_path, capsys):
    """A ledger that --budget would create is not left behind, empty, by a release refused before any charge;
    an existing ledger stays (the test above)."""
    led = tmp_path / "l.sqlite"
    rc = main(_cli(tmp_path, "--json"))
    _, err = capsys.readouterr()
    assert rc == 2 and "worse than knowing nothing" in err
    assert not led.exists()


def test_cli_release_runs_a_last_draw_plan_from_calibrate(tmp_path, capsys):
    """`release --plan P --method final` runs the plan `calibrate --mechanism ula-final` wrote: its step size,
    number of steps and inverse temperature are the plan's, not flags to refuse (they were refused)."""
    import json

    path = tmp_path / "d.npz"
    np.savez(path, **_data(500))
    plan = tmp_path / "plan.json"
    assert main(["calibrate", "logistic", "--data", str(path), "--domain", *DOMAIN, "--epsilon", "2", "--delta",
                 "1e-6", "--mechanism", "ula-final", "--max-steps", "300", "--out", str(plan)]) == 0
    p = json.loads(plan.read_text())
    capsys.readouterr()
    rc = main(["release", "--plan", str(plan), "--data", str(path), "--epsilon", "2", "--delta", "1e-6", "--ledger",
               str(tmp_path / "l.sqlite"), "--budget", "4", "--budget-delta", "1e-5", "--method", "final",
               "--allow-uninformative", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    s = json.loads(out)["method"]["settings"]
    assert s["num_steps"] == p["num_steps"] <= 300
    assert s["step_size"] == pytest.approx(p["step_size"], rel=1e-12)
    assert s["inverse_temperature"] == pytest.approx(p["inverse_temperature"], rel=1e-12)
