"""mkdocs hooks: the generated pages of the documentation site.

* ``reference/<module>.md`` for every public module of bayesdp (no ``_`` in its dotted name; the CLI
  plumbing in ``bayesdp.commands`` is covered by the CLI page instead): one ``::: module`` directive,
  which mkdocstrings renders from the docstrings, listing every public name (with or without a
  docstring), and ``reference/index.md`` linking them;
* ``cli.md``: ``bayesdp --help`` and the help of every sub-command, from the parser itself.

Nothing is written into ``docs/``: the pages exist only in the built site.
"""

from __future__ import annotations

import importlib
import pkgutil

EXCLUDED = ("bayesdp.commands",)


def public_modules() -> list[str]:
    """Dotted names of the public modules of bayesdp, ``bayesdp.models`` included."""
    import bayesdp

    names = {"bayesdp", "bayesdp.models", "bayesdp.cli"}
    for m in pkgutil.walk_packages(bayesdp.__path__, "bayesdp."):
        if any(part.startswith("_") for part in m.name.split(".")) or m.name.startswith(EXCLUDED):
            continue
        names.add(m.name)
    return sorted(names)


def _first_line(name: str) -> str:
    doc = (importlib.import_module(name).__doc__ or "").strip()
    return doc.splitlines()[0].rstrip(".").replace("|", "\\|") if doc else ""


def public_names(name: str) -> list[str]:
    """The public names of a module: its ``__all__`` when it has one (the module's declared interface;
    everything else is internal and may change), else every name without a leading ``_`` defined in it."""
    import inspect

    mod = importlib.import_module(name)
    declared = getattr(mod, "__all__", None)
    if declared is not None:
        return list(declared)
    return [n for n, o in vars(mod).items() if not n.startswith("_") and (inspect.isfunction(o) or inspect.isclass(o))
            and getattr(o, "__module__", None) == name]


def _reference_page(name: str) -> str:
    # bayesdp.models is installed from models/ (package-dir), where a static scan of bayesdp/ cannot see it
    target = "models" if name == "bayesdp.models" else name
    mod = importlib.import_module(name)
    lazy = getattr(mod, "_LAZY", {})          # bayesdp's lazily imported names: rendered from where they live
    members = ""
    if getattr(mod, "__all__", None) is not None:
        names = [n for n in mod.__all__ if n not in lazy]
        # an empty list must be written as [] (a bare `members:` means "no filter": every member rendered)
        members = ("\n      members:\n" + "".join(f"        - {n}\n" for n in names)) if names else \
            "\n      members: []\n"
    page = f"# `{name}`\n\n::: {target}\n    options:\n      show_root_heading: false{members}\n"
    if lazy:
        rows = []
        for n, (sub, attr) in lazy.items():
            obj = getattr(importlib.import_module(f"{name}.{sub}"), attr)
            first = (obj.__doc__ or "").strip().splitlines()[0].replace("|", "\\|") if obj.__doc__ else ""
            rows.append(f"| `{name}.{n}` | [`{name}.{sub}.{attr}`]({name}.{sub}.md#{name}.{sub}.{attr}) | {first} |")
        page += ("\n## The model-to-release API\n\nImported on first use (they load JAX and NumPyro); each is "
                 "documented where it lives.\n\n| name | documented at | |\n| --- | --- | --- |\n"
                 + "\n".join(rows) + "\n")
        if name == "bayesdp":
            page += "| `bayesdp.datasets` | [`bayesdp.datasets`](bayesdp.datasets.md) | Bundled data for examples |\n"
    return page


def _reference_index(names: list[str]) -> str:
    rows = "\n".join(f"| [`{n}`]({n}.md) | {_first_line(n)} |" for n in names)
    return ("# API reference\n\nGenerated from the docstrings: one page per public module, every public "
            "name on it.  `import bayesdp` gives the names a script needs (see [`bayesdp`](bayesdp.md)).\n\n"
            "| module | |\n| --- | --- |\n" + rows + "\n")


def _cli_page() -> str:
    import argparse

    from bayesdp.cli import build_parser

    out = ["# Command line\n", "Every command prints one line and exits with status 2 on bad input. "
           "Generated from `bayesdp ... --help`.\n"]

    def walk(parser: argparse.ArgumentParser, prog: str, level: int) -> None:
        out.append(f"{'#' * level} `{prog}`\n\n```text\n{parser.format_help().rstrip()}\n```\n")
        for action in parser._actions:  # argparse keeps sub-parsers here only
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{prog} {name}", min(level + 1, 4))

    walk(build_parser(), "bayesdp", 2)
    return "\n".join(out)


def on_config(config):
    """Append the generated pages to the navigation written in mkdocs.yml."""
    nav = config.get("nav") or []
    nav.append({"Command line": "cli.md"})
    nav.append({"API reference": ["reference/index.md"] + [{n: f"reference/{n}.md"} for n in public_modules()]})
    config["nav"] = nav
    return config


def on_files(files, config):
    from mkdocs.structure.files import File

    names = public_modules()
    for name in names:
        files.append(File.generated(config, f"reference/{name}.md", content=_reference_page(name)))
    files.append(File.generated(config, "reference/index.md", content=_reference_index(names)))
    files.append(File.generated(config, "cli.md", content=_cli_page()))
    return files
