import json

import pytest

import numpy as np

from bayesdp.cli import main


def _npz(tmp_path, m=12):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, 2)) * 0.3
    y = (np.arange(m) % 2).astype(float)
    p = tmp_path / "d.npz"
    np.savez(p, X=X, y=y)
    return str(p)


def test_cli_json_shape(tmp_path, capsys):
    rc = main(["certify", "logistic", "--data", _npz(tmp_path), "--domain", "X.norm=1", "--domain", "y.values=0,1",
               "--step-size", "1e-3", "--num-steps", "10", "--batch-size", "3", "--json"])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d["mechanisms"]) == {"posterior", "ula-final", "ula-path", "sgld-final", "sgld-path"}
    # the certificate uses the declared norm inflated by 1 + 8 * 2^-24 (float32 rows at the bound, domain.py)
    infl = 1 + 8 * 2.0 ** -24
    assert d["constants"]["grad_bound"] == pytest.approx(12.0 * infl, rel=1e-15)
    assert d["constants"]["grad_diff"] == pytest.approx(2.0 * infl, rel=1e-15)
    assert d["model"]["name"] == "logistic" and "provenance" in d["constants"]


def test_cli_refusal_is_one_line_exit_2(tmp_path, capsys):
    rc = main(["certify", "poisson", "--data", _npz(tmp_path), "--domain", "X.norm=1", "--step-size", "1e-3",
               "--num-steps", "10", "--json"])
    out = capsys.readouterr()
    assert rc == 2 and out.out == "" and out.err.count("\n") == 1 and "site 'obs'" in out.err


def test_cli_csv_and_no_data(tmp_path, capsys):
    p = tmp_path / "d.csv"
    p.write_text("a,b,label\n0.1,0.2,1\n-0.3,0.1,0\n0.0,0.5,1\n")
    rc = main(["certify", "logistic", "--data", str(p), "--x-columns", "a,b", "--y-column", "label",
               "--domain", "X.norm=1", "--domain", "y.values=0,1", "--step-size", "1e-3", "--num-steps", "10",
               "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["constants"]["data_size"] == 3
    rc = main(["certify", "logistic", "--no-data", "--data-size", "50", "--dim", "2", "--domain", "X.norm=1",
               "--step-size", "1e-3", "--num-steps", "10", "--json"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["constants"]["grad_bound"] == pytest.approx(50.0 * (1 + 8 * 2.0 ** -24),
                                                                                            rel=1e-15)
    assert main(["certify", "nosuchmodel", "--no-data", "--data-size", "5", "--domain", "X.norm=1"]) == 2
