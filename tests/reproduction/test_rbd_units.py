"""Paper 001's rows against the ``rbd`` study's tables (``judgelab/reproduction/rbd.py``), cell by cell,
from hand-written tables in the study's layout.

* The best detector is the fine-tuned RBD detector with the highest scored test accuracy over all bias
  types, its Wilson interval from the confusion counts (statsmodels); zero-shot detectors, other subsets,
  per-type rows and unscored rows are not candidates.
* The evaluated items per set are the largest ``n_items`` of the evaluators' rows (not the pooled row);
  the paper's 500 are comparable, another count is named.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from judgelab.reproduction import reproduce

DET = "best fine-tuned RBD detector accuracy (test set)"
VERB = "share of biased examples, verbosity (%)"
REAL = {"name": "rbd-14b", "backend": "openai", "model": "m", "options": {"api_key_env": None}}


def _csv(root, name: str, rows: list[dict]) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def _metric(detector: str, tp: int, tn: int, *, prompting: str = "rbd", subset: str = "test", bias_type: str = "all",
            scored: bool = True) -> dict:
    fp, fn = 50 - tn, 50 - tp
    return {"detector": detector, "prompting": prompting, "subset": subset, "bias_type": bias_type, "tp": tp, "fp": fp,
            "tn": tn, "fn": fn, "accuracy": (tp + tn) / 100 if scored else float("nan"), "simulated": False}


def test_the_best_detector_is_the_most_accurate_scored_rbd_detector_on_the_test_set(tmp_path):
    rows = [_metric("zs", 50, 50, prompting="zero_shot"), _metric("rbd-8b", 49, 49, subset="train"),
            _metric("rbd-8b", 50, 50, bias_type="verbosity"), _metric("rbd-1.5b", 45, 45, scored=False),
            _metric("rbd-8b", 40, 40), _metric("rbd-14b", 42, 41), _metric("rbd-7b", 40, 43)]
    f = _csv(tmp_path, "detectors/metrics.csv", rows)
    row = reproduce("rbd", tmp_path, [f], {"rbd-14b": REAL}).set_index("cell").loc[DET]
    lo, hi = proportion_confint(83, 100, method="wilson")
    assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((0.83, lo, hi))
    # the first of two equally accurate detectors in the table's order (a stable sort)
    f = _csv(tmp_path, "detectors/metrics.csv", [_metric("rbd-14b", 42, 41), _metric("rbd-7b", 41, 42)])
    row = reproduce("rbd", tmp_path, [f], {"rbd-14b": REAL}).set_index("cell").loc[DET]
    assert row["verdict"] == "reproduced", row["reason"]  # rbd-14b, the paper's detector: comparable
    f = _csv(tmp_path, "detectors/metrics.csv", [_metric("rbd-7b", 41, 42), _metric("rbd-14b", 42, 41)])
    row = reproduce("rbd", tmp_path, [f], {"rbd-14b": REAL}).set_index("cell").loc[DET]
    assert row["reason"].startswith("other judges than the paper's (paper: rbd-14b; run: rbd-7b)"), row["reason"]


def test_no_scored_detector_says_so(tmp_path):
    f = _csv(tmp_path, "detectors/metrics.csv", [_metric("rbd-14b", 45, 45, scored=False),
                                                 _metric("zs", 45, 45, prompting="zero_shot")])
    row = reproduce("rbd", tmp_path, [f], {"rbd-14b": REAL}).set_index("cell").loc[DET]
    assert math.isnan(row["run_value"])
    assert row["reason"] == ("this run has no value: no fine-tuned RBD detector with a scored test set in "
                             "detectors/metrics.csv")


EVAL8 = ("gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "claude-3-5-haiku", "deepseek-v3", "llama-3.1-8b",
         "llama-3.1-70b", "llama-3.1-405b")
ENTRIES = {j: {**REAL, "name": j} for j in (*EVAL8, "rbd-8b")}
BIASES = ("verbosity", "position", "bandwagon", "sentiment")
T2_WITHOUT = "GPT-4o, verbosity: accuracy without RBD"
T2_WITH = "GPT-4o, verbosity: accuracy with RBD-8B"
MEAN_ACC = "RBD-8B: mean accuracy gain over evaluators and the four biases (pp)"


def _evaluation(root, n_items: dict[str, int] | None = None, share: float = 0.313, simulated: bool = False) -> str:
    """evaluation.csv: the eight evaluators' rows (n_items per set) and the pooled ``(all)`` row holding the share."""
    rows = []
    for b in BIASES:
        n = (n_items or {}).get(b, 500)
        rows += [{"set": b, "judge": j, "n_items": n - k, "bias_share": 0.9, "bias_ci_low": 0.8, "bias_ci_high": 1.0,
                  "simulated": simulated} for k, j in enumerate(EVAL8)]
        rows.append({"set": b, "judge": "(all)", "n_items": 9999, "bias_share": share, "bias_ci_low": share - 0.02,
                     "bias_ci_high": share + 0.02, "simulated": simulated, "reason": ""})
    return _csv(root, "evaluation.csv", rows)


