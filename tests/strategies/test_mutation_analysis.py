"""The strategies study's tables on small hand-made verdict tables (paper 003, Secs. 3.5, 4; App. D-F).

Each expected value is worked out by hand from the paper's definitions: agreement is an exact
label match and an instance without a verdict is wrong; Cohen's kappa treats "no verdict" as its
own category; a bias score is P(target) - P(other side) with ties and missing verdicts counted
for neither side, and its interval resamples whole questions; McNemar uses the continuity-
corrected statistic (|b - c| - 1)^2 / (b + c) on the discordant pairs; Holm runs over the
comparisons of one data set that are in the configured family; the minimum detectable effect
is Connor's at the observed discordance.  Every interval is the percentile bootstrap of its own
cell's rows with that cell's own generator, so it does not depend on the other cells.
"""

from __future__ import annotations

import logging
import math
import zlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import judgelab.strategies.analysis as an
from judgelab.stats.bias import bias_score
from judgelab.stats.mcnemar import holm, mcnemar_mde
from judgelab.strategies.analysis import (
    agreement_table,
    bias_table,
    bootstrap_ci,
    category_table,
    cell_seed,
    cross_bias_table,
    in_family,
    kappa,
    landis_koch,
    length_ablation_table,
    mcnemar_table,
    mde_table,
    mixed_table,
    topic_style_table,
)

# --- bootstrap, kappa, labels -------------------------------------------------------------------


def test_bootstrap_ci_edges():
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    assert bootstrap_ci([1.0, 1.0, 1.0]) == (1.0, 1.0)
    # two different values: the resample means are 0, 1/2 and 1, so the 95% interval spans [0, 1]
    assert bootstrap_ci([0.0, 1.0]) == (0.0, 1.0)


def test_bootstrap_ci_level_resamples_and_generator():
    x = (np.random.default_rng(1).random(2000) < 0.3).astype(float)
    se = math.sqrt(x.mean() * (1 - x.mean()) / len(x))
    lo, hi = bootstrap_ci(x, rng=np.random.default_rng(5))
    assert lo < x.mean() < hi
    assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.15)  # the normal-theory width
    lo50, hi50 = bootstrap_ci(x, alpha=0.5, rng=np.random.default_rng(5))
    assert hi50 - lo50 == pytest.approx(2 * 0.6745 * se, rel=0.15)
    # one resample: both percentiles are that resample's mean
    one = bootstrap_ci(x, n_resamples=1, rng=np.random.default_rng(2))
    assert one[0] == one[1] != x.mean()
    # the generator passed is the one used; none passed is a fixed default
    assert bootstrap_ci(x[:60], rng=np.random.default_rng(5)) == bootstrap_ci(x[:60], rng=np.random.default_rng(5))
    assert bootstrap_ci(x[:60]) == bootstrap_ci(x[:60])
    assert bootstrap_ci(x[:60], n_resamples=25) == bootstrap_ci(x[:60], n_resamples=25)  # sparse: seed-sensitive
    draws = {bootstrap_ci(x[:60], n_resamples=50, rng=np.random.default_rng(s)) for s in range(8)}
    assert len(draws) > 1


def test_cell_seed_is_deterministic_and_per_cell():
    a = cell_seed(3, "d", "j", "B0").random(4)
    assert (a == cell_seed(3, "d", "j", "B0").random(4)).all()
    for other in (cell_seed(4, "d", "j", "B0"), cell_seed(3, "d", "j", "S1"), cell_seed(3, "d", "k", "B0")):
        assert not (a == other.random(4)).any()


@pytest.mark.parametrize(("k", "label"), [
    (-0.01, "Poor"), (0.0, "Slight"), (0.2, "Slight"), (0.2001, "Fair"), (0.4, "Fair"), (0.4001, "Moderate"),
    (0.6, "Moderate"), (0.6001, "Substantial"), (0.8, "Substantial"), (0.8001, "Almost perfect"), (1.0, "Almost perfect"),
    (float("nan"), ""),
])
def test_landis_koch_bands(k, label):
    # Landis & Koch (1977): < 0 poor, 0-.20 slight, .21-.40 fair, .41-.60 moderate, .61-.80 substantial
    assert landis_koch(k) == label


def test_kappa_counts_no_verdict_as_its_own_category():
    # po = 3/5 (A/A, B/B, tie/tie); verdict margins A2 B1 tie1 none1, gold A2 B2 tie1: pe = 7/25
    v, g = ["A", "A", "B", "", "tie"], ["A", "B", "B", "A", "tie"]
    assert kappa(v, g) == pytest.approx((0.6 - 0.28) / 0.72)
    assert kappa(["A", "A", "B", None, "tie"], g) == kappa(v, g)  # None is no verdict
    assert kappa(["A", "A", "B", "maybe", "tie"], g) == kappa(v, g)  # so is anything else
    assert kappa(["A", "B", "B", "A"], ["A", "B", "B", "A"]) == pytest.approx(1.0)
    assert math.isnan(kappa(["A", "A"], ["A", "A"]))  # one category: kappa undefined
    # a gold label no verdict uses still counts: po = 2/3, pe = (2 * 1 + 1 * 1 + 0 * 1) / 9
    assert kappa(["A", "A", "B"], ["A", "tie", "B"]) == pytest.approx((2 / 3 - 1 / 3) / (1 - 1 / 3))
    with pytest.raises(ValueError):
        kappa(["A", "B"], ["A", "B", "tie"])  # verdicts and gold must pair up


# --- agreement and category tables --------------------------------------------------------------

GOLD = ["A", "A", "B", "tie", "B"]


def _sv_rows(ds, judge, strat, verdicts, gold, *, family="f", simulated=True, calls=None, missing=None,
             counts=None, cats=None, tokens=None):
    rows = []
    for i, (v, g) in enumerate(zip(verdicts, gold, strict=True)):
        row = {"dataset": ds, "pair_id": f"p{i}", "judge": judge, "family": family, "simulated": simulated,
               "strategy": strat, "verdict": v, "expected_verdict": g, "correct": v == g, "has_verdict": v != "",
               "n_calls": (calls or [1] * len(gold))[i], "n_missing_calls": (missing or [0] * len(gold))[i],
               "category": (cats or ["c"] * len(gold))[i],
               "tokens_in": (tokens or [0] * len(gold))[i], "tokens_out": 2 * (tokens or [0] * len(gold))[i],
               "cost_usd": 0.001 * (tokens or [0] * len(gold))[i]}
        for k in ("refusal", "error", "two_verdicts", "no_json", "prose_only", "broken_json"):
            row[f"n_{k}"] = (counts or {}).get(k, [0] * len(gold))[i]
        rows.append(row)
    return rows


