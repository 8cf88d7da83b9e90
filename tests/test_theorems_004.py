"""004 (Bertazzi, Johnston, Roberts, Durmus): every computable result against SEEDS.md values
and the exact linear–quadratic (Gaussian) benchmark."""

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bayesdp.errors import AssumptionError
from bayesdp.theorems import girsanov as G
from bayesdp.theorems import paper_constants as P
from bayesdp.theorems import transfer as T
from exact import gdp_epsilon, lq_final_mu, lq_path_mu


def C_of(cert):
    """The C of 004's linear curve alpha*C/4, read back from the certificate's RDP at alpha = 2."""
    return 2.0 * cert.rdp(2.0)


# -- SEEDS.md §4.11 example: c=1, L=2, mu=1, gamma=0.1, delta=1e-5 ---------------------------

def test_theorem_5_2_supported_constant_example():
    cert = G.theorem_5_2(strong_convexity=1, smoothness=2, grad_bound=1, step_size=0.1, num_steps=100)
    assert cert.source == "004 Theorem 5.2"
    assert C_of(cert) == pytest.approx(90.25, rel=1e-12)                   # C3* (computed in SEEDS)
    assert cert.curve.epsilon(1e-5, method="mironov") == pytest.approx(54.7967, abs=1e-4)
    assert cert.rdp(2.0) == pytest.approx(45.125)
    # the printed constant is smaller (a privacy bug if used): 72.25 and 46.9036
    assert P.C3_as_printed(1, 2, 1, 0.1) == pytest.approx(72.25)
    assert P.eps_delta_C4_form(72.25, 1e-5) == pytest.approx(46.9036, abs=1e-4)
    assert cert.epsilon(1e-5) <= 54.7967  # CKS conversion is at least as good as 004's form


def test_theorem_5_2_short_horizon_uses_prop_4_5_branch():
    # T = n*gamma = 0.5 < 1: C = 4 c^2 T (Prop 4.5 with offset 2c), SEEDS §4.16(b),(d)
    cert = G.theorem_5_2(strong_convexity=1, smoothness=2, grad_bound=1, step_size=0.1, num_steps=5)
    assert C_of(cert) == pytest.approx(4 * 1 * 0.5)
    assert "Proposition 4.5 branch" in cert.notes


def test_theorem_5_2_beta_uses_theorem_5_6_label():
    cert = G.theorem_5_2(strong_convexity=1, smoothness=2, grad_bound=1, step_size=0.1, num_steps=100,
                         inverse_temperature=3.0)
    assert cert.source == "004 Theorem 5.6"
    assert C_of(cert) == pytest.approx(3 * 90.25)


def test_theorem_5_7_supported_constant_and_printed_understatement():
    # SEEDS §4.14: c=1, beta=1, s=100, L=mu=1, gamma=1e-3, delta=1e-5
    cert = G.theorem_5_6(1, 1, 1, 1e-3, num_steps=10_000, batch_size=100, data_size=1000, linear_v=True)
    assert cert.source == "004 Theorem 5.7"
    a = 1 - 1e-3 / 2
    assert C_of(cert) == pytest.approx(4 / 100 ** 2 * (2 / a + 1) ** 2, rel=1e-12)
    assert cert.curve.epsilon(1e-5, method="mironov") == pytest.approx(0.204553, abs=1e-6)
    C7 = P.C7_as_printed(1, 1, 1, 1e-3, 1, 100)
    assert P.eps_delta_C_form(C7, 1e-5) == pytest.approx(0.172223, abs=1e-6)
    assert P.eps_delta_C4_form(C7, 1e-5) == pytest.approx(0.170347, abs=1e-6)


def test_theorem_5_6_constant():
    cert = G.theorem_5_6(1, 2, 1, 0.1, num_steps=100, batch_size=10, data_size=100, inverse_temperature=2)
    assert cert.source == "004 Theorem 5.6"
    assert C_of(cert) == pytest.approx(2 * 90.25)
    assert P.C6_as_printed(1, 2, 1, 0.1, 2) == pytest.approx(2 * 72.25)


def test_theorem_5_8_example():
    # SEEDS §4.15: beta=1, c=1, s=10, n=1000, gamma=0.01 -> C8 = 0.1
    cert = G.theorem_5_8(grad_diff=1, step_size=0.01, num_steps=1000, batch_size=10, data_size=100)
    assert C_of(cert) == pytest.approx(0.1)
    # printed "C8 + sqrt(C8 log(1/delta))" is looser than the supported C/4 form
    assert cert.curve.epsilon(1e-5, method="mironov") < P.eps_delta_C_form(0.1, 1e-5)


