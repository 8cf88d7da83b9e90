"""`bayesdp bound`: JSON shape, the issue's done-when command, and one-line errors."""

import json
import math

import pytest

from bayesdp.cli import main
from exact import gdp_epsilon, lq_final_mu

REQUIRED_CERT_KEYS = {"source", "valid", "epsilon", "delta", "rdp", "gdp_mu", "reason"}
ALPHAS = [1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_done_when_ula_final(capsys):
    rc, out, err = run(capsys, "bound", "ula-final", "--strong-convexity", "1", "--smoothness", "1",
                       "--grad-bound", "0.5", "--step-size", "0.01", "--num-steps", "10000",
                       "--delta", "1e-5", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert {"mechanism", "parameters", "delta", "epsilon", "best", "certificates"} <= set(d)
    assert d["mechanism"] == "ula-final" and d["delta"] == 1e-5
    srcs = {c["source"]: c for c in d["certificates"]}
    thm = srcs["004 Theorem 5.2"]
    assert REQUIRED_CERT_KEYS <= set(thm)
    # supported constant C3* = 4 c^2 ((L+1)/a + 1)^2, a = mu - gamma L^2/2 (independent formula)
    a = 1 - 0.01 / 2
    C3 = 4 * 0.25 * (2 / a + 1) ** 2
    assert [r[0] for r in thm["rdp"]] == ALPHAS
    assert thm["rdp"][1][1] == pytest.approx(2 * C3 / 4, rel=1e-12)
    assert thm["valid"] is True and thm["reason"] is None
    exact = gdp_epsilon(lq_final_mu(1.0, 0.5, 0.01, 10000), 1e-5)
    assert d["epsilon"] >= exact
    assert d["best"]["epsilon"] == d["epsilon"]
    # the uncertified estimate is listed but never chosen
    est = [c for c in d["certificates"] if not c["certified"]]
    assert est and d["best"]["certified"]


MECH_ARGS = {
    "ula-final": ["--strong-convexity", "1", "--smoothness", "2", "--grad-bound", "1", "--step-size", "0.1",
                  "--num-steps", "100"],
    "ula-path": ["--grad-diff", "1", "--step-size", "0.01", "--num-steps", "1000"],
    "sgld-final": ["--strong-convexity", "1", "--smoothness", "1", "--grad-bound", "1", "--step-size", "0.001",
                   "--num-steps", "10000", "--batch-size", "100", "--data-size", "1000", "--linear-v"],
    "sgld-path": ["--grad-diff", "1", "--step-size", "0.01", "--num-steps", "1000", "--batch-size", "10",
                  "--data-size", "100"],
    "girsanov-path": ["--grad-diff", "1", "--time", "2"],
    "girsanov-final": ["--smoothness", "1", "--grad-diff", "1", "--coupling-bound", "2", "--time", "5"],
    "mc-estimate": ["--concentration", "0.5", "--concentration-delta", "0.01", "--posterior-sensitivity", "0.2"],
}
EXPECTED_C = {  # (route, C): alpha*C/4 at alpha=2 is C/2; independent closed forms from SEEDS §4
    "ula-final": ("004 Theorem 5.2", 90.25), "ula-path": ("004 Theorem 5.4", 10.0),
    "sgld-final": ("004 Theorem 5.7", 4 / 100 ** 2 * (2 / (1 - 0.0005) + 1) ** 2),
    "sgld-path": ("004 Theorem 5.8", 0.1), "girsanov-path": ("004 Proposition 4.5", 2.0),
    "girsanov-final": ("004 Proposition 4.6", (2 * 2 + 1) ** 2),
}
BEST_C = {"ula-final": 4 * 10.0, "girsanov-final": 5.0,  # the path route (data processing) wins there
          # optimised window (SEEDS §4.16(j)): min_tau C2(tau) = 4 beta C (L C + c_off), with the coupling
          # C = 2c/(s mu) = 0.02 (exact contraction) and c_off = 2c/s = 0.02: tau* = 0.5 = 500 steps exactly
          "sgld-final": 4 * 0.02 * (1 * 0.02 + 0.02)}


@pytest.mark.parametrize("mech", sorted(MECH_ARGS))
def test_every_mechanism_answers(capsys, mech):
    q = ["--epsilon", "1.0"] if mech == "mc-estimate" else ["--delta", "1e-5"]
    rc, out, err = run(capsys, "bound", mech, *MECH_ARGS[mech], *q, "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["best"] is not None
    for c in d["certificates"]:
        assert REQUIRED_CERT_KEYS <= set(c)
    if mech in EXPECTED_C:
        src, C = EXPECTED_C[mech]
        route = next(c for c in d["certificates"] if c["source"] == src)
        assert route["rdp"][1][1] == pytest.approx(C / 2, rel=1e-9)
        best_C = BEST_C.get(mech, C)
        assert d["best"]["rdp"][1][1] == pytest.approx(best_C / 2, rel=1e-9)
    if mech == "mc-estimate":
        assert d["delta"] == pytest.approx(0.0199)
    # readable table
    rc, out, err = run(capsys, "bound", mech, *MECH_ARGS[mech], *q)
    assert rc == 0 and "best" in out


BAD = [
    ["bound", "nope", "--delta", "1e-5"],
    ["bound", "ula-final", "--strong-convexity", "-1", "--smoothness", "1", "--grad-bound", "1",
     "--step-size", "0.1", "--num-steps", "10", "--delta", "1e-5"],
    ["bound", "ula-final", "--strong-convexity", "1", "--smoothness", "1", "--grad-bound", "1",
     "--step-size", "3", "--num-steps", "10", "--delta", "1e-5"],
    ["bound", "ula-final", "--strong-convexity", "2", "--smoothness", "1", "--grad-bound", "1",
     "--step-size", "0.1", "--num-steps", "10", "--delta", "1e-5"],
    ["bound", "ula-path", "--grad-diff", "1", "--step-size", "0.1", "--num-steps", "10", "--delta", "0"],
    ["bound", "ula-path", "--grad-diff", "1", "--step-size", "0.1", "--num-steps", "10", "--delta", "1"],
    ["bound", "ula-path", "--grad-diff", "1", "--step-size", "0.1", "--num-steps", "10", "--delta", "nan"],
    ["bound", "ula-path", "--grad-diff", "1", "--step-size", "0.1", "--num-steps", "10.5", "--delta", "1e-5"],
    ["bound", "ula-path", "--grad-diff", "1", "--step-size", "0.1", "--num-steps", "10"],
    ["bound", "ula-path", "--grad-diff", "1", "--step-size", "0.1", "--num-steps", "10", "--delta", "1e-5",
     "--epsilon", "1"],
    ["bound", "ula-path", "--step-size", "0.1", "--num-steps", "10", "--delta", "1e-5"],
    ["bound", "ula-path", "--grad-diff", "1", "--step-size", "-0.1", "--num-steps", "10", "--delta", "1e-5"],
    ["bound", "ula-path", "--grad-diff", "1", "--step-size", "0.1", "--num-steps", "10", "--epsilon", "-1"],
    ["bound", "sgld-path", "--grad-diff", "1", "--step-size", "0.1", "--num-steps", "10", "--batch-size", "20",
     "--data-size", "10", "--delta", "1e-5"],
    ["bound", "sgld-final", "--strong-convexity", "1", "--smoothness", "1", "--grad-bound", "1",
     "--step-size", "0.1", "--num-steps", "10", "--batch-size", "0", "--data-size", "10", "--delta", "1e-5"],
    ["bound", "ula-final", "--batch-size", "3", "--delta", "1e-5"],
    # batch larger than the data: only possible with replacement, which no route covers (review finding 1)
    ["bound", "sgld-final", "--strong-convexity", "1", "--smoothness", "1", "--grad-bound", "1",
     "--step-size", "0.1", "--num-steps", "100", "--batch-size", "10", "--data-size", "5", "--delta", "1e-5"],
    ["bound", "mc-estimate", "--concentration", "0.5", "--concentration-delta", "1.5",
     "--posterior-sensitivity", "0.2", "--epsilon", "1"],
    ["bound", "mc-estimate", "--concentration", "0.5", "--concentration-delta", "0.1",
     "--posterior-sensitivity", "0.2", "--delta", "1e-5"],
    ["bound", "girsanov-final", "--smoothness", "1", "--grad-diff", "1", "--time", "5", "--delta", "1e-5"],
    ["bound", "ula-path", "--grad-diff", "inf", "--step-size", "0.1", "--num-steps", "10", "--delta", "1e-5"],
]


#: what each refusal in BAD must say (the parameter, the value and the violated condition)
NEEDLES = [
    "argument MECHANISM: invalid choice: 'nope'",
    "error: strong_convexity = -1 must be > 0",
    "error: step_size = 3 must be in (0, 2/L) = (0, 2) for the gradient step of K to contract",
    "error: smoothness = 1 < strong_convexity = 2: an L-smooth mu-strongly convex K needs mu <= L",
    "error: delta = 0 must be in (0, 1)",
    "error: delta = 1 must be in (0, 1)",
    "argument --delta: 'nan' is not a number",
    "argument --num-steps: '10.5' is not an integer",
    "one of the arguments --delta --epsilon is required",
    "argument --epsilon: not allowed with argument --delta",
    "error: --grad-diff is required",
    "error: step_size = -0.1 must be > 0",
    "error: epsilon = -1 must be > 0",
    "error: batch_size = 20 must be <= data_size = 10",
    "error: batch_size = 0 must be an integer >= 1",
    "unrecognized arguments: --batch-size 3",
    "error: batch_size = 10 must be <= data_size = 5",
    "error: concentration_delta = 1.5 must be in [0, 1)",
    "error: 004 Proposition 3.10 needs exactly one of epsilon (to calibrate the Laplace scale) and noise_scale",
    "error: --coupling-bound is required",
    "error: grad_diff = inf must be finite",
]


@pytest.mark.parametrize("argv, needle", list(zip(BAD, NEEDLES, strict=True)),
                         ids=[" ".join(a[1:4]) + f"#{i}" for i, a in enumerate(BAD)])
def test_bad_input_one_line_exit_2(capsys, argv, needle):
    rc, out, err = run(capsys, *argv, "--json") if "--json" not in argv and argv[1] != "nope" else run(capsys, *argv)
    assert rc == 2
    assert out == ""  # never a certificate
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert needle in err, err


def test_step_size_error_names_the_condition(capsys):
    rc, out, err = run(capsys, *BAD[2])
    assert "step_size = 3" in err and "2/L" in err


def test_python_api_matches_cli(capsys):
    import bayesdp

    r = bayesdp.bound("ula-path", grad_diff=1.0, step_size=0.01, num_steps=1000, delta=1e-5)
    rc, out, _ = run(capsys, "bound", "ula-path", "--grad-diff", "1", "--step-size", "0.01", "--num-steps",
                     "1000", "--delta", "1e-5", "--json")
    assert json.loads(out)["epsilon"] == pytest.approx(r.value())
    assert math.isfinite(r.value())