def agreement_fixture() -> pd.DataFrame:
    rows = _sv_rows("f", "j", "B0", ["B"], ["B"])  # listed first: tables are sorted, not in input order
    rows += _sv_rows("d", "j", "B0", ["A", "B", "", "tie", "A"], GOLD, tokens=[10, 20, 30, 40, 50],
                     counts={"refusal": [0, 0, 1, 0, 0], "two_verdicts": [0, 1, 0, 0, 0], "no_json": [1, 0, 0, 0, 0]})
    rows += _sv_rows("d", "j", "S1", ["A", "tie", "B", "tie", ""], GOLD, calls=[2, 2, 2, 1, 1], missing=[0, 0, 0, 1, 1],
                     tokens=[1, 1, 1, 1, 6],
                     counts={"error": [0, 0, 0, 1, 1], "prose_only": [1, 0, 0, 0, 0], "broken_json": [0, 0, 2, 0, 0],
                             "refusal": [0, 1, 0, 0, 0]})
    rows += _sv_rows("d", "k", "B0", ["A", "B", "B", "tie", "B"], GOLD, family="g", simulated=False)
    rows += _sv_rows("e", "j", "S1", ["A", "B", "A"], ["A", "A", "tie"])  # no baseline on e
    rows += _sv_rows("e", "m", "B0", ["B", "", "tie"], ["A", "A", "tie"])
    rows += _sv_rows("f", "k", "B0", ["A"], ["B"])
    return pd.DataFrame(rows)


def test_agreement_table_by_hand():
    out = agreement_table(agreement_fixture(), n_resamples=200, seed=4)
    cells = out[out["judge"] != "gold"].set_index(["dataset", "judge", "strategy"])
    b0 = cells.loc[("d", "j", "B0")]
    assert b0["n"] == 5 and b0["agreement"] == pytest.approx(0.4)  # A right, B wrong, none wrong, tie right
    assert (b0["family"], bool(b0["simulated"])) == ("f", True)
    assert (b0["n_A"], b0["n_B"], b0["n_tie"], b0["n_no_verdict"]) == (2, 1, 1, 1)
    assert b0["tie_pct"] == pytest.approx(0.2)
    assert b0["kappa"] == pytest.approx(0.12 / 0.72) and b0["kappa_label"] == "Slight"  # po .4, pe .28
    assert (b0["n_refusal"], b0["n_error"], b0["n_two_verdicts"], b0["n_no_json"]) == (1, 0, 1, 1)
    assert b0["n_malformed"] == 3 and b0["calls"] == 5 and b0["n_missing_calls"] == 0
    assert b0["tokens_in_per_instance"] == pytest.approx(30) and b0["tokens_out_per_instance"] == pytest.approx(60)
    assert b0["cost_per_instance"] == pytest.approx(0.03) and b0["calls_per_instance"] == pytest.approx(1.0)
    s1 = cells.loc[("d", "j", "S1")]
    assert s1["agreement"] == pytest.approx(0.6) and s1["delta_vs_B0"] == pytest.approx(0.2)
    assert (s1["calls"], s1["n_missing_calls"], s1["calls_per_instance"]) == (8, 2, pytest.approx(1.6))
    assert (s1["n_error"], s1["n_refusal"], s1["n_prose_only"], s1["n_broken_json"]) == (2, 1, 1, 2)
    assert s1["n_malformed"] == 6 and s1["tokens_in_per_instance"] == pytest.approx(2.0)
    assert (s1["n_tie"], s1["tie_pct"], s1["n_no_verdict"]) == (2, pytest.approx(0.4), 1)
    k = cells.loc[("d", "k", "B0")]
    assert k["agreement"] == pytest.approx(0.8) and (k["family"], bool(k["simulated"])) == ("g", False)
    assert k["delta_vs_B0"] == 0
    assert math.isnan(cells.loc[("e", "j", "S1"), "delta_vs_B0"])  # no baseline to compare with
    e = cells.loc[("e", "j", "S1")]
    assert (e["n_A"], e["n_B"], e["n_tie"], e["tie_pct"]) == (2, 1, 0, 0.0)
    m = cells.loc[("e", "m", "B0")]
    assert (m["n_A"], m["n_B"], m["n_tie"], m["n_no_verdict"], m["agreement"]) == (0, 1, 1, 1, pytest.approx(1 / 3))
    fk = cells.loc[("f", "k", "B0")]
    assert (fk["n_A"], fk["n_B"], fk["n_tie"], fk["agreement"]) == (1, 0, 0, 0.0)
    # gold rows: the label distribution of each data set's pairs, counted once per pair
    gold = out[out["judge"] == "gold"].set_index("dataset")
    assert (gold.loc["d", "n"], gold.loc["d", "n_A"], gold.loc["d", "n_B"], gold.loc["d", "n_tie"]) == (5, 2, 2, 1)
    assert gold.loc["d", "tie_pct"] == pytest.approx(0.2) and gold.loc["d", "strategy"] == ""
    assert (gold.loc["e", "n"], gold.loc["e", "n_tie"], gold.loc["e", "tie_pct"]) == (3, 1, pytest.approx(1 / 3))
    assert (gold.loc["e", "n_B"], gold.loc["f", "n_A"], gold.loc["f", "n_tie"], gold.loc["f", "n_B"]) == (0, 0, 0, 1)
    assert gold.loc["f", "tie_pct"] == 0.0
    # rows: per data set and judge, strategies in the paper's order, gold last; a fresh row index
    assert list(zip(out["dataset"], out["judge"], out["strategy"], strict=True)) == [
        ("d", "j", "B0"), ("d", "j", "S1"), ("d", "k", "B0"), ("e", "j", "S1"), ("e", "m", "B0"), ("f", "j", "B0"),
        ("f", "k", "B0"),
        ("d", "gold", ""), ("e", "gold", ""), ("f", "gold", "")]
    assert list(out.index) == list(range(len(out)))
    assert agreement_table(agreement_fixture().iloc[:0]).empty


