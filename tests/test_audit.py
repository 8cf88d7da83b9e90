"""Audit (issue #8): lower-bound statistics, the LQ benchmark, bad input."""

import json
import math

import numpy as np
import pytest
from scipy import optimize, stats

from bayesdp.audit import audit, check_neighbours
from bayesdp.audit.stats import audit_scores, clopper_pearson_upper
from bayesdp.cli import main
from bayesdp.errors import AssumptionError


def test_clopper_pearson_closed_forms():
    # k = 0: upper bound solves (1-p)^n = alpha -> p = 1 - alpha^(1/n)
    assert clopper_pearson_upper(0, 100, 0.05) == pytest.approx(1 - 0.05 ** (1 / 100), rel=1e-9)
    # k = n - 1: upper bound solves p^n = alpha' on the other side -> 1 - p = ... ; check the defining identity
    from scipy.stats import binom
    p = clopper_pearson_upper(7, 50, 0.05)
    assert binom.cdf(7, 50, p) == pytest.approx(0.05, rel=1e-6)
    assert clopper_pearson_upper(50, 50, 0.05) == 1.0


def test_gdp_lower_bound_on_gaussian_samples():
    rng = np.random.default_rng(1)
    for mu in [0.5, 1.0, 2.0]:
        b = audit_scores(rng.normal(mu, 1, 200_000), rng.normal(0, 1, 200_000), delta=1e-5)
        assert 0.85 * mu <= b.mu_lower_bound <= mu * 1.001
        assert b.epsilon_lower_bound > 0


@pytest.mark.parametrize("mechanism,kw", [
    ("posterior", {}),
    ("ula-final", dict(step_size=0.1, num_steps=100)),
    ("ula-path", dict(step_size=0.01, num_steps=50)),
])
def test_lq_audit_is_tight(mechanism, kw):
    rep = audit(mechanism, runs=20_000, strong_convexity=1.0, grad_bound=0.5, seed=3, **kw)
    assert rep.passed
    assert rep.exact_mu is not None
    assert abs(rep.bounds.mu_lower_bound - rep.exact_mu) <= 0.2 * rep.exact_mu
    assert rep.bounds.mu_lower_bound <= rep.certified_mu * (1 + 1e-9)


@pytest.mark.parametrize("mechanism,kw", [
    ("sgld-final", dict(step_size=0.01, num_steps=300, batch_size=10, data_size=50)),
    ("sgld-path", dict(step_size=0.01, num_steps=300, batch_size=10, data_size=50)),
])
def test_sgld_audits_below_certificate(mechanism, kw):
    rep = audit(mechanism, runs=5_000, strong_convexity=1.0, grad_bound=0.05, seed=4, **kw)
    assert rep.passed
    assert rep.bounds.epsilon_lower_bound <= rep.certified_epsilon


