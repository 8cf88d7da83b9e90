"""``bayesdp sample``: writes the certificate into the .nc file; bad input and divergence exit 2 with one line."""

import json
import os

import numpy as np
import pytest

from bayesdp.cli import main

from _sampler_models import logistic_data

DOMAIN = ["--domain", "X.norm=1.0", "y.values=0,1"]


@pytest.fixture(scope="module")
def npz(tmp_path_factory):
    X, y = logistic_data(80, 3, seed=0)
    path = tmp_path_factory.mktemp("data") / "d.npz"
    np.savez(path, X=X, y=y)
    return str(path)


def _one_line_error(capsys, rc):
    out = capsys.readouterr()
    assert rc == 2
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


def test_sample_writes_certificate(npz, tmp_path, capsys):
    pytest.importorskip("h5py")
    import arviz as az

    out = tmp_path / "run.nc"
    rc = main(["sample", "logistic", "--data", npz, *DOMAIN, "--sampler", "sgld", "--batch-size", "10",
               "--clip-norm", "0.5", "--step-size", "1e-3", "--num-steps", "100", "--num-chains", "2",
               "--release", "thinned", "--thinning", "10", "--out", str(out), "--json"])
    assert rc == 0
    printed = json.loads(capsys.readouterr().out)
    idata = az.from_netcdf(str(out))
    cert = json.loads(idata.posterior.attrs["bayesdp_certificate"])
    assert cert == printed["certificate"]
    assert cert["certified"] and cert["mechanism"] == "sgld-path"
    cfg = cert["configuration"]
    assert (cfg["batch_size"], cfg["clip_norm"], cfg["num_chains"], cfg["thinning"]) == (10, 0.5, 2, 10)
    assert idata.posterior["w"].shape == (2, 10, 3)


def test_uncertified_flag(npz, capsys):
    rc = main(["sample", "logistic", "--data", npz, "--sampler", "ula", "--step-size", "1e-3", "--num-steps", "10",
               "--uncertified", "--json"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["certificate"]["certified"] is False


@pytest.mark.parametrize("extra, pattern", [
    # the CLI names its own flags (issue #13: advice names only options the command has)
    (["--sampler", "sgld", "--batch-size", "81"], "--batch-size 81 exceeds the 80 records"),
    (["--sampler", "sgld", "--batch-size", "0"], "--batch-size = 0 must be an integer >= 1"),
    (["--sampler", "ula", "--step-size", "-1"], "--step-size = -1 must be > 0"),
    (["--sampler", "ula"], "--domain is required"),
    (["--sampler", "ula", "--coordinator-address", "127.0.0.1:1234"], "needs --num-processes and --process-id"),
    (["--sampler", "ula", "--coordinator-address", "localhost", "--num-processes", "2", "--process-id", "0"],
     "is not HOST:PORT"),
    (["--sampler", "ula", "--coordinator-address", "h:1", "--num-processes", "2", "--process-id", "2"],
     "--process-id 2 must be in 0 .. 1"),
    (["--sampler", "ula", "--max-copy-bytes", "-1"], "--max-copy-bytes -1 must be >= 0"),
])
def test_bad_configuration_exit_2(npz, capsys, extra, pattern):
    args = ["sample", "logistic", "--data", npz, "--num-steps", "10"]
    if "--step-size" not in extra:
        args += ["--step-size", "1e-3"]
    rc = main(args + extra + (DOMAIN if extra != ["--sampler", "ula"] else []))
    assert pattern in _one_line_error(capsys, rc)


def test_nan_data_and_discrete_model_exit_2(tmp_path, capsys):
    X, y = logistic_data(20, 2)
    X[3, 1] = np.nan
    bad = tmp_path / "nan.npz"
    np.savez(bad, X=X, y=y)
    rc = main(["sample", "logistic", "--data", str(bad), "--sampler", "ula", "--step-size", "1e-3",
               "--num-steps", "10", "--uncertified"])
    assert "non-finite" in _one_line_error(capsys, rc)
    model = tmp_path / "m.py"
    model.write_text("import numpyro, numpyro.distributions as dist\n"
                     "def mix(X, y=None):\n"
                     "    k = numpyro.sample('k', dist.Bernoulli(0.5))\n"
                     "    with numpyro.plate('r', X.shape[0]):\n"
                     "        numpyro.sample('y', dist.Normal(k * X[:, 0], 1.0), obs=y)\n")
    ok = tmp_path / "ok.npz"
    np.savez(ok, X=np.ones((5, 2), np.float32), y=np.zeros(5, np.float32))
    rc = main(["sample", f"{model}:mix", "--data", str(ok), "--sampler", "ula", "--step-size", "1e-3",
               "--num-steps", "10", "--uncertified"])
    assert "discrete" in _one_line_error(capsys, rc)


def test_divergence_exit_2_and_no_file(npz, tmp_path, capsys):
    out = tmp_path / "never.nc"
    rc = main(["sample", "logistic", "--data", npz, "--sampler", "ula", "--step-size", "1e6", "--num-steps", "500",
               "--uncertified", "--out", str(out)])
    assert "diverged" in _one_line_error(capsys, rc)
    assert not os.path.exists(out)


def test_shard_data_and_no_copy_options(npz, capsys):
    rc = main(["sample", "logistic", "--data", npz, "--sampler", "ula", "--step-size", "1e-3", "--num-steps", "10",
               "--uncertified", "--shard-data", "--max-copy-bytes", "0", "--seed", "0", "--json"])
    assert rc == 0
    cert = json.loads(capsys.readouterr().out)["certificate"]
    assert "records split over 1 device(s) in 1 process(es): 80 rows per device" in cert["assumptions"]["placement"]


def test_the_outputs_are_written_after_the_records_are_freed(npz, tmp_path, capsys, monkeypatch):
    """``bayesdp sample`` drops the records before it imports ArviZ and writes the NetCDF file (issue 24: the
    command's peak memory); the outputs need only the draws and the certificate."""
    pytest.importorskip("h5py")
    from bayesdp.commands import sample as sample_cmd

    seen = []
    real = sample_cmd._write_netcdf

    def write(sampler, args):
        seen.append(sampler.potential.data)
        return real(sampler, args)
    monkeypatch.setattr(sample_cmd, "_write_netcdf", write)
    rc = main(["sample", "logistic", "--data", npz, *DOMAIN, "--sampler", "ula", "--step-size", "1e-3",
               "--num-steps", "20", "--out", str(tmp_path / "run.nc"), "--json"])
    assert rc == 0 and seen == [None]
    assert json.loads(capsys.readouterr().out)["samples_shape"]["w"] == [1, 1, 3]
