"""`bayesdp bench release` (issue 24's breakdown): the default release it times runs, in three fresh processes.

It silently broke once: the release it ran (delta = 0, the coupling release) became a refusal (predicted worse than
the prior, docs/release.md §12), and nothing ran the bench.  This runs it small (slow tier: three processes)."""

import argparse

import pytest

from bayesdp.bench.release import run


@pytest.mark.slow
def test_breakdown_runs_the_default_release_in_three_processes():
    out = run(argparse.Namespace(utility=False, last_draw=False, size=300, dim=3, num_steps=200, seed=0))
    assert out["method"]["method"] == "path"             # delta > 0: the default (path) release, not a refusal
    assert [r["cache"] for r in out["runs"]] == ["cold", "warm", "off"]
    for r in out["runs"]:
        assert r["rc"] == 0
        parts = r["breakdown_s"]
        assert set(parts) == {"import", "analysis", "compile", "trace", "chain", "noise", "ledger", "other"}
        # the sampled categories add up to the release's wall time (1 ms samples; within 10%)
        assert sum(parts.values()) == pytest.approx(r["release_s"], rel=0.1)
        assert r["process_s"] >= r["release_s"] > 0
    # the warm cache spends less backend compile time than the cold one (loaded, not compiled)
    cold, warm = out["runs"][0]["jax"], out["runs"][1]["jax"]
    assert warm["backend_compile_s"] < cold["backend_compile_s"]


@pytest.mark.slow
def test_warm_rounds_run_in_one_process_and_compile_nothing_new():
    """``--warm``: the default release twice in one process at two epsilons; the second plans afresh but compiles
    no program (the chain takes its settings as arguments), and its overhead is its time less the chain's."""
    out = run(argparse.Namespace(utility=False, last_draw=False, warm=True, rounds=2, size=300, dim=3,
                                 num_steps=200, seed=0))
    assert [(r["round"], r["warm"], r["rc"]) for r in out["rounds"]] == [(0, False, 0), (1, True, 0)]
    cold, warm = out["rounds"]
    assert cold["compilations"] > 0 and warm["compilations"] == 0
    assert warm["overhead_s"] == pytest.approx(warm["seconds"] - warm["breakdown_s"]["chain"])
    assert out["warm_overhead_s_median"] == warm["overhead_s"]
