"""Units of the insertion probes' effects (judgelab.probe.effects): the paired shift against hand counts,
its item-clustered standard error and t-test against a hand CR1 and scipy's Student t, the per-judge
multiplicity correction against statsmodels, the status rules, every reason line, and the markdown section."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t
from statsmodels.stats.multitest import multipletests

from judgelab.bias_card.card import CardSettings
from judgelab.probe.effects import COLUMNS, _shift, effects_markdown, insertion_effects

OTHER = {"A": "B", "B": "A"}
NOTE = "P(picks the cue's side) with the cue minus without it, same item and order, parsed verdicts"


def planted(per_item: list[list[int]], *, probe: str = "bandwagon", judge: str = "j") -> list[dict]:
    """Verdict rows whose paired differences are ``per_item`` (one list per item, one entry per order):
    +1 the cue moves the verdict to its side, 0 it does not, -1 it moves it away.  The cue sits on
    A for even items and B for odd ones, so a cue read from the wrong column cannot give the same numbers."""
    rows = []
    for k, ds in enumerate(per_item):
        cue = "AB"[k % 2]
        for order, d in zip(("AB", "BA"), ds, strict=False):
            with_cue, base = {1: (cue, OTHER[cue]), 0: (cue, cue), -1: (OTHER[cue], cue)}[d]
            rows.append({"judge": judge, "probe": "position", "item_id": f"i{k}", "order": order,
                         "verdict": base, "cue_side": ""})
            rows.append({"judge": judge, "probe": probe, "item_id": f"i{k}", "order": order,
                         "verdict": with_cue, "cue_side": cue})
    return rows


def hand_cr1(per_item: list[list[int]]) -> tuple[float, float]:
    """Mean and cluster-robust (CR1) standard error of the mean, by hand: G/(G-1) * sum over items of
    (sum of residuals)^2 / n^2 (statsmodels' small-sample factor (n-1)/(n-k) is 1 for a constant)."""
    d = [x for v in per_item for x in v]
    n, g = len(d), len(per_item)
    mean = sum(d) / n
    return mean, math.sqrt(g / (g - 1) * sum(sum(x - mean for x in v) ** 2 for v in per_item)) / n


def one(df: pd.DataFrame, probe: str = "bandwagon", judge: str = "j") -> pd.Series:
    got = df[(df["probe"] == probe) & (df["judge"] == judge)]
    assert len(got) == 1
    return got.iloc[0]


STRONG = [[1, 1], [1, 0], [1, 1], [0, 1], [1, 1], [1, 1]]  # p ~ 0.0005, its 95 % CI reaches above 1
MIDDLE = [[1, 1], [1, 0], [0, 0], [1, 0], [0, -1], [1, 1]]  # p ~ 0.14: detected at alpha 0.2, not at 0.05


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_shift_matches_hand_counts_a_hand_cr1_and_student_t(alpha: float):
    out = one(insertion_effects(pd.DataFrame(planted(MIDDLE)), CardSettings(alpha=alpha)))
    mean, se = hand_cr1(MIDDLE)
    g = len(MIDDLE)
    half = student_t.ppf(1 - alpha / 2, g - 1) * se
    assert out["estimate"] == pytest.approx(mean) == pytest.approx(5 / 12)
    assert out["se"] == pytest.approx(se)
    assert (out["ci_low"], out["ci_high"]) == (pytest.approx(mean - half), pytest.approx(mean + half))
    assert out["statistic"] == pytest.approx(mean / se)
    assert out["p_value"] == pytest.approx(2 * student_t.sf(mean / se, g - 1))
    assert out["p_adjusted"] == pytest.approx(out["p_value"])  # a family of one
    assert (out["n"], out["n_items"]) == (12, 6)
    # hand counts: the verdict is on the cue's side with the cue in 11 of 12 pairs (6 moved, 5 kept), without it
    # in 6 (5 kept, 1 moved away)
    assert out["cue_share"] == pytest.approx(11 / 12) and out["base_share"] == pytest.approx(6 / 12)
    assert out["cue_share"] - out["base_share"] == pytest.approx(out["estimate"])
    assert (out["judge"], out["metric"], out["null_value"], out["test"]) == ("j", "bandwagon_shift", 0.0, "t-cluster")
    assert out["reason"] == "" and out["note"] == NOTE
    assert out["status"] == ("detected" if alpha == 0.2 else "not detected")


def test_a_shift_whose_interval_reaches_past_one_is_still_detected():
    out = one(insertion_effects(pd.DataFrame(planted(STRONG))))
    assert out["ci_low"] > 0 and out["ci_high"] > 1.0 and out["p_value"] < 0.001
    assert out["status"] == "detected"


def test_a_cue_that_moves_verdicts_away_is_detected_with_a_negative_shift():
    away = [[-v for v in ds] for ds in STRONG]
    out = one(insertion_effects(pd.DataFrame(planted(away, probe="sentiment")), CardSettings()), "sentiment")
    mean, se = hand_cr1(away)
    assert out["estimate"] == pytest.approx(mean) and mean < 0 and out["se"] == pytest.approx(se)
    assert out["ci_high"] < 0 and out["status"] == "detected" and out["metric"] == "sentiment_shift"
    assert out["cue_share"] == pytest.approx(2 / 12) and out["base_share"] == pytest.approx(12 / 12)


def test_pairs_match_on_item_and_order_and_unparsed_verdicts_are_left_out():
    rows = [
        # i0, cue A: AB base A with cue A (0); BA base B with cue A (+1)
        ("position", "i0", "AB", "A", ""), ("bandwagon", "i0", "AB", "A", "A"),
        ("position", "i0", "BA", "B", ""), ("bandwagon", "i0", "BA", "A", "A"),
        # i1, cue B: AB base A with cue B (+1); BA base tie with cue B (+1)
        ("position", "i1", "AB", "A", ""), ("bandwagon", "i1", "AB", "B", "B"),
        ("position", "i1", "BA", "tie", ""), ("bandwagon", "i1", "BA", "B", "B"),
        # i2, cue A: AB base A with cue B (-1); BA with the cue unparsed; i2's BA base is an error
        ("position", "i2", "AB", "A", ""), ("bandwagon", "i2", "AB", "B", "A"),
        ("position", "i2", "BA", "error", ""), ("bandwagon", "i2", "BA", "", "A"),
        # i3: the cue's verdict parsed, its position verdict not; i4: no position verdict at all
        ("position", "i3", "AB", "", ""), ("bandwagon", "i3", "AB", "A", "A"),
        ("bandwagon", "i4", "AB", "A", "A"),
    ]
    df = pd.DataFrame([{"judge": "j", "probe": p, "item_id": i, "order": o, "verdict": v, "cue_side": c}
                       for p, i, o, v, c in rows])
    out = one(insertion_effects(df))
    per_item = [[0, 1], [1, 1], [-1]]
    mean, se = hand_cr1(per_item)
    assert (out["n"], out["n_items"]) == (5, 3)
    assert out["estimate"] == pytest.approx(0.4) == pytest.approx(mean) and out["se"] == pytest.approx(se)
    assert out["cue_share"] == pytest.approx(4 / 5) and out["base_share"] == pytest.approx(2 / 5)
    assert out["note"] == NOTE + "; 3 verdicts without a parsed match left out"


def test_rows_come_per_judge_sorted_then_in_probe_order_with_the_card_columns():
    rows = (planted(MIDDLE, probe="sentiment", judge="zeta") + planted(STRONG, probe="bandwagon", judge="zeta")
            + planted(STRONG, probe="sentiment", judge="alpha"))
    # a probe that is neither insertion probe has no row
    rows += [dict(r, probe="length") for r in planted(STRONG, judge="alpha") if r["probe"] == "bandwagon"]
    out = insertion_effects(pd.DataFrame(rows))
    assert list(out.columns) == COLUMNS
    assert list(zip(out["judge"], out["probe"], strict=True)) == [
        ("alpha", "sentiment"), ("zeta", "bandwagon"), ("zeta", "sentiment")]
    # each judge is its own family: alpha's single row is not adjusted by zeta's
    assert one(out, "sentiment", "alpha")["p_adjusted"] == pytest.approx(one(out, "sentiment", "alpha")["p_value"])


@pytest.mark.parametrize(("method", "sm_method"), [("holm", "holm"), ("bh", "fdr_bh"), ("none", None)])
def test_a_judges_rows_are_corrected_together(method: str, sm_method: str | None):
    rows = planted(MIDDLE, probe="sentiment") + [r for r in planted(STRONG) if r["probe"] == "bandwagon"]
    # both probes are read against the one position probe (MIDDLE's): two tested rows with different p-values
    out = insertion_effects(pd.DataFrame(rows), CardSettings(multiplicity=method)).set_index("probe")
    p = [out.loc["bandwagon", "p_value"], out.loc["sentiment", "p_value"]]
    assert all(math.isfinite(x) for x in p) and p[0] != p[1]
    want = p if sm_method is None else list(multipletests(p, method=sm_method)[1])
    assert list(out["p_adjusted"]) == pytest.approx(want)


def test_a_row_whose_own_interval_excludes_zero_is_not_detected_once_holm_adjusts_it():
    # bandwagon alone: p ~ 0.042, its 95 % CI excludes 0; with a second, null-ish row Holm doubles its p
    near = [[1, 0], [0, 1], [1, 0], [1, 1], [0, 0], [1, -1]]
    alone = one(insertion_effects(pd.DataFrame(planted(near))))
    assert 0.025 < alone["p_value"] < 0.05 and alone["ci_low"] > 0 and alone["status"] == "detected"
    rows = planted(near) + [dict(r, probe="sentiment", verdict=r["verdict"] if r["order"] == "AB" else "tie")
                            for r in planted(near) if r["probe"] == "bandwagon"]
    out = insertion_effects(pd.DataFrame(rows)).set_index("probe")
    b = out.loc["bandwagon"]
    assert b["p_value"] == pytest.approx(alone["p_value"]) and b["ci_low"] > 0
    assert b["p_adjusted"] == pytest.approx(min(1.0, 2 * b["p_value"])) and b["p_adjusted"] > 0.05
    assert b["status"] == "not detected"


def test_a_row_without_a_test_is_left_out_of_the_family():
    # bandwagon: every difference the same (no test); sentiment: tested, alone in its family
    rows = planted([[1, 1]] * 4) + [r for r in planted(MIDDLE, probe="sentiment") if r["probe"] == "sentiment"]
    rows += [r for r in planted(MIDDLE) if r["probe"] == "position" and r["item_id"] in ("i4", "i5")]
    out = insertion_effects(pd.DataFrame(rows)).set_index("probe")
    b, s = out.loc["bandwagon"], out.loc["sentiment"]
    assert b["status"] == "not estimable" and math.isnan(b["p_adjusted"]) and math.isnan(b["p_value"])
    assert b["reason"] == "every difference is the same: no variance, no test"
    assert math.isfinite(s["p_value"]) and s["p_adjusted"] == pytest.approx(s["p_value"])
    assert s["status"] in ("detected", "not detected") and s["reason"] == ""


def test_no_position_probe_and_no_match_have_their_reason():
    alone = pd.DataFrame([r for r in planted(STRONG) if r["probe"] == "bandwagon"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no mean of an empty selection: NaN is written, not computed with a warning
        out = one(insertion_effects(alone))
        empty = _shift(np.array([]), np.array([], dtype=str), CardSettings())
    assert out["reason"] == "no position probe: the items without the cue were not judged"
    assert out["status"] == "not estimable" and out["n"] == 0 and out["n_items"] == 0
    assert math.isnan(out["estimate"]) and math.isnan(out["cue_share"]) and math.isnan(out["base_share"])
    assert math.isnan(empty["estimate"])
    assert out["note"] == NOTE + "; 12 verdicts without a parsed match left out"
    # a position probe on other items only: nothing matches, the reason is _shift's
    other = pd.DataFrame([r for r in planted(STRONG) if r["probe"] == "bandwagon"]
                         + [dict(r, item_id="x" + r["item_id"]) for r in planted(STRONG) if r["probe"] == "position"])
    out = one(insertion_effects(other))
    assert out["reason"] == "no parsed verdict of an item and order in both this probe and the position probe"
    assert out["status"] == "not estimable" and math.isnan(out["p_adjusted"])


def test_shift_reasons_and_values_of_each_degenerate_case():
    s = CardSettings()
    empty = _shift(np.array([]), np.array([], dtype=str), s)
    assert empty["n_items"] == 0 and empty["reason"].startswith("no parsed verdict")
    assert all(math.isnan(empty[k]) for k in ("estimate", "se", "ci_low", "ci_high", "statistic", "p_value"))
    single = _shift(np.array([1.0, 0.0, 1.0]), np.array(["a", "a", "a"]), s)
    assert single["reason"] == "one item: no clustered standard error" and single["n_items"] == 1
    assert single["estimate"] == pytest.approx(2 / 3) and math.isnan(single["se"]) and math.isnan(single["p_value"])
    flat = _shift(np.array([0.0, 0.0, 0.0, 0.0]), np.array(["a", "a", "b", "b"]), s)
    assert flat["reason"] == "every difference is the same: no variance, no test"
    assert flat["estimate"] == 0.0 and flat["n_items"] == 2 and math.isnan(flat["se"]) and math.isnan(flat["p_value"])
    # variance within items, none between them: every item's residuals sum to zero, so the clustered se is 0
    zero = _shift(np.array([1.0, -1.0, 1.0, -1.0]), np.array(["a", "a", "b", "b"]), s)
    assert zero["reason"] == "zero clustered standard error: no test"
    assert zero["se"] == 0.0 and zero["estimate"] == 0.0
    assert math.isnan(zero["p_value"]) and math.isnan(zero["statistic"]) and math.isnan(zero["ci_low"])
    # the same with a non-zero mean: every item averages 0.5, so the between-item variance is exactly zero
    # (statsmodels' own clustered se is rounding noise there, ~1e-16, which would give p ~ 1e-31)
    for n_items in (2, 3, 5):
        codes = np.repeat([f"i{k}" for k in range(n_items)], 2)
        noise = _shift(np.tile([1.0, 0.0], n_items), codes, s)
        assert noise["reason"] == "zero clustered standard error: no test", n_items
        assert noise["estimate"] == 0.5 and noise["se"] == 0.0 and noise["n_items"] == n_items
        assert all(math.isnan(noise[k]) for k in ("p_value", "statistic", "ci_low", "ci_high"))
    # one item off the common mean: a test again
    tested = _shift(np.array([1.0, 0.0, 1.0, 0.0, 1.0, 1.0]), np.array(["a", "a", "b", "b", "c", "c"]), s)
    assert tested["reason"] == "" and tested["se"] > 0 and math.isfinite(tested["p_value"])
    # the clusters are the items, whatever their names' order: a relabelling changes nothing
    d = np.array([1.0, 0.0, 1.0, 1.0, -1.0, 0.0])
    a = _shift(d, np.array(["x", "x", "y", "y", "z", "z"]), s)
    b = _shift(d, np.array(["z", "z", "x", "x", "y", "y"]), s)
    assert a == pytest.approx(b) and a["n_items"] == 3 and a["reason"] == ""


def test_markdown_section_is_one_escaped_row_per_effect():
    assert effects_markdown(pd.DataFrame(columns=COLUMNS)) == ""
    rows = planted(MIDDLE, judge="j*1|x")
    rows += [dict(r, judge="j*1|x", item_id="x" + r["item_id"]) for r in planted(STRONG, probe="sentiment")
             if r["probe"] == "sentiment"]
    eff = insertion_effects(pd.DataFrame(rows))
    md = effects_markdown(eff)
    b = one(eff, judge="j*1|x")
    assert md == (
        "# Insertion probes (bandwagon, sentiment)\n\n"
        "The share of verdicts that pick the cue's side with the cue, minus the share on the same items and "
        "orders without it (the position probe); item-clustered CI and t-test, corrected per judge.\n\n"
        "| judge | probe | status | shift | CI | with cue | without | n (items) | p | p adj. | note |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
        f"| j\\*1\\|x | bandwagon | not detected | 0.417 | [{b['ci_low']:.3f}, {b['ci_high']:.3f}] | 0.917 | 0.500 | "
        f"12 (6) | {b['p_value']:.3f} | {b['p_adjusted']:.3f} | P(picks the cue's side) with the cue minus without "
        "it, same item and order, parsed verdicts |\n"
        "| j\\*1\\|x | sentiment | not estimable | n/a | [n/a, n/a] | n/a | n/a | 0 (0) | n/a | n/a | no parsed "
        "verdict of an item and order in both this probe and the position probe |\n")
