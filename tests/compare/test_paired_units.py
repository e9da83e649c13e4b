"""``judgelab.compare.paired`` unit by unit: matching, the item resampling and the arithmetic around the card.

The card itself (``judge_card``) is replaced by a cheap stand-in (the mean of a column): what is under
test here is the pairing, the bootstrap over whole items, the interval, the Wald test, Holm and the
flips, each checked against an independent replay (pandas merges on the drawn items, numpy,
scipy, statsmodels). The real card through the same code: tests/compare/test_compare.py.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

from judgelab.bias_card.card import CardSettings
from judgelab.compare import paired
from judgelab.compare.paired import (
    COLUMNS,
    KEY,
    MIN_MATCHED_ITEMS,
    Matched,
    _estimates,
    _keys,
    _resample,
    compare_cards,
    item_draws,
    item_rows,
    match,
    split_judges,
)
from judgelab.io import InputError


# ---- matching -------------------------------------------------------------------------------------------
def test_keys_read_absent_columns_as_zero_and_repeats_as_integers():
    t = pd.DataFrame({"item_id": [1, 2], "repeat": [np.nan, 2.0], "x": [0, 0]}, index=[5, 9])
    k = _keys(t)
    assert list(k.columns) == list(KEY) and list(k.index) == [5, 9]
    assert k.to_dict("records") == [{"item_id": "1", "pair_id": "0", "order": "0", "repeat": "0"},
                                    {"item_id": "2", "pair_id": "0", "order": "0", "repeat": "2"}]
    assert _keys(pd.DataFrame({"item_id": ["a"], "pair_id": ["p"], "order": ["BA"]})).to_dict("records") == [
        {"item_id": "a", "pair_id": "p", "order": "BA", "repeat": "0"}]


def _log(items, orders=("AB", "BA"), **cols) -> pd.DataFrame:
    rows = [{"item_id": i, "pair_id": f"p{i}", "order": o, "repeat": 0} for i in items for o in orders]
    t = pd.DataFrame(rows)
    for k, v in cols.items():
        t[k] = v
    return t


def test_match_pairs_the_same_presentation_on_both_sides_in_one_order():
    before = _log(["b", "a", "c"], x=np.arange(6.0))
    after = _log(["c", "a", "d"]).iloc[::-1].reset_index(drop=True)  # another order, another item
    after["x"] = np.arange(6.0) * 10
    m = match(before, after)
    keys = [("a", "pa", "AB"), ("a", "pa", "BA"), ("c", "pc", "AB"), ("c", "pc", "BA")]
    assert list(zip(m.before["item_id"], m.before["pair_id"], m.before["order"], strict=True)) == keys
    assert list(zip(m.after["item_id"], m.after["pair_id"], m.after["order"], strict=True)) == keys
    assert list(m.before.index) == [0, 1, 2, 3] and list(m.after.index) == [0, 1, 2, 3]
    # the values travel with their presentation
    assert list(m.before["x"]) == [2.0, 3.0, 4.0, 5.0]
    assert list(m.after["x"]) == [30.0, 20.0, 50.0, 40.0]  # reversed: a/AB is row 3 of 0..5, c/AB row 5
    assert m.n_items == 2
    assert m.unmatched.to_dict("records") == [
        {"side": "before", "item_id": "b", "pair_id": "pb", "order": "AB", "repeat": "0"},
        {"side": "before", "item_id": "b", "pair_id": "pb", "order": "BA", "repeat": "0"},
        {"side": "after", "item_id": "d", "pair_id": "pd", "order": "BA", "repeat": "0"},
        {"side": "after", "item_id": "d", "pair_id": "pd", "order": "AB", "repeat": "0"}]
    assert list(m.unmatched.index) == [0, 1, 2, 3]


def test_match_reads_ids_as_text_and_a_missing_repeat_as_zero():
    before = pd.DataFrame({"item_id": [1, 2], "pair_id": [1, 2], "order": ["AB", "AB"], "repeat": [0.0, 1.0]})
    after = pd.DataFrame({"item_id": ["1", "2"], "pair_id": ["1", "2"], "order": ["AB", "AB"]})
    m = match(before, after)
    assert len(m.before) == 1 and m.before["item_id"].tolist() == [1] and m.after["item_id"].tolist() == ["1"]
    assert m.unmatched[["side", "item_id", "repeat"]].values.tolist() == [["before", "2", "1"], ["after", "2", "0"]]


@pytest.mark.parametrize("side", ["before", "after"])
def test_a_presentation_recorded_twice_is_named(side):
    twice = _log(["a", "a"], orders=("AB",))
    once = _log(["a"], orders=("AB",))
    logs = (twice, once) if side == "before" else (once, twice)
    msg = (f"compare: the {side} log records one presentation twice ({{'item_id': 'a', 'pair_id': 'pa', "
           f"'order': 'AB', 'repeat': '0'}}); give each repetition its own 'repeat'")
    with pytest.raises(InputError, match=f"^{re.escape(msg)}$"):
        match(*logs)


# ---- the item resampling -------------------------------------------------------------------------------------
def test_item_draws_are_numpys_integers_with_replacement():
    got = item_draws(7, 5, 11)
    assert got.shape == (5, 7)
    assert (got == np.random.default_rng(11).integers(0, 7, size=(5, 7))).all()


def test_item_rows_sort_ids_as_text_and_keep_row_order():
    t = pd.DataFrame({"item_id": [10, 2, 10, 3, 2, 10]})
    items, rows_of = item_rows(t)
    assert items.tolist() == ["10", "2", "3"]
    assert [r.tolist() for r in rows_of] == [[0, 2, 5], [1, 4], [3]]
    # many rows (numpy's default sort is not stable there): each item's rows stay in table order
    big = pd.DataFrame({"item_id": np.random.default_rng(0).integers(0, 3, 5000)})
    items, rows_of = item_rows(big)
    assert items.tolist() == ["0", "1", "2"]
    for k, rows in enumerate(rows_of):
        assert rows.tolist() == np.flatnonzero(big["item_id"].to_numpy() == k).tolist()


def test_resample_copies_drawn_items_under_their_own_ids():
    t = pd.DataFrame({"item_id": ["a", "a", "b"], "pair_id": ["p", "p", "q"], "x": [1, 2, 3]}, index=[7, 8, 9])
    _, rows_of = item_rows(t)
    out = _resample(t, rows_of, np.array([1, 0, 1]))
    assert out.to_dict("records") == [
        {"item_id": "b#0", "pair_id": "q#0", "x": 3},
        {"item_id": "a#1", "pair_id": "p#1", "x": 1},
        {"item_id": "a#1", "pair_id": "p#1", "x": 2},
        {"item_id": "b#2", "pair_id": "q#2", "x": 3}]
    assert list(out.index) == [0, 1, 2, 3]
    assert t["item_id"].tolist() == ["a", "a", "b"]  # the matched table is not touched


# ---- the comparison, with a stand-in card ----------------------------------------------------------------------
def _fake_card(t: pd.DataFrame, s: CardSettings, view: str) -> list[dict]:
    """A card whose rows are plain means: ``mean`` (of x, scaled per view, plus the settings'
    length margin, so that the settings must reach it), ``const`` (no variance), ``rare`` (NaN unless
    item r00 is present), ``gone`` (no row unless r00 is present), ``nan_side`` (NaN where column y is
    all NaN), and ``solo`` (only on a side with column z)."""
    s = s or CardSettings()
    scale = 1.0 if view == "lenient" else 2.0
    mean = float(t["x"].mean()) * scale + s.length_margin - 0.2
    rows = [{"metric": "mean", "estimate": mean, "status": "detected" if mean > 0.4 else "not detected"},
            {"metric": "const", "estimate": np.int64(1), "status": 3},
            {"metric": "rare", "estimate": 1.0 if t["item_id"].astype(str).str.startswith("r0").any() else np.nan,
             "status": "x"},
            {"metric": "nan_side", "estimate": float(t["y"].mean()), "status": "x"}]
    if "z" in t.columns:
        rows.append({"metric": "solo", "estimate": 0.0, "status": "x"})
    if t["item_id"].astype(str).str.startswith("r0").any():
        rows.append({"metric": "gone", "estimate": 2.0, "status": "x"})
    return rows


@pytest.fixture
def fake_card(monkeypatch):
    monkeypatch.setattr(paired, "judge_card", _fake_card)


def _pair(n_items: int, seed: int = 0) -> Matched:
    """``n_items`` items, two presentations each; ``after`` adds 0.3 to x on even items."""
    rng = np.random.default_rng(seed)
    ids = [f"i{k:02d}" for k in range(n_items)]
    before = _log(ids, x=0.6 * rng.random(2 * n_items), y=1.0)
    after = before.copy()
    after["x"] = before["x"] + np.where(np.arange(2 * n_items) // 2 % 2 == 0, 0.3, 0.0)
    after["y"] = np.nan
    after["z"] = 1
    return match(before, after)


def _replay(m: Matched, resamples: int, seed: int) -> np.ndarray:
    """The bootstrap differences of ``mean`` by hand: the same draws, each item weighted by how often
    it is drawn (sums and counts per item, numpy only)."""
    items = np.sort(m.before["item_id"].astype(str).unique())
    code = pd.Index(items).get_indexer(m.before["item_id"].astype(str))
    count = np.bincount(code, minlength=len(items))
    sum_b = np.bincount(code, weights=m.before["x"].to_numpy(), minlength=len(items))
    sum_a = np.bincount(code, weights=m.after["x"].to_numpy(), minlength=len(items))
    times = np.array([np.bincount(d, minlength=len(items)) for d in item_draws(len(items), resamples, seed)])
    return (times @ sum_a - times @ sum_b) / (times @ count)


def test_the_paired_difference_interval_and_test_of_a_row(fake_card):
    m = _pair(24)
    s = CardSettings(alpha=0.1)
    res = compare_cards(m, s, resamples=40, seed=3)
    assert list(res.columns) == COLUMNS
    row = res[(res["view"] == "lenient") & (res["metric"] == "mean")].iloc[0]
    before, after = m.before["x"].mean(), m.after["x"].mean()
    assert row["before"] == pytest.approx(before) and row["after"] == pytest.approx(after)
    assert row["diff"] == pytest.approx(after - before) and row["diff"] == pytest.approx(0.15)
    diffs = _replay(m, 40, 3)
    lo, hi = np.quantile(diffs, [0.05, 0.95])
    se = np.std(diffs, ddof=1)
    assert (row["ci_low"], row["ci_high"], row["se"]) == pytest.approx((lo, hi, se))
    assert row["p_value"] == pytest.approx(2 * norm.sf(0.15 / se))
    assert row["test_reason"] == "" and row["n_items"] == 24 and not row["underpowered"]
    assert (row["status_before"], row["status_after"]) == ("not detected", "detected")
    assert row["flip"] == "not detected -> detected"
    strict = res[(res["view"] == "strict") & (res["metric"] == "mean")].iloc[0]
    assert strict["diff"] == pytest.approx(0.30) and strict["se"] == pytest.approx(2 * se)
    assert (strict["status_before"], strict["status_after"], strict["flip"]) == ("detected", "detected", "")


def test_rows_without_a_test_say_why(fake_card):
    res = compare_cards(_pair(24), CardSettings(views=("lenient",)), resamples=40, seed=3).set_index("metric")
    assert list(res.index) == ["mean", "const", "rare", "nan_side"]  # solo: only the after side has it
    const = res.loc["const"]
    assert (const["before"], const["after"], const["diff"], const["ci_low"], const["ci_high"], const["se"]) == (
        1.0, 1.0, 0.0, 0.0, 0.0, 0.0)
    assert const["test_reason"] == "the resampled differences do not vary: no variance, no test"
    assert np.isnan(const["p_value"]) and np.isnan(const["p_adjusted"]) and not const["significant"]
    assert (const["status_before"], const["status_after"], const["flip"]) == ("3", "3", "")
    nan_side = res.loc["nan_side"]
    assert nan_side["test_reason"] == "a side has no estimate"
    assert np.isnan(nan_side[["diff", "ci_low", "ci_high", "se", "p_value", "p_adjusted"]].astype(float)).all()
    assert nan_side["before"] == 1.0 and np.isnan(nan_side["after"])


def _rare_count(m: Matched, resamples: int, seed: int) -> int:
    """Resamples that draw item r0 at least once (the only ones where ``rare`` has both estimates)."""
    items = np.sort(m.before["item_id"].astype(str).unique())
    return int(sum((items[d] == "r00").any() for d in item_draws(len(items), resamples, seed)))


def _with_rare(n_items: int) -> Matched:
    m = _pair(n_items)
    for t in (m.before, m.after):
        t.loc[t["item_id"] == "i00", "item_id"] = "r00"
    return m


def _seed_with(m: Matched, resamples: int, count: int) -> int:
    return next(s for s in range(5000) if _rare_count(m, resamples, s) == count)


@pytest.mark.parametrize("resamples,count,tested", [(20, 10, True), (20, 9, False), (25, 12, True),
                                                    (25, 11, False), (14, 10, True), (14, 9, False)])
def test_a_row_needs_half_the_resamples_and_at_least_ten(fake_card, resamples, count, tested):
    """``rare`` has both estimates only on resamples that draw item r00: tested when that happens on at
    least max(10, resamples // 2) of them (seeds found by counting the draws independently)."""
    m = _with_rare(30)
    seed = _seed_with(m, resamples, count)
    res = compare_cards(m, CardSettings(views=("lenient",)), resamples=resamples, seed=seed).set_index("metric")
    for row in (res.loc["rare"], res.loc["gone"]):  # a NaN estimate, or no row at all
        if tested:  # the differences are all 0: tested for variance, which it has not
            assert row["test_reason"] == "the resampled differences do not vary: no variance, no test"
            assert (row["ci_low"], row["ci_high"], row["se"]) == (0.0, 0.0, 0.0)
        else:
            assert row["test_reason"] == f"only {count} of {resamples} resamples gave both estimates"
            assert np.isnan(row[["ci_low", "ci_high", "se"]].astype(float)).all()


def test_holm_runs_per_view_over_the_tested_rows(fake_card, monkeypatch):
    """Two rows whose differences are noise (p-values far from 0, where Holm and statsmodels'
    default Holm-Sidak differ) and the shifted ``mean``: Holm over the tested rows of each view."""
    def card(t, s, view):
        rows = _fake_card(t, s, view)
        return [*rows, *({"metric": w, "estimate": float(t[w].mean()), "status": "x"} for w in ("w1", "w2"))]

    monkeypatch.setattr(paired, "judge_card", card)
    m = _pair(22, seed=5)
    rng = np.random.default_rng(8)
    for t in (m.before, m.after):
        t["w1"], t["w2"] = rng.normal(0, 1, len(t)), rng.normal(0, 1, len(t))
    res = compare_cards(m, CardSettings(alpha=0.05), resamples=30, seed=1)
    for view in ("lenient", "strict"):
        v = res[res["view"] == view].set_index("metric")
        tested = v[v["p_value"].notna()]
        assert list(tested.index) == ["mean", "w1", "w2"]
        assert ((tested.loc[["w1", "w2"], "p_value"] > 0.05) & (tested.loc[["w1", "w2"], "p_value"] < 0.9)).all()
        adj = multipletests(tested["p_value"].to_numpy(float), method="holm")[1]
        assert tested["p_adjusted"].tolist() == pytest.approx(adj.tolist(), rel=1e-12)
        assert (v["significant"] == (v["p_adjusted"] < 0.05)).all()
        assert v["p_adjusted"].drop(tested.index).isna().all()
    assert res["significant"].dtype == bool


def test_rounding_noise_is_no_variance(fake_card, monkeypatch):
    """After = before + 0.3 on every row: the resampled differences of a row scaled by 1e4 are
    3000 up to rounding (their standard deviation about 1e-12, far below 1e-12 x |diff|): no test."""
    monkeypatch.setattr(paired, "judge_card", lambda t, s, view: [
        {"metric": "big", "estimate": 1e4 * float(t["x"].mean()), "status": "x"}])
    m = _pair(24)
    m.after["x"] = m.before["x"] + 0.3
    row = compare_cards(m, CardSettings(views=("lenient",)), resamples=40, seed=1).iloc[0]
    assert row["diff"] == pytest.approx(3000.0) and 0 < row["se"] < 1e-9
    assert row["test_reason"] == "the resampled differences do not vary: no variance, no test"
    assert np.isnan(row["p_value"])


def test_the_settings_reach_every_card_of_both_sides(fake_card):
    """The stand-in card adds the length margin to ``mean``: a side or a resample computed with the
    default settings instead would move before, after or the interval."""
    m = _pair(24)
    res = compare_cards(m, CardSettings(views=("lenient",), length_margin=0.7), resamples=20, seed=3)
    row = res.set_index("metric").loc["mean"]
    assert row["before"] == pytest.approx(m.before["x"].mean() + 0.5)
    assert row["after"] == pytest.approx(m.after["x"].mean() + 0.5)
    diffs = _replay(m, 20, 3)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(np.quantile(diffs, [0.025, 0.975])))


