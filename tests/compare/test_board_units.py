"""``judgelab.compare.board`` unit by unit, on small synthetic logs.

``compare_boards`` runs with stand-ins for the battles, the leaderboard and the resampled scores (a
mean of a column per model), so what is under test is its own work: the notes, the models' union,
the interval, Wald test and Holm per score, the agreement check, the rank flips and statuses; each
checked against a replay by hand (numpy, scipy, statsmodels). ``resampled_scores`` runs on real
battles against hand counts. The real board through the same code: tests/compare/test_board.py.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

from judgelab.bias_card.card import CardSettings
from judgelab.board import table as board_table
from judgelab.board.battles import Battles
from judgelab.board.bias_aware import bias_aware
from judgelab.compare import board
from judgelab.compare.board import (
    BOARD_COLUMNS,
    FLIP_COLUMNS,
    MIN_RANKED_MODELS,
    NOT_RESAMPLED,
    RESAMPLED,
    SCORES,
    BoardComparison,
    _rank,
    _ranks,
    _same,
    _status,
    board_note,
    compare_boards,
    rank_flips,
    ranked_models,
    resampled_scores,
    skipped,
)
from judgelab.compare.paired import item_draws, match
from judgelab.io import InputError


def _exact(msg: str) -> str:
    return f"^{re.escape(msg)}$"


# ---- the note, the skipped comparison -------------------------------------------------------------------------
def test_board_note_says_why_there_is_no_leaderboard():
    assert board_note(pd.DataFrame()) == "no presentation was recorded on both sides"
    assert board_note(pd.DataFrame({"model_b": ["x"]})) == (
        "the log names no models (model_a is empty): there is no leaderboard to compare")
    assert board_note(pd.DataFrame({"model_a": ["x"], "model_b": [None]})) == (
        "the log names no models (model_b is empty): there is no leaderboard to compare")
    two = pd.DataFrame({"model_a": ["base", "base", None], "model_b": ["m1", "m1", "m1"]})
    assert board_note(two) == "2 model(s) in the log: a leaderboard needs 2 to rank besides the baseline"
    as_text = pd.DataFrame({"model_a": ["base", 1], "model_b": ["1", 1]})  # 1 and "1" are one model
    assert board_note(as_text) == "2 model(s) in the log: a leaderboard needs 2 to rank besides the baseline"
    assert board_note(pd.DataFrame({"model_a": ["base", "base"], "model_b": ["m1", "m2"]})) == ""
    assert MIN_RANKED_MODELS == 2


def test_skipped_has_empty_tables_and_the_note():
    s = skipped("why")
    assert list(s.table.columns) == BOARD_COLUMNS and s.table.empty
    assert list(s.flips.columns) == FLIP_COLUMNS and s.flips.empty
    assert (s.note, s.baseline, s.compared) == ("why", "", False)
    assert BoardComparison(s.table, s.flips).compared is True


# ---- small helpers ----------------------------------------------------------------------------------------------
def test_ranked_models_leave_out_the_reference():
    assert ranked_models(SimpleNamespace(n_models=5)) == 4


def test_ranks_are_descending_with_ties_at_the_minimum():
    assert _ranks(pd.Series([10.0, 30.0, 30.0, np.nan, 5.0])).tolist()[:3] == [3.0, 1.0, 1.0]
    assert np.isnan(_ranks(pd.Series([1.0, np.nan])).iloc[1])


def test_same_within_a_relative_billionth():
    assert _same(0.0, 1e-9) and not _same(0.0, 1.5e-9)  # at most 1: absolute 1e-9
    assert _same(1000.0, 1000.0000005) and not _same(1000.0, 1000.000002)  # relative above 1
    assert _same(np.nan, np.nan) and _same(np.nan, "nan") and _same(3.0, "3")
    assert not _same(np.nan, 1.0) and not _same(1.0, np.nan)


def test_rank_text_and_status():
    assert (_rank(3.0), _rank(np.nan)) == ("3", "-")
    b = pd.DataFrame({"win_rate": [50.0, np.nan], "lc_status": ["ok", np.nan]}, index=["m1", "m2"])
    assert _status(b, "m1", "lc_win_rate", "lc_status") == "ok"
    assert _status(b, "m2", "lc_win_rate", "lc_status") == ""
    assert (_status(b, "m1", "win_rate", None), _status(b, "m2", "win_rate", None)) == ("ok", "no games")


def test_rank_flips_are_the_strictly_reversed_pairs():
    before = pd.Series({"a": 3.0, "b": 2.0, "c": 1.0, "d": 2.0, "e": np.nan, "f": 0.0})
    after = pd.Series({"e": 9.0, "d": 0.5, "c": 5.0, "b": 2.0, "a": 1.0, "f": 0.5})  # aligned by model
    f = rank_flips(before, after, "win_rate")
    assert list(f.columns) == FLIP_COLUMNS
    assert f.to_dict("records") == [
        {"correction": "win_rate", "model_1": "a", "model_2": "b", "before_1": 3.0, "before_2": 2.0, "after_1": 1.0,
         "after_2": 2.0},
        {"correction": "win_rate", "model_1": "a", "model_2": "c", "before_1": 3.0, "before_2": 1.0, "after_1": 1.0,
         "after_2": 5.0},
        {"correction": "win_rate", "model_1": "b", "model_2": "c", "before_1": 2.0, "before_2": 1.0, "after_1": 2.0,
         "after_2": 5.0},
        {"correction": "win_rate", "model_1": "d", "model_2": "c", "before_1": 2.0, "before_2": 1.0, "after_1": 0.5,
         "after_2": 5.0}]
    # b and d tie before: no pair; d and f tie after: no pair; e has no number before: in no pair
    empty = rank_flips(before, before, "x")
    assert empty.empty and list(empty.columns) == FLIP_COLUMNS


def test_rank_flips_read_an_empty_cell_as_no_number():
    """Object columns (a board column with None cells) are read as numbers: None takes part in no pair."""
    before = pd.Series({"a": 2, "b": 1, "c": None}, dtype=object)
    after = pd.Series({"a": 1, "b": 2, "c": 3}, dtype=object)
    f = rank_flips(before, after, "s")
    assert list(zip(f["model_1"], f["model_2"], strict=True)) == [("a", "b")]
    assert rank_flips(after, before, "s")[["model_1", "model_2"]].values.tolist() == [["b", "a"]]


def test_battles_are_read_by_the_boards_reader():
    t = pd.DataFrame({"item_id": ["i0", "i0", "i1", "i1"], "pair_id": ["p0", "p0", "p1", "p1"],
                      "order": ["AB", "BA"] * 2, "model_a": "base", "model_b": ["m1", "m1", "m2", "m2"],
                      "response_a": "a b c", "response_b": "d e", "preference": [1.0, 0.0, 1.0, 1.0],
                      "status": "ok", "source_file": "f", "source_row": range(4), "judge": "j", "simulated": False})
    b = board._battles(t)
    assert sorted(b.models) == ["base", "m1", "m2"] and len(b) == 4


# ---- resampled_scores on real battles -------------------------------------------------------------------------
def _battles(models, a, b, pref_b, item, baseline):
    n = len(a)
    rng = np.random.default_rng(0)
    style = rng.integers(1, 50, size=(n, 4)).astype(float)
    return Battles(models=models, a=np.array(a), b=np.array(b), pref_b=np.array(pref_b, float),
                   b_first=np.arange(n) % 2 == 0, weight=np.ones(n), item=np.array(item),
                   items=[f"q{i}" for i in range(max(item) + 1)], row=np.arange(n), judge=np.zeros(n, int),
                   judges=["j"], len_a=style[:, 0], len_b=style[::-1, 0].copy(), style_a=style,
                   style_b=style[::-1].copy(), style_source="test", failed={},
                   baseline=baseline, reference=baseline or models[0], simulated=False, sources={})


def test_resampled_scores_of_baseline_battles_are_the_models_win_shares():
    # models: base (code 1), m1 (0), m2 (2); the model is stored A or B
    a = [1, 1, 0, 1, 2, 1, 2, 1]
    b = [0, 0, 1, 2, 1, 2, 1, 0]
    pref = [1.0, 0.0, 1.0, 1.0, 0.5, 0.0, 0.0, 1.0]
    item = [0, 1, 2, 0, 1, 2, 3, 3]
    bt = _battles(["m1", "base", "m2"], a, b, pref, item, "base")
    got = resampled_scores(bt, 0.05)
    # m1: B wins 1, B loses 0, A vs base with pref_b 1 -> 0, B wins 1: 2 of 4
    # m2: B wins 1, A with pref_b 0.5 -> 0.5, B loses 0, A with pref_b 0 -> 1: 2.5 of 4
    assert got["win_rate"] == pytest.approx({"m1": 50.0, "m2": 62.5})
    assert list(got) == ["win_rate", "bias_aware"] and list(got["win_rate"]) == ["m1", "m2"]
    assert list(got["bias_aware"]) == ["m1", "m2"]


def _random_battles(baseline):
    """120 games of three models, enough for the bias-aware fit to give every model a score."""
    rng = np.random.default_rng(5)
    n = 120
    if baseline:
        other = rng.choice([0, 2], n)
        flip = rng.random(n) < 0.5
        a, b = np.where(flip, 1, other), np.where(flip, other, 1)
    else:
        a = rng.integers(0, 3, n)
        b = (a + rng.integers(1, 3, n)) % 3
    return _battles(["m1", "base", "m2"], a.tolist(), b.tolist(), (rng.random(n) < 0.5).astype(float).tolist(),
                    (np.arange(n) // 3).tolist(), baseline)


@pytest.mark.parametrize("baseline", ["base", None])
def test_resampled_bias_aware_scores_are_the_fits_per_model_name(baseline):
    bt = _random_battles(baseline)
    ba = bias_aware(bt, alpha=0.05)
    assert np.isfinite(ba.score).all()
    expected = {"m1": ba.score[0], "m2": ba.score[2]} | ({} if baseline else {"base": ba.score[1]})
    got = resampled_scores(bt, 0.05)["bias_aware"]
    assert got == pytest.approx(expected) and sorted(got) == sorted(expected)


def test_resampled_scores_of_free_battles_count_each_game_for_both_sides():
    a = [0, 1, 2, 0, 1, 2]
    b = [1, 2, 0, 2, 0, 1]
    pref = [1.0, 0.0, 1.0, 0.5, 1.0, 0.0]
    bt = _battles(["x", "y", "z"], a, b, pref, [0, 0, 1, 1, 2, 2], None)
    got = resampled_scores(bt, 0.05)
    wins = {m: [] for m in range(3)}
    for ai, bi, p in zip(a, b, pref, strict=True):
        wins[ai].append(1 - p)
        wins[bi].append(p)
    assert got["win_rate"] == pytest.approx({n: 100 * np.mean(wins[m]) for m, n in enumerate(["x", "y", "z"])})
    assert got["win_rate"]["x"] == pytest.approx(62.5)
    assert list(got["bias_aware"]) == ["x", "y", "z"]  # no baseline: every model has a row


# ---- compare_boards with stand-ins ------------------------------------------------------------------------------
MODELS = ("m1", "m2", "m3")
BEFORE_MEAN = {"m1": 0.8, "m2": 0.5, "m3": 0.2}
AFTER_MEAN = {"m1": 0.3, "m2": 0.5, "m3": 0.7}
LC = {"before": {"m1": 60.0, "m2": 50.0, "m3": 40.0}, "after": {"m1": 61.0, "m2": 52.0, "m3": 40.0}}
STYLE = {"before": {"m1": 50.0, "m2": 50.0, "m3": 40.0}, "after": {"m1": 40.0, "m2": 60.0, "m3": np.nan}}


def _log(side: str, n_items: int, seed: int, means) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [{"item_id": f"i{i:02d}", "pair_id": f"i{i:02d}|{m}", "order": o, "repeat": 0, "model_a": "base",
             "model_b": m, "response_a": "t", "response_b": "u", "side": side,
             "x": float(np.clip(means[m] + rng.normal(0, 0.2), 0, 1))}
            for i in range(n_items) for m in MODELS for o in ("AB", "BA")]
    return pd.DataFrame(rows)


WIN_SCALE = {"win_rate": 100.0}


def _scores(t: pd.DataFrame) -> dict[str, dict[str, float]]:
    """The stand-in's two resampled scores: WIN_SCALE (100) x mean x per model, and mean x / 2."""
    mean = t.groupby("model_b")["x"].mean().dropna()
    return {"win_rate": {k: WIN_SCALE["win_rate"] * float(v) for k, v in mean.items()},
            "bias_aware": {k: float(v) / 2 for k, v in mean.items()}}


