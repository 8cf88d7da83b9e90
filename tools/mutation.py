"""Mutation testing of bayesdp's certificate-critical modules with mutmut 3 (issue 25; docs/mutation.md).

One command per module (or several, run one after the other)::

    pip install -e ".[mutation]"            # mutmut >= 3.8
    nice -n 15 python tools/mutation.py girsanov curves
    python tools/mutation.py --list          # the modules and the tests that must kill their mutants

For each module the repository (its tracked and untracked, not ignored, files) is copied to a scratch
folder (``--workdir``, default ``$TMPDIR/bayesdp-mutation/<module>``), whose ``pyproject.toml`` gets the
``[tool.mutmut]`` section of this repository plus ``only_mutate`` (that module) and
``pytest_add_cli_args_test_selection`` (the module's own tests, below).  ``mutmut run --max-children N``
(default 1: the machine is shared) then mutates that module only and runs, for each mutant, the tests of
the selection that call the mutated function.  The summary (killed / survived / timeout / other, the score
killed / (killed + survived + timeout + no tests), over all mutants and over those that change more than the
content of a string literal) and every mutant not killed, with its diff, are printed (text-only ones
counted, not listed) and written to ``<workdir>/summary.json``.

With ``--spawn`` mutmut only generates the mutants (its ``mutants/`` folder, each function a trampoline
that reads ``MUTANT_UNDER_TEST``), and the driver runs each selected mutant in a fresh ``python -m pytest``
process (spawned, never forked from a process that ran JAX, whose compiler threads can hang in a forked
child), in ``<workdir>/mutants`` with the module's test selection, ``-x -q -p no:cacheprovider`` and a
per-mutant time limit.  pytest's exit status gives the verdict (``classify``), written to mutmut's
``.meta`` file, so that the summary is the same as after ``mutmut run``.  It runs the whole selection
for every mutant, not only the tests that call the mutated function: slower, and simpler to trust.

The mutation run is not part of ``.ci/run``: it takes minutes per module.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: module -> (the file mutated, the tests that must kill its mutants: the module's own test files)
MODULES: dict[str, tuple[str, list[str]]] = {
    "girsanov": ("bayesdp/theorems/girsanov.py", ["tests/test_theorems_004.py"]),
    "tight": ("bayesdp/theorems/tight.py", ["tests/test_tight.py", "tests/test_tight_mutants.py"]),
    "gradient_step": ("bayesdp/theorems/gradient_step.py", ["tests/test_gradient_step_mutants.py",
                                                            "tests/test_theorems_004.py", "tests/test_tight.py",
                                                            "tests/test_numerics_edges.py"]),
    "transfer": ("bayesdp/theorems/transfer.py", ["tests/test_transfer_mutants.py", "tests/test_theorems_004.py"]),
    "curves": ("bayesdp/curves.py", ["tests/test_curves.py", "tests/test_curves_optimiser.py"]),
    "families": ("bayesdp/analysis/families.py", ["tests/analysis/test_families_rules_mutants.py",
                                                  "tests/analysis/test_families_mutants.py",
                                                  "tests/analysis/test_model_idioms.py",
                                                  "tests/analysis/test_soundness_property.py"]),
    "bounds": ("bayesdp/analysis/structure/bounds.py", ["tests/test_bounds_mutation.py",
                                                        "tests/test_bounds_mutation_gather.py",
                                                        "tests/analysis/test_structure_bounds.py",
                                                        "tests/analysis/test_undefined_values.py"]),
    "switch": ("bayesdp/analysis/structure/switch.py", ["tests/analysis/test_switch_continuity.py",
                                                       "tests/analysis/test_select_piecewise.py"]),
    "rational": ("bayesdp/analysis/structure/rational.py", ["tests/analysis/test_rational_roots.py",
                                                           "tests/analysis/test_select_piecewise.py",
                                                           "tests/analysis/test_where_narrowing.py",
                                                           "tests/analysis/test_undefined_values.py"]),
    "spectrum": ("bayesdp/analysis/spectrum.py", ["tests/analysis/test_spectrum.py"]),
    "sensitivity": ("bayesdp/publish/sensitivity.py", ["tests/release/test_release_sensitivity.py"]),
    "noise": ("bayesdp/publish/noise.py", ["tests/release/test_noise_mutants.py", "tests/release/test_release_noise.py",
                                           "tests/release/test_release_gaussian.py"]),
    "path": ("bayesdp/publish/path.py", ["tests/release/test_path_gdp_mutants.py"]),
    "ledger": ("bayesdp/budget/accountant.py", ["tests/budget/test_admission_mutants.py",
                                                "tests/budget/test_accountant.py"]),
}

#: modules mixing certificate arithmetic with reporting code: only these functions' mutants are run by default
#: (``--functions`` overrides); the others are reported as "not checked"
FUNCTIONS: dict[str, list[str]] = {
    # _golden_min, RDP._linear_epsilon, GDP._epsilon and the two memoised wrappers hold arithmetic that
    # RDP.epsilon and GDP.epsilon held before 2026-11-26 (issue 24 split them out)
    "curves": ["x__check_delta", "x__check_epsilon", "x__golden_min", "x__exp_up", "xǁRDPǁrdp", "xǁRDPǁ_eps_at",
               "xǁRDPǁepsilon", "xǁRDPǁ_linear_epsilon", "xǁRDPǁ_outward", "xǁRDPǁ_minimise", "xǁRDPǁ_log_delta_at",
               "xǁRDPǁdelta", "xǁRDPǁ__add__", "x_gdp_log_delta", "x__gdp_delta_mp", "x__gdp_epsilon_mp",
               "x__verify_gdp_epsilon", "xǁGDPǁrdp", "xǁGDPǁdelta", "xǁGDPǁepsilon", "xǁGDPǁ_epsilon",
               "x__gdp_epsilon", "x__linear_rdp_epsilon", "xǁApproxDPǁdelta", "xǁApproxDPǁepsilon",
               "xǁApproxDPǁrdp", "x_compose"],
    "sensitivity": ["x__rho", "x_coupling_strongly_convex", "x_coupling_strongly_convex_sgld", "x_coupling_k_plus_v",
                    "x_coupling_route", "xǁSensitivityRouteǁ*"],
    "noise": ["x_granularity", "x_laplace_release", "x_zcdp_rho", "x__sqrt_up", "x_gaussian_calibration",
              "x_gaussian_release"],
    "path": ["x_gdp_mu"],
    # the admission rule: exact sums, the composed epsilons and their comparison with the budget
    "ledger": ["x__own", "x__counts", "x__runs", "x_gdp_epsilon", "x_pld_epsilon", "x_rdp_epsilon",
               "xǁCompositionǁfits_basic", "xǁCompositionǁ_composed", "xǁCompositionǁfits",
               "xǁCompositionǁadmitted_by", "x_compose", "x_checked_charge", "x_over_budget", "xǁ_Budgetedǁ_admit"],
}

#: tests that cannot pass under mutmut whatever the mutant: mutmut gives every method of a class with mutants a
#: trampoline and helper attributes, and a runtime-checkable typing.Protocol then lists those attributes as
#: members, so isinstance() against it fails in every mutant run (the unmutated code included)
DESELECT: dict[str, list[str]] = {
    "ledger": ["tests/budget/test_accountant.py::test_both_implement_the_protocol_and_as_accountant"],
}

STATUSES = ("killed", "survived", "timeout", "suspicious", "no tests", "skipped", "caught by type check",
            "not checked", "segfault", "check was interrupted by user")


def _repo_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         check=True, capture_output=True).stdout.decode()
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]


#: written to the scratch copy only: property-based tests (hypothesis, hundreds of examples) run after the
#: others, so that with ``-x`` a mutant that a quick test kills costs one quick test; hypothesis does not
#: shrink a failing example (the verdict is the same, the time is not) and keeps no example database
_ORDER_CONFTEST = '''
from hypothesis import Phase, settings

settings.register_profile("mutation", phases=[Phase.explicit, Phase.reuse, Phase.generate], database=None)
settings.load_profile("mutation")


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda it: bool(getattr(getattr(it, "obj", None), "is_hypothesis_test", False)))
'''

#: also written to the scratch copy: before each test, every functools cache of the mutated module is emptied.
#: mutmut's fork mode runs the unmutated tests in the process it then forks per mutant, so a memoised function
#: (``curves._gdp_epsilon``, ``_linear_rdp_epsilon``, ``_gdp_delta_mp``) would hand every mutant the unmutated
#: value for the arguments those runs used, and the mutant would survive without having been run
_CLEAR_CACHES_CONFTEST = '''

import importlib

import pytest


@pytest.fixture(autouse=True)
def _mutation_clear_caches():
    module = importlib.import_module({module!r})
    for value in list(vars(module).values()):
        if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info"):
            value.cache_clear()
    yield
'''


#: decorators mutmut handles itself (it mutates the function under them)
_KEPT_DECORATORS = ("staticmethod", "classmethod")


def undecorate(source: str) -> tuple[str, list[str]]:
    """``source`` with every decorated function rewritten as a plain ``def`` followed by ``name = dec(name)``
    (one line per decorator, innermost first), and the names so rewritten.

    mutmut 3 does not mutate a decorated function at all (its trampoline cannot sit under a decorator), and
    the certificate arithmetic has some: ``@property`` / ``@exact`` in the ledger's admission rule,
    ``@prior_rule(...)`` for every prior rule of the analysis.  After this rewrite, done in the scratch copy
    only, mutmut mutates their bodies and the decorators still apply, to the trampoline.  ``@staticmethod`` and
    ``@classmethod`` alone are left (mutmut supports them); a function whose decorator list mixes them with
    others is left decorated, and so is every method of a ``typing.Protocol`` class.
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str, list[str]]] = []   # (first decorator line, def line, end line, indent, decs)

    def visit(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
                decs = [ast.get_source_segment(source, d) for d in node.decorator_list]
                if not any(d in _KEPT_DECORATORS for d in decs):
                    first = min(d.lineno for d in node.decorator_list)
                    indent = lines[node.lineno - 1][:node.col_offset]
                    edits.append((first, node.lineno, node.end_lineno, indent, decs, node.name))
            # a typing.Protocol is left alone: the trampoline's helper attributes would become members of the
            # protocol, and isinstance() against a runtime-checkable protocol would then fail
            if isinstance(node, ast.ClassDef) and not any(ast.unparse(b).endswith("Protocol") for b in node.bases):
                visit(node.body)

    visit(tree.body)
    names = []
    for first, def_line, end, indent, decs, name in sorted(edits, reverse=True):
        after = "".join(f"{indent}{name} = {' '.join(d.split())}({name})\n" for d in reversed(decs))
        lines[end:end] = [after]
        del lines[first - 1:def_line - 1]
        names.append(name)
    return "".join(lines), sorted(names)


def _toml_list(xs: list[str]) -> str:
    return "[" + ", ".join(json.dumps(x) for x in xs) + "]"


def prepare(module: str, workdir: Path, keep_decorators: bool = False, tests: list[str] | None = None) -> None:
    """Copy the repository to ``workdir`` and write the per-module ``[tool.mutmut]`` section there (and, unless
    ``keep_decorators``, rewrite the module's decorated functions so that mutmut mutates them: ``undecorate``)."""
    target, default_tests = MODULES[module]
    tests = tests or default_tests
    if workdir.exists():
        shutil.rmtree(workdir)
    for f in _repo_files():
        dst = workdir / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, dst)
    text = (ROOT / "pyproject.toml").read_text()
    base = tomllib.loads(text)["tool"]["mutmut"]
    head, sep, _ = text.partition("[tool.mutmut]")
    if not sep:
        sys.exit("tools/mutation.py: pyproject.toml has no [tool.mutmut] section")
    base["also_copy"] = list(base.get("also_copy", [])) + ["conftest.py"]
    base["pytest_add_cli_args"] = list(base.get("pytest_add_cli_args", [])) + [
        a for t in DESELECT.get(module, []) for a in ("--deselect", t)]
    lines = [f"{k} = {json.dumps(v)}" for k, v in base.items()
             if k not in ("only_mutate", "pytest_add_cli_args_test_selection")]
    dotted = target[:-3].replace("/", ".")
    (workdir / "conftest.py").write_text(_ORDER_CONFTEST + _CLEAR_CACHES_CONFTEST.format(module=dotted))
    if not keep_decorators:
        text_t, names = undecorate((workdir / target).read_text())
        (workdir / target).write_text(text_t)
        if names:
            print(f"tools/mutation.py: {target}: decorated functions made mutable: {', '.join(names)}")
    lines += [f"only_mutate = {_toml_list([target])}", f"pytest_add_cli_args_test_selection = {_toml_list(tests)}"]
    # the section is the file's last one (nothing may follow it in pyproject.toml)
    (workdir / "pyproject.toml").write_text(head + "[tool.mutmut]\n" + "\n".join(lines) + "\n")


