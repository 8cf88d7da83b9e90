"""The ledger file (docs/ledger.md): rows and their hash chain, decimal budgets, tamper evidence, the constant-cost
release on a long ledger, and ``ledger import`` of the JSON-lines journals of earlier versions.

Expectations are derived independently of bayesdp's code: rows are re-hashed with hashlib from the documented
format (``sha256(prev|seq|kind|entry|body)``), a long ledger is written here with sqlite3 (not by bayesdp), and
budgets are summed with ``fractions.Fraction`` from the decimals a user types.
"""

import hashlib
import json
import math
import os
import shutil
import sqlite3
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from bayesdp.budget import ledger as ledger_mod
from bayesdp.budget.ledger import Ledger, noise_epsilon
from bayesdp.cli import main
from bayesdp.curves import ApproxDP
from bayesdp.errors import BudgetError
from bayesdp.publish import sensitivity as S
from bayesdp.publish.release import release_statistic
from bayesdp.publish.statistics import SiteSpec, coordinate_means

ZERO = "0" * 64
OLD = Path(__file__).parents[1] / "budget" / "data" / "journal_v2.jsonl"


def H(prev, seq, kind, entry, body) -> str:
    return hashlib.sha256(f"{prev}|{seq}|{kind}|{entry}|{body}".encode()).hexdigest()


def canon(b: dict) -> str:
    return json.dumps(b, sort_keys=True, separators=(",", ":"))


def rows_of(path):
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT seq, kind, entry, body, prev, hash FROM entries ORDER BY seq").fetchall()
    finally:
        con.close()