def test_significance_is_read_at_the_settings_alpha(fake_card):
    m = _pair(24)
    p = compare_cards(m, CardSettings(views=("lenient",)), resamples=20, seed=3).set_index("metric").loc[
        "mean", "p_adjusted"]
    for alpha, expected in ((p * 1.01, True), (p, False), (p * 0.99, False)):  # significant: p < alpha
        res = compare_cards(m, CardSettings(views=("lenient",), alpha=alpha), resamples=20, seed=3)
        assert bool(res.set_index("metric").loc["mean", "significant"]) is expected


def test_defaults_are_200_resamples_and_seed_0(fake_card):
    m = _pair(24)
    row = compare_cards(m, CardSettings(views=("lenient",))).set_index("metric").loc["mean"]
    diffs = _replay(m, 200, 0)
    assert (row["ci_low"], row["ci_high"], row["se"]) == pytest.approx(
        (*np.quantile(diffs, [0.025, 0.975]), np.std(diffs, ddof=1)))


def test_without_settings_the_card_defaults_apply(fake_card):
    res = compare_cards(_pair(24), resamples=20)
    assert res["view"].tolist() == ["lenient"] * 4 + ["strict"] * 4
    row = res.set_index(["view", "metric"]).loc[("lenient", "mean")]
    diffs = _replay(_pair(24), 20, 0)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(np.quantile(diffs, [0.025, 0.975])))