_SUMMARY_SCRIPT = r"""
import json, sys
from pathlib import Path
from mutmut.mutation.data import SourceFileMutationData
from mutmut.stats import status_by_exit_code
from mutmut.utils.file_utils import walk_mutatable_files
from mutmut.mutation.diff_apply import get_diff_for_mutant
rows = []
for path in walk_mutatable_files():
    m = SourceFileMutationData(path=path)
    m.load()
    for name, code in m.exit_code_by_key.items():
        status = status_by_exit_code[code]
        diff = "" if status in ("killed", "not checked") else get_diff_for_mutant(name, path=path)
        rows.append([name, status, diff])
json.dump(rows, sys.stdout)
"""


_STRING = re.compile(r"""(?i)(?:\b[rbuf]{1,2})?("([^"\\]|\\.)*"|'([^'\\]|\\.)*')""")


def _mask_strings(line: str) -> str:
    """The line with every (one-line) string literal replaced by a placeholder and the spaces removed."""
    return re.sub(r"\s+", "", _STRING.sub("STR", line))


def is_text_only(diff: str) -> bool:
    """True when the mutant changes only the content of string literals (a message, a label, a dict key):
    the -/+ lines of its diff are equal once every string literal is masked."""
    minus = [ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return bool(minus) and [_mask_strings(x) for x in minus] == [_mask_strings(x) for x in plus]


def summarize(workdir: Path) -> dict:
    """Counts per status, the score killed / (killed + survived + timeout + no tests) over all mutants and
    over the mutants that change more than string contents, and every mutant not killed with its diff."""
    out = subprocess.run([sys.executable, "-c", _SUMMARY_SCRIPT], cwd=workdir, capture_output=True, text=True,
                         check=True).stdout
    rows = json.loads(out)
    counts: dict[str, int] = {}
    text_counts: dict[str, int] = {}
    not_killed = []
    for name, status, diff in rows:
        counts[status] = counts.get(status, 0) + 1
        if status not in ("killed", "not checked"):
            text = is_text_only(diff)
            if text:
                text_counts[status] = text_counts.get(status, 0) + 1
            changed = [ln for ln in diff.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
            not_killed.append({"name": name, "status": status, "text_only": text, "diff": changed})

    def score(c: dict[str, int], killed: int) -> float:
        decided = killed + sum(c.get(k, 0) for k in ("survived", "timeout", "no tests"))
        return killed / decided if decided else float("nan")

    killed = counts.get("killed", 0)
    non_text = {k: v - text_counts.get(k, 0) for k, v in counts.items()}
    return {"counts": counts, "text_only_not_killed": text_counts, "score": score(counts, killed),
            "score_non_text": score(non_text, killed), "not_killed": not_killed}


# ---------------------------------------------------------------------------------------------------------------
# --spawn: mutmut generates the mutants; each one runs in a fresh pytest process

#: run in the workdir: mutmut's generation step alone (``mutmut run`` does this, then forks a process per mutant)
_GENERATE_SCRIPT = r"""
from mutmut.__main__ import create_mutants
from mutmut.mutation.trampoline import set_mutant_under_test
from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir
from pathlib import Path
set_mutant_under_test("mutant_generation")
Path("mutants").mkdir(exist_ok=True)
copy_src_dir()
copy_also_copy_files()
stats = create_mutants(1)
print(f"mutmut generated the mutants: {stats.mutated} file(s) mutated, {stats.ignored} copied")
"""

#: mutmut's exit codes (``mutmut.stats.status_by_exit_code``) that the spawned runs record
KILLED, SURVIVED, NO_TESTS, TIMEOUT = 1, 0, 5, 36


def generate(workdir: Path, env: dict[str, str]) -> None:
    """Let mutmut write ``workdir/mutants`` (the trampolined copy and one ``.meta`` file per mutated file, every
    mutant "not checked") without running any test."""
    subprocess.run([sys.executable, "-c", _GENERATE_SCRIPT], cwd=workdir, env=env, check=True)


def meta_path(workdir: Path, target: str) -> Path:
    """mutmut's record of the mutants of ``target`` (their names and exit codes) in ``workdir``."""
    return workdir / "mutants" / (target + ".meta")


def mutant_names(workdir: Path, target: str) -> list[str]:
    """Every mutant mutmut generated for ``target``, in its order (``bayesdp.mod.x_f__mutmut_1``, ...)."""
    return list(json.loads(meta_path(workdir, target).read_text())["exit_code_by_key"])


def select(names: list[str], patterns: list[str]) -> list[str]:
    """The names matching one of ``patterns`` (mutant names or ``fnmatch`` globs such as
    ``bayesdp.mod.x_f__mutmut_*``), in the order of ``names``; all of them when ``patterns`` is empty.  A pattern
    that matches no mutant is an error (a renamed function, or a summary of another version of the module)."""
    if not patterns:
        return list(names)
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(n, p) for n in names)]
    if unmatched:
        raise SystemExit(f"tools/mutation.py: no mutant matches {unmatched[:5]}"
                         f"{' ...' if len(unmatched) > 5 else ''}; check --functions / --rerun against the module")
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def classify(returncode: int | None, timed_out: bool) -> int:
    """mutmut's exit code for one spawned pytest run of a mutant: timeout when it ran past its limit; pytest's 0
    (all passed) survived; 1 (a test failed), 2 (a collection error: the mutant broke an import) and 3 (an internal
    error) killed; 5 (no test collected) no tests.  Any other status (4, a usage error; a signal) is an error of
    the run itself, not a verdict, and raises.  ``run_spawned`` checks first that the unmutated code passes, so
    that a failure can be put down to the mutant."""
    if timed_out:
        return TIMEOUT
    if returncode == 0:
        return SURVIVED
    if returncode in (1, 2, 3):
        return KILLED
    if returncode == 5:
        return NO_TESTS
    raise RuntimeError(f"pytest exited with status {returncode}: not a verdict on a mutant (a usage error or a "
                       f"signal); run the printed command by hand")


