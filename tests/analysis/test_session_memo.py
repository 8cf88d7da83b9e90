"""One analysis per public call (bayesdp/analysis/session.py) and one calibration search per set of public numbers
(bayesdp/calibration.py): what is reused, and that nothing stale is."""

import math

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import importlib

import bayesdp
from bayesdp import calibration
from bayesdp.analysis import Domain, analyze, certify
from bayesdp.analysis.session import memo, one_analysis
from bayesdp.budget.numbers import noise_delta, noise_epsilon
from bayesdp.curves import GDP
from bayesdp.models import logistic
from bayesdp.publish.spec import ChainOptions, ReleaseSpec

tracing_module = importlib.import_module("bayesdp.analysis.tracing")
records_module = importlib.import_module("bayesdp.analysis.records")
potential_module = importlib.import_module("bayesdp.samplers.potential")
glm_module = importlib.import_module("bayesdp.samplers.glm")
DOMAIN = Domain.parse(["X.norm=1", "y.values=0,1"])


def _counting(monkeypatch):
    """The model's program traced (its memo missed): (per-record shapes, dtype names) per trace."""
    calls = []
    real = tracing_module._trace_program

    def traced(*a, **k):
        calls.append((tuple(sorted(a[1].items())), tuple(sorted((k, np.dtype(v).name) for k, v in a[2].items()))))
        return real(*a, **k)
    monkeypatch.setattr(tracing_module, "_trace_program", traced)
    return calls


def test_inside_one_call_the_model_is_traced_once_for_every_record_count(monkeypatch):
    calls = _counting(monkeypatch)
    with one_analysis():
        a = analyze(logistic, domain=DOMAIN, data_size=100, dim=2)
        b = analyze(logistic, domain=DOMAIN, data_size=10_000, dim=2)
    assert len(calls) == 1
    # the constants still follow the record count: L = 1 + m/4 (prior N(0, 1), |x| <= 1, sigmoid' <= 1/4)
    assert a.constants.total_smoothness == pytest.approx(1 + 100 / 4)
    assert b.constants.total_smoothness == pytest.approx(1 + 10_000 / 4)
    # without a call around them, every analysis traces
    analyze(logistic, domain=DOMAIN, data_size=100, dim=2)
    analyze(logistic, domain=DOMAIN, data_size=100, dim=2)
    assert len(calls) == 3


def test_another_shape_or_keyword_argument_is_another_program(monkeypatch):
    calls = _counting(monkeypatch)

    def scaled(X, y, scale=1.0):
        w = numpyro.sample("w", dist.Normal(0.0, scale).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)
    with one_analysis():
        a = analyze(scaled, domain=DOMAIN, data_size=100, dim=2, model_kwargs={"scale": 1.0})
        b = analyze(scaled, domain=DOMAIN, data_size=100, dim=2, model_kwargs={"scale": 0.5})
        c = analyze(scaled, domain=DOMAIN, data_size=100, dim=3, model_kwargs={"scale": 0.5})
    assert len(calls) == 3
    # prior N(0, s^2): strong convexity 1/s^2
    assert (a.constants.strong_convexity, b.constants.strong_convexity) == (1.0, 4.0)
    assert [n for n, s, _ in c.latent_sites] == ["w"] and c.latent_sites[0][1] == (3,)


SCALE = {"s": 1.0}


def _global_scale(X, y):
    w = numpyro.sample("w", dist.Normal(0.0, SCALE["s"]).expand([X.shape[1]]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ w), obs=y)


def test_nothing_is_kept_between_calls_a_changed_global_is_seen():
    """A model may read a global that changes between two calls: the second call traces it again."""
    try:
        r1 = certify(_global_scale, domain=DOMAIN, data_size=100, dim=2, step_size=0.01, num_steps=100)
        SCALE["s"] = 0.5
        r2 = certify(_global_scale, domain=DOMAIN, data_size=100, dim=2, step_size=0.01, num_steps=100)
    finally:
        SCALE["s"] = 1.0
    assert r1.analysis.constants.strong_convexity == 1.0
    assert r2.analysis.constants.strong_convexity == 4.0


def test_a_failed_make_is_not_kept_and_an_unhashable_key_is_not_memoised():
    calls = []

    def fail():
        calls.append(1)
        raise ValueError("no")
    with one_analysis():
        for _ in range(2):
            with pytest.raises(ValueError, match="no"):
                memo("t", ("k",), fail)
        assert memo("t", ([1],), lambda: calls.append(2) or "a") == "a"
        assert memo("t", ([1],), lambda: calls.append(2) or "b") == "b"
    assert calls == [1, 1, 2, 2]


