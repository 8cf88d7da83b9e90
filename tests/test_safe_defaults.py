"""Safe defaults of issue #13 that are not refusals: secure chain keys, float32 data at the declared
bound, labels stored as floats, clip_rows, outputs written only where checked."""

import json
import math
import os

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesdp.analysis import Domain
from bayesdp.api import chain_inference_data
from bayesdp.analysis.domain import NORM_ACCEPT_RTOL, NORM_RTOL
from bayesdp.analysis.loading import builtin_models
from bayesdp.analysis.records import validate_records
from bayesdp.cli import main
from bayesdp.errors import DomainError
from bayesdp.samplers import Sampler, clip_rows
from bayesdp.samplers.gradients import clip_margin
from bayesdp.samplers.keys import REPRODUCIBLE, SECURE, resolve_key, secure_key

MODELS = builtin_models()


def _rows(m, d, norm=1.0, seed=0, dtype=np.float32):
    """Rows normalised to ``norm`` in ``dtype`` arithmetic, as users do."""
    X = np.random.default_rng(seed).normal(size=(m, d)).astype(dtype)
    return X / np.linalg.norm(X, axis=1, keepdims=True) * dtype(norm)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("safe")
    X = _rows(60, 3)
    y = (X[:, 0] > 0).astype(np.float32)
    np.savez(root / "f32.npz", X=X, y=y)
    labels = (np.arange(60) % 3).astype(np.float64)
    np.savez(root / "soft.npz", X=X.astype(np.float64), y=labels)
    (root / "soft.csv").write_text("a,b,c,label\n" + "\n".join(
        ",".join(repr(float(v)) for v in row) + f",{int(t)}" for row, t in zip(X, labels)) + "\n")
    return root


# -- item 3: float32 rows at the declared norm ----------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 10, 30, 100, 1000])
@pytest.mark.parametrize("norm", [1.0, 3.0, 0.1])
def test_float32_rows_normalised_to_the_bound_are_accepted(d, norm):
    X = _rows(2000 if d < 1000 else 200, d, norm, seed=d)
    assert (np.linalg.norm(X.astype(np.float64), axis=1) > norm).any() or d == 1  # the situation
    Domain.parse([f"X.norm={norm}"]).check({"X": X})


def test_tolerance_is_a_few_float32_roundoffs_and_no_more():
    assert NORM_RTOL == 8 * 2.0 ** -24 and NORM_ACCEPT_RTOL == 6 * 2.0 ** -24
    dom = Domain.parse(["X.norm=1"])
    ok = np.array([[1.0 + 5.9 * 2.0 ** -24, 0.0]])         # within 6 roundoffs: accepted
    dom.check({"X": ok})
    with pytest.raises(DomainError, match=r"X\[0\] has norm"):
        dom.check({"X": np.array([[1.0 + 7 * 2.0 ** -24, 0.0]])})   # 7 roundoffs: refused (was accepted)
    with pytest.raises(DomainError, match=r"X\[0\] has norm"):
        dom.check({"X": np.array([[1.0 + 1e-6, 0.0]])})     # 1e-6 > 3.6e-7: refused


def test_accepted_float64_rows_cast_to_float32_stay_within_the_certified_norm():
    # a float64 row accepted by the check is cast to float32 by the samplers; its exact norm after the cast must
    # not exceed the certified bound (rows accepted up to 1 + NORM_RTOL exceeded it by up to 5.6e-8 relative)
    from fractions import Fraction
    dom = Domain.parse(["X.norm=1"])
    cert = Fraction(dom.get("X").certified_norm) ** 2
    rng = np.random.default_rng(0)
    accepted = 0
    for _ in range(3000):
        v = rng.standard_normal(int(rng.integers(1, 6)))
        v *= (1 + NORM_RTOL * rng.random()) / np.linalg.norm(v)
        try:
            dom.check({"X": v[None, :]})
        except DomainError:
            continue
        accepted += 1
        assert sum(Fraction(float(x)) ** 2 for x in v.astype(np.float32)) <= cert
    assert accepted > 1000
    # the same row the former tolerance accepted and the cast took above the bound is refused now
    row = np.array([[0.9966176666096269, -0.0821838200385325]])
    with pytest.raises(DomainError, match=r"X\[0\] has norm"):
        dom.check({"X": row})
    with pytest.raises(DomainError, match=r"^data X\[0\] has norm 2 > declared X\.norm = 1 "):
        dom.check({"X": np.array([[2, 0]], dtype=np.int64)})   # integers: exact


