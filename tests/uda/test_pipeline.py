"""Study uda in the Snakemake DAG (scratch copy): the MT-Bench tournament end to end with the simulated panel.

A reduced config (8 MT-Bench prompts, three simulated judges, hashing embeddings, 3 epochs)
runs human Bradley-Terry fit -> tournament -> own answers and verdicts through the cache ->
embeddings -> adapters -> scores -> tables and figures, and the methods table reports every
method's correlation with the human Bradley-Terry scores.  The default-size run is part of
tests/workflow/test_pipeline.py (whole DAG, twice, identical tables).
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.workflow.test_pipeline import run_sm, workdir  # noqa: F401  (fixture)

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
    assert set(methods.index) == {"baseline", "label_smoothing", "uda_untrained", "uda", "uda_ablated"}
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
    from judgelab.plots.stamp import STAMP_TEXT, figure_stamp

    assert figure_stamp(workdir / "results/uda/mt_bench/figures/pearson.png") == STAMP_TEXT  # simulated panel
    # every call was asked once: the cache's run log holds one answers and one pairs run per judge
    import sqlite3

    with sqlite3.connect(workdir / "results" / "cache" / "calls.sqlite") as c:
        runs = c.execute("SELECT COUNT(*), SUM(requested), SUM(new_calls) FROM runs WHERE label LIKE 'uda:%'").fetchone()
    assert runs == (2 * 3, 3 * (8 + 8 * 30), 3 * (8 + 8 * 30))


OWN = """
uda:
  judges: [sim-gpt-4o, sim-gemini-2.5-pro, sim-gemini-2.5-flash, sim-llama-3.3-70b]
  run_datasets: [own]
  embedding: {backend: hashing, dim: 64}
  training: {epochs: 3, hidden: [16, 8]}
  transfer: []
  datasets:
    own:
      loader: generated
      prompts: data/uda/own_prompts.jsonl
      models: [sim-gpt-4o, sim-gemini-2.5-pro, sim-gemini-2.5-flash, sim-llama-3.3-70b]
      reference: none
"""


def test_own_prompts_generated_tournament_end_to_end(workdir):  # noqa: F811
    """The README's "On your own data" run with the simulated panel: the answerers answer the shipped
    prompts file, the judges judge, and every judge's own model is its own answerer -- also the two
    judges of one family (the two Gemini entries); its own answers are cache hits."""
    (workdir / "own.yaml").write_text(OWN)
    targets = ["results/uda/own/tables/controls.csv", "results/uda/own/tables/generation.csv",
               "results/uda/own/tables/judges.csv", "results/uda/own/tables/methods.csv"]
    run_sm(workdir, *targets, "-q", "--configfile", "own.yaml")
    gen = pd.read_csv(workdir / "results/uda/own/tables/generation.csv").set_index("answerer")
    assert gen["prompts"].eq(8).all() and gen["prompts_in_tournament"].eq(8).all() and len(gen) == 4
    assert gen["simulated"].all()
    answers = [ln for ln in (workdir / "results/uda/own/model_answer/sim-gpt-4o.jsonl").read_text().splitlines() if ln]
    assert len(answers) == 8 and '"choices"' in answers[0]
    judges = pd.read_csv(workdir / "results/uda/own/tables/judges.csv").set_index("judge")
    assert (judges["own_model"] == judges.index).all()  # per judge, not per family
    assert judges["presentations"].eq(8 * 4 * 3).all()
    methods = pd.read_csv(workdir / "results/uda/own/tables/methods.csv")
    assert methods["reference"].eq("none").all() and methods["mean_pearson_reference"].isna().all()
    controls = pd.read_csv(workdir / "results/uda/own/tables/controls.csv")
    assert {"label_smoothing", "uda_untrained", "uda"} <= set(controls["method"])
    import sqlite3

    with sqlite3.connect(workdir / "results" / "cache" / "calls.sqlite") as c:
        gen_runs = c.execute("SELECT SUM(requested), SUM(new_calls) FROM runs WHERE label = 'uda:own:generate'").fetchone()
        own_runs = c.execute("SELECT SUM(requested), SUM(new_calls) FROM runs WHERE label = 'uda:own:answers'").fetchone()
    assert gen_runs == (4 * 8, 4 * 8) and own_runs == (4 * 8, 0)


def test_own_prompts_with_real_judges_builds_the_dag(workdir):  # noqa: F811
    """The README command with the API judge set (dry run: no call is made): four answerers answer,
    four judges judge, nothing simulated is scheduled."""
    proc = run_sm(workdir, "-n", "--configfile", "config/judges/api.yaml", "config/uda-own-data.yaml", "--",
                  "results/uda/own/tables/controls.csv", "results/uda/own/tables/generation.csv")
    out = proc.stdout + proc.stderr
    for rule, n in (("uda_answers", 4), ("uda_query", 4), ("uda_train", 1), ("uda_generation", 1)):
        assert any(line.split() == [rule, str(n)] for line in out.splitlines()), (rule, out[-2000:])
    assert "sim-" not in out.split("Job stats")[0]
