"""``leaderboard-length --on-duplicate``: the published AlpacaEval 2 leaderboard names one model on two rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from judgelab import cli
from judgelab.board.length_check import length_correlation, read_leaderboard
from judgelab.io import InputError

LB = Path("alpaca_eval/leaderboards/weighted_alpaca_eval_gpt4_turbo_leaderboard.csv")
DUP = "GPT 3.5 Turbo (06/13)"


@pytest.fixture
def shared_lb(data_root: Path) -> Path:
    p = data_root / LB
    if not p.exists():
        pytest.skip(f"{p} not present")
    return p


def test_default_refuses_with_the_row_and_the_option(shared_lb: Path, capsys) -> None:
    assert cli.main(["leaderboard-length", str(shared_lb)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"{shared_lb}: model {DUP!r} appears twice (again at row 97)" in err[0]  # its second row, 0-based
    assert "--on-duplicate first|mean" in err[0]


def test_first_and_mean_on_the_real_file(shared_lb: Path, capsys) -> None:
    raw = pd.read_csv(shared_lb)
    rows = raw[raw["name"] == DUP]
    assert len(rows) == 2
    first = read_leaderboard(shared_lb, on_duplicate="first").table
    mean = read_leaderboard(shared_lb, on_duplicate="mean").table
    for t in (first, mean):
        assert len(t) == raw["name"].nunique() == len(raw) - 1
        assert not t["model"].duplicated().any()
    got_first = first.set_index("model").loc[DUP]
    assert got_first["score"] == rows["win_rate"].iloc[0] and got_first["length"] == rows["avg_length"].iloc[0]
    got_mean = mean.set_index("model").loc[DUP]
    assert got_mean["score"] == pytest.approx(rows["win_rate"].mean())
    assert got_mean["length"] == pytest.approx(rows["avg_length"].mean())
    # the other models are untouched and in file order
    others = raw[raw["name"] != DUP]
    assert first[first["model"] != DUP]["score"].tolist() == others["win_rate"].tolist()
    # the correlation is scipy's over the de-duplicated rows
    t = length_correlation(first, n_resamples=50)
    keep = raw[~raw["name"].duplicated()]
    assert t.loc[t.method == "pearson", "estimate"].iloc[0] == pytest.approx(
        stats.pearsonr(keep["avg_length"], keep["win_rate"]).statistic)
    assert cli.main(["leaderboard-length", str(shared_lb), "--on-duplicate", "mean"]) == 0
    assert f"{len(raw) - 1} models" in capsys.readouterr().out


def test_unknown_choice_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "lb.csv"
    p.write_text("model,score,length\na,1,2\nb,2,3\n")
    with pytest.raises(InputError, match="--on-duplicate must be one of"):
        read_leaderboard(p, on_duplicate="last")
