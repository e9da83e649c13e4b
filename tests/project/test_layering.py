"""Imports run downward: the backbone never imports a study or the simulated world.

The layers of ``judgelab/`` (the style rule "studies use the backbone, never the reverse"):

* **studies** -- ``strategies``, ``topk``, ``scoring``, ``uda``, ``rbd`` (one paper each);
* **simulated world** -- ``simworld``: beside the studies (it reads their prompt constants and
  records; a study may read its own simworld module);
* **top** -- the command line (``cli.py``, whose subcommands include study tools) and the
  per-study figure modules ``plots/<study>.py`` (drawn from a study's tables, with its
  constants); workflow scripts and rules sit above everything and are not checked;
* **backbone** -- everything else: the top-level modules (records, registry, io, config,
  parsing) and the packages ``cache``, ``judges``, ``workflow``, ``prompts``, ``stats``,
  ``ranking``, ``datasets``, ``plots`` (its shared modules), ``verdict_import``, ``bias_card``,
  ``board``.  A new module is backbone unless listed here.

Every backbone module is parsed (ast, so imports inside functions count too, as do
``importlib.import_module("judgelab....")`` calls with a literal name) and each import of a study
package or of ``judgelab.simworld`` fails the test with its file and line.  The simulated
backend reaches the simworld modules through the ``judgelab.simulated_tasks`` entry points,
which name them in ``pyproject.toml``, not in the backbone's code.

Second rule: **no import cycle** anywhere in ``judgelab/`` (studies included).  The graph has an
edge from a module to every ``judgelab`` module it imports when it runs: at module level and
inside functions alike (a function-level import only defers a cycle to the first call, it does
not remove it), but not under ``if TYPE_CHECKING:`` (never executed).  ``from pkg import name``
is an edge to ``pkg.name`` when that is a module, else to ``pkg``.  The implicit import of a
parent package's ``__init__`` is not an edge: Python runs it before any submodule by design, so
a package that imports its own submodules is no cycle; a submodule that imports a name back from
its package's ``__init__`` while that ``__init__`` imports it is one (an explicit edge each way).
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "judgelab"
STUDIES = ("strategies", "topk", "scoring", "uda", "rbd")
FORBIDDEN = (*STUDIES, "simworld")
TOP = {"cli.py", *(f"plots/{s}.py" for s in STUDIES)}


def module_name(path: Path, root: Path = PKG) -> str:
    parts = ["judgelab", *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def backbone_files(root: Path = PKG) -> list[Path]:
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in FORBIDDEN or rel.as_posix() in TOP:
            continue
        out.append(path)
    return out


def imported_names(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute dotted name) of every import in ``tree``, inside functions too."""
    package = module if is_package else module.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            if mod == "judgelab":  # from judgelab import rbd
                out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")):
            out.append((node.lineno, node.args[0].value))
    return out


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (its ``else`` runs)."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for node in child.orelse:
                yield node
                yield from _runtime_nodes(node)
            continue
        yield child
        yield from _runtime_nodes(child)