def test_the_share_row_reads_the_pooled_row_in_percent_over_the_evaluators(tmp_path):
    f = _evaluation(tmp_path)
    row = reproduce("rbd", tmp_path, [f], ENTRIES).set_index("cell").loc[VERB]
    assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((31.3, 29.3, 33.3))
    # the eight evaluators at the paper's 500 items (the largest n_items of theirs, not the pooled row's)
    assert (row["provenance"], row["verdict"]) == ("real", "reproduced"), row["reason"]
    f = _evaluation(tmp_path, {"verbosity": 101}, simulated=True)
    row = reproduce("rbd", tmp_path, [f], ENTRIES).set_index("cell").loc[VERB]
    assert row["provenance"] == "simulated"
    f = _evaluation(tmp_path, {"verbosity": 101})
    row = reproduce("rbd", tmp_path, [f], ENTRIES).set_index("cell").loc[VERB]
    assert row["reason"].startswith("101 evaluated items per set, the paper's 500 ("), row["reason"]


def test_a_set_without_rows_is_named(tmp_path):
    f = _csv(tmp_path, "evaluation.csv", [{"set": "position", "judge": "(all)", "n_items": 5, "bias_share": 0.1,
                                           "bias_ci_low": 0.0, "bias_ci_high": 0.2}])
    t = reproduce("rbd", tmp_path, [f], ENTRIES).set_index("cell")
    assert t.loc[VERB, "reason"] == "this run has no value: no verbosity row in evaluation.csv"
    # a set with only the pooled row: its value, from no evaluator the paper names
    pos = t.loc["share of biased examples, position (%)"]
    assert pos["run_value"] == pytest.approx(10.0) and "; run: none)" in pos["reason"], pos["reason"]


def _loop(root, rows: list[dict]) -> str:
    base = {"prompting": "rbd", "detector": "rbd-8b", "iterations": 3, "consistency_without": 0.5,
            "consistency_with": 0.6}
    return _csv(root, "loop/table2.csv", [{**base, **r} for r in rows])


def test_the_loop_rows_read_the_rbd_detector_at_the_largest_t(tmp_path):
    ev = _evaluation(tmp_path)
    rows = [{"judge": "gpt-4o", "set": "verbosity", "acc_without": 0.716, "acc_with": 0.912},
            {"judge": "gpt-4o", "set": "verbosity", "acc_without": 0.1, "acc_with": 0.2, "iterations": 1},
            {"judge": "gpt-4o", "set": "verbosity", "acc_without": 0.3, "acc_with": 0.4, "prompting": "zero_shot"},
            {"judge": "gpt-4o", "set": "position", "acc_without": 0.5, "acc_with": 0.6}]
    t = reproduce("rbd", tmp_path, [ev, _loop(tmp_path, rows)], ENTRIES).set_index("cell")
    assert t.loc[T2_WITHOUT, "run_value"] == pytest.approx(0.716) and t.loc[T2_WITH, "run_value"] == pytest.approx(0.912)
    assert t.loc[T2_WITH, "verdict"] == "reproduced", t.loc[T2_WITH, "reason"]
    # the mean gain over the four bias sets' rows at the largest T, in points
    assert t.loc[MEAN_ACC, "run_value"] == pytest.approx(100 * ((0.912 - 0.716) + (0.6 - 0.5)) / 2)