def test_theorem_5_4_and_prop_4_5():
    cert = G.theorem_5_4(grad_diff=2.0, step_size=0.01, num_steps=300)
    assert C_of(cert) == pytest.approx(4.0 * 3.0)
    p = G.proposition_4_5(drift_diff=2.0, inverse_temperature=0.5, time=3.0)
    assert C_of(p) == pytest.approx(4.0 * 0.5 * 3.0)


def test_prop_4_6_branches():
    p = G.proposition_4_6(drift_lipschitz=2, drift_offset=1, coupling_bound=3, inverse_temperature=1, time=5)
    assert C_of(p) == pytest.approx((3 * 3 + 1) ** 2)
    q = G.proposition_4_6(drift_lipschitz=2, drift_offset=1, coupling_bound=3, inverse_temperature=1, time=0.25)
    assert C_of(q) == pytest.approx(0.25)


def test_posterior_limit_is_uncertified_and_squared():
    # SEEDS §4.16(e): c=0.5, L=mu=1 -> C4* = 9.0 (printed, unsquared: 2.5)
    cert = G.posterior_limit_estimate(1, 1, 0.5)
    assert cert.certified is False
    assert C_of(cert) == pytest.approx(9.0)
    assert P.C4_as_printed(0.5, 1, 1) == pytest.approx(2.5)


# -- validation ------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    (dict(strong_convexity=1, smoothness=1, grad_bound=1, step_size=2.0, num_steps=10), "step_size"),
    (dict(strong_convexity=1, smoothness=1, grad_bound=1, step_size=-0.1, num_steps=10), "step_size"),
    (dict(strong_convexity=2, smoothness=1, grad_bound=1, step_size=0.1, num_steps=10), "smoothness"),
    (dict(strong_convexity=0, smoothness=1, grad_bound=1, step_size=0.1, num_steps=10), "strong_convexity"),
    (dict(strong_convexity=1, smoothness=1, grad_bound=-1, step_size=0.1, num_steps=10), "grad_bound"),
    (dict(strong_convexity=1, smoothness=1, grad_bound=1, step_size=0.1, num_steps=0), "num_steps"),
    (dict(strong_convexity=1, smoothness=1, grad_bound=1, step_size=0.1, num_steps=2.5), "num_steps"),
    (dict(strong_convexity=1, smoothness=1, grad_bound=1, step_size=0.1, num_steps=10,
          inverse_temperature=0), "inverse_temperature"),
    (dict(strong_convexity=float("nan"), smoothness=1, grad_bound=1, step_size=0.1, num_steps=10),
     "strong_convexity"),
])
def test_theorem_5_2_rejects(kwargs, match):
    with pytest.raises(AssumptionError, match=match) as e:
        G.theorem_5_2(**kwargs)
    assert "\n" not in str(e.value)


def test_sgld_batch_checks():
    with pytest.raises(AssumptionError, match="batch_size"):
        G.theorem_5_8(1, 0.1, 10, batch_size=11, data_size=10)
    with pytest.raises(AssumptionError, match="batch_size"):
        G.theorem_5_6(1, 1, 1, 0.1, 10, batch_size=0, data_size=10)


# -- exact linear–quadratic benchmark: no certificate is ever below the exact value --------------

@settings(max_examples=300, deadline=None)
@given(mu=st.floats(0.01, 100.0), L_ratio=st.floats(1.0, 3.0), c=st.floats(1e-3, 10.0),
       g_frac=st.floats(0.01, 0.99), n=st.integers(1, 100_000), logd=st.floats(-25.0, -2.0),
       beta=st.sampled_from([1.0, 0.5, 4.0]))
def test_final_draw_certificate_never_below_exact(mu, L_ratio, c, g_frac, n, logd, beta):
    L = mu * L_ratio  # K = mu|x|^2/2 is L-smooth for every L >= mu
    gamma = g_frac * 2 * mu / L ** 2
    delta = math.exp(logd)
    mu_exact = lq_final_mu(mu, c, gamma, n, beta)
    assume(mu_exact < 30)  # the plain-float reference formula overflows beyond (eps ~ 700)
    exact = gdp_epsilon(mu_exact, delta)
    cert = G.theorem_5_2(mu, L, c, gamma, n, inverse_temperature=beta)
    assert cert.epsilon(delta) >= exact * (1 - 1e-9)
    path = G.theorem_5_4(2 * c, gamma, n, inverse_temperature=beta)
    assert path.epsilon(delta) >= exact * (1 - 1e-9)


@settings(max_examples=300, deadline=None)
@given(c=st.floats(1e-3, 10.0), gamma=st.floats(1e-4, 1.0), n=st.integers(1, 100_000),
       logd=st.floats(-25.0, -2.0), beta=st.sampled_from([1.0, 0.5, 4.0]))
