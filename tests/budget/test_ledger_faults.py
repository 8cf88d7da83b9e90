"""The SQLite ledger under faults (issue 21): concurrent processes through a symlink and the real path, hard links,
kill -9 at every write point, a full disk, huge epsilons, forged rows and rollbacks."""

import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction

import pytest

from bayesdp.budget import Ledger, PrivacyAccountant
from bayesdp.budget.ledger import row_hash
from bayesdp.cli import main
from bayesdp.errors import BudgetError

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

_RESERVE = r"""
import json, os, sys, time
from bayesdp.errors import BudgetError
from bayesdp.budget.ledger import Ledger
path, start, eps = sys.argv[1], sys.argv[2], sys.argv[3]
led = Ledger(path)
print("ready", flush=True)
while not os.path.exists(start):
    time.sleep(0.001)
try:
    with led.reserve(eps, 0, "race", "unit") as res:
        res.mark_drawn()
        time.sleep(0.02)
        res.commit({"values": [os.getpid()]})
except BudgetError:
    sys.exit(3)
print(json.dumps({"head": res.head["sha256"]}), flush=True)
"""


def _ledger(tmp_path, budget, delta=0):
    real = tmp_path / "real" / "ledger.db"
    real.parent.mkdir()
    Ledger.open(real, budget=budget, budget_delta=delta)
    link = tmp_path / "alias.db"
    link.symlink_to(real)
    return real, link


def test_concurrent_releases_through_a_symlink_and_the_real_path(tmp_path):
    # budget 0.5, eight processes of 0.1 each, half through each name: exactly five fit (exact decimals)
    real, link = _ledger(tmp_path, "0.5")
    start = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _RESERVE, str(real if i % 2 else link), str(start), "0.1"],
                              stdout=subprocess.PIPE, text=True, env=ENV) for i in range(8)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    start.write_text("go")
    for p in procs:
        p.communicate(timeout=300)
    codes = sorted(p.returncode for p in procs)
    assert codes == [0] * 5 + [3] * 3
    s = Ledger(link).verify()
    assert s["num_releases"] == 5 and Decimal(s["exact"]["spent_basic"]["epsilon"]) == Decimal("0.5")
    assert all(e["status"] == "committed" for e in s["entries"])
    assert s["ledger"] == str(real.resolve())


