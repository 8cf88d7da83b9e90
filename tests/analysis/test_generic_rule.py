"""The generic rule (issue #14 item 3): ``numpyro.factor`` inside the record plate and likelihoods of families
without a rule.  Each certified case is checked against its hand-derived supremum (derivation in the comment;
the sup is approached by witnesses in tests/analysis/_adversarial_models.py section M, and checked there in
float64); each refusal names the site, the operation that defeats the proof and a fix that the command accepts.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import _adversarial_models as A
from bayesdp.analysis import Domain, analyze, certify
from bayesdp.analysis.generic import GENERIC
from bayesdp.cli import main
from bayesdp.errors import BayesDPError, DomainError, ModelError

RNG = np.random.default_rng(5)
m, d = 30, A.D
X = RNG.standard_normal((m, d))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
YPM = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
Y01 = (YPM + 1) / 2
YR = np.linspace(-2.0, 2.0, m)
R1 = Domain.parse(["X.norm=1"]).get("X").certified_norm     # the declared norm as the certificate uses it
RUN = dict(step_size=1e-3, num_steps=50, batch_size=5)


def _w(dim=d):
    return numpyro.sample("w", dist.Normal(0.0, 1.0).expand([dim]).to_event(1))


def logsig_factor(X, y=None):
    # y in {0, 1}: the Bernoulli log-likelihood written as a factor, log_sigmoid((2y - 1) x.w)
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.factor("f", jax.nn.log_sigmoid((2 * y - 1) * (X @ w)))


def logistic_family(X, y=None):
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def _an(model, y, dom):
    return analyze(model, {"X": X, "y": y}, Domain.parse(["X.norm=1"] + dom))


# ---------------------------------------------------------------------------
# certified: G >= the true sup, equal to the hand-derived value (rounded up by a few ulps at most)


@pytest.mark.parametrize("model, y, dom, sup", [
    # log_sigmoid(y x.w), y in {-1, 1}: |grad| = sigmoid(-y x.w) |x| < R (sup as y x.w -> -inf)
    (A.factor_log_sigmoid, YPM, ["y.values=-1,1"], 1.0),
    # smoothed absolute loss softplus(r) + softplus(-r): |grad| = |tanh(r/2)| |x| < R
    (A.factor_logcosh, YR, ["y.min=-2", "y.max=2"], 1.0),
    # Laplace(x.w, b) likelihood: |grad| = |x|/b: R/b (any response: y needs no declared domain)
    (A.laplace_likelihood, YR, [], 1.0 / A.LAP_B),
    # Logistic(x.w, s) likelihood: |dl/dloc| = |tanh(z/2)|/s < 1/s
    (A.logistic_likelihood, YR, [], 1.0 / A.LOGIS_S),
], ids=["log-sigmoid", "smoothed-abs", "laplace", "logistic-distribution"])
def test_generic_bound_is_the_hand_derived_sup(model, y, dom, sup):
    an = _an(model, y, dom)
    c = an.constants
    true = sup * R1
    assert c.record_grad_bound >= true and c.record_grad_bound == pytest.approx(true, rel=1e-6)
    assert c.record_grad_diff >= 2 * true and c.record_grad_diff == pytest.approx(2 * true, rel=1e-6)
    assert c.grad_bound == pytest.approx(m * c.record_grad_bound, rel=1e-12)
    # the generic rule claims no convexity and no smoothness
    assert c.record_smoothness is None and c.v_smoothness is None and c.v_convex is False
    assert c.total_strong_convexity is None
    site = an.observed_sites[0][0]
    assert c.provenance["record_grad_bound"] == f"{GENERIC} @ {site}"
    fact = next(f for f in an.facts if f.quantity == "record grad bound")
    assert fact.site == site and fact.rule == GENERIC and "no convexity or smoothness claimed" in fact.detail


def test_a_hand_written_softplus_is_refused_and_told_to_use_jax_nn():
    """-log1p(exp(-y x.w)) is log_sigmoid(y x.w) in real arithmetic, but float32 exp overflows past 88.7, where
    JAX's derivative exp / (1 + exp) is inf / inf = NaN (|x.w| >= 89 is a theta like any other). Certified at R
    before 2026-11-28 (real arithmetic); now refused, naming the exp and the rewrite."""
    g = jax.grad(lambda w: -jnp.log1p(jnp.exp(-(jnp.asarray([1.0, 0.0, 0.0]) @ w))))
    assert not np.isfinite(np.asarray(g(jnp.asarray([-100.0, 0.0, 0.0])))).all()
    an = _an(A.factor_log1p_exp, YPM, ["y.values=-1,1"])
    assert an.constants.record_grad_bound is None
    reason = an.unproven[0].reason
    assert an.unproven[0].site == "f" and "`exp at" in reason and "jax.nn.softplus" in reason and \
        "overflows" in reason, reason


def test_generic_bounds_are_sound_but_may_be_loose():
    # contaminated logistic, probs = 0.1 + 0.8 sigmoid(x.w): the true sup of |dl/deta| is 0.5 (at sigmoid = 1/4,
    # derived in _adversarial_models._contaminated_consts); interval arithmetic gives 0.2 / 0.1 = 2
    c = _an(A.contaminated_bernoulli, (YPM + 1) / 2, ["y.values=0,1"]).constants
    assert A.CONT_G == pytest.approx(0.5, rel=1e-6)
    assert c.record_grad_bound >= A.CONT_G * R1 and c.record_grad_bound == pytest.approx(2.0 * R1, rel=1e-6)
    # Normal(3 tanh(x.w), 1), y in [-2, 2] (the Normal family is refused in general): true sup
    # 3 (2 + 3t*)(1 - t*^2) = 8.064 (t* = (sqrt(124) - 4)/18); bound |y - 3t| <= 5 times 3 sech^2 <= 3: 15
    c = _an(A.normal_tanh_loc, YR, ["y.min=-2", "y.max=2"]).constants
    assert A.NT_G == pytest.approx(8.0640, abs=1e-3)
    assert c.record_grad_bound >= A.NT_G * R1 and c.record_grad_bound == pytest.approx(15.0 * R1, rel=1e-6)


def test_family_rules_keep_priority():
    # the same log-likelihood, as Bernoulli(logits=x.w) (family rule: convex, smooth) and as a factor (generic)
    fam = _an(logistic_family, Y01, ["y.values=0,1"]).constants
    gen = _an(logsig_factor, Y01, ["y.values=0,1"]).constants
    assert fam.record_grad_bound == pytest.approx(gen.record_grad_bound, rel=1e-12)
    assert GENERIC not in fam.provenance["record_grad_bound"]
    assert fam.v_convex is True and fam.record_smoothness == pytest.approx(R1 * R1 / 4, rel=1e-12)
    assert gen.v_convex is False and gen.record_smoothness is None


def test_analysis_does_not_grow_with_the_number_of_records():
    small = analyze(logsig_factor, None, Domain.parse(["X.norm=1", "y.values=0,1"]), data_size=10, dim=d)
    big = analyze(logsig_factor, None, Domain.parse(["X.norm=1", "y.values=0,1"]), data_size=10 ** 9, dim=d)
    assert small.constants.record_grad_bound == big.constants.record_grad_bound == pytest.approx(R1, rel=1e-6)
    assert big.constants.grad_bound == pytest.approx(10 ** 9 * R1, rel=1e-6)


def test_certify_reports_the_path_routes_for_a_generic_term():
    # V neither convex nor smooth: no posterior certificate; the path certificates need only the gradient
    # difference; the final draw is post-processing of the path (never worse than the path)
    rep = certify(logsig_factor, {"X": X, "y": Y01}, ["X.norm=1", "y.values=0,1"], **RUN)
    mech = rep.certified()
    assert "posterior" not in mech and "neither convex nor smooth" in str(rep.mechanisms["posterior"])
    assert {"ula-path", "ula-final", "sgld-path", "sgld-final"} <= set(mech)
    assert mech["ula-final"].value() <= mech["ula-path"].value()
    assert mech["sgld-final"].value() <= mech["sgld-path"].value()
    assert rep.analysis.constants.grad_diff == pytest.approx(2 * R1, rel=1e-6)


def test_cli_certifies_a_user_factor_model(tmp_path, capsys):
    src = tmp_path / "factor_model.py"
    src.write_text(
        "import jax, numpyro, numpyro.distributions as dist\n"
        "def model(X, y=None):\n"
        "    w = numpyro.sample('w', dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))\n"
        "    with numpyro.plate('data', X.shape[0]):\n"
        "        numpyro.factor('f', jax.nn.log_sigmoid(y * (X @ w)))\n")
    rc = main(["certify", f"{src}:model", "--no-data", "--data-size", "1000", "--dim", "4", "--domain", "X.norm=2",
               "--domain", "y.values=-1,1", "--step-size", "1e-3", "--num-steps", "10", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    R2 = Domain.parse(["X.norm=2"]).get("X").certified_norm
    assert out["constants"]["record_grad_bound"] == pytest.approx(R2, rel=1e-6)
    assert out["constants"]["provenance"]["record_grad_bound"].startswith("generic:")
    assert "error" not in out["mechanisms"]["ula-path"]


# ---------------------------------------------------------------------------
# refusals: the site, the operation (primitive and line) and a fix the command accepts


def _refusal(model, y, dom) -> str:
    with pytest.raises(BayesDPError) as exc:
        certify(model, {"X": X, "y": y}, ["X.norm=1"] + dom, **RUN)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_unbounded_gradient_names_the_site_the_operation_and_the_fix():
    msg = _refusal(A.factor_quadratic, YR, ["y.min=-2", "y.max=2"])
    assert "site 'f'" in msg and "numpyro.factor" in msg and "--clip-norm G" in msg
    assert "unbounded at `mul at _adversarial_models.py:" in msg and "(factor_quadratic)`" in msg
    msg = _refusal(A.gamma_log_link, np.linspace(0.5, 2.0, m), ["y.min=0.5", "y.max=2"])
    assert "site 'obs'" in msg and "no family rule for a Gamma likelihood" in msg
    # its rate exp(x.w) overflows past 88.7 (an infinite gradient, which clipping leaves NaN): the exp is named,
    # with the rewrite that bounds its argument
    assert "(gamma_log_link)`" in msg and "exp overflows" in msg and "jnp.exp(jnp.clip(x, -B, B))" in msg


def test_undeclared_data_is_named():
    # Normal(3 tanh(x.w), 1) with y unbounded: the family's reason, then the data argument to declare
    msg = _refusal(A.normal_tanh_loc, YR, [])
    assert "the Normal log-likelihood has gradient" in msg and "--domain y.min=A --domain y.max=B" in msg


def test_scalar_factor_is_refused_with_the_plate_fix():
    # a sum over the records of per-record terms certifies (tests/analysis/test_factor_sums.py); the SQUARE of
    # such a sum is not a sum of per-record terms
    def squared_sum(X, y=None):
        numpyro.factor("f", -jnp.sum(jax.nn.log_sigmoid(y * (X @ A._w()))) ** 2)
    with pytest.raises(ModelError, match=r"^site 'f' is a numpyro.factor outside the plate over records: .*neither "
                                         r"one term per record nor jnp.sum over the records of per-record terms.*put "
                                         r"it inside the plate over records"):
        _an(squared_sum, YPM, ["y.values=-1,1"])


@pytest.mark.parametrize("model, pattern", [
    (A.factor_other_record, r"'f': the log-factor of a record depends on other records \(`gather at "),
    (A.factor_data_mean, r"'f': the log-factor of a record depends on other records \(`reduce_sum at "),
    (A.factor_random_draw, r"'f': its log-factor depends on a random number drawn inside the model \(`random_\w+ at "
                           r"_adversarial_models.py:\d+ \(factor_random_draw\)`\)"),
], ids=["other-record", "data-mean", "random-draw"])
def test_structural_refusals_of_a_factor(model, pattern):
    with pytest.raises(ModelError, match=pattern):
        _an(model, YPM, ["y.values=-1,1"])


@pytest.mark.parametrize("model, prim", [(A.factor_sign_jump, "sign"), (A.factor_stop_gradient, "stop_gradient")])
def test_jumps_and_hidden_gradients_are_refused(model, prim):
    msg = _refusal(model, YPM, ["y.values=-1,1"])
    assert "site 'f'" in msg and f"`{prim} at _adversarial_models.py:" in msg and "continuous in theta" in msg


def test_prior_factor_is_still_refused():
    def model(X, y=None):
        w = _w()
        numpyro.factor("extra", -jnp.sum(w ** 2))
        with numpyro.plate("data", X.shape[0]):
            numpyro.factor("f", jax.nn.log_sigmoid(y * (X @ w)))
    with pytest.raises(ModelError, match=r"'extra' is a numpyro.factor that reads no data argument"):
        _an(model, YPM, ["y.values=-1,1"])


def test_probs_not_a_sigmoid_keeps_the_logits_advice():
    def model(X, y=None):
        # probs = exp(-e^z): d log p / dz = -e^z, unbounded for y = 1
        w = _w()
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(probs=jnp.exp(-jnp.exp(X @ w))), obs=y)
    an = _an(model, Y01, ["y.values=0,1"])
    msg = an.first_unproven()
    assert "site 'obs'" in msg and "probs is not jax.nn.sigmoid" in msg and "Bernoulli(logits=eta)" in msg


def geometric(X, y=None):
    w = _w()
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Geometric(logits=X @ w), obs=y)


def test_a_family_without_a_rule_and_its_support():
    # Geometric(logits z): log p(y) = y log(1 - s) + log s, s = sigmoid(z): dl/dz = 1 - (1 + y) s in
    # [1 - (1 + y_max), 1], so sup |grad| = max(1, y_max) R = 5 R for y in [0, 5] (y = 5, s -> 1): exact here
    y = (np.arange(m) % 6).astype(float)
    c = analyze(geometric, {"X": X, "y": y}, Domain.parse(["X.norm=1", "y.min=0", "y.max=5"])).constants
    assert c.record_grad_bound >= 5 * R1 and c.record_grad_bound == pytest.approx(5 * R1, rel=1e-6)
    # a domain reaching outside the support is refused (the family rules' response check, for every family)
    with pytest.raises(DomainError, match=r"site 'obs' \(GeometricLogits\): the domain of y is \[-1, 5\] but its "
                                          r"value must be >= 0"):
        analyze(geometric, {"X": X, "y": y}, Domain.parse(["X.norm=1", "y.min=-1", "y.max=5"]))
