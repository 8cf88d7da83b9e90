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

The mutation run is not part of ``.ci/run``: it takes minutes per module.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
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
    "curves": ("bayesdp/curves.py", ["tests/test_curves.py"]),
    "families": ("bayesdp/analysis/families.py", ["tests/analysis/test_families_rules_mutants.py",
                                                  "tests/analysis/test_families_mutants.py",
                                                  "tests/analysis/test_model_idioms.py",
                                                  "tests/analysis/test_soundness_property.py"]),
    "bounds": ("bayesdp/analysis/structure/bounds.py", ["tests/test_bounds_mutation.py",
                                                        "tests/test_bounds_mutation_gather.py",
                                                        "tests/analysis/test_structure_bounds.py"]),
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
    "curves": ["x__check_delta", "x__check_epsilon", "x__exp_up", "xǁRDPǁrdp", "xǁRDPǁ_eps_at", "xǁRDPǁepsilon",
               "xǁRDPǁ_outward", "xǁRDPǁ_minimise", "xǁRDPǁ_log_delta_at", "xǁRDPǁdelta", "xǁRDPǁ__add__",
               "x_gdp_log_delta", "x__gdp_delta_mp", "x__gdp_epsilon_mp", "x__verify_gdp_epsilon", "xǁGDPǁrdp",
               "xǁGDPǁdelta", "xǁGDPǁepsilon", "xǁApproxDPǁdelta", "xǁApproxDPǁepsilon", "xǁApproxDPǁrdp",
               "x_compose"],
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
    (workdir / "conftest.py").write_text(_ORDER_CONFTEST)
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
        diff = "" if status == "killed" else get_diff_for_mutant(name, path=path)
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
        if status != "killed":
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
    args = ap.parse_args(argv)
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
            r = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children),
                                *names], cwd=workdir, env=env)
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
