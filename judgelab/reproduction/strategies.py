"""Paper 003 (debiasing strategies B0, S1-S8) against the ``strategies`` study's tables.

Rows: baseline style and verbosity bias scores (Fig. 1, Sec. 4.1.1), truncation accuracy
(Sec. 4.1.2 / Table 8), MT-Bench agreement (Table 1) and the S8 gain (Sec. 4.2), LLMBar
agreement and S1's loss (Table 2; the loss read from the replayed real judges of
``tables/replay_s1.csv``).  Values come from ``tables/bias_scores.csv`` (signed b with question-level
bootstrap CIs), ``tables/agreement.csv`` (bootstrap CIs) and ``tables/mcnemar.csv`` (the gain
in pp; McNemar gives no interval, so the row compares within the paper's precision).

The style and verbosity baselines are the simulated panel's ``biases.markdown`` /
``biases.verbosity`` (``config/judges/simulated.yaml`` sets them from Fig. 1); the S8 gain is its
``prompt_styles.cot_rubric.competence_delta`` (set from Table 1's direction and size).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.reproduction import PaperValue, RunValue, find_judge, missing
from judgelab.reproduction._tables import TableReader, flag

STUDY = "strategies"
PAPER = "003"

ROWS: tuple[PaperValue, ...] = (
    PaperValue("Fig. 1", "style bias b, B0, Gemini 2.5 Pro", "+0.76", "Sec. 4.1, Fig. 1",
               "Four of five models show strong style bias (Pro +0.76, Flash +0.72",
               "bias", {"measure": "style", "strategy": "B0"}, ("gemini-2.5-pro",), ("biases.markdown",)),
    PaperValue("Fig. 1", "style bias b, B0, GPT-4o", "+0.31", "Sec. 4.1, Fig. 1",
               "GPT-4o is more neutral (+0.31)",
               "bias", {"measure": "style", "strategy": "B0"}, ("gpt-4o",), ("biases.markdown",)),
    PaperValue("Fig. 1", "verbosity bias b (length-aware), B0, Claude Sonnet 4", "−0.12", "Sec. 4.1.1",
               "GPT-4o (−0.04, near neutral), Claude Sonnet 4 (−0.12)",
               "bias", {"measure": "verbosity", "strategy": "B0"}, ("claude-sonnet-4",), ("biases.verbosity",)),
    PaperValue("Fig. 1", "verbosity bias b (length-aware), B0, Llama 3.3-70B", "+0.44", "Sec. 4.1.1",
               "Baseline values on the LENGTH expansion pairs are: Llama 3.3-70B (+0.44)",
               "bias", {"measure": "verbosity", "strategy": "B0"}, ("llama-3.3-70b",), ("biases.verbosity",)),
    PaperValue("Table 8", "truncation accuracy, B0, GPT-4o", "0.96", "Sec. 4.1.2 (Table 8, Appendix F)",
               "GPT-4o is essentially neutral on expansion (-0.04) with high truncation accuracy (0.96)",
               "bias", {"measure": "truncation_accuracy", "strategy": "B0"}, ("gpt-4o",)),
    PaperValue("Table 1", "MT-Bench agreement, B0, Claude Sonnet 4", ".580", "Sec. 4.2, Table 1",
               "Claude Sonnet 4\t.580 [.53,.63]",
               "agreement", {"dataset": "mtbench", "strategy": "B0", "n": 400}, ("claude-sonnet-4",)),
    PaperValue("Table 1", "MT-Bench agreement, S8, Gemini 2.5 Flash", ".710", "Sec. 4.2, Table 1",
               ".682* [.64,.73]\t.655 [.61,.70]\t.655 [.61,.70]\t.710*† [.67,.76]",
               "agreement", {"dataset": "mtbench", "strategy": "S8", "n": 400}, ("gemini-2.5-flash",)),
    PaperValue("Table 1", "MT-Bench gain of S8 over B0 (pp), Claude Sonnet 4", "+11.5", "Sec. 4.2",
               "Claude S8 (+11.5 pp, $p < 0.0001$), Claude S5",
               "gain", {"dataset": "mtbench", "strategy": "S8", "n": 400}, ("claude-sonnet-4",),
               ("prompt_styles.cot_rubric.competence_delta",)),
    PaperValue("Table 2", "LLMBar: S1 minus B0 agreement (pp), GPT-4o", "-11.1", "Sec. 4.4, Table 2",
               "GPT-4o S1 -11.1 pp $p = 0.0001$",
               "replay_s1", {"dataset": "llmbar_natural"}, ("gpt-4o",)),
    PaperValue("Table 2", "LLMBar agreement, S5, Claude Sonnet 4", ".870", "Sec. 4.4, Table 2",
               "CoT (S5) is the best strategy for Claude (.870)",
               "agreement", {"dataset": "llmbar", "strategy": "S5", "n": 200}, ("claude-sonnet-4",)),
)


#: The result files the rows read, relative to ``results/strategies``.
TABLES = ("tables/bias_scores.csv", "tables/agreement.csv", "tables/mcnemar.csv", "tables/replay_s1.csv")


def extractor(root: str | Path, available: Iterable[str | Path] | None = None,
              options: Mapping[str, Any] | None = None) -> Callable[[PaperValue], RunValue]:
    """The run values of :data:`ROWS` from a ``results/strategies`` folder."""
    tables = TableReader(Path(root), available)

    def extract(row: PaperValue) -> RunValue:
        p = row.params
        if row.metric == "bias":
            df = tables.read("tables/bias_scores.csv")
            sub = df[(df["measure"] == p["measure"]) & (df["strategy"] == p["strategy"])]
            return _judge_cell(sub, row, "value", "ci_low", "ci_high")
        if row.metric == "replay_s1":
            return _replayed_s1(tables.read("tables/replay_s1.csv"), row)
        df = tables.read("tables/agreement.csv" if row.metric == "agreement" else "tables/mcnemar.csv")
        sub = df[(df["dataset"] == p["dataset"]) & (df["strategy"] == p["strategy"])]
        if sub.empty:
            return missing(f"no {p['dataset']} {p['strategy']} rows in this run's tables")
        value_col = "agreement" if row.metric == "agreement" else "delta_pp"
        ci = ("ci_low", "ci_high") if row.metric == "agreement" else (None, None)
        run = _judge_cell(sub, row, value_col, *ci)
        n = int(sub["n"].max())
        if n != int(p["n"]):
            return replace(run, incomparable=f"{n} {p['dataset']} instances, the paper's {p['n']}")
        return run

    return extract


def _judge_cell(sub: pd.DataFrame, row: PaperValue, value: str, lo: str | None, hi: str | None) -> RunValue:
    judge = find_judge(row.judges[0], sub["judge"].astype(str))
    if judge is None:
        return missing(f"no judge standing for {row.judges[0]} among {sorted(set(sub['judge'].astype(str)))}")
    r = sub[sub["judge"] == judge].iloc[0]
    return RunValue(value=float(r[value]), ci_low=float(r[lo]) if lo else float("nan"),
                    ci_high=float(r[hi]) if hi else float("nan"), judges=(judge,),
                    table_simulated=flag(r.get("simulated")))


def _replayed_s1(df: pd.DataFrame, row: PaperValue) -> RunValue:
    """S1's change on the replayed real judges' LLMBar Natural verdicts (``replay_s1.csv``): the
    paper's number is on its 200 adversarial LLMBar instances, so a value here is another set's."""
    sub = df[df["dataset"] == row.params["dataset"]]
    judges = tuple(sorted(set(sub["judge"].astype(str))))
    judge = find_judge(row.judges[0], judges)
    if judge is None:
        return missing(f"no replayed judge standing for {row.judges[0]} among {', '.join(judges) or 'none'}", judges)
    r = sub[sub["judge"] == judge].iloc[0]
    return RunValue(value=float(r["delta_pp"]), judges=(judge,), table_simulated=flag(r.get("simulated")),
                    incomparable=f"{row.params['dataset']} replays, the paper's 200 adversarial LLMBar instances")
