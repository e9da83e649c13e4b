"""Planted truth: a length- and markdown-biased judge over 20 models of known quality.

Every correction must order the models closer to their true quality than the raw win rate does
(Spearman), and its intervals must cover the true scores (>= 90 % of the models).  The world is
small for speed; benchmarks/bench_leaderboard.py repeats it over many seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from judgelab.board.battles import battles_from_table
from judgelab.board.table import CORRECTIONS, BoardSettings, leaderboard
from judgelab.simworld.leaderboard import planted_board


@pytest.fixture(scope="module")
def result():
    pb = planted_board(20, 150, seed=0)
    b = battles_from_table(pb.table)
    board = leaderboard(b, BoardSettings(style_rounds=20))
    return board, board.table.merge(pb.truth, on="model"), b


def test_the_planted_world_misleads_the_raw_win_rate(result):
    _, t, _ = result
    assert spearmanr(t["win_rate"], t["true_score"]).statistic < 0.8
    cover = ((t["win_rate_ci_low"] <= t["true_score"]) & (t["true_score"] <= t["win_rate_ci_high"])).mean()
    assert cover < 0.6


@pytest.mark.parametrize("col,lo,hi", [c[:3] for c in CORRECTIONS])
def test_every_correction_beats_raw_and_covers_the_truth(result, col, lo, hi):
    _, t, _ = result
    raw = spearmanr(t["win_rate"], t["true_score"]).statistic
    rho = spearmanr(t[col], t["true_score"]).statistic
    assert rho > raw + 0.1, (col, rho, raw)
    assert rho > 0.85
    cover = ((t[lo] <= t["true_score"]) & (t["true_score"] <= t[hi])).mean()
    assert cover >= 0.9, (col, cover)
    assert (t[lo] <= t[col]).all() and (t[col] <= t[hi]).all()


def test_the_length_bias_is_found_and_the_figure_input_is_simulated(result):
    board, _, b = result
    assert b.simulated
    est, se, _ident = board.meta["bias_aware_terms"]["c[length]"]
    assert est > 3 * se
    assert board.meta["design"] == "baseline" and board.meta["baseline"] == "baseline"


def test_rank_flips_are_the_pairs_a_correction_reverses(result):
    board, t, _ = result
    flips = board.flips
    assert len(flips) > 0
    for _, f in flips.iterrows():
        r1, r2 = t.set_index("model").loc[[f["model_1"], f["model_2"]], "win_rate"]
        c1, c2 = t.set_index("model").loc[[f["model_1"], f["model_2"]], f["correction"]]
        assert r1 > r2 and c1 < c2
    n_style = int((flips["correction"] == "style_controlled").sum())
    x = t["win_rate"].to_numpy()
    y = t["style_controlled"].to_numpy()
    assert n_style == int(np.sum((x[:, None] > x[None, :]) & (y[:, None] < y[None, :])))
