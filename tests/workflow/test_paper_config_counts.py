"""Each shipped paper config plans its paper's protocol at the paper's size.

The protocol's call count is derived, row by row with its arithmetic and the paper's sections, in a
table of the study's page (``docs/studies/<study>.md``), after a marker line
``<!-- protocol-count: CONFIG TARGET... -->``.  This file reads that table -- the one place the
documented number lives, so the doc and the test cannot drift -- checks each row's arithmetic, then
runs ``judgelab plan`` (:func:`judgelab.workflow.plan.plan`) on the config and targets the marker names and
compares: the plan's total within 10 % of the table's, each rule whose count does not follow the
stand-ins' answers within 10 % of its rows, and no rule the table does not account for.  The plan
must also stay quick (the issue asks for 30 s on an idle machine; the bound here is loose, in CPU
seconds, as the machine running the suite is shared).
"""

from __future__ import annotations

import ast
import json
import operator
import re
import resource
from dataclasses import dataclass
from pathlib import Path

import pytest

from judgelab.workflow.plan import ALL_STUDIES, plan
from tests.conftest import REPO

STUDY_PAGES = sorted((REPO / "docs" / "studies").glob("*.md"))
MARKER = re.compile(r"^<!-- protocol-count: (?P<config>\S+) (?P<targets>.+?) -->$")
#: rules whose counts follow the stand-ins' answers (a detector's flags decide the re-prompts, a
#: reviewer's rejections the rewrites): their rows are estimates, held through the total and within
#: [half, STEERED_MAX times] of their rows (Algorithm 1's T = 3, the generation-review pipeline's
#: max_attempts = 3)
ANSWER_STEERED = {"rbd_loop", "rbd_loop_label_only", "scoring_responses", "scoring_references"}
STEERED_MAX = 3
TOLERANCE = 0.10
#: CPU seconds (this process and its children): the idle target is 30 s, the suite shares its machine.
#: paper-uda (478,930 calls) and paper-rbd (145,254) take 47 and 37 CPU-s on the shared 2-core VM at
#: load 9-10, still over the target (docs/benchmarks-plan.md), so this bound catches a regression
#: rather than certifying it
CPU_LIMIT_S = 60.0
#: configs with a bound of their own (none now)
CPU_LIMIT_BY_CONFIG: dict[str, float] = {}


@dataclass(frozen=True)
class Row:
    rule: str
    arithmetic: str
    count: int


@dataclass(frozen=True)
class ProtocolTable:
    page: Path
    config: str
    targets: list[str]
    rows: list[Row]
    total: int


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def evaluate_arithmetic(text: str) -> float:
    """The value of a row's arithmetic (``8 × 4 × 2 × 500``, ``8 × 250 × (0.313 + 0.129)``).

    Written by hand rather than ``eval``: only numbers, + - × / and parentheses are allowed, so a
    typo in the doc is an error here, never code run."""
    expr = text.replace("×", "*").replace("−", "-").replace(",", "")
    node = ast.parse(expr, mode="eval").body

    def walk(n: ast.AST) -> float:
        if isinstance(n, ast.Constant) and isinstance(n.value, int | float):
            return float(n.value)
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            return _OPS[type(n.op)](walk(n.left), walk(n.right))
        raise ValueError(f"not plain arithmetic: {text!r}")

    return walk(node)