def test_a_hard_link_is_refused_through_both_names(tmp_path, capsys):
    real, _ = _ledger(tmp_path, 1)
    other = tmp_path / "hard.db"
    os.link(real, other)
    for name in (real, other):
        with pytest.raises(BudgetError, match="2 hard links"):
            Ledger(name)
    assert main(["ledger", "show", str(other)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: ledger {other}") and "2 hard links" in err and err.count("\n") == 1, err


_KILL = r"""
import os, sys
from bayesdp.budget.ledger import Ledger
path, mode = sys.argv[1], sys.argv[2]
with Ledger(path).reserve("0.25", 0, "kill", "unit") as res:
    if mode == "draw":
        res.mark_drawn()
        res.commit({"values": [1.0]})
    else:
        raise RuntimeError("refused before the draw")
"""

# (kill point, what the block does) -> the entries left charged
KILLS = [("reserve-before-commit", "draw", []),
         ("reserve-committed", "draw", ["pending"]),
         ("commit-before-commit", "draw", ["pending"]),
         ("outcome-committed", "draw", ["committed"]),
         ("outcome-before-commit", "cancel", ["pending"]),
         ("outcome-committed", "cancel", [])]


@pytest.mark.parametrize("name", ["real", "symlink"])
@pytest.mark.parametrize("point,mode,left", KILLS)
def test_kill9_at_every_write_point_leaves_a_verified_ledger_charging_what_may_have_been_drawn(
        tmp_path, name, point, mode, left):
    real, link = _ledger(tmp_path, 1)
    path = real if name == "real" else link
    p = subprocess.run([sys.executable, "-c", _KILL, str(path), mode], env={**ENV, "BAYESDP_TEST_KILL_AT": point},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == -9, p.stderr
    s = Ledger(path).verify()
    assert [e["status"] for e in s["entries"]] == left
    assert Decimal(s["exact"]["spent_basic"]["epsilon"]) == Decimal("0.25") * len(left)
    # the next release goes through and the file still verifies (a hot journal was rolled back)
    with Ledger(path).reserve("0.5", 0, "after", "unit") as res:
        res.mark_drawn()
        res.commit({"values": [2.0]})
    assert Ledger(real).verify()["num_releases"] == len(left) + 1


_FULL = r"""
import os, resource, signal, sys
from bayesdp.errors import BudgetError
from bayesdp.budget.ledger import Ledger
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
path, where = sys.argv[1], sys.argv[2]
def full():
    size = os.path.getsize(path)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
led = Ledger(path)
if where == "create":
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    try:
        Ledger.open(path + ".new", budget=1)
    except BudgetError as e:
        print("refused:", e); sys.exit(4)
    sys.exit(0)
if where == "reserve":
    full()
drawn = False
try:
    with led.reserve("0.25", 0, "full", "unit") as res:
        if where == "commit":
            full()
        res.mark_drawn()
        drawn = True
        res.commit({"values": [1.0]})
except BudgetError as e:
    print("refused:", e, "| drawn:", drawn); sys.exit(4)
print("released"); sys.exit(0)
"""


@pytest.mark.parametrize("where,drawn,left", [("reserve", False, []), ("commit", True, ["pending"])])
def test_a_full_disk_charges_only_what_may_have_been_drawn(tmp_path, where, drawn, left):
    real, link = _ledger(tmp_path, 1)
    p = subprocess.run([sys.executable, "-c", _FULL, str(link), where], env=ENV, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 4, p.stdout + p.stderr
    assert "Traceback" not in p.stderr and p.stdout.count("\n") == 1
    assert f"drawn: {drawn}" in p.stdout and "cannot" in p.stdout and str(real.resolve()) in p.stdout
    s = Ledger(real).verify()
    assert [e["status"] for e in s["entries"]] == left


def test_ledger_creation_on_a_full_disk_is_one_line_naming_the_path(tmp_path):
    real, _ = _ledger(tmp_path, 1)
    p = subprocess.run([sys.executable, "-c", _FULL, str(real), "create"], env=ENV, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 4 and "Traceback" not in p.stderr, p.stderr
    assert f"ledger {real}.new: cannot create it" in p.stdout
    assert not os.path.exists(str(real) + ".new")
    assert [f for f in os.listdir(real.parent) if f.endswith(".tmp")] == []
    cli = subprocess.run([sys.executable, "-c", "import resource, signal, sys; signal.signal(signal.SIGXFSZ, "
                          "signal.SIG_IGN); resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY)); "
                          "from bayesdp.cli import main; sys.exit(main(sys.argv[1:]))", "ledger", "create",
                          str(tmp_path / "c.db"), "--budget", "1"], env=ENV, capture_output=True, text=True,
                         timeout=120)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr
    assert str(tmp_path / "c.db") in cli.stderr and len(cli.stderr.strip().splitlines()) == 1


def test_huge_epsilons_are_charged_exactly_or_refused_before_anything_is_written(tmp_path):
    from bayesdp.budget.events import laplace_event

    real, _ = _ledger(tmp_path, "1e308")
    led = Ledger(real)
    # the noise scale of 1 / 1e308 is not a normal double: refused when the event is built, before any reserve
    with pytest.raises(BudgetError, match="noise cannot be drawn"):
        laplace_event(1.0, 0.0, 1e308)
    with led.reserve(1e308, 0, "huge", "unit") as res:
        # the largest double not above the decimal 1e308 (the double 1e308 is 1.0000000000000000109e308)
        assert Fraction(res.noise_epsilon) <= 10 ** 308 < Fraction(math.nextafter(res.noise_epsilon, math.inf))
        res.mark_drawn()
        res.commit({"values": [0.0]})
    assert led.verify()["exact"]["spent_basic"]["epsilon"] == str(Decimal("1e308"))
    big = tmp_path / "big.db"
    Ledger.open(big, budget="1e401")
    with pytest.raises(BudgetError, match="exceeds the largest double"):
        with Ledger(big).reserve("1e400", 0, "huge", "unit"):
            pytest.fail("the block must not run")
    assert Ledger(big).verify()["num_releases"] == 0


def test_huge_epsilon_release_never_charges_without_values(tmp_path):
    """The whole release path: refused with nothing charged, or released and charged exactly."""
    import numpy as np

    from bayesdp.publish import sensitivity as S
    from bayesdp.publish.release import release_statistic
    from bayesdp.publish.statistics import SiteSpec, coordinate_means

    st = coordinate_means([SiteSpec("theta", 2)])
    coupling = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)
    draws = np.random.default_rng(0).normal(size=(20, 2))
    for eps in (1e308, 1e300):
        path = tmp_path / f"l{eps:g}.db"
        Ledger.open(path, budget="1e308")
        try:
            res = release_statistic(draws, st, eps, path, coupling=coupling)
        except Exception:
            s = Ledger(path).verify()
            assert s["num_releases"] == 0, s["entries"]
        else:
            assert np.all(np.isfinite(res.values))
            assert Ledger(path).verify()["exact"]["spent_basic"]["epsilon"] == str(Decimal(repr(eps)))


def _rows(path):
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT seq, kind, entry, body, prev, hash FROM entries ORDER BY seq").fetchall()
    finally:
        con.close()


def _append(path, kind, entry, body):
    """Append a row with a correctly recomputed hash chain and running totals, as an attacker could."""
    rows = _rows(path)
    last = rows[-1]
    b = json.dumps(body, sort_keys=True, separators=(",", ":"))
    con = sqlite3.connect(path, isolation_level=None)
    try:
        seq = last[0] + 1
        h = row_hash(last[5], seq, kind, entry, b)
        con.execute("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)", (seq, kind, entry, b, last[5], h))
    finally:
        con.close()


def _pending(tmp_path):
    real, link = _ledger(tmp_path, 1)
    p = subprocess.run([sys.executable, "-c", _KILL, str(link), "draw"],
                       env={**ENV, "BAYESDP_TEST_KILL_AT": "reserve-committed"}, capture_output=True, timeout=120)
    assert p.returncode == -9
    return real


def test_a_forged_cancel_with_a_recomputed_chain_is_detected(tmp_path):
    real = _pending(tmp_path)
    res = json.loads(_rows(real)[1][3])
    state = {"charged": 0, "epsilon": "0", "delta": "0"}
    _append(real, "cancel", 1, {"secret": "guessed", "time": "now", "state": state})
    with pytest.raises(BudgetError, match="does not reveal its reservation's secret"):
        Ledger(real).verify()
    with pytest.raises(BudgetError, match="forged"):
        with Ledger(real).reserve("0.1", 0, "next", "unit"):
            pass
    assert res["state"]["epsilon"] == "0.25"


def test_a_forged_cancel_of_a_committed_entry_is_detected(tmp_path):
    real, _ = _ledger(tmp_path, 1)
    with Ledger(real).reserve("0.5", 0, "r", "unit") as r:
        r.mark_drawn()
        r.commit({"values": [1.0]})
    _append(real, "cancel", 1, {"secret": "x", "time": "now", "state": {"charged": 0, "epsilon": "0", "delta": "0"}})
    with pytest.raises(BudgetError, match="cancel of entry 1 after its commit"):
        Ledger(real).verify()


def test_a_forged_reserve_is_detected(tmp_path):
    real, _ = _ledger(tmp_path, 1)
    # a reserve below its own event's cost (a Laplace noise of epsilon 1 charged 0.1)
    ev = {"type": "laplace", "l1_sensitivity": 1.0, "grid_rounding": 0.0, "noise_scale": 1.0, "delta": 0.0}
    _append(real, "reserve", 1, {"epsilon": "0.1", "delta": "0", "event": ev, "secret_hash": "",
                                  "state": {"charged": 1, "epsilon": "0.1", "delta": "0"}})
    with pytest.raises(BudgetError, match="its noise gives epsilon 1"):
        Ledger(real).verify()
    # a reserve appended without recomputing the chain
    real2 = tmp_path / "two.db"
    Ledger.open(real2, budget=1)
    con = sqlite3.connect(real2, isolation_level=None)
    con.execute("INSERT INTO entries VALUES (1, 'reserve', 1, '{}', ?, ?)", ("f" * 64, "e" * 64))
    con.close()
    with pytest.raises(BudgetError, match="row 1: does not chain"):
        Ledger(real2).summary()


def test_rows_are_immutable_and_an_edit_breaks_the_chain(tmp_path):
    real, _ = _ledger(tmp_path, 1)
    with Ledger(real).reserve("0.5", 0, "r", "unit") as r:
        r.mark_drawn()
        r.commit({"values": [1.0]})
    con = sqlite3.connect(real, isolation_level=None)
    with pytest.raises(sqlite3.DatabaseError, match="immutable"):
        con.execute("UPDATE entries SET body = replace(body, '0.5', '0.1') WHERE seq = 1")
    with pytest.raises(sqlite3.DatabaseError, match="immutable"):
        con.execute("DELETE FROM entries WHERE seq = 2")
    con.execute("DROP TRIGGER entries_no_update")          # someone who can write the file can do this
    con.execute("UPDATE entries SET body = replace(body, '\"epsilon\":\"0.5\"', '\"epsilon\":\"0.1\"') WHERE seq = 1")
    con.close()
    with pytest.raises(BudgetError, match="row 1: its hash does not match"):
        Ledger(real).verify()


def test_rollback_to_an_older_copy_is_detected_only_against_an_anchor(tmp_path):
    real, _ = _ledger(tmp_path, 1)
    with Ledger(real).reserve("0.25", 0, "r", "unit") as r:
        r.mark_drawn()
        r.commit({"values": [1.0]})
    shutil.copy(real, tmp_path / "old.db")
    with Ledger(real).reserve("0.5", 0, "r", "unit") as r:
        r.mark_drawn()
        r.commit({"values": [2.0]})
    anchor = r.head["sha256"]
    assert Ledger(real).verify(head=anchor)["num_releases"] == 2
    os.replace(tmp_path / "old.db", real)                  # rolled back: 0.5 of spending forgotten
    assert Ledger(real).verify()["num_releases"] == 1      # undetectable without the anchor (docs/ledger.md)
    with pytest.raises(BudgetError, match="anchored head .* is not in the chain"):
        Ledger(real).verify(head=anchor)
    assert main(["ledger", "verify", str(real), "--head", anchor]) == 2


def test_a_forged_cancel_via_a_tampered_verified_table_is_still_checked_by_verify(tmp_path):
    real = _pending(tmp_path)
    _append(real, "cancel", 1, {"secret": "guessed", "time": "now", "state": {"charged": 0, "epsilon": "0",
                                                                             "delta": "0"}})
    con = sqlite3.connect(real, isolation_level=None)     # mark the forged row as verified
    last = con.execute("SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1").fetchone()
    con.execute("UPDATE verified SET seq = ?, hash = ?", last)
    con.close()
    with pytest.raises(BudgetError, match="forged"):
        Ledger(real).verify()
    assert main(["ledger", "verify", str(real)]) == 2


def test_spend_refuses_bad_input_in_one_line():
    acct = PrivacyAccountant(budget=1.0)
    for bad, match in [((0.1, -0.1), "delta"), ((float("nan"), 0), "epsilon"), ({"mu": 1.0}, "no 'type'"),
                       ((0.1, 0.0, 1), "pair"), (object(), "cannot account")]:
        with pytest.raises(BudgetError, match=match) as e:
            acct.spend(bad)
        assert "\n" not in str(e.value)
    assert acct.entries == []


def test_kill9_while_creating_leaves_no_ledger_and_the_next_creation_cleans_up(tmp_path):
    path = tmp_path / "new.db"
    code = f"from bayesdp.budget import Ledger; Ledger.open({str(path)!r}, budget=1)"
    p = subprocess.run([sys.executable, "-c", code], env={**ENV, "BAYESDP_TEST_KILL_AT": "create-before-link"},
                       capture_output=True, timeout=120)
    assert p.returncode == -9 and not path.exists()
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]          # left by the killed process
    Ledger.open(path, budget=1)
    assert Ledger(path).verify()["num_releases"] == 0
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


def test_a_release_resolved_while_it_runs_stays_charged_and_the_ledger_verifies(tmp_path):
    real, link = _ledger(tmp_path, 1)
    led = Ledger(link)
    with pytest.raises(RuntimeError, match="ended before the draw"):
        with led.reserve("0.25", 0, "slow", "unit"):
            assert Ledger(real).resolve(note="looked pending")["resolved"] == [1]
            raise RuntimeError("ended before the draw")
    s = Ledger(real).verify()
    assert [e["status"] for e in s["entries"]] == ["aborted"] and s["exact"]["spent_basic"]["epsilon"] == "0.25"
    with led.reserve("0.25", 0, "slow", "unit") as res:
        Ledger(real).resolve()
        res.mark_drawn()
        res.commit({"values": [1.0]})
    assert [e["status"] for e in Ledger(real).verify()["entries"]] == ["aborted", "committed"]
