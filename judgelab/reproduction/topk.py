"""Paper 002 (bias-aware Bayesian active top-k) against the ``topk`` study's tables.

Rows: the pooled and Llama-3.1-8B bias-aware gains (Table 2, paired-bootstrap CIs), the
Llama-3.1-8B verbosity coefficient (Table 1), top-k recall against the budget (Table 3), the
2x2 ablation (Table 4), the competence-gain Spearman correlation (Fig. 8) and GPT-4o-mini's
temperature-1 flip rate (Sec. 6, Limitations (ii); measured apart from the main protocol, read
from ``flip_rate/<judge>.csv`` with its clustered Wilson interval).  The paper's
focus judge is Llama-3.1-8B; the run's Llama-3.1-8B rows (Tables 1-4) are its
``topk.focus_judge``'s, comparable only when that judge stands for Llama-3.1-8B (the rows name it).

No row is planted: the simulated panel's verbosity comes from paper 003, not from this paper, and
no simulated profile is set from the flip rate (a simulated judge's expected rate is the flip
table's ``planted_flip_rate``, a consequence of its sampling noise, not the paper's 8%).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.reproduction import PaperValue, RunValue, find_judge, missing
from judgelab.reproduction._tables import TableReader, flag, reason_of

STUDY = "topk"
PAPER = "002"

#: The paper's biased judges (Table 2), whose gains the pooled row averages.
BIASED = ("llama-3.1-8b", "qwen-2.5-7b", "gemini-2.5-flash-lite", "gpt-4o-mini", "deepseek-chat")
FOCUS = "llama-3.1-8b"
#: The judge whose temperature-1 flip rate the paper reports.
FLIP_JUDGE = "gpt-4o-mini"

ROWS: tuple[PaperValue, ...] = (
    PaperValue("Table 2", "pooled bias-aware gain in top-k recall (Δ)", "+0.28", "Sec. 6 Q1, Table 2",
               "mean  $\\Delta = +0.28$ , 95% CI [+0.22, +0.33]",
               "table2", {"judge": "pooled"}, BIASED),
    PaperValue("Table 2", "Llama-3.1-8B: bias-aware gain (Δ)", "+.40", "Table 2",
               "Llama-3.1-8B\t10\t.50\t.90\t+.40**\t[.34, .46]",
               "table2", {"judge": FOCUS}, (FOCUS,)),
    PaperValue("Table 1", "Llama-3.1-8B: verbosity coefficient ĉ", "+0.99", "Table 1",
               "Llama-3.1-8B\t10\t+0.99\t+0.35\t0.50",
               "table1", {}, (FOCUS,)),
    PaperValue("Table 3", "top-k recall, top-k-aware rule, B = 120 (Llama-3.1-8B, bias-aware)", "0.80",
               "Sec. 6 Q2, Table 3",
               "(e.g. 0.80 vs. 0.70 at  $B=120$ ; paired",
               "table3", {"rule": "topk", "budget": 120}, (FOCUS,)),
    PaperValue("Table 3", "top-k recall, top-k-aware rule, B = 200 (Llama-3.1-8B, bias-aware)", "0.86",
               "Sec. 6 Q2, Table 3",
               "near-ceiling recall with a small budget (0.68 at  $B=60$ , 0.86 at  $B=200$ ), and the",
               "table3", {"rule": "topk", "budget": 200}, (FOCUS,)),
    PaperValue("Table 3", "top-k recall, round-robin, B = 120 (Llama-3.1-8B, bias-aware)", ".61", "Table 3",
               "Round-robin\t.53\t.61\t.72\t.76",
               "table3", {"rule": "round_robin", "budget": 120}, (FOCUS,)),
    PaperValue("Table 4", "2x2 ablation at B = 120: bias-aware model with top-k-aware rule", "0.82",
               "Sec. 6 Ablation, Table 4 (left)",
               "Bias correction alone helps ( $0.50 \\rightarrow 0.61$ ), and the two together reach  $0.82$",
               "table4", {"model": "aware", "estimator": "aware", "rule": "topk", "budget": 120}, (FOCUS,)),
    PaperValue("Fig. 8", "Spearman ρ between naive recall and the bias-aware gain, over judges", "-0.88",
               "Sec. 6 Q3, Fig. 8",
               "Spearman  $\\rho = -0.88$  ( $p < 10^{-4}$ ,  $n=16$ )",
               "spearman", {"x": "naive_recall", "y": "delta"}, BIASED),
    PaperValue("Sec. 6", "GPT-4o-mini: temperature-1 flip rate across repeats (%)", "8",
               "Sec. 6, Limitations (ii); appendix, Reproducibility of API judges",
               "at temperature 1, GPT-4o-mini flips 8% of verdicts across repeats",
               "flip_rate", {"temperature": 1.0}, (FLIP_JUDGE,)),
)

TABLES = tuple(f"tables/{t}.csv" for t in ("table1_judges", "table2_correctness", "table3_budget",
                                           "table4_ablation", "spearman"))
#: The flip-rate tables, one per flip judge (``topk.flip_rate.judges``): ``flip_rate/<judge>.csv``.
FLIP_TABLE = "flip_rate/{judge}.csv"


def extractor(root: str | Path, available: Iterable[str | Path] | None = None,
              options: Mapping[str, Any] | None = None) -> Callable[[PaperValue], RunValue]:
    """The run values of :data:`ROWS` from a ``results/topk`` folder; ``options["focus"]``: the
    run's focus judge (Tables 3-4)."""
    tables = TableReader(Path(root), available)
    focus = (options or {}).get("focus")

    def judges_in(df: pd.DataFrame) -> tuple[str, ...]:
        return tuple(sorted({str(j) for j in df["judge"] if str(j) != "pooled"})) if "judge" in df else ()

    def one(sub: pd.DataFrame, col: str, lo: str | None = None, hi: str | None = None,
            judges: tuple[str, ...] = (), note: str = "") -> RunValue:
        if sub.empty:
            return missing("no such row in this run's table", judges)
        r = sub.iloc[0]
        v = float(r[col])
        return RunValue(value=v, ci_low=float(r[lo]) if lo else math.nan, ci_high=float(r[hi]) if hi else math.nan,
                        judges=judges, table_simulated=flag(r.get("simulated")), incomparable=note,
                        missing="" if math.isfinite(v) else reason_of(r))

    def extract_flip(row: PaperValue) -> RunValue:
        """The flip rate (%) of the flip judge standing for the paper's GPT-4o-mini, else of the
        run's first flip judge (then another judge's, which the verdict says); a run at another
        temperature measures another rate."""
        here = sorted(p.stem for p in (Path(root) / "flip_rate").glob("*.csv"))
        names = [n for n in here if tables.available is None
                 or (Path(root) / FLIP_TABLE.format(judge=n)).resolve() in tables.available]
        if not names:
            return missing("no flip-rate table in this run (topk.flip_rate.judges is empty or the rule "
                           "topk_flip_rate did not run)")
        judge = find_judge(row.judges[0], names) or names[0]
        df = tables.read(FLIP_TABLE.format(judge=judge))
        if df.empty:
            return missing(f"{FLIP_TABLE.format(judge=judge)} has no row", (judge,))
        r = df.iloc[0]
        t = float(r["temperature"])
        note = f"temperature {t:g}, the paper's {row.params['temperature']:g}" if t != row.params["temperature"] else ""
        v = float(r["flip_rate"]) * 100
        status = r.get("status")  # an empty cell reads back from the CSV as NaN, not as ""
        why = status.strip() if isinstance(status, str) and status.strip() else "no flip rate"
        return RunValue(value=v, ci_low=float(r["ci_low"]) * 100, ci_high=float(r["ci_high"]) * 100,
                        judges=(judge,), table_simulated=flag(r.get("simulated")), incomparable=note,
                        missing="" if math.isfinite(v) else why)

    def extract(row: PaperValue) -> RunValue:
        p = row.params
        if row.metric == "flip_rate":
            return extract_flip(row)
        if row.metric == "table2":
            df = tables.read("tables/table2_correctness.csv")
            if p["judge"] == "pooled":
                return one(df[df["judge"] == "pooled"], "delta", "ci_low", "ci_high", judges_in(df))
            judge = focus or find_judge(FOCUS, judges_in(df))
            if judge is None:
                return missing(f"no judge standing for {FOCUS} in table2_correctness.csv", judges_in(df))
            return one(df[df["judge"] == judge], "delta", "ci_low", "ci_high", (str(judge),))
        if row.metric == "table1":
            df = tables.read("tables/table1_judges.csv")
            judge = focus or find_judge(FOCUS, judges_in(df))
            if judge is None:
                return missing(f"no judge standing for {FOCUS} in table1_judges.csv", judges_in(df))
            ccol = next((c for c in df.columns if c.startswith("c_") and not c.endswith("_se")), None)
            if ccol is None:
                return missing("table1_judges.csv has no verbosity coefficient (no c_<covariate> column)", (str(judge),))
            r = df[df["judge"] == judge]
            run = one(r, ccol, judges=(str(judge),))
            # the Laplace posterior's normal 95% interval
            return with_se(run, r.rename(columns={f"{ccol}_se": "se"}))
        if row.metric == "spearman":
            df = tables.read("tables/spearman.csv")
            j1 = tables.read("tables/table1_judges.csv")
            sub = df[(df["x"] == p["x"]) & (df["y"] == p["y"])]
            rho = "rho" if "rho" in df.columns else "estimate"
            lo, hi = ("ci_low", "ci_high") if "ci_low" in df.columns else (None, None)
            n = len(j1)
            note = f"{n} judges, the paper's 16" if n != 16 else ""
            return one(sub, rho, lo, hi, judges_in(j1), note)
        if row.metric == "table3":
            df = tables.read("tables/table3_budget.csv")
            judge = focus or find_judge(FOCUS, judges_in(df))
            sub = df[(df["judge"] == judge) & (df["model"] == "aware") & (df["rule"] == p["rule"])
                     & (df["budget"] == p["budget"])]
            if sub.empty:
                return missing(f"no {p['rule']} row at budget {p['budget']} for {judge} in table3_budget.csv",
                               (str(judge),) if judge else ())
            return with_se(one(sub, "recall", judges=(str(judge),)), sub)
        df = tables.read("tables/table4_ablation.csv")
        judge = focus or find_judge(FOCUS, judges_in(df))
        sub = df[df["judge"] == judge]
        for col, val in p.items():
            sub = sub[sub[col] == val]
        return with_se(one(sub, "recall", judges=(str(judge),)), sub)

    def with_se(run: RunValue, sub: pd.DataFrame) -> RunValue:
        """The recall's normal 95% interval from the table's standard error (mean +- 1.96 s.e.)."""
        se = float(sub["se"].iloc[0]) if len(sub) and "se" in sub.columns else math.nan
        if not (math.isfinite(se) and math.isfinite(run.value)):
            return run
        return replace(run, ci_low=run.value - 1.959964 * se, ci_high=run.value + 1.959964 * se)

    return extract