def test_path_certificate_never_below_exact(c, gamma, n, logd, beta):
    delta = math.exp(logd)
    assume(lq_path_mu(c, gamma, n, beta) < 30)  # plain-float reference formula range
    exact = gdp_epsilon(lq_path_mu(c, gamma, n, beta), delta)
    cert = G.theorem_5_4(2 * c, gamma, n, inverse_temperature=beta)
    assert cert.epsilon(delta) >= exact * (1 - 1e-9)
    # the RDP curve itself equals the exact Gaussian RDP of the path (SEEDS §4.16(a) sanity check)
    assert cert.rdp(3.0) == pytest.approx(3.0 * lq_path_mu(c, gamma, n, beta) ** 2 / 2, rel=1e-9)


def test_sgld_path_never_below_exact_full_batch():
    # with s = m SGLD is ULA on the mean loss; drift difference per step Delta/s
    for s in [1, 5, 50]:
        c_rec, gamma, n = 0.3, 0.01, 500
        cert = G.theorem_5_8(2 * c_rec, gamma, n, batch_size=s, data_size=s)
        exact_mu = lq_path_mu(c_rec / s, gamma, n)
        assert cert.epsilon(1e-5) >= gdp_epsilon(exact_mu, 1e-5)


# -- Section 3 ---------------------------------------------------------------------------------

def test_prop_3_2_example():
    # SEEDS §4.3: eps=1, delta=1e-6, zeta=2, R(n)=1e-4 -> delta_out = 7.44656e-4
    cert = T.proposition_3_2_i(1.0, 1e-6, 2.0, 1e-4)
    assert cert.curve.delta0 == pytest.approx(7.44656e-4, rel=1e-5)
    assert cert.source == "004 Proposition 3.2(i)"
    assert T.proposition_3_2_ii(1.0, 1e-6, 2.0, 1e-4).curve.delta0 == pytest.approx(7.44656e-4, rel=1e-5)
    assert T.corollary_3_3_threshold(1.0, 1e-6, 2.0, 1e-4) == pytest.approx(7.44656e-4, rel=1e-5)


def test_prop_3_4():
    assert T.proposition_3_4(1.0, 0.1, 0.02) == pytest.approx(0.08 / (1 + math.e))
    with pytest.raises(AssumptionError, match="delta_posterior"):
        T.proposition_3_4(1.0, 0.01, 0.02)


def test_prop_3_10_example_and_variance():
    # SEEDS §4.6: delta~ = 0.01 -> delta_out = 0.0199 with Laplace of scale (2C + gamma_f)/eps
    cert = T.proposition_3_10(concentration=0.5, concentration_delta=0.01, posterior_sensitivity=0.2, epsilon=1.0)
    assert cert.constants["noise_scale"] == pytest.approx(1.2)
    assert cert.constants["noise_variance"] == pytest.approx(2 * 1.2 ** 2)  # not eta/eps (row 10)
    assert cert.delta(1.0) == pytest.approx(0.0199)
    # below the calibrated epsilon, Laplace's exact hockey-stick adds to delta
    assert cert.delta(0.5) == pytest.approx(0.0199 + 1 - math.exp((0.5 - 1.0) / 2))
    assert T.laplace_noise_variance(3.0) == 18.0


def test_prop_3_7_pure_when_coupling_is_sure():
    cert = T.proposition_3_7(coupling_window=0.3, coupling_delta=0.0, epsilon=0.5)
    assert cert.delta(0.5) == 0.0
    assert cert.constants["noise_scale"] == pytest.approx(0.6)
    assert cert.epsilon(1e-9) <= 0.5 + 1e-9


# -- issue 25: the SGLD path constant C8 at beta != 1 ------------------------------------------

def test_theorem_5_8_inverse_temperature_by_hand():
    # SEEDS §4.15: C8 = beta c^2 n gamma / s^2, eps_delta = C8/4 + sqrt(C8 log(1/delta)) (C/4 form).
    # beta = 2.5, c = 0.7, n = 300, gamma = 0.02, s = 4: C8 = 2.5 * 0.49 * 6 / 16 = 0.459375 (by hand)
    cert = G.theorem_5_8(grad_diff=0.7, step_size=0.02, num_steps=300, batch_size=4, data_size=50,
                         inverse_temperature=2.5)
    assert cert.constants["C8"] == pytest.approx(0.459375, rel=1e-14)
    assert cert.rdp(7.0) == pytest.approx(7.0 * 0.459375 / 4, rel=1e-14)
    eps_seeds = 0.459375 / 4 + math.sqrt(0.459375 * math.log(1e5))       # 2.3744... by hand
    assert cert.curve.epsilon(1e-5, method="mironov") == pytest.approx(eps_seeds, rel=1e-12)
    # beta = 1 with the same constants is 2.5 times smaller (the constant is linear in beta)
    cold = G.theorem_5_8(0.7, 0.02, 300, batch_size=4, data_size=50, inverse_temperature=1.0)
    assert C_of(cold) == pytest.approx(0.459375 / 2.5, rel=1e-14)


