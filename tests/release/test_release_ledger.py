"""Ledger: composition rules, refusal before drawing, corrupt files, real-process races and kills."""

import json
import math
import re
from decimal import Decimal
import os
import signal
import subprocess
import sys
import time

import pytest

from bayesdp.cli import main
from bayesdp.curves import GDP, ApproxDP
from bayesdp.errors import BudgetError
from bayesdp.budget.ledger import Ledger


def _spend(led, eps, delta=0.0, curve=None):
    with led.reserve(eps, delta, "test", "unit", curve=curve) as res:
        res.mark_drawn()
        res.commit({"values": [1.0]})
    return res.summary


def test_create_spend_and_refuse(tmp_path):
    path = tmp_path / "l.json"
    led = Ledger.open(path, budget=1.0)
    s = _spend(led, 0.25)
    assert s["remaining_budget"]["epsilon"] == 0.75
    _spend(led, 0.5)
    before = path.read_bytes()
    with pytest.raises(BudgetError) as e:
        with led.reserve(0.5, 0.0, "test", "unit"):
            pytest.fail("body must not run when over budget")
    assert "\n" not in str(e.value) and "nothing was drawn" in str(e.value)
    assert path.read_bytes() == before
    _spend(led, 0.25)  # exactly the rest (exact arithmetic)
    assert led.summary()["remaining_budget"]["epsilon"] == 0.0
    with pytest.raises(BudgetError, match=r"epsilon = 0\.000000001, delta = 0 exceeds the budget of ledger "
            r".*remaining epsilon 0, delta 0\)"):
        led.check(1e-9)


def test_exact_sums_no_rounding_overspend(tmp_path):
    # decimal budgets: 0.1 + 0.1 + 0.1 = 0.3 exactly, so a budget of 0.3 admits three releases of 0.1
    # (as binary doubles the sum is 0.30000000000000004 > 0.29999999999999998890 and the third was refused)
    led = Ledger.open(tmp_path / "l.json", budget=0.3)
    _spend(led, 0.1)
    _spend(led, 0.1)
    led.check(0.1)
    _spend(led, 0.1)
    assert Decimal(led.summary()["exact"]["remaining_basic"]["epsilon"]) == 0
    # nothing more, not even the smallest positive double
    with pytest.raises(BudgetError, match=r"epsilon = 5E-324, delta = 0 exceeds the budget of ledger "
            r".*remaining epsilon 0, delta 0\)"):
        led.check(5e-324)


def test_bad_epsilon_and_missing_ledger(tmp_path):
    led = Ledger.open(tmp_path / "l.json", budget=1.0)
    for bad in (0.0, -1.0, math.nan):
        why = "finite" if bad != bad else "> 0"      # nan is not > 0 either: finiteness is checked first
        with pytest.raises(BudgetError, match=re.escape(f"epsilon = {bad} must be {why}")):
            led.check(bad)
    with pytest.raises(BudgetError, match="does not exist"):
        Ledger.open(tmp_path / "missing.json")
    with pytest.raises(BudgetError, match="cannot be changed"):
        Ledger.open(tmp_path / "l.json", budget=2.0)
    with pytest.raises(BudgetError, match=r"budget = -1\.0 must be a positive finite epsilon"):
        Ledger.open(tmp_path / "new.json", budget=-1.0)


def test_exception_before_draw_refunds_after_draw_charges(tmp_path):
    led = Ledger.open(tmp_path / "l.json", budget=1.0)
    with pytest.raises(RuntimeError, match="bad input found before noise"):
        with led.reserve(0.5, 0.0, "test", "unit"):
            raise RuntimeError("bad input found before noise")
    assert led.summary()["num_releases"] == 0
    with pytest.raises(RuntimeError, match="crash after noise"):
        with led.reserve(0.5, 0.0, "test", "unit") as res:
            res.mark_drawn()
            raise RuntimeError("crash after noise")
    s = led.summary()
    assert s["num_releases"] == 1 and s["entries"][0]["status"] == "aborted"
    assert s["remaining_budget"]["epsilon"] == 0.5


