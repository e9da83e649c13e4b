"""Paper 001 (Reasoning-based Bias Detector) against the ``rbd`` study's tables.

Rows: the share of biased examples per bias type over the eight evaluators (Fig. 3e, Wilson
intervals from ``evaluation.csv``), GPT-4o's verbosity accuracy without and with RBD-8B and the
average accuracy and consistency gains of RBD-8B (Table 2, abstract; from ``loop/table2.csv`` at
the largest T, the main loop detector's rows), the best detector accuracy (Fig. 5;
``detectors/metrics.csv`` on the test split, Wilson interval from its counts) and LLMBar's
verbosity average with RBD-14B (Table 3, ``tables/table3.csv`` with its interval).

Planted: the bandwagon and sentiment shares (the simulated panel's ``biases.bandwagon`` /
``biases.sentiment`` are set from Fig. 3e) and the detector accuracy (the simulated detectors'
``label_recall`` / ``label_specificity`` are set so that RBD beats the prompting baselines as in
Fig. 5).  The verbosity and position shares come from paper 003's biases: ``simulated``.
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
)

TABLES = ("evaluation.csv", "loop/table2.csv", "detectors/metrics.csv", "tables/table3.csv", "tables/fig6_sizes.csv")


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

    def extract(row: PaperValue) -> RunValue:
        p = row.params
        if row.metric == "table3":
            return extract_table3(row)
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