class Fakes:
    def __init__(self, monkeypatch, *, board_off: dict | None = None, fail_on=None, drop: dict | None = None):
        self.drop = drop or {}
        self.scores_calls = 0
        self.settings = []
        self.board_off = board_off or {}
        self.fail_on = fail_on
        monkeypatch.setattr(board, "_battles", self.battles)
        monkeypatch.setattr(board, "resampled_scores", self.resampled)
        monkeypatch.setattr(board_table, "leaderboard", self.leaderboard)

    def battles(self, t):
        if self.fail_on is not None and self.fail_on(t):
            raise InputError("no usable verdict")
        return SimpleNamespace(t=t, n_models=1 + t["model_b"].nunique(), reference="base")

    def resampled(self, b, alpha):
        assert alpha == self.alpha
        self.scores_calls += 1
        return _scores(b.t)

    def leaderboard(self, b, settings, *, judges):
        assert judges is False
        self.settings.append(settings)
        side = b.t["side"].iloc[0]
        sc = _scores(b.t)
        tab = pd.DataFrame({"model": list(MODELS)})
        tab["win_rate"] = [sc["win_rate"].get(m, np.nan) for m in MODELS]
        tab["bias_aware"] = [sc["bias_aware"].get(m, np.nan) + self.board_off.get(side, 0.0) for m in MODELS]
        tab["lc_win_rate"] = [LC[side][m] for m in MODELS]
        tab["style_controlled"] = [STYLE[side][m] for m in MODELS]
        tab["lc_status"] = "ok"
        tab["style_status"] = ["ok", "ok", "ok" if side == "before" else np.nan]
        tab["bias_aware_status"] = f"fit {side}"
        tab = tab[tab["model"] != self.drop.get(side)]
        return SimpleNamespace(table=tab.iloc[::-1])  # the board's own order: not the comparison's


