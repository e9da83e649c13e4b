"""The strategies study's part of the DAG, in a scratch copy of the workflow (small samples).

Builds the 375-pair controlled set and every table and figure of the study on part of the
simulated panel; checks provenance and failure accounting in the tables, and that a bad strategy
name fails at DAG construction naming the config key.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.workflow.test_pipeline import run_sm, workdir  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow

# Three panel judges (enough for a cross-family S3), five strategies, small gold samples, no
# replayed judges (their S1 is tested in tests/strategies/test_run.py): the full default study runs in
# tests/workflow/test_pipeline.py.
SMALL = """
replay_judges: []
strategies:
  judges: [sim-gemini-2.5-pro, sim-claude-sonnet-4, sim-gpt-4o]
  strategies: [B0, S1, S3, S5, S8]
  controlled: {expansion_generator: sim-gemini-2.5-pro}
  datasets:
    mtbench: {loader: mtbench, n: 30, seed: 42}
    llmbar: {loader: llmbar, n: 30, seed: 42}
  bootstrap: {n_resamples: 200}
"""
T = "results/strategies/tables"
TABLES = ["strategies", "agreement", "category_agreement", "mcnemar", "mixed_effects", "mde", "pareto",
          "recommendations", "controlled_summary", "bias_scores", "topic_style", "length_ablation", "cross_bias",
          "human_style_gap"]
FIGURES = ["agreement", "pareto", "category_agreement", "bias_heatmap", "cross_bias"]


def targets() -> list[str]:
    return [f"{T}/{t}.csv" for t in TABLES] + [f"results/strategies/figures/{f}.png" for f in FIGURES]


def test_strategies_study_end_to_end(workdir: Path):  # noqa: F811
    (workdir / "small.yaml").write_text(SMALL)
    run_sm(workdir, *targets(), "-q", "--configfile", "small.yaml")
    tabs = {t: pd.read_csv(workdir / T / f"{t}.csv") for t in TABLES}
    for name, df in tabs.items():
        assert {"config_hash", "pipeline_seed"} <= set(df.columns), name
    from judgelab.plots.stamp import STAMP_TEXT, figure_stamp

    for f in FIGURES:
        assert (workdir / "results/strategies/figures" / f"{f}.png").stat().st_size > 10_000, f
        assert figure_stamp(workdir / "results/strategies/figures" / f"{f}.png") == STAMP_TEXT, f  # simulated panel

    assert tabs["controlled_summary"]["n_pairs"].sum() == 375
    assert (tabs["controlled_summary"]["n_pairs"] == tabs["controlled_summary"]["n_expected"]).all()
    agr = tabs["agreement"]
    assert {"judge_ids", "n_no_verdict", "n_two_verdicts", "n_prose_only", "n_broken_json", "n_refusal"} <= set(agr.columns)
    panel = agr[agr["judge"] != "gold"]
    assert set(panel["dataset"]) == {"mtbench", "llmbar"}
    assert set(panel["strategy"]) == {"B0", "S1", "S3", "S5", "S8"}
    assert panel["n_malformed"].sum() > 0  # the panel's planted malformed answers are counted, not dropped
    assert (agr.loc[agr["judge"] == "gold", "n"] > 0).all()
    bias = tabs["bias_scores"]
    b0 = bias[(bias["strategy"] == "B0") & (bias["measure"] == "style")].set_index("judge")["value"]
    assert b0["sim-gemini-2.5-pro"] > 0.4  # planted 0.76
    assert set(tabs["mixed_effects"]["logit_converged"]) == {True}
    assert set(tabs["recommendations"]["algorithm_line"]) >= {"1-2", "4-5", "16"}
    assert not (workdir / T / "replay_s1.csv").exists()


def test_unknown_strategy_fails_before_running(workdir: Path):  # noqa: F811
    (workdir / "bad.yaml").write_text("strategies:\n  strategies: [B0, S9]\n")
    proc = run_sm(workdir, "-n", "--configfile", "bad.yaml", check=False)
    assert proc.returncode != 0
    assert "unknown debiasing strategy 'S9' (config: strategies/strategies)" in proc.stdout + proc.stderr
