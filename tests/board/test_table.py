"""Fast tests of judgelab.board.table (the mutation map's tests for it): every column of the leaderboard is
the value its piece (winrate, length_controlled, style_control, bias_aware) computes on that model's games,
called directly here; statuses, ordering, metadata and leave-one-judge-out on small hand-made logs."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from judgelab.board import table as T
from judgelab.board.battles import battles_from_table
from judgelab.board.bias_aware import bias_aware
from judgelab.board.length_controlled import (
    Gamed,
    difficulty_given_weights,
    estimate_difficulty,
    lc_from_weights,
    length_controlled,
    std_delta_len,
)
from judgelab.board.style_control import style_controlled, style_controlled_frozen
from judgelab.board.winrate import clustered_mean
from judgelab.io import InputError
from judgelab.verdict_import.importer import RECORDED_COLUMNS

FAST = T.BoardSettings(style_rounds=3, seed=4)


def _log(games, source="f.json", row_by_item=False):
    """Recorded rows from (item, model_a, model_b, P(B preferred), order, judge, text_a, text_b, label)."""
    rows = []
    for k, g in enumerate(games):
        item, a, b, p, order, judge, ra, rb, label = (*g, *(None,) * (9 - len(g)))
        rows.append({"judge": judge or "j", "backend": "recorded", "model": "j", "family": "u",
                     "pair_id": f"{item}|{a}|{b}|{judge}|{k}", "item_id": item, "order": order or "AB",
                     "instruction": item, "response_a": ra or f"{a} answer " * (2 + k % 5),
                     "response_b": rb or ("- x\n" * (k % 3)) + f"{b} says " * (1 + k % 7),
                     "model_a": a, "model_b": b, "family_a": "u", "family_b": "u", "verdict_shown": "",
                     "verdict": "", "preference": p, "label": label or "", "expected_verdict": pd.NA,
                     "correct": pd.NA, "status": "ok", "parse_method": "x", "raw_text": "", "simulated": False,
                     "category": "", "source_file": source,
                     "source_row": int(item[1:]) if row_by_item else k})
    return pd.DataFrame(rows, columns=RECORDED_COLUMNS)


def _baseline_log(rng, models=(("m1", 0.75), ("m2", 0.35), ("m3", 0.55)), n=24):
    games = []
    for m, q in models:
        for i in range(n):
            p = float(rng.random() < q)
            if i % 4 == 3:  # the baseline stored as B in some games: the model's P(win) is 1 - pref_b
                games.append((f"q{i}", m, "base", 1 - p, "BA"))
            else:
                games.append((f"q{i}", "base", m, p, "AB"))
    return games


# ---- orientation -------------------------------------------------------------------------------------------
def test_oriented_games_of_a_baseline_log_are_the_models_side():
    games = [("q1", "base", "m", 0.8, "AB", "j", "b b", "# h\nm m m", "B>>A"),
             ("q2", "m", "base", 0.3, "BA", "j", "**m** m", "b b b b")]
    b = battles_from_table(_log(games))
    model, opp, y, item, weight, sm, so, g = T._oriented(b)
    m, base = b.models.index("m"), b.models.index("base")
    assert model.tolist() == [m, m] and opp.tolist() == [base, base]
    np.testing.assert_allclose(y, [0.8, 0.7])
    assert item.tolist() == [b.items.index("q1"), b.items.index("q2")] and weight.tolist() == [3, 1]
    assert sm.tolist() == [[5, 1, 0, 0], [2, 0, 0, 1]] and so.tolist() == [[2, 0, 0, 0], [4, 0, 0, 0]]
    assert g.tolist() == [0, 1]


def test_oriented_free_battles_are_every_game_from_both_sides():
    games = [("q1", "a", "b", 0.8, "AB", "j", "x", "y y", "A<<B"), ("q2", "b", "c", 0.25, "AB", "j", "z z z", "w")]
    b = battles_from_table(_log(games), baseline="a")  # b is in every game, but scores are against a
    assert b.baseline is None and b.reference == "a"
    model, opp, y, item, weight, sm, so, g = T._oriented(b)
    A, B, C = (b.models.index(x) for x in "abc")
    assert model.tolist() == [B, C, A, B] and opp.tolist() == [A, B, B, C]
    np.testing.assert_allclose(y, [0.8, 0.25, 0.2, 0.75])
    assert item.tolist() == [0, 1, 0, 1] and weight.tolist() == [3, 1, 3, 1] and g.tolist() == [0, 1, 0, 1]
    assert sm[:, 0].tolist() == [2, 1, 1, 3] and so[:, 0].tolist() == [1, 3, 2, 1]


# ---- the columns are the pieces' values -------------------------------------------------------------------
def _direct_lc(b, gamed=None):
    model, y, is_b = b.evaluated()
    len_m, len_base = np.where(is_b, b.len_b, b.len_a), np.where(is_b, b.len_a, b.len_b)
    sdl = np.zeros(len(b))
    for m in set(model.tolist()):
        sdl[model == m] = std_delta_len(len_base[model == m], len_m[model == m])
    if gamed is None:
        diff = estimate_difficulty(model, b.item, sdl, y, b.n_models, len(b.items))[b.item]
        cluster = b.item
    else:
        diff, cluster = gamed.difficulty.loc[b.row].to_numpy(float), b.row
    out = {}
    for m in set(model.tolist()):
        r = model == m
        f = length_controlled(len_base[r], len_m[r], y[r], diff[r], cluster[r], gamed=gamed, alpha=0.1)
        out[b.models[m]] = (f.lc, f.ci_low, f.ci_high)
    return out, sdl


def test_every_column_is_its_pieces_value_on_the_models_games():
    rng = np.random.default_rng(0)
    b = battles_from_table(_log(_baseline_log(rng)))
    s = T.BoardSettings(alpha=0.1, style_rounds=3, seed=4)
    board = T.leaderboard(b, s)
    t = board.table.set_index("model")
    assert list(board.table.columns) == T.COLUMNS and "base" not in t.index
    model, y, _ = b.evaluated()
    for name in ("m1", "m2", "m3"):
        k = b.models.index(name)
        want = clustered_mean(y[model == k], b.item[model == k], 0.1)
        assert t.loc[name, "n"] == want.n == 24 and t.loc[name, "n_failed"] == 0
        assert (t.loc[name, "win_rate"], t.loc[name, "win_rate_ci_low"], t.loc[name, "win_rate_ci_high"]) == (
            pytest.approx(want.win_rate), pytest.approx(want.ci_low), pytest.approx(want.ci_high))
    lc, _ = _direct_lc(b)
    for name, v in lc.items():
        np.testing.assert_allclose(t.loc[name, ["lc_win_rate", "lc_ci_low", "lc_ci_high"]].to_numpy(float), v)
        assert t.loc[name, "lc_status"] == "ok"
    assert (t["lc_difficulty"] == "estimated from the logs (3 models)").all()
    mo, op, yo, _, w, sm, so, _ = T._oriented(b)
    base = b.models.index("base")
    st = style_controlled(mo, op, yo, w, sm, so, b.n_models, base, rounds=3, alpha=0.1, seed=4)
    ba = bias_aware(b, alpha=0.1)
    for name in ("m1", "m2", "m3"):
        k = b.models.index(name)
        np.testing.assert_allclose(t.loc[name, ["style_controlled", "style_ci_low", "style_ci_high"]].to_numpy(float),
                                   [st.score[k], st.ci_low[k], st.ci_high[k]])
        np.testing.assert_allclose(t.loc[name, ["bias_aware", "bias_aware_ci_low", "bias_aware_ci_high"]]
                                   .to_numpy(float), [ba.score[k], ba.ci_low[k], ba.ci_high[k]])
        assert t.loc[name, "style_status"] == "ok" and t.loc[name, "bias_aware_status"] == ba.status[k] == "ok"
        assert t.loc[name, "baseline"] == "base" and t.loc[name, "source"] == "f.json"
    assert board.style.coefs == pytest.approx(st.coefs)
    # best raw win rate first
    assert list(board.table["win_rate"]) == sorted(board.table["win_rate"], reverse=True)
    pd.testing.assert_frame_equal(board.flips, T.rank_flips(board.table))
    assert board.meta == {
        "design": "baseline", "baseline": "base", "games": len(b), "models": 4, "judges": ["j"],
        "style_source": "texts", "lc_difficulty": "estimated from the logs (3 models)",
        "bias_aware_terms": {k: list(v) for k, v in ba.terms.items()}, "bias_aware_note": ba.note,
        "simulated": False, "alpha": 0.1, "style_rounds": 3, "style_frozen": False}
    assert list(board.judges.columns) == ["judge_left_out", "score", "kendall_tau", "n_models"]
    assert board.judges.empty


def test_equal_win_rates_keep_the_models_order():
    # 20 models in two groups of equal win rate, shuffled: a stable sort keeps each group in name order
    names = [f"m{k:02d}" for k in np.random.default_rng(0).permutation(20)]
    games = [(f"q{i}", "base", m, float(i % (2 + int(m[1:]) % 2) == 0)) for m in names for i in range(10)]
    t = T.leaderboard(battles_from_table(_log(games)), T.BoardSettings(style_rounds=1), judges=False).table
    assert list(t["model"]) == sorted(names, key=lambda m: (int(m[1:]) % 2, m))
    assert t.loc[0, "win_rate"] == 50.0 and t.loc[19, "win_rate"] == pytest.approx(40.0)


def test_the_gamed_file_gives_difficulty_and_clusters_by_instruction_index():
    rng = np.random.default_rng(1)
    b = battles_from_table(_log(_baseline_log(rng, n=20), row_by_item=True))  # every model's row i: instruction i
    rows = np.unique(b.row)[::-1]  # df_gamed's own order is not the log's
    gamed = Gamed(index=np.r_[rows, rows][:30], preference=rng.random(30), std_delta_len=rng.normal(size=30),
                  not_gamed=np.zeros(30, bool), difficulty=pd.Series(rng.normal(size=len(rows)), index=rows))
    board = T.leaderboard(b, T.BoardSettings(alpha=0.1, style_rounds=1, gamed=gamed))
    t = board.table.set_index("model")
    lc, _ = _direct_lc(b, gamed)
    for name, v in lc.items():
        np.testing.assert_allclose(t.loc[name, ["lc_win_rate", "lc_ci_low", "lc_ci_high"]].to_numpy(float), v)
    assert (t["lc_difficulty"] == "df_gamed.csv").all() and board.meta["lc_difficulty"] == "df_gamed.csv"
    short = Gamed(index=gamed.index, preference=gamed.preference, std_delta_len=gamed.std_delta_len,
                  not_gamed=gamed.not_gamed, difficulty=gamed.difficulty.drop(rows[5]))
    with pytest.raises(InputError) as e:
        T.leaderboard(b, T.BoardSettings(style_rounds=1, gamed=short))
    assert str(e.value) == (f"df_gamed.csv has no instruction_difficulty for index {rows[5]} "
                            f"(instruction 'q{rows[5]}')")


def test_lc_needs_ten_games_of_the_model():
    games = ([(f"q{i}", "base", "l9", float(i % 3 == 0)) for i in range(T.MIN_LC_GAMES - 1)]
             + [(f"q{i}", "base", "m10", float(i % 2 == 0)) for i in range(T.MIN_LC_GAMES)])
    t = T.leaderboard(battles_from_table(_log(games)), FAST).table.set_index("model")
    assert t.loc["l9", "lc_status"] == "not estimable: 9 games, the cross-validated GLM needs 10"
    assert np.isnan(t.loc["l9", ["lc_win_rate", "lc_ci_low", "lc_ci_high"]].to_numpy(float)).all()
    # a model after it in code order is still fitted
    assert t.loc["m10", "lc_status"] == "ok" and np.isfinite(t.loc["m10", "lc_win_rate"])
    assert np.isfinite(t.loc["l9", "win_rate"])  # the raw win rate stands


def test_published_weights_predict_with_the_difficulty_given_them():
    rng = np.random.default_rng(2)
    games = [g for g in _baseline_log(rng, n=16) if (g[1] != "m2" and g[2] != "m2") or int(g[0][1:]) < 8]
    b = battles_from_table(_log(games, source="results/fold1/ann/annotations.json"))  # m2: items 0-7 only
    del b.sources["m2"]  # m2 is keyed by its name (no source recorded), m3 has no row
    weights = pd.DataFrame([[-0.7, 0.9, 0.4], [-0.2, 1.1, -0.3]], index=["fold1", "m2"],
                           columns=["np.tanh(std_delta_len)", "instruction_difficulty",
                                    "not_gamed_baseline.astype(float)"])
    b.sources["m3"] = "y.json"
    board = T.leaderboard(b, T.BoardSettings(style_rounds=1, lc_weights=weights))
    t = board.table.set_index("model")
    assert list(board.table.columns) == [*T.COLUMNS, "lc_from_published_weights"]
    model, y, _ = b.evaluated()
    _, sdl = _direct_lc(b)
    m1, m2 = b.models.index("m1"), b.models.index("m2")
    rows = np.flatnonzero(np.isin(model, [m1, m2]))
    w = np.where((model[rows] == m1)[:, None], weights.loc["fold1"].to_numpy(), weights.loc["m2"].to_numpy())
    _, item = np.unique(b.item[rows], return_inverse=True)
    d = difficulty_given_weights(w, item, sdl[rows], y[rows], int(item.max()) + 1)
    for name, key, code in (("m1", "fold1", m1), ("m2", "m2", m2)):
        want = lc_from_weights(weights.loc[key].to_numpy(), d[item[model[rows] == code]])
        assert t.loc[name, "lc_from_published_weights"] == pytest.approx(want)
    assert np.isnan(t.loc["m3", "lc_from_published_weights"])
    none = T.leaderboard(b, T.BoardSettings(style_rounds=1, lc_weights=weights.loc[[]]))
    assert none.table["lc_from_published_weights"].isna().all()
    assert none.table["lc_from_published_weights"].dtype == np.float64  # a numeric column, empty


# ---- free battles, the reference and frozen style ------------------------------------------------------------
def _free(rng):
    games = []
    for i in range(30):
        for a, b, q in (("a", "b", 0.4), ("b", "c", 0.6), ("a", "c", 0.7)):
            games.append((f"q{i}", a, b, float(rng.random() < q), "AB" if i % 2 else "BA"))
    return games + [(f"z{i}", "x", "y", float(i % 2)) for i in range(6)]


def test_free_battles_score_against_the_reference_and_say_what_is_not_estimable():
    rng = np.random.default_rng(3)
    b = battles_from_table(_log(_free(rng)), baseline="a")
    board = T.leaderboard(b, FAST)
    t = board.table.set_index("model")
    assert set(t.index) == {"a", "b", "c", "x", "y"} and board.meta["design"] == "free battles"
    assert t.loc["a", "source"] == "" and t.loc["b", "source"] == "f.json"  # a is never a stored B: no source
    assert (t["lc_status"] == "not estimable: needs every game against one baseline (free battles)").all()
    assert (t["lc_difficulty"] == "").all() and np.isnan(t["lc_win_rate"].to_numpy(float)).all()
    assert t.loc["a", "style_status"] == t.loc["a", "bias_aware_status"] == "reference (50 by definition)"
    for m in ("x", "y"):
        assert t.loc[m, "style_status"] == "not estimable: no chain of games to the reference 'a'"
        assert np.isnan(t.loc[m, ["style_controlled", "style_ci_low", "style_ci_high"]].to_numpy(float)).all()
    mo, op, yo, _, w, sm, so, _ = T._oriented(b)
    st = style_controlled(mo, op, yo, w, sm, so, b.n_models, 0, rounds=3, alpha=0.05, seed=4)
    for m in ("b", "c"):
        k = b.models.index(m)
        assert t.loc[m, "style_status"] == "ok" and t.loc[m, "style_controlled"] == pytest.approx(st.score[k])
        assert t.loc[m, "style_ci_high"] == pytest.approx(st.ci_high[k])
    assert board.style.score[b.models.index("x")] != board.style.score[b.models.index("x")]  # NaN in the result too
    with pytest.raises(InputError, match=r"^--style-reference freezes the style coefficients of logs against one "
                                         r"baseline; this log is free battles$"):
        T.leaderboard(b, T.BoardSettings(style_rounds=1, style_reference={"coefs": {}, "mean": [], "std": []}))


def test_a_frozen_reference_is_the_frozen_fit():
    rng = np.random.default_rng(4)
    b = battles_from_table(_log(_baseline_log(rng, n=12)))
    ref = {"coefs": {"length": 0.3, "header_density": 0.0, "list_density": -0.2, "bold_density": 0.1},
           "mean": [0.1, 0.0, 0.05, 0.0], "std": [0.4, 1.0, 0.2, 0.0]}
    board = T.leaderboard(b, T.BoardSettings(alpha=0.2, style_rounds=2, seed=7, style_reference=ref))
    mo, _, yo, _, w, sm, so, _ = T._oriented(b)
    want = style_controlled_frozen(mo, yo, w, sm, so, b.models, 0, ref, rounds=2, alpha=0.2, seed=7)
    t = board.table.set_index("model")
    for m in ("m1", "m2", "m3"):
        k = b.models.index(m)
        assert t.loc[m, "style_controlled"] == pytest.approx(want.score[k])
        assert t.loc[m, "style_ci_low"] == pytest.approx(want.ci_low[k])
    assert board.meta["style_frozen"] is True and board.style.frozen


def test_a_model_without_games_gets_no_correction():
    rng = np.random.default_rng(5)
    b = battles_from_table(_log(_baseline_log(rng, n=40)))  # 40 games: m1's LC design is not separated
    model, _, _ = b.evaluated()
    sub = b.subset(model != b.models.index("m2"))
    t = T.leaderboard(sub, FAST).table.set_index("model")
    assert t.loc["m2", "n"] == 0 and t.loc["m2", "lc_status"] == "not estimable: no games"
    for col, lo, hi, _ in T.CORRECTIONS:
        assert np.isnan(t.loc["m2", [col, lo, hi]].to_numpy(float)).all()
    assert np.isfinite(t.loc["m1", ["lc_win_rate", "style_controlled", "bias_aware"]].to_numpy(float)).all()


def test_failed_games_are_counted_per_model():
    games = [(f"q{i}", "base", "m1", 1.0 if i % 3 else 0.0) for i in range(12)]
    log = _log(games)
    log.loc[[2, 5], "preference"] = np.nan
    t = T.leaderboard(battles_from_table(log), FAST).table
    assert t.loc[0, "n"] == 10 and t.loc[0, "n_failed"] == 2


# ---- rank flips ------------------------------------------------------------------------------------------------
def _flip_table(**cols):
    base = {"model": ["a", "b"], "win_rate": [60.0, 50], "win_rate_ci_low": [55.0, 45], "win_rate_ci_high": [65.0, 55],
            "lc_win_rate": [60.0, 50], "lc_ci_low": [55.0, 45], "lc_ci_high": [65.0, 55], "style_controlled":
            [60.0, 50], "style_ci_low": [55.0, 45], "style_ci_high": [65.0, 55], "bias_aware": [60.0, 50],
            "bias_aware_ci_low": [55.0, 45], "bias_aware_ci_high": [65.0, 55]}
    return pd.DataFrame({**base, **cols})


def test_a_flip_is_a_strict_reversal_and_touching_intervals_overlap():
    assert list(T.rank_flips(_flip_table()).columns) == T.FLIP_COLUMNS
    assert T.rank_flips(_flip_table(style_controlled=[50.0, 50])).empty  # a tie under the correction: no flip
    assert T.rank_flips(_flip_table(win_rate=[50.0, 50], style_controlled=[40.0, 50])).empty  # raw tie
    f = T.rank_flips(_flip_table(win_rate_ci_low=[55.0, 45], win_rate_ci_high=[65.0, 55],
                                 bias_aware=[40.0, 50], bias_aware_ci_low=[30.0, 45], bias_aware_ci_high=[45.0, 55]))
    assert f.to_dict("records") == [{
        "correction": "bias_aware", "model_1": "a", "model_2": "b", "win_rate_1": 60.0, "win_rate_2": 50.0,
        "corrected_1": 40.0, "corrected_2": 50.0, "raw_ci_overlap": True, "corrected_ci_overlap": True}]
    g = T.rank_flips(_flip_table(win_rate_ci_low=[55.0, 45], win_rate_ci_high=[65.0, 54.9],
                                 style_controlled=[40.0, 50], style_ci_low=[30.0, 45.1], style_ci_high=[45.0, 55]))
    assert g.to_dict("records")[0]["raw_ci_overlap"] is False or not g.iloc[0]["raw_ci_overlap"]
    assert not g.iloc[0]["corrected_ci_overlap"] and g.iloc[0]["correction"] == "style_controlled"
    two = T.rank_flips(_flip_table(lc_win_rate=[40.0, 50], style_controlled=[40.0, 50]))
    assert list(two["correction"]) == ["lc_win_rate", "style_controlled"] and list(two.index) == [0, 1]
    # the other side of the overlap test: b's interval above a's
    h = T.rank_flips(_flip_table(win_rate_ci_low=[55.0, 56], win_rate_ci_high=[65.0, 70], lc_win_rate=[40.0, 50]))
    assert bool(h.iloc[0]["raw_ci_overlap"]) is True
    h = T.rank_flips(_flip_table(win_rate_ci_low=[55.0, 66], win_rate_ci_high=[65.0, 70], lc_win_rate=[40.0, 50]))
    assert bool(h.iloc[0]["raw_ci_overlap"]) is False


# ---- several judges ---------------------------------------------------------------------------------------------
def test_leave_one_judge_out_is_kendall_tau_against_the_board_without_that_judge(monkeypatch):
    rng = np.random.default_rng(6)
    games = []
    for judge, noise in (("j1", 0.0), ("j2", 0.3)):
        for m, q in (("m1", 0.8), ("m2", 0.5), ("m3", 0.3), ("m4", 0.6)):
            games += [(f"q{i}", "base", m, float(rng.random() < q + noise * (m == "m3")), "AB", judge)
                      for i in range(14)]
    b = battles_from_table(_log(games))
    s = T.BoardSettings(alpha=0.2, style_rounds=25, seed=3)
    seen = []
    real = T.leaderboard

    def spy(bb, ss=None, *, judges=True):  # records the settings, fits with two rounds (speed)
        seen.append(ss)
        return real(bb, replace(ss, style_rounds=2), judges=judges)

    monkeypatch.setattr(T, "leaderboard", spy)
    full = real(b, replace(s, style_rounds=2), judges=False).table
    j = T.leave_one_judge_out(b, s, full)
    assert len(j) == 8 and list(j["judge_left_out"]) == ["j1"] * 4 + ["j2"] * 4
    assert list(j["score"]) == ["win_rate", "lc_win_rate", "style_controlled", "bias_aware"] * 2
    assert (j["n_models"] == 4).all()
    # the boards without a judge are light (at most 20 style rounds) with the user's other settings
    assert [(x.alpha, x.style_rounds, x.seed, x.gamed, x.style_reference) for x in seen] == [(0.2, 20, 3, None, None)] * 2
    full = full.set_index("model")
    for k, judge in enumerate(("j1", "j2")):
        sub = real(b.subset(b.judge != k), replace(seen[k], style_rounds=2), judges=False).table.set_index("model")
        for col in ("win_rate", "lc_win_rate", "style_controlled", "bias_aware"):
            want = kendalltau(full[col], sub.loc[full.index, col]).statistic
            got = j[(j["judge_left_out"] == judge) & (j["score"] == col)]["kendall_tau"].item()
            assert got == pytest.approx(want)
    assert j["kendall_tau"].notna().all() and (j["kendall_tau"] < 1).any()
    with pytest.raises(ValueError, match=r"^leaderboard setting resamples: must be an integer in \[1, inf\), got 0$"):
        T.BoardSettings(style_rounds=0)  # never fewer than one round: refused where settings are made
    # the full board asks for the judge table only with two judges or more
    seen.clear()
    assert not real(b, replace(s, style_rounds=2)).judges.empty and len(seen) == 2


def test_a_judge_who_saw_one_model_leaves_too_few_to_rank():
    games = ([(f"q{i}", "base", m, float(i % k == 0), "AB", "j1") for m, k in (("m1", 3), ("m2", 2))
              for i in range(12)]
             + [(f"q{i}", "base", "m1", float(i % 4 != 0), "AB", "j2") for i in range(12)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        board = T.leaderboard(battles_from_table(_log(games)), FAST)
    j = board.judges
    left_j1 = j[j["judge_left_out"] == "j1"]  # one model left: no tau, and no small-sample warning from scipy
    # one model left: m1's LC with the difficulty estimated from its own games is separated (no model)
    assert left_j1.set_index("score")["n_models"].to_dict() == {"win_rate": 1, "lc_win_rate": 0,
                                                                 "style_controlled": 1, "bias_aware": 1}
    assert left_j1["kendall_tau"].isna().all()
    left_j2 = j[(j["judge_left_out"] == "j2") & (j["score"] == "win_rate")]
    assert left_j2["n_models"].item() == 2 and left_j2["kendall_tau"].item() == pytest.approx(-1.0)  # j2 alone lifts m1 above m2
    assert T.leaderboard(battles_from_table(_log(games)), FAST, judges=False).judges.empty


def test_leave_one_judge_out_keeps_the_users_difficulty_and_style_reference(monkeypatch):
    rng = np.random.default_rng(7)
    games = [(f"q{i}", "base", m, float(rng.random() < q), "AB", judge) for judge in ("j1", "j2")
             for m, q in (("m1", 0.7), ("m2", 0.4)) for i in range(12)]
    b = battles_from_table(_log(games, row_by_item=True))
    gamed = Gamed(index=np.arange(12), preference=rng.random(12), std_delta_len=rng.normal(size=12),
                  not_gamed=np.zeros(12, bool), difficulty=pd.Series(rng.normal(size=12), index=np.arange(12)))
    ref = {"coefs": {"length": 0.1, "header_density": 0.0, "list_density": 0.0, "bold_density": 0.0},
           "mean": [0.0] * 4, "std": [1.0] * 4}
    seen = []
    real = T.leaderboard

    def spy(bb, ss=None, *, judges=True):
        seen.append(ss)
        return real(bb, ss, judges=judges)

    monkeypatch.setattr(T, "leaderboard", spy)
    s = T.BoardSettings(style_rounds=2, gamed=gamed, style_reference=ref)
    full = real(b, s, judges=False).table
    T.leave_one_judge_out(b, s, full)
    assert len(seen) == 2 and all(x.gamed is gamed and x.style_reference is ref for x in seen)


def test_a_judge_without_games_gives_no_row_and_an_empty_table_keeps_its_columns():
    games = [(f"q{i}", "base", m, float((i + k) % 3 == 0), "AB", judge) for judge in ("j1", "j2")
             for k, m in enumerate(("m1", "m2")) for i in range(12)]
    b = battles_from_table(_log(games))
    full = T.leaderboard(b, FAST, judges=False).table
    only_j1 = b.subset(b.judge == 0)  # the judge list still names j2, who has no game left
    j = T.leave_one_judge_out(only_j1, FAST, full)
    assert set(j["judge_left_out"]) == {"j2"} and len(j) == 4
    solo = b.subset(b.judge == 0)
    solo.judges = ["j1"]
    empty = T.leave_one_judge_out(solo, FAST, full)
    assert empty.empty and list(empty.columns) == ["judge_left_out", "score", "kendall_tau", "n_models"]


def test_without_torch_style_control_says_why(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "judgelab.board.style_control", None)  # the import raises ImportError
    games = [(f"q{i}", "base", m, float((i + k) % 3 == 0)) for k, m in enumerate(("m1", "m2")) for i in range(12)]
    board = T.leaderboard(battles_from_table(_log(games)), FAST)
    assert board.style is None
    assert list(board.table["style_status"]) == [
        "not estimable: Arena-Hard's style control needs torch (pip install 'judgelab[train]')"] * 2


def test_a_model_with_one_game_is_separated_not_scored():
    games = [(f"q{i}", "base", "m1", float(i % 3 == 0)) for i in range(12)] + [("q0", "base", "one", 1.0)]
    t = T.leaderboard(battles_from_table(_log(games)), FAST).table.set_index("model")
    assert t.loc["one", "n"] == 1
    # one game won: its coefficient has no finite maximum (the MAP of the bias-aware fit is the prior's)
    assert np.isnan(t.loc["one", ["style_controlled", "bias_aware"]].to_numpy(float)).all()
    for col in ("style_status", "bias_aware_status"):
        assert t.loc["one", col].startswith("not estimable: separation: 1 of its 1 games")
        assert "moves its score" in t.loc["one", col]
    assert t.loc["one", "lc_status"].startswith("not estimable: 1 games")
