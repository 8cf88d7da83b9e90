"""``bayesdp release``: JSON keys, the noise scale equals the proven sensitivity / eps, routes, and
every refusal (exit 2, one line, nothing drawn, ledger bytes unchanged, chain not run).

Independent values: for ``logistic`` with ``X.norm=1`` and prior ``N(0, s^2 I)`` the potential is
``1/s^2``-strongly convex for every dataset and two records' likelihood gradients differ by at most
``|(y - sigmoid) x| + |(y' - sigmoid) x'| <= 2`` (times the certified norm ``1 + 8 * 2^-24``); at the
default step ``1/L <= 2/(m + L)`` the coupling distance is ``2 / (1/s^2) = 2 s^2`` (docs/release.md §1.2),
and ``k`` coordinate means have
L1 Lipschitz constant ``sqrt(k)``.
"""

import json
import math

import numpy as np
import pytest

import bayesdp.publish.noise as noise_mod
from bayesdp.samplers import Sampler
from bayesdp.cli import main

PRIOR_SCALE = 0.5
DIM = 3
#: the certificate uses the declared norm R = 1 inflated by 1 + 8 * 2^-24 (float32 rows at the bound, domain.py)
R_CERT = 1 + 8 * 2.0 ** -24


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, DIM))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.05
    y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(float)
    path = tmp_path_factory.mktemp("data") / "d.npz"
    np.savez(path, X=X, y=y)
    return str(path)


def _args(data, ledger, *extra, eps="1"):
    return ["release", "logistic", "--data", data, "--domain", "X.norm=1", "y.values=0,1", "--epsilon", eps,
            "--ledger", str(ledger), "--num-steps", "400", "--prior-scale", str(PRIOR_SCALE), "--allow-uninformative",
            *extra]       # small data: predicted worse than the prior (docs/release.md §12)


