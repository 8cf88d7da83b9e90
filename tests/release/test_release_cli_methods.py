"""``bayesdp release --noise/--delta/--method/--range``: the JSON of a Gaussian, a path and a sample-and-aggregate
release, the automatic choices recorded, and the ledger entries they leave (consistent with their events)."""

import json
import math

import numpy as np
import pytest

from bayesdp.cli import main
from bayesdp.budget.ledger import Ledger

PRIOR_SCALE = 0.5


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.05
    y = (X[:, 0] + 0.3 * rng.normal(size=120) > 0).astype(float)
    path = tmp_path_factory.mktemp("data") / "d.npz"
    np.savez(path, X=X, y=y)
    return str(path)


def _run(capsys, data, ledger, *extra):
    argv = ["release", "logistic", "--data", data, "--domain", "X.norm=1", "y.values=0,1", "--epsilon", "1",
            "--ledger", str(ledger), "--prior-scale", str(PRIOR_SCALE), "--num-steps", "300", *extra, "--json",
            "--allow-uninformative"]       # small data: predicted worse than the prior (docs/release.md §12)
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_gaussian_release_from_the_cli(data_file, tmp_path, capsys):
    out = _run(capsys, data_file, tmp_path / "l.jsonl", "--budget", "2", "--budget-delta", "1e-5", "--noise",
               "gaussian", "--delta", "1e-6", "--seed", "1")
    assert out["noise_mechanism"] == "gaussian" and out["noise"]["chosen_by"] == "user"
    assert out["delta"] == pytest.approx(1e-6) and out["method"]["method"] == "coupling"
    # L2 window: coordinate means (constant 1) x coupling distance 2 R s^2
    assert out["proven_sensitivity"] == pytest.approx(2 * PRIOR_SCALE ** 2 * (1 + 8 * 2.0 ** -24), rel=1e-9)
    assert out["items"][0]["total_interval"] is not None                # ULA coupling: Monte Carlo bound
    led = Ledger(tmp_path / "l.jsonl").verify()
    assert led["entries"][0]["dp_event"]["type"] == "discrete_gaussian"


def test_auto_noise_with_delta_records_the_choice(data_file, tmp_path, capsys):
    out = _run(capsys, data_file, tmp_path / "l.jsonl", "--budget", "2", "--budget-delta", "1e-5", "--delta",
               "1e-6", "--method", "coupling")
    errs = out["noise"]["expected_squared_error"]
    assert out["noise_mechanism"] == min(errs, key=errs.get) and out["noise"]["chosen_by"].startswith("auto")


def test_path_release_from_the_cli(data_file, tmp_path, capsys):
    out = _run(capsys, data_file, tmp_path / "l.jsonl", "--budget", "2", "--budget-delta", "1e-5", "--method",
               "path", "--delta", "1e-6")
    p = out["path"]
    assert out["method"]["method"] == "path" and out["noise_scale"] == 0.0
    assert p["gdp_mu"] == pytest.approx(p["grad_diff"] * math.sqrt(p["inverse_temperature"] * p["step_size"]
                                                                     * p["num_steps"] / 2), rel=1e-9)
    assert p["num_steps"] == 300 and p["chain_keys"].startswith("OS CSPRNG")
    led = Ledger(tmp_path / "l.jsonl").verify()
    assert led["entries"][0]["dp_event"] == {"type": "gdp", "mu": p["gdp_mu"]}


def test_sample_and_aggregate_from_the_cli(data_file, tmp_path, capsys):
    out = _run(capsys, data_file, tmp_path / "l.jsonl", "--budget", "2", "--method", "sample-aggregate", "--range",
               "-2", "2", "--chunks", "4", "--seed", "3")
    sa = out["sample_and_aggregate"]
    assert sa["chunks"] == 4 and sa["chunk_size"] == 30 and sa["chunk_draws_published"] is False
    assert out["proven_sensitivity"] == pytest.approx(4 * 4 / 4)     # L1: d (b - a) / k
    assert len(out["values"]) == 4          # the d = 4 coordinate means (not an empty list that passes below)
    assert all(-2 <= v <= 2 for v in out["values"]) and out["postprocessing"]["clamp"] == [-2, 2]