@settings(max_examples=200, deadline=None)
@given(c=st.floats(1e-3, 10.0), gamma=st.floats(1e-4, 1.0), n=st.integers(1, 100_000),
       s=st.integers(1, 64), beta=st.floats(0.05, 20.0), logd=st.floats(-25.0, -2.0))
def test_sgld_path_equals_exact_gaussian_at_any_beta(c, gamma, n, s, beta, logd):
    # full batch (s = m): SGLD is ULA on the mean loss, drift difference 2c/s per step; the path is then
    # exactly lq_path_mu-GDP, whose RDP alpha mu^2/2 the certificate's alpha C8/4 must equal (not only bound)
    mu = lq_path_mu(c / s, gamma, n, beta)
    assume(mu < 30)
    cert = G.theorem_5_8(2 * c, gamma, n, batch_size=s, data_size=s, inverse_temperature=beta)
    assert cert.rdp(3.0) == pytest.approx(3.0 * mu * mu / 2, rel=1e-9)
    assert cert.epsilon(math.exp(logd)) >= gdp_epsilon(mu, math.exp(logd)) * (1 - 1e-9)


# -- issue 25: every refusal names the parameter, its value, the condition and the fix (one line) ---------------

BASE = {
    "proposition_4_5": dict(drift_diff=2.0, inverse_temperature=0.5, time=3.0),
    "proposition_4_6": dict(drift_lipschitz=2.0, drift_offset=1.0, coupling_bound=3.0, inverse_temperature=1.0,
                            time=5.0),
    "theorem_5_2": dict(strong_convexity=1.0, smoothness=2.0, grad_bound=1.0, step_size=0.1, num_steps=100),
    "theorem_5_4": dict(grad_diff=2.0, step_size=0.01, num_steps=300),
    "theorem_5_6": dict(strong_convexity=1.0, smoothness=2.0, grad_bound=1.0, step_size=0.1, num_steps=100,
                        batch_size=10, data_size=100),
    "theorem_5_8": dict(grad_diff=1.0, step_size=0.01, num_steps=1000, batch_size=10, data_size=100),
    "posterior_limit_estimate": dict(strong_convexity=1.0, smoothness=1.0, grad_bound=0.5),
}
K_MU = "strong_convexity = {v} must be > 0; declare mu > 0 of the strongly convex part K"
K_L = "smoothness = {v} must be > 0; declare L > 0, the Lipschitz constant of grad K"
BETA = "inverse_temperature = {v} must be > 0; pass a positive number"
STEP = "step_size = {v} must be > 0; pass a positive number"
STEPS = "num_steps = {v} must be an integer >= 1; pass a whole number >= 1"
BATCH = "batch_size = {v} must be an integer >= 1; pass a whole number >= 1"
DATA = "data_size = {v} must be an integer >= 1; pass a whole number >= 1"
REFUSALS = [
    ("proposition_4_5", "drift_diff", -1, "grad_diff = -1 must be >= 0; declare the sup of the drift difference (18)"),
    ("proposition_4_5", "inverse_temperature", 0, BETA.format(v=0)),
    ("proposition_4_5", "time", 0, "time = 0 must be > 0; the horizon T = step_size * num_steps must be > 0"),
    ("proposition_4_6", "drift_lipschitz", -1,
     "smoothness = -1 must be >= 0; declare the Lipschitz constant L of the drift in (20)"),
    ("proposition_4_6", "drift_offset", -1, "grad_diff = -1 must be >= 0; declare the additive offset c of (20)"),
    ("proposition_4_6", "coupling_bound", -1, "coupling_bound = -1 must be >= 0; declare C of (21)"),
    ("proposition_4_6", "inverse_temperature", -1, BETA.format(v=-1)),
    ("proposition_4_6", "time", 0, "time = 0 must be > 0; pass a positive number"),
    ("proposition_4_6", "drift_diff", -1, "drift_diff = -1 must be >= 0"),
    ("theorem_5_2", "strong_convexity", 0, K_MU.format(v=0)),
    ("theorem_5_2", "smoothness", 0, K_L.format(v=0)),
    ("theorem_5_2", "smoothness", 0.5, "smoothness = 0.5 must be >= strong_convexity = 1 (an L-smooth mu-strongly "
                                       "convex function has mu <= L); check the two constants"),
    ("theorem_5_2", "grad_bound", -1, "grad_bound = -1 must be >= 0; declare c = sup |grad V_D| (004 Assumption 5.1)"),
    ("theorem_5_2", "step_size", 0, STEP.format(v=0)),
    ("theorem_5_2", "step_size", 0.5, "step_size = 0.5 must be in (0, 2*mu/L^2) = (0, 0.5) for 004 Theorem 5.2; "
                                      "choose a smaller step size, or release the path (ula-path / sgld-path)"),
    ("theorem_5_2", "num_steps", 0, STEPS.format(v=0)),
    ("theorem_5_2", "inverse_temperature", 0, BETA.format(v=0)),
    ("theorem_5_4", "grad_diff", -1,
     "grad_diff = -1 must be >= 0; declare Delta = sup |grad U_D - grad U_D'| (004 Assumption 5.3)"),
    ("theorem_5_4", "step_size", -1, STEP.format(v=-1)),
    ("theorem_5_4", "num_steps", -1, STEPS.format(v=-1)),
    ("theorem_5_4", "inverse_temperature", -1, BETA.format(v=-1)),
    ("theorem_5_6", "strong_convexity", -1, K_MU.format(v=-1)),
    ("theorem_5_6", "smoothness", -1, K_L.format(v=-1)),
    ("theorem_5_6", "grad_bound", -1,
     "grad_bound = -1 must be >= 0; declare c = sup |grad_x v(x, d)| (004 Assumption 5.5)"),
    ("theorem_5_6", "step_size", 0.5, "step_size = 0.5 must be in (0, 2*mu/L^2) = (0, 0.5) for 004 Theorem 5.6; "
                                      "choose a smaller step size, or release the path (ula-path / sgld-path)"),
    ("theorem_5_6", "num_steps", 0, STEPS.format(v=0)),
    ("theorem_5_6", "batch_size", 0, BATCH.format(v=0)),
    ("theorem_5_6", "batch_size", 101,
     "batch_size = 101 must be <= data_size = 100; use a batch no larger than the dataset"),
    ("theorem_5_6", "data_size", 0, DATA.format(v=0)),
    ("theorem_5_6", "inverse_temperature", 0, BETA.format(v=0)),
    ("theorem_5_8", "grad_diff", -1,
     "grad_diff = -1 must be >= 0; declare Delta = sup |grad l(x,d) - grad l(x,d')| (004 (36))"),
    ("theorem_5_8", "step_size", 0, STEP.format(v=0)),
    ("theorem_5_8", "num_steps", 0, STEPS.format(v=0)),
    ("theorem_5_8", "batch_size", 0, BATCH.format(v=0)),
    ("theorem_5_8", "data_size", 0, DATA.format(v=0)),
    ("theorem_5_8", "inverse_temperature", 0, BETA.format(v=0)),
    ("posterior_limit_estimate", "strong_convexity", 0, K_MU.format(v=0)),
    ("posterior_limit_estimate", "smoothness", 0, K_L.format(v=0)),
    ("posterior_limit_estimate", "grad_bound", -1, "grad_bound = -1 must be >= 0"),
    ("posterior_limit_estimate", "inverse_temperature", 0, BETA.format(v=0)),
]


