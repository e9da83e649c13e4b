"""The bias card stays split: ``card.py`` builds the card and decides the rows' statuses, the row
builders live in ``bias_card/rows_*.py`` and the statistics they call live in ``judgelab/stats/`` on
plain numbers.  These checks keep it that way: the size of ``card.py``, imports that run from the
card down to its row builders and from them down to ``stats`` (never back), and no statistic that
takes the card's settings object."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.project.test_layering import PKG, import_graph

#: the most lines ``card.py`` may hold (orchestration only; it held 1,246 before its split)
MAX_CARD_LINES = 600


def test_card_py_stays_at_most_600_lines():
    n = len((PKG / "bias_card" / "card.py").read_text(encoding="utf-8").splitlines())
    assert n <= MAX_CARD_LINES, f"judgelab/bias_card/card.py has {n} lines; move row builders or statistics out"


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, str]]:
    return import_graph()


def test_stats_never_import_the_bias_card(graph):
    bad = {m: sorted(d for d in deps if d.startswith("judgelab.bias_card"))
           for m, deps in graph.items() if m.startswith("judgelab.stats")}
    assert not {m: d for m, d in bad.items() if d}, bad


def test_row_builders_import_downward_only(graph):
    """The row builders, the metrics and the settings never import the card that calls them; a row builder
    imports another only when that one sits below it (``rows_share`` is the base of the others)."""
    lower = {"judgelab.bias_card.metrics", "judgelab.bias_card.card_settings", "judgelab.bias_card.rows_share"}
    for name in ("metrics", "card_settings", "rows_share", "rows_cue", "rows_logit", "rows_benchmark", "rows_human"):
        module = f"judgelab.bias_card.{name}"
        assert module in graph, module
        assert "judgelab.bias_card.card" not in graph[module], (module, graph[module])
        rows = {d for d in graph[module] if d.startswith("judgelab.bias_card.rows_")}
        assert rows <= lower - {module}, (module, rows)


def settings_arguments(folder: Path) -> list[str]:
    """``file:line function(argument)`` of every function argument annotated with ``CardSettings``."""
    hits = []
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                    if arg.annotation is not None and "CardSettings" in ast.unparse(arg.annotation):
                        hits.append(f"{path.name}:{node.lineno} {node.name}({arg.arg})")
    return hits


def test_no_statistic_takes_the_card_settings(tmp_path):
    """A function in ``judgelab/stats`` takes numbers (alpha or the interval level, resamples, seed),
    never :class:`~judgelab.bias_card.card_settings.CardSettings`; the scan finds one that does."""
    assert settings_arguments(PKG / "stats") == []
    (tmp_path / "x.py").write_text("def f(y, *, s: 'CardSettings | None' = None):\n    return y\n")
    assert settings_arguments(tmp_path) == ["x.py:1 f(s)"]


def test_the_card_keeps_its_public_names():
    """What other modules import from ``judgelab.bias_card.card`` is still there."""
    from judgelab.bias_card import card

    for name in ("CARD_COLUMNS", "METRICS", "PANEL_METRICS", "CardSettings", "CardRow", "bias_card", "judge_card",
                 "judge_rows", "finish_rows", "card_view"):
        assert hasattr(card, name), name
