"""Nothing lost (issue 21 item 7): every output goes through a temporary file, fsync and rename; an output
that is an input (through any name) or a ledger is refused; an existing file only with --overwrite; stale
temporaries of dead processes are removed; OS errors are one line; a model file cannot end the process."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import bayesdp
from bayesdp.cli import main
from bayesdp.errors import AssumptionError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOMAIN = ["--domain", "X.norm=1", "y.values=0,1"]


def _npz(path, n=50):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
    np.savez(path, X=X, y=(rng.random(n) < 0.5).astype(float))
    return path.read_bytes()


def _ledger(path):
    rc = main(["ledger", "create", str(path), "--budget", "1"])
    assert rc == 0 and path.exists()
    return path.read_bytes()


def _calibrate(*extra):
    return main(["calibrate", "logistic", *DOMAIN, "--epsilon", "1", *extra])


def test_calibrate_out_never_replaces_the_data_file(tmp_path, capsys):
    data = tmp_path / "data.npz"
    before = _npz(data)
    assert _calibrate("--data", str(data), "--out", str(data), "--overwrite") == 2
    assert "is the input file --data" in capsys.readouterr().err
    os.link(data, tmp_path / "alias.npz")               # a hard link: another name, the same file
    assert _calibrate("--data", str(data), "--out", str(tmp_path / "alias.npz"), "--overwrite") == 2
    os.symlink(data, tmp_path / "link.npz")
    assert _calibrate("--data", str(data), "--out", str(tmp_path / "link.npz"), "--overwrite") == 2
    assert data.read_bytes() == before


def test_calibrate_out_never_replaces_a_ledger(tmp_path, capsys):
    ledger = tmp_path / "ledger.json"
    before = _ledger(ledger)
    capsys.readouterr()
    assert _calibrate("--no-data", "--data-size", "100", "--dim", "2", "--out", str(ledger), "--overwrite") == 2
    assert "is a privacy ledger" in capsys.readouterr().err
    assert ledger.read_bytes() == before


def test_calibrate_out_refuses_an_existing_file_without_overwrite(tmp_path, capsys):
    out = tmp_path / "plan.json"
    out.write_text("keep me\n")
    args = ("--no-data", "--data-size", "100", "--dim", "2", "--out", str(out))
    assert _calibrate(*args) == 2
    assert "already exists" in capsys.readouterr().err and out.read_text() == "keep me\n"
    assert _calibrate(*args, "--overwrite") == 0
    plan = bayesdp.Plan.load(str(out))
    assert plan.mechanism == "ula-final" and plan.data_size == 100
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def test_sample_out_never_replaces_the_input_data(tmp_path, capsys):
    data = tmp_path / "data.npz"
    before = _npz(data)
    rc = main(["sample", "logistic", "--data", str(data), *DOMAIN, "--sampler", "ula", "--step-size", "0.001",
               "--num-steps", "10", "--out", str(data), "--overwrite"])
    assert rc == 2 and "is the input file --data" in capsys.readouterr().err
    assert data.read_bytes() == before


def test_plan_to_json_writes_atomically_and_refuses_to_replace(tmp_path):
    plan = bayesdp.certify(bayesdp.models.logistic, domain=bayesdp.Domain(X=bayesdp.norm_bound(1.0),
                                                                       y=bayesdp.values(0, 1)),
                           shapes=bayesdp.Shapes(100, {"X": (2,), "y": ()})).plan("posterior")
    out = tmp_path / "plan.json"
    out.write_text("old\n")
    with pytest.raises(AssumptionError, match="already exists"):
        plan.to_json(str(out))
    assert out.read_text() == "old\n"
    plan.to_json(str(out), overwrite=True)
    assert bayesdp.Plan.load(str(out)) == plan


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    from bayesdp.resources import write_file

    out = tmp_path / "out.bin"
    out.write_bytes(b"old")

    def writer(tmp):
        with open(tmp, "wb") as fh:
            fh.write(b"partial")
        raise OSError(28, "No space left on device", tmp)
    with pytest.raises(AssumptionError, match=r"^--out .*out\.bin: writing failed \(OSError: No space left"):
        write_file(str(out), writer, overwrite=True)
    assert out.read_bytes() == b"old" and os.listdir(tmp_path) == ["out.bin"]


def test_a_file_size_limit_is_one_line_and_loses_nothing(tmp_path):
    out = tmp_path / "plan.json"
    out.write_text("old\n")
    code = textwrap.dedent(f"""
        import resource, sys
        from bayesdp.resources import write_file
        from bayesdp.errors import BayesDPError
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        try:
            write_file({str(out)!r}, "x" * 100000, overwrite=True)
        except BayesDPError as e:
            print(e); sys.exit(2)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 2, r.stderr
    assert "writing failed" in r.stdout and len(r.stdout.strip().splitlines()) == 1
    assert out.read_text() == "old\n" and os.listdir(tmp_path) == ["plan.json"]


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    from bayesdp.resources import remove_stale_temporaries, write_file

    out = tmp_path / "plan.json"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale, live = tmp_path / f"plan.json.tmp-{dead.pid}", tmp_path / f"plan.json.tmp-{os.getppid()}"
    stale.write_text("x")
    live.write_text("y")
    write_file(str(out), "{}\n")
    assert not stale.exists() and live.exists() and out.read_text() == "{}\n"
    assert remove_stale_temporaries(str(out)) == []