@pytest.mark.parametrize("fn,param,value,message", REFUSALS)
def test_refusal_messages_name_the_parameter_value_condition_and_fix(fn, param, value, message):
    kwargs = {**BASE[fn], param: value}
    with pytest.raises(AssumptionError) as e:
        getattr(G, fn)(**kwargs)
    assert str(e.value) == message


@pytest.mark.parametrize("fn,kwargs", [
    ("theorem_5_2", dict(strong_convexity=1.0, smoothness=1.0, grad_bound=0.0, step_size=0.5, num_steps=2)),
    ("theorem_5_6", dict(strong_convexity=2.0, smoothness=2.0, grad_bound=0.0, step_size=0.5, num_steps=2,
                         batch_size=7, data_size=7)),
    ("theorem_5_8", dict(grad_diff=0.0, step_size=1.0, num_steps=1, batch_size=3, data_size=3)),
    ("theorem_5_4", dict(grad_diff=0.0, step_size=1.0, num_steps=1)),
    ("proposition_4_6", dict(drift_lipschitz=0.0, drift_offset=0.0, coupling_bound=0.0, inverse_temperature=1.0,
                             time=1.0)),
    ("posterior_limit_estimate", dict(strong_convexity=1.0, smoothness=1.0, grad_bound=0.0)),
])
def test_boundary_values_are_accepted_and_give_zero(fn, kwargs):
    # L = mu, s = m, c = 0, T = 1: admitted by the theorems (the conditions are mu <= L, s <= m, c >= 0, T > 0);
    # with no drift difference the constant is exactly 0 (the two chains coincide)
    cert = getattr(G, fn)(**kwargs)
    assert C_of(cert) == 0.0 and cert.epsilon(1e-5) == 0.0