def test_basic_delta_composition_and_curve_composition(tmp_path):
    # budget (eps 2, delta 1e-5); three 0.15-GDP releases, each charged (eps at delta 1e-6, 1e-6).
    led = Ledger.open(tmp_path / "l.json", budget=2.0, budget_delta=1e-5)
    g = GDP(0.15)
    e1 = g.epsilon(1e-6)
    for _ in range(3):
        _spend(led, e1, 1e-6, curve=g)
    s = led.summary()
    assert s["spent"]["basic"]["epsilon"] == pytest.approx(3 * e1)
    assert s["spent"]["basic"]["delta"] == pytest.approx(3e-6)
    # composed: sqrt(3)*0.15-GDP at delta 1e-5 (Dong-Roth-Su Cor. 3.3), via the exact GDP curve
    composed = GDP(math.sqrt(3) * 0.15).epsilon(1e-5)
    assert s["spent"]["curve_epsilon_at_budget_delta"] == pytest.approx(composed, rel=1e-6)
    assert composed < 3 * e1
    assert s["spent"]["epsilon"] == pytest.approx(composed, rel=1e-6)
    assert s["spent"]["rule"].startswith("curve")
    # a 4th release fits only by curve composition: basic 4*e1 > 2, but 0.3-GDP at 1e-5 <= 2
    assert 4 * e1 > 2.0 and GDP(0.3).epsilon(1e-5) < 2.0
    led.check(e1, 1e-6, curve=g)
    # a release without a GDP curve disables the GDP rule; the PLD rule (docs/ledger.md) composes the three
    # Gaussians with the pair's dominating (Kairouz-Oh-Viswanath) PLD.  That composition is at most the sum of
    # the sqrt(3) * 0.15-GDP epsilon at 1e-5 - 1e-6 and the pair's epsilon (basic composition), so a pair 0.01
    # below 2 minus the former is admitted (the discretisation costs less than 0.01) ...
    rest = 2.0 - GDP(math.sqrt(3) * 0.15).epsilon(1e-5 - 1e-6)
    assert led.check(rest - 0.01, 1e-6, curve=ApproxDP(rest - 0.01, 1e-6))["admitted_by"].startswith("PLD")
    # ... and at least the pair's own epsilon at delta 1e-5: for (2.01, 1e-6) that is above 2
    # (delta(e') = 1e-6 + (1 - 1e-6)(e^2.01 - e^e') / (1 + e^2.01) <= 1e-5 needs e' > 2.01 - 1e-5), so it is refused
    with pytest.raises(BudgetError, match="exceeds the budget"):
        led.check(2.01, 1e-6, curve=ApproxDP(2.01, 1e-6))
    _spend(led, e1, 1e-6, curve=g)
    assert led.summary()["within_budget"]


def test_corrupt_and_foreign_files_refused_unchanged(tmp_path):
    cases = {
        "garbage.json": b"\x00\x01not json",
        "foreign.json": json.dumps({"hello": 1}).encode(),
        "wrong_version.json": json.dumps({"format": "bayesdp-ledger", "version": 99}).encode(),
        "neg_eps.json": json.dumps({"format": "bayesdp-ledger", "version": 1, "budget": {"epsilon": 1, "delta": 0},
                                    "releases": [{"id": 1, "status": "committed", "time": "t", "mechanism": "m",
                                                  "source": "s", "epsilon": -5, "delta": 0, "curve": None}]}).encode(),
        "truncated.json": b'{"format": "bayesdp-ledger", "version": 1, "budget": {"epsi',
    }
    # a ledger is an SQLite file; JSON whose first line names a bayesdp ledger format is taken for the journal of an
    # earlier version (`bayesdp ledger import` then validates it), other JSON is not a ledger; both refusals name
    # the file
    for name, content in cases.items():
        p = tmp_path / name
        p.write_bytes(content)
        why = "is not a bayesdp ledger (not an SQLite file)" if name in ("garbage.json", "foreign.json") else \
            "is a JSON journal of an earlier bayesdp; convert it once with `bayesdp ledger import"
        with pytest.raises(BudgetError, match=re.escape(f"ledger {p} {why}")) as e:
            Ledger.open(p, budget=1.0)
        assert "\n" not in str(e.value)
        with pytest.raises(BudgetError, match=re.escape(f"ledger {p} {why}")):
            Ledger(p).check(0.1)
        assert p.read_bytes() == content


