"""The documentation's examples run: the ```python blocks of README.md and docs/*.md, the console
examples (``$ bayesdp ...`` followed by its output) of docs/*.md, and the ``>>>`` examples in the
docstrings of every module of the API reference (docs/hooks.py generates that reference).

Python blocks of one page run in order in one namespace, in an empty directory holding ``d.npz``
(a small logistic-regression data set, rows of norm <= 1, labels 0/1), with ``np``, ``jax``, a data
set ``X, y`` and ``model`` (the built-in logistic model) already defined, so that API listings such
as the one in docs/samplers.md run as written.  A block preceded by the line
``<!-- docs-test: skip REASON -->`` is not run (REASON says why).
"""

import doctest
import importlib
import os
import re
import shlex
import sys

import numpy as np
import pytest

from bayesdp.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
PAGES = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(DOCS) if f.endswith(".md"))
FENCE = re.compile(r"(?P<before>[^\n]*)\n```(?P<lang>[a-z]*)[^\n]*\n(?P<body>.*?)\n```", re.S)


def blocks(page: str, lang: str):
    text = "\n" + open(os.path.join(ROOT, page)).read()
    for m in FENCE.finditer(text):
        if m["lang"] == lang and not m["before"].strip().startswith("<!-- docs-test: skip"):
            yield m["body"]


def _data(m=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
    y = (rng.random(m) < 1 / (1 + np.exp(-X @ np.ones(d)))).astype(np.float32)
    return X.astype(np.float32), y


@pytest.mark.parametrize("page", [p for p in PAGES if list(blocks(p, "python"))])
def test_python_blocks_run(page, tmp_path, monkeypatch, capsys):
    import jax

    from bayesdp.models import logistic

    X, y = _data()
    np.savez(tmp_path / "d.npz", X=X, y=y)
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__", "np": np, "jax": jax, "X": X, "y": y, "model": logistic}
    for i, code in enumerate(blocks(page, "python")):
        try:
            exec(compile(code, f"{page} python block {i + 1}", "exec"), namespace)
        except Exception as exc:  # name the page and block in the failure
            pytest.fail(f"{page}, python block {i + 1}: {type(exc).__name__}: {exc}")


def console_examples():
    for page in PAGES[1:]:  # README.md's console examples: tests/test_readme_examples.py
        for body in blocks(page, "console"):
            lines = body.splitlines()
            if lines and lines[0].startswith("$ bayesdp "):
                yield page, shlex.split(lines[0][2:])[1:], "\n".join(lines[1:])


@pytest.mark.parametrize("page,argv,expected", list(console_examples()))
def test_console_examples_print_what_the_docs_show(page, argv, expected, capsys):
    assert main(argv) == 0
    assert capsys.readouterr().out.rstrip("\n") == expected.rstrip("\n")


def reference_modules():
    sys.path.insert(0, DOCS)
    try:
        import hooks
    finally:
        sys.path.remove(DOCS)
    return hooks.public_modules()


@pytest.mark.parametrize("name", reference_modules())
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} fail (above)"