def _matched(n_items: int = 22):
    return match(_log("before", n_items, 1, BEFORE_MEAN), _log("after", n_items, 2, AFTER_MEAN))


def _replay(m, score: str, model: str, resamples: int, seed: int) -> np.ndarray:
    """Bootstrap differences of one stand-in score by hand: per-item sums and counts of the model's x,
    weighted by how often each item is drawn."""
    items = np.sort(m.before["item_id"].astype(str).unique())
    scale = 100.0 if score == "win_rate" else 0.5
    out = []
    for t in (m.before, m.after):
        sel = t[t["model_b"] == model]
        code = pd.Index(items).get_indexer(sel["item_id"].astype(str))
        out.append((np.bincount(code, weights=sel["x"].to_numpy(), minlength=len(items)),
                    np.bincount(code, minlength=len(items))))
    times = np.array([np.bincount(d, minlength=len(items)) for d in item_draws(len(items), resamples, seed)])
    (sb, cb), (sa, ca) = out
    return scale * (times @ sa / (times @ ca) - times @ sb / (times @ cb))


def test_compare_boards_needs_the_texts():
    m = _matched(3)
    m.after = m.after.drop(columns="response_a")
    with pytest.raises(ValueError, match=_exact("compare_boards needs the answers' texts: import the logs with "
                                                "texts=True")):
        compare_boards(m)
    m = _matched(3)
    m.before = m.before.drop(columns="response_a")
    with pytest.raises(ValueError, match="needs the answers' texts"):
        compare_boards(m)


