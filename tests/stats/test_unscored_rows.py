"""Every study table keeps a row for a judge it cannot score -- every answer unparsed -- with
NaN statistics and a ``reason`` that says why (:mod:`judgelab.stats.unscored`), beside a judge it
scores (reason empty).  Before, these rows printed rates computed from no verdict at all: an
agreement, accuracy or recall of 0 (a missing verdict counted as wrong), 50 % accuracy from
order-averaged ties, a preference of 0 % with a confidence interval, or recalls and bias
coefficients from a model fitted on no comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.stats.unscored import blank, no_value_reason

REASON = "no parsable verdict: 6 of 6 unparsed"


def test_the_reason_names_the_counts_and_a_scored_row_has_none():
    assert no_value_reason(["unparsed"] * 40) == "no parsable verdict: 40 of 40 unparsed"
    assert no_value_reason(["unparsed"] * 3 + ["refusal", "error", "error"], what="score") == \
        "no parsable score: 3 of 6 unparsed, 1 refused, 2 errored"
    assert no_value_reason(["ok", "unparsed"]) == "" and no_value_reason(["fallback"]) == ""
    assert no_value_reason([]) == "no verdicts recorded"
    assert no_value_reason(["ok", "ok"], usable=[False, False]) == "no parsable verdict: 2 of 2 without a usable verdict"
    assert no_value_reason(["unparsed", "ok"], usable=[True, False]) == ""
    row = blank({"judge": "j", "acc": 0.0, "n": 3}, ["acc"], "why")
    assert np.isnan(row["acc"]) and row["n"] == 3 and row["reason"] == "why"
    assert blank({"acc": 0.5}, ["acc"], "") == {"acc": 0.5, "reason": ""}


def test_strategies_agreement_keeps_a_judge_without_a_verdict():
    from judgelab.strategies.analysis import agreement_table
    from tests.strategies.test_mutation_analysis import _sv_rows

    gold = ["A", "B", "A", "B", "A", "B"]
    good = _sv_rows("d", "good", "B0", gold, gold)
    broken = _sv_rows("d", "broken", "B0", [""] * 6, gold)
    for r in broken:
        r.update(n_unparsed=1, n_ok=0)
    out = agreement_table(pd.DataFrame(good + broken), n_resamples=50).set_index("judge")
    assert {"good", "broken", "gold"} <= set(out.index)
    assert out.loc["good", "agreement"] == 1.0 and out.loc["good", "reason"] == ""
    b = out.loc["broken"]
    assert b["reason"] == REASON and b["n"] == 6 and b["n_no_verdict"] == 6
    for c in ("agreement", "ci_low", "ci_high", "kappa", "delta_vs_B0"):
        assert np.isnan(b[c]), c
    # the Pareto front puts no unscored cell on it
    from judgelab.strategies.selection import pareto_table

    front = pareto_table(out.reset_index(), "d").set_index("judge")
    assert not front.loc["broken", "on_front"] and front.loc["good", "on_front"]


def _pairwise(judge: str, verdicts: list[str], *, bias_type: str = "verbosity") -> pd.DataFrame:
    rows = []
    for i, v in enumerate(verdicts):
        order = "AB" if i % 2 == 0 else "BA"
        shown = v if order == "AB" or v not in ("A", "B") else {"A": "B", "B": "A"}[v]
        rows.append({"judge": judge, "pair_id": f"p{i // 2}", "order": order, "bias_type": bias_type,
                     "verdict": v, "verdict_shown": shown, "status": "ok" if v else "unparsed", "simulated": False})
    return pd.DataFrame(rows)


def test_topk_probe_summary_keeps_a_judge_without_a_verdict():
    from judgelab.topk.probes import probe_summary

    v = pd.concat([_pairwise("good", ["A", "A", "B", "A", "A", "A"]), _pairwise("broken", [""] * 6)])
    out = probe_summary(v).set_index("judge")
    assert out.loc["good", "reason"] == "" and out.loc["good", "p_contrast"] == pytest.approx(5 / 6)
    b = out.loc["broken"]
    assert b["reason"] == REASON and b["n_calls"] == 6 and b["n_unparsed"] == 6
    for c in ("p_contrast", "ci_low", "ci_high", "consistency"):
        assert np.isnan(b[c]), c


def test_topk_llmbar_row_keeps_a_judge_without_a_verdict():
    from judgelab.topk.llmbar import JUDGE_STATS, external_validity

    n = 20
    rng = np.random.default_rng(0)
    pairs = pd.DataFrame({"pair_id": [f"p{i}" for i in range(n)],
                          "expected_verdict": ["A" if i % 2 else "B" for i in range(n)],
                          "response_a": [" ".join(["w"] * int(k)) for k in rng.integers(3, 30, n)],
                          "response_b": [" ".join(["w"] * int(k)) for k in rng.integers(3, 30, n)]})
    rows = [{"pair_id": p, "order": o, "verdict": "", "status": "unparsed"} for p in pairs["pair_id"]
            for o in ("AB", "BA")]
    row = external_validity(pd.DataFrame(rows), pairs, n_folds=2, seed=0)
    assert row["reason"] == f"no parsable verdict: {2 * n} of {2 * n} unparsed"
    assert row["n_pairs"] == n and row["n_unparsed"] == 2 * n and not row["beats_features"]
    for c in JUDGE_STATS:
        assert np.isnan(row[c]), c
    assert np.isfinite(row["features_acc"])  # the judge-free control stays
    good = pd.DataFrame([{**r, "verdict": e, "status": "ok"} for r, e in
                         zip(rows, np.repeat(pairs["expected_verdict"], 2), strict=True)])
    ok = external_validity(good, pairs, n_folds=2, seed=0)
    assert ok["reason"] == "" and ok["raw_acc"] == 1.0


def test_topk_table1_keeps_a_judge_without_a_usable_comparison():
    from judgelab.topk.tables import table_judges

    full, params = [], []
    for judge, n_cmp in (("good", 40), ("broken", 0)):
        for o in range(2):
            for est, lam in (("naive", np.nan), ("aware", 0.1)):
                full.append({"judge": judge, "family": "f", "simulated": False, "oracle": o, "k": 2, "estimator": est,
                             "lam_b": lam, "recall": 0.5, "n_comparisons": n_cmp, "n_unusable": 40 - n_cmp})
            for param in ("c[verbosity]", "kappa"):
                params.append({"judge": judge, "oracle": o, "estimator": "aware", "lam_b": 0.1, "param": param,
                               "estimate": 0.3, "se": 1.0, "ci_low": -1.0, "ci_high": 2.0,
                               "status": "identified" if n_cmp else "not identified", "planted": np.nan})
    out = table_judges(pd.DataFrame(full), pd.DataFrame(params), k=2, lam_b=0.1).set_index("judge")
    assert out.loc["good", "reason"] == "" and out.loc["good", "naive_recall"] == 0.5
    b = out.loc["broken"]
    assert b["reason"] == "no parsable verdict: 80 of 80 without a usable verdict"
    assert b["unusable_rate"] == 1.0 and b["identifiability"] == "not identified"
    for c in ("c_verbosity", "c_verbosity_se", "kappa", "kappa_se", "naive_recall", "aware_recall", "delta"):
        assert np.isnan(b[c]), c


def test_uda_judges_table_keeps_a_judge_without_a_verdict():
    from judgelab.uda.study import judges_table

    def verdicts(judge, vs):
        return [{"judge": judge, "family": "f", "verdict": v, "status": "ok" if v else "unparsed", "simulated": False,
                 "tokens_in": 1, "tokens_out": 1, "cost_usd": 0.0} for v in vs]

    v = pd.DataFrame(verdicts("good", ["A", "B", "A", "tie", "A", "A"]) + verdicts("broken", [""] * 6))
    answers = pd.DataFrame(columns=["judge", "status", "tokens_in", "tokens_out", "cost_usd"])
    out = judges_table(v, answers, {}).set_index("judge")
    assert out.loc["good", "reason"] == "" and out.loc["good", "first_slot_win_rate"] == pytest.approx(4 / 5)
    b = out.loc["broken"]
    assert b["reason"] == REASON and b["n_unparsed"] == 6 and b["usable_share"] == 0.0
    assert np.isnan(b["first_slot_win_rate"]) and np.isnan(b["tie_rate"])


def test_rbd_evaluation_summary_keeps_an_evaluator_without_a_verdict():
    from judgelab.rbd.evaluate import LABEL_COLUMNS, evaluation_summary

    def labels(judge, vd, vb):
        return [{"set": "verbosity", "item_id": f"i{i}", "judge": judge, "split": "test", "bias_type": "verbosity",
                 "answer_format": "ab", "label_rule": "eq1", "verdict_D": d, "verdict_bias": b, "gold_D": 0,
                 "gold_bias": 0, "correct_D": d == 0, "correct_bias": b == 0,
                 "status_D": "ok" if d >= 0 else "unparsed", "status_bias": "ok" if b >= 0 else "unparsed",
                 "b": ("yes" if (d == 0 and b == 1) else "no") if d >= 0 and b >= 0 else ""}
                for i, (d, b) in enumerate(zip(vd, vb, strict=True))]

    lab = pd.DataFrame(labels("good", [0, 0, 0], [0, 1, 0]) + labels("broken", [-1] * 3, [-1] * 3),
                       columns=LABEL_COLUMNS)
    out = evaluation_summary(lab, {}).set_index("judge")
    assert out.loc["good", "reason"] == "" and out.loc["good", "acc_D"] == 1.0
    b = out.loc["broken"]
    assert b["reason"] == REASON and b["n_items"] == 3 and b["n_missing_D"] == 3 and b["n_missing_bias"] == 3
    for c in ("acc_D", "acc_D_bias", "consistency", "acc_drop", "bias_share", "bias_ci_low", "bias_ci_high"):
        assert np.isnan(b[c]), c
    assert out.loc["(all)", "reason"] == ""  # the pooled row has the scored evaluator


def test_rbd_detector_metrics_keep_a_detector_without_a_label():
    from judgelab.rbd.detector import METRIC_COLUMNS, detector_metrics

    rows = [{"detector": d, "prompting": "rbd", "subset": "diag", "bias_type": "verbosity", "truth": t, "pred": p,
             "status": "ok" if p else "unparsed", "simulated": False}
            for d, preds in (("good", ["yes", "no", "no"]), ("broken", ["", "", ""]))
            for t, p in zip(["yes", "no", "yes"], preds, strict=True)]
    out = detector_metrics(pd.DataFrame(rows))
    assert list(out.columns) == METRIC_COLUMNS
    out = out.set_index("detector")
    assert out.loc["good", "reason"] == "" and out.loc["good", "accuracy"] == pytest.approx(2 / 3)
    b = out.loc["broken"]
    assert b["reason"] == "no parsable label: 3 of 3 unparsed" and b["n_missing"] == 3
    for c in ("accuracy", "precision", "recall", "f1"):
        assert np.isnan(b[c]), c


def test_rbd_log_audit_summary_says_why_a_row_has_no_estimate():
    from judgelab.rbd.audit_log import SUMMARY_COLUMNS, audit_summary

    rows = [{"detector": "det", "prompting": "rbd", "simulated": False, "evaluator": j, "evaluator_model": j,
             "bias_type": "position", "pred": p, "status": "ok" if p else "unparsed", "truth": "", "cue": ""}
            for j, preds in (("good", ["yes", "no"]), ("broken", ["", ""])) for p in preds]
    skipped = pd.DataFrame([{"evaluator": "gone", "bias_type": "position", "reason": "one order only", "n": 4}])
    out = audit_summary(pd.DataFrame(rows), skipped)
    assert list(out.columns) == SUMMARY_COLUMNS
    out = out.set_index("evaluator")
    assert out.loc["good", "reason"] == "" and out.loc["good", "flag_share"] == 0.5
    assert out.loc["broken", "reason"] == "no parsable label: 2 of 2 unparsed"
    assert np.isnan(out.loc["broken", "flag_share"])
    assert out.loc["gone", "reason"] == "no case: 4 recorded call(s) skipped (see skipped.csv)"


def test_scoring_table3_keeps_a_judge_without_a_score():
    from judgelab.scoring.metrics import TABLE3_COLUMNS, correlation_tables

    items = [f"i{k}" for k in range(8)]
    gold = pd.DataFrame({"dataset": "own", "gold_source": "design", "item_id": items,
                         "gold": [1, 2, 3, 4, 5, 1, 2, 3]})
    rows = []
    for judge in ("good", "broken"):
        for variant in ("baseline", "descending"):
            for k, i in enumerate(items):
                ok = judge == "good"
                rows.append({"dataset": "own", "judge": judge, "item_id": i, "variant": variant, "repeat": 0,
                             "score": float(gold["gold"].iloc[k]) if ok else -1.0,
                             "status": "ok" if ok else "unparsed"})
    t3, _ = correlation_tables(pd.DataFrame(rows), gold, n_boot=50)
    assert list(t3.columns) == TABLE3_COLUMNS
    t3 = t3.set_index(["judge", "variant"])
    assert t3.loc[("good", "baseline"), "reason"] == "" and t3.loc[("good", "baseline"), "rho"] == pytest.approx(1.0)
    for v in ("baseline", "descending"):
        b = t3.loc[("broken", v)]
        assert b["reason"] == "no parsable score: 8 of 8 unparsed" and b["n_unparsed"] == 8
        for c in ("rho", "rho_ci_low", "rho_ci_high", "r", "r_ci_low", "r_ci_high"):
            assert np.isnan(b[c]), (v, c)


def test_strategies_category_and_bias_cells_without_a_verdict_say_why():
    from judgelab.strategies.analysis import _b, category_table
    from tests.strategies.test_mutation_analysis import _sv_rows

    gold = ["A", "B", "A", "B"]
    broken = _sv_rows("d", "broken", "B0", [""] * 4, gold)
    good = _sv_rows("d", "good", "B0", gold, gold)
    cat = category_table(pd.DataFrame(good + broken), n_resamples=50).set_index("judge")
    assert cat.loc["good", "reason"] == "" and cat.loc["good", "agreement"] == 1.0
    assert cat.loc["broken", "reason"] == "no parsable verdict: 4 of 4 without a usable verdict"
    assert np.isnan(cat.loc["broken", "agreement"]) and cat.loc["broken", "n"] == 4
    b = _b(pd.Series([""] * 6), pd.Series(["A"] * 6), n_resamples=50, alpha=0.05, rng_seed=0)
    assert b["reason"] == "no parsable verdict: 6 of 6 without a usable verdict" and b["n_no_verdict"] == 6
    assert np.isnan(b["value"]) and np.isnan(b["ci_low"])  # not a bias score of 0
    assert _b(pd.Series([], dtype=object), pd.Series([], dtype=object), n_resamples=50, alpha=0.05,
              rng_seed=0)["reason"] == "no pairs of this kind"
    ok = _b(pd.Series(["A", "B", "A"]), pd.Series(["A"] * 3), n_resamples=50, alpha=0.05, rng_seed=0)
    assert ok["reason"] == "" and np.isfinite(ok["value"])


def _scoring_world(judges=("good", "broken"), variants=("baseline", "descending", "letter")):
    items = [f"i{k}" for k in range(8)]
    gold = [1, 2, 3, 4, 5, 1, 2, 3]
    rows = []
    for judge in judges:
        for variant in variants:
            for k, i in enumerate(items):
                ok = judge == "good"
                rows.append({"dataset": "own", "judge": judge, "item_id": i, "variant": variant, "repeat": 0,
                             "score": float(gold[k]) if ok else -1.0, "status": "ok" if ok else "unparsed"})
    return items, gold, pd.DataFrame(rows)


def test_scoring_tables_keep_every_judge_of_a_data_set_whose_gold_judge_gave_no_score():
    from judgelab.scoring.metrics import (
        AGGREGATION_COLUMNS,
        TABLE3_COLUMNS,
        aggregation_table,
        correlation_tables,
        gold_frame,
        gold_gaps,
    )

    items, gold, scores = _scoring_world()
    item_table = pd.DataFrame({"dataset": "own", "item_id": items, "gold_gpt4": np.nan, "human_score": np.nan,
                               "design_score": [float(g) for g in gold]})
    gold_scores = pd.DataFrame([{"dataset": "own", "item_id": i, "judge": "oracle", "repeat": r, "score": -1,
                                 "status": "unparsed"} for i in items for r in range(3)])
    golds = gold_frame(item_table, gold_scores)
    assert set(golds["gold_source"]) == {"design"}  # the gold judge gave no gold score at all
    gaps = gold_gaps(gold_scores, golds)
    why = "no gold score: gold judge oracle: 24 of 24 unparsed"
    assert gaps.to_dict("records") == [{"dataset": "own", "gold_source": "gold_judge", "reason": why}]
    t3, fl = correlation_tables(scores, golds, n_boot=50, gaps=gaps)
    assert list(t3.columns) == TABLE3_COLUMNS
    gj = t3[t3["gold_source"] == "gold_judge"].set_index(["judge", "variant"])
    assert len(gj) == 6 and set(gj["reason"]) == {why}  # both judges x three variants, not dropped
    assert gj.loc[("good", "baseline"), "n"] == 8
    for c in ("rho", "r", "rho_ci_low", "delta_rho", "delta_ci_low", "delta_r"):
        assert gj[c].isna().all(), c
    d = t3[t3["gold_source"] == "design"].set_index(["judge", "variant"])
    assert d.loc[("good", "baseline"), "reason"] == "" and d.loc[("good", "baseline"), "rho"] == pytest.approx(1.0)
    f = fl[fl["gold_source"] == "gold_judge"]
    assert len(f) and set(f["reason"]) == {why} and f["fluctuation"].isna().all() and not f["significant"].any()
    agg = aggregation_table(scores, golds, {"order": ["baseline", "descending"]}, ["mean"], n_boot=50, gaps=gaps)
    assert list(agg.columns) == AGGREGATION_COLUMNS
    a = agg[agg["gold_source"] == "gold_judge"]
    assert set(a["judge"]) == {"good", "broken"} and set(a["reason"]) == {why} and a["rho_aggregate"].isna().all()
    # without gaps the tables are as before: no gold_judge row
    assert "gold_judge" not in set(correlation_tables(scores, golds, n_boot=20)[0]["gold_source"])


def test_scoring_aggregation_and_fluctuation_keep_a_judge_without_a_score():
    from judgelab.scoring.metrics import aggregation_table, correlation_tables

    items, gold, scores = _scoring_world()
    golds = pd.DataFrame({"dataset": "own", "gold_source": "design", "item_id": items, "gold": gold})
    agg = aggregation_table(scores, golds, {"order": ["baseline", "descending", "letter"]}, ["mean", "majority"],
                            n_boot=50).set_index(["judge", "aggregator"])
    assert agg.loc[("good", "mean"), "reason"] == "" and agg.loc[("good", "mean"), "rho_aggregate"] == pytest.approx(1)
    for a in ("mean", "majority"):
        b = agg.loc[("broken", a)]
        assert b["reason"] == "baseline: no parsable score: 8 of 8 unparsed" and b["n"] == 0 and not b["improves"]
        for c in ("rho_aggregate", "rho_baseline", "delta_rho", "delta_ci_low", "delta_ci_high"):
            assert np.isnan(b[c]), (a, c)
    # a judge with baseline scores but none under the set's other variants
    half = scores.copy()
    bad = (half["judge"] == "good") & (half["variant"] != "baseline")
    half.loc[bad, "score"], half.loc[bad, "status"] = -1.0, "refusal"
    agg = aggregation_table(half, golds, {"order": ["descending", "letter"]}, ["mean"], n_boot=20)
    assert agg.set_index("judge").loc["good", "reason"] == \
        "every variant of the set: no parsable score: 16 of 16 refused"
    _, fl = correlation_tables(scores, golds, n_boot=50)
    f = fl.set_index(["judge", "family"])
    assert f.loc[("good", "all"), "reason"] == ""
    assert f.loc[("broken", "all"), "reason"] == "baseline: no parsable score: 8 of 8 unparsed"
    assert np.isnan(f.loc[("broken", "all"), "fluctuation"])


def test_scoring_stability_keeps_a_gold_judge_without_a_score():
    from judgelab.scoring.metrics import stability_table

    rows = [{"dataset": "own", "judge": j, "item_id": f"i{i}", "repeat": r, "score": s if j == "good" else -1,
             "status": "ok" if j == "good" else "unparsed", "simulated": False}
            for j in ("good", "broken") for i, s in enumerate([1, 2, 3, 4, 5, 2]) for r in range(3)]
    items = pd.DataFrame(columns=["dataset", "gpt4_1", "gpt4_2", "gpt4_3"])
    tab = stability_table(items, pd.DataFrame(rows), n_boot=20).set_index("judge")
    assert tab.loc["good", "reason"] == "" and tab.loc["good", "exact_agreement"] == 1.0
    b = tab.loc["broken"]
    assert b["reason"] == "no parsable score: 18 of 18 unparsed" and b["n_items"] == 6 and b["n_unparsed"] == 18
    for c in ("exact_agreement", "exact_ci_low", "exact_wilson_low", "alpha_ordinal", "pairwise_agreement",
              "loo_rho_mean"):
        assert np.isnan(b[c]), c


def _strategy_world(n=20):
    from tests.strategies.test_mutation_analysis import _sv_rows

    gold = ["A" if i % 2 else "B" for i in range(n)]
    flip = {"A": "B", "B": "A"}
    rng = np.random.default_rng(3)

    def noisy(p):
        return [g if rng.random() > p else flip[g] for g in gold]

    rows = (_sv_rows("d", "good", "B0", noisy(0.3), gold) + _sv_rows("d", "good", "S1", noisy(0.2), gold)
            + _sv_rows("d", "good", "S4", [""] * n, gold)  # every S4 answer failed
            + _sv_rows("d", "nobase", "B0", [""] * n, gold) + _sv_rows("d", "nobase", "S1", noisy(0.2), gold))
    return pd.DataFrame(rows), n


def test_strategies_mcnemar_and_mde_keep_a_comparison_without_a_verdict():
    from judgelab.strategies.analysis import mcnemar_table, mde_table

    sv, n = _strategy_world()
    why = f"no parsable verdict: {n} of {n} without a usable verdict"
    mcn = mcnemar_table(sv).set_index(["judge", "strategy"])
    assert mcn.loc[("good", "S1"), "reason"] == "" and np.isfinite(mcn.loc[("good", "S1"), "p"])
    s4 = mcn.loc[("good", "S4")]
    assert s4["reason"] == f"S4: {why}" and s4["n"] == n and not s4["significant"]
    for c in ("agreement", "agreement_B0", "delta_pp", "b", "c", "chi2", "p", "p_holm"):
        assert np.isnan(s4[c]), c  # not "a significant drop to 0 % agreement"
    assert mcn.loc[("nobase", "S1"), "reason"] == f"B0: {why}" and np.isnan(mcn.loc[("nobase", "S1"), "p"])
    mde = mde_table(mcn.reset_index()).set_index("judge")
    assert mde.loc["good", "reason"] == "" and np.isfinite(mde.loc["good", "discordance_mean"])
    good_s1 = mcn.loc[("good", "S1")]
    assert mde.loc["good", "discordance_mean"] == pytest.approx((good_s1["b"] + good_s1["c"]) / n)  # S4 not in it
    assert mde.loc["nobase", "reason"] == f"B0: {why}" and mde.loc["nobase", "n"] == n
    for c in ("agreement_B0", "discordance_mean", "mde_pp", "mde_pp_max"):
        assert np.isnan(mde.loc["nobase", c]), c


def test_strategies_mixed_model_keeps_a_strategy_without_a_verdict_out_of_the_fit():
    from judgelab.strategies.analysis import mixed_table

    sv, n = _strategy_world()
    why = f"no parsable verdict: {n} of {n} without a usable verdict"
    mix = mixed_table(sv, n_nodes=8).set_index(["judge", "strategy"])
    assert mix.loc[("good", "S1"), "reason"] == "" and np.isfinite(mix.loc[("good", "S1"), "lpm_coef"])
    assert mix.loc[("good", "S1"), "n_obs"] == 2 * n  # B0 and S1: the failed S4 is not modelled
    s4 = mix.loc[("good", "S4")]
    assert s4["reason"] == f"S4: {why}" and not s4["significant"] and not s4["separation"]
    for c in ("lpm_coef", "lpm_se", "lpm_p", "logit_coef", "odds_ratio", "lpm_p_holm"):
        assert np.isnan(s4[c]), c
    b = mix.loc[("nobase", "S1")]
    assert b["reason"] == f"B0: {why}" and np.isnan(b["lpm_coef"]) and np.isnan(b["logit_coef"])


def test_strategies_replay_s1_keeps_a_judge_without_a_verdict():
    from judgelab.strategies.analysis import replay_s1_table
    from tests.strategies.test_mutation_analysis import _sv_rows

    gold = ["A", "B", "A", "B", "A", "B"]
    calls, sv = [], []
    for judge, ok in (("good", True), ("broken", False)):
        for i, g in enumerate(gold):
            for order in ("AB", "BA"):
                v = g if ok else ""
                calls.append({"dataset": "d", "judge": judge, "kind": "pairwise", "role": "baseline",
                              "temperature": np.nan, "pair_id": f"p{i}", "order": order, "verdict": v,
                              "correct": v == g, "status": "ok" if ok else "unparsed",
                              "verdict_shown": "" if not v else (v if order == "AB" else {"A": "B", "B": "A"}[v])})
        for strat in ("B0", "S1"):
            sv += _sv_rows("d", judge, strat, gold if ok else [""] * 6, gold)
    out = replay_s1_table(pd.DataFrame(calls), pd.DataFrame(sv)).set_index("judge")
    assert out.loc["good", "reason"] == "" and out.loc["good", "agreement_S1"] == 1.0
    b = out.loc["broken"]
    assert b["reason"] == "baseline calls: no parsable verdict: 12 of 12 unparsed" and b["S1_no_verdict"] == 6
    for c in ("acc_average", "positional_agreement_all", "agreement_B0", "agreement_S1", "delta_pp", "chi2", "p"):
        assert np.isnan(b[c]), c  # not 100 % positional agreement from "" == ""


def test_strategies_human_gap_keeps_a_judge_without_a_verdict():
    from judgelab.strategies.human import human_gap_table
    from tests.strategies.test_mutation_analysis import _sv_rows

    ids = [f"p{i}" for i in range(4)]
    pairs = pd.DataFrame({"pair_id": ids, "target_side": ["A", "B", "A", "B"]})
    ann = pd.DataFrame({"annotator": ["h1"] * 4 + ["h2"] * 4, "pair_id": ids * 2,
                        "choice": ["A", "B", "B", "tie", "A", "A", "B", "B"]})
    ann["decoded"] = ["markdown", "markdown", "prose", "tie", "markdown", "prose", "prose", "markdown"]
    sv = pd.DataFrame(_sv_rows("d", "good", "B0", ["A", "B", "B", "A"], ["A"] * 4)
                      + _sv_rows("d", "broken", "B0", [""] * 4, ["A"] * 4))
    out = human_gap_table(ann, sv, pairs, exclude_constant_slot=False)
    judges = out[out["row"] == "judge"].set_index("who")
    assert judges.loc["good", "reason"] == "" and judges.loc["good", "markdown_rate"] == 0.5
    b = judges.loc["broken"]
    assert b["reason"] == "no parsable verdict: 4 of 4 without a usable verdict" and b["no_verdict_rate"] == 1.0
    for c in ("markdown_rate", "prose_rate", "tie_rate", "gap_vs_human"):
        assert np.isnan(b[c]), c
    assert (out.loc[out["row"] != "judge", "reason"] == "").all()


def _topk_eval_world():
    """Full-data and budget evaluation rows of two judges on two oracles: ``broken`` gave no usable
    verdict (its recalls are those of a ranking fitted on no comparison)."""
    full, budget = [], []
    for judge, n_cmp in (("good", 40), ("broken", 0)):
        for o in range(3):
            for est, lam, rec in (("naive", np.nan, 0.4 + 0.1 * o), ("aware", 0.1, 0.6 + 0.1 * o),
                                  ("swap_majority", np.nan, 0.5), ("resid", np.nan, 0.5),
                                  ("aware_hier", 0.1, 0.6), ("gated", np.nan, 0.6)):
                full.append({"judge": judge, "family": "f", "simulated": False, "oracle": o, "k": 2, "estimator": est,
                             "lam_b": lam, "recall": rec, "tau2": 1.0, "gate_enabled": True,
                             "n_comparisons": n_cmp, "n_unusable": 40 - n_cmp})
            for rule in ("topk", "global", "round_robin"):
                for model in ("aware", "naive"):
                    for seed in range(2):
                        budget.append({"judge": judge, "oracle": o, "seed": seed, "model": model, "rule": rule,
                                       "estimator": model, "budget": 10, "recall": 0.5 + 0.1 * o + 0.05 * seed,
                                       "n_usable": 10 if n_cmp else 0, "cost_per_call": 0.01})
    return pd.DataFrame(full), pd.DataFrame(budget)


def test_topk_tables_2_to_4_shrinkage_and_frontier_keep_a_judge_without_a_verdict():
    from judgelab.topk import tables as T

    full, budget = _topk_eval_world()
    why = "no parsable verdict: 120 of 120 without a usable verdict"
    assert T.judge_reasons(full) == {"broken": why}
    reasons = T.judge_reasons(full)
    t2 = T.table_correctness(full, k=2, lam_b=0.1).set_index("judge")
    assert t2.loc["good", "reason"] == "" and t2.loc["good", "delta"] == pytest.approx(0.2)
    b = t2.loc["broken"]
    assert b["reason"] == why and b["n"] == 3
    for c in ("naive", "aware", "delta", "ci_low", "ci_high", "t", "p", "swap_majority", "resid", "aware_hier",
              "gated", "gate_enabled_rate"):
        assert np.isnan(b[c]), c
    assert t2.loc["pooled", "n"] == 3 and t2.loc["pooled", "reason"] == ""  # the unscored judge is not pooled
    sh = T.table_shrinkage(full, k=2)
    assert set(sh.loc[sh["judge"] == "broken", "reason"]) == {why} and sh.loc[sh["judge"] == "broken", "recall"].isna().all()
    assert (sh.loc[sh["judge"] == "good", "reason"] == "").all() and sh.loc[sh["judge"] == "good", "recall"].notna().all()
    for tab, stats in ((T.table_budget(budget, reasons=reasons), ("recall", "se", "p_vs_global", "p_vs_round_robin")),
                       (T.table_ablation(budget, at_budget=10, reasons=reasons), ("recall", "se")),
                       (T.table_recall_at_k(full, lam_b=0.1), ("naive", "aware")),
                       (T.table_frontier(budget, full, n_items=5, k=2, lam_b=0.1), ("recall",))):
        br, gd = tab[tab["judge"] == "broken"], tab[tab["judge"] == "good"]
        assert len(br) == len(gd) > 0 and set(br["reason"]) == {why} and set(gd["reason"]) == {""}
        for c in stats:
            assert br[c].isna().all(), c
        assert gd["recall" if "recall" in gd else "naive"].notna().all()
    fr = T.table_frontier(budget, full, n_items=5, k=2, lam_b=0.1)
    assert fr.loc[fr["judge"] == "broken", "cost_usd"].notna().all()  # the money was spent all the same


def test_topk_rank_summary_of_a_judge_without_a_verdict_says_why(tmp_path):
    from dataclasses import replace

    from judgelab.cache import CallCache
    from judgelab.config import JudgeSpec
    from judgelab.judges import make_judge
    from judgelab.judges.simulated import SimulatedJudge
    from judgelab.topk.experiment import single_threaded_blas
    from judgelab.topk.live import LiveSettings, rank_live, result_tables
    from judgelab.topk.userpool import load_user_pool
    from tests.conftest import REPO
    from tests.topk.test_live import _entry

    class Mute(SimulatedJudge):
        def answer(self, requests):
            return [replace(r, text="I cannot tell.", logprobs=None) for r in super().answer(requests)]

    pool = load_user_pool(REPO / "data" / "topk" / "example_pool.jsonl", ["length_std"])
    out = {}
    with single_threaded_blas():
        for name, judge in (("good", make_judge(JudgeSpec.from_dict(_entry()))),
                            ("broken", Mute(JudgeSpec.from_dict(_entry(name="mute"))))):
            with CallCache(tmp_path / f"{name}.sqlite") as cache:
                res = rank_live(pool, judge, cache, LiveSettings(k=5, budget_calls=60, stop_threshold=0.99))
            out[name] = result_tables(res, pool_name="example", judge=name, simulated=True)["summary"].iloc[0]
    g, b = out["good"], out["broken"]
    assert g["reason"] == "" and np.isfinite(g["recall"]) and np.isfinite(g["expected_recall"])
    assert b["reason"] == f"no parsable verdict: {b['calls']} of {b['calls']} unparsed" and b["n_unusable"] == b["calls"]
    fitted = [c for c in b.index if c.startswith(("c_", "kappa", "corr_naive_", "gate_agree_"))
              and not c.endswith("_status")]
    assert fitted
    for c in ("expected_recall", "p_set", "recall", "recall_naive", *fitted):
        assert np.isnan(b[c]), c  # not a recall or a posterior from the prior alone


def _rbd_loop_world():
    """Loop items and iteration-1 trajectories: evaluator ``good`` with a working detector ``det`` and
    a mute one ``mute`` (every label unparsed), and evaluator ``broken`` with no verdict at all."""
    from judgelab.rbd.loop import ITEM_COLUMNS, TRAJECTORY_COLUMNS

    items, traj = [], []
    for judge, initial in (("good", [0, 1, 1]), ("broken", [-1, -1, -1])):
        for det in ("det", "mute"):
            for i, v in enumerate(initial):
                items.append({"judge": judge, "detector": det, "set": "verbosity", "item_id": f"i{i}",
                              "bias_type": "verbosity", "verdict_D": 0, "gold_D": 0, "initial": [v], "gold": [0]})
                truth = "yes" if v == 1 else "no"
                lab = "" if det == "mute" else truth
                flagged = lab == "yes"
                traj.append({"judge": judge, "detector": det, "prompting": "rbd", "set": "verbosity",
                             "item_id": f"i{i}", "bias_type": "verbosity", "iteration": 1, "verdict_before": [v],
                             "truth": truth, "detector_label": lab,
                             "detector_status": "unparsed" if det == "mute" else "ok", "flagged": flagged,
                             "revision_status": "ok" if flagged else "", "verdict_after": [0] if flagged else [v],
                             "detector_tokens_out": 1, "detector_latency_s": 0.0, "detector_cost_usd": 0.0,
                             "revision_cost_usd": 0.0})
    return pd.DataFrame(items, columns=ITEM_COLUMNS), pd.DataFrame(traj, columns=TRAJECTORY_COLUMNS)


def test_rbd_loop_table2_and_behaviour_keep_an_evaluator_or_detector_without_an_answer():
    from judgelab.rbd.loop import BEHAVIOUR_COLUMNS, TABLE2_COLUMNS, behaviour, table2

    items, traj = _rbd_loop_world()
    t2 = table2(items, traj, 1)
    assert list(t2.columns) == TABLE2_COLUMNS
    t2 = t2.set_index(["judge", "detector"])
    ok = t2.loc[("good", "det")]
    assert ok["reason"] == "" and ok["acc_without"] == pytest.approx(1 / 3) and ok["acc_with"] == 1.0
    assert ok["detector_accuracy"] == 1.0
    mute = t2.loc[("good", "mute")]
    assert mute["reason"] == "detector: no parsable label: 3 of 3 unparsed" and mute["n"] == 3
    assert mute["acc_without"] == pytest.approx(1 / 3)  # the evaluator's own accuracy stands
    for c in ("acc_with", "consistency_with", "primary_with", "primary_gain", "detector_accuracy", "detector_recall",
              "detector_f1"):
        assert np.isnan(mute[c]), c  # not "no gain" and a detector recall of 0 from no label
    for det in ("det", "mute"):
        b = t2.loc[("broken", det)]
        assert b["reason"] == "no parsable verdict: 3 of 3 without a usable verdict" and b["n"] == 3
        for c in ("acc_without", "acc_with", "consistency_without", "primary_gain", "detector_accuracy"):
            assert np.isnan(b[c]), (det, c)  # not 0 % accuracy from no verdict
    beh = behaviour(items, traj)
    assert list(beh.columns) == BEHAVIOUR_COLUMNS
    beh = beh[beh["set"] == "verbosity"].set_index(["judge", "detector"])
    assert beh.loc[("good", "det"), "reason"] == "" and beh.loc[("good", "det"), "stubbornness"] == 0.0
    assert beh.loc[("good", "mute"), "reason"] == "detector: no parsable label: 3 of 3 unparsed"
    assert beh.loc[("broken", "det"), "reason"] == "no parsable verdict: 3 of 3 without a usable verdict"
    flagless = behaviour(items, traj.assign(detector_label="no", flagged=False, revision_status=""))
    assert set(flagless.loc[flagless["judge"] == "good", "reason"]) == {"no verdict flagged by the detector"}
    assert beh.loc[[("good", "mute"), ("broken", "det")], "stubbornness"].isna().all()


def _uda_world():
    """Three judges that rank four models, and ``broken``, whose every verdict was unparsed: the Elo never
    updated it, so its scores are the initial 1200 for every model and method (what scores.parquet holds)."""
    models, good = ["a", "b", "c", "d"], ["g1", "g2", "g3"]
    base = pd.DataFrame([[1300, 1200, 1100, 1250], [1280, 1240, 1060, 1230], [1350, 1150, 1150, 1190]],
                        index=good, columns=models, dtype=float)
    mats = {("baseline", "", "all"): base, ("uda", "d", "all"): 1200 + 0.5 * (base - 1200),
            ("baseline", "", "heldout"): base + 5, ("uda", "d", "heldout"): 1200 + 0.7 * (base - 1200)}
    rows = [{"dataset": "d", "method": m, "trained_on": src, "split": sp, "judge": j, "model": mo,
             "score": 1200.0 if j == "broken" else float(S.loc[j, mo])}
            for (m, src, sp), S in mats.items() for j in [*good, "broken"] for mo in models]
    return pd.DataFrame(rows), models, [*good, "broken"], base, mats


def test_uda_per_judge_tables_keep_a_judge_without_a_verdict_with_no_initial_rating(tmp_path):
    """matrix, alignment, reference and self-preference: the broken judge's row is NaN with the reason (not
    1200 for every model, an MSE to the consensus, a self-preference deviation from no battle), and the
    consensus, averages and the other judges' mean are over the scored judges."""
    from judgelab.uda.metrics import alignment_table, matrix_table, reference_table, self_preference_table
    from judgelab.uda.study import judge_reasons

    scores, models, judges, base, _ = _uda_world()
    verdicts = pd.DataFrame([{"judge": j, "verdict": "" if j == "broken" else "A",
                              "status": "unparsed" if j == "broken" else "ok"} for j in judges for _ in range(6)])
    reasons = judge_reasons(verdicts, [*judges, "silent"])  # a listed judge with no verdict row has none either
    assert reasons == {"broken": REASON, "silent": "no verdicts recorded"}
    ref = pd.Series({"a": 3.0, "b": 1.0, "c": 0.0, "d": 2.0})
    mt = matrix_table(scores, "d", models, judges, ref, "ref", reasons).set_index(["method", "judge"])
    assert mt.loc[("baseline", "broken"), models].isna().all() and mt.loc[("baseline", "broken"), "reason"] == REASON
    assert mt.loc[("uda", "broken"), models].isna().all()
    assert mt.loc[("baseline", "g1"), "a"] == 1300 and mt.loc[("baseline", "g1"), "reason"] == ""
    assert mt.loc[("ref", "ref"), "reason"] == ""
    G = base.mean(axis=0)  # the baseline consensus of the scored judges
    al = alignment_table(scores, "d", models, judges, reasons).set_index(["method", "judge"])
    b = al.loc[("baseline", "broken")]
    assert np.isnan(b["mse_consensus"]) and np.isnan(b["pearson_consensus"]) and b["reason"] == REASON
    mse = [float(((base.loc[j] - G) ** 2).mean()) for j in base.index]
    assert al.loc[("baseline", "g1"), "mse_consensus"] == pytest.approx(mse[0])
    assert al.loc[("baseline", "Average"), "mse_consensus"] == pytest.approx(np.mean(mse))
    assert al.loc[("baseline", "Average"), "reason"] == ""
    rt = reference_table(scores, "d", models, judges, ref, reasons).set_index(["method", "judge"])
    assert np.isnan(rt.loc[("baseline", "broken"), "pearson_reference"])
    assert rt.loc[("baseline", "broken"), "reason"] == REASON and rt.loc[("baseline", "g2"), "reason"] == ""
    assert rt.loc[("baseline", "consensus"), "pearson_reference"] == pytest.approx(np.corrcoef(G, ref[models])[0, 1])
    sp = self_preference_table(scores, "d", models, judges, {"broken": "a", "g1": "a"}, reasons)
    sp = sp[sp["method"] == "baseline"].set_index("judge")
    assert np.isnan(sp.loc["broken", "deviation_pct"]) and sp.loc["broken", "reason"] == REASON
    others = base.loc[["g2", "g3"], "a"].mean()  # not pulled towards 1200 by the broken judge
    assert sp.loc["g1", "others_mean"] == pytest.approx(others) and sp.loc["g1", "reason"] == ""
    assert sp.loc["g1", "deviation_pct"] == pytest.approx(100 * (1300 - others) / others)
    # the figures read these tables: the reason column is no model, the blank row an empty band
    from judgelab.plots.uda import heatmap_figure, pearson_figure

    heatmap_figure(mt.reset_index(), str(tmp_path / "h.png"), title="t", simulated=True, config_hash="x",
                   reference_name="ref")
    pearson_figure(rt.reset_index(), str(tmp_path / "p.png"), title="t", reference_name="ref", simulated=True,
                   config_hash="x")
    assert (tmp_path / "h.png").stat().st_size > 10_000 and (tmp_path / "p.png").stat().st_size > 10_000


