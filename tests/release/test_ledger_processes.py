"""The ledger under real processes: concurrent releases and ``kill -9`` at random points of a release.

Each check has a fast version in the default suite and a longer one marked ``slow``.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time
from decimal import Decimal
from fractions import Fraction

import pytest

from bayesdp.cli import main
from bayesdp.budget.ledger import Ledger

_RELEASE = r"""
import json, os, sys, time
import numpy as np
from bayesdp.errors import BudgetError
from bayesdp.publish import sensitivity as S
from bayesdp.publish.release import release_statistic
from bayesdp.publish.statistics import SiteSpec, coordinate_means
path, start, eps = sys.argv[1], sys.argv[2], sys.argv[3]
st = coordinate_means([SiteSpec("theta", 2)])
coupling = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)
draws = np.random.default_rng(os.getpid()).normal(size=(20, 2))
print("ready", flush=True)
while not os.path.exists(start):
    time.sleep(0.001)
try:
    res = release_statistic(draws, st, float(eps), path, coupling=coupling)
except BudgetError:
    sys.exit(3)
print(json.dumps({"values": [float(v) for v in res.values], "head": res.ledger_head["sha256"]}), flush=True)
"""


_RESERVE = r"""
import json, os, secrets, sys, time
from bayesdp.errors import BudgetError
from bayesdp.budget.ledger import Ledger
path, start, eps = sys.argv[1], sys.argv[2], sys.argv[3]
print("ready", flush=True)
while not os.path.exists(start):
    time.sleep(0.001)
try:
    with Ledger(path).reserve(eps, 0.0, "race", "unit") as res:
        res.mark_drawn()
        values = [secrets.randbits(32)]
        time.sleep(0.01)
        res.commit({"values": values})
except BudgetError:
    sys.exit(3)
print(json.dumps({"values": values, "head": res.head["sha256"]}), flush=True)
"""


def _concurrent(tmp_path, n_procs, budget, eps, worker):
    path = tmp_path / "l.jsonl"
    Ledger.open(path, budget=budget)
    start = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", worker, str(path), str(start), eps], stdout=subprocess.PIPE,
                              text=True, env=env) for _ in range(n_procs)]
    for p in procs:                       # every process has imported everything and waits at the start line
        assert p.stdout.readline().strip() == "ready"
    start.write_text("go")
    outs = [p.communicate(timeout=120)[0] for p in procs]
    return path, [p.returncode for p in procs], outs


@pytest.mark.parametrize("worker", [pytest.param(_RESERVE, id="reserve"),
                                    pytest.param(_RELEASE, id="release_statistic", marks=pytest.mark.slow)])
def test_eight_concurrent_releases_against_a_budget_of_five(tmp_path, worker):
    # budget 0.5, releases of 0.1: exactly five fit (decimal arithmetic; as binary doubles only four would)
    assert sum([Fraction(0.1)] * 5) > Fraction(0.5)
    n_procs = 8
    path, codes, outs = _concurrent(tmp_path, n_procs, "0.5", "0.1", worker)
    assert sorted(codes) == [0] * 5 + [3] * (n_procs - 5)
    s = Ledger(path).verify()
    assert s["num_releases"] == 5 and all(r["status"] == "committed" for r in s["entries"])
    assert Decimal(s["exact"]["spent_basic"]["epsilon"]) == Decimal("0.5")
    released = [r["released"]["values"] for r in s["entries"]]
    for code, out in zip(codes, outs):
        if code == 0:
            printed = json.loads(out)
            assert printed["values"] in released and Ledger(path).verify(head=printed["head"])


# -- kill -9 at random points ------------------------------------------------------------------------------------

# The releasing processes are forked from one process that has imported bayesdp once (a "zygote"): each round
# is still a separate process killed by SIGKILL at a random point of its releases, but does not pay the 2-3 s of
# importing JAX and NumPyro (30 rounds: about 75 s of CPU of the slow tier).  Forking is safe here because a
# coupling release of given draws never starts JAX's backends (threads); the zygote checks that before each fork.
_ZYGOTE = r"""
import json, os, sys
import numpy as np
from jax._src import xla_bridge
from bayesdp.publish import sensitivity as S
from bayesdp.publish.release import release_statistic
from bayesdp.publish.statistics import SiteSpec, coordinate_means
path = sys.argv[1]
st = coordinate_means([SiteSpec("theta", 2)])
coupling = S.coupling_strongly_convex(0.1, 1.0, 4.0, 0.5)
print("ready", flush=True)
for line in sys.stdin:                  # one line per round: the file the round's process prints its releases to
    if xla_bridge.backends_are_initialized():
        sys.exit("JAX's backends started in the zygote: forking it is not safe")
    pid = os.fork()
    if pid == 0:                        # the round's process: releases until it is killed
        out = open(line.strip(), "w")
        draws = np.random.default_rng(os.getpid()).normal(size=(20, 2))
        while True:
            res = release_statistic(draws, st, 0.001, path, coupling=coupling)
            out.write(json.dumps({"values": [float(v) for v in res.values], "head": res.ledger_head["sha256"]})
                      + "\n")
            out.flush()
    print(pid, flush=True)
    _, status = os.waitpid(pid, 0)
    print(status, flush=True)
