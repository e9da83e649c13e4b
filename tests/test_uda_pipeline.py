"""Study uda in the Snakemake DAG (scratch copy): the MT-Bench tournament end to end with the simulated panel.

A reduced config (8 MT-Bench prompts, three simulated judges, hashing embeddings, 3 epochs)
runs human Bradley-Terry fit -> tournament -> own answers and verdicts through the cache ->
embeddings -> adapters -> scores -> tables and figures, and the methods table reports every
method's correlation with the human Bradley-Terry scores.  The default-size run is part of
tests/test_pipeline.py (whole DAG, twice, identical tables).
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.test_pipeline import run_sm, workdir  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow

SMALL = """
uda:
  judges: [sim-gpt-4o, sim-claude-sonnet-4, sim-llama-3.3-70b]
  embedding: {backend: hashing, dim: 64}
  training: {epochs: 3, hidden: [16, 8]}
  human: {bootstrap: 20}
  transfer: []
  datasets:
    mt_bench: {n_prompts: 8}
"""


def test_mt_bench_tournament_end_to_end_reports_human_correlation(workdir):  # noqa: F811
    (workdir / "small.yaml").write_text(SMALL)
    targets = ["results/uda/mt_bench/tables/methods.csv", "results/uda/mt_bench/figures/pearson.png",
               "results/uda/mt_bench/tables/judges.csv"]
    run_sm(workdir, *targets, "-q", "--configfile", "small.yaml")
    methods = pd.read_csv(workdir / "results/uda/mt_bench/tables/methods.csv").set_index("method")
    assert set(methods.index) == {"baseline", "uda", "uda_ablated"}
    assert methods["reference"].eq("human_bt").all() and methods["n_reference_models"].eq(6).all()
    assert methods["mean_pearson_reference"].between(-1, 1).all()
    assert methods.loc["baseline", "consensus_pearson_reference"] > 0.5
    assert {"config_hash", "pipeline_seed", "judge_ids", "judge_seeds"} <= set(methods.columns)
    human = pd.read_csv(workdir / "results/uda/human/bradley_terry.csv")
    assert {"elo", "elo_ci_low", "elo_ci_high"} <= set(human.columns) and len(human) == 6
    judges = pd.read_csv(workdir / "results/uda/mt_bench/tables/judges.csv")
    assert judges["presentations"].eq(8 * 6 * 5).all() and len(judges) == 3
    verdicts = pd.read_parquet(workdir / "results/uda/mt_bench/verdicts/sim-gpt-4o.parquet")
    assert {"judge", "backend", "model", "simulated", "status", "tokens_in", "tokens_out", "cost_usd"} <= set(verdicts.columns)
    assert (workdir / "results/uda/mt_bench/figures/pearson.png").stat().st_size > 10_000
    # every call was asked once: the cache's run log holds one answers and one pairs run per judge
    import sqlite3

    with sqlite3.connect(workdir / "results" / "cache" / "calls.sqlite") as c:
        runs = c.execute("SELECT COUNT(*), SUM(requested), SUM(new_calls) FROM runs WHERE label LIKE 'uda:%'").fetchone()
    assert runs == (2 * 3, 3 * (8 + 8 * 30), 3 * (8 + 8 * 30))