def test_a_side_without_models_skips_with_its_note(monkeypatch):
    Fakes(monkeypatch)
    m = _matched(3)
    m.after = m.after.assign(model_b=None)
    assert compare_boards(m).note == "the log names no models (model_b is empty): there is no leaderboard to compare"
    m = _matched(3)
    m.before = m.before.assign(model_a=None)
    assert compare_boards(m).note == "the log names no models (model_a is empty): there is no leaderboard to compare"


def test_battles_that_cannot_be_read_skip_with_the_reason(monkeypatch):
    Fakes(monkeypatch, fail_on=lambda t: t["side"].iloc[0] == "after")
    res = compare_boards(_matched(3))
    assert (res.note, res.compared) == ("no leaderboard: no usable verdict", False) and res.table.empty


@pytest.mark.parametrize("short_side", ["before", "after"])
def test_too_few_ranked_models_on_either_side_skip(monkeypatch, short_side):
    f = Fakes(monkeypatch)

    def battles(t):
        return SimpleNamespace(t=t, n_models=2 if t["side"].iloc[0] == short_side else 4, reference="base")

    monkeypatch.setattr(board, "_battles", battles)
    res = compare_boards(_matched(3))
    assert res.note == "1 model(s) besides the baseline 'base': a leaderboard needs 2 to rank"
    assert f.settings == []


