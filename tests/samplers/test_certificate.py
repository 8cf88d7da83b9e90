"""The run carries its certificate: composition over chains, refusal, uncertified marking, ArviZ/.nc output."""

import json
import math
from types import SimpleNamespace

import jax
import numpy as np
import pytest
from scipy import optimize, stats

from bayesdp.api import chain_inference_data
from bayesdp.certificate import BoundReport, Certificate
from bayesdp.curves import GDP, RDP
from bayesdp.errors import AssumptionError
from bayesdp.samplers import Sampler

from _sampler_models import logistic, logistic_data


def _gdp_epsilon(mu, delta):
    """Independent DRS (eps, delta) of mu-GDP: solve Phi(-e/mu + mu/2) - e^e Phi(-e/mu - mu/2) = delta."""
    f = lambda e: stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta
    return optimize.brentq(f, 0.0, 100.0, xtol=1e-12)


class FakeCertifier:
    """Records the configuration it was asked about; returns a fixed per-chain curve."""

    def __init__(self, curve=None, error=None):
        self.curve, self.error, self.calls = curve, error, []

    def __call__(self, model, data=None, domain=None, **kw):
        self.calls.append(kw)
        mechs = {}
        for name in ("ula-final", "ula-path", "sgld-final", "sgld-path"):
            if self.error:
                mechs[name] = self.error
            else:
                cert = Certificate(mechanism=name, source="fake source 1.0", curve=self.curve)
                mechs[name] = BoundReport(name, {}, [cert], delta=kw["delta"])
        return SimpleNamespace(mechanisms=mechs, analysis=SimpleNamespace(constants={"grad_bound": 3.0}))


X, Y = logistic_data(64, 3, seed=0)


def _sampler(**kw):
    base = dict(step_size=1e-3, num_steps=50, domain=["X.norm=1.0", "y.values=0,1"])
    base.update(kw)
    return Sampler(logistic, {"X": X, "y": Y}, **base)


def test_chains_compose_gdp_in_quadrature_and_config_is_exact():
    fake = FakeCertifier(curve=GDP(0.5))
    s = _sampler(num_chains=4, sampler="sgld", batch_size=8, clip_norm=0.7, release="thinned", thinning=5,
                 inverse_temperature=2.0, certifier=fake, delta=1e-6)
    call = fake.calls[0]
    assert (call["step_size"], call["num_steps"], call["batch_size"], call["clip_norm"],
            call["inverse_temperature"], call["delta"], call["sampler"]) == (1e-3, 50, 8, 0.7, 2.0, 1e-6, "sgld")
    c = s.certificate
    assert c["certified"] and c["mechanism"] == "sgld-path"   # thinned path: the path certificate
    assert c["gdp_mu"] == pytest.approx(1.0)                   # sqrt(4 * 0.5^2)
    assert c["epsilon"] == pytest.approx(_gdp_epsilon(1.0, 1e-6), rel=1e-6)
    assert c["per_chain"]["epsilon"] == pytest.approx(_gdp_epsilon(0.5, 1e-6), rel=1e-6)
    assert c["sources"] == ["fake source 1.0"]
    cfg = c["configuration"]
    assert (cfg["num_chains"], cfg["release"], cfg["thinning"], cfg["clip_norm"]) == (4, "thinned", 5, 0.7)
    assert "zeros" in c["assumptions"]["initialisation"]


def test_rdp_curves_add_over_chains():
    # linear RDP eps(alpha) = kappa alpha, 3 chains -> 3 kappa alpha; optimum kappa' + 2 sqrt(kappa' log(1/delta))
    s = _sampler(num_chains=3, certifier=FakeCertifier(curve=RDP.linear(0.01)), delta=1e-5)
    k = 0.03
    mironov = k + 2 * math.sqrt(k * math.log(1e5))
    assert s.certificate["epsilon"] <= mironov + 1e-9  # the core's conversion is at least as tight as Mironov's
    assert s.certificate["epsilon"] > 0.5 * mironov


def test_refuses_uncovered_configuration_before_compiling():
    from bayesdp.samplers import driver

    before = driver.TRACE_COUNT["n"]
    with pytest.raises(AssumptionError, match="ula-final: no certificate covers this configuration") as info:
        _sampler(certifier=FakeCertifier(error="step_size = 10 must be in (0, 2*mu/L^2)"))
    assert "\n" not in str(info.value) and "uncertified=True" in str(info.value)
    assert driver.TRACE_COUNT["n"] == before


def test_needs_domain_unless_uncertified():
    with pytest.raises(AssumptionError, match="domain = None"):
        Sampler(logistic, {"X": X, "y": Y}, step_size=1e-3, num_steps=10)


def test_uncertified_run_is_marked_everywhere(tmp_path):
    s = _sampler(uncertified=True, domain=None, num_chains=2).run(jax.random.key(0))
    assert s.certificate["certified"] is False and "uncertified" in s.certificate["reason"]
    idata = chain_inference_data(s)
    cert = json.loads(idata.posterior.attrs["bayesdp_certificate"])
    assert cert["certified"] is False and idata.posterior.attrs["bayesdp_certified"] == 0


def test_inference_data_holds_only_released_draws_and_certificate(tmp_path):
    from bayesdp import _arviz

    s = _sampler(num_chains=3, certifier=FakeCertifier(curve=GDP(0.2))).run(jax.random.key(1))
    idata = chain_inference_data(s)
    assert _arviz.group_names(idata) == ["posterior"]
    assert list(idata.posterior.data_vars) == ["theta"]
    assert idata.posterior["theta"].shape == (3, 1, 3)  # final draw of each chain only
    path = tmp_path / "run.nc"
    _arviz.to_netcdf(idata, str(path))
    back = _arviz.from_netcdf(str(path))
    cert = json.loads(back.posterior.attrs["bayesdp_certificate"])
    assert cert["certified"] is True and cert["gdp_mu"] == pytest.approx(0.2 * math.sqrt(3))
    np.testing.assert_allclose(back.posterior["theta"].values, s.get_samples(group_by_chain=True)["theta"])


def test_with_the_real_analyzer():
    pytest.importorskip("bayesdp.analysis")
    from bayesdp.analysis import Domain, certify

    models = pytest.importorskip("bayesdp.models")
    model = models.BUILTIN["logistic"]
    dom = ["X.norm=1.0", "y.values=0,1"]
    s = Sampler(model, {"X": X, "y": Y}, step_size=1e-3, num_steps=100, num_chains=2, domain=dom, delta=1e-5)
    rep = certify(model, data={"X": X, "y": Y}, domain=Domain.parse(dom), step_size=1e-3, num_steps=100,
                  batch_size=None, delta=1e-5, sampler="ula")
    best = rep.mechanisms["ula-final"].best
    assert s.certificate["certified"] and s.certificate["sources"] == [best.source]
    if isinstance(best.curve, GDP):  # composed in quadrature, checked against the independent DRS formula
        assert s.certificate["epsilon"] == pytest.approx(_gdp_epsilon(best.curve.mu * math.sqrt(2), 1e-5), rel=1e-5)
    s.run(jax.random.key(0))
    assert set(s.get_samples()) == {"w"}  # the deterministic site 'logits' is not released