"""


def _kill_rounds(tmp_path, capsys, rounds, seed):
    path = tmp_path / "l.jsonl"
    Ledger.open(path, budget=1000)
    rnd = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    zygote = subprocess.Popen([sys.executable, "-c", _ZYGOTE, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert zygote.stdout.readline().strip() == "ready"
        printed_total = 0
        for i in range(rounds):
            out_file = tmp_path / f"round{i}.out"
            zygote.stdin.write(f"{out_file}\n")
            zygote.stdin.flush()
            pid = int(zygote.stdout.readline())
            time.sleep(rnd.uniform(0.02, 0.4))     # tens of releases (reserve, draw, commit) happen meanwhile
            os.kill(pid, signal.SIGKILL)
            status = int(zygote.stdout.readline())
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL   # killed, not crashed
            out = out_file.read_bytes()
            out_file.unlink()
            printed = [json.loads(ln) for ln in out.splitlines() if ln.endswith(b"}")]
            printed_total += len(printed)
            _check_after_kill(path, printed, capsys)
    finally:
        zygote.stdin.close()
        zygote.wait(timeout=60)
    assert zygote.returncode == 0
    assert printed_total > 0
    leftovers = [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert leftovers == []


def _check_after_kill(path, printed, capsys):
    # the file is readable and checks out; every printed release is recorded as committed
    s = Ledger(path).verify()
    released = {json.dumps(r["released"]["values"]) for r in s["entries"] if r["status"] == "committed"}
    for pr in printed:
        assert json.dumps(pr["values"]) in released
        assert Ledger(path).verify(head=pr["head"])
    # every entry, pending or not, is charged: spent = 0.001 x entries, exactly
    assert Fraction(Decimal(s["exact"]["spent_basic"]["epsilon"])) == Fraction(s["num_releases"], 1000)
    assert len(s["pending"]) <= 1
    if s["pending"]:
        # visible in show, resolvable; still charged after resolution
        assert main(["ledger", "show", str(path)]) == 0
        out = capsys.readouterr().out
        assert "pending" in out and f"{s['pending'][0]:>6}  pending" in out
        assert main(["ledger", "resolve", str(path)]) == 0
        assert f"resolved 1 pending entry: {s['pending'][0]}" in capsys.readouterr().out
        after = Ledger(path).verify()
        assert after["pending"] == [] and after["num_releases"] == s["num_releases"]
        assert after["exact"]["spent_basic"] == s["exact"]["spent_basic"]


def test_kill9_at_random_points_of_a_release(tmp_path, capsys):
    _kill_rounds(tmp_path, capsys, rounds=3, seed=1)


@pytest.mark.slow
def test_kill9_at_random_points_of_a_release_many(tmp_path, capsys):
    _kill_rounds(tmp_path, capsys, rounds=30, seed=2)


_PENDING = r"""
import os, sys
from bayesdp.budget.ledger import Ledger
with Ledger(sys.argv[1]).reserve(0.25, 0.0, "test", "unit") as res:
    res.mark_drawn()
    os._exit(0)          # dies after drawing, before the commit: a pending entry
"""


def test_pending_entry_left_by_a_crash_is_charged_shown_and_resolved(tmp_path, capsys):
    path = tmp_path / "l.jsonl"
    Ledger.open(path, budget=1.0)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", _PENDING, str(path)], check=True, env=env, timeout=120)
    s = Ledger(path).summary()
    assert s["pending"] == [1, 2] and s["remaining_budget"]["epsilon"] == 0.5
    assert main(["ledger", "show", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending"] == [1, 2]
    assert main(["ledger", "resolve", str(path), "--id", "2", "--note", "crash on host x"]) == 0
    capsys.readouterr()
    s = Ledger(path).summary()
    assert s["pending"] == [1] and s["entries"][1]["status"] == "resolved"
    assert s["entries"][1]["note"] == "crash on host x"
    # refusals: an unknown id, an entry that is not pending
    for bad in ("7", "2"):
        before = path.read_bytes()
        assert main(["ledger", "resolve", str(path), "--id", bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--id {bad}" in err and path.read_bytes() == before
    assert main(["ledger", "resolve", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["resolved"] == [1] and out["summary"]["pending"] == []
    assert out["summary"]["remaining_budget"]["epsilon"] == 0.5     # resolved entries stay charged
