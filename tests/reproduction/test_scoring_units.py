"""Paper 004's rows against the gold judge (``judgelab/reproduction/scoring.py``), cell by cell.

* The run's gold judge is one of the row's judges: a simulated gold makes the row simulated, a gold
  that does not stand for GPT-4.1 makes it not comparable (named), ``sim-gpt-4.1`` stands for it; a
  run that names no gold judge leaves the row to the scoring judge alone.
* The human column involves no gold judge, whatever the options say.
* A table's ``simulated`` flag makes the row simulated even when the judge's backend is real, in
  Table 3 and in Table 2.
* Every row without a value says which row, judge or candidate it looked for, among what.
* Two reasons of incomparability (another set size, another gold) are both named.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.io import write_table
from judgelab.reproduction import reproduce
from judgelab.reproduction.scoring import PAPER_ITEMS
from judgelab.scoring.gold_candidates import TABLE2_COLUMNS
from judgelab.scoring.metrics import TABLE3_COLUMNS
from judgelab.workflow import provenance
from tests.conftest import REPO
from tests.reproduction.test_papers import paper_text

REAL = {"name": "gpt-4o", "backend": "openai", "model": "gpt-4o", "options": {"api_key_env": None}}
GOLD = {"name": "gpt-4.1", "backend": "openai", "model": "gpt-4.1", "options": {"api_key_env": None}}
SIM_GOLD = {"name": "sim-gpt-4.1", "backend": "simulated", "model": "s", "options": {"profile": {"competence": 2.0}}}
MT_RHO = "GPT-4o, MT Bench vs GPT-4.1, baseline: Spearman ρ"
VIC_RHO = "GPT-4o, Vicuna Bench vs GPT-4.1, baseline: Spearman ρ"
DSV3 = "DeepSeek-V3, MT Bench vs GPT-4.1, baseline: Spearman ρ"
T3_BIGGEN = "GPT-4o, BiGGen Bench vs human scores, baseline: Spearman ρ"
T2_BIGGEN = "GPT-4.1 gold protocol, BiGGen Bench vs human scores: Spearman ρ"
T2_FLASK = "GPT-4.1 gold protocol, FLASK vs human scores: Spearman ρ"


def _t3(dataset: str, gold_source: str, rho: float, n: int, simulated: bool = False) -> dict:
    row = dict.fromkeys(TABLE3_COLUMNS, np.nan)
    row.update(dataset=dataset, gold_source=gold_source, judge="gpt-4o", variant="baseline", n=n, rho=rho,
               rho_ci_low=rho - 0.02, rho_ci_high=rho + 0.02, r=rho, r_ci_low=rho - 0.02, r_ci_high=rho + 0.02,
               reason="", simulated=simulated)
    return row


def _t2(dataset: str, candidate: str, rho: float, n: int, simulated: bool = False) -> dict:
    row = dict.fromkeys(TABLE2_COLUMNS, np.nan)
    row.update(dataset=dataset, reference_source="human", candidate=candidate, source="gold_protocol", n=n,
               n_unparsed=0, rho=rho, rho_ci_low=rho - 0.02, rho_ci_high=rho + 0.02, r=rho, r_ci_low=rho - 0.02,
               r_ci_high=rho + 0.02, simulated=simulated, reason="")
    return row


def _csv(path, rows: list[dict], columns) -> str:
    """A study table as a plain CSV: the rows' own ``simulated`` cells, no provenance columns added."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=[*columns, "simulated"] if "simulated" not in columns else columns).to_csv(
        path, index=False)
    return str(path)


def _table(root, entries: dict, options: dict | None, t3: list[dict], t2: list[dict] | None = None) -> pd.DataFrame:
    files = [_csv(root / "table3.csv", t3, TABLE3_COLUMNS)]
    if t2 is not None:
        files.append(_csv(root / "table2.csv", t2, TABLE2_COLUMNS))
    return reproduce("scoring", root, files, entries, options).set_index("cell")


def test_the_gold_judge_is_one_of_the_rows_judges(tmp_path):
    t3 = [_t3("mt_bench", "gold_judge", 0.7578, PAPER_ITEMS["mt_bench"]),
          _t3("biggen", "human", 0.5685, PAPER_ITEMS["biggen"])]
    # the paper's gold, real: the row is real and reproduced (0.7578 is the paper's value)
    t = _table(tmp_path, {"gpt-4o": REAL, "gpt-4.1": GOLD}, {"gold_judge": "gpt-4.1"}, t3)
    assert (t.loc[MT_RHO, "provenance"], t.loc[MT_RHO, "verdict"]) == ("real", "reproduced"), t.loc[MT_RHO, "reason"]
    # a simulated gold standing for GPT-4.1: the row is simulated; the human column is not touched by it
    t = _table(tmp_path, {"gpt-4o": REAL, "sim-gpt-4.1": SIM_GOLD}, {"gold_judge": "sim-gpt-4.1"}, t3)
    assert t.loc[MT_RHO, "provenance"] == "simulated"
    assert "gold judge" not in t.loc[MT_RHO, "reason"]  # sim-gpt-4.1 stands for GPT-4.1
    assert (t.loc[T3_BIGGEN, "provenance"], t.loc[T3_BIGGEN, "verdict"]) == ("real", "reproduced")
    # a real gold that is not GPT-4.1: real, but not the paper's setting, and the reason names the gold
    other = {**GOLD, "name": "claude-3"}
    t = _table(tmp_path, {"gpt-4o": REAL, "claude-3": other}, {"gold_judge": "claude-3"}, t3)
    row = t.loc[MT_RHO]
    assert (row["provenance"], row["verdict"]) == ("real", "not comparable")
    assert row["reason"].startswith("gold judge claude-3, the paper's GPT-4.1 ("), row["reason"]