def test_two_ranked_models_are_enough(monkeypatch):
    f = Fakes(monkeypatch)
    f.alpha = 0.05
    monkeypatch.setattr(board, "_battles", lambda t: SimpleNamespace(t=t, n_models=3, reference="base"))
    res = compare_boards(_matched(3), resamples=20)
    assert res.compared and len(f.settings) == 2


def test_every_score_before_after_and_the_resampled_intervals(monkeypatch):
    f = Fakes(monkeypatch)
    f.alpha = 0.1
    m = _matched()
    s = CardSettings(alpha=0.1, seed=9)
    res = compare_boards(m, s, resamples=30, seed=4, style_rounds=7)
    assert [(x.alpha, x.style_rounds, x.seed) for x in f.settings] == [(0.1, 7, 9)] * 2
    assert f.scores_calls == 2 + 2 * 30
    assert res.compared and res.baseline == "base" and res.note == ""
    t = res.table
    assert list(t.columns) == BOARD_COLUMNS
    assert list(zip(t["score"], t["model"], strict=True)) == [(sc, k) for sc in SCORES for k in MODELS]
    rows = t.set_index(["score", "model"])
    full_b, full_a = _scores(m.before), _scores(m.after)
    for score in RESAMPLED:
        for k in MODELS:
            r = rows.loc[(score, k)]
            assert (r["before"], r["after"]) == pytest.approx((full_b[score][k], full_a[score][k]))
            assert r["diff"] == pytest.approx(full_a[score][k] - full_b[score][k])
            diffs = _replay(m, score, k, 30, 4)
            assert (r["ci_low"], r["ci_high"]) == pytest.approx(tuple(np.quantile(diffs, [0.05, 0.95])))
            assert r["se"] == pytest.approx(np.std(diffs, ddof=1))
            assert r["p_value"] == pytest.approx(2 * norm.sf(abs(r["diff"]) / r["se"]))
            assert (r["interval"], r["test_reason"]) == ("item bootstrap (30 resamples)", "")
        tested = t[t["score"] == score]
        assert tested["p_adjusted"].tolist() == pytest.approx(
            multipletests(tested["p_value"].to_numpy(float), method="holm")[1].tolist())
        assert (tested["significant"] == (tested["p_adjusted"] < 0.1)).all()
    for score in ("lc_win_rate", "style_controlled"):
        sub = rows.loc[score]
        assert (sub["interval"] == NOT_RESAMPLED[score]).all() and (sub["test_reason"] == "").all()
        assert sub[["ci_low", "ci_high", "se", "p_value", "p_adjusted"]].isna().all().all()
        assert not sub["significant"].any()
    lc = rows.loc["lc_win_rate"]
    assert lc["diff"].tolist() == [1.0, 2.0, 0.0]
    assert lc["status_before"].tolist() == ["ok"] * 3
    assert (t["n_items"] == 22).all() and not t["underpowered"].any()


