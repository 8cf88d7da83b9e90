"""CLI and Python API of the seed mechanisms: JSON shape, source labels, best route, one-line errors."""

import json
import math

import pytest

import bayesdp
from bayesdp.cli import main
from bayesdp.theorems import hockey_stick as H

PNSGD = ["--noise-scale", "2", "--lipschitz", "1", "--smoothness", "0.5", "--strong-convexity", "0",
         "--step-size", "0.5", "--diameter", "1", "--data-size", "40"]


def _json(capsys, argv):
    assert main(argv) == 0
    out = capsys.readouterr().out
    return json.loads(out)


def test_mixing_json(capsys):
    d = _json(capsys, ["bound", "mixing", "--epsilon-in", "1", "--delta-in", "1e-5", "--condition", "ultra-mixing",
                       "--gamma", "0.1", "--delta", "1e-6", "--json"])
    srcs = [c["source"] for c in d["certificates"]]
    assert srcs == ["002 Theorem 1(4)", "002 Theorem 1(3)", "002 Theorem 1(1)"]
    assert d["best"]["source"] == "002 Theorem 1(4)"
    # query delta >= delta' = 4.31e-7: epsilon is (at most) eps' = log(1 + 0.1 (e - 1))
    assert d["epsilon"] <= math.log1p(0.1 * math.expm1(1)) + 1e-12
    assert d["best"]["constants"]["epsilon_out"] == pytest.approx(0.158565079, rel=1e-8)
    # by epsilon = eps': returns delta'
    d = _json(capsys, ["bound", "mixing", "--epsilon-in", "1", "--delta-in", "1e-5", "--condition", "ultra-mixing",
                       "--gamma", "0.1", "--epsilon", str(math.log1p(0.1 * math.expm1(1))), "--json"])
    assert d["delta"] == pytest.approx(4.31091497e-7, rel=1e-6)


def test_ou_json_mse(capsys):
    d = _json(capsys, ["bound", "ou", "--theta", "1", "--rho", "1", "--time", "0.5", "--sensitivity", "1",
                       "--dimension", "3", "--f-norm", "1", "--delta", "1e-5", "--json"])
    c = d["best"]
    assert c["source"] == "002 Corollary 7"
    assert c["rdp"][1] == [2.0, pytest.approx(2 * 0.290988353, rel=1e-8)]
    e = math.exp(-0.5)
    assert c["constants"]["mse_ou"] == pytest.approx((1 - e) ** 2 + 3 * (1 - e ** 2), rel=1e-12)
    assert c["constants"]["mse_gaussian"] == pytest.approx(3 * (math.e - 1), rel=1e-12)


def test_pnsgd_routes_and_best(capsys):
    d = _json(capsys, ["bound", "pnsgd", *PNSGD, "--index", "20", "--epsilon", "1", "--json"])
    by = {c["source"]: c for c in d["certificates"]}
    assert set(by) == {"003 Theorem 4", "003 Proposition 1", "002 Theorem 5", "001 Theorem 3.4 via SEEDS §5"}
    assert by["003 Theorem 4"]["delta"] == pytest.approx(1.497387e-19, rel=1e-6)
    assert by["003 Proposition 1"]["delta"] == pytest.approx(7.438546e-05, rel=1e-6)
    assert by["002 Theorem 5"]["rdp"][1][1] == pytest.approx(2 * 1 / (2 * 20), rel=1e-12)
    assert d["best"]["source"] == "003 Theorem 4"
    assert d["delta"] == min(c["delta"] for c in d["certificates"])
    # 003 Proposition 1 is 002 Theorem 5 converted (SEEDS §5): Mironov conversion of the same kappa
    kappa = by["003 Proposition 1"]["constants"]["kappa"]
    assert kappa == pytest.approx(by["002 Theorem 5"]["constants"]["eps_i"], rel=1e-12)
    assert by["002 Theorem 5"]["delta"] <= by["003 Proposition 1"]["delta"]


