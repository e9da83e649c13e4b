"""Imports run downward: the backbone never imports a study or the simulated world.

The layers of ``judgelab/`` (the style rule "studies use the backbone, never the reverse"):

* **studies** -- ``strategies``, ``topk``, ``scoring``, ``uda``, ``rbd`` (one paper each);
* **simulated world** -- ``simworld``: beside the studies (it reads their prompt constants and
  records; a study may read its own simworld module);
* **top** -- the command line (``cli.py``, whose subcommands include study tools) and the
  per-study figure modules ``plots/<study>.py`` (drawn from a study's tables, with its
  constants); workflow scripts and rules sit above everything and are not checked;
* **backbone** -- everything else: the top-level modules (records, registry, io, config,
  cache*, parsing, features, pairwise, runner, workflow, plan, roles, leaderboard, ...) and the
  packages ``judges``, ``prompts``, ``stats``, ``ranking``, ``datasets``, ``plots`` (its shared
  modules), ``verdict_import``, ``bias_card``.  A new module is backbone unless listed here.

Every backbone module is parsed (ast, so imports inside functions count too, as do
``importlib.import_module("judgelab....")`` calls with a literal name) and each import of a study
package or of ``judgelab.simworld`` fails the test with its file and line.  The simulated
backend reaches the simworld modules through the ``judgelab.simulated_tasks`` entry points,
which name them in ``pyproject.toml``, not in the backbone's code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "judgelab"
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
    for rel in ("records.py", "registry.py", "io.py", "config.py", "cache.py", "parsing.py", "features.py",
                "pairwise.py", "runner.py", "workflow.py", "plan.py", "roles.py", "judges/simulated.py",
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