def test_nested_calls_share_the_outer_memo():
    made = []
    with one_analysis():
        memo("t", ("k",), lambda: made.append(1) or 1)
        with one_analysis():
            memo("t", ("k",), lambda: made.append(1) or 1)
        memo("t", ("k",), lambda: made.append(1) or 1)
    assert made == [1]


def test_a_release_traces_its_model_once(monkeypatch):
    """A release analyses its model about ten times (choice, planning, certificates, the prediction at other record
    counts): one trace per program: the data's labels are floats (float32), the analyses without data read the
    integer labels of the domain (int32)."""
    calls = _counting(monkeypatch)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.1
    data = {"X": X, "y": (rng.random(150) < 0.5).astype(float)}
    acct = bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5)
    spec = ReleaseSpec("mean", epsilon=1.0, delta=1e-6, method="final", chain=ChainOptions(max_steps=500),
                       allow_uninformative=True)
    res = bayesdp.release(bayesdp.ULA(logistic, domain=DOMAIN), spec, data=data, accountant=acct)
    assert len(calls) == len(set(calls)) == 2 and res.extra["final"]["num_steps"] <= 500
    assert sorted(dict(c[1])["y"] for c in calls) == ["float32", "int32"]


def _abstract_traces(monkeypatch):
    """Every abstract trace of the model by NumPyro's handlers (records.traced_abstractly, wherever it is called
    from) and every Bernoulli-GLM proof: the caller's file and function per call."""
    import sys
    calls = []
    real = records_module.traced_abstractly

    def traced(fn, arrays):
        f = sys._getframe(1)
        while f.f_code.co_name in ("<lambda>", "memo", "trace"):     # the helpers between a trace and its caller
            f = f.f_back
        calls.append(f"{f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_code.co_name}")
        return real(fn, arrays)
    for mod in (records_module, potential_module):
        monkeypatch.setattr(mod, "traced_abstractly", traced)
    real_detect = glm_module._detect
    monkeypatch.setattr(glm_module, "_detect", lambda pot: calls.append("glm.py:_detect") or real_detect(pot))
    return calls


