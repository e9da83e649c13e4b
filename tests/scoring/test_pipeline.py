"""The scoring study's part of the DAG, end to end in a scratch copy, on a small config.

Runs Table 3, Figures 5 and 6 and the other scoring outputs with two simulated
judges (the unbiased control and the reference-anchored ``sim-gemini-2.5-flash``)
on the project's rubric set and a synthesised FLASK sample, and checks that the
planted anchoring shows in the pipeline's own tables, that every table carries its
provenance, that judge-querying tables have the columns the call summary counts, and
that forcing the querying rules again asks no judge anything.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO
from tests.workflow.test_pipeline import WORKFLOW_PARTS, new_calls, run_sm

pytestmark = pytest.mark.slow

SMALL = """
scoring:
  run_datasets: [rubric_set, flask_hard]
  datasets:
    flask_hard: {loader: flask, source: flask/hard, n_items: 12, synthesise_responses: true}
  judges: [sim-unbiased, sim-gemini-2.5-flash]
  metrics: {n_boot: 200}
  stability: {n_boot: 100}
"""
TARGETS = [
    "results/scoring/table2.csv", "results/scoring/reference_coverage.csv",
    "results/scoring/table3.csv", "results/scoring/table3_wide.csv", "results/scoring/fluctuation.csv",
    "results/scoring/distributions.csv", "results/scoring/aggregation.csv", "results/scoring/stability.csv",
    "results/scoring/generation_summary.csv", "results/scoring/figures/reference_rho.png",
    "results/scoring/figures/score_distributions/rubric_set.png",
    "results/scoring/figures/score_distributions/flask_hard.png",
]


@pytest.fixture()
def workdir(tmp_path: Path, data_root: Path) -> Path:
    wd = tmp_path / "wf"
    wd.mkdir()
    for part in dict.fromkeys([*WORKFLOW_PARTS, "data"]):
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, wd / part)
        else:
            shutil.copy2(src, wd / part)
    (wd / "small.yaml").write_text(SMALL)
    return wd


def test_scoring_dag_builds_table3_and_figures(workdir: Path):
    run_sm(workdir, *TARGETS, "--configfile", "small.yaml", "-q")
    res = workdir / "results" / "scoring"
    for t in TARGETS:
        assert (workdir / t).exists(), t
    from judgelab.plots.stamp import STAMP_TEXT, figure_stamp

    for fig in res.rglob("*.png"):
        assert fig.stat().st_size > 20_000, fig
        assert figure_stamp(fig) == STAMP_TEXT, fig  # the simulated panel: every figure says so

    table3 = pd.read_csv(res / "table3.csv")
    assert set(table3["judge"]) == {"sim-unbiased", "sim-gemini-2.5-flash"}
    assert set(table3["variant"]) == {"baseline", "descending", "random", "letter", "roman",
                                      "ref1", "ref2", "ref3", "ref4", "ref5"}
    assert set(table3.groupby("dataset")["gold_source"].unique().map(frozenset)) == {
        frozenset({"design", "gold_judge"}), frozenset({"gold_judge"})}
    wide = pd.read_csv(res / "table3_wide.csv")
    assert {"rubric_set/design rho", "rubric_set/design r", "flask_hard/gold_judge rho"} <= set(wide.columns)
    assert len(wide) == 2 * 10  # judge x variant rows, as in the paper's Table 3
    for name in ("table3.csv", "fluctuation.csv", "distributions.csv", "aggregation.csv", "stability.csv",
                 "generation_summary.csv"):
        df = pd.read_csv(res / name)
        assert {"config_hash", "pipeline_seed", "judge_ids", "judge_seeds"} <= set(df.columns), name

    # Table 2: the gold judge and the other candidate (the second generation model), against the designed levels
    t2 = pd.read_csv(res / "table2.csv")
    assert set(t2["candidate"]) == {"sim-gpt-4.1", "sim-gpt-4o-refgen"} and set(t2["dataset"]) == {"rubric_set"}
    assert (t2["reference_source"] == "design").all() and t2["simulated"].all() and (t2["n"] == 40).all()
    cov = pd.read_csv(res / "reference_coverage.csv")  # on_reject: last keeps a text for every reference
    assert set(cov["variant"]) == {"ref1", "ref2", "ref3", "ref4", "ref5"} and (cov["n_dropped"] == 0).all()
    assert (table3["n_no_reference"] == 0).all()

    # the planted reference anchoring (config scoring.sim_profiles) shows in the Figure 6 table
    dist = pd.read_csv(res / "distributions.csv")
    d = dist[dist["dataset"] == "rubric_set"]

    def low_share(judge: str, variant: str) -> float:
        g = d[(d["judge"] == judge) & (d["variant"] == variant)]
        return g.loc[g["score"].isin([1, 2]), "share"].sum()

    assert low_share("sim-gemini-2.5-flash", "ref1") > low_share("sim-gemini-2.5-flash", "baseline") + 0.15
    assert low_share("sim-gemini-2.5-flash", "ref5") < low_share("sim-gemini-2.5-flash", "baseline")
    # and its planted reference_information (only references 4-5 inform it) shows in the Figure 5 data
    fig5 = table3[(table3["dataset"] == "rubric_set") & (table3["judge"] == "sim-gemini-2.5-flash")
                  & (table3["gold_source"] == "design")].set_index("variant")
    assert fig5.loc["ref5", "rho"] > fig5.loc["ref1", "rho"] + 0.15

    # judge-querying tables carry what the call summary counts; failures are shown as -1, never dropped
    needed = {"judge", "backend", "model", "simulated", "status", "tokens_in", "tokens_out", "cost_usd"}
    for p in [res / "gold.parquet", *res.glob("scores/*.parquet"), *res.glob("generation/*_calls.parquet")]:
        df = pd.read_parquet(p)
        assert needed <= set(df.columns) and len(df) > 0, p
    scores = pd.read_parquet(res / "scores" / "sim-gemini-2.5-flash.parquet")
    assert len(scores) == 10 * (40 + 12)
    assert (scores.loc[~scores["status"].isin(["ok", "fallback"]), "score"] == -1).all()

    asked = new_calls(workdir)
    queried = ["results/scoring/scores/sim-unbiased.parquet", "results/scoring/scores/sim-gemini-2.5-flash.parquet",
               "results/scoring/generation/references.parquet"]
    before = {q: pd.read_parquet(workdir / q) for q in queried}
    run_sm(workdir, *queried, "--configfile", "small.yaml", "-q", "--forcerun", "scoring_query", "scoring_references")
    assert new_calls(workdir) == asked  # everything came from the cache
    for q, df in before.items():
        pd.testing.assert_frame_equal(df, pd.read_parquet(workdir / q), obj=q)


def test_own_data_command_builds_with_the_api_judges(workdir: Path):
    """README "On your own data": the command's DAG, with real judges only (dry run: no API here)."""
    proc = run_sm(workdir, "-n", "--configfile", "config/judges/api.yaml", "config/scoring-own-data.yaml",
                  "--resources", "api_slots=4", "--", "results/scoring/table2.csv", "results/scoring/table3.csv",
                  "results/scoring/figures/reference_rho.png")
    out = proc.stdout + proc.stderr
    for job in ("scoring_items", "scoring_gold", "scoring_gold_candidate", "scoring_references", "scoring_table2"):
        assert job in out, job
    for judge in ("gpt-4o", "gemini-2.5-flash", "deepseek-chat"):
        assert f"results/scoring/scores/{judge}.parquet" in out
    assert "results/scoring/gold_candidates/gpt-4o.parquet" in out and "results/scoring/items/own.parquet" in out
    assert "sim-" not in out.replace("sim-unbiased", "")  # no simulated judge scores or writes