def _cells(line: str) -> list[str]:
    """A markdown table row's cells (``\\|`` is a literal bar inside a cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def protocol_tables(pages: list[Path] = STUDY_PAGES) -> list[ProtocolTable]:
    """Every protocol-count table of the study pages."""
    out = []
    for page in pages:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            m = MARKER.match(line.strip())
            if not m:
                continue
            body = []
            for row in lines[i + 1:]:
                if not row.startswith("|"):
                    break
                body.append(_cells(row))
            header, data = body[0], body[2:]
            col = {name: k for k, name in enumerate(header)}
            rows, total = [], None
            for cells in data:
                count = int(cells[col["count"]].replace(",", ""))
                if cells[col["rule"]] == "total":
                    total = count
                    continue
                rows.append(Row(cells[col["rule"]].strip("`"), cells[col["arithmetic"]], count))
            assert total is not None, f"{page.name}: the protocol table has no total row"
            out.append(ProtocolTable(page, m["config"], m["targets"].split(), rows, total))
    return out


TABLES = protocol_tables()


def test_the_paper_configs_have_protocol_tables():
    """The configs whose protocol is derived so far; each table names a shipped config."""
    configs = {t.config for t in TABLES}
    assert {"config/judges/paper-rbd.yaml", "config/judges/paper-scoring.yaml", "config/judges/paper-topk.yaml",
            "config/judges/paper-uda.yaml"} <= configs
    for t in TABLES:
        assert (REPO / t.config).is_file(), t.config


@pytest.mark.parametrize("table", TABLES, ids=lambda t: Path(t.config).stem)
def test_each_row_is_its_arithmetic_and_the_total_their_sum(table: ProtocolTable):
    for row in table.rows:
        assert round(evaluate_arithmetic(row.arithmetic)) == row.count, (table.page.name, row)
    assert sum(r.count for r in table.rows) == table.total


def test_the_arithmetic_reader_refuses_anything_but_arithmetic():
    assert evaluate_arithmetic("8 × 4 × 2 × 500") == 32000
    assert evaluate_arithmetic("8 × 250 × (0.313 + 0.129 + 0.125 + 0.150)") == pytest.approx(1434)
    assert evaluate_arithmetic("1,500 − 500") == 1000
    with pytest.raises(ValueError):
        evaluate_arithmetic("__import__('os').getcwd()")
    with pytest.raises(ValueError):
        evaluate_arithmetic("2 ** 10")


def test_the_table_reader_finds_rows_totals_and_escaped_bars(tmp_path: Path):
    page = tmp_path / "x.md"
    page.write_text("intro\n<!-- protocol-count: config/judges/x.yaml a.csv b.csv -->\n"
                    "| rule | calls | arithmetic | count |\n|---|---|---|---:|\n"
                    "| `r1` | \\|D\\| items | 2 × 3 | 6 |\n| `r2` | more | 1,000 × 1 | 1,000 |\n"
                    "| total | | | 1,006 |\n\nafter\n", encoding="utf-8")
    (t,) = protocol_tables([page])
    assert t.config == "config/judges/x.yaml" and t.targets == ["a.csv", "b.csv"] and t.total == 1006
    assert t.rows == [Row("r1", "2 × 3", 6), Row("r2", "1,000 × 1", 1000)]


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.mark.slow
@pytest.mark.parametrize("table", TABLES, ids=lambda t: Path(t.config).stem)
def test_judgelab_plan_counts_the_papers_protocol(table: ProtocolTable, data_root: Path, tmp_path: Path,
                                                  monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("JUDGELAB_DATA", str(data_root))
    monkeypatch.chdir(REPO)
    scratch = tmp_path / "scratch"
    started = _cpu_seconds()
    planned = plan([REPO / table.config], targets=table.targets, directory=str(tmp_path / "project"),
                   scratch=str(scratch), progress=False, keep_cache=False)
    cpu = _cpu_seconds() - started
    total = int(planned.loc[planned["study"] == ALL_STUDIES, "calls"].sum())
    assert abs(total - table.total) <= TOLERANCE * table.total, (total, table.total)

    # per rule: the plan's log of distinct calls (one per judge and payload), as the total counts them;
    # a call two rules ask (Table 5's first detector pass is rbd_loop's) counts once, under the rule
    # first by name, so the attribution does not depend on the order the plan ran the jobs
    owner: dict[tuple[str, str], str] = {}
    for line in (scratch / "plan-calls.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        key = (rec["judge"], rec["payload_sha"])
        owner[key] = min(owner.get(key, rec["rule"]), rec["rule"])
    per_rule: dict[str, int] = {}
    for rule in owner.values():
        per_rule[rule] = per_rule.get(rule, 0) + 1
    assert sum(per_rule.values()) == total
    documented: dict[str, int] = {}
    for row in table.rows:
        documented[row.rule] = documented.get(row.rule, 0) + row.count
    assert set(per_rule) <= set(documented), f"rules the table does not count: {set(per_rule) - set(documented)}"
    for rule, expected in documented.items():
        if rule in ANSWER_STEERED:
            assert 0.5 * expected <= per_rule.get(rule, 0) <= STEERED_MAX * expected, (rule, per_rule.get(rule), expected)
            continue
        assert abs(per_rule.get(rule, 0) - expected) <= TOLERANCE * expected, (rule, per_rule.get(rule), expected)
    limit = CPU_LIMIT_BY_CONFIG.get(table.config, CPU_LIMIT_S)
    assert cpu < limit, f"plan took {cpu:.1f} CPU s (bound {limit:.0f})"