def test_pnsgd_random_stop_and_laplace(capsys):
    d = _json(capsys, ["bound", "pnsgd", *PNSGD, "--random-stop", "--epsilon", "1", "--json"])
    assert d["best"]["source"] == "003 Theorem 5"
    assert d["delta"] == pytest.approx(0.00363480927, rel=1e-6)
    lap = ["--noise", "laplace", "--noise-scale", "1", "--lipschitz", "1", "--smoothness", "0.5",
           "--strong-convexity", "0", "--step-size", "0.5", "--diameter", "1", "--data-size", "40",
           "--dimension", "1"]
    d = _json(capsys, ["bound", "pnsgd", *lap, "--index", "20", "--epsilon", "1", "--json"])
    assert d["best"]["source"] == "003 Theorem 3"
    assert d["delta"] == pytest.approx(3.11264e-9, rel=1e-5)
    d = _json(capsys, ["bound", "pnsgd", *lap, "--index", "40", "--epsilon", "1", "--json"])
    assert d["delta"] == pytest.approx(0.393469340, rel=1e-8)
    # --delta query: epsilon such that delta(epsilon) <= query
    d = _json(capsys, ["bound", "pnsgd", *lap, "--index", "20", "--delta", "1e-5", "--json"])
    assert H.pnsgd_laplace_delta(d["epsilon"], 1, 1, 1, 0.5, 1, 40, 20) <= 1e-5


def test_pabi_and_noisy_sgd_json(capsys):
    d = _json(capsys, ["bound", "pabi", "--case", "convex-lipschitz", "--noise-scale", "1", "--diameter", "1",
                       "--num-steps", "100", "--step-size", "0.1", "--lipschitz", "1", "--delta", "1e-5", "--json"])
    assert d["best"]["source"] == "001 Theorem 3.4"
    H100 = sum(1 / t for t in range(1, 101))
    assert d["best"]["rdp"][1][1] == pytest.approx(2.0 / 2 * (1 / 100 + 0.04 * H100), rel=1e-12)
    d = _json(capsys, ["bound", "noisy-sgd", "--lipschitz", "1", "--smoothness", "0.05", "--diameter", "0.05",
                       "--step-size", "0.05", "--noise-scale", "4", "--data-size", "1000", "--batch-size", "2",
                       "--num-steps", "1000", "--delta", "1e-5", "--json"])
    assert d["best"]["source"] == "001 Theorem 5.4"
    assert d["best"]["rdp"][-1][1] is None        # alpha = 64 > alpha* = 6.2: no bound


def test_python_api():
    r = bayesdp.bound("pnsgd", noise_scale=2, lipschitz=1, smoothness=0.5, strong_convexity=0, step_size=0.5,
                      diameter=1, data_size=40, index=39, epsilon=0.5)
    assert r.value() == pytest.approx(5.684491e-02, rel=1e-6)


