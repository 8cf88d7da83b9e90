"""``sample --plan`` / ``release --plan`` (``bayesdp.commands._common.apply_plan``): the plan's model, domain and
sampler settings are what the command runs and certifies; a flag that contradicts the plan is refused in one line
(exit 2) before any chain runs or anything is charged.

The plans are written here as JSON literals (the ``bayesdp plan v1`` format of ``Plan.to_json``), not by
``calibrate``, so the expected numbers below follow from the literals by hand.
"""

import json
import math

import numpy as np
import pytest
from scipy import optimize, stats

import bayesdp.publish.noise as noise_mod
from bayesdp.cli import main
from bayesdp.samplers import Sampler

M, DIM = 80, 3
#: the certificate uses the declared norm R = 1 inflated by 1 + 8 * 2^-24 (float32 rows at the bound, domain.py)
R_CERT = 1 + 8 * 2.0 ** -24


def _plan(**change):
    d = {"model": "logistic", "domain": {"X": {"norm": 1.0}, "y": {"values": [0.0, 1.0]}}, "data_size": M,
         "record_shapes": {"X": [DIM], "y": []}, "mechanism": "sgld-path", "sampler": "sgld", "step_size": 0.002,
         "num_steps": 40, "inverse_temperature": 1.0, "batch_size": 16, "clip_norm": 0.5, "num_chains": 2,
         "delta": 1e-5, "epsilon": 6.6, "source": "written by hand for the test", "model_kwargs": {},
         "gdp_mu": None, "distance_bound": None, "notes": [], "diagnostics": None, "warnings": [],
         "format": "bayesdp plan v1"}
    d.update(change)
    return d


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(M, DIM))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))     # inside X.norm = 1
    y = (rng.random(M) < 0.5).astype(np.float32)
    d = tmp_path_factory.mktemp("plan")
    np.savez(d / "d.npz", X=X.astype(np.float32), y=y)
    (d / "sgld.json").write_text(json.dumps(_plan()))
    # the epsilon of sqrt(2)-GDP at delta = 1e-5 is 6.573 (below): a plan promising 6.5 is not what the run gives
    (d / "low.json").write_text(json.dumps(_plan(epsilon=6.5)))
    (d / "bigger.json").write_text(json.dumps(_plan(data_size=M + 1)))
    (d / "ula.json").write_text(json.dumps(_plan(mechanism="ula-path", sampler="ula", step_size=1e-3, num_steps=50,
                                                 batch_size=None, clip_norm=None, num_chains=1)))
    (d / "posterior.json").write_text(json.dumps(_plan(mechanism="posterior", sampler=None, step_size=None,
                                                       num_steps=None, batch_size=None, clip_norm=None,
                                                       num_chains=1)))
    return d


@pytest.fixture
def counters(monkeypatch):
    """Count secure-noise draws and chain runs."""
    c = {"noise": 0, "chain": 0}
    real_noise, real_chain = noise_mod.sample_discrete_laplace, Sampler.run

    def noise(*a, **k):
        c["noise"] += 1
        return real_noise(*a, **k)

    def chain(*a, **k):
        c["chain"] += 1
        return real_chain(*a, **k)

    monkeypatch.setattr(noise_mod, "sample_discrete_laplace", noise)
    monkeypatch.setattr(Sampler, "run", chain)
    return c


def _gdp_delta(eps, mu):
    """delta(eps) of mu-GDP (Dong-Roth-Su 2022, Cor. 2.13)."""
    return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


