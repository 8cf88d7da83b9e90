"""The README's console examples and the fast example scripts stay runnable and exact."""

import os
import re
import runpy
import shlex

import pytest

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


@pytest.mark.parametrize("script,expect", [
    ("sample_logistic.py", ["ula-final: epsilon =", "sgld-final: epsilon ="]),
    ("release_logistic.py", ["004 Proposition 3.7", "remaining budget: epsilon 2 in"]),
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