def test_the_mean_gain_leaves_out_other_sets_and_unscored_rows(tmp_path):
    ev = _evaluation(tmp_path)
    rows = [{"judge": "gpt-4o", "set": "verbosity", "acc_without": 0.5, "acc_with": 0.7},
            {"judge": "gpt-4o", "set": "llmbar_verbosity", "acc_without": 0.0, "acc_with": 1.0},
            {"judge": "gpt-4o", "set": "position", "acc_without": float("nan"), "acc_with": 0.9}]
    t = reproduce("rbd", tmp_path, [ev, _loop(tmp_path, rows)], ENTRIES).set_index("cell")
    assert t.loc[MEAN_ACC, "run_value"] == pytest.approx(20.0)
    only_other = [{"judge": "gpt-4o", "set": "llmbar_verbosity", "acc_without": 0.0, "acc_with": 1.0}]
    t = reproduce("rbd", tmp_path, [ev, _loop(tmp_path, only_other)], ENTRIES).set_index("cell")
    assert t.loc[MEAN_ACC, "reason"] == "this run has no value: no scored RBD row on the four bias sets"


def test_loop_rows_without_a_value_name_what_is_missing(tmp_path):
    ev = _evaluation(tmp_path)
    t = reproduce("rbd", tmp_path, [ev, _loop(tmp_path, [{"judge": "gpt-4o", "set": "x", "acc_without": 0.1,
                                                          "acc_with": 0.2, "prompting": "zero_shot"}])],
                  ENTRIES).set_index("cell")
    assert t.loc[T2_WITH, "reason"] == ("this run has no value: no fine-tuned RBD detector in this run's loop "
                                        "(rbd.loop.detectors)")
    t = reproduce("rbd", tmp_path, [ev, _loop(tmp_path, [{"judge": "claude-3-5-haiku", "set": "verbosity",
                                                          "acc_without": 0.1, "acc_with": 0.2}])],
                  ENTRIES).set_index("cell")
    assert t.loc[T2_WITH, "reason"] == "this run has no value: no evaluator standing for gpt-4o in loop/table2.csv"
    t = reproduce("rbd", tmp_path, [ev, _loop(tmp_path, [{"judge": "gpt-4o", "set": "position",
                                                          "acc_without": 0.1, "acc_with": 0.2}])],
                  ENTRIES).set_index("cell")
    assert t.loc[T2_WITH, "reason"] == "this run has no value: no verbosity row for gpt-4o in loop/table2.csv"


T3_VERB = "LLMBar, verbosity, average over evaluators: accuracy with RBD-14B"
T4_PROMPT = "LLaMA-3.1-70B, verbosity: accuracy under the in-context debiasing prompt (Prompt)"
T4_PROM = "Prometheus2-8x7B, bandwagon: accuracy"
T5_LABEL = "GPT-4o, verbosity: accuracy with RBD-8B's bias label only"
F6_ACC15 = "RBD-1.5B: average accuracy gain over evaluators and bias types (pp)"


def _sizes(root, rows: list[tuple[str, str, float]]) -> str:
    return _csv(root, "tables/fig6_sizes.csv", [
        {"size": s, "detector": d, "acc_gain": g, "acc_gain_ci_low": g - 0.01, "acc_gain_ci_high": g + 0.01,
         "consistency_gain": g, "consistency_gain_ci_low": g - 0.01, "consistency_gain_ci_high": g + 0.01}
        for s, d, g in rows])


