"""The test tiers (tests/conftest.py ``SLOW``, docs/testing.md): every slow-tier entry names a test that exists,
so that a renamed test cannot silently leave the list (and the README's command grow past 5 minutes)."""

import ast
import os
import subprocess
import sys

from conftest import SLOW, _drop_jax_caches

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_slow_entry_names_a_collected_test():
    files = sorted({k.split("::", 1)[0] for k in SLOW})
    _drop_jax_caches()       # the collecting subprocess imports every slow module (~0.4 GB): make room first
    # from this process's folder and sys.path (the checkout, or CI's installed wheel), ids relative to ROOT
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-n", "0", "-m", "slow",
                        "--rootdir", ROOT, "-c", os.path.join(ROOT, "pyproject.toml"),
                        *(os.path.join(ROOT, f) for f in files)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    collected = {line.strip() for line in r.stdout.splitlines() if "::" in line}
    assert collected, r.stdout + r.stderr
    missing = [k for k in SLOW if k not in collected and not any(c.startswith(k + "[") for c in collected)]
    assert missing == []


def test_every_slow_entry_names_a_test_function():
    """The fast tier's half of the check above (which collects every slow module in a subprocess, 0.4 GB beside the
    two workers: the fast tier's memory peak, so it runs in the slow tier): each entry's file defines its test
    function (parsed, not imported); parameter ids are left to the slow check."""
    missing = []
    for key in SLOW:
        path, name = key.split("::", 1)
        name = name.split("[", 1)[0].split("::")[-1]
        with open(os.path.join(ROOT, path)) as f:
            tree = ast.parse(f.read())
        names = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if name not in names:
            missing.append(key)
    assert len(SLOW) > 50 and missing == []
