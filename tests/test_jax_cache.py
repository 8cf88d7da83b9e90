"""JAX's persistent compilation cache of the ``bayesdp`` command (bayesdp/jax_cache.py, issue 24 item 1).

The tests run the command in subprocesses with the cache in a tmp folder (the suite never writes to the user's
cache: tests/conftest.py sets BAYESDP_JAX_CACHE=0 for everything else), and check that no data record's bytes
reach the cache: a positive control shows the same search finds data that a program closes over.
"""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bayesdp.jax_cache import _private_dir, cache_dir, disabled_by_env
from bayesdp.errors import BayesDPError

from _slots import heavy_subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args, **kwargs):
    """``subprocess.run``, holding the session's slot for a heavy subprocess (tests/_slots.py)."""
    with heavy_subprocess():
        return subprocess.run(*args, **kwargs)


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_") and k != "BAYESDP_JAX_CACHE"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)      # bayesdp from where this process imports it (checkout or wheel)
    env["JAX_PLATFORMS"] = "cpu"
    env.update(extra)
    return env


def _entries(folder: Path) -> list[bytes]:
    """Every cache entry, decompressed as JAX wrote it (zstd or zlib)."""
    from jax._src.compilation_cache import decompress_executable

    files = [p for p in folder.rglob("*") if p.is_file()]
    out = []
    for p in files:
        raw = p.read_bytes()
        try:
            out.append(decompress_executable(raw))
        except Exception:  # noqa: BLE001 - not a compressed entry: searched as it is
            out.append(raw)
    return out


def _record_patterns(X: np.ndarray) -> list[bytes]:
    """Byte patterns of the data: each record (row) and each column, as float32 and float64."""
    pats = []
    for dt in (np.float32, np.float64):
        A = X.astype(dt)
        pats += [A[i].tobytes() for i in range(A.shape[0])]
        pats += [np.ascontiguousarray(A[:, j]).tobytes() for j in range(A.shape[1])]
    return pats


def _distinctive_data(m=40, d=3):
    rng = np.random.default_rng(20261125)
    X = rng.uniform(-1.0, 1.0, size=(m, d))
    X = (0.9 * X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)   # ||x|| <= 1: in the domain
    y = (rng.uniform(size=m) < 0.5).astype(np.float32)
    return X, y


_CLOSE_OVER = """
import sys, numpy as np, jax, jax.numpy as jnp
from bayesdp import enable_compilation_cache
enable_compilation_cache(sys.argv[1])
X = jnp.asarray(np.load(sys.argv[2])["X"])
print(float(jax.jit(lambda w: jnp.sum(X @ w))(jnp.ones(X.shape[1]))))
"""


@pytest.mark.parametrize("sampler", [["--sampler", "ula"], ["--sampler", "sgld", "--batch-size", "8"]],
                         ids=["ula", "sgld"])
def test_no_data_record_reaches_the_cache(tmp_path, sampler):
    X, y = _distinctive_data()
    data = tmp_path / "d.npz"
    np.savez(data, X=X, y=y)
    pats = _record_patterns(X)

    cache = tmp_path / "cache"
    r = _run([sys.executable, "-m", "bayesdp.cli", "sample", "logistic", "--data", str(data),
                        "--domain", "X.norm=1.0", "y.values=0,1", *sampler, "--step-size", "1e-3",
                        "--num-steps", "20", "--json"], env=_env(BAYESDP_JAX_CACHE=str(cache)),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["certificate"]["certified"]
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    entries = _entries(cache)
    assert len(entries) >= 3                      # the chain's programs were cached
    hits = [i for i, e in enumerate(entries) for p in pats if p in e]
    assert hits == [], "data bytes found in the compilation cache"

    # positive control: a program that closes over the same data puts its bytes into the cache, and the
    # search above finds them
    control = tmp_path / "control"
    r = _run([sys.executable, "-c", _CLOSE_OVER, str(control), str(data)], env=_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert any(p in e for e in _entries(control) for p in pats)


def test_no_jax_cache_flag_and_env_turn_it_off(tmp_path):
    X, y = _distinctive_data(20, 2)
    np.savez(tmp_path / "d.npz", X=X, y=y)
    for extra, env in ((["--no-jax-cache"], {"BAYESDP_JAX_CACHE": str(tmp_path / "a")}),
                       ([], {"BAYESDP_JAX_CACHE": "0", "XDG_CACHE_HOME": str(tmp_path / "b")})):
        r = _run([sys.executable, "-m", "bayesdp.cli", *extra, "sample", "logistic", "--data",
                            str(tmp_path / "d.npz"), "--domain", "X.norm=1.0", "y.values=0,1",
                            "--sampler", "ula", "--step-size", "1e-3", "--num-steps", "5", "--json"],
                           env=_env(**env), capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists(), (extra, env, r.stderr)


_CONFIG = """
import json, os, sys
import jax
if sys.argv[2] == "jax-config":
    jax.config.update("jax_compilation_cache_dir", "/users/own/choice")
from bayesdp import enable_compilation_cache
folder = enable_compilation_cache(sys.argv[1])
jax.jit(lambda x: x + 1)(1.0)
print(json.dumps({"returned": None if folder is None else str(folder),
                  "dir": jax.config.jax_compilation_cache_dir,
                  "min_time": jax.config.jax_persistent_cache_min_compile_time_secs,
                  "min_size": jax.config.jax_persistent_cache_min_entry_size_bytes}))
"""


@pytest.mark.parametrize("case", ["plain", "jax-env", "jax-config", "off"])
def test_enable_in_python_never_overrides_the_users_jax_configuration(tmp_path, case):
    folder = tmp_path / "c"
    env = _env()
    if case == "jax-env":
        env["JAX_COMPILATION_CACHE_DIR"] = str(tmp_path / "theirs")
    if case == "off":
        env["BAYESDP_JAX_CACHE"] = "off"
    r = _run([sys.executable, "-c", _CONFIG, str(folder), case], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    if case == "plain":
        assert got == {"returned": str(folder), "dir": str(folder), "min_time": 0.0, "min_size": 0}
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and any(folder.iterdir())
    else:
        assert got["returned"] is None and not folder.exists()
        assert got["dir"] == {"jax-env": str(tmp_path / "theirs"), "jax-config": "/users/own/choice",
                              "off": None}[case]
        assert got["min_time"] == 1.0        # JAX's default: bayesdp's thresholds were not applied


def test_cache_folder_is_the_users_and_private(tmp_path, monkeypatch):
    monkeypatch.delenv("BAYESDP_JAX_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "bayesdp" / "jax"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")          # not absolute: ignored (XDG spec)
    assert cache_dir() == Path.home() / ".cache" / "bayesdp" / "jax"
    monkeypatch.setenv("BAYESDP_JAX_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine" and not disabled_by_env()
    for off in ("0", "off", "False", "no"):
        monkeypatch.setenv("BAYESDP_JAX_CACHE", off)
        assert disabled_by_env()

    made = _private_dir(tmp_path / "p" / "q")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    with pytest.raises(BayesDPError, match=r"mode 0755: others may read or write it; run `chmod 700"):
        _private_dir(shared)
    _private_dir(shared, tighten=True)          # bayesdp's own default folder from an earlier version: 0700 now
    assert stat.S_IMODE(shared.stat().st_mode) == 0o700
    (tmp_path / "file").write_text("x")
    with pytest.raises(BayesDPError, match="cannot be created"):
        _private_dir(tmp_path / "file")
    (tmp_path / "link").symlink_to(made)
    with pytest.raises(BayesDPError, match="is not a directory"):
        _private_dir(tmp_path / "link")
