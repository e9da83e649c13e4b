"""scripts/lc_weights_gap.py: its LC from the published weights is the leaderboard's own, AlpacaEval's
row-position lookup is reproduced on a file that lacks an instruction, and the difficulty
calibration recovers a planted transform."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from judgelab.board.battles import battles_from_table
from judgelab.board.length_controlled import read_lc_weights
from judgelab.board.table import BoardSettings, leaderboard
from judgelab.verdict_import.importer import import_verdicts
from judgelab.verdict_import.presets import mapping_from_config
from tests.conftest import REPO

spec = importlib.util.spec_from_file_location("lc_weights_gap", REPO / "scripts" / "lc_weights_gap.py")
gap = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gap)

ANNOTATIONS = "weighted_alpaca_eval_gpt4_turbo/annotations.json"
MODELS = ("vicuna-7b", "claude-2.1")


@pytest.fixture(scope="module")
def shared(data_root: Path) -> Path:
    root = data_root / "alpaca_eval"
    if not all((root / "results" / m / ANNOTATIONS).is_file() for m in MODELS):
        pytest.skip(f"{root}/results lacks {MODELS}")
    return root


def _results(tmp: Path, shared: Path, drop_first_of: str | None = None) -> Path:
    """Two shared results folders under ``tmp`` (links; ``drop_first_of``: that model's file written
    without its first instruction, as the public files with 802-804 rows are)."""
    for m in MODELS:
        dest = tmp / "results" / m / ANNOTATIONS
        dest.parent.mkdir(parents=True)
        src = shared / "results" / m / ANNOTATIONS
        if m == drop_first_of:
            dest.write_text(json.dumps(json.loads(src.read_text(encoding="utf-8"))[1:]), encoding="utf-8")
        else:
            dest.symlink_to(src)
    return tmp / "results"


def _run(results: Path, shared: Path) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame]:
    weights = read_lc_weights(shared / "weights" / "length_controlled_v1_baseline_gpt4_1106_preview.csv")
    published = gap.published_lc(shared / "leaderboards" / "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv")
    battles = battles_from_table(import_verdicts(gap.annotation_files(results), mapping_from_config("alpaca_eval")))
    table, difficulty = gap.gaps(battles, weights, published)
    return table.set_index("folder"), difficulty, weights


def test_by_instruction_is_what_the_leaderboard_reports(tmp_path: Path, shared: Path):
    results = _results(tmp_path, shared)
    table, difficulty, weights = _run(results, shared)
    assert sorted(table.index) == sorted(MODELS)
    battles = battles_from_table(import_verdicts(gap.annotation_files(results), mapping_from_config("alpaca_eval")))
    board = leaderboard(battles, BoardSettings(style_rounds=1, lc_weights=weights), judges=False).table
    reported = board.set_index("model")["lc_from_published_weights"]
    for m in MODELS:
        assert table.loc[m, "by_instruction"] == pytest.approx(reported[m], abs=1e-9)
        # a complete file: row r holds instruction r, so both lookups agree
        assert table.loc[m, "by_position"] == pytest.approx(table.loc[m, "by_instruction"], abs=1e-9)
    assert len(difficulty) == 805


def test_by_position_shifts_a_file_that_lacks_an_instruction(tmp_path: Path, shared: Path):
    table, difficulty, weights = _run(_results(tmp_path, shared, drop_first_of="claude-2.1"), shared)
    assert table.loc["claude-2.1", "rows"] == 804
    w = weights.loc["claude-2.1"].to_numpy(float)
    # AlpacaEval (reset_index): row r gets instruction r's difficulty, so rows 0-803 read 0-803;
    # judgelab joins by instruction, so the same rows are instructions 1-804
    assert table.loc["claude-2.1", "by_position"] == pytest.approx(100 * expit(w[1] * difficulty[:804] + w[2]).mean())
    assert table.loc["claude-2.1", "by_instruction"] == pytest.approx(100 * expit(w[1] * difficulty[1:] + w[2]).mean())
    assert table.loc["claude-2.1", "by_position"] != pytest.approx(table.loc["claude-2.1", "by_instruction"])
    assert table.loc["vicuna-7b", "by_position"] == pytest.approx(table.loc["vicuna-7b", "by_instruction"])


def test_main_prints_the_distribution_and_writes_the_table(tmp_path: Path, shared: Path, capsys):
    out = tmp_path / "gaps.csv"
    rc = gap.main([str(_results(tmp_path, shared)), str(shared / "weights" /
                   "length_controlled_v1_baseline_gpt4_1106_preview.csv"),
                   str(shared / "leaderboards" / "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"), "--out", str(out)])
    assert rc == 0
    table = pd.read_csv(out)
    printed = capsys.readouterr().out
    assert f"gap: 2 models, median |gap| {table['gap'].abs().median():.2f} pp" in printed
    assert (table["gap"] == table["by_instruction"] - table["published_lc"]).all()


def test_main_names_a_folder_without_annotations(tmp_path: Path, capsys):
    assert gap.main([str(tmp_path), "w.csv", "lb.csv"]) == 2
    assert str(tmp_path) in capsys.readouterr().err


def test_calibration_recovers_a_planted_cubic_transform():
    rng = np.random.default_rng(0)
    d = rng.normal(0, 1.5, 805)
    truth = np.polyval([0.03, -0.05, 0.8, 0.2], d)  # AlpacaEval's difficulty, unseen by the fit
    weights = pd.DataFrame({"np.tanh(std_delta_len)": rng.normal(0, 1, 40), "instruction_difficulty":
                            rng.uniform(0.3, 1.2, 40), "not_gamed_baseline.astype(float)": rng.normal(-1, 1.5, 40)},
                           index=[f"m{i}" for i in range(40)])
    w = weights.to_numpy()
    published = pd.Series(100 * expit(w[:, 1:2] * truth[None, :] + w[:, 2:3]).mean(axis=1), index=weights.index)
    residual = gap.calibrated_residuals(d, weights, published)
    assert residual.abs().max() < 1e-3
    # without the transform the same weights are off: the calibration is what closes it
    raw = 100 * expit(w[:, 1:2] * d[None, :] + w[:, 2:3]).mean(axis=1) - published.to_numpy()
    assert np.abs(raw).max() > 1.0


def test_main_names_a_leaderboard_without_the_lc_column(tmp_path: Path, shared: Path, capsys):
    bad = tmp_path / "lb.csv"
    bad.write_text("name,win_rate\nx,1\n", encoding="utf-8")
    rc = gap.main([str(_results(tmp_path, shared)),
                   str(shared / "weights" / "length_controlled_v1_baseline_gpt4_1106_preview.csv"), str(bad)])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("lc_weights_gap: error:") and str(bad) in err and "length_controlled_winrate" in err
