"""Fitted corrections on degenerate designs say ``not estimable`` with the reason, never ``ok`` with the
optimiser's stopping point: separated games (a model that won or lost every game, outcomes that a style
feature splits exactly), zero games, preferences that are not probabilities, a fit that did not converge;
and a non-degenerate log stays ``ok``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.board import bias_aware as board_bias_aware
from judgelab.board.battles import battles_from_table
from judgelab.board.length_controlled import length_controlled
from judgelab.board.separation import NotEstimable, separated_rows
from judgelab.board.style_control import style_controlled
from judgelab.board.table import BoardSettings, leaderboard
from judgelab.io import InputError
from judgelab.ranking.bias_aware import Comparisons
from judgelab.stats.mixed import separated_terms
from judgelab.verdict_import.importer import RECORDED_COLUMNS

FAST = BoardSettings(style_rounds=20)


def _log(games: list[tuple[str, str, str, float, int, int]]) -> pd.DataFrame:
    """Recorded rows from (item, model_a, model_b, P(B preferred), words of A, words of B)."""
    rows = []
    for k, (item, a, b, p, wa, wb) in enumerate(games):
        rows.append({"judge": "j", "backend": "recorded", "model": "j", "family": "unknown", "pair_id": f"{item}|{k}",
                     "item_id": item, "order": "AB", "instruction": item, "response_a": "word " * wa,
                     "response_b": "word " * wb, "model_a": a, "model_b": b, "family_a": "unknown",
                     "family_b": "unknown", "verdict_shown": "", "verdict": "", "preference": p, "label": "",
                     "expected_verdict": pd.NA, "correct": pd.NA, "status": "ok", "parse_method": "x", "raw_text": "",
                     "simulated": False, "category": "", "source_file": "log.jsonl", "source_row": k})
    return pd.DataFrame(rows, columns=RECORDED_COLUMNS)


def test_four_games_split_exactly_by_length_are_not_estimable_not_a_tiny_score():
    # raw win rate 50 %: the model wins its two long answers and loses its two short ones
    games = [("q1", "base", "m", 1.0, 20, 80), ("q2", "base", "m", 1.0, 20, 70),
             ("q3", "base", "m", 0.0, 20, 5), ("q4", "base", "m", 0.0, 20, 8)]
    t = leaderboard(battles_from_table(_log(games)), FAST).table.set_index("model")
    assert t.loc["m", "win_rate"] == 50.0
    for col, status in (("style_controlled", "style_status"), ("bias_aware", "bias_aware_status")):
        assert np.isnan(t.loc["m", col])
        assert t.loc["m", status].startswith("not estimable: separation: 4 of its 4 games are predicted exactly")
    assert "length" in t.loc["m", "style_status"] and "c[length]" in t.loc["m", "bias_aware_status"]


def _mixed(n: int, rng: np.random.Generator, model: str = "m", p_win: float = 0.5) -> list:
    """Games whose outcomes are unrelated to length, with both outcomes at every length."""
    return [(f"q{i}", "base", model, float(rng.random() < p_win), 30, 10 + 7 * (i % 9)) for i in range(n)]


def test_a_model_that_won_every_game_is_separated_and_the_others_stay_ok():
    rng = np.random.default_rng(3)
    games = _mixed(60, rng) + [(f"q{i}", "base", "always", 1.0, 30, 10 + 7 * (i % 9)) for i in range(60)]
    t = leaderboard(battles_from_table(_log(games)), FAST).table.set_index("model")
    assert t.loc["always", "win_rate"] == 100.0
    for status in ("style_status", "bias_aware_status"):
        assert t.loc["always", status].startswith("not estimable: separation: 60 of its 60 games")
        assert "moves its score" in t.loc["always", status]
        assert t.loc["m", status] == "ok"  # the control: the check does not fire on every model
    assert np.isfinite(t.loc["m", ["style_controlled", "bias_aware"]].to_numpy(float)).all()
    assert t.loc["always", "lc_status"].startswith("not estimable: separation: every one of its 60 games")


def test_a_single_non_degenerate_model_stays_ok_everywhere_but_lc_from_its_own_difficulty():
    rng = np.random.default_rng(4)
    t = leaderboard(battles_from_table(_log(_mixed(80, rng))), FAST).table.set_index("model")
    assert t.loc["m", "style_status"] == "ok" and t.loc["m", "bias_aware_status"] == "ok"
    assert 20 < t.loc["m", "style_controlled"] < 80
    # one model: the difficulty estimated from its own games carries each game's outcome
    assert t.loc["m", "lc_status"].startswith("not estimable: separation")


def test_the_one_program_finds_what_konis_per_term_programs_find():
    rng = np.random.default_rng(0)
    for trial in range(150):
        n, k = int(rng.integers(3, 14)), int(rng.integers(1, 4))
        X = rng.normal(size=(n, k)).round(1)
        if trial % 3 == 0:
            X[:, 0] = 1.0
        y = (rng.random(n) < 0.5).astype(float)
        if trial % 5 == 0:
            y[rng.integers(0, n)] = 0.5  # a tie: both signs
        assert separated_rows(X, y).any == bool(separated_terms(X, np.round(y), [str(j) for j in range(k)])
                                                 if not (y == 0.5).any() else separated_rows(X, y).any)
    # hand-made: the rows that a direction moves, exactly
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    sep = separated_rows(X, np.array([1.0, 1.0, 1.0, 0.0]))
    assert sep.rows.tolist() == [True, True, False, False]  # column 0 only ever wins; column 1 both
    assert not separated_rows(X, np.array([0.5, 0.5, 1.0, 0.0])).any  # a tie never separates


def test_zero_games_raise_a_clean_error_before_any_solver():
    e = np.zeros(0)
    with pytest.raises(NotEstimable, match="no games"):
        length_controlled(e, e, e, e, e)
    with pytest.raises(ValueError, match="at least one game"):
        style_controlled(np.zeros(0, int), np.zeros(0, int), e, np.zeros(0, int), np.zeros((0, 4)), np.zeros((0, 4)),
                         2, 0)


def test_lc_on_separated_games_is_not_estimable_and_on_soft_labels_is_ok(capfd):
    rng = np.random.default_rng(1)
    n = 60
    len_base = np.full(n, 500.0)
    len_model = rng.integers(100, 900, n).astype(float)
    win = (len_model > 500).astype(float)  # the longer answer always wins: length separates
    diff = rng.normal(size=n)
    with pytest.raises(NotEstimable, match="separation: every one of its 60 games"):
        length_controlled(len_base, len_model, np.ones(n), diff, np.arange(n))
    assert capfd.readouterr().out == ""  # refused before liblinear (which prints about a missing class)
    # separated by length under a penalty the cross-validation chose (C < 1e4): the penalised fit stands
    fit = length_controlled(len_base, len_model, win, diff, np.arange(n))
    assert np.isfinite(fit.lc)
    soft = np.clip(0.5 + 0.3 * (win - 0.5) + rng.normal(0, 0.1, n), 0.01, 0.99)  # AlpacaEval's soft labels
    fit = length_controlled(len_base, len_model, soft, diff, np.arange(n))
    assert np.isfinite(fit.lc) and fit.ci_low <= fit.lc <= fit.ci_high


@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0, 7.0])
def test_a_preference_that_is_not_a_probability_is_refused_with_file_and_row(bad):
    games = [("q1", "base", "m", 1.0, 5, 6), ("q2", "base", "m", 0.0, 5, 6), ("q3", "base", "m", 0.3, 5, 6)]
    log = _log(games)
    log["preference"] = log["preference"].astype(object)
    log.loc[2, "preference"] = bad
    if bad != bad:  # NaN is "no preference": the game is a failed one, not an error
        assert battles_from_table(log).failed == {"m": 1}
        return
    with pytest.raises(InputError, match=r"^log.jsonl: row 2: preference .* is not a number in \[0, 1\]"):
        battles_from_table(log)
    y = np.array([1.0, 0.0, bad, np.nan])
    with pytest.raises(ValueError, match=r"y must lie in \[0, 1\]"):
        Comparisons(np.zeros(4, int), np.ones(4, int), y)


def test_a_fit_that_did_not_converge_gives_no_bias_aware_number(monkeypatch):
    real = board_bias_aware.fit_bias_aware

    def stalled(*args, **kwargs):
        fit = real(*args, **kwargs)
        fit.converged = False
        return fit

    monkeypatch.setattr(board_bias_aware, "fit_bias_aware", stalled)
    rng = np.random.default_rng(5)
    t = leaderboard(battles_from_table(_log(_mixed(40, rng))), FAST).table.set_index("model")
    assert np.isnan(t.loc["m", "bias_aware"])
    assert t.loc["m", "bias_aware_status"].startswith("not estimable: the MAP fit did not converge")


def test_frozen_style_coefficients_still_refuse_a_model_that_won_every_game():
    rng = np.random.default_rng(6)
    games = _mixed(40, rng) + [(f"q{i}", "base", "always", 1.0, 30, 10 + 7 * (i % 9)) for i in range(40)]
    ref = {"coefs": {"length": 0.3, "header_density": 0.0, "list_density": 0.0, "bold_density": 0.0},
           "mean": [0.0] * 4, "std": [1.0] * 4}
    settings = BoardSettings(style_rounds=5, style_reference=ref)
    t = leaderboard(battles_from_table(_log(games)), settings).table.set_index("model")
    assert t.loc["always", "style_status"].startswith("not estimable: separation: 40 of its 40 games")
    assert np.isnan(t.loc["always", "style_controlled"])
    assert t.loc["m", "style_status"] == "ok" and np.isfinite(t.loc["m", "style_controlled"])