def test_an_os_error_in_a_command_is_one_line_naming_the_path(monkeypatch, capsys):
    from bayesdp.commands import bound

    def fail(args):
        raise PermissionError(13, "Permission denied", "/some/where/file.json")
    monkeypatch.setattr(bound, "run", fail)
    rc = main(["bound", "ula-path", "--grad-diff", "1", "--step-size", "0.01", "--num-steps", "10",
               "--delta", "1e-5"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "/some/where/file.json" in err and "Traceback" not in err


def test_plan_load_of_a_malformed_plan_is_one_line(tmp_path):
    plan = bayesdp.certify("logistic", domain=bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1)),
                           shapes=bayesdp.Shapes(100, {"X": (2,), "y": ()})).plan("posterior")
    good = plan.to_dict()
    for key, value, message in (("record_shapes", None, "lacks the field"), ("data_size", "many", "data_size"),
                                ("record_shapes", {"X": ["a"]}, "record_shapes"), ("epsilon", None, "epsilon")):
        d = dict(good)
        if value is None and message == "lacks the field":
            del d[key]
        else:
            d[key] = value
        with pytest.raises(AssumptionError, match=message) as info:
            bayesdp.Plan.load(json.dumps(d))
        assert "\n" not in str(info.value)
    with pytest.raises(AssumptionError, match="not a bayesdp plan"):
        bayesdp.Plan.load("[1, 2]")


@pytest.mark.parametrize("body, said", [("import sys\nsys.exit(0)\n", "calls sys.exit(0)"),
                                        ("raise KeyboardInterrupt\n", "raises KeyboardInterrupt")])
def test_a_model_file_that_ends_the_process_is_refused(tmp_path, capsys, body, said):
    f = tmp_path / "m.py"
    f.write_text(body + "def model(X, y=None):\n    pass\n")
    rc = main(["certify", f"{f}:model", "--no-data", "--data-size", "10", "--dim", "2", *DOMAIN])
    err = capsys.readouterr().err
    assert rc == 2 and said in err and err.count("\n") == 1


def test_a_real_ctrl_c_exits_130(tmp_path):
    marker = tmp_path / "importing"
    f = tmp_path / "slow.py"
    f.write_text(f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(120)\n"
                 "def model(X, y=None):\n    pass\n")
    p = subprocess.Popen([sys.executable, "-m", "bayesdp.cli", "certify", f"{f}:model", "--no-data", "--data-size",
                          "10", "--dim", "2", *DOMAIN], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):                  # until the model file is being imported (at most 120 s)
            if marker.exists() or p.poll() is not None:
                break
            time.sleep(0.1)
        assert marker.exists(), p.communicate()[1]
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130 and "interrupted" in err and "Traceback" not in err