def test_certificates_record_their_hypotheses_and_labels():
    # what each certificate states it assumed, written out from 004's statements (Assumptions 5.1/5.3/5.5,
    # (16)-(21), (36)); reports and the ledger show these
    common = "common, data-independent"
    batches = "fixed size, uniform without replacement, independent across steps"
    cases = {
        "proposition_4_5": ("girsanov-path", "004 Proposition 4.5",
                            {"drift_diff": 2.0, "inverse_temperature": 0.5, "time": 3.0, "x0": common,
                             "noise": "sqrt(2/beta) dW shared"}),
        "proposition_4_6": ("girsanov-final", "004 Proposition 4.6",
                            {"drift_lipschitz": 2.0, "drift_offset": 1.0, "coupling_bound": 3.0,
                             "inverse_temperature": 1.0, "time": 5.0}),
        "theorem_5_2": ("ula-final", "004 Theorem 5.2",
                        {"strong_convexity": 1.0, "smoothness": 2.0, "grad_bound": 1.0, "step_size": 0.1,
                         "num_steps": 100, "inverse_temperature": 1.0, "x0": common}),
        "theorem_5_4": ("ula-path", "004 Theorem 5.4",
                        {"grad_diff": 2.0, "step_size": 0.01, "num_steps": 300, "inverse_temperature": 1.0,
                         "x0": common}),
        "theorem_5_6": ("sgld-final", "004 Theorem 5.6",
                        {"strong_convexity": 1.0, "smoothness": 2.0, "grad_bound": 1.0, "step_size": 0.1,
                         "num_steps": 100, "batch_size": 10, "data_size": 100, "inverse_temperature": 1.0,
                         "linear_v": False, "minibatches": batches, "x0": common}),
        "theorem_5_8": ("sgld-path", "004 Theorem 5.8",
                        {"grad_diff": 1.0, "step_size": 0.01, "num_steps": 1000, "batch_size": 10, "data_size": 100,
                         "inverse_temperature": 1.0, "minibatches": batches, "x0": common}),
        "posterior_limit_estimate": ("posterior", "004 posterior limit (C4, estimate)",
                                     {"strong_convexity": 1.0, "smoothness": 1.0, "grad_bound": 0.5,
                                      "inverse_temperature": 1.0}),
    }
    for fn, (mechanism, source, assumptions) in cases.items():
        cert = getattr(G, fn)(**BASE[fn])
        assert (cert.mechanism, cert.source, cert.assumptions) == (mechanism, source, assumptions), fn
    est = G.posterior_limit_estimate(**BASE["posterior_limit_estimate"])
    assert est.notes == "heuristic gamma -> 0 limit of Theorem 5.2 (squared, offset 2c); NOT a certificate"


def test_step_refusal_states_the_limit_2mu_over_L2():
    # mu = 2, L = 4: 2 mu / L^2 = 0.25 (1/(mu L^2), 3 mu/L^2 and 2 mu would read 1/32, 0.375 and 4)
    with pytest.raises(AssumptionError) as e:
        G.theorem_5_2(strong_convexity=2.0, smoothness=4.0, grad_bound=1.0, step_size=0.3, num_steps=10)
    assert str(e.value) == ("step_size = 0.3 must be in (0, 2*mu/L^2) = (0, 0.25) for 004 Theorem 5.2; choose a "
                            "smaller step size, or release the path (ula-path / sgld-path)")
    # just inside the limit it is accepted: a = mu - gamma L^2 / 2 = 2 - 0.249 * 8 = 0.008 (by hand)
    cert = G.theorem_5_2(strong_convexity=2.0, smoothness=4.0, grad_bound=1.0, step_size=0.249, num_steps=10)
    assert cert.constants["a"] == pytest.approx(0.008, rel=1e-9)


def test_coupling_overflow_is_refused_in_one_line():
    # 2c / a = 2e307 / 0.095 > the largest float: refused (not an infinite or wrapped constant)
    with pytest.raises(AssumptionError) as e:
        G.theorem_5_2(strong_convexity=0.1, smoothness=0.1, grad_bound=1e307, step_size=1.0, num_steps=10)
    assert str(e.value) == "2e+307 / 0.095 overflows: the constants are outside the float range"


def test_path_drift_difference_is_the_smaller_valid_bound():
    # Assumption 5.1 (|grad V_D| <= c) implies 5.3 with Delta = 2c; a declared Delta is also valid: the smaller wins
    assert G.path_c_from_grad_bound(1.5, None) == (3.0, "2*grad_bound (Assumption 5.1 implies 5.3 with 2c)")
    assert G.path_c_from_grad_bound(1.5, 2.0) == (2.0, "grad_diff")
    assert G.path_c_from_grad_bound(1.5, 3.0) == (3.0, "grad_diff")            # equal: the declared one
    assert G.path_c_from_grad_bound(1.5, 4.0) == (3.0, "2*grad_bound (smaller than the declared grad_diff)")


# -- issue 25: every constant of the module against SEEDS' formulas, re-derived here at random settings ---------

