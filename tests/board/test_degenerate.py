"""Degenerate and hostile input: one model, models that never meet, all ties, failed games,
bad files, several judges; and the pieces checked against independent computations
(statsmodels' clustered standard error, the frozen style coefficients' invariance)."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy.stats import norm

from judgelab import cli
from judgelab.board.battles import battles_from_table, style_of_text
from judgelab.board.length_controlled import read_gamed_csv, std_delta_len
from judgelab.board.style_control import read_reference
from judgelab.board.table import BoardSettings, leaderboard
from judgelab.board.winrate import clustered_mean
from judgelab.simworld.leaderboard import planted_board
from judgelab.verdict_import.importer import RECORDED_COLUMNS

FAST = BoardSettings(style_rounds=5)


def _table(games: list[tuple[str, str, str, float]], *, order: str = "AB", judge: str = "j") -> pd.DataFrame:
    """Recorded rows from (item, model_a, model_b, P(B preferred))."""
    rows = []
    for k, (item, a, b, p) in enumerate(games):
        rows.append({"judge": judge, "backend": "recorded", "model": judge, "family": "unknown",
                     "pair_id": f"{item}|{a}|{b}|{k}", "item_id": item, "order": order, "instruction": item,
                     "response_a": f"{a} answer " * (3 + k % 5), "response_b": f"{b} says " * (2 + k % 7),
                     "model_a": a, "model_b": b, "family_a": "unknown", "family_b": "unknown",
                     "verdict_shown": "", "verdict": "", "preference": p, "label": "", "expected_verdict": pd.NA,
                     "correct": pd.NA, "status": "ok" if p == p else "unparsed", "parse_method": "x",
                     "raw_text": "", "simulated": False, "category": "", "source_file": "f.json", "source_row": k})
    return pd.DataFrame(rows, columns=RECORDED_COLUMNS)


def test_clustered_interval_is_statsmodels_cluster_robust_se():
    rng = np.random.default_rng(1)
    cluster = np.repeat(np.arange(40), 3)
    y = (rng.random(120) < 0.3 + 0.4 * (cluster % 2)).astype(float)
    got = clustered_mean(y, cluster)
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": cluster, "use_correction": False})
    g = 40
    se = float(fit.bse[0]) * np.sqrt(g / (g - 1))
    z = norm.ppf(0.975)
    assert got.win_rate == pytest.approx(100 * y.mean())
    assert got.ci_low == pytest.approx(100 * (y.mean() - z * se))
    assert got.ci_high == pytest.approx(100 * (y.mean() + z * se))
    # clustering matters: duplicating each verdict within its item leaves the interval as wide
    twice = clustered_mean(np.repeat(y, 2), np.repeat(cluster, 2))
    assert twice.ci_high - twice.ci_low == pytest.approx(got.ci_high - got.ci_low)


def test_one_item_or_no_verdict_gives_no_interval():
    assert clustered_mean(np.array([1.0, 0.0]), np.array([3, 3])).status.startswith("no interval")
    assert np.isnan(clustered_mean(np.array([]), np.array([])).win_rate)


def test_one_model_against_the_baseline_is_a_leaderboard_of_one():
    games = [(f"q{i}", "base", "m1", float(i % 3 == 0)) for i in range(30)]
    board = leaderboard(battles_from_table(_table(games)), FAST)
    t = board.table
    assert list(t["model"]) == ["m1"] and t.loc[0, "baseline"] == "base"
    assert t.loc[0, "win_rate"] == pytest.approx(100 * np.mean([i % 3 == 0 for i in range(30)]))
    # one model with the difficulty estimated from its own games: each difficulty carries its game's
    # outcome, the GLM is separated and the cross-validation picks the weakest penalty
    assert t.loc[0, "lc_status"].startswith("not estimable: separation: 30 of its 30 games")
    assert np.isnan(t.loc[0, "lc_win_rate"])
    assert board.flips.empty


def test_a_baseline_judged_against_itself_is_no_game():
    games = [(f"q{i}", "base", "base", 0.5) for i in range(5)]
    with pytest.raises(Exception, match="no usable verdict"):
        battles_from_table(_table(games))


def test_too_few_games_for_lc_says_so():
    games = [(f"q{i}", "base", "m1", 1.0) for i in range(4)] + [(f"q{i}", "base", "m2", 0.0) for i in range(4)]
    t = leaderboard(battles_from_table(_table(games)), FAST).table.set_index("model")
    assert t.loc["m1", "lc_status"].startswith("not estimable: 4 games")
    assert np.isnan(t.loc["m1", "lc_win_rate"])


def test_models_that_never_meet_the_reference_get_a_reason_not_a_number():
    games = ([(f"q{i}", "a", "b", float(i % 2)) for i in range(20)]
             + [(f"q{i}", "c", "d", float(i % 3 == 0)) for i in range(20)])
    board = leaderboard(battles_from_table(_table(games), baseline="a"), FAST)
    t = board.table.set_index("model")
    assert board.meta["design"] == "free battles"
    for m in ("c", "d"):
        assert np.isnan(t.loc[m, "style_controlled"]) and np.isnan(t.loc[m, "bias_aware"])
        assert "no chain of games to the reference 'a'" in t.loc[m, "style_status"]
        assert "no chain of games" in t.loc[m, "bias_aware_status"]
    assert t.loc["b", "bias_aware_status"] == "ok" and np.isfinite(t.loc["b", "bias_aware"])
    assert t.loc["a", "bias_aware_status"].startswith("reference")
    assert all(s.startswith("not estimable: needs every game against one baseline") for s in t["lc_status"])
    assert np.isnan(t["lc_win_rate"]).all()


def test_all_ties_give_fifty_everywhere():
    games = [(f"q{i}", "base", m, 0.5) for m in ("m1", "m2", "m3") for i in range(30)]
    t = leaderboard(battles_from_table(_table(games)), FAST).table
    np.testing.assert_allclose(t["win_rate"], 50.0)
    np.testing.assert_allclose(t["lc_win_rate"], 50.0, atol=1e-6)
    np.testing.assert_allclose(t["style_controlled"], 50.0, atol=1e-3)
    np.testing.assert_allclose(t["bias_aware"], 50.0, atol=1e-6)
    # ties are not evidence of a difference: no interval collapses to a point
    assert (t["win_rate_ci_low"] == t["win_rate_ci_high"]).all()  # every verdict identical: zero variance


def test_a_failed_game_removes_its_pair_and_is_counted():
    games = [(f"q{i}", "base", "m1", 1.0) for i in range(12)]
    table = pd.concat([_table(games, order="AB"), _table(games, order="BA")], ignore_index=True)
    table.loc[0, "preference"] = np.nan
    table.loc[0, "status"] = "unparsed"
    b = battles_from_table(table)
    assert len(b) == 22 and b.failed == {"m1": 2}  # the failed game and its partner
    t = leaderboard(b, FAST).table
    assert t.loc[0, "n"] == 22 and t.loc[0, "n_failed"] == 2


def test_the_style_counts_are_arena_hards_regular_expressions():
    text = "# Title\n## Sub\nplain\n1. one\n2. two\n- a\n* b\n+ c\n**bold** and __also__\n#nospace"
    assert style_of_text(text) == (len(text.split()), 2, 5, 2)


def test_std_delta_len_is_pandas_std_and_zero_without_spread():
    d = np.array([10.0, 20, 35]), np.array([5.0, 5, 5])
    want = (d[0] - d[1]) / pd.Series(d[0] - d[1]).std()
    np.testing.assert_allclose(std_delta_len(*d), want)
    assert (std_delta_len(np.ones(3), np.ones(3)) == 0).all()


def test_frozen_style_coefficients_keep_the_others_still_when_a_model_joins(tmp_path):
    pb = planted_board(6, 60, seed=3)
    first = pb.table[pb.table["model_b"] != "model-005"]
    base = leaderboard(battles_from_table(first), FAST)
    ref = {"coefs": base.style.coefs, "mean": base.style.mean.tolist(), "std": base.style.std.tolist()}
    frozen = BoardSettings(style_rounds=5, style_reference=ref)
    a = leaderboard(battles_from_table(first), frozen).table.set_index("model")
    b = leaderboard(battles_from_table(pb.table), frozen).table.set_index("model")
    common = a.index
    np.testing.assert_allclose(a["style_controlled"], b.loc[common, "style_controlled"])
    np.testing.assert_allclose(a["style_ci_low"], b.loc[common, "style_ci_low"])
    assert np.isfinite(b.loc["model-005", "style_controlled"])
    # without freezing the newcomer moves the others
    c = leaderboard(battles_from_table(pb.table), FAST).table.set_index("model")
    assert np.abs(c.loc[common, "style_controlled"] - base.table.set_index("model")["style_controlled"]).max() > 0


def test_leave_one_judge_out_kendall_tau_with_two_judges():
    pb = planted_board(6, 60, seed=4)
    t2 = pb.table.copy()
    t2["judge"] = "second"
    t2["pair_id"] = t2["pair_id"] + "|2"
    board = leaderboard(battles_from_table(pd.concat([pb.table, t2], ignore_index=True)), FAST)
    j = board.judges
    assert set(j["judge_left_out"]) == {"sim-length-biased", "second"}
    # the two judges gave identical verdicts: leaving either out keeps the raw order exactly
    raw = j[j["score"] == "win_rate"]
    np.testing.assert_allclose(raw["kendall_tau"], 1.0)
    assert (raw["n_models"] == 6).all()


def test_one_judge_has_an_empty_judge_table():
    pb = planted_board(4, 30, seed=5)
    assert leaderboard(battles_from_table(pb.table), FAST).judges.empty


# ---- the command ------------------------------------------------------------------------------------
def _alpaca_file(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows), encoding="utf-8")


def _alpaca_rows(model, prefs):
    return [{"instruction": f"q{i}", "output_1": "base answer " * (1 + i % 4), "generator_1": "base",
             "output_2": f"{model} answer " * (1 + i % 6), "generator_2": model, "dataset": "d",
             "annotator": "ann", "preference": p, "raw_completion": None} for i, p in enumerate(prefs)]


def test_the_command_writes_the_whole_set_honouring_the_umask(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for m in ("m1", "m2", "m3"):
        _alpaca_file(tmp_path / "results" / m / "ann" / "annotations.json",
                     _alpaca_rows(m, list(1 + rng.random(40))))
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("old run")
    old = os.umask(0o027)
    try:
        assert cli.main(["leaderboard", "--format", "alpaca_eval", str(tmp_path / "results"), "--out", str(out),
                         "--resamples", "5", "--force"]) == 0  # --force: stale.txt is no set of judgelab's
    finally:
        os.umask(old)
    names = {p.name for p in out.iterdir()}
    assert names == {"leaderboard.csv", "rank_flips.csv", "judges.csv", "style_coefficients.json",
                     "leaderboard.json", "leaderboard.png", "report.html", ".judgelab-set.json"}
    assert stat.S_IMODE(out.stat().st_mode) == 0o750
    assert stat.S_IMODE((out / "leaderboard.csv").stat().st_mode) == 0o640
    t = pd.read_csv(out / "leaderboard.csv")
    assert list(t["model"]) == sorted(t["model"], key=lambda m: -t.set_index("model").loc[m, "win_rate"])
    assert {"model", "n", "win_rate", "win_rate_ci_low", "win_rate_ci_high", "lc_win_rate", "lc_ci_low",
            "lc_ci_high", "style_controlled", "style_ci_low", "style_ci_high", "bias_aware", "bias_aware_ci_low",
            "bias_aware_ci_high"} <= set(t.columns)
    assert not list(tmp_path.glob(".out.*"))  # no staging folder left
    ref = read_reference(out / "style_coefficients.json")
    # the written coefficients freeze a second run
    assert cli.main(["leaderboard", "--format", "alpaca_eval", str(tmp_path / "results"), "--out",
                     str(tmp_path / "out2"), "--resamples", "5", "--style-reference",
                     str(out / "style_coefficients.json")]) == 0
    assert json.loads((tmp_path / "out2" / "leaderboard.json").read_text())["style_frozen"] is True
    assert set(ref["coefs"]) == {"length", "header_density", "list_density", "bold_density"}
    assert "LC instruction difficulty: estimated from the logs (3 models)" in capsys.readouterr().out


@pytest.mark.parametrize("args,needle", [
    (["--format", "alpaca_eval", "{bad}"], "preference"),
    (["--format", "alpaca_eval", "{good}", "--gamed-csv", "{csv}"], "missing column(s)"),
    (["--format", "alpaca_eval", "{good}", "--style-reference", "{csv}"], "not a readable JSON"),
    (["--format", "alpaca_eval", "{good}", "--baseline", "nobody"], "--baseline 'nobody'"),
    (["--format", "alpaca_eval", "{good}", "--alpha", "2"], "--alpha"),
])
def test_bad_input_is_one_line_naming_file_row_or_key(tmp_path, capsys, args, needle):
    good = tmp_path / "good" / "m1" / "ann" / "annotations.json"
    _alpaca_file(good, _alpaca_rows("m1", [1.0, 2.0] * 10))
    bad = tmp_path / "bad.json"
    rows = _alpaca_rows("m1", [1.0, 2.0])
    del rows[1]["preference"]
    _alpaca_file(bad, rows)
    csv = tmp_path / "x.csv"
    csv.write_text("a,b\n1,2\n")
    fill = {"{bad}": str(bad), "{good}": str(good), "{csv}": str(csv)}
    argv = ["leaderboard", *[fill.get(a, a) for a in args], "--out", str(tmp_path / "o"), "--resamples", "2"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("judgelab: error:") and needle in err and "\n" not in err
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_df_gamed_rows_are_read_with_their_keys(tmp_path):
    p = tmp_path / "df_gamed.csv"
    pd.DataFrame({"model": ["v", "v", "c"], "index": [0, 1, 0], "preference": [1.0, 0.5, None],
                  "std_delta_len": [0.5, -1.0, 0.2], "instruction_difficulty": [0.3, -0.2, 0.3],
                  "not_gamed_baseline": [False, False, False]}).to_csv(p, index=False)
    g = read_gamed_csv(p)
    np.testing.assert_allclose(g.preference, [1.0, 0.5])  # 0 is the tie; null dropped
    assert g.difficulty.to_dict() == {0: 0.3, 1: -0.2}
    pd.DataFrame({"index": ["x"], "preference": [1], "std_delta_len": [0], "instruction_difficulty": [0],
                  "not_gamed_baseline": [True]}).to_csv(p, index=False)
    with pytest.raises(Exception, match=r"row 2: key 'index'"):
        read_gamed_csv(p)


def test_without_torch_style_control_says_why_and_the_rest_stands(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "judgelab.board.style_control", None)  # import raises ImportError
    games = [(f"q{i}", "base", m, float((i + k) % 3 == 0)) for k, m in enumerate(("m1", "m2")) for i in range(30)]
    board = leaderboard(battles_from_table(_table(games)), FAST)
    t = board.table
    assert board.style is None and np.isnan(t["style_controlled"]).all()
    assert all("needs torch" in s for s in t["style_status"])
    assert np.isfinite(t["lc_win_rate"]).all() and np.isfinite(t["bias_aware"]).all()
