"""Data files (NPZ, CSV, Parquet) into NumPy arrays; every bad file refused with file, column and row."""

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bayesdp.analysis.loading as L
from bayesdp.analysis.loading import builtin_models, data_format, load_data, load_model
from bayesdp.cli import main
from bayesdp.errors import AssumptionError, DomainError, ModelError


def _csv(path, header, rows, newline="\n"):
    path.write_text(newline.join([",".join(header)] + [",".join(map(str, r)) for r in rows]) + newline)
    return str(path)


def _values(m=40, k=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)), (rng.random(m) < 0.5).astype(float)


def _write_xy(path, X, y, newline="\n"):
    header = [f"f{j}" for j in range(X.shape[1])] + ["label"]
    # repr() writes the shortest string that reads back to the same float64
    return _csv(path, header, [[repr(float(v)) for v in row] + [repr(float(t))] for row, t in zip(X, y)], newline)


def _cols(k):
    return ",".join(f"f{j}" for j in range(k))


@pytest.fixture(params=["stream", "parallel"])
def mode(request, monkeypatch):
    """Run each CSV test through the one-stream reader and through the parallel byte-range reader."""
    if request.param == "parallel":
        monkeypatch.setattr(L, "_PARALLEL_MIN_BYTES", 0)
        monkeypatch.setattr(L, "_MAX_THREADS", 3)
        monkeypatch.setattr(L.os, "cpu_count", lambda: 3)
        monkeypatch.setattr(L, "_BLOCK_SIZE", 256)  # many record batches per range
    return request.param


def test_csv_values_exact(tmp_path, mode):
    X, y = _values(200, 4)
    d = load_data(_write_xy(tmp_path / "d.csv", X, y), x_columns=_cols(4), y_column="label", dtype="float64")
    assert d["X"].dtype == np.float64 and d["X"].flags.c_contiguous and d["X"].shape == (200, 4)
    np.testing.assert_array_equal(d["X"], X)
    np.testing.assert_array_equal(d["y"], y)
    only_y = load_data(str(tmp_path / "d.csv"), y_column="label", dtype="float64")
    assert list(only_y) == ["y"]
    np.testing.assert_array_equal(only_y["y"], y)
    # columns in any order, names padded with spaces in the header are found
    d2 = load_data(str(tmp_path / "d.csv"), x_columns=" f3 , f0", y_column="f1", x_name="Z", y_name="t",
                   dtype="float64")
    np.testing.assert_array_equal(d2["Z"], X[:, [3, 0]])
    np.testing.assert_array_equal(d2["t"], X[:, 1])


