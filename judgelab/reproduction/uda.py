"""Paper 000 (UDA) against the ``uda`` study's tables.

Rows: the inter-judge std and its reduction on Arena-Hard (Table 1), the zero-shot transfer's
reduction and human correlation (Tables 2-3, Fig. 4), the ablation (Table 3) and gpt-4o's
self-preference deviation (Fig. 2).  Values come from ``<set>/tables/methods.csv`` (the mean
inter-judge std, its reduction and the mean Pearson with the reference, per method) and
``<set>/tables/self_preference.csv``; the tables give no intervals, so rows compare within the
paper's precision.  The paper's transfer set (100 human-annotated prompts) is not public: the
transfer rows read the MT-Bench tournament (human votes), which the run's ``uda.transfer``
applies the Arena-Hard adapter to, and say so.

gpt-4o's self-preference sign is the simulated panel's ``biases.self_preference`` (set from
Fig. 2's signs: ``config/judges/simulated.yaml``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from judgelab.reproduction import PaperValue, RunValue, find_judge, missing
from judgelab.reproduction._tables import TableReader, flag, reason_of

STUDY = "uda"
PAPER = "000"

#: The paper's ten judges, who also answer the prompts (Table 1's columns).
PAPER_JUDGES = ("gpt-4o", "claude-3.5", "glm-4-air", "glm-4-plus", "glm-4-flash", "doubao-1.5pro", "qwen-max",
                "deepseek-v3", "gemini-2.0-flash", "deepseek-r1")
ARENA, TRANSFER = "arena_hard", "mt_bench"
_TRANSFERRED = f"[from {ARENA}]"

ROWS: tuple[PaperValue, ...] = (
    PaperValue("Table 1", "Arena-Hard: mean inter-judge std, baseline Elo", "158.5", "Sec. Experiment Results, Table 1",
               "reduces the average inter-judge standard deviation from 158.5 to 64.8",
               "methods", {"set": ARENA, "method": "baseline", "column": "mean_inter_judge_std"}, PAPER_JUDGES),
    PaperValue("Table 1", "Arena-Hard: std reduction of UDA (%)", "59.1", "Sec. Experiment Results, Table 1",
               "a **relative decrease of 59.1%**",
               "methods", {"set": ARENA, "method": "uda", "column": "std_reduction_pct"}, PAPER_JUDGES),
    PaperValue("Table 3", "transfer set: std reduction of UDA, zero-shot (%)", "63.4",
               "Sec. Variance Reduction and Correlation with Human Judgments, Tables 2-3",
               "it reduces the average inter-judge standard deviation from 193.95 to 70.97, a **63.4% relative",
               "methods", {"set": TRANSFER, "method": "uda", "transferred": True, "column": "std_reduction_pct"},
               PAPER_JUDGES),
    PaperValue("Table 3", "transfer set: mean Pearson with human scores, baseline Elo", "0.651", "Table 3",
               "Baseline Elo\t193.95\t0.651",
               "methods", {"set": TRANSFER, "method": "baseline", "column": "mean_pearson_reference"}, PAPER_JUDGES),
    PaperValue("Table 3", "transfer set: mean Pearson with human scores, UDA", "0.812", "Table 3",
               "UDA (Full)\t70.97\t<b>0.812</b>",
               "methods", {"set": TRANSFER, "method": "uda", "transferred": True, "column": "mean_pearson_reference"},
               PAPER_JUDGES),
    PaperValue("Table 3", "transfer set: std reduction of UDA without self-features (%)", "66.2",
               "Sec. Ablation Study, Table 3",
               "cutting it by **66.2%** (from 193.95 to 65.64)",
               "methods", {"set": TRANSFER, "method": "uda_ablated", "transferred": True, "column": "std_reduction_pct"},
               PAPER_JUDGES),
    PaperValue("Fig. 4", "transfer set: Pearson of the baseline consensus with human scores", "0.89", "Fig. 4 caption",
               "the uniform correlation of 0.89 arises because the consensus is shared",
               "methods", {"set": TRANSFER, "method": "baseline", "column": "consensus_pearson_reference"},
               PAPER_JUDGES),
    PaperValue("Fig. 2", "Arena-Hard: gpt-4o's self-preference deviation, baseline Elo (%)", "-38",
               "Sec. Preference bias, Fig. 2",
               "a top-tier model like gpt-4o can paradoxically underrate its own responses ( $-38",
               "self_preference", {"set": ARENA, "method": "baseline"}, ("gpt-4o",), ("biases.self_preference",)),
)

#: The result files the rows read, relative to ``results/uda``.
TABLES = tuple(f"{s}/tables/{t}.csv" for s in (ARENA, TRANSFER) for t in ("methods", "self_preference", "std"))


def _method_label(p: dict) -> str:
    return f"{p['method']} {_TRANSFERRED}" if p.get("transferred") else p["method"]


def extractor(root: str | Path, available: Iterable[str | Path] | None = None,
              options: Mapping[str, Any] | None = None) -> Callable[[PaperValue], RunValue]:
    """The run values of :data:`ROWS` from a ``results/uda`` folder."""
    tables = TableReader(Path(root), available)

    def judges_of(set_name: str) -> tuple[tuple[str, ...], bool | None, str]:
        """The set's judges (the std table's rows are per method; its model columns are the
        tournament's answer models), its simulated flag, and why it is not the paper's setting."""
        std = tables.read(f"{set_name}/tables/std.csv")
        cols = list(std.columns)
        models = cols[cols.index("method") + 1: cols.index("mean")]  # Table 1's columns: the answer models
        judges = tuple(str(std["judge_ids"].iloc[0]).split(",")) if "judge_ids" in std.columns else ()
        sim = flag(std["simulated"].iloc[0]) if "simulated" in std.columns else None
        lacking = [m for m in PAPER_JUDGES if m not in models]
        why = (f"{set_name}: {len(models)} answer models, not the paper's ten judges answering"
               f" ({len(lacking)} of them absent)") if lacking else ""
        if set_name == TRANSFER:
            why = "the paper's human-annotated transfer set is not public: MT-Bench human votes stand in" + (
                f"; {why}" if why else "")
        return judges, sim, why

    def extract(row: PaperValue) -> RunValue:
        p = dict(row.params)
        judges, sim, why = judges_of(p["set"])
        if row.metric == "methods":
            df = tables.read(f"{p['set']}/tables/methods.csv")
            sub = df[df["method"] == _method_label(p)]
            if sub.empty:
                return missing(f"no method {_method_label(p)!r} in {p['set']}/tables/methods.csv", judges)
            r = sub.iloc[0]
            v = float(r[p["column"]])
            return RunValue(value=v, judges=judges, table_simulated=sim, incomparable=why,
                            missing="" if math.isfinite(v) else reason_of(r))
        df = tables.read(f"{p['set']}/tables/self_preference.csv")
        sub = df[df["method"] == p["method"]]
        judge = find_judge(row.judges[0], sub["judge"].astype(str))
        if judge is None:
            return missing(f"no judge standing for {row.judges[0]} in {p['set']}'s self-preference table", judges)
        r = sub[sub["judge"] == judge].iloc[0]
        run = RunValue(value=float(r["deviation_pct"]), judges=(judge,), table_simulated=flag(r.get("simulated", sim)),
                       incomparable=why)
        return run if math.isfinite(run.value) else replace(run, missing=reason_of(r))

    return extract