def test_sample_runs_and_certifies_the_plans_model_domain_and_settings(files, capsys, counters):
    # no MODEL, no --domain, no sampler flags: all from the plan; --num-steps 40 agrees with it and is accepted
    rc = main(["sample", "--plan", str(files / "sgld.json"), "--data", str(files / "d.npz"), "--num-steps", "40",
               "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert counters["chain"] == 1
    cert = json.loads(out)["certificate"]
    cfg = cert["configuration"]
    assert (cfg["sampler"], cfg["step_size"], cfg["num_steps"], cfg["batch_size"], cfg["clip_norm"],
            cfg["num_chains"], cfg["release"], cfg["data_size"], cfg["dim"]) == \
        ("sgld", 0.002, 40, 16, 0.5, 2, "path", M, DIM)
    assert cert["certified"] and cert["mechanism"] == "sgld-path" and cert["delta"] == 1e-5
    # By hand, from the plan: clipped record gradients have norm <= 0.5, so one replaced record moves the
    # minibatch estimate (m/s) sum_A g_i by at most (80/16) * 2 * 0.5 = 5 per step; one step is
    # 5 sqrt(gamma beta / 2) = 5 sqrt(0.001)-GDP, 40 steps compose to 5 sqrt(0.04) = 1-GDP, two chains to
    # sqrt(2)-GDP.  A flag of the plan dropped (clip, batch, step, steps, chains, the domain's X.norm = 1)
    # changes this number.
    assert cert["per_chain"]["assumptions"]["step_drift_diff"] == pytest.approx(5.0, rel=1e-6)
    assert cert["gdp_mu"] == pytest.approx(math.sqrt(2.0), rel=1e-6)
    # the epsilon at delta = 1e-5 of sqrt(2)-GDP, by the closed form solved with brentq
    eps = optimize.brentq(lambda e: _gdp_delta(e, math.sqrt(2.0)) - 1e-5, 0.1, 50.0, xtol=1e-12)
    assert cert["epsilon"] == pytest.approx(eps, rel=1e-6)
    assert cert["analysis_constants"]["record_grad_bound"] == pytest.approx(0.5)   # the clip, not the domain


@pytest.mark.slow
def test_release_runs_the_plans_chain(files, tmp_path, capsys, counters):
    ledger = tmp_path / "l.db"
    rc = main(["release", "--plan", str(files / "ula.json"), "--data", str(files / "d.npz"), "--epsilon", "1",
               "--ledger", str(ledger), "--budget", "10", "--allow-uninformative", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    rep = json.loads(out)
    assert counters["chain"] == 1 and counters["noise"] == 3      # one discrete Laplace draw per coordinate
    a = rep["monte_carlo"]["assumptions"]
    assert (a["step_size"], a["num_steps"], a["num_chains"], a["inverse_temperature"]) == (1e-3, 50, 1, 1.0)
    assert rep["names"] == ["w[0]", "w[1]", "w[2]"]       # the plan's model, logistic with its 3 coordinates
    # the plan's domain: logistic with X.norm = 1, y in {0, 1} and the N(0, 1) prior is 1-strongly convex and two
    # records' gradients differ by <= 2 R, so the coupling distance is 2 R / 1 and the three coordinate means
    # have L1 sensitivity sqrt(3) * 2 R (tests/release/test_release_cli.py's docstring)
    assert rep["proven_sensitivity"] == pytest.approx(2 * math.sqrt(3) * R_CERT, rel=1e-9)
    assert rep["epsilon"] == 1.0 and rep["remaining_budget"] == {"epsilon": 9.0, "delta": 0.0}


def _one_line(capsys, rc):
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("extra, message", [
    (["--step-size", "0.01"], "--step-size 0.01 contradicts --plan {plan} (0.002); drop --step-size"),
    (["--num-steps", "41"], "--num-steps 41 contradicts --plan {plan} (40); drop --num-steps"),
    (["--batch-size", "8"], "--batch-size 8 contradicts --plan {plan} (16); drop --batch-size"),
    (["--clip-norm", "1"], "--clip-norm 1.0 contradicts --plan {plan} (0.5); drop --clip-norm"),
    (["--domain", "X.norm=2", "y.values=0,1"], "--domain contradicts --plan {plan}, which holds the domain"),
    (["softmax"], "MODEL softmax contradicts --plan {plan} (model logistic); drop MODEL"),
])
@pytest.mark.parametrize("command", ["sample", "release"])
def test_a_flag_contradicting_the_plan_is_refused(files, tmp_path, capsys, counters, command, extra, message):
    plan = str(files / "sgld.json")
    ledger = tmp_path / "l.db"
    tail = ["--epsilon", "1", "--ledger", str(ledger), "--budget", "10"] if command == "release" else []
    err = _one_line(capsys, main([command, "--plan", plan, "--data", str(files / "d.npz"), *extra, *tail]))
    assert message.format(plan=plan) in err, err
    assert counters == {"noise": 0, "chain": 0}
    assert not ledger.exists()


def test_a_plan_without_a_chain_is_refused_by_sample(files, capsys, counters):
    plan = str(files / "posterior.json")
    err = _one_line(capsys, main(["sample", "--plan", plan, "--data", str(files / "d.npz")]))
    assert f"--plan {plan} is a posterior plan: it has no chain to run" in err
    assert counters == {"noise": 0, "chain": 0}


@pytest.mark.parametrize("name, message", [
    ("low.json", "was certified at epsilon 6.5 for 80 records; this run (80 records) is certified at epsilon 6.57"),
    ("bigger.json", "was certified at epsilon 6.6 for 81 records; this run (80 records)"),
])
def test_sample_refuses_a_run_the_plan_does_not_certify(files, capsys, counters, name, message):
    err = _one_line(capsys, main(["sample", "--plan", str(files / name), "--data", str(files / "d.npz")]))
    assert message in err, err
    assert counters == {"noise": 0, "chain": 0}