@pytest.mark.parametrize("options", [None, {}, {"gold_judge": None}, {"gold_judge": ""}])
def test_without_a_named_gold_judge_the_scoring_judge_alone_decides(tmp_path, options):
    t3 = [_t3("mt_bench", "gold_judge", 0.7578, PAPER_ITEMS["mt_bench"])]
    # the simulated gold is configured but not named as the gold: it does not enter the row
    t = _table(tmp_path, {"gpt-4o": REAL, "sim-gpt-4.1": SIM_GOLD}, options, t3)
    row = t.loc[MT_RHO]
    assert (row["provenance"], row["verdict"]) == ("real", "reproduced"), row["reason"]


def test_both_reasons_of_incomparability_are_named(tmp_path):
    t3 = [_t3("vicuna_bench", "gold_judge", 0.6862, 48)]
    other = {**GOLD, "name": "gpt-4o-mini"}
    t = _table(tmp_path, {"gpt-4o": REAL, "gpt-4o-mini": other}, {"gold_judge": "gpt-4o-mini"}, t3)
    reason = t.loc[VIC_RHO, "reason"]
    assert reason.startswith("48 vicuna_bench responses, the paper's 320; gold judge gpt-4o-mini, the paper's "
                             "GPT-4.1 ("), reason


def test_a_tables_simulated_flag_makes_the_row_simulated(tmp_path):
    t3 = [_t3("mt_bench", "gold_judge", 0.7578, PAPER_ITEMS["mt_bench"], simulated=True)]
    t2 = [_t2("biggen", "gpt-4.1", 0.6048, PAPER_ITEMS["biggen"], simulated=True),
          _t2("flask_full", "gpt-4.1", 0.6401, PAPER_ITEMS["flask_full"], simulated=False)]
    t = _table(tmp_path, {"gpt-4o": REAL, "gpt-4.1": GOLD}, {"gold_judge": "gpt-4.1"}, t3, t2)
    assert (t.loc[MT_RHO, "provenance"], t.loc[MT_RHO, "verdict"]) == ("simulated", "not comparable")
    assert (t.loc[T2_BIGGEN, "provenance"], t.loc[T2_BIGGEN, "verdict"]) == ("simulated", "not comparable")
    # the same table with the flag False: the backend decides, real
    assert (t.loc[T2_FLASK, "provenance"], t.loc[T2_FLASK, "verdict"]) == ("real", "reproduced")


def test_rows_without_a_value_say_what_was_looked_for(tmp_path):
    t3 = [_t3("vicuna_bench", "human", 0.7, 320), _t3("biggen", "gold_judge", 0.7, 2780),
          _t3("mt_bench", "gold_judge", 0.7, 320)]
    t2 = [_t2("biggen", "gpt-4o", 0.6, 2780)]
    t = _table(tmp_path, {"gpt-4o": REAL, "gpt-4.1": GOLD}, {"gold_judge": "gpt-4.1"}, t3, t2)
    # the gold-judge row of Vicuna Bench is absent (only a human one): named as against the gold judge
    assert t.loc[VIC_RHO, "reason"] == ("this run has no value: no vicuna_bench baseline row against the gold "
                                        "judge in table3.csv")
    assert t.loc[T3_BIGGEN, "reason"] == ("this run has no value: no biggen baseline row against human scores "
                                          "in table3.csv")
    # the judge is not there: the judges that are
    assert t.loc[DSV3, "reason"] == "this run has no value: no judge standing for deepseek-v3 among ['gpt-4o']"
    # Table 2: the set without GPT-4.1 among its candidates, and a set not scored at all
    assert t.loc[T2_BIGGEN, "reason"] == ("this run has no value: no gold candidate standing for gpt-4.1 among "
                                          "['gpt-4o']")
    assert t.loc[T2_FLASK, "reason"] == ("this run has no value: no flask_full row against human scores in "
                                         "table2.csv (the set is not among this run's scoring sets)")
    assert t.loc[[VIC_RHO, T3_BIGGEN, DSV3, T2_BIGGEN, T2_FLASK], "verdict"].eq("not comparable").all()