def test_parallel_ranges_cover_every_record_once(tmp_path, monkeypatch):
    X, y = _values(1000, 2)
    path = _write_xy(tmp_path / "d.csv", X, y)
    header = L._csv_header(path)
    for parts in (2, 3, 7):
        plan = L._plan_parts(path, header, parts)
        assert plan[0][0] == len("f0,f1,label\n") and plan[-1][1] == os.path.getsize(path)
        assert all(a[1] == b[0] for a, b in zip(plan, plan[1:]))
        assert sum(p[2] for p in plan) == 1000
    seen = []
    monkeypatch.setattr(L, "_read_csv_stream", lambda *a: seen.append(a) or (None, None))
    monkeypatch.setattr(L, "_PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(L.os, "cpu_count", lambda: 3)
    d = load_data(path, x_columns="f0,f1", y_column="label", dtype="float64")
    assert seen == []  # the parallel reader did it
    np.testing.assert_array_equal(d["X"], X)


def test_csv_line_ends_blank_lines_and_quotes(tmp_path, mode):
    X, y = _values(300, 2, seed=1)
    for newline in ("\r\n", "\r"):  # '\r' alone: fewer newlines than records, the outputs grow in place
        d = load_data(_write_xy(tmp_path / "w.csv", X, y, newline), x_columns="f0,f1", y_column="label",
                      dtype="float64")
        np.testing.assert_array_equal(d["X"], X)
        np.testing.assert_array_equal(d["y"], y)
    # blank lines are skipped; a quoted text column with a line break inside stays one record
    lines = ["f0,note,label"] + [f"{float(X[i, 0])!r},\"a\nb\",{float(y[i])!r}" + ("\n" if i % 50 else "\n\n")
                                 for i in range(300)]
    (tmp_path / "q.csv").write_text(lines[0] + "\n" + "".join(lines[1:]))
    d = load_data(str(tmp_path / "q.csv"), x_columns="f0", y_column="label", dtype="float64")
    np.testing.assert_array_equal(d["X"][:, 0], X[:, 0])
    np.testing.assert_array_equal(d["y"], y)


def _one_line(exc_info):
    msg = str(exc_info.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


@pytest.mark.parametrize("bad_row", [3, 250])
def test_csv_problems_name_file_column_and_row(tmp_path, mode, bad_row):
    X, y = _values(300, 3, seed=2)
    rows = [[repr(float(v)) for v in r] + [repr(float(t))] for r, t in zip(X, y)]
    header = ["f0", "f1", "f2", "label"]
    cases = {
        "text": (lambda r: r.__setitem__(1, "abc"), "column 'f1', row {r} (line {l}): value 'abc' is not a number"),
        "empty": (lambda r: r.__setitem__(2, ""), "column 'f2', row {r} (line {l}): the value is missing"),
        "short": (lambda r: r.pop(), "row {r} (line {l}): 3 fields where the header has 4"),
        "nan": (lambda r: r.__setitem__(0, "nan"), "column 'f0', row {r}: value nan is not a finite number"),
        "inf": (lambda r: r.__setitem__(3, "-inf"), "column 'label', row {r}: value -inf is not a finite number"),
    }
    for name, (spoil, expected) in cases.items():
        bad = [list(r) for r in rows]
        spoil(bad[bad_row - 1])
        path = _csv(tmp_path / f"{name}.csv", header, bad)
        with pytest.raises(DomainError) as e:
            load_data(path, x_columns="f0,f1,f2", y_column="label")
        msg = _one_line(e)
        assert msg.startswith(f"data file {path}") and expected.format(r=bad_row, l=bad_row + 1) in msg, msg


def test_csv_file_level_problems(tmp_path):
    X, y = _values(5, 2)
    good = _write_xy(tmp_path / "d.csv", X, y)
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header.csv").write_text("f0,f1,label\n")
    (tmp_path / "dup.csv").write_text("f0,f0,label\n1,2,3\n")
    (tmp_path / "latin.csv").write_bytes(b"f0,f1\n1,\xff\n")
    cases = [
        (dict(path=good, x_columns="f0,nope"), "column 'nope' is not in the header (f0, f1, label)"),
        (dict(path=good), "needs --x-columns a,b,c and/or --y-column NAME"),
        (dict(path=good, x_columns=" , "), "--x-columns ' , ' names no column"),
        (dict(path=str(tmp_path / "empty.csv"), x_columns="f0"), "is empty"),
        (dict(path=str(tmp_path / "header.csv"), x_columns="f0"), "has no records"),
        (dict(path=str(tmp_path / "dup.csv"), x_columns="f0"), "column 'f0' appears 2 times in the header"),
        (dict(path=str(tmp_path / "latin.csv"), x_columns="f1"), "not readable CSV text"),
        (dict(path=str(tmp_path / "nope.csv"), x_columns="f0"), "does not exist"),
        (dict(path=str(tmp_path / "d.txt"), x_columns="f0"), "does not exist"),
    ]
    (tmp_path / "d.txt").write_text("f0\n1\n")
    cases[-1] = (dict(path=str(tmp_path / "d.txt"), x_columns="f0"), "must end in .npz, .csv or .parquet")
    for kw, expected in cases:
        with pytest.raises(DomainError) as e:
            load_data(**kw)
        assert expected in _one_line(e)


def test_parquet_values_types_and_row_groups(tmp_path):
    X, y = _values(1000, 3, seed=3)
    ints = np.arange(1000, dtype=np.int32) - 500
    table = pa.table({"f0": X[:, 0], "f1": X[:, 1].astype(np.float32), "i": ints, "b": ints % 2 == 0,
                      "s": [repr(float(v)) for v in X[:, 2]], "label": y})
    path = str(tmp_path / "d.parquet")
    pq.write_table(table, path, row_group_size=128)
    assert pq.ParquetFile(path).num_row_groups == 8
    d = load_data(path, x_columns="f0,f1,i,b,s", y_column="label", dtype="float64")
    expect = np.column_stack([X[:, 0], X[:, 1].astype(np.float32).astype(np.float64), ints, ints % 2 == 0, X[:, 2]])
    np.testing.assert_array_equal(d["X"], expect)
    np.testing.assert_array_equal(d["y"], y)
    assert data_format("A.PQ") == "parquet" and data_format("a.csv") == "csv" and data_format("a.npz") == "npz"
    assert load_data(path, y_column="label")["y"].shape == (1000,)


def test_parquet_problems_name_file_column_and_row(tmp_path):
    path = str(tmp_path / "p.parquet")
    pq.write_table(pa.table({"a": [1.0, 2.0, 3.0, 4.0], "n": pa.array([1, 2, None, 4]), "s": ["1", "2", "3", "x"],
                             "g": [0.5, 1.0, float("inf"), 1.0], "l": [[1], [2], [3], [4]]}), path, row_group_size=2)
    cases = [("n", "column 'n', row 3: the value is missing"), ("s", "column 's', row 4: value 'x' is not a number"),
             ("g", "column 'g', row 3: value inf is not a finite number"), ("l", "column 'l': values of type list"),
             ("zz", "column 'zz' is not in the file's columns (a, n, s, g, l)")]
    for col, expected in cases:
        with pytest.raises(DomainError) as e:
            load_data(path, x_columns=col)
        msg = _one_line(e)
        assert msg.startswith(f"data file {path}") and expected in msg, msg
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(DomainError) as e:
        load_data(str(tmp_path / "junk.parquet"), x_columns="a")
    assert "is not a readable Parquet file" in _one_line(e)
    empty = str(tmp_path / "e.parquet")
    pq.write_table(pa.table({"a": pa.array([], pa.float64())}), empty)
    with pytest.raises(DomainError, match="has no records"):
        load_data(empty, x_columns="a")


def test_npz_unchanged(tmp_path):
    X, y = _values(10, 2)
    np.savez(tmp_path / "d.npz", X=X.astype(np.float32), y=y)
    d = load_data(str(tmp_path / "d.npz"), dtype="float64")
    assert d["X"].dtype == np.float32 and np.array_equal(d["y"], y)
    (tmp_path / "bad.npz").write_text("nope")
    with pytest.raises(DomainError, match="not a readable NPZ file"):
        load_data(str(tmp_path / "bad.npz"))


def test_npz_arrays_come_back_equal_and_64_byte_aligned(tmp_path):
    """Issue 24 item 3: each NPZ member is read into a 64-byte-aligned buffer (used in place by JAX on a CPU), with
    the stored values, dtype, shape and memory order, compressed or not; truncated and object members refused."""
    rng = np.random.default_rng(3)
    arrays = {"X": rng.standard_normal((1001, 7)).astype(np.float32), "F": np.asfortranarray(rng.random((5, 3))),
              "y": np.arange(1001), "big_endian": np.arange(6, dtype=">f8").reshape(2, 3), "s": np.float64(3.5),
              "empty": np.zeros((0, 4), np.float32)}
    for save in (np.savez, np.savez_compressed):
        save(tmp_path / "d.npz", **arrays)
        got = load_data(str(tmp_path / "d.npz"), dtype="float64")
        assert sorted(got) == sorted(arrays)
        for k, v in arrays.items():
            g = got[k]
            assert g.dtype == np.asarray(v).dtype and g.shape == np.shape(v) and np.array_equal(g, v), k
            assert g.size == 0 or g.ctypes.data % 64 == 0, k
        assert got["F"].flags.f_contiguous and got["X"].flags.c_contiguous and got["X"].flags.writeable
    import zipfile

    np.savez(tmp_path / "d.npz", X=arrays["X"])
    with zipfile.ZipFile(tmp_path / "d.npz") as zf:
        member = zf.read("X.npy")
    with zipfile.ZipFile(tmp_path / "short.npz", "w") as zf:
        zf.writestr("X.npy", member[:-40])
    with pytest.raises(DomainError, match="not a readable NPZ file"):
        load_data(str(tmp_path / "short.npz"))
    np.savez(tmp_path / "obj.npz", o=np.array([{"a": 1}], dtype=object))
    with pytest.raises(DomainError, match="not a readable NPZ file"):
        load_data(str(tmp_path / "obj.npz"))


def _bits_equal(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_float32_load_is_the_old_float64_path_bit_for_bit(tmp_path, mode, monkeypatch):
    """Issue 24 item 3: CSV, Parquet and float64 NPZ go straight into the float32 aligned buffers the samplers
    read, with exactly the values of the old path (a float64 table cast by validate_data)."""
    from bayesdp.samplers import validate_data

    rng = np.random.default_rng(7)
    X = rng.standard_normal((700, 5)) * np.array([1e-30, 1e-3, 1.0, 1e6, 1e37])  # round-offs at every scale
    X[:7, 0] = [1e-45, 2 ** -149, 0.0, -0.0, 1 + 2 ** -24, 1 + 3 * 2 ** -24, 3.4028235e38]  # subnormal, ties
    y = (rng.random(700) < 0.5).astype(float)
    csv_path = _write_xy(tmp_path / "d.csv", X, y)
    pq_path = str(tmp_path / "d.parquet")
    pq.write_table(pa.table({**{f"f{j}": X[:, j] for j in range(5)}, "label": y}), pq_path, row_group_size=100)
    np.savez(tmp_path / "d.npz", X=X, y=y, F=np.asfortranarray(X), i=np.arange(700))
    np.savez_compressed(tmp_path / "c.npz", X=X, big_endian=X.astype(">f8"))
    monkeypatch.setattr(L, "_NPZ_BLOCK", 8 * 997)   # float64 members cast in many blocks, a partial last one
    for path, kw in ((csv_path, dict(x_columns=_cols(5), y_column="label")),
                     (pq_path, dict(x_columns=_cols(5), y_column="label")), (str(tmp_path / "d.npz"), {}),
                     (str(tmp_path / "c.npz"), {})):
        new = load_data(path, **kw)
        old, _ = validate_data(load_data(path, dtype="float64", **kw))
        assert new.keys() == old.keys()
        for k in new:
            if k == "i":   # integers: as stored (validate_data casts them to int32 after a range check)
                assert new[k].dtype == np.int64 and np.array_equal(new[k], np.arange(700))
                continue
            # validate_data keeps a big-endian float64 array as it is, which JAX then refuses (the old path failed
            # there): its reference is the same float64 values cast to float32
            ref = old[k] if old[k].dtype == np.float32 else old[k].astype(np.float32)
            assert old[k].dtype == np.float32 or k == "big_endian"
            assert _bits_equal(new[k], ref), (path, k)
            assert new[k].ctypes.data % 64 == 0 and (new[k].flags.c_contiguous or new[k].flags.f_contiguous)
        # validate_data keeps them as they are: the samplers read this very buffer (no second copy)
        kept, _ = validate_data(new)
        assert all(kept[k] is new[k] for k in new if k != "i")
    assert load_data(str(tmp_path / "d.npz"))["F"].flags.f_contiguous


def test_float32_load_refuses_values_beyond_float32(tmp_path, mode):
    X, y = _values(20, 2)
    X[12, 1] = -1e39
    path = _write_xy(tmp_path / "big.csv", X, y)
    with pytest.raises(DomainError) as e:
        load_data(path, x_columns="f0,f1", y_column="label")
    assert _one_line(e) == (f"data file {path}, column 'f1', row 13: value -1e+39 is beyond the float32 range the "
                            f"samplers use (|value| <= 3.4028235e+38); rescale the data or enable JAX's 64-bit mode")
    assert load_data(path, x_columns="f0,f1", dtype="float64")["X"][12, 1] == -1e39
    X[12, 1] = L.FLOAT32_MAX   # the largest float32 itself is kept
    assert load_data(_write_xy(tmp_path / "max.csv", X, y), x_columns="f0,f1")["X"][12, 1] == np.float32(L.FLOAT32_MAX)
    big = np.zeros((3, 4))
    big[2, 1] = 2e300
    np.savez(tmp_path / "big.npz", X=big)
    with pytest.raises(DomainError) as e:
        load_data(str(tmp_path / "big.npz"))
    assert "array 'X', entry 9 (counted in the stored order): value 2e+300 is beyond the float32 range" in _one_line(e)
    with pytest.raises(AssumptionError, match="dtype = 'float16' is not"):
        load_data(path, x_columns="f0", dtype="float16")


def test_sampler_float_dtype_follows_jax_64_bit_mode(monkeypatch):
    class Config:
        def __init__(self, x64):
            self.x64 = x64

        def read(self, name):
            assert name == "jax_enable_x64"
            return self.x64

    class FakeJax:
        config = Config(True)

    monkeypatch.setitem(__import__("sys").modules, "jax", FakeJax)
    assert L.sampler_float_dtype() == np.float64
    FakeJax.config = Config(False)
    assert L.sampler_float_dtype() == np.float32
    monkeypatch.delitem(__import__("sys").modules, "jax")    # JAX not imported: its environment variable decides
    for value, expected in (("1", np.float64), ("True", np.float64), ("0", np.float32), ("", np.float32)):
        monkeypatch.setenv("JAX_ENABLE_X64", value)
        assert L.sampler_float_dtype() == expected, value


def test_cli_reads_parquet_and_refuses_bad_csv_in_one_line(tmp_path, capsys):
    X, y = _values(30, 2, seed=4)
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
    path = str(tmp_path / "d.parquet")
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "label": y}), path)
    args = ["--domain", "X.norm=1", "--domain", "y.values=0,1", "--step-size", "1e-3", "--num-steps", "10", "--json"]
    assert main(["certify", "logistic", "--data", path, "--x-columns", "a,b", "--y-column", "label", *args]) == 0
    assert json.loads(capsys.readouterr().out)["constants"]["data_size"] == 30
    bad = _csv(tmp_path / "bad.csv", ["a", "b", "label"], [[0.1, 0.2, 1], [0.1, "oops", 0]])
    assert main(["certify", "logistic", "--data", bad, "--x-columns", "a,b", "--y-column", "label", *args]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1
    assert f"data file {bad}, column 'b', row 2 (line 3): value 'oops' is not a number" in out.err


def test_builtin_models_are_bayesdp_models():
    import bayesdp.models

    assert builtin_models() is bayesdp.models.BUILTIN
    assert sorted(builtin_models()) == ["hierarchical_logistic", "linear", "logistic", "masked_logistic", "poisson",
                                        "robust", "softmax", "sparse_logistic"]
    assert load_model("logistic") == (bayesdp.models.logistic, "logistic")
    with pytest.raises(ModelError, match="is not a built-in model"):
        load_model("nosuch")


def test_a_model_or_statistic_file_leaves_no_bytecode_in_the_users_folder(tmp_path, monkeypatch):
    """Python writes ``__pycache__/`` beside an imported file unless told not to; bayesdp imports the user's model
    and statistic files without it (a refused command writes nothing; found by tests/test_bad_inputs_cli.py in CI,
    where bytecode writing is on), and leaves the interpreter's setting as it was."""
    import sys

    from bayesdp.commands.release import _user_statistic

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / "m.py").write_text("import numpyro\nimport numpyro.distributions as dist\n\n"
                                   "def model(X):\n    numpyro.sample('w', dist.Normal(0, 1))\n")
    (tmp_path / "stats.py").write_text("def f(s):\n    return s[..., 0]\n")
    assert load_model(f"{tmp_path / 'm.py'}:model")[1] == "model"
    _user_statistic(f"{tmp_path / 'stats.py'}:f", 1.0, None, None, True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py", "stats.py"]
    assert sys.dont_write_bytecode is False