def test_cli_json_keys_and_exit_codes(capsys):
    rc = main(["audit", "posterior", "--strong-convexity", "1", "--grad-bound", "0.5", "--runs", "5000", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0
    # the benchmark's posterior: K = 1-strongly convex, records' gradients within c = 0.5, so two data sets'
    # gradients differ by 2c = 1 and Gopi-Lee-Liu give mu = 2c / sqrt(K) = 1, which the linear-quadratic
    # benchmark attains exactly
    assert d["certified_mu"] == pytest.approx(1.0, rel=1e-12) and d["exact_mu"] == pytest.approx(1.0, rel=1e-12)
    # epsilon of 1-GDP at delta = 1e-5: Phi(-e + 1/2) - e^e Phi(-e - 1/2) = 1e-5 (Dong-Roth-Su Cor. 2.13)
    eps = optimize.brentq(lambda e: stats.norm.cdf(-e + 0.5) - math.exp(e) * stats.norm.cdf(-e - 0.5) - 1e-5,
                          0.1, 20.0, xtol=1e-13)
    assert d["certified_epsilon"] == pytest.approx(eps, rel=1e-9) and d["delta"] == 1e-5
    assert (d["runs"], d["confidence"], d["mechanism"]) == (5000, 0.95, "posterior")
    assert d["epsilon_lower_bound"] <= d["certified_epsilon"]
    assert d["mu_lower_bound"] <= d["certified_mu"]


@pytest.mark.parametrize("argv, needle", [
    (["audit", "ula-final", "--strong-convexity", "1", "--grad-bound", "0.5", "--runs", "1000"],
     "error: --step-size and --num-steps are required for ula-final"),
    (["audit", "ula-final", "--strong-convexity", "1", "--grad-bound", "0.5", "--step-size", "0.1",
      "--num-steps", "10", "--runs", "5"], "error: runs = 5 is too few for confidence 0.95 over 64 thresholds"),
    (["audit", "ula-final", "--strong-convexity", "1", "--grad-bound", "0.5", "--step-size", "3",
      "--num-steps", "10", "--runs", "1000"], "error: step_size = 3 must be < 2/L = 2"),
    (["audit", "nope", "--strong-convexity", "1", "--grad-bound", "0.5", "--runs", "1000"],
     "argument MECHANISM: invalid choice: 'nope'"),
    (["audit", "posterior", "--strong-convexity", "1", "--grad-bound", "0.5", "--runs", "1000", "--confidence",
      "1.5"], "error: --confidence = 1.5 must be in (0, 1)"),
    (["audit", "sgld-path", "--strong-convexity", "1", "--grad-bound", "0.5", "--step-size", "0.1",
      "--num-steps", "10", "--batch-size", "20", "--data-size", "10", "--runs", "1000"],
     "error: batch_size = 20 must be <= data_size = 10"),
])
def test_bad_input(capsys, argv, needle):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(needle) if needle.startswith("error:") else needle in err, err


def test_constant_score_refused():
    with pytest.raises(AssumptionError, match="constant"):
        audit_scores(np.zeros(1000), np.zeros(1000), 1e-5)


def test_neighbour_checks():
    X = np.arange(12.0).reshape(6, 2)
    y = np.array([0, 1, 0, 1, 1, 0])
    X2 = X.copy(); X2[3] = [9, 9]
    assert check_neighbours({"X": X, "y": y}, {"X": X2, "y": y}) == 3
    X3 = X2.copy(); X3[0] = [7, 7]
    with pytest.raises(AssumptionError, match="differ in 2 records"):
        check_neighbours({"X": X, "y": y}, {"X": X3, "y": y})
    with pytest.raises(AssumptionError, match="same size"):
        check_neighbours({"X": X, "y": y}, {"X": X[:5], "y": y[:5]})
    assert check_neighbours({"X": X, "y": y}, {"X": np.delete(X, 2, 0), "y": np.delete(y, 2)}, "add-remove") == 2
    with pytest.raises(AssumptionError, match="identical"):
        check_neighbours({"X": X}, {"X": X})


def test_cli_mechanism_list_matches_library():
    from bayesdp.audit import MECHANISMS
    from bayesdp.commands import audit as cmd

    assert cmd.MECHANISMS == MECHANISMS


# -- reference models with the real samplers --------------------------------------------------

from bayesdp.bench.audit import _model_data  # noqa: E402  (shared with the benchmark)


MODEL_CASES = [
    ("logistic", "ula-final", {}), ("logistic", "ula-path", {}), ("logistic", "sgld-final", {"batch_size": 8}),
    ("logistic", "sgld-path", {"batch_size": 8}), ("robust", "ula-final", {}), ("softmax", "ula-path", {}),
    ("sparse_logistic", "ula-path", {}), ("poisson", "ula-path", {"clip_norm": 1.0}),
]


@pytest.mark.parametrize("name,mechanism,kw", MODEL_CASES, ids=[f"{a}-{b}" for a, b, _ in MODEL_CASES])
def test_reference_model_audits_stay_below_certificates(name, mechanism, kw):
    from bayesdp.audit import audit_model
    from bayesdp.models import BUILTIN

    data, domain, mkw = _model_data(name)
    rep = audit_model(mechanism, BUILTIN[name], data, domain=domain, runs=1500, step_size=0.05, num_steps=100,
                      model_kwargs=mkw or None, model_name=name, **kw)
    assert rep.passed, rep.violations
    assert rep.bounds.epsilon_lower_bound <= rep.certified_epsilon
    if rep.certified_mu is not None:
        assert rep.bounds.mu_lower_bound <= rep.certified_mu


def test_model_audit_detects_the_difference():
    """The path of logistic regression with extreme neighbours is clearly distinguishable: the audit is not
    vacuous (mu_LB well above 0) while staying below the certificate."""
    from bayesdp.audit import audit_model
    from bayesdp.models import BUILTIN

    data, domain, _ = _model_data("logistic")
    rep = audit_model("ula-path", BUILTIN["logistic"], data, domain=domain, runs=3000, step_size=0.05, num_steps=200)
    assert 1.0 < rep.bounds.mu_lower_bound < rep.certified_mu


def test_release_audit_is_tight():
    rep = audit("release", runs=20_000, strong_convexity=1.0, grad_bound=0.5, step_size=0.1, num_steps=200,
                burn_in=50, epsilon=1.0)
    assert rep.passed
    exact = rep.parameters["exact_epsilon"]
    assert exact <= 1.0 and rep.bounds.epsilon_lower_bound <= exact
    assert rep.bounds.epsilon_lower_bound >= 0.8 * exact


def test_model_audit_bad_input():
    from bayesdp.audit import audit_model
    from bayesdp.models import BUILTIN

    data, domain, _ = _model_data("logistic")
    other = {k: v.copy() for k, v in data.items()}
    other["X"][0] = 0.0
    other["X"][1] = 0.0
    with pytest.raises(AssumptionError, match="differ in 2 records"):
        audit_model("ula-final", BUILTIN["logistic"], data, data_prime=other, domain=domain, runs=100,
                    step_size=0.05, num_steps=10)
    with pytest.raises(AssumptionError, match="cannot be audited on a model"):
        audit_model("posterior", BUILTIN["logistic"], data, domain=domain, runs=100, step_size=0.05, num_steps=10)
    with pytest.raises(AssumptionError, match="^no mechanism can be certified: site 'obs': per-record gradient "
            "bound not proven"):
        audit_model("ula-final", BUILTIN["poisson"], *_model_data("poisson")[:1], domain=_model_data("poisson")[1],
                    runs=100, step_size=0.05, num_steps=10)
