"""The ledger journal (docs/ledger.md): format, decimal budgets, tamper evidence, version-1 migration,
temporary files, locking, and a 100,000-entry journal.

Expectations are derived independently of bayesdp's code: the journal lines are re-hashed with
hashlib from the documented format, a 100,000-entry journal is written by the encoder below (not by
bayesdp), and budgets are summed with ``fractions.Fraction`` from the decimals a user types.
"""

import hashlib
import json
import math
import os
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from bayesdp.cli import main
from bayesdp.curves import ApproxDP
from bayesdp.errors import BudgetError
from bayesdp.budget import ledger as ledger_mod
from bayesdp.publish import sensitivity as S
from bayesdp.budget.ledger import Ledger, noise_epsilon
from bayesdp.publish.release import release_statistic
from bayesdp.publish.statistics import SiteSpec, coordinate_means

ZERO = "0" * 64


# -- an independent encoder of the documented line format -------------------------------------------------------


def enc(body: dict) -> bytes:
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode()
    return raw[:-1] + b',"sum":"' + hashlib.sha256(raw).hexdigest().encode() + b'"}'


def sum_of(line: bytes) -> str:
    return json.loads(line)["sum"]


def lines_of(path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return data.split(b"\n")[:-1]


def write_lines(path, lines) -> None:
    path.write_bytes(b"\n".join(lines) + b"\n")


def rehash(line: bytes, **changes) -> bytes:
    """The line with fields changed and its checksum recomputed (an editor who knows the format)."""
    body = json.loads(line)
    del body["sum"]
    body.update(changes)
    return enc(body)


def spend(led, eps, delta=0.0, curve=None):
    with led.reserve(eps, delta, "test", "unit", curve=curve) as res:
        res.mark_drawn()
        res.commit({"values": [1.0]})
    return res


def refused_everywhere(path, capsys, match="tamper"):
    """Every reader and writer refuses with one line; the file is left as it was."""
    before = path.read_bytes()
    for call in (lambda: Ledger(path).summary(), lambda: Ledger(path).verify(), lambda: spend(Ledger(path), 0.01)):
        with pytest.raises(BudgetError, match=match) as e:
            call()
        assert "\n" not in str(e.value)
    assert main(["ledger", "show", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: ledger") and "Traceback" not in err
    assert path.read_bytes() == before


# -- the format ---------------------------------------------------------------------------------------------------


def test_lines_are_checksummed_and_chained(tmp_path):
    p = tmp_path / "l.jsonl"
    led = Ledger.open(p, budget_epsilon=1.0, dataset="d")
    spend(led, 0.25)
    with pytest.raises(RuntimeError):
        with led.reserve(0.5, 0.0, "test", "unit"):
            raise RuntimeError("refused before drawing")
    lines = lines_of(p)
    assert [json.loads(ln)["event"] for ln in lines] == ["header", "reserve", "commit", "reserve", "cancel"]
    prev = ZERO
    for i, ln in enumerate(lines):
        body = json.loads(ln)
        digest = body.pop("sum")
        # the checksum is the sha256 of the line without its ',"sum":"..."' suffix
        assert ln == enc(body) and hashlib.sha256(json.dumps(body, separators=(",", ":")).encode()).hexdigest() == digest
        assert body["seq"] == i and body["prev"] == prev
        prev = digest
    header = json.loads(lines[0])
    assert header["budget"] == {"epsilon": "1.0", "delta": "0"} and header["dataset"] == "d"
    reserve = json.loads(lines[1])
    assert reserve["epsilon"] == "0.25" and reserve["dp_event"] == {"type": "epsilon_delta", "epsilon": "0.25",
                                                                    "delta": "0"}
    assert json.loads(lines[4])["state"]["epsilon"] == "0.25"  # the cancelled 0.5 is refunded
    s = led.summary()
    assert s["head"] == {"seq": 4, "sha256": prev}
    assert s["num_releases"] == 1 and s["cancelled"] == 1 and s["pending"] == []


def test_reserve_appends_one_line_and_never_rewrites(tmp_path):
    p = tmp_path / "l.jsonl"
    led = Ledger.open(p, budget_epsilon=1.0)
    spend(led, 0.1)
    before = p.read_bytes()
    ino = os.stat(p).st_ino
    with led.reserve(0.1, 0.0, "test", "unit") as res:
        middle = p.read_bytes()
        res.mark_drawn()
        res.commit({"values": [2.0]})
    after = p.read_bytes()
    assert middle.startswith(before) and middle.count(b"\n") == before.count(b"\n") + 1  # the pending line
    assert after.startswith(middle) and after.count(b"\n") == middle.count(b"\n") + 1   # the commit line
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
    path = tmp_path / "l.jsonl"
    for i in range(10):
        res = release_statistic(rng.normal(size=(50, 3)), st, 0.1, path, coupling=coupling,
                                budget_epsilon=1.0 if i == 0 else None)
        # the noise costs (proven sensitivity + grid rounding) / scale <= 1/10, the recorded decimal
        eff = Fraction(res.proven_sensitivity) + 3 * Fraction(res.grid)
        assert eff / Fraction(res.noise_scale) <= Fraction(1, 10)
        assert res.epsilon == 0.1
    s = Ledger(path).summary()
    assert [r["epsilon_exact"] for r in s["releases"]] == ["0.1"] * 10
    assert Decimal(s["exact"]["remaining_basic"]["epsilon"]) == 0 and s["remaining_budget"]["epsilon"] == 0.0
    for r in s["releases"]:
        ev = r["dp_event"]
        assert ev["type"] == "laplace" and ev["noise_scale"] == r["released"]["noise_scale"]
        assert (Fraction(ev["l1_sensitivity"]) + Fraction(ev["grid_rounding"])) / Fraction(ev["noise_scale"]) \
            <= Fraction(1, 10)
    before = path.read_bytes()
    with pytest.raises(BudgetError, match="exceeds the budget"):
        release_statistic(rng.normal(size=(50, 3)), st, 0.1, path, coupling=coupling)
    assert path.read_bytes() == before


def test_decimal_strings_and_cli_budget(tmp_path, capsys):
    p = tmp_path / "l.jsonl"
    assert main(["ledger", "create", str(p), "--budget", "0.3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["exact"]["budget"]["epsilon"] == "0.3"
    led = Ledger(p)
    for eps in ("0.1", Decimal("0.1"), 0.1):
        spend(led, eps)
    with pytest.raises(BudgetError):
        led.check("1e-30")
    for bad in ("nan", "inf", "abc", True):
        with pytest.raises(BudgetError):
            led.check(bad)


def test_a_charge_below_the_mechanism_cost_is_refused_before_writing(tmp_path):
    p = tmp_path / "l.jsonl"
    led = Ledger.open(p, budget_epsilon=5.0)
    before = p.read_bytes()
    # Laplace of scale 1 on sensitivity 1 costs epsilon 1; charging 0.5 is a lie
    ev = ledger_mod.laplace_event(1.0, 0.0, 1.0)
    with pytest.raises(BudgetError, match="noise gives epsilon"):
        with led.reserve(0.5, 0.0, "test", "unit", event=ev):
            pytest.fail("must not run")
    with pytest.raises(BudgetError, match="curve says"):
        with led.reserve(0.5, 0.0, "test", "unit", curve=ApproxDP(1.0, 0.0)):
            pytest.fail("must not run")
    assert p.read_bytes() == before
    # a commit whose noise scale is below the one the charge covers is not returned; it stays charged
    with pytest.raises(BudgetError, match="not returned"):
        with led.reserve(1.0, 0.0, "test", "unit", event=ev, curve=ApproxDP(1.0, 0.0)) as res:
            res.mark_drawn()
            res.commit({"values": [0.0], "noise_scale": 0.5})
    s = Ledger(p).summary()
    assert [r["status"] for r in s["releases"]] == ["aborted"] and s["spent"]["basic"]["epsilon"] == 1.0


# -- tampering ----------------------------------------------------------------------------------------------------


def _two_laplace_releases(tmp_path):
    """Budget 3, two releases each charged 1.0 whose recorded noise (scale 1 on sensitivity 1) costs 1.0."""
    p = tmp_path / "l.jsonl"
    led = Ledger.open(p, budget_epsilon=3.0)
    for _ in range(2):
        with led.reserve(1.0, 0.0, "test", "unit", curve=ApproxDP(1.0, 0.0),
                         event=ledger_mod.laplace_event(1.0, 0.0, 1.0)) as res:
            res.mark_drawn()
            res.commit({"values": [0.5], "noise_scale": 1.0})
    assert [json.loads(ln)["event"] for ln in lines_of(p)] == ["header", "reserve", "commit", "reserve", "commit"]
    return p


def test_edited_epsilon_detected(tmp_path, capsys):
    p = _two_laplace_releases(tmp_path)
    lines = lines_of(p)
    lines[1] = lines[1].replace(b'"epsilon":"1.0"', b'"epsilon":"0.1"', 1)
    write_lines(p, lines)
    refused_everywhere(p, capsys)


def test_edited_epsilon_with_checksums_and_totals_recomputed_is_inconsistent(tmp_path, capsys):
    # the editor rewrites the last entry's charge, its running totals and checksum consistently:
    # the chain holds, but the entry's own noise scale and curve say 1.0
    p = tmp_path / "l.jsonl"
    led = Ledger.open(p, budget_epsilon=3.0)
    with led.reserve(1.0, 0.0, "test", "unit", curve=ApproxDP(1.0, 0.0),
                     event=ledger_mod.laplace_event(1.0, 0.0, 1.0)) as res:
        res.mark_drawn()
        res.commit({"values": [0.5], "noise_scale": 1.0})
    lines = lines_of(p)[:2]   # header + reserve (as if the commit never happened: a pending entry)
    st = json.loads(lines[1])["state"]
    lines[1] = rehash(lines[1], epsilon="0.1", state={**st, "epsilon": "0.1", "pure": "0.1"})
    write_lines(p, lines)
    refused_everywhere(p, capsys, match="inconsistent: its noise gives epsilon 1")


def test_reordered_lines_detected(tmp_path, capsys):
    p = _two_laplace_releases(tmp_path)
    lines = lines_of(p)
    lines[1], lines[3] = lines[3], lines[1]
    write_lines(p, lines)
    refused_everywhere(p, capsys)


def test_deleted_line_detected(tmp_path, capsys):
    p = _two_laplace_releases(tmp_path)
    lines = lines_of(p)
    write_lines(p, lines[:1] + lines[2:])   # the first reserve deleted
    refused_everywhere(p, capsys)


def test_deleted_last_lines_detected_against_an_anchor(tmp_path, capsys):
    p = _two_laplace_releases(tmp_path)
    head = Ledger(p).summary()["head"]["sha256"]
    assert head == sum_of(lines_of(p)[-1])
    assert main(["ledger", "verify", str(p), "--head", head]) == 0
    capsys.readouterr()
    write_lines(p, lines_of(p)[:3])   # the whole second release removed: a valid shorter chain
    assert Ledger(p).verify()["num_releases"] == 1        # not detectable without an anchor (docs/ledger.md)
    with pytest.raises(BudgetError, match="anchored head"):
        Ledger(p).verify(head=head)
    assert main(["ledger", "verify", str(p), "--head", head]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "anchored head" in err


def test_raised_budget_detected(tmp_path, capsys):
    p = _two_laplace_releases(tmp_path)
    lines = lines_of(p)
    edited = lines[0].replace(b'"epsilon":"3.0"', b'"epsilon":"30"', 1)
    assert edited != lines[0]
    write_lines(p, [edited] + lines[1:])
    refused_everywhere(p, capsys)
    # with the header's checksum recomputed, the next line's prev no longer matches
    write_lines(p, [rehash(lines[0], budget={"epsilon": "30", "delta": "0"})] + lines[1:])
    refused_everywhere(p, capsys)
    # and the budget cannot be changed through the API either
    write_lines(p, lines)
    with pytest.raises(BudgetError, match="cannot be changed"):
        Ledger.open(p, budget_epsilon=30.0)


def test_truncated_line_detected(tmp_path, capsys):
    p = _two_laplace_releases(tmp_path)
    lines = lines_of(p)
    write_lines(p, lines[:1] + [lines[1][: len(lines[1]) // 2]] + lines[2:])
    refused_everywhere(p, capsys)


def test_truncated_last_line_counts_as_an_interrupted_write_and_stays_charged(tmp_path, capsys):
    # the end of a file cut inside its last line is what a writer killed inside write() leaves:
    # reported, never refunded (the cut commit leaves its entry pending, hence charged)
    p = _two_laplace_releases(tmp_path)
    data = p.read_bytes()
    p.write_bytes(data[:-40])
    s = Ledger(p).summary()
    assert any("incomplete line" in w for w in s["warnings"])
    assert s["pending"] == [2] and s["spent"]["basic"]["epsilon"] == 2.0
    assert main(["ledger", "show", str(p)]) == 0
    out = capsys.readouterr().out
    assert "incomplete line" in out and "pending" in out
    # the next write acknowledges the fragment in a 'torn' line; the journal checks out again
    spend(Ledger(p), 0.5)
    kinds = [json.loads(ln)["event"] for ln in lines_of(p)[-3:]]
    assert kinds == ["torn", "reserve", "commit"]
    s = Ledger(p).verify()
    assert s["spent"]["basic"]["epsilon"] == 2.5 and s["warnings"] == [s["warnings"][0]] and s["pending"] == [2]


def test_cut_reserve_line_with_readable_charge_stays_charged(tmp_path):
    p = tmp_path / "l.jsonl"
    led = Ledger.open(p, budget_epsilon=1.0)
    spend(led, 0.25)
    with led.reserve(0.5, 0.0, "test", "unit") as res:
        res.mark_drawn()
        res.commit({"values": [1.0]})
    lines = lines_of(p)
    cut = lines[-2][:120]            # the reserve line cut after its charge, the commit never written
    assert b'"epsilon":"0.5","delta":"0",' in cut
    p.write_bytes(b"\n".join(lines[:-2]) + b"\n" + cut)
    assert Ledger(p).summary()["spent"]["basic"]["epsilon"] == 0.75
    with pytest.raises(BudgetError, match="exceeds"):
        spend(Ledger(p), 0.5)
    spend(Ledger(p), 0.25)
    s = Ledger(p).verify()
    assert [r["status"] for r in s["releases"]] == ["committed", "torn", "committed"]
    assert Decimal(s["exact"]["remaining_basic"]["epsilon"]) == 0


def test_edited_version1_entry_refused(tmp_path, capsys):
    doc = _v1_doc()
    doc["releases"][0]["epsilon"] = 0.01      # its curve and its noise scale say 0.1
    p = tmp_path / "v1.json"
    p.write_text(json.dumps(doc, indent=1))
    refused_everywhere(p, capsys, match="inconsistent")


# -- version-1 files ----------------------------------------------------------------------------------------------


def _v1_doc():
    rel = [{"id": i, "status": st, "time": "2025-01-01T00:00:00+00:00", "mechanism": "mc-estimate",
            "source": "004 Proposition 3.7 + coupling", "epsilon": 0.1, "delta": 0.0,
            "curve": {"kind": "approx", "epsilon": 0.1, "delta": 0.0}, "what": "mean",
            "released": None if st == "pending" else {"values": [1.5], "noise_scale": 10.000000000000002,
                                                      "sensitivity": 1.0000000000000002}}
           for i, st in ((1, "committed"), (3, "pending"))]
    return {"format": "bayesdp-ledger", "version": 1, "dataset": "d", "created": "2025-01-01T00:00:00+00:00",
            "budget": {"epsilon": 1.0, "delta": 0.0}, "releases": rel}


def test_version1_file_read_then_migrated_on_first_write(tmp_path):
    p = tmp_path / "v1.json"
    old = json.dumps(_v1_doc(), indent=1).encode()
    p.write_bytes(old)
    s = Ledger(p).summary()
    assert s["num_releases"] == 2 and s["pending"] == [3] and "v1" in s["format"]
    Ledger.open(p, budget_epsilon=1.0, dataset="d").check(0.1)
    with pytest.raises(BudgetError):
        spend(Ledger(p), 0.9)                # refused: no write, not even the conversion
    assert p.read_bytes() == old
    # the two version-1 entries are charged the exact doubles their noise was calibrated to
    used = 2 * Fraction(0.1)
    fit = max(k for k in range(20) if used + k * Fraction(1, 10) <= 1)
    assert fit == 7                         # not 8: 2 * 0.1000000000000000055... + 8/10 > 1
    for _ in range(fit):
        spend(Ledger(p), 0.1)
    with pytest.raises(BudgetError):
        Ledger(p).check(0.1)
    lines = lines_of(p)
    header = json.loads(lines[0])
    assert header["migrated_from"]["sha256"] == hashlib.sha256(old).hexdigest()
    assert header["budget"] == {"epsilon": "1.0", "delta": "0"}
    first = json.loads(lines[1])
    assert first["id"] == 1 and Fraction(Decimal(first["epsilon"])) == Fraction(0.1) and first["legacy"] is True
    s = Ledger(p).verify()
    assert [r["id"] for r in s["releases"]][:2] == [1, 3] and s["pending"] == [3]
    assert s["releases"][0]["released"]["values"] == [1.5]


# -- files and locks ----------------------------------------------------------------------------------------------


def test_stale_temporary_files_are_cleaned(tmp_path):
    p = tmp_path / "l.jsonl"
    led = Ledger.open(p, budget_epsilon=1.0)
    stale = [tmp_path / ".l.jsonl.abc123.tmp", tmp_path / ".l.jsonl.x.tmp"]
    other = tmp_path / ".other.jsonl.abc.tmp"
    for f in stale + [other]:
        f.write_text("partial")
    spend(led, 0.1)
    assert not any(f.exists() for f in stale) and other.exists()


def test_lock_is_a_filelock_held_during_the_reservation(tmp_path, monkeypatch):
    import filelock

    p = tmp_path / "l.jsonl"
    led = Ledger.open(p, budget_epsilon=1.0)
    monkeypatch.setattr(ledger_mod, "LOCK_TIMEOUT_S", 0.3)
    with filelock.FileLock(str(p) + ".lock"):
        with pytest.raises(BudgetError, match="still locked"):
            spend(led, 0.1)
    with led.reserve(0.1, 0.0, "test", "unit") as res:
        with pytest.raises(filelock.Timeout):
            filelock.FileLock(str(p) + ".lock", timeout=0.05).acquire()
        res.mark_drawn()
        res.commit({})


# -- a 100,000-entry journal --------------------------------------------------------------------------------------


def _big_journal(path, n):
    """n committed entries of epsilon 0.000001, written by the independent encoder above."""
    st = {"last_id": 0, "charged": 0, "epsilon": "0", "delta": "0", "no_rdp": 0, "non_gdp": 0, "pure": "0",
          "mu2": "0", "kappa": "0"}
    head = {"seq": 0, "event": "header", "format": "bayesdp-ledger-journal", "version": 2, "dataset": "big",
            "created": "2025-01-01T00:00:00+00:00", "budget": {"epsilon": "1", "delta": "0"},
            "migrated_from": None, "state": dict(st), "prev": ZERO}
    last = enc(head)
    out = [last]
    for i in range(1, n + 1):
        tot = str(Decimal(i).scaleb(-6))     # i * 0.000001, exactly
        st = dict(st, last_id=i, charged=i, epsilon=tot, non_gdp=i, pure=tot)
        for body in ({"seq": 2 * i - 1, "event": "reserve", "id": i, "epsilon": "0.000001", "delta": "0",
                      "time": "t", "mechanism": "m", "source": "s", "what": "", "curve": {"kind": "approx",
                      "epsilon": 1e-6, "delta": 0.0}, "dp_event": {"type": "epsilon_delta", "epsilon": "0.000001",
                                                                   "delta": "0"}},
                     {"seq": 2 * i, "event": "commit", "id": i, "time": "t", "released": {"values": [float(i)]}}):
            body.update(state=st, prev=sum_of(last))
            last = enc(body)
            out.append(last)
    path.write_bytes(b"\n".join(out) + b"\n")


def test_100000_entry_journal_show_and_constant_cost_append(tmp_path, monkeypatch, capsys):
    p = tmp_path / "big.jsonl"
    n = 100_000
    _big_journal(p, n)
    assert main(["ledger", "show", str(p)]) == 0     # the whole journal replayed and checked
    out = capsys.readouterr().out
    assert f"releases  {n} charged (0 pending)" in out and out.count("\n") < 40   # the last 20 entries only
    spent = out.split("basic: epsilon ")[1].split(",")[0]
    assert Fraction(Decimal(spent)) == Fraction(n, 10 ** 6)
    assert f"{n:>6}  committed" in out
    before = p.read_bytes()

    def no_full_read(*a, **k):
        raise AssertionError("a release must not replay the whole journal")

    real_read = ledger_mod._read_bytes

    def read_bytes(path, limit=-1):
        assert 0 <= limit <= 64, "a release must not read the whole journal"
        return real_read(path, limit)

    monkeypatch.setattr(ledger_mod, "_replay_full", no_full_read)
    monkeypatch.setattr(ledger_mod, "_read_bytes", read_bytes)
    led = Ledger.open(p)
    with led.reserve("0.5", 0.0, "test", "unit") as res:
        grown = p.read_bytes()
        assert grown.startswith(before) and grown.count(b"\n") == before.count(b"\n") + 1
        assert json.loads(grown[len(before):])["event"] == "reserve"
        res.mark_drawn()
        res.commit({"values": [0.0]})
    after = p.read_bytes()
    assert after.startswith(grown) and after.count(b"\n") == grown.count(b"\n") + 1
    assert Fraction(Decimal(res.summary["exact"]["spent_basic"]["epsilon"])) == Fraction(n, 10 ** 6) + Fraction(1, 2)
    monkeypatch.undo()
    assert Ledger(p).verify()["num_releases"] == n + 1


def test_release_path_checks_header_and_tail_of_a_long_journal(tmp_path, monkeypatch, capsys):
    # a release reads the header, the line after it and the last TAIL_BYTES only (docs/ledger.md §3)
    monkeypatch.setattr(ledger_mod, "TAIL_BYTES", 2000)
    p = tmp_path / "l.jsonl"
    led = Ledger.open(p, budget_epsilon=1.0)
    for _ in range(20):
        spend(led, 0.01)
    lines = lines_of(p)
    assert len(b"\n".join(lines)) > 4 * 2000
    led.check(0.01)
    # budget raised and the header's checksum recomputed
    write_lines(p, [rehash(lines[0], budget={"epsilon": "10", "delta": "0"})] + lines[1:])
    with pytest.raises(BudgetError, match="header"):
        led.check(0.01)
    # the last line's running totals lowered and its checksum recomputed
    st = json.loads(lines[-1])["state"]
    write_lines(p, lines[:-1] + [rehash(lines[-1], state={**st, "epsilon": "0.1", "pure": "0.1"})])
    with pytest.raises(BudgetError, match="running totals"):
        led.check(0.01)
    write_lines(p, lines)
    spend(led, 0.01)
    assert Ledger(p).verify()["num_releases"] == 21


@pytest.mark.parametrize("change", [dict(curve="not a curve"), dict(epsilon=1.5), dict(dp_event=None, id="7"),
                                    dict(state=[1, 2]), dict(curve={"kind": "gdp"})])
def test_malformed_lines_with_valid_checksums_refused_in_one_line(tmp_path, capsys, change):
    p = _two_laplace_releases(tmp_path)
    lines = lines_of(p)
    write_lines(p, lines[:3] + [rehash(lines[3], **change)])   # the last line: its checksum and chain hold
    refused_everywhere(p, capsys, match="tamper check failed")
