"""Paper 000 (UDA) against the ``uda`` study's tables.

Rows: the inter-judge std and its reduction on Arena-Hard (Table 1), the zero-shot transfer's
reduction and human correlation (Tables 2-3, Fig. 4), the ablation (Table 3) and gpt-4o's
self-preference deviation (Fig. 2).  Values come from ``<set>/tables/methods.csv`` (the mean
inter-judge std, its reduction and the mean Pearson with the reference, per method) and
``<set>/tables/self_preference.csv``; the tables give no intervals, so rows compare within the
paper's precision.  The paper's transfer set (100 human-annotated prompts) is not public: the
transfer rows read the MT-Bench tournament (human votes), which the run's ``uda.transfer``
applies the Arena-Hard adapter to, and say so.

Held-out rows: where the run splits the Arena-Hard prompts (``uda.datasets.<set>.prompt_split``
with ``part: heldout``, a tournament a ``uda.transfer`` applies the adapter to: the paper config's
``arena_hard_heldout``), the zero-shot transfer's std reduction (Table 2) and Pearson with the
baseline consensus (Table 4) on those unseen prompts, read from ``<set>/tables/methods.csv`` and
``alignment.csv`` (:func:`heldout_split` finds the set; the rule passes it as
``options["heldout"]``).  The held-out prompts follow the paper's protocol on prompts the adapter
never saw, but are not its human-annotated transfer set: the rows say so.  A run without such a
split (the default) has no value for them, and says why.

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
    PaperValue("Table 2", "held-out Arena-Hard prompts: std reduction of UDA, zero-shot (%)", "63.4",
               "Sec. Introduction; Table 2",
               "Without any retraining, UDA still shrinks the inter-judge standard deviation by 63.4%",
               "heldout", {"table": "methods", "column": "std_reduction_pct"}, PAPER_JUDGES),
    PaperValue("Table 4", "held-out Arena-Hard prompts: mean Pearson with the baseline consensus, UDA zero-shot",
               "0.8778", "Sec. Additional Empirical Analysis, Table 4",
               "UDA boosts the mean Pearson correlation with the baseline-Elo consensus from 0.7363 to 0.8778",
               "heldout", {"table": "alignment", "column": "pearson_consensus"}, PAPER_JUDGES),
)

#: The result files the rows read, relative to ``results/uda``.
TABLES = tuple(f"{s}/tables/{t}.csv" for s in (ARENA, TRANSFER) for t in ("methods", "self_preference", "std"))


def heldout_split(uda: Mapping[str, Any], sets: Iterable[str]) -> dict[str, str] | None:
    """The run's held-out split, ``{"set": <held-out tournament>, "source": <the set its adapter
    was trained on>}``: the first ``uda.transfer`` applying an adapter to a run tournament whose
    ``prompt_split.part`` is ``heldout``; None when the run has none."""
    run = set(sets)
    for t in uda.get("transfer") or []:
        spec = (uda.get("datasets") or {}).get(t["apply"]) or {}
        if t["apply"] in run and (spec.get("prompt_split") or {}).get("part") == "heldout":
            return {"set": str(t["apply"]), "source": str(t["train"])}
    return None


def heldout_tables(split: Mapping[str, str] | None) -> list[str]:
    """The result files the held-out rows read (relative to ``results/uda``); none without a split."""
    return [f"{split['set']}/tables/{t}.csv" for t in ("methods", "alignment", "std")] if split else []


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

    split = (options or {}).get("heldout")

    def extract_heldout(row: PaperValue) -> RunValue:
        """The adapter trained on the split's source set, applied zero-shot to its held-out prompts."""
        if not split:
            return missing("this run has no held-out Arena-Hard split (no uda.datasets.<set>.prompt_split with "
                           "part: heldout that a uda.transfer applies the adapter to)")
        p, held = row.params, str(split["set"])
        judges, sim, why = judges_of(held)
        method = f"uda [from {split['source']}]"
        df = tables.read(f"{held}/tables/{p['table']}.csv")
        sub = df[df["method"] == method]
        if p["table"] == "alignment":
            sub = sub[sub["judge"] == "Average"]
        if sub.empty:
            return missing(f"no method {method!r} in {held}/tables/{p['table']}.csv", judges)
        r = sub.iloc[0]
        v = float(r[p["column"]])
        stand_in = (f"{held}: held-out prompts the adapter never saw stand in for the paper's human-annotated "
                    "transfer set")
        return RunValue(value=v, judges=judges, table_simulated=sim,
                        incomparable="; ".join(x for x in (stand_in, why) if x),
                        missing="" if math.isfinite(v) else reason_of(r))

    def extract(row: PaperValue) -> RunValue:
        if row.metric == "heldout":
            return extract_heldout(row)
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
