"""tools/mutation.py's ``--spawn`` runner (docs/mutation.md, "The command"): the verdict of a pytest status, the
selection of mutants, and an end-to-end run on a two-mutant package (mutmut generates, each mutant runs in a
fresh pytest process)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

_TOOL = Path(__file__).resolve().parent.parent / "tools" / "mutation.py"
_spec = importlib.util.spec_from_file_location("mutation_tool", _TOOL)
mt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mt)


def test_classify_maps_pytest_statuses_to_mutmut_verdicts():
    # mutmut's own names of the codes (mutmut.stats.status_by_exit_code, for 3.8), so that the test runs without
    # mutmut installed (the "mutation" extra; CI installs "test" only)
    status_by_exit_code = {1: "killed", 0: "survived", 5: "no tests", 36: "timeout"}
    assert status_by_exit_code[mt.classify(0, False)] == "survived"
    assert status_by_exit_code[mt.classify(1, False)] == "killed"      # a test failed
    assert status_by_exit_code[mt.classify(2, False)] == "killed"      # collection error: the mutant broke an import
    assert status_by_exit_code[mt.classify(3, False)] == "killed"      # pytest internal error (mutmut: killed)
    assert status_by_exit_code[mt.classify(5, False)] == "no tests"
    # a run past its limit is a timeout whatever status the killed process left
    assert status_by_exit_code[mt.classify(-9, True)] == "timeout"
    assert status_by_exit_code[mt.classify(0, True)] == "timeout"
    for rc in (4, -11, 137):       # a usage error or a signal is no verdict on the mutant
        with pytest.raises(RuntimeError, match=f"status {rc}"):
            mt.classify(rc, False)


NAMES = ["p.m.x_f__mutmut_1", "p.m.x_f__mutmut_2", "p.m.x_g__mutmut_1", "p.m.xǁCǁh__mutmut_1",
         "p.m.x_f__mutmut_10"]


def test_select_keeps_the_generated_order_and_refuses_a_pattern_that_matches_nothing():
    assert mt.select(NAMES, []) == NAMES
    assert mt.select(NAMES, ["p.m.x_f__mutmut_*"]) == ["p.m.x_f__mutmut_1", "p.m.x_f__mutmut_2", "p.m.x_f__mutmut_10"]
    # exact names (a --rerun) select exactly those: _1 is not a prefix match of _10
    assert mt.select(NAMES, ["p.m.x_f__mutmut_10", "p.m.x_g__mutmut_1"]) == ["p.m.x_g__mutmut_1",
                                                                              "p.m.x_f__mutmut_10"]
    assert mt.select(NAMES, ["p.m.xǁCǁ*__mutmut_*"]) == ["p.m.xǁCǁh__mutmut_1"]
    with pytest.raises(SystemExit, match="x_gone"):
        mt.select(NAMES, ["p.m.x_f__mutmut_*", "p.m.x_gone__mutmut_*"])


def _package(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    # mutmut makes exactly two mutants of this: `x - 1` and `x + 2`
    (root / "pkg" / "m.py").write_text("def f(x):\n    return x + 1\n")
    (root / "tests").mkdir()
    # kills `x - 1` (f(0) = -1), not `x + 2` (f(0) = 2)
    (root / "tests" / "test_m.py").write_text("from pkg.m import f\n\n\ndef test_f():\n    assert f(0) >= 1\n")
    (root / "pyproject.toml").write_text(
        '[tool.mutmut]\nsource_paths = ["pkg"]\npytest_add_cli_args = ["-p", "no:cacheprovider", "-n", "0"]\n'
        'pytest_add_cli_args_test_selection = ["tests/test_m.py"]\n')


def test_the_exit_codes_are_mutmuts():
    stats = pytest.importorskip("mutmut.stats")
    assert [stats.status_by_exit_code[c] for c in (mt.KILLED, mt.SURVIVED, mt.NO_TESTS, mt.TIMEOUT)] == [
        "killed", "survived", "no tests", "timeout"]


@pytest.mark.parametrize("workers", [1, 2])
def test_spawn_runs_each_mutant_in_a_fresh_process_and_writes_mutmuts_verdicts(tmp_path, workers):
    pytest.importorskip("mutmut")
    _package(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MUTANT_UNDER_TEST")}
    mt.generate(tmp_path, env)
    names = mt.mutant_names(tmp_path, "pkg/m.py")
    assert names == ["pkg.m.x_f__mutmut_1", "pkg.m.x_f__mutmut_2"]
    lines = []
    verdicts = mt.run_spawned(tmp_path, "pkg/m.py", names, ["tests/test_m.py"], env, timeout=120, log=lines.append,
                              workers=workers)
    assert sorted(verdicts.values()) == [mt.SURVIVED, mt.KILLED]
    # the summary (mutmut's own reading of the .meta file) names the survivor by its diff: `x + 2`
    s = mt.summarize(tmp_path)
    assert s["counts"] == {"killed": 1, "survived": 1}
    [row] = s["not_killed"]
    assert row["status"] == "survived" and "+    return x + 2" in row["diff"]
    assert verdicts[row["name"]] == mt.SURVIVED
    assert len(lines) == 3 and "2 mutants" in lines[0]


def test_spawn_refuses_when_the_unmutated_code_fails_its_tests(tmp_path):
    pytest.importorskip("mutmut")
    _package(tmp_path)
    (tmp_path / "tests" / "test_m.py").write_text("from pkg.m import f\n\n\ndef test_f():\n    assert f(0) == 7\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MUTANT_UNDER_TEST")}
    mt.generate(tmp_path, env)
    with pytest.raises(SystemExit, match="unmutated code fails"):
        mt.run_spawned(tmp_path, "pkg/m.py", mt.mutant_names(tmp_path, "pkg/m.py"), ["tests/test_m.py"], env,
                       timeout=120, log=lambda _: None)
