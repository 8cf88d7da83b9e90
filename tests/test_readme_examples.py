"""The README's console examples and the fast example scripts stay runnable and exact."""

import math
import os
import re
import runpy
import shlex

import pytest
from scipy import optimize, stats

from bayesdp.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def console_blocks():
    text = open(os.path.join(ROOT, "README.md")).read()
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        lines = block.splitlines()
        cmd, out = lines[0], lines[1:]
        assert cmd.startswith("$ bayesdp ")
        yield shlex.split(cmd[2:])[1:], "\n".join(out)


@pytest.mark.parametrize("argv,expected", list(console_blocks()))
def test_readme_console_output(capsys, argv, expected):
    assert main(argv) == 0
    assert capsys.readouterr().out.rstrip("\n") == expected.rstrip("\n")


def test_privacy_calculator_example(capsys):
    runpy.run_path(os.path.join(ROOT, "examples", "privacy_calculator.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "four chains: mu = 1.9950" in out


def _gdp_epsilon(mu, delta=1e-5):
    """epsilon of mu-GDP at delta: Phi(-e/mu + mu/2) - e^e Phi(-e/mu - mu/2) = delta (Dong-Roth-Su Cor. 2.13)."""
    return optimize.brentq(lambda e: stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2)
                           - delta, 1e-6, 100.0, xtol=1e-14)


#: the certified norm: the declared R = 1 inflated by 1 + 8 * 2^-24 for float32 rows (domain.py)
_R = 1 + 8 * 2.0 ** -24


def _ula_final_mu():
    """examples/sample_logistic.py's ULA: m = 2000 records, step 1e-4, 2000 steps, 4 chains.  Prior N(0, I) gives
    strong convexity 1, the logistic Hessian adds <= R^2/4 per record: L = 1 + 2000 R^2 / 4; records' gradients
    differ by 2R.  Bok-Su-Altschuler's last draw: Delta sqrt(gamma/2) sqrt((1+r)/(1-r) (1-r^n)/(1+r^n)) with
    r = max(|1 - gamma|, |1 - gamma L|); four chains compose to twice that."""
    g, n, L, D = 1e-4, 2000, 1 + 2000 * _R * _R / 4, 2 * _R
    r = max(abs(1 - g), abs(1 - g * L))
    return 2 * D * math.sqrt(g / 2) * math.sqrt((1 + r) / (1 - r) * (1 - r ** n) / (1 + r ** n))


#: examples/sample_logistic.py's SGLD: clipped gradients (0.1) of a batch of 100 from 2000 move by
#: (2000/100) * 2 * 0.1 = 4 per step: path mu = 4 sqrt(1e-4 * 2000 / 2) per chain, twice that for four chains
_SGLD_PATH_MU = 2 * 4 * math.sqrt(1e-4 * 2000 / 2)
#: examples/release_logistic.py: prior N(0, 0.5^2 I) is 4-strongly convex, records' gradients differ by 2R and the
#: step 0.005 <= 2/(4 + L) contracts at 1 - 4 gamma, so the coupling distance is 2R/4 and three coordinates have
#: L1 sensitivity sqrt(3) * R/2; the Laplace scale at epsilon 1 is the same (4 significant digits)
_RELEASE_L1 = math.sqrt(3) * _R / 2


@pytest.mark.parametrize("script,expect", [
    ("sample_logistic.py", [f"ula-final: epsilon = {_gdp_epsilon(_ula_final_mu()):.4g} at delta = 1e-05 for 4 "
                            "released chains (Bok-Su-Altschuler",
                            f"sgld-final: epsilon = {_gdp_epsilon(_SGLD_PATH_MU):.4g} at delta = 1e-05 for 4 "
                            "released chains (GDP composition of the path"]),
    ("release_logistic.py", [f"004 Proposition 3.7 + coupling (LITERATURE §7.1): epsilon 1, L1 sensitivity "
                             f"{_RELEASE_L1:.4g}, Laplace scale {_RELEASE_L1:.4g}", "remaining budget: epsilon 2 in"]),
])
def test_public_api_example_scripts_run(capsys, monkeypatch, script, expect):
    """The Python-API examples (public names only) run and print their certificate / release."""
    monkeypatch.setattr("sys.argv", [script])            # no command-line arguments (pytest's are not theirs)
    runpy.run_path(os.path.join(ROOT, "examples", script), run_name="__main__")
    out = capsys.readouterr().out
    for text in expect:
        assert text in out, out


def test_examples_use_only_the_public_api():
    """examples/ import bayesdp's top level, bayesdp.models and public submodules, never internals."""
    internal = re.compile(r"from bayesdp\.(analysis|release|samplers)\b|import bayesdp\.(analysis|release|samplers)\b")
    for name in ("sample_logistic.py", "release_logistic.py"):
        text = open(os.path.join(ROOT, "examples", name)).read()
        assert not internal.search(text), name
