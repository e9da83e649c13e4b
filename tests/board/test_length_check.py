"""Leaderboard length check: correlation of score with length, Fisher-z and bootstrap CIs, CLI.

The AlpacaEval fixtures (tests/fixtures/alpaca_eval/, README there) are the real published
layout: an empty first header cell over the model names (issue 19)."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from judgelab import cli
from judgelab.board.length_check import LEADERBOARD_COLUMNS, LeaderboardColumns, length_correlation, read_leaderboard
from judgelab.io import InputError
from tests.conftest import REPO

ALPACA = REPO / "tests" / "fixtures" / "alpaca_eval"
AE1 = ALPACA / "alpaca_eval_gpt4_leaderboard.csv"
AE2 = ALPACA / "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"


def _board(n: int, rho: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    z = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n)
    return pd.DataFrame({"model": [f"m{i}" for i in range(n)], "length": 400 + 100 * z[:, 0],
                         "score": 50 + 10 * z[:, 1]})


def test_estimates_and_fisher_interval():
    b = _board(25, 0.6, 1)
    t = length_correlation(b, n_resamples=500).set_index("method")
    assert list(t.reset_index().columns) == LEADERBOARD_COLUMNS
    r = np.corrcoef(b["length"], b["score"])[0, 1]
    assert t.loc["pearson", "estimate"] == pytest.approx(r)
    rho = stats.spearmanr(b["length"], b["score"]).statistic
    assert t.loc["spearman", "estimate"] == pytest.approx(rho)
    half = 1.959963984540054 / math.sqrt(25 - 3)
    assert t.loc["pearson", "ci_low"] == pytest.approx(math.tanh(math.atanh(r) - half), abs=1e-9)
    assert t.loc["pearson", "ci_high"] == pytest.approx(math.tanh(math.atanh(r) + half), abs=1e-9)
    half_s = 1.959963984540054 * math.sqrt(1.06 / 22)
    assert t.loc["spearman", "ci_low"] == pytest.approx(math.tanh(math.atanh(rho) - half_s), abs=1e-9)
    for m in ("pearson", "spearman"):
        row = t.loc[m]
        assert row.ci_low < row.estimate < row.ci_high and row.boot_low < row.estimate < row.boot_high
    # a leaderboard that is a pure function of length: rank correlation 1, significant
    mono = pd.DataFrame({"model": list("abcdefgh"), "length": np.arange(8) * 50 + 100.0,
                         "score": np.exp(np.arange(8) / 3)})
    tm = length_correlation(mono, n_resamples=300).set_index("method")
    assert tm.loc["spearman", "estimate"] == pytest.approx(1.0) and tm.loc["spearman", "p_value"] < 0.01


def test_intervals_cover_the_population_correlation():
    pearson, boot = [], []
    for seed in range(40):
        t = length_correlation(_board(30, 0.5, seed), n_resamples=400, seed=seed).set_index("method")
        pearson.append(t.loc["pearson", "ci_low"] <= 0.5 <= t.loc["pearson", "ci_high"])
        boot.append(t.loc["pearson", "boot_low"] <= 0.5 <= t.loc["pearson", "boot_high"])
    assert np.mean(pearson) >= 0.9 and np.mean(boot) >= 0.85


def test_cli_reads_common_column_names_and_reports_errors(tmp_path: Path, capsys):
    p = tmp_path / "leaderboard.csv"
    b = _board(12, 0.8, 3).rename(columns={"model": "name", "score": "win_rate", "length": "avg_length"})
    b.to_csv(p, index=False)
    out = tmp_path / "corr.csv"
    assert cli.main(["leaderboard-length", str(p), "--out", str(out)]) == 0
    t = pd.read_csv(out)
    assert set(t["method"]) == {"pearson", "spearman"} and (t["n"] == 12).all()
    assert "pearson" in capsys.readouterr().out
    b = b.astype({"avg_length": object})
    b.loc[4, "avg_length"] = "n/a"
    b.to_csv(p, index=False)
    assert cli.main(["leaderboard-length", str(p)]) == 2
    assert f"{p} row 4: avg_length is not a number" in capsys.readouterr().err
    with pytest.raises(InputError, match=r"no column 'len' for the length; columns found: \['name', "):
        read_leaderboard(p, length_col="len")
    with pytest.raises(InputError, match="at least 4 models"):
        length_correlation(_board(3, 0.5, 0))


def _csv_column(path: Path, col: str) -> list[str]:
    """One column of a CSV by the csv module (an independent reader: the first header cell is '')."""
    with path.open(newline="") as fh:
        return [row[col] for row in csv.DictReader(fh)]


@pytest.mark.parametrize("path", [AE1, AE2], ids=["alpaca_eval_1", "alpaca_eval_2"])
def test_real_alpaca_eval_leaderboards_are_read_with_their_unnamed_model_column(path: Path):
    lb = read_leaderboard(path)
    assert lb.columns.model == "" and lb.columns.score == "win_rate" and lb.columns.length == "avg_length"
    assert lb.table["model"].tolist() == _csv_column(path, "")  # the names, not the row numbers
    np.testing.assert_array_equal(lb.table["score"], [float(v) for v in _csv_column(path, "win_rate")])
    np.testing.assert_array_equal(lb.table["length"], [float(v) for v in _csv_column(path, "avg_length")])
    assert len(lb.table) == 12 and lb.table["model"].iloc[0] in ("gpt4", "Shopee-SlimMoA-v1")


def test_alpaca_eval_2_lists_its_other_scores_and_the_cli_says_which_columns_it_used(tmp_path: Path, capsys):
    lb = read_leaderboard(AE2)
    assert lb.columns.other_scores == ("length_controlled_winrate", "discrete_win_rate")
    assert cli.main(["leaderboard-length", str(AE2), "--out", str(tmp_path / "t.csv")]) == 0
    out = capsys.readouterr().out
    assert (f"{AE2}: 12 models; model column the unnamed first column (row names), score column 'win_rate', "
            "length column 'avg_length' (other score columns: 'length_controlled_winrate', 'discrete_win_rate'; "
            "choose with --score-col)") in out
    # the length-controlled score on request: the estimate is the hand-computed Pearson r of that column
    assert cli.main(["leaderboard-length", str(AE2), "--score-col", "length_controlled_winrate",
                     "--out", str(tmp_path / "lc.csv")]) == 0
    assert "score column 'length_controlled_winrate'" in capsys.readouterr().out
    x = np.array([float(v) for v in _csv_column(AE2, "avg_length")])
    y = np.array([float(v) for v in _csv_column(AE2, "length_controlled_winrate")])
    r = ((x - x.mean()) * (y - y.mean())).sum() / math.sqrt(((x - x.mean()) ** 2).sum() * ((y - y.mean()) ** 2).sum())
    t = pd.read_csv(tmp_path / "lc.csv").set_index("method")
    assert t.loc["pearson", "estimate"] == pytest.approx(r, abs=1e-12)
    raw = pd.read_csv(tmp_path / "t.csv").set_index("method")
    assert raw.loc["pearson", "estimate"] != pytest.approx(r, abs=1e-3)  # it really read another column
    # AlpacaEval 1 through the CLI too (it was rejected: "no model column")
    assert cli.main(["leaderboard-length", str(AE1)]) == 0
    assert f"{AE1}: 12 models; model column the unnamed first column" in capsys.readouterr().out


def test_undecidable_columns_name_the_file_and_the_columns_found(tmp_path: Path, capsys):
    p = tmp_path / "board.csv"
    p.write_text("system,points,avg_length\na,1,10\nb,2,20\nc,3,30\nd,4,45\n")
    with pytest.raises(InputError) as e:
        read_leaderboard(p)
    assert str(e.value) == (f"{p}: cannot tell which column is the model: none of ['model', 'name', 'model_name', "
                            "'Model', '_key'] (nor an unnamed first column); columns found: ['system', 'points', "
                            "'avg_length']; name it with --model-col")
    with pytest.raises(InputError) as e:
        read_leaderboard(p, model_col="system")
    assert str(e.value) == (f"{p}: cannot tell which column is the score: none of ['score', 'win_rate', 'winrate', "
                            "'elo', 'rating', 'Score', 'length_controlled_winrate', 'discrete_win_rate']; columns "
                            "found: ['system', 'points', 'avg_length']; name it with --score-col")
    lb = read_leaderboard(p, model_col="system", score_col="points")
    assert lb.columns == LeaderboardColumns("system", "points", "avg_length", ())
    assert lb.columns.describe() == "model column 'system', score column 'points', length column 'avg_length'"
    assert cli.main(["leaderboard-length", str(p)]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and "columns found: ['system', 'points', 'avg_length']" in err
    # an unnamed column that is not the first is no model name column
    p.write_text("win_rate,,avg_length\n1,a,10\n2,b,20\n3,c,30\n4,d,45\n")
    with pytest.raises(InputError, match="cannot tell which column is the model"):
        read_leaderboard(p)
    # an unnamed first column with a gap in it
    p.write_text(",win_rate,avg_length\na,1,10\n,2,20\nc,3,30\nd,4,45\n")
    with pytest.raises(InputError, match=rf"{p} row 1: no model name in column ''"):
        read_leaderboard(p)


@pytest.mark.parametrize("role, names", [
    ("model", ["model", "name", "model_name", "Model", "_key"]),
    ("score", ["score", "win_rate", "winrate", "elo", "rating", "Score", "length_controlled_winrate",
               "discrete_win_rate"]),
    ("length", ["length", "avg_length", "avg_tokens", "mean_length", "token_len", "Length"]),
])
def test_every_documented_column_name_is_recognised_in_its_order(tmp_path: Path, role: str, names: list[str]):
    base = {"model": "model", "score": "score", "length": "length"}
    rows = [("a", 1.0, 10.0), ("b", 2.0, 30.0), ("c", 3.0, 20.0), ("d", 5.0, 50.0)]
    for n, name in enumerate(names):
        cols = {**base, role: name}
        header = [cols["model"], cols["score"], cols["length"]]
        # every later name of the list is present too, holding other values: the earlier name wins
        later = names[n + 1:]
        p = tmp_path / f"{role}{n}.csv"
        lines = [",".join(header + [f"{c}" for c in later])]
        for m, s, ln in rows:
            vals = {"model": m, "score": s, "length": ln}[role]
            lines.append(",".join([m, str(s), str(ln)] + [f"{vals}x" if role == "model" else "-1" for _ in later]))
        p.write_text("\n".join(lines) + "\n")
        lb = read_leaderboard(p)
        assert getattr(lb.columns, role) == name
        assert lb.table["model"].tolist() == ["a", "b", "c", "d"]
        assert lb.table["score"].tolist() == [1.0, 2.0, 3.0, 5.0] and lb.table["length"].tolist() == [10, 30, 20, 50]


def test_json_leaderboards_keyed_by_model_and_duplicates(tmp_path: Path):
    p = tmp_path / "board.json"
    p.write_text('{"a": {"elo": 1200, "avg_tokens": 300}, "b": {"elo": 1100, "avg_tokens": 250},'
                 ' "c": {"elo": 1000, "avg_tokens": 200}, "d": {"elo": 900, "avg_tokens": 260}}')
    lb = read_leaderboard(p)
    assert lb.columns == LeaderboardColumns("_key", "elo", "avg_tokens", ())
    assert lb.table["model"].tolist() == list("abcd") and lb.path == p
    d = tmp_path / "dup.csv"
    d.write_text("model,score,length\na,1,2\nb,2,3\na,3,4\n")
    with pytest.raises(InputError, match=re.escape(f"{d}: model 'a' appears twice")):
        read_leaderboard(d)
    e = tmp_path / "empty.csv"
    e.write_text("model,score,length\n")
    with pytest.raises(InputError, match=re.escape(f"{e}: no rows")):
        read_leaderboard(e)
    gap = tmp_path / "gap.csv"
    gap.write_text("model,score,length\na,1,2\nb,,3\nc,3,4\n")
    with pytest.raises(InputError, match=re.escape(f"{gap} row 1: score is not a number ('')")):
        read_leaderboard(gap)


def test_row_wise_correlation_and_the_bootstrap_interval_by_hand():
    from judgelab.board.length_check import _bootstrap_ci, _corr

    a = np.array([[1.0, 2.0, 3.0, 5.0], [1.0, 1.0, 1.0, 1.0], [4.0, 3.0, 2.0, 0.0]])
    b = np.array([[2.0, 1.0, 4.0, 3.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]])
    r = _corr(a, b)
    assert r[0] == pytest.approx(np.corrcoef(a[0], b[0])[0, 1]) and math.isnan(r[1])
    assert r[2] == pytest.approx(np.corrcoef(a[2], b[2])[0, 1])
    x = np.array([1.0, 1.0, 2.0, 4.0, 3.0])  # two equal lengths: some resamples have no spread
    y = np.array([2.0, 3.0, 1.0, 5.0, 4.0])
    for method in ("pearson", "spearman"):
        lo, hi = _bootstrap_ci(x, y, method, 300, 7, 0.1)
        idx = np.random.default_rng(7).integers(0, 5, size=(300, 5))
        rs = []
        for row in idx:  # the same resamples, one at a time by scipy
            xs, ys = x[row], y[row]
            if np.ptp(xs) == 0 or np.ptp(ys) == 0:
                continue  # no defined correlation: dropped, not nan for the whole interval
            f = stats.pearsonr if method == "pearson" else stats.spearmanr
            rs.append(f(xs, ys).statistic)
        assert len(rs) < 300
        assert (lo, hi) == pytest.approx(tuple(np.quantile(rs, [0.05, 0.95])), abs=1e-12)


def test_log_length_confidence_and_the_perfect_rank_correlation():
    b = _board(9, 0.4, 5)
    t = length_correlation(b, log_length=True, n_resamples=200, alpha=0.2).set_index("method")
    lx = np.log(b["length"].to_numpy())
    res = stats.pearsonr(lx, b["score"])
    assert t.loc["pearson", "estimate"] == pytest.approx(res.statistic)
    assert t.loc["pearson", "p_value"] == pytest.approx(res.pvalue)
    ci = res.confidence_interval(confidence_level=0.8)
    assert (t.loc["pearson", "ci_low"], t.loc["pearson", "ci_high"]) == pytest.approx((ci.low, ci.high))
    rho = stats.spearmanr(lx, b["score"])
    z = stats.norm.ppf(0.9)
    half = z * math.sqrt(1.06 / 6)
    assert t.loc["spearman", "ci_high"] == pytest.approx(math.tanh(math.atanh(rho.statistic) + half))
    assert t.loc["spearman", "p_value"] == pytest.approx(rho.pvalue)
    assert (t["length_scale"] == "log").all() and (t["n"] == 9).all()
    assert (length_correlation(b, n_resamples=50)["length_scale"] == "raw").all()
    with pytest.raises(InputError, match=r"^--log-length needs positive lengths$"):
        length_correlation(b.assign(length=np.r_[0.0, b["length"].to_numpy()[1:]]), log_length=True)
    assert len(length_correlation(_board(4, 0.5, 1), n_resamples=50)) == 2  # 4 models are enough
    # rank correlation exactly 1: the interval is clipped at 0.999999 on Fisher's z, not infinite
    mono = pd.DataFrame({"model": list("abcdef"), "length": np.arange(6.0) + 1, "score": np.arange(6.0) ** 2})
    s = length_correlation(mono, n_resamples=50).set_index("method").loc["spearman"]
    half = stats.norm.ppf(0.975) * math.sqrt(1.06 / 3)
    assert s["ci_low"] == pytest.approx(math.tanh(math.atanh(0.999999) - half))
    assert s["ci_high"] == pytest.approx(math.tanh(math.atanh(0.999999) + half)) and s["ci_high"] <= 1.0
    anti = mono.assign(score=-mono["score"])
    s = length_correlation(anti, n_resamples=50).set_index("method").loc["spearman"]
    assert s["ci_high"] == pytest.approx(math.tanh(math.atanh(-0.999999) + half))


def test_an_empty_model_key_in_json_is_the_unnamed_column(tmp_path: Path):
    p = tmp_path / "board.json"
    p.write_text('[{"": "a", "win_rate": 1, "avg_length": 5}, {"": "b", "win_rate": 2, "avg_length": 3},'
                 ' {"": "c", "win_rate": 4, "avg_length": 9}, {"": "d", "win_rate": 3, "avg_length": 1}]')
    lb = read_leaderboard(p)
    assert lb.columns.model == "" and lb.table["model"].tolist() == list("abcd")
    assert lb.columns.describe().startswith("model column the unnamed first column (row names), score column")


def test_defaults_bootstrap_per_method_and_unit_lengths():
    from judgelab.board.length_check import _bootstrap_ci

    b = _board(7, 0.3, 2).assign(length=[1.0, 2.0, 5.0, 3.0, 9.0, 4.0, 6.0])
    t = length_correlation(b, log_length=True).set_index("method")  # a length of 1 (log 0) is fine
    x, y = np.log(b["length"].to_numpy()), b["score"].to_numpy()
    for m in ("pearson", "spearman"):  # default: 5000 resamples, seed 0, 95%
        assert (t.loc[m, "boot_low"], t.loc[m, "boot_high"]) == _bootstrap_ci(x, y, m, 5000, 0, 0.05)
    assert t.loc["spearman", "boot_low"] != t.loc["pearson", "boot_low"]
    again = length_correlation(b, log_length=True, seed=3, n_resamples=400).set_index("method")
    assert again.loc["spearman", "boot_high"] == _bootstrap_ci(x, y, "spearman", 400, 3, 0.05)[1]


def test_a_constant_resample_is_dropped_quietly():
    import warnings

    from judgelab.board.length_check import _corr

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = _corr(np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]]), np.array([[1.0, 2.0, 4.0], [1.0, 2.0, 4.0]]))
    assert math.isnan(r[0]) and r[1] == pytest.approx(np.corrcoef([1, 2, 3], [1, 2, 4])[0, 1])