@pytest.mark.parametrize("n_items,under", [(MIN_MATCHED_ITEMS - 1, True), (MIN_MATCHED_ITEMS, False)])
def test_fewer_than_twenty_matched_items_is_underpowered(fake_card, n_items, under):
    assert MIN_MATCHED_ITEMS == 20
    res = compare_cards(_pair(n_items), CardSettings(views=("lenient",)), resamples=20)
    assert res["underpowered"].tolist() == [under] * 4 and res["n_items"].tolist() == [n_items] * 4


def test_nothing_matched_is_an_error_counting_the_unmatched():
    m = match(_log(["a", "b"]), _log(["c"]))
    with pytest.raises(InputError, match=r"^compare: no presentation was recorded on both sides; nothing to "
                                         r"compare \(6 unmatched\)$"):
        compare_cards(m)


def test_estimates_are_floats_and_statuses_text(fake_card):
    got = _estimates(_log(["a"], x=[0.2, 0.3], y=1.0), CardSettings(), "strict")
    assert got["mean"] == (pytest.approx(0.5), "detected") and type(got["const"][0]) is float
    assert got["const"] == (1.0, "3")


# ---- --judges -----------------------------------------------------------------------------------------------
JUDGES = pd.DataFrame({"judge": ["old", "new", "old", "newer", 7], "x": [1, 2, 3, 4, 5]})