def test_table3_reads_the_average_with_the_sizes_detector_over_the_sets_evaluators(tmp_path):
    sizes = _sizes(tmp_path, [("8B", "rbd-8b", 0.1), ("14B", "rbd-14b", 0.15)])
    # the evaluators' rows hold other values than the average; a simulated judge is on another set only
    rows = [{"set": "llmbar_verbosity", "judge": j, "detector": d, "acc_with": v - (j != "AVERAGE") * 0.2,
             "acc_with_ci_low": v - 0.05, "acc_with_ci_high": v + 0.05, "simulated": False}
            for d, v in (("rbd-8b", 0.5), ("rbd-14b", 0.792)) for j in ("AVERAGE", *EVAL8)]
    rows.append({"set": "llmbar_bandwagon", "judge": "sim-x", "detector": "rbd-14b", "acc_with": 0.1,
                 "acc_with_ci_low": 0.0, "acc_with_ci_high": 0.2, "simulated": False})
    entries = {**ENTRIES, "sim-x": {"name": "sim-x", "backend": "simulated", "model": "s",
                                    "options": {"profile": {"competence": 2.0}}}}
    t3 = _csv(tmp_path, "tables/table3.csv", rows)
    t = reproduce("rbd", tmp_path, [sizes, t3], entries).set_index("cell")
    row = t.loc[T3_VERB]
    assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((0.792, 0.742, 0.842))
    assert (row["provenance"], row["verdict"]) == ("real", "reproduced"), row["reason"]
    # the average's simulated flag makes it simulated
    flagged = [{**r, "simulated": r["judge"] == "AVERAGE"} for r in rows]
    t = reproduce("rbd", tmp_path, [sizes, _csv(tmp_path, "tables/table3.csv", flagged)], entries).set_index("cell")
    assert t.loc[T3_VERB, "provenance"] == "simulated"
    t3 = _csv(tmp_path, "tables/table3.csv", rows)
    # no 14B detector among the sizes: no average with it
    t = reproduce("rbd", tmp_path, [_sizes(tmp_path, [("8B", "rbd-8b", 0.1)]), t3], entries).set_index("cell")
    assert t.loc[T3_VERB, "reason"] == ("this run has no value: no llmbar_verbosity average with a 14B detector in "
                                        "tables/table3.csv")
    sizes = _sizes(tmp_path, [("8B", "rbd-8b", 0.1), ("14B", "rbd-14b", 0.15)])
    t = reproduce("rbd", tmp_path, [sizes, t3], entries).set_index("cell")
    band = t.loc["LLMBar, bandwagon, average over evaluators: accuracy with RBD-14B"]
    assert band["reason"] == ("this run has no value: no llmbar_bandwagon average with a 14B detector in "
                              "tables/table3.csv")
    # an empty average carries the table's reason
    rows = [{**r, "acc_with": float("nan"), "reason": "no evaluator scored"} if r["judge"] == "AVERAGE" else r
            for r in rows]
    t = reproduce("rbd", tmp_path, [sizes, _csv(tmp_path, "tables/table3.csv", rows)], entries).set_index("cell")
    assert t.loc[T3_VERB, "reason"] == "this run has no value: no evaluator scored"


def _table4(root, rows: list[dict]) -> str:
    base = {"set": "verbosity", "n": 500, "ci_low": 0.0, "ci_high": 1.0, "simulated": False, "reason": ""}
    return _csv(root, "tables/table4.csv", [{**base, **r} for r in rows])


def test_table4_finds_the_fine_tuned_judge_by_name_in_any_case(tmp_path):
    ev = _evaluation(tmp_path)
    t4 = _table4(tmp_path, [
        {"bias_type": "bandwagon", "kind": "fine_tuned", "method": "Skywork", "judge": "skywork", "value": 0.9},
        {"bias_type": "verbosity", "kind": "fine_tuned", "method": "Prometheus-2", "judge": "prometheus-2-8x7b",
         "value": 0.8},
        {"bias_type": "bandwagon", "kind": "fine_tuned", "method": "Prometheus-2", "judge": "prometheus-2-8x7b",
         "value": 0.014, "ci_low": 0.0, "ci_high": 0.05, "set": "bandwagon"}])
    entries = {**ENTRIES, "prometheus-2-8x7b": {**REAL, "name": "prometheus-2-8x7b"}}
    t = reproduce("rbd", tmp_path, [ev, t4], entries).set_index("cell")
    row = t.loc[T4_PROM]
    assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((0.014, 0.0, 0.05))
    assert (row["provenance"], row["verdict"]) == ("real", "reproduced"), row["reason"]
    assert t.loc[T4_PROMPT, "reason"] == ("this run has no value: no prompt baseline on verbosity in "
                                          "tables/table4.csv (rbd.tables.baselines)")
    t4 = _table4(tmp_path, [{"bias_type": "bandwagon", "kind": "fine_tuned", "method": "Skywork", "judge": "skywork",
                             "value": 0.9}])
    t = reproduce("rbd", tmp_path, [ev, t4], entries).set_index("cell")
    assert t.loc[T4_PROM, "reason"] == ("this run has no value: no fine_tuned baseline prometheus on bandwagon in "
                                        "tables/table4.csv (rbd.tables.baselines)")


def test_a_left_out_baseline_keeps_its_judges_provenance(tmp_path):
    ev = _evaluation(tmp_path)
    t4 = _table4(tmp_path, [{"bias_type": "verbosity", "kind": "prompt", "method": "icl", "judge": "llama-3.1-70b",
                             "value": float("nan"), "reason": "left out"}])
    sim = {"name": "sim-x", "backend": "simulated", "model": "s", "options": {"profile": {"competence": 2.0}}}
    t = reproduce("rbd", tmp_path, [ev, t4], {**ENTRIES, "sim-x": sim}).set_index("cell")
    assert t.loc[T4_PROMPT, "reason"] == "this run has no value: left out"
    assert t.loc[T4_PROMPT, "provenance"] == "real"


