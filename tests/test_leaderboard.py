"""Leaderboard length check: correlation of score with length, Fisher-z and bootstrap CIs, CLI."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from judgelab import cli
from judgelab.io import InputError
from judgelab.leaderboard import LEADERBOARD_COLUMNS, length_correlation, read_leaderboard


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
    with pytest.raises(InputError, match="no column 'len' for the length"):
        read_leaderboard(p, length_col="len")
    with pytest.raises(InputError, match="at least 4 models"):
        length_correlation(_board(3, 0.5, 0))
