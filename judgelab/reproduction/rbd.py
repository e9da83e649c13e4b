"""Paper 001 (Reasoning-based Bias Detector) against the ``rbd`` study's tables.

Rows: the share of biased examples per bias type over the eight evaluators (Fig. 3e, Wilson
intervals from ``evaluation.csv``), GPT-4o's verbosity accuracy without and with RBD-8B and the
average accuracy and consistency gains of RBD-8B (Table 2, abstract; from ``loop/table2.csv`` at
the largest T, the main loop detector's rows), the best detector accuracy (Fig. 5;
``detectors/metrics.csv`` on the test split, Wilson interval from its counts), LLMBar's
verbosity and bandwagon averages with RBD-14B (Table 3, ``tables/table3.csv`` with its interval),
LLaMA-3.1-70B's verbosity accuracy under the in-context debiasing prompt and Prometheus2's
bandwagon accuracy (Table 4, ``tables/table4.csv``), GPT-4o's verbosity accuracy with the
detector's label only and with its reasoning (Table 5, ``tables/table5.csv``) and the average
gains of the smallest and largest detector (Fig. 6, ``tables/fig6_sizes.csv``), each with the
table's interval.

Planted: the bandwagon and sentiment shares (the simulated panel's ``biases.bandwagon`` /
``biases.sentiment`` are set from Fig. 3e) and the detector accuracy (the simulated detectors'
``label_recall`` / ``label_specificity`` are set so that RBD beats the prompting baselines as in
Fig. 5), Fig. 6's gains (the other sizes' label skills are set monotone in size after Fig. 6's
+6.5 to +15.4 points), Prometheus2's bandwagon accuracy (its simulated stand-in's
``biases.bandwagon`` is set so it follows the majority statement, after Table 4) and the
label-only accuracy of Table 5 (the evaluators' ``reasoning_use`` is set from Table 5: a label
alone fixes about a quarter of what the reasoning does).  The verbosity and position shares come
from paper 003's biases: ``simulated``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.reproduction import PaperValue, RunValue, find_judge, missing
from judgelab.reproduction._tables import TableReader, flag, reason_of
from judgelab.stats.intervals import wilson_interval

STUDY = "rbd"
PAPER = "001"

#: The paper's eight evaluators (Sec. 3), as run-judge keys.
EVALUATORS = ("gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "claude-3-5-haiku", "deepseek-v3", "llama-3.1-8b",
              "llama-3.1-70b", "llama-3.1-405b")
BIASES = ("verbosity", "position", "bandwagon", "sentiment")
PAPER_ITEMS = 500

ROWS: tuple[PaperValue, ...] = (
    PaperValue("Fig. 3e", "share of biased examples, verbosity (%)", "31.3", "Sec. 3, Fig. 3e",
               "the most degradation, with 31.3% of examples exhibiting biased behavior",
               "share", {"set": "verbosity"}, EVALUATORS),
    PaperValue("Fig. 3e", "share of biased examples, position (%)", "12.9", "Sec. 3, Fig. 3e",
               "sentiment (15.0%), position (12.9%)",
               "share", {"set": "position"}, EVALUATORS),
    PaperValue("Fig. 3e", "share of biased examples, bandwagon (%)", "12.5", "Sec. 3, Fig. 3e",
               "position (12.9%), and bandwagon bias (12.5%)",
               "share", {"set": "bandwagon"}, EVALUATORS, ("biases.bandwagon",)),
    PaperValue("Fig. 3e", "share of biased examples, sentiment (%)", "15.0", "Sec. 3, Fig. 3e",
               "followed by\nsentiment (15.0%)",
               "share", {"set": "sentiment"}, EVALUATORS, ("biases.sentiment",)),
    PaperValue("Table 2", "GPT-4o, verbosity: accuracy without RBD", "0.716", "Sec. 5.3, Table 2",
               "GPT-4o\n0.716! 0.912(+19.6%)",
               "loop", {"set": "verbosity", "column": "acc_without"}, ("gpt-4o",)),
    PaperValue("Table 2", "GPT-4o, verbosity: accuracy with RBD-8B", "0.912", "Sec. 5.3, Table 2",
               "GPT-4o\n0.716! 0.912(+19.6%)",
               "loop", {"set": "verbosity", "column": "acc_with"}, ("gpt-4o",)),
    PaperValue("Table 2", "RBD-8B: mean accuracy gain over evaluators and the four biases (pp)", "18.5",
               "Abstract; Sec. 1",
               "RBD-8B, for\ninstance, achieves average improvements of 18.5% in accuracy and 10.9% in consistency",
               "loop_mean", {"with": "acc_with", "without": "acc_without"}, EVALUATORS),
    PaperValue("Table 2", "RBD-8B: mean consistency gain over evaluators and the four biases (pp)", "10.9",
               "Abstract; Sec. 1",
               "RBD-8B, for\ninstance, achieves average improvements of 18.5% in accuracy and 10.9% in consistency",
               "loop_mean", {"with": "consistency_with", "without": "consistency_without"}, EVALUATORS),
    PaperValue("Fig. 5", "best fine-tuned RBD detector accuracy (test set)", "0.828", "Sec. 5.2, Fig. 5",
               "highest accuracy of 0.828 on RBD-14B",
               "detector", {}, ("rbd-14b",), ("label_recall", "label_specificity")),
    PaperValue("Table 3", "LLMBar, verbosity, average over evaluators: accuracy with RBD-14B", "0.792",
               "Sec. 5.4, Table 3", "AVERAGE 0.681 0.691 0.792 0.705 0.726 0.773",
               "table3", {"set": "llmbar_verbosity", "size": "14B"}, EVALUATORS),
    PaperValue("Table 3", "LLMBar, bandwagon, average over evaluators: accuracy with RBD-14B", "0.765",
               "Sec. 5.4, Table 3", "AVERAGE 0.694 0.714 0.765 0.578 0.595 0.624",
               "table3", {"set": "llmbar_bandwagon", "size": "14B"}, EVALUATORS),
    PaperValue("Table 4", "LLaMA-3.1-70B, verbosity: accuracy under the in-context debiasing prompt (Prompt)",
               "0.576", "Sec. 5.5, Table 4", "Verbosity 0.562 0.576 0.226 0.5920.940",
               "table4", {"bias_type": "verbosity", "kind": "prompt"}, ("llama-3.1-70b",)),
    PaperValue("Table 4", "Prometheus2-8x7B, bandwagon: accuracy", "0.014", "Sec. 5.5, Table 4",
               "Prometheus performs poorly especially on bandwagon bias (0.014)",
               "table4", {"bias_type": "bandwagon", "kind": "fine_tuned", "name": "prometheus"},
               ("prometheus-2-8x7b",), ("biases.bandwagon",)),
    PaperValue("Table 5", "GPT-4o, verbosity: accuracy with RBD-8B's bias label only", "0.764", "Sec. 6, Table 5",
               "Verbosity 0.716 0.764 0.912",
               "table5", {"bias_type": "verbosity", "column": "label_only"}, ("gpt-4o",), ("reasoning_use",)),
    PaperValue("Table 5", "GPT-4o, verbosity: accuracy with RBD-8B's full reasoning", "0.912", "Sec. 6, Table 5",
               "Verbosity 0.716 0.764 0.912",
               "table5", {"bias_type": "verbosity", "column": "reasoning"}, ("gpt-4o",)),
    PaperValue("Fig. 6", "RBD-1.5B: average accuracy gain over evaluators and bias types (pp)", "+6.5",
               "Sec. 5.3, Fig. 6", "the average accuracy gain rises from +6.5%",
               "fig6", {"size": "1.5B", "column": "acc_gain"}, EVALUATORS, ("label_recall", "label_specificity")),
    PaperValue("Fig. 6", "RBD-14B: average accuracy gain over evaluators and bias types (pp)", "+15.4",
               "Sec. 5.3, Fig. 6", "to +15.4%, while consistency improves from +5.3% to +11.9%",
               "fig6", {"size": "14B", "column": "acc_gain"}, EVALUATORS, ("label_recall", "label_specificity")),
    PaperValue("Fig. 6", "RBD-14B: average consistency gain over evaluators and bias types (pp)", "+11.9",
               "Sec. 5.3, Fig. 6", "to +15.4%, while consistency improves from +5.3% to +11.9%",
               "fig6", {"size": "14B", "column": "consistency_gain"}, EVALUATORS,
               ("label_recall", "label_specificity")),
)

TABLES = ("evaluation.csv", "loop/table2.csv", "detectors/metrics.csv", "tables/table3.csv", "tables/table4.csv",
          "tables/table5.csv", "tables/fig6_sizes.csv")


def extractor(root: str | Path, available: Iterable[str | Path] | None = None,
              options: Mapping[str, Any] | None = None) -> Callable[[PaperValue], RunValue]:
    """The run values of :data:`ROWS` from a ``results/rbd`` folder."""
    tables = TableReader(Path(root), available)

    def size_note(set_name: str) -> str:
        """Why the set is not the paper's size: the items each evaluator judged on it."""
        ev = tables.read("evaluation.csv")
        n = ev.loc[(ev["set"] == set_name) & (ev["judge"] != "(all)"), "n_items"]
        n_items = int(n.max()) if len(n) else 0
        return f"{n_items} evaluated items per set, the paper's {PAPER_ITEMS}" if n_items != PAPER_ITEMS else ""

    main = (options or {}).get("main_detector")

    def rbd_rows(df: pd.DataFrame) -> pd.DataFrame:
        """The fine-tuned-RBD detector's rows at the largest T (the paper's RBD-8B loop): the main
        loop detector's (``options['main_detector']``, the first of rbd.loop.detectors) when it is
        one, as a run with several sizes loops them all."""
        sub = df[df["prompting"] == "rbd"]
        if main is not None and (sub["detector"] == main).any():
            sub = sub[sub["detector"] == main]
        return sub[sub["iterations"] == sub["iterations"].max()]

    def sized(size: str) -> str | None:
        """The loop detector of a model size (Fig. 6's table), or None."""
        df = tables.read("tables/fig6_sizes.csv")
        hit = df[df["size"].astype(str) == size]
        return str(hit["detector"].iloc[0]) if len(hit) else None

    def extract_table3(row: PaperValue) -> RunValue:
        """Table 3's average over evaluators with the detector of a size (``tables/table3.csv``, its
        t interval over items; the size's detector from ``tables/fig6_sizes.csv``)."""
        p = row.params
        det = sized(p["size"])
        df = tables.read("tables/table3.csv")
        sub = df[(df["set"] == p["set"]) & (df["judge"] == "AVERAGE") & (df["detector"] == det)]
        if sub.empty:
            return missing(f"no {p['set']} average with a {p['size']} detector in tables/table3.csv")
        r = sub.iloc[0]
        judges = tuple(sorted(set(df.loc[(df["set"] == p["set"]) & (df["judge"] != "AVERAGE"), "judge"].astype(str))))
        return RunValue(value=float(r["acc_with"]), ci_low=float(r["acc_with_ci_low"]),
                        ci_high=float(r["acc_with_ci_high"]), judges=judges, table_simulated=flag(r.get("simulated")),
                        missing="" if math.isfinite(float(r["acc_with"])) else reason_of(r))

    def with_ci(r: pd.Series, column: str, judges: tuple[str, ...], note: str, scale: float = 1.0,
                ci: str | None = None) -> RunValue:
        """A table cell with its ``<ci>_ci_low`` / ``_ci_high`` interval (``ci`` defaults to the
        column; ``scale``: to the paper's units); an empty cell carries the table's reason."""
        ci = ci if ci is not None else f"{column}_"
        v = float(r[column]) * scale
        return RunValue(value=v, ci_low=float(r[f"{ci}ci_low"]) * scale,
                        ci_high=float(r[f"{ci}ci_high"]) * scale, judges=judges,
                        table_simulated=flag(r.get("simulated")), incomparable=note,
                        missing="" if math.isfinite(v) else reason_of(r))

    def extract_table4(row: PaperValue) -> RunValue:
        """Table 4: a baseline's share on a bias set (``tables/table4.csv``, Wilson interval): the
        in-context prompt arm (kind ``prompt``) or the fine-tuned judge whose name holds ``name``."""
        p = row.params
        df = tables.read("tables/table4.csv")
        sub = df[(df["bias_type"] == p["bias_type"]) & (df["kind"] == p["kind"])]
        if "name" in p:
            sub = sub[sub["method"].astype(str).str.lower().str.contains(p["name"])]
        if sub.empty:
            return missing(f"no {p['kind']} baseline{' ' + p['name'] if 'name' in p else ''} on {p['bias_type']} "
                           "in tables/table4.csv (rbd.tables.baselines)")
        r = sub.iloc[0]
        judge = str(r["judge"])
        if not math.isfinite(float(r["value"])):  # a left-out baseline: its reason, no simulated flag
            return missing(reason_of(r), (judge,))
        return with_ci(r, "value", (judge,), size_note(str(r["set"])), ci="")

    def extract_table5(row: PaperValue) -> RunValue:
        """Table 5: the evaluator standing for the row's judge, after the loop with the label only
        or with the reasoning (``tables/table5.csv``, Wilson intervals)."""
        p = row.params
        df = tables.read("tables/table5.csv")
        sub = df[df["bias_type"] == p["bias_type"]]
        if sub.empty:
            return missing(f"no {p['bias_type']} row in tables/table5.csv (rbd.tables.feedback: no label-only loop)")
        judge = find_judge(row.judges[0], sub["judge"].astype(str))
        if judge is None:  # another evaluator's feedback loop: its numbers, said to be another judge's
            judge = str(sub["judge"].iloc[0])
        r = sub[sub["judge"] == judge].iloc[0]
        return with_ci(r, p["column"], (judge,), size_note(str(r["set"])))

    def extract_fig6(row: PaperValue) -> RunValue:
        """Fig. 6: a size's mean gain over (evaluator, bias set) cells (``tables/fig6_sizes.csv``, t
        interval over cells), in points; the evaluators are the loop's."""
        p = row.params
        df = tables.read("tables/fig6_sizes.csv")
        sub = df[df["size"].astype(str) == p["size"]]
        if sub.empty:
            return missing(f"no {p['size']} detector in tables/fig6_sizes.csv (rbd.detectors[i].size)")
        r = sub.iloc[0]
        t2 = tables.read("loop/table2.csv")
        evaluators = sorted(set(t2.loc[t2["detector"] == r["detector"], "judge"].astype(str)))
        notes = sorted({size_note(b) for b in BIASES} - {""})
        return with_ci(r, p["column"], (str(r["detector"]), *evaluators), "; ".join(notes), scale=100.0)

    def extract(row: PaperValue) -> RunValue:
        p = row.params
        if row.metric == "table3":
            return extract_table3(row)
        if row.metric == "table4":
            return extract_table4(row)
        if row.metric == "table5":
            return extract_table5(row)
        if row.metric == "fig6":
            return extract_fig6(row)
        if row.metric == "share":
            df = tables.read("evaluation.csv")
            sub = df[(df["set"] == p["set"]) & (df["judge"] == "(all)")]
            if sub.empty:
                return missing(f"no {p['set']} row in evaluation.csv")
            r = sub.iloc[0]
            judges = tuple(sorted(set(df.loc[(df["set"] == p["set"]) & (df["judge"] != "(all)"), "judge"].astype(str))))
            v = float(r["bias_share"]) * 100
            return RunValue(value=v, ci_low=float(r["bias_ci_low"]) * 100, ci_high=float(r["bias_ci_high"]) * 100,
                            judges=judges, table_simulated=flag(r.get("simulated")), incomparable=size_note(p["set"]),
                            missing="" if math.isfinite(v) else reason_of(r))
        if row.metric in ("loop", "loop_mean"):
            df = rbd_rows(tables.read("loop/table2.csv"))
            if df.empty:
                return missing("no fine-tuned RBD detector in this run's loop (rbd.loop.detectors)")
            if row.metric == "loop":
                judge = find_judge(row.judges[0], df["judge"].astype(str))
                if judge is None:
                    return missing(f"no evaluator standing for {row.judges[0]} in loop/table2.csv")
                sub = df[(df["judge"] == judge) & (df["set"] == p["set"])]
                if sub.empty:
                    return missing(f"no {p['set']} row for {judge} in loop/table2.csv", (judge,))
                r = sub.iloc[0]
                return RunValue(value=float(r[p["column"]]), judges=(judge,), incomparable=size_note(p["set"]))
            sub = df[df["set"].isin(BIASES)]
            gains = (sub[p["with"]] - sub[p["without"]]).dropna() * 100
            judges = tuple(sorted(set(sub["judge"].astype(str))))
            if gains.empty:
                return missing("no scored RBD row on the four bias sets", judges)
            notes = sorted({size_note(b) for b in BIASES} - {""})
            return RunValue(value=float(gains.mean()), judges=judges, incomparable="; ".join(notes))
        df = tables.read("detectors/metrics.csv")
        sub = df[(df["prompting"] == "rbd") & (df["subset"] == "test") & (df["bias_type"] == "all")]
        sub = sub[sub["accuracy"].notna()]
        if sub.empty:
            return missing("no fine-tuned RBD detector with a scored test set in detectors/metrics.csv")
        r = sub.sort_values("accuracy", ascending=False, kind="stable").iloc[0]
        scored = int(r["tp"] + r["fp"] + r["tn"] + r["fn"])
        lo, hi = wilson_interval(int(r["tp"] + r["tn"]), scored)  # NaNs when nothing was scored
        return RunValue(value=float(r["accuracy"]), ci_low=lo, ci_high=hi, judges=(str(r["detector"]),),
                        table_simulated=flag(r.get("simulated")))

    return extract