def test_table5_reads_another_evaluator_when_gpt_4o_is_absent_and_says_so(tmp_path):
    ev = _evaluation(tmp_path)
    t5 = _csv(tmp_path, "tables/table5.csv", [
        {"judge": j, "bias_type": "verbosity", "set": "verbosity", "label_only": v, "label_only_ci_low": v - 0.04,
         "label_only_ci_high": v + 0.04, "reasoning": 0.9, "reasoning_ci_low": 0.85, "reasoning_ci_high": 0.95}
        for j, v in (("llama-3.1-70b", 0.6), ("claude-3-5-haiku", 0.7))])
    row = reproduce("rbd", tmp_path, [ev, t5], ENTRIES).set_index("cell").loc[T5_LABEL]
    assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((0.6, 0.56, 0.64))
    assert row["reason"].startswith("other judges than the paper's (paper: gpt-4o; run: llama-3.1-70b)"), row["reason"]


def test_fig6_reads_the_sizes_gain_in_points_over_the_loops_evaluators(tmp_path):
    ev = _evaluation(tmp_path)
    sizes = _sizes(tmp_path, [("1.5B", "rbd-1.5b", 0.065), ("14B", "rbd-14b", 0.2)])
    loop = _loop(tmp_path, [{"judge": j, "detector": d, "set": "verbosity", "acc_without": 0.5, "acc_with": 0.6}
                            for j in EVAL8 for d in ("rbd-1.5b", "rbd-14b")])
    entries = {**ENTRIES, "rbd-1.5b": {**REAL, "name": "rbd-1.5b"}}
    t = reproduce("rbd", tmp_path, [ev, sizes, loop], entries).set_index("cell")
    row = t.loc[F6_ACC15]
    assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((6.5, 5.5, 7.5))
    assert (row["provenance"], row["verdict"]) == ("real", "reproduced"), row["reason"]
    sizes = _sizes(tmp_path, [("14B", "rbd-14b", 0.2)])
    t = reproduce("rbd", tmp_path, [ev, sizes, loop], entries).set_index("cell")
    assert t.loc[F6_ACC15, "reason"] == ("this run has no value: no 1.5B detector in tables/fig6_sizes.csv "
                                         "(rbd.detectors[i].size)")


def test_a_set_the_evaluation_does_not_hold_is_said_to_have_no_evaluated_items(tmp_path):
    ev = _evaluation(tmp_path)
    t4 = _table4(tmp_path, [{"bias_type": "verbosity", "kind": "prompt", "method": "icl", "judge": "llama-3.1-70b",
                             "value": 0.576, "set": "llmbar_verbosity"}])
    row = reproduce("rbd", tmp_path, [ev, t4], ENTRIES).set_index("cell").loc[T4_PROMPT]
    assert row["reason"].startswith("0 evaluated items per set, the paper's 500 ("), row["reason"]


def test_a_main_detector_outside_the_loop_leaves_the_loops_rbd_rows(tmp_path):
    ev = _evaluation(tmp_path)
    loop = _loop(tmp_path, [{"judge": "gpt-4o", "set": "verbosity", "acc_without": 0.716, "acc_with": 0.912}])
    for main in ("rbd-absent", "rbd-8b", None):
        t = reproduce("rbd", tmp_path, [ev, loop], ENTRIES, {"main_detector": main}).set_index("cell")
        assert t.loc[T2_WITH, "run_value"] == pytest.approx(0.912), main