def test_cli_show(tmp_path, capsys):
    p = tmp_path / "l.json"
    led = Ledger.open(p, budget=2.0, dataset="bc")
    _spend(led, 0.5)
    assert main(["ledger", "show", str(p), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["remaining_budget"]["epsilon"] == 1.5 and out["num_releases"] == 1
    assert main(["ledger", "show", str(p)]) == 0
    assert "remaining epsilon 1.5" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert main(["ledger", "show", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ledger")


# -- real processes ----------------------------------------------------------

_WORKER = r"""
import sys, time, os
from bayesdp.budget.ledger import Ledger
from bayesdp.errors import BudgetError
path, start, eps = sys.argv[1], sys.argv[2], float(sys.argv[3])
while not os.path.exists(start):
    time.sleep(0.001)
led = Ledger(path)
try:
    with led.reserve(eps, 0.0, "race", "unit") as res:
        res.mark_drawn()
        time.sleep(0.01)
        res.commit({"pid": os.getpid()})
except BudgetError:
    sys.exit(3)
sys.exit(0)
"""


def test_concurrent_processes_cannot_overspend(tmp_path):
    path = tmp_path / "l.json"
    Ledger.open(path, budget=2.0)
    start = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(path), str(start), "1.0"]) for _ in range(4)]
    time.sleep(0.2)
    start.write_text("go")
    codes = [p.wait(timeout=60) for p in procs]
    assert sorted(codes) == [0] * 2 + [3] * 2
    s = Ledger(path).summary()
    assert s["num_releases"] == 2
    assert all(r["status"] == "committed" for r in s["entries"])
    assert s["spent"]["basic"]["epsilon"] == 2.0


_SLOW = r"""
import sys, time, os
from bayesdp.budget.ledger import Ledger
path, ready = sys.argv[1], sys.argv[2]
led = Ledger(path)
with led.reserve(0.4, 0.0, "kill", "unit") as res:
    res.mark_drawn()
    open(ready, "w").write("x")
    time.sleep(60)
    res.commit({})
"""

_LOOP = r"""
import sys
from bayesdp.budget.ledger import Ledger
led = Ledger(sys.argv[1])
open(sys.argv[2], "w").write("x")
while True:
    with led.reserve(1e-6, 0.0, "loop", "unit") as res:
        res.mark_drawn()
        res.commit({"v": [1.0] * 50})
"""


def test_killed_mid_release_leaves_valid_charged_ledger(tmp_path):
    path = tmp_path / "l.json"
    Ledger.open(path, budget=1.0)
    ready = tmp_path / "ready"
    p = subprocess.Popen([sys.executable, "-c", _SLOW, str(path), str(ready)])
    t0 = time.time()
    while not ready.exists():
        assert time.time() - t0 < 60 and p.poll() is None
        time.sleep(0.01)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    s = Ledger(path).summary()  # parses and validates
    assert s["num_releases"] == 1 and s["entries"][0]["status"] == "pending"
    assert s["remaining_budget"]["epsilon"] == pytest.approx(0.6)  # still charged
    # lock released by the kernel: a new release proceeds, and the pending spend still counts
    led = Ledger(path)
    _spend(led, 0.6)
    with pytest.raises(BudgetError, match=r"epsilon = 0\.01, delta = 0 exceeds the budget of ledger .*remaining "
            r"epsilon 0, delta 0\)"):
        led.check(0.01)


def test_killed_at_random_times_during_writes(tmp_path):
    path = tmp_path / "l.json"
    Ledger.open(path, budget=100.0)
    import random

    rnd = random.Random(0)
    for i in range(3):
        started = tmp_path / f"started{i}"
        p = subprocess.Popen([sys.executable, "-c", _LOOP, str(path), str(started)])
        t0 = time.time()
        while not started.exists():
            assert time.time() - t0 < 60 and p.poll() is None
            time.sleep(0.005)
        time.sleep(rnd.uniform(0.05, 0.3))  # many reserve/commit writes happen meanwhile
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        s = Ledger(path).verify()  # parses and checks the whole journal
        assert len(s["pending"]) <= i + 1  # at most one pending entry per kill
        assert s["spent"]["basic"]["epsilon"] == pytest.approx(1e-6 * s["num_releases"])
    assert Ledger(path).summary()["num_releases"] > 0


def test_cli_create(tmp_path, capsys):
    p = tmp_path / "new.json"
    assert main(["ledger", "create", str(p), "--budget", "1.5", "--budget-delta", "1e-6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["budget"] == {"epsilon": 1.5, "delta": 1e-6}
    assert main(["ledger", "create", str(p), "--budget", "1.5"]) == 2  # exists
    assert main(["ledger", "create", str(tmp_path / "x.json"), "--budget", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: ledger {p} already exists; use `bayesdp ledger show {p}`",
                   "error: budget = '-1' must be a positive finite epsilon"]


def test_pure_releases_reported_with_basic_rule_when_delta_budget(tmp_path):
    led = Ledger.open(tmp_path / "l.json", budget=1.0, budget_delta=1e-5)
    _spend(led, 0.5, 0.0, curve=ApproxDP(0.5, 0.0))
    s = led.summary()
    assert s["spent"]["rule"] == "basic composition"
    assert s["remaining_budget"] == {"epsilon": 0.5, "delta": 1e-5}


def test_reopen_with_same_budget_epsilon_and_unspecified_delta(tmp_path):
    p = tmp_path / "l.json"
    Ledger.open(p, budget=1.0, budget_delta=1e-6)
    Ledger.open(p, budget=1.0)  # --budget repeated, delta not given: accepted
    with pytest.raises(BudgetError, match=r"budget = 1\.0 \(budget_delta 1e-05\) differs from the budget "
            r".*delta 0\.000001\); a ledger's budget cannot be changed"):
        Ledger.open(p, budget=1.0, budget_delta=1e-5)
    assert Ledger(p).summary()["budget"] == {"epsilon": 1.0, "delta": 1e-6}
