"""``bayesdp sample`` with SGLD on a large NPZ or Parquet file compiles the chain on zeros of the file's shapes
before it reads the records (issue 24: the compilation's memory is then not added to the data's).  The run is the
same run: the same draws, bit for bit; nothing of the records is read first; a domain the zeros violate, or any
other failure there, leaves the run to compile as before."""

import json

import numpy as np
import pytest

from bayesdp.analysis import loading
from bayesdp.cli import main
from bayesdp.commands import sample as sample_cmd
from bayesdp.samplers import Sampler

from _sampler_models import logistic_data

SGLD = ["--sampler", "sgld", "--batch-size", "7", "--clip-norm", "0.5", "--step-size", "1e-3", "--num-steps", "60",
        "--seed", "11", "--json"]


@pytest.fixture(scope="module")
def npz(tmp_path_factory):
    X, y = logistic_data(300, 4, seed=3)
    path = tmp_path_factory.mktemp("data") / "d.npz"
    np.savez(path, X=X.astype(np.float64), y=y)       # float64 features: read as float32, as the zeros are
    return str(path)


def _draws(tmp_path, npz, name, domain, capsys):
    pytest.importorskip("h5py")
    import arviz as az

    out = tmp_path / f"{name}.nc"
    rc = main(["sample", "logistic", "--data", npz, "--domain", *domain, *SGLD, "--out", str(out)])
    assert rc == 0
    printed = json.loads(capsys.readouterr().out)
    return np.asarray(az.from_netcdf(str(out)).posterior["w"]), printed


def _record(monkeypatch):
    calls = []
    real_compile = Sampler.compile

    def compile_(self):
        calls.append(("compile", self.potential.data_size))
        return real_compile(self)
    monkeypatch.setattr(Sampler, "compile", compile_)
    real = loading.load_data

    def load(*a, **k):
        calls.append(("load", a[0]))
        return real(*a, **k)
    monkeypatch.setattr(loading, "load_data", load)
    return calls


def test_compiled_first_on_zeros_then_the_same_draws(npz, tmp_path, capsys, monkeypatch):
    domain = ["X.norm=1", "y.values=0,1"]
    monkeypatch.setattr(sample_cmd, "COMPILE_FIRST_BYTES", 1 << 60)    # never: the reference run
    ref, _ = _draws(tmp_path, npz, "ref", domain, capsys)
    monkeypatch.setattr(sample_cmd, "COMPILE_FIRST_BYTES", 0)
    calls = _record(monkeypatch)
    got, printed = _draws(tmp_path, npz, "first", domain, capsys)
    # compiled on the zeros (300 records, from the file's header) before the file was read
    assert calls == [("compile", 300), ("load", npz)]
    np.testing.assert_array_equal(got, ref)
    assert printed["timing"]["compile_s"] > 0


def test_zeros_outside_the_domain_leave_the_run_as_before(npz, tmp_path, capsys, monkeypatch):
    """X.min = -1.5, X.max = -0.5 excludes the zeros (and the data: refused by the run itself, naming the record); y
    in {0, 1} keeps it a logistic model."""
    monkeypatch.setattr(sample_cmd, "COMPILE_FIRST_BYTES", 0)
    calls = _record(monkeypatch)
    rc = main(["sample", "logistic", "--data", npz, "--domain", "X.min=-1.5", "X.max=-0.5", "y.values=0,1", *SGLD])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "outside the declared [X.min, X.max]" in err[0]
    assert calls == [("load", npz)]        # the zeros' sampler was refused before it compiled; nothing was said


def test_only_sgld_on_large_npz_or_parquet_files(tmp_path, npz, monkeypatch):
    import argparse

    monkeypatch.setattr(sample_cmd, "COMPILE_FIRST_BYTES", 300 * 4 * 4 + 300 * 4)   # exactly this file's bytes
    called = []
    monkeypatch.setattr(Sampler, "compile", lambda self: called.append(1) or 0.5)
    from bayesdp.analysis.loading import load_model
    model, _ = load_model("logistic")
    base = dict(sampler="sgld", domain=["X.norm=1", "y.values=0,1"], shard_data=False, num_processes=None,
                coordinator_address=None, data=npz, x_columns=None, y_column=None)
    settings = dict(sampler="sgld", step_size=1e-3, num_steps=5, batch_size=3, clip_norm=1.0,
                    domain=["X.norm=1", "y.values=0,1"], model_kwargs={})
    assert sample_cmd._compile_before_loading(argparse.Namespace(**base), model, settings) == 0.5
    for change in ({"sampler": "ula"}, {"domain": []}, {"shard_data": True}, {"num_processes": 2}):
        assert sample_cmd._compile_before_loading(argparse.Namespace(**{**base, **change}), model, settings) == 0.0
    monkeypatch.setattr(sample_cmd, "COMPILE_FIRST_BYTES", 300 * 4 * 4 + 300 * 4 + 1)   # one byte more: not
    assert sample_cmd._compile_before_loading(argparse.Namespace(**base), model, settings) == 0.0
    assert called == [1]


def test_record_shapes_read_from_the_headers(tmp_path):
    p = tmp_path / "a.npz"
    np.savez(p, X=np.zeros((6, 2)), y=np.arange(6), F=np.zeros((3, 4), order="F"))
    got = {k: (s, str(t)) for k, (s, t) in loading.record_shapes(str(p)).items()}
    loaded = loading.load_data(str(p))
    assert got == {k: (v.shape, str(v.dtype)) for k, v in loaded.items()}
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa
    q = tmp_path / "a.parquet"
    pq.write_table(pa.table({"a": np.arange(5.0), "b": np.ones(5), "lab": np.zeros(5)}), str(q))
    got = loading.record_shapes(str(q), "a,b", "lab")
    loaded = loading.load_data(str(q), "a,b", "lab")
    assert {k: (s, str(t)) for k, (s, t) in got.items()} == {k: (v.shape, str(v.dtype)) for k, v in loaded.items()}
    c = tmp_path / "a.csv"
    c.write_text("a,b\n1,2\n")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    assert loading.record_shapes(str(c), "a", "b") is None and loading.record_shapes(str(bad)) is None
    assert loading.record_shapes(str(tmp_path / "missing.npz")) is None