def test_table2_reads_the_candidates_row_of_the_human_reference(tmp_path):
    # a gpt-4.1 row against another reference must not be read; the candidate's own row is
    other_ref = {**_t2("biggen", "gpt-4.1", 0.1, 2780), "reference_source": "gpt4"}
    t2 = [other_ref, _t2("biggen", "gpt-4o", 0.3, 2780), _t2("biggen", "sim-gpt-4.1", 0.6048, 2780)]
    t3 = [_t3("mt_bench", "gold_judge", 0.7578, 320)]
    t = _table(tmp_path, {"gpt-4o": REAL, "sim-gpt-4.1": SIM_GOLD}, {"gold_judge": "sim-gpt-4.1"}, t3, t2)
    row = t.loc[T2_BIGGEN]
    assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((0.6048, 0.5848, 0.6248))
    assert row["provenance"] == "simulated"  # the candidate is the simulated stand-in


def test_write_table_keeps_the_rows_simulated_cell(tmp_path):
    # the study writes its tables through write_table, which adds the run's provenance columns: a row's
    # own simulated cell (the human sets' rows, a simulated gold) survives and is what the extractor reads
    root = tmp_path / "scoring"
    root.mkdir()
    t3 = pd.DataFrame([_t3("mt_bench", "gold_judge", 0.7578, 320, simulated=True)])
    write_table(t3, root / "table3.csv", provenance=provenance("h", 0, [REAL, GOLD]))
    t = reproduce("scoring", root, [root / "table3.csv"], {"gpt-4o": REAL, "gpt-4.1": GOLD},
                  {"gold_judge": "gpt-4.1"}).set_index("cell")
    assert t.loc[MT_RHO, "provenance"] == "simulated"


def test_the_row_builders_locate_each_number_in_the_paper_and_the_extractor_reads_it(tmp_path):
    """Rows rebuilt by the module's builders (``_row`` for Table 3, ``_table2`` for Table 2) from each
    row's own cell, number, quote and parameters: the table's caption is in paper 004, the reference is
    the paper section holding it and the table, the quote is the paper's, and a table planted with the
    paper's value at the row's parameters gives that value back, from the row's judge."""
    from judgelab.reproduction import scoring

    papers = REPO.parent / "shared" / "papers"
    if not papers.is_dir():
        pytest.skip(f"paper texts not available: place them at {papers}")
    text = paper_text(papers, scoring.PAPER)
    lines = {ln.strip() for ln in text.splitlines()}
    rebuilt = [scoring._table2(r.cell, r.printed, r.params["dataset"], r.params["stat"]) if r.metric == "table2"
               # against the gold judge by default, as the module builds its rows
               else scoring._row(r.cell, r.printed, r.quote, r.params["dataset"], r.params["variant"], r.params["stat"],
                                 r.judges[0], **({"gold": "human"} if r.params["gold"] == "human" else {}))
               for r in scoring.ROWS]
    assert {r.params.get("gold") for r in rebuilt} == {"gold_judge", "human", None}
    page = (REPO / "docs" / "studies" / "scoring.md").read_text(encoding="utf-8").split("\n## Reproduction\n", 1)[1]
    for row in rebuilt:
        section, _, table = row.reference.rpartition(", ")
        assert table == row.table_or_figure and section in lines, row.reference
        assert any(ln.startswith(f"{row.table_or_figure}: ") for ln in lines), row.table_or_figure
        assert row.quote in text and row.printed in row.quote
        assert row.metric == row.table_or_figure.lower().replace(" ", "")
        assert f"| {row.table_or_figure} | {row.cell} |" in page, row.cell
    t3: dict[tuple, dict] = {}
    t2: dict[tuple, dict] = {}
    for row in rebuilt:  # one table row per (set, reference, variant, judge), each stat in its own column
        p, v = row.params, row.value
        cells = {p["stat"]: v, f"{p['stat']}_ci_low": v - 0.01, f"{p['stat']}_ci_high": v + 0.01}
        if row.metric == "table2":
            t2.setdefault((p["dataset"], row.judges[0]), _t2(p["dataset"], row.judges[0], 0.0,
                                                              PAPER_ITEMS[p["dataset"]])).update(cells)
        else:
            key = (p["dataset"], p["gold"], p["variant"], row.judges[0])
            t3.setdefault(key, {**_t3(p["dataset"], p["gold"], 0.0, PAPER_ITEMS[p["dataset"]]), "judge": row.judges[0],
                                "variant": p["variant"]}).update(cells)
    entries = {j: {**REAL, "name": j} for j in {r.judges[0] for r in rebuilt} | {"gpt-4.1"}}
    files = [_csv(tmp_path / "table3.csv", list(t3.values()), TABLE3_COLUMNS),
             _csv(tmp_path / "table2.csv", list(t2.values()), TABLE2_COLUMNS)]
    extract = scoring.extractor(tmp_path, files, {"gold_judge": "gpt-4.1"})
    for row in rebuilt:
        run = extract(row)
        assert run.value == pytest.approx(row.value) and not run.missing and not run.incomparable, (row.cell, run)
        assert run.judges[0] == row.judges[0] and set(run.judges) <= set(entries)
