"""One name and one default for the level of an interval: every function and settings field of
judgelab/ that takes it is called ``alpha`` (the interval is at ``1 - alpha``, the test at
``alpha``) and defaults to ``judgelab.stats.intervals.DEFAULT_ALPHA``, never to a literal.

The scan reads the source (ast): a parameter or dataclass field named ``alpha``, ``confidence``,
``level``, ``confidence_level``, ``conf_level`` or ``ci_level`` is checked, as is the first argument
of a ``setting(...)`` field named ``alpha``.  Names that mean something else are listed with the
reason; each listed entry must still exist, so the list never outlives its reason.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from judgelab.stats.intervals import DEFAULT_ALPHA

ROOT = Path(__file__).resolve().parents[2] / "judgelab"
OTHER_NAMES = {"confidence", "level", "confidence_level", "conf_level", "ci_level"}
LEVEL_NAMES = {"alpha"} | OTHER_NAMES

#: (module, function or Class.field, name) -> why the name is another concept than an interval's level
OTHER_CONCEPT = {
    ("judgelab/uda/training.py", "TrainConfig.alpha", "alpha"):
        "the weight of Eq. 3's squared-Elo penalty of the UDA paper, not a significance level",
    ("judgelab/scoring/generation.py", "GenerationTask.level", "level"): "a 1-5 score level a text is written at",
    ("judgelab/workflow/__init__.py", "setup_logging", "level"): "a logging level",
}


def _numeric_literal(node: ast.expr) -> bool:
    """A number written out (``0.05``, ``1 - 0.05``, ``-1``), whatever arithmetic joins the numbers."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _numeric_literal(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric_literal(node.left) and _numeric_literal(node.right)
    return False


def _is_default_alpha(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Name) and node.id == "DEFAULT_ALPHA"


@cache
def level_parameters(root: Path = ROOT) -> tuple[tuple[str, str, str, ast.expr | None], ...]:
    """(module, function or Class.field, name, default expression or None) of every parameter and
    settings field named like an interval's level; a ``setting(x, ...)`` field's default is ``x``."""
    out: list[tuple[str, str, str, ast.expr | None]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                pos = a.posonlyargs + a.args
                defaults: dict[str, ast.expr | None] = {x.arg: None for x in pos + a.kwonlyargs}
                defaults.update({x.arg: d for x, d in zip(pos[len(pos) - len(a.defaults):], a.defaults, strict=True)})
                defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)})
                out += [(rel, node.name, name, d) for name, d in defaults.items() if name in LEVEL_NAMES]
            elif isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                            and stmt.target.id in LEVEL_NAMES):
                        d = stmt.value
                        if (isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "setting"
                                and d.args):
                            d = d.args[0]
                        out.append((rel, f"{node.name}.{stmt.target.id}", stmt.target.id, d))
    return tuple(out)


def problems(params: tuple[tuple[str, str, str, ast.expr | None], ...]) -> list[str]:
    """Why each parameter breaks the one-name-one-default rule (empty when none does)."""
    bad = []
    for rel, owner, name, default in params:
        key = (rel, owner, name)
        shown = ast.unparse(default) if default is not None else "no default"
        if key in OTHER_CONCEPT:
            continue
        if name in OTHER_NAMES:
            bad.append(f"{rel}: {owner}({name}={shown}): name the interval's level alpha (interval at 1 - alpha)")
        elif default is not None and not _is_default_alpha(default):
            bad.append(f"{rel}: {owner}(alpha={shown}): default to DEFAULT_ALPHA"
                       + (" (a literal number)" if _numeric_literal(default) else ""))
    return bad


def test_every_interval_level_is_alpha_defaulting_to_the_one_constant():
    assert problems(level_parameters()) == []


def test_each_listed_exception_still_exists():
    found = {(rel, owner, name) for rel, owner, name, _ in level_parameters()}
    for key in OTHER_CONCEPT:
        assert key in found, f"{key} is listed but no longer in judgelab/: drop it from the list"


def test_the_one_constant_is_defined_once_and_is_five_percent():
    defined = [p.relative_to(ROOT.parent).as_posix() for p in ROOT.rglob("*.py")
               if any(isinstance(n, (ast.Assign, ast.AnnAssign))
                      and any(isinstance(t, ast.Name) and t.id == "DEFAULT_ALPHA"
                              for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
                      for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))]
    assert defined == ["judgelab/stats/intervals.py"]
    assert DEFAULT_ALPHA == 0.05


@pytest.mark.parametrize("source, expected", [
    ("def f(x, *, confidence: float = 0.95): ...", "f(confidence=0.95): name the interval's level alpha"),
    ("def f(level=0.9): ...", "f(level=0.9): name the interval's level alpha"),
    ("def f(alpha: float = 0.05): ...", "f(alpha=0.05): default to DEFAULT_ALPHA (a literal number)"),
    ("def f(alpha=1 - 0.95): ...", "f(alpha=1 - 0.95): default to DEFAULT_ALPHA (a literal number)"),
    ("def f(alpha=ALPHA): ...", "f(alpha=ALPHA): default to DEFAULT_ALPHA"),
    ("class S:\n    alpha: float = 0.05\n", "S.alpha(alpha=0.05): default to DEFAULT_ALPHA (a literal number)"),
    ("class S:\n    alpha: float = setting(0.1, 'x')\n", "S.alpha(alpha=0.1): default to DEFAULT_ALPHA"),
])
def test_the_scan_names_a_planted_literal_or_other_name(tmp_path, source, expected):
    pkg = tmp_path / "judgelab"
    pkg.mkdir()
    (pkg / "m.py").write_text(source)
    got = problems(level_parameters(pkg))
    assert len(got) == 1 and expected in got[0] and got[0].startswith("judgelab/m.py: ")


def test_the_scan_passes_the_constant_and_a_parameter_without_default(tmp_path):
    pkg = tmp_path / "judgelab"
    pkg.mkdir()
    (pkg / "m.py").write_text("def f(alpha=DEFAULT_ALPHA): ...\ndef g(alpha, level2=0.9): ...\n"
                              "class S:\n    alpha: float = setting(DEFAULT_ALPHA, 'x')\n")
    assert problems(level_parameters(pkg)) == []