def test_a_release_traces_each_abstract_program_once(monkeypatch):
    """The default release validates its data three times (the source, the analysis, the potentials), builds two
    potentials (the plan's and the sampler's, each tracing one and two records) and proves the Bernoulli GLM for
    the sampler: inside the call each of these abstract traces and the proof is made once (11 traces and 1 proof
    before they were shared: analysis/session.py)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.1
    data = {"X": X.astype(np.float32), "y": (rng.random(400) < 0.5).astype(np.float32)}
    kernel = bayesdp.ULA(logistic, domain=DOMAIN)
    spec = ReleaseSpec("mean", epsilon=1.0, delta=1e-6, method="path", chain=ChainOptions(num_steps=300),
                       allow_uninformative=True)
    calls = _abstract_traces(monkeypatch)
    res = bayesdp.release(kernel, spec, data=data, accountant=bayesdp.PrivacyAccountant(budget=2.0,
                                                                                          budget_delta=1e-5))
    assert res.extra["method"]["method"] == "path"
    # potential.py:_trace three times: one record, two records, and the GLM proof's trace at theta = 0
    assert sorted(calls) == ["glm.py:_detect", "potential.py:_trace", "potential.py:_trace", "potential.py:_trace",
                             "records.py:_observed_discrete_sites"], calls


def _latent_k(X, y, k=2):
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([k]).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ z[:X.shape[1]]), obs=y)


def _two_sites(X, y, k=2):
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([X.shape[1]]).to_event(1))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    with numpyro.plate("data", X.shape[0]):
        numpyro.sample("obs", dist.Bernoulli(logits=X @ z + b), obs=y)


def test_the_shared_traces_never_cross_models_keywords_or_shapes():
    """Inside one call, a potential of another model, another keyword argument or another record shape is traced
    afresh: its sites are its own."""
    from bayesdp.samplers import ModelPotential
    rng = np.random.default_rng(2)
    data2 = {"X": rng.normal(size=(5, 2)).astype(np.float32), "y": np.ones(5, np.float32)}
    data3 = {"X": rng.normal(size=(5, 3)).astype(np.float32), "y": np.ones(5, np.float32)}
    with one_analysis():
        dims = [ModelPotential(_latent_k, data2, {"k": 2}).dim, ModelPotential(_latent_k, data2, {"k": 4}).dim,
                ModelPotential(_latent_k, data3, {"k": 3}).dim, ModelPotential(_two_sites, data2, {"k": 2}).dim,
                ModelPotential(_two_sites, data3, {"k": 2}).dim, ModelPotential(_latent_k, data2, {"k": 2}).dim]
        names = [s.name for s in ModelPotential(_two_sites, data2, {"k": 2}).sites]
    assert dims == [2, 4, 3, 3, 4, 2] and names == ["z", "b"]


def test_the_calibration_search_is_a_function_of_public_numbers(monkeypatch):
    searches = []
    real = calibration._search_chain
    monkeypatch.setattr(calibration, "_search_chain", lambda *a: searches.append(a[1:]) or real(*a))
    monkeypatch.setattr(calibration, "_SEARCHES", {})
    shapes = bayesdp.Shapes(1000, {"X": (2,), "y": ()})
    opts = bayesdp.CalibrationOptions(max_steps=500)
    p1 = bayesdp.calibrate(logistic, domain=DOMAIN, epsilon=2.0, delta=1e-6, data=shapes, options=opts)
    p2 = bayesdp.calibrate(logistic, domain=DOMAIN, epsilon=2.0, delta=1e-6, data=shapes, options=opts)
    assert len(searches) == 1 and p1.to_dict() == p2.to_dict()
    # another target, record count or compute budget is another search, and the plan meets its own target
    p3 = bayesdp.calibrate(logistic, domain=DOMAIN, epsilon=1.0, delta=1e-6, data=shapes, options=opts)
    p4 = bayesdp.calibrate(logistic, domain=DOMAIN, epsilon=2.0, delta=1e-6,
                           data=bayesdp.Shapes(2000, {"X": (2,), "y": ()}), options=opts)
    assert len(searches) == 3
    assert p3.epsilon <= 1.0 < p1.epsilon <= 2.0 and p4.epsilon <= 2.0
    assert p4.data_size == 2000


def test_a_release_after_calibrate_with_the_same_budget_searches_once(monkeypatch):
    """`bayesdp calibrate`, then a last-draw release charged the same epsilon and delta: one search.  A release
    calibrates to the largest doubles not above the decimals it charges (the double nearest 1e-5 lies 8e-22 ABOVE
    1e-5), and calibrate searches at the same doubles: its plan meets the written target, and the release finds
    the search in the memo (before, it searched again at 9.999999999999999e-06: 0.6-0.9 s of a warm release)."""
    assert noise_delta(1e-5) == 9.999999999999999e-06 < 1e-5 and noise_epsilon(0.1) == 0.09999999999999999
    searches = []
    real = calibration._search_chain
    monkeypatch.setattr(calibration, "_search_chain", lambda *a: searches.append(a[1:]) or real(*a))
    monkeypatch.setattr(calibration, "_SEARCHES", {})
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.1
    data = {"X": X, "y": (rng.random(400) < 0.5).astype(float)}
    plan = bayesdp.calibrate(logistic, domain=DOMAIN, epsilon=2.0, delta=1e-5, data=data,
                             options=bayesdp.CalibrationOptions(max_steps=500))
    assert [s[:3] for s in searches] == [("ula-final", 9.999999999999999e-06, 2.0)]
    assert GDP(plan.gdp_mu).epsilon(9.999999999999999e-06) <= 2.0
    acct = bayesdp.PrivacyAccountant(budget=2.0, budget_delta=1e-5)
    spec = ReleaseSpec("mean", epsilon=2.0, delta=1e-5, method="final", chain=ChainOptions(max_steps=500),
                       allow_uninformative=True)
    res = bayesdp.release(bayesdp.ULA(logistic, domain=DOMAIN), spec, data=data, accountant=acct)
    assert len(searches) == 1
    fin = res.extra["final"]
    assert (fin["num_steps"], fin["step_size"], fin["inverse_temperature"]) == \
        (plan.num_steps, plan.step_size, plan.inverse_temperature)
    # a target that is not a double: searched at the largest double below its decimal
    bayesdp.calibrate(logistic, domain=DOMAIN, epsilon=0.1, delta=1e-5, data=bayesdp.Shapes(10_000, {"X": (2,), "y": ()}),
                      options=bayesdp.CalibrationOptions(max_steps=500))
    assert searches[-1][1:3] == (9.999999999999999e-06, 0.09999999999999999)


@pytest.mark.parametrize("m, d, eps", [(10_000, 10, 1.0), (150, 2, 4.0)])
def test_the_pruned_search_picks_the_full_grids_pair(monkeypatch, m, d, eps):
    """The search prices pairs (beta, h) in increasing order of their W2 bound at max_steps and stops once that
    exceeds the least bound found; the pair it picks is the full grid's (every pair searched here, by the grid's
    own rules: the largest n meeting the target, then the least W2 bound), with fewer certificates priced."""
    c = analyze(logistic, domain=DOMAIN, data_size=m, dim=d).constants
    mu, L = c.total_strong_convexity, c.total_smoothness
    betas = [10 ** (-3 * i / 9) for i in range(10)]
    hs = sorted({2 / (mu + L) * 10 ** (-4 * j / 9) * (1 - 1e-9) for j in range(10)} | {1 / L * (1 - 1e-9)},
                reverse=True)
    real, full, grid_priced = calibration._epsilon, [], []
    for beta in betas:
        for h in hs:
            # (calibrate searches at the largest double not above the written delta, 1e-5)
            n = calibration._largest_n(lambda k: grid_priced.append(1) or real(c, "ula-final", noise_delta(1e-5), beta,
                                                                             h, k, None, 1)[0], eps, 10_000)
            if n:
                full.append((calibration._w2(c, beta, h, n, d), beta, h, n))
    w, beta, h, n = min(full)
    assert w <= 0.5 * calibration._r0(c, beta, d)          # the W2 rule decides
    priced = []
    monkeypatch.setattr(calibration, "_epsilon", lambda *a: priced.append(1) or real(*a))
    monkeypatch.setattr(calibration, "_SEARCHES", {})
    plan = bayesdp.calibrate(logistic, domain=DOMAIN, epsilon=eps, delta=1e-5,
                             data=bayesdp.Shapes(m, {"X": (d,), "y": ()}))
    assert (plan.step_size, plan.num_steps) == (h, n) and plan.distance_bound["rule"] == "w2"
    assert plan.inverse_temperature >= beta and plan.epsilon <= eps
    assert len(priced) < 0.6 * len(grid_priced)


def _brute_largest_n(f, target, max_steps):
    ok = [n for n in range(1, max_steps + 1) if f(n) <= target]
    return max(ok) if ok else 0


@pytest.mark.parametrize("seed", range(6))
def test_the_step_search_finds_the_largest_n_of_any_nondecreasing_curve(seed):
    """calibration._largest_n interpolates in log-log and probes neighbours, but keeps a bracket f(lo) <= target <
    f(hi): its answer is the largest n with f(n) <= target (brute force over every n) for any nondecreasing f,
    here random step functions with flat stretches, zeros and infinite values (no certificate), and it never asks
    for an n outside [1, max_steps]."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        max_steps = int(rng.integers(1, 3000))
        jumps = rng.exponential(1.0, max_steps) * (rng.random(max_steps) < rng.uniform(0.05, 1.0))
        values = np.cumsum(jumps) - rng.uniform(0, 2)
        values = np.where(values < 0, 0.0, values)
        if rng.random() < 0.3:
            values[int(rng.integers(0, max_steps)):] = np.inf
        asked = []

        def f(n):
            assert 1 <= n <= max_steps
            asked.append(n)
            return float(values[n - 1])
        target = float(rng.uniform(-0.5, values[np.isfinite(values)].max(initial=1.0) + 0.5))
        assert calibration._largest_n(f, target, max_steps) == _brute_largest_n(f, target, max_steps)


def test_the_step_search_prices_few_certificates_on_power_laws():
    """epsilon ~ c n^p (a path's sqrt n): the interpolated search needs a handful of points where the binary search
    needs about 16 for max_steps = 10,000; the answers agree with the closed form floor((target / c)^(1/p))."""
    for c, p, target in [(0.1254, 0.5, 1.0), (0.0563, 0.5, 1.0), (0.3, 0.7, 4.0), (0.02, 1.0, 1.0)]:
        asked = []
        n = calibration._largest_n(lambda k: asked.append(k) or c * k ** p, target, 10_000)
        exact = math.floor((target / c) ** (1 / p))
        assert n == exact or (n == exact - 1 and c * exact ** p > target)      # the float at the boundary
        assert len(asked) <= 7, asked