def test_ranks_flips_and_statuses(monkeypatch):
    f = Fakes(monkeypatch)
    f.alpha = 0.05
    res = compare_boards(_matched(), resamples=20)
    rows = res.table.set_index(["score", "model"])
    assert str(res.table["rank_before"].dtype) == "Int64" and str(res.table["rank_after"].dtype) == "Int64"
    wr = rows.loc["win_rate"]
    assert wr["rank_before"].tolist() == [1, 2, 3] and wr["rank_after"].tolist() == [3, 2, 1]
    assert wr["rank_flip"].tolist() == ["1 -> 3, order reversed with m2, m3", "2 -> 2, order reversed with m1, m3",
                                        "3 -> 1, order reversed with m1, m2"]
    assert wr["status_before"].tolist() == ["ok"] * 3 and wr["status_after"].tolist() == ["ok"] * 3
    st = rows.loc["style_controlled"]
    # m1 and m2 tie before (rank 1 each): m2 moving above m1 reverses no strict order
    assert st["rank_before"].tolist() == [1, 1, 3]
    assert st["rank_after"].iloc[:2].tolist() == [2, 1] and st["rank_after"].isna().iloc[2]
    assert st["rank_flip"].tolist() == ["", "", ""]
    assert st["status_after"].tolist() == ["ok", "ok", ""]
    assert st["diff"].isna().iloc[2]
    ba = rows.loc["bias_aware"]
    assert ba["status_before"].tolist() == ["fit before"] * 3 and ba["status_after"].tolist() == ["fit after"] * 3
    assert rows.loc["lc_win_rate"]["rank_flip"].tolist() == [""] * 3
    fl = res.flips
    assert list(fl.columns) == FLIP_COLUMNS and list(fl.index) == list(range(len(fl)))
    assert sorted(zip(fl["correction"], fl["model_1"], fl["model_2"], strict=True)) == sorted(
        [("win_rate", "m1", "m2"), ("win_rate", "m1", "m3"), ("win_rate", "m2", "m3"),
         ("bias_aware", "m1", "m2"), ("bias_aware", "m1", "m3"), ("bias_aware", "m2", "m3")])


@pytest.mark.parametrize("side", ["before", "after"])
def test_a_model_without_a_number_on_a_side_has_no_test(monkeypatch, side):
    f = Fakes(monkeypatch)
    f.alpha = 0.05
    m = _matched()
    t = getattr(m, side)
    t.loc[t["model_b"] == "m3", "x"] = np.nan
    rows = compare_boards(m, resamples=20).table.set_index(["score", "model"])
    for score in RESAMPLED:
        r = rows.loc[(score, "m3")]
        assert r["test_reason"] == "a side has no estimate" and np.isnan(r[side]) and np.isnan(r["diff"])
        assert r["interval"] == "item bootstrap (20 resamples)"  # the other models still get theirs
        assert rows.loc[(score, "m1"), "test_reason"] == "" and np.isfinite(rows.loc[(score, "m1"), "p_value"])
    assert rows.loc[("win_rate", "m3"), f"status_{side}"] == "no games"
    assert pd.isna(rows.loc[("win_rate", "m3"), f"rank_{side}"])
    # m3 has no number on one side: only m1 and m2 can swap
    assert rows.loc[("win_rate", "m1"), "rank_flip"] == (
        "1 -> 2, order reversed with m2" if side == "after" else "1 -> 3, order reversed with m2")