def rewrite(path, rows, verified=False):
    """Replace every row (as someone who can write the file, dropping the triggers), hashes as given."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("DROP TRIGGER IF EXISTS entries_no_delete")
        con.execute("DELETE FROM entries")
        con.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)", rows)
        if verified:
            con.execute("UPDATE verified SET seq = ?, hash = ?, header = ?", (rows[-1][0], rows[-1][5], rows[0][5]))
    finally:
        con.close()


def rechain(rows, i, **changes):
    """Row ``i`` with body fields changed, and every hash from it on recomputed (an editor who knows the format)."""
    rows = [list(r) for r in rows]
    b = json.loads(rows[i][3])
    b.update(changes)
    rows[i][3] = canon(b)
    for k in range(i, len(rows)):
        if k:
            rows[k][4] = rows[k - 1][5]
        rows[k][5] = H(rows[k][4], *rows[k][:4])
    return [tuple(r) for r in rows]


def spend(led, eps, delta=0.0, curve=None):
    with led.reserve(eps, delta, "test", "unit", curve=curve) as res:
        res.mark_drawn()
        res.commit({"values": [1.0]})
    return res


def refused_everywhere(path, capsys, match="tamper"):
    """Every reader and writer refuses with one line; the rows are left as they were."""
    before = rows_of(path)
    for call in (lambda: Ledger(path).summary(), lambda: Ledger(path).verify(), lambda: spend(Ledger(path), 0.01)):
        with pytest.raises(BudgetError, match=match) as e:
            call()
        assert "\n" not in str(e.value)
    assert main(["ledger", "show", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: ledger") and "Traceback" not in err
    assert rows_of(path) == before


# -- the format ---------------------------------------------------------------------------------------------------


def test_rows_are_hash_chained_as_documented_and_written_as_sqlite_with_a_rollback_journal(tmp_path):
    p = tmp_path / "l.db"
    spend(Ledger.open(p, budget=1.0, dataset="d"), 0.1)
    assert p.read_bytes()[:16] == b"SQLite format 3\x00"
    con = sqlite3.connect(p)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    con.close()
    rows = rows_of(p)
    assert [r[1] for r in rows] == ["header", "reserve", "commit"] and [r[2] for r in rows] == [0, 1, 1]
    prev = ZERO
    for r in rows:
        assert r[4] == prev and r[5] == H(r[4], *r[:4])
        prev = r[5]
    head = json.loads(rows[0][3])
    assert head["budget"] == {"epsilon": "1", "delta": "0"} and head["dataset"] == "d"
    res = json.loads(rows[1][3])
    assert res["epsilon"] == "0.1" and res["state"] == {"charged": 1, "epsilon": "0.1", "delta": "0"}
    assert Ledger(p).verify()["head"] == {"seq": 2, "sha256": rows[2][5]}


def test_reserve_row_is_committed_before_the_block_and_nothing_is_rewritten(tmp_path):
    p = tmp_path / "l.db"
    led = Ledger.open(p, budget=1.0)
    spend(led, 0.1)
    before = rows_of(p)
    ino = os.stat(p).st_ino
    with led.reserve(0.1, 0.0, "test", "unit") as res:
        middle = rows_of(p)                        # read by another connection: the reserve is committed
        res.mark_drawn()
        res.commit({"values": [2.0]})
    after = rows_of(p)
    assert middle[:len(before)] == before and [r[1] for r in middle[len(before):]] == ["reserve"]
    assert after[:len(middle)] == middle and [r[1] for r in after[len(middle):]] == ["commit"]
    assert os.stat(p).st_ino == ino


# -- decimal budgets ----------------------------------------------------------------------------------------------


def test_noise_epsilon_is_the_largest_double_not_above_the_decimal():
    # the double 0.1 is 0.1000000000000000055511151231257827... > 1/10: the noise uses the double below
    assert Fraction(0.1) > Fraction(1, 10)
    e = noise_epsilon(0.1)
    assert e == math.nextafter(0.1, 0.0) and Fraction(e) < Fraction(1, 10) < Fraction(math.nextafter(e, 1.0))
    # the double 0.7 is below 7/10: it is used as it is; 0.5 is exact
    assert Fraction(0.7) < Fraction(7, 10) and noise_epsilon(0.7) == 0.7
    assert noise_epsilon(0.5) == 0.5 and noise_epsilon("0.5") == 0.5


def test_budget_one_admits_exactly_ten_releases_of_a_tenth(tmp_path):
    rng = np.random.default_rng(0)
    st = coordinate_means([SiteSpec("theta", 3)])
    coupling = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)
    path = tmp_path / "l.db"
    for i in range(10):
        res = release_statistic(rng.normal(size=(50, 3)), st, 0.1, path, coupling=coupling,
                                budget=1.0 if i == 0 else None)
        # the noise costs (proven sensitivity + grid rounding) / scale <= 1/10, the recorded decimal
        eff = Fraction(res.proven_sensitivity) + 3 * Fraction(res.grid)
        assert eff / Fraction(res.noise_scale) <= Fraction(1, 10)
        assert res.epsilon == 0.1
    s = Ledger(path).summary()
    assert [r["epsilon_exact"] for r in s["entries"]] == ["0.1"] * 10
    assert Decimal(s["exact"]["remaining_basic"]["epsilon"]) == 0 and s["remaining_budget"]["epsilon"] == 0.0
    for r in s["entries"]:
        ev = r["dp_event"]
        assert ev["type"] == "laplace" and ev["noise_scale"] == r["released"]["noise_scale"]
        assert (Fraction(ev["l1_sensitivity"]) + Fraction(ev["grid_rounding"])) / Fraction(ev["noise_scale"]) \
            <= Fraction(1, 10)
    before = rows_of(path)
    with pytest.raises(BudgetError, match="exceeds the budget"):
        release_statistic(rng.normal(size=(50, 3)), st, 0.1, path, coupling=coupling)
    assert rows_of(path) == before


def test_decimal_strings_and_cli_budget(tmp_path, capsys):
    p = tmp_path / "l.db"
    assert main(["ledger", "create", str(p), "--budget", "0.3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["exact"]["budget"]["epsilon"] == "0.3"
    led = Ledger(p)
    for eps in ("0.1", Decimal("0.1"), 0.1):
        spend(led, eps)
    with pytest.raises(BudgetError, match=r"^epsilon = 1E-30, delta = 0 exceeds the budget of ledger "
            r".*remaining epsilon 0, delta 0\)"):
        led.check("1e-30")
    with pytest.raises(BudgetError, match=r"^epsilon = 5E-324, delta = 0 exceeds the budget of ledger "
            r".*remaining epsilon 0, delta 0\)"):
        led.check(5e-324)
    for bad, why in (("nan", "'nan' must be finite"), ("inf", "'inf' must be finite"),
                     ("abc", "'abc' is not a decimal number"), (True, "True is not a number")):
        with pytest.raises(BudgetError, match=f"^epsilon = {why}; pass "):
            led.check(bad)


def test_a_charge_below_the_mechanism_cost_is_refused_before_writing(tmp_path):
    p = tmp_path / "l.db"
    led = Ledger.open(p, budget=5.0)
    before = rows_of(p)
    # Laplace of scale 1 on sensitivity 1 costs epsilon 1; charging 0.5 is a lie
    ev = ledger_mod.laplace_event(1.0, 0.0, 1.0)
    with pytest.raises(BudgetError, match="noise gives epsilon"):
        with led.reserve(0.5, 0.0, "test", "unit", event=ev):
            pytest.fail("must not run")
    with pytest.raises(BudgetError, match="its curve gives"):
        with led.reserve(0.5, 0.0, "test", "unit", curve=ApproxDP(1.0, 0.0)):
            pytest.fail("must not run")
    assert rows_of(p) == before
    # a commit whose noise scale is below the one the charge covers is not returned; it stays charged
    with pytest.raises(BudgetError, match="not returned"):
        with led.reserve(1.0, 0.0, "test", "unit", event=ev, curve=ApproxDP(1.0, 0.0)) as res:
            res.mark_drawn()
            res.commit({"values": [0.0], "noise_scale": 0.5})
    s = Ledger(p).summary()
    assert [r["status"] for r in s["entries"]] == ["aborted"] and s["spent"]["basic"]["epsilon"] == 1.0


# -- tampering ----------------------------------------------------------------------------------------------------


def _two_laplace_releases(tmp_path):
    """Budget 3, two releases each charged 1.0 whose recorded noise (scale 1 on sensitivity 1) costs 1.0."""
    p = tmp_path / "l.db"
    led = Ledger.open(p, budget=3.0)
    for _ in range(2):
        with led.reserve(1.0, 0.0, "test", "unit", curve=ApproxDP(1.0, 0.0),
                         event=ledger_mod.laplace_event(1.0, 0.0, 1.0)) as res:
            res.mark_drawn()
            res.commit({"values": [0.5], "noise_scale": 1.0})
    assert [r[1] for r in rows_of(p)] == ["header", "reserve", "commit", "reserve", "commit"]
    return p


def test_edited_epsilon_detected(tmp_path, capsys):
    p = _two_laplace_releases(tmp_path)
    rows = [list(r) for r in rows_of(p)]
    rows[1][3] = rows[1][3].replace('"epsilon":"1"', '"epsilon":"0.1"', 1)
    rewrite(p, [tuple(r) for r in rows])
    refused_everywhere(p, capsys)


def test_edited_epsilon_with_hashes_and_totals_recomputed_is_inconsistent(tmp_path, capsys):
    # the editor rewrites the last entry's charge, its running totals and the hashes consistently: the chain
    # holds, but the entry's own noise scale says 1.0
    p = tmp_path / "l.db"
    led = Ledger.open(p, budget=3.0)
    with led.reserve(1.0, 0.0, "test", "unit", event=ledger_mod.laplace_event(1.0, 0.0, 1.0)) as res:
        res.mark_drawn()
        res.commit({"values": [0.5], "noise_scale": 1.0})
    rows = rows_of(p)[:2]    # header + reserve (as if the commit never happened: a pending entry)
    rewrite(p, rechain(rows, 1, epsilon="0.1", state={"charged": 1, "epsilon": "0.1", "delta": "0"}))
    refused_everywhere(p, capsys, match="inconsistent: its noise gives epsilon 1")


def test_reordered_rows_detected(tmp_path, capsys):
    p = _two_laplace_releases(tmp_path)
    rows = rows_of(p)
    swapped = [rows[0], rows[3][:1] + rows[1][1:], rows[2], rows[1][:1] + rows[3][1:], rows[4]]
    rewrite(p, swapped)
    refused_everywhere(p, capsys)


def test_deleted_row_detected(tmp_path, capsys):
    p = _two_laplace_releases(tmp_path)
    rows = rows_of(p)
    rewrite(p, rows[:1] + rows[2:])    # the first reserve deleted
    refused_everywhere(p, capsys)


def test_deleted_last_rows_detected_against_an_anchor(tmp_path, capsys):
    p = _two_laplace_releases(tmp_path)
    head = Ledger(p).summary()["head"]["sha256"]
    assert head == rows_of(p)[-1][5]
    assert main(["ledger", "verify", str(p), "--head", head]) == 0
    capsys.readouterr()
    rewrite(p, rows_of(p)[:3])    # the whole second release removed: a valid shorter chain
    assert Ledger(p).verify()["num_releases"] == 1        # not detectable without an anchor (docs/ledger.md)
    with pytest.raises(BudgetError, match="anchored head"):
        Ledger(p).verify(head=head)
    assert main(["ledger", "verify", str(p), "--head", head]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "anchored head" in err


def test_raised_budget_detected(tmp_path, capsys):
    p = _two_laplace_releases(tmp_path)
    rows = [list(r) for r in rows_of(p)]
    edited = rows[0][3].replace('"epsilon":"3"', '"epsilon":"30"', 1)
    assert edited != rows[0][3]
    rewrite(p, [tuple(rows[0][:3] + [edited] + rows[0][4:])] + [tuple(r) for r in rows[1:]])
    refused_everywhere(p, capsys)
    # with the header's hash recomputed (and marked verified), the next row's prev no longer matches
    orig = [tuple(r) for r in rows]
    hdr = rechain(orig[:1], 0, budget={"epsilon": "30", "delta": "0"})
    rewrite(p, hdr + orig[1:], verified=True)
    refused_everywhere(p, capsys)
    # and the budget cannot be changed through the API either
    rewrite(p, orig)
    with pytest.raises(BudgetError, match="cannot be changed"):
        Ledger.open(p, budget=30.0)


@pytest.mark.parametrize("change", [dict(event="not an event"), dict(epsilon=1.5), dict(event={"mu": 1}),
                                    dict(state=[1, 2]), dict(event={"type": "gdp"})])
def test_malformed_rows_with_valid_hashes_refused_in_one_line(tmp_path, capsys, change):
    p = _two_laplace_releases(tmp_path)
    rows = rows_of(p)
    rewrite(p, rechain(rows[:4], 3, **change))    # the last row: its hash and chain hold
    refused_everywhere(p, capsys, match="tamper check failed")


# -- a long ledger: a release verifies only the new rows -----------------------------------------------------------


def _big_ledger(path, n):
    """A ledger of n committed releases of 1e-6, written here row by row with sqlite3 and hashlib."""
    Ledger.open(path, budget=1.0)
    con = sqlite3.connect(path, isolation_level=None)
    hdr = con.execute("SELECT hash FROM entries WHERE seq = 0").fetchone()[0]
    rows, prev, eps = [], hdr, Fraction(0)
    for i in range(n):
        eps += Fraction(1, 10 ** 6)
        st = {"charged": i + 1, "epsilon": str(Decimal(eps.numerator) / Decimal(eps.denominator)), "delta": "0"}
        seq = 2 * i + 1
        body = canon({"epsilon": "0.000001", "delta": "0", "event": {"type": "epsilon_delta", "epsilon": "0.000001",
                      "delta": "0"}, "mechanism": "m", "source": "s", "what": "", "admitted_by": "test",
                      "secret_hash": "", "time": "t", "state": st})
        h = H(prev, seq, "reserve", seq, body)
        rows.append((seq, "reserve", seq, body, prev, h))
        body2 = canon({"released": {"values": [i]}, "time": "t", "state": st})
        h2 = H(h, seq + 1, "commit", seq, body2)
        rows.append((seq + 1, "commit", seq, body2, h, h2))
        prev = h2
    con.execute("BEGIN")
    con.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)", rows)
    con.execute("UPDATE verified SET seq = ?, hash = ?", (rows[-1][0], rows[-1][5]))
    con.execute("COMMIT")
    con.close()


def test_long_ledger_show_and_a_release_that_verifies_only_the_new_rows(tmp_path, monkeypatch, capsys):
    p = tmp_path / "big.db"
    n = 20_000
    _big_ledger(p, n)
    assert main(["ledger", "show", str(p)]) == 0     # every row verified
    out = capsys.readouterr().out
    assert f"releases  {n} charged (0 pending)" in out and out.count("\n") < 40   # the last 20 entries only
    spent = out.split("basic: epsilon ")[1].split(",")[0]
    assert Fraction(Decimal(spent)) == Fraction(n, 10 ** 6)
    fed = []
    real_feed = ledger_mod._Replay.feed

    def feed(self, *row):
        fed.append(row[0])
        return real_feed(self, *row)

    def no_full_replay(*a, **k):
        raise AssertionError("a release must not replay the whole ledger")

    monkeypatch.setattr(ledger_mod._Replay, "feed", feed)
    monkeypatch.setattr(ledger_mod.Ledger, "_replay", no_full_replay)
    led = Ledger(p)
    spend(led, "0.5")
    spend(led, "0.25")
    # each transaction (two per release: reserve, outcome) re-checks the rows written since the last verified
    # one and the last TAIL_ROWS rows: a constant, whatever the ledger's length
    assert 0 < len(fed) <= 4 * (ledger_mod.TAIL_ROWS + 1) and min(fed) > 2 * n - 2 * ledger_mod.TAIL_ROWS
    monkeypatch.undo()
    s = Ledger(p).verify()
    assert s["num_releases"] == n + 2
    assert Fraction(Decimal(s["exact"]["spent_basic"]["epsilon"])) == Fraction(n, 10 ** 6) + Fraction(3, 4)


def test_a_release_rechecks_the_header_and_the_rows_after_the_verified_one(tmp_path):
    p = tmp_path / "l.db"
    led = Ledger.open(p, budget=1.0)
    for _ in range(5):
        spend(led, 0.01)
    rows = rows_of(p)
    # budget raised and every hash recomputed, but the verified table left alone
    rewrite(p, rechain(rows, 0, budget={"epsilon": "10", "delta": "0"}), verified=False)
    with pytest.raises(BudgetError, match="header"):
        led.check(0.01)
    # the last row's running totals lowered and its hash recomputed, the verified row before it
    rewrite(p, rows[:-1], verified=True)
    rewrite(p, rechain(rows, len(rows) - 1, state={"charged": 5, "epsilon": "0.01", "delta": "0"}))
    with pytest.raises(BudgetError, match="running totals"):
        led.check(0.01)


# -- import of the earlier JSON-lines journals ---------------------------------------------------------------------


def test_import_of_a_journal_keeps_every_charge(tmp_path, capsys):
    old = tmp_path / "old.jsonl"
    shutil.copy(OLD, old)
    with pytest.raises(BudgetError, match="bayesdp ledger import"):
        Ledger(old)
    assert main(["ledger", "show", str(old)]) == 2
    assert "bayesdp ledger import" in capsys.readouterr().err
    new = tmp_path / "new.db"
    assert main(["ledger", "import", str(old), str(new), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    # the journal (written by bayesdp 2817619): 0.1 (Laplace, committed), 0.2 (cancelled before the draw),
    # 0.25 (committed), (0.05, 1e-7) spent; budget (1.0, 1e-6), dataset "old data"
    assert [e["epsilon_exact"] for e in s["entries"]] == ["0.1", "0.25", "0.05"]
    assert [e["status"] for e in s["entries"]] == ["committed"] * 3
    assert s["exact"]["spent_basic"] == {"epsilon": "0.4", "delta": "0.0000001"}
    assert s["exact"]["budget"] == {"epsilon": "1", "delta": "0.000001"} and s["dataset"] == "old data"
    assert s["imported_from"]["cancelled"] == 1
    last = [json.loads(ln) for ln in old.read_text().splitlines()][-1]
    assert s["imported_from"]["head"] == last["sum"]
    assert s["entries"][0]["dp_event"]["type"] == "laplace"
    # the new ledger is a ledger: it verifies and keeps spending
    spend(Ledger(new), "0.6")
    with pytest.raises(BudgetError, match="exceeds the budget"):
        spend(Ledger(new), "0.000001")
    assert main(["ledger", "import", str(old), str(new)]) == 2     # never over an existing file


def test_import_refuses_a_tampered_journal_and_writes_nothing(tmp_path, capsys):
    old = tmp_path / "old.jsonl"
    lines = OLD.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"epsilon":"0.1"', b'"epsilon":"0.01"', 1)
    old.write_bytes(b"\n".join(lines))
    assert main(["ledger", "import", str(old), str(tmp_path / "new.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tamper" in err
    assert not (tmp_path / "new.db").exists()


def test_import_refuses_a_rehashed_journal_whose_charge_is_below_its_noise(tmp_path, capsys):
    # checksums and chain recomputed after lowering entry 1's epsilon (and every running total after it): the
    # Laplace event (sensitivity 1, scale 10) costs exactly 0.1, so a charge of 0.01 is refused
    objs = [json.loads(ln) for ln in OLD.read_text().splitlines()]
    objs[1]["epsilon"] = "0.01"
    for o in objs[1:]:
        o["state"]["epsilon"] = str(Decimal(o["state"]["epsilon"]) - Decimal("0.09"))
    prev, out = "0" * 64, []
    for o in objs:
        o.pop("sum")
        o["prev"] = prev
        raw = json.dumps(o, separators=(",", ":"), ensure_ascii=True).encode()
        prev = hashlib.sha256(raw).hexdigest()
        out.append(raw[:-1] + b',"sum":"' + prev.encode() + b'"}')
    old = tmp_path / "old.jsonl"
    old.write_bytes(b"\n".join(out) + b"\n")
    assert main(["ledger", "import", str(old), str(tmp_path / "new.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "entry 1 is inconsistent" in err and "charged 0.01" in err
    assert not (tmp_path / "new.db").exists()
