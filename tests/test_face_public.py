"""The public face in NumPyro's and ArviZ's words (issue 21 item 5): real signatures, ``dir(bayesdp)``,
``PrivateMCMC.run(rng_key, *args)``, spendable certificates, short printed results, InferenceData with only
what the certificate covers, clipping to the domain as a named option, one default in the CLI and Python."""

import inspect
import json
import math

import numpy as np
import pytest

import bayesdp
from bayesdp.errors import AssumptionError, BayesDPError, DomainError
from bayesdp.models import logistic

DOM = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
SHAPES = {"X": (3,), "y": ()}

#: frozen result values (exempt from the parameter limit: users receive them, they do not construct them)
RESULT_VALUES = {"Plan", "Certificate", "BoundReport"}


def _data(n=200, seed=0, scale=1.001):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * scale
    y = (rng.random(n) < 0.5).astype(float)
    return X, y


def _kernel(**kw):
    return bayesdp.ULA(logistic, domain=DOM, step_size=1e-3, **kw)


def test_dir_lists_every_lazily_loaded_name():
    names = set(dir(bayesdp))
    for name in ("certify", "calibrate", "release", "ULA", "SGLD", "PrivateMCMC", "Domain", "PrivacyAccountant",
                 "Ledger", "Plan", "Shapes", "datasets"):
        assert name in names, name
    assert set(bayesdp.__all__) <= names


@pytest.mark.parametrize("name", sorted(set(bayesdp.__all__) - RESULT_VALUES - {"__version__"}))
def test_public_callables_have_real_signatures_of_at_most_eight_parameters(name):
    obj = getattr(bayesdp, name)
    if not callable(obj) or (isinstance(obj, type) and issubclass(obj, BaseException)):
        return
    params = list(inspect.signature(obj).parameters.values())
    kinds = {p.kind for p in params}
    assert not {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD} <= kinds, \
        f"{name}{inspect.signature(obj)} is opaque"
    assert len(params) <= 8, f"{name} has {len(params)} parameters"


def test_private_mcmc_init_and_certify_have_at_most_eight_parameters():
    assert len(inspect.signature(bayesdp.certify).parameters) <= 8
    assert len(inspect.signature(bayesdp.PrivateMCMC).parameters) <= 8


def test_run_takes_numpyro_positional_arguments_and_keys_default_to_the_csprng():
    X, y = _data()
    by_position = bayesdp.PrivateMCMC(_kernel(), num_steps=60).run(None, X, y)
    assert by_position.private and by_position.certificate["chain_keys"].startswith("OS CSPRNG")
    seeded = bayesdp.PrivateMCMC(_kernel(), num_steps=60).run(3, X, y)
    by_name = bayesdp.PrivateMCMC(_kernel(), num_steps=60).run(3, X=X, y=y)
    assert not seeded.private and not seeded.certificate.private
    # the same key and the same data by position or by name: the same chain
    np.testing.assert_array_equal(seeded.get_samples()["w"], by_name.get_samples()["w"])
    with pytest.raises(AssumptionError, match="'X' twice"):
        bayesdp.PrivateMCMC(_kernel(), num_steps=60).run(None, X, X=X, y=y)
    with pytest.raises(AssumptionError, match="3 positional data argument"):
        bayesdp.PrivateMCMC(_kernel(model_kwargs={"prior_scale": 1.0}), num_steps=60).run(None, X, y, X)


def test_an_accountant_charges_a_chain_certificate_at_its_gdp_curve():
    X, y = _data()
    mcmc = bayesdp.PrivateMCMC(_kernel(), num_steps=100).run(None, X, y)
    cert = mcmc.certificate
    ev = cert.to_dp_event()
    assert ev.noise_multiplier == pytest.approx(1.0 / cert["gdp_mu"], rel=1e-15)
    acct = bayesdp.PrivacyAccountant(budget=50.0, budget_delta=cert["delta"])
    acct.spend(mcmc.certificate)          # KeyError: 'type' before
    # charged at the budget's delta, which is the certificate's: the certificate's own epsilon
    assert 50.0 - float(acct.remaining()["epsilon"]) == pytest.approx(cert["epsilon"], rel=1e-9)
    assert mcmc.to_dp_event() == ev
    with pytest.raises(BayesDPError, match=r"^the run is not certified \(x\); an accountant cannot charge it"):
        bayesdp.api.ChainCertificate({"certified": False, "reason": "x"}).to_dp_event()


def test_inference_data_holds_only_the_draws_the_settings_and_the_certificate():
    from bayesdp import _arviz

    X, y = _data()
    mcmc = bayesdp.PrivateMCMC(_kernel(), num_steps=80, release="path").run(None, X, y)
    idata = mcmc.to_inference_data()
    assert _arviz.group_names(idata) == ["posterior"]
    assert set(idata["posterior"].data_vars) == {"w"}
    attrs = idata["posterior"].attrs
    settings = json.loads(attrs["bayesdp_settings"])
    assert settings["step_size"] == 1e-3 and settings["num_steps"] == 80 and settings["release"] == "path"
    assert json.loads(attrs["bayesdp_certificate"])["epsilon"] == mcmc.certificate["epsilon"]
    assert attrs["bayesdp_private"] == 1
    flat = json.dumps(dict(attrs))
    assert "log_likelihood" not in flat and "potential_energy" not in flat