def _pytest(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, bool, str]:
    """Run ``cmd`` in a new session; on timeout kill its whole process group.  Returns (status, timed out,
    the output's tail)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, False, out[-3000:]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return proc.returncode, True, (out or "")[-3000:]


def pytest_command(workdir: Path, tests: list[str]) -> list[str]:
    """``python -m pytest --rootdir=. --tb=native`` (as mutmut runs it) with the workdir's
    ``pytest_add_cli_args`` (``-m "not slow"``, hypothesis' seed, the deselected tests),
    ``-x -q -p no:cacheprovider``, and ``tests``."""
    base = tomllib.loads((workdir / "pyproject.toml").read_text())["tool"]["mutmut"]
    args = list(base.get("pytest_add_cli_args", []))
    for a in ("-x", "-q"):
        if a not in args:
            args.append(a)
    if "no:cacheprovider" not in args:
        args += ["-p", "no:cacheprovider"]
    return [sys.executable, "-m", "pytest", "--rootdir=.", "--tb=native", *args, *tests]


def run_spawned(workdir: Path, target: str, names: list[str], tests: list[str], env: dict[str, str],
                timeout: float | None = None, log=print, workers: int = 1) -> dict[str, int]:
    """Run each mutant of ``names`` in a fresh pytest process (``MUTANT_UNDER_TEST`` set to its name, cwd
    ``workdir/mutants``) and record its exit code (``classify``) and duration in mutmut's ``.meta`` file.

    First the checks mutmut makes: the unmutated code must pass the selection (else nothing can be put down to
    a mutant) and ``MUTANT_UNDER_TEST=fail`` must fail it (else the tests do not reach the mutated module, or
    import another copy of it).  The time limit per mutant is ``timeout`` seconds, by default 4 times the
    unmutated run plus 60 s.  Returns the exit code per mutant run."""
    cwd = workdir / "mutants"
    cmd = pytest_command(workdir, tests)
    dotted = target[:-3].replace("/", ".")
    probe = subprocess.run([sys.executable, "-c", f"import {dotted} as m; print(m.__file__)"], cwd=cwd, env=env,
                           capture_output=True, text=True)
    if probe.returncode != 0 or not Path(probe.stdout.strip()).resolve().is_relative_to(cwd.resolve()):
        raise SystemExit(f"tools/mutation.py: in {cwd} `import {dotted}` gives {probe.stdout.strip()!r} "
                         f"{probe.stderr.strip()[-300:]!r}, not the mutated copy")
    t0 = time.monotonic()
    rc, _, out = _pytest(cmd, cwd, {**env, "MUTANT_UNDER_TEST": ""}, timeout or 3600)
    clean_s = time.monotonic() - t0
    if rc != 0:
        raise SystemExit(f"tools/mutation.py: the unmutated code fails its tests (status {rc}) in {cwd}:\n{out}\n"
                         f"command: {' '.join(cmd)}")
    rc, _, out = _pytest(cmd, cwd, {**env, "MUTANT_UNDER_TEST": "fail"}, timeout or 3600)
    if rc == 0:
        raise SystemExit(f"tools/mutation.py: MUTANT_UNDER_TEST=fail passes: the tests do not call the mutated "
                         f"module in {cwd}")
    limit = timeout or 4 * clean_s + 60
    log(f"tools/mutation.py: unmutated run {clean_s:.1f} s; {len(names)} mutants, each in a fresh process, "
        f"limit {limit:.0f} s each")
    meta_file = meta_path(workdir, target)
    verdicts: dict[str, int] = {}
    lock = threading.Lock()

    def one(i: int, name: str) -> None:
        t0 = time.monotonic()
        rc, timed_out, out = _pytest(cmd, cwd, {**env, "MUTANT_UNDER_TEST": name}, limit)
        try:
            code = classify(rc, timed_out)
        except RuntimeError as e:
            raise SystemExit(f"tools/mutation.py: {name}: {e}\n{out}") from None
        took = time.monotonic() - t0
        with lock:     # one writer of the .meta file at a time
            verdicts[name] = code
            meta = json.loads(meta_file.read_text())
            meta["exit_code_by_key"][name] = code
            meta["durations_by_key"][name] = took
            meta_file.write_text(json.dumps(meta, indent=4))
            verdict = {KILLED: "killed", SURVIVED: "survived", TIMEOUT: "timeout", NO_TESTS: "no tests"}[code]
            by = [ln.split(" - ")[0] for ln in out.splitlines() if ln.startswith(("FAILED ", "ERROR "))][:1]
            log(f"   [{i}/{len(names)}] {name}: {verdict} ({took:.1f} s){' by ' + by[0] if by else ''}")

    # each mutant is its own process: ``workers`` of them at a time (--max-children)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, int(workers))) as pool:
        for f in [pool.submit(one, i, name) for i, name in enumerate(names, 1)]:
            f.result()
    return verdicts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", help=f"one or more of {', '.join(MODULES)}")
    ap.add_argument("--list", action="store_true", help="list the modules and their tests")
    ap.add_argument("--workdir", type=Path, default=None, help="scratch root (default $TMPDIR/bayesdp-mutation)")
    ap.add_argument("--max-children", type=int, default=1)
    ap.add_argument("--summary-only", action="store_true", help="summarize an earlier run in the workdir")
    ap.add_argument("--rerun", type=Path, default=None, metavar="SUMMARY",
                    help="run only the mutants that an earlier run's summary.json lists as survived, timeout or no "
                         "tests (the module's source must be unchanged since: mutmut numbers its mutants in order); "
                         "the others are reported as not checked.  With --functions: those functions changed since, "
                         "and all their mutants are run instead of their earlier survivors")
    ap.add_argument("--tests", default=None,
                    help="comma-separated test files to use instead of the module's own (e.g. the fast unit "
                         "tests only)")
    ap.add_argument("--keep-decorators", action="store_true",
                    help="leave decorated functions decorated (mutmut then skips them; default: rewrite them)")
    ap.add_argument("--functions", default=None,
                    help="comma-separated globs of mutmut's function keys (x_name, xǁClassǁmethod) to run only "
                         "those mutants, e.g. 'xǁRDPǁepsilon,x_gdp_log_delta' (default: FUNCTIONS[module] or all)")
    ap.add_argument("--mutants", default=None,
                    help="comma-separated mutant names or globs (bayesdp.mod.x_f__mutmut_12) to run only those "
                         "(instead of --functions / FUNCTIONS[module])")
    ap.add_argument("--spawn", action="store_true",
                    help="mutmut only generates the mutants; each selected mutant runs in a fresh `python -m "
                         "pytest` process (no fork: JAX's compiler can hang in a forked child)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="with --spawn: seconds per mutant (default 4 times the unmutated run plus 60)")
    args = ap.parse_args(argv)
    if args.mutants and (args.rerun or args.functions):
        ap.error("--mutants names the mutants itself: not with --rerun or --functions")
    if args.list or not args.modules:
        for k, (target, tests) in MODULES.items():
            print(f"{k:14s} {target:40s} {' '.join(tests)}")
        return 0
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        print(f"tools/mutation.py: unknown module(s) {unknown}; pass one of {', '.join(MODULES)}", file=sys.stderr)
        return 2
    root = args.workdir or Path(tempfile.gettempdir()) / "bayesdp-mutation"
    rc = 0
    for module in args.modules:
        workdir = root / module
        if not args.summary_only:
            prepare(module, workdir, args.keep_decorators, args.tests.split(",") if args.tests else None)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env.setdefault("JAX_PLATFORMS", "cpu")
            globs = args.functions.split(",") if args.functions else FUNCTIONS.get(module, [])
            dotted = MODULES[module][0][:-3].replace("/", ".")
            names = [f"{dotted}.{g}__mutmut_*" for g in globs]
            if args.mutants:
                names = args.mutants.split(",")
            if args.rerun:
                earlier = json.loads(args.rerun.read_text())
                again = [r["name"] for r in earlier["not_killed"] if r["status"] in ("survived", "timeout", "no tests")]
                if args.functions:
                    # functions changed since the earlier run: all their mutants, none of their old names
                    changed = [re.compile(re.escape(f"{dotted}.{g}__mutmut_").replace(r"\*", ".*")) for g in globs]
                    again = [n for n in again if not any(c.match(n) for c in changed)]
                    names = again + names
                else:
                    names = again
                print(f"tools/mutation.py: rerunning {len(again)} mutants not killed in {args.rerun}"
                      + (f", and every mutant of {args.functions}" if args.functions else ""))
            if args.spawn:
                generate(workdir, env)
                chosen = select(mutant_names(workdir, MODULES[module][0]), names)
                tests = args.tests.split(",") if args.tests else MODULES[module][1]
                t0 = time.monotonic()
                run_spawned(workdir, MODULES[module][0], chosen, tests, env, args.timeout,
                            workers=args.max_children)
                print(f"tools/mutation.py: {len(chosen)} mutants in {time.monotonic() - t0:.0f} s")
            else:
                r = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children",
                                    str(args.max_children), *names], cwd=workdir, env=env)
                rc = rc or r.returncode
        s = summarize(workdir)
        s.update(module=module, file=MODULES[module][0], tests=MODULES[module][1])
        (workdir / "summary.json").write_text(json.dumps(s, indent=1))
        print(f"{module}: score {s['score']:.3f} (excluding text-only mutants {s['score_non_text']:.3f}) "
              f"{s['counts']}; text-only among those not killed: {s['text_only_not_killed']}")
        for row in s["not_killed"]:
            if not row["text_only"]:
                print(f"   {row['name']}: {row['status']}")
                for ln in row["diff"]:
                    print("       ", ln.strip()[:150])
    return rc


if __name__ == "__main__":
    sys.exit(main())