def _ref_final(c_off, coupling, L, beta, n, gamma):
    """SEEDS §4.16(b)-(d): T = n gamma < 1 -> Prop 4.5 branch C = beta c_off^2 T, else C = beta (coupling (L+1)
    + c_off)^2; T decided exactly on the binary inputs."""
    from fractions import Fraction

    if Fraction(n) * Fraction(gamma) < 1:
        return beta * c_off ** 2 * (n * gamma), "T = n*gamma < 1: Proposition 4.5 branch (B.6), C = beta*c_off^2*T"
    return beta * (coupling * (L + 1) + c_off) ** 2, ""


@settings(max_examples=300, deadline=None)
@given(mu=st.floats(0.05, 20.0), L_ratio=st.floats(1.0, 4.0), c=st.floats(0.05, 20.0), g_frac=st.floats(0.01, 0.99),
       n=st.integers(1, 400), beta=st.sampled_from([1.0, 0.3, 2.5]), s=st.integers(1, 9), extra=st.integers(0, 50),
       linear_v=st.booleans())
def test_final_draw_constants_match_seeds_formulas(mu, L_ratio, c, g_frac, n, beta, s, extra, linear_v):
    L = mu * L_ratio
    gamma = g_frac * 2 * mu / L ** 2
    a = mu - gamma * L * L / 2                                    # 004 (112)
    # Theorem 5.2 (beta = 1) / 5.6 with s = m (beta != 1): offset 2c, coupling 2c/a
    C, note = _ref_final(2 * c, 2 * c / a, L, beta, n, gamma)
    if beta != 1.0:
        note = ("full-batch ULA with inverse temperature beta is SGLD with batch size = data size; " + note).rstrip("; ")
    cert = G.theorem_5_2(mu, L, c, gamma, n, inverse_temperature=beta)
    key = "C3*" if beta == 1.0 else "C6*"
    assert cert.source == ("004 Theorem 5.2" if beta == 1.0 else "004 Theorem 5.6") and cert.notes == note
    assert set(cert.constants) == {key, "a", "coupling_bound", "drift_offset"}
    assert cert.constants[key] == pytest.approx(C, rel=1e-9) and cert.constants[key] >= C * (1 - 1e-12)
    assert cert.constants["a"] == pytest.approx(a, rel=1e-6) and cert.constants["drift_offset"] == 2 * c
    assert cert.constants["coupling_bound"] == pytest.approx(2 * c / a, rel=1e-6)
    assert C_of(cert) == pytest.approx(cert.constants[key], rel=1e-12)
    # Theorem 5.6 / 5.7 (SEEDS §4.16(f)-(g)): with linear v only the replaced index differs: offset 2c/s
    m = s + extra
    off, coup = (2 * c / s, 2 * c / (s * a)) if linear_v else (2 * c, 2 * c / a)
    C, note = _ref_final(off, coup, L, beta, n, gamma)
    cert = G.theorem_5_6(mu, L, c, gamma, n, batch_size=s, data_size=m, inverse_temperature=beta, linear_v=linear_v)
    key = "C7*" if linear_v else "C6*"
    assert cert.source == ("004 Theorem 5.7" if linear_v else "004 Theorem 5.6") and cert.notes == note
    assert set(cert.constants) == {key, "a", "coupling_bound", "drift_offset"}
    assert cert.constants[key] == pytest.approx(C, rel=1e-9) and cert.constants[key] >= C * (1 - 1e-12)
    assert cert.constants["drift_offset"] == pytest.approx(off, rel=1e-12)
    assert cert.constants["coupling_bound"] == pytest.approx(coup, rel=1e-6)
    assert cert.assumptions["linear_v"] is linear_v
    # the uncertified posterior limit, SEEDS §4.16(e): C4* = 4 beta c^2 ((L+1)/mu + 1)^2
    est = G.posterior_limit_estimate(mu, L, c, inverse_temperature=beta)
    assert est.constants == {"C4*": pytest.approx(4 * beta * c * c * ((L + 1) / mu + 1) ** 2, rel=1e-12)}


@settings(max_examples=300, deadline=None)
@given(c=st.floats(0.05, 20.0), gamma=st.floats(1e-3, 0.5), n=st.integers(1, 400), beta=st.floats(0.1, 5.0),
       s=st.integers(1, 9), extra=st.integers(0, 50), Lc=st.floats(0.0, 5.0), C=st.floats(0.0, 5.0),
       T=st.floats(0.05, 5.0), drift=st.one_of(st.none(), st.floats(0.0, 20.0)))