def test_results_print_short_tables_and_convert_to_dataframes():
    rep = bayesdp.certify(logistic, domain=DOM, shapes=bayesdp.Shapes(300, SHAPES), kernel=bayesdp.ULA(step_size=1e-3),
                          num_steps=200)
    short, full = str(rep), rep.table(full=True)
    assert len(short) < 1200 < len(full) and "constants (provenance)" in full
    df = rep.to_dataframe()
    assert df.loc["ula-final", "epsilon"] == rep.mechanisms["ula-final"].value()
    assert math.isnan(df.loc["sgld-final", "epsilon"])
    assert "<table>" in rep._repr_html_()
    plan = rep.plan("ula-final")
    assert plan.to_dataframe().loc["steps", "value"] == "200" and "<table>" in plan._repr_html_()
    X, y = _data(300)
    mcmc = bayesdp.PrivateMCMC(plan)
    assert "not run" in str(mcmc)
    mcmc.run(None, X, y)
    text = str(mcmc)
    assert "certified: epsilon" in text and "w[0]" in text
    summary = mcmc.to_dataframe()
    assert list(summary.index) == ["w[0]", "w[1]", "w[2]"] and "mean" in summary.columns


def test_clipping_to_the_domain_is_a_named_public_option():
    X, y = _data(scale=0.5)                  # rows of norm 2 > the declared 1
    mcmc = bayesdp.PrivateMCMC(_kernel(), num_steps=50)
    with pytest.raises(DomainError, match=r"clip_to_domain=True"):
        mcmc.run(None, X, y)
    clipped = DOM.clip({"X": X, "y": y})
    np.testing.assert_allclose(np.linalg.norm(clipped["X"], axis=1), 1.0, rtol=1e-12)
    assert np.all(np.linalg.norm(clipped["X"], axis=1) <= 1.0)
    a = bayesdp.PrivateMCMC(_kernel(), num_steps=50).run(5, X, y, clip_to_domain=True)
    b = bayesdp.PrivateMCMC(_kernel(), num_steps=50).run(5, clipped["X"], clipped["y"])
    np.testing.assert_array_equal(a.get_samples()["w"], b.get_samples()["w"])
    assert a.certificate["epsilon"] == b.certificate["epsilon"]


def test_the_default_domain_advice_names_an_option_that_exists():
    from bayesdp.errors import CLIP_ADVICE

    advice = CLIP_ADVICE.get()
    assert "Domain.clip" in advice and "clip_to_domain=True" in advice
    assert "clip_to_domain" in inspect.signature(bayesdp.PrivateMCMC.run).parameters


def test_cli_calibrate_defaults_the_mechanism_as_python_does(capsys):
    from bayesdp.cli import main

    py = bayesdp.calibrate(logistic, domain=DOM, data=bayesdp.Shapes(400, dim=3), epsilon=1.0)
    assert inspect.signature(bayesdp.calibrate).parameters["mechanism"].default == py.mechanism == "ula-final"
    rc = main(["calibrate", "logistic", "--no-data", "--data-size", "400", "--dim", "3", "--domain", "X.norm=1",
               "y.values=0,1", "--epsilon", "1.0", "--json"])
    assert rc == 0
    cli = json.loads(capsys.readouterr().out)
    assert cli["mechanism"] == "ula-final"
    assert (cli["step_size"], cli["num_steps"], cli["epsilon"]) == (py.step_size, py.num_steps, py.epsilon)


def test_cli_sample_out_holds_what_python_to_inference_data_holds(tmp_path, capsys):
    from bayesdp import _arviz
    from bayesdp.cli import main

    X, y = _data(120)
    np.savez(tmp_path / "d.npz", X=X, y=y)
    out = tmp_path / "chain.nc"
    rc = main(["sample", "logistic", "--data", str(tmp_path / "d.npz"), "--domain", "X.norm=1", "y.values=0,1",
               "--sampler", "ula", "--step-size", "0.001", "--num-steps", "40", "--release", "path", "--seed", "3",
               "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    cli = _arviz.from_netcdf(str(out))
    py = bayesdp.PrivateMCMC(_kernel(), num_steps=40, release="path").run(3, X, y).to_inference_data()
    assert _arviz.group_names(cli) == _arviz.group_names(py) == ["posterior"]
    cli_settings = json.loads(cli["posterior"].attrs["bayesdp_settings"])
    assert cli_settings == json.loads(py["posterior"].attrs["bayesdp_settings"])
    assert cli_settings["private"] is False and cli_settings["num_steps"] == 40
