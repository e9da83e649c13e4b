"""Paper 002's rows against the ``topk`` study's tables (``judgelab/reproduction/topk.py``), cell by cell.

* Without a configured focus judge, the run judge standing for Llama-3.1-8B is the focus; the pooled
  row's judges are the table's judges, never the ``pooled`` label itself.
* Table 1's verbosity coefficient is the ``c_<covariate>`` column (not its ``_se``), with the normal
  95% interval from that standard error; Tables 3-4 read the row matching every parameter, with the
  interval from the table's ``se`` (none without it).
* The Spearman row reads ``rho`` or ``estimate``, with the table's interval when it has one; sixteen
  judges are the paper's count.
* A table's ``simulated`` flag makes a row simulated; an empty cell carries the table's reason.
* Rows without a value say what was looked for.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from judgelab.reproduction import reproduce
from judgelab.reproduction.topk import BIASED, ROWS
from judgelab.topk.flips import flip_summary

Z = 1.959964  # the normal 97.5% quantile: scipy.stats.norm.ppf(0.975) to 6 decimals
LLAMA = "llama-3.1-8b"
JUDGES = [LLAMA, "gpt-4o-mini", "qwen-2.5-7b"]
ENTRIES = {j: {"name": j, "backend": "openai", "model": j, "options": {"api_key_env": None}} for j in JUDGES}
POOLED = "pooled bias-aware gain in top-k recall (Δ)"
GAIN = "Llama-3.1-8B: bias-aware gain (Δ)"
COEF = "Llama-3.1-8B: verbosity coefficient ĉ"
B120 = "top-k recall, top-k-aware rule, B = 120 (Llama-3.1-8B, bias-aware)"
RR120 = "top-k recall, round-robin, B = 120 (Llama-3.1-8B, bias-aware)"
ABL = "2x2 ablation at B = 120: bias-aware model with top-k-aware rule"
RHO = "Spearman ρ between naive recall and the bias-aware gain, over judges"
FLIP = "GPT-4o-mini: temperature-1 flip rate across repeats (%)"


def _paper(cell: str) -> float:
    return next(r for r in ROWS if r.cell == cell).value


def _csv(root, name: str, rows: list[dict]) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def _t2(root, simulated: bool = False) -> str:
    return _csv(root, "tables/table2_correctness.csv", [
        {"judge": j, "delta": d, "ci_low": d - 0.05, "ci_high": d + 0.05, "simulated": simulated}
        for j, d in (("pooled", 0.28), ("gpt-4o-mini", 0.1), (LLAMA, 0.40), ("qwen-2.5-7b", 0.2))])


def _t1(root, rows: list[dict] | None = None) -> str:
    # the se column first: a lookup that took the first c_ column would read it
    return _csv(root, "tables/table1_judges.csv", rows or [
        {"judge": j, "c_verbosity_se": se, "c_verbosity": c} for j, c, se in
        ((LLAMA, 0.99, 0.2), ("gpt-4o-mini", 0.5, 0.1), ("qwen-2.5-7b", 0.7, 0.1))])


def _budget(root, with_se: bool = True) -> str:
    rows = []
    for judge in JUDGES:
        for model in ("naive", "aware"):
            for rule in ("round_robin", "topk"):
                for budget in (60, 120, 200):
                    recall = {(LLAMA, "aware", "topk", 120): 0.80, (LLAMA, "aware", "round_robin", 120): 0.61}.get(
                        (judge, model, rule, budget), 0.3)
                    rows.append({"judge": judge, "model": model, "estimator": model, "rule": rule, "budget": budget,
                                 "recall": recall, **({"se": 0.01} if with_se else {})})
    return _csv(root, "tables/table3_budget.csv", rows)


def _ablation(root) -> str:
    rows = [{"judge": LLAMA, "model": m, "estimator": e, "rule": r, "budget": b, "recall": v, "se": 0.02}
            for m, e, r, b, v in (("aware", "naive", "topk", 120, 0.1), ("aware", "aware", "round_robin", 120, 0.2),
                                  ("naive", "aware", "topk", 120, 0.3), ("aware", "aware", "topk", 60, 0.4),
                                  ("aware", "aware", "topk", 120, 0.82))]
    rows.insert(0, {"judge": "gpt-4o-mini", "model": "aware", "estimator": "aware", "rule": "topk", "budget": 120,
                    "recall": 0.5, "se": 0.02})
    return _csv(root, "tables/table4_ablation.csv", rows)


def _table(root, files: list[str], options: dict | None = None) -> pd.DataFrame:
    return reproduce("topk", root, files, ENTRIES, options).set_index("cell")


def test_without_a_focus_option_the_judge_standing_for_llama_is_the_focus(tmp_path):
    files = [_t2(tmp_path), _t1(tmp_path), _budget(tmp_path), _ablation(tmp_path)]
    t = _table(tmp_path, files)
    assert t.loc[GAIN, "run_value"] == pytest.approx(0.40) and t.loc[GAIN, "verdict"] == "reproduced"
    assert t.loc[COEF, "run_value"] == pytest.approx(0.99)
    assert t.loc[B120, "run_value"] == pytest.approx(0.80) and t.loc[B120, "verdict"] == "reproduced"
    assert t.loc[RR120, "run_value"] == pytest.approx(0.61)
    assert t.loc[ABL, "run_value"] == pytest.approx(0.82) and t.loc[ABL, "verdict"] == "reproduced"
    # the pooled row: the judges of the table, not "pooled" (the paper's five are not all here)
    assert t.loc[POOLED, "run_value"] == pytest.approx(0.28)
    assert t.loc[POOLED, "reason"].startswith(
        "other judges than the paper's (paper: gemini-2.5-flash-lite, deepseek-chat; "
        "run: gpt-4o-mini, llama-3.1-8b, qwen-2.5-7b)"), t.loc[POOLED, "reason"]


def test_the_coefficient_and_the_recalls_have_normal_intervals_from_their_standard_errors(tmp_path):
    files = [_t2(tmp_path), _t1(tmp_path), _budget(tmp_path), _ablation(tmp_path)]
    t = _table(tmp_path, files, {"focus": LLAMA})
    for cell, value, se in ((COEF, 0.99, 0.2), (B120, 0.80, 0.01), (ABL, 0.82, 0.02)):
        assert (t.loc[cell, "run_ci_low"], t.loc[cell, "run_ci_high"]) == pytest.approx(
            (value - Z * se, value + Z * se)), cell
    # a budget table without standard errors: the value, no interval, the precision decides
    t = _table(tmp_path, [_budget(tmp_path, with_se=False)], {"focus": LLAMA})
    row = t.loc[B120]
    assert row["run_value"] == pytest.approx(0.80)
    assert math.isnan(row["run_ci_low"]) and math.isnan(row["run_ci_high"])
    assert row["verdict"] == "reproduced" and row["reason"].endswith("no interval"), row["reason"]


def test_an_empty_coefficient_keeps_no_interval_and_says_why(tmp_path):
    f = _t1(tmp_path, [{"judge": LLAMA, "c_verbosity": float("nan"), "c_verbosity_se": 0.2,
                        "reason": "posterior not identified"}])
    row = _table(tmp_path, [f], {"focus": LLAMA}).loc[COEF]
    assert math.isnan(row["run_value"]) and math.isnan(row["run_ci_low"])
    assert row["reason"] == "this run has no value: posterior not identified"


def test_the_spearman_row_reads_rho_or_estimate_and_counts_the_judges(tmp_path):
    paper = _paper(RHO)
    # the paper's five biased judges among sixteen
    sixteen = [*BIASED, *(f"j{i}" for i in range(11))]
    t1 = _t1(tmp_path, [{"judge": j, "c_verbosity": 0.1} for j in sixteen])
    sp = _csv(tmp_path, "tables/spearman.csv", [
        {"x": "naive_recall", "y": "other", "estimate": 0.5, "ci_low": 0.4, "ci_high": 0.6},
        {"x": "naive_recall", "y": "delta", "estimate": paper, "ci_low": paper - 0.1, "ci_high": paper + 0.1}])
    row = _table(tmp_path, [t1, sp]).loc[RHO]
    assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((paper, paper - 0.1, paper + 0.1))
    # sixteen judges: the paper's count, comparable
    assert row["verdict"] == "reproduced", row["reason"]
    t1 = _t1(tmp_path, [{"judge": j, "c_verbosity": 0.1} for j in sixteen[:15]])
    sp = _csv(tmp_path, "tables/spearman.csv", [{"x": "naive_recall", "y": "delta", "rho": paper}])
    row = _table(tmp_path, [t1, sp]).loc[RHO]
    assert row["run_value"] == pytest.approx(paper) and math.isnan(row["run_ci_low"])
    assert row["verdict"] == "not comparable" and row["reason"].startswith("15 judges, the paper's 16 ("), row["reason"]


def test_a_tables_simulated_flag_makes_the_row_simulated(tmp_path):
    t = _table(tmp_path, [_t2(tmp_path, simulated=True)], {"focus": LLAMA})
    assert (t.loc[GAIN, "provenance"], t.loc[GAIN, "verdict"]) == ("simulated", "not comparable")
    assert t.loc[POOLED, "provenance"] == "simulated"


def test_rows_without_a_value_say_what_was_looked_for(tmp_path):
    others = {j: e for j, e in ENTRIES.items() if j != LLAMA}
    root = tmp_path / "a"
    t2 = _csv(root, "tables/table2_correctness.csv", [{"judge": "gpt-4o-mini", "delta": 0.1, "ci_low": 0.0,
                                                      "ci_high": 0.2}])
    t1 = _t1(root, [{"judge": "gpt-4o-mini", "c_verbosity": 0.5}])
    t3 = _csv(root, "tables/table3_budget.csv", [{"judge": LLAMA, "model": "aware", "rule": "topk", "budget": 60,
                                                  "recall": 0.7, "se": 0.01}])
    t = reproduce("topk", root, [t2, t1, t3], others).set_index("cell")
    assert t.loc[GAIN, "reason"] == "this run has no value: no judge standing for llama-3.1-8b in table2_correctness.csv"
    assert t.loc[COEF, "reason"] == "this run has no value: no judge standing for llama-3.1-8b in table1_judges.csv"
    assert t.loc[B120, "reason"] == ("this run has no value: no topk row at budget 120 for llama-3.1-8b in "
                                     "table3_budget.csv")
    assert t.loc[POOLED, "reason"] == "this run has no value: no such row in this run's table"
    # a Table 1 without a coefficient column; a focus judge with no row
    t1 = _t1(root, [{"judge": LLAMA, "naive_recall": 0.5, "c_verbosity_se": 0.1}])
    t = _table(root, [t1, t3], {"focus": LLAMA})
    assert t.loc[COEF, "reason"] == ("this run has no value: table1_judges.csv has no verbosity coefficient "
                                     "(no c_<covariate> column)")
    t = _table(root, [t3], {"focus": "gpt-4o-mini"})
    assert t.loc[B120, "reason"] == ("this run has no value: no topk row at budget 120 for gpt-4o-mini in "
                                     "table3_budget.csv")


def test_the_flip_row_names_its_judge_and_an_empty_table(tmp_path):
    # a flip table with no row (a judge that was never asked): no value, named with the judge
    (tmp_path / "flip_rate").mkdir()
    f = tmp_path / "flip_rate/gpt-4o-mini.csv"
    f.write_text("judge,flip_rate,ci_low,ci_high,temperature\n")
    row = _table(tmp_path, [f]).loc[FLIP]
    assert row["reason"] == "this run has no value: flip_rate/gpt-4o-mini.csv has no row"
    # a rate at the paper's temperature, read without an output list (any table under the root)
    verdicts = pd.DataFrame({"pair_id": [f"p{i}" for i in range(10) for _ in range(2)],
                             "verdict": ["A", "B"] + ["A", "A"] * 9})
    summary = flip_summary(verdicts, judge="gpt-4o-mini", simulated=True, temperature=1.0, repeats=2, n_pairs=10)
    summary.to_csv(tmp_path / "flip_rate/gpt-4o-mini.csv", index=False)
    row = reproduce("topk", tmp_path, None, ENTRIES).set_index("cell").loc[FLIP]
    assert row["run_value"] == pytest.approx(100 * float(summary["flip_rate"].iloc[0]))
    assert row["provenance"] == "simulated" and "temperature" not in row["reason"]


SIM = {"name": "sim-judge", "backend": "simulated", "model": "s", "options": {"profile": {"competence": 2.0}}}


def test_a_row_without_a_value_keeps_the_provenance_of_the_judges_it_looked_at(tmp_path):
    """A row without a value still has the provenance of the judges it would have come from (the focus
    judge, the table's judges), not of every configured judge -- a simulated one among them would make it
    simulated; only a row that names no judge falls back to all of them."""
    entries = {**ENTRIES, "sim-judge": SIM}
    t2 = _csv(tmp_path, "tables/table2_correctness.csv", [{"judge": "gpt-4o-mini", "delta": 0.1, "ci_low": 0.0,
                                                          "ci_high": 0.2}])
    t1 = _t1(tmp_path, [{"judge": "gpt-4o-mini", "c_verbosity": 0.5}])
    t3 = _csv(tmp_path, "tables/table3_budget.csv", [{"judge": "gpt-4o-mini", "model": "aware", "rule": "topk",
                                                      "budget": 60, "recall": 0.7}])
    t = reproduce("topk", tmp_path, [t2, t1, t3], entries).set_index("cell")
    for cell in (GAIN, COEF):  # no Llama: the table's judges
        assert math.isnan(t.loc[cell, "run_value"]) and t.loc[cell, "provenance"] == "real", cell
    # no focus judge at all: no judge named, every configured one counts (a simulated one among them)
    assert t.loc[B120, "provenance"] == "simulated"
    # the focus judge without its row, without a coefficient column, without a flip table row: the focus judge's
    t = reproduce("topk", tmp_path, [t2, t3], entries, {"focus": LLAMA}).set_index("cell")
    assert t.loc[GAIN, "provenance"] == "real" and t.loc[B120, "provenance"] == "real"
    assert t.loc[POOLED, "provenance"] == "real"  # no pooled row: the table's judges
    t1 = _t1(tmp_path, [{"judge": "sim-judge", "naive_recall": 0.5}])
    t = reproduce("topk", tmp_path, [t1], {"sim-judge": SIM, LLAMA: ENTRIES[LLAMA]}, {"focus": "sim-judge"})
    assert t.set_index("cell").loc[COEF, "provenance"] == "simulated"
    (tmp_path / "flip_rate").mkdir()
    (tmp_path / "flip_rate/gpt-4o-mini.csv").write_text("judge,flip_rate,ci_low,ci_high,temperature\n")
    t = reproduce("topk", tmp_path, [tmp_path / "flip_rate/gpt-4o-mini.csv"], entries).set_index("cell")
    assert t.loc[FLIP, "provenance"] == "real"


def test_the_focus_judges_coefficient_and_gain_carry_its_name_and_interval(tmp_path):
    files = [_t2(tmp_path), _t1(tmp_path)]
    t = _table(tmp_path, files, {"focus": LLAMA})
    assert (t.loc[GAIN, "run_ci_low"], t.loc[GAIN, "run_ci_high"]) == pytest.approx((0.35, 0.45))
    assert t.loc[COEF, "verdict"] == "reproduced", t.loc[COEF, "reason"]  # the focus judge stands for Llama


def test_an_infinite_standard_error_gives_no_interval(tmp_path):
    f = _t1(tmp_path, [{"judge": LLAMA, "c_verbosity": 0.99, "c_verbosity_se": float("inf")}])
    row = _table(tmp_path, [f], {"focus": LLAMA}).loc[COEF]
    assert row["run_value"] == pytest.approx(0.99)
    assert math.isnan(row["run_ci_low"]) and math.isnan(row["run_ci_high"])


def test_the_spearman_row_needs_no_judge_column_in_table_1(tmp_path):
    t1 = _csv(tmp_path, "tables/table1_judges.csv", [{"c_verbosity": 0.1}] * 16)
    sp = _csv(tmp_path, "tables/spearman.csv", [{"x": "naive_recall", "y": "delta", "rho": -0.5}])
    row = _table(tmp_path, [t1, sp]).loc[RHO]
    assert row["run_value"] == pytest.approx(-0.5)
    assert row["reason"].startswith("other judges than the paper's (paper: llama-3.1-8b, qwen-2.5-7b, "
                                    "gemini-2.5-flash-lite, gpt-4o-mini, deepseek-chat; run: none)"), row["reason"]


def test_a_flip_row_without_a_table_or_a_rate_says_why(tmp_path):
    t = _table(tmp_path, [])
    assert t.loc[FLIP, "reason"] == ("this run has no value: no flip-rate table in this run (topk.flip_rate.judges "
                                     "is empty or the rule topk_flip_rate did not run)")
    f = _csv(tmp_path, "flip_rate/gpt-4o-mini.csv", [{"judge": "gpt-4o-mini", "flip_rate": float("nan"),
                                                      "ci_low": float("nan"), "ci_high": float("nan"),
                                                      "temperature": 1.0, "status": ""}])
    assert _table(tmp_path, [f]).loc[FLIP, "reason"] == "this run has no value: no flip rate"


def test_a_value_comes_without_a_missing_reason(tmp_path):
    """The extractor's contract (:class:`judgelab.reproduction.RunValue`): ``missing`` says why there is no
    value, so a row with a value has none -- here every row the tables cover, the flip rate included."""
    from judgelab.reproduction import topk

    t1 = _t1(tmp_path, [{"judge": j, "c_verbosity": 0.5, "c_verbosity_se": 0.1} for j in [*BIASED, *"abcdefghijk"]])
    sp = _csv(tmp_path, "tables/spearman.csv", [{"x": "naive_recall", "y": "delta", "rho": -0.8}])
    flip = _csv(tmp_path, "flip_rate/gpt-4o-mini.csv", [{"judge": "gpt-4o-mini", "flip_rate": 0.08, "ci_low": 0.05,
                                                         "ci_high": 0.1, "temperature": 1.0, "status": "ok"}])
    files = [_t2(tmp_path), t1, _budget(tmp_path), _ablation(tmp_path), sp, flip]
    extract = topk.extractor(tmp_path, files, {"focus": LLAMA})
    runs = {row.cell: extract(row) for row in ROWS}
    bad = {cell: run for cell, run in runs.items() if not (math.isfinite(run.value) and run.missing == "")}
    assert not bad, bad


def test_the_focus_judges_provenance_stays_on_its_rows_without_a_value(tmp_path):
    # a real focus judge beside a simulated one: its Table 1 without a coefficient column stays real
    t1 = _t1(tmp_path, [{"judge": LLAMA, "naive_recall": 0.5}])
    entries = {"sim-judge": SIM, LLAMA: ENTRIES[LLAMA]}
    assert reproduce("topk", tmp_path, [t1], entries, {"focus": LLAMA}).set_index("cell").loc[COEF, "provenance"] == "real"
    # a simulated focus judge without a budget row: simulated, its own provenance
    t3 = _csv(tmp_path, "tables/table3_budget.csv", [{"judge": "sim-judge", "model": "aware", "rule": "topk",
                                                      "budget": 60, "recall": 0.7}])
    t = reproduce("topk", tmp_path, [t3], entries, {"focus": "sim-judge"}).set_index("cell")
    assert math.isnan(t.loc[B120, "run_value"]) and t.loc[B120, "provenance"] == "simulated"
