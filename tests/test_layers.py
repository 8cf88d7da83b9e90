"""The layers of docs/architecture.md: every import of a bayesdp module runs downward (or within one layer,
without a cycle), and a function-level import is only of a heavy dependency.

The test reads every module's source (nothing is imported): module-level and function-level ``import``
statements, relative ones resolved against the importing package.
"""

from __future__ import annotations

import ast
import functools
import os
from collections import defaultdict

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "bayesdp")

# lowest first; a module may import its own layer and every layer below it (docs/architecture.md)
LAYERS = [
    ("foundation", {"errors", "_version", "curves", "exact", "certificate", "resources", "_arviz", "jax_cache"}),
    ("theorems", {"theorems", "mechanisms"}),
    ("analysis", {"analysis", "models"}),      # models/ installs as bayesdp.models (the reference models)
    ("samplers", {"samplers"}),
    ("budget", {"budget"}),
    ("release", {"publish"}),
    ("plan and calibrate", {"plan", "calibration"}),
    ("api", {"api", "audit", "datasets"}),
    ("commands", {"commands", "cli", "bench", "__main__"}),
    ("package", {""}),          # bayesdp/__init__.py: the lazily loaded public surface
]
LAYER_OF = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}

# function-level imports are allowed for these (they are slow to import and not every path needs them)
HEAVY = ("jax", "jaxlib", "numpyro", "scipy", "matplotlib", "pandas", "pyarrow", "arviz", "xarray", "h5netcdf",
         "dp_accounting", "mpmath", "tqdm", "filelock", "blackjax", "diffprivlib", "hypothesis", "secrets")


def _modules():
    for dirpath, dirnames, filenames in os.walk(PKG):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for f in filenames:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                name = rel[: -len(".__init__")] if rel.endswith(".__init__") else rel
                package = name if f == "__init__.py" else name.rsplit(".", 1)[0]
                yield name, package, path


def _is_module(dotted: str) -> bool:
    base = os.path.join(ROOT, *dotted.split("."))
    return os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py"))


def _imports(package: str, tree: ast.AST):
    """(target module, is function-level, line) for every import in the tree."""
    top_level = set()
    for node in tree.body:
        for sub in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            top_level.add(id(sub))
    for node in ast.walk(tree):
        inner = id(node) not in top_level
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, inner, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("bayesdp"):
                for alias in node.names:      # `from . import noise` imports the module bayesdp.x.noise
                    sub = f"{mod}.{alias.name}"
                    yield (sub if _is_module(sub) or sub == "bayesdp.models" else mod), inner, node.lineno
            else:
                yield mod, inner, node.lineno


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYER_OF.get(parts[1] if len(parts) > 1 else "")


@functools.lru_cache(maxsize=None)
def _tree(path: str) -> ast.AST:
    """A module's syntax tree, parsed once per test session (the checks below walk the package several times)."""
    with open(path) as fh:
        return ast.parse(fh.read(), path)


@functools.lru_cache(maxsize=None)     # (the checks below read it; none changes it)
def _graph():
    edges, inner = defaultdict(set), []
    for name, package, path in _modules():
        tree = _tree(path)
        for target, fn_level, line in _imports(package, tree):
            if target.startswith("bayesdp"):
                edges[name].add((target, fn_level, line))
            if fn_level:
                inner.append((name, target, line))
    return edges, inner


def test_every_module_has_a_layer():
    unknown = sorted(name for name, _, _ in _modules() if _layer(name) is None)
    assert not unknown, f"modules outside every layer of docs/architecture.md: {unknown}"


def test_imports_only_run_downward():
    edges, _ = _graph()
    up = sorted(f"{src}:{line} imports {dst}" for src, ts in edges.items() for dst, _, line in ts
                if _layer(dst) is not None and _layer(dst) > _layer(src))
    assert not up, "imports that run up a layer:\n" + "\n".join(up)


def test_no_import_cycle():
    edges, _ = _graph()
    graph = {src: {dst for dst, _, _ in ts} for src, ts in edges.items()}
    # Tarjan's strongly connected components
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w == v or w == "bayesdp":
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_function_level_imports_are_heavy_dependencies_only():
    _, inner = _graph()
    bad = sorted(f"{src}:{line} imports {dst}" for src, dst, line in inner
                 if dst.split(".")[0] not in HEAVY and not (dst.startswith("bayesdp") and _heavy_module(dst)))
    assert not bad, "function-level imports of light modules (move them to the top):\n" + "\n".join(bad)


def _heavy_module(module: str) -> bool:
    """A bayesdp module whose import loads JAX, NumPyro, SciPy, matplotlib, pandas or ArviZ at its top level
    (directly, through another bayesdp module, or through a parent package's ``__init__``), which a light path
    defers."""
    parts = module.split(".")
    for k in range(2, len(parts)):                    # importing a.b.c runs a/b/__init__.py first
        if _heavy_module_cached(".".join(parts[:k])):
            return True
    # models/ installs as bayesdp.models (package-dir): the reference models import JAX and NumPyro
    base = os.path.join(ROOT, "models", *parts[2:]) if parts[:2] == ["bayesdp", "models"] else os.path.join(ROOT, *parts)
    path = base + ".py" if os.path.isfile(base + ".py") else os.path.join(base, "__init__.py")
    if not os.path.isfile(path):
        return False
    tree = _tree(path)
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    for target, fn_level, _ in _imports(package, tree):
        if fn_level:
            continue
        if target.split(".")[0] in ("jax", "numpyro", "scipy", "matplotlib", "pandas", "arviz"):
            return True
        if target.startswith("bayesdp") and target != module and _heavy_module_cached(target):
            return True
    return False


_CACHE: dict[str, bool] = {}


def _heavy_module_cached(module: str) -> bool:
    if module not in _CACHE:
        _CACHE[module] = False          # breaks recursion on (forbidden) cycles
        _CACHE[module] = _heavy_module(module)
    return _CACHE[module]


@pytest.mark.parametrize("planted", ["up", "cycle"])
def test_the_checks_catch_a_planted_violation(planted, tmp_path, monkeypatch):
    """The graph checks fail on a planted upward import and a planted cycle (so they can fail at all)."""
    edges = {"bayesdp.curves": {("bayesdp.api", False, 1)}} if planted == "up" else \
        {"bayesdp.publish.a": {("bayesdp.publish.b", False, 1)}, "bayesdp.publish.b": {("bayesdp.publish.a", False, 1)}}
    monkeypatch.setattr(__import__(__name__), "_graph", lambda: (edges, []))
    check = test_imports_only_run_downward if planted == "up" else test_no_import_cycle
    said = (r"imports that run up a layer:\n\s*bayesdp\.curves:1 imports bayesdp\.api\n" if planted == "up" else
            r"import cycles: \[\['bayesdp\.publish\.a', 'bayesdp\.publish\.b'\]\]")
    with pytest.raises(AssertionError, match=said):
        check()