@pytest.mark.parametrize("side", ["before", "after"])
def test_a_model_on_one_board_only_is_compared_as_missing_on_the_other(monkeypatch, side):
    f = Fakes(monkeypatch, drop={side: "m3"})
    f.alpha = 0.05
    t = compare_boards(_matched(), resamples=20).table
    assert t["model"].tolist() == list(MODELS) * 4
    r = t[(t["model"] == "m3") & (t["score"] == "lc_win_rate")].iloc[0]
    assert np.isnan(r[side]) and np.isnan(r["diff"]) and r[f"status_{side}"] == ""
    other = "after" if side == "before" else "before"
    assert r[other] == LC[other]["m3"] and r[f"status_{other}"] == "ok"
    # the resampled scores still have m3, the board has not: the path does not reproduce it
    assert t.loc[t["score"] == "win_rate", "interval"].str.startswith("not computed").all()


def test_rounding_noise_is_no_variance(monkeypatch):
    """After = before + 0.3 on every row, win rates scaled by 1e4: the resampled differences are
    constant up to rounding (standard deviation far below 1e-12 x |diff|): no test."""
    monkeypatch.setitem(WIN_SCALE, "win_rate", 1e4)
    f = Fakes(monkeypatch)
    f.alpha = 0.05
    before = _log("before", 22, 1, BEFORE_MEAN)
    after = before.assign(side="after", x=before["x"] + 0.3)
    rows = compare_boards(match(before, after), resamples=30).table.set_index(["score", "model"])
    for k in MODELS:
        r = rows.loc[("win_rate", k)]
        assert r["diff"] == pytest.approx(3000.0) and 0 < r["se"] < 1e-9
        assert r["test_reason"] == "the resampled differences do not vary: no variance, no test"


def test_a_score_the_resampling_path_does_not_reproduce_gets_no_interval(monkeypatch):
    f = Fakes(monkeypatch, board_off={"after": 1e-6})
    f.alpha = 0.05
    rows = compare_boards(_matched(), resamples=20).table.set_index(["score", "model"])
    ba = rows.loc["bias_aware"]
    assert (ba["interval"] == "not computed (the resampling path does not reproduce the board's bias_aware on "
                              "the full data)").all()
    assert ba[["ci_low", "ci_high", "se", "p_value"]].isna().all().all() and (ba["test_reason"] == "").all()
    assert (rows.loc["win_rate"]["interval"] == "item bootstrap (20 resamples)").all()
    assert f.scores_calls == 2 + 2 * 20
    # off by less than the tolerance: reproduced
    g = Fakes(monkeypatch, board_off={"before": 1e-12})
    g.alpha = 0.05
    assert (compare_boards(_matched(), resamples=20).table["interval"].str.startswith("item bootstrap").sum() == 6)
    # neither score reproduced: no resample is drawn at all
    h = Fakes(monkeypatch, board_off={"before": 1.0})
    h.alpha = 0.05
    monkeypatch.setattr(board, "RESAMPLED", ("bias_aware",))
    monkeypatch.setattr(board, "NOT_RESAMPLED", {**NOT_RESAMPLED, "win_rate": "not here"})
    rows = compare_boards(_matched(), resamples=20).table
    assert h.scores_calls == 2
    # no row has an interval: the interval columns stay numbers (NaN), as compare_board.csv is read
    for col in ("ci_low", "ci_high", "se", "p_value", "p_adjusted"):
        assert rows[col].dtype == np.float64 and rows[col].isna().all()


def _without_i00(t: pd.DataFrame) -> bool:
    return "side" in t and not t["item_id"].astype(str).str.startswith("i00#").any() and "#" in str(
        t["item_id"].iloc[0])


def _count_with(m, resamples, seed) -> int:
    items = np.sort(m.before["item_id"].astype(str).unique())
    return int(sum((items[d] == "i00").any() for d in item_draws(len(items), resamples, seed)))


@pytest.mark.parametrize("resamples,count,tested", [(20, 10, True), (20, 9, False), (25, 12, True),
                                                    (25, 11, False)])