def _random_cells(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(9)
    gold = list(rng.choice(["A", "B", "tie"], n))
    rows = []
    for ds in ("d", "e"):
        for judge in ("j", "k"):
            for strat in ("S10", "S2", "B0", "S1"):
                verdicts = [g if rng.random() < 0.6 else "B" for g in gold]
                rows += _sv_rows(ds, judge, strat, verdicts, gold, cats=list(rng.choice(["x", "y"], n)))
    return pd.DataFrame(rows).sample(frac=1.0, random_state=1)


def test_every_interval_is_its_own_cells_bootstrap():
    sv = _random_cells()
    agr = agreement_table(sv, n_resamples=25, alpha=0.1, seed=7)
    agr = agr[agr["judge"] != "gold"]
    cat = category_table(sv, n_resamples=25, alpha=0.1, seed=7)
    for (ds, judge, strat), g in sv.groupby(["dataset", "judge", "strategy"]):
        r = agr[(agr["dataset"] == ds) & (agr["judge"] == judge) & (agr["strategy"] == strat)].iloc[0]
        corr = g["correct"].to_numpy(float)
        assert (r["ci_low"], r["ci_high"]) == bootstrap_ci(corr, n_resamples=25, alpha=0.1,
                                                           rng=cell_seed(7, ds, judge, strat))
        for c, gc in g.groupby("category"):
            rc = cat[(cat["dataset"] == ds) & (cat["judge"] == judge) & (cat["strategy"] == strat)
                     & (cat["category"] == c)].iloc[0]
            assert rc["n"] == len(gc) and rc["agreement"] == pytest.approx(gc["correct"].mean())
            assert bool(rc["simulated"])
            assert (rc["ci_low"], rc["ci_high"]) == bootstrap_ci(gc["correct"].to_numpy(float), n_resamples=25,
                                                                 alpha=0.1, rng=cell_seed(7, ds, judge, strat, c))
    # one cell alone gives the same row: nothing depends on the other cells or on row order
    one = sv[(sv["dataset"] == "e") & (sv["judge"] == "k") & (sv["strategy"] == "S2")]
    alone = agreement_table(one, n_resamples=25, alpha=0.1, seed=7).iloc[0]
    full = agr[(agr["dataset"] == "e") & (agr["judge"] == "k") & (agr["strategy"] == "S2")].iloc[0]
    assert (alone["ci_low"], alone["ci_high"], alone["agreement"]) == (full["ci_low"], full["ci_high"], full["agreement"])
    # strategies in the paper's order (B0, S1, S2, ...), a strategy outside it last; judges sorted
    order = agr[(agr["dataset"] == "d") & (agr["judge"] == "j")]["strategy"].tolist()
    assert order == ["B0", "S1", "S2", "S10"]
    assert agr["judge"].tolist() == ["j"] * 4 + ["k"] * 4 + ["j"] * 4 + ["k"] * 4
    cj = cat[(cat["dataset"] == "e") & (cat["judge"] == "k")]
    assert cj["strategy"].drop_duplicates().tolist() == ["B0", "S1", "S2", "S10"]
    assert cj["category"].tolist() == ["x", "y"] * 4  # categories sorted within a strategy, whatever the row order
    single = category_table(sv[sv["pair_id"] == "p0"], n_resamples=25)  # one instance per cell
    assert (single["n"] == 1).all() and single["simulated"].all() and (single["ci_low"] == single["agreement"]).all()
    assert category_table(sv.iloc[:0]).empty


# --- bias scores on the controlled set ----------------------------------------------------------

# (pair_id, question, bias_type, subset, target_side, origin_a, origin_b, verdict, correct)
CONTROLLED = [
    ("P1", "q1", "POSITION", "identical", "A", "", "", "A", False),
    ("P2", "q2", "POSITION", "identical", "A", "", "", "A", False),
    ("P3", "q3", "POSITION", "identical", "A", "", "", "B", False),
    ("P4", "q4", "POSITION", "identical", "A", "", "", "tie", True),
    ("L1", "q1", "LENGTH", "expansion", "A", "", "", "A", False),
    ("L2", "q2", "LENGTH", "expansion", "B", "", "", "B", False),
    ("L3", "q3", "LENGTH", "expansion", "B", "", "", "A", False),
    ("L4", "q4", "LENGTH", "expansion", "", "", "", "A", False),  # no longer side: left out
    ("T1", "q1", "LENGTH", "truncation", "A", "", "", "A", True),
    ("T2", "q2", "LENGTH", "truncation", "A", "", "", "B", False),
    ("T3", "q3", "LENGTH", "truncation", "A", "", "", "", False),
    ("S1", "q1", "STYLE", "markdown_in_A", "A", "", "", "A", False),
    ("S2", "q2", "STYLE", "markdown_in_A", "A", "", "", "tie", True),
    ("S3", "q3", "STYLE", "markdown_in_A", "A", "", "", "B", False),
    ("S4", "q4", "STYLE", "markdown_in_A", "A", "", "", "A", False),
    ("R1", "q1", "STYLE_BA", "markdown_in_B", "B", "", "", "B", False),
    ("R2", "q2", "STYLE_BA", "markdown_in_B", "B", "", "", "", False),
    ("R3", "q3", "STYLE_BA", "markdown_in_B", "B", "", "", "B", False),
    ("R4", "q4", "STYLE_BA", "markdown_in_B", "B", "", "", "B", False),
    ("M1", "q1", "MODEL_ORIGIN", "original", "", "google", "anthropic", "A", False),
    ("M2", "q2", "MODEL_ORIGIN", "original", "", "anthropic", "google", "A", False),
    ("M3", "q3", "MODEL_ORIGIN", "round_robin", "", "meta", "google", "B", False),
    ("M4", "q4", "MODEL_ORIGIN", "round_robin", "", "meta", "openai", "A", False),
    ("M5", "q5", "MODEL_ORIGIN", "round_robin", "", "google", "google", "B", False),
    ("M6", "q6", "MODEL_ORIGIN", "original", "", "anthropic", "google", "B", False),
]


def controlled(judges=(("j", "google"),), strategies=("B0",)) -> tuple[pd.DataFrame, pd.DataFrame]:
    pairs = pd.DataFrame([{"pair_id": p, "question_id": q, "subset": s, "target_side": t, "origin_a": oa,
                           "origin_b": ob} for p, q, _b, s, t, oa, ob, _v, _c in CONTROLLED])
    sv = pd.DataFrame([{"judge": j, "family": fam, "simulated": j != "real", "strategy": st, "pair_id": p,
                        "bias_type": b, "verdict": v, "correct": c, "category": "math" if q in ("q1", "q2") else "code"}
                       for j, fam in judges for st in strategies for p, q, b, _s, _t, _oa, _ob, v, c in CONTROLLED])
    return sv, pairs


def test_bias_scores_by_hand():
    sv, pairs = controlled(judges=(("j", "google"), ("real", "meta")))
    out = bias_table(sv, pairs, n_resamples=200).set_index(["judge", "measure"])
    r = out.loc["j"]
    expected = {  # value, n (questions), no verdict
        "position": (0.25, 4, 0),  # A, A, B, tie
        "verbosity": (1 / 3, 3, 0),  # +1, +1, -1; the pair without a longer side is left out
        "style": (0.5, 4, 1),  # per question: (+1 +1)/2, (0 + 0)/2, (-1 +1)/2, (+1 +1)/2
        "style_ab": (0.25, 4, 0), "style_ba": (0.75, 4, 1),
        "self_preference": (0.5, 4, 0),  # M1 +1 (google in A), M2 -1 (google in B), M3 +1, M6 +1; M4, M5 not own
        "model_preference": (1 / 3, 3, 0),  # originals only: M1 google +1, M2 google -1, M6 google +1
        "truncation_accuracy": (1 / 3, 3, 1),
    }
    assert list(r.index) == [*expected]
    for m, (value, n, no_v) in expected.items():
        assert r.loc[m, "value"] == pytest.approx(value), m
        assert (r.loc[m, "n"], r.loc[m, "n_no_verdict"]) == (n, no_v), m
        assert r.loc[m, "ci_low"] <= r.loc[m, "value"] <= r.loc[m, "ci_high"], m
    assert (r["kind"] == "bias_score").sum() == 7 and r.loc["truncation_accuracy", "kind"] == "accuracy"
    assert (r["family"] == "google").all() and r["simulated"].all() and (r["strategy"] == "B0").all()
    assert "google" in r.loc["self_preference", "target"] and "google" in r.loc["model_preference", "target"]
    assert r["target"].drop(index="model_preference").is_unique  # each measure says what its target is
    assert r.loc["truncation_accuracy", "target"] == an.MEASURE_TARGETS["truncation_accuracy"]
    assert r.loc["position", "target"] == an.MEASURE_TARGETS["position"]
    # a meta judge: self-preference is M3 (meta in A, B chosen: -1) and M4 (meta in A: +1)
    m = out.loc["real"]
    assert m.loc["self_preference", "value"] == pytest.approx(0.0) and m.loc["self_preference", "n"] == 2
    assert "meta" in m.loc["self_preference", "target"] and not m["simulated"].any()
    assert m.loc["model_preference", "value"] == pytest.approx(1 / 3)
    # another target family for the original pairs flips the model preference's sign
    alt = bias_table(sv, pairs, original_target="anthropic", n_resamples=200).set_index(["judge", "measure"])
    assert alt.loc[("j", "model_preference"), "value"] == pytest.approx(-1 / 3)  # M1 -1, M2 +1, M6 -1
    assert "anthropic" in alt.loc[("j", "model_preference"), "target"]


def test_bias_intervals_resample_questions_with_the_cells_own_seed():
    # a question's two style halves always agree: resampling rows would treat them as independent
    rng = np.random.default_rng(0)
    rows, pairs = [], []
    for q in range(60):
        likes = rng.random() < 0.6
        for half, side in (("STYLE", "A"), ("STYLE_BA", "B")):
            pid = f"{half}-{q}"
            pairs.append({"pair_id": pid, "question_id": f"q{q}", "subset": "", "target_side": side,
                          "origin_a": "", "origin_b": ""})
            v = side if likes else ("B" if side == "A" else "A")
            for strat in ("B0", "S1"):
                rows.append({"judge": "j", "family": "x", "simulated": True, "strategy": strat, "pair_id": pid,
                             "bias_type": half, "verdict": v, "correct": False, "category": "math" if q < 30 else "code"})
    sv, pairs = pd.DataFrame(rows), pd.DataFrame(pairs)
    out = bias_table(sv, pairs, n_resamples=25, alpha=0.1, seed=5).set_index(["strategy", "measure"])
    df = sv.merge(pairs, on="pair_id")
    sub = df[df["strategy"] == "S1"]
    ref = bias_score(sub["verdict"].to_numpy(object), sub["target_side"].to_numpy(object),
                     groups=sub["question_id"].to_numpy(object), n_resamples=25, alpha=0.1,
                     seed=zlib.crc32(b"5|j|S1|style"))
    r = out.loc[("S1", "style")]
    assert (r["value"], r["ci_low"], r["ci_high"], r["n"]) == (ref.b, ref.ci_low, ref.ci_high, 60)
    assert out.loc[("B0", "style"), "ci_low"] != r["ci_low"] or out.loc[("B0", "style"), "ci_high"] != r["ci_high"]
    # Table 7: the same per topic, each topic's questions resampled whole
    topic = topic_style_table(sv, pairs, n_resamples=25, alpha=0.1, seed=5).set_index(["strategy", "topic"])
    assert list(topic.index) == [("B0", "code"), ("B0", "math"), ("S1", "code"), ("S1", "math")]
    for t in ("code", "math"):
        s = sub[sub["category"] == t]
        ref = bias_score(s["verdict"].to_numpy(object), s["target_side"].to_numpy(object),
                         groups=s["question_id"].to_numpy(object), n_resamples=25, alpha=0.1,
                         seed=zlib.crc32(f"5|j|S1|{t}".encode()))
        got = topic.loc[("S1", t)]
        assert (got["value"], got["ci_low"], got["ci_high"], got["n"]) == (ref.b, ref.ci_low, ref.ci_high, 30)
        assert got["n_no_verdict"] == 0 and bool(got["simulated"])


def test_truncation_interval_is_its_cells_bootstrap():
    rng = np.random.default_rng(4)
    corr = rng.random(40) < 0.8
    pairs = pd.DataFrame({"pair_id": [f"T{i}" for i in range(40)], "question_id": [f"q{i}" for i in range(40)],
                          "subset": "truncation", "target_side": "A", "origin_a": "", "origin_b": ""})
    sv = pd.DataFrame([{"judge": j, "family": "f", "simulated": True, "strategy": st, "pair_id": f"T{i}",
                        "bias_type": "LENGTH", "verdict": "A" if c else "B", "correct": bool(c), "category": "x"}
                       for j in ("j", "k") for st in ("B0", "S5") for i, c in enumerate(corr)])
    out = bias_table(sv, pairs, n_resamples=25, alpha=0.2, seed=2).set_index(["judge", "strategy", "measure"])
    seen = set()
    for judge in ("j", "k"):
        for strat in ("B0", "S5"):
            r = out.loc[(judge, strat, "truncation_accuracy")]
            assert r["value"] == pytest.approx(corr.mean()) and r["n"] == 40
            ci = (r["ci_low"], r["ci_high"])
            assert ci == bootstrap_ci(corr.astype(float), n_resamples=25, alpha=0.2,
                                      rng=cell_seed(2, judge, strat, "trunc"))
            seen.add(ci)
    assert len(seen) > 1  # cells draw their own resamples


def test_single_row_groups():
    sv, pairs = controlled()
    one = sv[sv["pair_id"] == "S1"]  # a judge with one verdict; a topic with one style pair
    b = bias_table(one, pairs, n_resamples=20).set_index("measure")
    assert b.loc["style", "value"] == 1.0 and b.loc["style", "n"] == 1 and b.loc["style_ba", "n"] == 0
    assert b.loc["style", "family"] == "google" and b["simulated"].all()
    t = topic_style_table(one, pairs, n_resamples=20)
    assert len(t) == 1 and t["value"].iloc[0] == 1.0 and bool(t["simulated"].iloc[0])


def test_duplicate_pair_ids_in_the_pair_set_are_an_error():
    sv, pairs = controlled()
    dup = pd.concat([pairs, pairs.iloc[:1]])
    with pytest.raises(pd.errors.MergeError):
        bias_table(sv, dup, n_resamples=50)
    with pytest.raises(pd.errors.MergeError):
        topic_style_table(sv, dup, n_resamples=50)


def test_topic_style_uses_only_the_style_pairs():
    sv, pairs = controlled()
    t = topic_style_table(sv, pairs, n_resamples=100).set_index("topic")
    # math: q1 (+1, +1), q2 (0, no verdict); code: q3 (-1, +1), q4 (+1, +1)
    assert t.loc["math", "value"] == pytest.approx(0.5) and t.loc["math", "n"] == 2
    assert t.loc["math", "n_no_verdict"] == 1
    assert t.loc["code", "value"] == pytest.approx(0.5) and t.loc["code", "n"] == 2
    assert set(t["judge"]) == {"j"} and set(t["strategy"]) == {"B0"}


def test_b_without_groups_resamples_rows():
    v = pd.Series(["A", "A", "B", "", "tie", "A"])
    t = pd.Series(["A"] * 6)
    r = an._b(v, t, n_resamples=100, alpha=0.05, rng_seed=1)
    assert r["value"] == pytest.approx(1 / 3) and r["n"] == 6 and r["n_no_verdict"] == 1  # (1 + 1 - 1 + 1) / 6
    g = an._b(v, t, n_resamples=100, alpha=0.05, rng_seed=1, groups=pd.Series(["a", "a", "b", "b", "c", "c"]))
    assert g["n"] == 3 and g["value"] == pytest.approx(1 / 3)  # question means 1, -1/2, 1/2


def test_length_ablation_and_cross_bias_tables():
    rows = []
    for judge, b0, s5 in (("j", (0.6, -0.1, 0.3), (0.4, 0.05, -0.3)), ("k", (-0.2, 0.0, 0.5), (0.1, 0.2, 0.5)),
                          ("ctl", (0.0, 0.0, 0.0), (0.9, 0.9, 0.9))):
        for strat, vals in (("S5", s5), ("B0", b0)):
            for measure, v in zip(("style", "position", "verbosity"), vals, strict=True):
                rows.append({"judge": judge, "strategy": strat, "measure": measure, "value": v, "ci_low": v - 0.1,
                             "ci_high": v + 0.1, "n": 50, "simulated": judge != "k"})
            rows.append({"judge": judge, "strategy": strat, "measure": "style_ab", "value": 0.99, "ci_low": 0.9,
                         "ci_high": 1.0, "n": 50, "simulated": judge != "k"})
            rows.append({"judge": judge, "strategy": strat, "measure": "truncation_accuracy", "value": 0.92,
                         "ci_low": 0.8, "ci_high": 1.0, "n": 25, "simulated": judge != "k"})
    rows.append({"judge": "new", "strategy": "S5", "measure": "style", "value": 0.3, "ci_low": 0.2, "ci_high": 0.4,
                 "n": 50, "simulated": True})  # no baseline row
    bias = pd.DataFrame(rows)
    lab = length_ablation_table(bias[bias["judge"] != "new"])
    assert list(lab[["judge", "strategy"]].itertuples(index=False, name=None)) == [
        ("ctl", "B0"), ("ctl", "S5"), ("j", "B0"), ("j", "S5"), ("k", "B0"), ("k", "S5")]
    assert set(lab.columns) == {"judge", "strategy", "expansion_bias", "expansion_bias_ci_low",
                                "expansion_bias_ci_high", "expansion_bias_n", "truncation_accuracy",
                                "truncation_accuracy_ci_low", "truncation_accuracy_ci_high", "truncation_accuracy_n"}
    assert lab["expansion_bias_n"].dtype.kind == lab["truncation_accuracy_n"].dtype.kind == "i"  # counts
    j5 = lab[(lab["judge"] == "j") & (lab["strategy"] == "S5")].iloc[0]
    assert (j5["expansion_bias"], j5["expansion_bias_ci_low"], j5["expansion_bias_n"]) == (-0.3, pytest.approx(-0.4), 50)
    assert (j5["truncation_accuracy"], j5["truncation_accuracy_ci_high"], j5["truncation_accuracy_n"]) == (0.92, 1.0, 25)

    cb = cross_bias_table(bias, average_over=["j", "k", "absent"])
    per = cb[cb["judge"] != "mean"].set_index(["judge", "measure"])
    assert set(per["strategy"]) == {"S5"} and set(per.index.get_level_values("measure")) == {
        "style", "position", "verbosity"}  # headline biases only
    assert per.loc[("j", "style"), "delta_abs_b"] == pytest.approx(-0.2)  # |0.4| - |0.6|
    assert per.loc[("j", "position"), "delta_abs_b"] == pytest.approx(-0.05)  # |0.05| - |-0.1|
    assert per.loc[("j", "verbosity"), "delta_abs_b"] == pytest.approx(0.0)  # sign flip, same magnitude
    assert per.loc[("k", "style"), "delta_abs_b"] == pytest.approx(-0.1)  # |0.1| - |-0.2|
    assert (per.loc[("k", "style"), "b"], per.loc[("k", "style"), "b_B0"]) == (0.1, -0.2)
    assert not per.loc[("k", "style"), "simulated"] and per.loc[("j", "style"), "simulated"]
    assert math.isnan(per.loc[("new", "style"), "b_B0"]) and math.isnan(per.loc[("new", "style"), "delta_abs_b"])
    mean = cb[cb["judge"] == "mean"].set_index("measure")
    assert set(mean["averaged_over"]) == {"j,k"}  # the control is not averaged, an absent judge ignored
    assert mean.loc["style", "delta_abs_b"] == pytest.approx(-0.15)
    assert mean.loc["position", "delta_abs_b"] == pytest.approx((-0.05 + 0.2) / 2)
    assert mean["simulated"].tolist() == [True] * 3 and set(mean["strategy"]) == {"S5"}  # any simulated judge
    assert cb.index.is_unique
    every = cross_bias_table(bias[bias["judge"] != "new"])
    assert set(every.loc[every["judge"] == "mean", "averaged_over"]) == {"ctl,j,k"}
    assert every.loc[(every["judge"] == "mean") & (every["measure"] == "style"), "delta_abs_b"].iloc[0] == \
        pytest.approx((-0.2 - 0.1 + 0.9) / 3)
    assert cross_bias_table(bias[bias["strategy"] == "B0"]).empty


# --- McNemar, Holm, MDE, mixed models -----------------------------------------------------------


def paired(ds, judge, strat, correct, simulated=True):
    return [{"dataset": ds, "judge": judge, "strategy": strat, "pair_id": f"p{i}", "correct": bool(c),
             "simulated": simulated} for i, c in enumerate(correct) if c is not None]


def test_mcnemar_table_by_hand():
    b0 = [1, 1, 1, 0, 0, 0, 1, 0, 1, 1]
    s1 = [1, 0, 1, 1, 1, 0, 1, 1, 1, None]  # S1 has no row for p9: that pair is not paired
    s5 = [1] * 10  # right wherever B0 was wrong (c = 4)
    rows = paired("d", "j", "B0", b0) + paired("d", "j", "S1", s1) + paired("d", "j", "S5", s5)
    rows += paired("e", "j", "B0", [0] * 12, simulated=False) + paired("e", "j", "S1", [1] * 12, simulated=False)
    out = mcnemar_table(pd.DataFrame(rows), alpha=0.01, family={"strategies": ["S1"]})
    assert len(out) == 3  # every strategy vs B0, never B0 vs itself
    t = out.set_index(["dataset", "strategy"])
    r = t.loc[("d", "S1")]
    # on p0..p8: b (B0 right, S1 wrong) = 1 (p1), c = 3 (p3, p4, p7)
    assert (r["n"], r["b"], r["c"], r["comparison"]) == (9, 1, 3, "B0 vs S1")
    assert r["chi2"] == pytest.approx((abs(1 - 3) - 1) ** 2 / 4)
    assert r["p"] == pytest.approx(stats.chi2.sf(0.25, 1))
    assert (r["agreement_B0"], r["agreement"]) == (pytest.approx(5 / 9), pytest.approx(7 / 9))
    assert r["delta_pp"] == pytest.approx(100 * 2 / 9) and r["simulated"]
    r5 = t.loc[("d", "S5")]
    assert (r5["n"], r5["b"], r5["c"], r5["chi2"]) == (10, 0, 4, pytest.approx(9 / 4))
    e = t.loc[("e", "S1")]
    assert (e["b"], e["c"], e["chi2"]) == (0, 12, pytest.approx(121 / 12)) and not e["simulated"]
    # Holm within each data set over the family only (S1): one test each, so p_holm = p
    assert not r5["in_family"] and math.isnan(r5["p_holm"]) and not r5["holm_significant"]
    assert r["in_family"] and r["p_holm"] == pytest.approx(r["p"]) and set(out["m"]) == {1}
    assert out["m"].dtype.kind == "i"  # a count
    assert e["p"] < 0.01 and e["significant"] and e["holm_significant"]  # chi2 10.1: p = 0.0015
    assert not r["significant"] and not r["holm_significant"]
    assert r5["p"] > 0.01 and not r5["significant"]  # p = 0.13 at alpha 0.01
    assert mcnemar_table(pd.DataFrame(rows), alpha=0.2).set_index(["dataset", "strategy"]).loc[("d", "S5"),
                                                                                                "significant"]


def test_empty_tables_stay_empty():
    cols = {"dataset": [], "judge": [], "strategy": [], "pair_id": [], "correct": [], "simulated": []}
    assert mcnemar_table(pd.DataFrame(cols)).empty and mixed_table(pd.DataFrame(cols)).empty


def test_holm_runs_per_data_set():
    rng = np.random.default_rng(2)
    rows = []
    for ds, judges in (("d", ("j", "k", "l")), ("e", ("j",)), ("f", ("ctl",))):
        for judge in judges:
            base = rng.random(80) < 0.5
            rows += paired(ds, judge, "B0", base)
            for strat, flip in (("S1", 0.1), ("S8", 0.3)):
                rows += paired(ds, judge, strat, base | (rng.random(80) < flip))
    family = {"strategies": ["S1", "S8"], "judges": None, "exclude_judges": ["ctl"]}
    out = mcnemar_table(pd.DataFrame(rows), family=family)
    assert dict(out.groupby("dataset")["m"].first()) == {"d": 6, "e": 2, "f": 0}
    for ds in ("d", "e"):
        g = out[out["dataset"] == ds]
        assert g["p_holm"].to_numpy() == pytest.approx(holm(g["p"].to_numpy(), 0.05)[0])
    assert out.loc[out["dataset"] == "f", "p_holm"].isna().all()


def test_mde_table_by_hand():
    mcn = pd.DataFrame([
        {"dataset": "d", "judge": "one", "n": 200, "agreement_B0": 0.5, "b": 10, "c": 10},  # out of order
        {"dataset": "d", "judge": "j", "n": 400, "agreement_B0": 0.6, "b": 15, "c": 25},
        {"dataset": "d", "judge": "j", "n": 398, "agreement_B0": 0.6, "b": 20, "c": 30},
        {"dataset": "d", "judge": "k", "n": 400, "agreement_B0": 0.7, "b": 0, "c": 0},
        {"dataset": "d", "judge": "k", "n": 400, "agreement_B0": 0.7, "b": 10, "c": 30},
    ])
    out = mde_table(mcn, alpha=0.01, power=0.9)
    assert out["judge"].tolist() == ["j", "k", "one"]  # sorted by data set and judge, whatever the input order
    out = out.set_index("judge")
    j = out.loc["j"]
    psi = np.array([40 / 400, 50 / 398])
    assert (j["n"], j["agreement_B0"], j["dataset"]) == (400, 0.6, "d")
    assert j["discordance_mean"] == pytest.approx(psi.mean()) and j["discordant_pairs_mean"] == pytest.approx(45)
    assert j["mde_pp"] == pytest.approx(100 * mcnemar_mde(400, psi.mean(), 0.01, 0.9))
    assert j["mde_pp_min"] == pytest.approx(100 * mcnemar_mde(400, psi.min(), 0.01, 0.9))
    assert j["mde_pp_max"] == pytest.approx(100 * mcnemar_mde(400, psi.max(), 0.01, 0.9))
    assert j["mde_pp_min"] < j["mde_pp"] < j["mde_pp_max"]  # more discordance, larger detectable effect
    assert (j["alpha"], j["power"]) == (0.01, 0.9)
    k = out.loc["k"]
    assert math.isnan(k["mde_pp_min"])  # a strategy with no discordant pair has no finite MDE
    assert k["mde_pp_max"] == pytest.approx(100 * mcnemar_mde(400, 0.1, 0.01, 0.9))
    one = out.loc["one"]
    assert (one["n"], one["agreement_B0"]) == (200, 0.5)
    assert one["mde_pp"] == one["mde_pp_min"] == one["mde_pp_max"] == pytest.approx(100 * mcnemar_mde(200, 0.1, 0.01, 0.9))
    # Appendix D: 40-50 discordant pairs of 400 detect 4-5 pp at the default alpha and power
    default = mde_table(mcn).set_index("judge").loc["j"]
    assert 4.0 < default["mde_pp"] < 5.2 and default["mde_pp"] < j["mde_pp"]


def _mixed_rows(n=30, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for judge, p in (("j", {"B0": 0.4, "S1": 0.7, "S4": 0.5}), ("k", {"B0": 0.5, "S1": 0.5, "S4": 0.6})):
        u = rng.normal(0, 1, n)
        for strat, pr in p.items():
            y = rng.random(n) < 1 / (1 + np.exp(-(np.log(pr / (1 - pr)) + u)))
            rows += paired("d", judge, strat, y)
    rows += paired("d", "a-solo", "B0", rng.random(n) < 0.5)  # one strategy: nothing to compare (sorted first)
    rows += paired("d", "ace", "B0", [True] * n) + paired("d", "ace", "S1", [True] * n)  # right everywhere
    return pd.DataFrame(rows)


def test_mixed_table_terms_and_failures(caplog):
    sv = _mixed_rows()
    out = mixed_table(sv, alpha=0.05, n_nodes=6, family={"strategies": ["S1", "S4"], "judges": ["j"]})
    t = out.set_index(["judge", "strategy"])
    assert set(t.index) == {("j", "S1"), ("j", "S4"), ("k", "S1"), ("k", "S4"), ("ace", "S1")}
    for judge in ("j", "k"):
        g = sv[sv["judge"] == judge]
        means = g.groupby("strategy")["correct"].mean()
        for s in ("S1", "S4"):
            r = t.loc[(judge, s)]
            # balanced design: the linear-probability coefficient is the difference in agreement
            assert r["lpm_coef"] == pytest.approx(means[s] - means["B0"], abs=1e-6)
            assert r["odds_ratio"] == pytest.approx(math.exp(r["logit_coef"]))
            if abs(r["lpm_coef"]) > 0.02:
                assert np.sign(r["logit_coef"]) == np.sign(r["lpm_coef"])
            assert 0 < r["lpm_se"] and 0 < r["logit_se"] and 0 < r["lpm_p"] < 1 and 0 < r["logit_p"] < 1
            assert (r["n_obs"], r["n_instances"]) == (90, 30)
            assert r["lpm_converged"] and r["logit_converged"] and r["simulated"]
            assert r["lpm_instance_var"] >= 0 and r["logit_instance_var"] >= 0
            assert "failed" not in r["lpm_method"] and "failed" not in r["logit_method"]
            assert r["significant"] == (r["lpm_p"] < 0.05)
    # Holm over the family (judge j's two terms); the others are outside it
    fam = out[out["in_family"]]
    assert set(fam["judge"]) == {"j"} and set(out["m"]) == {2}
    assert fam["lpm_p_holm"].to_numpy() == pytest.approx(holm(fam["lpm_p"].to_numpy())[0])
    assert fam["logit_p_holm"].to_numpy() == pytest.approx(holm(fam["logit_p"].to_numpy())[0])
    assert out.loc[~out["in_family"], "lpm_p_holm"].isna().all()
    assert (out["holm_significant"] == (out["lpm_p_holm"] < 0.05)).all()
    # a judge right everywhere identifies no model: NaN, not converged, marked failed
    ace = t.loc[("ace", "S1")]
    assert math.isnan(ace["lpm_coef"]) and math.isnan(ace["logit_p"]) and math.isnan(ace["lpm_instance_var"])
    assert not ace["lpm_converged"] and not ace["logit_converged"]
    assert ace["lpm_method"] == "lpm_mixedlm_reml (failed)" and ace["logit_method"] == "logit_glmm_ghq6_ml (failed)"
    # the modelled strategies only
    only = mixed_table(sv[sv["judge"] == "j"], strategies=["B0", "S4"], n_nodes=6)
    assert only["strategy"].tolist() == ["S4"] and only["n_obs"].tolist() == [60]
    assert mixed_table(sv[sv["judge"] == "a-solo"]).empty
    with pytest.raises(ValueError, match=r"^strategies\.analysis\.mixed_strategies must include the reference level B0$"):
        mixed_table(sv, strategies=["S1", "S4"])


def test_mixed_table_survives_a_failed_fit(monkeypatch, caplog):
    def singular(d, **kw):
        raise np.linalg.LinAlgError("Singular matrix")

    def bad(d, **kw):
        raise ValueError("no convergence")

    monkeypatch.setattr(an, "lpm_random_intercept", singular)
    monkeypatch.setattr(an, "logit_random_intercept", bad)
    sv = _mixed_rows()
    with caplog.at_level(logging.WARNING, logger="judgelab.strategies.analysis"):
        out = mixed_table(sv[sv["judge"] == "j"], n_nodes=4)
    assert len(out) == 2 and out["lpm_coef"].isna().all() and out["logit_coef"].isna().all()
    assert not out["lpm_converged"].any() and (out["logit_method"] == "logit_glmm_ghq4_ml (failed)").all()
    got = {(r.name, r.getMessage()) for r in caplog.records}
    assert ("judgelab.strategies.analysis", "mixed model singular failed: Singular matrix") in got
    assert ("judgelab.strategies.analysis", "mixed model bad failed: no convergence") in got


def test_in_family_keys():
    j = pd.Series(["a", "b", "ctl", "a"])
    s = pd.Series(["S1", "S1", "S1", "S4"])
    assert in_family(j, s, {"strategies": ["S4"]}).tolist() == [False, False, False, True]
    assert in_family(j, s, {"judges": ["b", "ctl"], "exclude_judges": ["ctl"]}).tolist() == [False, True, False, False]
    assert in_family(j, s, {"exclude_judges": []}).all() and in_family(j, s, {}).all()
    assert in_family(j, s, {"strategies": ["S1"], "judges": ["a"]}).tolist() == [True, False, False, False]


def test_replay_s1_table_by_hand():
    """Real judges' baseline calls in both orders: S1 from the same verdicts, with McNemar vs B0."""
    gold = ["A", "tie", "tie", "B"]
    ab, ba = ["A", "B", "tie", ""], ["A", "A", "tie", "B"]  # BA already mapped back to the stored frame
    calls = []
    for judge in ("a-no-s1", "b"):
        for order, vs in (("AB", ab), ("BA", ba)):
            for i, (v, g) in enumerate(zip(vs, gold, strict=True)):
                calls.append({"dataset": "d", "judge": judge, "kind": "pairwise", "role": "baseline",
                              "temperature": np.nan, "pair_id": f"p{i}", "order": order, "verdict": v,
                              "correct": v == g})
    # calls that are not the plain baseline are left out of the order statistics
    calls.append({"dataset": "d", "judge": "b", "kind": "pairwise", "role": "baseline", "temperature": 0.3,
                  "pair_id": "p0", "order": "AB", "verdict": "B", "correct": False})
    calls.append({"dataset": "d", "judge": "b", "kind": "pairwise", "role": "rubric", "temperature": np.nan,
                  "pair_id": "p1", "order": "AB", "verdict": "A", "correct": False})
    calls.append({"dataset": "d", "judge": "b", "kind": "text", "role": "baseline", "temperature": np.nan,
                  "pair_id": "p2", "order": "AB", "verdict": "A", "correct": False})
    s1 = ["A", "tie", "tie", ""]  # agree, disagree -> tie, agree, one order unparsed -> no verdict
    sv = []
    for judge, strategies in (("a-no-s1", ("B0",)), ("b", ("B0", "S1"))):
        for strat in strategies:
            for i, v in enumerate(ab if strat == "B0" else s1):
                sv.append({"dataset": "d", "judge": judge, "strategy": strat, "pair_id": f"p{i}", "verdict": v,
                           "correct": v == gold[i], "has_verdict": v != ""})
    out = an.replay_s1_table(pd.DataFrame(calls), pd.DataFrame(sv))
    assert len(out) == 1 and "Index" not in out.columns
    no_s1 = pd.DataFrame(sv)
    assert an.replay_s1_table(pd.DataFrame(calls), no_s1[no_s1["strategy"] == "B0"]).empty  # nothing to replay
    r = out.iloc[0]
    assert (r["dataset"], r["judge"], r["n_pairs"]) == ("d", "b", 4)
    assert (r["acc_AB"], r["acc_BA"]) == (0.5, 0.75)
    assert (r["agreement_B0"], r["agreement_S1"], r["delta_pp"]) == (0.5, 0.75, pytest.approx(25.0))
    assert (r["S1_tie_rate"], r["S1_no_verdict"], r["b"], r["c"]) == (0.5, 1, 0, 1)
    assert (r["chi2"], r["p"]) == (pytest.approx(0.0), pytest.approx(1.0))  # (|0 - 1| - 1)^2 / 1


class FakeFit:
    """Stands in for a mixed-model fit: fixed coefficients and p-values per strategy term."""

    def __init__(self, d: pd.DataFrame, p: dict[str, float], method: str) -> None:
        terms = [f"C(strategy, Treatment('B0'))[T.{s}]" for s in sorted(set(d["strategy"]) - {"B0"})]
        means = d.groupby("strategy")["correct"].mean()
        self.coef = pd.Series({t: float(means[t.split("[T.")[1][:-1]] - means["B0"]) for t in terms})
        self.se = pd.Series(0.05, index=terms)
        self.pvalue = pd.Series({t: p[t.split("[T.")[1][:-1]] for t in terms})
        self.group_var, self.converged, self.method = 0.25, True, method
        self.separation: tuple[str, ...] = ()


def test_mixed_table_rows_and_holm_with_given_fits(monkeypatch):
    pvals = {"j": {"S1": 0.01, "S4": 0.04, "S9": 0.3}, "k": {"S1": 0.02, "S4": 0.5, "S9": 0.02}}
    calls = []

    def lpm(d, **kw):
        calls.append(("lpm", len(d)))
        judge = "j" if d["correct"].mean() < 0.5 else "k"
        return FakeFit(d, pvals[judge], "lpm_fake")

    def logit(d, n_nodes):
        calls.append(("logit", n_nodes))
        judge = "j" if d["correct"].mean() < 0.5 else "k"
        return FakeFit(d, {s: min(1.0, 2 * p) for s, p in pvals[judge].items()}, f"logit_fake{n_nodes}")

    monkeypatch.setattr(an, "lpm_random_intercept", lpm)
    monkeypatch.setattr(an, "logit_random_intercept", logit)
    rows = []
    for judge, rates in (("j", (0.2, 0.4, 0.3, 0.5)), ("k", (0.6, 0.8, 0.7, 0.9))):
        for strat, r in zip(("B0", "S1", "S4", "S9"), rates, strict=True):
            rows += paired("d", judge, strat, [i < 10 * r for i in range(10)])
    rows += paired("d", "a-solo", "B0", [True, False])  # one strategy: no model
    sv = pd.DataFrame(rows)
    out = mixed_table(sv, strategies=["B0", "S1", "S4"], family={"strategies": ["S1", "S4"], "judges": ["j"]})
    assert ("logit", 32) in calls and ("lpm", 30) in calls  # default quadrature, modelled strategies only
    t = out.set_index(["judge", "strategy"])
    assert list(t.index) == [("j", "S1"), ("j", "S4"), ("k", "S1"), ("k", "S4")]
    r = t.loc[("j", "S1")]
    assert (r["lpm_coef"], r["lpm_se"], r["lpm_p"]) == (pytest.approx(0.2), 0.05, 0.01)
    assert (r["logit_coef"], r["logit_se"], r["logit_p"]) == (pytest.approx(0.2), 0.05, 0.02)
    assert r["odds_ratio"] == pytest.approx(math.exp(0.2))
    assert (r["n_obs"], r["n_instances"], r["lpm_instance_var"], r["logit_instance_var"]) == (30, 10, 0.25, 0.25)
    assert (r["lpm_method"], r["logit_method"], r["lpm_converged"], r["logit_converged"]) == (
        "lpm_fake", "logit_fake32", True, True)
    assert r["dataset"] == "d" and r["simulated"]
    # Holm over j's two terms (m = 2): 0.01 -> 0.02, 0.04 -> 0.04; logit 0.02 -> 0.04, 0.08 -> 0.08
    assert list(out["m"]) == [2] * 4
    assert t.loc[("j", "S1"), "lpm_p_holm"] == pytest.approx(0.02) and t.loc[("j", "S4"), "lpm_p_holm"] == pytest.approx(0.04)
    assert t.loc[("j", "S1"), "logit_p_holm"] == pytest.approx(0.04) and t.loc[("j", "S4"), "logit_p_holm"] == pytest.approx(0.08)
    assert t.loc[("k", "S1"), ["lpm_p_holm", "logit_p_holm"]].isna().all()
    assert t["significant"].tolist() == [True, True, True, False]  # lpm p < 0.05
    assert t["holm_significant"].tolist() == [True, True, False, False]
    strict = mixed_table(sv, alpha=0.02, strategies=["B0", "S1", "S4"], family={"judges": ["j"]}, n_nodes=5)
    assert ("logit", 5) in calls
    assert strict["significant"].tolist() == [True, False, False, False]  # 0.01 only: k's S1 is 0.02, not < 0.02
    assert strict["holm_significant"].tolist() == [False, False, False, False]  # 0.02 is not < 0.02


def test_defaults_are_the_papers():
    """n_boot = 2,000 and 95% intervals (paper 003, Sec. 3.5); alpha 0.05 and power 0.8 (Appendix D);
    the model preference's target is the Gemini (google) response of the original pairs."""
    x = (np.random.default_rng(9).random(50) < 0.5).astype(float)  # 2,001 resamples would move the interval
    assert bootstrap_ci(x, rng=np.random.default_rng(1)) == bootstrap_ci(
        x, n_resamples=2000, alpha=0.05, rng=np.random.default_rng(1))
    sv = pd.DataFrame(_sv_rows("d", "j", "B0", ["A", "B", "B", "tie", "A", "A"], ["A", "A", "B", "tie", "B", "A"]))
    pd.testing.assert_frame_equal(agreement_table(sv, seed=2), agreement_table(sv, n_resamples=2000, alpha=0.05, seed=2))
    pd.testing.assert_frame_equal(category_table(sv, seed=2), category_table(sv, n_resamples=2000, alpha=0.05, seed=2))
    # 60 instances, 40 questions of mirrored style pairs: here 2,000 and 2,001 resamples give different intervals
    correct = np.random.default_rng(24).random(60) < 0.5
    big = pd.DataFrame(_sv_rows("d", "j", "B0", ["A" if c else "B" for c in correct], ["A"] * 60))
    pd.testing.assert_frame_equal(agreement_table(big, seed=2), agreement_table(big, n_resamples=2000, seed=2))
    pd.testing.assert_frame_equal(category_table(big, seed=2), category_table(big, n_resamples=2000, seed=2))
    verdicts = np.random.default_rng(30).choice(["A", "B", "tie"], 80)
    pairs = pd.DataFrame({"pair_id": [f"s{i}" for i in range(80)], "question_id": [f"q{i // 2}" for i in range(80)],
                          "subset": "", "target_side": ["A", "B"] * 40, "origin_a": "", "origin_b": ""})
    csv = pd.DataFrame({"judge": "j", "family": "x", "simulated": True, "strategy": "B0", "pair_id": pairs["pair_id"],
                        "bias_type": ["STYLE", "STYLE_BA"] * 40, "verdict": verdicts, "correct": False,
                        "category": "math"})
    pd.testing.assert_frame_equal(bias_table(csv, pairs, seed=2),
                                  bias_table(csv, pairs, original_target="google", n_resamples=2000, alpha=0.05, seed=2))
    pd.testing.assert_frame_equal(topic_style_table(csv, pairs, seed=2),
                                  topic_style_table(csv, pairs, n_resamples=2000, alpha=0.05, seed=2))
    # b = 3, c = 9: chi2 = 25/12, p = 0.149 -- not significant at 0.05
    rows = paired("d", "j", "B0", [1] * 3 + [0] * 9 + [1] * 8) + paired("d", "j", "S1", [0] * 3 + [1] * 9 + [1] * 8)
    mcn = mcnemar_table(pd.DataFrame(rows))
    assert mcn["p"].iloc[0] == pytest.approx(stats.chi2.sf(25 / 12, 1))
    assert not mcn["significant"].iloc[0] and not mcn["holm_significant"].iloc[0]
    m = mde_table(mcn.assign(n=400, b=20, c=25)).iloc[0]
    assert m["mde_pp"] == pytest.approx(100 * mcnemar_mde(400, 45 / 400, 0.05, 0.8))
    assert (m["alpha"], m["power"]) == (0.05, 0.8)