def _run_json(capsys, args):
    rc = main(args + ["--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


@pytest.fixture
def counters(monkeypatch):
    """Count secure-noise draws and chain runs."""
    c = {"noise": 0, "chain": 0}
    real_noise = noise_mod.sample_discrete_laplace
    real_chain = Sampler.run

    def noise(*a, **k):
        c["noise"] += 1
        return real_noise(*a, **k)

    def chain(*a, **k):
        c["chain"] += 1
        return real_chain(*a, **k)

    monkeypatch.setattr(noise_mod, "sample_discrete_laplace", noise)
    monkeypatch.setattr(Sampler, "run", chain)
    return c


def test_json_keys_and_scale_equals_sensitivity_over_eps(data_file, tmp_path, capsys, counters):
    ledger = tmp_path / "l.json"
    out = _run_json(capsys, _args(data_file, ledger, "--budget", "3", "--seed", "1", eps="0.7"))
    for key in ("values", "noise_scale", "sensitivity", "epsilon", "delta", "source", "remaining_budget"):
        assert key in out
    assert len(out["values"]) == DIM and out["names"] == [f"w[{i}]" for i in range(DIM)]
    proven = math.sqrt(DIM) * 2.0 * R_CERT * PRIOR_SCALE ** 2
    assert out["proven_sensitivity"] == pytest.approx(proven, rel=1e-12)
    assert out["sensitivity_norm"] == "L1"
    # the only slack is the documented grid rounding k * r, r <= proven/eps * 2^-39
    assert out["sensitivity"] == pytest.approx(out["proven_sensitivity"] + DIM * out["grid"], rel=1e-15)
    assert 0 < out["grid"] <= out["proven_sensitivity"] / 0.7 * 2.0 ** -39
    assert out["noise_scale"] == pytest.approx(out["sensitivity"] / 0.7, rel=1e-15)
    assert out["epsilon"] == 0.7 and out["delta"] == 0.0
    assert out["source"].startswith("004 Proposition 3.7 + coupling")
    assert out["remaining_budget"]["epsilon"] == pytest.approx(3 - 0.7, abs=1e-15)
    assert out["chain"]["published"] is False
    assert out["coupling"]["distance"] == pytest.approx(2.0 * R_CERT * PRIOR_SCALE ** 2, rel=1e-12)
    for it in out["items"]:  # variance 2 scale^2 at most (discretised Laplace), interval around the value
        assert it["noise_variance"] <= 2 * it["noise_scale"] ** 2 * (1 + 1e-12)
        lo, hi = it["interval"]
        assert lo < it["value"] < hi
    assert counters["noise"] == DIM and counters["chain"] == 1
    from bayesdp.budget.ledger import Ledger

    doc = Ledger(ledger).summary()  # the ledger is a JSON-lines journal (docs/ledger.md), read through its API
    assert [r["status"] for r in doc["entries"]] == ["committed"]
    assert doc["entries"][0]["epsilon"] == 0.7
    assert doc["dataset"] == "d.npz"


def test_same_seed_different_noise(data_file, tmp_path, capsys):
    ledger = tmp_path / "l.json"
    a = _run_json(capsys, _args(data_file, ledger, "--budget", "2", "--seed", "7"))
    b = _run_json(capsys, _args(data_file, ledger, "--seed", "7"))
    assert a["values"] != b["values"]  # same chain, fresh secure noise
    assert b["remaining_budget"]["epsilon"] == 0.0


def test_user_statistic_and_coords(data_file, tmp_path, capsys):
    f = tmp_path / "stat.py"
    f.write_text("def first(s):\n    return s[\"w\"][0]\n")
    out = _run_json(capsys, _args(data_file, tmp_path / "l.json", "--budget", "5", "--stat", f"{f}:first",
                                  "--lipschitz", "1", "--stat-names", "w0"))
    assert out["names"] == ["w0"] and out["sensitivity_norm"] == "absolute value"
    assert out["proven_sensitivity"] == pytest.approx(2.0 * R_CERT * PRIOR_SCALE ** 2, rel=1e-12)
    out = _run_json(capsys, _args(data_file, tmp_path / "l.json", "--coords", "w[0],w[2]"))
    assert out["names"] == ["w[0]", "w[2]"]
    assert out["proven_sensitivity"] == pytest.approx(math.sqrt(2) * 2.0 * R_CERT * PRIOR_SCALE ** 2, rel=1e-12)


def test_named_statistics_quantiles_and_probability(data_file, tmp_path, capsys, counters):
    D = 2.0 * R_CERT * PRIOR_SCALE ** 2                        # the coupling distance (module docstring)
    out = _run_json(capsys, _args(data_file, tmp_path / "l.json", "--budget", "5", "--stat", "quantiles",
                                  "--q", "0.1,0.9"))
    assert out["names"] == ["w[0] q0.1", "w[0] q0.9", "w[1] q0.1", "w[1] q0.9", "w[2] q0.1", "w[2] q0.9"]
    assert out["proven_sensitivity"] == pytest.approx(6 * D, rel=1e-12)          # k m (order statistics)
    out = _run_json(capsys, _args(data_file, tmp_path / "l.json", "--stat", "probability", "--threshold", "0",
                                  "--width", "0.25"))
    assert out["names"][0] == "P(w[0] > 0)"
    assert out["proven_sensitivity"] == pytest.approx(math.sqrt(3) / 0.25 * D, rel=1e-12)
    ledger = tmp_path / "l.json"
    counters.update(noise=0, chain=0)
    for extra, match in [(["--stat", "quantiles"], "--q"), (["--stat", "quantiles", "--q", "0.5,1.5"], "(0, 1)"),
                         (["--stat", "median", "--q", "0.5"], "--q"), (["--stat", "probability"], "--threshold"),
                         (["--stat", "probability", "--threshold", "0", "--width", "0"], "--width"),
                         (["--stat", "median", "--coords", "w[0]"], "do not apply")]:
        _refused(capsys, counters, _args(data_file, ledger, *extra, eps="0.05"), ledger, match)


def test_proposition_3_10_route_when_tighter(data_file, tmp_path, capsys):
    C, dt, gf = 0.01, 1e-6, 0.02
    out = _run_json(capsys, _args(data_file, tmp_path / "l.json", "--budget", "2", "--budget-delta", "1e-5",
                                  "--concentration", str(C), "--concentration-delta", str(dt),
                                  "--posterior-sensitivity", str(gf)))
    assert out["source"] == "004 Proposition 3.10"
    assert out["proven_sensitivity"] == pytest.approx(2 * C + gf, rel=1e-12)
    assert out["delta"] == pytest.approx(2 * dt - dt ** 2, rel=1e-12)
    assert {r["source"].split(" + ")[0] for r in out["routes"]} == {"004 Proposition 3.7", "004 Proposition 3.10"}


def _refused(capsys, counters, args, ledger, match):
    before = ledger.read_bytes() if ledger.exists() else None
    rc = main(args)
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert match in err, err
    assert counters["noise"] == 0 and counters["chain"] == 0
    after = ledger.read_bytes() if ledger.exists() else None
    assert after == before


def test_refusals(data_file, tmp_path, capsys, counters):
    ledger = tmp_path / "l.json"
    # a ledger with budget 0.5, already holding one release
    from bayesdp.budget.ledger import Ledger

    led = Ledger.open(ledger, budget=0.5, dataset="d.npz")
    with led.reserve(0.4, 0.0, "test", "unit") as res:
        res.mark_drawn()
        res.commit({"values": [0.0]})
    _refused(capsys, counters, _args(data_file, ledger), ledger, "exceeds the budget")
    _refused(capsys, counters, _args(data_file, ledger, eps="0"), ledger, "epsilon")
    _refused(capsys, counters, _args(data_file, ledger, eps="-1"), ledger, "epsilon")
    f = tmp_path / "stat.py"
    f.write_text("def first(s):\n    return s[\"w\"][0]\n")
    _refused(capsys, counters, _args(data_file, ledger, "--stat", f"{f}:first", eps="0.05"), ledger,
             "no declared Lipschitz constant")
    # step 1.0 > 2 / total_smoothness = 2 / (4 + 40/4): the gradient step does not contract
    _refused(capsys, counters, _args(data_file, ledger, "--step-size", "1.0", eps="0.05"), ledger,
             "no coupling bound is proven")
    _refused(capsys, counters, _args(data_file, ledger, "--clip-norm", "0.5", "--step-size", "0.01", eps="0.05"), ledger,
             "no coupling bound is proven")
    # missing ledger without --budget: nothing created
    missing = tmp_path / "missing.json"
    _refused(capsys, counters, _args(data_file, missing, eps="0.05"), missing, "does not exist")
    assert not missing.exists()


@pytest.mark.parametrize("content", [b"{not json", b'{"format": "someone-else", "version": 1}', b"",
                                     b'{"format": "bayesdp-ledger", "version": 1, "budget": {"epsilon": 1, '
                                     b'"delta": 0}, "releases": [{"id": 1}]}'])
def test_corrupt_or_foreign_ledger(data_file, tmp_path, capsys, counters, content):
    ledger = tmp_path / "l.json"
    ledger.write_bytes(content)
    _refused(capsys, counters, _args(data_file, ledger, "--budget", "1"), ledger, "ledger")