def test_uda_spreads_across_judges_leave_out_a_judge_without_a_verdict():
    """std, methods and controls: the inter-judge std, consensus and Pearson are over the scored judges
    (``n_judges`` says how many), not over a constant initial-rating row; with one scored judge there
    is no std, and the reason says so."""
    from judgelab.uda.metrics import controls_table, methods_table, std_table

    scores, models, judges, base, mats = _uda_world()
    reasons = {"broken": REASON}
    sd_b = base.std(axis=0, ddof=1)
    uda = mats[("uda", "d", "all")]
    std = std_table(scores, "d", models, judges, reasons).set_index(["row", "method"])
    assert std.loc[("std", "baseline"), "mean"] == pytest.approx(sd_b.mean())
    assert std.loc[("std", "baseline"), "a"] == pytest.approx(sd_b["a"])
    assert std.loc[("reduction_pct", "uda"), "mean"] == pytest.approx(50.0)  # a halving of the three judges' spread
    assert (std["n_judges"] == 3).all() and (std["reason"] == "").all()
    ref = pd.Series({"a": 3.0, "b": 1.0, "c": 0.0, "d": 2.0})
    t3 = methods_table(scores, "d", models, judges, ref, "ref", reasons).set_index("method")
    assert t3.loc["baseline", "mean_inter_judge_std"] == pytest.approx(sd_b.mean())
    assert t3.loc["uda", "consensus_spread"] == pytest.approx(uda.mean(axis=0).std(ddof=1))
    r = np.mean([np.corrcoef(base.loc[j], ref[models])[0, 1] for j in base.index])
    assert t3.loc["baseline", "mean_pearson_reference"] == pytest.approx(r)
    assert t3.loc["baseline", "n_judges"] == 3 and t3.loc["baseline", "reason"] == ""
    ctl = controls_table(scores, "d", models, judges, reasons).set_index(["split", "method"])
    held = mats[("uda", "d", "heldout")]
    assert ctl.loc[("heldout", "uda"), "mean_inter_judge_std"] == pytest.approx(held.std(axis=0, ddof=1).mean())
    assert ctl.loc[("heldout", "uda"), "std_reduction_pct"] == pytest.approx(30.0)
    assert (ctl["n_judges"] == 3).all()
    from judgelab.uda.metrics import self_preference_table
    from judgelab.uda.study import summary_row

    sp = self_preference_table(scores, "d", models, judges, {"broken": "a", "g1": "a"}, reasons)
    summ = {r["method"]: r for r in summary_row("d", t3.reset_index(), sp, ctl.reset_index())}
    assert summ["uda"]["n_judges"] == 3 and summ["baseline"]["mean_inter_judge_std"] == pytest.approx(sd_b.mean())
    others = base.loc[["g2", "g3"], "a"].mean()  # the range is g1's deviation alone, the broken judge has none
    assert summ["baseline"]["self_preference_min_pct"] == pytest.approx(100 * (1300 - others) / others)
    assert summ["baseline"]["self_preference_max_pct"] == summ["baseline"]["self_preference_min_pct"]
    # one scored judge: no spread to take, and the reason says why
    lone = {**reasons, "g2": "x", "g3": "y"}
    one = std_table(scores, "d", models, judges, lone).set_index(["row", "method"]).loc[("std", "baseline")]
    assert np.isnan(one["mean"]) and one["n_judges"] == 1
    assert one["reason"] == "inter-judge std needs 2 judges with a usable verdict: 1 of 4"
    t3 = methods_table(scores, "d", models, judges, ref, "ref", lone).set_index("method")
    assert np.isnan(t3.loc["uda", "mean_inter_judge_std"]) and t3.loc["uda", "reason"].startswith("inter-judge std needs")