def import_graph(root: Path = PKG) -> dict[str, dict[str, str]]:
    """``{module: {imported judgelab module: "file:line"}}`` of the runtime imports under ``root``."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, dict[str, str]] = {m: {} for m in files}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
                mod = ".".join([*base, node.module]) if node.module else ".".join(base)
                names = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in files else mod for a in node.names]
            elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, str)
                  and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")):
                names = [node.args[0].value]
            else:
                continue
            for name in names:
                while name and name not in files:  # judgelab.x.y.Name -> judgelab.x.y
                    name = name.rpartition(".")[0]
                if name and name != module and name != "judgelab":
                    graph[module].setdefault(name, f"{path.relative_to(root.parent)}:{node.lineno}")
    return graph


def import_cycles(root: Path = PKG) -> list[list[str]]:
    """One cycle (``[a, b, ..., a]``) per strongly connected group of modules (Tarjan)."""
    graph = import_graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    cycles = []
    for group in groups:  # the shortest way from the group's first module back to it, inside the group
        start, members = group[0], set(group)
        paths = {start: [start]}
        frontier = [start]
        found = None
        while frontier and found is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w == start:
                        found = [*paths[v], start]
                        break
                    if w in members and w not in paths:
                        paths[w] = [*paths[v], w]
                        nxt.append(w)
                if found:
                    break
            frontier = nxt
        cycles.append(found)
    return cycles


def describe_cycle(cycle: list[str], root: Path = PKG) -> str:
    graph = import_graph(root)
    return " -> ".join(f"{a} ({graph[a][b]})" for a, b in itertools.pairwise(cycle)) + f" -> {cycle[-1]}"


def violations(root: Path = PKG) -> list[str]:
    bad = []
    for path in backbone_files(root):
        module = module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in imported_names(tree, module, path.name == "__init__.py"):
            parts = name.split(".")
            if len(parts) >= 2 and parts[0] == "judgelab" and parts[1] in FORBIDDEN:
                kind = "the simulated world" if parts[1] == "simworld" else f"study {parts[1]!r}"
                bad.append(f"{path.relative_to(root.parent)}:{line}: imports {name} ({kind}); "
                           "the backbone must not import studies or judgelab.simworld")
    return bad


def test_the_layers_named_here_exist():
    for name in FORBIDDEN:
        assert (PKG / name / "__init__.py").is_file(), f"judgelab/{name}/ is listed as a layer but does not exist"
    for rel in TOP:
        assert (PKG / rel).is_file() or rel.startswith("plots/"), f"judgelab/{rel} is listed as top but does not exist"
    files = {p.relative_to(PKG).as_posix() for p in backbone_files()}
    # the backbone as the style rule names it is among the checked files
    for rel in ("records.py", "registry.py", "io.py", "config.py", "cache/__init__.py", "parsing.py",
                "datasets/features.py", "judges/pairwise.py", "judges/runner.py", "workflow/__init__.py",
                "workflow/plan.py", "workflow/roles.py", "judges/simulated.py",
                "prompts/__init__.py", "stats/bias.py", "ranking/bias_aware.py", "datasets/pairs.py",
                "plots/stamp.py", "verdict_import/importer.py", "bias_card/card.py"):
        assert rel in files, rel


def test_backbone_imports_no_study_and_not_the_simulated_world():
    bad = violations()
    assert not bad, "imports run upward:\n" + "\n".join(bad)


@pytest.mark.parametrize("line", [
    "from judgelab.rbd.prompts import write_answer",
    "import judgelab.simworld.uda as u",
    "from judgelab import topk",
    "from ..scoring.metrics import SCORES",
    "importlib.import_module('judgelab.uda.simulate')",
])
def test_the_check_sees_every_form_of_import(tmp_path, line):
    """A backbone module with one upward import, in each form, is reported with file and line."""
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / "__init__.py").write_text("")
    (tmp_path / "judges" / "x.py").write_text("import math\n\n\ndef f():\n    " + line + "\n")
    (tmp_path / "judges" / "ok.py").write_text("from judgelab.records import JudgeRequest\nfrom . import x\n")
    bad = violations(tmp_path)
    assert len(bad) == 1 and all(b.startswith(f"{tmp_path.name}/judges/x.py:5: imports judgelab.") for b in bad), bad


def test_no_import_cycle_in_judgelab():
    """Imports only run downward: no module reaches itself again through its imports."""
    cycles = import_cycles()
    assert not cycles, "import cycles:\n" + "\n".join(describe_cycle(c) for c in cycles)


def _package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_cycle_check_sees_function_level_and_package_imports(tmp_path):
    """Negative control: a cycle closed by an import inside a function is reported with both
    ends' file and line; one through a package's ``__init__`` (a backend importing the registry
    back from the package that imports it) too; a TYPE_CHECKING import and the implicit parent
    package import are not edges."""
    root = _package(tmp_path / "judgelab", {
        "__init__.py": "",
        "config.py": "import os\n\n\ndef check():\n    from judgelab.judges import REG\n    return REG\n",
        "judges/__init__.py": "from judgelab.config import check\nREG = {}\nfrom judgelab.judges import impl  # noqa\n",
        "judges/impl.py": "from judgelab.judges import REG\n",
        "typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from judgelab.sub.leaf import X\n",
        "sub/__init__.py": "from judgelab.sub import leaf\n",
        "sub/leaf.py": "from judgelab import typed\n",
    })
    cycles = import_cycles(root)
    assert sorted(cycles) == [["judgelab.config", "judgelab.judges", "judgelab.config"]], cycles
    # judges <-> judges.impl is its own cycle inside the same group: the group is reported once
    graph = import_graph(root)
    assert graph["judgelab.judges"]["judgelab.judges.impl"] == "judgelab/judges/__init__.py:3"
    assert graph["judgelab.judges.impl"] == {"judgelab.judges": "judgelab/judges/impl.py:1"}
    assert describe_cycle(cycles[0], root) == ("judgelab.config (judgelab/config.py:5) -> "
                                               "judgelab.judges (judgelab/judges/__init__.py:1) -> judgelab.config")
    assert graph["judgelab.typed"] == {} and "judgelab.sub" not in graph["judgelab.sub.leaf"]
    # without the function-level import the group falls apart, leaving the package cycle alone
    (root / "config.py").write_text("import os\n")
    assert import_cycles(root) == [["judgelab.judges", "judgelab.judges.impl", "judgelab.judges"]]


def test_the_package_root_holds_at_most_eight_modules():
    """The root keeps only what every floor needs (records, registry, io, config, parsing, the
    command line); everything else lives in the package named for what it holds, so a reader
    finds the workflow machinery in ``workflow/``, the runner in ``judges/`` and so on."""
    root_modules = sorted(p.name for p in PKG.glob("*.py"))
    assert len(root_modules) <= 8, root_modules