def test_certificate_uses_the_inflated_bound():
    a = Domain.parse(["X.norm=2", "Z.min=-1", "Z.max=3"])
    assert a.get("X").certified_norm == pytest.approx(2 * (1 + NORM_RTOL), rel=1e-15)
    assert a.get("X").certified_norm >= 2 * (1 + NORM_RTOL)
    assert a.get("X").row_norm_bound(5) == a.get("X").certified_norm
    # min/max: sqrt(size) max(|min|, |max|), inflated by the same factor (the float32 cast of the data)
    assert a.get("Z").row_norm_bound(4) == pytest.approx(2 * 3 * (1 + NORM_RTOL), rel=1e-15)
    # every accepted float32 row, cast as the samplers cast it, has norm <= the certified bound
    X = _rows(5000, 7, 2.0, seed=3)
    Domain.parse(["X.norm=2"]).check({"X": X})
    assert np.linalg.norm(X.astype(np.float64), axis=1).max() <= a.get("X").certified_norm


def test_float32_normalised_data_certified_end_to_end(files, capsys):
    rc = main(["certify", "logistic", "--data", str(files / "f32.npz"), "--domain", "X.norm=1", "y.values=0,1",
               "--step-size", "0.01", "--num-steps", "10", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    # logistic: two records' gradients differ by <= 2 R with the certified R
    assert json.loads(out)["constants"]["grad_diff"] == pytest.approx(2 * (1 + NORM_RTOL), rel=1e-12)


# -- clip_rows never above the clip -------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 10, 30, 300, 3000])
@pytest.mark.parametrize("G", [3.0, 1.0, 0.1, 1e-3])
def test_clip_rows_never_returns_a_norm_above_the_clip(d, G):
    rng = np.random.default_rng(d)
    g = (rng.standard_normal((2000, d)) * rng.uniform(0.1, 100, (2000, 1))).astype(np.float32)
    out = np.asarray(clip_rows(jnp.asarray(g), jnp.float32(G)))
    norms = np.linalg.norm(out.astype(np.float64), axis=1)          # exact norms of the returned values
    assert norms.max() <= float(np.float32(G))
    small = np.linalg.norm(g.astype(np.float64), axis=1) < G * 0.99   # rows well inside are untouched
    np.testing.assert_array_equal(out[small], g[small])
    big = np.linalg.norm(g.astype(np.float64), axis=1) > G           # rows above the clip land just below it
    assert (norms[big] >= G * clip_margin(d, np.float32) * (1 - 1e-6)).all()


# -- labels stored as floats ----------------------------------------------------------------------------------


def test_integer_labels_stored_as_floats_are_converted(files):
    d = dict(np.load(files / "soft.npz"))
    arrays, m = validate_records(d, MODELS["softmax"], {"num_classes": 3})
    assert m == 60 and arrays["y"].dtype == np.int32
    np.testing.assert_array_equal(arrays["y"], np.arange(60) % 3)
    # a Bernoulli response keeps its float dtype (only index-based families need integers)
    arrays, _ = validate_records({"X": d["X"], "y": (d["y"] > 0).astype(np.float64)}, MODELS["logistic"])
    assert arrays["y"].dtype == np.float64


def _softmax_draws(capsys, tmp_path, data, extra=()):
    """``bayesdp sample softmax`` with a fixed --seed: the draws of W written to a .nc file."""
    import arviz as az

    out = tmp_path / f"{data.stem}-{data.suffix[1:]}.nc"
    rc = main(["sample", "softmax", "--data", str(data), *extra, "--domain", "X.norm=1", "y.values=0,1,2",
               "--sampler", "ula", "--step-size", "0.05", "--num-steps", "20", "--release", "path", "--seed", "0",
               "--out", str(out), "--json"])
    printed, err = capsys.readouterr()
    assert rc == 0, err
    assert json.loads(printed)["samples_shape"]["W"] == [1, 20, 3, 3]
    return np.asarray(az.from_netcdf(str(out)).posterior["W"])


@pytest.mark.parametrize("name", ["soft.npz", "soft.csv"])
def test_softmax_with_float_labels_samples(files, name, capsys, tmp_path):
    """Labels stored as floats (npz) or read from CSV give the same chain as the integer labels, and the labels
    are used: the same seed with every label shifted by one class gives another chain."""
    pytest.importorskip("h5py")
    d = dict(np.load(files / "soft.npz"))
    np.savez(tmp_path / "int.npz", X=d["X"], y=d["y"].astype(np.int64))
    np.savez(tmp_path / "shifted.npz", X=d["X"], y=(d["y"].astype(np.int64) + 1) % 3)
    extra = ["--x-columns", "a,b,c", "--y-column", "label"] if name.endswith(".csv") else []
    got = _softmax_draws(capsys, tmp_path, files / name, extra)
    np.testing.assert_array_equal(got, _softmax_draws(capsys, tmp_path, tmp_path / "int.npz"))
    assert np.abs(got - _softmax_draws(capsys, tmp_path, tmp_path / "shifted.npz")).max() > 1e-3


# -- item 1: chain keys ------------------------------------------------------------------------------------------


def _sampler():
    X = _rows(30, 2, seed=5)
    y = (X[:, 0] > 0).astype(np.float32)
    return Sampler(MODELS["logistic"], {"X": X, "y": y}, step_size=0.05, num_steps=5, uncertified=True)


def test_keys_from_the_os_csprng_by_default():
    k1, k2 = secure_key(), secure_key()
    assert not np.array_equal(jax.random.key_data(k1), jax.random.key_data(k2))
    assert resolve_key(None)[1] == SECURE and resolve_key(7)[1] == REPRODUCIBLE
    s = _sampler()
    a = s.run().get_unconstrained_samples().copy()
    assert s.key_source == SECURE and s.certificate["chain_keys"] == SECURE
    b = s.run().get_unconstrained_samples()
    assert not np.array_equal(a, b)                       # fresh keys each run
    c = s.run(jax.random.key(3)).get_unconstrained_samples().copy()
    assert s.key_source == REPRODUCIBLE == "reproducible seed: not private"
    np.testing.assert_array_equal(c, s.run(3).get_unconstrained_samples())   # an int seed = jax.random.key(seed)
    attrs = chain_inference_data(s).posterior.attrs
    assert attrs["bayesdp_chain_keys"] == REPRODUCIBLE
    assert REPRODUCIBLE in s.print_summary()


def test_sample_cli_marks_a_seed_everywhere(files, tmp_path, capsys):
    base = ["sample", "logistic", "--data", str(files / "f32.npz"), "--domain", "X.norm=1", "y.values=0,1",
            "--sampler", "ula", "--step-size", "1e-3", "--num-steps", "10"]
    out_nc = tmp_path / "seeded.nc"
    assert main(base + ["--seed", "4", "--out", str(out_nc)]) == 0
    printed = capsys.readouterr().out
    assert "reproducible seed: not private" in printed
    assert az.from_netcdf(str(out_nc)).posterior.attrs["bayesdp_chain_keys"] == REPRODUCIBLE
    assert main(base + ["--seed", "4", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["chain_keys"] == REPRODUCIBLE and doc["certificate"]["chain_keys"] == REPRODUCIBLE
    assert main(base + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chain_keys"] == SECURE
    # an existing --out is refused before sampling, replaced with --overwrite
    before = out_nc.read_bytes()
    assert main(base + ["--out", str(out_nc)]) == 2
    assert out_nc.read_bytes() == before and "already exists" in capsys.readouterr().err
    assert main(base + ["--out", str(out_nc), "--overwrite"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["seeded.nc"]   # no temporary file left behind


def _keys(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield f"{path}.{k}"
            yield from _keys(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _keys(v, f"{path}[{i}]")


def test_no_seed_or_key_in_release_records(files, tmp_path, capsys):
    ledger = tmp_path / "l.json"
    argv = ["release", "logistic", "--data", str(files / "f32.npz"), "--domain", "X.norm=1", "y.values=0,1",
            "--epsilon", "0.5", "--ledger", str(ledger), "--budget", "2", "--num-steps", "60", "--json",
            "--allow-uninformative"]          # small data: predicted worse than the prior (docs/release.md §12)
    assert main(argv + ["--seed", "12345"]) == 0
    out = json.loads(capsys.readouterr().out)
    import sqlite3

    con = sqlite3.connect(ledger)                                                  # the ledger's rows (SQLite)
    journal = [json.loads(body) for (body,) in con.execute("SELECT body FROM entries ORDER BY seq")]
    con.close()
    for doc in (out, journal):
        assert not [k for k in _keys(doc) if k.rsplit(".", 1)[-1] in ("seed", "key", "rng_key", "chain_key")]
    assert b"12345" not in ledger.read_bytes() and "12345" not in json.dumps(out)
    assert out["chain"]["chain_keys"].startswith(REPRODUCIBLE)
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["chain"]["chain_keys"] == SECURE


def test_level_refused_before_any_charge(files, tmp_path, capsys):
    ledger = tmp_path / "l.json"
    assert main(["ledger", "create", str(ledger), "--budget", "1"]) == 0
    capsys.readouterr()
    before = ledger.read_bytes()
    rc = main(["release", "logistic", "--data", str(files / "f32.npz"), "--domain", "X.norm=1", "y.values=0,1",
               "--epsilon", "0.5", "--ledger", str(ledger), "--level", "1.5"])
    assert rc == 2 and "--level" in capsys.readouterr().err
    assert ledger.read_bytes() == before
    assert not [p for p in os.listdir(tmp_path) if not p.startswith("l.json")]


def test_release_statistic_checked_in_the_python_api(files, tmp_path):
    import bayesdp
    from bayesdp.errors import AssumptionError
    from bayesdp.publish.spec import ChainOptions, ReleaseSpec
    from bayesdp.publish.statistics import function_mean

    d = dict(np.load(files / "f32.npz"))
    kern = bayesdp.ULA(MODELS["logistic"], domain=["X.norm=1", "y.values=0,1"])
    bad = function_mean(lambda z: 1 / 0, 1.0, ["x"], description="divides by zero")
    ledger = tmp_path / "l.json"
    bayesdp.Ledger.open(ledger, budget=1.0)
    before = ledger.read_bytes()
    with pytest.raises(AssumptionError, match="statistic 'divides by zero' raised ZeroDivisionError"):
        bayesdp.release(kern, ReleaseSpec(bad, epsilon=0.5, chain=ChainOptions(num_steps=20)), data=d, accountant=str(ledger))
    with pytest.raises(AssumptionError, match="level"):
        bayesdp.release(kern, ReleaseSpec("mean", epsilon=0.5, chain=ChainOptions(num_steps=20), level=math.nan), data=d,
                        accountant=str(ledger))
    assert ledger.read_bytes() == before

def test_listed_values_float32_cannot_hold_are_widened_for_the_cast():
    # y.values=0.1,0.3: float64 data equal to a listed value is accepted exactly, then cast to float32 by the samplers
    # (0.3 -> 0.30000001192...); the box a certificate uses must hold the cast value. 0 and 1 stay exact.
    from bayesdp.analysis.structure.program import domain_box
    lo, hi = domain_box(Domain.parse(["y.values=0.1,0.3"]), "y", (1,))
    assert lo[0] <= float(np.float32(0.1)) and hi[0] >= float(np.float32(0.3)) > 0.3
    assert hi[0] <= 0.3 * (1 + NORM_RTOL) * (1 + 1e-15)
    lo, hi = domain_box(Domain.parse(["y.values=0,1"]), "y", (1,))
    assert (lo[0], hi[0]) == (0.0, 1.0)