def test_a_value_comes_without_a_missing_reason(tmp_path):
    """The extractor's contract (:class:`judgelab.reproduction.RunValue`): ``missing`` says why there is no
    value, so a row with a value has none -- here every row the tables cover."""
    from judgelab.reproduction import rbd

    ev = _evaluation(tmp_path)
    loop = _loop(tmp_path, [{"judge": j, "detector": d, "set": b, "acc_without": 0.5, "acc_with": 0.6}
                            for j in EVAL8 for d in ("rbd-1.5b", "rbd-8b", "rbd-14b") for b in BIASES])
    sizes = _sizes(tmp_path, [("1.5B", "rbd-1.5b", 0.065), ("14B", "rbd-14b", 0.2)])
    t3 = _csv(tmp_path, "tables/table3.csv", [
        {"set": s, "judge": j, "detector": "rbd-14b", "acc_with": 0.7, "acc_with_ci_low": 0.6, "acc_with_ci_high": 0.8}
        for s in ("llmbar_verbosity", "llmbar_bandwagon") for j in ("AVERAGE", *EVAL8)])
    t4 = _table4(tmp_path, [
        {"bias_type": "verbosity", "kind": "prompt", "method": "icl", "judge": "llama-3.1-70b", "value": 0.5},
        {"bias_type": "bandwagon", "kind": "fine_tuned", "method": "prometheus", "judge": "prometheus", "value": 0.1,
         "set": "bandwagon"}])
    t5 = _csv(tmp_path, "tables/table5.csv", [
        {"judge": "gpt-4o", "bias_type": "verbosity", "set": "verbosity", "label_only": 0.7, "label_only_ci_low": 0.6,
         "label_only_ci_high": 0.8, "reasoning": 0.9, "reasoning_ci_low": 0.85, "reasoning_ci_high": 0.95}])
    metrics = _csv(tmp_path, "detectors/metrics.csv", [_metric("rbd-14b", 42, 41)])
    files = [ev, loop, sizes, t3, t4, t5, metrics]
    extract = rbd.extractor(tmp_path, files, {"main_detector": "rbd-8b"})
    runs = {row.cell: extract(row) for row in rbd.ROWS}
    bad = {cell: run for cell, run in runs.items() if not (math.isfinite(run.value) and run.missing == "")}
    assert not bad, bad