def test_path_constants_match_seeds_formulas(c, gamma, n, beta, s, extra, Lc, C, T, drift):
    # Theorem 5.4: C5 = beta c^2 n gamma; Theorem 5.8: C8 = beta c^2 n gamma / s^2; Prop 4.5: C1 = beta c^2 T
    assert G.theorem_5_4(c, gamma, n, inverse_temperature=beta).constants == {
        "C5": pytest.approx(beta * c * c * n * gamma, rel=1e-12)}
    assert G.theorem_5_8(c, gamma, n, s, s + extra, inverse_temperature=beta).constants == {
        "C8": pytest.approx(beta * c * c * n * gamma / s ** 2, rel=1e-12)}
    assert G.proposition_4_5(c, beta, T).constants == {"C1": pytest.approx(beta * c * c * T, rel=1e-12)}
    # Prop 4.6 (SEEDS §4.16(b)): T < 1 -> Prop 4.5 with the drift difference (default: the offset c);
    # else C2 = beta (C (L+1) + c)^2
    p = G.proposition_4_6(Lc, c, C, beta, T, drift_diff=drift)
    if T < 1:
        cp = c if drift is None else drift
        assert p.constants == {"C": pytest.approx(beta * cp * cp * T, rel=1e-12)}
        assert p.notes == "T < 1: Proposition 4.5 branch (B.6), C = beta*c^2*T"
    else:
        assert p.constants == {"C2": pytest.approx(beta * (C * (Lc + 1) + c) ** 2, rel=1e-12)}
    assert p.assumptions == {"drift_lipschitz": Lc, "drift_offset": c, "coupling_bound": C,
                             "inverse_temperature": beta, "time": T}


def test_horizon_one_is_decided_exactly():
    # T = n gamma = 1 exactly: Prop 4.6 proper (its T < 1 branch is not proved at T = 1)
    assert G.proposition_4_6(1.0, 2.0, 3.0, 1.0, 1.0).constants == {"C2": (3 * 2 + 2) ** 2}
    C, note = G.final_constant(2.0, 3.0, 1.0, 1.0, 1.0)
    assert note == "" and 64.0 <= C == pytest.approx(64.0, rel=1e-12)         # rounded up, never down
    C, note = G.final_constant(2.0, 3.0, 1.0, 1.0, 0.5)
    assert note.startswith("T = n*gamma < 1") and 2.0 <= C == pytest.approx(2.0, rel=1e-12)
    cert = G.theorem_5_2(1.0, 1.0, 1.0, 0.25, 4)                 # n gamma = 1: C = (2 (L+1)/a + 2)^2
    assert C_of(cert) == pytest.approx((2 * 2 / 0.875 + 2) ** 2, rel=1e-12)
    # the float product 3 * (1/3) rounds to 1.0, but the exact n * gamma is below 1: Prop 4.5 branch
    g = 1 / 3
    assert 3 * g == 1.0
    assert G.final_constant(2.0, 3.0, 1.0, 1.0, 3 * g, 3, g) == (
        pytest.approx(4.0, rel=1e-12), "T = n*gamma < 1: Proposition 4.5 branch (B.6), C = beta*c_off^2*T")
    # and without n and gamma the float T decides: T = 1.0 is not below 1
    assert G.final_constant(2.0, 3.0, 1.0, 1.0, 3 * g)[1] == ""


def test_step_within_rounding_of_the_limit_is_refused():
    # mu = 1e-308, L = 1, gamma = the float just below 2 mu: the exact margin mu - gamma/2 = 2.5e-324 is below the
    # smallest float, so a = 0 after rounding down: refused (dividing by it would give no bound)
    mu = 1e-308
    with pytest.raises(AssumptionError) as e:
        G.theorem_5_2(mu, 1.0, 1.0, math.nextafter(2 * mu, 0), 10)
    assert str(e.value) == ("step_size = 2e-308 is within rounding of 2*mu/L^2 = 2e-308 (mu - gamma L^2/2 underflows) "
                            "for 004 Theorem 5.2; choose a smaller step size")


@pytest.mark.parametrize("fn,args", [("theorem_5_2", ()), ("theorem_5_6", (2, 5))])
def test_theorems_decide_the_horizon_on_the_exact_product(fn, args):
    # n = 3, gamma = 1/3 (float): the float product n * gamma is 1.0, the exact one is below 1, so the
    # Prop 4.5 branch applies: C = beta (2c)^2 T = 4 (with T = 1.0 as a float), not (2c (L+1)/a + 2c)^2 = 54.76
    cert = getattr(G, fn)(1.0, 1.0, 1.0, 1 / 3, 3, *args)
    assert cert.notes == "T = n*gamma < 1: Proposition 4.5 branch (B.6), C = beta*c_off^2*T"
    assert C_of(cert) == pytest.approx(4.0, rel=1e-12)


def test_short_horizon_prop_4_6_labels():
    p = G.proposition_4_6(1.0, 2.0, 3.0, 1.0, 0.5)
    assert (p.mechanism, p.source) == ("girsanov-final", "004 Proposition 4.6")
    assert p.constants == {"C": pytest.approx(2.0, rel=1e-12)}          # beta c^2 T = 4 * 0.5