BAD = [
    ["bound", "mixing", "--epsilon-in", "1", "--delta-in", "1e-5", "--condition", "doeblin", "--gamma", "1.5",
     "--delta", "1e-6"],
    ["bound", "mixing", "--epsilon-in", "1", "--delta-in", "1e-5", "--condition", "nope", "--gamma", "0.1",
     "--delta", "1e-6"],
    ["bound", "mixing", "--epsilon-in", "1", "--condition", "doeblin", "--gamma", "0.1", "--delta", "1e-6"],
    ["bound", "ou", "--theta", "1", "--rho", "1", "--time", "0", "--sensitivity", "1", "--delta", "1e-5"],
    ["bound", "ou", "--theta", "-1", "--rho", "1", "--time", "1", "--sensitivity", "1", "--delta", "1e-5"],
    ["bound", "ou", "--theta", "1", "--rho", "1", "--time", "1", "--sensitivity", "1", "--f-norm", "1",
     "--delta", "1e-5"],
    # Fig. 3 parameters: rho > beta (row 21), never from the CLI
    ["bound", "pnsgd", "--noise-scale", "1", "--lipschitz", "1", "--smoothness", "0.3", "--strong-convexity", "0.4",
     "--step-size", "0.7", "--diameter", "1", "--data-size", "40", "--epsilon", "1"],
    ["bound", "pnsgd", *PNSGD, "--index", "41", "--epsilon", "1"],
    ["bound", "pnsgd", *PNSGD, "--index", "0", "--epsilon", "1"],
    ["bound", "pnsgd", "--noise", "laplace", *PNSGD, "--random-stop", "--epsilon", "1"],
    # 003 Theorem 3 is one-dimensional (Lemma 1): the dimension must be declared and equal 1
    ["bound", "pnsgd", "--noise", "laplace", *PNSGD, "--index", "3", "--epsilon", "1"],
    ["bound", "pnsgd", "--noise", "laplace", *PNSGD, "--index", "3", "--dimension", "2", "--epsilon", "1"],
    ["bound", "pnsgd", *PNSGD, "--random-stop", "--index", "3", "--epsilon", "1"],
    ["bound", "pnsgd", *PNSGD[:-2], "--epsilon", "1"],
    ["bound", "pabi", "--case", "convex-smooth", "--noise-scale", "1", "--diameter", "1", "--num-steps", "10",
     "--step-size", "1", "--smoothness", "5", "--delta", "1e-5"],
    ["bound", "pabi", "--case", "convex-weakly-smooth", "--noise-scale", "1", "--diameter", "1", "--num-steps", "10",
     "--step-size", "0.1", "--holder-exponent", "1", "--holder-constant", "1", "--delta", "1e-5"],
    ["bound", "pabi", "--case", "convex-lipschitz", "--noise-scale", "0", "--diameter", "1", "--num-steps", "10",
     "--step-size", "0.1", "--lipschitz", "1", "--delta", "1e-5"],
    ["bound", "noisy-sgd", "--lipschitz", "1", "--holder-exponent", "0.5", "--holder-constant", "2", "--diameter",
     "1", "--step-size", "0.01", "--noise-scale", "2", "--data-size", "400", "--batch-size", "100",
     "--num-steps", "100", "--delta", "1e-5"],
    ["bound", "noisy-sgd", "--lipschitz", "1", "--smoothness", "0.05", "--diameter", "0.05", "--step-size", "0.05",
     "--noise-scale", "4", "--data-size", "1000", "--batch-size", "2", "--num-steps", "1000",
     "--batching", "poisson", "--delta", "1e-5"],
    ["bound", "noisy-sgd", "--lipschitz", "1", "--diameter", "1", "--step-size", "0.01", "--noise-scale", "2",
     "--data-size", "400", "--batch-size", "10", "--num-steps", "100", "--delta", "1e-5"],
]


#: what each refusal in BAD must say: the parameter, its value and the condition (or the missing flag)
NEEDLES = [
    "error: gamma = 1.5 must be in [0, 1]",
    "argument --condition: invalid choice: 'nope'",
    "error: --delta-in is required",
    "error: time = 0 must be > 0",
    "error: theta = -1 must be > 0",
    "error: --dimension is required to report the MSE",
    "error: strong_convexity = 0.4 must be <= smoothness = 0.3",
    "error: index = 41 must be in 1..data_size = 40",
    "error: index = 0 must be an integer >= 1",
    "error: --random-stop is covered only for --noise gaussian",
    "error: --dimension is required with --noise laplace",
    "error: dimension = 2 is not covered with --noise laplace",
    "error: --index does not apply with --random-stop",
    "error: --data-size is required",
    "error: step_size = 1 must be <= 2/smoothness = 0.4 for row (4)",
    "error: holder_exponent = 1 must be in [0, 1) for row (2)",
    "error: noise_scale = 0 must be > 0",
    "error: batch_size = 100 gives b/n = 0.25; 001 Theorem 5.2 needs b/n < 1/5",
    "error: batching = 'poisson': 001 Theorem 5.4 needs fixed-size batches",
    "error: --holder-exponent/--holder-constant (convex weakly smooth loss, 001 Theorem 5.2) or --smoothness",
]


@pytest.mark.parametrize("argv, needle", list(zip(BAD, NEEDLES, strict=True)), ids=range(len(BAD)))
def test_one_line_errors(capsys, argv, needle):
    assert main(argv + ["--json"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    lines = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:")
    assert needle in lines[0], lines[0]