def test_resamples_without_games_are_skipped_and_counted(monkeypatch, resamples, count, tested):
    """A resample whose battles cannot be read (here: every one that misses item i00) gives no
    difference; a score needs max(10, resamples // 2) differences for a test."""
    f = Fakes(monkeypatch, fail_on=_without_i00)
    f.alpha = 0.05
    m = _matched(30)
    seed = next(s for s in range(5000) if _count_with(m, resamples, s) == count)
    rows = compare_boards(m, resamples=resamples, seed=seed).table.set_index(["score", "model"])
    r = rows.loc[("win_rate", "m1")]
    if tested:
        assert r["test_reason"] == "" and np.isfinite(r["p_value"])
    else:
        assert r["test_reason"] == f"only {count} of {resamples} resamples gave both estimates"
        assert np.isnan(r[["ci_low", "ci_high", "se", "p_value"]].astype(float)).all()


def test_identical_sides_have_no_variance_and_no_test(monkeypatch):
    f = Fakes(monkeypatch)
    f.alpha = 0.05
    before = _log("before", 21, 1, BEFORE_MEAN)
    m = match(before, before.assign(side="after"))
    monkeypatch.setitem(LC, "after", LC["before"])
    monkeypatch.setitem(STYLE, "after", STYLE["before"])
    res = compare_boards(m, resamples=20)
    wr = res.table[res.table["score"] == "win_rate"]
    assert (wr["test_reason"] == "the resampled differences do not vary: no variance, no test").all()
    assert (wr["diff"] == 0).all() and (wr["se"] == 0).all() and wr["p_value"].isna().all()
    assert res.flips.empty and list(res.flips.columns) == FLIP_COLUMNS


@pytest.mark.parametrize("n_items,under", [(19, True), (20, False)])
def test_fewer_than_twenty_items_is_underpowered(monkeypatch, n_items, under):
    f = Fakes(monkeypatch)
    f.alpha = 0.05
    t = compare_boards(_matched(n_items), resamples=20).table
    assert (t["underpowered"] == under).all() and (t["n_items"] == n_items).all()


def test_defaults_are_card_settings_200_resamples_seed_0_and_100_style_rounds(monkeypatch):
    f = Fakes(monkeypatch)
    f.alpha = 0.05
    m = _matched()
    rows = compare_boards(m).table.set_index(["score", "model"])
    assert [(x.alpha, x.style_rounds, x.seed) for x in f.settings] == [(0.05, 100, 0)] * 2
    diffs = _replay(m, "win_rate", "m2", 200, 0)
    r = rows.loc[("win_rate", "m2")]
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(tuple(np.quantile(diffs, [0.025, 0.975])))
    assert r["interval"] == "item bootstrap (200 resamples)"


def test_holm_per_score_on_p_values_far_from_zero(monkeypatch):
    """The same judge twice (noise only): p-values far from 0, where Holm and statsmodels' default
    Holm-Sidak differ; each score's tested rows form one family."""
    f = Fakes(monkeypatch)
    f.alpha = 0.05
    m = match(_log("before", 22, 1, BEFORE_MEAN), _log("after", 22, 7, BEFORE_MEAN))
    t = compare_boards(m, resamples=30).table
    for score in RESAMPLED:
        tested = t[t["score"] == score]
        assert (tested["p_value"] > 0.01).any()
        adj = multipletests(tested["p_value"].to_numpy(float), method="holm")[1]
        assert tested["p_adjusted"].tolist() == pytest.approx(adj.tolist(), rel=1e-12)
    assert t["p_adjusted"].dtype == np.float64


def test_a_p_value_equal_to_alpha_is_not_significant(monkeypatch):
    f = Fakes(monkeypatch)
    f.alpha = 0.05
    m = match(_log("before", 22, 1, BEFORE_MEAN), _log("after", 22, 7, BEFORE_MEAN))
    t = compare_boards(m, resamples=30).table
    inside = t[(t["p_adjusted"] > 0) & (t["p_adjusted"] < 1)]
    score, model, p = inside[["score", "model", "p_adjusted"]].iloc[0]
    for alpha, expected in ((p, False), (p * 1.01, True)):  # significant: p < alpha
        f.alpha = alpha
        t = compare_boards(m, CardSettings(alpha=alpha), resamples=30).table
        row = t[(t["score"] == score) & (t["model"] == model)].iloc[0]
        assert row["p_adjusted"] == p and bool(row["significant"]) is expected