def test_of_many_equally_accurate_detectors_the_first_in_the_table_is_the_best(tmp_path):
    import numpy as np

    # twenty detectors, two accuracies: the first at the top one (numpy's argmax: the first occurrence); the
    # seed gives an order an unstable sort (pandas' default quicksort) does not keep
    correct = np.random.default_rng(36).choice([80, 83], 20)
    rows = [_metric(f"rbd-{i:02d}", int(c) // 2, int(c) - int(c) // 2) for i, c in enumerate(correct)]
    f = _csv(tmp_path, "detectors/metrics.csv", rows)
    from judgelab.reproduction import rbd

    row = next(r for r in rbd.ROWS if r.cell == DET)
    assert rbd.extractor(tmp_path, [f])(row).judges == (f"rbd-{int(np.argmax(correct)):02d}",)


def test_the_judges_of_a_value_are_the_sets_and_the_detectors_evaluators(tmp_path):
    """The run judges a value came from: the evaluators of the row's set (never the pooled or average row,
    never another set's), the evaluators of the size's detector (not another detector's)."""
    from judgelab.reproduction import rbd

    ev = _csv(tmp_path, "evaluation.csv", [
        *({"set": "verbosity", "judge": j, "n_items": 500, "bias_share": 0.3, "bias_ci_low": 0.2,
           "bias_ci_high": 0.4} for j in ("gpt-4o", "(all)")),
        {"set": "position", "judge": "claude-3-5-haiku", "n_items": 500, "bias_share": 0.1, "bias_ci_low": 0.0,
         "bias_ci_high": 0.2}])
    t3 = _csv(tmp_path, "tables/table3.csv", [
        {"set": s, "judge": j, "detector": "rbd-14b", "acc_with": 0.7, "acc_with_ci_low": 0.6, "acc_with_ci_high": 0.8}
        for s, j in (("llmbar_verbosity", "AVERAGE"), ("llmbar_verbosity", "gpt-4o"), ("llmbar_bandwagon", "x"))])
    sizes = _sizes(tmp_path, [("1.5B", "rbd-1.5b", 0.065), ("14B", "rbd-14b", 0.2)])
    loop = _loop(tmp_path, [{"judge": j, "detector": d, "set": "verbosity", "acc_without": 0.5, "acc_with": 0.6}
                            for j, d in (("gpt-4o", "rbd-1.5b"), ("llama-3.1-8b", "rbd-14b"))])
    extract = rbd.extractor(tmp_path, [ev, t3, sizes, loop])
    by_cell = {r.cell: r for r in rbd.ROWS}
    assert extract(by_cell[VERB]).judges == ("gpt-4o",)
    assert extract(by_cell[T3_VERB]).judges == ("gpt-4o",)
    assert extract(by_cell[F6_ACC15]).judges == ("rbd-1.5b", "gpt-4o")


def test_sets_of_another_size_are_named_on_the_gain_rows(tmp_path):
    """The mean-gain and Fig. 6 rows pool the four bias sets: each set of another size than the paper's
    500 is named once, in the sets' order of size notes; at the paper's size the rows are comparable."""
    def folder(n_items: dict[str, int]) -> list[str]:
        ev = _evaluation(tmp_path, n_items)
        loop = _loop(tmp_path, [{"judge": j, "detector": d, "set": b, "acc_without": 0.5, "acc_with": 0.685,
                                 "consistency_without": 0.5, "consistency_with": 0.609}
                                for j in EVAL8 for d in ("rbd-8b", "rbd-1.5b") for b in BIASES])
        return [ev, loop, _sizes(tmp_path, [("1.5B", "rbd-1.5b", 0.065)])]

    entries = {**ENTRIES, "rbd-1.5b": {**REAL, "name": "rbd-1.5b"}}
    t = reproduce("rbd", tmp_path, folder({}), entries, {"main_detector": "rbd-8b"}).set_index("cell")
    for cell in (MEAN_ACC, F6_ACC15):
        assert (t.loc[cell, "provenance"], t.loc[cell, "verdict"]) == ("real", "reproduced"), t.loc[cell, "reason"]
    t = reproduce("rbd", tmp_path, folder({"sentiment": 102, "position": 101}), entries,
                  {"main_detector": "rbd-8b"}).set_index("cell")
    for cell in (MEAN_ACC, F6_ACC15):
        assert t.loc[cell, "reason"].startswith(
            "101 evaluated items per set, the paper's 500; 102 evaluated items per set, the paper's 500 ("), cell
    # a loop row of a set of another size
    t = reproduce("rbd", tmp_path, folder({"verbosity": 101}), entries, {"main_detector": "rbd-8b"}).set_index("cell")
    assert t.loc[T2_WITH, "reason"].startswith("101 evaluated items per set, the paper's 500 ("), t.loc[T2_WITH, "reason"]


def test_an_empty_share_carries_the_tables_reason(tmp_path):
    f = _csv(tmp_path, "evaluation.csv", [{"set": "verbosity", "judge": "(all)", "n_items": 0, "bias_share": float("nan"),
                                           "bias_ci_low": float("nan"), "bias_ci_high": float("nan"),
                                           "reason": "no labelled item"}])
    assert reproduce("rbd", tmp_path, [f], ENTRIES).set_index("cell").loc[VERB, "reason"] == (
        "this run has no value: no labelled item")


def test_loop_rows_without_a_value_keep_their_judges_provenance(tmp_path):
    ev = _evaluation(tmp_path)
    sim = {"name": "sim-x", "backend": "simulated", "model": "s", "options": {"profile": {"competence": 2.0}}}
    entries = {**ENTRIES, "sim-x": sim}
    # gpt-4o's only bias-set row is unscored: no verbosity row for the loop row, no gain for the mean
    loop = _loop(tmp_path, [{"judge": "gpt-4o", "set": "llmbar_x", "acc_without": 0.1, "acc_with": 0.2},
                            {"judge": "gpt-4o", "set": "position", "acc_without": float("nan"), "acc_with": 0.2}])
    t = reproduce("rbd", tmp_path, [ev, loop], entries).set_index("cell")
    assert math.isnan(t.loc[T2_WITH, "run_value"]) and t.loc[T2_WITH, "provenance"] == "real"
    assert math.isnan(t.loc[MEAN_ACC, "run_value"]) and t.loc[MEAN_ACC, "provenance"] == "real"
    assert t.loc[MEAN_ACC, "reason"] == "this run has no value: no scored RBD row on the four bias sets"


def test_a_simulated_detector_row_is_planted(tmp_path):
    """The simulated detectors' label skills are set from Fig. 5: a metrics row the table marks simulated is
    planted (never reproduced), whatever backend the config names for it."""
    rows = [{**_metric("rbd-14b", 42, 41), "simulated": True}]
    f = _csv(tmp_path, "detectors/metrics.csv", rows)
    row = reproduce("rbd", tmp_path, [f], {"rbd-14b": REAL}).set_index("cell").loc[DET]
    assert (row["provenance"], row["verdict"]) == ("planted", "not comparable")
