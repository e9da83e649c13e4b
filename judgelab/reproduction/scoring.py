"""Paper 004 (scoring bias) against the ``scoring`` study's tables.

Rows: Table 3's correlations of GPT-4o (and DeepSeek-V3) with the GPT-4.1 gold on MT Bench and
Vicuna Bench, unperturbed and under a descending rubric order and letter score IDs.  Values
come from ``table3.csv`` (``gold_source`` ``gold_judge``: the majority of three scorings by
``scoring.gold.judge``, the paper's GPT-4.1; bootstrap CIs); a set sampled below the paper's 320
responses is said to be another size.  The gold must be the paper's GPT-4.1 too: the run's gold
judge is compared like the row's judge.

Human columns: Table 3's correlations of GPT-4o with the human scores of BiGGen-Bench and FLASK
(``table3.csv``, ``gold_source`` ``human``) and Table 2's correlations of the GPT-4.1 gold protocol
with those human scores (``table2.csv``, ``reference_source`` ``human``).  Both sets are optional
downloads (:mod:`judgelab.scoring.human`): when absent, the tables keep these cells empty with a
``reason`` naming the missing file, and the rows carry that reason (not comparable).

No row is planted: the simulated panel's scoring profiles (``scoring.sim_profiles``) are set
after the paper's qualitative findings, not from these numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from judgelab.reproduction import PaperValue, RunValue, find_judge, judge_key, missing
from judgelab.reproduction._tables import TableReader, flag, reason_of

STUDY = "scoring"
PAPER = "004"
#: The paper's responses per set (Sec. 3 "Datasets"; BiGGen-Bench's non-multilingual part, FLASK's full set).
PAPER_ITEMS = {"mt_bench": 320, "vicuna_bench": 320, "biggen": 2780, "flask_full": 2001}
#: The run's human-scored sets (``scoring.datasets`` keys) standing for the paper's columns.
BIGGEN, FLASK = "biggen", "flask_full"
GOLD = "gpt-4.1"

_GPT4O_BASE = ("GPT-4o\tBaseline\t-\t0.5685\t0.6165\t0.7572\t0.8059\t0.5529\t0.5914\t0.7369\t0.7676\t0.7578\t"
               "0.7724\t0.6862\t0.7696")
_GPT4O_DESC = ("Rubrics Order\tDescending\t0.5852\t0.6245\t0.7787\t0.8233\t0.5754\t0.6080\t0.7602\t0.7760\t0.7479\t"
               "0.7597\t0.6734\t0.7635")
_GPT4O_LETTER = "Score IDs\tLetter\t0.5641\t0.6034\t0.7595\t0.7994\t0.5558\t0.5977\t0.7341\t0.7609\t0.7317\t0.7454"
_TABLE2_GPT41 = "GPT-4.1\t0.6048\t0.6360\t0.6401\t0.6823"
_DSV3_BASE = ("DeepSeek-V3\tBaseline\t-\t0.5314\t0.5748\t0.6775\t0.7394\t0.5163\t0.5660\t0.6711\t0.7063\t0.6323\t"
              "0.6593")


def _row(cell: str, printed: str, quote: str, dataset: str, variant: str, stat: str, judge: str,
         gold: str = "gold_judge") -> PaperValue:
    return PaperValue("Table 3", cell, printed, "Main Results, Table 3", quote, "table3",
                      {"dataset": dataset, "variant": variant, "stat": stat, "gold": gold}, (judge,))


def _table2(cell: str, printed: str, dataset: str, stat: str) -> PaperValue:
    return PaperValue("Table 2", cell, printed, "Datasets, Table 2", _TABLE2_GPT41, "table2",
                      {"dataset": dataset, "stat": stat, "candidate": GOLD}, (GOLD,))


ROWS: tuple[PaperValue, ...] = (
    _row("GPT-4o, MT Bench vs GPT-4.1, baseline: Spearman ρ", "0.7578", _GPT4O_BASE, "mt_bench", "baseline", "rho",
         "gpt-4o"),
    _row("GPT-4o, MT Bench vs GPT-4.1, baseline: Pearson r", "0.7724", _GPT4O_BASE, "mt_bench", "baseline", "r",
         "gpt-4o"),
    _row("GPT-4o, Vicuna Bench vs GPT-4.1, baseline: Spearman ρ", "0.6862", _GPT4O_BASE, "vicuna_bench", "baseline",
         "rho", "gpt-4o"),
    _row("GPT-4o, MT Bench vs GPT-4.1, descending rubric order: Spearman ρ", "0.7479", _GPT4O_DESC, "mt_bench",
         "descending", "rho", "gpt-4o"),
    _row("GPT-4o, MT Bench vs GPT-4.1, letter score IDs: Spearman ρ", "0.7317", _GPT4O_LETTER, "mt_bench", "letter",
         "rho", "gpt-4o"),
    _row("DeepSeek-V3, MT Bench vs GPT-4.1, baseline: Spearman ρ", "0.6323", _DSV3_BASE, "mt_bench", "baseline",
         "rho", "deepseek-v3"),
    _row("GPT-4o, BiGGen Bench vs human scores, baseline: Spearman ρ", "0.5685", _GPT4O_BASE, BIGGEN, "baseline",
         "rho", "gpt-4o", "human"),
    _row("GPT-4o, FLASK vs human scores, baseline: Spearman ρ", "0.5529", _GPT4O_BASE, FLASK, "baseline", "rho",
         "gpt-4o", "human"),
    _table2("GPT-4.1 gold protocol, BiGGen Bench vs human scores: Spearman ρ", "0.6048", BIGGEN, "rho"),
    _table2("GPT-4.1 gold protocol, FLASK vs human scores: Spearman ρ", "0.6401", FLASK, "rho"),
)

TABLES = ("table3.csv", "table2.csv")


def extractor(root: str | Path, available: Iterable[str | Path] | None = None,
              options: Mapping[str, Any] | None = None) -> Callable[[PaperValue], RunValue]:
    """The run values of :data:`ROWS` from a ``results/scoring`` folder; ``options["gold_judge"]``:
    the run's ``scoring.gold.judge``."""
    tables = TableReader(Path(root), available)
    gold_judge = str((options or {}).get("gold_judge") or "")

    def size_note(n: int, dataset: str) -> str:
        return f"{n} {dataset} responses, the paper's {PAPER_ITEMS[dataset]}" if n != PAPER_ITEMS[dataset] else ""

    def extract_table2(row: PaperValue) -> RunValue:
        """Table 2: the candidate's gold protocol (a run judge standing for it) against human scores."""
        p = row.params
        df = tables.read("table2.csv")
        sub = df[(df["dataset"] == p["dataset"]) & (df["reference_source"] == "human")]
        if sub.empty:
            return missing(f"no {p['dataset']} row against human scores in table2.csv (the set is not among "
                           "this run's scoring sets)")
        judge = find_judge(p["candidate"], sub["candidate"].astype(str))
        if judge is None:
            return missing(f"no gold candidate standing for {p['candidate']} among "
                           f"{sorted(set(sub['candidate'].astype(str)))}")
        r = sub[sub["candidate"] == judge].iloc[0]
        v = float(r[p["stat"]])
        return RunValue(value=v, ci_low=float(r[f"{p['stat']}_ci_low"]), ci_high=float(r[f"{p['stat']}_ci_high"]),
                        judges=(judge,), table_simulated=flag(r.get("simulated")),
                        incomparable=size_note(int(r["n"]), p["dataset"]),
                        missing="" if math.isfinite(v) else reason_of(r))

    def extract(row: PaperValue) -> RunValue:
        if row.metric == "table2":
            return extract_table2(row)
        p = row.params
        df = tables.read("table3.csv")
        sub = df[(df["dataset"] == p["dataset"]) & (df["gold_source"] == p["gold"]) & (df["variant"] == p["variant"])]
        if sub.empty:
            against = "human scores" if p["gold"] == "human" else "the gold judge"
            return missing(f"no {p['dataset']} {p['variant']} row against {against} in table3.csv")
        judge = find_judge(row.judges[0], sub["judge"].astype(str))
        if judge is None:
            return missing(f"no judge standing for {row.judges[0]} among {sorted(set(sub['judge'].astype(str)))}")
        r = sub[sub["judge"] == judge].iloc[0]
        notes = [size_note(int(r["n"]), p["dataset"])]
        judges: tuple[str, ...] = (judge,)
        if p["gold"] == "gold_judge" and gold_judge:  # the human column has no gold judge
            judges = (judge, gold_judge)
            if judge_key(gold_judge) != GOLD:
                notes.append(f"gold judge {gold_judge}, the paper's GPT-4.1")
        v = float(r[p["stat"]])
        # an empty cell (e.g. a human-scored set not downloaded) carries the table's reason
        return RunValue(value=v, ci_low=float(r[f"{p['stat']}_ci_low"]), ci_high=float(r[f"{p['stat']}_ci_high"]),
                        judges=judges, table_simulated=flag(r.get("simulated")),
                        incomparable="; ".join(n for n in notes if n),
                        missing="" if math.isfinite(v) else reason_of(r))

    return extract