def test_split_judges_keeps_each_judges_rows():
    b, a, names = split_judges(JUDGES, " old , newer")
    assert b["x"].tolist() == [1, 3] and a["x"].tolist() == [4] and names == ("old", "newer")
    assert split_judges(JUDGES, "7,new")[0]["x"].tolist() == [5]  # names compared as text


@pytest.mark.parametrize("names", ["old", "old,new,newer", "old,", ",new", " , "])
def test_judges_wants_exactly_two_names(names):
    with pytest.raises(InputError, match=f"^{re.escape(f'--judges wants two judge names, OLD,NEW; got {names!r}')}$"):
        split_judges(JUDGES, names)


def test_an_unknown_judge_is_named_with_the_closest_or_the_list():
    with pytest.raises(InputError, match=r"^--judges: no judge 'olld' in the log; did you mean 'old'\?$"):
        split_judges(JUDGES, "olld,new")
    with pytest.raises(InputError, match=r"^--judges: no judge 'zzz' in the log \(judges: 7, new, newer, old\)$"):
        split_judges(JUDGES, "zzz,old")
    many = pd.DataFrame({"judge": [f"j{k:02d}" for k in range(14)]})
    with pytest.raises(InputError, match=r"\(judges: j00, j01, j02, j03, j04, j05, j06, j07, j08, j09, j10, j11\)$"):
        split_judges(many, "j00,qqq")


def test_a_comparison_without_any_test_keeps_numeric_columns(fake_card, monkeypatch):
    """Every row without an estimate on a side: the interval columns are still float (NaN), as
    compare.csv and the gate read them."""
    monkeypatch.setattr(paired, "judge_card", lambda t, s, view: [r for r in _fake_card(t, s, view)
                                                                  if r["metric"] == "nan_side"])
    res = compare_cards(_pair(24), CardSettings(views=("lenient",)), resamples=20)
    assert res["test_reason"].tolist() == ["a side has no estimate"]
    for col in ("diff", "ci_low", "ci_high", "se", "p_value", "p_adjusted"):
        assert res[col].dtype == np.float64 and res[col].isna().all()
